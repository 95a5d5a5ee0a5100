/* audio.h — decoding one audio file into 22050 Hz mono float samples (DESIGN.md §6).
 *
 * Owns: the process-wide lock that serialises libsndfile's opens and closes (sf_open is not
 * thread-safe, and sf_strerror(NULL) reads a global), and per-thread decoders that hold the
 * resampler and the chunk buffers, so decoding a file allocates nothing in Tandem's own code
 * (libsndfile allocates inside sf_open, which is why decoding stays on loader threads).
 *
 * Samples: libsndfile reads every format as float with its float normalisation on, which
 * scales integer PCM of b bits by 1 / 2^(b-1): 16-bit PCM gives exactly x / 32768, 24-bit
 * x / 2^23 (= (x / 256) / 32768, the same full scale), 8-bit x / 128; float files are taken
 * as they are. Channels are averaged (mean, not sum). Other rates are resampled to 22050 Hz
 * with libsamplerate's SRC_SINC_MEDIUM_QUALITY: the same 97 dB SNR as BEST_QUALITY with a
 * passband of 90 % of the output Nyquist (~9.9 kHz), which covers everything the features
 * use (mel bands end at 8 kHz), at a fraction of BEST's cost.
 *
 * Errors: a file that cannot be opened, or is not a regular file (a FIFO or device could block
 * or never end; checked before libsndfile sees it) → TANDEM_E_IO (the OS's reason); not
 * audio, corrupt (including errors the decoder only logs, e.g. FLAC's lost sync), truncated
 * (the header promises more than the file holds), zero frames, non-finite samples or samples
 * beyond TANDEM_AUDIO_MAX_ABS → TANDEM_E_FORMAT naming the file, the reason in our words and
 * libsndfile's own in parentheses; more than max_samples after resampling → TANDEM_E_BUDGET
 * ("too long", so a loader can skip and count it). Never a crash.
 */
#ifndef TANDEM_RUNTIME_AUDIO_H
#define TANDEM_RUNTIME_AUDIO_H

#include <stdint.h>

#include "kernels/mel.h"
#include "tandem.h"

#define TANDEM_AUDIO_RATE TANDEM_MEL_SAMPLE_RATE /* the decoder's output: the feature recipe's rate */
/* Largest sample magnitude accepted (full scale is 1): 60 dB over full scale is no recording,
 * and far below what overflows the features' power spectrum (|x| ~ 1e16). */
#define TANDEM_AUDIO_MAX_ABS 1000.0f

typedef struct tandem_audio_info {
    int64_t frames;         /* frames in the file at its own rate (per channel) */
    int sample_rate;        /* the file's rate */
    int channels;
    int64_t samples_22050;  /* frames after resampling to 22050 Hz (exact when no resampling,
                               else round(frames * 22050 / rate), what the decoder yields);
                               -1 when the header does not state the length (a stream) */
    double seconds;
    char format[64];        /* "WAV (Microsoft) / Signed 16 bit PCM" */
} tandem_audio_info;

/* Read the header only (no decoding): frames, rate, channels, duration. */
tandem_status tandem_audio_probe(const char *path, tandem_audio_info *out);

/* A decoder for one thread at a time. Create once per loader thread. */
typedef struct tandem_audio_decoder tandem_audio_decoder;
tandem_status tandem_audio_decoder_create(tandem_audio_decoder **out);
void tandem_audio_decoder_free(tandem_audio_decoder *d);

/* Decode path into out[0 .. *n_samples) (22050 Hz mono float), *n_samples <= max_samples.
 * On any failure *n_samples = 0 and out's contents are unspecified. info
 * (may be NULL) receives the header. */
tandem_status tandem_audio_decode(tandem_audio_decoder *d, const char *path, float *out,
                                  int64_t max_samples, int64_t *n_samples, tandem_audio_info *info);

/* The same, except that a file at a rate the data device resamples (runtime/audio/resample.h:
 * tandem_resample_class >= 0) stays at its rate: out[0 .. *n_samples) mono at *rate Hz,
 * *n_samples <= max_native, and its length at 22050 Hz (round(n * 22050 / rate)) <= max_samples
 * (else TANDEM_E_BUDGET). Any other rate is resampled here as tandem_audio_decode does (*rate =
 * 22050, *n_samples <= max_samples <= max_native). */
tandem_status tandem_audio_decode_native(tandem_audio_decoder *d, const char *path, float *out, int64_t max_native,
                                         int64_t max_samples, int64_t *n_samples, int *rate, tandem_audio_info *info);

/* Time the last tandem_audio_decode on d spent resampling (inside libsamplerate), in
 * nanoseconds; 0 when that file was already at 22050 Hz. The rest of the call is reading,
 * decoding and downmixing, so a loader can time the two stages apart. */
uint64_t tandem_audio_decoder_resample_ns(const tandem_audio_decoder *d);

/* Samples at 22050 Hz that `frames` frames at `rate` Hz decode to (what tandem_audio_resample
 * yields); -1 for a rate the decoder does not take or frames < 0. */
int64_t tandem_audio_resampled_count(int64_t frames, int rate);

/* A signal already in memory: in[0..n) mono at rate Hz → out[0 .. *n_samples) at 22050 Hz
 * (*n_samples <= max_samples), exactly what decoding a mono float file of these samples at
 * that rate gives (the same chunks through the same converter, the same length rule). At
 * 22050 Hz a copy. n < 1, a rate outside the decoder's range or a non-finite sample →
 * TANDEM_E_INVALID; more than max_samples → TANDEM_E_BUDGET. */
tandem_status tandem_audio_resample(tandem_audio_decoder *d, const float *in, int64_t n, int rate,
                                    float *out, int64_t max_samples, int64_t *n_samples);

/* One-shot convenience: create a decoder, decode, free it. */
tandem_status tandem_audio_load(const char *path, float *out, int64_t max_samples,
                                int64_t *n_samples, tandem_audio_info *info);

#endif
