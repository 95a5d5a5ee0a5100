/* dp.c — data-parallel training across ranks (dp.h). */
#include "runtime/run/dp.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/rendezvous.h"
#include "runtime/core/launch.h"

static tandem_status failed(tandem_dp *dp, tandem_status st) {
    if (st != TANDEM_OK) dp->failed = 1;
    return st;
}

/* Rank 0's id to the others through the launcher's MPI (a host group, closed after). */
static tandem_status share_by_mpi(tandem_dp *dp, tandem_coll_id *id) {
    tandem_device *h = NULL;
    tandem_coll *hc = NULL;
    tandem_coll_id none;
    tandem_status st = tandem_device_open(TANDEM_BACKEND_HOST, 0, &h);
    if (st == TANDEM_OK) st = tandem_dev_coll_unique_id(h, &none);
    if (st == TANDEM_OK) st = tandem_dev_coll_open(h, &none, dp->world, dp->rank, &hc);
    if (st == TANDEM_OK) st = tandem_dev_coll_share_id(h, hc, id, 0);
    if (hc) tandem_dev_coll_close(h, hc, st != TANDEM_OK);
    if (h) tandem_device_close(h);
    return st;
}

/* The group's unique id on every rank. Host: MPI's world needs none. Other backends (NCCL): rank
 * 0 makes it, and it reaches the others through the rendezvous when one is given, else MPI. */
static tandem_status unique_id(tandem_dp *dp, const tandem_trainer_options *o, tandem_coll_id *id) {
    memset(id, 0, sizeof *id);
    tandem_device_info info;
    TANDEM_TRY(tandem_device_get_info(dp->dev, &info));
    if (info.backend == TANDEM_BACKEND_HOST) return tandem_dev_coll_unique_id(dp->dev, id);
    if (dp->rank == 0) TANDEM_TRY(tandem_dev_coll_unique_id(dp->dev, id));
    const char *kind = info.backend == TANDEM_BACKEND_CUDA ? "CUDA" : "other";
    char why[900];
    if (o->rendezvous && *o->rendezvous) {
        const int ms = o->rendezvous_timeout_ms > 0 ? o->rendezvous_timeout_ms : TANDEM_RENDEZVOUS_TIMEOUT_MS;
        const tandem_rdzv_options ro = {.endpoint = o->rendezvous, .world = dp->world, .rank = dp->rank,
                                        .timeout_ms = ms};
        const tandem_status st = tandem_rendezvous(&ro, id->bytes, sizeof id->bytes);
        if (st == TANDEM_OK) return TANDEM_OK;
        snprintf(why, sizeof why, "%s", tandem_last_error());
        return tandem_fail(st, "data-parallel on %s devices, rank %d of %d: handing rank 0's collective id to the "
                           "others: %s", kind, dp->rank, dp->world, why);
    }
    const tandem_status st = share_by_mpi(dp, id);
    if (st == TANDEM_OK) return TANDEM_OK;
    snprintf(why, sizeof why, "%s", tandem_last_error());
    return tandem_fail(st, "data-parallel on %s devices, rank %d of %d: rank 0's collective id reaches the others "
                       "through mpirun's MPI or a rendezvous: launch with mpirun, or set MASTER_ADDR and MASTER_PORT "
                       "(the trainer option `rendezvous`, HOST:PORT); through MPI: %s", kind, dp->rank, dp->world,
                       why);
}

tandem_status tandem_dp_declare(tandem_dp *dp, const tandem_trainer_options *o, int local, tandem_device *dev,
                                tandem_pool *pool, tandem_sampler_pos start) {
    memset(dp, 0, sizeof *dp);
    dp->start = start;
    const int world = o->world_size, rank = o->rank;
    if (world <= 1) return TANDEM_OK;
    if (rank < 0 || rank >= world)
        return tandem_fail(TANDEM_E_INVALID, "data-parallel: rank %d of world size %d; expected 0 <= rank < %d "
                           "(the launcher's RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID)", rank, world, world);
    dp->world = world, dp->rank = rank, dp->dev = dev;
    const int64_t one = 1;
    TANDEM_TRY(tandem_pool_declare(pool, "dp.vote", TANDEM_F32, 1, &one, TANDEM_PERSISTENT, 0, 0, &dp->vote));
    return local ? TANDEM_OK : unique_id(dp, o, &dp->id); /* local: tandem_dp_open_local needs no id */
}

tandem_status tandem_dp_open(tandem_dp *dp, tandem_stream *s, tandem_model *m) {
    if (dp->world <= 1) return TANDEM_OK;
    TANDEM_TRY(tandem_dev_coll_open(dp->dev, &dp->id, dp->world, dp->rank, &dp->coll));
    /* rank 0's parameters everywhere (a seeded init or the same checkpoint already agree; this
       makes it so whatever the start) */
    TANDEM_TRY(failed(dp, tandem_dev_broadcast(dp->coll, s, m->params, 0, m->n_flat, 0)));
    m->wcopy_stale = 1; /* bf16: the GEMMs' copy follows the broadcast masters */
    tandem_logf(TANDEM_LOG_INFO, "data-parallel: rank %d of %d joined; parameters from rank 0", dp->rank,
                dp->world);
    return TANDEM_OK;
}

tandem_status tandem_dp_open_local(tandem_dp *const *dps, tandem_stream *const *ss, tandem_model *const *ms, int n) {
    tandem_device *devs[64];
    tandem_coll *colls[64];
    if (n < 2 || n > 64) return tandem_fail(TANDEM_E_INVALID, "data-parallel: %d local model devices, expected 2..64", n);
    for (int i = 0; i < n; i++) devs[i] = dps[i]->dev;
    TANDEM_TRY(tandem_dev_coll_open_local(devs, n, colls));
    for (int i = 0; i < n; i++) dps[i]->coll = colls[i];
    /* one thread drives every device: the broadcasts go in one group (else the first waits for
       the others for ever) */
    tandem_status st = tandem_dev_coll_group(devs[0], 1);
    for (int i = 0; st == TANDEM_OK && i < n; i++)
        st = tandem_dev_broadcast(colls[i], ss[i], ms[i]->params, 0, ms[i]->n_flat, 0);
    const tandem_status end = tandem_dev_coll_group(devs[0], 0);
    if (st == TANDEM_OK) st = end;
    for (int i = 0; i < n; i++) {
        if (st != TANDEM_OK) dps[i]->failed = 1;
        ms[i]->wcopy_stale = 1; /* bf16: the GEMMs' copy follows the broadcast masters */
    }
    if (st == TANDEM_OK)
        tandem_logf(TANDEM_LOG_INFO, "data-parallel: %d model devices of this process joined; parameters from "
                    "replica 0", n);
    return st;
}

/* ---- gradient buckets ------------------------------------------------------------------------- */

/* The pending bucket queued on the communication stream after the model stream's work so far
 * (nothing runs when counting). f32: each range all-reduced in place; bf16: the ranges cast
 * into wire one after the other, one all-reduce, widened back. */
static tandem_status flush(tandem_dp *dp, tandem_stream *s) {
    if (dp->pend_n == 0) return TANDEM_OK;
    const int np = dp->n_pend;
    const int64_t total = dp->pend_n;
    dp->flushed++;
    if (total > dp->largest) dp->largest = total;
    dp->n_pend = 0, dp->pend_n = 0;
    if (dp->counting) return TANDEM_OK;
    const int64_t *r = dp->pend;
    TANDEM_TRY(tandem_stream_order(dp->cs, s, dp->fork)); /* a graph capture of s: cs forks into it */
    dp->forked = 1;
    const tandem_tensor *g = dp->m->grads;
    if (!dp->bf16) {
        for (int i = 0; i < np; i++)
            TANDEM_TRY(failed(dp, tandem_dev_all_reduce_sum(dp->coll, dp->cs, g, r[2 * i], r[2 * i + 1] - r[2 * i])));
        return TANDEM_OK;
    }
    tandem_bf16 *w = tandem_tensor_bf16(dp->wire);
    for (int64_t i = 0, at = 0; i < np; at += r[2 * i + 1] - r[2 * i], i++)
        TANDEM_TRY(tandem_cast_f32_bf16(dp->cs, tandem_tensor_f32_at(g, r[2 * i]), w + at, r[2 * i + 1] - r[2 * i]));
    TANDEM_TRY(failed(dp, tandem_dev_all_reduce_sum(dp->coll, dp->cs, dp->wire, 0, total)));
    for (int64_t i = 0, at = 0; i < np; at += r[2 * i + 1] - r[2 * i], i++)
        TANDEM_TRY(tandem_cast_bf16_f32(dp->cs, w + at, tandem_tensor_f32_at(g, r[2 * i]), r[2 * i + 1] - r[2 * i]));
    return TANDEM_OK;
}

/* [b, e) into the pending bucket: merged with an adjacent range, else a new one. */
static void add_range(tandem_dp *dp, int64_t b, int64_t e) {
    dp->pend_n += e - b;
    for (int i = 0; i < dp->n_pend; i++) {
        int64_t *p = &dp->pend[2 * i];
        if (p[1] == b) { p[1] = e; return; }
        if (p[0] == e) { p[0] = b; return; }
    }
    dp->pend[2 * dp->n_pend] = b, dp->pend[2 * dp->n_pend + 1] = e;
    dp->n_pend++;
}

/* The model's hook (tandem_model_grads_final_fn): [first, first + count) is final; every full
 * bucket is queued at once. A range longer than a bucket is split. */
static tandem_status on_final(void *ctx, tandem_stream *s, int64_t first, int64_t count) {
    tandem_dp *dp = ctx;
    while (count > 0) {
        if (dp->n_pend == TANDEM_DP_PENDING) TANDEM_TRY(flush(dp, s));
        const int64_t take = count < dp->cap - dp->pend_n ? count : dp->cap - dp->pend_n;
        add_range(dp, first, first + take);
        first += take, count -= take;
        if (dp->pend_n == dp->cap) TANDEM_TRY(flush(dp, s));
    }
    return TANDEM_OK;
}

/* Every stage's ranges through the bucketer, as the backward would report them. */
static tandem_status walk_stages(tandem_dp *dp, tandem_stream *s) {
    for (int k = 0; k < tandem_model_grad_stages(dp->m); k++)
        TANDEM_TRY(tandem_model_grad_stage(dp->m, k, on_final, dp, s));
    return TANDEM_OK;
}

tandem_status tandem_dp_plan(tandem_dp *dp, tandem_model *m, tandem_pool *pool, double bucket_mb, int bf16) {
    if (dp->world <= 1) return TANDEM_OK;
    dp->m = m, dp->bf16 = bf16 != 0;
    const double elems = bucket_mb * 1048576.0 / (dp->bf16 ? 2.0 : 4.0);
    dp->cap = elems < 1.0 ? 1 : elems > (double)m->n_flat ? m->n_flat : (int64_t)elems;
    dp->counting = 1; /* the same walk as a step's, counting */
    TANDEM_TRY(walk_stages(dp, NULL));
    TANDEM_TRY(flush(dp, NULL));
    dp->counting = 0;
    dp->n_buckets = dp->flushed, dp->flushed = 0;
    TANDEM_TRY(tandem_stream_create(dp->dev, &dp->cs));
    TANDEM_TRY(tandem_event_create(dp->dev, &dp->fork));
    TANDEM_TRY(tandem_event_create(dp->dev, &dp->join));
    if (dp->bf16)
        TANDEM_TRY(tandem_pool_declare(pool, "dp.grad_bf16", TANDEM_BF16, 1, &dp->cap, TANDEM_PERSISTENT, 0, 0,
                                       &dp->wire));
    const int es = dp->bf16 ? 2 : 4;
    tandem_logf(TANDEM_LOG_INFO, "data-parallel: %d buckets of ≤ %.4g MB, %s (MiB; largest %.4g; %" PRId64
                " gradients), all-reduced while the backward runs", dp->n_buckets,
                (double)(dp->cap * es) / 1048576.0, dp->bf16 ? "bf16" : "f32", (double)(dp->largest * es) / 1048576.0,
                m->n_flat);
    return TANDEM_OK;
}

void tandem_dp_backward_begin(tandem_dp *dp) {
    if (dp->world <= 1) return;
    dp->m->grads_final = on_final, dp->m->grads_final_ctx = dp;
    dp->armed = 1;
}

tandem_status tandem_dp_reduce(tandem_dp *dp, tandem_stream *s, tandem_model *m) {
    if (dp->world <= 1) return TANDEM_OK;
    m->grads_final = NULL, m->grads_final_ctx = NULL;
    if (!dp->armed) TANDEM_TRY(walk_stages(dp, s)); /* not during the backward: every bucket now */
    dp->armed = 0;
    TANDEM_TRY(flush(dp, s));
    if (dp->flushed != dp->n_buckets)
        return tandem_fail(TANDEM_E_STATE, "data-parallel: %d gradient buckets this step; planned %d", dp->flushed,
                           dp->n_buckets);
    dp->flushed = 0;
    if (dp->forked) { /* the update waits for the last bucket */
        TANDEM_TRY(tandem_stream_order(s, dp->cs, dp->join)); /* and joins it back */
        dp->forked = 0;
    }
    const int64_t nl = TANDEM_MODEL_LOSSES * (int64_t)m->dims.micro_batches; /* losses [A, 3] */
    TANDEM_TRY(failed(dp, tandem_dev_all_reduce_sum(dp->coll, s, m->losses, 0, nl)));
    /* the mean over the world's micro-batches: each rank's fill_result divides by A */
    return tandem_scale_f32(s, tandem_tensor_f32(m->losses), nl, 1.0f / (float)dp->world);
}

tandem_status tandem_dp_agree(tandem_dp *dp, tandem_stream *s, int local, int *stop) {
    *stop = local != 0;
    if (dp->world <= 1) return TANDEM_OK;
    const float v = local ? 1.0f : 0.0f;
    float sum = 0;
    TANDEM_TRY(tandem_dev_upload(s, dp->vote, 0, &v, sizeof v));
    TANDEM_TRY(failed(dp, tandem_dev_all_reduce_sum(dp->coll, s, dp->vote, 0, 1)));
    TANDEM_TRY(tandem_dev_download(s, &sum, dp->vote, 0, sizeof sum));
    TANDEM_TRY(tandem_stream_sync(s));
    TANDEM_TRY(failed(dp, tandem_dev_coll_check(dp->dev, dp->coll)));
    *stop = sum > 0.0f;
    return TANDEM_OK;
}

tandem_sampler_pos tandem_dp_step_pos(const tandem_dp *dp, int64_t steps, int64_t chunk, uint32_t n_items) {
    tandem_sampler_pos p = dp->start;
    const int64_t n = (int64_t)n_items;
    const int64_t add = steps * (dp->world > 1 ? dp->world : 1) * chunk + p.index;
    p.epoch += add / n;
    p.index = add % n;
    return p;
}

void tandem_dp_close(tandem_dp *dp, int failed_run) {
    if (dp->coll) tandem_dev_coll_close(dp->dev, dp->coll, dp->failed || failed_run);
    dp->coll = NULL;
    if (dp->m) dp->m->grads_final = NULL;
    if (dp->fork) tandem_event_destroy(dp->fork);
    if (dp->join) tandem_event_destroy(dp->join);
    if (dp->cs) tandem_stream_destroy(dp->cs);
    dp->fork = dp->join = NULL, dp->cs = NULL;
}

tandem_status tandem_dp_check_resume(const tandem_st_file *f, const char *path, int world, int force) {
    const char *v = tandem_st_meta_find(f, TANDEM_DP_KEY_WORLD_SIZE);
    const long was = v ? strtol(v, NULL, 10) : 1;
    const int now = world > 1 ? world : 1;
    if (was == now) return TANDEM_OK;
    if (!force)
        return tandem_fail(TANDEM_E_INVALID, "resume %s: trained on %ld rank%s, now %d: the global batch (ranks x "
                           "grad_accum x batch_size) and the data order would change; resume on %ld rank%s, or "
                           "pass --force-resume to go on with %d", path, was, was == 1 ? "" : "s", now, was,
                           was == 1 ? "" : "s", now);
    tandem_logf(TANDEM_LOG_WARN, "resume %s: trained on %ld rank%s, now %d (--force-resume): the global batch and "
                "the data order change from here", path, was, was == 1 ? "" : "s", now);
    return TANDEM_OK;
}
