/* test_speak_eval.c — the figures of the free-running evaluation (runtime/run/speak_eval.h),
 * on random mels built here (no model):
 *   * DTW-aligned L1: 0 for a sequence against itself and against a time-stretched copy of
 *     itself (every frame repeated); a constant offset c on every band gives exactly c, whatever
 *     the stretch; it is symmetric; on small random sequences it equals the cheapest total cost
 *     over every monotone alignment (brute force) divided by that alignment's length;
 *   * the summary: counts within ±20 %, the median ratio (odd and even counts), the mean DTW
 *     L1 and the text-dependence ratio from per-utterance figures. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/run/speak_eval.h"
#include "test/fixtures.h"

enum { NB = 80, MAXF = 64 };

static uint64_t g_seed;

static void random_mel(tandem_rng *r, float *m, int frames) {
    tandem_rng_fill(r, m, (int64_t)frames * NB, -10.0f, -2.0f);
}

static void test_dtw_identities(void **state) {
    (void)state;
    tandem_rng r = {g_seed};
    static float a[MAXF * NB], b[2 * MAXF * NB], c[2 * MAXF * NB];
    static double row[4 * (2 * MAXF + 1)];
    const int n = 20;
    random_mel(&r, a, n);
    assert_true(tandem_speak_dtw_l1(a, n, a, n, NB, row) == 0.0);
    for (int i = 0; i < 2 * n; i++) memcpy(b + (size_t)i * NB, a + (size_t)(i / 2) * NB, NB * sizeof(float));
    assert_true(tandem_speak_dtw_l1(a, n, b, 2 * n, NB, row) == 0.0);
    assert_true(tandem_speak_dtw_l1(b, 2 * n, a, n, NB, row) == 0.0);
    const float off = 0.375f; /* exact in float: every |difference| is off */
    for (int i = 0; i < 2 * n * NB; i++) c[i] = b[i] + off;
    const double d = tandem_speak_dtw_l1(a, n, c, 2 * n, NB, row);
    printf("  offset %.3f against a stretched copy: DTW-L1 %.9f\n", off, d);
    assert_true(fabs(d - off) < 1e-5);
    /* symmetric on random pairs of different lengths */
    random_mel(&r, b, 13);
    const double ab = tandem_speak_dtw_l1(a, n, b, 13, NB, row), ba = tandem_speak_dtw_l1(b, 13, a, n, NB, row);
    assert_true(fabs(ab - ba) < 1e-12 * ab);
}

/* The cheapest total cost over every monotone path from (0,0) to (G-1,N-1), by recursion, and
 * its length. */
static void brute(const double *cost, int G, int N, int i, int j, double acc, int len, double *best,
                  int *best_len) {
    acc += cost[i * N + j];
    len++;
    if (i == G - 1 && j == N - 1) {
        if (acc < *best - 1e-12) *best = acc, *best_len = len;
        return;
    }
    if (i + 1 < G && j + 1 < N) brute(cost, G, N, i + 1, j + 1, acc, len, best, best_len);
    if (i + 1 < G) brute(cost, G, N, i + 1, j, acc, len, best, best_len);
    if (j + 1 < N) brute(cost, G, N, i, j + 1, acc, len, best, best_len);
}

static void test_dtw_brute_force(void **state) {
    (void)state;
    tandem_rng r = {g_seed ^ 0x5eed};
    static float a[8 * NB], b[8 * NB];
    double row[4 * 9], cost[64];
    for (int t = 0; t < 20; t++) {
        const int G = (int)tandem_rng_int(&r, 1, 6), N = (int)tandem_rng_int(&r, 1, 6);
        random_mel(&r, a, G);
        random_mel(&r, b, N);
        for (int i = 0; i < G; i++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int k = 0; k < NB; k++) s += fabs((double)a[i * NB + k] - b[j * NB + k]);
                cost[i * N + j] = s / NB;
            }
        double best = INFINITY;
        int len = 0;
        brute(cost, G, N, 0, 0, 0.0, 0, &best, &len);
        const double got = tandem_speak_dtw_l1(a, G, b, N, NB, row);
        /* random costs: one cheapest path (no ties), so the same total over the same length */
        assert_true(fabs(got - best / len) < 1e-9 * (1 + best));
    }
}

static void test_summary(void **state) {
    (void)state;
    tandem_speak_utt u[5];
    memset(u, 0, sizeof u);
    const double ratio[5] = {1.5, 0.9, 1.1, 0.7, 1.0};
    const int within[5] = {0, 1, 1, 0, 1};
    for (int i = 0; i < 5; i++) {
        u[i].ratio = ratio[i];
        u[i].within = within[i];
        u[i].dtw_l1 = i + 1;
        u[i].tf_l1 = 1.0;
        u[i].tf_l1_other = 1.0 + 0.1 * i;
    }
    tandem_speak_summary s;
    tandem_speak_eval_summarize(u, 5, &s);
    assert_int_equal(s.n, 5);
    assert_int_equal(s.within, 3);
    assert_true(fabs(s.within_frac - 0.6) < 1e-12);
    assert_true(s.median_ratio == 1.0);
    assert_true(fabs(s.dtw_l1 - 3.0) < 1e-12);
    assert_true(fabs(s.text_dependence - 6.0 / 5.0) < 1e-12);
    tandem_speak_eval_summarize(u, 4, &s); /* even: the mean of the middle two of 0.7 0.9 1.1 1.5 */
    assert_true(fabs(s.median_ratio - 1.0) < 1e-12);
    assert_int_equal(s.within, 2);
}

int main(void) {
    g_seed = tandem_test_seed("test_speak_eval");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtw_identities),
        cmocka_unit_test(test_dtw_brute_force),
        cmocka_unit_test(test_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
