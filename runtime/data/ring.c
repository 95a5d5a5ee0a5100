/* ring.c — slot states, events and the shared status of the data → model hand-off (ring.h). */
#include "runtime/data/ring.h"

#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"

#define NS_PER_MS 1000000ull

static const char *const state_names[] = {"FREE", "FILLING", "READY", "IN_USE"};

/* Occupancy bookkeeping: called under m before `ready` changes. */
static void tick(tandem_ring *r) {
    uint64_t now = tandem_now_ns();
    r->ready_integral_ns += (double)r->ready * (double)(now - r->t_last_ns);
    r->t_last_ns = now;
}

tandem_status tandem_ring_init(tandem_ring *r, int n_slots, tandem_device *model_dev) {
    if (r) memset(r, 0, sizeof *r);
    if (!r || !model_dev || n_slots < 1 || n_slots > TANDEM_CONFIG_MAX_PREFETCH)
        return tandem_fail(TANDEM_E_INVALID, "ring: %d slots: expected 1 to %d (and a model device)", n_slots,
                           TANDEM_CONFIG_MAX_PREFETCH);
    r->n_slots = n_slots;
    for (int k = 0; k < n_slots; k++) {
        tandem_status st = tandem_event_create(model_dev, &r->filled[k]);
        if (st == TANDEM_OK) st = tandem_event_create(model_dev, &r->freed[k]);
        if (st != TANDEM_OK) {
            for (int j = 0; j <= k; j++) {
                if (r->filled[j]) tandem_event_destroy(r->filled[j]);
                if (r->freed[j]) tandem_event_destroy(r->freed[j]);
            }
            memset(r, 0, sizeof *r);
            return st;
        }
    }
    tandem_mutex_init(&r->m);
    tandem_cond_init(&r->cv);
    r->t_start_ns = r->t_last_ns = tandem_now_ns();
    return TANDEM_OK;
}

void tandem_ring_destroy(tandem_ring *r) {
    if (!r || r->n_slots == 0) return;
    for (int k = 0; k < r->n_slots; k++) {
        tandem_event_destroy(r->filled[k]);
        tandem_event_destroy(r->freed[k]);
    }
    tandem_cond_destroy(&r->cv);
    tandem_mutex_destroy(&r->m);
    memset(r, 0, sizeof *r);
}

/* Under m: the failure a waiter returns once the ring is stopped. */
static tandem_status stopped_status(tandem_ring *r, const char *who) {
    if (r->status != TANDEM_OK) return tandem_fail(r->status, "%s", r->error);
    return tandem_fail(TANDEM_E_STATE, "ring %s: the pipeline was stopped%s%s", who, r->error[0] ? ": " : "",
                       r->error);
}

/* Under m: wait for pred with an optional deadline; 1 = timed out. */
static int wait_until(tandem_ring *r, uint64_t deadline_ns) {
    if (deadline_ns == 0) {
        tandem_cond_wait(&r->cv, &r->m);
        return 0;
    }
    uint64_t now = tandem_now_ns();
    if (now >= deadline_ns) return 1;
    tandem_cond_timedwait_ns(&r->cv, &r->m, deadline_ns - now);
    return 0;
}

static uint64_t deadline_of(int64_t timeout_ms) {
    return timeout_ms < 0 ? 0 : tandem_now_ns() + (uint64_t)timeout_ms * NS_PER_MS;
}

tandem_status tandem_ring_claim(tandem_ring *r, int64_t timeout_ms, int *slot, int64_t *seq) {
    const uint64_t deadline = deadline_of(timeout_ms);
    tandem_mutex_lock(&r->m);
    for (;;) {
        if (r->stopped) {
            tandem_status st = stopped_status(r, "claim");
            tandem_mutex_unlock(&r->m);
            return st;
        }
        int k = (int)(r->next_fill % r->n_slots);
        if (r->state[k] == TANDEM_SLOT_FREE) {
            r->state[k] = TANDEM_SLOT_FILLING;
            *slot = k;
            *seq = r->next_fill++;
            tandem_mutex_unlock(&r->m);
            return TANDEM_OK;
        }
        if (wait_until(r, deadline)) {
            tandem_mutex_unlock(&r->m);
            return tandem_fail(TANDEM_E_STATE, "ring claim: slot %d still %s after %lld ms", k,
                               state_names[r->state[k]], (long long)timeout_ms);
        }
    }
}

void tandem_ring_publish(tandem_ring *r, int slot) {
    tandem_mutex_lock(&r->m);
    if (r->state[slot] == TANDEM_SLOT_FILLING) {
        tick(r);
        r->state[slot] = TANDEM_SLOT_READY;
        r->ready++;
        r->published++;
    }
    tandem_cond_broadcast(&r->cv);
    tandem_mutex_unlock(&r->m);
}

tandem_status tandem_ring_acquire(tandem_ring *r, int64_t timeout_ms, int *slot, int64_t *seq,
                                  uint64_t *waited_ns) {
    const uint64_t t0 = tandem_now_ns();
    const uint64_t deadline = deadline_of(timeout_ms);
    tandem_status st = TANDEM_OK;
    tandem_mutex_lock(&r->m);
    for (;;) {
        if (r->stopped) {
            st = stopped_status(r, "acquire");
            break;
        }
        int k = (int)(r->next_take % r->n_slots);
        if (r->state[k] == TANDEM_SLOT_READY) {
            tick(r);
            r->state[k] = TANDEM_SLOT_IN_USE;
            r->ready--;
            *slot = k;
            *seq = r->next_take++;
            break;
        }
        if (wait_until(r, deadline)) {
            st = tandem_fail(TANDEM_E_STATE, "ring acquire: no batch ready after %lld ms (slot %d is %s)",
                             (long long)timeout_ms, k, state_names[r->state[k]]);
            break;
        }
    }
    uint64_t waited = tandem_now_ns() - t0;
    r->wait_ns += waited;
    if (st == TANDEM_OK) r->acquires++;
    tandem_cond_broadcast(&r->cv);
    tandem_mutex_unlock(&r->m);
    if (waited_ns) *waited_ns = waited;
    return st;
}

tandem_status tandem_ring_wait_filled(tandem_ring *r, int slot, tandem_stream *s, tandem_event *pre,
                                      tandem_event *post) {
    if (slot < 0 || slot >= r->n_slots)
        return tandem_fail(TANDEM_E_INVALID, "ring wait: slot %d: expected 0 to %d", slot, r->n_slots - 1);
    if (pre) TANDEM_TRY(tandem_event_record(pre, s));
    TANDEM_TRY(tandem_stream_wait_event(s, r->filled[slot]));
    return post ? tandem_event_record(post, s) : TANDEM_OK;
}

tandem_status tandem_ring_release(tandem_ring *r, int slot) {
    if (slot < 0 || slot >= r->n_slots)
        return tandem_fail(TANDEM_E_INVALID, "ring release: slot %d: expected 0 to %d", slot, r->n_slots - 1);
    tandem_mutex_lock(&r->m);
    if (r->state[slot] != TANDEM_SLOT_IN_USE) {
        tandem_slot_state s = r->state[slot];
        tandem_mutex_unlock(&r->m);
        return tandem_fail(TANDEM_E_STATE, "ring release: slot %d is %s, expected IN_USE", slot, state_names[s]);
    }
    r->state[slot] = TANDEM_SLOT_FREE;
    tandem_cond_broadcast(&r->cv);
    tandem_mutex_unlock(&r->m);
    return TANDEM_OK;
}

void tandem_ring_stop(tandem_ring *r, tandem_status st, const char *msg) {
    tandem_mutex_lock(&r->m);
    if (!r->stopped) {
        r->stopped = 1;
        r->status = st;
        snprintf(r->error, sizeof r->error, "%s", msg ? msg : "");
    }
    tandem_cond_broadcast(&r->cv);
    tandem_mutex_unlock(&r->m);
}

int tandem_ring_stopped(tandem_ring *r, tandem_status *st, char *msg, size_t cap) {
    tandem_mutex_lock(&r->m);
    int s = r->stopped;
    if (st) *st = r->status;
    if (msg && cap) snprintf(msg, cap, "%s", r->error);
    tandem_mutex_unlock(&r->m);
    return s;
}

void tandem_ring_get_stats(tandem_ring *r, tandem_ring_stats *out) {
    tandem_mutex_lock(&r->m);
    tick(r);
    uint64_t span = r->t_last_ns - r->t_start_ns;
    out->mean_ready = span ? r->ready_integral_ns / (double)span : 0.0;
    out->wait_ms = (double)r->wait_ns / 1e6;
    out->acquires = r->acquires;
    out->produced = r->published;
    out->consumed = r->next_take;
    tandem_mutex_unlock(&r->m);
}
