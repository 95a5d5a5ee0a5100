/* fc_graph.c — stand-in driver: stream capture and graphs.
 *
 * cuStreamBeginCapture puts a created stream into capture: every operation a call would queue
 * on it (copy, kernel launch, cuBLASLt step, external event record or wait) becomes a node of
 * the stream's graph instead, in order, with the byte ranges it declared. cuStreamEndCapture
 * hands the graph out; cuGraphInstantiateWithFlags makes an executable of it; cuGraphLaunch
 * queues a copy of every node on the launch stream, in capture order (a linear graph, which is
 * what one captured stream yields), so replays run, order and are hazard-checked exactly like
 * the calls they came from. An external wait node waits on the event's last record as of the
 * launch; an external record node records the event at its place in the replay.
 *
 * What real capture rejects is rejected here too, with CUDA's code and one error line, and the
 * capture is invalidated (cuStreamEndCapture then returns CUDA_ERROR_STREAM_CAPTURE_INVALIDATED):
 * synchronising the capturing stream or its context, a copy to or from pageable memory (a
 * synchronous copy) on the capturing stream, querying the capturing stream, querying or
 * synchronising an event last recorded inside the capture, the legacy default stream of that
 * context during the capture, waiting on an event recorded outside the capture without
 * CU_EVENT_WAIT_EXTERNAL, and ending the capture on another stream. The capture modes decide who
 * else may make a potentially unsafe call (synchronising any stream, event or context,
 * allocating, freeing, a synchronous copy) while a capture is under way (fc_capture_forbidding):
 * the capturing thread never (unless relaxed), every other thread of the process not while a
 * global-mode capture runs on any device — a real H100 failed Tandem's data thread's
 * cuEventSynchronize with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the model thread's global
 * capture with it. Modelled: one capture per context, begun on one stream (the origin); other
 * streams join it as CUDA's do (fork: a stream waits on an event recorded inside the capture,
 * and from then on its work is captured too), and must be joined back (the origin waits on an
 * event recorded on the forked stream after its last captured work) before the capture ends,
 * else cuStreamEndCapture fails with CUDA_ERROR_STREAM_CAPTURE_UNJOINED. A replay still runs
 * the nodes one after another in capture order, a topological order of the forked graph (every
 * dependency was made by an earlier call); it orders more than the real graph would, never less.
 *
 * Graph nodes are kept (with what they own) for the life of the process, like every handle
 * here; a replayed op borrows them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/fakecuda/fakecuda.h"

typedef struct fc_node {
    fc_op *op;
    fc_acc_list acc;
    int has_acc;
} fc_node;

typedef struct fc_graph {
    fc_obj h;
    fc_node *nodes;
    int n, cap;
    fc_stream *origin;  /* while capturing */
    int mode;           /* CUstreamCaptureMode of the capture */
    pthread_t thread;   /* the thread that began it */
} fc_graph;

typedef struct fc_exec {
    fc_obj h;
    fc_graph *g;
} fc_exec;

tandem_fakecuda_dev_counts fc_dev_counts[FC_MAX_DEVICES];
__thread tandem_fakecuda_dev_counts fc_thread_counts;

FC_EXPORT void tandem_fakecuda_get_thread_counts(tandem_fakecuda_dev_counts *out) { *out = fc_thread_counts; }

FC_EXPORT void tandem_fakecuda_count_matmul(CUstream h, int tf32) {
    fc_stream *s = fc_stream_of(h);
    if (s->capture) FC_COUNT(s->h.ctx->device, captured_matmuls);
    else FC_COUNT(s->h.ctx->device, matmuls);
    if (tf32) FC_COUNT(s->h.ctx->device, tf32_matmuls);
}

FC_EXPORT void tandem_fakecuda_get_device_counts(int dev, tandem_fakecuda_dev_counts *out) {
    tandem_fakecuda_lock();
    if (dev >= 0 && dev < FC_MAX_DEVICES) *out = fc_dev_counts[dev];
    else memset(out, 0, sizeof *out);
    tandem_fakecuda_unlock();
}

int fc_capture_take(fc_stream *s, fc_op *op, const fc_acc_list *acc) {
    fc_graph *g = s->capture;
    if (!g) return 0;
    if (s->capture_err) { /* an invalidated capture takes nothing more */
        free(op->owned);
        free(op);
        return 1;
    }
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 64;
        fc_node *n = realloc(g->nodes, (size_t)cap * sizeof *n);
        if (!n) abort(); /* test-only */
        g->nodes = n;
        g->cap = cap;
    }
    s->cap_ops++;
    fc_node *nd = &g->nodes[g->n++];
    nd->op = op;
    nd->has_acc = acc != NULL;
    if (acc) nd->acc = *acc;
    return 1;
}

void fc_graph_free_nodes(fc_obj *o) {
    fc_graph *g = (fc_graph *)o;
    for (int i = 0; i < g->n; i++) {
        fc_op *op = g->nodes[i].op;
        if (op->fini) op->fini(op);
        free(op->owned);
        free(op);
    }
    free(g->nodes);
    g->nodes = NULL;
    g->n = 0;
}

static void each_capture(const fc_ctx *ctx, fc_stream **out) {
    *out = NULL;
    for (size_t i = 0;; i++) {
        fc_obj *o = fc_obj_at(i);
        if (!o) return;
        if (o->kind != FC_KIND_STREAM || !o->alive || o->ctx != ctx) continue;
        fc_stream *s = (fc_stream *)o;
        if (s->capture) {
            *out = s;
            return;
        }
    }
}

fc_stream *fc_capture_of_ctx(const fc_ctx *ctx) {
    fc_stream *s;
    each_capture(ctx, &s);
    return s;
}

/* The capture that forbids the calling thread a potentially unsafe call, or NULL: its own
 * capture unless relaxed, or another thread's global-mode capture on any device. */
fc_stream *fc_capture_forbidding(void) {
    const pthread_t self = pthread_self();
    for (size_t i = 0;; i++) {
        fc_obj *o = fc_obj_at(i);
        if (!o) return NULL;
        if (o->kind != FC_KIND_STREAM || !o->alive) continue;
        fc_stream *s = (fc_stream *)o;
        if (!s->capture) continue;
        const fc_graph *g = s->capture;
        if (pthread_equal(g->thread, self) ? g->mode != CU_STREAM_CAPTURE_MODE_RELAXED
                                           : g->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)
            return s;
    }
}

int fc_capture_fork(fc_stream *s, const fc_event *e) {
    fc_graph *g = e->cap_graph;
    if (!e->captured || !g || !g->h.alive || !g->origin || g->h.ctx != s->h.ctx || s->capture) return 0;
    s->capture = g;
    s->capture_err = CUDA_SUCCESS;
    s->cap_ops = s->cap_joined = 0;
    return 1;
}

void fc_capture_join(fc_stream *s, const fc_event *e) {
    fc_stream *f = e->cap_stream;
    if (!s->capture || s != s->capture->origin || !f || f == s || f->capture != s->capture) return;
    if (e->cap_ops > f->cap_joined) f->cap_joined = e->cap_ops;
}

/* At the end of g's capture: every forked stream leaves it. Returns the first error one of
 * them had or origin_err (the capture is invalidated), else UNJOINED (reported) when one has work the origin
 * never waited on, else CUDA_SUCCESS. */
static CUresult end_forks(const char *call, fc_graph *g, CUresult origin_err) {
    CUresult err = origin_err, unjoined = CUDA_SUCCESS;
    for (size_t i = 0;; i++) {
        fc_obj *o = fc_obj_at(i);
        if (!o) break;
        fc_stream *f = (fc_stream *)o;
        if (o->kind != FC_KIND_STREAM || f->capture != g || f == g->origin) continue;
        if (f->capture_err && !err) err = f->capture_err;
        if (!err && !unjoined && f->cap_ops > f->cap_joined)
            unjoined = fc_fail(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, call, "stream %p was forked into the capture "
                               "of stream %p and its last %llu captured operation(s) never joined back (record an "
                               "event on it, then cuStreamWaitEvent on the origin before ending)", (void *)f,
                               (void *)g->origin, (unsigned long long)(f->cap_ops - f->cap_joined));
        f->capture = NULL;
        f->capture_err = CUDA_SUCCESS;
    }
    return err ? err : unjoined;
}

CUresult fc_capture_unsafe(const char *call, const char *what) {
    fc_stream *c = fc_capture_forbidding();
    if (!c) return CUDA_SUCCESS;
    const fc_graph *g = c->capture;
    char why[256];
    snprintf(why, sizeof why, "%s (potentially unsafe) from %s", what,
             pthread_equal(g->thread, pthread_self()) ? "the capturing thread"
                                                     : "another thread during a global-mode capture");
    return fc_capture_reject(c, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, call, why);
}

CUresult fc_capture_reject(fc_stream *s, CUresult code, const char *call, const char *why) {
    if (!s->capture_err) s->capture_err = code;
    return fc_fail(code, call, "%s while stream %p is capturing (the capture is invalidated)", why,
                   (void *)s);
}

static CUresult get_live(const char *call, const void *h, fc_kind kind, const char *what, fc_obj **out) {
    int dead;
    fc_obj *o = fc_lookup(h, kind, &dead);
    if (!o && dead) return fc_fail(CUDA_ERROR_INVALID_HANDLE, call, "%s %p was destroyed", what, h);
    if (!o) return fc_fail(CUDA_ERROR_INVALID_HANDLE, call, "%p is not a %s", h, what);
    *out = o;
    return CUDA_SUCCESS;
}

/* A live stream of the current context (an invalidated capture is no error here: these calls
 * are how it ends). */
static CUresult capture_stream(const char *call, CUstream h) {
    if (!h) return CUDA_SUCCESS;
    fc_obj *o = NULL;
    CUresult r = get_live(call, h, FC_KIND_STREAM, "stream", &o);
    if (r) return r;
    if (o->ctx != fc_current())
        return fc_fail(CUDA_ERROR_INVALID_HANDLE, call, "stream %p belongs to device %d, but the current "
                       "context is device %d", (void *)h, o->ctx->device, fc_current()->device);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuStreamBeginCapture(CUstream h, CUstreamCaptureMode mode) {
    const char *call = "cuStreamBeginCapture";
    CUresult r = fc_enter(call, 1);
    if (r) return fc_leave(r);
    if (!h)
        return fc_leave(fc_fail(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, call,
                                "the legacy default stream cannot be captured"));
    if ((r = fc_check_stream(call, h))) return fc_leave(r);
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "mode %d is not a CUstreamCaptureMode", (int)mode));
    fc_stream *s = fc_stream_of(h);
    if (s->capture)
        return fc_leave(fc_fail(CUDA_ERROR_ILLEGAL_STATE, call, "stream %p is already capturing", (void *)h));
    if (fc_capture_of_ctx(s->h.ctx))
        return fc_leave(fc_fail(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, call,
                                "another stream of device %d is capturing (one capture per context "
                                "is modelled)", s->h.ctx->device));
    fc_graph *g = calloc(1, sizeof *g);
    if (!g) abort();
    g->h = (fc_obj){FC_KIND_GRAPH, 1, s->h.ctx};
    g->origin = s;
    g->mode = (int)mode;
    g->thread = pthread_self();
    fc_register(&g->h);
    s->capture = g;
    s->capture_err = CUDA_SUCCESS;
    return fc_leave(CUDA_SUCCESS);
}
FC_EXPORT_V2(cuStreamBeginCapture)

FC_EXPORT CUresult cuStreamEndCapture(CUstream h, CUgraph *out) {
    const char *call = "cuStreamEndCapture";
    CUresult r = fc_enter(call, 1);
    if (r) return fc_leave(r);
    if (!out) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "phGraph is NULL"));
    *out = NULL;
    if ((r = capture_stream(call, h))) return fc_leave(r);
    fc_stream *s = fc_stream_of(h);
    if (!s->capture) {
        fc_stream *other = fc_capture_of_ctx(s->h.ctx);
        if (other) r = fc_capture_reject(other, CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, call,
                                         "ending the capture on another stream");
        else r = fc_fail(CUDA_ERROR_ILLEGAL_STATE, call, "stream %p is not capturing", (void *)h);
        return fc_leave(r);
    }
    fc_graph *g = s->capture;
    if (s != g->origin)
        return fc_leave(fc_capture_reject(g->origin, CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, call,
                                          "ending the capture on a stream forked into it"));
    CUresult err = s->capture_err, forks = end_forks(call, g, err);
    s->capture = NULL;
    s->capture_err = CUDA_SUCCESS;
    s->cap_ops = 0;
    if (err || forks) { /* already reported when it happened */
        g->h.alive = 0;
        g->origin = NULL;
        return fc_leave(err || forks != CUDA_ERROR_STREAM_CAPTURE_UNJOINED ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                                                                           : CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
    }
    g->origin = NULL;
    *out = (CUgraph)(void *)g;
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *status) {
    const char *call = "cuStreamIsCapturing";
    CUresult r = fc_enter(call, 1);
    if (r) return fc_leave(r);
    if (!status) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "captureStatus is NULL"));
    if ((r = capture_stream(call, h))) return fc_leave(r);
    fc_stream *s = fc_stream_of(h);
    *status = !s->capture ? CU_STREAM_CAPTURE_STATUS_NONE
              : s->capture_err ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                               : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph hg, unsigned long long flags) {
    const char *call = "cuGraphInstantiateWithFlags";
    CUresult r = fc_enter(call, 1);
    if (r) return fc_leave(r);
    if (!out) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "phGraphExec is NULL"));
    *out = NULL;
    fc_obj *o;
    if ((r = get_live(call, hg, FC_KIND_GRAPH, "graph", &o))) return fc_leave(r);
    fc_graph *g = (fc_graph *)o;
    if (g->origin) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "graph %p is still being captured", (void *)hg));
    if (flags != 0)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "flags 0x%llx: the stand-in takes 0", flags));
    if (fc_capture_of_ctx(fc_current()))
        return fc_leave(fc_fail(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, call,
                                "instantiating while a stream of this context captures"));
    fc_exec *e = calloc(1, sizeof *e);
    if (!e) abort();
    e->h = (fc_obj){FC_KIND_EXEC, 1, fc_current()};
    e->g = g; /* nodes are never freed: the exec stays valid after cuGraphDestroy */
    fc_register(&e->h);
    FC_COUNT(fc_current()->device, graph_instantiations);
    *out = (CUgraphExec)(void *)e;
    return fc_leave(CUDA_SUCCESS);
}

/* One replayed node on s: a copy of the template that borrows what it owns. */
static CUresult replay(const char *call, fc_stream *s, const fc_node *nd) {
    fc_op *op = malloc(sizeof *op);
    if (!op) abort();
    *op = *nd->op;
    op->next = NULL;
    op->borrowed = 1;
    if (op->event) fc_event_mark_recorded(op->event);
    if (op->wait_event) {
        fc_event *e = op->wait_event;
        if (!e->recorded) {
            free(op);
            return fc_fail(CUDA_ERROR_INVALID_HANDLE, call,
                           "an external wait node waits on event %p, never recorded", (void *)e);
        }
        for (int i = 0; i < FC_MAX_SLOTS; i++)
            if (e->vc.c[i] > s->vc.c[i]) s->vc.c[i] = e->vc.c[i];
        op->wait_stream = e->rec_stream;
        op->wait_pos = e->rec_op;
    }
    fc_submit(s, op, nd->has_acc ? &nd->acc : NULL);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuGraphLaunch(CUgraphExec he, CUstream h) {
    const char *call = "cuGraphLaunch";
    CUresult r = fc_enter(call, 1);
    if (r) return fc_leave(r);
    fc_obj *o;
    if ((r = get_live(call, he, FC_KIND_EXEC, "executable graph", &o))) return fc_leave(r);
    if ((r = fc_check_stream(call, h))) return fc_leave(r);
    fc_exec *e = (fc_exec *)o;
    if (e->h.ctx != fc_current())
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_CONTEXT, call, "graph of device %d launched on device %d",
                                e->h.ctx->device, fc_current()->device));
    fc_stream *s = fc_stream_of(h);
    if (s->capture)
        return fc_leave(fc_capture_reject(s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, call,
                                          "launching a graph into a capture (not modelled)"));
    FC_COUNT(s->h.ctx->device, graph_launches);
    for (int i = 0; i < e->g->n; i++)
        if ((r = replay(call, s, &e->g->nodes[i]))) return fc_leave(r);
    return fc_leave(CUDA_SUCCESS);
}

/* Both destroys: the handle dies (its nodes stay, see the top). */
static CUresult destroy(const char *call, const void *h, fc_kind kind, const char *what) {
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    fc_obj *o = NULL;
    if ((r = get_live(call, h, kind, what, &o))) return fc_leave(r);
    if (kind == FC_KIND_GRAPH && ((fc_graph *)o)->origin)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "graph %p is still being captured", h));
    o->alive = 0;
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuGraphExecDestroy(CUgraphExec he) {
    return destroy("cuGraphExecDestroy", he, FC_KIND_EXEC, "executable graph");
}

FC_EXPORT CUresult cuGraphDestroy(CUgraph hg) { return destroy("cuGraphDestroy", hg, FC_KIND_GRAPH, "graph"); }
