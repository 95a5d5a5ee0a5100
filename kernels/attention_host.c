/* attention_host.c — launch geometry and host implementations of the attention kernels
 * (attention.cu). The host implementations follow the semantics of attention.h with plain
 * loops; they are what the host backend runs, so they are deterministic (fixed summation
 * order), and the reference the emulated kernels are compared with.
 */
#include <math.h>
#include <stdint.h>

#include "kernels/host_parallel.h"
#include "kernels/registry.h"

/* Host parallel loops (platform/host/host_pool.h): each function below over a range of rows is the
 * reference; the kernel's host implementation splits its rows over the host device's threads.
 * Every output element is written by one row with the same arithmetic whatever the split, so
 * results are bit-identical for any thread count. About HOST_GRAIN elements per range. */
enum { HOST_GRAIN = 16384 };

static int64_t grain_of(int64_t width) { return width > 0 ? HOST_GRAIN / width + 1 : HOST_GRAIN; }

/* Element-wise transforms: 256 threads per block, at most 4096 blocks (a grid-stride loop
 * covers the rest). Softmax rows: one warp each, 4 warps per block. */
enum { ATTN_THREADS = TANDEM_K_ATTN_THREADS, ATTN_MAX_BLOCKS = 4096, ATTN_ROWS_PER_BLOCK = TANDEM_K_ATTN_ROWS_PER_BLOCK };

static void elementwise_dims(int64_t n, tandem_launch_dims *d) {
    *d = tandem_dims_1d(n, ATTN_THREADS);
    if (d->grid[0] > ATTN_MAX_BLOCKS) d->grid[0] = ATTN_MAX_BLOCKS;
}

static void row_dims(int64_t rows, tandem_launch_dims *d) {
    *d = tandem_dims_1d(rows, ATTN_ROWS_PER_BLOCK);
    d->block[0] = ATTN_ROWS_PER_BLOCK * 32;
}

/* Offset in a per-head tensor [B, H, T, dh] of (b, h, t, e). */
static int64_t head_offset(int64_t b, int h, int t, int e, int seq, int heads, int head_dim) {
    return ((b * heads + h) * seq + t) * head_dim + e;
}

/* ---- qkv_split ---- */
void tandem_k_qkv_split_geom(const tandem_k_qkv_split_args *a, tandem_launch_dims *d) {
    elementwise_dims((int64_t)a->batch * a->seq * 3 * a->heads * a->head_dim, d);
}
/* Rows [r0, r1) of the [B * T] token rows. */
static void qkv_split_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_qkv_split_args *a = ctx;
    const int H = a->heads, dh = a->head_dim, T = a->seq, d = H * dh;
    float *const dst[3] = {a->q, a->k, a->v};
    for (int64_t bt = r0; bt < r1; bt++) {
        const int64_t b = bt / T;
        const int t = (int)(bt % T);
        const float *row = a->qkv + bt * 3 * d; /* [3d] */
        for (int g = 0; g < 3; g++)
            for (int h = 0; h < H; h++)
                for (int e = 0; e < dh; e++)
                    dst[g][head_offset(b, h, t, e, T, H, dh)] = row[g * d + h * dh + e];
    }
}
void tandem_k_qkv_split_host(const tandem_k_qkv_split_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->seq, grain_of(3 * (int64_t)a->heads * a->head_dim),
                             qkv_split_rows, (void *)a);
}

/* ---- qkv_merge_grad ---- */
void tandem_k_qkv_merge_grad_geom(const tandem_k_qkv_merge_grad_args *a, tandem_launch_dims *d) {
    elementwise_dims((int64_t)a->batch * a->seq * 3 * a->heads * a->head_dim, d);
}
static void qkv_merge_grad_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_qkv_merge_grad_args *a = ctx;
    const int H = a->heads, dh = a->head_dim, T = a->seq, d = H * dh;
    const float *const src[3] = {a->dq, a->dk, a->dv};
    for (int64_t bt = r0; bt < r1; bt++) {
        const int64_t b = bt / T;
        const int t = (int)(bt % T);
        float *row = a->dqkv + bt * 3 * d; /* [3d] */
        for (int g = 0; g < 3; g++)
            for (int h = 0; h < H; h++)
                for (int e = 0; e < dh; e++)
                    row[g * d + h * dh + e] = src[g][head_offset(b, h, t, e, T, H, dh)];
    }
}
void tandem_k_qkv_merge_grad_host(const tandem_k_qkv_merge_grad_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->seq, grain_of(3 * (int64_t)a->heads * a->head_dim),
                             qkv_merge_grad_rows, (void *)a);
}

/* ---- heads_merge ---- */
void tandem_k_heads_merge_geom(const tandem_k_heads_merge_args *a, tandem_launch_dims *d) {
    elementwise_dims((int64_t)a->batch * a->seq * a->heads * a->head_dim, d);
}
static void heads_merge_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_heads_merge_args *a = ctx;
    const int H = a->heads, dh = a->head_dim, T = a->seq, d = H * dh;
    for (int64_t bt = r0; bt < r1; bt++) {
        const int64_t b = bt / T;
        const int t = (int)(bt % T);
        for (int h = 0; h < H; h++)
            for (int e = 0; e < dh; e++)
                a->y[bt * d + h * dh + e] = a->o[head_offset(b, h, t, e, T, H, dh)];
    }
}
void tandem_k_heads_merge_host(const tandem_k_heads_merge_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->seq, grain_of((int64_t)a->heads * a->head_dim),
                             heads_merge_rows, (void *)a);
}

/* ---- heads_split_grad ---- */
void tandem_k_heads_split_grad_geom(const tandem_k_heads_split_grad_args *a, tandem_launch_dims *d) {
    elementwise_dims((int64_t)a->batch * a->seq * a->heads * a->head_dim, d);
}
static void heads_split_grad_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_heads_split_grad_args *a = ctx;
    const int H = a->heads, dh = a->head_dim, T = a->seq, d = H * dh;
    for (int64_t bt = r0; bt < r1; bt++) {
        const int64_t b = bt / T;
        const int t = (int)(bt % T);
        for (int h = 0; h < H; h++)
            for (int e = 0; e < dh; e++)
                a->d_o[head_offset(b, h, t, e, T, H, dh)] = a->dy[bt * d + h * dh + e];
    }
}
void tandem_k_heads_split_grad_host(const tandem_k_heads_split_grad_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->seq, grain_of((int64_t)a->heads * a->head_dim),
                             heads_split_grad_rows, (void *)a);
}

/* ---- softmax_causal_fwd ---- */
void tandem_k_softmax_causal_fwd_geom(const tandem_k_softmax_causal_fwd_args *a,
                                      tandem_launch_dims *d) {
    row_dims((int64_t)a->batch * a->heads * a->seq, d);
}
/* The sum is accumulated in double (deterministic, and more accurate than the kernel's float
 * tree, so the emulator comparison measures the kernel's error). Each exponential is taken
 * once, kept in p and scaled there; each s element is read before p's is written, so s == p
 * works. */
static void softmax_causal_fwd_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_softmax_causal_fwd_args *a = ctx;
    const int T = a->seq;
    for (int64_t row = r0; row < r1; row++) {
        const int i = (int)(row % T);
        const int64_t b = row / ((int64_t)T * a->heads);
        const float *s = a->s + row * T;            /* [T] */
        float *p = a->p + row * T;                  /* [T] */
        const uint8_t *mask = a->key_mask + b * T;  /* [T] */
        float m = -INFINITY;
        int any = 0;
        for (int j = 0; j <= i; j++)
            if (mask[j]) {
                m = any ? fmaxf(m, s[j]) : s[j];
                any = 1;
            }
        double sum = 0.0;
        for (int j = 0; j <= i; j++) {
            float e = mask[j] ? expf(s[j] - m) : 0.0f;
            sum += e;
            p[j] = e;
        }
        const float inv = any ? (float)(1.0 / sum) : 0.0f;
        for (int j = 0; j <= i; j++) p[j] *= inv;
        for (int j = i + 1; j < T; j++) p[j] = 0.0f;
    }
}
void tandem_k_softmax_causal_fwd_host(const tandem_k_softmax_causal_fwd_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->heads * a->seq, grain_of(a->seq),
                             softmax_causal_fwd_rows, (void *)a);
}

/* ---- ga_fwd / ga_bwd ---- */
void tandem_k_ga_fwd_geom(const tandem_k_ga_fwd_args *a, tandem_launch_dims *d) {
    elementwise_dims((int64_t)a->batch * a->ga_heads * a->mel_len, d);
}
/* Rows (b, h, j) [r0, r1) of [B, ga_heads, Tm]. */
static void ga_fwd_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_ga_fwd_args *a = ctx;
    const int nq = tandem_k_ga_queries(a->key_mask, a->batch, a->text_len, a->mel_len);
    for (int64_t row = r0; row < r1; row++) a->rows[row] = tandem_k_ga_fwd_row(a, row, nq);
}
void tandem_k_ga_fwd_host(const tandem_k_ga_fwd_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->ga_heads * a->mel_len, grain_of(a->text_len),
                             ga_fwd_rows, (void *)a);
}

void tandem_k_ga_bwd_geom(const tandem_k_ga_bwd_args *a, tandem_launch_dims *d) {
    elementwise_dims((int64_t)a->batch * a->ga_heads * a->mel_len, d);
}
static void ga_bwd_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_ga_bwd_args *a = ctx;
    const int nq = tandem_k_ga_queries(a->key_mask, a->batch, a->text_len, a->mel_len);
    for (int64_t row = r0; row < r1; row++) tandem_k_ga_bwd_row(a, row, nq);
}
void tandem_k_ga_bwd_host(const tandem_k_ga_bwd_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->ga_heads * a->mel_len, grain_of(a->text_len),
                             ga_bwd_rows, (void *)a);
}

/* ---- softmax_causal_bwd ---- */
void tandem_k_softmax_causal_bwd_geom(const tandem_k_softmax_causal_bwd_args *a,
                                      tandem_launch_dims *d) {
    row_dims((int64_t)a->batch * a->heads * a->seq, d);
}
static void softmax_causal_bwd_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_softmax_causal_bwd_args *a = ctx;
    const int T = a->seq;
    for (int64_t row = r0; row < r1; row++) {
        const int i = (int)(row % T);
        const float *dp = a->dp + row * T; /* [T] */
        const float *p = a->p + row * T;   /* [T] */
        float *ds = a->ds + row * T;       /* [T] */
        double r = 0.0;
        for (int j = 0; j <= i; j++) r += (double)p[j] * dp[j];
        const float rf = (float)r;
        for (int j = 0; j < T; j++) ds[j] = j <= i ? p[j] * (dp[j] - rf) : 0.0f;
    }
}
void tandem_k_softmax_causal_bwd_host(const tandem_k_softmax_causal_bwd_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->heads * a->seq, grain_of(a->seq),
                             softmax_causal_bwd_rows, (void *)a);
}

/* ---- costs (registry.h): the layout kernels move each element once; the [B, H, T, T] passes
 * touch every score, the causal half included (it is written as zero, read back later) ------ */

static double heads_elems(int batch, int seq, int heads, int head_dim) {
    return (double)batch * seq * heads * head_dim;
}

void tandem_k_qkv_split_cost(const tandem_k_qkv_split_args *a, tandem_kernel_cost *c) {
    const double n = 3.0 * heads_elems(a->batch, a->seq, a->heads, a->head_dim);
    tandem_kcost(c, 0.0, 4.0 * n, 4.0 * n);
}
void tandem_k_qkv_merge_grad_cost(const tandem_k_qkv_merge_grad_args *a, tandem_kernel_cost *c) {
    const double n = 3.0 * heads_elems(a->batch, a->seq, a->heads, a->head_dim);
    tandem_kcost(c, 0.0, 4.0 * n, 4.0 * n);
}
void tandem_k_heads_merge_cost(const tandem_k_heads_merge_args *a, tandem_kernel_cost *c) {
    const double n = heads_elems(a->batch, a->seq, a->heads, a->head_dim);
    tandem_kcost(c, 0.0, 4.0 * n, 4.0 * n);
}
void tandem_k_heads_split_grad_cost(const tandem_k_heads_split_grad_args *a, tandem_kernel_cost *c) {
    const double n = heads_elems(a->batch, a->seq, a->heads, a->head_dim);
    tandem_kcost(c, 0.0, 4.0 * n, 4.0 * n);
}
void tandem_k_softmax_causal_fwd_cost(const tandem_k_softmax_causal_fwd_args *a,
                                      tandem_kernel_cost *c) {
    const double n = (double)a->batch * a->heads * (double)a->seq * a->seq;
    /* on the causal half (n / 2): max, exp, sum, scale ~ 5 per element */
    tandem_kcost(c, 2.5 * n, 4.0 * n + (double)a->batch * a->seq, 4.0 * n);
}
void tandem_k_softmax_causal_bwd_cost(const tandem_k_softmax_causal_bwd_args *a,
                                      tandem_kernel_cost *c) {
    const double n = (double)a->batch * a->heads * (double)a->seq * a->seq;
    /* ds = p (dp - sum(p dp)): ~4 per element of the causal half */
    tandem_kcost(c, 2.0 * n, 8.0 * n, 4.0 * n);
}
void tandem_k_ga_fwd_cost(const tandem_k_ga_fwd_args *a, tandem_kernel_cost *c) {
    /* the first ga_heads heads' mel-query x text-key block of p */
    const double n = (double)a->batch * a->ga_heads * (double)a->mel_len * a->text_len;
    const double seq = (double)a->text_len + a->mel_len;
    tandem_kcost(c, 12.0 * n, 4.0 * n + (double)a->batch * seq,
                 4.0 * (double)a->batch * a->ga_heads * a->mel_len);
}
void tandem_k_ga_bwd_cost(const tandem_k_ga_bwd_args *a, tandem_kernel_cost *c) {
    const double n = (double)a->batch * a->ga_heads * (double)a->mel_len * a->text_len;
    const double seq = (double)a->text_len + a->mel_len;
    tandem_kcost(c, 12.0 * n, 4.0 * n + (double)a->batch * seq, 4.0 * n);
}
