/* wav.h — writing audio for listening: 16-bit PCM mono WAV through libsndfile, replaced
 * atomically (runtime/formats/atomic_file.h). Owns nothing. libsndfile allocates inside sf_open, so
 * this is for tools (tandem synth), not for the training loop. */
#ifndef TANDEM_RUNTIME_WAV_H
#define TANDEM_RUNTIME_WAV_H

#include <stdint.h>

#include "tandem.h"

/* samples [n] in [-1, 1] → round(x * 32767) (clipped beyond +-1) → path, mono. A non-finite
 * sample is an error. */
tandem_status tandem_wav_write_pcm16(const char *path, const float *samples, int64_t n, int sample_rate);

#endif
