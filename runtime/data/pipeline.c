/* pipeline.c — loader → data device → ring → consumer (see pipeline.h).
 *
 * Ordering argument. Streams: DS = data stream (data device), MS = model copy stream (model
 * device), CS = consumer stream (model device). Batch n uses ring slot k = n mod N and staged
 * batch buffer b (loader.h). Every buffer below has one writer and its readers; for each, the
 * event that orders them (an edge "X → Y" = Y is queued behind an event recorded after X):
 *
 *  1. b (pinned, CPU-written by loader threads) → H2D of audio + lengths on DS, H2D of tokens
 *     + text lengths on MS. The loader refills b only after cuEventSynchronize on b's
 *     audio_sent (recorded on DS after its H2D) and text_sent (recorded on MS after its H2D),
 *     so the CPU never rewrites b under an in-flight copy.
 *  2. mel.audio / mel.lengths (data arena) → mel kernels → mel outputs → ring copy (peer copy
 *     or D2H into slot k's staging): all on DS, ordered by the stream itself; batch n+1's H2D
 *     into mel.audio comes after batch n's kernels and copies on the same stream.
 *  3. Slot k's pinned staging (no peer access): written by the D2H on DS, read by the H2D on MS.
 *     MS waits on t3 (recorded on DS after the D2H) before its H2D.
 *  4. Slot k's tensors on the model device: written by DS (peer copies) or MS (staged H2D, and
 *     tokens + text lengths in both cases); read (and poisoned, at release) by CS. CS waits on
 *     filled[k], recorded on MS after its own copies and after its wait on t3, so CS sees DS's
 *     peer copies too (event waits are transitive).
 *  5. Reuse of slot k for batch n+N (tensors and staging): DS and MS both wait on freed[k],
 *     recorded on CS by release after the consumer's last use of batch n was queued. CS had
 *     waited on filled[k] of batch n, so freed[k] also follows MS's H2D out of the staging:
 *     DS's D2H for batch n+N cannot overwrite staging that MS is still reading. The CPU side
 *     guarantees the wait is issued after that record: the ring hands slot k to the producer
 *     only after release, which records freed[k] before ring_release (mutex = happens-before).
 *     At start freed[k] is recorded once on CS for every slot ("every slot starts free"), so
 *     no stream ever waits on a never-recorded event (a no-op on CUDA that orders nothing).
 *  6. filled[k] is re-recorded for batch n+N only after the consumer's acquire of batch n made
 *     CS wait on the previous record (acquire → release → claim, under the ring's mutex).
 *  7. Timing events (t0..t3 on DS, m0/m1 on MS) of step s live in timing[s mod NSTAGE]; the
 *     producer harvests step s-1 (cuEventSynchronize) after queueing step s, before step s+1
 *     re-records them. They are marked pending only once all of them were recorded.
 *  8. Shutdown: the threads are joined, then DS, MS and CS are synchronised before the
 *     loader's pinned batches and the slot staging are freed (a failed step may have queued a
 *     copy from them without recording its event).
 * The CPU never waits on the other side's device work except in (1), on a loader thread, and
 * in (7), one step behind, on the producer thread. */
#include "runtime/data/pipeline.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/core/dev.h"
#include "runtime/data/buckets.h"
#include "runtime/data/loader.h"
#include "platform/os/log.h"
#include "runtime/audio/mel_device.h"
#include "platform/os/os.h"
#include "runtime/data/ring.h"
#include "runtime/data/roles.h"

#define NSTAGE TANDEM_LAYOUT_STAGING

/* Events timing one data-device step (indexed by batch seq mod NSTAGE). */
typedef struct step_timing {
    tandem_event *t0, *t1, *t2, *t3; /* data stream: before H2D, after H2D, after features, after copies */
    tandem_event *tr;                /* data stream: after the resampling kernel */
    tandem_event *m0, *m1;           /* model copy stream around the staged H2D (no peer) */
    int pending;                     /* recorded, not yet harvested */
} step_timing;

/* Pinned staging of one ring slot's features (no peer access). */
typedef struct slot_staging {
    float *mels;          /* [B, F, 80] */
    float *mask;          /* [B, F] */
    float *stop;          /* [B, F] */
    int32_t *frames;      /* [B] */
} slot_staging;

/* What the consumer learns about a slot besides its tensors. */
typedef struct slot_meta {
    uint32_t *utt;            /* [B] */
    tandem_sampler_pos *pos;  /* [B] */
    double audio_seconds;
    int frames;               /* shape class */
    uint32_t n_real;
    int64_t real_frames;
    tandem_sampler_pos next_pos;
} slot_meta;

struct tandem_pipeline {
    tandem_pipeline_options o;
    tandem_config cfg;
    tandem_layout layout;
    tandem_ring ring;
    int ring_ok;
    tandem_loader *loader;
    uint32_t *lengths; /* [n_train] mel frames per training utterance (bucketing) */
    tandem_stage_times times;
    tandem_stream *data_stream, *model_copy_stream, *consumer_stream;
    int own_consumer_stream;
    step_timing timing[NSTAGE];
    int peer;
    void *staging_block;
    slot_staging staging[TANDEM_CONFIG_MAX_PREFETCH];
    slot_meta meta[TANDEM_CONFIG_MAX_PREFETCH];
    tandem_thread producer;
    int producer_started, started, stopped;
    uint64_t t_start_ns, t_stop_ns;
    /* under stats_m */
    tandem_mutex stats_m;
    double busy_ms, audio_seconds;
};

void tandem_pipeline_options_init(tandem_pipeline_options *o) {
    memset(o, 0, sizeof *o);
    o->fail_at_batch = -1;
}

/* ---- create / destroy ---------------------------------------------------------------------- */

static tandem_status make_events(tandem_pipeline *p) {
    for (int i = 0; i < NSTAGE; i++) {
        step_timing *t = &p->timing[i];
        tandem_event **data_ev[5] = {&t->t0, &t->t1, &t->t2, &t->t3, &t->tr};
        for (int j = 0; j < 5; j++) TANDEM_TRY(tandem_event_create(p->o.data_dev, data_ev[j]));
        TANDEM_TRY(tandem_event_create(p->o.model_dev, &t->m0));
        TANDEM_TRY(tandem_event_create(p->o.model_dev, &t->m1));
    }
    return TANDEM_OK;
}

static tandem_status make_staging(tandem_pipeline *p) {
    const size_t B = (size_t)p->cfg.batch_size;
    const int n = p->layout.n_slots;
    if (!p->peer) { /* the plan's ring staging block (runtime/data/plan_layout.h) */
        const tandem_staging_plan *sp = &p->layout.staging;
        const int blk = tandem_staging_find(sp, TANDEM_LAYOUT_RING_STAGING);
        TANDEM_TRY(tandem_staging_alloc(p->o.data_dev, sp, blk, &p->staging_block));
        void *base = p->staging_block;
        for (int k = 0; k < n; k++) {
            const int i = k * TANDEM_RING_STAGED_BUFS;
            p->staging[k].mels = tandem_staging_ptr(sp, blk, base, i + TANDEM_RING_STAGED_MELS);
            p->staging[k].mask = tandem_staging_ptr(sp, blk, base, i + TANDEM_RING_STAGED_MASK);
            p->staging[k].stop = tandem_staging_ptr(sp, blk, base, i + TANDEM_RING_STAGED_STOP);
            p->staging[k].frames = tandem_staging_ptr(sp, blk, base, i + TANDEM_RING_STAGED_FRAMES);
        }
    }
    for (int k = 0; k < n; k++) {
        p->meta[k].utt = tandem_calloc(B, sizeof(uint32_t));
        p->meta[k].pos = tandem_calloc(B, sizeof(tandem_sampler_pos));
        if (!p->meta[k].utt || !p->meta[k].pos) return tandem_fail(TANDEM_E_NOMEM, "pipeline: out of memory");
    }
    return TANDEM_OK;
}

static tandem_status create_parts(tandem_pipeline *p) {
    const tandem_pipeline_options *o = &p->o;
    const tandem_config *c = &p->cfg;
    TANDEM_TRY(tandem_layout_declare(c, o->data_pool, o->model_pool, &p->layout));
    TANDEM_TRY(tandem_mel_plan_prepare(&p->layout.mel, o->data_dev));
    TANDEM_TRY(tandem_resample_plan_prepare(&p->layout.rs));
    TANDEM_TRY(tandem_ring_init(&p->ring, p->layout.n_slots, o->model_dev));
    p->ring_ok = 1;
    TANDEM_TRY(tandem_stream_create(o->data_dev, &p->data_stream));
    TANDEM_TRY(tandem_stream_create(o->model_dev, &p->model_copy_stream));
    if (o->consumer_stream) {
        p->consumer_stream = o->consumer_stream;
    } else {
        TANDEM_TRY(tandem_stream_create(o->model_dev, &p->consumer_stream));
        p->own_consumer_stream = 1;
    }
    TANDEM_TRY(make_events(p));
    p->peer = !o->force_staged &&
              (o->data_dev == o->model_dev ||
               (tandem_dev_same_backend(o->data_dev, o->model_dev) && tandem_device_can_access_peer(o->model_dev, o->data_dev)));
    TANDEM_TRY(make_staging(p));
    int workers = c->num_workers > 0 ? c->num_workers : tandem_cpu_count();
    if (workers < 1) workers = 1;
    tandem_loader_config lc = {
        .ix = o->ix,
        .data_dir = o->data_dir,
        .items = o->ix->train,
        .n_items = o->ix->n_train,
        .batch = c->batch_size,
        .max_text = c->max_text,
        .max_samples = (int64_t)c->max_frames * TANDEM_MEL_HOP,
        .num_workers = workers,
        .device_resample = 1,
        .seed = (uint64_t)c->seed,
        .shuffle = c->shuffle,
        .data_dev = o->data_dev,
        .model_dev = o->model_dev,
        .times = &p->times,
        .shard_world = o->shard_world,
        .shard_rank = o->shard_rank,
        .shard_chunk = o->shard_chunk,
    };
    if (o->n_buckets > 0) { /* length bucketing: the loader's bucket sampler needs each item's frames */
        p->lengths = tandem_calloc(o->ix->n_train, sizeof *p->lengths);
        if (!p->lengths) return tandem_fail(TANDEM_E_NOMEM, "pipeline: out of memory");
        uint32_t none[1], k = 0;
        TANDEM_TRY(tandem_buckets_for_index(o->ix, 0, c->max_frames, c->reduction, p->lengths, none, &k, NULL));
        lc.n_buckets = o->n_buckets;
        lc.bucket_frames = o->bucket_frames;
        lc.lengths = p->lengths;
    }
    TANDEM_TRY(tandem_loader_create(&lc, &p->loader));
    if (o->start_pos.epoch || o->start_pos.index) TANDEM_TRY(tandem_loader_set_pos(p->loader, o->start_pos));
    return TANDEM_OK;
}

tandem_status tandem_pipeline_create(const tandem_pipeline_options *o, tandem_pipeline **out) {
    if (out) *out = NULL;
    if (!o || !out || !o->cfg || !o->ix || !o->data_dir || !o->data_dev || !o->model_dev || !o->data_pool ||
        !o->model_pool)
        return tandem_fail(TANDEM_E_INVALID, "pipeline: config, index, data dir, both devices and both pools "
                           "are required");
    if (o->ix->n_train == 0) return tandem_fail(TANDEM_E_INVALID, "pipeline: the index has no training utterances");
    if (o->consumer_stream && o->consumer_stream->dev != o->model_dev)
        return tandem_fail(TANDEM_E_INVALID, "pipeline: the consumer stream must belong to the model device");
    tandem_pipeline *p = tandem_calloc(1, sizeof *p);
    if (!p) return tandem_fail(TANDEM_E_NOMEM, "pipeline: out of memory");
    p->o = *o;
    p->cfg = *o->cfg;
    tandem_stage_times_init(&p->times);
    tandem_mutex_init(&p->stats_m);
    tandem_status st = create_parts(p);
    if (st != TANDEM_OK) {
        tandem_pipeline_destroy(p);
        return st;
    }
    *out = p;
    return TANDEM_OK;
}

void tandem_pipeline_destroy(tandem_pipeline *p) {
    if (!p) return;
    tandem_pipeline_stop(p);
    /* queued device work may still read the loader's batches and the staging, and signal the
     * events: finish it before freeing any of them */
    if (p->data_stream) tandem_stream_sync(p->data_stream);
    if (p->model_copy_stream) tandem_stream_sync(p->model_copy_stream);
    if (p->consumer_stream) tandem_stream_sync(p->consumer_stream);
    tandem_loader_destroy(p->loader);
    tandem_free(p->lengths);
    for (int i = 0; i < NSTAGE; i++) {
        step_timing *t = &p->timing[i];
        tandem_event *ev[7] = {t->t0, t->t1, t->t2, t->t3, t->m0, t->m1, t->tr};
        for (int j = 0; j < 7; j++)
            if (ev[j]) tandem_event_destroy(ev[j]);
    }
    tandem_staging_free(p->o.data_dev, p->staging_block);
    for (int k = 0; k < TANDEM_CONFIG_MAX_PREFETCH; k++) {
        tandem_free(p->meta[k].utt);
        tandem_free(p->meta[k].pos);
    }
    if (p->ring_ok) tandem_ring_destroy(&p->ring);
    if (p->own_consumer_stream) tandem_stream_destroy(p->consumer_stream);
    if (p->model_copy_stream) tandem_stream_destroy(p->model_copy_stream);
    if (p->data_stream) tandem_stream_destroy(p->data_stream);
    tandem_layout_release(&p->layout);
    tandem_mutex_destroy(&p->stats_m);
    tandem_stage_times_destroy(&p->times);
    tandem_free(p);
}

/* ---- the data-device step ------------------------------------------------------------------ */

static double elapsed_ms(tandem_event *a, tandem_event *b) {
    float ms = 0;
    if (tandem_event_elapsed_ms(a, b, &ms) != TANDEM_OK) return 0;
    return ms;
}

/* Wait for a recorded step and add its device times (called one step behind, so the device
 * keeps a batch queued while the CPU waits). */
static tandem_status harvest(tandem_pipeline *p, int i) {
    step_timing *t = &p->timing[i];
    if (!t->pending) return TANDEM_OK;
    t->pending = 0;
    TANDEM_TRY(tandem_event_sync(t->t3));
    double h2d = elapsed_ms(t->t0, t->t1), rs = elapsed_ms(t->t1, t->tr), feat = elapsed_ms(t->tr, t->t2),
           copy = elapsed_ms(t->t2, t->t3);
    double model_side = 0;
    if (!p->peer) {
        TANDEM_TRY(tandem_event_sync(t->m1));
        model_side = elapsed_ms(t->m0, t->m1);
    }
    tandem_stage_times_add(&p->times, TANDEM_STAGE_H2D, h2d);
    tandem_stage_times_add(&p->times, TANDEM_STAGE_DEVICE_RESAMPLE, rs);
    tandem_stage_times_add(&p->times, TANDEM_STAGE_FEATURES, feat);
    tandem_stage_times_add(&p->times, TANDEM_STAGE_RING_COPY, copy + model_side);
    tandem_mutex_lock(&p->stats_m);
    p->busy_ms += elapsed_ms(t->t0, t->t3);
    tandem_mutex_unlock(&p->stats_m);
    return TANDEM_OK;
}

/* bytes from the start of src into dst: on one device, or across devices with peer access. */
static tandem_status ring_copy(const tandem_pipeline *p, tandem_tensor *dst, const tandem_tensor *src, size_t bytes) {
    if (p->o.data_dev == p->o.model_dev) return tandem_dev_copy(p->data_stream, dst, 0, src, 0, bytes);
    return tandem_dev_copy_peer_prefix(p->data_stream, dst, src, bytes);
}

/* The staged rows at their rates into the resampler's input: each row's samples only (its kernel
 * reads no further and writes the padding), rows row_stride apart, then lengths and classes. */
static tandem_status upload_rows(tandem_pipeline *p, const tandem_staged_batch *b) {
    const tandem_resample_plan *rs = &p->layout.rs;
    const size_t B = (size_t)p->cfg.batch_size, stride = (size_t)b->row_stride * sizeof(float);
    for (size_t r = 0; r < B; r++)
        if (b->lengths[r] > 0)
            TANDEM_TRY(tandem_dev_upload(p->data_stream, rs->in, r * stride, b->audio + r * (size_t)b->row_stride,
                                         (size_t)b->lengths[r] * sizeof(float)));
    TANDEM_TRY(tandem_tensor_upload(p->data_stream, rs->in_len, b->lengths, B * sizeof(int32_t)));
    return tandem_tensor_upload(p->data_stream, rs->cls, b->cls, B * sizeof(int32_t));
}

/* Queue batch seq (staged in b) into slot k. *sent = 1 once b's audio_sent and text_sent
 * events were recorded after every copy out of b. */
static tandem_status step(tandem_pipeline *p, tandem_staged_batch *b, int k, int64_t seq, int *sent) {
    tandem_stream *ds = p->data_stream, *ms = p->model_copy_stream;
    tandem_mel_plan *mel = &p->layout.mel;
    const tandem_ring_slot *s = &p->layout.slot[k];
    step_timing *t = &p->timing[seq % NSTAGE];
    const size_t B = (size_t)p->cfg.batch_size, T = (size_t)p->cfg.max_text;

    /* the slot (and its staging) may still be read by the consumer's last use */
    TANDEM_TRY(tandem_stream_wait_event(ds, p->ring.freed[k]));
    TANDEM_TRY(tandem_event_record(t->t0, ds));
    TANDEM_TRY(upload_rows(p, b));
    TANDEM_TRY(tandem_event_record(b->audio_sent, ds));
    TANDEM_TRY(tandem_event_record(t->t1, ds));
    if (p->o.fail_at_batch == seq)
        return tandem_fail(TANDEM_E_INTERNAL, "pipeline: injected failure in the data-device step of batch %lld "
                           "(test hook fail_at_batch)", (long long)seq);
    /* the batch's shape class: rows of frames * hop samples at 22050 Hz, features packed [B, frames, ...] */
    TANDEM_TRY(tandem_resample_batch(&p->layout.rs, ds, b->row_stride, mel->audio, mel->lengths,
                                     (int64_t)b->frames * TANDEM_MEL_HOP));
    TANDEM_TRY(tandem_event_record(t->tr, ds));
    TANDEM_TRY(tandem_mel_batch_frames(mel, ds, b->frames));
    TANDEM_TRY(tandem_event_record(t->t2, ds));
    tandem_tensor *src[4] = {mel->mel, mel->mask, mel->stop, mel->frames};
    tandem_tensor *dst[4] = {s->mels, s->frame_mask, s->stop_targets, s->frame_lengths};
    void *stg[4] = {p->staging[k].mels, p->staging[k].mask, p->staging[k].stop, p->staging[k].frames};
    /* a smaller class's features are packed [B, frames, ...] at the start: only that part moves
       (mels, mask, stop; the lengths [B] whole); max_frames: the whole tensors, as unbucketed */
    const size_t F = (size_t)mel->max_frames, f = b->frames > 0 && (size_t)b->frames < F ? (size_t)b->frames : F;
    size_t n[4];
    for (int i = 0; i < 4; i++)
        n[i] = i < 3 && f < F ? tandem_tensor_bytes(src[i]) / F * f : tandem_tensor_bytes(src[i]);
    for (int i = 0; i < 4; i++) {
        if (p->peer) TANDEM_TRY(ring_copy(p, dst[i], src[i], n[i]));
        else TANDEM_TRY(tandem_dev_download(ds, stg[i], src[i], 0, n[i]));
    }
    TANDEM_TRY(tandem_event_record(t->t3, ds));

    /* model side: after the data stream's step and the consumer's last use of the slot */
    TANDEM_TRY(tandem_stream_wait_event(ms, t->t3));
    TANDEM_TRY(tandem_stream_wait_event(ms, p->ring.freed[k]));
    if (!p->peer) {
        TANDEM_TRY(tandem_event_record(t->m0, ms));
        for (int i = 0; i < 4; i++) TANDEM_TRY(tandem_dev_upload(ms, dst[i], 0, stg[i], n[i]));
        TANDEM_TRY(tandem_event_record(t->m1, ms));
    }
    TANDEM_TRY(tandem_tensor_upload(ms, s->tokens, b->tokens, B * T * sizeof(int32_t)));
    TANDEM_TRY(tandem_tensor_upload(ms, s->text_lengths, b->text_lengths, B * sizeof(int32_t)));
    TANDEM_TRY(tandem_event_record(b->text_sent, ms));
    *sent = 1;
    TANDEM_TRY(tandem_event_record(p->ring.filled[k], ms));
    t->pending = 1; /* every timing event of the step is recorded */

    memcpy(p->meta[k].utt, b->utt, B * sizeof *b->utt);
    memcpy(p->meta[k].pos, b->pos, B * sizeof *b->pos);
    p->meta[k].audio_seconds = b->audio_seconds;
    p->meta[k].frames = b->frames;
    p->meta[k].n_real = b->n_real;
    p->meta[k].real_frames = b->real_frames;
    p->meta[k].next_pos = b->next_pos;
    tandem_mutex_lock(&p->stats_m);
    p->audio_seconds += b->audio_seconds;
    tandem_mutex_unlock(&p->stats_m);
    return TANDEM_OK;
}

static void *producer_main(void *arg) {
    tandem_pipeline *p = arg;
    tandem_status st = TANDEM_OK;
    for (;;) {
        tandem_staged_batch *b = NULL;
        st = tandem_loader_take(p->loader, -1, &b);
        if (st != TANDEM_OK) break;
        int k;
        int64_t seq;
        st = tandem_ring_claim(&p->ring, -1, &k, &seq);
        if (st != TANDEM_OK) {
            tandem_loader_give_back(p->loader, b, 0);
            break;
        }
        int sent = 0;
        st = step(p, b, k, seq, &sent);
        /* after a failure the loader stops before the buffer goes back: a copy out of it may
         * be queued without its event, so it must not be refilled (destroy syncs the streams) */
        if (st != TANDEM_OK) tandem_loader_cancel(p->loader);
        tandem_loader_give_back(p->loader, b, sent);
        if (st != TANDEM_OK) break;
        tandem_ring_publish(&p->ring, k);
        st = harvest(p, (int)((seq + NSTAGE - 1) % NSTAGE));
        if (st != TANDEM_OK) break;
    }
    /* a clean stop by the consumer ends up here too: stop() leaves the first status in place */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tandem_last_error());
    tandem_ring_stop(&p->ring, st, msg);
    tandem_loader_cancel(p->loader); /* joined by tandem_pipeline_stop, on the owner's thread */
    return NULL;
}

/* ---- start / stop ---------------------------------------------------------------------------- */

tandem_status tandem_pipeline_start(tandem_pipeline *p) {
    if (!p) return tandem_fail(TANDEM_E_INVALID, "pipeline start: NULL");
    if (p->started) return tandem_fail(TANDEM_E_STATE, "pipeline: already started");
    if (!tandem_tensor_addr(p->layout.mel.audio) || !tandem_tensor_addr(p->layout.slot[0].mels))
        return tandem_fail(TANDEM_E_STATE, "pipeline start: commit the data and model pools first");
    TANDEM_TRY(tandem_mel_upload_constants(&p->layout.mel, p->data_stream));
    TANDEM_TRY(tandem_resample_upload(&p->layout.rs, p->data_stream));
    /* every slot starts free: the first wait on freed[k] has a record to wait on */
    for (int k = 0; k < p->layout.n_slots; k++) TANDEM_TRY(tandem_event_record(p->ring.freed[k], p->consumer_stream));
    p->started = 1;
    p->t_start_ns = tandem_now_ns();
    TANDEM_TRY(tandem_loader_start(p->loader));
    tandem_status st = tandem_thread_start(&p->producer, producer_main, p, "tandem-data");
    if (st != TANDEM_OK) {
        tandem_loader_stop(p->loader);
        return st;
    }
    p->producer_started = 1;
    return TANDEM_OK;
}

void tandem_pipeline_abort(tandem_pipeline *p, tandem_status st, const char *msg) {
    if (!p || !p->ring_ok) return;
    tandem_ring_stop(&p->ring, st == TANDEM_OK ? TANDEM_E_STATE : st, msg ? msg : "aborted by the consumer");
}

tandem_status tandem_pipeline_stop(tandem_pipeline *p) {
    if (!p) return TANDEM_OK;
    if (p->ring_ok) tandem_ring_stop(&p->ring, TANDEM_OK, "stopped by the consumer");
    if (p->loader) tandem_loader_stop(p->loader);
    if (p->producer_started) {
        tandem_thread_join(&p->producer);
        p->producer_started = 0;
    }
    if (p->started && !p->stopped) {
        p->stopped = 1;
        p->t_stop_ns = tandem_now_ns();
        for (int i = 0; i < NSTAGE; i++) harvest(p, i);
    }
    if (!p->ring_ok) return TANDEM_OK;
    tandem_status st;
    char msg[512];
    tandem_ring_stopped(&p->ring, &st, msg, sizeof msg);
    return st == TANDEM_OK ? TANDEM_OK : tandem_fail(st, "%s", msg);
}

/* ---- consumer -------------------------------------------------------------------------------- */

tandem_status tandem_pipeline_acquire(tandem_pipeline *p, tandem_batch_view *v, int64_t timeout_ms) {
    return tandem_pipeline_acquire_timed(p, v, timeout_ms, NULL, NULL);
}

tandem_status tandem_pipeline_acquire_timed(tandem_pipeline *p, tandem_batch_view *v, int64_t timeout_ms,
                                            tandem_event *pre, tandem_event *post) {
    if (!p || !v) return tandem_fail(TANDEM_E_INVALID, "pipeline acquire: NULL argument");
    if (!p->started) return tandem_fail(TANDEM_E_STATE, "pipeline acquire: not started");
    int k;
    int64_t seq;
    uint64_t waited = 0;
    TANDEM_TRY(tandem_ring_acquire(&p->ring, timeout_ms, &k, &seq, &waited));
    tandem_status st = tandem_ring_wait_filled(&p->ring, k, p->consumer_stream, pre, post);
    if (st != TANDEM_OK) {
        tandem_pipeline_abort(p, st, tandem_last_error());
        return st;
    }
    v->slot = k;
    v->seq = seq;
    v->t = &p->layout.slot[k];
    v->utt = p->meta[k].utt;
    v->pos = p->meta[k].pos;
    v->audio_seconds = p->meta[k].audio_seconds;
    v->frames = p->meta[k].frames;
    v->n_real = p->meta[k].n_real;
    v->real_frames = p->meta[k].real_frames;
    v->next_pos = p->meta[k].next_pos;
    v->wait_ms = (double)waited / 1e6;
    return TANDEM_OK;
}

tandem_status tandem_pipeline_release(tandem_pipeline *p, int slot) {
    if (!p || slot < 0 || slot >= p->layout.n_slots)
        return tandem_fail(TANDEM_E_INVALID, "pipeline release: bad slot %d", slot);
    tandem_status st = TANDEM_OK;
    if (p->o.poison_on_release) st = tandem_op_fill(p->consumer_stream, p->layout.slot[slot].mels, NAN);
    if (st == TANDEM_OK) st = tandem_event_record(p->ring.freed[slot], p->consumer_stream);
    if (st == TANDEM_OK) st = tandem_ring_release(&p->ring, slot);
    if (st != TANDEM_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tandem_last_error());
        tandem_pipeline_abort(p, st, msg);
        return tandem_fail(st, "%s", msg);
    }
    return TANDEM_OK;
}

/* ---- accessors, stats -------------------------------------------------------------------------- */

const tandem_layout *tandem_pipeline_layout(const tandem_pipeline *p) { return &p->layout; }
tandem_stream *tandem_pipeline_consumer_stream(const tandem_pipeline *p) { return p->consumer_stream; }
int tandem_pipeline_peer(const tandem_pipeline *p) { return p->peer; }

void tandem_pipeline_get_stats(tandem_pipeline *p, tandem_pipeline_stats *out) {
    memset(out, 0, sizeof *out);
    tandem_ring_stats rs;
    tandem_ring_get_stats(&p->ring, &rs);
    out->batches = rs.produced;
    out->consumed = rs.consumed;
    out->mean_ready_slots = rs.mean_ready;
    out->data_wait_ms = rs.wait_ms;
    uint64_t end = p->stopped ? p->t_stop_ns : tandem_now_ns();
    out->wall_ms = p->started ? (double)(end - p->t_start_ns) / 1e6 : 0.0;
    tandem_mutex_lock(&p->stats_m);
    out->data_busy_ms = p->busy_ms;
    out->audio_seconds = p->audio_seconds;
    tandem_mutex_unlock(&p->stats_m);
    out->data_busy_pct = out->wall_ms > 0 ? 100.0 * out->data_busy_ms / out->wall_ms : 0.0;
    tandem_loader_stats ls;
    tandem_loader_get_stats(p->loader, &ls);
    out->files_ok = ls.files_ok;
    out->decode_failures = ls.decode_failures;
    out->too_long = ls.too_long;
    out->resampled = ls.resampled;
    out->resampled_cpu = ls.resampled_cpu;
    out->next_pos = ls.next_pos;
    tandem_stage_times_get(&p->times, out->stages);
}

/* ---- device roles (roles.c) ------------------------------------------------------------------- */

tandem_status tandem_pipeline_open_devices(tandem_backend backend, tandem_device **data, tandem_device **model,
                                           char *desc, size_t cap) {
    return tandem_roles_open(backend, -1, -1, data, model, desc, cap);
}

void tandem_pipeline_close_devices(tandem_device *data, tandem_device *model) {
    tandem_roles_close(data, model);
}
