/* cmd_plot.c — `tandem plot`: the two figures of a training run, after the fact:
 *   * loss.png: train loss and validation L1 against step, from the run's metrics.jsonl;
 *   * mel.png: target vs teacher-forced prediction of one utterance (the first row of the
 *     dataset's metadata.csv, or --utt ID): the target log-mel is computed from its audio
 *     with the feature recipe, the prediction is one forward of the checkpoint's model with
 *     the target frames as input (runtime/synth.h).
 * Exit codes: 0 done, 2 bad usage or bad input, 1 any other failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio.h"
#include "cli.h"
#include "mel.h"
#include "plot.h"
#include "synth.h"
#include "tandem.h"

static void usage(FILE *f) {
    fprintf(f, "usage: tandem plot --run DIR [--checkpoint FILE --data DIR [--utt ID]] [--out-dir DIR]\n\n"
               "Writes <out-dir>/loss.png from <run>/metrics.jsonl and, with --checkpoint and "
               "--data,\n<out-dir>/mel.png: the target log-mel of one utterance of DIR (first row "
               "of its\nmetadata.csv, or --utt ID) above the checkpoint's teacher-forced "
               "prediction.\n--out-dir defaults to --run.\n");
}

/* The number after "key": in a JSON line; 0 when absent or null. */
static int json_number(const char *line, const char *key, double *out) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p) return 0;
    p += strlen(pat);
    char *end = NULL;
    double v = strtod(p, &end);
    if (end == p) return 0; /* null */
    *out = v;
    return 1;
}

static int plot_loss(const char *run, const char *path) {
    char mpath[2048];
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", run);
    FILE *f = fopen(mpath, "r");
    if (!f) {
        fprintf(stderr, "tandem plot: cannot open %s\n", mpath);
        return 2;
    }
    size_t cap = 1024, n = 0, nv = 0;
    float *ts = malloc(cap * sizeof *ts), *tl = malloc(cap * sizeof *tl);
    float *vs = malloc(cap * sizeof *vs), *vl = malloc(cap * sizeof *vl);
    char line[8192];
    int rc = 0;
    while (ts && tl && vs && vl && fgets(line, sizeof line, f)) {
        if (n == cap) {
            cap *= 2;
            float **arr[4] = {&ts, &tl, &vs, &vl};
            for (int i = 0; i < 4; i++) {
                float *q = realloc(*arr[i], cap * sizeof(float));
                if (!q) {
                    rc = 1;
                    break;
                }
                *arr[i] = q;
            }
            if (rc) break;
        }
        double step, v;
        if (!json_number(line, "step", &step)) continue;
        if (json_number(line, "loss", &v)) {
            ts[n] = (float)step;
            tl[n++] = (float)v;
        }
        if (json_number(line, "val_l1", &v)) {
            vs[nv] = (float)step;
            vl[nv++] = (float)v;
        }
    }
    fclose(f);
    if (!ts || !tl || !vs || !vl) rc = 1;
    tandem_plot *p = NULL;
    if (rc == 0 && n == 0) {
        fprintf(stderr, "tandem plot: %s has no logged step\n", mpath);
        rc = 2;
    }
    if (rc == 0 && (tandem_plot_create(800, 480, &p) != TANDEM_OK ||
                    tandem_plot_loss(p, path, 800, 480, ts, tl, (int)n, vs, vl, (int)nv) != TANDEM_OK)) {
        fprintf(stderr, "tandem plot: %s\n", tandem_last_error());
        rc = 1;
    }
    if (rc == 0) printf("loss curve: %s (%zu train points, %zu validation points)\n", path, n, nv);
    tandem_plot_free(p);
    free(ts);
    free(tl);
    free(vs);
    free(vl);
    return rc;
}

/* id and text (normalised column when present) of the row for utt (NULL: the first row). */
static int find_utterance(const char *data, const char *utt, char *id, size_t idcap, char *text,
                          size_t tcap) {
    char path[2048];
    snprintf(path, sizeof path, "%s/metadata.csv", data);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "tandem plot: cannot open %s\n", path);
        return 0;
    }
    char line[16384];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char *f1 = strchr(line, '|');
        if (!f1) continue;
        *f1++ = 0;
        char *f2 = strchr(f1, '|');
        if (f2) *f2++ = 0;
        if (utt && strcmp(line, utt)) continue;
        const char *t = f2 && *f2 ? f2 : f1;
        if (strlen(line) >= idcap || strlen(t) >= tcap) continue;
        memcpy(id, line, strlen(line) + 1);
        memcpy(text, t, strlen(t) + 1);
        found = 1;
    }
    fclose(f);
    if (!found) fprintf(stderr, "tandem plot: %s: no utterance %s\n", path, utt ? utt : "(empty file)");
    return found;
}

static int plot_mel(const char *ckpt, const char *data, const char *utt, const char *path) {
    char id[512], text[16384];
    if (!find_utterance(data, utt, id, sizeof id, text, sizeof text)) return 2;
    tandem_synth_options o;
    memset(&o, 0, sizeof o);
    o.checkpoint = ckpt;
    tandem_synth *s = NULL;
    if (tandem_synth_open(&o, &s) != TANDEM_OK) {
        fprintf(stderr, "tandem plot: %s\n", tandem_last_error());
        return 2;
    }
    const int F = tandem_synth_config(s)->max_frames;
    const int64_t max_samples = (int64_t)F * TANDEM_MEL_HOP;
    float *audio = malloc((size_t)max_samples * sizeof(float));
    float *target = malloc((size_t)F * 80 * sizeof(float));
    float *pred = malloc((size_t)F * 80 * sizeof(float));
    tandem_mel_host *mh = NULL;
    char wav[2048];
    snprintf(wav, sizeof wav, "%s/wavs/%s.wav", data, id);
    int64_t n = 0;
    int frames = 0, rc = 1;
    tandem_plot *p = NULL;
    if (audio && target && pred && tandem_audio_load(wav, audio, max_samples, &n, NULL) == TANDEM_OK &&
        tandem_mel_host_create(&mh) == TANDEM_OK &&
        tandem_mel_host_compute(mh, audio, n, target, F, &frames) == TANDEM_OK && frames > 0 &&
        tandem_synth_teacher_forced(s, text, strlen(text), -1, target, frames, pred) == TANDEM_OK) {
        int w = 0, h = 0;
        tandem_plot_mel_size(frames, 80, &w, &h);
        if (tandem_plot_create(w, h, &p) == TANDEM_OK &&
            tandem_plot_mel(p, path, target, pred, frames, 80) == TANDEM_OK) {
            printf("mel comparison: %s (%s, %d frames; top target, bottom teacher-forced prediction)\n",
                   path, id, frames);
            rc = 0;
        }
    }
    if (rc) fprintf(stderr, "tandem plot: %s: %s\n", id, frames == 0 && tandem_last_error()[0] == 0
                                                             ? "no frames" : tandem_last_error());
    tandem_plot_free(p);
    tandem_mel_host_free(mh);
    free(audio);
    free(target);
    free(pred);
    tandem_synth_close(s);
    return rc;
}

int cli_plot(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *run = NULL, *ckpt = NULL, *data = NULL, *utt = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) {
            fprintf(stderr, "tandem plot: option '%s' needs a value (see --help)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--run")) run = v;
        else if (!strcmp(a, "--checkpoint")) ckpt = v;
        else if (!strcmp(a, "--data")) data = v;
        else if (!strcmp(a, "--utt")) utt = v;
        else if (!strcmp(a, "--out-dir")) out = v;
        else {
            fprintf(stderr, "tandem plot: unknown option '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (!run || (!ckpt != !data)) {
        fprintf(stderr, "tandem plot: give --run, and --checkpoint with --data (see --help)\n");
        return 2;
    }
    if (!out) out = run;
    char path[2048];
    snprintf(path, sizeof path, "%s/loss.png", out);
    int rc = plot_loss(run, path);
    if (rc == 0 && ckpt) {
        snprintf(path, sizeof path, "%s/mel.png", out);
        rc = plot_mel(ckpt, data, utt, path);
    }
    return rc;
}
