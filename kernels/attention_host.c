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

/* ---- fused causal attention (attention.h) ---------------------------------------------------
 * Host twins of attn_fused_fwd / attn_fused_bwd. Work items are fixed (forward: a tile of
 * FA_QB query rows of one (b, h); backward: one (b, h)), each computed in a fixed order, so
 * results do not depend on the thread count. Memory per item: key/value tiles of FA_KT keys
 * and per-row accumulators on the stack (no [T, T] anywhere). Inner loops run over fixed-width
 * float vectors (8 lanes) of a key tile or of the padded head columns, so they vectorise at -O2. */
enum { FA_KT = 64, FA_QB = 32, FA_DHP = TANDEM_K_ATTN_FA_MAX_DH, FA_VL = 8 };
typedef float fa_v8 __attribute__((vector_size(32)));
#define FA_ALIGNED __attribute__((aligned(32)))

static int fa_pad(int dh) { return (dh + FA_VL - 1) / FA_VL; } /* vectors per padded row */

/* row [0, dh) = f32 of src (f32 or bf16) from element at; zeros to the padded width. */
static void fa_row_load(float *row, const void *src, int64_t at, int dh, int bf16) {
    if (bf16)
        for (int c = 0; c < dh; c++) row[c] = tandem_bf16_to_f32(((const tandem_bf16 *)src)[at + c]);
    else
        memcpy(row, (const float *)src + at, (size_t)dh * sizeof(float));
    for (int c = dh; c < fa_pad(dh) * FA_VL; c++) row[c] = 0.0f;
}

/* s [FA_KT] = q . columns of kt [FA_DHP][FA_KT] (a transposed key tile). */
static void fa_dots(fa_v8 *s, const float *q, const float (*kt)[FA_KT], int dh) {
    for (int v = 0; v < FA_KT / FA_VL; v++) s[v] = (fa_v8){0};
    for (int c = 0; c < dh; c++) {
        const float qc = q[c];
        const fa_v8 *k = (const fa_v8 *)kt[c];
        for (int v = 0; v < FA_KT / FA_VL; v++) s[v] += qc * k[v];
    }
}

/* y [padded row] += w * x [padded row] */
static void fa_axpy(float *y, float w, const float *x, int nv) {
    fa_v8 *yv = (fa_v8 *)y;
    const fa_v8 *xv = (const fa_v8 *)x;
    for (int v = 0; v < nv; v++) yv[v] += w * xv[v];
}

/* The key tile [t0, t0 + nt) of (b, h): transposed into kt (and vt if not NULL), as padded rows
 * into vr (if not NULL: rows of v, or of k when rows_of_k); zeros past nt. */
static void fa_tile(const void *kp, const void *vp, int64_t base, int ld, int nt, int dh, int bf16,
                    float (*kt)[FA_KT], float (*vt)[FA_KT], float (*vr)[FA_DHP], int rows_of_k) {
    float row[FA_DHP] FA_ALIGNED;
    for (int t = 0; t < FA_KT; t++) {
        const int real = t < nt;
        if (real) fa_row_load(row, kp, base + (int64_t)t * ld, dh, bf16);
        for (int c = 0; c < dh; c++) kt[c][t] = real ? row[c] : 0.0f;
        if (vr && rows_of_k) memcpy(vr[t], row, sizeof row);
        if (!vt && !(vr && !rows_of_k)) continue;
        if (real) fa_row_load(row, vp, base + (int64_t)t * ld, dh, bf16);
        else memset(row, 0, sizeof row);
        if (vt) for (int c = 0; c < dh; c++) vt[c][t] = row[c];
        if (vr && !rows_of_k) memcpy(vr[t], row, sizeof row);
    }
}

void tandem_k_attn_fused_fwd_geom(const tandem_k_attn_fused_fwd_args *a, tandem_launch_dims *d) {
    *d = tandem_dims_1d(a->q_rows, TANDEM_K_ATTN_FA_BQ);
    d->block[0] = TANDEM_K_ATTN_FA_THREADS;
    d->grid[1] = (unsigned)(a->batch * a->heads);
    const int dh = a->head_dim;
    d->shmem = (unsigned)(((size_t)TANDEM_K_ATTN_FA_BQ * dh + (size_t)TANDEM_K_ATTN_FA_BK * (2 * dh + 1)) *
                          sizeof(float));
}

/* Online-softmax state of one query row. */
typedef struct fa_row {
    float o[FA_DHP] FA_ALIGNED;
    float q[FA_DHP] FA_ALIGNED;
    float m, l, gs, gc;
    int any;
} fa_row;

/* One key tile [t0, t0 + nt) into row i's state (scores s already computed). */
static void fa_fwd_tile(const tandem_k_attn_fused_fwd_args *a, fa_row *w, const float *s, int i,
                        int t0, int nt, const uint8_t *mask, const int *ga,
                        const float (*vr)[FA_DHP]) {
    float p[FA_KT];
    float tmax = 0.0f;
    int hit = 0;
    for (int t = 0; t < nt && t0 + t <= i; t++)
        if (mask[t0 + t]) tmax = hit++ ? fmaxf(tmax, s[t] * a->qk_scale) : s[t] * a->qk_scale;
    if (!hit) return;
    const float mn = w->any ? fmaxf(w->m, tmax) : tmax;
    const float alpha = w->any ? expf(w->m - mn) : 0.0f;
    float sum = 0.0f, g = 0.0f;
    for (int t = 0; t < nt; t++) {
        const int key = t0 + t;
        p[t] = key <= i && mask[key] ? expf(s[t] * a->qk_scale - mn) : 0.0f;
        sum += p[t];
        if (w->gc != 0.0f && key < ga[0] && p[t] != 0.0f)
            g += p[t] * tandem_k_ga_g(key, i - a->text_len, ga[0], ga[1], a->ga_sigma);
    }
    w->l = w->l * alpha + sum;
    w->gs = w->gs * alpha + g;
    const int nv = fa_pad(a->head_dim);
    fa_v8 *ov = (fa_v8 *)w->o;
    for (int v = 0; v < nv; v++) ov[v] *= alpha;
    for (int t = 0; t < nt; t++)
        if (p[t] != 0.0f) fa_axpy(w->o, p[t], vr[t], nv);
    w->m = mn, w->any = 1;
}

static void fa_fwd_write(const tandem_k_attn_fused_fwd_args *a, const fa_row *w, int b, int h,
                         int r, const int *ga) {
    const int i = a->q0 + r, tm = a->seq - a->text_len;
    const float inv = w->any ? 1.0f / w->l : 0.0f;
    const int64_t at = tandem_k_attn_at(b, a->q_rows, r, a->ld_o, h, a->head_dim);
    for (int c = 0; c < a->head_dim; c++) tandem_k_attn_store(a->o, at + c, a->bf16, w->o[c] * inv);
    a->lse[((int64_t)b * a->heads + h) * a->q_rows + r] = w->any ? w->m + logf(w->l) : 0.0f;
    if (h >= a->ga_heads || i < a->text_len) return;
    const int64_t gi = ((int64_t)b * a->ga_heads + h) * tm + (i - a->text_len);
    const float sum = w->gc != 0.0f ? w->gs * inv : 0.0f;
    a->ga_sum[gi] = sum;
    a->ga_rows[gi] = w->gc != 0.0f ? (float)((1.0 - (double)sum) * ((double)a->ga_scale / (double)ga[2]))
                                   : 0.0f;
}

/* Items [i0, i1) of [B * H * ceil(q_rows / FA_QB)]. */
static void attn_fused_fwd_items(void *ctx, int64_t i0, int64_t i1) {
    const tandem_k_attn_fused_fwd_args *a = ctx;
    const int nb = (a->q_rows + FA_QB - 1) / FA_QB, dh = a->head_dim, T = a->seq;
    fa_row rows[FA_QB]; /* ~100 KiB of stack with the tiles */
    float kt[FA_DHP][FA_KT] FA_ALIGNED, vr[FA_KT][FA_DHP] FA_ALIGNED;
    for (int64_t item = i0; item < i1; item++) {
        const int bh = (int)(item / nb), r0 = (int)(item % nb) * FA_QB;
        const int b = bh / a->heads, h = bh % a->heads;
        const int nr = a->q_rows - r0 < FA_QB ? a->q_rows - r0 : FA_QB;
        const uint8_t *mask = a->key_mask + (int64_t)b * T;
        int ga[3] = {0, 0, 0};
        if (a->ga_heads > 0 && h < a->ga_heads) {
            tandem_k_ga_counts(a->key_mask, b, a->text_len, T - a->text_len, &ga[0], &ga[1]);
            ga[2] = tandem_k_ga_queries(a->key_mask, a->batch, a->text_len, T - a->text_len);
        }
        for (int r = 0; r < nr; r++) {
            fa_row *w = &rows[r];
            memset(w->o, 0, sizeof w->o);
            fa_row_load(w->q, a->q, tandem_k_attn_at(b, a->q_rows, r0 + r, a->ld_q, h, a->hs_q), dh, a->bf16);
            w->m = w->l = w->gs = 0.0f, w->any = 0;
            w->gc = tandem_k_attn_ga_coef(h, a->q0 + r0 + r, a->ga_heads, a->text_len, ga[0], ga[1],
                                          ga[2], a->ga_scale);
        }
        const int last = a->q0 + r0 + nr - 1;
        for (int t0 = 0; t0 <= last; t0 += FA_KT) {
            const int nt = last + 1 - t0 < FA_KT ? last + 1 - t0 : FA_KT;
            fa_tile(a->k, a->v, tandem_k_attn_at(b, T, t0, a->ld_k, h, a->hs_k), a->ld_k, nt, dh,
                    a->bf16, kt, NULL, vr, 0);
            for (int r = 0; r < nr; r++) {
                const int i = a->q0 + r0 + r;
                if (i < t0) continue;
                fa_v8 s[FA_KT / FA_VL];
                fa_dots(s, rows[r].q, (const float(*)[FA_KT])kt, dh);
                fa_fwd_tile(a, &rows[r], (const float *)s, i, t0, nt, mask, ga, (const float(*)[FA_DHP])vr);
            }
        }
        for (int r = 0; r < nr; r++) fa_fwd_write(a, &rows[r], b, h, r0 + r, ga);
    }
}

void tandem_k_attn_fused_fwd_host(const tandem_k_attn_fused_fwd_args *a) {
    const int64_t n = (int64_t)a->batch * a->heads * ((a->q_rows + FA_QB - 1) / FA_QB);
    tandem_host_parallel_for(n, 1, attn_fused_fwd_items, (void *)a);
}

void tandem_k_attn_fused_fwd_cost(const tandem_k_attn_fused_fwd_args *a, tandem_kernel_cost *c) {
    const double bh = (double)a->batch * a->heads, dh = a->head_dim, es = a->bf16 ? 2.0 : 4.0;
    const double pairs = (double)a->q_rows * a->q0 + (double)a->q_rows * (a->q_rows + 1) / 2.0;
    const double ga = (double)a->batch * (a->ga_heads > 0 ? a->ga_heads : 0) * (a->seq - a->text_len);
    c->flops = bh * pairs * (4.0 * dh + 6.0);
    c->bytes_read = bh * (a->q_rows + 2.0 * a->seq) * dh * es + (double)a->batch * a->seq;
    c->bytes_written = bh * a->q_rows * (dh * es + 4.0) + (a->ga_heads > 0 ? 8.0 * ga : 0.0);
}

void tandem_k_attn_fused_bwd_geom(const tandem_k_attn_fused_bwd_args *a, tandem_launch_dims *d) {
    const int T = a->seq, dh = a->head_dim, W = 32;
    const int nqb = (T + TANDEM_K_ATTN_FA_BQ - 1) / TANDEM_K_ATTN_FA_BQ;
    const int nkb = (T + TANDEM_K_ATTN_FA_BK - 1) / TANDEM_K_ATTN_FA_BK;
    *d = tandem_dims_1d(1, TANDEM_K_ATTN_FA_THREADS);
    d->grid[0] = (unsigned)(nqb + nkb);
    d->grid[1] = (unsigned)(a->batch * a->heads);
    const size_t dq = 2 * (size_t)TANDEM_K_ATTN_FA_BQ * dh + 2 * (size_t)TANDEM_K_ATTN_FA_BK * (dh + 1);
    const size_t kv = 2 * (size_t)TANDEM_K_ATTN_FA_BK * dh + 2 * (size_t)W * (dh + 1) + 2 * (size_t)W;
    d->shmem = (unsigned)((dq > kv ? dq : kv) * sizeof(float));
}

/* D_i = dO_i . O_i - c ga_sum (the softmax backward's row term, guided attention included). */
static float fa_delta(const tandem_k_attn_fused_bwd_args *a, const float *dorow, int b, int h, int i,
                      float gc) {
    const int64_t at = tandem_k_attn_at(b, a->seq, i, a->ld_o, h, a->head_dim);
    float d = 0.0f;
    for (int c = 0; c < a->head_dim; c++) d += dorow[c] * tandem_k_attn_load(a->o, at + c, a->bf16);
    if (gc != 0.0f)
        d -= gc * a->ga_sum[((int64_t)b * a->ga_heads + h) * (a->seq - a->text_len) + i - a->text_len];
    return d;
}

typedef struct fa_bwd_tile {
    float kt[FA_DHP][FA_KT] FA_ALIGNED, vt[FA_DHP][FA_KT] FA_ALIGNED; /* K^T, V^T */
    float kr[FA_KT][FA_DHP] FA_ALIGNED;                               /* K rows */
    float dk[FA_KT][FA_DHP] FA_ALIGNED, dv[FA_KT][FA_DHP] FA_ALIGNED;
    float q[FA_DHP] FA_ALIGNED, dor[FA_DHP] FA_ALIGNED, dq[FA_DHP] FA_ALIGNED;
} fa_bwd_tile;

/* Query row i against the key tile [t0, t0 + nt) of (b, h): dk, dv of the tile +=, dq row +=. */
static void fa_bwd_row(const tandem_k_attn_fused_bwd_args *a, fa_bwd_tile *w, int b, int h, int i,
                       int t0, int nt, const int *ga) {
    const int dh = a->head_dim, nv = fa_pad(dh), T = a->seq;
    const uint8_t *mask = a->key_mask + (int64_t)b * T;
    int hit = 0;
    for (int t = 0; t < nt && t0 + t <= i; t++) hit |= mask[t0 + t] != 0;
    if (!hit) return;
    fa_row_load(w->q, a->q, tandem_k_attn_at(b, T, i, a->ld_q, h, dh), dh, a->bf16);
    memcpy(w->dor, a->dy + tandem_k_attn_at(b, T, i, a->ld_o, h, dh), (size_t)dh * sizeof(float));
    for (int c = dh; c < nv * FA_VL; c++) w->dor[c] = 0.0f;
    const float gc = tandem_k_attn_ga_coef(h, i, a->ga_heads, a->text_len, ga[0], ga[1], ga[2], a->ga_scale);
    const float dd = fa_delta(a, w->dor, b, h, i, gc);
    const float lse = a->lse[((int64_t)b * a->heads + h) * T + i];
    fa_v8 s[FA_KT / FA_VL], dov[FA_KT / FA_VL];
    fa_dots(s, w->q, (const float(*)[FA_KT])w->kt, dh);
    fa_dots(dov, w->dor, (const float(*)[FA_KT])w->vt, dh);
    const float *sf = (const float *)s, *df = (const float *)dov;
    memset(w->dq, 0, sizeof w->dq);
    for (int t = 0; t < nt; t++) {
        const int key = t0 + t;
        if (key > i || !mask[key]) continue;
        const float p = expf(sf[t] * a->qk_scale - lse);
        float dp = df[t];
        if (gc != 0.0f && key < ga[0]) dp -= gc * tandem_k_ga_g(key, i - a->text_len, ga[0], ga[1], a->ga_sigma);
        const float ds = p * (dp - dd) * a->qk_scale;
        fa_axpy(w->dv[t], p, w->dor, nv);
        fa_axpy(w->dk[t], ds, w->q, nv);
        fa_axpy(w->dq, ds, w->kr[t], nv);
    }
    float *dq = a->dq + tandem_k_attn_at(b, T, i, a->ld_g, h, dh);
    for (int c = 0; c < dh; c++) dq[c] += w->dq[c];
}

/* Items [i0, i1) of [B * H]. */
static void attn_fused_bwd_items(void *ctx, int64_t i0, int64_t i1) {
    const tandem_k_attn_fused_bwd_args *a = ctx;
    fa_bwd_tile w; /* ~170 KiB of stack */
    const int T = a->seq, dh = a->head_dim;
    for (int64_t item = i0; item < i1; item++) {
        const int b = (int)(item / a->heads), h = (int)(item % a->heads);
        int ga[3] = {0, 0, 0};
        if (a->ga_heads > 0 && h < a->ga_heads) {
            tandem_k_ga_counts(a->key_mask, b, a->text_len, T - a->text_len, &ga[0], &ga[1]);
            ga[2] = tandem_k_ga_queries(a->key_mask, a->batch, a->text_len, T - a->text_len);
        }
        for (int i = 0; i < T; i++)
            memset(a->dq + tandem_k_attn_at(b, T, i, a->ld_g, h, dh), 0, (size_t)dh * sizeof(float));
        for (int t0 = 0; t0 < T; t0 += FA_KT) {
            const int nt = T - t0 < FA_KT ? T - t0 : FA_KT;
            const int64_t base = tandem_k_attn_at(b, T, t0, a->ld_q, h, dh);
            fa_tile(a->k, a->v, base, a->ld_q, nt, dh, a->bf16, w.kt, w.vt, w.kr, 1);
            memset(w.dk, 0, sizeof w.dk);
            memset(w.dv, 0, sizeof w.dv);
            for (int i = t0; i < T; i++) fa_bwd_row(a, &w, b, h, i, t0, nt, ga);
            for (int t = 0; t < nt; t++) {
                const int64_t at = tandem_k_attn_at(b, T, t0 + t, a->ld_g, h, dh);
                memcpy(a->dk + at, w.dk[t], (size_t)dh * sizeof(float));
                memcpy(a->dv + at, w.dv[t], (size_t)dh * sizeof(float));
            }
        }
    }
}

void tandem_k_attn_fused_bwd_host(const tandem_k_attn_fused_bwd_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->heads, 1, attn_fused_bwd_items, (void *)a);
}

void tandem_k_attn_fused_bwd_cost(const tandem_k_attn_fused_bwd_args *a, tandem_kernel_cost *c) {
    const double bh = (double)a->batch * a->heads, dh = a->head_dim, T = a->seq;
    const double es = a->bf16 ? 2.0 : 4.0, pairs = T * (T + 1) / 2.0;
    const double ga = (double)a->batch * (a->ga_heads > 0 ? a->ga_heads : 0) * (a->seq - a->text_len);
    c->flops = bh * pairs * (10.0 * dh + 8.0);
    c->bytes_read = bh * T * dh * (4.0 * es + 4.0) + bh * T * 4.0 + (double)a->batch * T + 4.0 * ga;
    c->bytes_written = 3.0 * bh * T * dh * 4.0;
}
