/* gemm_kernel_host.c — launch geometry and host implementations of gemm_f32 and gemm_bf16
 * (gemm_kernel.cu).
 *
 * The host implementation is the reference the emulated kernel is compared with: a plain
 * triple loop that accumulates in double, so it is more accurate than any float kernel and
 * the comparison measures the kernel's rounding, not a difference of two float orders.
 * (The host backend's GEMM op does not use it; it runs platform/host/host_gemm.c.)
 */
#include <stdint.h>

#include "kernels/host_parallel.h"
#include "kernels/registry.h"

/* Must match gemm_kernel.cu: 64 x 64 tile of C per block of 16 x 16 threads. */
enum { GEMM_TILE = 64, GEMM_THREADS_XY = TANDEM_K_GEMM_THREADS_XY, GRID_YZ_MAX = 65535 };

static unsigned ceil_div_at_least_1(int64_t n, int64_t d, int64_t cap) {
    int64_t g = (n + d - 1) / d;
    if (g < 1) g = 1;
    if (cap > 0 && g > cap) g = cap;
    return (unsigned)g;
}

void tandem_k_gemm_f32_geom(const tandem_k_gemm_f32_args *a, tandem_launch_dims *d) {
    d->grid[0] = ceil_div_at_least_1(a->n, GEMM_TILE, 0);
    d->grid[1] = ceil_div_at_least_1(a->m, GEMM_TILE, GRID_YZ_MAX);
    d->grid[2] = ceil_div_at_least_1(a->batch, 1, GRID_YZ_MAX);
    d->block[0] = GEMM_THREADS_XY;
    d->block[1] = GEMM_THREADS_XY;
    d->block[2] = 1;
    d->shmem = 0;
}

/* Rows [r0, r1) of the batch's [batch * m] rows of C; each element of C is one double dot
 * product, whatever the split. */
static void gemm_f32_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_gemm_f32_args *a = ctx;
    const int64_t lda = a->trans_a ? a->m : a->k;
    const int64_t ldb = a->trans_b ? a->k : a->n;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t bz = r / a->m, i = r % a->m;
        const float *A = a->a + bz * a->stride_a; /* [m, k] or [k, m] */
        const float *B = a->b + bz * a->stride_b; /* [k, n] or [n, k] */
        float *C = a->c + bz * a->stride_c;       /* [m, n] */
        for (int64_t j = 0; j < a->n; j++) {
            double s = 0.0;
            for (int64_t p = 0; p < a->k; p++) {
                double x = a->trans_a ? A[p * lda + i] : A[i * lda + p];
                double y = a->trans_b ? B[j * ldb + p] : B[p * ldb + j];
                s += x * y;
            }
            float *cp = C + i * a->n + j;
            double v = (double)a->alpha * s;
            /* beta == 0: C is not read (it may hold anything, NaN included). */
            if (a->beta != 0.0f) v += (double)a->beta * *cp;
            if (a->bias) v += a->bias[j];
            *cp = (float)v;
        }
    }
}
void tandem_k_gemm_f32_host(const tandem_k_gemm_f32_args *a) {
    const int64_t work = (int64_t)a->n * a->k; /* per row of C */
    tandem_host_parallel_for((int64_t)a->batch * a->m, work > 0 ? 16384 / work + 1 : 16384, gemm_f32_rows,
                             (void *)a);
}

/* ---- gemm_bf16: the same tiles; the reference widens each bf16 exactly and sums in double ---- */
void tandem_k_gemm_bf16_geom(const tandem_k_gemm_bf16_args *a, tandem_launch_dims *d) {
    tandem_k_gemm_f32_args f;
    f.m = a->m;
    f.n = a->n;
    f.batch = a->batch;
    tandem_k_gemm_f32_geom(&f, d);
}

static void gemm_bf16_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_gemm_bf16_args *a = ctx;
    const int64_t lda = a->trans_a ? a->m : a->k;
    const int64_t ldb = a->trans_b ? a->k : a->n;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t bz = r / a->m, i = r % a->m;
        const tandem_bf16 *A = a->a + bz * a->stride_a; /* [m, k] or [k, m] */
        const tandem_bf16 *B = a->b + bz * a->stride_b; /* [k, n] or [n, k] */
        float *C = a->c + bz * a->stride_c;             /* [m, n] */
        for (int64_t j = 0; j < a->n; j++) {
            double s = 0.0;
            for (int64_t p = 0; p < a->k; p++) {
                double x = tandem_bf16_to_f32(a->trans_a ? A[p * lda + i] : A[i * lda + p]);
                double y = tandem_bf16_to_f32(a->trans_b ? B[j * ldb + p] : B[p * ldb + j]);
                s += x * y;
            }
            float *cp = C + i * a->n + j;
            double v = (double)a->alpha * s;
            if (a->beta != 0.0f) v += (double)a->beta * *cp;
            if (a->bias) v += a->bias[j];
            *cp = (float)v;
        }
    }
}
void tandem_k_gemm_bf16_host(const tandem_k_gemm_bf16_args *a) {
    const int64_t work = (int64_t)a->n * a->k;
    tandem_host_parallel_for((int64_t)a->batch * a->m, work > 0 ? 16384 / work + 1 : 16384, gemm_bf16_rows,
                             (void *)a);
}

/* ---- costs (registry.h) -------------------------------------------------------------------- */

void tandem_k_gemm_f32_cost(const tandem_k_gemm_f32_args *a, tandem_kernel_cost *c) {
    tandem_kcost_gemm(c, a->m, a->n, a->k, a->batch, a->stride_a, a->stride_b, 4.0, a->beta);
    if (a->bias) c->bytes_read += 4.0 * a->n;
}
void tandem_k_gemm_bf16_cost(const tandem_k_gemm_bf16_args *a, tandem_kernel_cost *c) {
    tandem_kcost_gemm(c, a->m, a->n, a->k, a->batch, a->stride_a, a->stride_b, 2.0, a->beta);
    if (a->bias) c->bytes_read += 4.0 * a->n;
}
