/* step_timer.c — model-device data wait, busy time and step-time variation (see step_timer.h). */
#include "runtime/run/step_timer.h"

#include <math.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"

#define EV(t, r, k) ((t)->ev[TANDEM_STEP_EV_PER_REGION * (r) + (k)])
#define HOST(t, r, k) ((t)->host_ns[TANDEM_STEP_EV_PER_REGION * (r) + (k)])

tandem_status tandem_step_timer_init(tandem_step_timer *t, tandem_device *dev, int micro_batches) {
    memset(t, 0, sizeof *t);
    t->regions = micro_batches + 1;
    tandem_device_info info;
    TANDEM_TRY(tandem_device_get_info(dev, &info));
    if (info.backend != TANDEM_BACKEND_CUDA) return TANDEM_OK;
    const size_t n = (size_t)(TANDEM_STEP_EV_PER_REGION * t->regions);
    t->ev = tandem_calloc(n, sizeof *t->ev);
    t->host_ns = tandem_calloc(n, sizeof *t->host_ns);
    if (!t->ev || !t->host_ns) {
        tandem_step_timer_free(t);
        return tandem_fail(TANDEM_E_NOMEM, "trainer: out of memory for events");
    }
    t->use_events = 1;
    tandem_status st = tandem_event_create(dev, &t->begin);
    for (size_t i = 0; i < n && st == TANDEM_OK; i++) st = tandem_event_create(dev, &t->ev[i]);
    if (st != TANDEM_OK) tandem_step_timer_free(t);
    return st;
}

void tandem_step_timer_free(tandem_step_timer *t) {
    if (t->ev)
        for (int i = 0; i < TANDEM_STEP_EV_PER_REGION * t->regions; i++)
            if (t->ev[i]) tandem_event_destroy(t->ev[i]);
    if (t->begin) tandem_event_destroy(t->begin);
    tandem_free(t->ev);
    tandem_free(t->host_ns);
    t->ev = NULL;
    t->host_ns = NULL;
    t->begin = NULL;
    t->use_events = 0;
}

tandem_status tandem_step_timer_begin(tandem_step_timer *t, tandem_stream *s) {
    return t->use_events ? tandem_event_record(t->begin, s) : TANDEM_OK;
}

void tandem_step_timer_wait_events(tandem_step_timer *t, int region, tandem_event **pre, tandem_event **start) {
    *pre = t->use_events ? EV(t, region, TANDEM_STEP_EV_PRE) : NULL;
    *start = t->use_events ? EV(t, region, TANDEM_STEP_EV_START) : NULL;
}

tandem_status tandem_step_timer_mark(tandem_step_timer *t, tandem_stream *s, int region, int end) {
    if (!t->use_events) return TANDEM_OK;
    const int k = end ? TANDEM_STEP_EV_END : TANDEM_STEP_EV_START;
    HOST(t, region, k) = tandem_now_ns();
    if (!end && region < t->regions - 1) return TANDEM_OK; /* recorded by the ring's wait */
    return tandem_event_record(EV(t, region, k), s);
}

void tandem_step_timer_replayed(tandem_step_timer *t) {
    if (!t->use_events) return;
    const uint64_t now = tandem_now_ns();
    for (int i = 0; i < TANDEM_STEP_EV_PER_REGION * t->regions; i++) t->host_ns[i] = now;
}

static double clamp_pct(double x) { return x < 0 ? 0 : x > 100.0 ? 100.0 : x; }

static tandem_status elapsed(tandem_event *a, tandem_event *b, double *acc) {
    float ms = 0;
    TANDEM_TRY(tandem_event_elapsed_ms(a, b, &ms));
    *acc += ms > 0 ? ms : 0;
    return TANDEM_OK;
}

tandem_status tandem_step_timer_read(const tandem_step_timer *t, double step_ms, double host_wait_ms,
                                     tandem_step_times *out) {
    memset(out, 0, sizeof *out);
    double busy_ms = step_ms - host_wait_ms, occupied_ms = busy_ms;
    out->data_wait_ms = host_wait_ms;
    if (t->use_events) {
        busy_ms = occupied_ms = out->data_wait_ms = 0;
        for (int r = 0; r < t->regions; r++) {
            if (r < t->regions - 1) { /* a micro-batch: its wait for the slot */
                tandem_event *prev = r == 0 ? t->begin : EV(t, r - 1, TANDEM_STEP_EV_END);
                TANDEM_TRY(elapsed(prev, EV(t, r, TANDEM_STEP_EV_START), &out->data_wait_ms));
                TANDEM_TRY(elapsed(EV(t, r, TANDEM_STEP_EV_PRE), EV(t, r, TANDEM_STEP_EV_START),
                                   &out->data_wait_device_ms));
            }
            double d = 0;
            TANDEM_TRY(elapsed(EV(t, r, TANDEM_STEP_EV_START), EV(t, r, TANDEM_STEP_EV_END), &d));
            const double h = (double)(HOST(t, r, TANDEM_STEP_EV_END) - HOST(t, r, TANDEM_STEP_EV_START)) * 1e-6;
            occupied_ms += d;
            busy_ms += d > h ? d - h : 0;
        }
    }
    out->busy_pct = step_ms > 0 ? clamp_pct(100.0 * busy_ms / step_ms) : 0;
    out->occupied_pct = step_ms > 0 ? clamp_pct(100.0 * occupied_ms / step_ms) : 0;
    return TANDEM_OK;
}

void tandem_step_timer_push(tandem_step_timer *t, double step_ms) {
    t->window[t->n++ % TANDEM_STEP_CV_WINDOW] = step_ms;
}

double tandem_step_timer_cv(const tandem_step_timer *t) {
    const int n = (int)(t->n < TANDEM_STEP_CV_WINDOW ? t->n : TANDEM_STEP_CV_WINDOW);
    if (n < 2) return 0.0;
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++) mean += t->window[i];
    mean /= n;
    for (int i = 0; i < n; i++) var += (t->window[i] - mean) * (t->window[i] - mean);
    return mean > 0 ? sqrt(var / (n - 1)) / mean : 0.0;
}
