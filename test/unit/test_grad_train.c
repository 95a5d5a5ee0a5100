/* test_grad_train.c — the loss kernels' host implementations (kernels/train.h) against a
 * double-precision reference written here:
 *   masked L1: forward (partials summed, and reduce_sum's mean) against the double sum on
 *     random shapes with prefix frame masks (as mel_targets writes them) and random weights;
 *     backward against central finite differences of the double loss for every element of
 *     pred, ties pred == target included (sign(0) = 0 is what the central difference gives);
 *   stop BCE: forward against the textbook -t log s - (1 - t) log(1 - s) (softplus form where
 *     e^|x| would overflow), logits up to ±1e4; backward against central differences;
 *   frames with weight 0 holding NaN or Inf change neither the loss nor any gradient.
 * The loss whose gradient is checked is u * loss / count with a random upstream weight u (the
 * scalar form of "sum(out * w) with random w"), so the backward's scale is exercised.
 *
 * Error measure for vectors: ||got - ref||_2 / ||ref||_2. Thresholds:
 *   L1 forward 1e-6 — the host sums in double; what is left is one float rounding of each
 *     |pred - target| (2^-24 relative); a dropped frame or a mask off by one is > 1e-3.
 *   BCE forward |got - ref| <= 1e-6 * sum w (|x| + 1) — each float term carries a few ulps of
 *     max(|x|, 1) (x - x t cancels when t is near 1), so the bound scales with the logits.
 *   gradients 1e-5 — the analytic gradient is one or two float roundings (~1e-7 relative);
 *     the double central difference (step 1e-3 for L1, where it is exact away from the kinks,
 *     and 1e-4 for BCE, truncation ~1e-9) adds far less; a wrong sign, scale or mask is O(1).
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

/* Sum of the host partials in double, checking their count matches the documented layout. */
static double sum_partials(const float *partials, int64_t n_elems) {
    double s = 0.0;
    for (int64_t k = 0; k < tandem_k_train_partials(n_elems); k++) {
        assert_false(isnan(partials[k]));
        s += partials[k];
    }
    return s;
}

/* ---- masked L1 ------------------------------------------------------------------------ */

typedef struct l1_case {
    int B, F, C;
    float *pred, *target, *mask; /* [B, F, C], [B, F, C], [B, F] */
    double count;                /* C * sum of the mask: the mean's denominator */
} l1_case;

/* Random batch: prefix masks from random lengths (item 0 full), or random weights with
 * zeros; |pred - target| is either exactly 0 (every 9th element) or at least 0.01, so a
 * central difference of step 1e-3 never straddles a kink. */
static void l1_case_make(l1_case *c, int prefix) {
    c->B = (int)tandem_rng_int(&rng, 1, 3);
    c->F = (int)tandem_rng_int(&rng, 1, 16);
    c->C = tandem_rng_int(&rng, 0, 1) ? 80 : (int)tandem_rng_int(&rng, 1, 90);
    int64_t n = (int64_t)c->B * c->F * c->C;
    c->pred = tandem_test_falloc_nan(n);
    c->target = tandem_test_falloc_nan(n);
    c->mask = tandem_test_falloc_nan((int64_t)c->B * c->F);
    c->count = 0.0;
    for (int b = 0; b < c->B; b++) {
        int len = b == 0 ? c->F : (int)tandem_rng_int(&rng, 0, c->F);
        for (int f = 0; f < c->F; f++) {
            float w = prefix ? (f < len ? 1.0f : 0.0f)
                             : (tandem_rng_int(&rng, 0, 4) == 0 ? 0.0f : tandem_rng_uniform(&rng, 0.1f, 2.0f));
            c->mask[b * c->F + f] = w;
            c->count += (double)c->C * (w != 0.0f);
        }
    }
    if (c->count == 0.0) c->count = 1.0;
    for (int64_t i = 0; i < n; i++) {
        c->target[i] = tandem_rng_uniform(&rng, -4.0f, 2.0f);
        float d;
        do d = tandem_rng_uniform(&rng, -1.5f, 1.5f);
        while (fabsf(d) < 0.01f);
        c->pred[i] = i % 9 == 4 ? c->target[i] : c->target[i] + d;
    }
    printf("  L1 case B=%d F=%d C=%d %s\n", c->B, c->F, c->C, prefix ? "prefix mask" : "random weights");
}

static void l1_case_free(l1_case *c) {
    free(c->pred);
    free(c->target);
    free(c->mask);
}

/* sum over frames with a nonzero weight of w * |pred - target|, all in double. */
static double ref_l1_sum(const l1_case *c, const double *pred) {
    double s = 0.0;
    for (int b = 0; b < c->B; b++)
        for (int f = 0; f < c->F; f++) {
            double w = c->mask[b * c->F + f];
            if (w == 0.0) continue;
            for (int k = 0; k < c->C; k++) {
                int64_t i = ((int64_t)b * c->F + f) * c->C + k;
                s += w * fabs(pred[i] - (double)c->target[i]);
            }
        }
    return s;
}

static void test_l1_forward(void **state) {
    (void)state;
    for (int rep = 0; rep < 8; rep++) {
        l1_case c;
        l1_case_make(&c, rep % 2 == 0);
        int64_t n = (int64_t)c.B * c.F * c.C;
        double *pd = malloc(sizeof(double) * (size_t)n);
        for (int64_t i = 0; i < n; i++) pd[i] = c.pred[i];
        float *partials = tandem_test_falloc_nan(tandem_k_train_partials(n)), out = NAN;
        tandem_k_l1_masked_fwd_args a = {c.pred, c.target, c.mask, partials, c.B, c.F, c.C};
        tandem_k_l1_masked_fwd_host(&a);
        double ref = ref_l1_sum(&c, pd);
        double got = sum_partials(partials, n);
        assert_true(fabs(got - ref) <= 1e-6 * ref + 1e-30);
        /* The mean through reduce_sum, as the trainer computes it. */
        tandem_k_reduce_sum_args r = {partials, &out, NULL, tandem_k_train_partials(n), (float)(1.0 / c.count)};
        tandem_k_reduce_sum_host(&r);
        assert_true(fabs(out - ref / c.count) <= 1e-6 * (ref / c.count) + 1e-30);
        free(pd);
        free(partials);
        l1_case_free(&c);
    }
}

static void test_l1_gradient(void **state) {
    (void)state;
    const double h = 1e-3;
    for (int rep = 0; rep < 6; rep++) {
        l1_case c;
        l1_case_make(&c, rep % 2 == 0);
        int64_t n = (int64_t)c.B * c.F * c.C;
        double u = tandem_rng_uniform(&rng, -2.0f, 2.0f); /* upstream weight */
        double k = u / c.count;
        double *pd = malloc(sizeof(double) * (size_t)n), *num = malloc(sizeof(double) * (size_t)n);
        for (int64_t i = 0; i < n; i++) pd[i] = c.pred[i];
        for (int64_t i = 0; i < n; i++) { /* every element of pred */
            double p0 = pd[i];
            pd[i] = p0 + h;
            double lp = k * ref_l1_sum(&c, pd);
            pd[i] = p0 - h;
            double lm = k * ref_l1_sum(&c, pd);
            pd[i] = p0;
            num[i] = (lp - lm) / (2.0 * h);
        }
        float *dpred = tandem_test_falloc_nan(n);
        tandem_k_l1_masked_bwd_args a = {c.pred, c.target, c.mask, dpred, c.B, c.F, c.C, (float)k};
        tandem_k_l1_masked_bwd_host(&a);
        double err = tandem_test_rel_err(dpred, num, n);
        printf("  L1 gradient: %lld elements, u = %.3f, error %.3g\n", (long long)n, u, err);
        assert_true(err <= 1e-5);
        for (int64_t i = 0; i < n; i++) {
            if (c.mask[i / c.C] == 0.0f || c.pred[i] == c.target[i]) assert_true(dpred[i] == 0.0f);
        }
        free(pd);
        free(num);
        free(dpred);
        l1_case_free(&c);
    }
}

/* ---- stop BCE ------------------------------------------------------------------------- */

typedef struct bce_case {
    int B, F;
    float *logits, *target, *weight; /* [B, F] each */
    double wsum;
} bce_case;

/* Stop targets (1 from the last real frame on) with weight 1 on every frame, or soft targets
 * with random weights; a few huge logits when extreme is set. */
static void bce_case_make(bce_case *c, int stop_targets, int extreme) {
    c->B = (int)tandem_rng_int(&rng, 1, 4);
    c->F = (int)tandem_rng_int(&rng, 1, 60);
    int64_t n = (int64_t)c->B * c->F;
    c->logits = tandem_test_falloc_nan(n);
    c->target = tandem_test_falloc_nan(n);
    c->weight = tandem_test_falloc_nan(n);
    c->wsum = 0.0;
    static const float huge[] = {88.0f, -88.0f, 95.0f, -95.0f, 1e4f, -1e4f, 30.0f, -30.0f};
    for (int b = 0; b < c->B; b++) {
        int len = (int)tandem_rng_int(&rng, 0, c->F);
        for (int f = 0; f < c->F; f++) {
            int64_t i = (int64_t)b * c->F + f;
            c->logits[i] = tandem_rng_uniform(&rng, -8.0f, 8.0f);
            if (extreme && i % 5 == 2) c->logits[i] = huge[tandem_rng_int(&rng, 0, 7)];
            if (stop_targets) {
                c->target[i] = f >= len - 1 ? 1.0f : 0.0f;
                c->weight[i] = 1.0f;
            } else {
                c->target[i] = tandem_rng_uniform(&rng, 0.0f, 1.0f);
                c->weight[i] = tandem_rng_int(&rng, 0, 3) == 0 ? 0.0f : tandem_rng_uniform(&rng, 0.1f, 2.0f);
            }
            c->wsum += c->weight[i];
        }
    }
    if (c->wsum == 0.0) c->wsum = 1.0;
    printf("  BCE case B=%d F=%d %s%s\n", c->B, c->F, stop_targets ? "stop targets" : "soft targets",
           extreme ? ", huge logits" : "");
}

static void bce_case_free(bce_case *c) {
    free(c->logits);
    free(c->target);
    free(c->weight);
}

/* One term from the definition: -t log s - (1 - t) log(1 - s), s = 1 / (1 + e^-x), in double,
 * with 1 - s taken as 1 / (1 + e^x) (subtracting s from 1 would lose all digits of 1 - s for
 * large x); where e^|x| overflows (|x| > 700), the same quantity as softplus(-x), softplus(x). */
static double ref_bce_term(double x, double t) {
    if (fabs(x) <= 700.0) {
        double s = 1.0 / (1.0 + exp(-x)), one_minus_s = 1.0 / (1.0 + exp(x));
        return -t * log(s) - (1.0 - t) * log(one_minus_s);
    }
    /* -log s = log(1 + e^-x), -log(1 - s) = log(1 + e^x) */
    double sp_neg = x > 0 ? log1p(exp(-x)) : -x + log1p(exp(x));
    double sp_pos = x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    return t * sp_neg + (1.0 - t) * sp_pos;
}

static double ref_bce_sum(const bce_case *c, const double *logits) {
    double s = 0.0;
    for (int64_t i = 0; i < (int64_t)c->B * c->F; i++)
        if (c->weight[i] != 0.0f) s += c->weight[i] * ref_bce_term(logits[i], c->target[i]);
    return s;
}

static void test_bce_forward(void **state) {
    (void)state;
    for (int rep = 0; rep < 8; rep++) {
        bce_case c;
        bce_case_make(&c, rep % 2 == 0, rep >= 4);
        int64_t n = (int64_t)c.B * c.F;
        double *xd = malloc(sizeof(double) * (size_t)n), bound = 0.0;
        for (int64_t i = 0; i < n; i++) {
            xd[i] = c.logits[i];
            bound += c.weight[i] * (fabs(xd[i]) + 1.0);
        }
        float *partials = tandem_test_falloc_nan(tandem_k_train_partials(n));
        tandem_k_bce_stop_fwd_args a = {c.logits, c.target, c.weight, partials, c.B, c.F};
        tandem_k_bce_stop_fwd_host(&a);
        double ref = ref_bce_sum(&c, xd), got = sum_partials(partials, n);
        printf("  BCE forward: %.9g vs %.9g\n", got, ref);
        assert_true(isfinite(got));
        assert_true(fabs(got - ref) <= 1e-6 * bound);
        free(xd);
        free(partials);
        bce_case_free(&c);
    }
}

static void test_bce_gradient(void **state) {
    (void)state;
    const double h = 1e-4;
    for (int rep = 0; rep < 8; rep++) {
        bce_case c;
        bce_case_make(&c, rep % 2 == 0, rep >= 4);
        int64_t n = (int64_t)c.B * c.F;
        double k = tandem_rng_uniform(&rng, -2.0f, 2.0f) / c.wsum;
        double *xd = malloc(sizeof(double) * (size_t)n), *num = malloc(sizeof(double) * (size_t)n);
        for (int64_t i = 0; i < n; i++) xd[i] = c.logits[i];
        for (int64_t i = 0; i < n; i++) {
            double x0 = xd[i];
            xd[i] = x0 + h;
            double lp = k * ref_bce_sum(&c, xd);
            xd[i] = x0 - h;
            double lm = k * ref_bce_sum(&c, xd);
            xd[i] = x0;
            num[i] = (lp - lm) / (2.0 * h);
        }
        float *dlogits = tandem_test_falloc_nan(n);
        tandem_k_bce_stop_bwd_args a = {c.logits, c.target, c.weight, dlogits, c.B, c.F, (float)k};
        tandem_k_bce_stop_bwd_host(&a);
        double err = tandem_test_rel_err(dlogits, num, n);
        printf("  BCE gradient: %lld logits, error %.3g\n", (long long)n, err);
        /* The kernel computes k w (s - t) with s = sigmoid(x) in float: s carries up to half an
         * ulp of 1 (6e-8), so where s is close to t (|x| > 5 with a matching hard target) the
         * difference loses its relative precision. Each element is therefore held to 1e-5
         * relative plus that float floor; with one logit (B = F = 1) nothing dilutes it, which
         * a vector-wide relative error of 1e-5 could not allow (seen: 4.5e-5 at x ≈ 7). */
        for (int64_t i = 0; i < n; i++) {
            const double floor_abs = 4.0 * FLT_EPSILON * fabs(k * c.weight[i]);
            if (!(fabs(dlogits[i] - num[i]) <= 1e-5 * fabs(num[i]) + floor_abs))
                fail_msg("BCE gradient %lld: %.9g vs %.9g (logit %g, target %g, weight %g)", (long long)i,
                         dlogits[i], num[i], c.logits[i], c.target[i], c.weight[i]);
            if (c.weight[i] == 0.0f) assert_true(dlogits[i] == 0.0f);
        }
        if (n >= 8) assert_true(err <= 1e-5); /* many logits: the vector-wide bound still holds */
        free(xd);
        free(num);
        free(dlogits);
        bce_case_free(&c);
    }
}

/* Padded frames (weight 0) holding NaN/Inf: the loss and every gradient stay what they are
 * without them, exactly. */
static void test_excluded_frames_ignore_nonfinite(void **state) {
    (void)state;
    enum { B = 2, F = 9, C = 80 };
    static float pred[B * F * C], target[B * F * C], mask[B * F], dpred[B * F * C];
    static float logits[B * F], stop[B * F], weight[B * F], dlogits[B * F];
    float part_clean[2], part_dirty[2], grad_clean[B * F * C], dl_clean[B * F];
    for (int i = 0; i < B * F * C; i++) {
        pred[i] = tandem_rng_uniform(&rng, -1.0f, 1.0f);
        target[i] = tandem_rng_uniform(&rng, -1.0f, 1.0f);
    }
    for (int i = 0; i < B * F; i++) {
        mask[i] = (i % F) < 5 ? 1.0f : 0.0f;
        weight[i] = mask[i];
        logits[i] = tandem_rng_uniform(&rng, -3.0f, 3.0f);
        stop[i] = (i % F) >= 4 ? 1.0f : 0.0f;
    }
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) /* poison the excluded frames */
            for (int i = 0; i < B * F; i++)
                if (mask[i] == 0.0f) {
                    logits[i] = i % 2 ? NAN : INFINITY;
                    for (int k = 0; k < C; k++) pred[i * C + k] = k % 2 ? -INFINITY : NAN;
                }
        float *part = pass ? part_dirty : part_clean;
        tandem_k_l1_masked_fwd_args lf = {pred, target, mask, part, B, F, C};
        tandem_k_l1_masked_fwd_host(&lf);
        tandem_k_bce_stop_fwd_args bf = {logits, stop, weight, part + 1, B, F};
        tandem_k_bce_stop_fwd_host(&bf);
        tandem_k_l1_masked_bwd_args lb = {pred, target, mask, dpred, B, F, C, 0.5f};
        tandem_k_l1_masked_bwd_host(&lb);
        tandem_k_bce_stop_bwd_args bb = {logits, stop, weight, dlogits, B, F, 0.5f};
        tandem_k_bce_stop_bwd_host(&bb);
        if (pass == 0) {
            memcpy(grad_clean, dpred, sizeof dpred);
            memcpy(dl_clean, dlogits, sizeof dlogits);
        }
    }
    assert_true(isfinite(part_dirty[0]) && isfinite(part_dirty[1]));
    assert_memory_equal(part_clean, part_dirty, sizeof part_clean);
    assert_memory_equal(grad_clean, dpred, sizeof dpred);
    assert_memory_equal(dl_clean, dlogits, sizeof dlogits);
}

int main(void) {
    rng.s = tandem_test_seed("test_grad_train");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_l1_forward),
        cmocka_unit_test(test_l1_gradient),
        cmocka_unit_test(test_bce_forward),
        cmocka_unit_test(test_bce_gradient),
        cmocka_unit_test(test_excluded_frames_ignore_nonfinite),
    };
    return cmocka_run_group_tests_name("grad_train", tests, NULL, NULL);
}
