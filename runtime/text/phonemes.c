/* phonemes.c — characters or espeak-ng phonemes as the model's input (see phonemes.h). */
#include "runtime/text/phonemes.h"

#include <stdio.h>
#include <string.h>

#include "platform/os/espeak.h"
#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/core/utf8.h"
#include "runtime/text/symbols.h"

const char *tandem_text_input_name(tandem_text_input t) {
    return t == TANDEM_TEXT_INPUT_PHONEMES ? "phonemes" : "chars";
}

void tandem_phonemes_init(tandem_phonemes *p) { memset(p, 0, sizeof *p); }

void tandem_phonemes_free(tandem_phonemes *p) {
    if (!p) return;
    tandem_free(p->utf8);
    tandem_free(p->ipa);
    tandem_free(p->cps);
    memset(p, 0, sizeof *p);
}

/* Room for n input code points: UTF-8 of 4 bytes each, and IPA of up to 8 times the text's
 * bytes (stress and length marks, multi-symbol phonemes). */
static tandem_status reserve(tandem_phonemes *p, size_t n) {
    const size_t need = 32 * (n + 16);
    if (need <= p->cap) return TANDEM_OK;
    tandem_phonemes_free(p);
    p->utf8 = tandem_malloc(need);
    p->ipa = tandem_malloc(need);
    p->cps = tandem_malloc(need * sizeof *p->cps);
    if (!p->utf8 || !p->ipa || !p->cps) {
        tandem_phonemes_free(p);
        return tandem_fail(TANDEM_E_NOMEM, "phonemes: out of memory for a text of %zu characters", n);
    }
    p->cap = need;
    return TANDEM_OK;
}

tandem_status tandem_phonemes_of(tandem_phonemes *p, tandem_text_input input, const uint32_t *cps,
                                 size_t n, tandem_lang lang, const uint32_t **out, size_t *out_n) {
    if (input != TANDEM_TEXT_INPUT_PHONEMES) {
        *out = cps;
        *out_n = n;
        return TANDEM_OK;
    }
    TANDEM_TRY(reserve(p, n));
    size_t o = 0;
    for (size_t i = 0; i < n; i++) o += (size_t)tandem_utf8_encode(cps[i], p->utf8 + o);
    p->utf8[o] = 0;
    size_t len = 0;
    TANDEM_TRY(tandem_espeak_ipa(lang == TANDEM_LANG_FA ? "fa" : "en-us", p->utf8, p->ipa, p->cap, &len));
    size_t k = 0, at = 0;
    p->dropped = 0;
    while (at < len) {
        uint32_t cp = 0;
        const int used = tandem_utf8_decode((const unsigned char *)p->ipa + at, len - at, &cp);
        if (used <= 0) break; /* espeak-ng writes valid UTF-8; stop rather than guess */
        at += (size_t)used;
        if (tandem_symbols_id(cp) < 0) p->dropped++;
        else if (!(cp == ' ' && (k == 0 || p->cps[k - 1] == ' '))) p->cps[k++] = cp;
    }
    while (k > 0 && p->cps[k - 1] == ' ') k--;
    *out = p->cps;
    *out_n = k;
    return TANDEM_OK;
}

const char *tandem_phonemes_backend(tandem_text_input input, char *buf, size_t cap) {
    if (input != TANDEM_TEXT_INPUT_PHONEMES) snprintf(buf, cap, "chars");
    else if (tandem_espeak_load() != TANDEM_OK) buf[0] = 0;
    else snprintf(buf, cap, "espeak-ng %s, rules %d", tandem_espeak_version(), TANDEM_PHONEMES_VERSION);
    return buf;
}
