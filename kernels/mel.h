/* mel.h — argument structs of the log-mel feature kernels (kernels/mel.cu), the device half
 * of the recipe in runtime/audio/mel.h, and the per-frame host STFT that their host implementations
 * and the runtime's host path share (kernels/mel_host.c):
 *
 *   mel_stft       audio [B, S] + lengths → |STFT| [B * F, 513]: reflect pad, framing,
 *                  periodic Hann and the 1024-point real FFT in double (a float STFT misses
 *                  the 1e-3 log-mel tolerance on bands near the 1e-5 floor next to loud ones),
 *                  then sqrtf of the power re^2 + im^2 + 1e-9 rounded to float, stored float
 *   mel_project    |STFT| [B * F, 513] → mel [B * F, 80]: each Slaney band over its own
 *                  contiguous nonzero bins only (about 740 weights instead of 80 x 513),
 *                  accumulated in double, stored float
 *   mel_log        ln(max(mel, 1e-5)) on real frames, silence ln(1e-5) on padded ones → [B, F, 80]
 *   mel_targets    frame counts, frame mask and stop targets from the lengths
 *
 * B = batch, S = max_samples, F = max_frames. Item b has T_b = min(floor(len_b / 256), F)
 * frames, where len_b = lengths[b] clamped to [0, S] (so a bad length can never read outside
 * the audio buffer).
 */
#ifndef TANDEM_KERNELS_MEL_H
#define TANDEM_KERNELS_MEL_H

#include "kernels/ktypes.h"

/* Threads per block of the per-element mel kernels (mel_host.c; mel.cu's launch bounds). */
#define TANDEM_K_MEL_THREADS 256

/* The feature recipe (DESIGN.md §6): its one definition. Device code, the host implementations
 * and the runtime (runtime/audio/mel.h, the config's n_mels, the pipeline's shapes, the plan)
 * all use these; the public header's TANDEM_FEATURE_* repeat the three a client needs, checked
 * equal at compile time in runtime/audio/mel.c. */
#define TANDEM_MEL_SAMPLE_RATE 22050 /* Hz, mono; every input is resampled to it */
#define TANDEM_MEL_N_FFT 1024
#define TANDEM_MEL_HOP 256
#define TANDEM_MEL_PAD ((TANDEM_MEL_N_FFT - TANDEM_MEL_HOP) / 2)  /* 384 reflected samples each side */
#define TANDEM_MEL_N_BINS (TANDEM_MEL_N_FFT / 2 + 1)              /* 513 */
#define TANDEM_MEL_N_MELS 80
#define TANDEM_MEL_FMIN 0.0    /* Hz, lowest band edge */
#define TANDEM_MEL_FMAX 8000.0 /* Hz, highest band edge */
#define TANDEM_MEL_MAG_EPS 1e-9    /* added to the power re^2 + im^2 (double) before the sqrt */
#define TANDEM_MEL_LOG_FLOOR 1e-5f /* ln(max(mel, floor)) */

/* mag[b * F + t, k] = sqrtf((float)(re^2 + im^2 + 1e-9)) of DFT_1024(w * frame_t)[k] for
 * t < T_b, else 0;
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

/* The mel filterbank in sparse form: band m has weights weights[off[m] + j] on bins lo[m] + j,
 * j < len[m] (its nonzero range, 0 <= lo, lo + len <= 513), packed one band after another.
 * Small enough (960 bytes) to travel in the argument struct. */
typedef struct tandem_k_mel_bands {
    int32_t lo[TANDEM_MEL_N_MELS];
    int32_t len[TANDEM_MEL_N_MELS];
    int32_t off[TANDEM_MEL_N_MELS];
} tandem_k_mel_bands;

/* mel[b * F + t, m] = sum_{j < len[m]} weights[off[m] + j] * mag[b * F + t, lo[m] + j] for
 * t < T_b (accumulated in double, stored float), else 0 (padded frames are not projected). */
typedef struct tandem_k_mel_project_args {
    const float *mag;       /* [batch * max_frames, 513] */
    const float *weights;   /* [sum of len] packed band weights */
    const int32_t *lengths; /* [batch] */
    float *mel;             /* [batch * max_frames, 80] */
    int64_t max_samples;
    int batch, max_frames;
    tandem_k_mel_bands bands;
} tandem_k_mel_project_args;

/* out[b, t, m] = ln(max(mel[b * F + t, m], 1e-5)) for t < T_b, else pad (silence: padded frames
 * feed the model, and a loud 0 there taught the stop head "input 0 → stop", which never happens
 * in free running; DESIGN.md §7). */
typedef struct tandem_k_mel_log_args {
    const float *mel;       /* [batch * max_frames, 80] */
    const int32_t *lengths; /* [batch] */
    float *out;             /* [batch, max_frames, 80] */
    float pad;              /* tandem_mel_silence(), computed by the host so that every backend
                               writes the same bits (a device logf may differ by an ulp) */
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
    int64_t t = len / TANDEM_MEL_HOP;
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
#include <math.h>

/* ---- the host STFT and projection (host C only; kernels/mel_host.c) ----
 * Shared by the kernels' host implementations and runtime/audio/mel.c's host path, so both compute
 * the same numbers. The FFT is FFTW's double r2c (built with TANDEM_HAVE_FFTW, HOST_FFT=fftw)
 * or the project's own radix-2 FFT (a 512-point complex FFT of the even/odd samples plus the
 * split step, as the device kernel does), both in double. */

/* Prepare the host FFT once per process: the window, the built-in FFT's tables and, with FFTW,
 * its plan (planning allocates, so call this before committing a pool; tandem_mel_plan_prepare
 * and tandem_mel_host_create do). Thread-safe and idempotent; the frame functions below call it
 * too, as a fallback. Returns 0, or -1 if FFTW could not make a plan (the built-in FFT is used). */
int tandem_mel_fft_prepare(void);
/* "fftw" or "built-in": which FFT the host frame functions use (after prepare). */
const char *tandem_mel_fft_name(void);

/* |STFT| of frame t of x[0, len) (len >= 1): samples x[reflect(start + n)], n < 1024, with
 * start = 256 t - 384, times the window, real FFT in double, then
 * mag[k] = sqrtf((float)(re^2 + im^2 + 1e-9)), k < 513. Allocation-free; any thread. */
void tandem_mel_frame_magnitude(const float *x, int64_t len, int64_t start, float *mag);

/* logf(fmaxf(v, 1e-5f)) with the maximum written out (libm's fmaxf is a call here, not an
 * instruction); a NaN v gives ln(1e-5) as fmaxf's does. */
static inline float tandem_mel_log_floor(float v) {
    return logf(v > TANDEM_MEL_LOG_FLOOR ? v : TANDEM_MEL_LOG_FLOOR);
}

/* The log-mel of silence, ln(1e-5): the value of every frame past an utterance's length
 * (batches, validation, synthesis input). */
static inline float tandem_mel_silence(void) {
    return tandem_mel_log_floor(0.0f);
}

/* One frame's projection: mel[m] = sum_j weights[off[m] + j] * mag[lo[m] + j] (double
 * accumulation, rounded to float), m < 80. */
void tandem_mel_project_frame(const tandem_k_mel_bands *bands, const float *weights, const float *mag,
                              float *mel);
#endif

#endif
