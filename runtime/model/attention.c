/* attention.c — attention forward/backward as kernels + batched GEMMs (see attention.h). */
#include "runtime/model/attention.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#include "runtime/core/launch.h"
#include "platform/os/log.h"

tandem_status tandem_attention_sizes_of(const tandem_attention_shape *sh,
                                        tandem_attention_sizes *out) {
    if (!sh) return tandem_fail(TANDEM_E_INVALID, "attention: shape is NULL");
    if (sh->batch < 1 || sh->seq < 1 || sh->heads < 1 || sh->head_dim < 1)
        return tandem_fail(TANDEM_E_INVALID,
                           "attention: bad shape batch=%d seq=%d heads=%d head_dim=%d; expected "
                           "all >= 1",
                           sh->batch, sh->seq, sh->heads, sh->head_dim);
    if ((int64_t)sh->heads * sh->head_dim > INT_MAX / 3)
        return tandem_fail(TANDEM_E_INVALID,
                           "attention: heads=%d x head_dim=%d is too wide; expected 3 * heads * "
                           "head_dim <= %d",
                           sh->heads, sh->head_dim, INT_MAX);
    if (out) {
        const int64_t B = sh->batch, T = sh->seq, H = sh->heads, dh = sh->head_dim;
        out->qkv = B * T * 3 * H * dh;
        out->model = B * T * H * dh;
        out->heads = B * H * T * dh;
        out->scores = B * H * T * T;
        out->mask = B * T;
    }
    return TANDEM_OK;
}

/* The three GEMM shapes, each batched over the B*H heads (dense per-head matrices):
 *   nt: [T, dh] x [T, dh]^T -> [T, T]    S = Q K^T, dP = dO V^T
 *   nn: [T, T] x [T, dh]    -> [T, dh]   O = P V, dQ = dS K
 *   tn: [T, T]^T x [T, dh]  -> [T, dh]   dV = P^T dO, dK = dS^T Q
 * Strides are 0 for a single product, as the GEMM op's own descriptors have them, so prepare
 * and run see identical descriptors. */
typedef struct attn_gemms {
    tandem_gemm_desc nt, nn, tn;
} attn_gemms;

static void set_desc(tandem_gemm_desc *g, int ta, int tb, int64_t m, int64_t n, int64_t k,
                     int64_t batch) {
    memset(g, 0, sizeof *g);
    g->trans_a = ta;
    g->trans_b = tb;
    g->m = m;
    g->n = n;
    g->k = k;
    g->batch = batch;
    if (batch > 1) {
        g->stride_a = m * k;
        g->stride_b = k * n;
        g->stride_c = m * n;
    }
}

static void attn_gemm_descs(const tandem_attention_shape *sh, attn_gemms *g) {
    const int64_t T = sh->seq, dh = sh->head_dim, bh = (int64_t)sh->batch * sh->heads;
    set_desc(&g->nt, 0, 1, T, T, dh, bh);
    set_desc(&g->nn, 0, 0, T, dh, T, bh);
    set_desc(&g->tn, 1, 0, T, dh, T, bh);
}

tandem_status tandem_attention_prepare(tandem_device *dev, const tandem_attention_shape *sh) {
    if (!dev || !dev->ops) return tandem_fail(TANDEM_E_INVALID, "attention prepare: device is NULL");
    TANDEM_TRY(tandem_attention_sizes_of(sh, NULL));
    if (!dev->ops->gemm_prepare) return TANDEM_OK; /* nothing to resolve on this backend */
    attn_gemms g;
    attn_gemm_descs(sh, &g);
    TANDEM_TRY(dev->ops->gemm_prepare(dev, &g.nt));
    TANDEM_TRY(dev->ops->gemm_prepare(dev, &g.nn));
    TANDEM_TRY(dev->ops->gemm_prepare(dev, &g.tn));
    return TANDEM_OK;
}

/* Common checks of fwd/bwd: stream, shape, GEMM op, and that no address is 0. */
static tandem_status check_call(const char *op, tandem_stream *s, const tandem_attention_shape *sh,
                                const char *const *names, const tandem_dptr *addrs, int n) {
    if (!s || !s->dev || !s->dev->ops)
        return tandem_fail(TANDEM_E_INVALID, "%s: stream is NULL or has no device", op);
    TANDEM_TRY(tandem_attention_sizes_of(sh, NULL));
    if (!s->dev->ops->gemm)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "%s: the %s backend has no GEMM", op,
                           s->dev->ops->name);
    for (int i = 0; i < n; i++)
        if (addrs[i] == 0)
            return tandem_fail(TANDEM_E_INVALID,
                               "%s: buffer '%s' has address 0; expected a committed tensor's "
                               "device address",
                               op, names[i]);
    return TANDEM_OK;
}

#define F32(addr) ((float *)(uintptr_t)(addr))

static void fill_dims(const tandem_attention_shape *sh, int *batch, int *seq, int *heads,
                      int *head_dim) {
    *batch = sh->batch;
    *seq = sh->seq;
    *heads = sh->heads;
    *head_dim = sh->head_dim;
}

tandem_status tandem_attention_fwd(tandem_stream *s, const tandem_attention_shape *sh,
                                   const tandem_attention_fwd_io *io) {
    static const char op[] = "attention forward";
    if (!io) return tandem_fail(TANDEM_E_INVALID, "%s: io is NULL", op);
    static const char *const names[] = {"qkv", "key_mask", "q", "k", "v", "p", "o", "y"};
    const tandem_dptr addrs[] = {io->qkv, io->key_mask, io->q, io->k, io->v, io->p, io->o, io->y};
    TANDEM_TRY(check_call(op, s, sh, names, addrs, (int)(sizeof addrs / sizeof addrs[0])));
    const float scale = (float)(1.0 / sqrt((double)sh->head_dim));
    attn_gemms g;
    attn_gemm_descs(sh, &g);
    const tandem_backend_ops *ops = s->dev->ops;

    tandem_k_qkv_split_args split;
    memset(&split, 0, sizeof split);
    split.qkv = F32(io->qkv);
    split.q = F32(io->q);
    split.k = F32(io->k);
    split.v = F32(io->v);
    fill_dims(sh, &split.batch, &split.seq, &split.heads, &split.head_dim);
    TANDEM_TRY(TANDEM_LAUNCH(s, qkv_split, &split));

    /* S [BH, T, T] = Q K^T / sqrt(dh), into p */
    TANDEM_TRY(ops->gemm(s, &g.nt, scale, io->q, io->k, 0.0f, io->p));

    tandem_k_softmax_causal_fwd_args sm;
    memset(&sm, 0, sizeof sm);
    sm.s = F32(io->p);
    sm.key_mask = (const uint8_t *)(uintptr_t)io->key_mask;
    sm.p = F32(io->p);
    sm.batch = sh->batch;
    sm.heads = sh->heads;
    sm.seq = sh->seq;
    TANDEM_TRY(TANDEM_LAUNCH(s, softmax_causal_fwd, &sm));

    /* O [BH, T, dh] = P V */
    TANDEM_TRY(ops->gemm(s, &g.nn, 1.0f, io->p, io->v, 0.0f, io->o));

    tandem_k_heads_merge_args merge;
    memset(&merge, 0, sizeof merge);
    merge.o = F32(io->o);
    merge.y = F32(io->y);
    fill_dims(sh, &merge.batch, &merge.seq, &merge.heads, &merge.head_dim);
    return TANDEM_LAUNCH(s, heads_merge, &merge);
}

tandem_status tandem_attention_bwd(tandem_stream *s, const tandem_attention_shape *sh,
                                   const tandem_attention_bwd_io *io) {
    static const char op[] = "attention backward";
    if (!io) return tandem_fail(TANDEM_E_INVALID, "%s: io is NULL", op);
    static const char *const names[] = {"dy", "q", "k", "v", "p", "d_o", "dp", "dq", "dk", "dv", "dqkv"};
    const tandem_dptr addrs[] = {io->dy, io->q,  io->k,  io->v,  io->p,   io->d_o,
                                 io->dp, io->dq, io->dk, io->dv, io->dqkv};
    TANDEM_TRY(check_call(op, s, sh, names, addrs, (int)(sizeof addrs / sizeof addrs[0])));
    const float scale = (float)(1.0 / sqrt((double)sh->head_dim));
    attn_gemms g;
    attn_gemm_descs(sh, &g);
    const tandem_backend_ops *ops = s->dev->ops;

    tandem_k_heads_split_grad_args split;
    memset(&split, 0, sizeof split);
    split.dy = F32(io->dy);
    split.d_o = F32(io->d_o);
    fill_dims(sh, &split.batch, &split.seq, &split.heads, &split.head_dim);
    TANDEM_TRY(TANDEM_LAUNCH(s, heads_split_grad, &split));

    /* dP [BH, T, T] = dO V^T;  dV [BH, T, dh] = P^T dO */
    TANDEM_TRY(ops->gemm(s, &g.nt, 1.0f, io->d_o, io->v, 0.0f, io->dp));
    TANDEM_TRY(ops->gemm(s, &g.tn, 1.0f, io->p, io->d_o, 0.0f, io->dv));

    tandem_k_softmax_causal_bwd_args sm;
    memset(&sm, 0, sizeof sm);
    sm.dp = F32(io->dp);
    sm.p = F32(io->p);
    sm.ds = F32(io->dp);
    sm.batch = sh->batch;
    sm.heads = sh->heads;
    sm.seq = sh->seq;
    TANDEM_TRY(TANDEM_LAUNCH(s, softmax_causal_bwd, &sm));

    /* The 1/sqrt(dh) of S = Q K^T / sqrt(dh) lands on both of its factors' gradients:
     * dQ = dS K / sqrt(dh);  dK = dS^T Q / sqrt(dh) */
    TANDEM_TRY(ops->gemm(s, &g.nn, scale, io->dp, io->k, 0.0f, io->dq));
    TANDEM_TRY(ops->gemm(s, &g.tn, scale, io->dp, io->q, 0.0f, io->dk));

    tandem_k_qkv_merge_grad_args merge;
    memset(&merge, 0, sizeof merge);
    merge.dq = F32(io->dq);
    merge.dk = F32(io->dk);
    merge.dv = F32(io->dv);
    merge.dqkv = F32(io->dqkv);
    fill_dims(sh, &merge.batch, &merge.seq, &merge.heads, &merge.head_dim);
    return TANDEM_LAUNCH(s, qkv_merge_grad, &merge);
}
