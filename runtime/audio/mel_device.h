/* mel_device.h — the log-mel recipe (runtime/audio/mel.h) on a device: the feature kernels of
 * kernels/mel.h (double-precision STFT, sparse band projection, log, targets) over tensors of
 * a pool, queued on a stream. The host backend runs the kernels' host implementations (FFTW
 * when built with it), cuda runs the fatbin, so this is the same path on both.
 *
 * Use: tandem_mel_plan_declare before the pool is committed (it declares every tensor and,
 * given a device, prepares), tandem_mel_upload_constants once after commit, then for each
 * batch fill plan->audio and plan->lengths and call tandem_mel_batch. Declaring without a
 * device and calling tandem_mel_plan_prepare later splits the two: a planning-only pool
 * (`tandem plan`) is declared into without any device or host allocation.
 * Owns: its tensors' declarations, the band table (in the plan, passed by value to the
 * projection kernel) and, from prepare until the upload, a host copy of the packed weights
 * (allocated before commit so nothing is allocated after it).
 */
#ifndef TANDEM_RUNTIME_MEL_DEVICE_H
#define TANDEM_RUNTIME_MEL_DEVICE_H

#include <stdint.h>

#include "kernels/registry.h" /* kernels/mel.h: tandem_k_mel_bands */
#include "tandem.h"

/* Op indices of tandem_mel_batch inside a step (for per-step lifetimes), from first_op. */
enum { TANDEM_MEL_OPS = 4 };

typedef struct tandem_mel_plan {
    int batch, max_frames;
    int64_t max_samples;
    /* inputs, filled by the caller before each batch (persistent) */
    tandem_tensor *audio;   /* [B, max_samples] f32, 22050 Hz mono, item b in [0, lengths[b]) */
    tandem_tensor *lengths; /* [B] i32 samples */
    /* outputs (persistent) */
    tandem_tensor *mel;     /* [B, max_frames, 80] f32 log-mel, zero past each item's frames */
    tandem_tensor *frames;  /* [B] i32 frame counts floor(len / 256) */
    tandem_tensor *mask;    /* [B, max_frames] f32 1 on real frames */
    tandem_tensor *stop;    /* [B, max_frames] f32 1 from the last real frame on */
    /* constant (persistent) */
    tandem_tensor *filterbank; /* [n_weights] the filterbank's nonzero weights, packed by band */
    tandem_k_mel_bands bands;  /* where each band's weights and bins are (tandem_mel_bands) */
    int n_weights;
    /* scratch (per step) */
    tandem_tensor *mag;      /* [B * max_frames, 513] |STFT| */
    tandem_tensor *mel_lin;  /* [B * max_frames, 80] projected, before the log */
    float *host_consts;      /* the packed weights from prepare until uploaded */
    int uploaded;            /* the weights are on the device */
} tandem_mel_plan;

/* Declare the plan's tensors in pool (names "<prefix>.audio", ...). dev (the pool's device)
 * non-NULL: also tandem_mel_plan_prepare; NULL: declare only (planning-only pools).
 * Scratch tensors live from first_op to first_op + 2. batch >= 1, max_frames >= 1,
 * max_samples >= 1. */
tandem_status tandem_mel_plan_declare(tandem_pool *pool, tandem_device *dev, const char *prefix,
                                      int batch, int max_frames, int64_t max_samples,
                                      int first_op, tandem_mel_plan *plan);
/* Before commit: prepare the host FFT (FFTW's plan: planning allocates; host devices only)
 * and build the host copy of the packed weights. A second call is a no-op. */
tandem_status tandem_mel_plan_prepare(tandem_mel_plan *plan, tandem_device *dev);
/* After commit: upload the packed weights (and free their host copy). */
tandem_status tandem_mel_upload_constants(tandem_mel_plan *plan, tandem_stream *s);
/* Queue the features of the batch in plan->audio / plan->lengths on s. */
tandem_status tandem_mel_batch(tandem_mel_plan *plan, tandem_stream *s);
/* The same for a batch of a smaller shape class (length bucketing): audio [B, frames * 256] and
 * mel [B, frames, 80], mask and stop [B, frames] packed in the leading part of each tensor;
 * frames 0 = max_frames (tandem_mel_batch). */
tandem_status tandem_mel_batch_frames(tandem_mel_plan *plan, tandem_stream *s, int frames);
/* Free the host copy of the constants if it was never uploaded (the tensors belong to the pool). */
void tandem_mel_plan_release(tandem_mel_plan *plan);

#endif
