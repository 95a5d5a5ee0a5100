/* launchers.c — the typed launchers of the model's kernels (see launchers.h). */
#include "runtime/model/launchers.h"

#include <math.h>

#include "platform/os/log.h"

/* ---- layers --------------------------------------------------------------------------------- */

tandem_status tandem_layernorm_fwd(tandem_stream *s, const float *x, const float *gamma,
                                   const float *beta, float *y, tandem_bf16 *y16, float *mean,
                                   float *rstd, int rows, int d) {
    TANDEM_KARGS(layernorm_fwd, a);
    a.x = x, a.gamma = gamma, a.beta = beta, a.y = y, a.y16 = y16, a.mean = mean, a.rstd = rstd;
    a.rows = rows, a.d = d, a.eps = TANDEM_LAYERNORM_EPS;
    return TANDEM_LAUNCH(s, layernorm_fwd, &a);
}

tandem_status tandem_layernorm_bwd(tandem_stream *s, const float *dy, const tandem_bf16 *dy16,
                                   const float *x, const float *mean, const float *rstd,
                                   const float *gamma, float *dx, tandem_bf16 *dx16, int accumulate,
                                   float *scratch, int rows, int d) {
    TANDEM_KARGS(layernorm_bwd, a);
    a.dy = dy, a.dy16 = dy16, a.x = x, a.mean = mean, a.rstd = rstd, a.gamma = gamma, a.dx = dx, a.dx16 = dx16;
    a.accumulate = accumulate;
    a.scratch = scratch, a.rows = rows, a.d = d;
    return TANDEM_LAUNCH(s, layernorm_bwd, &a);
}

tandem_status tandem_layernorm_bwd_params(tandem_stream *s, const float *scratch, float *dgamma,
                                          float *dbeta, float *dbias, int rows, int d) {
    TANDEM_KARGS(layernorm_bwd_params, a);
    a.scratch = scratch, a.dgamma = dgamma, a.dbeta = dbeta, a.dbias = dbias, a.rows = rows, a.d = d;
    return TANDEM_LAUNCH(s, layernorm_bwd_params, &a);
}

tandem_status tandem_gelu_fwd(tandem_stream *s, const float *x, float *y, tandem_bf16 *y16,
                              int64_t n) {
    TANDEM_KARGS(gelu_fwd, a);
    a.x = x, a.y = y, a.y16 = y16, a.n = n;
    return TANDEM_LAUNCH(s, gelu_fwd, &a);
}

tandem_status tandem_gelu_bwd(tandem_stream *s, const float *dy, const float *x, float *dx,
                              tandem_bf16 *dx16, int64_t n) {
    TANDEM_KARGS(gelu_bwd, a);
    a.dy = dy, a.x = x, a.dx = dx, a.dx16 = dx16, a.n = n;
    return TANDEM_LAUNCH(s, gelu_bwd, &a);
}

tandem_status tandem_prenet_dropout(tandem_stream *s, float *x, int64_t n, float p, uint64_t seed,
                                    int64_t step, const int *step_at, int64_t micro) {
    TANDEM_KARGS(prenet_dropout, a);
    a.x = x, a.n = n, a.p = p, a.scale = 1.0f / (1.0f - p), a.seed = seed, a.step = step, a.micro = micro;
    a.step_at = step_at;
    return TANDEM_LAUNCH(s, prenet_dropout, &a);
}

tandem_status tandem_bias_add(tandem_stream *s, float *y, const float *b, int rows, int d) {
    TANDEM_KARGS(bias_add, a);
    a.y = y, a.b = b, a.rows = rows, a.d = d;
    return TANDEM_LAUNCH(s, bias_add, &a);
}

tandem_status tandem_col_sum_acc(tandem_stream *s, const float *dy, float *db, int rows, int d) {
    TANDEM_KARGS(col_sum_acc, a);
    a.dy = dy, a.db = db, a.rows = rows, a.d = d;
    return TANDEM_LAUNCH(s, col_sum_acc, &a);
}

tandem_status tandem_mel_rows_pad(tandem_stream *s, const float *src, float *dst, int batch,
                                  int text_len, int mel_len, int d) {
    TANDEM_KARGS(mel_rows_pad, a);
    a.src = src, a.dst = dst, a.batch = batch, a.text_len = text_len, a.mel_len = mel_len, a.d = d;
    return TANDEM_LAUNCH(s, mel_rows_pad, &a);
}

tandem_status tandem_mel_rows_take(tandem_stream *s, const float *src, float *dst, const tandem_bf16 *src16,
                                   tandem_bf16 *dst16, int batch, int text_len, int mel_len, int d) {
    if ((dst != NULL) == (dst16 != NULL) || (dst && !src) || (dst16 && !src16))
        return tandem_fail(TANDEM_E_INVALID, "mel_rows_take: give exactly one of the f32 and bf16 pairs");
    TANDEM_KARGS(mel_rows_take, a);
    a.src = src, a.dst = dst, a.src16 = src16, a.dst16 = dst16;
    a.batch = batch, a.text_len = text_len, a.mel_len = mel_len, a.d = d;
    return TANDEM_LAUNCH(s, mel_rows_take, &a);
}

tandem_status tandem_seq_embed_fwd(tandem_stream *s, const int32_t *tokens, const float *sym_emb,
                                   const float *prenet_out, const float *pos_emb, float *x,
                                   const tandem_seq_dims *sd) {
    TANDEM_KARGS(seq_embed_fwd, a);
    a.tokens = tokens, a.sym_emb = sym_emb, a.prenet_out = prenet_out, a.pos_emb = pos_emb;
    a.x = x, a.batch = sd->batch, a.text_len = sd->text_len, a.mel_len = sd->mel_len;
    a.vocab = sd->vocab, a.d = sd->d;
    return TANDEM_LAUNCH(s, seq_embed_fwd, &a);
}

tandem_status tandem_seq_embed_bwd(tandem_stream *s, const float *dx, const int32_t *tokens,
                                   float *d_sym_emb, float *d_pos_emb, float *d_prenet_out,
                                   const tandem_seq_dims *sd) {
    TANDEM_KARGS(seq_embed_bwd, a);
    a.dx = dx, a.tokens = tokens, a.d_sym_emb = d_sym_emb, a.d_pos_emb = d_pos_emb;
    a.d_prenet_out = d_prenet_out, a.batch = sd->batch, a.text_len = sd->text_len;
    a.mel_len = sd->mel_len, a.vocab = sd->vocab, a.d = sd->d;
    return TANDEM_LAUNCH(s, seq_embed_bwd, &a);
}

tandem_status tandem_prenet_input(tandem_stream *s, const float *mels, float *groups,
                                  tandem_bf16 *groups16, int batch, int mel_len, int r, int n_mels) {
    TANDEM_KARGS(prenet_input, a);
    a.mels = mels, a.groups = groups, a.groups16 = groups16, a.batch = batch, a.mel_len = mel_len, a.r = r;
    a.n_mels = n_mels;
    return TANDEM_LAUNCH(s, prenet_input, &a);
}

/* ---- batch preparation ---------------------------------------------------------------------- */

tandem_status tandem_batch_prep(tandem_stream *s, const int32_t *text_lengths,
                                const int32_t *frame_lengths, const float *frame_mask,
                                uint8_t *key_mask, float *l1_weight, const tandem_batch_dims *bd) {
    TANDEM_KARGS(batch_prep, a);
    a.text_lengths = text_lengths, a.frame_lengths = frame_lengths, a.frame_mask = frame_mask;
    a.key_mask = key_mask, a.l1_weight = l1_weight, a.batch = bd->batch;
    a.text_len = bd->text_len, a.mel_len = bd->mel_len, a.r = bd->r, a.frames = bd->frames;
    a.channels = bd->channels;
    return TANDEM_LAUNCH(s, batch_prep, &a);
}

/* ---- losses, norm, optimizer ---------------------------------------------------------------- */

tandem_status tandem_l1_masked_fwd(tandem_stream *s, const float *pred, const float *target,
                                   const float *mask, float *partials, int batch, int frames,
                                   int channels) {
    TANDEM_KARGS(l1_masked_fwd, a);
    a.pred = pred, a.target = target, a.mask = mask, a.partials = partials;
    a.batch = batch, a.frames = frames, a.channels = channels;
    return TANDEM_LAUNCH(s, l1_masked_fwd, &a);
}

tandem_status tandem_l1_masked_bwd(tandem_stream *s, const float *pred, const float *target,
                                   const float *mask, float *dpred, int batch, int frames,
                                   int channels, float scale) {
    TANDEM_KARGS(l1_masked_bwd, a);
    a.pred = pred, a.target = target, a.mask = mask, a.dpred = dpred;
    a.batch = batch, a.frames = frames, a.channels = channels, a.scale = scale;
    return TANDEM_LAUNCH(s, l1_masked_bwd, &a);
}

tandem_status tandem_bce_stop_fwd(tandem_stream *s, const float *logits, const float *target,
                                  const float *weight, float *partials, int batch, int frames) {
    TANDEM_KARGS(bce_stop_fwd, a);
    a.logits = logits, a.target = target, a.weight = weight, a.partials = partials;
    a.batch = batch, a.frames = frames;
    return TANDEM_LAUNCH(s, bce_stop_fwd, &a);
}

tandem_status tandem_bce_stop_bwd(tandem_stream *s, const float *logits, const float *target,
                                  const float *weight, float *dlogits, int batch, int frames,
                                  float scale) {
    TANDEM_KARGS(bce_stop_bwd, a);
    a.logits = logits, a.target = target, a.weight = weight, a.dlogits = dlogits;
    a.batch = batch, a.frames = frames, a.scale = scale;
    return TANDEM_LAUNCH(s, bce_stop_bwd, &a);
}

tandem_status tandem_sum_squares(tandem_stream *s, const float *x, float *partials, int64_t n) {
    TANDEM_KARGS(sum_squares, a);
    a.x = x, a.partials = partials, a.n = n;
    return TANDEM_LAUNCH(s, sum_squares, &a);
}

tandem_status tandem_reduce_sum(tandem_stream *s, const float *partials, float *out, int *nonfinite,
                                int64_t n, float scale) {
    TANDEM_KARGS(reduce_sum, a);
    a.partials = partials, a.out = out, a.nonfinite = nonfinite, a.n = n, a.scale = scale;
    return TANDEM_LAUNCH(s, reduce_sum, &a);
}

tandem_status tandem_nonfinite_check(tandem_stream *s, const float *x, int *flag, int64_t n) {
    TANDEM_KARGS(nonfinite_check, a);
    a.x = x, a.flag = flag, a.n = n;
    return TANDEM_LAUNCH(s, nonfinite_check, &a);
}

tandem_status tandem_adamw(tandem_stream *s, float *param, const float *grad, float *m, float *v,
                           const float *norm_sq, const int *skip, int64_t n,
                           const tandem_adamw_hyper *h) {
    TANDEM_KARGS(adamw, a);
    a.param = param, a.grad = grad, a.m = m, a.v = v, a.norm_sq = norm_sq, a.skip = skip;
    a.n = n, a.lr = h->lr, a.beta1 = h->beta1, a.beta2 = h->beta2, a.eps = h->eps;
    a.weight_decay = h->weight_decay, a.bias1 = h->bias1, a.bias2 = h->bias2;
    a.max_norm = h->max_norm, a.sched = h->sched;
    return TANDEM_LAUNCH(s, adamw, &a);
}

tandem_status tandem_train_schedule(tandem_stream *s, const float *norm_sq, const int *skip, int *ctr,
                                    float *sched, const tandem_schedule_hyper *h) {
    TANDEM_KARGS(train_schedule, a);
    a.norm_sq = norm_sq, a.skip = skip, a.ctr = ctr, a.sched = sched;
    a.lr = h->lr, a.min_lr_ratio = h->min_lr_ratio, a.warmup_steps = h->warmup_steps;
    a.max_steps = h->max_steps, a.beta1 = h->beta1, a.beta2 = h->beta2;
    return TANDEM_LAUNCH(s, train_schedule, &a);
}

/* ---- attention ------------------------------------------------------------------------------ */

/* The four sizes every head-layout kernel takes, in its own argument struct. */
#define HEADS_DIMS(a, hd)                                                                 \
    ((a).batch = (hd)->batch, (a).seq = (hd)->seq, (a).heads = (hd)->heads,               \
     (a).head_dim = (hd)->head_dim)

tandem_status tandem_qkv_split(tandem_stream *s, const float *qkv, float *q, float *k, float *v,
                               tandem_bf16 *q16, tandem_bf16 *k16, tandem_bf16 *v16,
                               const tandem_heads_dims *hd) {
    TANDEM_KARGS(qkv_split, a);
    a.qkv = qkv, a.q = q, a.k = k, a.v = v, HEADS_DIMS(a, hd);
    a.q16 = q16, a.k16 = k16, a.v16 = v16;
    return TANDEM_LAUNCH(s, qkv_split, &a);
}

tandem_status tandem_qkv_merge_grad(tandem_stream *s, const float *dq, const float *dk,
                                    const float *dv, float *dqkv, tandem_bf16 *dqkv16,
                                    const tandem_heads_dims *hd) {
    TANDEM_KARGS(qkv_merge_grad, a);
    a.dq = dq, a.dk = dk, a.dv = dv, a.dqkv = dqkv, a.dqkv16 = dqkv16, HEADS_DIMS(a, hd);
    return TANDEM_LAUNCH(s, qkv_merge_grad, &a);
}

tandem_status tandem_heads_merge(tandem_stream *s, const float *o, float *y, tandem_bf16 *y16,
                                 const tandem_heads_dims *hd) {
    TANDEM_KARGS(heads_merge, a);
    a.o = o, a.y = y, a.y16 = y16, HEADS_DIMS(a, hd);
    return TANDEM_LAUNCH(s, heads_merge, &a);
}

tandem_status tandem_heads_split_grad(tandem_stream *s, const float *dy, float *d_o,
                                      tandem_bf16 *d_o16, const tandem_heads_dims *hd) {
    TANDEM_KARGS(heads_split_grad, a);
    a.dy = dy, a.d_o = d_o, a.d_o16 = d_o16, HEADS_DIMS(a, hd);
    return TANDEM_LAUNCH(s, heads_split_grad, &a);
}

tandem_status tandem_softmax_causal_fwd(tandem_stream *s, const float *scores,
                                        const uint8_t *key_mask, void *p, int bf16,
                                        const tandem_heads_dims *hd, int q0, int nq) {
    if (q0 < 0 || nq < 1 || q0 + nq > hd->seq)
        return tandem_fail(TANDEM_E_INVALID, "softmax_causal_fwd: query rows %d..%d; expected "
                           "within 0..%d", q0, q0 + nq - 1, hd->seq - 1);
    TANDEM_KARGS(softmax_causal_fwd, a);
    a.s = scores, a.key_mask = key_mask, a.p = p, a.bf16 = bf16;
    a.batch = hd->batch, a.heads = hd->heads, a.seq = hd->seq, a.q0 = q0, a.nq = nq;
    return TANDEM_LAUNCH(s, softmax_causal_fwd, &a);
}

tandem_status tandem_softmax_causal_bwd(tandem_stream *s, const float *dp, const void *p,
                                        void *ds, int bf16, const tandem_heads_dims *hd) {
    TANDEM_KARGS(softmax_causal_bwd, a);
    a.dp = dp, a.p = p, a.ds = ds, a.batch = hd->batch, a.heads = hd->heads, a.seq = hd->seq;
    a.bf16 = bf16;
    return TANDEM_LAUNCH(s, softmax_causal_bwd, &a);
}

tandem_status tandem_ga_fwd(tandem_stream *s, const void *p, int bf16, const uint8_t *key_mask, float *rows,
                            const tandem_ga_dims *g) {
    TANDEM_KARGS(ga_fwd, a);
    a.p = p, a.bf16 = bf16, a.key_mask = key_mask, a.rows = rows, a.batch = g->batch, a.heads = g->heads;
    a.ga_heads = g->ga_heads, a.text_len = g->text_len, a.mel_len = g->mel_len;
    a.sigma = g->sigma, a.scale = g->scale;
    return TANDEM_LAUNCH(s, ga_fwd, &a);
}

tandem_status tandem_ga_bwd(tandem_stream *s, float *dp, const uint8_t *key_mask,
                            const tandem_ga_dims *g) {
    TANDEM_KARGS(ga_bwd, a);
    a.dp = dp, a.key_mask = key_mask, a.batch = g->batch, a.heads = g->heads;
    a.ga_heads = g->ga_heads, a.text_len = g->text_len, a.mel_len = g->mel_len;
    a.sigma = g->sigma, a.scale = g->scale;
    return TANDEM_LAUNCH(s, ga_bwd, &a);
}

static void fa_common(int *batch, int *seq, int *heads, int *head_dim, int *ga_heads, int *text_len,
                      float *qk_scale, float *sigma, float *scale, const tandem_heads_dims *hd,
                      const tandem_ga_dims *ga) {
    *batch = hd->batch, *seq = hd->seq, *heads = hd->heads, *head_dim = hd->head_dim;
    *qk_scale = (float)(1.0 / sqrt((double)hd->head_dim));
    *ga_heads = ga ? ga->ga_heads : 0, *text_len = ga ? ga->text_len : 0;
    *sigma = ga ? ga->sigma : 0.0f, *scale = ga ? ga->scale : 0.0f;
}

tandem_status tandem_attn_fused_fwd(tandem_stream *s, const void *q, const void *k, const void *v,
                                    const uint8_t *key_mask, void *o, float *lse, float *ga_sum,
                                    float *ga_rows, const tandem_heads_dims *hd,
                                    const tandem_attn_layout *lay, const tandem_ga_dims *ga) {
    TANDEM_KARGS(attn_fused_fwd, a);
    a.q = q, a.k = k, a.v = v, a.key_mask = key_mask, a.o = o, a.lse = lse;
    a.ga_sum = ga_sum, a.ga_rows = ga_rows;
    fa_common(&a.batch, &a.seq, &a.heads, &a.head_dim, &a.ga_heads, &a.text_len, &a.qk_scale,
              &a.ga_sigma, &a.ga_scale, hd, ga);
    a.q0 = lay->q0, a.q_rows = lay->q_rows, a.ld_q = lay->ld_q, a.hs_q = lay->hs_q;
    a.ld_k = lay->ld_k, a.hs_k = lay->hs_k, a.ld_o = lay->ld_o, a.bf16 = lay->bf16;
    if (tandem_attn_tc_serves(hd, lay)) return TANDEM_LAUNCH(s, attn_tc_fwd, &a);
    return TANDEM_LAUNCH(s, attn_fused_fwd, &a);
}

int tandem_attn_tc_serves(const tandem_heads_dims *hd, const tandem_attn_layout *lay) {
    return lay->bf16 && lay->q0 == 0 && lay->q_rows == hd->seq && tandem_k_attn_tc_ok(hd->head_dim);
}

tandem_status tandem_attn_fused_bwd(tandem_stream *s, const tandem_attn_fused_bwd_io *io,
                                    const tandem_heads_dims *hd, const tandem_attn_layout *lay,
                                    const tandem_ga_dims *ga) {
    TANDEM_KARGS(attn_fused_bwd, a);
    a.q = io->q, a.k = io->k, a.v = io->v, a.key_mask = io->key_mask, a.o = io->o;
    a.dy = io->dy, a.lse = io->lse, a.ga_sum = io->ga_sum;
    a.dq = io->dq, a.dk = io->dk, a.dv = io->dv;
    fa_common(&a.batch, &a.seq, &a.heads, &a.head_dim, &a.ga_heads, &a.text_len, &a.qk_scale,
              &a.ga_sigma, &a.ga_scale, hd, ga);
    a.ld_q = lay->ld_q, a.ld_o = lay->ld_o, a.ld_g = lay->ld_g, a.bf16 = lay->bf16;
    const int tc = tandem_attn_tc_serves(hd, lay);
    if ((io->dq16 || io->dk16 || io->dv16) && !tc)
        return tandem_fail(TANDEM_E_INVALID, "fused attention backward: bf16 copies of dq, dk, dv "
                                             "come only from the tensor-core kernels (bf16, whole "
                                             "sequence, head size a multiple of 16 up to 64)");
    if (!tc && (!io->dq || !io->dk || !io->dv))
        return tandem_fail(TANDEM_E_INVALID, "fused attention backward: dq, dk or dv is NULL; only the "
                                             "tensor-core kernels may write just the bf16 copies");
    if (tc && ((!io->dq && !io->dq16) || (!io->dk && !io->dk16) || (!io->dv && !io->dv16)))
        return tandem_fail(TANDEM_E_INVALID, "fused attention backward: dq, dk or dv has neither an f32 "
                                             "nor a bf16 output");
    if (!tc) return TANDEM_LAUNCH(s, attn_fused_bwd, &a);
    TANDEM_KARGS(attn_tc_bwd, t);
    t.f = a, t.dq16 = io->dq16, t.dk16 = io->dk16, t.dv16 = io->dv16;
    return TANDEM_LAUNCH(s, attn_tc_bwd, &t);
}

/* ---- the bf16 seams ------------------------------------------------------------------------- */

float *tandem_seam_f32(int bf16, tandem_tensor *t) { return bf16 ? NULL : tandem_tensor_f32(t); }

tandem_bf16 *tandem_seam_bf16(int bf16, tandem_tensor *t) {
    return bf16 ? tandem_tensor_bf16(t) : NULL;
}

float *tandem_seam_out(int bf16, tandem_tensor *t, const tandem_tensor *stage, int64_t off) {
    return bf16 ? tandem_tensor_f32_at(stage, off) : tandem_tensor_f32(t);
}

tandem_status tandem_seam_publish(tandem_stream *s, int bf16, const float *from, tandem_tensor *t,
                                  int64_t n) {
    return bf16 ? tandem_cast_f32_bf16(s, from, tandem_tensor_bf16(t), n) : TANDEM_OK;
}

tandem_status tandem_seam_operand(tandem_stream *s, int bf16, const tandem_tensor *g,
                                  tandem_tensor *scratch, int64_t n, tandem_view *out) {
    *out = tandem_view_of(bf16 ? scratch : g);
    return bf16 ? tandem_cast_f32_bf16(s, tandem_tensor_f32(g), tandem_tensor_bf16(scratch), n)
                : TANDEM_OK;
}
