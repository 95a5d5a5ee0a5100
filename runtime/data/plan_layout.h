/* plan_layout.h — which tensors live in which arena, derived from a config. Shared by the
 * pipeline (which commits and uses them) and `tandem plan` (which only prints the plan).
 *
 * Model device arena: the ring of prefetch_buffer_size batch slots (persistent).
 * Data device arena: the log-mel path's own declarations (runtime/audio/mel_device.h: the audio
 * batch, features and targets persistent, |STFT| and linear mels per step, the filterbank),
 * so the plan printed is the plan the pipeline commits.
 * Pinned host staging: described here (bytes), allocated by the pipeline.
 * The model itself (parameters, optimizer state, activations) joins the model arena in the
 * model-device issue.
 */
#ifndef TANDEM_RUNTIME_PLAN_LAYOUT_H
#define TANDEM_RUNTIME_PLAN_LAYOUT_H

#include <stddef.h>

#include "runtime/core/config.h"
#include "runtime/audio/mel_device.h"
#include "tandem.h"

/* One batch as the model device receives it. B = batch_size, T = max_text, F = max_frames. */
typedef struct tandem_ring_slot {
    tandem_tensor *tokens;        /* [B, T] i32 */
    tandem_tensor *text_lengths;  /* [B] i32 */
    tandem_tensor *mels;          /* [B, F, 80] f32 */
    tandem_tensor *frame_mask;    /* [B, F] f32: 1 on real frames (as the features make it) */
    tandem_tensor *stop_targets;  /* [B, F] f32: 1 from the last real frame on */
    tandem_tensor *frame_lengths; /* [B] i32 */
} tandem_ring_slot;

typedef struct tandem_layout {
    /* model device */
    int n_slots;
    tandem_ring_slot slot[TANDEM_CONFIG_MAX_PREFETCH];
    /* data device: the feature path (mel.audio [B, F * 256] f32 in, mel.mel [B, F, 80] out) */
    tandem_mel_plan mel;
    /* pinned host staging (not a pool: page-locked host memory the pipeline allocates) */
    int n_staging;             /* audio batches the loader threads fill while one uploads */
    size_t pinned_batch_bytes; /* one staged batch: audio, lengths, tokens, text lengths */
    size_t pinned_slot_bytes;  /* one ring slot's features (mels, mask, stop, frame lengths),
                                * used only when the devices have no peer access */
    size_t pinned_bytes;       /* n_staging * batch + n_slots * slot */
} tandem_layout;

#define TANDEM_LAYOUT_STAGING 2 /* staged audio batches: loaders fill one while one uploads */

/* Declare the tensors above into the two pools (either may be NULL to skip that device).
 * Declares only: the data device's FFT plan and constants are prepared by
 * tandem_mel_plan_prepare(&out->mel, data_dev) before its pool is committed (the pipeline
 * does it), so planning-only pools work. */
tandem_status tandem_layout_declare(const tandem_config *cfg, tandem_pool *data_pool,
                                    tandem_pool *model_pool, tandem_layout *out);
/* Free what preparing the data part allocated (the filterbank's host copy, if not uploaded). */
void tandem_layout_release(tandem_layout *l);

/* "pinned host staging: ..." lines; snprintf contract (returns the length it needs). */
size_t tandem_layout_pinned_report(const tandem_layout *l, char *buf, size_t cap);

#endif
