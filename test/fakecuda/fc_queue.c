/* fc_queue.c — stand-in driver: asynchronous streams.
 *
 * Every operation a call queues (copy, launch, cuBLASLt matmul, event record, event wait) is an
 * fc_op. On a created stream, with TANDEM_FAKECUDA_ASYNC=1 (the default), the op is appended to
 * the stream's queue and the stream's worker thread runs the queue in order, sleeping a random
 * 0..150 us before each op (generator seeded from TANDEM_FAKECUDA_SEED and the stream's slot, so
 * a run can be replayed; the seed is printed on every error line). A wait op holds its queue
 * until the recorded op it names has completed. The default (NULL) stream runs ops inline, after
 * the context's blocking streams have drained (legacy default-stream semantics).
 *
 * Ordering for the hazard detector (fc_hazard.c) is tracked with vector clocks, computed when
 * work is queued, so a report does not depend on timing: a stream's clock joins the recording
 * stream's clock at cuStreamWaitEvent, and every stream joins "observed" — the clocks whose
 * completion some host thread has seen (cuStreamSynchronize, cuEventSynchronize, a successful
 * cuEventQuery, cuCtxSynchronize, a copy into pageable memory) — since work queued after that,
 * from any thread, runs after it.
 *
 * All of it runs under the process-wide lock; a worker holds it while an op runs, so ops of
 * different streams interleave but never overlap. Waiting threads use one condition variable.
 *
 * Device time. Emulated kernels take CPU time unrelated to a GPU's, so event timestamps are not
 * the wall clock but a modelled device clock per stream: an op starts at the latest of (the host
 * clock when it was queued + TANDEM_FAKECUDA_LAUNCH_NS — the launch latency), the end of the
 * stream's previous op, and, for a wait, the modelled end of the record it waits for; a copy,
 * kernel or matmul then lasts TANDEM_FAKECUDA_OP_NS + (bytes it declares) / TANDEM_FAKECUDA_
 * BYTES_PER_US (a memory-bound GPU: defaults 3 us + 200 GB/s), plus TANDEM_FAKECUDA_STREAM_DELAY_US
 * on the created streams of device TANDEM_FAKECUDA_DELAY_DEVICE (default 0, the automatic data
 * device: a slow data GPU); records and waits take no time. A record's event gets its op's
 * modelled end. So a host that launches small kernels one by one leaves the modelled device idle
 * between them (launch-bound), and a slow rate makes the device the bottleneck. The model is
 * kept honest with the wall clock: a worker that finishes an op before its modelled end sleeps
 * until then, to within 0.2 ms (so the host does not see work complete before the model says); when
 * emulation is slower than the model, the device clock simply runs behind (idle time). The
 * default stream and TANDEM_FAKECUDA_ASYNC=0 run inline and do not sleep. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test/fakecuda/fakecuda.h"

static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static fc_stream defaults[FC_MAX_DEVICES];
static int slot_used[FC_MAX_SLOTS];
static fc_vc observed;

void fc_wait_cond(void) { tandem_fakecuda_wait(&cond); }
void fc_broadcast(void) { pthread_cond_broadcast(&cond); }

static void vc_join(fc_vc *a, const fc_vc *b) {
    for (int i = 0; i < FC_MAX_SLOTS; i++)
        if (b->c[i] > a->c[i]) a->c[i] = b->c[i];
}

void fc_observe_vc(const fc_vc *vc) { vc_join(&observed, vc); }

fc_stream *fc_stream_of(CUstream h) {
    if (h) return (fc_stream *)(void *)h; /* checked by fc_check_stream */
    fc_ctx *c = fc_current();
    fc_stream *d = &defaults[c->device];
    if (!d->h.kind) {
        d->h = (fc_obj){FC_KIND_STREAM, 1, c};
        d->slot = c->device;
    }
    return d;
}

int fc_stream_init(fc_stream *s) {
    for (int i = FC_MAX_DEVICES; i < FC_MAX_SLOTS; i++) {
        if (slot_used[i]) continue;
        slot_used[i] = 1;
        s->slot = i;
        s->vc = observed;
        s->rng = (uint64_t)fc_cfg.seed * 0x9E3779B97F4A7C15ull + (uint64_t)i;
        return 0;
    }
    return -1;
}

static int is_default(const fc_stream *s) { return s->slot < FC_MAX_DEVICES; }

int fc_op_done(const fc_stream *s, uint64_t pos) { return !s || s->done >= pos; }

static void op_free(fc_op *op) {
    if (!op->borrowed) {
        if (op->fini) op->fini(op);
        free(op->owned);
    }
    free(op);
}

fc_op *fc_op_new(const char *fmt, ...) {
    fc_op *op = calloc(1, sizeof *op);
    if (!op) abort(); /* test-only: host out of memory is fatal */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(op->desc, sizeof op->desc, fmt, ap);
    va_end(ap);
    return op;
}

static uint64_t next_rand(fc_stream *s) {
    uint64_t z = (s->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A worker ahead of its modelled device by less than this does not sleep (usleep's granularity
 * is about this size; sleeping for every microsecond-scale op would only slow the tests). */
#define FC_PACE_SLACK_NS 200000u

static uint64_t host_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The op's modelled start and end on its stream's device clock (see "Device time" above). */
static uint64_t model_op(fc_stream *s, fc_op *op) {
    uint64_t start = op->submit_ns + fc_cfg.launch_ns;
    if (s->clock_ns > start) start = s->clock_ns;
    if (op->wait_stream) {
        uint64_t w = op->wait_stream->end_ns[op->wait_pos % FC_END_RING];
        if (w > start) start = w;
    }
    const uint64_t end = start + op->dur_ns;
    s->clock_ns = end;
    s->end_ns[op->pos % FC_END_RING] = end;
    return end;
}

static void run_op(fc_op *op) {
    /* After a fault the context is unusable, as on a GPU: later work does not run. */
    if (op->ctx->sticky == CUDA_SUCCESS && op->run) op->run(op);
    const uint64_t end = model_op(op->stream, op);
    if (op->event) op->event->t_ns = end;
}

static void *worker(void *arg) {
    fc_stream *s = arg;
    tandem_fakecuda_lock();
    for (;;) {
        fc_op *op = s->head;
        if (!op) {
            if (s->quit) break;
            fc_wait_cond();
            continue;
        }
        if (op->wait_stream && !fc_op_done(op->wait_stream, op->wait_pos)) {
            fc_wait_cond();
            continue;
        }
        unsigned us = (unsigned)(next_rand(s) % 151u);
        if (us) {
            tandem_fakecuda_unlock();
            usleep(us);
            tandem_fakecuda_lock();
        }
        run_op(op);
        const uint64_t end = s->clock_ns, now = host_ns();
        if (end > now + FC_PACE_SLACK_NS) { /* the modelled device is slower than the emulation */
            tandem_fakecuda_unlock();
            usleep((useconds_t)((end - now) / 1000u));
            tandem_fakecuda_lock();
        }
        s->head = op->next;
        if (!s->head) s->tail = NULL;
        s->done++;
        op_free(op);
        fc_broadcast();
    }
    tandem_fakecuda_unlock();
    return NULL;
}

/* Legacy default stream: the context's blocking streams. */
static void join_blocking(fc_stream *d, int drain);

/* Modelled device time of a copy, kernel or matmul (acc: the ranges it declares); 0 for records
 * and waits, which declare none. */
static uint64_t op_duration(const fc_stream *s, const fc_acc_list *acc) {
    if (!acc) return 0;
    uint64_t bytes = 0;
    for (int i = 0; i < acc->n; i++) bytes += acc->a[i].n;
    uint64_t d = fc_cfg.op_ns + bytes * 1000u / fc_cfg.bytes_per_us;
    if (!is_default(s) && s->h.ctx->device == fc_cfg.delay_device) d += fc_cfg.delay_ns;
    return d;
}

void fc_submit(fc_stream *s, fc_op *op, const fc_acc_list *acc) {
    if (fc_capture_take(s, op, acc)) return;
    op->stream = s;
    op->ctx = s->h.ctx;
    op->submit_ns = host_ns();
    op->dur_ns = op_duration(s, acc);
    vc_join(&s->vc, &observed);
    if (is_default(s)) {
        join_blocking(s, 0);
    } else if (!(s->flags & CU_STREAM_NON_BLOCKING)) {
        vc_join(&s->vc, &defaults[s->h.ctx->device].vc);
    }
    s->vc.c[s->slot]++;
    op->pos = ++s->enqueued;
    if (op->event) { /* a record: what a later wait or synchronize refers to */
        op->event->rec_stream = s;
        op->event->rec_op = op->pos;
        op->event->vc = s->vc;
    }
    if (fc_cfg.hazards && acc) fc_hazard_check(s, op, acc);
    if (is_default(s) || !fc_cfg.async) {
        if (is_default(s)) join_blocking(s, 1);
        if (op->wait_stream) /* only a default stream can get here with a pending wait */
            while (!fc_op_done(op->wait_stream, op->wait_pos)) fc_wait_cond();
        run_op(op);
        s->done++;
        op_free(op);
        fc_broadcast();
        return;
    }
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    if (!s->worker) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, s) != 0) abort();
        s->worker_tid = (uint64_t)t;
        s->worker = 1;
    }
    fc_broadcast();
}

void fc_stream_drain(fc_stream *s) {
    uint64_t target = s->enqueued;
    while (s->done < target) fc_wait_cond();
}

/* Every live created stream of ctx (NULL: all), by index: fn may release the lock. */
static void each_stream(fc_ctx *ctx, void (*fn)(fc_stream *, void *), void *arg) {
    for (size_t i = 0;; i++) {
        fc_obj *o = fc_obj_at(i);
        if (!o) break;
        if (o->kind != FC_KIND_STREAM || !o->alive || (ctx && o->ctx != ctx)) continue;
        fn((fc_stream *)o, arg);
    }
}

static void drain_one(fc_stream *s, void *arg) {
    (void)arg;
    fc_vc vc = s->vc;
    fc_stream_drain(s);
    fc_observe_vc(&vc);
}

void fc_drain_ctx(fc_ctx *ctx) { each_stream(ctx, drain_one, NULL); }

static void join_one(fc_stream *s, void *arg) {
    fc_stream *d = arg;
    if (s->flags & CU_STREAM_NON_BLOCKING) return;
    if (d->slot == -1) { /* drain pass */
        fc_stream_drain(s);
        return;
    }
    vc_join(&d->vc, &s->vc);
}

static void join_blocking(fc_stream *d, int drain) {
    if (!drain) {
        each_stream(d->h.ctx, join_one, d);
        return;
    }
    fc_stream marker;
    memset(&marker, 0, sizeof marker);
    marker.slot = -1;
    each_stream(d->h.ctx, join_one, &marker);
}

void fc_stream_retire(fc_stream *s) {
    fc_stream_drain(s);
    fc_observe_vc(&s->vc);
    if (s->worker) {
        s->quit = 1;
        fc_broadcast();
        pthread_t t = (pthread_t)s->worker_tid;
        int depth = tandem_fakecuda_unlock_all();
        pthread_join(t, NULL);
        tandem_fakecuda_relock(depth);
        s->worker = 0;
    }
    if (s->slot >= FC_MAX_DEVICES && s->slot < FC_MAX_SLOTS) slot_used[s->slot] = 0;
}

static void retire_one(fc_stream *s, void *arg) {
    (void)arg;
    fc_stream_retire(s);
}

void fc_queue_shutdown(void) { each_stream(NULL, retire_one, NULL); }
void fc_retire_ctx_streams(fc_ctx *ctx) { each_stream(ctx, retire_one, NULL); }

static void run_user(fc_op *op) { op->user_run(op->user_arg); }

FC_EXPORT void tandem_fakecuda_submit(CUstream stream, const char *desc, void (*run)(void *),
                                      void *arg, const void *acc, int n) {
    fc_acc_list L;
    L.n = 0;
    const fc_access *a = acc;
    for (int i = 0; i < n && i < FC_MAX_ACCESS; i++) L.a[L.n++] = a[i];
    fc_op *op = fc_op_new("%s", desc);
    op->run = run_user;
    op->user_run = run;
    op->user_arg = arg;
    op->owned = arg;
    fc_submit(fc_stream_of(stream), op, &L);
}
