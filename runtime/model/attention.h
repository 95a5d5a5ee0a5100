/* attention.h — causal multi-head self-attention with a key padding mask, forward and
 * backward, queued on a stream: the attention kernels (kernels/attention.h) around batched
 * GEMMs of the device's GEMM op (batch = B*H, one dense [T, dh] matrix per head).
 *
 *   forward:  q, k, v = split(qkv);  S = Q K^T / sqrt(dh);  P = softmax_causal(S, key_mask);
 *             O = P V;  y = merge_heads(O)
 *   backward: dO = split_heads(dy);  dP = dO V^T;  dV = P^T dO;  dS = softmax_bwd(dP, P);
 *             dQ = dS K / sqrt(dh);  dK = dS^T Q / sqrt(dh);  dqkv = merge(dQ, dK, dV)
 *
 * The QKV projection before and the output projection after are the caller's GEMMs.
 * Everything is on raw device addresses (tandem_dptr, f32 unless named) of tensors the caller
 * declared in its pool; nothing here allocates. Call tandem_attention_prepare before the pool
 * is committed (the cuda backend resolves each GEMM shape once, then).
 * Owns nothing.
 */
#ifndef TANDEM_RUNTIME_ATTENTION_H
#define TANDEM_RUNTIME_ATTENTION_H

#include <stdint.h>

#include "platform/device.h"

typedef struct tandem_attention_shape {
    int batch;    /* B */
    int seq;      /* T: query and key positions */
    int heads;    /* H */
    int head_dim; /* dh; the model width is d = H * dh */
} tandem_attention_shape;

/* Element counts of the tensors below, for declaring them. */
typedef struct tandem_attention_sizes {
    int64_t qkv;    /* B * T * 3d   qkv, dqkv */
    int64_t model;  /* B * T * d    y, dy */
    int64_t heads;  /* B * H * T * dh   q, k, v, o and their gradients */
    int64_t scores; /* B * H * T * T    p, dp */
    int64_t mask;   /* B * T  (bytes: key_mask is u8) */
} tandem_attention_sizes;

/* TANDEM_E_INVALID unless every dimension is >= 1 and 3d fits an int. */
tandem_status tandem_attention_sizes_of(const tandem_attention_shape *sh,
                                        tandem_attention_sizes *out);

/* Resolve the three GEMM shapes the forward and backward use on dev (before pool commit). */
tandem_status tandem_attention_prepare(tandem_device *dev, const tandem_attention_shape *sh);

typedef struct tandem_attention_fwd_io {
    tandem_dptr qkv;      /* in  [B, T, 3d]: columns [0, d) q, [d, 2d) k, [2d, 3d) v */
    tandem_dptr key_mask; /* in  [B, T] u8: 1 = real key position, 0 = padding */
    tandem_dptr q, k, v;  /* out [B, H, T, dh], kept for the backward */
    tandem_dptr p;        /* out [B, H, T, T]: the scores, then in place the probabilities
                             (kept for the backward) */
    tandem_dptr o;        /* scratch [B, H, T, dh] */
    tandem_dptr y;        /* out [B, T, d]: heads merged, before the output projection */
} tandem_attention_fwd_io;

/* All buffers distinct (q, k, v, o, p must not overlap one another: they meet in GEMMs). */
tandem_status tandem_attention_fwd(tandem_stream *s, const tandem_attention_shape *sh,
                                   const tandem_attention_fwd_io *io);

typedef struct tandem_attention_bwd_io {
    tandem_dptr dy;         /* in  [B, T, d]: gradient of the forward's y */
    tandem_dptr q, k, v;    /* in  [B, H, T, dh] from the forward */
    tandem_dptr p;          /* in  [B, H, T, T] from the forward */
    tandem_dptr d_o;        /* scratch [B, H, T, dh] */
    tandem_dptr dp;         /* scratch [B, H, T, T]: dP, then in place dS */
    tandem_dptr dq, dk, dv; /* scratch [B, H, T, dh] */
    tandem_dptr dqkv;       /* out [B, T, 3d]: written, not accumulated */
} tandem_attention_bwd_io;

/* No key mask is needed: the forward's P is exactly 0 at masked and future keys, so dS is too.
 * All buffers distinct. */
tandem_status tandem_attention_bwd(tandem_stream *s, const tandem_attention_shape *sh,
                                   const tandem_attention_bwd_io *io);

#endif
