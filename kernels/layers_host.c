/* layers_host.c — launch geometry and host implementations of the layer kernels (layers.cu).
 *
 * The host implementations are what the host backend trains with and the reference the
 * emulated kernels are compared with. They follow the semantics in layers.h, not the kernels'
 * thread structure, except where the structure is the semantics: layernorm_bwd's per-block
 * partials (the scratch is an output of that kernel, so both sides partition rows the same
 * way). Every loop runs in a fixed order: same inputs, bit-identical outputs (exact resume).
 * Row statistics are accumulated in double; nothing here allocates.
 *
 * Threads: each kernel's per-row (per-element, per-column) function is the reference; a thin
 * tandem_host_parallel_for around it (platform/host/host_pool.h) splits the rows over the host
 * device's threads. Every output is written by one index with the same arithmetic whatever
 * the split, so the results are bit-identical for any thread count.
 */
#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/host_math.h"
#include "kernels/host_parallel.h"
#include "kernels/registry.h"

/* Loops over runtime lengths compile to vector code: GCC's -O2 cost model ("very cheap")
 * vectorises only loops that need no scalar epilogue. Vectorising changes no result here:
 * float reductions keep their order (no -ffast-math), element-wise loops do the same
 * operation per element. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

/* Threads per block; layers.cu's reductions need a multiple of 32 (at most 1024). */
enum { ELEMENTWISE_THREADS = TANDEM_K_LAYERS_THREADS, LN_THREADS = TANDEM_K_LN_THREADS };
/* layers.cu's col_sum_acc block shape: CS_COLS columns x CS_SLICES row slices. */
enum { CS_COLS = TANDEM_K_CS_COLS, CS_SLICES = TANDEM_K_CS_SLICES };
/* More blocks add nothing on current GPUs; larger tensors loop round the grid-stride loop. */
enum { ELEMENTWISE_MAX_BLOCKS = 4096 };
/* Columns per pass of the host column sums (a double accumulator on the stack). */
enum { HOST_COL_CHUNK = 256 };
/* Host parallel loops: about this many elements per range at least. */
enum { HOST_GRAIN = 16384 };

/* Rows (or columns) of `width` elements per range for about HOST_GRAIN elements. */
static int64_t grain_of(int64_t width) { return width > 0 ? HOST_GRAIN / width + 1 : HOST_GRAIN; }

static void elementwise_dims(int64_t n, tandem_launch_dims *d) {
    *d = tandem_dims_1d(n, ELEMENTWISE_THREADS);
    if (d->grid[0] > ELEMENTWISE_MAX_BLOCKS) d->grid[0] = ELEMENTWISE_MAX_BLOCKS;
}

/* ---- layernorm_fwd ---- */
void tandem_k_layernorm_fwd_geom(const tandem_k_layernorm_fwd_args *a, tandem_launch_dims *d) {
    *d = tandem_dims_1d(a->rows, 1); /* one block per row (rows == 0: one idle block) */
    d->block[0] = LN_THREADS;
}
/* sum of x[0, n) in double over 4 lanes (element c into lane c % 4), then (0 + 1) + (2 + 3): a
 * fixed order, so vector code with the same bits for any split of the rows. */
static inline double lane_sum(const float *restrict x, int n) {
    double l[4] = {0.0, 0.0, 0.0, 0.0};
    int c = 0;
    for (; c + 4 <= n; c += 4)
        for (int k = 0; k < 4; k++) l[k] += x[c + k];
    for (; c < n; c++) l[c & 3] += x[c];
    return (l[0] + l[1]) + (l[2] + l[3]);
}
/* sum of (x - mean)^2 the same way */
static inline double lane_sum_sq(const float *restrict x, int n, double mean) {
    double l[4] = {0.0, 0.0, 0.0, 0.0};
    int c = 0;
    for (; c + 4 <= n; c += 4)
        for (int k = 0; k < 4; k++) l[k] += (x[c + k] - mean) * (x[c + k] - mean);
    for (; c < n; c++) l[c & 3] += (x[c] - mean) * (x[c] - mean);
    return (l[0] + l[1]) + (l[2] + l[3]);
}
static void layernorm_fwd_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_layernorm_fwd_args *a = ctx;
    const int d = a->d;
    const float *restrict gamma = a->gamma, *restrict beta = a->beta;
    for (int64_t r = r0; r < r1; r++) {
        const float *restrict x = a->x + r * d; /* [d] */
        double mean = lane_sum(x, d) / d;
        double rstd = 1.0 / sqrt(lane_sum_sq(x, d, mean) / d + (double)a->eps);
        if (a->y) {
            float *restrict y = a->y + r * d; /* [d] */
            for (int c = 0; c < d; c++) y[c] = (float)((x[c] - mean) * rstd * gamma[c] + beta[c]);
        }
        if (a->y16) /* the same f32 values, rounded to the bf16 operand */
            for (int c = 0; c < d; c++)
                a->y16[r * d + c] = tandem_f32_to_bf16((float)((x[c] - mean) * rstd * gamma[c] + beta[c]));
        a->mean[r] = (float)mean;
        a->rstd[r] = (float)rstd;
    }
}
void tandem_k_layernorm_fwd_host(const tandem_k_layernorm_fwd_args *a) {
    tandem_host_parallel_for(a->rows, grain_of(a->d), layernorm_fwd_rows, (void *)a);
}

/* ---- layernorm_bwd ---- */
void tandem_k_layernorm_bwd_geom(const tandem_k_layernorm_bwd_args *a, tandem_launch_dims *d) {
    *d = tandem_dims_1d(tandem_layernorm_bwd_blocks(a->rows), 1);
    d->block[0] = LN_THREADS;
    d->shmem = (unsigned)(3 * (size_t)a->d * sizeof(float)); /* the block's [3, d] partials */
}
/* One row's dx (written, or added to with acc) and its parts of the block's partials [3, d]:
 * element-wise, so it compiles to vector code once acc is a constant. */
typedef struct ln_row {
    const float *x, *dy, *gamma;
    const tandem_bf16 *dy16; /* when dy is NULL */
    float mean, rstd;
    double m_g, m_gx;
    int d;
} ln_row;
#define LN_INLINE static inline __attribute__((always_inline))
/* dy[c] of the row, f32 or (b16, a constant at each call) bf16 */
LN_INLINE float ln_dy(const ln_row *w, int c, int b16) {
    return b16 ? tandem_bf16_to_f32(w->dy16[c]) : w->dy[c];
}
LN_INLINE void ln_bwd_row(const ln_row *w, float *restrict dx, float *restrict part, int acc, int b16) {
    const float *restrict x = w->x, *restrict gamma = w->gamma;
    const int d = w->d;
    for (int c = 0; c < d; c++) {
        const float xhat = (x[c] - w->mean) * w->rstd, dy = ln_dy(w, c, b16);
        const float v = (float)(w->rstd * ((double)gamma[c] * dy - w->m_g - xhat * w->m_gx));
        const float o = acc ? dx[c] + v : v;
        dx[c] = o;
        part[c] += dy * xhat;
        part[d + c] += dy;
        part[2 * d + c] += o;
    }
}
/* The row means of g = gamma dy and of g xhat (in double, over 4 lanes as lane_sum does). */
LN_INLINE void ln_row_means(ln_row *w, int b16) {
    const float *restrict x = w->x, *restrict gamma = w->gamma;
    const int d = w->d;
    double s_g[4] = {0.0, 0.0, 0.0, 0.0}, s_gx[4] = {0.0, 0.0, 0.0, 0.0};
    int c = 0;
    for (; c + 4 <= d; c += 4)
        for (int k = 0; k < 4; k++) {
            double g = (double)gamma[c + k] * ln_dy(w, c + k, b16);
            s_g[k] += g;
            s_gx[k] += g * ((x[c + k] - w->mean) * w->rstd);
        }
    for (; c < d; c++) {
        double g = (double)gamma[c] * ln_dy(w, c, b16);
        s_g[c & 3] += g;
        s_gx[c & 3] += g * ((x[c] - w->mean) * w->rstd);
    }
    w->m_g = ((s_g[0] + s_g[1]) + (s_g[2] + s_g[3])) / d;
    w->m_gx = ((s_gx[0] + s_gx[1]) + (s_gx[2] + s_gx[3])) / d;
}

/* Block b's rows are b, b + nb, ...; its partials go to scratch[b] summed in that order, as
 * on the device. dx uses the row means of g and g * xhat taken in double. */
static void layernorm_bwd_blocks(void *ctx, int64_t b0, int64_t b1) {
    const tandem_k_layernorm_bwd_args *a = ctx;
    int nb = tandem_layernorm_bwd_blocks(a->rows), d = a->d;
    const float *restrict gamma = a->gamma;
    for (int blk = (int)b0; blk < (int)b1; blk++) {
        float *restrict part = a->scratch + (int64_t)blk * 3 * d; /* [3, d] */
        for (int c = 0; c < 3 * d; c++) part[c] = 0.0f;
        for (int r = blk; r < a->rows; r += nb) {
            const int64_t at = (int64_t)r * d;
            float *restrict dx = a->dx + at; /* [d] */
            ln_row row = {a->x + at, a->dy ? a->dy + at : NULL, gamma, a->dy ? NULL : a->dy16 + at,
                          a->mean[r], a->rstd[r], 0.0, 0.0, d};
            const int b16 = !a->dy; /* constants below: loops without branches */
            if (b16) ln_row_means(&row, 1);
            else ln_row_means(&row, 0);
            if (a->accumulate) {
                if (b16) ln_bwd_row(&row, dx, part, 1, 1);
                else ln_bwd_row(&row, dx, part, 1, 0);
            } else {
                if (b16) ln_bwd_row(&row, dx, part, 0, 1);
                else ln_bwd_row(&row, dx, part, 0, 0);
            }
            if (a->dx16)
                for (int c = 0; c < d; c++) a->dx16[at + c] = tandem_f32_to_bf16(dx[c]);
        }
    }
}
void tandem_k_layernorm_bwd_host(const tandem_k_layernorm_bwd_args *a) {
    int nb = tandem_layernorm_bwd_blocks(a->rows);
    int64_t rows_per_block = nb > 0 ? (a->rows + nb - 1) / nb : 1;
    tandem_host_parallel_for(nb, grain_of(rows_per_block * a->d), layernorm_bwd_blocks, (void *)a);
}

/* ---- layernorm_bwd_params ---- */
void tandem_k_layernorm_bwd_params_geom(const tandem_k_layernorm_bwd_params_args *a,
                                        tandem_launch_dims *d) {
    *d = tandem_dims_1d(a->d, TANDEM_K_LN_PARAMS_THREADS);
}
/* Columns [c0, c1) in chunks of LN_PARAMS_CHUNK: the blocks' partials row by row (contiguous,
 * vector code), each column summed over the blocks in order, as on the device. */
enum { LN_PARAMS_CHUNK = 256 };
static void layernorm_bwd_params_cols(void *ctx, int64_t c0, int64_t c1) {
    const tandem_k_layernorm_bwd_params_args *a = ctx;
    const int nb = tandem_layernorm_bwd_blocks(a->rows);
    float g[LN_PARAMS_CHUNK], b[LN_PARAMS_CHUNK], x[LN_PARAMS_CHUNK];
    for (int64_t lo = c0; lo < c1; lo += LN_PARAMS_CHUNK) {
        const int n = (int)(c1 - lo < LN_PARAMS_CHUNK ? c1 - lo : LN_PARAMS_CHUNK);
        for (int c = 0; c < n; c++) g[c] = b[c] = x[c] = 0.0f;
        for (int k = 0; k < nb; k++) {
            const float *restrict p = a->scratch + (int64_t)k * 3 * a->d + lo; /* [3, d] */
            for (int c = 0; c < n; c++) g[c] += p[c];
            for (int c = 0; c < n; c++) b[c] += p[a->d + c];
            if (a->dbias) /* the dx sums are read only when wanted, as the kernel does */
                for (int c = 0; c < n; c++) x[c] += p[2 * a->d + c];
        }
        for (int c = 0; c < n; c++) a->dgamma[lo + c] += g[c], a->dbeta[lo + c] += b[c];
        if (a->dbias)
            for (int c = 0; c < n; c++) a->dbias[lo + c] += x[c];
    }
}
void tandem_k_layernorm_bwd_params_host(const tandem_k_layernorm_bwd_params_args *a) {
    tandem_host_parallel_for(a->d, grain_of(3 * tandem_layernorm_bwd_blocks(a->rows)),
                             layernorm_bwd_params_cols, (void *)a);
}

/* ---- gelu_fwd / gelu_bwd ----
 * GELU 0.5 x (1 + tanh u), u = K0 (x + K1 x^3), in the sigmoid form the kernel uses (layers.h:
 * s = 1 / (1 + exp(-2u)), gelu = x s). The forward uses a branch-free exp (host_math.h) so that
 * blocks of GELU_BLOCK elements compile to vector code (glibc's tanhf, through expm1f, took a
 * quarter of the host training step's CPU time before; scalar expf still a tenth). Every
 * element, tail ones included (padded to a block), goes through the same block code, so an
 * element's result does not depend on where a range starts. It differs from the kernel's expf
 * by about an ulp (largest normalised error over x in [-6, 6]: 1e-13; kernel tests: 1e-12). */
enum { GELU_BLOCK = 64 };
/* The block functions are also built for x86-64-v3 (8-wide AVX2 vectors instead of SSE's 4)
 * and chosen when the CPU has it: lane-wise operations, no contraction in this file, so the
 * bits are the same either way. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define GELU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define GELU_CLONES
#endif

/* s[k] = 1 / (1 + exp(v)), v = -2 u(x[k]): the sigmoid form of 0.5 (1 + tanh u), for one
 * block. Three loops of selects or arithmetic only, so that each compiles to vector code
 * (a select feeding the float-to-int conversion would keep the loop scalar): v clamped to
 * tandem_host_exp's range (a NaN as 0), the sigmoid, then NaN put back and 0 where exp(v) would
 * overflow (as 1 / (1 + expf(v)) is; gelu(-1e30) must be 0, not -1e30 * 6e-39). */
GELU_CLONES static void gelu_sigmoid_block(const float *restrict x, float *restrict s) {
    float v[GELU_BLOCK], w[GELU_BLOCK];
    for (int k = 0; k < GELU_BLOCK; k++) {
        float xv = x[k];
        v[k] = -2.0f * (TANDEM_GELU_K0 * (xv + TANDEM_GELU_K1 * xv * xv * xv));
        float c = isless(v[k], -87.0f) ? -87.0f : v[k];
        c = isgreater(c, 88.0f) ? 88.0f : c;
        w[k] = v[k] != v[k] ? 0.0f : c;
    }
    for (int k = 0; k < GELU_BLOCK; k++) s[k] = 1.0f / (1.0f + tandem_host_exp(w[k]));
    for (int k = 0; k < GELU_BLOCK; k++) {
        float sk = isgreater(v[k], 88.0f) ? 0.0f : s[k]; /* exp(v) overflows: 1 / inf */
        s[k] = v[k] != v[k] ? v[k] : sk;
    }
}

/* The block of x starting at x (n <= GELU_BLOCK valid elements) into s; a short block is
 * padded with zeros so that it runs the same code. */
static void gelu_sigmoid(const float *x, int64_t n, float *s) {
    if (n == GELU_BLOCK) {
        gelu_sigmoid_block(x, s);
        return;
    }
    float xb[GELU_BLOCK] = {0};
    for (int64_t k = 0; k < n; k++) xb[k] = x[k];
    gelu_sigmoid_block(xb, s);
}

void tandem_k_gelu_fwd_geom(const tandem_k_gelu_fwd_args *a, tandem_launch_dims *d) {
    elementwise_dims(a->n, d);
}
/* y = x s */
static void gelu_fwd_range(void *ctx, int64_t i0, int64_t i1) {
    const tandem_k_gelu_fwd_args *a = ctx;
    float s[GELU_BLOCK];
    for (int64_t i = i0; i < i1; i += GELU_BLOCK) {
        int64_t n = i1 - i < GELU_BLOCK ? i1 - i : GELU_BLOCK;
        gelu_sigmoid(a->x + i, n, s);
        for (int64_t k = 0; k < n; k++) s[k] *= a->x[i + k]; /* y = x s; y may be x */
        if (a->y) memcpy(a->y + i, s, (size_t)n * sizeof(float));
        if (a->y16)
            for (int64_t k = 0; k < n; k++) a->y16[i + k] = tandem_f32_to_bf16(s[k]);
    }
}
void tandem_k_gelu_fwd_host(const tandem_k_gelu_fwd_args *a) {
    tandem_host_parallel_for(a->n, HOST_GRAIN, gelu_fwd_range, (void *)a);
}

void tandem_k_gelu_bwd_geom(const tandem_k_gelu_bwd_args *a, tandem_launch_dims *d) {
    elementwise_dims(a->n, d);
}
/* The derivative in layers.h's form, g = s + 2 x s (1 - s) K0 q with q = 1 + 3 K1 x^2 and
 * s = 1 / (1 + exp(v)), v = -2 K0 x (1 + K1 x^2) (the same float operations), on blocks of
 * GELU_BLOCK elements in vector code with tandem_host_exp (within ~2 ulp of expf). Where a
 * difference in exp could show, an element is recomputed with layers.h's own function, scalar
 * expf and all: near g's zero (x = -0.75) g is a difference of two terms of ~0.23 and an error
 * in s is amplified (x in (-1.02, -0.56)); for x in (2.4, 5), s is within a few ulp of 1 and a
 * one-ulp flip of 1 + exp(v) is amplified by 2 x K0 q (past 4.9 exp(v) < 2^-24 and s is 1
 * either way); |x| > 9 (the kernel's guard at 20, exp's range) and NaN. The bands are where a
 * 2-ulp error in exp changes g by more than the tolerance below (found by perturbing expf's
 * value on a dense grid: (-1.001, -0.582) and (2.467, 4.962)), with margin; they were
 * (-1.1, -0.4) and (2, inf) before 2026-11-25, a quarter of real activations instead of ~15 %.
 * Elsewhere the squared relative difference from layers.h's function is at most 3.3e-13 on a
 * dense grid of x (test_grad_layers' test_gelu_bwd_grid checks 1e-12, the kernel test's
 * tolerance, which its one-element case applies to a single value). Which path an element
 * takes depends on its own x only, so any split of the range gives the same bits. */
GELU_CLONES static void gelu_grad_block(const float *restrict x, float *restrict g) {
    float v[GELU_BLOCK], w[GELU_BLOCK], s[GELU_BLOCK];
    int exact[GELU_BLOCK];
    /* Loops of arithmetic, or of selects between loaded values, only: each compiles to vector
     * code (a select of a value computed in the same loop keeps GCC's loop scalar). */
    for (int k = 0; k < GELU_BLOCK; k++)
        v[k] = -2.0f * (TANDEM_GELU_K0 * x[k] * (1.0f + TANDEM_GELU_K1 * (x[k] * x[k])));
    for (int k = 0; k < GELU_BLOCK; k++) { /* |x| <= 9: |v| < 67, inside tandem_host_exp's range */
        float c = isgreater(fabsf(x[k]), 9.0f) ? 0.0f : v[k];
        w[k] = x[k] != x[k] ? 0.0f : c;
    }
    for (int k = 0; k < GELU_BLOCK; k++) s[k] = 1.0f / (1.0f + tandem_host_exp(w[k]));
    for (int k = 0; k < GELU_BLOCK; k++)
        g[k] = s[k] + 2.0f * x[k] * s[k] * (1.0f - s[k]) * TANDEM_GELU_K0 *
                          (1.0f + 3.0f * TANDEM_GELU_K1 * (x[k] * x[k]));
    for (int k = 0; k < GELU_BLOCK; k++)
        exact[k] = !isless(fabsf(x[k]), 9.0f) | (isgreater(x[k], 2.4f) & isless(x[k], 5.0f)) |
                   (isgreater(x[k], -1.02f) & isless(x[k], -0.56f));
    /* the recomputed elements' indices first, then a loop over them only: no branch per element
     * to mispredict (they are a random ~15 % of real activations) */
    int idx[GELU_BLOCK], n = 0;
    for (int k = 0; k < GELU_BLOCK; k++) {
        idx[n] = k;
        n += exact[k];
    }
    for (int j = 0; j < n; j++) g[idx[j]] = tandem_gelu_tanh_grad(x[idx[j]]);
}

static void gelu_bwd_range(void *ctx, int64_t i0, int64_t i1) {
    const tandem_k_gelu_bwd_args *a = ctx;
    float xb[GELU_BLOCK], g[GELU_BLOCK];
    for (int64_t i = i0; i < i1; i += GELU_BLOCK) {
        int64_t n = i1 - i < GELU_BLOCK ? i1 - i : GELU_BLOCK;
        if (n == GELU_BLOCK) {
            gelu_grad_block(a->x + i, g);
        } else { /* a short block padded with zeros runs the same code */
            for (int64_t k = 0; k < GELU_BLOCK; k++) xb[k] = k < n ? a->x[i + k] : 0.0f;
            gelu_grad_block(xb, g);
        }
        if (n == GELU_BLOCK) { /* through a copy: dx may be dy, and the loop is vector code */
            float d[GELU_BLOCK];
            memcpy(d, a->dy + i, sizeof d);
            for (int k = 0; k < GELU_BLOCK; k++) d[k] *= g[k];
            memcpy(a->dx + i, d, sizeof d);
            if (a->dx16)
                for (int k = 0; k < GELU_BLOCK; k++) a->dx16[i + k] = tandem_f32_to_bf16(d[k]);
        } else {
            for (int64_t k = 0; k < n; k++)
                tandem_k_store2(a->dx, a->dx16, i + k, a->dy[i + k] * g[k]);
        }
    }
}
void tandem_k_gelu_bwd_host(const tandem_k_gelu_bwd_args *a) {
    tandem_host_parallel_for(a->n, HOST_GRAIN, gelu_bwd_range, (void *)a);
}

/* ---- bias_add ---- */
void tandem_k_bias_add_geom(const tandem_k_bias_add_args *a, tandem_launch_dims *d) {
    elementwise_dims((int64_t)a->rows * a->d, d);
}
static void bias_add_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_bias_add_args *a = ctx;
    const float *restrict b = a->b; /* restrict locals: vector code (see axpy_f32_range) */
    const int d = a->d;
    for (int64_t r = r0; r < r1; r++) {
        float *restrict y = a->y + r * d; /* [d] */
        for (int c = 0; c < d; c++) y[c] += b[c];
    }
}
void tandem_k_bias_add_host(const tandem_k_bias_add_args *a) {
    tandem_host_parallel_for(a->rows, grain_of(a->d), bias_add_rows, (void *)a);
}

/* ---- col_sum_acc ---- */
void tandem_k_col_sum_acc_geom(const tandem_k_col_sum_acc_args *a, tandem_launch_dims *d) {
    *d = tandem_dims_1d(a->d, CS_COLS);
    d->block[1] = CS_SLICES;
}
/* Columns [cb, ce): row-major passes over chunks of columns keep the reads sequential; each
 * column sums its rows in order in a double accumulator (so any column split gives the same). */
static void col_sum_acc_cols(void *ctx, int64_t cb, int64_t ce) {
    const tandem_k_col_sum_acc_args *a = ctx;
    double acc[HOST_COL_CHUNK];
    for (int c0 = (int)cb; c0 < (int)ce; c0 += HOST_COL_CHUNK) {
        int nc = (int)ce - c0 < HOST_COL_CHUNK ? (int)ce - c0 : HOST_COL_CHUNK;
        for (int k = 0; k < nc; k++) acc[k] = 0.0;
        for (int r = 0; r < a->rows; r++) {
            const float *restrict dy = a->dy + (int64_t)r * a->d + c0; /* [nc] */
            for (int k = 0; k < nc; k++) acc[k] += dy[k];
        }
        for (int k = 0; k < nc; k++) a->db[c0 + k] = (float)(a->db[c0 + k] + acc[k]);
    }
}
void tandem_k_col_sum_acc_host(const tandem_k_col_sum_acc_args *a) {
    /* ranges of at least 16 columns: 64 B of each row, a cache line */
    int64_t grain = grain_of(a->rows);
    tandem_host_parallel_for(a->d, grain < 16 ? 16 : grain, col_sum_acc_cols, (void *)a);
}

/* ---- seq_embed_fwd ---- */
void tandem_k_seq_embed_fwd_geom(const tandem_k_seq_embed_fwd_args *a, tandem_launch_dims *d) {
    elementwise_dims((int64_t)a->batch * (a->text_len + a->mel_len) * a->d, d);
}
/* Rows [r0, r1) of the [B * T] sequence rows. */
static void seq_embed_fwd_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_seq_embed_fwd_args *a = ctx;
    int T = a->text_len + a->mel_len, d = a->d;
    for (int64_t row = r0; row < r1; row++) {
        int b = (int)(row / T), t = (int)(row % T);
        const float *src; /* [d] */
        if (t < a->text_len) {
            int32_t tok = a->tokens[(int64_t)b * a->text_len + t];
            assert(tok >= 0 && tok < a->vocab);
            src = a->sym_emb + (int64_t)tok * d;
        } else {
            src = a->prenet_out + ((int64_t)b * a->mel_len + (t - a->text_len)) * d;
        }
        const float *pos = a->pos_emb + (int64_t)t * d; /* [d] */
        float *x = a->x + ((int64_t)b * T + t) * d;     /* [d] */
        for (int c = 0; c < d; c++) x[c] = src[c] + pos[c];
    }
}
void tandem_k_seq_embed_fwd_host(const tandem_k_seq_embed_fwd_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * (a->text_len + a->mel_len), grain_of(a->d),
                             seq_embed_fwd_rows, (void *)a);
}

/* ---- seq_embed_bwd ---- */
void tandem_k_seq_embed_bwd_geom(const tandem_k_seq_embed_bwd_args *a, tandem_launch_dims *d) {
    /* a block per symbol and column group, then the position sums and the prenet copy */
    int T = a->text_len + a->mel_len;
    elementwise_dims(((int64_t)T + (int64_t)a->batch * a->mel_len) * a->d, d);
    d->grid[0] += (unsigned)a->vocab * (unsigned)((a->d + ELEMENTWISE_THREADS - 1) / ELEMENTWISE_THREADS);
}
/* Columns [c0, c1) of every row: rows are added straight into the gradients in (b, t) order,
 * O(B*T*d), fixed order per element; tokens repeat, so the split is over columns, not rows. */
static void seq_embed_bwd_cols(void *ctx, int64_t c0, int64_t c1) {
    const tandem_k_seq_embed_bwd_args *a = ctx;
    int Tt = a->text_len, T = Tt + a->mel_len, d = a->d;
    for (int b = 0; b < a->batch; b++)
        for (int t = 0; t < T; t++) {
            const float *dx = a->dx + ((int64_t)b * T + t) * d; /* [d] */
            float *dpos = a->d_pos_emb + (int64_t)t * d;        /* [d] */
            for (int64_t c = c0; c < c1; c++) dpos[c] += dx[c];
            float *dst; /* [d] */
            if (t < Tt) {
                int32_t tok = a->tokens[(int64_t)b * Tt + t];
                assert(tok >= 0 && tok < a->vocab);
                dst = a->d_sym_emb + (int64_t)tok * d;
                for (int64_t c = c0; c < c1; c++) dst[c] += dx[c];
            } else {
                dst = a->d_prenet_out + ((int64_t)b * a->mel_len + (t - Tt)) * d;
                for (int64_t c = c0; c < c1; c++) dst[c] = dx[c];
            }
        }
}
void tandem_k_seq_embed_bwd_host(const tandem_k_seq_embed_bwd_args *a) {
    int64_t grain = grain_of((int64_t)a->batch * (a->text_len + a->mel_len));
    tandem_host_parallel_for(a->d, grain < 16 ? 16 : grain, seq_embed_bwd_cols, (void *)a);
}

/* ---- prenet_dropout ---- */
void tandem_k_prenet_dropout_geom(const tandem_k_prenet_dropout_args *a, tandem_launch_dims *d) {
    elementwise_dims(a->n, d);
}
/* Elements [i0, i1): each element's mask from its own counter, so any split gives the same bits. */
static void prenet_dropout_range(void *ctx, int64_t i0, int64_t i1) {
    const tandem_k_prenet_dropout_args *a = ctx; /* step_at resolved into step by the caller */
    const uint64_t base = tandem_k_dropout_base(a->seed, a->step, a->micro);
    for (int64_t i = i0; i < i1; i++) { /* branch-free (a kept element is a coin flip): x s, or +0 */
        const float v = a->x[i] * a->scale;
        uint32_t bits;
        memcpy(&bits, &v, sizeof bits);
        bits &= 0u - (uint32_t)tandem_k_dropout_keep_at(base, i, a->p);
        memcpy(&a->x[i], &bits, sizeof bits);
    }
}
void tandem_k_prenet_dropout_host(const tandem_k_prenet_dropout_args *a) {
    tandem_k_prenet_dropout_args b = *a;
    if (b.step_at) b.step = b.step_at[0];
    tandem_host_parallel_for(b.n, HOST_GRAIN, prenet_dropout_range, &b);
}

/* ---- prenet_input ---- */
void tandem_k_prenet_input_geom(const tandem_k_prenet_input_args *a, tandem_launch_dims *d) {
    elementwise_dims((int64_t)a->batch * a->mel_len * a->r * a->n_mels, d);
}
/* Groups [r0, r1) of the [B * Tm] groups. */
static void prenet_input_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_prenet_input_args *a = ctx;
    int64_t g = (int64_t)a->r * a->n_mels; /* floats per group */
    for (int64_t row = r0; row < r1; row++) {
        int b = (int)(row / a->mel_len), j = (int)(row % a->mel_len);
        const int64_t out = ((int64_t)b * a->mel_len + j) * g; /* groups [g] of the row */
        if (j == 0) {
            for (int64_t k = 0; k < g; k++) tandem_k_store2(a->groups, a->groups16, out + k, 0.0f);
            continue;
        }
        const float *in = a->mels + ((int64_t)b * a->mel_len + j - 1) * g; /* [g] */
        for (int64_t k = 0; k < g; k++) tandem_k_store2(a->groups, a->groups16, out + k, in[k]);
    }
}
void tandem_k_prenet_input_host(const tandem_k_prenet_input_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->mel_len, grain_of((int64_t)a->r * a->n_mels),
                             prenet_input_rows, (void *)a);
}

/* ---- mel_rows_pad ---- */
void tandem_k_mel_rows_pad_geom(const tandem_k_mel_rows_pad_args *a, tandem_launch_dims *d) {
    *d = tandem_dims_1d(a->d, TANDEM_K_PAD_THREADS);
    const int64_t rows = (int64_t)a->batch * (a->text_len + a->mel_len);
    d->grid[1] = (unsigned)(rows < 1 ? 1 : rows < 65535 ? rows : 65535);
}
/* Rows [r0, r1) of the [B * T] rows. */
static void mel_rows_pad_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_mel_rows_pad_args *a = ctx;
    const int T = a->text_len + a->mel_len;
    for (int64_t r = r0; r < r1; r++) {
        const int b = (int)(r / T), t = (int)(r % T);
        float *dst = a->dst + r * a->d; /* [d] */
        if (t < a->text_len) {
            memset(dst, 0, (size_t)a->d * sizeof *dst);
            continue;
        }
        memcpy(dst, a->src + ((int64_t)b * a->mel_len + (t - a->text_len)) * a->d, (size_t)a->d * sizeof *dst);
    }
}
void tandem_k_mel_rows_pad_host(const tandem_k_mel_rows_pad_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * (a->text_len + a->mel_len), grain_of(a->d),
                             mel_rows_pad_rows, (void *)a);
}

/* ---- mel_rows_take ---- */
void tandem_k_mel_rows_take_geom(const tandem_k_mel_rows_take_args *a, tandem_launch_dims *d) {
    *d = tandem_dims_1d(a->d, TANDEM_K_PAD_THREADS);
    const int64_t rows = (int64_t)a->batch * a->mel_len;
    d->grid[1] = (unsigned)(rows < 1 ? 1 : rows < 65535 ? rows : 65535);
}
/* Rows [r0, r1) of the [B * Tm] rows of dst. */
static void mel_rows_take_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_mel_rows_take_args *a = ctx;
    const int T = a->text_len + a->mel_len;
    const size_t es = a->dst ? sizeof(float) : sizeof(tandem_bf16);
    const char *src = a->dst ? (const char *)a->src : (const char *)a->src16;
    char *dst = a->dst ? (char *)a->dst : (char *)a->dst16;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t b = r / a->mel_len, j = r % a->mel_len;
        memcpy(dst + (size_t)(r * a->d) * es, src + (size_t)((b * T + a->text_len + j) * a->d) * es, (size_t)a->d * es);
    }
}
void tandem_k_mel_rows_take_host(const tandem_k_mel_rows_take_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->mel_len, grain_of(a->d), mel_rows_take_rows, (void *)a);
}

/* ---- costs (registry.h) -------------------------------------------------------------------- */


void tandem_k_layernorm_fwd_cost(const tandem_k_layernorm_fwd_args *a, tandem_kernel_cost *c) {
    const double n = (double)a->rows * (double)a->d;
    /* mean, variance, normalise, scale and shift: ~8 per element */
    tandem_kcost(c, 8.0 * n, 4.0 * n + 8.0 * a->d,
                 tandem_k_out_bytes(a->y, a->y16) * n + 8.0 * a->rows);
}
void tandem_k_layernorm_bwd_cost(const tandem_k_layernorm_bwd_args *a, tandem_kernel_cost *c) {
    const double n = (double)a->rows * (double)a->d;
    const double scratch = (double)tandem_layernorm_bwd_scratch_floats(a->rows, a->d);
    const double dy = a->dy ? 4.0 : 2.0;
    tandem_kcost(c, (a->accumulate ? 13.0 : 12.0) * n, (dy + (a->accumulate ? 8.0 : 4.0)) * n + 8.0 * a->rows + 4.0 * a->d,
                 tandem_k_out_bytes(a->dx, a->dx16) * n + 4.0 * scratch);
}
void tandem_k_layernorm_bwd_params_cost(const tandem_k_layernorm_bwd_params_args *a,
                                        tandem_kernel_cost *c) {
    const double scratch = (double)tandem_layernorm_bwd_scratch_floats(a->rows, a->d);
    const double cols = a->dbias ? 3.0 : 2.0; /* the dx sums are read only for dbias */
    tandem_kcost(c, scratch * cols / 3.0, 4.0 * scratch * cols / 3.0 + 4.0 * cols * a->d, 4.0 * cols * a->d);
}
void tandem_k_gelu_fwd_cost(const tandem_k_gelu_fwd_args *a, tandem_kernel_cost *c) {
    tandem_kcost(c, 10.0 * (double)a->n, 4.0 * (double)a->n, tandem_k_out_bytes(a->y, a->y16) * (double)a->n);
}
void tandem_k_gelu_bwd_cost(const tandem_k_gelu_bwd_args *a, tandem_kernel_cost *c) {
    tandem_kcost(c, 18.0 * (double)a->n, 8.0 * (double)a->n, tandem_k_out_bytes(a->dx, a->dx16) * (double)a->n);
}
void tandem_k_bias_add_cost(const tandem_k_bias_add_args *a, tandem_kernel_cost *c) {
    const double n = (double)a->rows * (double)a->d;
    tandem_kcost(c, n, 4.0 * n + 4.0 * a->d, 4.0 * n);
}
void tandem_k_col_sum_acc_cost(const tandem_k_col_sum_acc_args *a, tandem_kernel_cost *c) {
    const double n = (double)a->rows * (double)a->d;
    tandem_kcost(c, n + a->d, 4.0 * n + 4.0 * a->d, 4.0 * a->d);
}
void tandem_k_mel_rows_pad_cost(const tandem_k_mel_rows_pad_args *a, tandem_kernel_cost *c) {
    const double d = (double)a->d, mel = (double)a->batch * a->mel_len;
    tandem_kcost(c, 0.0, 4.0 * mel * d, 4.0 * (double)a->batch * (a->text_len + a->mel_len) * d);
}
void tandem_k_mel_rows_take_cost(const tandem_k_mel_rows_take_args *a, tandem_kernel_cost *c) {
    const double n = (double)a->batch * a->mel_len * a->d, es = a->dst ? 4.0 : 2.0;
    tandem_kcost(c, 0.0, es * n, es * n);
}
void tandem_k_seq_embed_fwd_cost(const tandem_k_seq_embed_fwd_args *a, tandem_kernel_cost *c) {
    const double T = (double)a->text_len + (double)a->mel_len, n = (double)a->batch * T * a->d;
    /* x = (token row or prenet row) + position row: the gathered rows, the prenet output and the
     * position table read once each */
    const double text = (double)a->batch * a->text_len, mel = (double)a->batch * a->mel_len;
    tandem_kcost(c, n, 4.0 * (text + (text + mel) * a->d + T * a->d), 4.0 * n);
}
void tandem_k_seq_embed_bwd_cost(const tandem_k_seq_embed_bwd_args *a, tandem_kernel_cost *c) {
    const double T = (double)a->text_len + (double)a->mel_len, n = (double)a->batch * T * a->d;
    const double text = (double)a->batch * a->text_len, mel = (double)a->batch * a->mel_len;
    /* dx read once; d_pos and the touched d_sym rows read and written (+=); d_prenet written */
    tandem_kcost(c, 2.0 * n, 4.0 * (n + text + (double)a->vocab * a->d + T * a->d),
                 4.0 * ((double)a->vocab * a->d + T * a->d + mel * a->d));
}
void tandem_k_prenet_input_cost(const tandem_k_prenet_input_args *a, tandem_kernel_cost *c) {
    const double n = (double)a->batch * (double)a->mel_len * a->r * a->n_mels;
    tandem_kcost(c, 0.0, 4.0 * n, tandem_k_out_bytes(a->groups, a->groups16) * n); /* a shifted copy */
}
void tandem_k_prenet_dropout_cost(const tandem_k_prenet_dropout_args *a, tandem_kernel_cost *c) {
    /* a counter-based hash per element (~12 integer ops) and the scale */
    tandem_kcost(c, 13.0 * (double)a->n, 4.0 * (double)a->n, 4.0 * (double)a->n);
}
