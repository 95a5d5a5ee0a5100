/* model_attn.c — the model's attention in bf16 mode (model.h, "Precision"): the kernels of
 * runtime/model/attention.c (split/merge, causal softmax and its backward, all f32) around batched
 * GEMMs that take bf16 operands and accumulate in f32. The seams:
 *
 *   forward:  qkv (f32) → split into the f32 stage → q, k, v (bf16, kept);
 *             S = Q K^T / sqrt(dh) (f32, scores) → softmax in place → p (bf16, kept);
 *             O = P V (f32, o) → heads merged into the stage → att (bf16, kept)
 *   backward: dO = split(da) (f32, d_o) → bf16 in gbf;  dP = dO V^T (f32, dp);
 *             dV = P^T dO (f32);  p widened into p32;  dS = softmax_bwd(dP, p32) in place;
 *             dS → bf16 in gbf;  dQ = dS K / sqrt(dh),  dK = dS^T Q / sqrt(dh) (f32);
 *             dqkv = merge(dQ, dK, dV) (f32)
 *
 * The softmax backward uses the bf16-rounded p the forward's P V used, so the gradient is that
 * of the computation actually run. Owns nothing.
 */
#include <math.h>
#include <string.h>

#include "runtime/core/launch.h"
#include "platform/os/log.h"
#include "runtime/model/model.h"

#define ADDR(t) tandem_tensor_addr(t)
#define F32(addr) ((float *)(uintptr_t)(addr))

tandem_status tandem_model_cast_bf16(tandem_stream *s, tandem_dptr src, tandem_dptr dst, int64_t n) {
    tandem_k_cast_f32_bf16_args a;
    memset(&a, 0, sizeof a);
    a.in = (const float *)(uintptr_t)src;
    a.out = (tandem_bf16 *)(uintptr_t)dst;
    a.n = n;
    return TANDEM_LAUNCH(s, cast_f32_bf16, &a);
}

static tandem_status gemm(tandem_stream *s, const tandem_gemm_desc *g, float alpha, tandem_dptr a,
                          tandem_dptr b, float beta, tandem_dptr c) {
    return s->dev->ops->gemm(s, g, alpha, a, b, beta, c);
}

static tandem_status check_mode(const tandem_model *m, const char *op) {
    if (!m->dims.bf16 || !m->fwd32 || !m->scores)
        return tandem_fail(TANDEM_E_STATE, "%s: the model was not declared with precision bf16", op);
    return TANDEM_OK;
}

tandem_status tandem_model_attention_fwd_bf16(tandem_model *m, tandem_stream *s, int l) {
    TANDEM_TRY(check_mode(m, "model attention forward (bf16)"));
    const tandem_model_dims *d = &m->dims;
    tandem_model_layer *ly = &m->layer[l];
    const int64_t nh = (int64_t)d->batch * d->heads * d->seq * d->head_dim; /* one of q, k, v */
    const float scale = (float)(1.0 / sqrt((double)d->head_dim));
    const tandem_dptr st = ADDR(m->fwd32); /* [3, B, H, T, dh] f32 */

    tandem_k_qkv_split_args sp;
    memset(&sp, 0, sizeof sp);
    sp.qkv = (const float *)(uintptr_t)ADDR(m->qkv);
    sp.q = F32(st);
    sp.k = F32(st + (tandem_dptr)nh * sizeof(float));
    sp.v = F32(st + (tandem_dptr)(2 * nh) * sizeof(float));
    sp.batch = d->batch;
    sp.seq = d->seq;
    sp.heads = d->heads;
    sp.head_dim = d->head_dim;
    TANDEM_TRY(TANDEM_LAUNCH(s, qkv_split, &sp));
    TANDEM_TRY(tandem_model_cast_bf16(s, st, ADDR(ly->q), nh));
    TANDEM_TRY(tandem_model_cast_bf16(s, st + (tandem_dptr)nh * sizeof(float), ADDR(ly->k), nh));
    TANDEM_TRY(tandem_model_cast_bf16(s, st + (tandem_dptr)(2 * nh) * sizeof(float), ADDR(ly->v), nh));

    /* S [BH, T, T] = Q K^T / sqrt(dh);  P = softmax_causal(S) in place;  p = bf16(P) */
    tandem_gemm_desc g = tandem_model_desc_attn(d, 0, 1);
    TANDEM_TRY(gemm(s, &g, scale, ADDR(ly->q), ADDR(ly->k), 0.0f, ADDR(m->scores)));
    tandem_k_softmax_causal_fwd_args sm;
    memset(&sm, 0, sizeof sm);
    sm.s = F32(ADDR(m->scores));
    sm.key_mask = (const uint8_t *)(uintptr_t)ADDR(m->key_mask);
    sm.p = F32(ADDR(m->scores));
    sm.batch = d->batch;
    sm.heads = d->heads;
    sm.seq = d->seq;
    TANDEM_TRY(TANDEM_LAUNCH(s, softmax_causal_fwd, &sm));
    TANDEM_TRY(tandem_model_cast_bf16(s, ADDR(m->scores), ADDR(ly->p), tandem_tensor_numel(ly->p)));

    /* O [BH, T, dh] = P V;  att = bf16(merge(O)) */
    g = tandem_model_desc_attn(d, 0, 0);
    TANDEM_TRY(gemm(s, &g, 1.0f, ADDR(ly->p), ADDR(ly->v), 0.0f, ADDR(m->o)));
    tandem_k_heads_merge_args mg;
    memset(&mg, 0, sizeof mg);
    mg.o = (const float *)(uintptr_t)ADDR(m->o);
    mg.y = F32(st);
    mg.batch = d->batch;
    mg.seq = d->seq;
    mg.heads = d->heads;
    mg.head_dim = d->head_dim;
    TANDEM_TRY(TANDEM_LAUNCH(s, heads_merge, &mg));
    return tandem_model_cast_bf16(s, st, ADDR(ly->att), tandem_tensor_numel(ly->att));
}

tandem_status tandem_model_attention_bwd_bf16(tandem_model *m, tandem_stream *s, int l) {
    TANDEM_TRY(check_mode(m, "model attention backward (bf16)"));
    if (!m->gbf || !m->p32)
        return tandem_fail(TANDEM_E_STATE, "model attention backward (bf16): no backward tensors "
                                           "(forward_only model)");
    const tandem_model_dims *d = &m->dims;
    tandem_model_layer *ly = &m->layer[l];
    const int64_t nh = (int64_t)d->batch * d->heads * d->seq * d->head_dim;
    const int64_t np = tandem_tensor_numel(ly->p);
    const float scale = (float)(1.0 / sqrt((double)d->head_dim));
    const tandem_dptr op = ADDR(m->gbf); /* the bf16 operand: dO, then dS */

    tandem_k_heads_split_grad_args sp;
    memset(&sp, 0, sizeof sp);
    sp.dy = (const float *)(uintptr_t)ADDR(m->da);
    sp.d_o = F32(ADDR(m->d_o));
    sp.batch = d->batch;
    sp.seq = d->seq;
    sp.heads = d->heads;
    sp.head_dim = d->head_dim;
    TANDEM_TRY(TANDEM_LAUNCH(s, heads_split_grad, &sp));
    TANDEM_TRY(tandem_model_cast_bf16(s, ADDR(m->d_o), op, nh));

    /* dP [BH, T, T] = dO V^T;  dV [BH, T, dh] = P^T dO */
    tandem_gemm_desc nt = tandem_model_desc_attn(d, 0, 1), nn = tandem_model_desc_attn(d, 0, 0);
    tandem_gemm_desc tn = tandem_model_desc_attn(d, 1, 0);
    TANDEM_TRY(gemm(s, &nt, 1.0f, op, ADDR(ly->v), 0.0f, ADDR(m->dp)));
    TANDEM_TRY(gemm(s, &tn, 1.0f, ADDR(ly->p), op, 0.0f, ADDR(m->dv)));

    /* dS = softmax_bwd(dP, P) in place, P widened from the kept bf16 p */
    tandem_k_cast_bf16_f32_args wide;
    memset(&wide, 0, sizeof wide);
    wide.in = (const tandem_bf16 *)(uintptr_t)ADDR(ly->p);
    wide.out = F32(ADDR(m->p32));
    wide.n = np;
    TANDEM_TRY(TANDEM_LAUNCH(s, cast_bf16_f32, &wide));
    tandem_k_softmax_causal_bwd_args sm;
    memset(&sm, 0, sizeof sm);
    sm.dp = F32(ADDR(m->dp));
    sm.p = F32(ADDR(m->p32));
    sm.ds = F32(ADDR(m->dp));
    sm.batch = d->batch;
    sm.heads = d->heads;
    sm.seq = d->seq;
    TANDEM_TRY(TANDEM_LAUNCH(s, softmax_causal_bwd, &sm));
    TANDEM_TRY(tandem_model_cast_bf16(s, ADDR(m->dp), op, np));

    /* dQ = dS K / sqrt(dh);  dK = dS^T Q / sqrt(dh) */
    TANDEM_TRY(gemm(s, &nn, scale, op, ADDR(ly->k), 0.0f, ADDR(m->dq)));
    TANDEM_TRY(gemm(s, &tn, scale, op, ADDR(ly->q), 0.0f, ADDR(m->dk)));

    tandem_k_qkv_merge_grad_args mg;
    memset(&mg, 0, sizeof mg);
    mg.dq = (const float *)(uintptr_t)ADDR(m->dq);
    mg.dk = (const float *)(uintptr_t)ADDR(m->dk);
    mg.dv = (const float *)(uintptr_t)ADDR(m->dv);
    mg.dqkv = F32(ADDR(m->dqkv));
    mg.batch = d->batch;
    mg.seq = d->seq;
    mg.heads = d->heads;
    mg.head_dim = d->head_dim;
    return TANDEM_LAUNCH(s, qkv_merge_grad, &mg);
}
