/* step_timer.h — what a training step's time went to on the model device, and how steady the
 * steps are (DESIGN.md §8, docs/TRAINING.md "Measurement").
 *
 * CUDA model device, events on the model stream (created at init):
 *   begin            recorded when the step starts (the stream is idle: the previous step's
 *                    read-back synchronised it), the anchor between host clock and device clock;
 *   per micro-batch  pre / start around the stream's wait on the ring slot's "filled" event
 *                    (recorded by the ring, tandem_ring_wait_filled), end after its forward +
 *                    backward; the update region has start / end only.
 *   data wait        Σ elapsed(previous region's end or begin → start): how long the model
 *                    device had nothing to do until its batch was there (host blocked in the
 *                    ring, or the stream stalled on the copies); the stall alone is
 *                    Σ elapsed(pre → start) (data_wait_device_ms).
 *   occupied         Σ elapsed(start → end) over the regions (launch gaps inside included).
 *   busy             Σ max(0, region device time − host time spent queueing the region): what
 *                    the device provably worked, the host's launch time over the region counted
 *                    as idle (a launch-bound region, whose device time is the host's, scores ~0).
 * Host model device (its work runs in the calling thread): host clocks; data wait = time
 * blocked in the ring, busy = occupied = step − data wait.
 * Steadiness: the coefficient of variation of the step time over the last TANDEM_STEP_CV_WINDOW
 * steps.
 * Owns the events (created at init, before the pool commit; nothing allocated afterwards). One
 * thread: the training loop's. */
#ifndef TANDEM_RUNTIME_RUN_STEP_TIMER_H
#define TANDEM_RUNTIME_RUN_STEP_TIMER_H

#include <stdint.h>

#include "tandem.h"

#define TANDEM_STEP_CV_WINDOW 50

/* Event slots of region r: pre (micro-batches only), start, end. */
enum { TANDEM_STEP_EV_PRE = 0, TANDEM_STEP_EV_START, TANDEM_STEP_EV_END, TANDEM_STEP_EV_PER_REGION };

typedef struct tandem_step_timer {
    int regions;         /* micro-batches + 1 (the update) */
    int use_events;      /* 1: a CUDA model device */
    tandem_event *begin; /* NULL on a host device */
    tandem_event **ev;   /* [3 * regions]; NULL on a host device */
    uint64_t *host_ns;   /* [3 * regions]: host clock when each mark was queued */
    double window[TANDEM_STEP_CV_WINDOW]; /* step times, ms, as a ring */
    int64_t n;           /* step times pushed */
} tandem_step_timer;

/* One step's measurement (ms unless named otherwise). */
typedef struct tandem_step_times {
    double data_wait_ms;        /* model device idle until its batches were there */
    double data_wait_device_ms; /* of it, the stream stalled on the slot's copies (CUDA; else 0) */
    double busy_pct;            /* busy / step_ms, host launch time counted as idle */
    double occupied_pct;        /* region time / step_ms (launch gaps inside regions included) */
} tandem_step_times;

/* Events on dev when it is a CUDA device. On failure nothing is left to free. */
tandem_status tandem_step_timer_init(tandem_step_timer *t, tandem_device *dev, int micro_batches);
void tandem_step_timer_free(tandem_step_timer *t);
/* The step starts (records begin on s). No-op on a host device. */
tandem_status tandem_step_timer_begin(tandem_step_timer *t, tandem_stream *s);
/* The events a micro-batch's acquire records around its wait for the slot (NULL on a host
 * device). */
void tandem_step_timer_wait_events(tandem_step_timer *t, int region, tandem_event **pre, tandem_event **start);
/* Mark the start (end = 0) or the end (end = 1) of region r on stream s, and note the host
 * clock; a micro-batch's start event was recorded by the ring already (only the clock is noted:
 * call it right after the acquire). No-op on a host device. */
tandem_status tandem_step_timer_mark(tandem_step_timer *t, tandem_stream *s, int region, int end);
/* Graph mode: the step's regions were queued by one graph launch, their marks being record
 * nodes inside it; the host spent no time queueing any region (its clocks are set so). Call
 * after the launch. No-op on a host device. */
void tandem_step_timer_replayed(tandem_step_timer *t);
/* The step's figures, once its read-back has synchronised the stream; host_wait_ms = time the
 * host was blocked in the ring. Percentages clamped to [0, 100]. */
tandem_status tandem_step_timer_read(const tandem_step_timer *t, double step_ms, double host_wait_ms,
                                     tandem_step_times *out);
/* Add a step time to the window. */
void tandem_step_timer_push(tandem_step_timer *t, double step_ms);
/* Coefficient of variation over the window (0 with fewer than two steps). */
double tandem_step_timer_cv(const tandem_step_timer *t);

#endif
