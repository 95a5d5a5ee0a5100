/* mel.h — argument structs of the log-mel feature kernels (kernels/mel.cu), the device half
 * of the recipe in runtime/mel.h. The STFT and the mel projection between them are GEMMs
 * (runtime/mel_device.c):
 *
 *   mel_frames     audio [B, S] + lengths → windowed frames [B * F, 1024]
 *   GEMM           frames @ DFT basis [1024, 1026] → spectrum [B * F, 1026] (re | im)
 *   mel_magnitude  spectrum → |X| [B * F, 513] with the recipe's +1e-9
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

/* frames[b, t, n] = audio[b, reflect(256 t + n - 384)] * window[n] for t < T_b, else 0.
 * reflect is numpy's "reflect" padding of x[0, len_b), repeated when len_b <= 384. */
typedef struct tandem_k_mel_frames_args {
    const float *audio;     /* [batch, max_samples] */
    const int32_t *lengths; /* [batch] samples per item */
    const float *window;    /* [1024] periodic Hann */
    float *frames;          /* [batch, max_frames, 1024] */
    int64_t max_samples;
    int batch, max_frames;
} tandem_k_mel_frames_args;

/* mag[r, k] = sqrt(spec[r, k]^2 + spec[r, 513 + k]^2 + 1e-9) */
typedef struct tandem_k_mel_magnitude_args {
    const float *spec; /* [rows, 1026]: 513 real parts, then 513 imaginary parts */
    float *mag;        /* [rows, 513] */
    int64_t rows;
} tandem_k_mel_magnitude_args;

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

#endif
