/* cmd_plot.c — `tandem plot`: the two figures of a training run, after the fact, drawn by the
 * code the trainer draws them with at its checkpoints (runtime/report/figures.h):
 *   * loss.png: train loss and validation L1 against step, from the run's metrics.jsonl;
 *   * mel.png: target vs teacher-forced prediction of one utterance (the first row of the
 *     dataset's metadata.csv, or --utt ID): the target log-mel is computed from its audio
 *     with the feature recipe, the prediction is one forward of the checkpoint's model with
 *     the target frames as input (runtime/run/synth.h). The trainer's own mel.png shows the first
 *     usable utterance of its held-out set: --data VALDIR picks the same one unless the first
 *     metadata row was skipped by the index.
 * A bad checkpoint is reported (exit 2) before anything is written.
 * Exit codes: 0 done, 2 bad usage or bad input, 1 any other failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/audio/audio.h"
#include "tools/cli.h"
#include "runtime/report/figures.h"
#include "runtime/audio/mel.h"
#include "runtime/run/synth.h"
#include "tandem.h"

static void usage(FILE *f) {
    fprintf(f, "usage: tandem plot --run DIR [--checkpoint FILE --data DIR [--utt ID]] [--out-dir DIR]\n\n"
               "Writes <out-dir>/loss.png from <run>/metrics.jsonl and, with --checkpoint and "
               "--data,\n<out-dir>/mel.png: the target log-mel of one utterance of DIR (first row "
               "of its\nmetadata.csv, or --utt ID) above the checkpoint's teacher-forced "
               "prediction.\n--out-dir defaults to --run.\n");
}

/* loss.png from <run>/metrics.jsonl through the trainer's own figure code (runtime/report/figures.h):
 * the same points, the same decimation, the same drawing. */
static int plot_loss(tandem_figures *fig, const char *run, const char *out) {
    char mpath[2048];
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", run);
    int lines = 0, bad = 0;
    if (tandem_figures_load_metrics(fig, mpath, &lines, &bad) != TANDEM_OK) {
        fprintf(stderr, "tandem plot: %s\n", tandem_last_error());
        return 2;
    }
    if (bad) fprintf(stderr, "tandem plot: %s: %d unreadable line%s skipped\n", mpath, bad, bad == 1 ? "" : "s");
    tandem_figures_series tr, va;
    tandem_figures_history(fig, &tr, &va);
    if (tr.n == 0) {
        fprintf(stderr, "tandem plot: %s has no logged step\n", mpath);
        return 2;
    }
    if (tandem_figures_write_loss(fig, out) != TANDEM_OK) {
        fprintf(stderr, "tandem plot: %s\n", tandem_last_error());
        return 1;
    }
    printf("loss curve: %s/%s (%d train points, %d validation points", out, TANDEM_FIGURES_LOSS_FILE,
           tr.n, va.n);
    if (tr.stride > 1) printf("; one in %lld logged steps", (long long)tr.stride);
    printf(")\n");
    return 0;
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

static int plot_mel(tandem_figures *fig, tandem_synth *s, const char *data, const char *utt,
                    const char *out) {
    char id[512], text[16384];
    if (!find_utterance(data, utt, id, sizeof id, text, sizeof text)) return 2;
    const int F = tandem_figures_max_frames(fig);
    const int64_t max_samples = (int64_t)F * TANDEM_MEL_HOP;
    float *audio = malloc((size_t)max_samples * sizeof(float));
    float *target = tandem_figures_mel_target(fig), *pred = tandem_figures_mel_pred(fig);
    tandem_mel_host *mh = NULL;
    char wav[2048];
    snprintf(wav, sizeof wav, "%s/wavs/%s.wav", data, id);
    int64_t n = 0;
    int frames = 0, rc = 1;
    if (audio && tandem_audio_load(wav, audio, max_samples, &n, NULL) == TANDEM_OK &&
        tandem_mel_host_create(&mh) == TANDEM_OK &&
        tandem_mel_host_compute(mh, audio, n, target, F, &frames) == TANDEM_OK && frames > 0 &&
        tandem_synth_teacher_forced(s, text, strlen(text), -1, target, frames, pred) == TANDEM_OK &&
        tandem_figures_set_mel(fig, frames, -1) == TANDEM_OK && tandem_figures_write_mel(fig, out) == TANDEM_OK) {
        printf("mel comparison: %s/%s (%s, %d frames; top target, bottom teacher-forced prediction)\n",
               out, TANDEM_FIGURES_MEL_FILE, id, frames);
        rc = 0;
    }
    if (rc) fprintf(stderr, "tandem plot: %s: %s\n", id, frames == 0 && tandem_last_error()[0] == 0
                                                             ? "no frames" : tandem_last_error());
    tandem_mel_host_free(mh);
    free(audio);
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
    /* the checkpoint first: its max_frames sizes the mel buffers */
    tandem_synth *s = NULL;
    if (ckpt) {
        tandem_synth_options o;
        memset(&o, 0, sizeof o);
        o.checkpoint = ckpt;
        if (tandem_synth_open(&o, &s) != TANDEM_OK) {
            fprintf(stderr, "tandem plot: %s\n", tandem_last_error());
            return 2;
        }
    }
    tandem_figures *fig = NULL;
    int rc = 0;
    if (tandem_figures_create(TANDEM_FIGURES_HISTORY, s ? tandem_synth_config(s)->max_frames : 0, &fig) !=
        TANDEM_OK) {
        fprintf(stderr, "tandem plot: %s\n", tandem_last_error());
        rc = 1;
    }
    if (rc == 0) rc = plot_loss(fig, run, out);
    if (rc == 0 && s) rc = plot_mel(fig, s, data, utt, out);
    tandem_figures_free(fig);
    tandem_synth_close(s);
    return rc;
}
