/* plan_layout.h — which tensors live in which arena, derived from a config. Shared by the
 * pipeline (which commits and uses them) and `tandem plan` (which only prints the plan).
 *
 * Model device arena: the ring of prefetch_buffer_size batch slots (persistent).
 * Data device arena: the audio batch (persistent) and the feature scratch (per-step).
 * Pinned host staging: described here (bytes), allocated by the pipeline.
 * The model itself (parameters, optimizer state, activations) joins the model arena in the
 * model-device issue; the feature constants (window, mel filterbank) join the data arena
 * with the data-device kernels.
 */
#ifndef TANDEM_RUNTIME_PLAN_LAYOUT_H
#define TANDEM_RUNTIME_PLAN_LAYOUT_H

#include <stddef.h>

#include "config.h"
#include "tandem.h"

#define TANDEM_HOP 256   /* samples per mel frame at 22050 Hz */
#define TANDEM_N_FFT 1024
#define TANDEM_N_BINS 513 /* n_fft / 2 + 1 */

/* Op indices of one data-device step (the per-step tensors' first/last use). */
enum {
    TANDEM_FEAT_OP_FRAME = 0, /* audio → reflect-padded, windowed frames */
    TANDEM_FEAT_OP_STFT = 1,  /* frames → |STFT| magnitudes */
    TANDEM_FEAT_OP_MEL = 2,   /* magnitudes → log-mel */
    TANDEM_FEAT_OP_PACK = 3,  /* log-mel → ring slot (mask, stop targets, lengths) */
};

/* One batch as the model device receives it. B = batch_size, T = max_text, F = max_frames. */
typedef struct tandem_ring_slot {
    tandem_tensor *tokens;        /* [B, T] i32 */
    tandem_tensor *text_lengths;  /* [B] i32 */
    tandem_tensor *mels;          /* [B, F, 80] f32 */
    tandem_tensor *frame_mask;    /* [B, F] u8: 1 on real frames */
    tandem_tensor *stop_targets;  /* [B, F] f32: 1 from the last real frame on */
    tandem_tensor *frame_lengths; /* [B] i32 */
} tandem_ring_slot;

typedef struct tandem_layout {
    /* model device */
    int n_slots;
    tandem_ring_slot slot[TANDEM_CONFIG_MAX_PREFETCH];
    /* data device */
    tandem_tensor *audio;         /* [B, F * 256] f32, persistent: the decoded batch */
    tandem_tensor *audio_lengths; /* [B] i32, persistent: samples per utterance */
    tandem_tensor *frames;        /* [B, F, 1024] f32, per-step FRAME..STFT */
    tandem_tensor *spectrum;      /* [B, F, 513] f32, per-step STFT..MEL */
    tandem_tensor *feat_mels;     /* [B, F, 80] f32, per-step MEL..PACK */
    /* pinned host staging (not a pool: page-locked host memory the pipeline allocates) */
    size_t pinned_audio_bytes; /* audio + lengths, x2: loaders fill one while one uploads */
    size_t pinned_slot_bytes;  /* one ring slot, x n_slots: tokens always come from the host,
                                * the rest when the devices have no peer access */
    size_t pinned_bytes;       /* total */
} tandem_layout;

/* Declare the tensors above into the two pools (either may be NULL to skip that device). */
tandem_status tandem_layout_declare(const tandem_config *cfg, tandem_pool *data_pool,
                                    tandem_pool *model_pool, tandem_layout *out);

/* "pinned host staging: ..." lines; snprintf contract (returns the length it needs). */
size_t tandem_layout_pinned_report(const tandem_layout *l, char *buf, size_t cap);

#endif
