/* host_gemm.c — the host backend's f32 GEMM: CBLAS when available, else a cache-blocked loop.
 * See host_gemm.h for the contract. */
#include "host_gemm.h"

#include <limits.h>
#include <stdint.h>

#include "log.h"

#if defined(TANDEM_HAVE_CBLAS)
#include <cblas.h>
#endif

/* Blocking of the built-in GEMM: a KC x NC panel of op(B) is packed contiguously (64 KiB,
 * fits L2 and leaves L1 for the streaming rows of C), then swept by groups of MR rows of C
 * so each packed value loaded serves MR multiply-adds. */
enum { KC = 128, NC = 128, MR = 4, VW = 8 };

static tandem_status check_desc(const tandem_gemm_desc *d, const float *a, const float *b,
                                const float *c) {
    if (!d) return tandem_fail(TANDEM_E_INVALID, "host gemm: descriptor is NULL");
    if (d->m < 0 || d->n < 0 || d->k < 0 || d->batch < 0)
        return tandem_fail(TANDEM_E_INVALID,
                           "host gemm: negative size m=%lld n=%lld k=%lld batch=%lld",
                           (long long)d->m, (long long)d->n, (long long)d->k,
                           (long long)d->batch);
    if (d->stride_a < 0 || d->stride_b < 0 || d->stride_c < 0)
        return tandem_fail(TANDEM_E_INVALID, "host gemm: negative batch stride");
    /* Batch items of C must not overlap, or the result would depend on the order. A and B
     * may be shared between items (stride 0). */
    if (d->batch > 1 && d->stride_c < d->m * d->n)
        return tandem_fail(TANDEM_E_INVALID,
                           "host gemm: stride_c %lld is less than m*n = %lld for batch %lld",
                           (long long)d->stride_c, (long long)(d->m * d->n), (long long)d->batch);
    int empty_c = d->m == 0 || d->n == 0 || d->batch == 0;
    int empty_ab = empty_c || d->k == 0;
    if ((!empty_c && !c) || (!empty_ab && (!a || !b)))
        return tandem_fail(TANDEM_E_INVALID, "host gemm: NULL matrix pointer (a=%p b=%p c=%p)",
                           (const void *)a, (const void *)b, (const void *)c);
    return TANDEM_OK;
}

/* C = beta * C, not reading C when beta == 0. C: [m, n] */
static void scale_c(int64_t m, int64_t n, float beta, float *c) {
    if (beta == 1.0f) return;
    for (int64_t i = 0; i < m * n; i++) c[i] = beta == 0.0f ? 0.0f : beta * c[i];
}

/* c[j] += a * b[j] for MR rows at once, in VW-wide chunks the compiler can keep in vector
 * registers, then a scalar tail. */
static void row_update_mr(float *restrict c0, float *restrict c1, float *restrict c2,
                          float *restrict c3, const float *restrict bp, int64_t nb, float a0,
                          float a1, float a2, float a3) {
    int64_t j = 0;
    for (; j + VW <= nb; j += VW) {
        for (int q = 0; q < VW; q++) {
            float bv = bp[j + q];
            c0[j + q] += a0 * bv;
            c1[j + q] += a1 * bv;
            c2[j + q] += a2 * bv;
            c3[j + q] += a3 * bv;
        }
    }
    for (; j < nb; j++) {
        float bv = bp[j];
        c0[j] += a0 * bv;
        c1[j] += a1 * bv;
        c2[j] += a2 * bv;
        c3[j] += a3 * bv;
    }
}

static void row_update_1(float *restrict c0, const float *restrict bp, int64_t nb, float a0) {
    for (int64_t j = 0; j < nb; j++) c0[j] += a0 * bp[j];
}

/* One product C[m,n] = alpha * op(A) @ op(B) + beta * C with the packed panel bp [KC * NC]. */
static void blocked_one(const tandem_gemm_desc *d, float alpha, const float *A, const float *B,
                        float beta, float *C, float *bp) {
    const int64_t m = d->m, n = d->n, k = d->k;
    const int64_t lda = d->trans_a ? m : k;
    const int64_t ldb = d->trans_b ? k : n;
    scale_c(m, n, beta, C);
    if (k == 0 || alpha == 0.0f) return; /* BLAS: A and B are not read then */

#define OPA(i, p) (d->trans_a ? A[(p) * lda + (i)] : A[(i) * lda + (p)])
    for (int64_t j0 = 0; j0 < n; j0 += NC) {
        int64_t nb = n - j0 < NC ? n - j0 : NC;
        for (int64_t p0 = 0; p0 < k; p0 += KC) {
            int64_t kb = k - p0 < KC ? k - p0 : KC;
            /* bp[p, j] = op(B)[p0 + p, j0 + j]: [kb, nb], read along B's stored rows. */
            if (d->trans_b) {
                for (int64_t j = 0; j < nb; j++)
                    for (int64_t p = 0; p < kb; p++) bp[p * nb + j] = B[(j0 + j) * ldb + p0 + p];
            } else {
                for (int64_t p = 0; p < kb; p++)
                    for (int64_t j = 0; j < nb; j++) bp[p * nb + j] = B[(p0 + p) * ldb + j0 + j];
            }
            int64_t i = 0;
            for (; i + MR <= m; i += MR) {
                float *c0 = C + i * n + j0;
                for (int64_t p = 0; p < kb; p++) {
                    int64_t gp = p0 + p;
                    row_update_mr(c0, c0 + n, c0 + 2 * n, c0 + 3 * n, bp + p * nb, nb,
                                  alpha * OPA(i, gp), alpha * OPA(i + 1, gp),
                                  alpha * OPA(i + 2, gp), alpha * OPA(i + 3, gp));
                }
            }
            for (; i < m; i++) {
                float *c0 = C + i * n + j0;
                for (int64_t p = 0; p < kb; p++)
                    row_update_1(c0, bp + p * nb, nb, alpha * OPA(i, p0 + p));
            }
        }
    }
#undef OPA
}

tandem_status tandem_host_gemm_blocked(const tandem_gemm_desc *d, float alpha, const float *a,
                                       const float *b, float beta, float *c) {
    TANDEM_TRY(check_desc(d, a, b, c));
    if (d->m == 0 || d->n == 0) return TANDEM_OK;
    float bp[KC * NC]; /* on the stack: no allocation after commit */
    for (int64_t z = 0; z < d->batch; z++)
        blocked_one(d, alpha, a + z * d->stride_a, b + z * d->stride_b, beta, c + z * d->stride_c,
                    bp);
    return TANDEM_OK;
}

#if defined(TANDEM_HAVE_CBLAS)
static int fits_int(int64_t v) { return v <= INT_MAX; }
#endif

tandem_status tandem_host_gemm(const tandem_gemm_desc *d, float alpha, const float *a,
                               const float *b, float beta, float *c) {
#if defined(TANDEM_HAVE_CBLAS)
    TANDEM_TRY(check_desc(d, a, b, c));
    if (d->m == 0 || d->n == 0) return TANDEM_OK;
    const int64_t lda = d->trans_a ? d->m : d->k;
    const int64_t ldb = d->trans_b ? d->k : d->n;
    /* CBLAS takes int sizes and rejects k == 0 leading dimensions; such products go to the
     * blocked GEMM, which has neither limit. */
    if (d->k == 0 || !fits_int(d->m) || !fits_int(d->n) || !fits_int(d->k) || !fits_int(lda) ||
        !fits_int(ldb))
        return tandem_host_gemm_blocked(d, alpha, a, b, beta, c);
    for (int64_t z = 0; z < d->batch; z++)
        cblas_sgemm(CblasRowMajor, d->trans_a ? CblasTrans : CblasNoTrans,
                    d->trans_b ? CblasTrans : CblasNoTrans, (int)d->m, (int)d->n, (int)d->k, alpha,
                    a + z * d->stride_a, (int)lda, b + z * d->stride_b, (int)ldb, beta,
                    c + z * d->stride_c, (int)d->n);
    return TANDEM_OK;
#else
    return tandem_host_gemm_blocked(d, alpha, a, b, beta, c);
#endif
}

const char *tandem_host_gemm_impl(void) {
#if defined(TANDEM_HAVE_CBLAS)
    return "cblas";
#else
    return "blocked";
#endif
}
