/* test_gemm.c — GEMM against a naive double-precision reference:
 *   tandem_host_gemm (CBLAS when built with it) and tandem_host_gemm_blocked on raw arrays —
 *   odd shapes, all transpose combinations, batches (also a shared B), alpha/beta, beta = 0
 *   with C poisoned by NaN, k = 0, bad descriptors;
 *   tandem_gemm on committed pool tensors of a host device, and its shape/dtype/rank errors.
 * Errors are normalised: ||C - ref||^2 / ||ref||^2 (float accumulation against double gives
 * ~K * eps^2 ~ 1e-12 here; the 1e-9 threshold still catches one wrong term per matrix). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/layers.h" /* the GELU reference */
#include "platform/host/host_gemm.h"
#include "tandem.h"
#include "test/testutil.h"

#define GEMM_TOL 1e-9

static tandem_rng rng;

typedef tandem_status (*gemm_fn)(const tandem_gemm_desc *, float, const float *, const float *,
                                 float, float *);

static float *random_floats(int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    tandem_rng_fill(&rng, p, n, -1.0f, 1.0f);
    return p;
}

/* ref = alpha * op(A) @ op(B) + beta * C0 in double, written independently of the code under
 * test: op() is applied by building the explicit [m,k] and [k,n] matrices first. */
static void reference(const tandem_gemm_desc *d, double alpha, const float *a, const float *b,
                      double beta, const float *c0, double *ref) {
    int64_t m = d->m, n = d->n, k = d->k;
    double *opa = malloc((size_t)(m * k + 1) * sizeof *opa);
    double *opb = malloc((size_t)(k * n + 1) * sizeof *opb);
    for (int64_t z = 0; z < d->batch; z++) {
        const float *A = a + z * d->stride_a, *B = b + z * d->stride_b;
        for (int64_t i = 0; i < m; i++)
            for (int64_t p = 0; p < k; p++)
                opa[i * k + p] = d->trans_a ? A[p * m + i] : A[i * k + p];
        for (int64_t p = 0; p < k; p++)
            for (int64_t j = 0; j < n; j++)
                opb[p * n + j] = d->trans_b ? B[j * k + p] : B[p * n + j];
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0.0;
                for (int64_t p = 0; p < k; p++) s += opa[i * k + p] * opb[p * n + j];
                double v = alpha * s;
                if (beta != 0.0) v += beta * c0[z * d->stride_c + i * n + j];
                ref[z * d->stride_c + i * n + j] = v;
            }
    }
    free(opa);
    free(opb);
}

static double norm_err(const float *got, const double *ref, int64_t n) {
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double e = (double)got[i] - ref[i];
        num += e * e;
        den += ref[i] * ref[i];
    }
    return den > 0.0 ? num / den : num;
}

/* One case: random A, B, C; run fn; compare with the reference. */
/* bias: with the BIAS epilogue (C[b, i, j] += bias[j] last; platform/device.h). */
static void check_case(gemm_fn fn, const char *what, int64_t m, int64_t n, int64_t k,
                       int64_t batch, int ta, int tb, int share_b, float alpha, float beta,
                       int bias) {
    float *bv = random_floats(n);
    tandem_gemm_desc d = {ta, tb, m, n, k, batch, m * k, share_b ? 0 : k * n, m * n, TANDEM_F32,
                          TANDEM_F32, TANDEM_F32, bias ? TANDEM_GEMM_EPI_BIAS : TANDEM_GEMM_EPI_NONE,
                          bias ? (tandem_dptr)(uintptr_t)bv : 0, 0, 0, 0};
    int64_t na = batch * m * k, nb = (share_b ? 1 : batch) * k * n, nc = batch * m * n;
    float *a = random_floats(na), *b = random_floats(nb), *c = random_floats(nc);
    float *c0 = malloc((size_t)(nc + 1) * sizeof *c0);
    memcpy(c0, c, (size_t)nc * sizeof *c);
    if (beta == 0.0f) /* C must not be read: a NaN in it would propagate */
        for (int64_t i = 0; i < nc; i++) c[i] = NAN;
    double *ref = malloc((size_t)(nc + 1) * sizeof *ref);
    reference(&d, alpha, a, b, beta, c0, ref);
    if (bias)
        for (int64_t i = 0; i < nc; i++) ref[i] += bv[i % n];

    assert_int_equal(fn(&d, alpha, a, b, beta, c), TANDEM_OK);
    double err = norm_err(c, ref, nc);
    if (!(err <= GEMM_TOL))
        fail_msg("%s m=%lld n=%lld k=%lld batch=%lld ta=%d tb=%d shared_b=%d alpha=%g beta=%g "
                 "bias=%d: normalised error %.3g > %.1g",
                 what, (long long)m, (long long)n, (long long)k, (long long)batch, ta, tb, share_b,
                 alpha, beta, bias, err, GEMM_TOL);
    free(bv);
    free(a);
    free(b);
    free(c);
    free(c0);
    free(ref);
}

/* Odd sizes around the blocked GEMM's 4-row groups, 8-wide chunks and 128 panels. */
static const int64_t dims[] = {1, 7, 33, 65, 130};

static void sweep(gemm_fn fn, const char *what) {
    int nd = (int)(sizeof dims / sizeof dims[0]);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int im = 0; im < nd; im++) {
                /* n and k rotate through the list so every size meets every role. */
                int64_t m = dims[im], n = dims[(im + 2) % nd], k = dims[(im + 4) % nd];
                int64_t batch = (im % 2) ? 3 : 1;
                float alpha = tandem_rng_uniform(&rng, 0.5f, 1.5f);
                float beta = tandem_rng_uniform(&rng, -1.5f, -0.25f);
                check_case(fn, what, m, n, k, batch, ta, tb, 0, alpha, beta, (im + ta) % 2);
            }
    /* larger than one KC x NC panel in every direction */
    check_case(fn, what, 150, 300, 270, 2, 1, 1, 0, -0.75f, 0.5f, 1);
    check_case(fn, what, 129, 257, 131, 1, 0, 0, 0, 1.25f, -0.5f, 1);
    /* shared B across the batch, beta = 0 with poisoned C, alpha and beta of 1 */
    check_case(fn, what, 33, 65, 7, 3, 0, 1, 1, 0.8f, -1.2f, 1);
    check_case(fn, what, 65, 33, 130, 3, 1, 0, 0, -1.3f, 0.0f, 1);
    check_case(fn, what, 17, 9, 12, 1, 0, 0, 0, 1.0f, 1.0f, 0);
    /* random shapes */
    for (int r = 0; r < 6; r++)
        check_case(fn, what, tandem_rng_int(&rng, 1, 90), tandem_rng_int(&rng, 1, 90),
                   tandem_rng_int(&rng, 1, 90), tandem_rng_int(&rng, 1, 3),
                   (int)tandem_rng_int(&rng, 0, 1), (int)tandem_rng_int(&rng, 0, 1), 0,
                   tandem_rng_uniform(&rng, -2.0f, 2.0f), tandem_rng_uniform(&rng, -2.0f, 2.0f), r % 2);
}

/* The GELU epilogues of the host GEMMs (CBLAS and blocked) against the reference on random
 * inputs, C and (GELU_AUX_BIAS) aux poisoned first: GELU_AUX_BIAS writes aux = v + bias and
 * C = gelu(aux); DGELU writes C = v gelu'(aux) (kernels/layers.h's functions). */
static void check_gelu_epilogue(gemm_fn fn, tandem_gemm_epilogue epi, int64_t m, int64_t n, int64_t k, int64_t batch,
                                float beta) {
    const int64_t nc = batch * m * n;
    float *a = random_floats(batch * m * k), *b = random_floats(batch * k * n), *c = random_floats(nc);
    float *bv = random_floats(n), *aux = random_floats(nc), *c0 = malloc((size_t)nc * 4), *aux0 = malloc((size_t)nc * 4);
    double *ref = malloc((size_t)nc * sizeof *ref);
    for (int64_t x = 0; x < nc; x++) aux[x] *= 3.0f;
    memcpy(c0, c, (size_t)nc * 4);
    memcpy(aux0, aux, (size_t)nc * 4);
    tandem_gemm_desc d = {0, 1, m, n, k, batch, m * k, k * n, m * n, TANDEM_F32, TANDEM_F32, TANDEM_F32, epi,
                          (tandem_dptr)(uintptr_t)bv, 0, (tandem_dptr)(uintptr_t)aux, 0};
    reference(&d, 0.75f, a, b, beta, c0, ref);
    for (int64_t x = 0; x < nc && beta == 0.0f; x++) c[x] = NAN;
    for (int64_t x = 0; x < nc && epi == TANDEM_GEMM_EPI_GELU_AUX_BIAS; x++) aux[x] = NAN;
    assert_int_equal(fn(&d, 0.75f, a, b, beta, c), TANDEM_OK);
    for (int64_t x = 0; x < nc; x++) {
        double want = ref[x] * tandem_gelu_tanh_grad(aux0[x]);
        if (epi == TANDEM_GEMM_EPI_GELU_AUX_BIAS) {
            const double pre = ref[x] + bv[x % n];
            if (!(fabs(aux[x] - pre) <= 1e-4 * (1 + fabs(pre)))) fail_msg("aux[%lld] %g, expected %g", (long long)x, aux[x], pre);
            want = tandem_gelu_tanh((float)pre);
        }
        if (!(fabs(c[x] - want) <= 1e-4 * (1 + fabs(want))))
            fail_msg("epilogue %d: C[%lld] %g, expected %g", (int)epi, (long long)x, c[x], want);
    }
    free(a), free(b), free(c), free(bv), free(aux), free(c0), free(aux0), free(ref);
}

static void test_gemm_gelu_epilogues(void **state) {
    (void)state;
    const gemm_fn fns[2] = {tandem_host_gemm, tandem_host_gemm_blocked};
    for (int f = 0; f < 2; f++) {
        check_gelu_epilogue(fns[f], TANDEM_GEMM_EPI_GELU_AUX_BIAS, 33, 65, 7, 1, 0.0f);
        check_gelu_epilogue(fns[f], TANDEM_GEMM_EPI_GELU_AUX_BIAS, 17, 9, 12, 3, -0.5f);
        check_gelu_epilogue(fns[f], TANDEM_GEMM_EPI_DGELU, 65, 33, 130, 1, 0.0f);
        check_gelu_epilogue(fns[f], TANDEM_GEMM_EPI_DGELU, 7, 33, 65, 2, 0.25f);
    }
}

/* BGRAD (a weight gradient dW += dy^T x with dy's column sums): C as without the epilogue, and
 * bias[i] = sum over k of A[k][i] written over a poisoned vector; k = 0 gives zeros. */
static void check_bgrad(gemm_fn fn, int64_t m, int64_t n, int64_t k, float beta) {
    const int64_t nc = m * n;
    float *a = random_floats(k > 0 ? k * m : 1), *b = random_floats(k > 0 ? k * n : 1), *c = random_floats(nc);
    float *bias = malloc((size_t)m * 4), *c0 = malloc((size_t)nc * 4);
    double *ref = malloc((size_t)nc * sizeof *ref);
    assert_true(bias && c0 && ref);
    memcpy(c0, c, (size_t)nc * 4);
    for (int64_t i = 0; i < m; i++) bias[i] = NAN;
    tandem_gemm_desc d = {1, 0, m, n, k, 1, 0, 0, 0, TANDEM_F32, TANDEM_F32, TANDEM_F32, TANDEM_GEMM_EPI_BGRAD,
                          (tandem_dptr)(uintptr_t)bias, 0, 0, 0};
    reference(&d, 1.0f, a, b, beta, c0, ref);
    assert_int_equal(fn(&d, 1.0f, a, b, beta, c), TANDEM_OK);
    for (int64_t x = 0; x < nc; x++)
        if (!(fabs(c[x] - ref[x]) <= 1e-4 * (1 + fabs(ref[x])))) fail_msg("BGRAD: C[%lld] %g, expected %g", (long long)x, c[x], ref[x]);
    for (int64_t i = 0; i < m; i++) {
        double want = 0.0;
        for (int64_t p = 0; p < k; p++) want += a[p * m + i];
        if (!(fabs(bias[i] - want) <= 1e-5 * (1 + fabs(want))))
            fail_msg("BGRAD %lldx%lldx%lld: bias[%lld] %g, expected %g", (long long)m, (long long)n, (long long)k,
                     (long long)i, bias[i], want);
    }
    free(a), free(b), free(c), free(bias), free(c0), free(ref);
}

static void test_gemm_bgrad(void **state) {
    (void)state;
    const gemm_fn fns[2] = {tandem_host_gemm, tandem_host_gemm_blocked};
    for (int f = 0; f < 2; f++) {
        check_bgrad(fns[f], 33, 65, 130, 1.0f);
        check_bgrad(fns[f], 130, 7, 33, 0.0f);
        check_bgrad(fns[f], 5, 3, 0, 0.5f);
        /* the bias gradient's layout is a weight gradient's: other shapes are refused */
        float a[6] = {0}, b[6] = {0}, c[4] = {0}, bias[2] = {0};
        tandem_gemm_desc d = {0, 0, 2, 2, 3, 1, 0, 0, 0, TANDEM_F32, TANDEM_F32, TANDEM_F32, TANDEM_GEMM_EPI_BGRAD,
                              (tandem_dptr)(uintptr_t)bias, 0, 0, 0};
        assert_int_equal(fns[f](&d, 1.0f, a, b, 0.0f, c), TANDEM_E_UNSUPPORTED);
    }
}

static void test_host_gemm(void **state) {
    (void)state;
    printf("tandem_host_gemm uses: %s\n", tandem_host_gemm_impl());
    sweep(tandem_host_gemm, "tandem_host_gemm");
}

static void test_blocked_gemm(void **state) {
    (void)state;
    sweep(tandem_host_gemm_blocked, "tandem_host_gemm_blocked");
}

/* k = 0: C = beta * C (and beta = 0 clears it), A and B never read. */
static void test_k_zero(void **state) {
    (void)state;
    gemm_fn fns[2] = {tandem_host_gemm, tandem_host_gemm_blocked};
    for (int f = 0; f < 2; f++) {
        float c[6] = {1, 2, 3, 4, 5, 6};
        tandem_gemm_desc d = {0, 0, 2, 3, 0, 1, 0, 0, 0, TANDEM_F32, TANDEM_F32, TANDEM_F32, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0};
        assert_int_equal(fns[f](&d, 2.0f, NULL, NULL, -0.5f, c), TANDEM_OK);
        for (int i = 0; i < 6; i++) assert_float_equal(c[i], -0.5f * (float)(i + 1), 0.0f);
        for (int i = 0; i < 6; i++) c[i] = NAN;
        assert_int_equal(fns[f](&d, 2.0f, NULL, NULL, 0.0f, c), TANDEM_OK);
        for (int i = 0; i < 6; i++) assert_float_equal(c[i], 0.0f, 0.0f);
    }
}

static void test_bad_descriptor(void **state) {
    (void)state;
    float x[4] = {0};
    gemm_fn fns[2] = {tandem_host_gemm, tandem_host_gemm_blocked};
    for (int f = 0; f < 2; f++) {
        tandem_gemm_desc neg = {0, 0, -1, 2, 2, 1, 0, 0, 0, TANDEM_F32, TANDEM_F32, TANDEM_F32, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0};
        assert_int_equal(fns[f](&neg, 1.0f, x, x, 0.0f, x), TANDEM_E_INVALID);
        assert_non_null(strstr(tandem_last_error(), "negative"));
        tandem_gemm_desc overlap = {0, 0, 2, 2, 1, 2, 2, 2, 3, TANDEM_F32, TANDEM_F32, TANDEM_F32, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0}; /* stride_c 3 < m*n 4 */
        assert_int_equal(fns[f](&overlap, 1.0f, x, x, 0.0f, x), TANDEM_E_INVALID);
        assert_non_null(strstr(tandem_last_error(), "stride_c"));
        tandem_gemm_desc ok = {0, 0, 1, 1, 1, 1, 0, 0, 0, TANDEM_F32, TANDEM_F32, TANDEM_F32, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0};
        assert_int_equal(fns[f](&ok, 1.0f, NULL, x, 0.0f, x), TANDEM_E_INVALID);
        assert_int_equal(fns[f](NULL, 1.0f, x, x, 0.0f, x), TANDEM_E_INVALID);
        ok.epilogue = TANDEM_GEMM_EPI_BIAS; /* without its bias pointer */
        assert_int_equal(fns[f](&ok, 1.0f, x, x, 0.0f, x), TANDEM_E_INVALID);
        assert_non_null(strstr(tandem_last_error(), "bias"));
    }
}

/* ---- tandem_gemm on pool tensors of a host device ---- */

typedef struct {
    tandem_device *dev;
    tandem_stream *s;
    tandem_pool *pool;
} host_env;

static int env_setup(void **state) {
    host_env *e = calloc(1, sizeof *e);
    if (tandem_device_open(TANDEM_BACKEND_HOST, 0, &e->dev) != TANDEM_OK) return -1;
    if (tandem_stream_create(e->dev, &e->s) != TANDEM_OK) return -1;
    if (tandem_pool_create(e->dev, "gemm-test", 0, &e->pool) != TANDEM_OK) return -1;
    *state = e;
    return 0;
}

static int env_teardown(void **state) {
    host_env *e = *state;
    tandem_pool_destroy(e->pool);
    tandem_stream_destroy(e->s);
    tandem_device_close(e->dev);
    free(e);
    return 0;
}

static tandem_tensor *declare(tandem_pool *p, const char *name, tandem_dtype dt, int nd, int64_t d0,
                              int64_t d1, int64_t d2) {
    int64_t shape[3] = {d0, d1, d2};
    tandem_tensor *t = NULL;
    assert_int_equal(tandem_pool_declare(p, name, dt, nd, shape, TANDEM_PERSISTENT, 0, 0, &t),
                     TANDEM_OK);
    return t;
}

static void upload_random(tandem_stream *s, tandem_tensor *t, float *host) {
    int64_t n = tandem_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) host[i] = tandem_rng_uniform(&rng, -1.0f, 1.0f);
    assert_int_equal(tandem_tensor_upload(s, t, host, (size_t)n * sizeof *host), TANDEM_OK);
}

static void test_tandem_gemm_tensors(void **state) {
    host_env *e = *state;
    /* batched, A transposed: A [3, 65, 33] holds op(A) [33, 65]; B [3, 65, 7]; C [3, 33, 7] */
    tandem_tensor *a3 = declare(e->pool, "a3", TANDEM_F32, 3, 3, 65, 33);
    tandem_tensor *b3 = declare(e->pool, "b3", TANDEM_F32, 3, 3, 65, 7);
    tandem_tensor *c3 = declare(e->pool, "c3", TANDEM_F32, 3, 3, 33, 7);
    /* single, B transposed: A [31, 17], B [9, 17] → C [31, 9] */
    tandem_tensor *a2 = declare(e->pool, "a2", TANDEM_F32, 2, 31, 17, 0);
    tandem_tensor *b2 = declare(e->pool, "b2", TANDEM_F32, 2, 9, 17, 0);
    tandem_tensor *c2 = declare(e->pool, "c2", TANDEM_F32, 2, 31, 9, 0);
    tandem_tensor *bad_k = declare(e->pool, "bad_k", TANDEM_F32, 2, 16, 9, 0);
    tandem_tensor *bad_c = declare(e->pool, "bad_c", TANDEM_F32, 2, 31, 10, 0);
    tandem_tensor *bf = declare(e->pool, "half_w", TANDEM_BF16, 2, 9, 17, 0);
    tandem_tensor *b3x = declare(e->pool, "b3x", TANDEM_F32, 3, 2, 65, 7);
    tandem_tensor *r1 = declare(e->pool, "vec", TANDEM_F32, 1, 17, 0, 0);

    tandem_gemm_shape sh3 = {1, 0, 33, 7, 65, 3}, sh2 = {0, 1, 31, 9, 17, 1};
    assert_int_equal(tandem_gemm_prepare(e->dev, &sh3), TANDEM_OK);
    assert_int_equal(tandem_gemm_prepare(e->dev, &sh2), TANDEM_OK);
    /* before commit: no addresses yet */
    assert_int_equal(tandem_gemm(e->s, 0, 1, 1.0f, a2, b2, 0.0f, c2), TANDEM_E_STATE);
    assert_int_equal(tandem_pool_commit(e->pool), TANDEM_OK);

    float ha[3 * 65 * 33], hb[3 * 65 * 7], hc[3 * 33 * 7], got[3 * 33 * 7];
    double ref[3 * 33 * 7];
    upload_random(e->s, a3, ha);
    upload_random(e->s, b3, hb);
    upload_random(e->s, c3, hc);
    tandem_gemm_desc d3 = {1, 0, 33, 7, 65, 3, 65 * 33, 65 * 7, 33 * 7, TANDEM_F32, TANDEM_F32, TANDEM_F32, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0};
    reference(&d3, 0.7, ha, hb, -0.3, hc, ref);
    assert_int_equal(tandem_gemm(e->s, 1, 0, 0.7f, a3, b3, -0.3f, c3), TANDEM_OK);
    assert_int_equal(tandem_tensor_download(e->s, got, c3, sizeof got), TANDEM_OK);
    assert_true(norm_err(got, ref, 3 * 33 * 7) <= GEMM_TOL);

    upload_random(e->s, a2, ha);
    upload_random(e->s, b2, hb);
    tandem_gemm_desc d2 = {0, 1, 31, 9, 17, 1, 0, 0, 0, TANDEM_F32, TANDEM_F32, TANDEM_F32, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0};
    reference(&d2, -1.25, ha, hb, 0.0, NULL, ref);
    assert_int_equal(tandem_gemm(e->s, 0, 1, -1.25f, a2, b2, 0.0f, c2), TANDEM_OK);
    assert_int_equal(tandem_tensor_download(e->s, got, c2, 31 * 9 * sizeof(float)), TANDEM_OK);
    assert_true(norm_err(got, ref, 31 * 9) <= GEMM_TOL);

    /* errors name the tensors and their shapes */
    assert_int_equal(tandem_gemm(e->s, 0, 0, 1.0f, a2, bad_k, 0.0f, c2), TANDEM_E_INVALID);
    printf("inner mismatch: %s\n", tandem_last_error());
    assert_non_null(strstr(tandem_last_error(), "'a2' [31, 17]"));
    assert_non_null(strstr(tandem_last_error(), "'bad_k' [16, 9]"));
    assert_int_equal(tandem_gemm(e->s, 0, 1, 1.0f, a2, b2, 0.0f, bad_c), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "'bad_c' [31, 10]"));
    assert_non_null(strstr(tandem_last_error(), "[31, 9]"));
    assert_int_equal(tandem_gemm(e->s, 0, 1, 1.0f, a2, bf, 0.0f, c2), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "'half_w'"));
    assert_non_null(strstr(tandem_last_error(), "expected f32"));
    assert_int_equal(tandem_gemm(e->s, 1, 0, 1.0f, a3, b3x, 0.0f, c3), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "batch"));
    assert_non_null(strstr(tandem_last_error(), "'b3x' [2, 65, 7]"));
    assert_int_equal(tandem_gemm(e->s, 0, 0, 1.0f, a2, b3, 0.0f, c2), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "ranks differ"));
    assert_int_equal(tandem_gemm(e->s, 0, 0, 1.0f, r1, b2, 0.0f, c2), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "'vec'"));
    assert_non_null(strstr(tandem_last_error(), "rank 1"));

    tandem_gemm_shape bad = {0, 0, 2, 2, -1, 1};
    assert_int_equal(tandem_gemm_prepare(e->dev, &bad), TANDEM_E_INVALID);
    assert_int_equal(tandem_gemm_prepare(e->dev, NULL), TANDEM_E_INVALID);
}

/* A tensor of another device is refused, naming the tensor. */
static void test_tandem_gemm_other_device(void **state) {
    host_env *e = *state;
    tandem_device *dev1 = NULL;
    tandem_pool *p1 = NULL;
    assert_int_equal(tandem_device_open(TANDEM_BACKEND_HOST, 1, &dev1), TANDEM_OK);
    assert_int_equal(tandem_pool_create(dev1, "other", 0, &p1), TANDEM_OK);
    tandem_tensor *a = declare(p1, "far_a", TANDEM_F32, 2, 4, 4, 0);
    tandem_tensor *b = declare(p1, "far_b", TANDEM_F32, 2, 4, 4, 0);
    tandem_tensor *c = declare(p1, "far_c", TANDEM_F32, 2, 4, 4, 0);
    assert_int_equal(tandem_pool_commit(p1), TANDEM_OK);
    assert_int_equal(tandem_gemm(e->s, 0, 0, 1.0f, a, b, 0.0f, c), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "'far_a'"));
    tandem_pool_destroy(p1);
    tandem_device_close(dev1);
}

int main(void) {
    rng.s = tandem_test_seed("test_gemm");
    const struct CMUnitTest raw[] = {
        cmocka_unit_test(test_host_gemm),
        cmocka_unit_test(test_gemm_gelu_epilogues),
        cmocka_unit_test(test_gemm_bgrad),
        cmocka_unit_test(test_blocked_gemm),
        cmocka_unit_test(test_k_zero),
        cmocka_unit_test(test_bad_descriptor),
    };
    const struct CMUnitTest tensors[] = {
        cmocka_unit_test_setup_teardown(test_tandem_gemm_tensors, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_tandem_gemm_other_device, env_setup, env_teardown),
    };
    int failed = cmocka_run_group_tests_name("host_gemm", raw, NULL, NULL);
    failed += cmocka_run_group_tests_name("tandem_gemm", tensors, NULL, NULL);
    return failed ? 1 : 0;
}
