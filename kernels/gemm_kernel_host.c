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
#include "kernels/layers.h"
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

/* Both kernels' arguments as the reference reads them: A and B f32 or bf16; C, bias and aux f32
 * or bf16 (whichever pointer is set). */
typedef struct gemm_ref {
    const void *a, *b;
    int ab_bf16;
    float *c, *aux;
    tandem_bf16 *c16, *aux16;
    const float *bias;
    const tandem_bf16 *bias16;
    int64_t m, n, k, stride_a, stride_b, stride_c;
    int trans_a, trans_b, epi;
    float alpha, beta;
    const float *c_src; /* beta C's source, or NULL: C */
    float *bgrad;       /* [batch, m] sums over k of op(A)'s rows, or NULL */
} gemm_ref;

static double ref_load(const void *p, int bf16, int64_t i) {
    return bf16 ? tandem_bf16_to_f32(((const tandem_bf16 *)p)[i]) : ((const float *)p)[i];
}

/* Element ci of C: v = alpha s + beta C + bias in double, then the epilogue (gemm_kernel.h). */
static void ref_store(const gemm_ref *r, int64_t ci, int64_t j, double s) {
    double v = (double)r->alpha * s;
    /* beta == 0: C is not read (it may hold anything, NaN included). */
    if (r->beta != 0.0f)
        v += (double)r->beta * (r->c_src ? r->c_src[ci] : r->c ? r->c[ci] : tandem_bf16_to_f32(r->c16[ci]));
    if (r->bias || r->bias16) v += r->bias ? r->bias[j] : tandem_bf16_to_f32(r->bias16[j]);
    if (r->epi == TANDEM_K_GEMM_EPI_GELU_AUX) {
        tandem_k_store2(r->aux, r->aux16, ci, (float)v);
        v = tandem_gelu_tanh((float)v);
    } else if (r->epi == TANDEM_K_GEMM_EPI_DGELU) {
        v *= tandem_gelu_tanh_grad(r->aux ? r->aux[ci] : tandem_bf16_to_f32(r->aux16[ci]));
    }
    tandem_k_store2(r->c, r->c16, ci, (float)v);
}

/* Rows [r0, r1) of the batch's [batch * m] rows of C; each element of C is one double dot
 * product, whatever the split. */
static void gemm_ref_rows(void *ctx, int64_t r0, int64_t r1) {
    const gemm_ref *a = ctx;
    const int64_t lda = a->trans_a ? a->m : a->k;
    const int64_t ldb = a->trans_b ? a->k : a->n;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t bz = r / a->m, i = r % a->m;
        const int64_t oa = bz * a->stride_a, ob = bz * a->stride_b; /* A [m, k] or [k, m]; B [k, n] or [n, k] */
        if (a->bgrad) {
            double s = 0.0;
            for (int64_t p = 0; p < a->k; p++) s += ref_load(a->a, a->ab_bf16, oa + (a->trans_a ? p * lda + i : i * lda + p));
            a->bgrad[r] = (float)s;
        }
        for (int64_t j = 0; j < a->n; j++) {
            double s = 0.0;
            for (int64_t p = 0; p < a->k; p++) {
                double x = ref_load(a->a, a->ab_bf16, oa + (a->trans_a ? p * lda + i : i * lda + p));
                double y = ref_load(a->b, a->ab_bf16, ob + (a->trans_b ? j * ldb + p : p * ldb + j));
                s += x * y;
            }
            ref_store(a, bz * a->stride_c + i * a->n + j, j, s);
        }
    }
}

static void gemm_ref_run(const gemm_ref *r, int64_t batch) {
    const int64_t work = r->n * r->k; /* per row of C */
    tandem_host_parallel_for(batch * r->m, work > 0 ? 16384 / work + 1 : 16384, gemm_ref_rows, (void *)r);
}

void tandem_k_gemm_f32_host(const tandem_k_gemm_f32_args *a) {
    const gemm_ref r = {a->a, a->b, 0, a->c, a->aux, NULL, NULL, a->bias, NULL, a->m, a->n, a->k, a->stride_a,
                        a->stride_b, a->stride_c, a->trans_a, a->trans_b, a->epi, a->alpha, a->beta, a->c_src,
                        a->bgrad};
    gemm_ref_run(&r, a->batch);
}

/* ---- gemm_bf16: the same tiles; the reference widens each bf16 exactly and sums in double ---- */
void tandem_k_gemm_bf16_geom(const tandem_k_gemm_bf16_args *a, tandem_launch_dims *d) {
    tandem_k_gemm_f32_args f;
    f.m = a->m;
    f.n = a->n;
    f.batch = a->batch;
    tandem_k_gemm_f32_geom(&f, d);
}

void tandem_k_gemm_bf16_host(const tandem_k_gemm_bf16_args *a) {
    const gemm_ref r = {a->a, a->b, 1, a->c, a->aux, a->c16, a->aux16, a->bias, a->bias16, a->m, a->n, a->k,
                        a->stride_a, a->stride_b, a->stride_c, a->trans_a, a->trans_b, a->epi, a->alpha, a->beta,
                        a->c_src, a->bgrad};
    gemm_ref_run(&r, a->batch);
}

/* ---- costs (registry.h) -------------------------------------------------------------------- */

void tandem_k_gemm_f32_cost(const tandem_k_gemm_f32_args *a, tandem_kernel_cost *c) {
    tandem_kcost_gemm(c, a->m, a->n, a->k, a->batch, a->stride_a, a->stride_b, 4.0, a->beta);
    tandem_kcost_gemm_epi(c, a->m, a->n, a->batch, a->beta, 4.0, a->bias != NULL, a->epi == TANDEM_K_GEMM_EPI_GELU_AUX,
                          a->epi == TANDEM_K_GEMM_EPI_DGELU);
    if (a->bgrad) c->bytes_written += 4.0 * (double)a->m * (double)a->batch;
}
void tandem_k_gemm_bf16_cost(const tandem_k_gemm_bf16_args *a, tandem_kernel_cost *c) {
    tandem_kcost_gemm(c, a->m, a->n, a->k, a->batch, a->stride_a, a->stride_b, 2.0, a->beta);
    tandem_kcost_gemm_epi(c, a->m, a->n, a->batch, a->beta, a->c16 ? 2.0 : 4.0, a->bias || a->bias16,
                          a->epi == TANDEM_K_GEMM_EPI_GELU_AUX, a->epi == TANDEM_K_GEMM_EPI_DGELU);
    if (a->bgrad) c->bytes_written += 4.0 * (double)a->m * (double)a->batch;
}
