/* tandem_features.h — log-mel features of audio, computed exactly as training computes them
 * (part of tandem.h): the decoder (any format libsndfile reads; channels averaged; any rate
 * resampled to 22050 Hz) → the feature kernels and GEMM on a device → [frames, 80] natural-log
 * mel (80 Slaney bands 0-8000 Hz, n_fft 1024, hop 256, ln(max(x, 1e-5)); the recipe is
 * DESIGN.md §6), frames = floor(samples at 22050 Hz / 256).
 *
 * Use:
 *   tandem_features_options o;
 *   tandem_features_options_init(&o);            // backend AUTO: the first CUDA device, else host
 *   tandem_features *f = NULL;
 *   if (tandem_features_open(&o, &f) != TANDEM_OK) ... tandem_last_error() ...
 *   tandem_features_result r;
 *   tandem_features_from_file(f, "a.flac", NULL, 0, &r);   // r.mel: the handle's buffer
 *   tandem_features_from_samples(f, x, n, 16000, buf, cap, &r);  // into buf [cap floats]
 *   tandem_features_close(f);
 *
 * Output buffers: mel == NULL → the handle's own buffer, valid until the next call on the
 * handle or its close; else the caller's buffer of `capacity` floats, which must hold
 * frames * 80 (else TANDEM_E_INVALID saying how many floats are needed, with out->frames set
 * to the frames the input gives, so a caller can size the buffer and call again).
 *
 * Owns: the device (opened at open), a stream, an audio decoder and, grown as inputs need
 * them, the decoded-audio and mel buffers; each call also makes and frees a memory pool sized
 * to its input (so calls allocate). One handle serves one thread at a time; handles are
 * independent. Errors: as the decoder reports them (TANDEM_E_IO for a file that cannot be
 * opened, TANDEM_E_FORMAT for one that is not audio or is corrupt), TANDEM_E_INVALID for a
 * signal shorter than one hop (256 samples at 22050 Hz) or a bad argument, TANDEM_E_NOMEM,
 * and the device's failures; messages name the file.
 */
/* tandem.h first, outside the guard (see tandem_text.h). */
#include "tandem.h"

#ifndef TANDEM_FEATURES_H
#define TANDEM_FEATURES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tandem_features tandem_features;

typedef struct tandem_features_options {
    tandem_backend backend; /* default TANDEM_BACKEND_AUTO: a CUDA device when a driver is there */
    int ordinal;            /* device of that backend; default 0 */
    double max_seconds;     /* longest input accepted, seconds; default TANDEM_FEATURES_MAX_SECONDS.
                               A longer file (by its header) is refused before anything is
                               allocated for it: TANDEM_E_BUDGET naming the file and the limit */
} tandem_features_options;

#define TANDEM_FEATURES_MAX_SECONDS 600.0

/* The defaults above. */
void tandem_features_options_init(tandem_features_options *o);

/* Open the device and make the decoder. o NULL: the defaults. On failure *out = NULL and
 * nothing is left to free. */
tandem_status tandem_features_open(const tandem_features_options *o, tandem_features **out);
/* NULL is a no-op. */
void tandem_features_close(tandem_features *f);
/* The device the features are computed on. */
tandem_status tandem_features_get_device(const tandem_features *f, tandem_device_info *out);

typedef struct tandem_features_result {
    const float *mel;  /* [frames, n_mels] log-mel: the caller's buffer or the handle's */
    int frames;        /* floor(samples / 256) */
    int n_mels;        /* 80 */
    int64_t samples;   /* input samples at 22050 Hz (after resampling) */
    /* the input as it was given */
    int sample_rate;   /* its rate (Hz) */
    int channels;      /* 1 for samples */
    double seconds;    /* its duration */
    char format[64];   /* libsndfile's "WAV (Microsoft) / Signed 16 bit PCM"; "samples" */
} tandem_features_result;

/* Features of one audio file. On failure out->mel is NULL (out->frames may say what a too
 * small buffer needed). Not a regular file (a FIFO, a device) → TANDEM_E_IO; longer than
 * max_seconds → TANDEM_E_BUDGET; samples that are not finite or beyond 1000 x full scale, or
 * features that come out non-finite → TANDEM_E_FORMAT naming the file. */
tandem_status tandem_features_from_file(tandem_features *f, const char *path, float *mel,
                                        size_t capacity, tandem_features_result *out);
/* Features of samples[0..n): mono float in [-1, 1] at sample_rate Hz (87..768000; resampled
 * as the decoder resamples a file of that rate, so a file of the same samples gives the same
 * features). A non-finite sample → TANDEM_E_INVALID. */
tandem_status tandem_features_from_samples(tandem_features *f, const float *samples, int64_t n,
                                           int sample_rate, float *mel, size_t capacity,
                                           tandem_features_result *out);

#ifdef __cplusplus
}
#endif
#endif /* TANDEM_FEATURES_H */
