/* attention.c — attention forward/backward as kernels + batched GEMMs, in fp32 or with bf16
 * operands (see attention.h). */
#include "runtime/model/attention.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#include "platform/os/log.h"
#include "runtime/model/launchers.h"

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
        out->rows = B * H * T;
    }
    return TANDEM_OK;
}

/* The three GEMM shapes, each batched over the B*H heads (dense per-head matrices), operands of
 * the shape's precision and an f32 C:
 *   nt: [T, dh] x [T, dh]^T -> [T, T]    S = Q K^T, dP = dO V^T
 *   nn: [T, T] x [T, dh]    -> [T, dh]   O = P V, dQ = dS K
 *   tn: [T, T]^T x [T, dh]  -> [T, dh]   dV = P^T dO, dK = dS^T Q
 * Strides are 0 for a single product, as the GEMM op's own descriptors have them, so prepare
 * and run see identical descriptors. */
typedef struct attn_gemms {
    tandem_gemm_desc nt, nn, tn;
} attn_gemms;

static void set_desc(tandem_gemm_desc *g, tandem_dtype op, int ta, int tb, int64_t m, int64_t n,
                     int64_t k, int64_t batch) {
    memset(g, 0, sizeof *g);
    g->a_type = g->b_type = op;
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

static tandem_dtype operand_dtype(const tandem_attention_shape *sh) {
    return sh->bf16 ? TANDEM_BF16 : TANDEM_F32;
}

static void attn_gemm_descs(const tandem_attention_shape *sh, attn_gemms *g) {
    const int64_t T = sh->seq, dh = sh->head_dim, bh = (int64_t)sh->batch * sh->heads;
    const tandem_dtype op = operand_dtype(sh);
    set_desc(&g->nt, op, 0, 1, T, T, dh, bh);
    set_desc(&g->nn, op, 0, 0, T, dh, T, bh);
    set_desc(&g->tn, op, 1, 0, T, dh, T, bh);
}

int tandem_attention_fused(const tandem_attention_shape *sh) {
    return !sh->materialised && sh->head_dim <= TANDEM_K_ATTN_FA_MAX_DH;
}

int tandem_attention_tc(const tandem_attention_shape *sh) {
    return tandem_attention_fused(sh) && sh->bf16 && tandem_k_attn_tc_ok(sh->head_dim);
}

tandem_status tandem_attention_prepare(tandem_device *dev, const tandem_attention_shape *sh) {
    if (!dev) return tandem_fail(TANDEM_E_INVALID, "attention prepare: device is NULL");
    TANDEM_TRY(tandem_attention_sizes_of(sh, NULL));
    if (tandem_attention_fused(sh)) return TANDEM_OK; /* no GEMMs */
    attn_gemms g;
    attn_gemm_descs(sh, &g);
    TANDEM_TRY(tandem_dev_gemm_prepare(dev, &g.nt));
    TANDEM_TRY(tandem_dev_gemm_prepare(dev, &g.nn));
    return tandem_dev_gemm_prepare(dev, &g.tn);
}

/* ---- argument checks ------------------------------------------------------------------------ */

typedef struct io_check {
    const char *name;
    const tandem_tensor *t;
    tandem_dtype dtype;
    int64_t min; /* elements */
} io_check;

static tandem_status check_io(const char *op, const tandem_stream *s, const io_check *c, int n) {
    for (int i = 0; i < n; i++, c++)
        TANDEM_TRY(tandem_dev_check_tensor(op, c->name, s, c->t, c->dtype, c->min));
    return TANDEM_OK;
}

/* The backward's outputs: dqkv (f32) and/or dqkv_op (bf16, tensor-core or materialised bf16);
 * bf16 with dqkv_op may leave dqkv NULL (the QKV projection's backward reads only the bf16). */
static tandem_status check_dqkv(const char *op, const tandem_stream *s, const tandem_tensor *dqkv,
                                const tandem_tensor *dqkv_op, int bf16, int64_t n) {
    if (!dqkv && !(bf16 && dqkv_op))
        return tandem_fail(TANDEM_E_INVALID, "%s: dqkv is NULL; only bf16 with dqkv_op may omit the "
                                             "f32 gradient", op);
    if (dqkv) TANDEM_TRY(tandem_dev_check_tensor(op, "dqkv", s, dqkv, TANDEM_F32, n));
    if (dqkv_op) TANDEM_TRY(tandem_dev_check_tensor(op, "dqkv_op", s, dqkv_op, TANDEM_BF16, n));
    return TANDEM_OK;
}

/* The io, the stream and the shape (→ *n); the tensors follow once their sizes are known. */
static tandem_status check_call(const char *op, const void *io, tandem_stream *s,
                                const tandem_attention_shape *sh, tandem_attention_sizes *n) {
    if (!io) return tandem_fail(TANDEM_E_INVALID, "%s: io is NULL", op);
    if (!s || !s->dev)
        return tandem_fail(TANDEM_E_INVALID, "%s: stream is NULL or has no device", op);
    return tandem_attention_sizes_of(sh, n);
}

#define F32(t) tandem_tensor_f32(t)
#define VIEW(t) tandem_view_of(t)

/* What both passes derive from the shape. */
typedef struct attn_pass {
    tandem_heads_dims hd; /* the kernels' sizes */
    float scale;          /* 1 / sqrt(dh) */
    attn_gemms g;
} attn_pass;

static attn_pass pass_of(const tandem_attention_shape *sh) {
    attn_pass a;
    a.hd.batch = sh->batch, a.hd.seq = sh->seq, a.hd.heads = sh->heads;
    a.hd.head_dim = sh->head_dim;
    a.scale = (float)(1.0 / sqrt((double)sh->head_dim));
    attn_gemm_descs(sh, &a.g);
    return a;
}

/* ---- fused passes --------------------------------------------------------------------------- */

/* The model's layout: q, k, v column blocks of qkv_op [B, T, 3d], o / dy [B, T, d]. */
static tandem_attn_layout fused_layout(const tandem_attention_shape *sh) {
    const int d = sh->heads * sh->head_dim;
    tandem_attn_layout l = {0, sh->seq, 3 * d, sh->head_dim, 3 * d, sh->head_dim, d, 3 * d, sh->bf16};
    return l;
}

/* Raw device address of an op tensor (f32 or bf16) and its column block `block` of width d. */
static const char *op_block(const tandem_tensor *t, int bf16, int block, int d) {
    const char *base = bf16 ? (const char *)tandem_tensor_bf16(t) : (const char *)F32(t);
    return base + (size_t)block * (size_t)d * (bf16 ? 2 : 4);
}

static tandem_status fused_fwd(tandem_stream *s, const tandem_attention_shape *sh,
                               const tandem_attention_fwd_io *io, const tandem_attention_sizes *n) {
    static const char op[] = "attention forward (fused)";
    const tandem_dtype o16 = operand_dtype(sh);
    const io_check c[] = {
        {"key_mask", io->key_mask, TANDEM_U8, n->mask}, {"qkv_op", io->qkv_op, o16, n->qkv},
        {"y", io->y, o16, n->model},                    {"lse", io->lse, TANDEM_F32, n->rows},
        {"qkv", io->qkv, TANDEM_F32, n->qkv},
    };
    /* bf16 with qkv NULL: the caller's GEMM wrote qkv_op itself (no cast) */
    TANDEM_TRY(check_io(op, s, c, sh->bf16 && !io->qkv ? 4 : 5));
    if (io->ga && !io->ga_sum) return tandem_fail(TANDEM_E_INVALID, "%s: ga without ga_sum", op);
    const attn_pass a = pass_of(sh);
    const int d = sh->heads * sh->head_dim, bf = sh->bf16;
    /* bf16: the kernels read the bf16 cast of qkv (kept for the backward) */
    if (bf && io->qkv) TANDEM_TRY(tandem_cast_f32_bf16(s, F32(io->qkv), tandem_tensor_bf16(io->qkv_op), n->qkv));
    const tandem_attn_layout lay = fused_layout(sh);
    void *y = bf ? (void *)tandem_tensor_bf16(io->y) : (void *)F32(io->y);
    return tandem_attn_fused_fwd(s, op_block(io->qkv_op, bf, 0, d), op_block(io->qkv_op, bf, 1, d),
                                 op_block(io->qkv_op, bf, 2, d), tandem_tensor_u8(io->key_mask), y,
                                 F32(io->lse), io->ga ? io->ga_sum : NULL, io->ga ? io->ga_rows : NULL,
                                 &a.hd, &lay, io->ga);
}

static tandem_status fused_bwd(tandem_stream *s, const tandem_attention_shape *sh,
                               const tandem_attention_bwd_io *io, const tandem_attention_sizes *n) {
    static const char op[] = "attention backward (fused)";
    const tandem_dtype o16 = operand_dtype(sh);
    const io_check c[] = {
        {"dy", io->dy, TANDEM_F32, n->model},    {"key_mask", io->key_mask, TANDEM_U8, n->mask},
        {"qkv_op", io->qkv_op, o16, n->qkv},     {"y", io->y, o16, n->model},
        {"lse", io->lse, TANDEM_F32, n->rows},
    };
    if (io->dqkv_op && !tandem_attention_tc(sh))
        return tandem_fail(TANDEM_E_INVALID, "%s: dqkv_op is written only by the tensor-core kernels "
                                             "(bf16, head size a multiple of 16 up to 64)", op);
    TANDEM_TRY(check_io(op, s, c, 5));
    TANDEM_TRY(check_dqkv(op, s, io->dqkv, io->dqkv_op, sh->bf16, n->qkv));
    if (io->ga && !io->ga_sum) return tandem_fail(TANDEM_E_INVALID, "%s: ga without ga_sum", op);
    const attn_pass a = pass_of(sh);
    const int d = sh->heads * sh->head_dim, bf = sh->bf16;
    const tandem_attn_layout lay = fused_layout(sh);
    float *g = io->dqkv ? F32(io->dqkv) : NULL; /* NULL: the bf16 dqkv_op only */
    tandem_attn_fused_bwd_io f = {
        op_block(io->qkv_op, bf, 0, d), op_block(io->qkv_op, bf, 1, d),
        op_block(io->qkv_op, bf, 2, d), op_block(io->y, bf, 0, d),
        tandem_tensor_u8(io->key_mask), F32(io->dy), F32(io->lse), io->ga ? io->ga_sum : NULL,
        g, g ? g + d : NULL, g ? g + 2 * d : NULL, NULL, NULL, NULL,
    };
    if (io->dqkv_op) { /* tensor cores: the QKV projection's bf16 dy operand in the same pass */
        tandem_bf16 *g16 = tandem_tensor_bf16(io->dqkv_op);
        f.dq16 = g16, f.dk16 = g16 + d, f.dv16 = g16 + 2 * d;
    }
    return tandem_attn_fused_bwd(s, &f, &a.hd, &lay, io->ga);
}

/* ---- passes --------------------------------------------------------------------------------- */

tandem_status tandem_attention_fwd(tandem_stream *s, const tandem_attention_shape *sh,
                                   const tandem_attention_fwd_io *io) {
    static const char op[] = "attention forward";
    tandem_attention_sizes n;
    TANDEM_TRY(check_call(op, io, s, sh, &n));
    if (tandem_attention_fused(sh)) return fused_fwd(s, sh, io, &n);
    const tandem_dtype o16 = operand_dtype(sh);
    const io_check c[] = {
        {"qkv", io->qkv, TANDEM_F32, n.qkv},       {"key_mask", io->key_mask, TANDEM_U8, n.mask},
        {"q", io->q, o16, n.heads},                {"k", io->k, o16, n.heads},
        {"v", io->v, o16, n.heads},                {"p", io->p, o16, n.scores},
        {"o", io->o, TANDEM_F32, n.heads},         {"y", io->y, o16, n.model},
        {"scores", io->scores, TANDEM_F32, n.scores},
    };
    TANDEM_TRY(check_io(op, s, c, sh->bf16 ? 9 : 8)); /* bf16: the f32 scores scratch too */
    const attn_pass a = pass_of(sh);
    const int bf = sh->bf16;
    tandem_tensor *sc = bf ? io->scores : io->p; /* S, then P: f32 */

    /* q, k, v [BH, T, dh] = qkv [B, T, 3d] split by head, written in the operands' dtype */
    TANDEM_TRY(tandem_qkv_split(s, F32(io->qkv), tandem_seam_f32(bf, io->q), tandem_seam_f32(bf, io->k),
                                tandem_seam_f32(bf, io->v), tandem_seam_bf16(bf, io->q),
                                tandem_seam_bf16(bf, io->k), tandem_seam_bf16(bf, io->v), &a.hd));
    /* S [BH, T, T] = Q K^T / sqrt(dh);  P = softmax_causal(S, key_mask): fp32 in place */
    TANDEM_TRY(tandem_dev_gemm(s, &a.g.nt, a.scale, VIEW(io->q), VIEW(io->k), 0.0f, VIEW(sc)));
    /* bf16: P written as the kept bf16 operand directly (the guided attention reads it too) */
    void *pk = bf ? (void *)tandem_tensor_bf16(io->p) : (void *)F32(sc);
    TANDEM_TRY(tandem_softmax_causal_fwd(s, F32(sc), tandem_tensor_u8(io->key_mask), pk, bf, &a.hd, 0, a.hd.seq));
    if (io->ga) TANDEM_TRY(tandem_ga_fwd(s, pk, bf, tandem_tensor_u8(io->key_mask), io->ga_rows, io->ga));
    /* O [BH, T, dh] = P V;  y [B, T, d] = O with the heads merged */
    TANDEM_TRY(tandem_dev_gemm(s, &a.g.nn, 1.0f, VIEW(io->p), VIEW(io->v), 0.0f, VIEW(io->o)));
    return tandem_heads_merge(s, F32(io->o), tandem_seam_f32(bf, io->y), tandem_seam_bf16(bf, io->y),
                              &a.hd);
}

tandem_status tandem_attention_bwd(tandem_stream *s, const tandem_attention_shape *sh,
                                   const tandem_attention_bwd_io *io) {
    static const char op[] = "attention backward";
    tandem_attention_sizes n;
    TANDEM_TRY(check_call(op, io, s, sh, &n));
    if (tandem_attention_fused(sh)) return fused_bwd(s, sh, io, &n);
    const tandem_dtype o16 = operand_dtype(sh);
    const int64_t nop = n.heads > n.scores ? n.heads : n.scores; /* dO, then dS */
    /* dO: the f32 d_o (fp32), or written straight into the bf16 operand scratch (bf16) */
    const io_check o = sh->bf16 ? (io_check){"operand", io->operand, TANDEM_BF16, nop}
                                : (io_check){"d_o", io->d_o, TANDEM_F32, n.heads};
    const io_check c[] = {
        {"dy", io->dy, TANDEM_F32, n.model},       {"q", io->q, o16, n.heads},
        {"k", io->k, o16, n.heads},                {"v", io->v, o16, n.heads},
        {"p", io->p, o16, n.scores},               o,
        {"dp", io->dp, TANDEM_F32, n.scores},      {"dq", io->dq, TANDEM_F32, n.heads},
        {"dk", io->dk, TANDEM_F32, n.heads},       {"dv", io->dv, TANDEM_F32, n.heads},
    };
    TANDEM_TRY(check_io(op, s, c, 10));
    TANDEM_TRY(check_dqkv(op, s, io->dqkv, sh->bf16 ? io->dqkv_op : NULL, sh->bf16, n.qkv));
    const attn_pass a = pass_of(sh);
    const tandem_view d_o = tandem_view_of(sh->bf16 ? io->operand : io->d_o);
    tandem_view ds;

    /* dO [BH, T, dh] = dy [B, T, d] split by head */
    TANDEM_TRY(tandem_heads_split_grad(s, F32(io->dy), tandem_seam_f32(sh->bf16, io->d_o),
                                       tandem_seam_bf16(sh->bf16, io->operand), &a.hd));
    /* dP [BH, T, T] = dO V^T;  dV [BH, T, dh] = P^T dO */
    TANDEM_TRY(tandem_dev_gemm(s, &a.g.nt, 1.0f, d_o, VIEW(io->v), 0.0f, VIEW(io->dp)));
    TANDEM_TRY(tandem_dev_gemm(s, &a.g.tn, 1.0f, VIEW(io->p), d_o, 0.0f, VIEW(io->dv)));
    /* dP += the guided-attention loss's gradient (it is a function of P) */
    if (io->ga) TANDEM_TRY(tandem_ga_bwd(s, F32(io->dp), tandem_tensor_u8(io->key_mask), io->ga));
    /* dS = softmax_bwd(dP, P): fp32 in place; bf16 from the kept bf16 p straight into the
     * bf16 operand scratch (the GEMMs' dS) */
    if (sh->bf16) {
        TANDEM_TRY(tandem_softmax_causal_bwd(s, F32(io->dp), tandem_tensor_bf16(io->p),
                                             tandem_tensor_bf16(io->operand), 1, &a.hd));
        ds = tandem_view_of(io->operand);
    } else {
        TANDEM_TRY(tandem_softmax_causal_bwd(s, F32(io->dp), F32(io->p), F32(io->dp), 0, &a.hd));
        ds = tandem_view_of(io->dp);
    }
    /* The 1/sqrt(dh) of S = Q K^T / sqrt(dh) lands on both of its factors' gradients:
     * dQ = dS K / sqrt(dh);  dK = dS^T Q / sqrt(dh) */
    TANDEM_TRY(tandem_dev_gemm(s, &a.g.nn, a.scale, ds, VIEW(io->k), 0.0f, VIEW(io->dq)));
    TANDEM_TRY(tandem_dev_gemm(s, &a.g.tn, a.scale, ds, VIEW(io->q), 0.0f, VIEW(io->dk)));
    return tandem_qkv_merge_grad(s, F32(io->dq), F32(io->dk), F32(io->dv), io->dqkv ? F32(io->dqkv) : NULL,
                                 sh->bf16 && io->dqkv_op ? tandem_tensor_bf16(io->dqkv_op) : NULL,
                                 &a.hd);
}
