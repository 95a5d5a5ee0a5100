/* train_step.c — one optimizer step (see train_step.h). */
#include "runtime/model/train_step.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "platform/os/log.h"
#include "runtime/model/launchers.h"

#define F32(t) tandem_tensor_f32(t)

void tandem_optim_from_config(const tandem_config *cfg, tandem_optim *o) {
    memset(o, 0, sizeof *o);
    o->lr = cfg->lr;
    o->min_lr_ratio = cfg->min_lr_ratio;
    o->warmup_steps = cfg->warmup_steps;
    o->max_steps = cfg->max_steps;
    o->beta1 = (float)cfg->adam_beta1;
    o->beta2 = (float)cfg->adam_beta2;
    o->eps = (float)cfg->adam_eps;
    o->weight_decay = (float)cfg->weight_decay;
    o->clip_norm = (float)cfg->grad_clip;
    o->stop_weight = (float)cfg->stop_loss_weight;
    o->prenet_dropout = (float)cfg->prenet_dropout;
    o->seed = (uint64_t)cfg->seed;
    o->ga_weight = (float)cfg->ga_weight;
    o->ga_sigma = (float)cfg->ga_sigma;
    o->ga_heads = cfg->ga_weight > 0.0 ? cfg->ga_heads : 0;
}

double tandem_optim_lr(const tandem_optim *o, int64_t step) {
    return tandem_k_train_lr(o->lr, o->min_lr_ratio, o->warmup_steps, o->max_steps, step);
}

tandem_status tandem_train_state_put(tandem_model *m, tandem_stream *s, const tandem_train_state *st) {
    if (!m || !s || !st) return tandem_fail(TANDEM_E_INVALID, "train state put: NULL argument");
    if (st->step < 0 || st->step > INT32_MAX || st->updates < 0 || st->skipped < 0 || st->skipped_in_row < 0)
        return tandem_fail(TANDEM_E_INVALID, "train state: step %" PRId64 " (updates %" PRId64 ", skipped %"
                           PRId64 "); expected 0 <= counts <= %d (the device keeps them as int32)",
                           st->step, st->updates, st->skipped, INT32_MAX);
    int32_t *c = m->host_skip + 1; /* [TANDEM_K_TRAIN_CTRS], pinned */
    c[TANDEM_K_TRAIN_CTR_STEP] = (int32_t)st->step;
    c[TANDEM_K_TRAIN_CTR_UPDATES] = (int32_t)st->updates;
    c[TANDEM_K_TRAIN_CTR_SKIPPED] = (int32_t)st->skipped;
    c[TANDEM_K_TRAIN_CTR_IN_ROW] = (int32_t)st->skipped_in_row;
    TANDEM_TRY(tandem_dev_upload(s, m->train_ctr, 0, c, TANDEM_K_TRAIN_CTRS * sizeof(int32_t)));
    return tandem_stream_sync(s); /* the pinned words are the read-back's too */
}

tandem_status tandem_train_begin(tandem_model *m, tandem_stream *s, const tandem_train_state *st) {
    if (!m || !s) return tandem_fail(TANDEM_E_INVALID, "train begin: NULL argument");
    m->drop.step = st ? st->step : 0; /* checkpointed: a resumed run draws the same masks */
    /* With a state, the mask's step is read from the device's counter when the kernel runs
     * (train_state_put wrote st there; train_schedule advances it), so a replayed graph draws
     * each step's own mask. */
    m->drop.step_at = st ? tandem_tensor_i32(m->train_ctr) : NULL;
    return tandem_op_fill(s, m->grads, 0.0f);
}

tandem_status tandem_train_micro(tandem_model *m, tandem_stream *s, const tandem_optim *o,
                                 const tandem_model_batch *b, int i) {
    if (!m || !s || !o || !b) return tandem_fail(TANDEM_E_INVALID, "train micro-batch: NULL argument");
    if (i < 0 || i >= m->dims.micro_batches)
        return tandem_fail(TANDEM_E_INVALID, "train micro-batch %d; expected 0..%d (grad_accum)", i,
                           m->dims.micro_batches - 1);
    m->drop.p = o->prenet_dropout;
    m->drop.seed = o->seed;
    const int world = o->dp_world > 1 ? o->dp_world : 1;
    m->drop.micro = (world > 1 ? o->dp_rank * m->dims.micro_batches : 0) + i;
    m->ga.heads = o->ga_heads, m->ga.sigma = o->ga_sigma, m->ga.weight = o->ga_weight;
    TANDEM_TRY(tandem_model_forward(m, s, b, i));
    /* Each micro-batch's loss is scaled by 1/(grad_accum * ranks): the gradients summed over
     * micro-batches (and ranks) are those of the mean loss. */
    TANDEM_TRY(tandem_model_loss(m, s, b, i, o->stop_weight, 1.0f / (float)(m->dims.micro_batches * world)));
    return tandem_model_backward(m, s, b);
}

/* norm_sq = sum of grads^2 (one partial per chunk, reduced in a fixed order); skip = 1 when it
 * is not finite or a micro-batch loss is not. */
static tandem_status grad_norm(tandem_model *m, tandem_stream *s, const tandem_optim *o) {
    int *skip = tandem_tensor_i32(m->skip); /* [1] */
    for (int i = 0; i < o->n_frozen; i++) /* frozen: no gradient */
        TANDEM_TRY(tandem_fill_f32(s, tandem_tensor_f32_at(m->grads, o->frozen[2 * i]),
                                   o->frozen[2 * i + 1] - o->frozen[2 * i], 0.0f));
    /* norm_sq [1] = sum of grads [P]^2 */
    TANDEM_TRY(tandem_sum_squares(s, F32(m->grads), F32(m->norm_partials), m->n_flat));
    TANDEM_TRY(tandem_reduce_sum(s, F32(m->norm_partials), F32(m->norm_sq), skip,
                                 tandem_k_train_partials(m->n_flat), 1.0f));
    /* the micro-batches' losses [A, 3] (not the evaluation row) */
    return tandem_nonfinite_check(s, F32(m->losses), skip,
                                  TANDEM_MODEL_LOSSES * (int64_t)m->dims.micro_batches);
}

/* Queue the copies of losses, norm_sq, skip and the counters into the pinned host block
 * (asynchronous: read after a synchronisation). */
static tandem_status queue_results(tandem_model *m, tandem_stream *s) {
    const int nl = TANDEM_MODEL_LOSSES * (m->dims.micro_batches + 1);
    TANDEM_TRY(tandem_dev_download(s, m->host_out, m->losses, 0, (size_t)nl * sizeof(float)));
    TANDEM_TRY(tandem_dev_download(s, m->host_out + nl, m->norm_sq, 0, sizeof(float)));
    TANDEM_TRY(tandem_dev_download(s, m->host_skip, m->skip, 0, sizeof(int32_t)));
    return tandem_dev_download(s, m->host_skip + 1, m->train_ctr, 0, TANDEM_K_TRAIN_CTRS * sizeof(int32_t));
}

/* ... and wait for them. */
static tandem_status read_back(tandem_model *m, tandem_stream *s) {
    TANDEM_TRY(queue_results(m, s));
    return tandem_stream_sync(s);
}

static void fill_result(const tandem_model *m, const tandem_optim *o, tandem_step_result *r) {
    const int A = m->dims.micro_batches;
    const int K = TANDEM_MODEL_LOSSES;
    double l1 = 0.0, bce = 0.0, ga = 0.0;
    for (int i = 0; i < A; i++) {
        l1 += m->host_out[K * i];
        bce += m->host_out[K * i + 1];
        ga += m->host_out[K * i + 2];
    }
    r->l1 = l1 / A;
    r->stop_bce = bce / A;
    r->ga = ga / A;
    r->loss = r->l1 + (double)o->stop_weight * r->stop_bce + (double)o->ga_weight * r->ga;
    r->grad_norm = sqrt((double)m->host_out[K * (A + 1)]);
    r->skipped = m->host_skip[0] != 0;
}

static tandem_status adamw_span(tandem_model *m, tandem_stream *s, const tandem_optim *o,
                                int64_t begin, int64_t end, float wd) {
    if (end <= begin) return TANDEM_OK;
    /* lr and the bias corrections come from the device (sched, written by train_schedule) */
    const tandem_adamw_hyper h = {0.0f, o->beta1, o->beta2, o->eps, wd, 1.0f, 1.0f, o->clip_norm,
                                  tandem_tensor_f32(m->sched)};
    /* params, m, v [begin, end) from grads [begin, end) */
    return tandem_adamw(s, tandem_tensor_f32_at(m->params, begin),
                        tandem_tensor_f32_at(m->grads, begin),
                        tandem_tensor_f32_at(m->adam_m, begin),
                        tandem_tensor_f32_at(m->adam_v, begin), F32(m->norm_sq),
                        tandem_tensor_i32(m->skip), end - begin, &h);
}

/* adamw_span over [begin, end) less the frozen ranges. */
static tandem_status adamw_trainable(tandem_model *m, tandem_stream *s, const tandem_optim *o, int64_t begin,
                                     int64_t end, float wd) {
    int64_t at = begin;
    for (int i = 0; i < o->n_frozen && at < end; i++) {
        const int64_t fb = o->frozen[2 * i], fe = o->frozen[2 * i + 1];
        if (fe <= at) continue;
        if (fb >= end) break;
        TANDEM_TRY(adamw_span(m, s, o, at, fb, wd));
        at = fe;
    }
    return adamw_span(m, s, o, at, end, wd);
}

tandem_status tandem_train_update(tandem_model *m, tandem_stream *s, const tandem_optim *o,
                                  const tandem_train_state *st) {
    if (!m || !s || !o || !st) return tandem_fail(TANDEM_E_INVALID, "train update: NULL argument");
    TANDEM_TRY(grad_norm(m, s, o));
    /* sched [3] = lr(step), 1 - beta1^t, 1 - beta2^t with t = updates + 1, from the device's
     * counters; then the counters advance (a skipped step leaves the moments and t alone) */
    const tandem_schedule_hyper sh = {o->lr, o->min_lr_ratio, o->warmup_steps, o->max_steps, o->beta1, o->beta2};
    TANDEM_TRY(tandem_train_schedule(s, F32(m->norm_sq), tandem_tensor_i32(m->skip),
                                     tandem_tensor_i32(m->train_ctr), F32(m->sched), &sh));
    TANDEM_TRY(adamw_trainable(m, s, o, 0, m->decay_end, o->weight_decay));
    TANDEM_TRY(adamw_trainable(m, s, o, m->decay_end, m->n_flat, 0.0f));
    /* bf16 mode: the GEMMs' weight copy follows the f32 masters once per update (a skipped
     * update leaves the masters, so the cast reproduces the same copy) */
    TANDEM_TRY(tandem_model_cast_weights(m, s));
    return queue_results(m, s); /* read when the caller collects */
}

tandem_status tandem_train_collect(tandem_model *m, tandem_stream *s, const tandem_optim *o,
                                   tandem_train_state *st, tandem_step_result *out) {
    if (!m || !s || !o || !st) return tandem_fail(TANDEM_E_INVALID, "train collect: NULL argument");
    TANDEM_TRY(tandem_stream_sync(s)); /* update() queued the copies */
    tandem_step_result r;
    memset(&r, 0, sizeof r);
    fill_result(m, o, &r);
    const int32_t *c = m->host_skip + 1;
    st->step = c[TANDEM_K_TRAIN_CTR_STEP];
    st->updates = c[TANDEM_K_TRAIN_CTR_UPDATES];
    st->skipped = c[TANDEM_K_TRAIN_CTR_SKIPPED];
    st->skipped_in_row = c[TANDEM_K_TRAIN_CTR_IN_ROW];
    r.step = st->step - 1; /* the last step the device took */
    r.lr = tandem_optim_lr(o, r.step);
    if (out) *out = r;
    return TANDEM_OK;
}

tandem_status tandem_train_finish(tandem_model *m, tandem_stream *s, const tandem_optim *o,
                                  tandem_train_state *st, tandem_step_result *out) {
    TANDEM_TRY(tandem_train_update(m, s, o, st));
    return tandem_train_collect(m, s, o, st, out);
}

tandem_status tandem_train_step(tandem_model *m, tandem_stream *s, const tandem_optim *o,
                                tandem_train_state *st, const tandem_model_batch *batches,
                                tandem_step_result *out) {
    if (!batches) return tandem_fail(TANDEM_E_INVALID, "train step: batches is NULL");
    if (!st) return tandem_fail(TANDEM_E_INVALID, "train step: state is NULL");
    TANDEM_TRY(tandem_train_state_put(m, s, st)); /* the device counters follow the caller's state */
    TANDEM_TRY(tandem_train_begin(m, s, st));
    for (int i = 0; i < m->dims.micro_batches; i++)
        TANDEM_TRY(tandem_train_micro(m, s, o, &batches[i], i));
    return tandem_train_finish(m, s, o, st, out);
}

tandem_status tandem_train_grads(tandem_model *m, tandem_stream *s, const tandem_optim *o,
                                 const tandem_model_batch *batches, tandem_step_result *out) {
    if (!batches) return tandem_fail(TANDEM_E_INVALID, "train grads: batches is NULL");
    TANDEM_TRY(tandem_train_begin(m, s, NULL));
    for (int i = 0; i < m->dims.micro_batches; i++)
        TANDEM_TRY(tandem_train_micro(m, s, o, &batches[i], i));
    TANDEM_TRY(grad_norm(m, s, o));
    TANDEM_TRY(read_back(m, s));
    if (out) {
        memset(out, 0, sizeof *out);
        fill_result(m, o, out);
    }
    return TANDEM_OK;
}

tandem_status tandem_train_eval(tandem_model *m, tandem_stream *s, const tandem_optim *o,
                                const tandem_model_batch *b, double *l1, double *stop_bce) {
    if (!m || !s || !o || !b) return tandem_fail(TANDEM_E_INVALID, "train eval: NULL argument");
    const int slot = m->dims.micro_batches; /* the evaluation row of losses */
    m->drop.p = 0.0f; /* evaluation: no dropout, as at synthesis */
    m->ga.heads = 0;  /* nor the guided-attention term (the validation logs l1 and stop bce) */
    TANDEM_TRY(tandem_model_forward(m, s, b, slot));
    TANDEM_TRY(tandem_model_loss(m, s, b, slot, o->stop_weight, 0.0f));
    TANDEM_TRY(read_back(m, s));
    if (l1) *l1 = m->host_out[TANDEM_MODEL_LOSSES * slot];
    if (stop_bce) *stop_bce = m->host_out[TANDEM_MODEL_LOSSES * slot + 1];
    return TANDEM_OK;
}
