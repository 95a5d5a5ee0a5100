/* test_adamw.c — the optimizer side of kernels/train.h (host implementations):
 *   adamw over 12 steps against a double-precision reference of the update rule written here
 *     (bias correction, global-norm clipping from the device scalar, decoupled weight decay on
 *     and off, eps outside the square root), in four configurations; the gradients go through
 *     the real flow (sum_squares → reduce_sum with its non-finite flag → adamw), and two steps
 *     carry a NaN or an Inf gradient: the flag must be raised and the step must change
 *     nothing, bit for bit (the step counter does not advance over a skipped step);
 *   weight decay only when weight_decay > 0; the clip factor's cases;
 *   sum_squares partials and reduce_sum against double sums (sizes 0, 1, off the block, at
 *     and past a chunk, a million), the partial layout the geometry promises;
 *   reduce_sum's flag (NaN, Inf, overflow of a finite sum, always written) and
 *     nonfinite_check (NaN/±Inf anywhere set it; FLT_MAX, denormals, -0 do not; a set flag
 *     stays set).
 *
 * Error measures and thresholds:
 *   m, v: ||got - ref|| / ||ref|| <= 1e-5 — a few float roundings per step over 12 steps give
 *     ~1e-6; a wrong beta, clip factor or missing (1 - beta) factor is >= 1e-3.
 *   param: ||(p - p0) - (p_ref - p0)|| / ||p_ref - p0|| <= 1e-4, i.e. relative to how far the
 *     parameters moved: each step rounds p (|p| <= ~1) to 2^-24 ~ 6e-8 against a displacement
 *     of ~lr = 1e-2 per step, ~6e-6 per step, ~2e-5 after 12 as a random walk; a wrong bias
 *     correction, decay or eps placement is > 1e-2.
 *   sums: relative 1e-6 — the host sums in double and rounds each x^2 once (2^-24).
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/registry.h"
#include "test/fixtures.h"

static tandem_rng rng;

/* ---- AdamW against the double reference ------------------------------------------------ */

typedef struct adamw_cfg {
    const char *name;
    float lr, beta1, beta2, eps, weight_decay, max_norm;
    int pass_norm; /* norm_sq pointer given (else NULL: no clipping, skip flag only) */
} adamw_cfg;

/* The squared global norm and the skip flag, computed as a training step does. */
static float norm_sq_and_flag(const float *g, int64_t n, float *partials, int *flag) {
    float out = NAN;
    tandem_k_sum_squares_args ss = {g, partials, n};
    tandem_k_sum_squares_host(&ss);
    tandem_k_reduce_sum_args rs = {partials, &out, flag, tandem_k_train_partials(n), 1.0f};
    tandem_k_reduce_sum_host(&rs);
    return out;
}

static void run_adamw_cfg(const adamw_cfg *cfg) {
    const int steps = 12;
    const int64_t n = tandem_rng_int(&rng, 50, 3000);
    float *p = tandem_test_falloc_nan(n), *m = tandem_test_falloc_nan(n), *v = tandem_test_falloc_nan(n), *g = tandem_test_falloc_nan(n), *p0 = tandem_test_falloc_nan(n);
    float *partials = tandem_test_falloc_nan(tandem_k_train_partials(n));
    float *sp = tandem_test_falloc_nan(n), *sm = tandem_test_falloc_nan(n), *sv = tandem_test_falloc_nan(n); /* state before a skipped step */
    double *pd = malloc(sizeof(double) * (size_t)n), *md = malloc(sizeof(double) * (size_t)n),
           *vd = malloc(sizeof(double) * (size_t)n), *dd = malloc(sizeof(double) * (size_t)n);
    float *df = tandem_test_falloc_nan(n);
    const double lr = cfg->lr, b1 = cfg->beta1, b2 = cfg->beta2, eps = cfg->eps,
                 wd = cfg->weight_decay, max_norm = cfg->max_norm;
    for (int64_t i = 0; i < n; i++) {
        p[i] = p0[i] = tandem_rng_uniform(&rng, -1.0f, 1.0f);
        m[i] = v[i] = 0.0f;
        pd[i] = p[i];
        md[i] = vd[i] = 0.0;
    }
    printf("  %s: n=%lld\n", cfg->name, (long long)n);
    int t = 1, clipped = 0;
    for (int s = 1; s <= steps; s++) {
        /* Gradient scales from 0.003 to 3, so the norm falls on both sides of max_norm; step 2
         * surely above it (norm ~ 3 sqrt(n / 3) >= 12), step 3 surely below (<= 0.1). */
        float sc = s == 2 ? 3.0f : s == 3 ? 0.003f : expf(tandem_rng_uniform(&rng, logf(0.003f), logf(3.0f)));
        for (int64_t i = 0; i < n; i++) g[i] = tandem_rng_uniform(&rng, -sc, sc);
        int bad = s == 4 || s == 8;
        if (bad) g[tandem_rng_int(&rng, 0, n - 1)] = s == 4 ? NAN : INFINITY;
        int flag = 7;
        float norm_sq = norm_sq_and_flag(g, n, partials, &flag);
        assert_int_equal(flag, bad);

        float bias1 = (float)(1.0 - pow(b1, t)), bias2 = (float)(1.0 - pow(b2, t));
        tandem_k_adamw_args a = {p, g, m, v, cfg->pass_norm ? &norm_sq : NULL, &flag, n,
                                 cfg->lr, cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay,
                                 bias1, bias2, cfg->max_norm, NULL};
        memcpy(sp, p, sizeof(float) * (size_t)n);
        memcpy(sm, m, sizeof(float) * (size_t)n);
        memcpy(sv, v, sizeof(float) * (size_t)n);
        tandem_k_adamw_host(&a);
        if (bad) { /* skipped: nothing changed, bit for bit; t stays */
            assert_memory_equal(sp, p, sizeof(float) * (size_t)n);
            assert_memory_equal(sm, m, sizeof(float) * (size_t)n);
            assert_memory_equal(sv, v, sizeof(float) * (size_t)n);
            continue;
        }

        /* Reference step in double, from the definition. */
        double nsq = 0.0;
        for (int64_t i = 0; i < n; i++) nsq += (double)g[i] * g[i];
        double norm = sqrt(nsq), c = 1.0;
        if (cfg->pass_norm && max_norm > 0.0 && norm > max_norm) c = max_norm / norm, clipped++;
        for (int64_t i = 0; i < n; i++) {
            double gi = c * g[i];
            if (wd > 0.0) pd[i] -= lr * wd * pd[i];
            md[i] = b1 * md[i] + (1.0 - b1) * gi;
            vd[i] = b2 * vd[i] + (1.0 - b2) * gi * gi;
            double mhat = md[i] / (1.0 - pow(b1, t)), vhat = vd[i] / (1.0 - pow(b2, t));
            pd[i] -= lr * mhat / (sqrt(vhat) + eps);
        }
        t++;
        for (int64_t i = 0; i < n; i++) {
            dd[i] = pd[i] - p0[i];
            df[i] = (float)((double)p[i] - p0[i]);
        }
        double em = tandem_test_rel_err(m, md, n), ev = tandem_test_rel_err(v, vd, n), ep = tandem_test_rel_err(df, dd, n);
        if (!(em <= 1e-5 && ev <= 1e-5 && ep <= 1e-4))
            fail_msg("%s step %d (t=%d, norm %.4g, clip %.4g): error m %.3g v %.3g displacement %.3g",
                     cfg->name, s, t - 1, norm, c, em, ev, ep);
    }
    printf("  %s: %d steps applied, %d clipped, 2 skipped\n", cfg->name, t - 1, clipped);
    if (cfg->pass_norm && max_norm > 0.0) assert_true(clipped > 0); /* clipping was exercised */
    free(p), free(m), free(v), free(g), free(p0), free(partials), free(sp), free(sm), free(sv);
    free(pd), free(md), free(vd), free(dd), free(df);
}

static void test_adamw_reference(void **state) {
    (void)state;
    static const adamw_cfg cfgs[] = {
        {"decay + clip", 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, 1.0f, 1},
        {"no decay, no clip, eps 1e-3", 1e-2f, 0.9f, 0.999f, 1e-3f, 0.0f, 0.0f, 1},
        {"decay, no norm pointer", 1e-2f, 0.8f, 0.95f, 1e-8f, 0.05f, 1.0f, 0},
        {"clip only, beta2 0.95", 3e-3f, 0.9f, 0.95f, 1e-6f, 0.0f, 0.5f, 1},
    };
    for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) run_adamw_cfg(&cfgs[k]);
}

/* Zero gradient and zero moments: the Adam term is exactly 0, so only decay moves p. */
static void test_weight_decay_only_when_positive(void **state) {
    (void)state;
    enum { N = 100 };
    float p[N], p_before[N], g[N] = {0}, m[N] = {0}, v[N] = {0};
    for (int i = 0; i < N; i++) p[i] = p_before[i] = tandem_rng_uniform(&rng, -2.0f, 2.0f);
    const float wds[] = {0.0f, -0.1f, 0.1f};
    for (int k = 0; k < 3; k++) {
        memcpy(p, p_before, sizeof p);
        tandem_k_adamw_args a = {p, g, m, v, NULL, NULL, N, 0.01f, 0.9f, 0.999f, 1e-8f, wds[k],
                                 0.1f, 0.001f, 0.0f, NULL};
        tandem_k_adamw_host(&a);
        for (int i = 0; i < N; i++) {
            double want = wds[k] > 0.0f ? (double)p_before[i] * (1.0 - 0.01 * (double)wds[k]) : p_before[i];
            if (wds[k] > 0.0f)
                assert_true(fabs(p[i] - want) <= 1e-7 * fabs(want));
            else
                assert_true(p[i] == p_before[i]); /* no decay at all, bit for bit */
        }
    }
}

static void test_clip_factor(void **state) {
    (void)state;
    assert_true(tandem_k_train_clip_factor(4.0f, 1.0f) == 0.5f);     /* norm 2, max 1 */
    assert_true(tandem_k_train_clip_factor(0.25f, 1.0f) == 1.0f);    /* under max_norm */
    assert_true(tandem_k_train_clip_factor(1.0f, 1.0f) == 1.0f);     /* at max_norm */
    assert_true(tandem_k_train_clip_factor(100.0f, 0.0f) == 1.0f);   /* clipping off */
    assert_true(tandem_k_train_clip_factor(0.0f, 1.0f) == 1.0f);     /* zero gradient */
    for (int k = 0; k < 100; k++) {
        float ns = expf(tandem_rng_uniform(&rng, -10.0f, 10.0f)), mx = tandem_rng_uniform(&rng, 0.1f, 5.0f);
        double want = fmin(1.0, mx / sqrt((double)ns));
        assert_true(fabs(tandem_k_train_clip_factor(ns, mx) - want) <= 2e-7 * want);
    }
}

/* ---- sums ----------------------------------------------------------------------------- */

static void test_partial_layout(void **state) {
    (void)state;
    const int64_t ns[] = {0, 1, 4095, 4096, 4097, 10 * 4096 + 1};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int64_t n = ns[k], want = n == 0 ? 1 : (n + 4095) / 4096;
        assert_int_equal(tandem_k_train_partials(n), want);
        tandem_launch_dims d;
        tandem_k_sum_squares_args ss = {NULL, NULL, n};
        tandem_k_sum_squares_geom(&ss, &d);
        assert_int_equal(d.grid[0], want);
        assert_int_equal(d.block[0], TANDEM_K_TRAIN_THREADS);
        tandem_k_l1_masked_fwd_args l1 = {NULL, NULL, NULL, NULL, 1, (int)n, 1};
        tandem_k_l1_masked_fwd_geom(&l1, &d);
        assert_int_equal(d.grid[0], want);
        tandem_k_bce_stop_fwd_args bce = {NULL, NULL, NULL, NULL, 1, (int)n};
        tandem_k_bce_stop_fwd_geom(&bce, &d);
        assert_int_equal(d.grid[0], want);
    }
    tandem_launch_dims d;
    tandem_k_reduce_sum_args rs = {NULL, NULL, NULL, 1000000, 1.0f};
    tandem_k_reduce_sum_geom(&rs, &d);
    assert_int_equal(d.grid[0] * d.grid[1] * d.grid[2], 1); /* one block: fixed order */
}

static void test_sum_squares_and_reduce(void **state) {
    (void)state;
    const int64_t ns[] = {0, 1, 255, 4096, 4097, (1 << 20) + 7, -1};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int64_t n = ns[k] >= 0 ? ns[k] : tandem_rng_int(&rng, 2, 100000);
        int64_t parts = tandem_k_train_partials(n);
        float *x = tandem_test_falloc_nan(n), *partials = tandem_test_falloc_nan(parts), out = NAN;
        for (int64_t i = 0; i < n; i++) x[i] = tandem_rng_uniform(&rng, -3.0f, 3.0f);
        tandem_k_sum_squares_args ss = {x, partials, n};
        tandem_k_sum_squares_host(&ss);
        double total = 0.0;
        for (int64_t c = 0; c < parts; c++) {
            double want = 0.0;
            for (int64_t i = c * 4096; i < n && i < (c + 1) * 4096; i++) want += (double)x[i] * x[i];
            assert_true(fabs(partials[c] - want) <= 1e-6 * want);
            total += want;
        }
        float scale = tandem_rng_uniform(&rng, 0.1f, 2.0f);
        int flag = 7;
        tandem_k_reduce_sum_args rs = {partials, &out, &flag, parts, scale};
        tandem_k_reduce_sum_host(&rs);
        printf("  n=%lld: sum of squares %.9g (double %.9g)\n", (long long)n, out / scale, total);
        assert_true(fabs(out - scale * total) <= 1e-6 * scale * total);
        assert_int_equal(flag, 0);
        /* Mixed signs, as other partial sums may have. */
        double mixed = 0.0;
        for (int64_t i = 0; i < n; i++) mixed += x[i];
        tandem_k_reduce_sum_args rx = {x, &out, NULL, n, 1.0f};
        tandem_k_reduce_sum_host(&rx);
        double sum_abs = 0.0;
        for (int64_t i = 0; i < n; i++) sum_abs += fabs(x[i]);
        assert_true(fabs(out - mixed) <= 1e-6 * sum_abs + 1e-30);
        free(x);
        free(partials);
    }
}

static void test_reduce_sum_flag(void **state) {
    (void)state;
    float p[5] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f}, out;
    int flag = 1; /* a stale 1 must be overwritten */
    tandem_k_reduce_sum_args a = {p, &out, &flag, 5, 0.5f};
    tandem_k_reduce_sum_host(&a);
    assert_true(out == 7.5f);
    assert_int_equal(flag, 0);
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; k++) {
        p[tandem_rng_int(&rng, 0, 4)] = bad[k];
        flag = 0;
        tandem_k_reduce_sum_host(&a);
        assert_int_equal(flag, 1);
        p[0] = 1.0f, p[1] = 2.0f, p[2] = 3.0f, p[3] = 4.0f, p[4] = 5.0f;
    }
    /* Finite partials whose sum overflows float: the norm would be Inf, so the step skips. */
    p[0] = p[1] = 3e38f;
    a.scale = 1.0f;
    flag = 0;
    tandem_k_reduce_sum_host(&a);
    assert_int_equal(flag, 1);
}

static void test_nonfinite_check(void **state) {
    (void)state;
    enum { N = 5000 };
    static float x[N];
    for (int i = 0; i < N; i++) x[i] = tandem_rng_uniform(&rng, -1.0f, 1.0f);
    x[10] = FLT_MAX, x[11] = -FLT_MAX, x[12] = 1e-40f /* denormal */, x[13] = -0.0f;
    for (int start = 0; start < 2; start++) { /* clean data leaves the flag as it was */
        int flag = start;
        tandem_k_nonfinite_check_args a = {x, &flag, N};
        tandem_k_nonfinite_check_host(&a);
        assert_int_equal(flag, start);
    }
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; k++) {
        int at = (int)tandem_rng_int(&rng, 0, N - 1), flag = 0;
        float keep = x[at];
        x[at] = bad[k];
        tandem_k_nonfinite_check_args a = {x, &flag, N};
        tandem_k_nonfinite_check_host(&a);
        assert_int_equal(flag, 1);
        x[at] = keep;
    }
    int flag = 0;
    tandem_k_nonfinite_check_args empty = {x, &flag, 0};
    tandem_k_nonfinite_check_host(&empty);
    assert_int_equal(flag, 0);
}

int main(void) {
    rng.s = tandem_test_seed("test_adamw");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adamw_reference),
        cmocka_unit_test(test_weight_decay_only_when_positive),
        cmocka_unit_test(test_clip_factor),
        cmocka_unit_test(test_partial_layout),
        cmocka_unit_test(test_sum_squares_and_reduce),
        cmocka_unit_test(test_reduce_sum_flag),
        cmocka_unit_test(test_nonfinite_check),
    };
    return cmocka_run_group_tests_name("adamw", tests, NULL, NULL);
}
