/* mel_host.c — launch geometry and host implementations of the log-mel kernels (mel.cu), and
 * the sequential double FFT they share with runtime/mel.c. The host implementations follow the
 * kernels' semantics (kernels/mel.h) and their arithmetic (the same FFT stages in double; the
 * same float logf/fmaxf), so host and device agree to rounding. */
#include <math.h>
#include <stdint.h>

#include "registry.h"

enum { MEL_THREADS = 256, MEL_MAX_BLOCKS = 4096 };

static void mel_dims(int64_t n, tandem_launch_dims *d) {
    *d = tandem_dims_1d(n, MEL_THREADS);
    if (d->grid[0] > MEL_MAX_BLOCKS) d->grid[0] = MEL_MAX_BLOCKS; /* grid-stride covers the rest */
}

/* ---- the sequential FFT (shared with runtime/mel.c's host path) ---- */

static const double mel_two_pi = 6.283185307179586476925286766559;

void tandem_mel_fft_tables_init(tandem_mel_fft_tables *t) {
    for (int n = 0; n < TANDEM_K_MEL_N_FFT; n++)
        t->window[n] = 0.5 - 0.5 * cos(mel_two_pi * n / TANDEM_K_MEL_N_FFT);
    for (int j = 0; j < 256; j++) {
        t->tw_re[j] = cos(mel_two_pi * j / 512.0);
        t->tw_im[j] = -sin(mel_two_pi * j / 512.0);
    }
    for (int k = 0; k <= 512; k++) {
        t->sp_re[k] = cos(mel_two_pi * k / TANDEM_K_MEL_N_FFT);
        t->sp_im[k] = -sin(mel_two_pi * k / TANDEM_K_MEL_N_FFT);
    }
    for (int i = 0; i < 512; i++) {
        int r = 0;
        for (int bit = 0; bit < 9; bit++) r |= ((i >> bit) & 1) << (8 - bit);
        t->bitrev[i] = (uint16_t)r;
    }
}

void tandem_mel_fft_magnitude(const tandem_mel_fft_tables *t, const double *frame, double *mag) {
    double zr[512], zi[512];
    for (int i = 0; i < 512; i++) { /* even/odd samples as re/im, bit-reversed, windowed */
        zr[t->bitrev[i]] = t->window[2 * i] * frame[2 * i];
        zi[t->bitrev[i]] = t->window[2 * i + 1] * frame[2 * i + 1];
    }
    for (int size = 2; size <= 512; size <<= 1) { /* radix-2 decimation in time */
        int half = size >> 1, step = 512 / size;
        for (int base = 0; base < 512; base += size)
            for (int j = 0; j < half; j++) {
                int p = base + j, q = p + half;
                double wr = t->tw_re[j * step], wi = t->tw_im[j * step];
                double xr = zr[q] * wr - zi[q] * wi, xi = zr[q] * wi + zi[q] * wr;
                zr[q] = zr[p] - xr;
                zi[q] = zi[p] - xi;
                zr[p] += xr;
                zi[p] += xi;
            }
    }
    for (int k = 0; k <= 512; k++) { /* split step: X[k] = E[k] + e^{-2 pi i k / 1024} O[k] */
        int ka = k % 512, kb = (512 - k) % 512;
        double er = 0.5 * (zr[ka] + zr[kb]), ei = 0.5 * (zi[ka] - zi[kb]);
        double orr = 0.5 * (zi[ka] + zi[kb]), oi = -0.5 * (zr[ka] - zr[kb]);
        double re = er + t->sp_re[k] * orr - t->sp_im[k] * oi;
        double im = ei + t->sp_re[k] * oi + t->sp_im[k] * orr;
        mag[k] = sqrt(re * re + im * im + 1e-9);
    }
}

/* ---- mel_stft ---- */
void tandem_k_mel_stft_geom(const tandem_k_mel_stft_args *a, tandem_launch_dims *d) {
    int64_t rows = (int64_t)a->batch * a->max_frames;
    *d = tandem_dims_1d(rows, 1); /* one block per frame... */
    if (d->grid[0] > MEL_MAX_BLOCKS) d->grid[0] = MEL_MAX_BLOCKS; /* ...grid-stride past the cap */
    d->block[0] = TANDEM_K_MEL_STFT_THREADS;
}
void tandem_k_mel_stft_host(const tandem_k_mel_stft_args *a) {
    tandem_mel_fft_tables tab;
    tandem_mel_fft_tables_init(&tab);
    double frame[TANDEM_K_MEL_N_FFT], mag[TANDEM_K_MEL_N_BINS];
    for (int b = 0; b < a->batch; b++) {
        int64_t len = 0;
        int frames = tandem_k_mel_item_frames(a->lengths, b, a->max_samples, a->max_frames, &len);
        const float *x = a->audio + (int64_t)b * a->max_samples;
        for (int t = 0; t < a->max_frames; t++) {
            float *out = a->mag + ((int64_t)b * a->max_frames + t) * TANDEM_K_MEL_N_BINS;
            if (t >= frames) {
                for (int k = 0; k < TANDEM_K_MEL_N_BINS; k++) out[k] = 0.0f;
                continue;
            }
            int64_t start = (int64_t)t * TANDEM_K_MEL_HOP - TANDEM_K_MEL_PAD;
            for (int n = 0; n < TANDEM_K_MEL_N_FFT; n++) frame[n] = x[tandem_k_mel_reflect(start + n, len)];
            tandem_mel_fft_magnitude(&tab, frame, mag);
            for (int k = 0; k < TANDEM_K_MEL_N_BINS; k++) out[k] = (float)mag[k];
        }
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
