/* plan_layout.h — which tensors live in which arena, and which pinned host buffers the data
 * side stages through, derived from a config. Shared by the pipeline and loader (which allocate
 * and use them) and `tandem plan` (which only prints the plan).
 *
 * Model device arena: the ring of prefetch_buffer_size batch slots (persistent).
 * Data device arena: the log-mel path's own declarations (runtime/audio/mel_device.h: the audio
 * batch, features and targets persistent, |STFT| and linear mels per step, the filterbank),
 * so the plan printed is the plan the pipeline commits.
 * Pinned host staging (runtime/core/staging.h): the loader's TANDEM_LAYOUT_STAGING staged
 * batches ("loader.<i>") and the ring slots' feature staging ("ring", allocated only when the
 * devices have no peer access), declared here once; the loader and the pipeline allocate
 * exactly these blocks. The model's own block is declared by the model
 * (tandem_model_staging_declare) and joins this plan in `tandem plan`.
 * The model itself (parameters, optimizer state, activations) is declared by the caller into the
 * model arena (runtime/model/model.h).
 */
#ifndef TANDEM_RUNTIME_PLAN_LAYOUT_H
#define TANDEM_RUNTIME_PLAN_LAYOUT_H

#include <stddef.h>

#include "runtime/core/config.h"
#include "runtime/core/staging.h"
#include "runtime/audio/mel_device.h"
#include "runtime/audio/resample.h"
#include "tandem.h"

/* One batch as the model device receives it. B = batch_size, T = max_text, F = max_frames.
 * With length bucketing a batch of a smaller shape class fills only the leading part of mels,
 * frame_mask and stop_targets, packed [B, frames, ...] (tandem_batch_view.frames). */
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
    /* data device: native-rate rows (resample.in [B, in_stride]) resampled into mel.audio */
    tandem_resample_plan rs;
    /* pinned host staging (page-locked host memory, not a pool): blocks "loader.0",
     * "loader.1" (TANDEM_STAGED_*) and "ring" (TANDEM_RING_STAGED_*, only without peer access) */
    tandem_staging_plan staging;
} tandem_layout;

#define TANDEM_LAYOUT_STAGING 2 /* staged audio batches: loaders fill one while one uploads */
#define TANDEM_LAYOUT_RING_STAGING "ring" /* the ring slots' feature staging block */

/* The buffers of a staged batch block "loader.<i>", in order. B = batch, S = max_samples,
 * S_in = tandem_resample_in_samples(S), T = max_text. */
enum {
    TANDEM_STAGED_AUDIO,        /* f32 [B, S_in]: rows at their file's rate (or 22050 Hz) */
    TANDEM_STAGED_LENGTHS,      /* i32 [B]: samples of each row at its rate */
    TANDEM_STAGED_TOKENS,       /* i32 [B, T] */
    TANDEM_STAGED_TEXT_LENGTHS, /* i32 [B] */
    TANDEM_STAGED_CLASSES,      /* i32 [B]: each row's rate class (TANDEM_K_RS_COPY: 22050 Hz) */
    TANDEM_STAGED_BUFS
};
/* The buffers of ring slot k in block "ring": k * TANDEM_RING_STAGED_BUFS + one of these. */
enum {
    TANDEM_RING_STAGED_MELS,   /* f32 [B, F, n_mels] */
    TANDEM_RING_STAGED_MASK,   /* f32 [B, F] */
    TANDEM_RING_STAGED_STOP,   /* f32 [B, F] */
    TANDEM_RING_STAGED_FRAMES, /* i32 [B] */
    TANDEM_RING_STAGED_BUFS
};

/* Declare the TANDEM_LAYOUT_STAGING staged batch blocks "loader.<i>" (data device) into p.
 * tandem_layout_declare does it from the config; the loader does it from its own sizes (the
 * same numbers), so both hold the one declaration. */
tandem_status tandem_layout_stage_batches(tandem_staging_plan *p, int batch, int max_text,
                                          int64_t max_samples);

/* Declare the tensors above into the two pools (either may be NULL to skip that device).
 * Declares only: the data device's FFT plan and constants are prepared by
 * tandem_mel_plan_prepare(&out->mel, data_dev) before its pool is committed (the pipeline
 * does it), so planning-only pools work. */
tandem_status tandem_layout_declare(const tandem_config *cfg, tandem_pool *data_pool,
                                    tandem_pool *model_pool, tandem_layout *out);
/* Free what preparing the data part allocated (the filterbank's host copy, if not uploaded). */
void tandem_layout_release(tandem_layout *l);

/* The pinned host staging section of the plan: every block of l->staging with its buffers and
 * the totals (tandem_staging_report); snprintf contract (returns the length it needs). */
size_t tandem_layout_pinned_report(const tandem_layout *l, char *buf, size_t cap);

#endif
