/* planner.c — arena placement (see planner.h for the layout and the rules). */
#include "runtime/core/planner.h"

#include <assert.h>
#include <stdint.h>

#include "platform/os/log.h"

static int is_pow2(size_t a) { return a != 0 && (a & (a - 1)) == 0; }

/* Round x up to a multiple of a (power of two); 0 when that would overflow. */
static int align_up(size_t x, size_t a, size_t *out) {
    if (x > SIZE_MAX - (a - 1)) return 0;
    *out = (x + (a - 1)) & ~(a - 1);
    return 1;
}

static int add_ok(size_t a, size_t b, size_t *out) {
    if (a > SIZE_MAX - b) return 0;
    *out = a + b;
    return 1;
}

/* Per-step placement order: largest first, then lower index (a total order → deterministic). */
static int comes_before(const tandem_plan_item *items, int a, int b) {
    if (items[a].size != items[b].size) return items[a].size > items[b].size;
    return a < b;
}

/* In-place heap sort of idx[0..n) by comes_before; no allocation (qsort may allocate). */
static void sift_down(const tandem_plan_item *items, int *idx, int root, int n) {
    for (;;) {
        int child = 2 * root + 1;
        if (child >= n) return;
        if (child + 1 < n && comes_before(items, idx[child], idx[child + 1])) child++;
        if (!comes_before(items, idx[root], idx[child])) return;
        int t = idx[root];
        idx[root] = idx[child];
        idx[child] = t;
        root = child;
    }
}

static void sort_order(const tandem_plan_item *items, int *idx, int n) {
    for (int i = n / 2 - 1; i >= 0; i--) sift_down(items, idx, i, n);
    for (int end = n - 1; end > 0; end--) {
        int t = idx[0];
        idx[0] = idx[end];
        idx[end] = t;
        sift_down(items, idx, 0, end);
    }
}

static int live_together(const tandem_plan_item *a, const tandem_plan_item *b) {
    return a->first_use <= b->last_use && b->first_use <= a->last_use;
}

/* The largest alignment (both regions are rounded to it); checks each item's invariants. */
static size_t max_alignment(const tandem_plan_item *items, int n) {
    size_t m = 1;
    for (int i = 0; i < n; i++) {
        assert(is_pow2(items[i].alignment));
        assert(items[i].lifetime == TANDEM_PERSISTENT || items[i].lifetime == TANDEM_PER_STEP);
        assert(items[i].lifetime == TANDEM_PERSISTENT || items[i].first_use <= items[i].last_use);
        if (items[i].alignment > m) m = items[i].alignment;
    }
    return m;
}

/* Lists the per-step items in order[0..*n_step) and sums them, each rounded to m: the sum bounds
 * every per-step end (see place_per_step), so once it fits in size_t no offset arithmetic there
 * can overflow. */
static tandem_status collect_per_step(const tandem_plan_item *items, int n, size_t m, int *order,
                                      int *n_step, size_t *sum) {
    *sum = 0;
    *n_step = 0;
    for (int i = 0; i < n; i++) {
        if (items[i].lifetime != TANDEM_PER_STEP) continue;
        size_t r;
        if (!align_up(items[i].size, m, &r) || !add_ok(*sum, r, sum))
            return tandem_fail(TANDEM_E_INVALID,
                               "memory plan: per-step tensors total more than %zu bytes "
                               "(item %d is %zu bytes)", (size_t)SIZE_MAX, i, items[i].size);
        order[(*n_step)++] = i;
    }
    return TANDEM_OK;
}

/* Greedy: each item of order[0..n_step) goes to the lowest aligned gap between the already placed
 * items it is live together with. `placed` is kept sorted by offset so one pass finds the gap.
 * Every candidate is <= the end of some placed item or 0, so ends stay <= sum. Returns the peak. */
static size_t place_per_step(const tandem_plan_item *items, const int *order, int n_step, int *placed,
                             size_t *offsets) {
    size_t peak = 0;
    int n_placed = 0;
    for (int k = 0; k < n_step; k++) {
        int i = order[k];
        const tandem_plan_item *it = &items[i];
        size_t cand = 0, off = 0;
        for (int p = 0; p < n_placed; p++) {
            const tandem_plan_item *q = &items[placed[p]];
            if (q->size == 0 || !live_together(it, q)) continue;
            align_up(cand, it->alignment, &off);
            if (off + it->size <= offsets[placed[p]]) break;
            size_t q_end = offsets[placed[p]] + q->size;
            if (q_end > cand) cand = q_end;
        }
        align_up(cand, it->alignment, &off);
        offsets[i] = off;
        if (off + it->size > peak) peak = off + it->size;
        /* insert into `placed`, keeping offset order (ties: insertion order) */
        int pos = n_placed;
        while (pos > 0 && offsets[placed[pos - 1]] > off) {
            placed[pos] = placed[pos - 1];
            pos--;
        }
        placed[pos] = i;
        n_placed++;
    }
    return peak;
}

/* Persistent items stack down from the top of the arena, above the per-step region of peak_r
 * bytes: distance from the top first, converted to offsets once the arena size is known. */
static tandem_status place_persistent(const tandem_plan_item *items, int n, size_t m, size_t peak_r,
                                      size_t *offsets, size_t *pers, size_t *arena) {
    size_t top = 0;
    for (int i = 0; i < n; i++) {
        if (items[i].lifetime != TANDEM_PERSISTENT) continue;
        if (!add_ok(top, items[i].size, &top) || !align_up(top, items[i].alignment, &top))
            return tandem_fail(TANDEM_E_INVALID,
                               "memory plan: persistent tensors total more than %zu bytes "
                               "(item %d is %zu bytes)", (size_t)SIZE_MAX, i, items[i].size);
        offsets[i] = top;
    }
    *pers = 0;
    *arena = 0;
    if (!align_up(top, m, pers) || !add_ok(*pers, peak_r, arena))
        return tandem_fail(TANDEM_E_INVALID, "memory plan: arena larger than %zu bytes",
                           (size_t)SIZE_MAX);
    for (int i = 0; i < n; i++)
        if (items[i].lifetime == TANDEM_PERSISTENT) offsets[i] = *arena - offsets[i];
    return TANDEM_OK;
}

tandem_status tandem_planner_place(const tandem_plan_item *items, int n, size_t *offsets,
                                   int *scratch, tandem_plan_totals *out) {
    assert(n >= 0 && out && (n == 0 || (items && offsets && scratch)));
    *out = (tandem_plan_totals){.max_alignment = 1};
    size_t m = max_alignment(items, n);
    int *order = scratch, *placed = scratch + n;
    int n_step = 0;
    size_t sum = 0;
    TANDEM_TRY(collect_per_step(items, n, m, order, &n_step, &sum));
    sort_order(items, order, n_step);
    size_t peak = place_per_step(items, order, n_step, placed, offsets);
    size_t peak_r = peak;
    align_up(peak, m, &peak_r); /* peak <= sum, a multiple of m: cannot overflow */
    size_t pers = 0, arena = 0;
    TANDEM_TRY(place_persistent(items, n, m, peak_r, offsets, &pers, &arena));
    out->persistent_bytes = pers;
    out->per_step_peak = peak_r;
    out->per_step_sum = sum;
    out->arena_bytes = arena;
    out->max_alignment = m;
    return TANDEM_OK;
}
