/* mel.h — the log-mel recipe of DESIGN.md §6 and its host implementation.
 *
 * Owns: the Slaney filterbank (built in double) and its sparse band form, the reflect padding
 * rule, and a host log-mel path made of the same per-frame pieces as
 * the kernels' host implementations (kernels/mel_host.c: window and FFT in double, FFTW or the
 * built-in radix-2 FFT; projection over each band's nonzero bins). The device path (kernels on
 * a stream) is runtime/audio/mel_device.h; both compute this recipe:
 *
 *   x[0..len) at 22050 Hz, no pre-emphasis
 *   y = reflect_pad(x, 384 each side)            (n_fft - hop) / 2, numpy "reflect": the edge
 *                                                sample is not repeated; for len <= 384 the
 *                                                reflection repeats (period 2*(len-1))
 *   T = floor(len / 256) frames, no centering    frame t = y[256 t, 256 t + 1024), i.e. x
 *                                                from 256 t - 384 to 256 t + 639: the last
 *                                                frame ends at x[256 T + 383] <= x[len + 383],
 *                                                inside the right pad; samples past it (fewer
 *                                                than one hop) do not start a frame
 *   w[n] = 0.5 - 0.5 cos(2 pi n / 1024)          periodic Hann (double)
 *   S[t, k] = sqrt(re^2 + im^2 + 1e-9)           k < 513, DFT of w * frame in double; the
 *                                                power rounded to float, sqrtf, stored float
 *   M[t, m] = sum_k fb[m, k] S[t, k]             80 Slaney bands, 0..8000 Hz, area-normalised;
 *                                                float weights, double sum over the band's
 *                                                nonzero bins, stored float
 *   out[t, m] = ln(max(M[t, m], 1e-5))
 *
 * Batches are fixed-shape: out [max_frames, 80] per item, rows t >= T are zero.
 *
 * The numbers above are the TANDEM_MEL_* constants of kernels/mel.h (their one definition,
 * shared with the device code); the public header repeats the sample rate, hop and band count
 * as TANDEM_FEATURE_* for clients, checked equal in mel.c.
 */
#ifndef TANDEM_RUNTIME_MEL_H
#define TANDEM_RUNTIME_MEL_H

#include <stdint.h>

#include "kernels/mel.h" /* the recipe's constants (TANDEM_MEL_*), defined once, and the band form */
#include "tandem.h"

/* Frames of a signal of len samples: floor(len / 256) (0 for len < 256). */
static inline int64_t tandem_mel_frame_count(int64_t len) {
    return len > 0 ? len / TANDEM_MEL_HOP : 0;
}

/* Index into x[0..len) of padded position j (j = padded index - 384, any integer), numpy's
 * "reflect" rule repeated as often as needed. len >= 1. */
static inline int64_t tandem_mel_reflect(int64_t j, int64_t len) {
    if (len == 1) return 0;
    int64_t period = 2 * (len - 1);
    j %= period;
    if (j < 0) j += period;
    return j < len ? j : period - j;
}

/* Slaney mel scale (librosa htk=False): linear below 1000 Hz (200/3 Hz per mel), logarithmic
 * above with step ln(6.4)/27. */
double tandem_mel_hz_to_mel(double hz);
double tandem_mel_mel_to_hz(double mel);

/* The filterbank in double: fb[m * 513 + k], 80 x 513, triangles between consecutive Slaney
 * mel points of linspace(mel(0), mel(8000), 82), each scaled by 2 / (f[m+2] - f[m]) (Slaney
 * area normalisation), as librosa.filters.mel(sr=22050, n_fft=1024, n_mels=80, fmin=0,
 * fmax=8000) computes it. */
void tandem_mel_filterbank_f64(double *fb); /* [80, 513] */
/* The same rounded to float (what the host path and the device use). */
void tandem_mel_filterbank_f32(float *fb); /* [80, 513] */

/* The float filterbank in sparse form (kernels/mel.h): band m's nonzero bins are
 * [lo[m], lo[m] + len[m]), its weights packed at weights[off[m] ...], bands in order. Fills
 * bands (if non-NULL) and weights (if non-NULL; room for the returned count) and returns the
 * number of packed weights, the same on every call (about 740 of the 41,040). */
int tandem_mel_bands(tandem_k_mel_bands *bands, float *weights);

/* ---- host path ---- */

/* Precomputed tables (the packed band weights; the window and FFT are kernels/mel_host.c's,
 * process-wide, prepared by create). Immutable after create, so one instance may be shared by
 * any number of threads. */
typedef struct tandem_mel_host tandem_mel_host;
tandem_status tandem_mel_host_create(tandem_mel_host **out);
void tandem_mel_host_free(tandem_mel_host *m);

/* Log-mel of one signal: out [max_frames, 80], rows >= *frames hold silence
 * (tandem_mel_silence(), as the device path). audio has len
 * samples at 22050 Hz. floor(len / 256) > max_frames → TANDEM_E_BUDGET (nothing written
 * beyond out). No allocation (scratch lives on the stack). */
tandem_status tandem_mel_host_compute(const tandem_mel_host *m, const float *audio, int64_t len,
                                      float *out, int max_frames, int *frames);

/* A fixed-shape batch: audio [batch, max_samples] (item b has lengths[b] samples), out
 * [batch, max_frames, 80], frames[b] = floor(lengths[b] / 256). */
tandem_status tandem_mel_host_batch(const tandem_mel_host *m, const float *audio,
                                    const int32_t *lengths, int batch, int64_t max_samples,
                                    float *out, int max_frames, int32_t *frames);

#endif
