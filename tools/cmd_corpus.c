/* cmd_corpus.c — `tandem corpus`: writes a demo LJSpeech-layout dataset (metadata.csv with
 * id|text|normalized, wavs/<id>.wav at 22050 Hz 16-bit mono) by speaking generated sentences
 * with the espeak-ng program. `--text-only` writes just metadata.csv (for the frontend bench).
 *
 * Every utterance fits the tiny config: its normalised text fits max_text (128 tokens, framing
 * included) and its WAV lasts at most --max-seconds (default 5.9 s; max_frames 512 holds
 * 512 * 256 / 22050 = 5.94 s). Utterance i draws the generator's sentences (seed, i, attempt
 * 0, 1, ...) in turn and keeps the first that fits both, so the corpus depends only on the
 * seed, the languages and espeak-ng, never on the order in which the processes finish. */
#include <dirent.h>
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tandem.h"
#include "tools/cli.h"
#include "tools/corpus_text.h"

/* Sentences fit the tiny model's max_text (DESIGN.md §7), framing tokens included. */
#define CORPUS_MAX_TOKENS 128
/* Default longest utterance: fits configs/tiny.yaml's max_frames (512 frames = 5.94 s). */
#define CORPUS_MAX_SECONDS 5.9
/* espeak-ng voice variants, one speaker each (`--speakers N` takes the first N). */
static const char *const corpus_voices[] = {"m1", "f2", "m3", "f4", "m5", "f1", "m2", "f3", "m4", "f5", "m6", "m7", "m8"};
#define CORPUS_MAX_SPEAKERS (long)(sizeof corpus_voices / sizeof corpus_voices[0])
/* Draws per utterance before giving up (a sentence too long in tokens or in seconds). */
#define CORPUS_MAX_DRAWS 100

extern char **environ;

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem corpus --out DIR [--count N] [--langs en,fa] [--seed S] [--jobs N] [--force]\n"
            "                     [--max-seconds S] [--text-only] [--speakers N]\n\n"
            "Writes an LJSpeech-layout demo dataset: DIR/metadata.csv (id|text|normalized text) and\n"
            "DIR/wavs/<id>.wav (22050 Hz, 16-bit, mono) spoken by espeak-ng. Sentences come from the\n"
            "project's own generator and are deterministic for a seed.\n\n"
            "  --out DIR      output directory (refused if it exists and is not empty, unless --force)\n"
            "  --count N      utterances (default 64; 13100 = LJSpeech size with --text-only)\n"
            "  --langs LIST   comma-separated languages, used in turn (default en,fa)\n"
            "  --seed S       generator seed (default 1)\n"
            "  --jobs N       espeak-ng processes at once (default 4)\n"
            "  --force        write into a non-empty DIR (files of the same name are replaced)\n"
            "  --max-seconds S  longest utterance; a sentence spoken longer is redrawn (default 5.9:\n"
            "                   fits configs/tiny.yaml's max_frames, 512 frames = 5.94 s; no effect\n"
            "                   with --text-only)\n"
            "  --text-only    write metadata.csv only, no audio (for text frontend benchmarks)\n"
            "  --speakers N   a multi-speaker corpus in the generic layout: metadata.csv starts with\n"
            "                 the header id|speaker|text and names each utterance's speaker, N espeak-ng\n"
            "                 voices (m1, f2, m3, f4, ... up to 13) taking turns (default: one voice,\n"
            "                 LJSpeech layout)\n");
}

static uint64_t now_ns(void) { /* monotonic */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* text normalised by the frontend (tandem_text.h) into a new string (free it); NULL on failure
 * (tandem_last_error says why). */
static char *normalize(const char *text, tandem_lang *lang) {
    char small[1024];
    size_t need = 0;
    tandem_status st = tandem_text_normalize_into(text, strlen(text), small, sizeof small, &need, lang);
    if (st != TANDEM_OK && need < sizeof small) return NULL; /* not a matter of room */
    char *out = malloc(need + 1);
    if (!out) return NULL;
    if (st == TANDEM_OK) memcpy(out, small, need + 1);
    else if (tandem_text_normalize_into(text, strlen(text), out, need + 1, NULL, lang) != TANDEM_OK) {
        free(out);
        return NULL;
    }
    return out;
}

static int dir_is_nonempty(const char *path) {
    DIR *d = opendir(path);
    if (!d) return 0;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            n = 1;
            break;
        }
    closedir(d);
    return n;
}

static int have_program(const char *name) {
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    char buf[4096];
    for (const char *p = path; *p;) {
        const char *c = strchr(p, ':');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, name);
        if (n && access(buf, X_OK) == 0) return 1;
        p += n + (c ? 1 : 0);
    }
    return 0;
}

/* Check a RIFF/WAVE header: PCM, 1 channel, 22050 Hz, 16 bit. Returns the data bytes or -1 (msg). */
static long check_wav(const char *path, char *msg, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return snprintf(msg, cap, "cannot open: %s", strerror(errno)), -1;
    unsigned char h[12];
    long data = -1;
    int fmt_ok = 0;
    if (fread(h, 1, 12, f) != 12 || memcmp(h, "RIFF", 4) || memcmp(h + 8, "WAVE", 4)) {
        snprintf(msg, cap, "not a RIFF/WAVE file");
        fclose(f);
        return -1;
    }
    unsigned char ch[8];
    while (fread(ch, 1, 8, f) == 8) {
        unsigned long sz = ch[4] | ch[5] << 8 | ch[6] << 16 | (unsigned long)ch[7] << 24;
        if (!memcmp(ch, "fmt ", 4)) {
            unsigned char fm[16];
            if (sz < 16 || fread(fm, 1, 16, f) != 16) break;
            unsigned fmt = fm[0] | fm[1] << 8, chans = fm[2] | fm[3] << 8, bits = fm[14] | fm[15] << 8;
            unsigned long rate = fm[4] | fm[5] << 8 | fm[6] << 16 | (unsigned long)fm[7] << 24;
            if (fmt != 1 || chans != 1 || rate != TANDEM_FEATURE_SAMPLE_RATE || bits != 16) {
                snprintf(msg, cap, "format %u, %u channels, %lu Hz, %u bit; expected PCM mono 22050 Hz 16 bit",
                         fmt, chans, rate, bits);
                fclose(f);
                return -1;
            }
            fmt_ok = 1;
            fseek(f, (long)(sz - 16 + (sz & 1)), SEEK_CUR);
        } else if (!memcmp(ch, "data", 4)) {
            long here = ftell(f);
            fseek(f, 0, SEEK_END);
            long end = ftell(f);
            data = (long)sz;
            if (data <= 0 || here + data > end) data = end - here; /* size left unpatched by a streaming writer */
            break;
        } else {
            fseek(f, (long)(sz + (sz & 1)), SEEK_CUR);
        }
    }
    fclose(f);
    if (!fmt_ok || data <= 0) return snprintf(msg, cap, "%s", !fmt_ok ? "no fmt chunk" : "no audio data"), -1;
    return data;
}

typedef struct utt {
    char id[32];
    char raw[CORPUS_TEXT_MAX];
    char *norm;
    tandem_lang lang;
    int spk;          /* index into corpus_voices; -1: the single-speaker corpus */
    uint64_t attempt; /* the generator's next draw for this utterance */
    int redraws;      /* sentences dropped because their WAV was too long */
    pid_t pid;
} utt;

/* Utterance i's next sentence whose normalised text fits CORPUS_MAX_TOKENS (draws attempt,
 * attempt + 1, ...). Returns 0, or -1 with a message printed. */
static int draw_sentence(utt *u, long i, unsigned long long seed) {
    free(u->norm);
    u->norm = NULL;
    for (;;) {
        if (u->attempt >= CORPUS_MAX_DRAWS) {
            fprintf(stderr, "tandem corpus: %s: no sentence fits after %d draws (%d spoken too long); "
                    "raise --max-seconds\n", u->id, CORPUS_MAX_DRAWS, u->redraws);
            return -1;
        }
        const uint64_t attempt = u->attempt++;
        tandem_lang got;
        corpus_text_sentence(seed, (uint64_t)i | attempt << 40, u->lang, u->raw);
        if (!(u->norm = normalize(u->raw, &got))) {
            fprintf(stderr, "tandem corpus: normalising sentence %ld: %s\n", i + 1, tandem_last_error());
            return -1;
        }
        size_t cps = 0;
        for (const char *p = u->norm; *p; p++) cps += ((unsigned char)*p & 0xC0) != 0x80;
        if (cps + TANDEM_SYMBOLS_FRAMING + (u->spk >= 0) <= CORPUS_MAX_TOKENS) { /* + <spk> */
            if (got != u->lang) /* the generator and the frontend disagree: a bug in one of them */
                fprintf(stderr, "tandem corpus: warning: %s tagged %s, generated as %s\n", u->id,
                        tandem_lang_name(got), tandem_lang_name(u->lang));
            return 0;
        }
        free(u->norm);
        u->norm = NULL;
    }
}

static int spawn_espeak(utt *u, const char *wav) {
    char voice[32];
    snprintf(voice, sizeof voice, "%s%s%s", u->lang == TANDEM_LANG_FA ? "fa" : "en-us", u->spk >= 0 ? "+" : "",
             u->spk >= 0 ? corpus_voices[u->spk] : "");
    char *argv[] = {"espeak-ng", "-v", voice, "-b", "1", "-w", (char *)wav, u->norm, NULL};
    int rc = posix_spawnp(&u->pid, "espeak-ng", NULL, NULL, argv, environ);
    if (rc) fprintf(stderr, "tandem corpus: cannot start espeak-ng: %s\n", strerror(rc));
    return rc ? -1 : 0;
}

int cli_corpus(int argc, char **argv) {
    const char *out = NULL, *langs = "en,fa";
    long count = -1, jobs = 4, speakers = 0;
    double max_seconds = CORPUS_MAX_SECONDS;
    unsigned long long seed = 1;
    int force = 0, text_only = 0;
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--force")) force = 1;
        else if (!strcmp(a, "--text-only")) text_only = 1;
        else if (v && !strcmp(a, "--out")) out = argv[++i];
        else if (v && !strcmp(a, "--langs")) langs = argv[++i];
        else if (v && !strcmp(a, "--count")) {
            count = strtol(argv[++i], &end, 10);
            if (*end || count < 1 || count > 9999999) {
                fprintf(stderr, "tandem corpus: --count '%s': expected an integer in [1, 9999999]\n", v);
                return 2;
            }
        } else if (v && !strcmp(a, "--jobs")) {
            jobs = strtol(argv[++i], &end, 10);
            if (*end || jobs < 1 || jobs > 64) {
                fprintf(stderr, "tandem corpus: --jobs '%s': expected an integer in [1, 64]\n", v);
                return 2;
            }
        } else if (v && !strcmp(a, "--max-seconds")) {
            max_seconds = strtod(argv[++i], &end);
            if (*end || !(max_seconds >= 0.5 && max_seconds <= 3600)) {
                fprintf(stderr, "tandem corpus: --max-seconds '%s': expected seconds in [0.5, 3600]\n", v);
                return 2;
            }
        } else if (v && !strcmp(a, "--speakers")) {
            speakers = strtol(argv[++i], &end, 10);
            if (*end || speakers < 1 || speakers > CORPUS_MAX_SPEAKERS) {
                fprintf(stderr, "tandem corpus: --speakers '%s': expected an integer in [1, %ld]\n", v,
                        CORPUS_MAX_SPEAKERS);
                return 2;
            }
        } else if (v && !strcmp(a, "--seed")) {
            seed = strtoull(argv[++i], &end, 0);
            if (*end) {
                fprintf(stderr, "tandem corpus: --seed '%s': expected an unsigned integer\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "tandem corpus: unknown or incomplete option '%s'\n\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "tandem corpus: --out DIR is required\n\n");
        usage(stderr);
        return 2;
    }
    if (count < 0) count = text_only ? 13100 : 64;
    tandem_lang lang_list[8];
    int nlang = 0;
    for (const char *p = langs; *p;) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (n == 2 && !strncmp(p, "en", 2) && nlang < 8) lang_list[nlang++] = TANDEM_LANG_EN;
        else if (n == 2 && !strncmp(p, "fa", 2) && nlang < 8) lang_list[nlang++] = TANDEM_LANG_FA;
        else {
            fprintf(stderr, "tandem corpus: --langs '%s': expected a comma-separated list of en, fa\n", langs);
            return 2;
        }
        p += n + (c ? 1 : 0);
    }
    if (nlang == 0) {
        fprintf(stderr, "tandem corpus: --langs is empty\n");
        return 2;
    }
    if (!text_only && !have_program("espeak-ng")) {
        fprintf(stderr, "tandem corpus: espeak-ng not found in PATH; run tools/deps.sh (Debian package espeak-ng)\n");
        return 1;
    }
    if (dir_is_nonempty(out) && !force) {
        fprintf(stderr, "tandem corpus: %s exists and is not empty; use --force to write into it\n", out);
        return 2;
    }
    char wavs[4096];
    snprintf(wavs, sizeof wavs, "%s/wavs", out);
    tandem_status mk = tandem_files_mkdir_p(text_only ? out : wavs);
    if (mk != TANDEM_OK) return cli_fail("corpus", mk);

    uint64_t t0 = now_ns();
    utt *u = calloc((size_t)count, sizeof *u);
    if (!u) {
        fprintf(stderr, "tandem corpus: out of memory\n");
        return 1;
    }
    int n_lang[TANDEM_LANG_COUNT] = {0};
    int rc = 0;
    for (long i = 0; rc == 0 && i < count; i++) {
        u[i].lang = lang_list[i % nlang];
        u[i].spk = speakers ? (int)((i / nlang) % speakers) : -1; /* every speaker speaks every language */
        snprintf(u[i].id, sizeof u[i].id, "TDM-%05ld", i + 1);
        if (draw_sentence(&u[i], i, seed) != 0) rc = 1;
        n_lang[u[i].lang]++;
    }

    double audio_s = 0, longest_s = 0;
    int redrawn = 0;
    if (!text_only && rc == 0) { /* a few espeak-ng processes at once */
        /* queue: utterances to speak, in order; a redrawn one is spoken again (appended) */
        long *queue = malloc(sizeof(long) * (size_t)count);
        if (!queue) {
            fprintf(stderr, "tandem corpus: out of memory\n");
            rc = 1;
        }
        long q_head = 0, q_tail = 0, done = 0, running = 0;
        for (long i = 0; queue && i < count; i++) queue[q_tail++ % count] = i;
        while (queue && done < count) {
            while (rc == 0 && running < jobs && q_head < q_tail) {
                long k = queue[q_head++ % count];
                char wav[4200];
                snprintf(wav, sizeof wav, "%s/%s.wav", wavs, u[k].id);
                if (spawn_espeak(&u[k], wav) != 0) {
                    rc = 1;
                    break;
                }
                running++;
            }
            if (running == 0) break;
            int status;
            pid_t pid = waitpid(-1, &status, 0);
            if (pid < 0) {
                if (errno == EINTR) continue;
                fprintf(stderr, "tandem corpus: waitpid: %s\n", strerror(errno));
                rc = 1;
                break;
            }
            long k = 0;
            while (k < count && u[k].pid != pid) k++;
            if (k == count) continue; /* not one of ours */
            running--;
            u[k].pid = 0;
            char wav[4200], msg[256];
            snprintf(wav, sizeof wav, "%s/%s.wav", wavs, u[k].id);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "tandem corpus: espeak-ng failed for %s (exit status %d): \"%s\"\n", u[k].id,
                        WIFEXITED(status) ? WEXITSTATUS(status) : -1, u[k].norm);
                rc = 1;
                continue;
            }
            long bytes = check_wav(wav, msg, sizeof msg);
            if (bytes < 0) {
                fprintf(stderr, "tandem corpus: %s: %s\n", wav, msg);
                rc = 1;
                continue;
            }
            const double secs = (double)bytes / (2.0 * TANDEM_FEATURE_SAMPLE_RATE);
            if (secs > max_seconds) { /* spoken too long: the next draw that fits is spoken instead */
                u[k].redraws++;
                redrawn++;
                if (rc == 0 && draw_sentence(&u[k], k, seed) != 0) rc = 1;
                if (rc == 0) queue[q_tail++ % count] = k; /* at most count are queued at once */
                continue;
            }
            done++;
            audio_s += secs;
            if (secs > longest_s) longest_s = secs;
        }
        while (rc && waitpid(-1, NULL, 0) > 0) {
        }
        free(queue);
    }

    if (rc == 0) {
        size_t meta_cap = 0;
        for (long i = 0; i < count; i++) meta_cap += strlen(u[i].id) + strlen(u[i].raw) + strlen(u[i].norm) + 8;
        char *meta = malloc(meta_cap + 32);
        size_t o = 0;
        if (meta && speakers) o += (size_t)sprintf(meta, "id|speaker|text\n"); /* the generic layout */
        for (long i = 0; meta && i < count; i++)
            o += speakers ? (size_t)sprintf(meta + o, "%s|%s|%s\n", u[i].id, corpus_voices[u[i].spk], u[i].raw)
                          : (size_t)sprintf(meta + o, "%s|%s|%s\n", u[i].id, u[i].raw, u[i].norm);
        char path[4200];
        snprintf(path, sizeof path, "%s/metadata.csv", out);
        tandem_status wst = meta ? tandem_files_write_atomic(path, meta, o) : TANDEM_E_NOMEM;
        if (wst != TANDEM_OK) {
            fprintf(stderr, "tandem corpus: writing %s: %s\n", path, meta ? tandem_last_error() : "out of memory");
            rc = cli_exit_code(wst);
        }
        free(meta);
    }
    double secs = (double)(now_ns() - t0) * 1e-9;
    if (rc == 0) {
        printf("corpus: %ld utterances (en %d, fa %d) in %s, seed %llu", count, n_lang[TANDEM_LANG_EN],
               n_lang[TANDEM_LANG_FA], out, seed);
        if (speakers) printf(", %ld speakers (generic layout id|speaker|text)", speakers);
        printf("\n");
        if (text_only)
            printf("audio: none (--text-only)\n");
        else
            printf("audio: %.1f s total, %.2f s mean, %.2f s longest (limit %.2f s; %d sentence%s spoken longer "
                   "were redrawn), 22050 Hz 16-bit mono (espeak-ng)\n", audio_s, audio_s / (double)count, longest_s,
                   max_seconds, redrawn, redrawn == 1 ? "" : "s");
        printf("time: %.2f s\n", secs);
    }
    for (long i = 0; i < count; i++) free(u[i].norm);
    free(u);
    return rc;
}
