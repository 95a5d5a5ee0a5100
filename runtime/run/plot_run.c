/* plot_run.c — tandem_plot_run (tandem_plot.h): a run's figures after the fact, through the
 * trainer's own figure code (runtime/report/figures.h), the host feature recipe
 * (runtime/audio/mel.h) and the checkpoint's teacher-forced forward (runtime/run/synth.h). */
#include "tandem.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/audio/audio.h"
#include "runtime/audio/mel.h"
#include "runtime/report/figures.h"
#include "runtime/run/synth.h"

void tandem_plot_options_init(tandem_plot_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->backend = TANDEM_BACKEND_AUTO;
}

/* loss.png from <run>/metrics.jsonl. */
static tandem_status plot_loss(tandem_figures *fig, const char *run, const char *out_dir,
                               tandem_plot_result *res) {
    char mpath[2048];
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", run);
    TANDEM_TRY(tandem_figures_load_metrics(fig, mpath, &res->metrics_lines, &res->metrics_bad_lines));
    tandem_figures_series tr, va;
    tandem_figures_history(fig, &tr, &va);
    if (tr.n == 0) return tandem_fail(TANDEM_E_INVALID, "%s has no logged step", mpath);
    TANDEM_TRY(tandem_figures_write_loss(fig, out_dir));
    res->loss_written = 1;
    res->train_points = tr.n;
    res->val_points = va.n;
    res->stride = tr.stride;
    return TANDEM_OK;
}

/* id and text (the normalised column when present) of the row for utt (NULL: the first row). */
static tandem_status find_utterance(const char *data, const char *utt, char *id, size_t idcap,
                                    char *text, size_t tcap) {
    char path[2048];
    snprintf(path, sizeof path, "%s/metadata.csv", data);
    int fd = -1; /* non-blocking open + regular-file check: a FIFO would block fopen */
    TANDEM_TRY(tandem_file_open_input(path, 0, NULL, &fd, NULL));
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return tandem_fail(TANDEM_E_IO, "cannot open %s", path);
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
    if (!found) return tandem_fail(TANDEM_E_INVALID, "%s: no utterance %s", path, utt ? utt : "(empty file)");
    return TANDEM_OK;
}

/* The target of utterance id (its audio through the host recipe) and the teacher-forced
 * prediction into the figure's buffers; *frames: how many. */
static tandem_status mel_pair(tandem_figures *fig, tandem_synth *s, const char *data, const char *id,
                              const char *text, int *frames) {
    const int F = tandem_figures_max_frames(fig);
    const int64_t max_samples = (int64_t)F * TANDEM_MEL_HOP;
    float *audio = tandem_malloc((size_t)max_samples * sizeof(float));
    float *target = tandem_figures_mel_target(fig), *pred = tandem_figures_mel_pred(fig);
    tandem_mel_host *mh = NULL;
    char wav[2048];
    snprintf(wav, sizeof wav, "%s/wavs/%s.wav", data, id);
    int64_t n = 0;
    tandem_status st = audio ? TANDEM_OK : tandem_fail(TANDEM_E_NOMEM, "out of memory for %lld samples",
                                                        (long long)max_samples);
    if (st == TANDEM_OK) st = tandem_audio_load(wav, audio, max_samples, &n, NULL);
    if (st == TANDEM_OK) st = tandem_mel_host_create(&mh);
    if (st == TANDEM_OK) st = tandem_mel_host_compute(mh, audio, n, target, F, frames);
    if (st == TANDEM_OK && *frames < 1)
        st = tandem_fail(TANDEM_E_INVALID, "%s: no frames (shorter than one hop)", wav);
    if (st == TANDEM_OK) st = tandem_synth_teacher_forced(s, text, strlen(text), -1, target, *frames, pred);
    tandem_mel_host_free(mh);
    tandem_free(audio);
    return st;
}

/* mel.png of one utterance of data (utt NULL: the first row). */
static tandem_status plot_mel(tandem_figures *fig, tandem_synth *s, const char *data, const char *utt,
                              const char *out_dir, tandem_plot_result *res) {
    char text[16384];
    TANDEM_TRY(find_utterance(data, utt, res->utterance, sizeof res->utterance, text, sizeof text));
    int frames = 0;
    tandem_status st = mel_pair(fig, s, data, res->utterance, text, &frames);
    if (st == TANDEM_OK) st = tandem_figures_set_mel(fig, frames, -1);
    /* the free-running panel, as the trainer draws it (validation's free-running evaluation) */
    tandem_synth_result r;
    if (st == TANDEM_OK) st = tandem_synth_generate(s, text, strlen(text), -1, 0, &r);
    if (st == TANDEM_OK) {
        memcpy(tandem_figures_mel_gen(fig), r.mel, (size_t)r.frames * TANDEM_MEL_N_MELS * sizeof(float));
        st = tandem_figures_set_gen(fig, r.frames);
    }
    if (st == TANDEM_OK) st = tandem_figures_write_mel(fig, out_dir);
    if (st != TANDEM_OK) {
        char why[1024];
        snprintf(why, sizeof why, "%s", tandem_last_error());
        return tandem_fail(st, "%s: %s", res->utterance, why);
    }
    res->mel_written = 1;
    res->mel_frames = frames;
    return TANDEM_OK;
}

tandem_status tandem_plot_run(const char *run_dir, const tandem_plot_options *o,
                              tandem_plot_result *out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_plot_run: out is NULL");
    memset(out, 0, sizeof *out);
    tandem_plot_options d;
    tandem_plot_options_init(&d);
    if (!o) o = &d;
    if (!run_dir || (!o->checkpoint != !o->data_dir))
        return tandem_fail(TANDEM_E_INVALID, "plot: give the run directory, and a checkpoint with "
                           "a data directory (or neither)");
    const char *out_dir = o->out_dir ? o->out_dir : run_dir;
    /* the checkpoint first: a bad one fails before anything is written; its max_frames sizes
     * the mel buffers */
    tandem_synth *s = NULL;
    if (o->checkpoint) {
        tandem_synth_options so;
        tandem_synth_options_init(&so);
        so.backend = o->backend;
        so.gl_iters = 0;
        TANDEM_TRY(tandem_synth_open(o->checkpoint, &so, &s));
    }
    tandem_figures *fig = NULL;
    tandem_status st = tandem_figures_create(TANDEM_FIGURES_HISTORY,
                                             s ? tandem_synth_config(s)->max_frames : 0, &fig);
    if (st == TANDEM_OK) st = plot_loss(fig, run_dir, out_dir, out);
    if (st == TANDEM_OK && s) st = plot_mel(fig, s, o->data_dir, o->utterance, out_dir, out);
    tandem_figures_free(fig);
    tandem_synth_close(s);
    return st;
}
