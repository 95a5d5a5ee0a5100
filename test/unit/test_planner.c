/* test_planner.c — the arena placement algorithm on random item sets (many seeds) and on
 * small cases whose answer follows from the rules. Every property is checked independently of
 * the planner's own bookkeeping: overlaps by brute force over pairs, peaks from live sets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/mel.h" /* the feature chain's sizes in the overlay case */
#include "runtime/core/planner.h"
#include "test/testutil.h"

#define MAX_ITEMS 160

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

static int live_together(const tandem_plan_item *a, const tandem_plan_item *b) {
    if (a->lifetime == TANDEM_PERSISTENT || b->lifetime == TANDEM_PERSISTENT) return 1;
    return !(a->last_use < b->first_use || b->last_use < a->first_use);
}

/* Checks every property the planner promises for one item set. */
static void check_plan(const tandem_plan_item *it, int n, const size_t *off,
                       const tandem_plan_totals *t) {
    size_t m = 1, sum_step = 0, sum_pers_raw = 0, sum_pers_rounded = 0, sum_pers_padded = 0;
    int max_op = 0, uniform = 1;
    for (int i = 0; i < n; i++) {
        if (it[i].alignment > m) m = it[i].alignment;
        if (it[i].alignment != it[0].alignment) uniform = 0;
        if (it[i].lifetime == TANDEM_PER_STEP && it[i].last_use > max_op) max_op = it[i].last_use;
    }
    for (int i = 0; i < n; i++) {
        if (it[i].lifetime == TANDEM_PER_STEP) sum_step += round_up(it[i].size, m);
        else {
            sum_pers_raw += it[i].size;
            sum_pers_rounded += round_up(it[i].size, it[i].alignment);
            sum_pers_padded += it[i].size + it[i].alignment - 1;
        }
    }
    assert_int_equal(t->max_alignment, m);
    assert_int_equal(t->per_step_sum, sum_step);
    assert_int_equal(t->arena_bytes, t->persistent_bytes + t->per_step_peak);
    assert_true(t->per_step_peak <= t->per_step_sum);
    assert_int_equal(t->persistent_bytes % m, 0);
    assert_int_equal(t->per_step_peak % m, 0);
    /* persistent: no waste beyond alignment padding (exactly the rounded sizes when every
     * item has the same alignment, as in a real pool) */
    assert_true(t->persistent_bytes >= sum_pers_raw);
    assert_true(t->persistent_bytes <= round_up(sum_pers_padded, m));
    if (uniform) assert_int_equal(t->persistent_bytes, round_up(sum_pers_rounded, m));

    for (int i = 0; i < n; i++) {
        assert_int_equal(off[i] % it[i].alignment, 0);
        assert_true(off[i] + it[i].size <= t->arena_bytes);
        if (it[i].lifetime == TANDEM_PERSISTENT)
            assert_true(off[i] >= t->arena_bytes - t->persistent_bytes);
        else
            assert_true(off[i] + it[i].size <= t->per_step_peak);
    }
    /* no two simultaneously-live items share a byte; persistent items share with nobody */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (it[i].size == 0 || it[j].size == 0 || !live_together(&it[i], &it[j])) continue;
            int disjoint = off[i] + it[i].size <= off[j] || off[j] + it[j].size <= off[i];
            if (!disjoint)
                fail_msg("items %d [%zu,+%zu) and %d [%zu,+%zu) are live together and overlap",
                         i, off[i], it[i].size, j, off[j], it[j].size);
        }
    /* lower bound: at every op index the live per-step bytes must fit under the peak */
    for (int op = 0; op <= max_op; op++) {
        size_t live = 0;
        for (int i = 0; i < n; i++)
            if (it[i].lifetime == TANDEM_PER_STEP && it[i].first_use <= op && op <= it[i].last_use)
                live += it[i].size;
        assert_true(live <= t->per_step_peak);
    }
}

static void random_items(tandem_rng *r, tandem_plan_item *it, int n) {
    static const size_t aligns[] = {64, 256};
    size_t align = aligns[tandem_rng_int(r, 0, 1)];
    int mixed = tandem_rng_int(r, 0, 3) == 0; /* sometimes mix alignments in one set */
    int ops = (int)tandem_rng_int(r, 1, 40);
    for (int i = 0; i < n; i++) {
        it[i].alignment = mixed ? ((size_t)1 << tandem_rng_int(r, 0, 9)) : align;
        /* sizes from tiny to ~1 MiB, some exact multiples of the alignment, a few zeros */
        int shape = (int)tandem_rng_int(r, 0, 9);
        if (shape == 0) it[i].size = 0;
        else if (shape < 4) it[i].size = (size_t)tandem_rng_int(r, 1, 300);
        else if (shape < 7) it[i].size = align * (size_t)tandem_rng_int(r, 1, 64);
        else it[i].size = (size_t)tandem_rng_int(r, 1, 1 << 20);
        it[i].lifetime = tandem_rng_int(r, 0, 3) == 0 ? TANDEM_PERSISTENT : TANDEM_PER_STEP;
        int a = (int)tandem_rng_int(r, 0, ops - 1), b = (int)tandem_rng_int(r, 0, ops - 1);
        it[i].first_use = a < b ? a : b;
        it[i].last_use = a < b ? b : a;
    }
}

static void test_random_sets(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_planner random sets")};
    static tandem_plan_item it[MAX_ITEMS];
    static size_t off[MAX_ITEMS], off2[MAX_ITEMS];
    static int scratch[TANDEM_PLANNER_SCRATCH_INTS(MAX_ITEMS)];
    for (int round = 0; round < 400; round++) {
        int n = (int)tandem_rng_int(&r, 0, MAX_ITEMS);
        random_items(&r, it, n);
        tandem_plan_totals t, t2;
        assert_int_equal(tandem_planner_place(it, n, off, scratch, &t), TANDEM_OK);
        check_plan(it, n, off, &t);
        /* deterministic: same input, same answer (scratch reused dirty on purpose) */
        assert_int_equal(tandem_planner_place(it, n, off2, scratch, &t2), TANDEM_OK);
        assert_memory_equal(&t, &t2, sizeof t);
        if (n) assert_memory_equal(off, off2, (size_t)n * sizeof off[0]);
    }
}

/* Items whose intervals are pairwise disjoint all fit in the largest one's bytes. */
static void test_disjoint_share(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_planner disjoint")};
    tandem_plan_item it[12];
    size_t off[12];
    int scratch[TANDEM_PLANNER_SCRATCH_INTS(12)];
    for (int round = 0; round < 50; round++) {
        size_t biggest = 0;
        for (int i = 0; i < 12; i++) {
            it[i] = (tandem_plan_item){.size = (size_t)tandem_rng_int(&r, 1, 100000),
                                       .alignment = 256, .lifetime = TANDEM_PER_STEP,
                                       .first_use = 2 * i, .last_use = 2 * i + 1};
            if (it[i].size > biggest) biggest = it[i].size;
        }
        tandem_plan_totals t;
        assert_int_equal(tandem_planner_place(it, 12, off, scratch, &t), TANDEM_OK);
        check_plan(it, 12, off, &t);
        for (int i = 0; i < 12; i++) assert_int_equal(off[i], 0);
        assert_int_equal(t.per_step_peak, round_up(biggest, 256));
    }
}

/* A chain a→b→c (each op reads the previous result): a and c may share, b may not. The
 * feature pipeline on the data device looks like this. */
static void test_chain(void **state) {
    (void)state;
    const size_t f = 8 * 512 * TANDEM_MEL_N_FFT * 4, s = 8 * 512 * TANDEM_MEL_N_BINS * 4,
                 m = 8 * 512 * TANDEM_MEL_N_MELS * 4;
    tandem_plan_item it[3] = {
        {.size = f, .alignment = 256, .lifetime = TANDEM_PER_STEP, .first_use = 0, .last_use = 1},
        {.size = s, .alignment = 256, .lifetime = TANDEM_PER_STEP, .first_use = 1, .last_use = 2},
        {.size = m, .alignment = 256, .lifetime = TANDEM_PER_STEP, .first_use = 2, .last_use = 3},
    };
    size_t off[3];
    int scratch[TANDEM_PLANNER_SCRATCH_INTS(3)];
    tandem_plan_totals t;
    assert_int_equal(tandem_planner_place(it, 3, off, scratch, &t), TANDEM_OK);
    check_plan(it, 3, off, &t);
    assert_int_equal(t.per_step_peak, f + s); /* = the largest live set, so optimal here */
    assert_int_equal(t.per_step_sum, f + s + m);
}

/* Persistent items stack down from the top in the order given, and per-step ones start at 0. */
static void test_persistent_top(void **state) {
    (void)state;
    tandem_plan_item it[4] = {
        {.size = 1000, .alignment = 64, .lifetime = TANDEM_PERSISTENT},
        {.size = 5000, .alignment = 64, .lifetime = TANDEM_PER_STEP, .first_use = 0, .last_use = 0},
        {.size = 64, .alignment = 64, .lifetime = TANDEM_PERSISTENT},
        {.size = 1, .alignment = 64, .lifetime = TANDEM_PERSISTENT},
    };
    size_t off[4];
    int scratch[TANDEM_PLANNER_SCRATCH_INTS(4)];
    tandem_plan_totals t;
    assert_int_equal(tandem_planner_place(it, 4, off, scratch, &t), TANDEM_OK);
    check_plan(it, 4, off, &t);
    assert_int_equal(off[1], 0);
    assert_int_equal(t.persistent_bytes, round_up(1000, 64) + 64 + 64);
    assert_int_equal(off[0], t.arena_bytes - round_up(1000, 64));
    assert_true(off[2] < off[0] && off[3] < off[2]);
}

static void test_empty_and_overflow(void **state) {
    (void)state;
    tandem_plan_totals t;
    assert_int_equal(tandem_planner_place(NULL, 0, NULL, NULL, &t), TANDEM_OK);
    assert_int_equal(t.arena_bytes, 0);
    assert_int_equal(t.max_alignment, 1);

    tandem_plan_item it[2] = {
        {.size = SIZE_MAX / 2 + 1, .alignment = 64, .lifetime = TANDEM_PERSISTENT},
        {.size = SIZE_MAX / 2 + 1, .alignment = 64, .lifetime = TANDEM_PERSISTENT},
    };
    size_t off[2];
    int scratch[TANDEM_PLANNER_SCRATCH_INTS(2)];
    assert_int_equal(tandem_planner_place(it, 2, off, scratch, &t), TANDEM_E_INVALID);
    it[0].lifetime = it[1].lifetime = TANDEM_PER_STEP;
    assert_int_equal(tandem_planner_place(it, 2, off, scratch, &t), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "per-step"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_sets),       cmocka_unit_test(test_disjoint_share),
        cmocka_unit_test(test_chain),             cmocka_unit_test(test_persistent_top),
        cmocka_unit_test(test_empty_and_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
