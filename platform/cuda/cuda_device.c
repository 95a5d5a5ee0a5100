/* cuda_device.c — the cuda backend (platform/device.h) on the driver API: devices with their
 * primary contexts, the fatbin module and every registered kernel resolved at open, peer
 * access, device and pinned memory, streams, events, copies and launches. GEMM lives in
 * cuda_blaslt.c; loading the driver in cuda_driver.c.
 *
 * Owns (process-wide, under slots_lock): one slot per CUDA ordinal — the retained primary
 * context, the module and its functions, shared by every tandem_device opened on that
 * ordinal (one device may serve both roles) — and the matrix of enabled peer accesses.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "platform/cuda/cuda_internal.h"
#include "platform/cuda/nccl.h"
#include "platform/cuda/fatbin.h"
#include "platform/os/log.h"

#define MAX_CUDA_DEVICES 16

typedef struct cuda_slot {
    int refs; /* open tandem_devices on this ordinal */
    CUdevice cu_dev;
    CUcontext ctx;
    CUmodule module;
    CUfunction funcs[TANDEM_KERNEL_COUNT];
    unsigned max_shmem[TANDEM_KERNEL_COUNT];   /* dynamic shared memory each kernel may launch with */
    unsigned max_threads[TANDEM_KERNEL_COUNT]; /* its block size limit (launch bounds, registers) */
    tandem_device_info info;
} cuda_slot;

static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static cuda_slot slots[MAX_CUDA_DEVICES];
static int peer_on[MAX_CUDA_DEVICES][MAX_CUDA_DEVICES]; /* [dst][src]: dst's context maps src's memory */

static const tandem_backend_ops cuda_ops;
static void cuda_close(tandem_device *dev);

tandem_status tandem_cuda_make_current(const tandem_cuda_dev *d) {
    CUcontext cur = NULL;
    TANDEM_CU_TRY(cuCtxGetCurrent, (&cur), "device %d", d->ordinal);
    if (cur != d->ctx) TANDEM_CU_TRY(cuCtxSetCurrent, (d->ctx), "device %d", d->ordinal);
    return TANDEM_OK;
}

/* ---- slots: context + module per ordinal ---- */

/* Dynamic shared memory above 48 KiB (minus the kernel's static part) needs an explicit
 * opt-in per function; without it such a launch fails (CUDA_ERROR_INVALID_VALUE). Every kernel
 * is opted in to the device's limit, which is recorded, with the block size the kernel allows
 * (its __launch_bounds__, or fewer if its registers do not fit), so that a launch, and a plan
 * (cuda_launch_check), can say beforehand what fits. */
static tandem_status opt_in_shared(cuda_slot *sl, int ordinal, int k) {
    const char *entry = tandem_kernel_table[k].entry;
    int optin = 0, stat = 0, threads = 0;
    TANDEM_CU_TRY(cuFuncGetAttribute, (&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, sl->funcs[k]),
                  "device %d, kernel %s, threads per block", ordinal, entry);
    sl->max_threads[k] = (unsigned)threads;
    TANDEM_CU_TRY(cuDeviceGetAttribute, (&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, sl->cu_dev),
                  "device %d, shared memory per block (opt-in)", ordinal);
    TANDEM_CU_TRY(cuFuncGetAttribute, (&stat, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, sl->funcs[k]),
                  "device %d, kernel %s, static shared memory", ordinal, entry);
    int dyn = optin > stat ? optin - stat : 0;
    TANDEM_CU_TRY(cuFuncSetAttribute, (sl->funcs[k], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dyn),
                  "device %d, kernel %s: opting in to %d bytes of dynamic shared memory (%d per block, %d "
                  "static)", ordinal, entry, dyn, optin, stat);
    sl->max_shmem[k] = (unsigned)dyn;
    return TANDEM_OK;
}

/* Load the fatbin into the slot's (current) context and resolve every registered kernel. */
static tandem_status load_module(cuda_slot *sl, int ordinal) {
    const void *bin = NULL;
    size_t len = 0;
    void *owned = NULL;
    TANDEM_TRY(tandem_fatbin_load(&bin, &len, &owned));
    tandem_fatbin_summary *sum = tandem_malloc(sizeof *sum);
    if (!sum) {
        tandem_free(owned);
        return tandem_fail(TANDEM_E_NOMEM, "cuda device %d: no memory to parse the fatbin", ordinal);
    }
    char archs[256];
    tandem_status st = tandem_fatbin_parse(bin, len, sum);
    if (st == TANDEM_OK && sum->image_count == 0)
        st = tandem_fail(TANDEM_E_UNSUPPORTED,
                         "cuda device %d: this build has no fatbin (nvcc was not found when it was "
                         "built, or $TANDEM_FATBIN is empty): rebuild with CUDA_HOME set or use the "
                         "host backend",
                         ordinal);
    if (st == TANDEM_OK) {
        tandem_fatbin_arch_string(sum, archs, sizeof archs);
        CUresult r = tandem_cu.cuModuleLoadData(&sl->module, bin);
        if (r != CUDA_SUCCESS)
            st = tandem_cuda_fail("cuModuleLoadData", r,
                                  "device %d (%s, compute capability %d.%d); the fatbin holds %s%s",
                                  ordinal, sl->info.name, sl->info.cc_major, sl->info.cc_minor, archs,
                                  tandem_fatbin_runs_on(sum, sl->info.cc_major, sl->info.cc_minor)
                                      ? ""
                                      : ", none of which runs on this device");
    }
    for (int k = 0; st == TANDEM_OK && k < TANDEM_KERNEL_COUNT; k++) {
        const char *entry = tandem_kernel_table[k].entry;
        CUresult r = tandem_cu.cuModuleGetFunction(&sl->funcs[k], sl->module, entry);
        if (r != CUDA_SUCCESS) {
            char err[192];
            tandem_cuda_error_text(r, err, sizeof err);
            st = tandem_fail(TANDEM_E_DEVICE,
                             "cuda device %d: kernel %s is not in the fatbin (architectures: %s): "
                             "cuModuleGetFunction failed: %s; rebuild the fatbin",
                             ordinal, entry, archs, err);
        }
        if (st == TANDEM_OK) st = opt_in_shared(sl, ordinal, k);
    }
    if (st != TANDEM_OK && sl->module) {
        tandem_cu.cuModuleUnload(sl->module);
        sl->module = NULL;
    }
    tandem_free(sum);
    tandem_free(owned); /* the driver keeps its own copy of the image */
    return st;
}

/* Enable peer access between ordinal `o` (its context current) and every other open slot,
 * in each direction the driver allows. A failure leaves that pair on the staged path. */
static void enable_peers(int o) {
    for (int j = 0; j < MAX_CUDA_DEVICES; j++) {
        if (j == o || slots[j].refs == 0) continue;
        const int pairs[2][2] = {{o, j}, {j, o}};
        for (int p = 0; p < 2; p++) {
            int dst = pairs[p][0], src = pairs[p][1], can = 0;
            if (tandem_cu.cuDeviceCanAccessPeer(&can, slots[dst].cu_dev, slots[src].cu_dev) != CUDA_SUCCESS || !can)
                continue;
            CUresult r = tandem_cu.cuCtxSetCurrent(slots[dst].ctx);
            if (r == CUDA_SUCCESS) r = tandem_cu.cuCtxEnablePeerAccess(slots[src].ctx, 0);
            if (r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
                peer_on[dst][src] = 1;
            } else {
                tandem_cuda_fail("cuCtxEnablePeerAccess", r, "device %d reading device %d", dst, src);
                tandem_logf(TANDEM_LOG_WARN, "%s: copies between them are staged through host memory",
                            tandem_last_error());
            }
        }
    }
    tandem_cu.cuCtxSetCurrent(slots[o].ctx);
}

/* Host threads that wait for the device (stream and context synchronisation) block on a
 * synchronisation primitive instead of spinning: the trainer, the producer and the loaders share
 * the CPU with audio decoding. Set only while the primary context is inactive: a context an
 * embedding program already uses keeps the scheduling it chose. */
static tandem_status set_blocking_sync(CUdevice dev, int o) {
    unsigned flags = 0;
    int active = 0;
    TANDEM_CU_TRY(cuDevicePrimaryCtxGetState, (dev, &flags, &active), "device %d", o);
    if (active) {
        if ((flags & CU_CTX_SCHED_MASK) != CU_CTX_SCHED_BLOCKING_SYNC)
            tandem_logf(TANDEM_LOG_DEBUG, "cuda device %d: primary context already active with flags 0x%x; "
                        "kept (host waits may spin)", o, flags);
        return TANDEM_OK;
    }
    TANDEM_CU_TRY(cuDevicePrimaryCtxSetFlags, (dev, (flags & ~CU_CTX_SCHED_MASK) | CU_CTX_SCHED_BLOCKING_SYNC),
                  "device %d", o);
    return TANDEM_OK;
}

static tandem_status slot_acquire(int o) {
    cuda_slot *sl = &slots[o];
    if (sl->refs > 0) {
        sl->refs++;
        return TANDEM_OK;
    }
    memset(sl, 0, sizeof *sl);
    TANDEM_TRY(tandem_cuda_query(o, &sl->info));
    TANDEM_CU_TRY(cuDeviceGet, (&sl->cu_dev, o), "device %d", o);
    TANDEM_TRY(set_blocking_sync(sl->cu_dev, o));
    TANDEM_CU_TRY(cuDevicePrimaryCtxRetain, (&sl->ctx, sl->cu_dev), "device %d", o);
    tandem_status st = TANDEM_OK;
    CUresult r = tandem_cu.cuCtxSetCurrent(sl->ctx);
    if (r != CUDA_SUCCESS) st = tandem_cuda_fail("cuCtxSetCurrent", r, "device %d", o);
    if (st == TANDEM_OK) st = load_module(sl, o);
    if (st != TANDEM_OK) {
        tandem_cu.cuDevicePrimaryCtxRelease(sl->cu_dev);
        memset(sl, 0, sizeof *sl);
        return st;
    }
    sl->refs = 1;
    enable_peers(o);
    return TANDEM_OK;
}

static void slot_release(int o) {
    cuda_slot *sl = &slots[o];
    if (--sl->refs > 0) return;
    if (tandem_cu.cuCtxSetCurrent(sl->ctx) == CUDA_SUCCESS)
        TANDEM_CU_WARN(cuModuleUnload, (sl->module), "device %d", o);
    for (int j = 0; j < MAX_CUDA_DEVICES; j++) peer_on[o][j] = peer_on[j][o] = 0;
    TANDEM_CU_WARN(cuDevicePrimaryCtxRelease, (sl->cu_dev), "device %d", o);
    memset(sl, 0, sizeof *sl);
}

/* ---- open / close ---- */

static tandem_status device_open(int ordinal, tandem_device **out) {
    *out = NULL;
    int n = 0;
    TANDEM_TRY(tandem_cuda_device_count(&n));
    if (ordinal < 0 || ordinal >= n || ordinal >= MAX_CUDA_DEVICES)
        return tandem_fail(TANDEM_E_INVALID, "cuda device %d: expected 0..%d (%d device%s found)", ordinal,
                           (n < MAX_CUDA_DEVICES ? n : MAX_CUDA_DEVICES) - 1, n, n == 1 ? "" : "s");
    tandem_device *dev = tandem_calloc(1, sizeof *dev);
    tandem_cuda_dev *d = tandem_calloc(1, sizeof *d);
    if (!dev || !d) {
        tandem_free(dev);
        tandem_free(d);
        return tandem_fail(TANDEM_E_NOMEM, "cuda device %d: out of memory for the handle", ordinal);
    }
    pthread_mutex_lock(&slots_lock);
    tandem_status st = slot_acquire(ordinal);
    if (st == TANDEM_OK) {
        const cuda_slot *sl = &slots[ordinal];
        d->ordinal = ordinal;
        d->cu_dev = sl->cu_dev;
        d->ctx = sl->ctx;
        memcpy(d->funcs, sl->funcs, sizeof d->funcs);
        memcpy(d->max_shmem, sl->max_shmem, sizeof d->max_shmem);
        memcpy(d->max_threads, sl->max_threads, sizeof d->max_threads);
        dev->info = sl->info;
    }
    pthread_mutex_unlock(&slots_lock);
    if (st == TANDEM_OK) {
        dev->ops = &cuda_ops;
        dev->impl = d;
        st = tandem_cuda_make_current(d);
        if (st == TANDEM_OK) st = tandem_cuda_gemm_init(d);
        if (st != TANDEM_OK) {
            pthread_mutex_lock(&slots_lock);
            slot_release(ordinal);
            pthread_mutex_unlock(&slots_lock);
        }
    }
    if (st != TANDEM_OK) {
        tandem_free(d);
        tandem_free(dev);
        return st;
    }
    tandem_logf(TANDEM_LOG_DEBUG, "cuda device %d: %s, compute capability %d.%d, %zu MiB, %d SMs", ordinal,
                dev->info.name, dev->info.cc_major, dev->info.cc_minor, dev->info.total_memory >> 20,
                dev->info.multiprocessors);
    *out = dev;
    return TANDEM_OK;
}

static void cuda_close(tandem_device *dev) {
    tandem_cuda_dev *d = tandem_cuda_impl(dev);
    if (tandem_cuda_make_current(d) == TANDEM_OK) tandem_cuda_gemm_free(d);
    pthread_mutex_lock(&slots_lock);
    slot_release(d->ordinal);
    pthread_mutex_unlock(&slots_lock);
    tandem_free(d);
    tandem_free(dev);
}

static tandem_status cuda_sync(tandem_device *dev) {
    tandem_cuda_dev *d = tandem_cuda_impl(dev);
    TANDEM_TRY(tandem_cuda_make_current(d));
    TANDEM_CU_TRY(cuCtxSynchronize, (), "device %d", d->ordinal);
    return TANDEM_OK;
}

static int cuda_can_access_peer(const tandem_device *dst, const tandem_device *src) {
    int a = tandem_cuda_impl(dst)->ordinal, b = tandem_cuda_impl(src)->ordinal;
    if (a == b) return 1;
    pthread_mutex_lock(&slots_lock);
    int on = peer_on[a][b];
    pthread_mutex_unlock(&slots_lock);
    return on;
}

/* ---- memory ---- */

static tandem_status cuda_mem_alloc(tandem_device *dev, size_t bytes, tandem_dptr *out) {
    tandem_cuda_dev *d = tandem_cuda_impl(dev);
    *out = 0;
    if (bytes == 0) return tandem_fail(TANDEM_E_INVALID, "cuda device %d: allocation of 0 bytes", d->ordinal);
    TANDEM_TRY(tandem_cuda_make_current(d));
    CUdeviceptr p = 0;
    TANDEM_CU_TRY(cuMemAlloc, (&p, bytes), "device %d, %zu bytes (%zu MiB)", d->ordinal, bytes, bytes >> 20);
    tandem_alloc_note();
    *out = (tandem_dptr)p;
    return TANDEM_OK;
}

static void cuda_mem_free(tandem_device *dev, tandem_dptr p) {
    tandem_cuda_dev *d = tandem_cuda_impl(dev);
    if (!p || tandem_cuda_make_current(d) != TANDEM_OK) return;
    TANDEM_CU_WARN(cuMemFree, ((CUdeviceptr)p), "device %d", d->ordinal);
}

static tandem_status cuda_host_alloc_pinned(tandem_device *dev, size_t bytes, void **out) {
    tandem_cuda_dev *d = tandem_cuda_impl(dev);
    *out = NULL;
    if (bytes == 0) return tandem_fail(TANDEM_E_INVALID, "cuda device %d: pinned allocation of 0 bytes", d->ordinal);
    TANDEM_TRY(tandem_cuda_make_current(d));
    /* portable: staging buffers are used by streams of both devices */
    TANDEM_CU_TRY(cuMemHostAlloc, (out, bytes, CU_MEMHOSTALLOC_PORTABLE), "device %d, %zu pinned bytes",
                  d->ordinal, bytes);
    tandem_alloc_note();
    return TANDEM_OK;
}

static void cuda_host_free_pinned(tandem_device *dev, void *p) {
    tandem_cuda_dev *d = tandem_cuda_impl(dev);
    if (!p || tandem_cuda_make_current(d) != TANDEM_OK) return;
    TANDEM_CU_WARN(cuMemFreeHost, (p), "device %d", d->ordinal);
}

/* ---- streams and events ---- */

static tandem_status cuda_stream_create(tandem_device *dev, tandem_stream *s) {
    tandem_cuda_dev *d = tandem_cuda_impl(dev);
    s->impl = NULL;
    TANDEM_TRY(tandem_cuda_make_current(d));
    tandem_cuda_stream_impl *si = tandem_calloc(1, sizeof *si);
    if (!si) return tandem_fail(TANDEM_E_NOMEM, "cuda device %d: no memory for a stream", d->ordinal);
    /* non-blocking: never serialised with the legacy default stream */
    CUresult r = tandem_cu.cuStreamCreate(&si->cs, CU_STREAM_NON_BLOCKING);
    tandem_status st = r == CUDA_SUCCESS ? TANDEM_OK : tandem_cuda_fail("cuStreamCreate", r, "device %d", d->ordinal);
    if (st == TANDEM_OK && d->lt) st = tandem_cuda_gemm_stream_init(d, si);
    if (st != TANDEM_OK) {
        if (si->cs) tandem_cu.cuStreamDestroy(si->cs);
        tandem_free(si);
        return st;
    }
    s->impl = si;
    return TANDEM_OK;
}

static void cuda_stream_destroy(tandem_stream *s) {
    tandem_cuda_dev *d = tandem_cuda_impl(s->dev);
    if (!s->impl || tandem_cuda_make_current(d) != TANDEM_OK) return;
    tandem_cuda_stream_impl *si = s->impl;
    TANDEM_CU_WARN(cuStreamDestroy, (si->cs), "device %d", d->ordinal);
    /* after the destroy: cuMemFree waits for the work still queued on it */
    if (si->lt_workspace) TANDEM_CU_WARN(cuMemFree, (si->lt_workspace), "device %d, cuBLASLt workspace", d->ordinal);
    tandem_free(si);
    s->impl = NULL;
}

static tandem_status cuda_stream_sync(tandem_stream *s) {
    tandem_cuda_dev *d = tandem_cuda_impl(s->dev);
    TANDEM_TRY(tandem_cuda_make_current(d));
    TANDEM_CU_TRY(cuStreamSynchronize, (tandem_cuda_stream(s)), "device %d", d->ordinal);
    return TANDEM_OK;
}

static tandem_status cuda_event_create(tandem_device *dev, tandem_event *e) {
    tandem_cuda_dev *d = tandem_cuda_impl(dev);
    TANDEM_TRY(tandem_cuda_make_current(d));
    CUevent ev = NULL;
    /* with timing; a thread waiting on it (cuEventSynchronize) sleeps instead of spinning on a
     * CPU the audio decoders need (issue 11 item 5) */
    TANDEM_CU_TRY(cuEventCreate, (&ev, CU_EVENT_BLOCKING_SYNC), "device %d", d->ordinal);
    e->impl = ev;
    return TANDEM_OK;
}

static void cuda_event_destroy(tandem_event *e) {
    tandem_cuda_dev *d = tandem_cuda_impl(e->dev);
    if (!e->impl || tandem_cuda_make_current(d) != TANDEM_OK) return;
    TANDEM_CU_WARN(cuEventDestroy, ((CUevent)e->impl), "device %d", d->ordinal);
    e->impl = NULL;
}

static tandem_status cuda_event_record(tandem_event *e, tandem_stream *s) {
    tandem_cuda_dev *d = tandem_cuda_impl(s->dev);
    TANDEM_TRY(tandem_cuda_make_current(d));
    const tandem_cuda_stream_impl *si = s->impl;
    /* In a capture a plain record would stay inside the graph; the step timer's and the ring's
     * events are read outside it, so they become external record nodes. */
    if (si->capturing)
        TANDEM_CU_TRY(cuEventRecordWithFlags, ((CUevent)e->impl, si->cs, CU_EVENT_RECORD_EXTERNAL), "device %d",
                      d->ordinal);
    else
        TANDEM_CU_TRY(cuEventRecord, ((CUevent)e->impl, si->cs), "device %d", d->ordinal);
    return TANDEM_OK;
}

static tandem_status cuda_stream_wait_event(tandem_stream *s, tandem_event *e) {
    tandem_cuda_dev *d = tandem_cuda_impl(s->dev);
    TANDEM_TRY(tandem_cuda_make_current(d));
    const unsigned flags = ((const tandem_cuda_stream_impl *)s->impl)->capturing ? CU_EVENT_WAIT_EXTERNAL : 0;
    TANDEM_CU_TRY(cuStreamWaitEvent, (tandem_cuda_stream(s), (CUevent)e->impl, flags),
                  "stream of device %d waiting on an event of device %d", d->ordinal,
                  tandem_cuda_impl(e->dev)->ordinal);
    return TANDEM_OK;
}

/* Plain record and wait even while capturing: capture-internal edges (fork / join). */
static tandem_status cuda_stream_order(tandem_stream *after, tandem_stream *before, tandem_event *e) {
    tandem_cuda_dev *d = tandem_cuda_impl(before->dev);
    TANDEM_TRY(tandem_cuda_make_current(d));
    TANDEM_CU_TRY(cuEventRecord, ((CUevent)e->impl, tandem_cuda_stream(before)), "device %d", d->ordinal);
    TANDEM_CU_TRY(cuStreamWaitEvent, (tandem_cuda_stream(after), (CUevent)e->impl, 0),
                  "device %d: a stream waiting on another's work", d->ordinal);
    return TANDEM_OK;
}

static tandem_status cuda_event_query(tandem_event *e, int *done) {
    tandem_cuda_dev *d = tandem_cuda_impl(e->dev);
    TANDEM_TRY(tandem_cuda_make_current(d));
    CUresult r = tandem_cu.cuEventQuery((CUevent)e->impl);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY) {
        *done = r == CUDA_SUCCESS;
        return TANDEM_OK;
    }
    return tandem_cuda_fail("cuEventQuery", r, "device %d", d->ordinal);
}

static tandem_status cuda_event_sync(tandem_event *e) {
    tandem_cuda_dev *d = tandem_cuda_impl(e->dev);
    TANDEM_TRY(tandem_cuda_make_current(d));
    TANDEM_CU_TRY(cuEventSynchronize, ((CUevent)e->impl), "device %d", d->ordinal);
    return TANDEM_OK;
}

static tandem_status cuda_event_elapsed_ms(tandem_event *start, tandem_event *end, float *ms) {
    tandem_cuda_dev *d = tandem_cuda_impl(start->dev);
    TANDEM_TRY(tandem_cuda_make_current(d));
    TANDEM_CU_TRY(cuEventElapsedTime, (ms, (CUevent)start->impl, (CUevent)end->impl), "device %d", d->ordinal);
    return TANDEM_OK;
}

/* ---- copies ---- */

static tandem_status cuda_copy_h2d(tandem_stream *s, tandem_dptr dst, const void *src, size_t bytes) {
    tandem_cuda_dev *d = tandem_cuda_impl(s->dev);
    if (bytes == 0) return TANDEM_OK;
    TANDEM_TRY(tandem_cuda_make_current(d));
    TANDEM_CU_TRY(cuMemcpyHtoDAsync, ((CUdeviceptr)dst, src, bytes, tandem_cuda_stream(s)),
                  "device %d, %zu bytes", d->ordinal, bytes);
    return TANDEM_OK;
}

static tandem_status cuda_copy_d2h(tandem_stream *s, void *dst, tandem_dptr src, size_t bytes) {
    tandem_cuda_dev *d = tandem_cuda_impl(s->dev);
    if (bytes == 0) return TANDEM_OK;
    TANDEM_TRY(tandem_cuda_make_current(d));
    TANDEM_CU_TRY(cuMemcpyDtoHAsync, (dst, (CUdeviceptr)src, bytes, tandem_cuda_stream(s)),
                  "device %d, %zu bytes", d->ordinal, bytes);
    return TANDEM_OK;
}

static tandem_status cuda_copy_d2d(tandem_stream *s, tandem_dptr dst, tandem_dptr src, size_t bytes) {
    tandem_cuda_dev *d = tandem_cuda_impl(s->dev);
    if (bytes == 0) return TANDEM_OK;
    TANDEM_TRY(tandem_cuda_make_current(d));
    TANDEM_CU_TRY(cuMemcpyDtoDAsync, ((CUdeviceptr)dst, (CUdeviceptr)src, bytes, tandem_cuda_stream(s)),
                  "device %d, %zu bytes", d->ordinal, bytes);
    return TANDEM_OK;
}

static tandem_status cuda_copy_peer(tandem_stream *s, tandem_device *dst_dev, tandem_dptr dst, tandem_dptr src,
                                    size_t bytes) {
    tandem_cuda_dev *d = tandem_cuda_impl(s->dev), *dd = tandem_cuda_impl(dst_dev);
    if (dd->ctx == d->ctx) return cuda_copy_d2d(s, dst, src, bytes);
    if (bytes == 0) return TANDEM_OK;
    TANDEM_TRY(tandem_cuda_make_current(d));
    TANDEM_CU_TRY(cuMemcpyPeerAsync,
                  ((CUdeviceptr)dst, dd->ctx, (CUdeviceptr)src, d->ctx, bytes, tandem_cuda_stream(s)),
                  "device %d to device %d, %zu bytes", d->ordinal, dd->ordinal, bytes);
    return TANDEM_OK;
}

/* ---- launch ---- */

static tandem_status cuda_launch_check(tandem_device *dev, int kernel_id, const tandem_launch_dims *dims) {
    const tandem_cuda_dev *d = tandem_cuda_impl(dev);
    if (dims->shmem > d->max_shmem[kernel_id])
        return tandem_fail(TANDEM_E_UNSUPPORTED,
                           "cuda launch of %s: %u bytes of dynamic shared memory; device %d (%s) allows this "
                           "kernel %u (its shared memory per block, opted in, minus the kernel's static part)",
                           tandem_kernel_table[kernel_id].name, dims->shmem, d->ordinal, dev->info.name,
                           d->max_shmem[kernel_id]);
    unsigned threads = dims->block[0] * dims->block[1] * dims->block[2];
    if (threads > d->max_threads[kernel_id])
        return tandem_fail(TANDEM_E_UNSUPPORTED,
                           "cuda launch of %s: block of %u threads; device %d (%s) runs this kernel with at most %u "
                           "(its __launch_bounds__ and registers per thread)",
                           tandem_kernel_table[kernel_id].name, threads, d->ordinal, dev->info.name,
                           d->max_threads[kernel_id]);
    return TANDEM_OK;
}

tandem_status tandem_cuda_launch(tandem_stream *s, int kernel_id, const tandem_launch_dims *dims,
                                 const void *args, size_t args_size) {
    tandem_cuda_dev *d = tandem_cuda_impl(s->dev);
    if (kernel_id < 0 || kernel_id >= TANDEM_KERNEL_COUNT)
        return tandem_fail(TANDEM_E_INVALID, "cuda launch: kernel id %d, expected 0..%d", kernel_id,
                           TANDEM_KERNEL_COUNT - 1);
    const tandem_kernel_info *k = &tandem_kernel_table[kernel_id];
    if (args_size != k->args_size || !args)
        return tandem_fail(TANDEM_E_INVALID, "cuda launch of %s: argument struct of %zu bytes, expected %zu",
                           k->name, args ? args_size : 0, k->args_size);
    if (!dims->grid[0] || !dims->grid[1] || !dims->grid[2] || !dims->block[0] || !dims->block[1] ||
        !dims->block[2])
        return tandem_fail(TANDEM_E_INVALID, "cuda launch of %s: empty geometry grid %ux%ux%u block %ux%ux%u",
                           k->name, dims->grid[0], dims->grid[1], dims->grid[2], dims->block[0],
                           dims->block[1], dims->block[2]);
    TANDEM_TRY(cuda_launch_check(s->dev, kernel_id, dims));
    TANDEM_TRY(tandem_cuda_make_current(d));
    /* every kernel takes exactly one parameter: its argument struct, passed by value */
    void *params[1] = {(void *)(uintptr_t)args};
    TANDEM_CU_TRY(cuLaunchKernel,
                  (d->funcs[kernel_id], dims->grid[0], dims->grid[1], dims->grid[2], dims->block[0],
                   dims->block[1], dims->block[2], dims->shmem, tandem_cuda_stream(s), params, NULL),
                  "kernel %s on device %d, grid %ux%ux%u, block %ux%ux%u, %u B shared", k->name, d->ordinal,
                  dims->grid[0], dims->grid[1], dims->grid[2], dims->block[0], dims->block[1],
                  dims->block[2], dims->shmem);
    return TANDEM_OK;
}

/* ---- the caller's context is put back on return ----
 * An embedding program may have a context of its own current on the calling thread: every
 * entry of the backend table (and tandem_cuda_device_open) saves the thread's current context
 * and restores it before returning, so Tandem's switches stay invisible to it. */

static CUcontext ctx_save(void) {
    CUcontext c = NULL;
    if (!tandem_cu.cuCtxGetCurrent || tandem_cu.cuCtxGetCurrent(&c) != CUDA_SUCCESS) c = NULL;
    return c;
}

static void ctx_restore(CUcontext prev) {
    CUcontext now = NULL;
    if (!tandem_cu.cuCtxGetCurrent || tandem_cu.cuCtxGetCurrent(&now) != CUDA_SUCCESS || now == prev) return;
    TANDEM_CU_WARN(cuCtxSetCurrent, (prev), "restoring the calling thread's context");
}

/* ---- graphs ---- */

typedef struct cuda_graph_impl {
    CUgraphExec exec; /* NULL until the first graph_end */
} cuda_graph_impl;

static tandem_status cuda_graph_create(tandem_device *dev, tandem_graph *g) {
    g->impl = tandem_calloc(1, sizeof(cuda_graph_impl));
    if (!g->impl) return tandem_fail(TANDEM_E_NOMEM, "cuda device %d: no memory for a graph", tandem_cuda_impl(dev)->ordinal);
    return TANDEM_OK;
}

static tandem_status cuda_graph_begin(tandem_graph *g, tandem_stream *s) {
    tandem_cuda_dev *d = tandem_cuda_impl(s->dev);
    TANDEM_TRY(tandem_cuda_make_current(d));
    tandem_cuda_stream_impl *si = s->impl;
    /* thread-local mode: a synchronising or allocating call from this thread during the capture
     * is an error, not a silent hole in the graph; the loader threads keep synchronising their
     * own events meanwhile, which global mode forbids (a real H100 failed the first step so) */
    TANDEM_CU_TRY(cuStreamBeginCapture, (si->cs, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "device %d", d->ordinal);
    si->capturing = 1;
    (void)g;
    return TANDEM_OK;
}

static tandem_status cuda_graph_end(tandem_graph *g, tandem_stream *s) {
    tandem_cuda_dev *d = tandem_cuda_impl(s->dev);
    TANDEM_TRY(tandem_cuda_make_current(d));
    tandem_cuda_stream_impl *si = s->impl;
    cuda_graph_impl *gi = g->impl;
    CUgraph graph = NULL;
    si->capturing = 0;
    TANDEM_CU_TRY(cuStreamEndCapture, (si->cs, &graph), "device %d (a call in the captured step was "
                  "not capturable: see the error before this one)", d->ordinal);
    CUgraphExec exec = NULL;
    CUresult r = tandem_cu.cuGraphInstantiateWithFlags(&exec, graph, 0);
    tandem_cu.cuGraphDestroy(graph); /* the instance does not need it */
    if (r != CUDA_SUCCESS) return tandem_cuda_fail("cuGraphInstantiateWithFlags", r, "device %d", d->ordinal);
    if (gi->exec) tandem_cu.cuGraphExecDestroy(gi->exec);
    gi->exec = exec;
    return TANDEM_OK;
}

static tandem_status cuda_graph_launch(tandem_graph *g, tandem_stream *s) {
    tandem_cuda_dev *d = tandem_cuda_impl(s->dev);
    TANDEM_TRY(tandem_cuda_make_current(d));
    TANDEM_CU_TRY(cuGraphLaunch, (((cuda_graph_impl *)g->impl)->exec, tandem_cuda_stream(s)), "device %d", d->ordinal);
    return TANDEM_OK;
}

static void cuda_graph_destroy(tandem_graph *g) {
    cuda_graph_impl *gi = g->impl;
    if (!gi) return;
    if (gi->exec && tandem_cuda_make_current(tandem_cuda_impl(g->dev)) == TANDEM_OK)
        TANDEM_CU_WARN(cuGraphExecDestroy, (gi->exec), "device %d", tandem_cuda_impl(g->dev)->ordinal);
    tandem_free(gi);
    g->impl = NULL;
}

#define GUARDED(name, params, args)                                                       \
    static tandem_status guarded_##name params {                                          \
        CUcontext prev_ = ctx_save();                                                     \
        tandem_status st_ = name args;                                                    \
        ctx_restore(prev_);                                                               \
        return st_;                                                                       \
    }
#define GUARDED_VOID(name, params, args)                                                  \
    static void guarded_##name params {                                                   \
        CUcontext prev_ = ctx_save();                                                     \
        name args;                                                                        \
        ctx_restore(prev_);                                                               \
    }

GUARDED(cuda_sync, (tandem_device *dev), (dev))
GUARDED(cuda_mem_alloc, (tandem_device *dev, size_t bytes, tandem_dptr *out), (dev, bytes, out))
GUARDED_VOID(cuda_mem_free, (tandem_device *dev, tandem_dptr p), (dev, p))
GUARDED(cuda_host_alloc_pinned, (tandem_device *dev, size_t bytes, void **out), (dev, bytes, out))
GUARDED_VOID(cuda_host_free_pinned, (tandem_device *dev, void *p), (dev, p))
GUARDED(cuda_stream_create, (tandem_device *dev, tandem_stream *s), (dev, s))
GUARDED_VOID(cuda_stream_destroy, (tandem_stream *s), (s))
GUARDED(cuda_stream_sync, (tandem_stream *s), (s))
GUARDED(cuda_event_create, (tandem_device *dev, tandem_event *e), (dev, e))
GUARDED_VOID(cuda_event_destroy, (tandem_event *e), (e))
GUARDED(cuda_event_record, (tandem_event *e, tandem_stream *s), (e, s))
GUARDED(cuda_stream_wait_event, (tandem_stream *s, tandem_event *e), (s, e))
GUARDED(cuda_stream_order, (tandem_stream *a, tandem_stream *b, tandem_event *e), (a, b, e))
GUARDED(cuda_event_query, (tandem_event *e, int *done), (e, done))
GUARDED(cuda_event_sync, (tandem_event *e), (e))
GUARDED(cuda_event_elapsed_ms, (tandem_event *a, tandem_event *b, float *ms), (a, b, ms))
GUARDED(cuda_copy_h2d, (tandem_stream *s, tandem_dptr dst, const void *src, size_t n), (s, dst, src, n))
GUARDED(cuda_copy_d2h, (tandem_stream *s, void *dst, tandem_dptr src, size_t n), (s, dst, src, n))
GUARDED(cuda_copy_d2d, (tandem_stream *s, tandem_dptr dst, tandem_dptr src, size_t n), (s, dst, src, n))
GUARDED(cuda_copy_peer, (tandem_stream *s, tandem_device *dd, tandem_dptr dst, tandem_dptr src, size_t n),
        (s, dd, dst, src, n))
GUARDED(tandem_cuda_launch, (tandem_stream *s, int id, const tandem_launch_dims *d, const void *a, size_t n),
        (s, id, d, a, n))
GUARDED(tandem_cuda_gemm_prepare, (tandem_device *dev, const tandem_gemm_desc *g), (dev, g))
GUARDED(cuda_launch_check, (tandem_device *dev, int id, const tandem_launch_dims *d), (dev, id, d))
GUARDED(cuda_graph_begin, (tandem_graph *g, tandem_stream *s), (g, s))
GUARDED(cuda_graph_end, (tandem_graph *g, tandem_stream *s), (g, s))
GUARDED(cuda_graph_launch, (tandem_graph *g, tandem_stream *s), (g, s))
GUARDED_VOID(cuda_graph_destroy, (tandem_graph *g), (g))
GUARDED(tandem_cuda_gemm,
        (tandem_stream *s, const tandem_gemm_desc *g, float al, tandem_dptr a, tandem_dptr b, float be, tandem_dptr c),
        (s, g, al, a, b, be, c))

/* Closing may release the primary context the caller had current (when Tandem left it there):
 * then the thread is left with none rather than with a released context. */
static void guarded_cuda_close(tandem_device *dev) {
    CUcontext prev = ctx_save();
    const tandem_cuda_dev *d = tandem_cuda_impl(dev);
    CUcontext mine = d->ctx;
    CUdevice cu_dev = d->cu_dev;
    cuda_close(dev);
    unsigned flags = 0;
    int active = 1;
    if (prev == mine && tandem_cu.cuDevicePrimaryCtxGetState(cu_dev, &flags, &active) == CUDA_SUCCESS && !active)
        prev = NULL;
    ctx_restore(prev);
}

tandem_status tandem_cuda_device_open(int ordinal, tandem_device **out) {
    int n = 0;
    *out = NULL;
    TANDEM_TRY(tandem_cuda_device_count(&n)); /* loads the driver, so the context can be read */
    CUcontext prev = ctx_save();
    tandem_status st = device_open(ordinal, out);
    ctx_restore(prev);
    return st;
}

static const tandem_backend_ops cuda_ops = {
    .name = "cuda",
    .close = guarded_cuda_close,
    .sync = guarded_cuda_sync,
    .can_access_peer = cuda_can_access_peer,
    .mem_alloc = guarded_cuda_mem_alloc,
    .mem_free = guarded_cuda_mem_free,
    .host_alloc_pinned = guarded_cuda_host_alloc_pinned,
    .host_free_pinned = guarded_cuda_host_free_pinned,
    .stream_create = guarded_cuda_stream_create,
    .stream_destroy = guarded_cuda_stream_destroy,
    .stream_sync = guarded_cuda_stream_sync,
    .event_create = guarded_cuda_event_create,
    .event_destroy = guarded_cuda_event_destroy,
    .event_record = guarded_cuda_event_record,
    .stream_wait_event = guarded_cuda_stream_wait_event,
    .stream_order = guarded_cuda_stream_order,
    .event_query = guarded_cuda_event_query,
    .event_sync = guarded_cuda_event_sync,
    .event_elapsed_ms = guarded_cuda_event_elapsed_ms,
    .copy_h2d = guarded_cuda_copy_h2d,
    .copy_d2h = guarded_cuda_copy_d2h,
    .copy_d2d = guarded_cuda_copy_d2d,
    .copy_peer = guarded_cuda_copy_peer,
    .launch = guarded_tandem_cuda_launch,
    .gemm_prepare = guarded_tandem_cuda_gemm_prepare,
    .gemm = guarded_tandem_cuda_gemm,
    .gemm_fallbacks = tandem_cuda_gemm_fallbacks, /* reads the plan table only: no context */
    .launch_check = guarded_cuda_launch_check,
    /* collectives over NCCL (platform/cuda/nccl.c) */
    .coll_unique_id = tandem_cuda_coll_unique_id,
    .coll_open = tandem_cuda_coll_open,
    .coll_open_local = tandem_cuda_coll_open_local,
    .coll_close = tandem_cuda_coll_close,
    .coll_abort = tandem_cuda_coll_abort,
    .coll_group = tandem_cuda_coll_group,
    .coll_all_reduce_sum = tandem_cuda_coll_all_reduce_sum,
    .coll_broadcast = tandem_cuda_coll_broadcast,
    .coll_check = tandem_cuda_coll_check,
    .graph_create = cuda_graph_create,
    .graph_begin = guarded_cuda_graph_begin,
    .graph_end = guarded_cuda_graph_end,
    .graph_launch = guarded_cuda_graph_launch,
    .graph_destroy = guarded_cuda_graph_destroy,
};
