/* planner.h — the arena placement algorithm (DESIGN.md §4), pure: no device, no allocation.
 *
 * Input: items {size, alignment, lifetime class, first/last use}. Output: a byte offset for
 * each item inside one arena, and the arena's totals.
 *
 *   arena:  [ per-step region (overlaid)          | ...          | persistent (top down) ]
 *           0                              per_step_peak     arena - persistent     arena
 *
 * * Persistent items are stacked from the TOP of the arena downwards in the order given
 *   (declaration order keeps related tensors, e.g. one ring slot, next to each other).
 * * Per-step items are overlaid at the BOTTOM: largest first (ties: lower index first), each
 *   at the lowest aligned offset that does not overlap any already placed per-step item whose
 *   live interval [first_use, last_use] intersects its own. Two per-step items may therefore
 *   share bytes only when their intervals are disjoint.
 * * Offsets are multiples of each item's alignment (a power of two; 256 B on devices, 64 B on
 *   the host — the caller decides). Both regions are rounded up to the largest alignment M of
 *   all items, so arena_bytes = persistent_bytes + per_step_peak exactly, and an arena base
 *   aligned to M keeps every address aligned.
 *
 * Owns nothing: the caller passes the output array and the scratch (see
 * TANDEM_PLANNER_SCRATCH_INTS), so the planner can run anywhere, including before any device
 * exists (`tandem plan`). Deterministic: equal inputs give equal outputs.
 */
#ifndef TANDEM_RUNTIME_PLANNER_H
#define TANDEM_RUNTIME_PLANNER_H

#include <stddef.h>

#include "tandem.h"

typedef struct tandem_plan_item {
    size_t size;              /* bytes (0 allowed: occupies nothing) */
    size_t alignment;         /* power of two */
    tandem_lifetime lifetime; /* TANDEM_PERSISTENT or TANDEM_PER_STEP */
    int first_use, last_use;  /* per-step only: inclusive op indices, first <= last */
} tandem_plan_item;

typedef struct tandem_plan_totals {
    size_t persistent_bytes; /* persistent region, rounded up to the largest alignment */
    size_t per_step_peak;    /* per-step region (highest end of a per-step item), rounded up */
    size_t per_step_sum;     /* per-step items without overlaying, each rounded up likewise */
    size_t arena_bytes;      /* persistent_bytes + per_step_peak */
    size_t max_alignment;    /* the arena base must be aligned to this (1 when no items) */
} tandem_plan_totals;

/* Ints of scratch the caller passes for n items. */
#define TANDEM_PLANNER_SCRATCH_INTS(n) (2 * (size_t)(n))

/* Place n items: offsets[i] receives item i's byte offset. scratch holds
 * TANDEM_PLANNER_SCRATCH_INTS(n) ints. Fails (TANDEM_E_INVALID) only when a total would not fit
 * in size_t; malformed items (alignment not a power of two, first > last) are programming
 * errors and assert. */
tandem_status tandem_planner_place(const tandem_plan_item *items, int n, size_t *offsets,
                                   int *scratch, tandem_plan_totals *out);

#endif
