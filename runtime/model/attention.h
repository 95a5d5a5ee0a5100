/* attention.h — causal multi-head self-attention with a key padding mask, forward and
 * backward, queued on a stream: the attention kernels (runtime/model/launchers.h) around
 * batched GEMMs (runtime/core/dev.h; batch = B*H, one dense [T, dh] matrix per head). One
 * driver serves both precisions of the model (runtime/model/model.h, "Precision"):
 *
 *   forward:  q, k, v = split(qkv);  S = Q K^T / sqrt(dh);  P = softmax_causal(S, key_mask);
 *             O = P V;  y = merge_heads(O)
 *             [+ guided-attention rows of P (io->ga)]
 *   backward: dO = split_heads(dy);  dP = dO V^T [+ guided-attention gradient];  dV = P^T dO;
 *             dS = softmax_bwd(dP, P);
 *             dQ = dS K / sqrt(dh);  dK = dS^T Q / sqrt(dh);  dqkv = merge(dQ, dK, dV)
 *
 *   fp32: every tensor f32; each kernel writes its output tensor itself.
 *   bf16: the GEMM operands kept for the backward (q, k, v, p, and the output y) are bf16. The
 *         kernels still compute in f32: q, k, v, y into an f32 stage that a cast writes to the
 *         bf16 tensor; S into the f32 scores, from which softmax writes the bf16 p directly
 *         (the guided attention reads that p); in the backward dO is cast into a bf16 operand
 *         scratch before its GEMMs; softmax's backward reads the bf16 p itself (the
 *         bf16-rounded P that P V used, so the gradient is that of what ran) and writes dS as
 *         the bf16 operand directly (no widening before, no cast after).
 *
 * Fused (tandem_attention_fused: head_dim <= TANDEM_K_ATTN_FA_MAX_DH, every model preset): one
 * kernel each way (kernels/attention.h, attn_fused_fwd / attn_fused_bwd), reading q, k, v from
 * qkv_op [B, T, 3d] (fp32: qkv itself; bf16: its bf16 cast) and writing y [B, T, d] directly;
 * the forward keeps per row the log-sum-exp (lse) and the guided-attention sum, the backward
 * recomputes P from them and writes dqkv. No [B, H, T, T] tensor; q, k, v, p, o, stage, scores
 * and the backward's scratch are not used. The materialised path below serves wider heads.
 *
 * The QKV projection before and the output projection after are the caller's GEMMs. Tensors
 * are the caller's, committed on the stream's device; each is checked (dtype, at least the
 * elements named below); nothing here allocates. Call tandem_attention_prepare before the pool
 * is committed (the cuda backend resolves each GEMM shape once, then). Called by the thread that
 * drives the stream. Owns nothing.
 */
#ifndef TANDEM_RUNTIME_ATTENTION_H
#define TANDEM_RUNTIME_ATTENTION_H

#include <stdint.h>

#include "runtime/core/dev.h"
#include "runtime/model/launchers.h"

typedef struct tandem_attention_shape {
    int batch;    /* B */
    int seq;      /* T: query and key positions */
    int heads;    /* H */
    int head_dim; /* dh; the model width is d = H * dh */
    int bf16;     /* 0: fp32; 1: bf16 GEMM operands (see above) */
    int materialised; /* 1: the materialised path whatever the head size (reference tests) */
} tandem_attention_shape;

/* 1 when the fused kernels serve the shape (head_dim <= TANDEM_K_ATTN_FA_MAX_DH and not
 * materialised), else 0. */
int tandem_attention_fused(const tandem_attention_shape *sh);
/* 1 when those fused passes run on tensor cores (bf16, head_dim a multiple of 16 up to 64:
 * kernels/attention_tc.h); the backward then also writes dqkv_op, the bf16 dqkv. */
int tandem_attention_tc(const tandem_attention_shape *sh);

/* Element counts of the tensors below, for declaring them. */
typedef struct tandem_attention_sizes {
    int64_t qkv;    /* B * T * 3d   qkv, dqkv, the bf16 stage */
    int64_t model;  /* B * T * d    y, dy */
    int64_t heads;  /* B * H * T * dh   q, k, v, o and their gradients */
    int64_t scores; /* B * H * T * T    p, dp, the bf16 scores */
    int64_t mask;   /* B * T  (bytes: key_mask is u8) */
    int64_t rows;   /* B * H * T    lse (fused) */
} tandem_attention_sizes;

/* TANDEM_E_INVALID unless every dimension is >= 1 and 3d fits an int. */
tandem_status tandem_attention_sizes_of(const tandem_attention_shape *sh,
                                        tandem_attention_sizes *out);

/* Resolve the three GEMM shapes the forward and backward use on dev (before pool commit). */
tandem_status tandem_attention_prepare(tandem_device *dev, const tandem_attention_shape *sh);

/* "op" below: the operand dtype, f32 in fp32 mode and bf16 in bf16 mode. */
typedef struct tandem_attention_fwd_io {
    const tandem_tensor *qkv;      /* in  [B, T, 3d] f32: columns [0, d) q, [d, 2d) k, [2d, 3d) v;
                                      fused bf16: NULL when qkv_op already holds its bf16 values */
    const tandem_tensor *key_mask; /* in  [B, T] u8: 1 = real key position, 0 = padding */
    tandem_tensor *q, *k, *v;      /* out [B, H, T, dh] op, kept for the backward */
    tandem_tensor *p;              /* out [B, H, T, T] op: the probabilities, kept (fp32: the
                                      scores first, softmax in place) */
    tandem_tensor *o;              /* scratch [B, H, T, dh] f32 */
    tandem_tensor *y;              /* out [B, T, d] op: heads merged (before the out projection) */
    tandem_tensor *scores;         /* bf16 only: scratch [B, H, T, T] f32 (S, then P) */
    float *ga_rows;                /* out [B, ga->ga_heads, Tm] f32: the guided-attention rows
                                      of the f32 P (kernels/attention.h, ga_fwd); with ga */
    const tandem_ga_dims *ga;      /* NULL: no guided-attention loss */
    /* fused only: */
    tandem_tensor *qkv_op;         /* out [B, T, 3d] op, kept (fp32: may be qkv itself) */
    tandem_tensor *lse;            /* out [B, H, T] f32, kept */
    float *ga_sum;                 /* out [B, ga->ga_heads, Tm] f32, kept; with ga */
} tandem_attention_fwd_io;

/* All tensors distinct (they meet in GEMMs). The bf16-only ones are ignored in fp32 mode. */
tandem_status tandem_attention_fwd(tandem_stream *s, const tandem_attention_shape *sh,
                                   const tandem_attention_fwd_io *io);

typedef struct tandem_attention_bwd_io {
    const tandem_tensor *dy;          /* in  [B, T, d] f32: gradient of the forward's y */
    const tandem_tensor *q, *k, *v;   /* in  [B, H, T, dh] op from the forward */
    const tandem_tensor *p;           /* in  [B, H, T, T] op from the forward */
    tandem_tensor *d_o;               /* fp32 only: scratch [B, H, T, dh] f32 (bf16: dO is written
                                         into operand directly) */
    tandem_tensor *dp;                /* scratch [B, H, T, T] f32: dP, then in place dS */
    tandem_tensor *dq, *dk, *dv;      /* scratch [B, H, T, dh] f32 */
    tandem_tensor *dqkv;              /* out [B, T, 3d] f32: written, not accumulated; NULL in
                                         bf16 with dqkv_op (only the bf16 gradient is written) */
    tandem_tensor *operand;           /* bf16 only: scratch bf16 [max(B*H*T*dh, B*H*T*T)]: dO,
                                         then dS as GEMM operands */
    tandem_tensor *dqkv_op;           /* bf16 materialised, or NULL: out [B, T, 3d] bf16(dqkv),
                                         the QKV projection's dy operand (no cast after); may be
                                         operand (written after its last use) */
    const tandem_tensor *key_mask;    /* in [B, T] u8, with ga only */
    const tandem_ga_dims *ga;         /* the guided-attention gradient (scale = its weight),
                                         added to dP before the softmax backward; NULL: none */
    /* fused only (and key_mask always): */
    const tandem_tensor *qkv_op;      /* in [B, T, 3d] op from the forward */
    const tandem_tensor *y;           /* in [B, T, d] op: the forward's output */
    const tandem_tensor *lse;         /* in [B, H, T] f32 from the forward */
    const float *ga_sum;              /* in [B, ga->ga_heads, Tm] f32 from the forward; with ga */
} tandem_attention_bwd_io;

/* No key mask is needed for attention itself: the forward's P is exactly 0 at masked and future
 * keys, so dS is too (the guided-attention term reads it to find the real positions).
 * All tensors distinct, but dqkv_op (see above). */
tandem_status tandem_attention_bwd(tandem_stream *s, const tandem_attention_shape *sh,
                                   const tandem_attention_bwd_io *io);

#endif
