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
    tandem_bf16 *q16, *k16, *v16; /* [B, H, T, dh] each: bf16 instead (q, k, v NULL), or NULL */
    int batch, seq, heads, head_dim;
} tandem_k_qkv_split_args;

/* The backward of qkv_split: dqkv [b, t, {0, d, 2d} + h*dh + :] = dq, dk, dv [b, h, t, :] */
typedef struct tandem_k_qkv_merge_grad_args {
    const float *dq; /* [B, H, T, dh] */
    const float *dk; /* [B, H, T, dh] */
    const float *dv; /* [B, H, T, dh] */
    float *dqkv;     /* [B, T, 3d], or NULL (only dqkv16) */
    tandem_bf16 *dqkv16; /* [B, T, 3d] bf16(dqkv) too (the GEMMs' operand), or NULL */
    int batch, seq, heads, head_dim;
} tandem_k_qkv_merge_grad_args;

/* y [b, t, h*dh + :] = o [b, h, t, :] */
typedef struct tandem_k_heads_merge_args {
    const float *o; /* [B, H, T, dh] */
    float *y;       /* [B, T, d]; NULL: only y16 */
    tandem_bf16 *y16; /* [B, T, d] bf16(y), the output projection's operand, or NULL */
    int batch, seq, heads, head_dim;
} tandem_k_heads_merge_args;

/* The backward of heads_merge: d_o [b, h, t, :] = dy [b, t, h*dh + :] */
typedef struct tandem_k_heads_split_grad_args {
    const float *dy; /* [B, T, d] */
    float *d_o;      /* [B, H, T, dh]; NULL: only d_o16 */
    tandem_bf16 *d_o16; /* [B, H, T, dh] bf16(d_o), the GEMMs' operand, or NULL */
    int batch, seq, heads, head_dim;
} tandem_k_heads_split_grad_args;

/* Row-wise softmax over the keys a query may see: key j is allowed for query i when j <= i
 * (causal) and key_mask[b, j] != 0. p[i, j] = exp(s[i, j] - m) / sum over allowed j of
 * exp(s[i, j] - m), m = the row's largest allowed score; p = 0 at every other key. A row with
 * no allowed key (only when key 0 is masked) is all zeros, never NaN.
 * Only the nq query rows i = q0 .. q0 + nq - 1 of each (b, h) are computed, and s and p hold
 * just those rows (training: q0 = 0, nq = T; a key/value-cached step: its one new row).
 * f32 (bf16 = 0): s may equal p (in place): every element is read before it is written, by the
 * same thread. bf16 = 1: p is written as bf16 (the kept probabilities, the P V operand),
 * computed in f32: no f32 P and no cast pass after. */
typedef struct tandem_k_softmax_causal_fwd_args {
    const float *s;          /* [B, H, nq, T] scores, already scaled by 1/sqrt(dh) */
    const uint8_t *key_mask; /* [B, T] 1 (any nonzero) = real key position, 0 = padding */
    void *p;                 /* [B, H, nq, T] probabilities: f32, or bf16 */
    int batch, heads, seq;
    int q0, nq; /* the query rows computed: 0 <= q0, q0 + nq <= seq */
    int bf16;   /* 1: p is bf16 */
} tandem_k_softmax_causal_fwd_args;

/* ds[i, j] = p[i, j] * (dp[i, j] - sum_k p[i, k] * dp[i, k]) for j <= i, 0 for j > i. Masked
 * keys get 0 because the forward left p = 0 there, so no key mask is needed.
 * f32 (bf16 = 0): dp may equal ds (in place), as in the forward. bf16 = 1: p is read and ds
 * written as bf16 (the kept bf16 probabilities, and the operand of the dQ / dK GEMMs), computed
 * in f32 in between: no widening pass before, no cast after. */
typedef struct tandem_k_softmax_causal_bwd_args {
    const float *dp; /* [B, H, T, T] gradient of the probabilities */
    const void *p;   /* [B, H, T, T] the forward's probabilities: f32, or bf16 */
    void *ds;        /* [B, H, T, T] gradient of the scores: f32, or bf16 */
    int batch, heads, seq;
    int bf16;        /* 1: p and ds are bf16 */
} tandem_k_softmax_causal_bwd_args;

/* Element i of an f32 (bf16 == 0) or bf16 array. */
TANDEM_HD float tandem_k_attn_load(const void *p, int64_t i, int bf16) {
    return bf16 ? tandem_bf16_to_f32(((const tandem_bf16 *)p)[i]) : ((const float *)p)[i];
}
TANDEM_HD void tandem_k_attn_store(void *p, int64_t i, int bf16, float v) {
    if (bf16)
        ((tandem_bf16 *)p)[i] = tandem_f32_to_bf16(v);
    else
        ((float *)p)[i] = v;
}
/* ---- guided-attention loss (docs/TRAINING.md) -----------------------------------------------
 * Sequence positions [0, Tt) are text keys, [Tt, Tt + Tm) mel positions (seq = Tt + Tm). From
 * the key mask of the batch (batch_prep): Tt_b = real text keys of item b (the real ones come
 * first), N_b = its real mel positions, Nq = sum_b N_b. For h < ga_heads and a real mel query j:
 *   G[j, t]       = exp(-(t / Tt_b - (j + 0.5) / N_b)^2 / (2 sigma^2))
 *   ga_fwd:  rows[b, h, j] = scale / Nq * (1 - sum_{t < Tt_b} p[b, h, Tt + j, t] G[j, t])
 *            (0 for a padded query or an item without text or mel), so the sum of rows with
 *            scale = 1 / (ga_heads * layers), over the layers, is the mean over real queries,
 *            heads and layers;
 *   ga_bwd:  dp[b, h, Tt + j, t] += -scale / Nq * G[j, t] for t < Tt_b (its gradient, added
 *            before the softmax backward; scale = loss weight / (ga_heads * layers)). */
typedef struct tandem_k_ga_fwd_args {
    const void *p;           /* [B, H, seq, seq] attention probabilities: f32, or bf16 */
    const uint8_t *key_mask; /* [B, seq] */
    float *rows;             /* [B, ga_heads, Tm] */
    int batch, heads, ga_heads, text_len, mel_len;
    float sigma, scale;
    int bf16;                /* 1: p is bf16 (the bf16 model's kept probabilities) */
} tandem_k_ga_fwd_args;

typedef struct tandem_k_ga_bwd_args {
    float *dp;               /* [B, H, seq, seq] gradient of the probabilities, += */
    const uint8_t *key_mask; /* [B, seq] */
    int batch, heads, ga_heads, text_len, mel_len;
    float sigma, scale;
} tandem_k_ga_bwd_args;

/* Real text keys and real mel positions of item b, from its key mask row. */
TANDEM_HD void tandem_k_ga_counts(const uint8_t *key_mask, int b, int text_len, int mel_len,
                                  int *tt, int *nm) {
    const uint8_t *row = key_mask + (int64_t)b * (text_len + mel_len);
    int a = 0, c = 0;
    for (int t = 0; t < text_len; t++) a += row[t] != 0;
    for (int j = 0; j < mel_len; j++) c += row[text_len + j] != 0;
    *tt = a, *nm = c;
}
/* Nq: real mel positions of the batch. */
TANDEM_HD int tandem_k_ga_queries(const uint8_t *key_mask, int batch, int text_len, int mel_len) {
    int total = 0;
    for (int b = 0; b < batch; b++) {
        int tt, nm;
        tandem_k_ga_counts(key_mask, b, text_len, mel_len, &tt, &nm);
        total += nm;
    }
    return total;
}
/* G[j, t] of an item with tt text keys and nm mel positions. */
TANDEM_HD float tandem_k_ga_g(int t, int j, int tt, int nm, float sigma) {
    const float x = (float)t / (float)tt - ((float)j + 0.5f) / (float)nm;
    return expf(-x * x / (2.0f * sigma * sigma));
}
/* Row `row` = (b, h, j) of [B, ga_heads, Tm]: j, the item's counts tt and nm, and the offset of
 * query Tt + j's probability row in [B, H, T, T]; 0 when the row carries no loss (a padded
 * query, an item without text). */
TANDEM_HD int tandem_k_ga_row(const uint8_t *key_mask, int64_t row, int heads, int ga_heads,
                              int text_len, int mel_len, int *j, int *tt, int *nm, int64_t *off) {
    const int T = text_len + mel_len;
    const int h = (int)(row / mel_len % ga_heads), b = (int)(row / ((int64_t)mel_len * ga_heads));
    *j = (int)(row % mel_len);
    tandem_k_ga_counts(key_mask, b, text_len, mel_len, tt, nm);
    *off = (((int64_t)b * heads + h) * T + text_len + *j) * T;
    return *tt > 0 && *j < *nm;
}
/* ga_fwd's value of row `row`, given nq = tandem_k_ga_queries (the one computation of the host
 * implementation and the kernel). */
TANDEM_HD float tandem_k_ga_fwd_row(const tandem_k_ga_fwd_args *a, int64_t row, int nq) {
    int j, tt, nm;
    int64_t off;
    if (!tandem_k_ga_row(a->key_mask, row, a->heads, a->ga_heads, a->text_len, a->mel_len, &j, &tt,
                         &nm, &off) || nq == 0)
        return 0.0f;
    double acc = 0.0;
    for (int t = 0; t < tt; t++)
        acc += (double)tandem_k_attn_load(a->p, off + t, a->bf16) * tandem_k_ga_g(t, j, tt, nm, a->sigma);
    return (float)((1.0 - acc) * ((double)a->scale / (double)nq));
}
/* ga_bwd on row `row`: dp of query Tt + j += -scale / nq * G on its text keys. */
TANDEM_HD void tandem_k_ga_bwd_row(const tandem_k_ga_bwd_args *a, int64_t row, int nq) {
    int j, tt, nm;
    int64_t off;
    if (!tandem_k_ga_row(a->key_mask, row, a->heads, a->ga_heads, a->text_len, a->mel_len, &j, &tt,
                         &nm, &off) || nq == 0)
        return;
    const float c = a->scale / (float)nq;
    for (int t = 0; t < tt; t++) a->dp[off + t] -= c * tandem_k_ga_g(t, j, tt, nm, a->sigma);
}

/* ---- fused causal attention (flash-style; docs/TRAINING.md) ---------------------------------
 * No [T, T] tensor: the forward keeps per query row its log-sum-exp (and, on guided-attention
 * rows, the raw sum of p G), and the backward recomputes the probabilities from them.
 *
 * Layout: element c of head h at position t of item b of a "query-side" tensor (q, o, dy, dq) is
 *   x[(b * q_rows + t - q0) * ld_q + h * hs_q + c]          (positions q0 .. q0 + q_rows - 1)
 * and of a "key-side" tensor (k, v, dk, dv)
 *   x[(b * seq + t) * ld_k + h * hs_k + c]                   (positions 0 .. seq - 1)
 * Training: q, k, v are column blocks of qkv [B, T, 3d] (ld 3d, hs dh), o and dy [B, T, d]
 * (ld d), dq, dk, dv column blocks of dqkv [B, T, 3d]. The KV-cache step: one query row q0 = p
 * against the caches [H, T, dh] (ld_k dh, hs_k T * dh).
 *
 * Key t is allowed for query i when t <= i and key_mask[b, t] != 0; p[i, t] = exp(s - lse_i)
 * with s = qk_scale * q_i . k_t; p = 0 at other keys; a query with no allowed key gets o = 0
 * and lse = 0 (never read: the backward computes nothing for it).
 * Inputs q, k, v (and o in the backward) are f32, or bf16 when bf16 != 0; sums are f32.
 *
 * Guided attention (ga_heads > 0; text_len = Tt, mel positions Tt .. seq - 1; formula of
 * ga_fwd above): for h < ga_heads and a real mel query j (query Tt + j):
 *   forward:  ga_sum[b, h, j] = sum_{t < Tt_b} p G (0 on rows without loss);
 *             ga_rows[b, h, j] = ga_scale / Nq * (1 - ga_sum), as ga_fwd writes them;
 *   backward: dp[i, t] += -ga_scale / Nq * G[j, t] for t < Tt_b before the softmax backward,
 *             i.e. dS = P (dP - D), D_i = rowsum(dO o O)_i - ga_scale / Nq * ga_sum. */
#define TANDEM_K_ATTN_FA_THREADS 128 /* 4 warps */
#define TANDEM_K_ATTN_FA_BQ 16       /* query rows per forward / dq block (4 per warp) */
#define TANDEM_K_ATTN_FA_BK 32       /* keys per tile (one per lane) */
/* head_dim limit of the fused kernels: their shared tiles stay under 48 KiB of the default
 * dynamic shared memory (runtime/model/attention.c keeps the materialised path past it) */
#define TANDEM_K_ATTN_FA_MAX_DH 64

typedef struct tandem_k_attn_fused_fwd_args {
    const void *q, *k, *v;   /* f32 or bf16 (layout above) */
    const uint8_t *key_mask; /* [B, seq] */
    void *o;                 /* out f32 or bf16: the heads' outputs, element (b, r, h, c) at
                                (b * q_rows + r) * ld_o + h * head_dim + c */
    float *lse;              /* out [B, H, q_rows] */
    float *ga_sum;           /* out [B, ga_heads, seq - text_len] (ga_heads > 0) */
    float *ga_rows;          /* out [B, ga_heads, seq - text_len] (ga_heads > 0) */
    int batch, seq, heads, head_dim, q0, q_rows, ld_q, hs_q, ld_k, hs_k, ld_o, bf16;
    int ga_heads, text_len; /* text_len only read with ga_heads > 0 */
    float qk_scale, ga_sigma, ga_scale;
} tandem_k_attn_fused_fwd_args;

/* dq, dk, dv written (not accumulated), f32, query-side / key-side layouts with ld_g (every
 * head's hs = head_dim). q0 = 0 and q_rows = seq (training only). */
typedef struct tandem_k_attn_fused_bwd_args {
    const void *q, *k, *v;   /* as the forward's */
    const uint8_t *key_mask; /* [B, seq] */
    const void *o;           /* the forward's output (query-side, ld_o, hs = head_dim) */
    const float *dy;         /* its gradient (query-side, ld_o) */
    const float *lse;        /* [B, H, seq] */
    const float *ga_sum;     /* [B, ga_heads, seq - text_len] (ga_heads > 0) */
    float *dq, *dk, *dv;     /* out f32 */
    int batch, seq, heads, head_dim, ld_q, ld_o, ld_g, bf16;
    int ga_heads, text_len;
    float qk_scale, ga_sigma, ga_scale;
} tandem_k_attn_fused_bwd_args;

/* ga_scale / Nq for query i of head h of an item with tt real text keys and nm real mel
 * positions (nq = Nq of the batch); 0 when the row carries no guided-attention loss. */
TANDEM_HD float tandem_k_attn_ga_coef(int h, int i, int ga_heads, int text_len, int tt, int nm,
                                      int nq, float ga_scale) {
    if (h >= ga_heads || i < text_len || nq == 0 || tt == 0 || i - text_len >= nm) return 0.0f;
    return ga_scale / (float)nq;
}
/* Offset of head h, position t (relative row r) of item b in a strided tensor (layout above). */
TANDEM_HD int64_t tandem_k_attn_at(int b, int rows, int r, int ld, int h, int hs) {
    return ((int64_t)b * rows + r) * ld + (int64_t)h * hs;
}

#endif
