/* attention_host.c — launch geometry and host implementations of the attention kernels
 * (attention.cu). The host implementations follow the semantics of attention.h with plain
 * loops; they are what the host backend runs, so they are deterministic (fixed summation
 * order), and the reference the emulated kernels are compared with.
 */
#include <math.h>
#include <stdint.h>

#include "kernels/host_math.h"
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
    tandem_bf16 *const dst16[3] = {a->q16, a->k16, a->v16};
    for (int64_t bt = r0; bt < r1; bt++) {
        const int64_t b = bt / T;
        const int t = (int)(bt % T);
        const float *row = a->qkv + bt * 3 * d; /* [3d] */
        for (int g = 0; g < 3; g++)
            for (int h = 0; h < H; h++)
                for (int e = 0; e < dh; e++)
                    tandem_k_store2(dst[g], dst16[g], head_offset(b, h, t, e, T, H, dh),
                                    row[g * d + h * dh + e]);
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
        const int64_t row = bt * 3 * d; /* dqkv [3d] of the row */
        for (int g = 0; g < 3; g++)
            for (int h = 0; h < H; h++)
                for (int e = 0; e < dh; e++)
                    tandem_k_store2(a->dqkv, a->dqkv16, row + g * d + h * dh + e,
                                    src[g][head_offset(b, h, t, e, T, H, dh)]);
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
                tandem_k_store2(a->y, a->y16, bt * d + h * dh + e,
                                a->o[head_offset(b, h, t, e, T, H, dh)]);
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
                tandem_k_store2(a->d_o, a->d_o16, head_offset(b, h, t, e, T, H, dh),
                                a->dy[bt * d + h * dh + e]);
    }
}
void tandem_k_heads_split_grad_host(const tandem_k_heads_split_grad_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->seq, grain_of((int64_t)a->heads * a->head_dim),
                             heads_split_grad_rows, (void *)a);
}

/* ---- softmax_causal_fwd ---- */
void tandem_k_softmax_causal_fwd_geom(const tandem_k_softmax_causal_fwd_args *a,
                                      tandem_launch_dims *d) {
    row_dims((int64_t)a->batch * a->heads * a->nq, d);
}
/* The sum is accumulated in double (deterministic, and more accurate than the kernel's float
 * tree, so the emulator comparison measures the kernel's error). Each exponential is taken
 * once, kept in p and scaled there; each s element is read before p's is written, so s == p
 * works. */
static void softmax_causal_fwd_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_softmax_causal_fwd_args *a = ctx;
    const int T = a->seq;
    for (int64_t row = r0; row < r1; row++) {
        const int i = a->q0 + (int)(row % a->nq);
        const int64_t b = row / ((int64_t)a->nq * a->heads);
        const float *s = a->s + row * T;            /* [T] */
        const int64_t at = row * T;                 /* p of the row: f32 or bf16 */
        const uint8_t *mask = a->key_mask + b * T;  /* [T] */
        float m = -INFINITY;
        int any = 0;
        for (int j = 0; j <= i; j++)
            if (mask[j]) {
                m = any ? fmaxf(m, s[j]) : s[j];
                any = 1;
            }
        double sum = 0.0;
        for (int j = 0; j <= i; j++) sum += mask[j] ? expf(s[j] - m) : 0.0f; /* s may be p: read only */
        const float inv = any ? (float)(1.0 / sum) : 0.0f;
        for (int j = 0; j <= i; j++)
            tandem_k_attn_store(a->p, at + j, a->bf16, mask[j] ? expf(s[j] - m) * inv : 0.0f);
        for (int j = i + 1; j < T; j++) tandem_k_attn_store(a->p, at + j, a->bf16, 0.0f);
    }
}
void tandem_k_softmax_causal_fwd_host(const tandem_k_softmax_causal_fwd_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->heads * a->nq, grain_of(a->seq),
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
        const int64_t at = row * T;        /* p and ds of the row: f32 or bf16 */
        double r = 0.0;
        for (int j = 0; j <= i; j++) r += (double)tandem_k_attn_load(a->p, at + j, a->bf16) * dp[j];
        const float rf = (float)r;
        for (int j = 0; j < T; j++)
            tandem_k_attn_store(a->ds, at + j, a->bf16,
                                j <= i ? tandem_k_attn_load(a->p, at + j, a->bf16) * (dp[j] - rf) : 0.0f);
    }
}
void tandem_k_softmax_causal_bwd_host(const tandem_k_softmax_causal_bwd_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->heads * a->seq, grain_of(a->seq),
                             softmax_causal_bwd_rows, (void *)a);
}

/* ---- fused causal attention (attention.h) ---------------------------------------------------
 * Host twins of attn_fused_fwd / attn_fused_bwd. Work items are fixed (forward: a tile of
 * FA_QF query rows of one (b, h); backward: one (b, h)), each computed in a fixed order, so
 * results do not depend on the thread count. Memory per item: key/value tiles of FA_KT keys and
 * per-row state on the stack (~100 KiB; no [T, T] anywhere). The inner loops run over 8-lane
 * float vectors (GCC/Clang vector extensions: lane-wise, no reassociation, so the bits do not
 * depend on the vector width the compiler picks) of a key tile or of the head padded to
 * TANDEM_K_ATTN_FA_MAX_DH, accumulating in registers; the softmax steps of a tile (scale, mask,
 * max, exp, sum) run over the whole tile the same way. On x86-64 the item functions are also
 * built for x86-64-v3 (AVX2 + FMA) and chosen when the CPU has it (target_clones); there the
 * multiply-adds contract into FMAs (the pragma below; 10-15 % of the host step's attention
 * time), so the bits depend on which clone the CPU runs, as the host GEMM's depend on the
 * kernel OpenBLAS picks for the CPU, and never on the thread count. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#endif
enum { FA_KT = 64, FA_QB = 32, FA_QF = 128, FA_VL = 8, FA_DHP = TANDEM_K_ATTN_FA_MAX_DH };
enum { FA_KV = FA_KT / FA_VL, FA_NV = FA_DHP / FA_VL }; /* vectors per key tile / padded head */
typedef float fa_v8 __attribute__((vector_size(32)));
#define FA_INLINE static inline __attribute__((always_inline))
/* the vector loops below unrolled whole, so their accumulators stay in registers */
#define FA_UNROLL _Pragma("GCC unroll 8")
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#define FA_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define FA_CLONES
#endif

/* row [0, dh) = f32 of src (f32 or bf16) from element at; zeros to FA_DHP. */
FA_INLINE void fa_row_load(fa_v8 *row, const void *src, int64_t at, int dh, int bf16) {
    float *f = (float *)row;
    if (bf16)
        for (int c = 0; c < dh; c++) f[c] = tandem_bf16_to_f32(((const tandem_bf16 *)src)[at + c]);
    else if (dh == FA_DHP) /* a constant size: inline vector moves, not a memcpy call */
        memcpy(f, (const float *)src + at, FA_DHP * sizeof(float));
    else
        memcpy(f, (const float *)src + at, (size_t)dh * sizeof(float));
    for (int c = dh; c < FA_DHP; c++) f[c] = 0.0f;
}

/* s [8 nv keys] = q . columns of kt (a transposed key tile), for a constant nv <= FA_KV. */
FA_INLINE void fa_dots_n(fa_v8 *s, const fa_v8 *q, const fa_v8 (*kt)[FA_KV], int dh, const int nv) {
    fa_v8 acc[FA_KV] = {{0}};
    const float *qf = (const float *)q;
    for (int c = 0; c < dh; c++) {
        const float qc = qf[c];
        FA_UNROLL
        for (int v = 0; v < nv; v++) acc[v] += qc * kt[c][v];
    }
    FA_UNROLL
    for (int v = 0; v < FA_KV; v++) s[v] = acc[v]; /* zeros past nv */
}
/* s [FA_KT] = q . columns of kt for the tile's first lim keys (vectors of 8; the rest 0): a row
 * on the causal diagonal needs only the keys up to its own, so the dots skip the others. Each
 * key's dot is the same sum whatever lim is. */
FA_INLINE void fa_dots(fa_v8 *s, const fa_v8 *q, const fa_v8 (*kt)[FA_KV], int dh, int lim) {
    switch ((lim + FA_VL - 1) / FA_VL) { /* constant counts: each case unrolled, in registers */
    case 1: fa_dots_n(s, q, kt, dh, 1); break;
    case 2: fa_dots_n(s, q, kt, dh, 2); break;
    case 3: fa_dots_n(s, q, kt, dh, 3); break;
    case 4: fa_dots_n(s, q, kt, dh, 4); break;
    case 5: fa_dots_n(s, q, kt, dh, 5); break;
    case 6: fa_dots_n(s, q, kt, dh, 6); break;
    case 7: fa_dots_n(s, q, kt, dh, 7); break;
    default: fa_dots_n(s, q, kt, dh, FA_KV); break;
    }
}

/* The key tile [t0, t0 + nt) of (b, h) from k, v at base (row stride ld): transposed into kt (and
 * vt if not NULL), as rows into rows (rows of v, or of k when rows_of_k); zeros past nt. */
FA_INLINE void fa_tile(const void *kp, const void *vp, int64_t base, int ld, int nt, int dh, int bf16,
                       fa_v8 (*kt)[FA_KV], fa_v8 (*vt)[FA_KV], fa_v8 (*rows)[FA_NV], int rows_of_k) {
    fa_v8 row[FA_NV];
    const float *rf = (const float *)row;
    for (int t = 0; t < FA_KT; t++) {
        const int real = t < nt;
        if (real) fa_row_load(row, kp, base + (int64_t)t * ld, dh, bf16);
        else memset(row, 0, sizeof row);
        for (int c = 0; c < dh; c++) ((float *)kt[c])[t] = rf[c];
        if (rows_of_k) memcpy(rows[t], row, sizeof row);
        if (real) fa_row_load(row, vp, base + (int64_t)t * ld, dh, bf16);
        else memset(row, 0, sizeof row);
        if (vt) for (int c = 0; c < dh; c++) ((float *)vt[c])[t] = rf[c];
        if (!rows_of_k) memcpy(rows[t], row, sizeof row);
    }
}

/* kb [FA_KT] = 0 for the tile's keys the mask allows, -inf for the others and those past nt;
 * returns the first allowed key of the tile (FA_KT if none). */
FA_INLINE int fa_key_bias(float *kb, const uint8_t *mask, int t0, int nt) {
    int first = FA_KT;
    for (int t = 0; t < FA_KT; t++) {
        const int ok = t < nt && mask[t0 + t];
        kb[t] = ok ? 0.0f : -INFINITY;
        if (ok && first == FA_KT) first = t;
    }
    return first;
}

/* The largest of z [FA_KT] (exact: max does not depend on the order). */
FA_INLINE float fa_max(const float *z) {
    typedef int32_t fa_i8 __attribute__((vector_size(32)));
    fa_v8 zv[FA_KV], m;
    memcpy(zv, z, sizeof zv);
    m = zv[0];
    FA_UNROLL
    for (int v = 1; v < FA_KV; v++) {
        const fa_i8 gt = zv[v] > m;
        m = (fa_v8)(((fa_i8)zv[v] & gt) | ((fa_i8)m & ~gt));
    }
    const float *mf = (const float *)&m;
    float r = mf[0];
    for (int l = 1; l < FA_VL; l++) r = mf[l] > r ? mf[l] : r;
    return r;
}

/* p [FA_KT] = exp(x) (tandem_host_exp; 0 where x < -87, masked keys' -inf included); returns
 * their sum, taken in a fixed order (lanes of 8-key vectors, then the lanes in order). */
FA_INLINE float fa_exp_sum(const float *x, float *p) {
    float c[FA_KT], e[FA_KT];
    for (int t = 0; t < FA_KT; t++) c[t] = isless(x[t], -87.0f) ? -87.0f : x[t];
    for (int t = 0; t < FA_KT; t++) e[t] = tandem_host_exp(c[t]);
    for (int t = 0; t < FA_KT; t++) p[t] = isless(x[t], -87.0f) ? 0.0f : e[t];
    fa_v8 pv[FA_KV], acc;
    memcpy(pv, p, sizeof pv);
    acc = pv[0];
    FA_UNROLL
    for (int v = 1; v < FA_KV; v++) acc += pv[v];
    const float *af = (const float *)&acc;
    float sum = 0.0f;
    for (int l = 0; l < FA_VL; l++) sum += af[l];
    return sum;
}

void tandem_k_attn_fused_fwd_geom(const tandem_k_attn_fused_fwd_args *a, tandem_launch_dims *d) {
    *d = tandem_dims_1d(a->q_rows, TANDEM_K_ATTN_FA_BQ);
    d->block[0] = TANDEM_K_ATTN_FA_THREADS;
    d->grid[1] = (unsigned)(a->batch * a->heads);
    const int dh = a->head_dim;
    d->shmem = (unsigned)(((size_t)TANDEM_K_ATTN_FA_BQ * dh + (size_t)TANDEM_K_ATTN_FA_BK * (2 * dh + 1)) *
                          sizeof(float));
}

/* One forward item's state: FA_QF query rows and the current key tile. */
typedef struct fa_fwd_work {
    fa_v8 q[FA_QF][FA_NV], o[FA_QF][FA_NV]; /* query rows, output accumulators */
    fa_v8 kt[FA_DHP][FA_KV], vr[FA_KT][FA_NV];
    float m[FA_QF], l[FA_QF], gs[FA_QF], gc[FA_QF];
    int any[FA_QF];
    float kb[FA_KT]; /* the tile's key bias (fa_key_bias) */
    int first;       /* the tile's first allowed key */
} fa_fwd_work;

/* Key tile [t0, t0 + nt) into query row r (position i) of w: online softmax update. The
 * element-wise steps run over the whole tile as vector code: keys after the query or not allowed
 * carry -inf (exp 0). */
FA_INLINE void fa_fwd_tile(const tandem_k_attn_fused_fwd_args *a, fa_fwd_work *w, int r, int i,
                           int t0, int nt, const int *ga) {
    const int lim = i - t0 + 1 < nt ? i - t0 + 1 : nt; /* keys t < lim are not after query i */
    if (w->first >= lim) return;                       /* no key allowed */
    fa_v8 sv[FA_KV];
    fa_dots(sv, w->q[r], (const fa_v8(*)[FA_KV])w->kt, a->head_dim, lim);
    const float *s = (const float *)sv;
    float z[FA_KT], p[FA_KT];
    for (int t = 0; t < FA_KT; t++) z[t] = s[t] * a->qk_scale + w->kb[t];
    for (int t = lim; t < FA_KT; t++) z[t] = -INFINITY;
    const float tmax = fa_max(z);
    const float mn = w->any[r] && w->m[r] > tmax ? w->m[r] : tmax;
    const float alpha = w->any[r] ? expf(w->m[r] - mn) : 0.0f;
    for (int t = 0; t < FA_KT; t++) z[t] -= mn;
    const float sum = fa_exp_sum(z, p);
    float g = 0.0f;
    if (w->gc[r] != 0.0f)
        for (int t = 0; t < lim && t0 + t < ga[0]; t++)
            if (p[t] != 0.0f) g += p[t] * tandem_k_ga_g(t0 + t, i - a->text_len, ga[0], ga[1], a->ga_sigma);
    w->l[r] = w->l[r] * alpha + sum;
    w->gs[r] = w->gs[r] * alpha + g;
    fa_v8 acc[FA_NV];
    FA_UNROLL
    for (int v = 0; v < FA_NV; v++) acc[v] = w->o[r][v] * alpha;
    for (int t = 0; t < lim; t++)
        if (p[t] != 0.0f)
            FA_UNROLL
            for (int v = 0; v < FA_NV; v++) acc[v] += p[t] * w->vr[t][v];
    FA_UNROLL
    for (int v = 0; v < FA_NV; v++) w->o[r][v] = acc[v];
    w->m[r] = mn, w->any[r] = 1;
}

static void fa_fwd_write(const tandem_k_attn_fused_fwd_args *a, const fa_fwd_work *w, int k,
                         int b, int h, int r, const int *ga) {
    const int i = a->q0 + r, tm = a->seq - a->text_len;
    const float inv = w->any[k] ? 1.0f / w->l[k] : 0.0f;
    const int64_t at = tandem_k_attn_at(b, a->q_rows, r, a->ld_o, h, a->head_dim);
    const float *o = (const float *)w->o[k];
    for (int c = 0; c < a->head_dim; c++) tandem_k_attn_store(a->o, at + c, a->bf16, o[c] * inv);
    a->lse[((int64_t)b * a->heads + h) * a->q_rows + r] = w->any[k] ? w->m[k] + logf(w->l[k]) : 0.0f;
    if (h >= a->ga_heads || i < a->text_len) return;
    const int64_t gi = ((int64_t)b * a->ga_heads + h) * tm + (i - a->text_len);
    const float sum = w->gc[k] != 0.0f ? w->gs[k] * inv : 0.0f;
    a->ga_sum[gi] = sum;
    a->ga_rows[gi] = w->gc[k] != 0.0f ? (float)((1.0 - (double)sum) * ((double)a->ga_scale / (double)ga[2]))
                                      : 0.0f;
}

/* The guided-attention counts of item b: tt, nm, Nq (zeros without guided attention on h). */
static void fa_ga_counts(const uint8_t *key_mask, int b, int h, int batch, int ga_heads,
                         int text_len, int seq, int *ga) {
    ga[0] = ga[1] = ga[2] = 0;
    if (h >= ga_heads) return;
    tandem_k_ga_counts(key_mask, b, text_len, seq - text_len, &ga[0], &ga[1]);
    ga[2] = tandem_k_ga_queries(key_mask, batch, text_len, seq - text_len);
}

/* Forward item: rows [r0, r0 + nr) of (b, h). */
FA_CLONES static void fa_fwd_item(const tandem_k_attn_fused_fwd_args *a, fa_fwd_work *w, int b,
                                  int h, int r0, int nr) {
    const int dh = a->head_dim, T = a->seq;
    const uint8_t *mask = a->key_mask + (int64_t)b * T;
    int ga[3];
    fa_ga_counts(a->key_mask, b, h, a->batch, a->ga_heads, a->text_len, T, ga);
    for (int r = 0; r < nr; r++) {
        memset(w->o[r], 0, sizeof w->o[r]);
        fa_row_load(w->q[r], a->q, tandem_k_attn_at(b, a->q_rows, r0 + r, a->ld_q, h, a->hs_q), dh, a->bf16);
        w->m[r] = w->l[r] = w->gs[r] = 0.0f, w->any[r] = 0;
        w->gc[r] = tandem_k_attn_ga_coef(h, a->q0 + r0 + r, a->ga_heads, a->text_len, ga[0], ga[1],
                                         ga[2], a->ga_scale);
    }
    const int last = a->q0 + r0 + nr - 1;
    for (int t0 = 0; t0 <= last; t0 += FA_KT) {
        const int nt = last + 1 - t0 < FA_KT ? last + 1 - t0 : FA_KT;
        fa_tile(a->k, a->v, tandem_k_attn_at(b, T, t0, a->ld_k, h, a->hs_k), a->ld_k, nt, dh,
                a->bf16, w->kt, NULL, w->vr, 0);
        w->first = fa_key_bias(w->kb, mask, t0, nt);
        for (int r = 0; r < nr; r++)
            if (a->q0 + r0 + r >= t0) fa_fwd_tile(a, w, r, a->q0 + r0 + r, t0, nt, ga);
    }
    for (int r = 0; r < nr; r++) fa_fwd_write(a, w, r, b, h, r0 + r, ga);
}

/* Items [i0, i1) of [B * H * ceil(q_rows / FA_QF)]. */
static void attn_fused_fwd_items(void *ctx, int64_t i0, int64_t i1) {
    const tandem_k_attn_fused_fwd_args *a = ctx;
    const int nb = (a->q_rows + FA_QF - 1) / FA_QF;
    fa_fwd_work w;
    for (int64_t item = i0; item < i1; item++) {
        const int bh = (int)(item / nb), r0 = (int)(item % nb) * FA_QF;
        const int nr = a->q_rows - r0 < FA_QF ? a->q_rows - r0 : FA_QF;
        fa_fwd_item(a, &w, bh / a->heads, bh % a->heads, r0, nr);
    }
}

void tandem_k_attn_fused_fwd_host(const tandem_k_attn_fused_fwd_args *a) {
    const int64_t n = (int64_t)a->batch * a->heads * ((a->q_rows + FA_QF - 1) / FA_QF);
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

/* One backward item's state: the key tile, its dk / dv accumulators, a block of FA_QB query
 * rows with their P and dS against the tile. */
typedef struct fa_bwd_work {
    fa_v8 kt[FA_DHP][FA_KV], vt[FA_DHP][FA_KV]; /* K^T, V^T */
    fa_v8 kr[FA_KT][FA_NV];                     /* K rows */
    fa_v8 dk[FA_KT][FA_NV], dv[FA_KT][FA_NV];
    fa_v8 q[FA_QB][FA_NV], dor[FA_QB][FA_NV];
    float p[FA_QB][FA_KT], ds[FA_QB][FA_KT]; /* ds scaled by qk_scale */
    float kb[FA_KT]; /* the tile's key bias (fa_key_bias) */
    int first;       /* the tile's first allowed key */
} fa_bwd_work;

/* a . b over the padded head (zeros past dh), summed in a fixed order (lanes, then in order). */
FA_INLINE float fa_dot_row(const fa_v8 *x, const fa_v8 *y) {
    fa_v8 acc = x[0] * y[0];
    FA_UNROLL
    for (int v = 1; v < FA_NV; v++) acc += x[v] * y[v];
    const float *af = (const float *)&acc;
    float sum = 0.0f;
    for (int l = 0; l < FA_VL; l++) sum += af[l];
    return sum;
}

/* Row r (query i) of the block against the tile [t0, t0 + nt): P and dS; 0 if no key allowed.
 * P and dS over the whole tile as vector code (keys after the query or not allowed: -inf, so
 * P = dS = 0); the guided-attention term on the text keys of its rows after that, scalar. */
FA_INLINE int fa_bwd_scores(const tandem_k_attn_fused_bwd_args *a, fa_bwd_work *w, int b, int h,
                            int r, int i, int t0, int nt, const int *ga) {
    const int dh = a->head_dim, T = a->seq;
    const int lim = i - t0 + 1 < nt ? i - t0 + 1 : nt; /* keys t < lim are not after query i */
    if (w->first >= lim) return 0;                     /* no key allowed */
    fa_row_load(w->q[r], a->q, tandem_k_attn_at(b, T, i, a->ld_q, h, dh), dh, a->bf16);
    fa_row_load(w->dor[r], a->dy, tandem_k_attn_at(b, T, i, a->ld_o, h, dh), dh, 0);
    const float gc = tandem_k_attn_ga_coef(h, i, a->ga_heads, a->text_len, ga[0], ga[1], ga[2], a->ga_scale);
    /* D_i = dO_i . O_i - c ga_sum (the softmax backward's row term, guided attention included) */
    fa_v8 orow[FA_NV];
    fa_row_load(orow, a->o, tandem_k_attn_at(b, T, i, a->ld_o, h, dh), dh, a->bf16);
    float dd = fa_dot_row(w->dor[r], orow);
    if (gc != 0.0f) dd -= gc * a->ga_sum[((int64_t)b * a->ga_heads + h) * (T - a->text_len) + i - a->text_len];
    const float lse = a->lse[((int64_t)b * a->heads + h) * T + i];
    fa_v8 sv[FA_KV], dv[FA_KV];
    fa_dots(sv, w->q[r], (const fa_v8(*)[FA_KV])w->kt, dh, lim);
    fa_dots(dv, w->dor[r], (const fa_v8(*)[FA_KV])w->vt, dh, lim);
    const float *s = (const float *)sv, *dov = (const float *)dv;
    float x[FA_KT], *p = w->p[r], *ds = w->ds[r];
    for (int t = 0; t < FA_KT; t++) x[t] = s[t] * a->qk_scale - lse + w->kb[t];
    for (int t = lim; t < FA_KT; t++) x[t] = -INFINITY;
    (void)fa_exp_sum(x, p);
    for (int t = 0; t < FA_KT; t++) ds[t] = p[t] * (dov[t] - dd) * a->qk_scale;
    for (int t = 0; t < FA_KT; t++) ds[t] = p[t] == 0.0f ? 0.0f : ds[t]; /* 0 * inf would be NaN */
    if (gc != 0.0f)
        for (int t = 0; t < lim && t0 + t < ga[0]; t++) {
            if (p[t] == 0.0f) continue;
            const float dp = dov[t] - gc * tandem_k_ga_g(t0 + t, i - a->text_len, ga[0], ga[1], a->ga_sigma);
            ds[t] = p[t] * (dp - dd) * a->qk_scale;
        }
    return 1;
}

/* The block's rows [0, nr) (live[r]: any key allowed) into dk, dv of the tile and dq rows. */
FA_INLINE void fa_bwd_block(const tandem_k_attn_fused_bwd_args *a, fa_bwd_work *w, int b, int h,
                            int i0, int nr, int nt, const int *live) {
    for (int t = 0; t < nt; t++) {
        fa_v8 gk[FA_NV], gv[FA_NV];
        FA_UNROLL
        for (int v = 0; v < FA_NV; v++) gk[v] = w->dk[t][v], gv[v] = w->dv[t][v];
        for (int r = 0; r < nr; r++) {
            if (!live[r] || w->p[r][t] == 0.0f) continue;
            const float p = w->p[r][t], ds = w->ds[r][t];
            FA_UNROLL
            for (int v = 0; v < FA_NV; v++) gv[v] += p * w->dor[r][v], gk[v] += ds * w->q[r][v];
        }
        FA_UNROLL
        for (int v = 0; v < FA_NV; v++) w->dk[t][v] = gk[v], w->dv[t][v] = gv[v];
    }
    for (int r = 0; r < nr; r++) {
        if (!live[r]) continue;
        fa_v8 gq[FA_NV] = {{0}};
        for (int t = 0; t < nt; t++)
            if (w->ds[r][t] != 0.0f)
                FA_UNROLL
                for (int v = 0; v < FA_NV; v++) gq[v] += w->ds[r][t] * w->kr[t][v];
        float *dq = a->dq + tandem_k_attn_at(b, a->seq, i0 + r, a->ld_g, h, a->head_dim);
        const float *g = (const float *)gq;
        int c = 0;
        for (; c + FA_VL <= a->head_dim; c += FA_VL) { /* whole vectors, then the rest */
            fa_v8 cur;
            memcpy(&cur, dq + c, sizeof cur);
            cur += gq[c / FA_VL];
            memcpy(dq + c, &cur, sizeof cur);
        }
        for (; c < a->head_dim; c++) dq[c] += g[c];
    }
}

/* Backward item: all of (b, h), key tile by key tile. */
FA_CLONES static void fa_bwd_item(const tandem_k_attn_fused_bwd_args *a, fa_bwd_work *w, int b,
                                  int h) {
    const int T = a->seq, dh = a->head_dim;
    int ga[3], live[FA_QB];
    fa_ga_counts(a->key_mask, b, h, a->batch, a->ga_heads, a->text_len, T, ga);
    for (int i = 0; i < T; i++)
        memset(a->dq + tandem_k_attn_at(b, T, i, a->ld_g, h, dh), 0, (size_t)dh * sizeof(float));
    for (int t0 = 0; t0 < T; t0 += FA_KT) {
        const int nt = T - t0 < FA_KT ? T - t0 : FA_KT;
        fa_tile(a->k, a->v, tandem_k_attn_at(b, T, t0, a->ld_q, h, dh), a->ld_q, nt, dh, a->bf16,
                w->kt, w->vt, w->kr, 1);
        w->first = fa_key_bias(w->kb, a->key_mask + (int64_t)b * T, t0, nt);
        memset(w->dk, 0, sizeof w->dk);
        memset(w->dv, 0, sizeof w->dv);
        for (int i0 = t0; i0 < T; i0 += FA_QB) {
            const int nr = T - i0 < FA_QB ? T - i0 : FA_QB;
            for (int r = 0; r < nr; r++) live[r] = fa_bwd_scores(a, w, b, h, r, i0 + r, t0, nt, ga);
            fa_bwd_block(a, w, b, h, i0, nr, nt, live);
        }
        for (int t = 0; t < nt; t++) {
            const int64_t at = tandem_k_attn_at(b, T, t0 + t, a->ld_g, h, dh);
            memcpy(a->dk + at, w->dk[t], (size_t)dh * sizeof(float));
            memcpy(a->dv + at, w->dv[t], (size_t)dh * sizeof(float));
        }
    }
}

/* Items [i0, i1) of [B * H]. */
static void attn_fused_bwd_items(void *ctx, int64_t i0, int64_t i1) {
    const tandem_k_attn_fused_bwd_args *a = ctx;
    fa_bwd_work w; /* ~100 KiB of stack */
    for (int64_t item = i0; item < i1; item++)
        fa_bwd_item(a, &w, (int)(item / a->heads), (int)(item % a->heads));
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

/* ---- costs (registry.h): the layout kernels move each element once; the [B, H, T, T] passes
 * touch every score, the causal half included (it is written as zero, read back later) ------ */

static double heads_elems(int batch, int seq, int heads, int head_dim) {
    return (double)batch * seq * heads * head_dim;
}


void tandem_k_qkv_split_cost(const tandem_k_qkv_split_args *a, tandem_kernel_cost *c) {
    const double n = 3.0 * heads_elems(a->batch, a->seq, a->heads, a->head_dim);
    tandem_kcost(c, 0.0, 4.0 * n, tandem_k_out_bytes(a->q, a->q16) * n);
}
void tandem_k_qkv_merge_grad_cost(const tandem_k_qkv_merge_grad_args *a, tandem_kernel_cost *c) {
    const double n = 3.0 * heads_elems(a->batch, a->seq, a->heads, a->head_dim);
    tandem_kcost(c, 0.0, 4.0 * n, tandem_k_out_bytes(a->dqkv, a->dqkv16) * n);
}
void tandem_k_heads_merge_cost(const tandem_k_heads_merge_args *a, tandem_kernel_cost *c) {
    const double n = heads_elems(a->batch, a->seq, a->heads, a->head_dim);
    tandem_kcost(c, 0.0, 4.0 * n, tandem_k_out_bytes(a->y, a->y16) * n);
}
void tandem_k_heads_split_grad_cost(const tandem_k_heads_split_grad_args *a, tandem_kernel_cost *c) {
    const double n = heads_elems(a->batch, a->seq, a->heads, a->head_dim);
    tandem_kcost(c, 0.0, 4.0 * n, tandem_k_out_bytes(a->d_o, a->d_o16) * n);
}
void tandem_k_softmax_causal_fwd_cost(const tandem_k_softmax_causal_fwd_args *a,
                                      tandem_kernel_cost *c) {
    const double bh = (double)a->batch * a->heads, n = bh * a->nq * (double)a->seq;
    /* the rows q0 .. q0 + nq - 1 read their causal part (about q0 + nq / 2 keys each): max,
     * exp, sum, scale ~ 5 per element (all rows: 2.5 B H T^2) */
    tandem_kcost(c, 5.0 * bh * a->nq * (a->q0 + 0.5 * a->nq), 4.0 * n + (double)a->batch * a->seq,
                 (a->bf16 ? 2.0 : 4.0) * n);
}
void tandem_k_softmax_causal_bwd_cost(const tandem_k_softmax_causal_bwd_args *a,
                                      tandem_kernel_cost *c) {
    const double n = (double)a->batch * a->heads * (double)a->seq * a->seq, e = a->bf16 ? 2.0 : 4.0;
    /* ds = p (dp - sum(p dp)): ~4 per element of the causal half; p and ds f32 or bf16 */
    tandem_kcost(c, 2.0 * n, (4.0 + e) * n, e * n);
}
void tandem_k_ga_fwd_cost(const tandem_k_ga_fwd_args *a, tandem_kernel_cost *c) {
    /* the first ga_heads heads' mel-query x text-key block of p */
    const double n = (double)a->batch * a->ga_heads * (double)a->mel_len * a->text_len;
    const double seq = (double)a->text_len + a->mel_len;
    tandem_kcost(c, 12.0 * n, (a->bf16 ? 2.0 : 4.0) * n + (double)a->batch * seq,
                 4.0 * (double)a->batch * a->ga_heads * a->mel_len);
}
void tandem_k_ga_bwd_cost(const tandem_k_ga_bwd_args *a, tandem_kernel_cost *c) {
    const double n = (double)a->batch * a->ga_heads * (double)a->mel_len * a->text_len;
    const double seq = (double)a->text_len + a->mel_len;
    tandem_kcost(c, 12.0 * n, 4.0 * n + (double)a->batch * seq, 4.0 * n);
}
