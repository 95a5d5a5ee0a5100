/* test_speak_eval.c — the figures of the free-running evaluation (runtime/run/speak_eval.h),
 * on random mels built here (no model):
 *   * DTW-aligned L1: 0 for a sequence against itself and against a time-stretched copy of
 *     itself (every frame repeated); a constant offset c on every band gives exactly c, whatever
 *     the stretch; it is symmetric; on small random sequences it equals the cheapest total cost
 *     over every monotone alignment (brute force) divided by that alignment's length;
 *   * the summary: counts within ±20 %, the median ratio (odd and even counts), the mean DTW
 *     L1 and the text-dependence ratio from per-utterance figures;
 *   * spectral variation and identification on a set of mels: the true mels themselves are all
 *     identified with variation 1; a copy of the next sentence identifies none; a drone (every
 *     frame the sentence's mean frame) has variation 0; a copy stretched 2× in time is still
 *     identified, with variation (N − 1) / (2N − 1);
 *   * on a small random model: the teacher-forced L1s behind that ratio (same text: equal;
 *     another text: different; real frames only, whatever the truth holds past its length). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/run/speak_eval.h"
#include "test/fixtures.h"
#include "test/synth_checkpoint.h"

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
        u[i].spec_var = 0.1 * i;
        u[i].nearest = -1; /* identification not run */
    }
    tandem_speak_summary s;
    tandem_speak_eval_summarize(u, 5, &s);
    assert_int_equal(s.n, 5);
    assert_int_equal(s.within, 3);
    assert_true(fabs(s.within_frac - 0.6) < 1e-12);
    assert_true(s.median_ratio == 1.0);
    assert_true(fabs(s.dtw_l1 - 3.0) < 1e-12);
    assert_true(fabs(s.text_dependence - 6.0 / 5.0) < 1e-12);
    assert_true(fabs(s.spec_var - 0.2) < 1e-12);
    assert_true(s.identified == 0 && s.ident_frac == 0.0);
    tandem_speak_eval_summarize(u, 4, &s); /* even: the mean of the middle two of 0.7 0.9 1.1 1.5 */
    assert_true(fabs(s.median_ratio - 1.0) < 1e-12);
    assert_int_equal(s.within, 2);
}

/* A set of n mels made of "phones": frames drawn from a small inventory of spectra, each held
 * for 2..6 frames, so that sentences differ in what they say and move like speech. */
enum { SET = 6, SETF = 40 };
static void phone_set(tandem_rng *r, float *truth, int *frames) {
    static float inv[8 * NB];
    random_mel(r, inv, 8);
    for (int i = 0; i < SET; i++) {
        frames[i] = (int)tandem_rng_int(r, 20, SETF - 1);
        for (int t = 0; t < frames[i];) {
            const int p = (int)tandem_rng_int(r, 0, 7), len = (int)tandem_rng_int(r, 2, 6);
            for (int k = 0; k < len && t < frames[i]; k++, t++)
                memcpy(truth + ((size_t)i * 2 * SETF + t) * NB, inv + (size_t)p * NB, NB * sizeof(float));
        }
    }
}

static void test_identify_and_variation(void **state) {
    (void)state;
    tandem_rng r = {g_seed ^ 0x1de};
    const size_t stride = 2 * SETF * NB;
    static float truth[SET * 2 * SETF * NB], gen[SET * 2 * SETF * NB];
    static double row[4 * (2 * SETF + 1)];
    int frames[SET];
    tandem_speak_utt u[SET];
    tandem_speak_summary s;
    phone_set(&r, truth, frames);
    /* the truth itself: every sentence identified, variation exactly 1 */
    memcpy(gen, truth, sizeof gen);
    for (int i = 0; i < SET; i++) {
        memset(&u[i], 0, sizeof u[i]);
        u[i].gen_frames = frames[i];
        const double f = tandem_speak_flux(truth + i * stride, frames[i], NB);
        assert_true(f > 0);
        u[i].spec_var = tandem_speak_flux(gen + i * stride, frames[i], NB) / f;
    }
    tandem_speak_identify(gen, truth, stride, SET, frames, row, u);
    tandem_speak_eval_summarize(u, SET, &s);
    assert_int_equal(s.identified, SET);
    assert_true(s.ident_frac == 1.0 && fabs(s.spec_var - 1.0) < 1e-12);
    /* a copy of the next sentence: none identified, each nearest to the one it copies */
    for (int i = 0; i < SET; i++) {
        const int o = (i + 1) % SET;
        memcpy(gen + i * stride, truth + o * stride, stride * sizeof(float));
        u[i].gen_frames = frames[o];
    }
    tandem_speak_identify(gen, truth, stride, SET, frames, row, u);
    tandem_speak_eval_summarize(u, SET, &s);
    for (int i = 0; i < SET; i++) assert_int_equal(u[i].nearest, (i + 1) % SET);
    assert_int_equal(s.identified, 0);
    assert_true(s.ident_frac == 0.0);
    /* a drone: the sentence's mean frame for its whole length — no variation at all */
    for (int i = 0; i < SET; i++) {
        float mean[NB] = {0};
        for (int t = 0; t < frames[i]; t++)
            for (int k = 0; k < NB; k++) mean[k] += truth[i * stride + (size_t)t * NB + k] / (float)frames[i];
        for (int t = 0; t < frames[i]; t++) memcpy(gen + i * stride + (size_t)t * NB, mean, sizeof mean);
        assert_true(tandem_speak_flux(gen + i * stride, frames[i], NB) == 0.0);
    }
    /* stretched 2x in time: identified (DTW 0), variation (N - 1) / (2N - 1) */
    for (int i = 0; i < SET; i++) {
        for (int t = 0; t < 2 * frames[i]; t++)
            memcpy(gen + i * stride + (size_t)t * NB, truth + i * stride + (size_t)(t / 2) * NB, NB * sizeof(float));
        u[i].gen_frames = 2 * frames[i];
        const double v = tandem_speak_flux(gen + i * stride, 2 * frames[i], NB) /
                         tandem_speak_flux(truth + i * stride, frames[i], NB);
        assert_true(fabs(v - (frames[i] - 1.0) / (2.0 * frames[i] - 1.0)) < 1e-9);
    }
    tandem_speak_identify(gen, truth, stride, SET, frames, row, u);
    tandem_speak_eval_summarize(u, SET, &s);
    assert_int_equal(s.identified, SET);
    /* fewer than two frames: no change to measure */
    assert_true(tandem_speak_flux(truth, 1, NB) == 0.0);
}

/* The teacher-forced figures behind the text-dependence ratio, on a small random model (d 16,
 * r 2, max_text 16, max_frames 16; test/synth_checkpoint.h) and a true mel of 11 frames (the last
 * group half real): with the other text equal to its own, the two L1s are the same number; with
 * a longer other text they differ; rows of the truth past its length (garbage here) change
 * nothing, and tf_l1 is the mean |prediction - truth| over the real frames only. */
static void test_teacher_forced_pairs(void **state) {
    (void)state;
    char dir[256], path[512];
    assert_int_equal(tandem_test_mkdtemp(dir, sizeof dir, "speak_eval"), 0);
    model_file mf;
    synth_ckpt_make(&mf, g_seed);
    if (mf.n_params < 1) { /* (also tells the compiler the table's size is positive) */
        fail_msg("no parameters in the model table");
        return;
    }
    synth_ckpt_write(&mf, dir, path, sizeof path);
    tandem_synth_options o;
    tandem_synth_options_init(&o);
    o.backend = tandem_test_backend();
    o.gl_iters = 0;
    tandem_synth *s = NULL;
    assert_int_equal(tandem_synth_open(path, &o, &s), TANDEM_OK);
    int32_t own[16], other[16];
    int n_own = 0, n_other = 0;
    assert_int_equal(tandem_synth_encode(s, "ab", 2, -1, own, &n_own, NULL), TANDEM_OK);
    assert_int_equal(tandem_synth_encode(s, "a longer", 8, -1, other, &n_other, NULL), TANDEM_OK);
    enum { F = 16, FRAMES = 11 };
    static float truth[F * NB], pred[F * NB];
    float *scratch = malloc(tandem_speak_eval_scratch_floats(F) * sizeof(float));
    assert_non_null(scratch);
    tandem_rng r = {g_seed + 1};
    random_mel(&r, truth, F);
    tandem_speak_utt same, pair, pair2;
    assert_int_equal(tandem_speak_eval_utt(s, own, n_own, own, n_own, truth, FRAMES, scratch, NULL,
                                           &same), TANDEM_OK);
    assert_true(same.tf_l1 > 0 && same.tf_l1_other == same.tf_l1);
    assert_int_equal(tandem_speak_eval_utt(s, own, n_own, other, n_other, truth, FRAMES, scratch,
                                           NULL, &pair), TANDEM_OK);
    assert_true(pair.tf_l1 == same.tf_l1);
    assert_true(pair.tf_l1_other > 0 && pair.tf_l1_other != pair.tf_l1);
    for (int i = FRAMES * NB; i < F * NB; i++) truth[i] = 1000.0f; /* past the length */
    assert_int_equal(tandem_speak_eval_utt(s, own, n_own, other, n_other, truth, FRAMES, scratch,
                                           NULL, &pair2), TANDEM_OK);
    assert_true(pair2.tf_l1 == pair.tf_l1 && pair2.tf_l1_other == pair.tf_l1_other);
    assert_int_equal(tandem_synth_teacher_forced_ids(s, own, n_own, truth, FRAMES, pred), TANDEM_OK);
    double l1 = 0;
    for (int i = 0; i < FRAMES * NB; i++) l1 += fabs((double)pred[i] - truth[i]);
    assert_true(fabs(l1 / (FRAMES * NB) - pair.tf_l1) <= 1e-12 * pair.tf_l1);
    print_message("  own text L1 %.4f, other text L1 %.4f\n", pair.tf_l1, pair.tf_l1_other);
    free(scratch);
    tandem_synth_close(s);
    synth_ckpt_free(&mf);
    tandem_test_rmtree(dir);
}

int main(void) {
    g_seed = tandem_test_seed("test_speak_eval");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtw_identities),
        cmocka_unit_test(test_dtw_brute_force),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_identify_and_variation),
        cmocka_unit_test(test_teacher_forced_pairs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
