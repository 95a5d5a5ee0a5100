/* mel.h — argument structs of the log-mel feature kernels (kernels/mel.cu), the device half
 * of the recipe in runtime/mel.h, and the sequential FFT that their host implementations and
 * the runtime's host path share (kernels/mel_host.c). Between the kernels, the mel projection
 * is a GEMM (runtime/mel_device.c):
 *
 *   mel_stft       audio [B, S] + lengths → |STFT| [B * F, 513]: reflect pad, framing,
 *                  periodic Hann, 1024-point real FFT and sqrt(re^2 + im^2 + 1e-9), all in
 *                  double (a float STFT misses the 1e-3 log-mel tolerance on bands near the
 *                  1e-5 floor next to loud ones), stored float
 *   GEMM           |X| @ filterbank^T ([80, 513] stored) → mel [B * F, 80]
 *   mel_log        ln(max(mel, 1e-5)) on real frames, 0 on padded ones → [B, F, 80]
 *   mel_targets    frame counts, frame mask and stop targets from the lengths
 *
 * B = batch, S = max_samples, F = max_frames. Item b has T_b = min(floor(len_b / 256), F)
 * frames, where len_b = lengths[b] clamped to [0, S] (so a bad length can never read outside
 * the audio buffer).
 */
#ifndef TANDEM_KERNELS_MEL_H
#define TANDEM_KERNELS_MEL_H

#include "ktypes.h"

#define TANDEM_K_MEL_N_FFT 1024
#define TANDEM_K_MEL_HOP 256
#define TANDEM_K_MEL_PAD 384
#define TANDEM_K_MEL_N_BINS 513
#define TANDEM_K_MEL_N_MELS 80

/* mag[b * F + t, k] = sqrt(re^2 + im^2 + 1e-9) of DFT_1024(w * frame_t)[k] for t < T_b, else 0;
 * frame_t[n] = x_b[reflect(256 t + n - 384)] (numpy "reflect" padding of x_b[0, len_b),
 * repeated when len_b <= 384), w the periodic Hann window. One block of exactly
 * TANDEM_K_MEL_STFT_THREADS threads per frame (grid-stride over frames). */
#define TANDEM_K_MEL_STFT_THREADS 256
typedef struct tandem_k_mel_stft_args {
    const float *audio;     /* [batch, max_samples] */
    const int32_t *lengths; /* [batch] samples per item */
    float *mag;             /* [batch * max_frames, 513] */
    int64_t max_samples;
    int batch, max_frames;
} tandem_k_mel_stft_args;

/* out[b, t, m] = ln(max(mel[b * F + t, m], 1e-5)) for t < T_b, else 0 */
typedef struct tandem_k_mel_log_args {
    const float *mel;       /* [batch * max_frames, 80] */
    const int32_t *lengths; /* [batch] */
    float *out;             /* [batch, max_frames, 80] */
    int64_t max_samples;
    int batch, max_frames;
} tandem_k_mel_log_args;

/* frames[b] = T_b; mask[b, t] = t < T_b; stop[b, t] = t >= T_b - 1 (1 from the last real frame
 * on, the stop target of DESIGN.md §7; all ones for an item without frames). */
typedef struct tandem_k_mel_targets_args {
    const int32_t *lengths; /* [batch] */
    int32_t *frames;        /* [batch] */
    float *mask;            /* [batch, max_frames] */
    float *stop;            /* [batch, max_frames] */
    int64_t max_samples;
    int batch, max_frames;
} tandem_k_mel_targets_args;

/* Frames of item b (shared by kernels and host implementations). */
TANDEM_HD int tandem_k_mel_item_frames(const int32_t *lengths, int b, int64_t max_samples,
                                       int max_frames, int64_t *len_out) {
    int64_t len = lengths[b];
    if (len < 0) len = 0;
    if (len > max_samples) len = max_samples;
    int64_t t = len / TANDEM_K_MEL_HOP;
    *len_out = len;
    return (int)(t < max_frames ? t : max_frames);
}

/* numpy "reflect" index of padded position j (relative to x[0]) into x[0, len), len >= 1. */
TANDEM_HD int64_t tandem_k_mel_reflect(int64_t j, int64_t len) {
    if (j >= 0 && j < len) return j;
    if (len == 1) return 0;
    int64_t period = 2 * (len - 1);
    j %= period;
    if (j < 0) j += period;
    return j < len ? j : period - j;
}

#ifndef __CUDACC__
/* The sequential FFT (host C only): tables for a 1024-point real DFT computed as a 512-point
 * complex radix-2 FFT of the even/odd samples packed as re/im plus the split step; all double. */
typedef struct tandem_mel_fft_tables {
    double window[TANDEM_K_MEL_N_FFT];         /* periodic Hann, double */
    double tw_re[TANDEM_K_MEL_N_FFT / 4];      /* e^{-2 pi i j / 512}, j < 256 */
    double tw_im[TANDEM_K_MEL_N_FFT / 4];
    double sp_re[TANDEM_K_MEL_N_FFT / 2 + 1];  /* e^{-2 pi i k / 1024}, k <= 512 */
    double sp_im[TANDEM_K_MEL_N_FFT / 2 + 1];
    uint16_t bitrev[TANDEM_K_MEL_N_FFT / 2];   /* 9-bit bit reversal */
} tandem_mel_fft_tables;
void tandem_mel_fft_tables_init(tandem_mel_fft_tables *t);
/* mag[k] = sqrt(|DFT_1024(window * frame)[k]|^2 + 1e-9), k < 513; frame is unwindowed. */
void tandem_mel_fft_magnitude(const tandem_mel_fft_tables *t, const double *frame, double *mag);
#endif

#endif
