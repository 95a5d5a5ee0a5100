/* espeak.c — espeak-ng through dlopen (see espeak.h). The three entry points used are declared
 * here by their documented C signatures; no espeak-ng header is needed to build. */
#include "platform/os/espeak.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"

#define ESPEAK_LIB "libespeak-ng.so.1"
#define PUNCT ".,?!;:" /* clause marks kept in the phonemes (all in the symbol table) */
enum {
    ESPEAK_OUTPUT_RETRIEVAL = 1, /* espeak_AUDIO_OUTPUT: no audio device is opened */
    ESPEAK_INIT_DONT_EXIT = 0x8000, /* the library must not exit() the process on errors */
    ESPEAK_CHARS_UTF8 = 1,
    ESPEAK_PHONEMES_IPA = 0x02, /* phoneme_mode bit 1: IPA as UTF-8 */
};

typedef int (*init_fn)(int output, int buflength, const char *path, int options);
typedef int (*voice_fn)(const char *name);
typedef const char *(*phonemes_fn)(const void **textptr, int textmode, int phonememode);
typedef const char *(*info_fn)(const char **path_data);

static struct {
    pthread_once_t once;
    tandem_mutex lock;
    tandem_status st;
    char why[512];
    voice_fn set_voice;
    phonemes_fn to_phonemes;
    char voice[32];
    char version[64];
} g = {.once = PTHREAD_ONCE_INIT};

static void load_once(void) {
    tandem_mutex_init(&g.lock);
    g.st = TANDEM_E_UNSUPPORTED;
    void *h = dlopen(ESPEAK_LIB, RTLD_NOW | RTLD_LOCAL); /* kept for the life of the process */
    if (!h) {
        const char *e = dlerror();
        snprintf(g.why, sizeof g.why, "dlopen(%s): %s; install the Debian package libespeak-ng1 "
                 "(or espeak-ng), or train with text_input: chars", ESPEAK_LIB, e ? e : "not found");
        return;
    }
    init_fn init = (init_fn)dlsym(h, "espeak_Initialize");
    info_fn info = (info_fn)dlsym(h, "espeak_Info");
    g.set_voice = (voice_fn)dlsym(h, "espeak_SetVoiceByName");
    g.to_phonemes = (phonemes_fn)dlsym(h, "espeak_TextToPhonemes");
    if (!init || !g.set_voice || !g.to_phonemes) {
        snprintf(g.why, sizeof g.why, "%s lacks espeak_Initialize, espeak_SetVoiceByName or "
                 "espeak_TextToPhonemes (espeak-ng 1.49 or newer is needed)", ESPEAK_LIB);
        return;
    }
    if (init(ESPEAK_OUTPUT_RETRIEVAL, 0, NULL, ESPEAK_INIT_DONT_EXIT) <= 0) {
        snprintf(g.why, sizeof g.why, "%s: espeak_Initialize failed (its data directory, "
                 "espeak-ng-data, is missing or unreadable)", ESPEAK_LIB);
        return;
    }
    snprintf(g.version, sizeof g.version, "%s", info ? info(NULL) : "unknown");
    g.st = TANDEM_OK;
}

tandem_status tandem_espeak_load(void) {
    pthread_once(&g.once, load_once);
    if (g.st != TANDEM_OK) return tandem_fail(g.st, "phonemes: %s", g.why);
    return TANDEM_OK;
}

const char *tandem_espeak_version(void) { return g.st == TANDEM_OK ? g.version : ""; }

static tandem_status append(char *out, size_t cap, size_t *o, const char *s, size_t n) {
    if (*o + n + 1 > cap)
        return tandem_fail(TANDEM_E_INVALID, "phonemes: more than %zu bytes of IPA; the text is "
                           "too long for one call", cap - 1);
    memcpy(out + *o, s, n);
    *o += n;
    out[*o] = 0;
    return TANDEM_OK;
}

/* espeak-ng's phonemes of the NUL-terminated piece, appended after a space. */
static tandem_status piece_ipa(const char *piece, char *out, size_t cap, size_t *o) {
    const void *p = piece;
    while (p) {
        const char *ph = g.to_phonemes(&p, ESPEAK_CHARS_UTF8, ESPEAK_PHONEMES_IPA);
        if (!ph || !*ph) continue;
        if (*o) TANDEM_TRY(append(out, cap, o, " ", 1));
        TANDEM_TRY(append(out, cap, o, ph, strlen(ph)));
    }
    return TANDEM_OK;
}

/* The text cut after each clause punctuation mark, each piece phonemized alone and followed by
 * its mark: espeak-ng merges some clauses (a comma before "and"), and the model should see every
 * pause the text writes. */
static tandem_status ipa_locked(const char *voice, char *text, char *out, size_t cap, size_t *len) {
    if (strcmp(g.voice, voice) != 0) {
        if (g.set_voice(voice) != 0)
            return tandem_fail(TANDEM_E_UNSUPPORTED, "phonemes: espeak-ng has no voice '%s' "
                               "(espeak-ng-data lacks it)", voice);
        snprintf(g.voice, sizeof g.voice, "%s", voice);
    }
    size_t o = 0;
    out[0] = 0;
    char *piece = text;
    for (char *c = text;; c++) {
        const int end = *c == 0, mark = !end && strchr(PUNCT, *c) != NULL;
        if (!end && !mark) continue;
        const char saved = *c;
        *c = 0;
        tandem_status st = piece_ipa(piece, out, cap, &o);
        *c = saved;
        TANDEM_TRY(st);
        if (end) break;
        if (o) TANDEM_TRY(append(out, cap, &o, c, 1));
        piece = c + 1;
    }
    *len = o;
    return TANDEM_OK;
}

tandem_status tandem_espeak_ipa(const char *voice, char *text, char *out, size_t cap,
                                size_t *len) {
    if (!voice || !text || !out || !len || cap < 1)
        return tandem_fail(TANDEM_E_INVALID, "phonemes: NULL argument or empty output");
    TANDEM_TRY(tandem_espeak_load());
    tandem_mutex_lock(&g.lock);
    const tandem_status st = ipa_locked(voice, text, out, cap, len);
    tandem_mutex_unlock(&g.lock);
    return st;
}
