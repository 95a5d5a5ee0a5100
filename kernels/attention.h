/* attention.h — argument structs of the attention kernels (attention.cu): the head layout
 * transforms around the batched attention GEMMs, and the causal masked softmax with its
 * backward. The GEMMs themselves (S = Q K^T, O = P V and their backward) go through the GEMM op;
 * runtime/model/attention.c composes both.
 *
 * Shapes: B batch, T sequence, H heads, dh head size, d = H * dh. Within [B, T, d] (and each
 * third of [B, T, 3d]) head h owns columns h*dh .. h*dh + dh - 1. Per-head tensors are
 * [B, H, T, dh] so every (b, h) is one dense [T, dh] matrix of the batched GEMMs.
 */
#ifndef TANDEM_KERNELS_ATTENTION_H
#define TANDEM_KERNELS_ATTENTION_H

#include "kernels/ktypes.h"

/* Threads per block (attention_host.c launches exactly these; attention.cu declares them as
 * launch bounds): element-wise kernels, and softmax rows (one warp per row). */
#define TANDEM_K_ATTN_THREADS 256
#define TANDEM_K_ATTN_ROWS_PER_BLOCK 4

/* q, k, v [b, h, t, :] = qkv [b, t, {0, d, 2d} + h*dh + :] */
typedef struct tandem_k_qkv_split_args {
    const float *qkv; /* [B, T, 3d]: columns [0, d) q, [d, 2d) k, [2d, 3d) v */
    float *q;         /* [B, H, T, dh] */
    float *k;         /* [B, H, T, dh] */
    float *v;         /* [B, H, T, dh] */
    int batch, seq, heads, head_dim;
} tandem_k_qkv_split_args;

/* The backward of qkv_split: dqkv [b, t, {0, d, 2d} + h*dh + :] = dq, dk, dv [b, h, t, :] */
typedef struct tandem_k_qkv_merge_grad_args {
    const float *dq; /* [B, H, T, dh] */
    const float *dk; /* [B, H, T, dh] */
    const float *dv; /* [B, H, T, dh] */
    float *dqkv;     /* [B, T, 3d] */
    int batch, seq, heads, head_dim;
} tandem_k_qkv_merge_grad_args;

/* y [b, t, h*dh + :] = o [b, h, t, :] */
typedef struct tandem_k_heads_merge_args {
    const float *o; /* [B, H, T, dh] */
    float *y;       /* [B, T, d] */
    int batch, seq, heads, head_dim;
} tandem_k_heads_merge_args;

/* The backward of heads_merge: d_o [b, h, t, :] = dy [b, t, h*dh + :] */
typedef struct tandem_k_heads_split_grad_args {
    const float *dy; /* [B, T, d] */
    float *d_o;      /* [B, H, T, dh] */
    int batch, seq, heads, head_dim;
} tandem_k_heads_split_grad_args;

/* Row-wise softmax over the keys a query may see: key j is allowed for query i when j <= i
 * (causal) and key_mask[b, j] != 0. p[i, j] = exp(s[i, j] - m) / sum over allowed j of
 * exp(s[i, j] - m), m = the row's largest allowed score; p = 0 at every other key. A row with
 * no allowed key (only when key 0 is masked) is all zeros, never NaN.
 * s may equal p (in place): every element is read before it is written, by the same thread. */
typedef struct tandem_k_softmax_causal_fwd_args {
    const float *s;          /* [B, H, T, T] scores, already scaled by 1/sqrt(dh) */
    const uint8_t *key_mask; /* [B, T] 1 (any nonzero) = real key position, 0 = padding */
    float *p;                /* [B, H, T, T] probabilities */
    int batch, heads, seq;
} tandem_k_softmax_causal_fwd_args;

/* ds[i, j] = p[i, j] * (dp[i, j] - sum_k p[i, k] * dp[i, k]) for j <= i, 0 for j > i. Masked
 * keys get 0 because the forward left p = 0 there, so no key mask is needed.
 * dp may equal ds (in place), as in the forward. */
typedef struct tandem_k_softmax_causal_bwd_args {
    const float *dp; /* [B, H, T, T] gradient of the probabilities */
    const float *p;  /* [B, H, T, T] the forward's probabilities */
    float *ds;       /* [B, H, T, T] gradient of the scores */
    int batch, heads, seq;
} tandem_k_softmax_causal_bwd_args;

#endif
