/* step_timer.h — how busy the model device was during a training step, and how steady the steps
 * are (DESIGN.md §8).
 *
 * Busy time: on a CUDA model device, device events around each region of the step's work — each
 * micro-batch's forward + backward (recorded after acquire queued the wait for the ring slot, so
 * the stream's waits for data are outside them) and the update; on a host device, whose work runs
 * in the calling thread, host clocks: step time minus the time blocked waiting for data.
 * Steadiness: the coefficient of variation of the step time over the last TANDEM_STEP_CV_WINDOW
 * steps.
 * Owns the events (created at init, before the pool commit; nothing allocated afterwards). One
 * thread: the training loop's. */
#ifndef TANDEM_RUNTIME_RUN_STEP_TIMER_H
#define TANDEM_RUNTIME_RUN_STEP_TIMER_H

#include <stdint.h>

#include "tandem.h"

#define TANDEM_STEP_CV_WINDOW 50

typedef struct tandem_step_timer {
    int regions;         /* micro-batches + 1 (the update) */
    int use_events;      /* 1: a CUDA model device */
    tandem_event **ev;   /* [2 * regions]: (start, end) per region; NULL on a host device */
    double window[TANDEM_STEP_CV_WINDOW]; /* step times, ms, as a ring */
    int64_t n;           /* step times pushed */
} tandem_step_timer;

/* Events on dev when it is a CUDA device. On failure nothing is left to free. */
tandem_status tandem_step_timer_init(tandem_step_timer *t, tandem_device *dev, int micro_batches);
void tandem_step_timer_free(tandem_step_timer *t);
/* Mark the start (end = 0) or the end (end = 1) of region r (micro-batch r; r = micro_batches:
 * the update) on stream s. No-op on a host device. */
tandem_status tandem_step_timer_mark(tandem_step_timer *t, tandem_stream *s, int region, int end);
/* Busy % of a step of step_ms that waited wait_ms for data, once the step's read-back has
 * synchronised the stream (every event pair has completed); clamped to 100 (event and host
 * clocks differ slightly). */
tandem_status tandem_step_timer_busy(const tandem_step_timer *t, double step_ms, double wait_ms,
                                     double *busy_pct);
/* Add a step time to the window. */
void tandem_step_timer_push(tandem_step_timer *t, double step_ms);
/* Coefficient of variation over the window (0 with fewer than two steps). */
double tandem_step_timer_cv(const tandem_step_timer *t);

#endif
