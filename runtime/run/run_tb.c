/* run_tb.c — a training run's TensorBoard events (see run_tb.h). */
#include "runtime/run/run_tb.h"

#include <inttypes.h>
#include <stddef.h>
#include <string.h>
#include <stdio.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/audio/mel.h"
#include "runtime/report/figures.h"
#include "runtime/report/plot.h"
#include "runtime/run/val_speak.h"

tandem_status tandem_run_tb_open(const tandem_config *cfg, int64_t resumed_step, tandem_tb **out) {
    *out = NULL;
    if (!cfg->tensorboard) return TANDEM_OK;
    /* the largest file embedded: a figure stored uncompressed (rows of RGB and a filter byte, plus
       deflate's 5 bytes per 16 KiB block) — the loss figure or the widest mel figure, sized as
       figures.c sizes its canvas — or a test sentence's 16-bit WAV */
    int w = TANDEM_FIGURES_LOSS_W, h = TANDEM_FIGURES_LOSS_H;
    const int probe[2] = {cfg->max_frames < 1024 ? cfg->max_frames : 1024, cfg->max_frames};
    for (int k = 0; k < 2; k++) {
        int mw = 0, mh = 0;
        tandem_plot_mel_size_n(probe[k], TANDEM_FIGURES_N_MELS, 3, &mw, &mh);
        if (mw > w) w = mw;
        if (mh > h) h = mh;
    }
    const size_t raw = (size_t)h * (3 * (size_t)w + 1);
    const size_t png = raw + raw / 16384 * 5 + 65536;
    const size_t wav = (size_t)cfg->max_frames * TANDEM_MEL_HOP * 2 + 65536;
    const size_t blob = png > wav ? png : wav;
    const char *dir = cfg->tensorboard_dir[0] ? cfg->tensorboard_dir : cfg->out;
    if (cfg->tensorboard_dir[0]) TANDEM_TRY(tandem_mkdir_p(dir));
    TANDEM_TRY(tandem_tb_open(dir, resumed_step, blob, out));
    tandem_logf(TANDEM_LOG_INFO, "tensorboard: events in %s (tensorboard --logdir %s)", tandem_tb_path(*out), dir);
    return TANDEM_OK;
}

/* A failed write: one warning, then no more events. */
static void give_up(tandem_tb **tb) {
    tandem_logf(TANDEM_LOG_WARN, "tensorboard: %s; no more events are written to %s", tandem_last_error(),
                tandem_tb_path(*tb));
    tandem_tb_close(*tb, 0);
    *tb = NULL;
}

/* The scalars of every logged step, then those of validation steps (< 0: that part did not run). */
#define F(tag, field) {tag, offsetof(tandem_step_metrics, field)}
static const struct {
    const char *tag;
    size_t off;
} k_step[] = {
    F("train/loss", loss), F("train/l1", l1), F("train/stop_bce", stop_bce), F("train/ga", ga), F("train/lr", lr),
    F("train/grad_norm", grad_norm), F("perf/step_ms", step_ms), F("perf/data_wait_ms", data_wait_ms),
    F("perf/model_busy_pct", model_busy_pct), F("perf/data_busy_pct", data_busy_pct),
    F("perf/samples_per_s", samples_per_s), F("perf/x_realtime", x_realtime),
    F("data/real_frames_pct", real_frames_pct),
}, k_val[] = {
    F("val/l1", val_l1), F("val/stop_bce", val_stop_bce), F("eval/stop_within", eval_stop_within),
    F("eval/len_ratio", eval_len_ratio), F("eval/dtw_l1", eval_dtw_l1), F("eval/text_dep", eval_text_dep),
    F("eval/spec_var", eval_spec_var), F("eval/ident", eval_ident),
};
#undef F

void tandem_run_tb_step(tandem_tb **tb, const tandem_step_metrics *m, int validated) {
    if (!*tb) return;
    const char *tags[TANDEM_TB_MAX_SCALARS];
    double v[TANDEM_TB_MAX_SCALARS];
    int n = 0;
    for (size_t i = 0; i < sizeof k_step / sizeof k_step[0]; i++, n++) {
        tags[n] = k_step[i].tag;
        memcpy(&v[n], (const char *)m + k_step[i].off, sizeof(double));
    }
    for (size_t i = 0; validated && i < sizeof k_val / sizeof k_val[0]; i++) {
        tags[n] = k_val[i].tag;
        memcpy(&v[n], (const char *)m + k_val[i].off, sizeof(double));
        if (v[n] >= 0) n++;
    }
    if (tandem_tb_scalars(*tb, m->step, tags, v, n) != TANDEM_OK) give_up(tb);
}

void tandem_run_tb_initial(tandem_tb **tb, double val_l1, double val_stop_bce) {
    const char *tags[2] = {"val/l1", "val/stop_bce"};
    const double v[2] = {val_l1, val_stop_bce};
    if (*tb && tandem_tb_scalars(*tb, 0, tags, v, 2) != TANDEM_OK) give_up(tb);
}

void tandem_run_tb_figures(tandem_tb **tb, const char *out, int64_t step) {
    static const char *const file[2] = {TANDEM_FIGURES_LOSS_FILE, TANDEM_FIGURES_MEL_FILE};
    static const char *const tag[2] = {"figures/loss", "figures/mel"};
    for (int i = 0; i < 2 && *tb; i++) {
        char p[1200];
        if (snprintf(p, sizeof p, "%s/%s", out, file[i]) >= (int)sizeof p || !tandem_file_exists(p)) continue;
        if (tandem_tb_file(*tb, step, tag[i], p, 'i') != TANDEM_OK) give_up(tb);
    }
}

void tandem_run_tb_samples(tandem_tb **tb, const char *samples_dir, int64_t step, int n) {
    char held[1200];
    if (*tb && samples_dir[0] &&
        snprintf(held, sizeof held, "%s/" TANDEM_VAL_SPEAK_HELD_WAV, samples_dir, (long long)step) < (int)sizeof held &&
        tandem_file_exists(held) && tandem_tb_file(*tb, step, "samples/held_out", held, 'a') != TANDEM_OK)
        give_up(tb);
    for (int k = 1; k <= n && *tb; k++) {
        char p[1200], tag[32];
        snprintf(tag, sizeof tag, "samples/%d", k);
        if (snprintf(p, sizeof p, "%s/step-%08" PRId64 "-%d.wav", samples_dir, step, k) >= (int)sizeof p ||
            !tandem_file_exists(p))
            continue;
        if (tandem_tb_file(*tb, step, tag, p, 'a') != TANDEM_OK) give_up(tb);
    }
}
