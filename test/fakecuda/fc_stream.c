/* fc_stream.c — stand-in driver: streams and events.
 *
 * Work runs when it is queued, under the process-wide lock, so by the time a call that
 * queues work returns the work is done. An event therefore completes when it is recorded; it
 * carries a global sequence number and a monotonic timestamp. Cross-thread ordering follows
 * from the lock: a wait sees the latest record that happened before it. Stricter than CUDA:
 * waiting on (cuStreamWaitEvent, cuEventSynchronize) an event that was never recorded is an
 * error here (CUDA treats it as complete), because in this project it always means a missing
 * record, i.e. an ordering bug. cuEventQuery of such an event succeeds, as in CUDA. */
#include <stdlib.h>
#include <time.h>

#include "test/fakecuda/fakecuda.h"

static uint64_t record_seq;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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
    if (!h) return CUDA_SUCCESS; /* the current context's default stream */
    fc_stream *s = NULL;
    CUresult r = get_stream(call, h, &s);
    if (r) return r;
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
    *s = (fc_stream){{FC_KIND_STREAM, 1, fc_current()}, flags};
    fc_register(&s->h);
    *out = (CUstream)(void *)s;
    return fc_leave(CUDA_SUCCESS);
}

CUresult cuStreamDestroy(CUstream h) {
    const char *call = "cuStreamDestroy";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    if (!h) return fc_leave(fc_fail(CUDA_ERROR_INVALID_HANDLE, call, "the default stream cannot be destroyed"));
    fc_stream *s = NULL;
    if ((r = get_stream(call, h, &s))) return fc_leave(r);
    s->h.alive = 0; /* kept registered so later use is reported, not dereferenced */
    return fc_leave(CUDA_SUCCESS);
}
FC_EXPORT_V2(cuStreamDestroy)

FC_EXPORT CUresult cuStreamSynchronize(CUstream h) {
    const char *call = "cuStreamSynchronize";
    CUresult r = fc_enter(call, h == NULL);
    if (r || !h) return fc_leave(r);
    fc_stream *s = NULL;
    if ((r = get_stream(call, h, &s))) return fc_leave(r);
    return fc_leave(s->h.ctx->sticky);
}

FC_EXPORT CUresult cuStreamWaitEvent(CUstream h, CUevent ev, unsigned int flags) {
    const char *call = "cuStreamWaitEvent";
    CUresult r = fc_enter(call, h == NULL);
    if (r) return fc_leave(r);
    fc_stream *s = NULL;
    fc_event *e = NULL;
    if (h && (r = get_stream(call, h, &s))) return fc_leave(r);
    if ((r = get_event(call, ev, &e))) return fc_leave(r);
    if (flags != 0) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "flags must be 0, got %u", flags));
    if (!e->recorded)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                                "event %p (device %d) was never recorded: the wait orders nothing",
                                (void *)ev, e->h.ctx->device));
    /* The recorded work is already complete: nothing to hold back. */
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

FC_EXPORT CUresult cuEventRecord(CUevent ev, CUstream h) {
    const char *call = "cuEventRecord";
    CUresult r = fc_enter(call, h == NULL);
    if (r) return fc_leave(r);
    fc_event *e = NULL;
    fc_ctx *sctx = fc_current();
    if ((r = get_event(call, ev, &e))) return fc_leave(r);
    if (h) {
        fc_stream *s = NULL;
        if ((r = get_stream(call, h, &s))) return fc_leave(r);
        sctx = s->h.ctx;
    }
    if (sctx != e->h.ctx)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                                "event of device %d recorded on a stream of device %d",
                                e->h.ctx->device, sctx->device));
    e->recorded = 1;
    e->seq = ++record_seq;
    e->t_ns = now_ns();
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuEventQuery(CUevent ev) {
    CUresult r = fc_enter("cuEventQuery", 0);
    if (r) return fc_leave(r);
    fc_event *e = NULL;
    if ((r = get_event("cuEventQuery", ev, &e))) return fc_leave(r);
    return fc_leave(CUDA_SUCCESS); /* recorded work is complete; never recorded counts as done */
}

FC_EXPORT CUresult cuEventSynchronize(CUevent ev) {
    const char *call = "cuEventSynchronize";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    fc_event *e = NULL;
    if ((r = get_event(call, ev, &e))) return fc_leave(r);
    if (!e->recorded)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                                "event %p (device %d) was never recorded", (void *)ev,
                                e->h.ctx->device));
    return fc_leave(e->h.ctx->sticky);
}

FC_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
    const char *call = "cuEventElapsedTime";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    fc_event *a = NULL, *b = NULL;
    if ((r = get_event(call, start, &a)) || (r = get_event(call, end, &b))) return fc_leave(r);
    if (!ms) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "pMilliseconds is NULL"));
    if (!a->recorded || !b->recorded)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_HANDLE, call, "%s event was never recorded",
                                !a->recorded ? "start" : "end"));
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                                "%s event was created with CU_EVENT_DISABLE_TIMING",
                                (a->flags & CU_EVENT_DISABLE_TIMING) ? "start" : "end"));
    *ms = (float)(((double)b->t_ns - (double)a->t_ns) / 1e6);
    return fc_leave(CUDA_SUCCESS);
}
/* CUDA 12.8+ also exports cuEventElapsedTime_v2 with the same signature. */
FC_EXPORT_V2(cuEventElapsedTime)
