/* loader.h — audio loader threads: the sampler's utterances decoded into pinned, fixed-shape
 * staged batches (DESIGN.md §6).
 *
 * num_workers threads, each with its own tandem_audio_decoder, fill TANDEM_LAYOUT_STAGING
 * staged batches in turn. A batch's rows are claimed in sampler order (row r of batch n is the
 * sampler's (n*B + r)-th utterance while no file fails; with length bucketing, the bucket
 * sampler's batch n, of one shape class), each row is decoded straight into the
 * pinned buffer and zero-padded; tokens come from the text index. A file that fails to decode
 * (not audio, not a regular file, non-finite or out-of-range samples, or longer than the row)
 * is logged once per file (it is tried again at every epoch's visit, counted each time it fails), and its row
 * takes the next sampler utterance instead — the run goes on; only a whole epoch's worth of
 * failures in a row is an error. The consumer of staged batches (the data-device thread) takes them in sequence and
 * gives each back with two events recorded after its uploads were queued; the loader waits on
 * those (on a loader thread, just before refilling the buffer), so uploads stay asynchronous.
 * An event that was never recorded is never waited on (a driver reports that as misuse).
 * Stages timed here, per file: read (file bytes through the OS), decode (libsndfile + downmix,
 * every file; also under its container's stage, decode WAV/FLAC/Ogg/MP3/other), resample
 * (libsamplerate: files at other rates than 22050 Hz, or with device_resample only those at a
 * rate the data device does not resample; each such rate said once in an INFO line).
 * Stopping: no read blocks a stop. A loader thread reads an audio file only after a
 * non-blocking open whose fstat says "regular file" (a FIFO, device or socket put in place of a
 * dataset file is a failed row: skipped with a warning, like an undecodable file), in bounded
 * chunks up to the size fstat reported, looking at the stop flag between chunks (the row in hand
 * is still decoded, so every claimed position is counted); the decoder then opens that same
 * checked inode through /proc/self/fd, so a FIFO renamed over the file in between never reaches it. So cancel + join is bounded by one
 * chunk's read and one decode of a regular file. (Chosen over detaching threads or timed joins: a detached thread would still write
 * into the pinned batch the loader frees, so ownership could never be handed back cleanly.) The
 * consumer side never waits on an empty ring past a stop either: tandem_run_acquire
 * (runtime/run/dataset.h) looks at the trainer's stop flag every 50 ms.
 * Owns: the threads, decoders, pinned buffers (the staged batch blocks "loader.<i>" of
 * runtime/data/plan_layout.h, on the data device; all allocated at create, before any pool is
 * committed), their events and the sampler (the plain one, or with length bucketing the
 * bucket sampler of buckets.h).
 */
#ifndef TANDEM_RUNTIME_LOADER_H
#define TANDEM_RUNTIME_LOADER_H

#include <stdint.h>

#include "platform/os/os.h"
#include "runtime/data/sampler.h"
#include "runtime/data/stage_times.h"
#include "tandem.h"
#include "runtime/data/text_index.h"

/* One staged batch. B = batch, S = max_samples, T = max_text. */
typedef struct tandem_staged_batch {
    float *audio;             /* [B, row_stride] f32 pinned: mono at the row's rate (device_resample:
                                 a rate the data device resamples) or 22050 Hz; without
                                 device_resample zero past lengths[b] (with it only lengths[b]
                                 samples of a row are meant to be uploaded) */
    int32_t *lengths;         /* [B] i32 pinned: samples at the row's rate */
    int32_t *cls;             /* [B] i32 pinned: tandem_resample_class of the row's rate, or
                                 TANDEM_K_RS_COPY for a row at 22050 Hz */
    int64_t row_stride;       /* samples between rows: the class's frames * 256, or with
                                 device_resample tandem_resample_in_samples of that */
    int32_t *tokens;          /* [B, T] i32 pinned: PAD (0) past text_lengths[b] */
    int32_t *text_lengths;    /* [B] i32 pinned */
    uint32_t *utt;            /* [B] index of each row's utterance in the text index */
    tandem_sampler_pos *pos;  /* [B] sampler position each row came from */
    double audio_seconds;     /* sum of the rows' durations */
    int frames;               /* the batch's shape class: rows are frames * 256 samples apart in
                                 audio ([B, frames * 256], packed); max_frames without bucketing */
    uint32_t n_real;          /* rows 0..n_real-1 are distinct utterances (bucketing: later rows
                                 repeat them, the epoch's short last batch); B otherwise */
    int64_t real_frames;      /* sum over the rows of their mel frames (<= frames each) */
    tandem_sampler_pos next_pos; /* bucketing: the sampler position after this batch */
    int64_t seq;              /* batch number since start */
    tandem_event *audio_sent; /* data device: record after the audio/lengths uploads */
    tandem_event *text_sent;  /* model device: record after the tokens/text-length uploads */
    /* private (under the loader's mutex) */
    uint32_t *plan_;          /* [B] bucketing: the batch's utterances as the sampler drew them */
    tandem_sampler_pos bpos_; /* bucketing: the batch's sampler position */
    int state_, rows_claimed_, rows_done_, events_pending_, syncing_, ever_recorded_;
} tandem_staged_batch;

typedef struct tandem_loader_config {
    const tandem_text_index *ix; /* utterances, tokens, audio paths (relative to data_dir) */
    const char *data_dir;
    const uint32_t *items;       /* [n_items] utterance indices to sample (e.g. ix->train) */
    uint32_t n_items;
    int batch, max_text;
    int64_t max_samples;         /* S: samples per row (max_frames * 256) */
    int num_workers;             /* >= 1 */
    int device_resample;         /* 1: files at a rate the data device resamples stay at that rate
                                    (runtime/audio/resample.h); 0: every row at 22050 Hz */
    uint64_t seed;
    int shuffle;
    tandem_device *data_dev;     /* pins the buffers; audio_sent lives here */
    tandem_device *model_dev;    /* text_sent lives here */
    tandem_stage_times *times;   /* may be NULL */
    /* length bucketing (buckets.h): n_buckets >= 1 classes bucket_frames [n_buckets] ascending,
       the last = max_samples / 256; lengths [n_items] mel frames of each item. Then a batch is
       one class's (the bucket sampler's), its rows bucket_frames[c] * 256 samples; a row that
       fails takes another utterance of the same batch. 0: the plain sampler, every row
       max_samples. */
    int n_buckets;
    const uint32_t *bucket_frames;
    const uint32_t *lengths;
    int shard_world, shard_rank; /* data-parallel: tandem_sampler_shard (world <= 1: off) */
    int64_t shard_chunk;
} tandem_loader_config;

typedef struct tandem_loader tandem_loader;

tandem_status tandem_loader_create(const tandem_loader_config *cfg, tandem_loader **out);
/* Resume point: the sampler position of the next utterance (before start). */
tandem_status tandem_loader_set_pos(tandem_loader *l, tandem_sampler_pos pos);
tandem_status tandem_loader_start(tandem_loader *l);
/* The next full batch in sequence. Blocks (timeout_ms < 0: until ready or stopped); the
 * loader's error if it failed, TANDEM_E_STATE when stopped or on timeout. */
tandem_status tandem_loader_take(tandem_loader *l, int64_t timeout_ms, tandem_staged_batch **out);
/* Hand a taken batch back. recorded = 1: its audio_sent and text_sent events were recorded after
 * all of its uploads were queued (the loader waits on them before refilling the buffer);
 * recorded = 0: no upload from it was queued, or the run is over (the caller cancels the
 * loader first and synchronises its streams before tandem_loader_destroy). */
void tandem_loader_give_back(tandem_loader *l, tandem_staged_batch *b, int recorded);
/* Ask the threads to stop (any thread; does not wait); take returns at once afterwards. */
void tandem_loader_cancel(tandem_loader *l);
/* Cancel and join the threads (idempotent; from the thread that owns the loader). */
void tandem_loader_stop(tandem_loader *l);
void tandem_loader_destroy(tandem_loader *l);

typedef struct tandem_loader_stats {
    uint64_t files_ok, decode_failures, too_long;
    uint64_t resampled;             /* files at another rate than 22050 Hz */
    uint64_t resampled_cpu;         /* of those, resampled by libsamplerate on a loader thread */
    tandem_sampler_pos next_pos;    /* position of the next utterance the workers will claim */
} tandem_loader_stats;
void tandem_loader_get_stats(tandem_loader *l, tandem_loader_stats *out);

#endif
