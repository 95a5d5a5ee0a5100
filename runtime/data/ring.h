/* ring.h — the N-slot hand-off between the data device and the model device (DESIGN.md §6).
 *
 * The slots' tensors live in the model arena (plan_layout.h); this module owns the order and
 * the synchronisation around them:
 *   - a CPU-side state machine per slot, FREE → FILLING → READY → IN_USE → FREE, under one
 *     mutex + condvar, so each side blocks only when it must (the producer when no slot is
 *     free, the consumer when none is ready). Slots are filled and taken in sequence
 *     (batch n uses slot n mod N), so batches reach the consumer in the order produced;
 *   - two events per slot on the model device: "filled" (recorded by the data side after its
 *     copies into the slot were queued) and "free" (recorded by the consumer after its last
 *     use was queued). Device streams wait on them; the CPU never waits for device work here;
 *   - a shared status: the first error from either side (or a clean stop) wakes every waiter
 *     and makes every later claim/acquire return at once, so both sides end in bounded time;
 *   - measurements: time the consumer spent blocked in acquire, the time-weighted mean number
 *     of READY slots (occupancy), and events around the consumer stream's wait for a slot
 *     (tandem_ring_wait_filled: the device-side wait).
 * Owns: the events (created at init, before any pool is committed) and the mutex/condvar.
 */
#ifndef TANDEM_RUNTIME_RING_H
#define TANDEM_RUNTIME_RING_H

#include <stdint.h>

#include "runtime/core/config.h"
#include "platform/os/os.h"
#include "tandem.h"

typedef enum tandem_slot_state {
    TANDEM_SLOT_FREE = 0,
    TANDEM_SLOT_FILLING,
    TANDEM_SLOT_READY,
    TANDEM_SLOT_IN_USE,
} tandem_slot_state;

typedef struct tandem_ring {
    int n_slots;
    tandem_event *filled[TANDEM_CONFIG_MAX_PREFETCH]; /* model device; recorded by the data side */
    tandem_event *freed[TANDEM_CONFIG_MAX_PREFETCH];  /* model device; recorded by the consumer */
    /* private: under m */
    tandem_mutex m;
    tandem_cond cv;
    tandem_slot_state state[TANDEM_CONFIG_MAX_PREFETCH];
    int64_t next_fill, next_take; /* batch sequence numbers; slot = seq mod n_slots */
    int64_t published;
    int stopped;
    tandem_status status;         /* TANDEM_OK after a clean stop */
    char error[512];
    int ready;                    /* slots READY now */
    uint64_t t_start_ns, t_last_ns;
    double ready_integral_ns;     /* sum of ready * dt */
    uint64_t wait_ns, acquires;
} tandem_ring;

/* n_slots in [1, TANDEM_CONFIG_MAX_PREFETCH]; events on model_dev. On failure *r is zeroed. */
tandem_status tandem_ring_init(tandem_ring *r, int n_slots, tandem_device *model_dev);
void tandem_ring_destroy(tandem_ring *r);

/* Producer: the next slot in sequence once it is FREE (→ FILLING). Returns the ring's status
 * (TANDEM_E_STATE "stopped" after a clean stop) as soon as it is stopped; TANDEM_E_STATE on
 * timeout (timeout_ms < 0: wait until free or stopped). *seq = the batch's sequence number. */
tandem_status tandem_ring_claim(tandem_ring *r, int64_t timeout_ms, int *slot, int64_t *seq);
/* Producer: FILLING → READY (the filled event has been recorded). */
void tandem_ring_publish(tandem_ring *r, int slot);

/* Consumer: the next READY slot in sequence (→ IN_USE). After a stop with an error, that
 * error (message included) even if slots are ready; TANDEM_E_STATE on timeout or after a
 * clean stop. *waited_ns = time spent blocked. */
tandem_status tandem_ring_acquire(tandem_ring *r, int64_t timeout_ms, int *slot, int64_t *seq,
                                  uint64_t *waited_ns);
/* Consumer: make stream s wait for slot's "filled" event (the data side's copies into it), with
 * events recorded on s just before (pre) and just after (post) the wait when not NULL: elapsed
 * (pre → post) is how long the model device itself stalled for the copies, which the CPU-side
 * wait above cannot see (the data side publishes once its copies are queued, not done). */
tandem_status tandem_ring_wait_filled(tandem_ring *r, int slot, tandem_stream *s, tandem_event *pre,
                                      tandem_event *post);
/* Consumer: IN_USE → FREE (the freed event has been recorded). TANDEM_E_STATE if the slot is
 * not in use. */
tandem_status tandem_ring_release(tandem_ring *r, int slot);

/* Stop both sides: st = TANDEM_OK for a clean stop, else the error, with msg. The first call
 * decides the status; later calls only wake waiters. */
void tandem_ring_stop(tandem_ring *r, tandem_status st, const char *msg);
/* Whether stopped; *st and msg (cap bytes) receive the status and its message. */
int tandem_ring_stopped(tandem_ring *r, tandem_status *st, char *msg, size_t cap);

typedef struct tandem_ring_stats {
    double mean_ready;   /* time-weighted mean of READY slots since init */
    double wait_ms;      /* total time the consumer spent blocked in acquire */
    uint64_t acquires;
    int64_t produced, consumed; /* batches published by the data side, taken by the consumer */
} tandem_ring_stats;
void tandem_ring_get_stats(tandem_ring *r, tandem_ring_stats *out);

#endif
