/* griffinlim.h — log-mel back to a waveform for listening (tandem synth):
 *
 *   log-mel [T, 80]  --exp-->  mel  --non-negative least squares on the filterbank-->
 *   |S| [T, 513]  --Griffin-Lim (fast variant, momentum 0.99, N iterations)-->  x [T * 256]
 *
 * The STFT is the recipe of runtime/audio/mel.h (22050 Hz, n_fft 1024, hop 256, periodic Hann,
 * reflect padding of 384 samples each side, no centering), so T frames come from and give
 * T * 256 samples; the inverse is overlap-add of the windowed inverse FFTs divided by the
 * summed squared window. The mel inversion minimises ||fb S - mel||^2 over S >= 0 with
 * multiplicative updates (the filterbank fb of runtime/audio/mel.h in double); bins above 8 kHz,
 * which no band covers, come out zero.
 *
 * Owns: its tables (filterbank, window, FFT twiddles) and all working buffers for up to
 * max_frames frames, made at create; the calls below allocate nothing. Not thread-safe per
 * handle. */
#ifndef TANDEM_RUNTIME_GRIFFINLIM_H
#define TANDEM_RUNTIME_GRIFFINLIM_H

#include <stdint.h>

#include "tandem.h"

#define TANDEM_GL_DEFAULT_ITERS 32
#define TANDEM_GL_MOMENTUM 0.99
#define TANDEM_GL_NNLS_ITERS 100

typedef struct tandem_griffinlim tandem_griffinlim;

tandem_status tandem_griffinlim_create(int max_frames, tandem_griffinlim **out);
void tandem_griffinlim_free(tandem_griffinlim *g);

/* logmel [frames, 80] (natural log, as the features) → mag [frames, 513] >= 0. */
tandem_status tandem_griffinlim_mel_to_linear(tandem_griffinlim *g, const float *logmel, int frames,
                                              float *mag);
/* mag [frames, 513] → audio [frames * 256], iters >= 1 iterations from seeded random phases. */
tandem_status tandem_griffinlim_run(tandem_griffinlim *g, const float *mag, int frames, int iters,
                                    uint64_t seed, float *audio);
/* Both: logmel [frames, 80] → audio [frames * 256]. */
tandem_status tandem_griffinlim_synthesize(tandem_griffinlim *g, const float *logmel, int frames,
                                           int iters, uint64_t seed, float *audio);

/* The STFT pair used inside, exposed for tests: x [frames * 256] → re, im [frames, 513], and
 * back. */
tandem_status tandem_griffinlim_stft(tandem_griffinlim *g, const float *x, int frames, float *re,
                                     float *im);
tandem_status tandem_griffinlim_istft(tandem_griffinlim *g, const float *re, const float *im,
                                      int frames, float *x);

#endif
