/* host_device.c — the host backend: the CPU as a tandem device (DESIGN.md §3).
 *
 * Memory is page-aligned heap memory, "device pointers" are plain addresses, and streams are
 * synchronous: every copy, launch and GEMM has completed when its call returns. Events therefore
 * complete when they are recorded; they keep a monotonic timestamp (for elapsed time) behind a
 * mutex, so that one thread may record while others query, wait or time them. Several host
 * devices may be open at once (data + model), each independent.
 *
 * Threads: each device has its own worker pool (host_pool.h), started at open: the kernels'
 * host implementations and the GEMMs split their loops over it, with results bit-identical
 * for every thread count. Its size is TANDEM_HOST_THREADS, else the CPUs this process may use;
 * a device whose loops are not running leaves its workers blocked (no CPU). OpenBLAS's own
 * threading is set to 1 (process-wide) because the pool splits the GEMMs instead: one set of
 * threads, so a GEMM's threads never spin while the next kernel's want the cores. In the
 * two-host-device pipeline the data device's work (loader threads, the mel kernels, which run
 * on the calling thread) overlaps the model device's loops: up to pool + loaders + 1 runnable
 * threads on the cores; the model device's step dominates (the data device is busy 1-2 %).
 * Owns: each device's struct, pool and event state; no global state (but see OpenBLAS above).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "platform/device.h"
#include "platform/host/host_gemm.h"
#include "platform/host/host_mpi.h"
#include "platform/host/host_pool.h"
#include "platform/os/log.h"
#include "platform/os/os.h"
#include "platform/os/settings.h"
#include "kernels/registry.h"

/* Page alignment: above the 64 B the planner needs, and what pinned staging would get. */
#define HOST_ALIGN 4096
#define HOST_DEFAULT_DEVICES 2

typedef struct host_device {
    atomic_long live_allocs; /* mem + pinned allocations not yet freed (leak report at close) */
    tandem_host_pool *pool;  /* runs the parallel loops of launches and GEMMs (host_pool.h) */
} host_device;

typedef struct host_event {
    tandem_mutex m;
    uint64_t t_ns;       /* monotonic time of the last record */
    uint64_t generation; /* number of records; 0 = never recorded */
} host_event;

static const tandem_backend_ops host_ops;

static void *ptr_of(tandem_dptr p) { return (void *)(uintptr_t)p; }

static int dev_ordinal(const tandem_device *dev) { return dev->info.ordinal; }

/* ---- enumeration and info ------------------------------------------------------------------ */

tandem_status tandem_host_device_count(int *count) {
    if (!count) return tandem_fail(TANDEM_E_INVALID, "tandem_host_device_count: count is NULL");
    int n = tandem_settings_host_devices(); /* validated when set */
    *count = n == 0 ? HOST_DEFAULT_DEVICES : n == TANDEM_HOST_DEVICES_NONE ? 0 : n;
    return TANDEM_OK;
}

/* The "model name" line of /proc/cpuinfo (x86), else the machine name from uname. */
static void cpu_model(char *out, size_t cap) {
    char *text = NULL;
    size_t len = 0;
    out[0] = '\0';
    if (tandem_file_read_all("/proc/cpuinfo", &text, &len) == TANDEM_OK) {
        const char *keys[] = {"model name", "Model", "cpu model", "Hardware"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0] && !out[0]; k++) {
            for (char *line = text; line && *line;) {
                char *nl = strchr(line, '\n');
                size_t klen = strlen(keys[k]);
                if (strncmp(line, keys[k], klen) == 0 && (line[klen] == ' ' || line[klen] == '\t' ||
                                                          line[klen] == ':')) {
                    char *colon = strchr(line, ':');
                    if (colon && (!nl || colon < nl)) {
                        const char *v = colon + 1;
                        while (*v == ' ' || *v == '\t') v++;
                        size_t vlen = nl ? (size_t)(nl - v) : strlen(v);
                        if (vlen >= cap) vlen = cap - 1;
                        memcpy(out, v, vlen);
                        out[vlen] = '\0';
                        break;
                    }
                }
                line = nl ? nl + 1 : NULL;
            }
        }
        tandem_free(text);
    }
    if (!out[0]) {
        struct utsname u;
        snprintf(out, cap, "%s", uname(&u) == 0 ? u.machine : "unknown");
    }
}

tandem_status tandem_host_device_open(int ordinal, tandem_device **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_host_device_open: out is NULL");
    *out = NULL;
    int count = 0;
    TANDEM_TRY(tandem_host_device_count(&count));
    if (ordinal < 0 || ordinal >= count)
        return tandem_fail(TANDEM_E_INVALID,
                           "host device %d does not exist: %d host devices (for more: runtime option "
                           "host_devices, TANDEM_HOST_DEVICES in the CLI)",
                           ordinal, count);
    tandem_device *dev = tandem_calloc(1, sizeof *dev);
    host_device *h = tandem_calloc(1, sizeof *h);
    if (!dev || !h) {
        tandem_free(dev);
        tandem_free(h);
        return tandem_fail(TANDEM_E_NOMEM, "host device %d: out of memory for the device struct", ordinal);
    }
    atomic_init(&h->live_allocs, 0);
    int threads = 0;
    char pool_name[16];
    snprintf(pool_name, sizeof pool_name, "host%d", ordinal);
    threads = tandem_host_pool_default_threads();
    tandem_status st = tandem_host_pool_create(threads, pool_name, &h->pool);
    if (st != TANDEM_OK) {
        tandem_free(dev);
        tandem_free(h);
        return st;
    }
    /* The pool splits GEMMs; OpenBLAS threads on top of it would oversubscribe the cores. */
    (void)tandem_host_blas_set_threads(1);
    dev->ops = &host_ops;
    dev->impl = h;
    tandem_device_info *info = &dev->info;
    info->backend = TANDEM_BACKEND_HOST;
    info->ordinal = ordinal;
    char model[96];
    cpu_model(model, sizeof model);
    snprintf(info->name, sizeof info->name, "host CPU (%s)", model);
    info->cc_major = info->cc_minor = 0;
    info->total_memory = tandem_ram_bytes();
    info->multiprocessors = tandem_cpu_count();
    info->supports_bf16 = 0;
    tandem_logf(TANDEM_LOG_DEBUG, "host device %d: %d threads (%s GEMM, OpenBLAS threads %d)", ordinal,
                threads, tandem_host_gemm_impl(), tandem_host_blas_threads());
    *out = dev;
    return TANDEM_OK;
}

static void host_close(tandem_device *dev) {
    host_device *h = dev->impl;
    long live = atomic_load(&h->live_allocs);
    if (live != 0)
        tandem_logf(TANDEM_LOG_WARN, "host device %d closed with %ld allocations not freed",
                    dev_ordinal(dev), live);
    tandem_host_pool_destroy(h->pool);
    tandem_free(h);
    tandem_free(dev);
}

static tandem_status host_sync(tandem_device *dev) {
    (void)dev; /* every operation completed when it was issued */
    return TANDEM_OK;
}

static int host_can_access_peer(const tandem_device *dst, const tandem_device *src) {
    /* Host devices share one address space. */
    return dst->ops == &host_ops && src->ops == &host_ops;
}

/* ---- memory ------------------------------------------------------------------------------------ */

static tandem_status host_alloc(tandem_device *dev, size_t bytes, void **out, const char *what) {
    void *p = tandem_aligned_alloc(HOST_ALIGN, bytes);
    if (!p)
        return tandem_fail(TANDEM_E_NOMEM, "host device %d: %s of %zu bytes failed", dev_ordinal(dev),
                           what, bytes);
    atomic_fetch_add(&((host_device *)dev->impl)->live_allocs, 1);
    *out = p;
    return TANDEM_OK;
}

static void host_release(tandem_device *dev, void *p) {
    if (!p) return;
    atomic_fetch_sub(&((host_device *)dev->impl)->live_allocs, 1);
    tandem_aligned_free(p);
}

static tandem_status host_mem_alloc(tandem_device *dev, size_t bytes, tandem_dptr *out) {
    void *p = NULL;
    TANDEM_TRY(host_alloc(dev, bytes, &p, "mem_alloc"));
    *out = (tandem_dptr)(uintptr_t)p;
    return TANDEM_OK;
}

static void host_mem_free(tandem_device *dev, tandem_dptr p) { host_release(dev, ptr_of(p)); }

static tandem_status host_alloc_pinned(tandem_device *dev, size_t bytes, void **out) {
    return host_alloc(dev, bytes, out, "host_alloc_pinned");
}

static void host_free_pinned(tandem_device *dev, void *p) { host_release(dev, p); }

/* ---- streams and events ------------------------------------------------------------------------ */

static tandem_status host_stream_create(tandem_device *dev, tandem_stream *s) {
    (void)dev;
    s->impl = NULL; /* nothing to queue: work runs when issued */
    return TANDEM_OK;
}

static void host_stream_destroy(tandem_stream *s) { (void)s; }

static tandem_status host_stream_sync(tandem_stream *s) {
    (void)s;
    return TANDEM_OK;
}

static tandem_status host_event_create(tandem_device *dev, tandem_event *e) {
    host_event *he = tandem_calloc(1, sizeof *he);
    if (!he) return tandem_fail(TANDEM_E_NOMEM, "host device %d: out of memory for an event", dev_ordinal(dev));
    tandem_mutex_init(&he->m);
    e->impl = he;
    return TANDEM_OK;
}

static void host_event_destroy(tandem_event *e) {
    host_event *he = e->impl;
    if (!he) return;
    tandem_mutex_destroy(&he->m);
    tandem_free(he);
    e->impl = NULL;
}

static tandem_status host_event_record(tandem_event *e, tandem_stream *s) {
    (void)s; /* everything issued on s before this call has already completed */
    host_event *he = e->impl;
    uint64_t now = tandem_now_ns();
    tandem_mutex_lock(&he->m);
    he->t_ns = now;
    he->generation++;
    tandem_mutex_unlock(&he->m);
    return TANDEM_OK;
}

/* A recorded host event has completed, and one never recorded counts as complete (as in CUDA),
 * so waiting, querying and synchronising return at once. */
static tandem_status host_stream_wait_event(tandem_stream *s, tandem_event *e) {
    (void)s;
    (void)e;
    return TANDEM_OK;
}

static tandem_status host_event_query(tandem_event *e, int *done) {
    (void)e;
    *done = 1;
    return TANDEM_OK;
}

static tandem_status host_event_sync(tandem_event *e) {
    (void)e;
    return TANDEM_OK;
}

static tandem_status host_event_elapsed_ms(tandem_event *start, tandem_event *end, float *ms) {
    host_event *a = start->impl, *b = end->impl;
    uint64_t ta, tb, ga, gb;
    tandem_mutex_lock(&a->m);
    ta = a->t_ns;
    ga = a->generation;
    tandem_mutex_unlock(&a->m);
    tandem_mutex_lock(&b->m);
    tb = b->t_ns;
    gb = b->generation;
    tandem_mutex_unlock(&b->m);
    if (ga == 0 || gb == 0)
        return tandem_fail(TANDEM_E_STATE, "event_elapsed_ms: the %s event was never recorded",
                           ga == 0 ? "start" : "end");
    /* Signed, like cuEventElapsedTime when end was recorded before start. */
    *ms = (float)((double)(int64_t)(tb - ta) / 1e6);
    return TANDEM_OK;
}

/* ---- copies ----------------------------------------------------------------------------------- */

static tandem_status check_copy(const char *what, tandem_stream *s, const void *dst, const void *src,
                                size_t bytes) {
    if (bytes > 0 && (!dst || !src))
        return tandem_fail(TANDEM_E_INVALID, "host device %d: %s of %zu bytes with a NULL %s",
                           dev_ordinal(s->dev), what, bytes, dst ? "source" : "destination");
    return TANDEM_OK;
}

static tandem_status host_copy_h2d(tandem_stream *s, tandem_dptr dst, const void *src, size_t bytes) {
    TANDEM_TRY(check_copy("copy_h2d", s, ptr_of(dst), src, bytes));
    if (bytes) memmove(ptr_of(dst), src, bytes);
    return TANDEM_OK;
}

static tandem_status host_copy_d2h(tandem_stream *s, void *dst, tandem_dptr src, size_t bytes) {
    TANDEM_TRY(check_copy("copy_d2h", s, dst, ptr_of(src), bytes));
    if (bytes) memmove(dst, ptr_of(src), bytes);
    return TANDEM_OK;
}

static tandem_status host_copy_d2d(tandem_stream *s, tandem_dptr dst, tandem_dptr src, size_t bytes) {
    TANDEM_TRY(check_copy("copy_d2d", s, ptr_of(dst), ptr_of(src), bytes));
    if (bytes) memmove(ptr_of(dst), ptr_of(src), bytes);
    return TANDEM_OK;
}

static tandem_status host_copy_peer(tandem_stream *s, tandem_device *dst_dev, tandem_dptr dst,
                                    tandem_dptr src, size_t bytes) {
    if (!dst_dev || dst_dev->ops != &host_ops)
        return tandem_fail(TANDEM_E_INVALID,
                           "host device %d: copy_peer to a %s device; the host backend copies only "
                           "between host devices",
                           dev_ordinal(s->dev), dst_dev ? dst_dev->ops->name : "NULL");
    TANDEM_TRY(check_copy("copy_peer", s, ptr_of(dst), ptr_of(src), bytes));
    if (bytes) memmove(ptr_of(dst), ptr_of(src), bytes);
    return TANDEM_OK;
}

/* ---- kernels and GEMM ------------------------------------------------------------------------- */

static tandem_status host_launch(tandem_stream *s, int kernel_id, const tandem_launch_dims *dims,
                                 const void *args, size_t args_size) {
    (void)dims; /* host implementations cover the whole problem in one call */
    if (kernel_id < 0 || kernel_id >= TANDEM_KERNEL_COUNT)
        return tandem_fail(TANDEM_E_INVALID, "host device %d: launch of kernel id %d; expected 0..%d",
                           dev_ordinal(s->dev), kernel_id, TANDEM_KERNEL_COUNT - 1);
    const tandem_kernel_info *k = &tandem_kernel_table[kernel_id];
    if (!args || args_size != k->args_size)
        return tandem_fail(TANDEM_E_INVALID,
                           "host device %d: launch of %s with %zu argument bytes%s; expected %zu",
                           dev_ordinal(s->dev), k->name, args_size, args ? "" : " (NULL)", k->args_size);
    tandem_host_pool *prev = tandem_host_pool_enter(((host_device *)s->dev->impl)->pool);
    k->host(args);
    tandem_host_pool_leave(prev);
    return TANDEM_OK;
}

/* The host backend trains in fp32 (runtime/model/model.h, "Precision"): a bf16 operand is refused
 * rather than read as floats. */
static tandem_status host_gemm_types(const tandem_device *dev, const tandem_gemm_desc *d) {
    if (d && (d->a_type != TANDEM_F32 || d->b_type != TANDEM_F32 || d->c_type != TANDEM_F32))
        return tandem_fail(TANDEM_E_UNSUPPORTED,
                           "host device %d: gemm with A %s, B %s, C %s; the host GEMM takes f32 "
                           "only (bf16 GEMMs run on cuda devices)",
                           dev_ordinal(dev), tandem_dtype_name(d->a_type),
                           tandem_dtype_name(d->b_type), tandem_dtype_name(d->c_type));
    return TANDEM_OK;
}

static tandem_status host_gemm_prepare(tandem_device *dev, const tandem_gemm_desc *d) {
    /* nothing to choose: the host GEMM handles every f32 shape as it comes */
    return host_gemm_types(dev, d);
}

static tandem_status host_gemm_run(tandem_stream *s, const tandem_gemm_desc *d, float alpha,
                                   tandem_dptr a, tandem_dptr b, float beta, tandem_dptr c) {
    if (!d || !a || !b || !c)
        return tandem_fail(TANDEM_E_INVALID, "host device %d: gemm with a NULL %s", dev_ordinal(s->dev),
                           !d ? "descriptor" : !a ? "A" : !b ? "B" : "C");
    TANDEM_TRY(host_gemm_types(s->dev, d));
    if (d->c_src && beta != 0.0f) /* beta C from c_src: C starts as its copy (each item's m x n) */
        for (int64_t q = 0; q < d->batch; q++)
            memcpy((float *)ptr_of(c) + q * d->stride_c, (const float *)ptr_of(d->c_src) + q * d->stride_c,
                   (size_t)(d->m * d->n) * sizeof(float));
    tandem_host_pool *prev = tandem_host_pool_enter(((host_device *)s->dev->impl)->pool);
    tandem_status st = tandem_host_gemm(d, alpha, ptr_of(a), ptr_of(b), beta, ptr_of(c));
    tandem_host_pool_leave(prev);
    return st;
}

static const tandem_backend_ops host_ops = {
    .name = "host",
    .close = host_close,
    .sync = host_sync,
    .can_access_peer = host_can_access_peer,
    .mem_alloc = host_mem_alloc,
    .mem_free = host_mem_free,
    .host_alloc_pinned = host_alloc_pinned,
    .host_free_pinned = host_free_pinned,
    .stream_create = host_stream_create,
    .stream_destroy = host_stream_destroy,
    .stream_sync = host_stream_sync,
    .event_create = host_event_create,
    .event_destroy = host_event_destroy,
    .event_record = host_event_record,
    .stream_wait_event = host_stream_wait_event,
    .event_query = host_event_query,
    .event_sync = host_event_sync,
    .event_elapsed_ms = host_event_elapsed_ms,
    .copy_h2d = host_copy_h2d,
    .copy_d2h = host_copy_d2h,
    .copy_d2d = host_copy_d2d,
    .copy_peer = host_copy_peer,
    .launch = host_launch,
    .gemm_prepare = host_gemm_prepare,
    .gemm = host_gemm_run,
    /* collectives over MPI (platform/host/host_mpi.c; without MPI they say how to get it) */
    .coll_unique_id = tandem_host_coll_unique_id,
    .coll_open = tandem_host_coll_open,
    .coll_open_local = tandem_host_coll_open_local,
    .coll_close = tandem_host_coll_close,
    .coll_abort = tandem_host_coll_abort,
    .coll_group = tandem_host_coll_group,
    .coll_all_reduce_sum = tandem_host_coll_all_reduce_sum,
    .coll_broadcast = tandem_host_coll_broadcast,
    .coll_check = tandem_host_coll_check,
};

int tandem_host_device_threads(const tandem_device *dev) {
    if (!dev || dev->ops != &host_ops) return 0;
    return tandem_host_pool_threads(((const host_device *)dev->impl)->pool);
}
