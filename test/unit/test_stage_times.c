/* test_stage_times.c — per-stage time accounting (runtime/data/stage_times.h):
 *   - random times added from several threads at once: each stage's count, total, minimum and
 *     maximum equal the ones computed here from the same values (negative times count as 0,
 *     stages out of range are ignored, a stage never timed stays empty);
 *   - the table: a header and one line per stage in order, with the count, total, mean, min,
 *     max and share of wall time that the numbers give (read back from the text), "-" for
 *     stages never timed; the snprintf contract (the full length whatever the capacity, a cut
 *     table is a NUL-terminated prefix).
 * Seed printed; replay with TANDEM_TEST_SEED. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/data/stage_times.h"
#include "test/fixtures.h"

enum { THREADS = 4, PER_THREAD = 1000000 }; /* enough contention that unlocked adds lose some */

static const char *const names[TANDEM_STAGE_COUNT] = {"read", "decode", "resample", "H2D copy",
                                                      "feature kernels", "ring copy", "device resample",
                                                      "decode WAV", "decode FLAC", "decode Ogg",
                                                      "decode MP3", "decode other"};

static pthread_barrier_t start_together;

typedef struct adder {
    tandem_stage_times *t;
    uint64_t seed;
    int unused; /* a stage never timed */
} adder;

/* The k-th addition of a thread's sequence: a stage (-1 and COUNT: out of range) and a time;
 * negative times only on even stages, so odd ones keep a minimum above 0. */
static void draw(tandem_rng *r, int unused, int *stage, double *ms) {
    int s;
    do s = (int)tandem_rng_int(r, -1, TANDEM_STAGE_COUNT);
    while (s == unused);
    *stage = s;
    *ms = s % 2 == 0 && tandem_rng_int(r, 0, 9) == 0 ? -tandem_rng_uniform(r, 0, 1) : tandem_rng_uniform(r, 0.5f, 50);
}

static void *add_all(void *arg) {
    adder *a = arg;
    tandem_rng r = {a->seed};
    pthread_barrier_wait(&start_together);
    for (int i = 0; i < PER_THREAD; i++) {
        int s;
        double ms;
        draw(&r, a->unused, &s, &ms);
        tandem_stage_times_add(a->t, (tandem_stage)s, ms);
    }
    return NULL;
}

static void test_concurrent_adds(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_stage_times adds")};
    tandem_stage_times t;
    tandem_stage_times_init(&t);
    adder a[THREADS];
    const int unused = (int)tandem_rng_int(&r, 0, TANDEM_STAGE_COUNT - 1);
    pthread_t th[THREADS];
    assert_int_equal(pthread_barrier_init(&start_together, NULL, THREADS), 0);
    for (int k = 0; k < THREADS; k++) {
        a[k] = (adder){&t, tandem_rng_next(&r), unused};
        assert_int_equal(pthread_create(&th[k], NULL, add_all, &a[k]), 0);
    }
    /* meanwhile, the expectation from the same sequences */
    tandem_stage_stat want[TANDEM_STAGE_COUNT];
    memset(want, 0, sizeof want);
    for (int k = 0; k < THREADS; k++) {
        tandem_rng rk = {a[k].seed};
        for (int i = 0; i < PER_THREAD; i++) {
            int s;
            double ms;
            draw(&rk, unused, &s, &ms);
            if (s < 0 || s >= TANDEM_STAGE_COUNT) continue;
            const double v = ms < 0 ? 0 : ms;
            tandem_stage_stat *w = &want[s];
            w->min_ms = w->count == 0 ? v : fmin(w->min_ms, v);
            w->max_ms = fmax(w->max_ms, v);
            w->total_ms += v;
            w->count++;
        }
    }
    for (int k = 0; k < THREADS; k++) pthread_join(th[k], NULL);
    pthread_barrier_destroy(&start_together);
    tandem_stage_stat got[TANDEM_STAGE_COUNT];
    tandem_stage_times_get(&t, got);
    for (int s = 0; s < TANDEM_STAGE_COUNT; s++) {
        printf("%-16s %7llu adds (expected %7llu), total %.1f ms (expected %.1f), min %.4f, max %.3f\n",
               tandem_stage_name(s), (unsigned long long)got[s].count, (unsigned long long)want[s].count,
               got[s].total_ms, want[s].total_ms, got[s].min_ms, got[s].max_ms);
        assert_int_equal(got[s].count, want[s].count);
        assert_true(got[s].min_ms == want[s].min_ms);
        assert_true(got[s].max_ms == want[s].max_ms);
        /* the sum's order differs between threads: equal up to rounding */
        assert_true(fabs(got[s].total_ms - want[s].total_ms) <= 1e-9 * (1 + want[s].total_ms));
    }
    assert_int_equal(got[unused].count, 0);
    for (int s = 0; s < TANDEM_STAGE_COUNT; s++) assert_string_equal(tandem_stage_name(s), names[s]);
    assert_string_equal(tandem_stage_name(TANDEM_STAGE_COUNT), "?");
    /* the per-format decode stage from libsndfile's major format names */
    assert_int_equal(tandem_stage_decode_of("WAV (Microsoft) / Signed 16 bit PCM"), TANDEM_STAGE_DECODE_WAV);
    assert_int_equal(tandem_stage_decode_of("WAVEX (Microsoft) / 32 bit float"), TANDEM_STAGE_DECODE_WAV);
    assert_int_equal(tandem_stage_decode_of("FLAC (Free Lossless Audio Codec) / Signed 16 bit PCM"), TANDEM_STAGE_DECODE_FLAC);
    assert_int_equal(tandem_stage_decode_of("OGG (OGG Container format) / Opus"), TANDEM_STAGE_DECODE_OGG);
    assert_int_equal(tandem_stage_decode_of("MPEG-1/2 Audio / MPEG Layer III"), TANDEM_STAGE_DECODE_MP3);
    assert_int_equal(tandem_stage_decode_of("AIFF (Apple/SGI) / Signed 16 bit PCM"), TANDEM_STAGE_DECODE_OTHER);
    assert_int_equal(tandem_stage_decode_of(NULL), TANDEM_STAGE_DECODE_OTHER);
    assert_string_equal(tandem_stage_name((tandem_stage)-1), "?");
    tandem_stage_times_destroy(&t);
}

/* The table read back: per stage, its name and six numbers (or the dashes). */
static void check_table(const char *text, const tandem_stage_stat *st, double wall_ms) {
    const char *line = strchr(text, '\n');
    assert_non_null(line);
    assert_non_null(strstr(text, "stage"));
    assert_true(strstr(text, "% wall") < line); /* the header comes first */
    for (int s = 0; s < TANDEM_STAGE_COUNT; s++) {
        const char *p = line + 1;
        line = strchr(p, '\n');
        assert_non_null(line);
        while (*p == ' ') p++;
        assert_memory_equal(p, names[s], strlen(names[s]));
        p += strlen(names[s]);
        if (st[s].count == 0) {
            unsigned long long n = 99;
            char dash[6][8];
            assert_int_equal(sscanf(p, "%llu %7s %7s %7s %7s %7s", &n, dash[0], dash[1], dash[2], dash[3], dash[4]),
                             6);
            assert_int_equal(n, 0);
            for (int k = 0; k < 5; k++) assert_string_equal(dash[k], "-");
            continue;
        }
        unsigned long long n = 0;
        double total, mean, mn, mx, share;
        assert_int_equal(sscanf(p, "%llu %lf %lf %lf %lf %lf%%", &n, &total, &mean, &mn, &mx, &share), 6);
        assert_int_equal(n, st[s].count);
        assert_true(fabs(total - st[s].total_ms) <= 0.05 + 1e-9 * total);      /* printed to 0.1 */
        assert_true(fabs(mean - st[s].total_ms / (double)st[s].count) <= 5e-4); /* printed to 0.001 */
        assert_true(fabs(mn - st[s].min_ms) <= 5e-4);
        assert_true(fabs(mx - st[s].max_ms) <= 5e-4);
        const double want_share = wall_ms > 0 ? 100.0 * st[s].total_ms / wall_ms : 0.0;
        assert_true(fabs(share - want_share) <= 0.05 + 1e-9 * want_share);
    }
    assert_string_equal(line + 1, ""); /* nothing after the last stage */
}

static void test_table(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_stage_times table")};
    for (int trial = 0; trial < 20; trial++) {
        tandem_stage_stat st[TANDEM_STAGE_COUNT];
        memset(st, 0, sizeof st);
        for (int s = 0; s < TANDEM_STAGE_COUNT; s++) {
            if (tandem_rng_int(&r, 0, 2) == 0) continue; /* never timed */
            st[s].count = (uint64_t)tandem_rng_int(&r, 1, 100000);
            st[s].min_ms = tandem_rng_uniform(&r, 0, 5);
            st[s].max_ms = st[s].min_ms + tandem_rng_uniform(&r, 0, 500);
            st[s].total_ms = (st[s].min_ms + st[s].max_ms) / 2 * (double)st[s].count;
        }
        const double wall = trial % 4 == 0 ? 0.0 : tandem_rng_uniform(&r, 1, 1e6);
        char full[2048];
        const size_t n = tandem_stage_times_format(st, wall, full, sizeof full);
        assert_int_equal(n, strlen(full));
        check_table(full, st, wall);
        /* snprintf contract: the whole length for any capacity, a NUL-terminated prefix */
        assert_int_equal(tandem_stage_times_format(st, wall, NULL, 0), n);
        const size_t cap = (size_t)tandem_rng_int(&r, 1, (int64_t)n + 10);
        char cut[2048];
        memset(cut, 'X', sizeof cut);
        assert_int_equal(tandem_stage_times_format(st, wall, cut, cap), n);
        const size_t kept = cap - 1 < n ? cap - 1 : n;
        assert_int_equal(cut[kept], '\0');
        assert_memory_equal(cut, full, kept);
        assert_int_equal(cut[cap], 'X'); /* nothing written past the capacity */
        if (trial == 0) printf("%s", full);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_adds),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
