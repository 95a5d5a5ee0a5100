/* cost.c — recording one real training step (see cost.h): the model and a synthetic batch in
 * a pool on the dry device (or a caller's device), then tandem_train_step with dev.c's recorder
 * installed. */
#include "runtime/run/cost.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/model/train_step.h"
#include "runtime/text/symbols.h"

enum { MAX_MICRO = 64 };

/* One micro-batch's tensors, as the ring delivers them (lengths on the device). */
typedef struct cost_batch {
    tandem_tensor *tokens, *mels, *mask, *stop, *text_len, *frame_len;
} cost_batch;

struct tandem_cost_run {
    tandem_device *dev;
    int own_dev;
    tandem_stream *s;
    tandem_pool *pool;
    tandem_model m;
    int have_model;
    tandem_optim opt;
    tandem_train_state st;
    cost_batch b[MAX_MICRO];
    tandem_model_batch mb[MAX_MICRO];
    tandem_dev_recorder rec;
};

/* A dry device with an H100's description (the model only asks for the backend). */
static tandem_status open_dry(tandem_device **out) {
    tandem_device_info info;
    memset(&info, 0, sizeof info);
    info.backend = TANDEM_BACKEND_CUDA;
    snprintf(info.name, sizeof info.name, "dry device (cost model: nothing executes)");
    info.cc_major = 9;
    info.total_memory = (size_t)80 << 30;
    info.multiprocessors = 132;
    info.supports_bf16 = 1;
    return tandem_dev_dry_open(&info, out);
}

static tandem_status declare_batch(tandem_cost_run *r, int a) {
    const tandem_model_dims *d = &r->m.dims;
    cost_batch *b = &r->b[a];
    const int64_t s2[2] = {d->batch, d->text_len}, s3[3] = {d->batch, d->frames, d->n_mels};
    const int64_t sf[2] = {d->batch, d->frames}, sb[1] = {d->batch};
    struct { const char *name; tandem_dtype dt; int nd; const int64_t *shape; tandem_tensor **t; } t[] = {
        {"tokens", TANDEM_I32, 2, s2, &b->tokens},   {"mels", TANDEM_F32, 3, s3, &b->mels},
        {"frame_mask", TANDEM_F32, 2, sf, &b->mask}, {"stop", TANDEM_F32, 2, sf, &b->stop},
        {"text_len", TANDEM_I32, 1, sb, &b->text_len}, {"frame_len", TANDEM_I32, 1, sb, &b->frame_len},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char nm[48];
        snprintf(nm, sizeof nm, "batch%d.%s", a, t[i].name);
        TANDEM_TRY(tandem_pool_declare(r->pool, nm, t[i].dt, t[i].nd, t[i].shape, TANDEM_PERSISTENT, 0, 0,
                                       t[i].t));
    }
    r->mb[a] = (tandem_model_batch){b->tokens, b->mels, b->mask, b->stop, b->text_len, b->frame_len,
                                    NULL, NULL, 0};
    return TANDEM_OK;
}

/* Full-length items: tokens 1.. (valid symbols), silence mels, every frame real, stop on the
 * last. The values do not change the launch list; they keep a real device's run finite. */
static tandem_status upload_batch(tandem_cost_run *r, int a) {
    const tandem_model_dims *d = &r->m.dims;
    const size_t nt = (size_t)d->batch * d->text_len, nf = (size_t)d->batch * d->frames;
    const size_t bytes = (nf * d->n_mels + 2 * nf + nt + 2 * (size_t)d->batch) * 4;
    char *h = tandem_calloc(1, bytes);
    if (!h) return tandem_fail(TANDEM_E_NOMEM, "cost: no host memory for a %zu-byte batch", bytes);
    int32_t *tok = (int32_t *)h, *lens = tok + nt;
    float *mask = (float *)(lens + 2 * d->batch), *stop = mask + nf, *mels = stop + nf;
    for (size_t i = 0; i < nt; i++) tok[i] = 1 + (int32_t)(i % (size_t)(d->vocab - 1));
    for (int i = 0; i < d->batch; i++) lens[i] = d->text_len, lens[d->batch + i] = d->frames;
    for (size_t i = 0; i < nf; i++) {
        mask[i] = 1.0f;
        stop[i] = (i % (size_t)d->frames) == (size_t)d->frames - 1;
    }
    for (size_t i = 0; i < nf * (size_t)d->n_mels; i++) mels[i] = -4.0f;
    const cost_batch *b = &r->b[a];
    tandem_status st = tandem_tensor_upload(r->s, b->tokens, tok, nt * 4);
    if (st == TANDEM_OK) st = tandem_tensor_upload(r->s, b->text_len, lens, (size_t)d->batch * 4);
    if (st == TANDEM_OK) st = tandem_tensor_upload(r->s, b->frame_len, lens + d->batch, (size_t)d->batch * 4);
    if (st == TANDEM_OK) st = tandem_tensor_upload(r->s, b->mask, mask, nf * 4);
    if (st == TANDEM_OK) st = tandem_tensor_upload(r->s, b->stop, stop, nf * 4);
    if (st == TANDEM_OK) st = tandem_tensor_upload(r->s, b->mels, mels, nf * (size_t)d->n_mels * 4);
    if (st == TANDEM_OK) st = tandem_stream_sync(r->s);
    tandem_free(h);
    return st;
}

/* Room for the step's record: ~80 launches per layer and micro-batch measured, so 256 per
 * layer and micro-batch plus the fixed part leaves ample margin (a step that outgrows it is
 * an error naming the count, never a silent truncation). */
static int64_t record_cap(const tandem_model_dims *d) {
    return 4096 + 256 * (int64_t)d->layers * d->micro_batches + 64 * (int64_t)d->batch * d->micro_batches;
}

static tandem_status open_parts(tandem_cost_run *r, const tandem_config *cfg) {
    tandem_model_dims dims;
    TANDEM_TRY(tandem_model_dims_from_config(cfg, tandem_symbols_count(), &dims));
    if (dims.micro_batches > MAX_MICRO)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "cost: grad_accum %d; the cost model records up to %d",
                           dims.micro_batches, MAX_MICRO);
    tandem_optim_from_config(cfg, &r->opt);
    TANDEM_TRY(tandem_stream_create(r->dev, &r->s));
    TANDEM_TRY(tandem_pool_create(r->dev, "model", 0, &r->pool));
    TANDEM_TRY(tandem_model_declare(&r->m, r->dev, r->pool, &dims));
    r->have_model = 1;
    for (int a = 0; a < dims.micro_batches; a++) TANDEM_TRY(declare_batch(r, a));
    r->rec.cap = record_cap(&dims);
    r->rec.entries = tandem_calloc((size_t)r->rec.cap, sizeof *r->rec.entries);
    if (!r->rec.entries) return tandem_fail(TANDEM_E_NOMEM, "cost: no host memory for the launch record");
    TANDEM_TRY(tandem_pool_commit(r->pool));
    TANDEM_TRY(tandem_model_init_params(&r->m, r->s, (uint64_t)cfg->seed));
    for (int a = 0; a < dims.micro_batches; a++) TANDEM_TRY(upload_batch(r, a));
    return TANDEM_OK;
}

tandem_status tandem_cost_run_open(const tandem_config *cfg, tandem_device *dev, tandem_cost_run **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_cost_run_open: out is NULL");
    *out = NULL;
    if (!cfg) return tandem_fail(TANDEM_E_INVALID, "tandem_cost_run_open: config is NULL");
    tandem_cost_run *r = tandem_calloc(1, sizeof *r);
    if (!r) return tandem_fail(TANDEM_E_NOMEM, "cost: out of host memory");
    tandem_status st = TANDEM_OK;
    if (dev) {
        r->dev = dev;
    } else {
        st = open_dry(&r->dev);
        r->own_dev = st == TANDEM_OK;
    }
    if (st == TANDEM_OK) st = open_parts(r, cfg);
    if (st != TANDEM_OK) {
        tandem_cost_run_close(r);
        return st;
    }
    *out = r;
    return TANDEM_OK;
}

tandem_status tandem_cost_run_step(tandem_cost_run *r) {
    if (!r) return tandem_fail(TANDEM_E_INVALID, "tandem_cost_run_step: run is NULL");
    tandem_step_result res;
    tandem_dev_record(&r->rec);
    tandem_status st = tandem_train_step(&r->m, r->s, &r->opt, &r->st, r->mb, &res);
    tandem_dev_record(NULL);
    TANDEM_TRY(st);
    const int64_t n = atomic_load(&r->rec.n);
    if (n > r->rec.cap)
        return tandem_fail(TANDEM_E_STATE, "cost: the step made %lld launches, more than the %lld the record "
                           "holds (runtime/run/cost.c, record_cap)", (long long)n, (long long)r->rec.cap);
    return TANDEM_OK;
}

const tandem_rec_entry *tandem_cost_run_entries(const tandem_cost_run *r, int64_t *n) {
    int64_t k = r ? atomic_load(&r->rec.n) : 0;
    if (r && k > r->rec.cap) k = r->rec.cap;
    if (n) *n = k;
    return r ? r->rec.entries : NULL;
}

const tandem_model *tandem_cost_run_model(const tandem_cost_run *r) { return r ? &r->m : NULL; }

void tandem_cost_run_close(tandem_cost_run *r) {
    if (!r) return;
    if (r->have_model) tandem_model_free(&r->m);
    tandem_pool_destroy(r->pool);
    tandem_stream_destroy(r->s);
    tandem_free(r->rec.entries);
    if (r->own_dev) tandem_device_close(r->dev);
    tandem_free(r);
}
