/* pipeline.h — the data side of the dual-device run, end to end (DESIGN.md §6, §8):
 * loader threads (loader.h) → one data-device thread that uploads each staged batch, runs the
 * log-mel path (mel_device.h) and copies the features into ring slot k on the model device
 * (ring.h) → the consumer, which acquires and releases slots.
 *
 * The data-device step for batch n (slot k = n mod N), all queued asynchronously:
 *   data stream:  wait "slot k free" · audio + lengths H2D · tandem_mel_batch ·
 *                 peer access: copy of mels, mask, stop targets, frame lengths into the slot
 *                 (a bucketed batch: only its class's packed [B, frames, ...] leading part);
 *                 none: D2H of the same into slot k's pinned staging
 *   model copy stream (model device): wait for the data stream's step · (no peer: H2D of the
 *                 staged features into the slot) · tokens + text lengths H2D straight from
 *                 the loader's pinned staging · record "slot k filled"
 * The consumer's acquire makes its stream wait on "slot k filled"; release records "slot k
 * free" on it, so neither side waits on the CPU for the other's device work.
 *
 * Errors: the first error on either side (a failed device call, the loader giving up, an
 * injected test failure, the consumer's abort) stops everything: acquire returns the data
 * side's error, the threads exit and are joined by stop, each wait is bounded.
 *
 * Use: create (declares into both pools, before they are committed), commit the pools (after
 * declaring the model's own tensors), start, then acquire/release per step, stop, destroy.
 * Owns: the loader, ring, streams, events, pinned staging and the data-device thread.
 */
#ifndef TANDEM_RUNTIME_PIPELINE_H
#define TANDEM_RUNTIME_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/config.h"
#include "runtime/data/plan_layout.h"
#include "runtime/data/sampler.h"
#include "runtime/data/stage_times.h"
#include "tandem.h"
#include "runtime/data/text_index.h"

typedef struct tandem_pipeline_options {
    const tandem_config *cfg;      /* batch_size, max_frames, max_text, prefetch_buffer_size,
                                      num_workers (0 = CPU count), seed, shuffle */
    const tandem_text_index *ix;   /* opened with max_samples = max_frames * 256 */
    const char *data_dir;
    tandem_device *data_dev, *model_dev; /* may be the same device (one GPU in both roles) */
    tandem_pool *data_pool, *model_pool; /* declared into by create, committed by the caller */
    tandem_stream *consumer_stream; /* model-device stream the consumer works on; NULL: the
                                       pipeline creates one (tandem_pipeline_consumer_stream) */
    tandem_sampler_pos start_pos;   /* where the sampler starts (resume); {0, 0} = beginning; with
                                       bucketing (epoch, batch index) of the bucket sampler */
    /* length bucketing (buckets.h, tandem_buckets_for_index): n_buckets classes of
       bucket_frames [n_buckets] ascending, the last = cfg->max_frames; each batch is one class's,
       its features packed [B, frames, 80] in the leading part of the slot's tensors (which are
       planned for max_frames). 0: off, every batch max_frames. */
    int n_buckets;
    const uint32_t *bucket_frames;
    /* data-parallel: this rank's shard of the sampler's stream, runs of shard_chunk items
       (tandem_sampler_shard); shard_world <= 1 (default): the whole stream */
    int shard_world, shard_rank;
    int64_t shard_chunk;
    /* debug and test options */
    int poison_on_release;          /* fill a released slot's mels with NaN */
    int force_staged;               /* stage ring copies through pinned memory even with peer access */
    int64_t fail_at_batch;          /* >= 0: the data-device step of this batch fails (test hook) */
} tandem_pipeline_options;

/* Defaults: everything 0/NULL except fail_at_batch = -1. */
void tandem_pipeline_options_init(tandem_pipeline_options *o);

typedef struct tandem_batch_view {
    int slot;
    int64_t seq;                    /* batch number since start */
    const tandem_ring_slot *t;      /* the slot's tensors on the model device */
    const uint32_t *utt;            /* [B] utterance index in the text index, per row */
    const tandem_sampler_pos *pos;  /* [B] sampler position of each row */
    double audio_seconds;
    double wait_ms;                 /* time this acquire blocked */
    int frames;                     /* the batch's shape class: mels [B, frames, 80] packed in the
                                       leading part of t->mels (cfg max_frames without bucketing) */
    uint32_t n_real;                /* rows 0..n_real-1 distinct utterances; later ones repeat them */
    int64_t real_frames;            /* mel frames of the rows (the rest of B * frames is padding) */
    tandem_sampler_pos next_pos;    /* bucketing: the sampler position after this batch */
} tandem_batch_view;

typedef struct tandem_pipeline tandem_pipeline;

tandem_status tandem_pipeline_create(const tandem_pipeline_options *o, tandem_pipeline **out);
/* After both pools are committed: upload the feature constants, start the threads. */
tandem_status tandem_pipeline_start(tandem_pipeline *p);
/* Next batch in order; the consumer stream waits for it. timeout_ms < 0: no limit. */
tandem_status tandem_pipeline_acquire(tandem_pipeline *p, tandem_batch_view *view, int64_t timeout_ms);
/* The same, with events recorded on the consumer stream just before and after its wait for the
 * slot (either may be NULL): the device-side wait (tandem_ring_wait_filled). */
tandem_status tandem_pipeline_acquire_timed(tandem_pipeline *p, tandem_batch_view *view, int64_t timeout_ms,
                                            tandem_event *pre, tandem_event *post);
/* Give the slot back once the consumer's work on it has been queued on the consumer stream. */
tandem_status tandem_pipeline_release(tandem_pipeline *p, int slot);
/* Consumer-side error: stop the data side with it (acquire then returns it too). */
void tandem_pipeline_abort(tandem_pipeline *p, tandem_status st, const char *msg);
/* Stop (clean unless an error happened), join the threads. Returns the first error of the
 * run, TANDEM_OK when none. Idempotent. */
tandem_status tandem_pipeline_stop(tandem_pipeline *p);
void tandem_pipeline_destroy(tandem_pipeline *p);

const tandem_layout *tandem_pipeline_layout(const tandem_pipeline *p);
tandem_stream *tandem_pipeline_consumer_stream(const tandem_pipeline *p);
/* Whether ring copies go device to device (peer or same device), else staged through the host. */
int tandem_pipeline_peer(const tandem_pipeline *p);

typedef struct tandem_pipeline_stats {
    int64_t batches, consumed;   /* published by the data side, acquired by the consumer */
    double wall_ms;              /* since start (until stop) */
    double audio_seconds;        /* in published batches */
    double data_busy_ms;         /* data-device work: H2D + features + ring copy (events) */
    double data_busy_pct;        /* data_busy_ms / wall_ms */
    double mean_ready_slots;     /* ring occupancy */
    double data_wait_ms;         /* consumer time blocked in acquire */
    uint64_t files_ok, decode_failures, too_long, resampled;
    uint64_t resampled_cpu;      /* of resampled, by libsamplerate (rates the data device does not resample) */
    tandem_sampler_pos next_pos; /* sampler position of the next utterance to load */
    tandem_stage_stat stages[TANDEM_STAGE_COUNT];
} tandem_pipeline_stats;
void tandem_pipeline_get_stats(tandem_pipeline *p, tandem_pipeline_stats *out);

/* The automatic device roles of runtime/data/roles.h (tandem_roles_open with no ordinals): two
 * CUDA devices → data 0, model 1; one → both roles on it (the same handle); none (or backend
 * HOST) → two host devices. desc receives the choice in words. Close with
 * tandem_pipeline_close_devices. */
tandem_status tandem_pipeline_open_devices(tandem_backend backend, tandem_device **data, tandem_device **model,
                                           char *desc, size_t cap);
void tandem_pipeline_close_devices(tandem_device *data, tandem_device *model);

#endif
