/* mel_host.c — launch geometry and host implementations of the log-mel kernels (mel.cu).
 * The host implementations follow the kernels' semantics (kernels/mel.h) loop by loop and use
 * the same float operations (sqrtf, logf, fmaxf), so host and device agree to rounding. */
#include <math.h>
#include <stdint.h>

#include "registry.h"

enum { MEL_THREADS = 256, MEL_MAX_BLOCKS = 4096 };

static void mel_dims(int64_t n, tandem_launch_dims *d) {
    *d = tandem_dims_1d(n, MEL_THREADS);
    if (d->grid[0] > MEL_MAX_BLOCKS) d->grid[0] = MEL_MAX_BLOCKS; /* grid-stride covers the rest */
}

/* ---- mel_frames ---- */
void tandem_k_mel_frames_geom(const tandem_k_mel_frames_args *a, tandem_launch_dims *d) {
    mel_dims((int64_t)a->batch * a->max_frames * TANDEM_K_MEL_N_FFT, d);
}
void tandem_k_mel_frames_host(const tandem_k_mel_frames_args *a) {
    for (int b = 0; b < a->batch; b++) {
        int64_t len = 0;
        int frames = tandem_k_mel_item_frames(a->lengths, b, a->max_samples, a->max_frames, &len);
        const float *x = a->audio + (int64_t)b * a->max_samples;
        for (int t = 0; t < a->max_frames; t++) {
            float *out = a->frames + ((int64_t)b * a->max_frames + t) * TANDEM_K_MEL_N_FFT;
            int64_t start = (int64_t)t * TANDEM_K_MEL_HOP - TANDEM_K_MEL_PAD;
            for (int n = 0; n < TANDEM_K_MEL_N_FFT; n++)
                out[n] = t < frames ? x[tandem_k_mel_reflect(start + n, len)] * a->window[n] : 0.0f;
        }
    }
}

/* ---- mel_magnitude ---- */
void tandem_k_mel_magnitude_geom(const tandem_k_mel_magnitude_args *a, tandem_launch_dims *d) {
    mel_dims(a->rows * TANDEM_K_MEL_N_BINS, d);
}
void tandem_k_mel_magnitude_host(const tandem_k_mel_magnitude_args *a) {
    for (int64_t r = 0; r < a->rows; r++) {
        const float *re = a->spec + r * 2 * TANDEM_K_MEL_N_BINS, *im = re + TANDEM_K_MEL_N_BINS;
        float *mag = a->mag + r * TANDEM_K_MEL_N_BINS;
        for (int k = 0; k < TANDEM_K_MEL_N_BINS; k++)
            mag[k] = sqrtf(re[k] * re[k] + im[k] * im[k] + 1e-9f);
    }
}

/* ---- mel_log ---- */
void tandem_k_mel_log_geom(const tandem_k_mel_log_args *a, tandem_launch_dims *d) {
    mel_dims((int64_t)a->batch * a->max_frames * TANDEM_K_MEL_N_MELS, d);
}
void tandem_k_mel_log_host(const tandem_k_mel_log_args *a) {
    for (int b = 0; b < a->batch; b++) {
        int64_t len = 0;
        int frames = tandem_k_mel_item_frames(a->lengths, b, a->max_samples, a->max_frames, &len);
        for (int t = 0; t < a->max_frames; t++) {
            int64_t row = ((int64_t)b * a->max_frames + t) * TANDEM_K_MEL_N_MELS;
            for (int m = 0; m < TANDEM_K_MEL_N_MELS; m++)
                a->out[row + m] = t < frames ? logf(fmaxf(a->mel[row + m], 1e-5f)) : 0.0f;
        }
    }
}

/* ---- mel_targets ---- */
void tandem_k_mel_targets_geom(const tandem_k_mel_targets_args *a, tandem_launch_dims *d) {
    mel_dims((int64_t)a->batch * a->max_frames, d);
}
void tandem_k_mel_targets_host(const tandem_k_mel_targets_args *a) {
    for (int b = 0; b < a->batch; b++) {
        int64_t len = 0;
        int frames = tandem_k_mel_item_frames(a->lengths, b, a->max_samples, a->max_frames, &len);
        a->frames[b] = frames;
        for (int t = 0; t < a->max_frames; t++) {
            a->mask[(int64_t)b * a->max_frames + t] = t < frames ? 1.0f : 0.0f;
            a->stop[(int64_t)b * a->max_frames + t] = t >= frames - 1 ? 1.0f : 0.0f;
        }
    }
}
