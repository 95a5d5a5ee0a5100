/* cmd_synth.c — `tandem synth`: checkpoint + text → WAV (Griffin-Lim) and optionally the log-mel
 * as .npy, through the public synthesis API (tandem_synth.h). Exit codes: cli_exit_code (0
 * done, 2 bad usage, bad text or a bad checkpoint, 1 any other failure). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tandem.h"
#include "tools/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem synth --checkpoint FILE|RUN_DIR --text \"...\" --out x.wav [--lang en|fa]\n"
            "                    [--mel-out x.npy] [--max-frames N] [--gl-iters N] [--seed N]\n"
            "                    [--backend auto|host|cuda] [--kv-cache on|off] [--speaker NAME]\n"
            "                    [--prenet-dropout P]\n\n"
            "Generates log-mel frames autoregressively from a training checkpoint until the stop\n"
            "head fires (stop probability > 0.5) or --max-frames (default: the trained "
            "max_frames),\nthen Griffin-Lim (default %d iterations) → 22050 Hz 16-bit WAV. "
            "--mel-out writes the\nlog-mel [frames, 80] (float32) for an external neural "
            "vocoder.\n--lang forces the language tag (default: detected from the script).\n"
            "--speaker picks a multi-speaker checkpoint's voice by name (default: its first;\n"
            "an unknown name lists the known ones).\n"
            "--kv-cache off reruns the whole causal forward per step instead of caching the\n"
            "earlier positions' keys and values (same output, slower; for comparison).\n"
            "--prenet-dropout P keeps the training's prenet dropout while generating (0 = off,\n"
            "the default; masks drawn from --seed; needs the key/value cache).\n"
            "Prints where the stop fired and the stop probability of the last frames.\n"
            "A text too long for the model as one piece is synthesized sentence by sentence (ended\n"
            "by . ! ? ; followed by a space) into one WAV, 0.25 s of silence between them.\n",
            TANDEM_SYNTH_DEFAULT_GL_ITERS);
}

static int parse_int(const char *flag, const char *v, long lo, long hi, long *out) {
    char *end = NULL;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < lo || x > hi) {
        fprintf(stderr, "tandem synth: %s '%s': expected an integer in %ld..%ld\n", flag, v, lo, hi);
        return 0;
    }
    *out = x;
    return 1;
}

static double sigmoid(double z) { return 1.0 / (1.0 + exp(-z)); }

/* Where the stop fired (or the highest stop probability when it did not), and the stop
 * probabilities of the last frames generated. */
static void report_stop(const tandem_synth_result *r, int hop) {
    const int last = r->stop == TANDEM_SYNTH_STOP_HEAD ? r->stop_frame : r->frames - 1;
    if (r->stop == TANDEM_SYNTH_STOP_HEAD) {
        printf("stop: fired at frame %d (%.2f s)\n", r->stop_frame,
               (double)r->stop_frame * hop / r->sample_rate);
    } else {
        int best = 0;
        for (int i = 1; i < r->frames; i++)
            if (r->stop_logit[i] > r->stop_logit[best]) best = i;
        printf("stop: never fired in %d frames (%.2f s); highest stop probability %.3f at frame "
               "%d\n", r->frames, (double)r->frames * hop / r->sample_rate,
               r->frames ? sigmoid(r->stop_logit[best]) : 0.0, best);
    }
    const int k0 = last - 7 < 0 ? 0 : last - 7;
    printf("stop probability, frames %d..%d:", k0, last);
    for (int i = k0; i <= last; i++) printf(" %.3f", sigmoid(r->stop_logit[i]));
    printf("\n");
}

/* The summary lines of a finished run. */
static void report(const tandem_synth_result *r, const char *out, const char *mel_out, int iters,
                   int hop) {
    const double dur = (double)r->samples / r->sample_rate;
    printf("text: %d tokens (%s)\n", r->tokens, tandem_lang_name(r->lang));
    printf("generated %d frames in %d steps; stop: %s\n", r->frames, r->steps,
           r->stop == TANDEM_SYNTH_STOP_HEAD ? "stop head (probability > 0.5)"
                                             : "frame limit reached (the stop head never fired)");
    report_stop(r, hop);
    printf("audio: %.2f s at %d Hz → %s%s%s\n", dur, r->sample_rate, out, mel_out ? "; mel → " : "",
           mel_out ? mel_out : "");
    printf("time: generation %.2f s (%.1f ms/step), Griffin-Lim %.2f s (%d iterations); "
           "real-time factor %.2f (time / audio duration)\n", r->seconds,
           r->steps ? 1e3 * r->seconds / r->steps : 0.0, r->vocode_seconds, iters,
           dur > 0 ? (r->seconds + r->vocode_seconds) / dur : 0.0);
}

/* Longer texts: at most this many sentences, each a run of its own, 0.25 s of silence between. */
enum { SYNTH_MAX_SENTENCES = 256, SYNTH_GAP_SAMPLES = 5512 };

/* Sentence k of text as a NUL-terminated string in buf[cap]. */
static void sentence_text(const char *text, const tandem_text_span *sp, char *buf, size_t cap) {
    const size_t n = sp->length < cap - 1 ? sp->length : cap - 1;
    memcpy(buf, text + sp->offset, n);
    buf[n] = 0;
}

/* Each sentence generated and vocoded on its own; the audio (and mels) joined into one file. */
static tandem_status synthesize_sentences(tandem_synth *s, const char *text, const tandem_text_span *spans,
                                          int n, tandem_lang lang, const char *out, const char *mel_out,
                                          int n_mels) {
    float *audio = NULL, *mel = NULL;
    int64_t samples = 0, frames = 0;
    tandem_status st = TANDEM_OK;
    char buf[4096];
    for (int k = 0; k < n && st == TANDEM_OK; k++) {
        sentence_text(text, &spans[k], buf, sizeof buf);
        tandem_synth_result r;
        st = tandem_synth_run(s, buf, lang, NULL, &r);
        if (st != TANDEM_OK) {
            fprintf(stderr, "tandem synth: sentence %d of %d (\"%.60s\"):\n", k + 1, n, buf);
            break;
        }
        const int64_t gap = k + 1 < n ? SYNTH_GAP_SAMPLES : 0;
        float *a = realloc(audio, (size_t)(samples + r.samples + gap) * sizeof *a);
        float *m = realloc(mel, (size_t)(frames + r.frames) * n_mels * sizeof *m);
        if (a) audio = a;
        if (m) mel = m;
        if (!a || !m) {
            st = TANDEM_E_NOMEM;
            fprintf(stderr, "tandem synth: out of memory joining sentence %d\n", k + 1);
            break;
        }
        if (r.audio) memcpy(audio + samples, r.audio, (size_t)r.samples * sizeof *audio);
        memset(audio + samples + r.samples, 0, (size_t)gap * sizeof *audio);
        memcpy(mel + frames * n_mels, r.mel, (size_t)r.frames * n_mels * sizeof *mel);
        samples += r.samples + gap;
        frames += r.frames;
        printf("sentence %d/%d: %d tokens (%s), %d frames, stop: %s\n", k + 1, n, r.tokens,
               tandem_lang_name(r.lang), r.frames,
               r.stop == TANDEM_SYNTH_STOP_HEAD ? "stop head" : "frame limit (the stop head never fired)");
    }
    if (st == TANDEM_OK) st = tandem_wav_write_pcm16(out, audio, samples, TANDEM_FEATURE_SAMPLE_RATE);
    if (st == TANDEM_OK && mel_out) {
        const int64_t shape[2] = {frames, n_mels};
        st = tandem_npy_write_f32(mel_out, mel, 2, shape);
    }
    if (st == TANDEM_OK)
        printf("audio: %.2f s at %d Hz, %d sentences → %s%s%s\n", (double)samples / TANDEM_FEATURE_SAMPLE_RATE,
               TANDEM_FEATURE_SAMPLE_RATE, n, out, mel_out ? "; mel → " : "", mel_out ? mel_out : "");
    free(audio);
    free(mel);
    return st;
}

/* Open, run, write; the exit code. */
static int synthesize(const char *ckpt, const tandem_synth_options *o, const char *text,
                      tandem_lang lang, const char *out, const char *mel_out) {
    /* refuse a device node, FIFO or link as --out / --mel-out before the work, not after */
    tandem_status st = tandem_files_check_output(out);
    if (st == TANDEM_OK && mel_out) st = tandem_files_check_output(mel_out);
    const char *outs[2] = {out, mel_out}; /* neither replaces the checkpoint, nor one the other */
    if (st == TANDEM_OK) st = tandem_files_check_distinct(outs, 2, &ckpt, 1);
    for (int k = 0; k < 2 && st == TANDEM_OK; k++) /* a killed writer's temps */
        if (outs[k]) st = tandem_files_sweep_temps(outs[k], NULL);
    if (st != TANDEM_OK) return cli_fail("synth", st);
    char newest[4096]; /* a run directory: its newest usable checkpoint, as --resume and --init-from take */
    struct stat sb;
    if (stat(ckpt, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        tandem_ckpt *c = NULL;
        if ((st = tandem_ckpt_open_latest(ckpt, &c)) != TANDEM_OK) return cli_fail("synth", st);
        snprintf(newest, sizeof newest, "%s", tandem_ckpt_path(c));
        tandem_ckpt_close(c);
        ckpt = newest;
    }
    tandem_synth *s = NULL;
    st = tandem_synth_open(ckpt, o, &s);
    if (st != TANDEM_OK) return cli_fail("synth", st);
    tandem_synth_info info;
    st = tandem_synth_get_info(s, &info);
    if (st == TANDEM_OK)
        printf("checkpoint: %s (d %d, layers %d, r %d, max_text %d, max_frames %d) on %s device %d "
               "(%s)\n", ckpt, info.d_model, info.layers, info.reduction, info.max_text,
               info.max_frames, info.device.backend == TANDEM_BACKEND_CUDA ? "CUDA" : "host",
               info.device.ordinal, info.device.name);
    if (st == TANDEM_OK && info.speakers) { /* the first few of the checkpoint's speakers */
        printf("speaker: %s (of %d:", info.speaker, info.speakers);
        for (int k = 0; k < info.speakers && k < 8; k++) printf(" %s", tandem_synth_speaker_name(s, k));
        printf("%s)\n", info.speakers > 8 ? " ..." : "");
    }
    tandem_synth_result r;
    tandem_text_span spans[SYNTH_MAX_SENTENCES];
    int n = 0;
    if (st == TANDEM_OK) st = tandem_text_split_sentences(text, strlen(text), spans, SYNTH_MAX_SENTENCES, &n);
    if (st == TANDEM_OK) st = tandem_synth_run(s, text, lang, NULL, &r);
    if (st == TANDEM_E_INVALID && n > 1) { /* too long as one: sentence by sentence, one WAV */
        printf("the text as one sentence: %s; synthesizing its %d sentences one by one\n",
               tandem_last_error(), n);
        st = synthesize_sentences(s, text, spans, n, lang, out, mel_out, info.n_mels);
        tandem_synth_close(s);
        return cli_fail("synth", st);
    }
    if (st == TANDEM_OK) st = tandem_wav_write_pcm16(out, r.audio, r.samples, r.sample_rate);
    if (st == TANDEM_OK && mel_out) {
        const int64_t shape[2] = {r.frames, info.n_mels};
        st = tandem_npy_write_f32(mel_out, r.mel, 2, shape);
    }
    if (st == TANDEM_OK) report(&r, out, mel_out, o->gl_iters, info.hop);
    tandem_synth_close(s);
    return cli_fail("synth", st);
}

int cli_synth(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *ckpt = NULL, *text = NULL, *out = NULL, *mel_out = NULL, *speaker = NULL;
    long max_frames = 0, iters = TANDEM_SYNTH_DEFAULT_GL_ITERS, seed = 1;
    tandem_lang lang = TANDEM_LANG_AUTO;
    tandem_backend backend = TANDEM_BACKEND_AUTO;
    int recompute = 0;
    double prenet_dropout = 0.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) {
            fprintf(stderr, "tandem synth: option '%s' needs a value (see --help)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--checkpoint")) ckpt = v;
        else if (!strcmp(a, "--text")) text = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--mel-out")) mel_out = v;
        else if (!strcmp(a, "--speaker")) speaker = v;
        else if (!strcmp(a, "--max-frames")) {
            if (!parse_int(a, v, 1, 1 << 20, &max_frames)) return 2;
        } else if (!strcmp(a, "--gl-iters")) {
            if (!parse_int(a, v, 1, 10000, &iters)) return 2;
        } else if (!strcmp(a, "--seed")) {
            if (!parse_int(a, v, 0, 2147483647L, &seed)) return 2;
        } else if (!strcmp(a, "--lang")) {
            if (!strcmp(v, "en")) lang = TANDEM_LANG_EN;
            else if (!strcmp(v, "fa")) lang = TANDEM_LANG_FA;
            else {
                fprintf(stderr, "tandem synth: --lang '%s': expected en or fa\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--kv-cache")) {
            if (strcmp(v, "on") && strcmp(v, "off")) {
                fprintf(stderr, "tandem synth: --kv-cache '%s': expected on or off\n", v);
                return 2;
            }
            recompute = !strcmp(v, "off");
        } else if (!strcmp(a, "--prenet-dropout")) {
            char *end = NULL;
            prenet_dropout = strtod(v, &end);
            if (!*v || *end || !(prenet_dropout >= 0.0 && prenet_dropout < 1.0)) {
                fprintf(stderr, "tandem synth: --prenet-dropout '%s': expected a number in [0, 1)\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--backend")) {
            if (!cli_parse_backend("synth", v, &backend)) return 2;
        } else {
            return cli_unknown_option("synth", a);
        }
    }
    if (!ckpt || !text || !out) {
        fprintf(stderr, "tandem synth: --checkpoint, --text and --out are required (see --help)\n");
        return 2;
    }
    tandem_synth_options o;
    tandem_synth_options_init(&o);
    o.backend = backend;
    o.max_frames = (int)max_frames;
    o.gl_iters = (int)iters;
    o.seed = (uint64_t)seed;
    o.recompute = recompute;
    o.prenet_dropout = prenet_dropout;
    o.speaker = speaker;
    return synthesize(ckpt, &o, text, lang, out, mel_out);
}
