/* wav.h — writing audio for listening: 16-bit PCM mono WAV through libsndfile, replaced
 * atomically (runtime/formats/atomic_file.h). Owns nothing. libsndfile allocates inside sf_open, so
 * this is for tools (tandem synth), not for the training loop. The writer,
 * tandem_wav_write_pcm16, is public: its contract is in tandem_files.h. */
#ifndef TANDEM_RUNTIME_WAV_H
#define TANDEM_RUNTIME_WAV_H

#include "tandem.h"

#endif
