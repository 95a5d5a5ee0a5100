/* fc_stream.c — stand-in driver: streams and events.
 *
 * Work queued on a created stream runs asynchronously on the stream's worker (fc_queue.c); the
 * calls here queue event records and waits and implement the synchronising calls. An event
 * completes when its record op has run; it carries a global sequence number, the monotonic time
 * at which the record ran, and the recording stream's vector clock (for the hazard detector).
 * Stricter than CUDA: waiting on (cuStreamWaitEvent, cuEventSynchronize) an event that was
 * never recorded is an error here (CUDA treats it as complete), because in this project it
 * always means a missing record, i.e. an ordering bug. cuEventQuery of such an event succeeds,
 * as in CUDA. Flags are recorded as given (tandem_fakecuda_event_flags): CU_EVENT_BLOCKING_SYNC
 * is what a thread that waits on the event should ask for. */
#include <stdlib.h>
#include <time.h>

#include "test/fakecuda/fakecuda.h"

static uint64_t record_seq;


/* Any stream handle (live, dead or foreign) → its object or an error reported. */
static CUresult get_stream(const char *call, CUstream h, fc_stream **out) {
    int dead;
    fc_stream *s = (fc_stream *)fc_lookup(h, FC_KIND_STREAM, &dead);
    if (!s)
        return fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                       dead ? "stream %p was destroyed" : "%p is not a stream", (void *)h);
    *out = s;
    return CUDA_SUCCESS;
}

static CUresult get_event(const char *call, CUevent h, fc_event **out) {
    int dead;
    fc_event *e = (fc_event *)fc_lookup(h, FC_KIND_EVENT, &dead);
    if (!e)
        return fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                       dead ? "event %p was destroyed" : "%p is not an event", (void *)h);
    *out = e;
    return CUDA_SUCCESS;
}

CUresult fc_check_stream(const char *call, CUstream h) {
    fc_ctx *cur = fc_current();
    if (!h) { /* the current context's default stream: legacy, so it joins a global capture */
        fc_stream *c = cur ? fc_capture_of_ctx(cur) : NULL;
        if (c) return fc_capture_reject(c, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, call, "the legacy default stream used");
        return CUDA_SUCCESS;
    }
    fc_stream *s = NULL;
    CUresult r = get_stream(call, h, &s);
    if (r) return r;
    if (s->capture && s->capture_err) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED; /* reported once */
    if (s->h.ctx != cur)
        return fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                       "stream %p belongs to device %d, but the current context is device %d",
                       (void *)h, s->h.ctx->device, cur ? cur->device : -1);
    return CUDA_SUCCESS;
}

FC_EXPORT int tandem_fakecuda_check_stream(const char *call, CUstream stream) {
    if (!fc_current()) {
        tandem_fakecuda_report(call, "no current context on this thread");
        return -1;
    }
    return fc_check_stream(call, stream) != CUDA_SUCCESS;
}

FC_EXPORT CUresult cuStreamCreate(CUstream *out, unsigned int flags) {
    const char *call = "cuStreamCreate";
    CUresult r = fc_enter(call, 1);
    if (r) return fc_leave(r);
    if (!out) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "phStream is NULL"));
    if (flags & ~CU_STREAM_NON_BLOCKING)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "unknown flags 0x%x", flags));
    fc_stream *s = calloc(1, sizeof *s);
    if (!s) return fc_leave(CUDA_ERROR_OUT_OF_MEMORY);
    s->h = (fc_obj){FC_KIND_STREAM, 1, fc_current()};
    s->flags = flags;
    if (fc_stream_init(s) != 0) {
        free(s);
        return fc_leave(fc_fail(CUDA_ERROR_OUT_OF_MEMORY, call,
                                "more than %d streams alive at once", FC_MAX_SLOTS - FC_MAX_DEVICES));
    }
    fc_register(&s->h);
    *out = (CUstream)(void *)s;
    return fc_leave(CUDA_SUCCESS);
}

/* As in CUDA, work queued before the destroy still completes (here: before it returns). */
CUresult cuStreamDestroy(CUstream h) {
    const char *call = "cuStreamDestroy";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    if (!h) return fc_leave(fc_fail(CUDA_ERROR_INVALID_HANDLE, call, "the default stream cannot be destroyed"));
    fc_stream *s = NULL;
    if ((r = get_stream(call, h, &s))) return fc_leave(r);
    s->h.alive = 0; /* kept registered so later use is reported, not dereferenced */
    fc_stream_retire(s);
    return fc_leave(CUDA_SUCCESS);
}
FC_EXPORT_V2(cuStreamDestroy)

FC_EXPORT CUresult cuStreamSynchronize(CUstream h) {
    const char *call = "cuStreamSynchronize";
    CUresult r = fc_enter(call, h == NULL);
    if (r) return fc_leave(r);
    fc_stream *s = NULL;
    if (h && (r = get_stream(call, h, &s))) return fc_leave(r);
    if (!h && (r = fc_check_stream(call, h))) return fc_leave(r);
    s = fc_stream_of(h);
    if (s->capture) return fc_leave(fc_capture_reject(s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, call, "synchronising the stream"));
    if ((r = fc_capture_unsafe(call, "synchronising a stream"))) return fc_leave(r);
    FC_COUNT(s->h.ctx->device, stream_syncs);
    fc_vc *vc = malloc(sizeof *vc);
    if (!vc) abort(); /* test-only */
    *vc = s->vc;
    fc_stream_drain(s);
    fc_observe_vc(vc);
    free(vc);
    return fc_leave(s->h.ctx->sticky);
}

static void run_wait(fc_op *op) { (void)op; /* the worker held the queue until it was done */ }

FC_EXPORT CUresult cuStreamWaitEvent(CUstream h, CUevent ev, unsigned int flags) {
    const char *call = "cuStreamWaitEvent";
    CUresult r = fc_enter(call, h == NULL);
    if (r) return fc_leave(r);
    fc_stream *s = NULL;
    fc_event *e = NULL;
    if (h && (r = get_stream(call, h, &s))) return fc_leave(r);
    if (!h && (r = fc_check_stream(call, h))) return fc_leave(r);
    if ((r = get_event(call, ev, &e))) return fc_leave(r);
    if (flags & ~CU_EVENT_WAIT_EXTERNAL)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "flags must be 0 or CU_EVENT_WAIT_EXTERNAL, got %u", flags));
    s = fc_stream_of(h);
    if (s->capture) { /* a node of the graph, or ordering inside the capture */
        if (e->captured && e->cap_graph != s->capture)
            return fc_leave(fc_capture_reject(s, CUDA_ERROR_STREAM_CAPTURE_ISOLATION, call,
                                              "waiting on an event recorded in another capture"));
        if (e->captured) { /* capture order is replay order; a plain wait of the origin joins a fork */
            if (!(flags & CU_EVENT_WAIT_EXTERNAL)) fc_capture_join(s, e);
            return fc_leave(CUDA_SUCCESS);
        }
        if (!(flags & CU_EVENT_WAIT_EXTERNAL))
            return fc_leave(fc_capture_reject(s, CUDA_ERROR_STREAM_CAPTURE_ISOLATION, call,
                                              "waiting on an event recorded outside the capture without "
                                              "CU_EVENT_WAIT_EXTERNAL"));
        fc_op *op = fc_op_new("cuStreamWaitEvent (external, in a graph)");
        op->run = run_wait;
        op->wait_event = e;
        fc_submit(s, op, NULL);
        return fc_leave(CUDA_SUCCESS);
    }
    if (e->captured && h && fc_capture_fork(s, e)) return fc_leave(CUDA_SUCCESS); /* s joins the capture */
    if (e->captured)
        return fc_leave(fc_fail(CUDA_ERROR_CAPTURED_EVENT, call, "event %p was last recorded inside a capture",
                                (void *)ev));
    if (!e->recorded)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                                "event %p (device %d) was never recorded: the wait orders nothing",
                                (void *)ev, e->h.ctx->device));
    if (!h) s = fc_stream_of(NULL);
    /* Everything before the record happens before everything after this wait. */
    for (int i = 0; i < FC_MAX_SLOTS; i++)
        if (e->vc.c[i] > s->vc.c[i]) s->vc.c[i] = e->vc.c[i];
    fc_op *op = fc_op_new("cuStreamWaitEvent");
    op->run = run_wait;
    op->wait_stream = e->rec_stream;
    op->wait_pos = e->rec_op;
    fc_submit(s, op, NULL);
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuEventCreate(CUevent *out, unsigned int flags) {
    const char *call = "cuEventCreate";
    CUresult r = fc_enter(call, 1);
    if (r) return fc_leave(r);
    if (!out) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "phEvent is NULL"));
    if (flags & ~(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING))
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "unsupported flags 0x%x", flags));
    fc_event *e = calloc(1, sizeof *e);
    if (!e) return fc_leave(CUDA_ERROR_OUT_OF_MEMORY);
    e->h = (fc_obj){FC_KIND_EVENT, 1, fc_current()};
    e->flags = flags;
    fc_register(&e->h);
    *out = (CUevent)(void *)e;
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT int tandem_fakecuda_event_flags(CUevent ev) {
    tandem_fakecuda_lock();
    fc_event *e = (fc_event *)fc_lookup(ev, FC_KIND_EVENT, NULL);
    int f = e ? (int)e->flags : -1;
    tandem_fakecuda_unlock();
    return f;
}

CUresult cuEventDestroy(CUevent h) {
    const char *call = "cuEventDestroy";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    fc_event *e = NULL;
    if ((r = get_event(call, h, &e))) return fc_leave(r);
    e->h.alive = 0;
    return fc_leave(CUDA_SUCCESS);
}
FC_EXPORT_V2(cuEventDestroy)

static void run_record(fc_op *op) { (void)op; /* t_ns: the op's modelled end (fc_queue.c) */ }

void fc_event_mark_recorded(fc_event *e) {
    e->recorded = 1;
    e->captured = 0;
    e->seq = ++record_seq;
}

static CUresult record(const char *call, CUevent ev, CUstream h, unsigned flags) {
    CUresult r = fc_enter(call, h == NULL);
    if (r) return fc_leave(r);
    fc_event *e = NULL;
    fc_ctx *sctx = fc_current();
    if ((r = get_event(call, ev, &e))) return fc_leave(r);
    fc_stream *s = NULL;
    if (h) {
        if ((r = get_stream(call, h, &s))) return fc_leave(r);
        sctx = s->h.ctx;
    }
    if (sctx != e->h.ctx)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                                "event of device %d recorded on a stream of device %d",
                                e->h.ctx->device, sctx->device));
    if (!h && (r = fc_check_stream(call, h))) return fc_leave(r);
    if (flags & ~CU_EVENT_RECORD_EXTERNAL)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "unknown flags 0x%x", flags));
    s = fc_stream_of(h);
    if (s->capture && !(flags & CU_EVENT_RECORD_EXTERNAL)) {
        e->captured = 1; /* capture-internal: orders the capture, usable only inside it */
        e->cap_graph = s->capture, e->cap_stream = s, e->cap_ops = s->cap_ops;
        return fc_leave(CUDA_SUCCESS);
    }
    fc_op *op = fc_op_new("%s", s->capture ? "cuEventRecordWithFlags (external, in a graph)" : call);
    op->run = run_record;
    op->event = e;
    if (!s->capture) fc_event_mark_recorded(e);
    fc_submit(s, op, NULL); /* sets rec_stream, rec_op, vc; may run (and free) op at once */
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuEventRecord(CUevent ev, CUstream h) { return record("cuEventRecord", ev, h, 0); }

FC_EXPORT CUresult cuEventRecordWithFlags(CUevent ev, CUstream h, unsigned int flags) {
    return record("cuEventRecordWithFlags", ev, h, flags);
}

FC_EXPORT CUresult cuStreamQuery(CUstream h) {
    const char *call = "cuStreamQuery";
    CUresult r = fc_enter(call, 1);
    if (r || (r = fc_check_stream(call, h))) return fc_leave(r);
    fc_stream *s = fc_stream_of(h);
    if (s->capture)
        return fc_leave(fc_capture_reject(s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, call, "querying the stream"));
    if (s->done < s->enqueued) return fc_leave(CUDA_ERROR_NOT_READY);
    fc_observe_vc(&s->vc);
    return fc_leave(CUDA_SUCCESS);
}

static int event_done(const fc_event *e) { return fc_op_done(e->rec_stream, e->rec_op); }

/* An event last recorded inside a capture (not external) exists only in that graph. */
static CUresult captured_event(const char *call, const fc_event *e) {
    fc_stream *c = fc_capture_of_ctx(e->h.ctx);
    if (c) return fc_capture_reject(c, CUDA_ERROR_CAPTURED_EVENT, call, "an event recorded in the capture used");
    return fc_fail(CUDA_ERROR_CAPTURED_EVENT, call, "event %p was last recorded inside a capture", (void *)e);
}

FC_EXPORT CUresult cuEventQuery(CUevent ev) {
    CUresult r = fc_enter("cuEventQuery", 0);
    if (r) return fc_leave(r);
    fc_event *e = NULL;
    if ((r = get_event("cuEventQuery", ev, &e))) return fc_leave(r);
    if (e->captured) return fc_leave(captured_event("cuEventQuery", e));
    if (!e->recorded) return fc_leave(CUDA_SUCCESS); /* never recorded counts as done */
    if (!event_done(e)) return fc_leave(CUDA_ERROR_NOT_READY);
    fc_observe_vc(&e->vc);
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuEventSynchronize(CUevent ev) {
    const char *call = "cuEventSynchronize";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    fc_event *e = NULL;
    if ((r = get_event(call, ev, &e))) return fc_leave(r);
    if (e->captured) return fc_leave(captured_event(call, e));
    if ((r = fc_capture_unsafe(call, "synchronising an event"))) return fc_leave(r);
    if (!e->recorded)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                                "event %p (device %d) was never recorded", (void *)ev,
                                e->h.ctx->device));
    FC_COUNT(e->h.ctx->device, event_syncs);
    while (!event_done(e)) fc_wait_cond();
    fc_observe_vc(&e->vc);
    return fc_leave(e->h.ctx->sticky);
}

FC_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
    const char *call = "cuEventElapsedTime";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    fc_event *a = NULL, *b = NULL;
    if ((r = get_event(call, start, &a)) || (r = get_event(call, end, &b))) return fc_leave(r);
    if (!ms) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "pMilliseconds is NULL"));
    if (a->captured || b->captured) return fc_leave(captured_event(call, a->captured ? a : b));
    if (!a->recorded || !b->recorded)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_HANDLE, call, "%s event was never recorded",
                                !a->recorded ? "start" : "end"));
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                                "%s event was created with CU_EVENT_DISABLE_TIMING",
                                (a->flags & CU_EVENT_DISABLE_TIMING) ? "start" : "end"));
    /* As in CUDA: not an error, the caller asks again after synchronising. */
    if (!event_done(a) || !event_done(b)) return fc_leave(CUDA_ERROR_NOT_READY);
    *ms = (float)(((double)b->t_ns - (double)a->t_ns) / 1e6);
    return fc_leave(CUDA_SUCCESS);
}
/* CUDA 12.8+ also exports cuEventElapsedTime_v2 with the same signature. */
FC_EXPORT_V2(cuEventElapsedTime)
