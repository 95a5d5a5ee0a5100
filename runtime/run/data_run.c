/* data_run.c — the data side of training alone (tandem_data_run, runtime/tandem_data.h; `tandem
 * pipeline`): index → loader threads → features on the data device → ring on the model device,
 * with a consumer that downloads every batch, checks it and releases it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/audio/audio.h"
#include "runtime/audio/mel.h"
#include "runtime/core/config.h"
#include "runtime/data/pipeline.h"
#include "runtime/data/plan_layout.h"
#include "runtime/data/roles.h"
#include "runtime/run/capacity.h"
#include "runtime/run/dataset.h"
#include "tandem.h"

void tandem_data_run_options_init(tandem_data_run_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->steps = 1;
    o->backend = TANDEM_BACKEND_AUTO;
}

typedef struct host_batch {
    float *mels, *mask, *stop;           /* [B, F, 80], [B, F], [B, F] */
    int32_t *frames, *tokens, *text_len; /* [B], [B, T], [B] */
} host_batch;

typedef struct data_run {
    const tandem_config *cfg;
    const tandem_data_run_options *o;
    tandem_data_run_report *r;
    tandem_text_index ix;
    int have_ix;
    tandem_device *data_dev, *model_dev;
    tandem_pool *data_pool, *model_pool;
    tandem_pipeline *pipe;
    host_batch h;
} data_run;

static void reached(data_run *d, int stage) {
    d->r->stage = stage;
    if (d->o->on_stage) d->o->on_stage(d->o->on_stage_user, d->r);
}

/* The index with the duration filter of this config (text cache included). */
static tandem_status stage_index(data_run *d) {
    const uint64_t t0 = tandem_now_ns();
    TANDEM_TRY(tandem_run_open_index(d->cfg, d->o->data_dir, d->o->cache_dir, &d->ix));
    d->have_ix = 1;
    tandem_data_run_report *r = d->r;
    r->index_ms = (double)(tandem_now_ns() - t0) * 1e-6;
    r->utterances = d->ix.count;
    r->n_train = d->ix.n_train;
    r->cache_hit = d->ix.cache_hit;
    r->too_long = d->ix.audio_too_long;
    r->too_short = d->ix.audio_too_short;
    r->unreadable = d->ix.audio_unreadable;
    r->max_frames = d->cfg->max_frames;
    reached(d, TANDEM_DATA_STAGE_INDEXED);
    return TANDEM_OK;
}

static tandem_status alloc_host(data_run *d) {
    const size_t B = (size_t)d->cfg->batch_size, F = (size_t)d->cfg->max_frames, T = (size_t)d->cfg->max_text;
    host_batch *h = &d->h;
    h->mels = tandem_malloc(sizeof(float) * B * F * (size_t)d->cfg->n_mels);
    h->mask = tandem_malloc(sizeof(float) * B * F);
    h->stop = tandem_malloc(sizeof(float) * B * F);
    h->frames = tandem_malloc(sizeof(int32_t) * B);
    h->tokens = tandem_malloc(sizeof(int32_t) * B * T);
    h->text_len = tandem_malloc(sizeof(int32_t) * B);
    if (!h->mels || !h->mask || !h->stop || !h->frames || !h->tokens || !h->text_len)
        return tandem_fail(TANDEM_E_NOMEM, "pipeline: out of memory for the consumer's host copy of a batch");
    return TANDEM_OK;
}

/* Both arenas planned and committed: the pipeline's tensors, and the consumer's host buffers
 * made before the commit. */
static tandem_status stage_plan(data_run *d) {
    const tandem_config *c = d->cfg;
    TANDEM_TRY(tandem_pool_create(d->data_dev, "data", (size_t)c->data_gpu_memory << 20, &d->data_pool));
    TANDEM_TRY(tandem_pool_create(d->model_dev, "model", (size_t)c->model_gpu_memory << 20, &d->model_pool));
    tandem_pipeline_options po;
    tandem_pipeline_options_init(&po);
    po.cfg = c;
    po.ix = &d->ix;
    po.data_dir = d->o->data_dir;
    po.data_dev = d->data_dev;
    po.model_dev = d->model_dev;
    po.data_pool = d->data_pool;
    po.model_pool = d->model_pool;
    po.poison_on_release = d->o->poison_on_release;
    po.force_staged = c->force_staged;
    TANDEM_TRY(tandem_pipeline_create(&po, &d->pipe));
    TANDEM_TRY(alloc_host(d));
    TANDEM_TRY(tandem_pool_commit(d->data_pool));
    TANDEM_TRY(tandem_pool_commit(d->model_pool));
    tandem_pool_stats ds, ms;
    tandem_pool_get_stats(d->data_pool, &ds);
    tandem_pool_get_stats(d->model_pool, &ms);
    tandem_data_run_report *r = d->r;
    r->batch_size = c->batch_size;
    r->max_text = c->max_text;
    r->n_mels = c->n_mels;
    r->batch_seconds = (double)c->max_frames * TANDEM_MEL_HOP / TANDEM_AUDIO_RATE;
    r->data_arena_mib = ds.arena_bytes / 1048576.0;
    r->model_arena_mib = ms.arena_bytes / 1048576.0;
    r->ring_slots = c->prefetch_buffer_size;
    r->peer = tandem_pipeline_peer(d->pipe);
    r->loader_threads = c->num_workers > 0 ? c->num_workers : tandem_cpu_count();
    reached(d, TANDEM_DATA_STAGE_PLANNED);
    return TANDEM_OK;
}

static tandem_status download(tandem_stream *s, const tandem_ring_slot *t, host_batch *h) {
    TANDEM_TRY(tandem_tensor_download(s, h->mels, t->mels, tandem_tensor_bytes(t->mels)));
    TANDEM_TRY(tandem_tensor_download(s, h->mask, t->frame_mask, tandem_tensor_bytes(t->frame_mask)));
    TANDEM_TRY(tandem_tensor_download(s, h->stop, t->stop_targets, tandem_tensor_bytes(t->stop_targets)));
    TANDEM_TRY(tandem_tensor_download(s, h->frames, t->frame_lengths, tandem_tensor_bytes(t->frame_lengths)));
    TANDEM_TRY(tandem_tensor_download(s, h->tokens, t->tokens, tandem_tensor_bytes(t->tokens)));
    TANDEM_TRY(tandem_tensor_download(s, h->text_len, t->text_lengths, tandem_tensor_bytes(t->text_lengths)));
    return tandem_stream_sync(s);
}

/* Row b's frames: length in range, mask and stop targets from the length, finite features,
 * silence padding (ln 1e-5). */
static tandem_status check_frames(const host_batch *h, const tandem_config *c, long long seq, int b) {
    const int F = c->max_frames, M = c->n_mels, n = h->frames[b];
    if (n < 1 || n > F)
        return tandem_fail(TANDEM_E_INTERNAL, "batch %lld row %d: frame length %d outside [1, %d]", seq, b, n, F);
    for (int f = 0; f < F; f++) {
        const size_t bf = (size_t)b * F + f;
        const float want_mask = f < n ? 1.0f : 0.0f, want_stop = f >= n - 1 ? 1.0f : 0.0f;
        if (h->mask[bf] != want_mask || h->stop[bf] != want_stop)
            return tandem_fail(TANDEM_E_INTERNAL, "batch %lld row %d frame %d: mask %g stop %g, expected %g %g "
                               "for %d frames", seq, b, f, h->mask[bf], h->stop[bf], want_mask, want_stop, n);
        for (int m = 0; m < M; m++) {
            const float x = h->mels[bf * M + m];
            if (!isfinite(x) || (f >= n && x != tandem_mel_silence()))
                return tandem_fail(TANDEM_E_INTERNAL, "batch %lld row %d frame %d band %d: %g (%s)", seq, b, f, m,
                                   x, isfinite(x) ? "padding must be silence, ln(1e-5)" : "not finite");
        }
    }
    return TANDEM_OK;
}

/* Download the slot on the consumer stream and check every row. */
static tandem_status check_batch(data_run *d, tandem_stream *s, const tandem_batch_view *v) {
    const tandem_config *c = d->cfg;
    const host_batch *h = &d->h;
    const long long seq = (long long)v->seq;
    const int T = c->max_text;
    tandem_status st = download(s, v->t, &d->h);
    if (st != TANDEM_OK) {
        char why[1024];
        snprintf(why, sizeof why, "%s", tandem_last_error());
        return tandem_fail(st, "batch %lld: download: %s", seq, why);
    }
    for (int b = 0; b < c->batch_size; b++) {
        TANDEM_TRY(check_frames(h, c, seq, b));
        const int tl = h->text_len[b];
        if (tl < 4 || tl > T)
            return tandem_fail(TANDEM_E_INTERNAL, "batch %lld row %d: text length %d outside [4, %d]", seq, b, tl, T);
        for (int i = tl; i < T; i++)
            if (h->tokens[(size_t)b * T + i] != 0)
                return tandem_fail(TANDEM_E_INTERNAL, "batch %lld row %d: token %d past the text is %d, expected "
                                   "PAD", seq, b, i, h->tokens[(size_t)b * T + i]);
    }
    return TANDEM_OK;
}

static void run_fields(data_run *d) {
    tandem_pipeline_stats s;
    tandem_pipeline_get_stats(d->pipe, &s);
    tandem_data_run_report *r = d->r;
    r->consumed = s.consumed;
    r->produced = s.batches;
    r->wall_s = s.wall_ms / 1000.0;
    r->audio_seconds = s.audio_seconds;
    r->data_busy_pct = s.data_busy_pct;
    r->data_busy_ms = s.data_busy_ms;
    r->mean_ready_slots = s.mean_ready_slots;
    r->data_wait_ms = s.data_wait_ms;
    r->files_ok = s.files_ok;
    r->resampled = s.resampled;
    r->decode_failures = s.decode_failures;
    r->files_too_long = s.too_long;
    r->next_epoch = s.next_pos.epoch;
    r->next_index = s.next_pos.index;
    tandem_stage_times_format(s.stages, s.wall_ms, r->stages, sizeof r->stages);
    tandem_device_info info;
    const int host = tandem_device_get_info(d->data_dev, &info) == TANDEM_OK && info.backend == TANDEM_BACKEND_HOST;
    tandem_capacity c;
    tandem_capacity_from_stats(&s, d->cfg->batch_size, r->loader_threads, host, &c);
    tandem_capacity_model(&c, d->cfg, d->o->model_samples_per_s);
    r->capacity_utt_s = c.utt_s;
    r->model_samples_s = c.model_samples_s;
    r->headroom = tandem_capacity_headroom(&c);
    r->data_limited = c.model_samples_s > 0 && r->headroom < 1.0;
    tandem_capacity_format(&c, r->capacity, sizeof r->capacity);
}

/* steps batches acquired, checked and released; the first bad one stops the data side. */
static tandem_status stage_run(data_run *d) {
    TANDEM_TRY(tandem_pipeline_start(d->pipe));
    tandem_stream *cs = tandem_pipeline_consumer_stream(d->pipe);
    tandem_status st = TANDEM_OK, bad = TANDEM_OK;
    for (int64_t i = 0; i < d->o->steps && st == TANDEM_OK && bad == TANDEM_OK; i++) {
        tandem_batch_view v;
        if ((st = tandem_pipeline_acquire(d->pipe, &v, 120000)) != TANDEM_OK) break;
        bad = check_batch(d, cs, &v);
        st = tandem_pipeline_release(d->pipe, v.slot);
    }
    char why[1024] = "";
    if (bad != TANDEM_OK) {
        snprintf(why, sizeof why, "%s", tandem_last_error());
        tandem_pipeline_abort(d->pipe, TANDEM_E_INTERNAL, "a batch failed its check");
    }
    tandem_status ps = tandem_pipeline_stop(d->pipe);
    if (bad != TANDEM_OK) return tandem_fail(bad, "%s", why);
    if (st == TANDEM_OK) st = ps;
    TANDEM_TRY(st);
    run_fields(d);
    reached(d, TANDEM_DATA_STAGE_DONE);
    return TANDEM_OK;
}

static tandem_status run_stages(data_run *d) {
    TANDEM_TRY(stage_index(d));
    /* the config's ordinals pick the roles, as in training (tandem pipeline --data-gpu / --model-gpu) */
    TANDEM_TRY(tandem_roles_open(d->o->backend, d->cfg->data_gpu, d->cfg->model_gpu, &d->data_dev, &d->model_dev,
                                 d->r->devices, sizeof d->r->devices));
    if (d->cfg->force_staged) tandem_roles_note_force_staged(d->r->devices, sizeof d->r->devices);
    reached(d, TANDEM_DATA_STAGE_DEVICES);
    TANDEM_TRY(stage_plan(d));
    return stage_run(d);
}

tandem_status tandem_data_run(const tandem_config *cfg, const tandem_data_run_options *o,
                              tandem_data_run_report *r) {
    if (!cfg || !o || !r) return tandem_fail(TANDEM_E_INVALID, "tandem_data_run: NULL argument");
    memset(r, 0, sizeof *r);
    if (!o->data_dir) return tandem_fail(TANDEM_E_INVALID, "data run: no dataset directory (data_dir)");
    if (o->steps < 1) return tandem_fail(TANDEM_E_INVALID, "data run: steps %lld: expected >= 1", (long long)o->steps);
    data_run d;
    memset(&d, 0, sizeof d);
    d.cfg = cfg;
    d.o = o;
    d.r = r;
    tandem_status st = run_stages(&d);
    char why[1024];
    snprintf(why, sizeof why, "%s", tandem_last_error());
    tandem_pipeline_destroy(d.pipe);
    tandem_pool_destroy(d.data_pool);
    tandem_pool_destroy(d.model_pool);
    tandem_roles_close(d.data_dev, d.model_dev);
    if (d.have_ix) tandem_text_index_free(&d.ix);
    host_batch *h = &d.h;
    tandem_free(h->mels);
    tandem_free(h->mask);
    tandem_free(h->stop);
    tandem_free(h->frames);
    tandem_free(h->tokens);
    tandem_free(h->text_len);
    return st == TANDEM_OK ? TANDEM_OK : tandem_fail(st, "%s", why);
}
