/* step_timer.c — model-device busy time and step-time variation (see step_timer.h). */
#include "runtime/run/step_timer.h"

#include <math.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"

tandem_status tandem_step_timer_init(tandem_step_timer *t, tandem_device *dev, int micro_batches) {
    memset(t, 0, sizeof *t);
    t->regions = micro_batches + 1;
    tandem_device_info info;
    TANDEM_TRY(tandem_device_get_info(dev, &info));
    if (info.backend != TANDEM_BACKEND_CUDA) return TANDEM_OK;
    t->ev = tandem_calloc((size_t)(2 * t->regions), sizeof *t->ev);
    if (!t->ev) return tandem_fail(TANDEM_E_NOMEM, "trainer: out of memory for events");
    t->use_events = 1;
    for (int i = 0; i < 2 * t->regions; i++) {
        tandem_status st = tandem_event_create(dev, &t->ev[i]);
        if (st != TANDEM_OK) {
            tandem_step_timer_free(t);
            return st;
        }
    }
    return TANDEM_OK;
}

void tandem_step_timer_free(tandem_step_timer *t) {
    if (t->ev)
        for (int i = 0; i < 2 * t->regions; i++)
            if (t->ev[i]) tandem_event_destroy(t->ev[i]);
    tandem_free(t->ev);
    t->ev = NULL;
    t->use_events = 0;
}

tandem_status tandem_step_timer_mark(tandem_step_timer *t, tandem_stream *s, int region, int end) {
    return t->use_events ? tandem_event_record(t->ev[2 * region + end], s) : TANDEM_OK;
}

tandem_status tandem_step_timer_busy(const tandem_step_timer *t, double step_ms, double wait_ms,
                                     double *busy_pct) {
    double busy_ms = step_ms - wait_ms;
    if (t->use_events) {
        busy_ms = 0;
        for (int r = 0; r < t->regions; r++) {
            float ms = 0;
            TANDEM_TRY(tandem_event_elapsed_ms(t->ev[2 * r], t->ev[2 * r + 1], &ms));
            busy_ms += ms;
        }
    }
    double busy = step_ms > 0 ? 100.0 * busy_ms / step_ms : 0;
    *busy_pct = busy > 100.0 ? 100.0 : busy;
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
