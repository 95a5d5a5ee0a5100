/* resample.h — resampling to 22050 Hz on the data device: the filter design (Kaiser-windowed
 * sinc, built in double once per plan), the covered rate classes, and the device plan that runs
 * kernels/resample.h over a batch of native-rate rows before the log-mel kernels.
 *
 * Design (per rate r, ratio up / down = 22050 / r reduced): the lower of the two rates' Nyquist
 * frequencies f_n; passband to 0.90 f_n, stopband from 1.10 f_n, cutoff at f_n: whatever lies in
 * the transition band folds back (or images) into 0.90..1.00 f_n only, never into the passband,
 * and the mel bands end at 8 kHz (0.73 of 11025 Hz). A Kaiser window for 100 dB (beta 10.06)
 * over 64 taps of the lower rate (the Kaiser length for that attenuation and a transition of
 * 0.1 cycles per sample), half the taps of a stopband starting at f_n: the data side's cost at
 * 48 kHz is mostly these taps (docs/BENCHMARKS.md). libsamplerate's SRC_SINC_MEDIUM_QUALITY, the
 * CPU path it replaces, states a 90 % passband and 97 dB; test_resample measures both with the
 * same yardsticks.
 * Every phase's taps are scaled to sum to 1 (unit gain at DC for every output sample).
 *
 * Classes: the rates listed in tandem_resample_class (48k, 44.1k, 32k, 24k, 16k, 8k) run on the
 * device; any other rate is resampled on the CPU by libsamplerate (runtime/audio/audio.h).
 * Owns: its tensors' declarations and, from prepare until the upload, the host copy of the taps.
 */
#ifndef TANDEM_RUNTIME_AUDIO_RESAMPLE_H
#define TANDEM_RUNTIME_AUDIO_RESAMPLE_H

#include <stdint.h>

#include "kernels/registry.h" /* kernels/resample.h */
#include "tandem.h"

#define TANDEM_RS_CLASSES 6        /* the covered rates */
#define TANDEM_RS_MAX_IN_RATE 48000 /* the highest covered rate: sizes the native rows */

typedef struct tandem_rs_design {
    int rate, up, down, taps; /* up / down = 22050 / rate; taps per phase (multiple of 8) */
    double cutoff;            /* cycles per input sample */
    double beta;              /* Kaiser; 0 = rectangular (tests build wrong filters on purpose) */
} tandem_rs_design;

/* The class index of a covered rate, -1 for any other. */
int tandem_resample_class(int rate);
/* The rate of class i (< TANDEM_RS_CLASSES). */
int tandem_resample_class_rate(int i);
/* The design for any rate in 1..768000 Hz (TANDEM_E_INVALID otherwise). */
tandem_status tandem_resample_design(int rate, tandem_rs_design *d);
/* d->up * d->taps floats, phase-major (phase p's taps at p * taps). */
void tandem_resample_build_taps(const tandem_rs_design *d, float *taps);
/* Native samples a row needs so that any covered rate whose 22050 Hz length fits out_samples
 * fits it: ceil((out_samples + 1) * 48000 / 22050). */
int64_t tandem_resample_in_samples(int64_t out_samples);

typedef struct tandem_resample_plan {
    int batch;
    int64_t in_stride;          /* native samples per row (tandem_resample_in_samples) */
    tandem_tensor *in;          /* [B, in_stride] f32 native-rate rows (persistent) */
    tandem_tensor *in_len;      /* [B] i32 native samples */
    tandem_tensor *cls;         /* [B] i32 class, TANDEM_K_RS_COPY for rows already at 22050 Hz */
    tandem_tensor *taps;        /* [n_taps] f32 every class's table (persistent) */
    tandem_k_rs_classes classes;
    int64_t n_taps;
    float *host_taps;           /* from prepare until uploaded */
    int uploaded;
} tandem_resample_plan;

/* Declare the plan's tensors ("<prefix>.in", ...) for batches of rows of up to out_samples
 * samples at 22050 Hz. Declares only; prepare builds the taps (before commit). */
tandem_status tandem_resample_plan_declare(tandem_pool *pool, const char *prefix, int batch, int64_t out_samples,
                                           tandem_resample_plan *p);
tandem_status tandem_resample_plan_prepare(tandem_resample_plan *p);
/* After commit: upload the taps (and free their host copy). */
tandem_status tandem_resample_upload(tandem_resample_plan *p, tandem_stream *s);
/* Queue out [B, out_stride] / out_len [B] from the plan's rows: rows in_stride apart (in_stride
 * <= the plan's, packed in the leading part), out_stride <= the out tensor's row. */
tandem_status tandem_resample_batch(tandem_resample_plan *p, tandem_stream *s, int64_t in_stride,
                                    tandem_tensor *out, tandem_tensor *out_len, int64_t out_stride);
void tandem_resample_plan_release(tandem_resample_plan *p);

#endif
