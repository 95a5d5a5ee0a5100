/* test_cuda_backend.c — the cuda backend (platform/cuda/cuda_*.c) through the stand-in driver
 * ($(BUILD)/test/fakecuda/libcuda.so.1 + libcublasLt.so.13, loaded via TANDEM_CUDA_DRIVER and
 * TANDEM_CUBLASLT): device info, peer access, GEMM for every transpose combination and batch
 * against a double-precision reference, launches, copies, events, and the error paths (wrong
 * argument size, unprepared GEMM shape, out of memory). The whole group runs twice: with
 * cuBLASLt, then (in a child process, the choice is per process) with TANDEM_CUBLASLT=none so
 * GEMMs go through the fatbin kernel. Skipped when the stand-in has not been built. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dlfcn.h>
#include <math.h>
#include <spawn.h>
#include <sys/wait.h>

#include "platform/cuda/cuda_api.h"
#include "kernels/layers.h" /* the GELU reference */
#include "platform/device.h"
#include "kernels/registry.h"
#include "tandem.h"
#include "tandem_system.h"
#include "test/fakecuda/fakecuda.h"
#include "test/fixtures.h"
#include "test/testutil.h"
#include "tools/env_options.h"

#define FAKE_DIR TANDEM_TEST_BUILD_DIR "/test/fakecuda"
#define FAKE_DRIVER FAKE_DIR "/libcuda.so.1"
#define FAKE_LT FAKE_DIR "/libcublasLt.so.13"

extern char **environ;

static tandem_rng rng;
static tandem_device *dev0, *dev1;
static tandem_stream s0, s1;
static int (*fake_errors)(void);

static int fake_error_count(void) { return fake_errors ? fake_errors() : 0; }

static int group_setup(void **state) {
    (void)state;
    setenv("TANDEM_CUDA_DRIVER", FAKE_DRIVER, 1);
    if (cli_env_apply(NULL, 0) != TANDEM_OK) return -1;
    setenv("TANDEM_FAKECUDA_DEVICES", "2", 1);
    setenv("TANDEM_FAKECUDA_ARCH", "86", 1);
    setenv("TANDEM_FAKECUDA_NO_PEER", "0", 1);
    int n = 0;
    if (tandem_cuda_device_count(&n) != TANDEM_OK || n != 2) {
        fprintf(stderr, "stand-in driver: %d devices (%s)\n", n, tandem_last_error());
        return -1;
    }
    void *h = dlopen(FAKE_DRIVER, RTLD_NOW | RTLD_NOLOAD);
    if (h) *(void **)&fake_errors = dlsym(h, "tandem_fakecuda_error_count");
    if (tandem_cuda_device_open(0, &dev0) != TANDEM_OK || tandem_cuda_device_open(1, &dev1) != TANDEM_OK) {
        fprintf(stderr, "open: %s\n", tandem_last_error());
        return -1;
    }
    s0.dev = dev0;
    s1.dev = dev1;
    if (dev0->ops->stream_create(dev0, &s0) != TANDEM_OK || dev1->ops->stream_create(dev1, &s1) != TANDEM_OK) return -1;
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    if (dev0) dev0->ops->stream_destroy(&s0);
    if (dev1) dev1->ops->stream_destroy(&s1);
    tandem_device_close(dev0);
    tandem_device_close(dev1);
    return 0;
}

static void test_info_and_peers(void **state) {
    (void)state;
    assert_string_equal(dev0->ops->name, "cuda");
    assert_int_equal(dev0->info.backend, TANDEM_BACKEND_CUDA);
    assert_int_equal(dev1->info.ordinal, 1);
    assert_int_equal(dev0->info.cc_major, 8);
    assert_int_equal(dev0->info.cc_minor, 6);
    assert_true(dev0->info.supports_bf16);
    assert_true(dev0->info.total_memory > 0);
    assert_true(dev0->info.multiprocessors > 0);
    assert_true(dev0->info.name[0] != '\0');
    assert_true(dev0->ops->can_access_peer(dev0, dev1));
    assert_true(dev0->ops->can_access_peer(dev1, dev0));
}

/* Row-major reference in double: C = alpha op(A) op(B) + beta C0. */
static double ref_at(const float *a, const float *b, const float *c0, const tandem_gemm_desc *g, float alpha,
                     float beta, int64_t q, int64_t i, int64_t j) {
    double s = 0;
    const float *A = a + q * g->stride_a, *B = b + q * g->stride_b;
    for (int64_t p = 0; p < g->k; p++) {
        double x = g->trans_a ? A[p * g->m + i] : A[i * g->k + p];
        double y = g->trans_b ? B[j * g->k + p] : B[p * g->n + j];
        s += x * y;
    }
    return alpha * s + beta * (double)c0[q * g->stride_c + i * g->n + j];
}

/* Element x of the epilogue's aux (GELU_AUX_BIAS writes it: NaN before; DGELU reads it) and bias
 * [n] (BGRAD's bias gradient [m]: NaN before), on the device, their host copies returned; the
 * descriptor holds their addresses. */
static void epi_operands(tandem_gemm_desc *g, size_t nc, float **aux, float **bias, tandem_dptr dp[2]) {
    const int64_t nbias = g->n > g->m ? g->n : g->m;
    *aux = malloc(nc * 4), *bias = malloc((size_t)nbias * 4);
    assert_true(*aux && *bias);
    tandem_rng_fill(&rng, *aux, (int64_t)nc, -3.0f, 3.0f);
    if (g->epilogue == TANDEM_GEMM_EPI_GELU_AUX_BIAS)
        for (size_t x = 0; x < nc; x++) (*aux)[x] = NAN;
    tandem_rng_fill(&rng, *bias, nbias, -1.0f, 1.0f);
    if (tandem_gemm_epi_bias_out(g->epilogue))
        for (int64_t x = 0; x < nbias; x++) (*bias)[x] = NAN;
    assert_int_equal(dev0->ops->mem_alloc(dev0, nc * 4, &dp[0]), TANDEM_OK);
    assert_int_equal(dev0->ops->mem_alloc(dev0, (size_t)nbias * 4, &dp[1]), TANDEM_OK);
    assert_int_equal(dev0->ops->copy_h2d(&s0, dp[0], *aux, nc * 4), TANDEM_OK);
    assert_int_equal(dev0->ops->copy_h2d(&s0, dp[1], *bias, (size_t)nbias * 4), TANDEM_OK);
    g->aux = tandem_gemm_epi_has_aux(g->epilogue) ? dp[0] : 0;
    g->bias = tandem_gemm_epi_bias_ptr(g->epilogue) ? dp[1] : 0;
}

/* BGRAD: the bias gradient [m] on the device against sum over k of op(A)'s rows (A [k, m]). */
static void check_bgrad(const tandem_gemm_desc *g, const float *a, tandem_dptr dbias) {
    if (!tandem_gemm_epi_bias_out(g->epilogue)) return;
    float *got = malloc((size_t)g->m * 4);
    assert_non_null(got);
    assert_int_equal(dev0->ops->copy_d2h(&s0, got, dbias, (size_t)g->m * 4), TANDEM_OK);
    assert_int_equal(dev0->ops->stream_sync(&s0), TANDEM_OK);
    for (int64_t i = 0; i < g->m; i++) {
        double want = 0.0;
        for (int64_t p = 0; p < g->k; p++) want += a[p * g->m + i];
        if (!(fabs(got[i] - want) <= 1e-4 * (1 + fabs(want))))
            fail_msg("BGRAD %lldx%lldx%lld: bias gradient[%lld] = %g, expected %g", (long long)g->m,
                     (long long)g->n, (long long)g->k, (long long)i, got[i], want);
    }
    free(got);
}

/* The reference of C[q][i][j] (r: alpha AB + beta C) after the epilogue; *aux_want: what
 * GELU_AUX_BIAS writes into aux there. */
static double epi_ref(const tandem_gemm_desc *g, double r, const float *aux, const float *bias, int64_t x, int64_t j,
                      double *aux_want) {
    if (g->epilogue == TANDEM_GEMM_EPI_DGELU) return r * tandem_gelu_tanh_grad(aux[x]);
    if (!tandem_gemm_epi_has_bias(g->epilogue)) return r;
    *aux_want = r + bias[j];
    return g->epilogue == TANDEM_GEMM_EPI_BIAS ? *aux_want : tandem_gelu_tanh((float)*aux_want);
}

/* 1: run_gemm reads beta C from a separate copy of C (desc.c_src) and poisons C itself. */
static int g_c_src;

static void run_gemm(int trans_a, int trans_b, int64_t batch, tandem_gemm_epilogue epi) {
    tandem_gemm_desc g = {trans_a, trans_b, tandem_rng_int(&rng, 1, 70), tandem_rng_int(&rng, 1, 70),
                          tandem_rng_int(&rng, 1, 70), batch, 0, 0, 0, TANDEM_F32, TANDEM_F32, TANDEM_F32, epi, 0, 0, 0, 0};
    if (epi != TANDEM_GEMM_EPI_NONE && trans_b) g.n = 8 * tandem_rng_int(&rng, 1, 8); /* cuBLASLt's aux LD, %8 */
    if (batch > 1) {
        g.stride_a = g.m * g.k + tandem_rng_int(&rng, 0, 5); /* gaps between batch items */
        g.stride_b = g.k * g.n + tandem_rng_int(&rng, 0, 5);
        g.stride_c = g.m * g.n + tandem_rng_int(&rng, 0, 5);
    }
    size_t na = (size_t)(g.stride_a * (batch - 1) + g.m * g.k), nb = (size_t)(g.stride_b * (batch - 1) + g.k * g.n),
           nc = (size_t)(g.stride_c * (batch - 1) + g.m * g.n);
    float *a = malloc(na * 4), *b = malloc(nb * 4), *c0 = malloc(nc * 4), *c = malloc(nc * 4);
    assert_true(a && b && c0 && c);
    tandem_rng_fill(&rng, a, (int64_t)na, -1.0f, 1.0f);
    tandem_rng_fill(&rng, b, (int64_t)nb, -1.0f, 1.0f);
    tandem_rng_fill(&rng, c0, (int64_t)nc, -1.0f, 1.0f);
    float alpha = tandem_rng_uniform(&rng, -2, 2), beta = tandem_rng_uniform(&rng, -1, 1);
    tandem_dptr da, db, dc;
    assert_int_equal(dev0->ops->mem_alloc(dev0, na * 4, &da), TANDEM_OK);
    assert_int_equal(dev0->ops->mem_alloc(dev0, nb * 4, &db), TANDEM_OK);
    assert_int_equal(dev0->ops->mem_alloc(dev0, nc * 4, &dc), TANDEM_OK);
    assert_int_equal(dev0->ops->copy_h2d(&s0, da, a, na * 4), TANDEM_OK);
    assert_int_equal(dev0->ops->copy_h2d(&s0, db, b, nb * 4), TANDEM_OK);
    assert_int_equal(dev0->ops->copy_h2d(&s0, dc, c0, nc * 4), TANDEM_OK);
    float *aux, *bias, *aux_out = malloc(nc * 4);
    tandem_dptr dp[2], dsrc = 0;
    epi_operands(&g, nc, &aux, &bias, dp);
    if (g_c_src) { /* C's values move to c_src; C holds NaN, which the GEMM must not read */
        assert_int_equal(dev0->ops->mem_alloc(dev0, nc * 4, &dsrc), TANDEM_OK);
        assert_int_equal(dev0->ops->copy_h2d(&s0, dsrc, c0, nc * 4), TANDEM_OK);
        for (size_t x = 0; x < nc; x++) c[x] = NAN;
        assert_int_equal(dev0->ops->copy_h2d(&s0, dc, c, nc * 4), TANDEM_OK);
        g.c_src = dsrc;
    }
    assert_int_equal(dev0->ops->gemm_prepare(dev0, &g), TANDEM_OK);
    assert_int_equal(dev0->ops->gemm_prepare(dev0, &g), TANDEM_OK); /* again: a no-op */
    assert_int_equal(dev0->ops->gemm(&s0, &g, alpha, da, db, beta, dc), TANDEM_OK);
    assert_int_equal(dev0->ops->copy_d2h(&s0, c, dc, nc * 4), TANDEM_OK);
    assert_int_equal(dev0->ops->copy_d2h(&s0, aux_out, dp[0], nc * 4), TANDEM_OK);
    assert_int_equal(dev0->ops->stream_sync(&s0), TANDEM_OK);
    for (int64_t q = 0; q < batch; q++)
        for (int64_t i = 0; i < g.m; i++)
            for (int64_t j = 0; j < g.n; j++) {
                const int64_t x = q * g.stride_c + i * g.n + j;
                double aw = NAN, r = epi_ref(&g, ref_at(a, b, c0, &g, alpha, beta, q, i, j), aux, bias, x, j, &aw);
                double got = c[x];
                if (epi == TANDEM_GEMM_EPI_GELU_AUX_BIAS && !(fabs(aux_out[x] - aw) <= 1e-4 * (1 + fabs(aw))))
                    fail_msg("GELU_AUX_BIAS: aux[%lld] = %g, expected %g", (long long)x, aux_out[x], aw);
                if (!(fabs(got - r) <= 1e-4 * (1 + fabs(r))))
                    fail_msg("GEMM %lldx%lldx%lld ta %d tb %d batch %lld: C[%lld][%lld][%lld] = %g, expected %g",
                             (long long)g.m, (long long)g.n, (long long)g.k, trans_a, trans_b, (long long)batch,
                             (long long)q, (long long)i, (long long)j, got, r);
            }
    /* the gaps between batch items are left alone (with c_src: still NaN) */
    for (int64_t q = 0; q + 1 < batch; q++)
        for (int64_t x = g.m * g.n; x < g.stride_c; x++)
            assert_true(g_c_src ? isnan(c[q * g.stride_c + x]) : c[q * g.stride_c + x] == c0[q * g.stride_c + x]);
    check_bgrad(&g, a, dp[1]);
    if (dsrc) dev0->ops->mem_free(dev0, dsrc);
    dev0->ops->mem_free(dev0, da);
    dev0->ops->mem_free(dev0, db);
    dev0->ops->mem_free(dev0, dc);
    dev0->ops->mem_free(dev0, dp[0]);
    dev0->ops->mem_free(dev0, dp[1]);
    free(a);
    free(b);
    free(c0);
    free(c);
    free(aux), free(bias), free(aux_out);
}

static void test_gemm(void **state) {
    (void)state;
    int before = fake_error_count();
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            run_gemm(ta, tb, 1, TANDEM_GEMM_EPI_NONE);
            run_gemm(ta, tb, 3, TANDEM_GEMM_EPI_NONE);
        }
    /* every epilogue, batched and not (BGRAD: a weight gradient's shape, trans_a and batch 1); n a
     * multiple of 8 (cuBLASLt) or any (the fatbin GEMM) */
    for (int e = TANDEM_GEMM_EPI_BIAS; e < TANDEM_GEMM_EPI_COUNT; e++)
        for (int tb = 0; tb < 2; tb++) {
            const int bgrad = tandem_gemm_epi_bias_out((tandem_gemm_epilogue)e);
            run_gemm(bgrad ? 1 : e % 2, tb, bgrad ? 1 : 1 + 2 * tb, (tandem_gemm_epilogue)e);
        }
    assert_int_equal(fake_error_count(), before);
}

/* beta C from a separate matrix (cuBLASLt's C != D; the fatbin GEMM's c_src): every transpose,
 * batched and not, plain and with the BIAS epilogue; C starts as NaN and is never read. */
static void test_gemm_c_src(void **state) {
    (void)state;
    int before = fake_error_count();
    g_c_src = 1;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            run_gemm(ta, tb, 1 + 2 * ta, TANDEM_GEMM_EPI_NONE);
            run_gemm(ta, tb, 1 + 2 * tb, TANDEM_GEMM_EPI_BIAS);
        }
    g_c_src = 0;
    assert_int_equal(fake_error_count(), before);
}

/* cuBLASLt's heuristic rejecting one epilogue at a time, with NOT_SUPPORTED and with
 * INVALID_VALUE (the stand-in's TANDEM_FAKECUDA_LT_NO_ALGO_EPILOGUE=<name>[:invalid]): the plan
 * runs split — the plain cuBLASLt product, then the epilogue kernel (gemm_epi_apply, or
 * gemm_epi_bgrad for BGRADB) — never the fatbin GEMM; the results stay right (run_gemm's checks,
 * the bias gradient's too), and the device's fallback list names the shape, how it runs and why.
 * Then every epilogue at once ("1"), batched where the epilogue allows. */
static void test_gemm_epilogue_rejected(void **state) {
    (void)state;
    if (!tandem_cuda_have_cublaslt(NULL, 0)) skip();
    static const char *const lt_name[TANDEM_GEMM_EPI_COUNT] = {"", "BIAS", "GELU_AUX_BIAS", "DGELU", "BGRADB"};
    static const char *const text[TANDEM_GEMM_EPI_COUNT] = {"", " + bias", " + bias, gelu (aux out)", " * gelu'(aux)",
                                                            ", bias gradient of A out"};
    void (*counts)(tandem_fakecuda_counts *) = NULL;
    void *h = dlopen(FAKE_DRIVER, RTLD_NOW | RTLD_NOLOAD);
    if (h) *(void **)&counts = dlsym(h, "tandem_fakecuda_get_counts");
    assert_non_null(counts);
    int before = fake_error_count();
    static char list[1 << 16];
    for (int e = TANDEM_GEMM_EPI_BIAS; e < TANDEM_GEMM_EPI_COUNT; e++)
        for (int invalid = 0; invalid < 2; invalid++) {
            char knob[64];
            snprintf(knob, sizeof knob, "%s%s", lt_name[e], invalid ? ":invalid" : "");
            setenv("TANDEM_FAKECUDA_LT_NO_ALGO_EPILOGUE", knob, 1);
            const int n0 = dev0->ops->gemm_fallbacks(dev0, NULL, 0);
            tandem_fakecuda_counts c0, c1;
            counts(&c0);
            const int bgrad = tandem_gemm_epi_bias_out((tandem_gemm_epilogue)e);
            run_gemm(bgrad ? 1 : e % 2, 1, 1, (tandem_gemm_epilogue)e);
            counts(&c1);
            const int n1 = dev0->ops->gemm_fallbacks(dev0, list, sizeof list);
            assert_int_equal(n1, n0 + 1);
            assert_true(c1.kernel[TANDEM_KID_gemm_f32] == c0.kernel[TANDEM_KID_gemm_f32]);
            const int kid = bgrad ? TANDEM_KID_gemm_epi_bgrad : TANDEM_KID_gemm_epi_apply;
            assert_true(c1.kernel[kid] == c0.kernel[kid] + 1);
            /* the last line: this shape, split, and the heuristic's answer */
            char *last = list + strlen(list) - 1, want[96];
            while (last > list && last[-1] != '\n') last--;
            snprintf(want, sizeof want, "%s: cuBLASLt GEMM + epilogue kernel (the heuristic answers %s", text[e],
                     invalid ? "CUBLAS_STATUS_INVALID_VALUE" : "CUBLAS_STATUS_NOT_SUPPORTED");
            if (!strstr(last, want)) fail_msg("fallback line '%s' lacks '%s'", last, want);
        }
    setenv("TANDEM_FAKECUDA_LT_NO_ALGO_EPILOGUE", "1", 1);
    for (int e = TANDEM_GEMM_EPI_BIAS; e < TANDEM_GEMM_EPI_COUNT; e++)
        for (int tb = 0; tb < 2; tb++) {
            const int bgrad = tandem_gemm_epi_bias_out((tandem_gemm_epilogue)e);
            run_gemm(bgrad ? 1 : e % 2, tb, bgrad ? 1 : 1 + 2 * tb, (tandem_gemm_epilogue)e);
        }
    unsetenv("TANDEM_FAKECUDA_LT_NO_ALGO_EPILOGUE");
    assert_int_equal(fake_error_count(), before);
}

/* TF32 (desc.tf32: CUBLAS_COMPUTE_32F_FAST_TF32): each A and B element carries a 10-bit
 * mantissa, relative error <= 2^-11, so a product term is off by at most 2^-10 |a||b| and an
 * element of C by at most 2^-10 sum_p |a_ip||b_pj| (times |alpha|), plus the f32 sum's rounding.
 * The same GEMM without tf32 stays within 1e-5 of the double reference, and with cuBLASLt the
 * TF32 result differs from it (the stand-in rounds its inputs as the tensor cores do); the
 * fatbin GEMM ignores tf32. */
static void test_gemm_tf32(void **state) {
    (void)state;
    const int64_t M = 40, N = 30, K = 300;
    float *a = malloc(M * K * 4), *b = malloc(K * N * 4), *c0 = malloc(M * N * 4), *c[2];
    c[0] = malloc(M * N * 4), c[1] = malloc(M * N * 4);
    tandem_rng_fill(&rng, a, M * K, -1.0f, 1.0f);
    tandem_rng_fill(&rng, b, K * N, -1.0f, 1.0f);
    tandem_rng_fill(&rng, c0, M * N, -1.0f, 1.0f);
    tandem_dptr da, db, dc;
    assert_int_equal(dev0->ops->mem_alloc(dev0, M * K * 4, &da), TANDEM_OK);
    assert_int_equal(dev0->ops->mem_alloc(dev0, K * N * 4, &db), TANDEM_OK);
    assert_int_equal(dev0->ops->mem_alloc(dev0, M * N * 4, &dc), TANDEM_OK);
    assert_int_equal(dev0->ops->copy_h2d(&s0, da, a, M * K * 4), TANDEM_OK);
    assert_int_equal(dev0->ops->copy_h2d(&s0, db, b, K * N * 4), TANDEM_OK);
    const float alpha = 1.5f, beta = 0.5f;
    for (int t = 0; t < 2; t++) { /* 0: exact f32, 1: tf32 */
        tandem_gemm_desc g = {0, 0, M, N, K, 1, 0, 0, 0, TANDEM_F32, TANDEM_F32, TANDEM_F32, TANDEM_GEMM_EPI_NONE, 0, t, 0, 0};
        assert_int_equal(dev0->ops->copy_h2d(&s0, dc, c0, M * N * 4), TANDEM_OK);
        assert_int_equal(dev0->ops->gemm_prepare(dev0, &g), TANDEM_OK);
        assert_int_equal(dev0->ops->gemm(&s0, &g, alpha, da, db, beta, dc), TANDEM_OK);
        assert_int_equal(dev0->ops->copy_d2h(&s0, c[t], dc, M * N * 4), TANDEM_OK);
        assert_int_equal(dev0->ops->stream_sync(&s0), TANDEM_OK);
    }
    double worst[2] = {0, 0}, moved = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            tandem_gemm_desc g = {0, 0, M, N, K, 1, 0, 0, 0, TANDEM_F32, TANDEM_F32, TANDEM_F32, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0};
            double r = ref_at(a, b, c0, &g, alpha, beta, 0, i, j), mag = 0;
            for (int64_t p = 0; p < K; p++) mag += fabs((double)a[i * K + p] * b[p * N + j]);
            const double bound[2] = {1e-5 * (1 + fabs(r)), fabs(alpha) * mag / 1024.0 + 1e-5 * (1 + fabs(r))};
            for (int t = 0; t < 2; t++) {
                double e = fabs(c[t][i * N + j] - r);
                if (e > bound[t])
                    fail_msg("%s GEMM C[%lld][%lld] = %.9g, reference %.9g: error %.3g > %.3g", t ? "TF32" : "f32",
                             (long long)i, (long long)j, c[t][i * N + j], r, e, bound[t]);
                if (e / bound[t] > worst[t]) worst[t] = e / bound[t];
            }
            moved = fmax(moved, fabs((double)c[1][i * N + j] - c[0][i * N + j]) / (1 + fabs(r)));
        }
    printf("f32 error %.2f and TF32 error %.2f of their bounds; TF32 differs from f32 by up to %.2e\n",
           worst[0], worst[1], moved);
    if (tandem_cuda_have_cublaslt(NULL, 0))
        assert_true(moved > 1e-5); /* cuBLASLt rounded the inputs: not exact f32 */
    else
        assert_true(moved == 0.0); /* the fatbin's gemm_f32 computes exact f32 either way */
    dev0->ops->mem_free(dev0, da);
    dev0->ops->mem_free(dev0, db);
    dev0->ops->mem_free(dev0, dc);
    free(a), free(b), free(c0), free(c[0]), free(c[1]);
}

/* Two GEMMs queued on two streams of one device run concurrently: each must have its own
 * cuBLASLt workspace (the stand-in's algorithm stages its result there, and its hazard
 * detector reports a workspace written by two streams without ordering; issue 11 item 3). */
static void test_gemm_two_streams(void **state) {
    (void)state;
    int before = fake_error_count();
    tandem_stream sb = {dev0, NULL};
    assert_int_equal(dev0->ops->stream_create(dev0, &sb), TANDEM_OK);
    tandem_stream *ss[2] = {&s0, &sb};
    tandem_gemm_desc g = {0, 1, 33, 17, 29, 1, 0, 0, 0, TANDEM_F32, TANDEM_F32, TANDEM_F32, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0};
    assert_int_equal(dev0->ops->gemm_prepare(dev0, &g), TANDEM_OK);
    size_t na = 33 * 29, nb = 17 * 29, nc = 33 * 17;
    float *a[2], *b[2], *c[2];
    tandem_dptr da[2], db[2], dc[2];
    for (int i = 0; i < 2; i++) {
        a[i] = malloc(na * 4), b[i] = malloc(nb * 4), c[i] = malloc(nc * 4);
        assert_true(a[i] && b[i] && c[i]);
        tandem_rng_fill(&rng, a[i], (int64_t)na, -1.0f, 1.0f);
        tandem_rng_fill(&rng, b[i], (int64_t)nb, -1.0f, 1.0f);
        assert_int_equal(dev0->ops->mem_alloc(dev0, na * 4, &da[i]), TANDEM_OK);
        assert_int_equal(dev0->ops->mem_alloc(dev0, nb * 4, &db[i]), TANDEM_OK);
        assert_int_equal(dev0->ops->mem_alloc(dev0, nc * 4, &dc[i]), TANDEM_OK);
        assert_int_equal(dev0->ops->copy_h2d(ss[i], da[i], a[i], na * 4), TANDEM_OK);
        assert_int_equal(dev0->ops->copy_h2d(ss[i], db[i], b[i], nb * 4), TANDEM_OK);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(dev0->ops->gemm(ss[i], &g, 1.0f, da[i], db[i], 0.0f, dc[i]), TANDEM_OK);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(dev0->ops->copy_d2h(ss[i], c[i], dc[i], nc * 4), TANDEM_OK);
        assert_int_equal(dev0->ops->stream_sync(ss[i]), TANDEM_OK);
    }
    assert_int_equal(fake_error_count(), before);
    float *zero = calloc(nc, 4);
    assert_non_null(zero);
    for (int i = 0; i < 2; i++) {
        for (int64_t r = 0; r < g.m; r++)
            for (int64_t q = 0; q < g.n; q++) {
                double ref = ref_at(a[i], b[i], zero, &g, 1.0f, 0.0f, 0, r, q);
                assert_true(fabs(c[i][r * g.n + q] - ref) <= 1e-4 * (1 + fabs(ref)));
            }
        dev0->ops->mem_free(dev0, da[i]);
        dev0->ops->mem_free(dev0, db[i]);
        dev0->ops->mem_free(dev0, dc[i]);
        free(a[i]), free(b[i]), free(c[i]);
    }
    free(zero);
    dev0->ops->stream_destroy(&sb);
}


/* ---- issue 11 items 5 and 6: how host threads wait, and whose context is current ---- */

static void *fake_sym(const char *name) {
    void *h = dlopen(FAKE_DRIVER, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    void *p = dlsym(h, name);
    assert_non_null(p);
    return p;
}

/* The primary contexts are made with blocking-sync scheduling and events with
 * CU_EVENT_BLOCKING_SYNC, so a waiting thread sleeps instead of spinning. */
static void test_blocking_sync(void **state) {
    (void)state;
    int (*ctx_flags)(int) = (int (*)(int))fake_sym("tandem_fakecuda_ctx_flags");
    int (*event_flags)(void *) = (int (*)(void *))fake_sym("tandem_fakecuda_event_flags");
    for (int dev = 0; dev < 2; dev++) assert_int_equal(ctx_flags(dev) & CU_CTX_SCHED_MASK, CU_CTX_SCHED_BLOCKING_SYNC);
    tandem_event e = {dev0, NULL};
    assert_int_equal(dev0->ops->event_create(dev0, &e), TANDEM_OK);
    assert_true(event_flags(e.impl) & CU_EVENT_BLOCKING_SYNC);
    dev0->ops->event_destroy(&e);
}

/* An embedding program's own current context (or none) is what it finds again after every
 * backend call, whatever device the call used. */
static void test_context_restored(void **state) {
    (void)state;
    CUresult (*get)(CUcontext *) = (CUresult(*)(CUcontext *))fake_sym("cuCtxGetCurrent");
    CUresult (*set)(CUcontext) = (CUresult(*)(CUcontext))fake_sym("cuCtxSetCurrent");
    CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))fake_sym("cuDevicePrimaryCtxRetain");
    CUresult (*release)(CUdevice) = (CUresult(*)(CUdevice))fake_sym("cuDevicePrimaryCtxRelease_v2");
    CUcontext mine = NULL, now = NULL;
    assert_int_equal(retain(&mine, 1), CUDA_SUCCESS); /* the program's: device 1's primary context */
    CUcontext choices[2] = {mine, NULL};
    for (int c = 0; c < 2; c++) {
        assert_int_equal(set(choices[c]), CUDA_SUCCESS);
#define SAME_CONTEXT(call)                                                                \
    do {                                                                                  \
        assert_int_equal((call), TANDEM_OK);                                              \
        assert_int_equal(get(&now), CUDA_SUCCESS);                                        \
        if (now != choices[c]) fail_msg("%s switched the caller's context", #call);        \
    } while (0)
        tandem_device *d2 = NULL;
        SAME_CONTEXT(tandem_cuda_device_open(0, &d2));
        tandem_stream s = {d2, NULL};
        tandem_event a = {d2, NULL}, b = {d2, NULL};
        tandem_dptr p = 0, q = 0;
        float host[64] = {0}, ms = 0;
        int done = 0;
        tandem_gemm_desc g = {0, 0, 8, 8, 8, 1, 0, 0, 0, TANDEM_F32, TANDEM_F32, TANDEM_F32, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0};
        SAME_CONTEXT(d2->ops->stream_create(d2, &s));
        SAME_CONTEXT(d2->ops->event_create(d2, &a));
        SAME_CONTEXT(d2->ops->event_create(d2, &b));
        SAME_CONTEXT(d2->ops->mem_alloc(d2, 3 * sizeof host, &p)); /* A, B, C of the GEMM */
        SAME_CONTEXT(dev1->ops->mem_alloc(dev1, sizeof host, &q));
        SAME_CONTEXT(d2->ops->event_record(&a, &s));
        SAME_CONTEXT(d2->ops->copy_h2d(&s, p, host, sizeof host));
        SAME_CONTEXT(d2->ops->gemm_prepare(d2, &g));
        SAME_CONTEXT(d2->ops->gemm(&s, &g, 1.0f, p, p + sizeof host, 0.0f, p + 2 * sizeof host));
        SAME_CONTEXT(d2->ops->copy_peer(&s, dev1, q, p, sizeof host));
        SAME_CONTEXT(d2->ops->copy_d2h(&s, host, p, sizeof host));
        SAME_CONTEXT(d2->ops->event_record(&b, &s));
        SAME_CONTEXT(d2->ops->stream_wait_event(&s0, &b));
        SAME_CONTEXT(d2->ops->event_sync(&b));
        SAME_CONTEXT(d2->ops->event_query(&b, &done));
        SAME_CONTEXT(d2->ops->event_elapsed_ms(&a, &b, &ms));
        SAME_CONTEXT(d2->ops->stream_sync(&s));
        SAME_CONTEXT(d2->ops->sync(d2));
        d2->ops->mem_free(d2, p);
        dev1->ops->mem_free(dev1, q);
        d2->ops->event_destroy(&a);
        d2->ops->event_destroy(&b);
        d2->ops->stream_destroy(&s);
        SAME_CONTEXT(TANDEM_OK);
        tandem_device_close(d2);
        SAME_CONTEXT(TANDEM_OK);
#undef SAME_CONTEXT
    }
    assert_int_equal(release(1), CUDA_SUCCESS);
}

/* The head weight gradient of a base-shaped model (d 512, 400 mel rows per item, the stop
 * head's 2 outputs, text rows 200 of 600): dW [2, 512] += dy_i^T [2, 400] hf_i [400, 512], one
 * GEMM per item on views at i * 800 elements of dy (1600 bytes in bf16, 3200 in f32: 64- and
 * 128-byte aligned) and (i * 600 + 200) * 512 of hf. cuBLASLt's heuristic assumes 256-byte
 * alignment unless told otherwise (the stand-in refuses what such an algorithm may fault on). */
static void run_item_gemms(tandem_dtype t) {
    enum { ITEMS = 3, OUT = 2, ROWS = 400, D = 512, T = 600, TEXT = 200 };
    const size_t ndy = (size_t)ITEMS * ROWS * OUT, nx = (size_t)ITEMS * T * D, es = t == TANDEM_BF16 ? 2 : 4;
    float *dy = malloc(ndy * 4), *x = malloc(nx * 4), *w = malloc(OUT * D * 4);
    void *dy_in = malloc(ndy * es), *x_in = malloc(nx * es);
    double *ref = calloc(OUT * D, sizeof *ref);
    assert_true(dy && x && w && dy_in && x_in && ref);
    tandem_rng_fill(&rng, dy, (int64_t)ndy, -1, 1);
    tandem_rng_fill(&rng, x, (int64_t)nx, -1, 1);
    for (size_t i = 0; i < ndy; i++) {
        if (t == TANDEM_BF16) dy[i] = tandem_bf16_to_f32(((tandem_bf16 *)dy_in)[i] = tandem_f32_to_bf16(dy[i]));
        else ((float *)dy_in)[i] = dy[i];
    }
    for (size_t i = 0; i < nx; i++) {
        if (t == TANDEM_BF16) x[i] = tandem_bf16_to_f32(((tandem_bf16 *)x_in)[i] = tandem_f32_to_bf16(x[i]));
        else ((float *)x_in)[i] = x[i];
    }
    tandem_dptr DY, X, W;
    assert_int_equal(dev0->ops->mem_alloc(dev0, ndy * es, &DY), TANDEM_OK);
    assert_int_equal(dev0->ops->mem_alloc(dev0, nx * es, &X), TANDEM_OK);
    assert_int_equal(dev0->ops->mem_alloc(dev0, OUT * D * 4, &W), TANDEM_OK);
    assert_int_equal(dev0->ops->copy_h2d(&s0, DY, dy_in, ndy * es), TANDEM_OK);
    assert_int_equal(dev0->ops->copy_h2d(&s0, X, x_in, nx * es), TANDEM_OK);
    memset(w, 0, OUT * D * 4);
    assert_int_equal(dev0->ops->copy_h2d(&s0, W, w, OUT * D * 4), TANDEM_OK);
    tandem_gemm_desc g = {1, 0, OUT, D, ROWS, 1, 0, 0, 0, t, t, TANDEM_F32, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0};
    assert_int_equal(dev0->ops->gemm_prepare(dev0, &g), TANDEM_OK);
    for (int i = 0; i < ITEMS; i++) {
        tandem_dptr a = DY + (tandem_dptr)((size_t)i * ROWS * OUT * es), b = X + (tandem_dptr)(((size_t)i * T + TEXT) * D * es);
        tandem_status st = dev0->ops->gemm(&s0, &g, 1.0f, a, b, 1.0f, W);
        if (st != TANDEM_OK) fail_msg("%s item %d (A at +%zu bytes): %s", tandem_dtype_name(t), i,
                                      (size_t)(a - DY), tandem_last_error());
        for (int o = 0; o < OUT; o++)
            for (int c = 0; c < D; c++)
                for (int r = 0; r < ROWS; r++)
                    ref[o * D + c] += (double)dy[((size_t)i * ROWS + r) * OUT + o] * x[((size_t)i * T + TEXT + r) * D + c];
    }
    assert_int_equal(dev0->ops->copy_d2h(&s0, w, W, OUT * D * 4), TANDEM_OK);
    assert_int_equal(dev0->ops->stream_sync(&s0), TANDEM_OK);
    double e = 0, n = 0;
    for (int i = 0; i < OUT * D; i++) e += (w[i] - ref[i]) * (w[i] - ref[i]), n += ref[i] * ref[i];
    assert_true(e / n < 1e-10);
    dev0->ops->mem_free(dev0, DY);
    dev0->ops->mem_free(dev0, X);
    dev0->ops->mem_free(dev0, W);
    free(dy), free(x), free(w), free(dy_in), free(x_in), free(ref);
}

static void test_gemm_item_offsets(void **state) {
    (void)state;
    int before = fake_error_count();
    run_item_gemms(TANDEM_F32);
    run_item_gemms(TANDEM_BF16);
    assert_int_equal(fake_error_count(), before);
}

static void test_gemm_unprepared(void **state) {
    (void)state;
    tandem_gemm_desc g = {0, 1, 71, 73, 79, 1, 0, 0, 0, TANDEM_F32, TANDEM_F32, TANDEM_F32, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0};
    tandem_dptr d;
    assert_int_equal(dev0->ops->mem_alloc(dev0, 71 * 79 * 4, &d), TANDEM_OK);
    assert_int_equal(dev0->ops->gemm(&s0, &g, 1, d, d, 0, d), TANDEM_E_STATE);
    assert_non_null(strstr(tandem_last_error(), "not prepared"));
    assert_non_null(strstr(tandem_last_error(), "[71 x 79] @ [73 x 79]^T"));
    dev0->ops->mem_free(dev0, d);
}

static void test_launch(void **state) {
    (void)state;
    int64_t n = tandem_rng_int(&rng, 1, 5000);
    tandem_dptr x;
    assert_int_equal(dev1->ops->mem_alloc(dev1, (size_t)n * 4, &x), TANDEM_OK);
    float v = tandem_rng_uniform(&rng, -10, 10);
    tandem_k_fill_f32_args fa = {(float *)(uintptr_t)x, n, v};
    tandem_launch_dims dims;
    tandem_kernel_table[TANDEM_KID_fill_f32].geom(&fa, &dims);
    assert_int_equal(dev1->ops->launch(&s1, TANDEM_KID_fill_f32, &dims, &fa, sizeof fa - 4), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "fill_f32"));
    assert_int_equal(dev1->ops->launch(&s1, TANDEM_KERNEL_COUNT, &dims, &fa, sizeof fa), TANDEM_E_INVALID);
    assert_int_equal(dev1->ops->launch(&s1, TANDEM_KID_fill_f32, &dims, &fa, sizeof fa), TANDEM_OK);
    float *h = malloc((size_t)n * 4);
    assert_int_equal(dev1->ops->copy_d2h(&s1, h, x, (size_t)n * 4), TANDEM_OK);
    assert_int_equal(dev1->ops->sync(dev1), TANDEM_OK);
    for (int64_t i = 0; i < n; i++) assert_true(h[i] == v);
    free(h);
    dev1->ops->mem_free(dev1, x);
}

static tandem_dptr upload(const float *h, size_t n) {
    tandem_dptr d;
    assert_int_equal(dev0->ops->mem_alloc(dev0, n * 4, &d), TANDEM_OK);
    if (h) assert_int_equal(dev0->ops->copy_h2d(&s0, d, h, n * 4), TANDEM_OK);
    return d;
}

static double max_rel(const float *got, const float *want, size_t n) {
    double e = 0, w = 0;
    for (size_t i = 0; i < n; i++) {
        e += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        w += (double)want[i] * want[i];
    }
    return w > 0 ? e / w : e;
}

/* LayerNorm backward keeps the block's [2, d] partials in dynamic shared memory: at d = 8192
 * (the widest the config allows) 64 KiB plus the kernel's static part, more than the 48 KiB a
 * kernel gets without opting in (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). The result
 * is compared with the host implementation. Past the device's opt-in limit the backend refuses
 * the launch itself, naming the kernel's need and the device's limit. */
static void test_layernorm_wide_shared(void **state) {
    (void)state;
    int before = fake_error_count();
    const int rows = 3, d = 8192;
    const size_t n = (size_t)rows * d, ns = (size_t)tandem_layernorm_bwd_scratch_floats(rows, d);
    float *x = malloc(n * 4), *dy = malloc(n * 4), *g = malloc(d * 4), *mean = malloc(rows * 4),
          *rstd = malloc(rows * 4), *dx = malloc(n * 4), *hdx = malloc(n * 4), *sc = malloc(ns * 4),
          *hsc = malloc(ns * 4);
    assert_true(x && dy && g && mean && rstd && dx && hdx && sc && hsc);
    tandem_rng_fill(&rng, x, (int64_t)n, -2, 2);
    tandem_rng_fill(&rng, dy, (int64_t)n, -1, 1);
    tandem_rng_fill(&rng, g, d, 0.5f, 1.5f);
    for (int r = 0; r < rows; r++) mean[r] = tandem_rng_uniform(&rng, -0.1f, 0.1f), rstd[r] = 1.7f;
    tandem_dptr X = upload(x, n), DY = upload(dy, n), G = upload(g, d), M = upload(mean, rows), R = upload(rstd, rows),
                DX = upload(NULL, n), SC = upload(NULL, ns);
    tandem_k_layernorm_bwd_args a = {(const float *)(uintptr_t)DY, (const float *)(uintptr_t)X,
                                     (const float *)(uintptr_t)M,  (const float *)(uintptr_t)R,
                                     (const float *)(uintptr_t)G,  (float *)(uintptr_t)DX,
                                     NULL,                         0,
                                     (float *)(uintptr_t)SC,       rows, d, NULL};
    tandem_launch_dims dims;
    tandem_kernel_table[TANDEM_KID_layernorm_bwd].geom(&a, &dims);
    assert_true(dims.shmem > 48 * 1024);
    tandem_status st = dev0->ops->launch(&s0, TANDEM_KID_layernorm_bwd, &dims, &a, sizeof a);
    if (st != TANDEM_OK) fail_msg("layernorm_bwd at d = %d: %s", d, tandem_last_error());
    assert_int_equal(dev0->ops->copy_d2h(&s0, dx, DX, n * 4), TANDEM_OK);
    assert_int_equal(dev0->ops->copy_d2h(&s0, sc, SC, ns * 4), TANDEM_OK);
    assert_int_equal(dev0->ops->stream_sync(&s0), TANDEM_OK);
    tandem_k_layernorm_bwd_args h = {dy, x, mean, rstd, g, hdx, NULL, 0, hsc, rows, d, NULL};
    tandem_k_layernorm_bwd_host(&h);
    assert_true(max_rel(dx, hdx, n) < 1e-10);
    assert_true(max_rel(sc, hsc, ns) < 1e-10);
    assert_int_equal(fake_error_count(), before);
    /* sm_86 opts in to 99 KiB per block: 2 * 12800 * 4 bytes do not fit */
    tandem_launch_dims big = dims;
    big.shmem = 2 * 12800 * 4;
    assert_int_equal(dev0->ops->launch(&s0, TANDEM_KID_layernorm_bwd, &big, &a, sizeof a), TANDEM_E_UNSUPPORTED);
    assert_non_null(strstr(tandem_last_error(), "102400 bytes of dynamic shared memory"));
    assert_non_null(strstr(tandem_last_error(), "layernorm_bwd"));
    /* its launch bounds: 128 threads */
    tandem_launch_dims wide = dims;
    wide.block[0] = 256;
    assert_int_equal(dev0->ops->launch(&s0, TANDEM_KID_layernorm_bwd, &wide, &a, sizeof a), TANDEM_E_UNSUPPORTED);
    assert_non_null(strstr(tandem_last_error(), "at most 128"));
    assert_int_equal(fake_error_count(), before);
    tandem_dptr all[] = {X, DY, G, M, R, DX, SC};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) dev0->ops->mem_free(dev0, all[i]);
    free(x), free(dy), free(g), free(mean), free(rstd), free(dx), free(hdx), free(sc), free(hsc);
}

static void test_copies_and_events(void **state) {
    (void)state;
    size_t n = (size_t)tandem_rng_int(&rng, 1, 100000);
    unsigned char *src = malloc(n), *dst = malloc(n);
    for (size_t i = 0; i < n; i++) src[i] = (unsigned char)tandem_rng_next(&rng);
    void *pinned = NULL;
    assert_int_equal(dev0->ops->host_alloc_pinned(dev0, n, &pinned), TANDEM_OK);
    memcpy(pinned, src, n);
    tandem_dptr a, b, c;
    assert_int_equal(dev0->ops->mem_alloc(dev0, n, &a), TANDEM_OK);
    assert_int_equal(dev0->ops->mem_alloc(dev0, n, &b), TANDEM_OK);
    assert_int_equal(dev1->ops->mem_alloc(dev1, n, &c), TANDEM_OK);
    tandem_event e0 = {dev0, NULL}, e1 = {dev0, NULL};
    assert_int_equal(dev0->ops->event_create(dev0, &e0), TANDEM_OK);
    assert_int_equal(dev0->ops->event_create(dev0, &e1), TANDEM_OK);
    assert_int_equal(dev0->ops->event_record(&e0, &s0), TANDEM_OK);
    assert_int_equal(dev0->ops->copy_h2d(&s0, a, pinned, n), TANDEM_OK);
    assert_int_equal(dev0->ops->copy_d2d(&s0, b, a, n), TANDEM_OK);
    assert_int_equal(dev0->ops->copy_peer(&s0, dev1, c, b, n), TANDEM_OK);
    assert_int_equal(dev0->ops->event_record(&e1, &s0), TANDEM_OK);
    /* device 1's stream waits for device 0's copies, then reads the result */
    assert_int_equal(dev1->ops->stream_wait_event(&s1, &e1), TANDEM_OK);
    assert_int_equal(dev1->ops->copy_d2h(&s1, dst, c, n), TANDEM_OK);
    assert_int_equal(dev1->ops->stream_sync(&s1), TANDEM_OK);
    assert_memory_equal(src, dst, n);
    int done = 0;
    assert_int_equal(dev0->ops->event_sync(&e1), TANDEM_OK);
    assert_int_equal(dev0->ops->event_query(&e1, &done), TANDEM_OK);
    assert_true(done);
    float ms = -1;
    assert_int_equal(dev0->ops->event_elapsed_ms(&e0, &e1, &ms), TANDEM_OK);
    assert_true(ms >= 0);
    dev0->ops->event_destroy(&e0);
    dev0->ops->event_destroy(&e1);
    dev0->ops->mem_free(dev0, a);
    dev0->ops->mem_free(dev0, b);
    dev1->ops->mem_free(dev1, c);
    dev0->ops->host_free_pinned(dev0, pinned);
    free(src);
    free(dst);
}

static void test_out_of_memory(void **state) {
    (void)state;
    tandem_dptr p = 0;
    assert_int_equal(dev0->ops->mem_alloc(dev0, (size_t)1 << 50, &p), TANDEM_E_NOMEM);
    assert_non_null(strstr(tandem_last_error(), "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY ("));
    assert_non_null(strstr(tandem_last_error(), "device 0"));
}

/* The same ordinal opened twice (one GPU serving both roles) shares context and module; closing
 * one handle leaves the other working. */
static void test_same_device_twice(void **state) {
    (void)state;
    tandem_device *again = NULL;
    assert_int_equal(tandem_cuda_device_open(0, &again), TANDEM_OK);
    assert_true(again->ops->can_access_peer(again, dev0));
    tandem_device_close(again);
    tandem_dptr x;
    assert_int_equal(dev0->ops->mem_alloc(dev0, 64 * 4, &x), TANDEM_OK);
    tandem_k_fill_f32_args fa = {(float *)(uintptr_t)x, 64, 1.5f};
    tandem_launch_dims dims;
    tandem_kernel_table[TANDEM_KID_fill_f32].geom(&fa, &dims);
    assert_int_equal(dev0->ops->launch(&s0, TANDEM_KID_fill_f32, &dims, &fa, sizeof fa), TANDEM_OK);
    assert_int_equal(dev0->ops->stream_sync(&s0), TANDEM_OK);
    dev0->ops->mem_free(dev0, x);
}

static int run_group(void) {
    char why[512];
    int lt = tandem_cuda_have_cublaslt(why, sizeof why);
    printf("GEMM path: %s (%s)\n", lt ? "cuBLASLt" : "fatbin kernel", why);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info_and_peers),   cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_gemm_epilogue_rejected),
        cmocka_unit_test(test_gemm_c_src),
        cmocka_unit_test(test_gemm_two_streams),
        cmocka_unit_test(test_gemm_tf32),
        cmocka_unit_test(test_blocking_sync),
        cmocka_unit_test(test_context_restored),
        cmocka_unit_test(test_gemm_unprepared),  cmocka_unit_test(test_launch),
        cmocka_unit_test(test_copies_and_events), cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_same_device_twice), cmocka_unit_test(test_layernorm_wide_shared),
        cmocka_unit_test(test_gemm_item_offsets),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/* Child: the stand-in driver reports CUDA 12.8, older than the CUDA 13.0 this fatbin needs.
 * Counting devices (what `train --backend cuda` and AUTO do first) fails naming both versions;
 * the system report has the toolkit, the floor and the driver's version. */
static int floor_child(void) {
    int n = -1;
    tandem_status st = tandem_device_count(TANDEM_BACKEND_CUDA, &n);
    const char *want[] = {"CUDA 12.8 driver", "built by CUDA 13.0", "needs a CUDA 13.0 driver", "R580"};
    int bad = st != TANDEM_E_DEVICE;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) bad |= !strstr(tandem_last_error(), want[i]);
    if (bad) fprintf(stderr, "floor: count: %s: %s\n", tandem_status_name(st), tandem_last_error());
    tandem_device *dev = NULL;
    st = tandem_device_open(TANDEM_BACKEND_AUTO, 0, &dev);
    if (st != TANDEM_E_DEVICE || !strstr(tandem_last_error(), "not falling back") ||
        !strstr(tandem_last_error(), "CUDA 12.8 driver")) {
        fprintf(stderr, "floor: AUTO open: %s: %s\n", tandem_status_name(st), tandem_last_error());
        bad = 1;
    }
    tandem_device_close(dev);
    tandem_system_report *r = calloc(1, sizeof *r);
    if (!r || tandem_system_query(r) != TANDEM_OK || r->driver_status != TANDEM_E_DEVICE || r->driver_version != 12080 ||
        r->fatbin_toolkit != 13000 || r->fatbin_ptx_isa != 90 || r->driver_floor != 13000 ||
        strcmp(r->driver_branch, "R580") != 0 || !r->problems) {
        fprintf(stderr, "floor: system report: driver %d (%s), toolkit %d, PTX ISA %d, floor %d %s\n",
                r ? r->driver_version : -1, r ? tandem_status_name(r->driver_status) : "", r ? r->fatbin_toolkit : -1,
                r ? r->fatbin_ptx_isa : -1, r ? r->driver_floor : -1, r ? r->driver_branch : "");
        bad = 1;
    }
    free(r);
    printf("driver floor child: %s\n", bad ? "FAILED" : "ok");
    return bad;
}

/* Child: libcublasLt.so.13 (and, with fail = "libcublasLt.so", .so.12 as well) loads but its
 * cublasLtCreate fails: the backend takes the next library, then the fatbin GEMM, saying why
 * in one warning; the GEMM tests pass either way. */
static int lt_fallback_child(const char *fail) {
    tandem_test_log_capture(TANDEM_LOG_WARN);
    char why[512];
    int lt = tandem_cuda_have_cublaslt(why, sizeof why);
    int both = strcmp(fail, "libcublasLt.so") == 0;
    const char *log = tandem_test_log_text();
    int bad = both ? lt != 0 : (lt != 1 || !strstr(why, "libcublasLt.so.12") || !strstr(why, "12.9.0"));
    bad |= !strstr(log, "libcublasLt.so.13) loads but cublasLtCreate failed: CUBLAS_STATUS_NOT_INITIALIZED");
    bad |= !strstr(log, both ? "using the fatbin's GEMM kernels instead" : "using cuBLASLt 12.9.0");
    int lines = 0;
    for (const char *p = log; (p = strchr(p, '\n')); p++) lines++;
    bad |= lines != 1;
    if (bad) fprintf(stderr, "cuBLASLt fallback (%s fails): have %d (%s); log:\n%s", fail, lt, why, log);
    tandem_test_log_stop();
    return bad + run_group();
}

static int spawn_child(char **argv, const char *const *env_kv) {
    for (const char *const *kv = env_kv; kv[0]; kv += 2) {
        if (kv[1]) setenv(kv[0], kv[1], 1);
        else unsetenv(kv[0]);
    }
    pid_t pid;
    char *child_argv[] = {argv[0], NULL};
    int status = 0;
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, child_argv, environ) != 0 ||
        waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return 1;
    return WEXITSTATUS(status) != 0;
}

int main(int argc, char **argv) {
    (void)argc;
    FILE *f = fopen(FAKE_DRIVER, "rb");
    if (!f) {
        printf("test_cuda_backend: the stand-in driver %s is not built: skipped\n", FAKE_DRIVER);
        return 0;
    }
    fclose(f);
    if (!tandem_test_have_fatbin()) {
        printf("test_cuda_backend: host-only build (empty fatbin): skipped\n");
        return 0;
    }
    const char *child_mode = getenv("TANDEM_TEST_CHILD");
    if (child_mode && strcmp(child_mode, "floor") == 0) return floor_child();
    if (child_mode && strncmp(child_mode, "lt-fail:", 8) == 0) {
        rng.s = tandem_test_seed("test_cuda_backend (cuBLASLt fallback)");
        return lt_fallback_child(child_mode + 8);
    }
    const char *mode = getenv("TANDEM_CUBLASLT");
    int child = mode && strcmp(mode, "none") == 0;
    uint64_t seed = tandem_test_seed(child ? "test_cuda_backend (fatbin GEMM)" : "test_cuda_backend (cuBLASLt)");
    rng.s = seed;
    if (!child) setenv("TANDEM_CUBLASLT", FAKE_LT, 1);
    if (cli_env_apply(NULL, 0) != TANDEM_OK) return 1;
    int failed = run_group();
    if (child) return failed;
    /* again in a child process, GEMMs through the fatbin kernel */
    char seed_text[32];
    snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)seed);
    setenv("TANDEM_TEST_SEED", seed_text, 1);
    const char *none[] = {"TANDEM_CUBLASLT", "none", NULL};
    failed += spawn_child(argv, none);
    /* the driver floor: a CUDA 12.8 stand-in driver */
    const char *old[] = {"TANDEM_CUBLASLT", "none", "TANDEM_TEST_CHILD", "floor", "TANDEM_FAKECUDA_DRIVER_VERSION",
                         "12080", NULL};
    failed += spawn_child(argv, old);
    unsetenv("TANDEM_FAKECUDA_DRIVER_VERSION");
    /* cuBLASLt fallbacks: found by soname in the stand-in directory, cublasLtCreate failing */
    const char *lt13[] = {"TANDEM_CUBLASLT", NULL, "LD_LIBRARY_PATH", FAKE_DIR, "TANDEM_TEST_CHILD",
                          "lt-fail:libcublasLt.so.13", "TANDEM_FAKECUDA_LT_CREATE_FAIL", "libcublasLt.so.13", NULL};
    failed += spawn_child(argv, lt13);
    const char *lt_all[] = {"TANDEM_TEST_CHILD", "lt-fail:libcublasLt.so", "TANDEM_FAKECUDA_LT_CREATE_FAIL",
                            "libcublasLt.so", NULL};
    failed += spawn_child(argv, lt_all);
    return failed;
}
