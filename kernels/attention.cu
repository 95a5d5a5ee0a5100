/* attention.cu — attention kernels (argument structs and semantics: attention.h): head layout
 * transforms (grid-stride element-wise loops) and the causal masked softmax forward/backward
 * (one warp per score row, warp-shuffle reductions, no shared memory or block barriers).
 * Launch geometry and host implementations: attention_host.c.
 */
#include "kernels/dialect.h"

#include "kernels/attention.h"

/* Identity of a column of a [B, T, w] row-major tensor whose rows are heads-interleaved:
 * element idx of [B, T, groups * H * dh] lives at [group][b, h, t, e] of per-head tensors. */
DEVICE_FN void attn_k_locate(int64_t idx, int groups, int seq, int heads, int head_dim,
                             int *group, int64_t *head_off) {
    int d = heads * head_dim;
    int64_t width = (int64_t)groups * d;
    int c = (int)(idx % width);
    int64_t bt = idx / width;
    int t = (int)(bt % seq);
    int64_t b = bt / seq;
    int cc = c % d;
    int h = cc / head_dim;
    int e = cc % head_dim;
    *group = c / d;
    *head_off = ((b * heads + h) * seq + t) * head_dim + e;
}

DEVICE_FN int64_t attn_k_first(void) {
    return (int64_t)blockIdx.x * (int64_t)blockDim.x + (int64_t)threadIdx.x;
}
DEVICE_FN int64_t attn_k_stride(void) { return (int64_t)gridDim.x * (int64_t)blockDim.x; }

/* Loops run over the [B, T, *] index so the wide, interleaved side is read or written
 * contiguously; the per-head side is contiguous in runs of dh. */
KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_THREADS) tandem_k_qkv_split(tandem_k_qkv_split_args a) {
    int64_t n = (int64_t)a.batch * a.seq * 3 * a.heads * a.head_dim;
    for (int64_t i = attn_k_first(); i < n; i += attn_k_stride()) {
        int g;
        int64_t o;
        attn_k_locate(i, 3, a.seq, a.heads, a.head_dim, &g, &o);
        float *dst = g == 0 ? a.q : (g == 1 ? a.k : a.v);
        dst[o] = a.qkv[i];
    }
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_THREADS) tandem_k_qkv_merge_grad(tandem_k_qkv_merge_grad_args a) {
    int64_t n = (int64_t)a.batch * a.seq * 3 * a.heads * a.head_dim;
    for (int64_t i = attn_k_first(); i < n; i += attn_k_stride()) {
        int g;
        int64_t o;
        attn_k_locate(i, 3, a.seq, a.heads, a.head_dim, &g, &o);
        const float *src = g == 0 ? a.dq : (g == 1 ? a.dk : a.dv);
        a.dqkv[i] = src[o];
    }
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_THREADS) tandem_k_heads_merge(tandem_k_heads_merge_args a) {
    int64_t n = (int64_t)a.batch * a.seq * a.heads * a.head_dim;
    for (int64_t i = attn_k_first(); i < n; i += attn_k_stride()) {
        int g;
        int64_t o;
        attn_k_locate(i, 1, a.seq, a.heads, a.head_dim, &g, &o);
        a.y[i] = a.o[o];
    }
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_THREADS) tandem_k_heads_split_grad(tandem_k_heads_split_grad_args a) {
    int64_t n = (int64_t)a.batch * a.seq * a.heads * a.head_dim;
    for (int64_t i = attn_k_first(); i < n; i += attn_k_stride()) {
        int g;
        int64_t o;
        attn_k_locate(i, 1, a.seq, a.heads, a.head_dim, &g, &o);
        a.d_o[o] = a.dy[i];
    }
}

/* Butterfly reductions: every lane ends with the result, so no broadcast is needed. */
DEVICE_FN float attn_k_warp_max(float v) {
    for (int off = TANDEM_WARP_SIZE / 2; off > 0; off /= 2)
        v = fmaxf(v, __shfl_xor_sync(TANDEM_FULL_MASK, v, off));
    return v;
}
DEVICE_FN float attn_k_warp_sum(float v) {
    for (int off = TANDEM_WARP_SIZE / 2; off > 0; off /= 2)
        v += __shfl_xor_sync(TANDEM_FULL_MASK, v, off);
    return v;
}

/* The score row of this warp (warp w of block x handles row x * warps_per_block + w); -1 when
 * past the last row. Whole warps leave together, and there are no block barriers. */
DEVICE_FN int64_t attn_k_warp_row(int64_t rows) {
    int64_t row = (int64_t)blockIdx.x * (int64_t)(blockDim.x / TANDEM_WARP_SIZE) +
                  (int64_t)(threadIdx.x / TANDEM_WARP_SIZE);
    return row < rows ? row : -1;
}

/* Lane l handles keys l, l + 32, ...: consecutive lanes read consecutive scores. Query i only
 * reads keys 0..i (the causal half); keys past i are written as 0. */
KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_ROWS_PER_BLOCK * 32) tandem_k_softmax_causal_fwd(tandem_k_softmax_causal_fwd_args a) {
    const int T = a.seq;
    int64_t row = attn_k_warp_row((int64_t)a.batch * a.heads * a.nq);
    if (row < 0) return;
    const int lane = (int)(threadIdx.x % TANDEM_WARP_SIZE);
    const int i = a.q0 + (int)(row % a.nq);
    const int64_t b = row / ((int64_t)a.nq * a.heads);
    const float *s = a.s + row * T;                /* [T] */
    float *p = a.p + row * T;                      /* [T] */
    const uint8_t *mask = a.key_mask + b * T;      /* [T] */

    float m = -3.402823466e+38f; /* -FLT_MAX: below any finite score */
    int any = 0;
    for (int j = lane; j <= i; j += TANDEM_WARP_SIZE)
        if (mask[j]) {
            m = fmaxf(m, s[j]);
            any = 1;
        }
    m = attn_k_warp_max(m);
    any = __any_sync(TANDEM_FULL_MASK, any);

    float sum = 0.0f;
    for (int j = lane; j <= i; j += TANDEM_WARP_SIZE)
        if (mask[j]) sum += expf(s[j] - m);
    sum = attn_k_warp_sum(sum);
    /* No allowed key: the row is all zeros (sum is 0 and m meaningless). */
    const float inv = any ? 1.0f / sum : 0.0f;

    for (int j = lane; j < T; j += TANDEM_WARP_SIZE) {
        float v = 0.0f;
        if (j <= i && mask[j]) v = expf(s[j] - m) * inv;
        p[j] = v;
    }
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_ROWS_PER_BLOCK * 32) tandem_k_softmax_causal_bwd(tandem_k_softmax_causal_bwd_args a) {
    const int T = a.seq;
    int64_t row = attn_k_warp_row((int64_t)a.batch * a.heads * T);
    if (row < 0) return;
    const int lane = (int)(threadIdx.x % TANDEM_WARP_SIZE);
    const int i = (int)(row % T);
    const float *dp = a.dp + row * T; /* [T] */
    const float *p = a.p + row * T;   /* [T] */
    float *ds = a.ds + row * T;       /* [T] */

    float r = 0.0f;
    for (int j = lane; j <= i; j += TANDEM_WARP_SIZE) r += p[j] * dp[j];
    r = attn_k_warp_sum(r);

    for (int j = lane; j < T; j += TANDEM_WARP_SIZE) ds[j] = j <= i ? p[j] * (dp[j] - r) : 0.0f;
}

/* ---- guided-attention loss (attention.h): one thread per (b, h < ga_heads, j) row ---- */
KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_THREADS) tandem_k_ga_fwd(tandem_k_ga_fwd_args a) {
    const int64_t n = (int64_t)a.batch * a.ga_heads * a.mel_len;
    const int nq = tandem_k_ga_queries(a.key_mask, a.batch, a.text_len, a.mel_len);
    for (int64_t row = attn_k_first(); row < n; row += attn_k_stride())
        a.rows[row] = tandem_k_ga_fwd_row(&a, row, nq);
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_THREADS) tandem_k_ga_bwd(tandem_k_ga_bwd_args a) {
    const int64_t n = (int64_t)a.batch * a.ga_heads * a.mel_len;
    const int nq = tandem_k_ga_queries(a.key_mask, a.batch, a.text_len, a.mel_len);
    for (int64_t row = attn_k_first(); row < n; row += attn_k_stride()) tandem_k_ga_bwd_row(&a, row, nq);
}
