/* host_gemm.c — the host backend's f32 GEMM: CBLAS when available, else a cache-blocked loop.
 * See host_gemm.h for the contract. */
#include "platform/host/host_gemm.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "kernels/registry.h"
#include "platform/host/host_pool.h"
#include "platform/os/log.h"

#if defined(TANDEM_HAVE_CBLAS)
#include <cblas.h>
#endif

/* Blocking of the built-in GEMM: a KC x NC panel of op(B) is packed contiguously (64 KiB,
 * fits L2 and leaves L1 for the streaming rows of C), then swept by groups of MR rows of C
 * so each packed value loaded serves MR multiply-adds. */
enum { KC = 128, NC = 128, MR = 4, VW = 8 };

/* One product as the split hands it out: sizes and the full matrices' leading dimensions. */
typedef struct gemm_part {
    int trans_a, trans_b;
    int64_t m, n, k;
    int64_t lda, ldb, ldc;
} gemm_part;

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
    if (tandem_gemm_epi_bias_ptr(d->epilogue) && !d->bias && !empty_c)
        return tandem_fail(TANDEM_E_INVALID, "host gemm: epilogue %d without a bias pointer", (int)d->epilogue);
    if (tandem_gemm_epi_bias_out(d->epilogue) && (!d->trans_a || d->batch != 1)) /* bgrad_rows' layout */
        return tandem_fail(TANDEM_E_UNSUPPORTED, "host gemm: the bias-gradient epilogue takes trans_a 1 and "
                           "batch 1 (trans_a %d, batch %lld)", d->trans_a, (long long)d->batch);
    if (tandem_gemm_epi_has_aux(d->epilogue) && !d->aux && !empty_c)
        return tandem_fail(TANDEM_E_INVALID, "host gemm: epilogue %d without an aux pointer", (int)d->epilogue);
    return TANDEM_OK;
}

/* C = beta * C, not reading C when beta == 0. C: [m, n] dense */
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

/* One product C[m,n] = alpha * op(A) @ op(B) + beta * C (leading dimensions in g) with the
 * packed panel bp [KC * NC]. */
static void blocked_one(const gemm_part *g, float alpha, const float *A, const float *B,
                        float beta, float *C, float *bp) {
    const int64_t m = g->m, n = g->n, k = g->k, lda = g->lda, ldb = g->ldb, ldc = g->ldc;
    for (int64_t i = 0; i < m; i++) scale_c(1, n, beta, C + i * ldc);
    if (k == 0 || alpha == 0.0f) return; /* BLAS: A and B are not read then */

#define OPA(i, p) (g->trans_a ? A[(p) * lda + (i)] : A[(i) * lda + (p)])
    for (int64_t j0 = 0; j0 < n; j0 += NC) {
        int64_t nb = n - j0 < NC ? n - j0 : NC;
        for (int64_t p0 = 0; p0 < k; p0 += KC) {
            int64_t kb = k - p0 < KC ? k - p0 : KC;
            /* bp[p, j] = op(B)[p0 + p, j0 + j]: [kb, nb], read along B's stored rows. */
            if (g->trans_b) {
                for (int64_t j = 0; j < nb; j++)
                    for (int64_t p = 0; p < kb; p++) bp[p * nb + j] = B[(j0 + j) * ldb + p0 + p];
            } else {
                for (int64_t p = 0; p < kb; p++)
                    for (int64_t j = 0; j < nb; j++) bp[p * nb + j] = B[(p0 + p) * ldb + j0 + j];
            }
            int64_t i = 0;
            for (; i + MR <= m; i += MR) {
                float *c0 = C + i * ldc + j0;
                for (int64_t p = 0; p < kb; p++) {
                    int64_t gp = p0 + p;
                    row_update_mr(c0, c0 + ldc, c0 + 2 * ldc, c0 + 3 * ldc, bp + p * nb, nb,
                                  alpha * OPA(i, gp), alpha * OPA(i + 1, gp),
                                  alpha * OPA(i + 2, gp), alpha * OPA(i + 3, gp));
                }
            }
            for (; i < m; i++) {
                float *c0 = C + i * ldc + j0;
                for (int64_t p = 0; p < kb; p++)
                    row_update_1(c0, bp + p * nb, nb, alpha * OPA(i, p0 + p));
            }
        }
    }
#undef OPA
}

/* ---- the parallel split ------------------------------------------------------------------------
 * A batch is split over its items, each one call; a single product over ranges of C's rows
 * that start at multiples of SPLIT_ALIGN. Every element of C is then computed by one call
 * over the full k. For the blocked GEMM that is the same arithmetic for any split. OpenBLAS's
 * kernels handle rows in groups of their M unroll, with other accumulation code for the rows
 * left over, so a row's result depends on its offset modulo that unroll (24 rows for the
 * Haswell/Zen sgemm kernel; measured: ranges of 16 or 32 rows change bits, 24 and 48 do not)
 * and a split over C's columns changes bits whatever its alignment: hence rows only, aligned
 * to 48 (a multiple of every x86 sgemm M unroll we know). test_host_threads checks the bytes
 * for 1 and 3 threads on the machine it runs on; on a CPU whose kernel broke that, results
 * would still be deterministic for a given thread count (the ranges depend on it alone).
 * Products below SPLIT_MIN_MNK multiply-adds are not split: waking threads costs more. */
enum { SPLIT_ALIGN = 48 };
#define SPLIT_MIN_MNK ((int64_t)1 << 20)

typedef void (*part_fn)(const gemm_part *g, float alpha, const float *a, const float *b,
                        float beta, float *c);

typedef struct split_job {
    const tandem_gemm_desc *d;
    gemm_part whole; /* d's sizes and leading dimensions */
    float alpha, beta;
    const float *a, *b;
    float *c;
    part_fn run;
} split_job;

/* BGRAD: bias[i] = sum over k of op(A)[i, k] for op(A)'s rows [lo, lo + rows) (trans_a: A is
 * [k, m]), in float, k in order (the fatbin kernel's order), whatever the split. Lane-wise
 * vector code (GCC's -O2 cost model would leave it scalar: it needs a scalar epilogue). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("vect-cost-model=dynamic")))
#endif
static void bgrad_rows(const tandem_gemm_desc *d, const float *a, int64_t lo, int64_t rows) {
    float *restrict bias = (float *)(uintptr_t)d->bias + lo;
    for (int64_t i = 0; i < rows; i++) bias[i] = 0.0f;
    for (int64_t q = 0; q < d->k; q++) {
        const float *restrict row = a + q * d->m + lo;
        for (int64_t i = 0; i < rows; i++) bias[i] += row[i];
    }
}

/* The epilogue (device.h) on rows [0, rows) of C, [rows, n], while they are in cache. */
static void epilogue_rows(const tandem_gemm_desc *d, float *c, int64_t rows) {
    if (!tandem_gemm_epi_has_bias(d->epilogue)) return;
    const float *bias = (const float *)(uintptr_t)d->bias; /* [n] */
    for (int64_t i = 0; i < rows; i++)
        for (int64_t jj = 0; jj < d->n; jj++) c[i * d->n + jj] += bias[jj];
}

/* Batch items [z0, z1). */
static void run_items(void *ctx, int64_t z0, int64_t z1) {
    const split_job *j = ctx;
    for (int64_t z = z0; z < z1; z++) {
        j->run(&j->whole, j->alpha, j->a + z * j->d->stride_a, j->b + z * j->d->stride_b,
               j->beta, j->c + z * j->d->stride_c);
        epilogue_rows(j->d, j->c + z * j->d->stride_c, j->d->m);
    }
}

/* Blocks [r0, r1) of SPLIT_ALIGN rows of C of the one product. */
static void run_blocks(void *ctx, int64_t r0, int64_t r1) {
    const split_job *j = ctx;
    gemm_part g = j->whole;
    int64_t lo = r0 * SPLIT_ALIGN, hi = r1 * SPLIT_ALIGN;
    if (hi > g.m) hi = g.m;
    g.m = hi - lo; /* op(A)'s rows lo..hi: A's rows, or its columns when transposed */
    j->run(&g, j->alpha, j->a + (g.trans_a ? lo : lo * g.lda), j->b, j->beta, j->c + lo * g.ldc);
    epilogue_rows(j->d, j->c + lo * g.ldc, g.m);
    if (tandem_gemm_epi_bias_out(j->d->epilogue)) bgrad_rows(j->d, j->a, lo, g.m); /* batch 1, trans_a */
}

/* Runs the checked, non-empty GEMM d with `run` on the entered host pool (host_pool.h). */
static void run_split(const tandem_gemm_desc *d, float alpha, const float *a, const float *b,
                      float beta, float *c, part_fn run) {
    split_job j = {d,
                   {d->trans_a, d->trans_b, d->m, d->n, d->k, d->trans_a ? d->m : d->k,
                    d->trans_b ? d->k : d->n, d->n},
                   alpha, beta, a, b, c, run};
    const int64_t mnk = d->m * d->n * (d->k > 0 ? d->k : 1);
    if (d->batch > 1) {
        int64_t grain = mnk >= SPLIT_MIN_MNK ? 1 : (SPLIT_MIN_MNK + mnk - 1) / mnk;
        tandem_host_parallel_for(d->batch, grain, run_items, &j);
        return;
    }
    const int threads = tandem_host_parallel_threads();
    const int64_t blocks = (d->m + SPLIT_ALIGN - 1) / SPLIT_ALIGN;
    if (threads < 2 || mnk < SPLIT_MIN_MNK || blocks < 2) {
        run_blocks(&j, 0, blocks);
        return;
    }
    /* One range per thread: each range packs its own copy of op(B) (8 MiB for the tiny model's
     * largest dW), so 3 ranges per thread, tried for when another process takes a core, made
     * the quiet-machine step ~8 % slower. */
    tandem_host_parallel_for(blocks, (blocks + threads - 1) / threads, run_blocks, &j);
}

/* The checked, non-empty GEMM d with its whole epilogue. GELU: the product (+ bias) goes into
 * aux, then the GELU kernels' host implementations run over each item (kernels/layers.h: the
 * same function, the same bits as a separate gelu_fwd / gelu_bwd pass). */
static void run_epilogue(const tandem_gemm_desc *d, float alpha, const float *a, const float *b,
                         float beta, float *c, part_fn run) {
    float *aux = (float *)(uintptr_t)d->aux; /* [batch, m, n] laid out as C */
    const int64_t items = d->batch, n = d->m * d->n;
    if (d->epilogue != TANDEM_GEMM_EPI_GELU_AUX_BIAS) {
        run_split(d, alpha, a, b, beta, c, run);
    } else {
        if (beta != 0.0f) /* beta C is part of the pre-activation */
            for (int64_t z = 0; z < items; z++) memcpy(aux + z * d->stride_c, c + z * d->stride_c, (size_t)n * 4);
        run_split(d, alpha, a, b, beta, aux, run);
        for (int64_t z = 0; z < items; z++) {
            const tandem_k_gelu_fwd_args g = {aux + z * d->stride_c, c + z * d->stride_c, NULL, n};
            tandem_k_gelu_fwd_host(&g);
        }
        return;
    }
    if (d->epilogue != TANDEM_GEMM_EPI_DGELU) return;
    for (int64_t z = 0; z < items; z++) {
        float *cz = c + z * d->stride_c;
        const tandem_k_gelu_bwd_args g = {cz, aux + z * d->stride_c, cz, NULL, n};
        tandem_k_gelu_bwd_host(&g);
    }
}

/* The blocked GEMM of one part, packing on this thread's stack (no allocation after commit). */
static void blocked_part(const gemm_part *g, float alpha, const float *a, const float *b,
                         float beta, float *c) {
    float bp[KC * NC];
    blocked_one(g, alpha, a, b, beta, c, bp);
}

tandem_status tandem_host_gemm_blocked(const tandem_gemm_desc *d, float alpha, const float *a,
                                       const float *b, float beta, float *c) {
    TANDEM_TRY(check_desc(d, a, b, c));
    if (d->m == 0 || d->n == 0 || d->batch == 0) return TANDEM_OK;
    run_epilogue(d, alpha, a, b, beta, c, blocked_part);
    return TANDEM_OK;
}

#if defined(TANDEM_HAVE_CBLAS)
static int fits_int(int64_t v) { return v <= INT_MAX; }

static void cblas_part(const gemm_part *g, float alpha, const float *a, const float *b,
                       float beta, float *c) {
    cblas_sgemm(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans,
                g->trans_b ? CblasTrans : CblasNoTrans, (int)g->m, (int)g->n, (int)g->k, alpha, a,
                (int)g->lda, b, (int)g->ldb, beta, c, (int)g->ldc);
}
#endif

tandem_status tandem_host_gemm(const tandem_gemm_desc *d, float alpha, const float *a,
                               const float *b, float beta, float *c) {
#if defined(TANDEM_HAVE_CBLAS)
    TANDEM_TRY(check_desc(d, a, b, c));
    if (d->m == 0 || d->n == 0 || d->batch == 0) return TANDEM_OK;
    const int64_t lda = d->trans_a ? d->m : d->k;
    const int64_t ldb = d->trans_b ? d->k : d->n;
    /* CBLAS takes int sizes and rejects k == 0 leading dimensions; such products go to the
     * blocked GEMM, which has neither limit. */
    if (d->k == 0 || !fits_int(d->m) || !fits_int(d->n) || !fits_int(d->k) || !fits_int(lda) ||
        !fits_int(ldb))
        return tandem_host_gemm_blocked(d, alpha, a, b, beta, c);
    run_epilogue(d, alpha, a, b, beta, c, cblas_part);
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

int tandem_host_blas_set_threads(int threads) {
#if defined(TANDEM_HAVE_CBLAS)
    openblas_set_num_threads(threads);
    return openblas_get_num_threads();
#else
    (void)threads;
    return 0;
#endif
}

int tandem_host_blas_threads(void) {
#if defined(TANDEM_HAVE_CBLAS)
    return openblas_get_num_threads();
#else
    return 0;
#endif
}

const char *tandem_host_blas_core(void) {
#if defined(TANDEM_HAVE_CBLAS)
    const char *core = openblas_get_corename();
    return core ? core : "";
#else
    return "";
#endif
}

const char *tandem_host_blas_hint(void) {
#if defined(TANDEM_HAVE_CBLAS) && (defined(__x86_64__) || defined(__i386__))
    const char *core = tandem_host_blas_core();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        (strcmp(core, "Haswell") == 0 || strcmp(core, "Zen") == 0))
        return "this CPU has AVX-512 but OpenBLAS chose its AVX2 kernels: OPENBLAS_CORETYPE=SkylakeX in the "
               "environment selects the AVX-512 ones (tiny training step about 1.5x faster on a Zen 5 EPYC, "
               "docs/BENCHMARKS-training.md)";
#endif
    return "";
}
