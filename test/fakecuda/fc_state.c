/* fc_state.c — the stand-in driver's process-wide state: configuration from the environment,
 * the one lock, error reporting and counting, the handle table, the current context. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/fakecuda/fakecuda.h"

fc_config fc_cfg;
fc_ctx fc_ctxs[FC_MAX_DEVICES];
int fc_initialized;

static atomic_int error_count;
/* Recursive: a call that reports while holding the lock, and cuBLASLt calling the bridge while
 * holding it, must not deadlock. */
static pthread_mutex_t big_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static _Thread_local fc_ctx *current_ctx;
static _Thread_local int lock_depth; /* how often this thread holds big_lock */

/* Every handle object ever created; freed at unload. */
static fc_obj **objs;
static size_t obj_count, obj_cap;

FC_EXPORT int tandem_fakecuda_error_count(void) { return atomic_load(&error_count); }

static void vreport(const char *call, const char *fmt, va_list ap) {
    char why[768];
    vsnprintf(why, sizeof why, fmt, ap);
    /* One fprintf per line so lines from threads do not interleave. */
    if (fc_cfg.async)
        fprintf(stderr, "fakecuda: error: %s: %s [asynchronous streams, TANDEM_FAKECUDA_SEED=%u]\n",
                call, why, fc_cfg.seed);
    else
        fprintf(stderr, "fakecuda: error: %s: %s\n", call, why);
    atomic_fetch_add(&error_count, 1);
}

FC_EXPORT void tandem_fakecuda_report(const char *call, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(call, fmt, ap);
    va_end(ap);
}

FC_EXPORT void tandem_fakecuda_lock(void) {
    pthread_mutex_lock(&big_lock);
    lock_depth++;
}
FC_EXPORT void tandem_fakecuda_unlock(void) {
    lock_depth--;
    pthread_mutex_unlock(&big_lock);
}

int tandem_fakecuda_unlock_all(void) {
    int d = lock_depth;
    for (int i = 0; i < d; i++) tandem_fakecuda_unlock();
    return d;
}

void tandem_fakecuda_relock(int depth) {
    for (int i = 0; i < depth; i++) tandem_fakecuda_lock();
}

/* A condition wait must release the recursive lock completely. */
void tandem_fakecuda_wait(pthread_cond_t *c) {
    int d = lock_depth;
    for (int i = 1; i < d; i++) tandem_fakecuda_unlock();
    lock_depth = 0;
    pthread_cond_wait(c, &big_lock);
    lock_depth = 1;
    for (int i = 1; i < d; i++) tandem_fakecuda_lock();
}

fc_obj *fc_obj_at(size_t i) { return i < obj_count ? objs[i] : NULL; }

CUresult fc_fail(CUresult code, const char *call, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(call, fmt, ap);
    va_end(ap);
    return code;
}

fc_ctx *fc_current(void) { return current_ctx; }
void fc_set_current(fc_ctx *c) { current_ctx = c; }

CUresult fc_enter(const char *call, int need_ctx) {
    tandem_fakecuda_lock();
    if (!fc_initialized)
        return fc_fail(CUDA_ERROR_NOT_INITIALIZED, call, "cuInit has not been called");
    if (!need_ctx) return CUDA_SUCCESS;
    fc_ctx *c = current_ctx;
    if (!c)
        return fc_fail(CUDA_ERROR_INVALID_CONTEXT, call,
                       "no current context on this thread (cuCtxSetCurrent first)");
    if (c->refcount == 0)
        return fc_fail(CUDA_ERROR_CONTEXT_IS_DESTROYED, call,
                       "the current context (device %d) was released", c->device);
    /* A fault is sticky, as on a GPU: already reported once, so no new line. */
    if (c->sticky != CUDA_SUCCESS) return c->sticky;
    return CUDA_SUCCESS;
}

CUresult fc_leave(CUresult r) {
    tandem_fakecuda_unlock();
    return r;
}

void fc_register(fc_obj *o) {
    if (obj_count == obj_cap) {
        size_t cap = obj_cap ? obj_cap * 2 : 64;
        fc_obj **n = realloc(objs, cap * sizeof *n);
        if (!n) abort(); /* test-only code: out of host memory is fatal */
        objs = n;
        obj_cap = cap;
    }
    objs[obj_count++] = o;
}

fc_obj *fc_lookup(const void *h, fc_kind kind, int *dead) {
    if (dead) *dead = 0;
    if (!h) return NULL;
    /* Newest first: a live object is found before nothing (addresses are never reused,
     * since objects are only freed at unload). */
    for (size_t i = obj_count; i-- > 0;) {
        if ((const void *)objs[i] != h) continue;
        if (objs[i]->kind != kind) return NULL;
        if (!objs[i]->alive) {
            if (dead) *dead = 1;
            return NULL;
        }
        return objs[i];
    }
    return NULL;
}

void fc_kill_ctx_objects(fc_ctx *c) {
    for (size_t i = 0; i < obj_count; i++)
        if (objs[i]->ctx == c) objs[i]->alive = 0;
}

__attribute__((destructor)) static void fc_state_unload(void) {
    /* Workers first: they reference the streams freed below. A thread still inside a call at
     * exit holds the lock: then nothing is torn down (still reachable, so not a leak). */
    if (pthread_mutex_trylock(&big_lock) != 0) return;
    lock_depth++;
    fc_queue_shutdown();
    tandem_fakecuda_unlock();
    for (size_t i = 0; i < obj_count; i++) {
        if (objs[i]->kind == FC_KIND_GRAPH) fc_graph_free_nodes(objs[i]);
        free(objs[i]);
    }
    free(objs);
    objs = NULL;
    obj_count = obj_cap = 0;
}

const char *fc_error_name(CUresult r) {
    switch (r) {
#define FC_NAME(x) case x: return #x;
        FC_NAME(CUDA_SUCCESS) FC_NAME(CUDA_ERROR_INVALID_VALUE) FC_NAME(CUDA_ERROR_OUT_OF_MEMORY)
        FC_NAME(CUDA_ERROR_NOT_INITIALIZED) FC_NAME(CUDA_ERROR_DEINITIALIZED)
        FC_NAME(CUDA_ERROR_STUB_LIBRARY) FC_NAME(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER)
        FC_NAME(CUDA_ERROR_DEVICE_UNAVAILABLE) FC_NAME(CUDA_ERROR_NO_DEVICE)
        FC_NAME(CUDA_ERROR_INVALID_DEVICE) FC_NAME(CUDA_ERROR_INVALID_IMAGE)
        FC_NAME(CUDA_ERROR_INVALID_CONTEXT) FC_NAME(CUDA_ERROR_NO_BINARY_FOR_GPU)
        FC_NAME(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED) FC_NAME(CUDA_ERROR_INVALID_PTX)
        FC_NAME(CUDA_ERROR_UNSUPPORTED_PTX_VERSION) FC_NAME(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED)
        FC_NAME(CUDA_ERROR_INVALID_HANDLE) FC_NAME(CUDA_ERROR_NOT_FOUND)
        FC_NAME(CUDA_ERROR_NOT_READY) FC_NAME(CUDA_ERROR_ILLEGAL_ADDRESS)
        FC_NAME(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) FC_NAME(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
        FC_NAME(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED) FC_NAME(CUDA_ERROR_CONTEXT_IS_DESTROYED)
        FC_NAME(CUDA_ERROR_LAUNCH_FAILED) FC_NAME(CUDA_ERROR_NOT_PERMITTED)
        FC_NAME(CUDA_ERROR_NOT_SUPPORTED) FC_NAME(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
        FC_NAME(CUDA_ERROR_UNKNOWN) FC_NAME(CUDA_ERROR_ILLEGAL_STATE)
        FC_NAME(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) FC_NAME(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        FC_NAME(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED) FC_NAME(CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
        FC_NAME(CUDA_ERROR_STREAM_CAPTURE_ISOLATION)
        FC_NAME(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) FC_NAME(CUDA_ERROR_CAPTURED_EVENT)
#undef FC_NAME
    }
    return NULL;
}
