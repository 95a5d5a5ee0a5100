/* test_sampler.c — the order of training utterances (runtime/data/sampler.h):
 *   - every epoch is a permutation of the items; the same seed gives the same stream, another
 *     seed and another epoch a different one; set_pos anywhere continues the stream exactly;
 *     shuffling off gives index order (the contract, on random item counts);
 *   - the permutations are uniform: over many seeds each of the 4! orders of four items, and
 *     each pair (first item of epoch e, first item of epoch e + 1), appears as often as chance
 *     says (chi-square at p < 1e-6, so a correct sampler fails once in a million runs);
 *   - the items are copied at init, next and set_pos allocate nothing, get_pos counts, and bad
 *     arguments are refused.
 *   - bucketing (runtime/data/buckets.h): every item exactly once per epoch, each batch of one
 *     class whose frame count holds all its items, classes only from the fixed set, set_pos
 *     restores the same remaining batches, next/set_pos allocate nothing, one class = one shape,
 *     and the chosen classes raise the real-frame fraction.
 * Seed printed; replay with TANDEM_TEST_SEED. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "platform/os/os.h"
#include "runtime/data/buckets.h"
#include "runtime/data/sampler.h"
#include "test/fixtures.h"

/* ---- the contract: permutations, determinism, seeds, resume, index order ---------------------- */

static void test_sampler(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_sampler contract")};
    uint32_t items[50];
    const uint32_t n = (uint32_t)tandem_rng_int(&r, 2, 50);
    for (uint32_t i = 0; i < n; i++) items[i] = 1000 + 3 * i;
    const uint64_t seed = tandem_rng_next(&r);
    tandem_sampler a, b, other;
    assert_int_equal(tandem_sampler_init(&a, items, n, seed, 1), TANDEM_OK);
    assert_int_equal(tandem_sampler_init(&b, items, n, seed, 1), TANDEM_OK);
    assert_int_equal(tandem_sampler_init(&other, items, n, seed + 1, 1), TANDEM_OK);
    uint32_t seq[4][50];
    int differs_seed = 0;
    for (int e = 0; e < 4; e++) {
        int seen[50] = {0};
        for (uint32_t i = 0; i < n; i++) {
            tandem_sampler_pos at;
            seq[e][i] = tandem_sampler_next(&a, &at);
            assert_int_equal(at.epoch, e);
            assert_int_equal(at.index, i);
            assert_int_equal(tandem_sampler_next(&b, NULL), seq[e][i]); /* deterministic */
            differs_seed |= tandem_sampler_next(&other, NULL) != seq[e][i];
            assert_true(seq[e][i] >= 1000 && (seq[e][i] - 1000) % 3 == 0);
            seen[(seq[e][i] - 1000) / 3]++;
        }
        for (uint32_t i = 0; i < n; i++) assert_int_equal(seen[i], 1); /* a permutation */
    }
    /* epochs and seeds give different orders (n >= 5: a collision has probability <= 1/120) */
    if (n >= 5) {
        assert_true(differs_seed);
        assert_true(memcmp(seq[0], seq[1], n * sizeof(uint32_t)) || memcmp(seq[1], seq[2], n * sizeof(uint32_t)));
    }
    /* resume anywhere: the stream continues exactly */
    for (int trial = 0; trial < 20; trial++) {
        tandem_sampler_pos pos = {tandem_rng_int(&r, 0, 3), tandem_rng_int(&r, 0, n - 1)};
        tandem_sampler c;
        assert_int_equal(tandem_sampler_init(&c, items, n, seed, 1), TANDEM_OK);
        assert_int_equal(tandem_sampler_set_pos(&c, pos), TANDEM_OK);
        for (int64_t e = pos.epoch, i = pos.index; e < 4; i = 0, e++)
            for (; i < n; i++) assert_int_equal(tandem_sampler_next(&c, NULL), seq[e][i]);
        tandem_sampler_free(&c);
    }
    tandem_sampler_pos bad = {0, n};
    assert_int_equal(tandem_sampler_set_pos(&a, bad), TANDEM_E_INVALID);
    /* shuffle off: index order */
    tandem_sampler plain;
    assert_int_equal(tandem_sampler_init(&plain, items, n, seed, 0), TANDEM_OK);
    for (uint32_t i = 0; i < 2 * n; i++) assert_int_equal(tandem_sampler_next(&plain, NULL), items[i % n]);
    tandem_sampler_free(&plain);
    tandem_sampler_free(&a);
    tandem_sampler_free(&b);
    tandem_sampler_free(&other);
}

/* ---- uniformity ---------------------------------------------------------------------------- */

/* Index of the permutation p of {0,1,2,3} in [0, 24) (Lehmer code). */
static int perm_index(const uint32_t p[4]) {
    int idx = 0;
    for (int i = 0; i < 4; i++) {
        int smaller = 0;
        for (int j = i + 1; j < 4; j++) smaller += p[j] < p[i];
        idx = idx * (4 - i) + smaller;
    }
    return idx;
}

/* Pearson's statistic of counts against equal expectations. */
static double chi_square(const int *count, int cells, int total) {
    const double e = (double)total / cells;
    double x2 = 0;
    for (int k = 0; k < cells; k++) x2 += (count[k] - e) * (count[k] - e) / e;
    return x2;
}

static void test_uniform_permutations(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_sampler uniformity")};
    enum { SEEDS = 24000 };
    static const uint32_t items[4] = {0, 1, 2, 3};
    int perms[24] = {0}, pairs[16] = {0};
    for (int k = 0; k < SEEDS; k++) {
        tandem_sampler s;
        CHECK(tandem_sampler_init(&s, items, 4, tandem_rng_next(&r), 1));
        uint32_t e0[4], e1[4];
        for (int i = 0; i < 4; i++) e0[i] = tandem_sampler_next(&s, NULL);
        for (int i = 0; i < 4; i++) e1[i] = tandem_sampler_next(&s, NULL);
        perms[perm_index(e0)]++;
        pairs[e0[0] * 4 + e1[0]]++;
        tandem_sampler_free(&s);
    }
    /* chi-square quantiles at 1 - 1e-6: 23 degrees of freedom 70.5, 15 degrees 56.5 */
    const double x_perm = chi_square(perms, 24, SEEDS), x_pair = chi_square(pairs, 16, SEEDS);
    printf("%d seeds: chi-square %.1f over the 24 orders (limit 70.5), %.1f over epoch pairs (limit 56.5)\n",
           SEEDS, x_perm, x_pair);
    assert_true(x_perm < 70.5);
    assert_true(x_pair < 56.5);
}

/* ---- ownership, allocation, positions, arguments ------------------------------------------- */

static void test_copies_and_positions(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_sampler positions")};
    const uint32_t n = (uint32_t)tandem_rng_int(&r, 1, 40);
    uint32_t items[40], saved[40];
    for (uint32_t i = 0; i < n; i++) items[i] = saved[i] = (uint32_t)tandem_rng_next(&r);
    const uint64_t seed = tandem_rng_next(&r);
    tandem_sampler s, t;
    CHECK(tandem_sampler_init(&s, items, n, seed, 1));
    for (uint32_t i = 0; i < n; i++) items[i] = 0xdeadbeef; /* the caller's array is not used after init */
    CHECK(tandem_sampler_init(&t, saved, n, seed, 1));
    const uint64_t allocs = tandem_alloc_count();
    for (int64_t k = 0; k < 5 * (int64_t)n + 3; k++) {
        tandem_sampler_pos p = tandem_sampler_get_pos(&s), at;
        assert_int_equal(p.epoch, k / n);
        assert_int_equal(p.index, k % n);
        const uint32_t v = tandem_sampler_next(&s, &at);
        assert_int_equal(at.epoch, p.epoch);
        assert_int_equal(at.index, p.index);
        assert_int_equal(v, tandem_sampler_next(&t, NULL));
    }
    tandem_sampler_pos far = {tandem_rng_int(&r, 0, 1000), tandem_rng_int(&r, 0, n - 1)};
    CHECK(tandem_sampler_set_pos(&s, far));
    CHECK(tandem_sampler_set_pos(&s, (tandem_sampler_pos){0, 0}));
    assert_int_equal(tandem_alloc_count(), allocs); /* next and set_pos allocate nothing */
    /* bad positions leave the position alone */
    CHECK(tandem_sampler_set_pos(&s, far));
    assert_int_equal(tandem_sampler_set_pos(&s, (tandem_sampler_pos){-1, 0}), TANDEM_E_INVALID);
    assert_int_equal(tandem_sampler_set_pos(&s, (tandem_sampler_pos){0, -1}), TANDEM_E_INVALID);
    assert_int_equal(tandem_sampler_set_pos(&s, (tandem_sampler_pos){0, n}), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "sampler position"));
    tandem_sampler_pos p = tandem_sampler_get_pos(&s);
    assert_int_equal(p.epoch, far.epoch);
    assert_int_equal(p.index, far.index);
    tandem_sampler_free(&s);
    tandem_sampler_free(&t);
    tandem_sampler_free(&t); /* freeing twice is harmless */
    assert_int_equal(tandem_sampler_init(&s, saved, 0, seed, 1), TANDEM_E_INVALID);
    assert_int_equal(tandem_sampler_init(&s, NULL, n, seed, 1), TANDEM_E_INVALID);
    assert_int_equal(tandem_sampler_init(NULL, saved, n, seed, 1), TANDEM_E_INVALID);
}

/* ---- bucketing ------------------------------------------------------------------------------ */

static void check_bucket_epoch(tandem_bucket_sampler *s, const uint32_t *len, uint32_t n, uint32_t batch,
                               const uint32_t *frames, uint32_t k, int64_t epoch, uint32_t *trace) {
    int seen[300] = {0};
    uint32_t out[16], cls, total = 0, nb = s->nbatch;
    for (uint32_t b = 0; b < nb; b++) {
        tandem_sampler_pos at;
        uint32_t real = tandem_bucket_sampler_next(s, out, &cls, &at);
        assert_int_equal(at.epoch, epoch);
        assert_int_equal(at.index, b);
        assert_true(cls < k);
        assert_true(real >= 1 && real <= batch);
        if (real < batch) assert_int_equal(cls, k - 1); /* only the largest class's remainder is short */
        for (uint32_t r = 0; r < batch; r++) {
            assert_true(len[out[r]] <= frames[cls]); /* the class's shape holds the item */
            if (r < real) seen[out[r]]++;
            if (trace) trace[total + r] = out[r] * 16 + cls;
        }
        total += real;
    }
    assert_int_equal(total, n);
    for (uint32_t i = 0; i < n; i++) assert_int_equal(seen[i], 1); /* exactly once per epoch */
}

static void test_buckets(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_sampler buckets")};
    uint32_t len[300], items[300], frames[TANDEM_BUCKETS_MAX], k;
    const uint32_t n = (uint32_t)tandem_rng_int(&r, 1, 300), batch = (uint32_t)tandem_rng_int(&r, 1, 16);
    for (uint32_t i = 0; i < n; i++) {
        items[i] = i;
        len[i] = (uint32_t)tandem_rng_int(&r, 40, 512);
    }
    assert_int_equal(tandem_buckets_choose(len, n, 3, 512, 8, frames, &k), TANDEM_OK);
    assert_true(k >= 1 && k <= 3);
    for (uint32_t c = 0; c < k; c++) assert_true(frames[c] % 8 == 0 && frames[c] <= 512 && (!c || frames[c] > frames[c - 1]));
    uint32_t one[1] = {512}, k1;
    assert_int_equal(tandem_buckets_choose(len, n, 1, 512, 8, frames + 4, &k1), TANDEM_OK);
    assert_true(k1 == 1 && frames[4] == 512); /* buckets: 1 = today's one shape */
    assert_true(tandem_buckets_real_fraction(len, n, frames, k) >= tandem_buckets_real_fraction(len, n, one, 1));

    const uint64_t seed = tandem_rng_next(&r);
    tandem_bucket_sampler a, b;
    assert_int_equal(tandem_bucket_sampler_init(&a, items, len, n, frames, k, batch, seed, 1), TANDEM_OK);
    assert_int_equal(tandem_bucket_sampler_init(&b, items, len, n, frames, k, batch, seed, 1), TANDEM_OK);
    static uint32_t trace[3][300 + 16];
    const uint64_t allocs = tandem_alloc_count();
    for (int e = 0; e < 3; e++) check_bucket_epoch(&a, len, n, batch, frames, k, e, trace[e]);
    /* resume anywhere in epoch 1: the same remaining batches */
    const uint32_t at = (uint32_t)tandem_rng_int(&r, 0, (int64_t)b.nbatch - 1);
    uint32_t skipped = 0, out[16], cls;
    tandem_bucket_sampler_set_pos(&b, (tandem_sampler_pos){1, 0});
    for (uint32_t i = 0; i < at; i++) skipped += tandem_bucket_sampler_next(&b, out, &cls, NULL);
    assert_int_equal(tandem_bucket_sampler_set_pos(&b, (tandem_sampler_pos){0, 0}), TANDEM_OK);
    assert_int_equal(tandem_bucket_sampler_set_pos(&b, (tandem_sampler_pos){1, at}), TANDEM_OK);
    for (uint32_t i = at, w = skipped; i < b.nbatch; i++) {
        uint32_t real = tandem_bucket_sampler_next(&b, out, &cls, NULL);
        for (uint32_t q = 0; q < real; q++) assert_int_equal(out[q] * 16 + cls, trace[1][w + q]);
        w += real;
    }
    assert_int_equal(tandem_alloc_count(), allocs); /* next and set_pos allocate nothing */
    assert_int_equal(tandem_bucket_sampler_set_pos(&b, (tandem_sampler_pos){0, b.nbatch}), TANDEM_E_INVALID);
    tandem_bucket_sampler_free(&a);
    tandem_bucket_sampler_free(&b);
    /* an utterance longer than the largest class is refused; classes must ascend */
    uint32_t small[2] = {len[0] - 1, 600};
    assert_int_equal(tandem_bucket_sampler_init(&a, items, len, n, small, 1, batch, seed, 1), TANDEM_E_INVALID);
    uint32_t desc[2] = {512, 256};
    assert_int_equal(tandem_bucket_sampler_init(&a, items, len, n, desc, 2, batch, seed, 1), TANDEM_E_INVALID);
}

/* Data-parallel shards (tandem_sampler_shard): rank r of W hands out exactly runs r, r+W, ... of
 * chunk items of the unsharded stream, in order, across epoch boundaries, from a resumed
 * position too; together the ranks cover the stream once. */
static void test_shards(void **state) {
    (void)state;
    enum { N = 7, W = 3, CHUNK = 2, TAKE = 20 };
    uint32_t items[N];
    for (uint32_t i = 0; i < N; i++) items[i] = 100 + i;
    const tandem_sampler_pos starts[] = {{0, 0}, {2, 5}};
    for (int k = 0; k < 2; k++) {
        tandem_sampler all;
        CHECK(tandem_sampler_init(&all, items, N, 42, 1));
        CHECK(tandem_sampler_set_pos(&all, starts[k]));
        uint32_t ref[W * TAKE];
        tandem_sampler_pos ref_at[W * TAKE];
        for (int i = 0; i < W * TAKE; i++) ref[i] = tandem_sampler_next(&all, &ref_at[i]);
        tandem_sampler_free(&all);
        for (int r = 0; r < W; r++) {
            tandem_sampler sh;
            CHECK(tandem_sampler_init(&sh, items, N, 42, 1));
            CHECK(tandem_sampler_shard(&sh, W, r, CHUNK));
            CHECK(tandem_sampler_set_pos(&sh, starts[k]));
            for (int i = 0; i < TAKE; i++) {
                tandem_sampler_pos at;
                const uint32_t v = tandem_sampler_next(&sh, &at);
                const int g = (i / CHUNK * W + r) * CHUNK + i % CHUNK; /* its place in the stream */
                if (v != ref[g] || at.epoch != ref_at[g].epoch || at.index != ref_at[g].index)
                    fail_msg("start %d, rank %d, item %d: %u at (%lld, %lld); expected stream place %d: %u at "
                             "(%lld, %lld)", k, r, i, v, (long long)at.epoch, (long long)at.index, g, ref[g],
                             (long long)ref_at[g].epoch, (long long)ref_at[g].index);
            }
            tandem_sampler_free(&sh);
        }
    }
    tandem_sampler bad;
    CHECK(tandem_sampler_init(&bad, items, N, 42, 1));
    assert_int_equal(tandem_sampler_shard(&bad, 2, 2, 4), TANDEM_E_INVALID);
    assert_int_equal(tandem_sampler_shard(&bad, 2, 0, 0), TANDEM_E_INVALID);
    tandem_sampler_free(&bad);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampler),
        cmocka_unit_test(test_uniform_permutations),
        cmocka_unit_test(test_copies_and_positions),
        cmocka_unit_test(test_buckets),
        cmocka_unit_test(test_shards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
