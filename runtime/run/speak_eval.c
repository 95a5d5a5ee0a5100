/* speak_eval.c — free-running evaluation of a synthesis handle (see speak_eval.h). */
#include "runtime/run/speak_eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/audio/audio.h"
#include "runtime/audio/mel.h"

size_t tandem_speak_eval_scratch_floats(int max_frames) {
    /* the teacher-forced prediction [F, 80], then 4 (F + 1) doubles of DTW rows */
    return (size_t)max_frames * TANDEM_MEL_N_MELS + 8 * ((size_t)max_frames + 1) + 2;
}

double *tandem_speak_eval_dtw_row(float *scratch, int max_frames) {
    const size_t n = (size_t)max_frames * TANDEM_MEL_N_MELS;
    return (double *)(void *)(scratch + n + (n & 1));
}

static double frame_l1(const float *a, const float *b, int bands) {
    double s = 0;
    for (int k = 0; k < bands; k++) s += fabs((double)a[k] - b[k]);
    return s / bands;
}

/* Two DP rows over b's frames: the cheapest cumulative cost of a monotone alignment ending at
 * (i, j) and that alignment's length (ties keep the diagonal, then the shorter path). */
double tandem_speak_dtw_l1(const float *a, int G, const float *b, int N, int bands, double *row) {
    if (G < 1 || N < 1) return 0.0;
    double *pc = row, *pl = row + (N + 1), *cc = row + 2 * (N + 1), *cl = row + 3 * (N + 1);
    for (int j = 0; j <= N; j++) pc[j] = INFINITY, pl[j] = 0;
    pc[0] = 0;
    for (int i = 1; i <= G; i++) {
        cc[0] = INFINITY, cl[0] = 0;
        for (int j = 1; j <= N; j++) {
            double best = pc[j - 1], len = pl[j - 1]; /* diagonal */
            if (pc[j] < best) best = pc[j], len = pl[j];
            if (cc[j - 1] < best) best = cc[j - 1], len = cl[j - 1];
            cc[j] = best + frame_l1(a + (size_t)(i - 1) * bands, b + (size_t)(j - 1) * bands, bands);
            cl[j] = len + 1;
        }
        double *t = pc;
        pc = cc, cc = t;
        t = pl, pl = cl, cl = t;
    }
    return pc[N] / pl[N];
}

double tandem_speak_flux(const float *mel, int frames, int bands) {
    if (frames < 2) return 0.0;
    double s = 0;
    for (int t = 1; t < frames; t++)
        s += frame_l1(mel + (size_t)t * bands, mel + (size_t)(t - 1) * bands, bands);
    return s / (frames - 1);
}

void tandem_speak_identify(const float *gen, const float *truth, size_t stride, int n,
                           const int *true_frames, double *row, tandem_speak_utt *u) {
    for (int i = 0; i < n; i++) {
        double best = INFINITY;
        u[i].nearest = -1;
        for (int j = 0; j < n; j++) {
            const double d = tandem_speak_dtw_l1(gen + (size_t)i * stride, u[i].gen_frames,
                                                 truth + (size_t)j * stride, true_frames[j],
                                                 TANDEM_MEL_N_MELS, row);
            if (d < best) best = d, u[i].nearest = j;
        }
    }
}

static double mean_l1(const float *a, const float *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += fabs((double)a[i] - b[i]);
    return n ? s / (double)n : 0.0;
}

tandem_status tandem_speak_eval_utt(tandem_synth *s, const int32_t *ids, int count,
                                    const int32_t *other, int other_count, const float *truth,
                                    int frames, float *scratch, float *gen, tandem_speak_utt *out) {
    if (!s || !ids || !truth || !scratch || !out)
        return tandem_fail(TANDEM_E_INVALID, "speak eval: NULL argument");
    memset(out, 0, sizeof *out);
    const int F = tandem_synth_config(s)->max_frames, C = TANDEM_MEL_N_MELS;
    if (frames < 1 || frames > F)
        return tandem_fail(TANDEM_E_INVALID, "speak eval: %d true frames; expected 1..%d", frames, F);
    tandem_synth_result r;
    TANDEM_TRY(tandem_synth_generate_ids(s, ids, count, 0, &r));
    out->true_frames = frames;
    out->gen_frames = r.frames;
    out->stopped = r.stop == TANDEM_SYNTH_STOP_HEAD;
    out->stop_frame = r.stop_frame;
    out->ratio = (double)r.frames / frames;
    out->within = out->stopped &&
                  fabs((double)r.frames - frames) <= TANDEM_SPEAK_LENGTH_TOLERANCE * frames;
    float *pred = scratch;
    double *row = tandem_speak_eval_dtw_row(scratch, F);
    out->dtw_l1 = tandem_speak_dtw_l1(r.mel, r.frames, truth, frames, C, row);
    const double true_flux = tandem_speak_flux(truth, frames, C);
    out->spec_var = true_flux > 0 ? tandem_speak_flux(r.mel, r.frames, C) / true_flux : 0.0;
    out->nearest = -1;
    if (gen) memcpy(gen, r.mel, (size_t)r.frames * C * sizeof(float));
    const size_t n = (size_t)frames * C;
    TANDEM_TRY(tandem_synth_teacher_forced_ids(s, ids, count, truth, frames, pred));
    out->tf_l1 = mean_l1(pred, truth, n);
    if (!other) return TANDEM_OK;
    TANDEM_TRY(tandem_synth_teacher_forced_ids(s, other, other_count, truth, frames, pred));
    out->tf_l1_other = mean_l1(pred, truth, n);
    return TANDEM_OK;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void tandem_speak_eval_summarize(const tandem_speak_utt *u, int n, tandem_speak_summary *out) {
    memset(out, 0, sizeof *out);
    if (!u || n < 1) return;
    double ratios[256], tf = 0, other = 0;
    int ident_run = 0;
    const int nr = n < 256 ? n : 256; /* the median of the first 256 */
    out->n = n;
    for (int i = 0; i < n; i++) {
        out->within += u[i].within;
        out->dtw_l1 += u[i].dtw_l1 / n;
        out->spec_var += u[i].spec_var / n;
        out->identified += u[i].nearest == i;
        ident_run |= u[i].nearest >= 0;
        tf += u[i].tf_l1;
        other += u[i].tf_l1_other;
        if (i < nr) ratios[i] = u[i].ratio;
    }
    out->within_frac = (double)out->within / n;
    out->ident_frac = ident_run ? (double)out->identified / n : 0.0;
    qsort(ratios, (size_t)nr, sizeof ratios[0], cmp_double);
    out->median_ratio = nr % 2 ? ratios[nr / 2] : 0.5 * (ratios[nr / 2 - 1] + ratios[nr / 2]);
    out->text_dependence = tf > 0 ? other / tf : 0.0;
}

tandem_status tandem_speak_eval_true_mel(const char *wav, int max_frames, float *audio, float *mel,
                                         int *frames) {
    const int64_t max_samples = (int64_t)max_frames * TANDEM_MEL_HOP;
    int64_t n = 0;
    tandem_mel_host *mh = NULL;
    tandem_status st = tandem_audio_load(wav, audio, max_samples, &n, NULL);
    if (st == TANDEM_OK) st = tandem_mel_host_create(&mh);
    if (st == TANDEM_OK) st = tandem_mel_host_compute(mh, audio, n, mel, max_frames, frames);
    if (st == TANDEM_OK && *frames < 1)
        st = tandem_fail(TANDEM_E_INVALID, "%s: no frames (shorter than one hop)", wav);
    tandem_mel_host_free(mh);
    return st;
}
