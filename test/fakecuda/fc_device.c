/* fc_device.c — stand-in driver: initialisation, error strings, devices, primary contexts,
 * peer access. Devices are configured from the environment at cuInit:
 *   TANDEM_FAKECUDA_DEVICES  number of devices (default 2, at most 8)
 *   TANDEM_FAKECUDA_ARCH     compute capability as sm number (default 89 = 8.9)
 *   TANDEM_FAKECUDA_NO_PEER  1: no peer access between devices (exercises the staged path)
 *   TANDEM_FAKECUDA_MEM_MB   memory per device in MiB (default 8192; allocated on demand)
 *   TANDEM_FAKECUDA_ASYNC    1 (default): streams run on worker threads (fc_queue.c); 0: inline
 *   TANDEM_FAKECUDA_SEED     seed of the workers' random delays (default: from the clock; every
 *                            error line names it, so a failing run can be replayed)
 *   TANDEM_FAKECUDA_HAZARDS  1 (default): report unordered accesses across streams (fc_hazard.c)
 *   TANDEM_FAKECUDA_CHECK_ACCESS  1: after each launch, report bytes the kernel changed outside
 *                            the ranges fc_access.c declares for it (slow: copies its buffers)
 *   TANDEM_FAKECUDA_DRIVER_VERSION  what cuDriverGetVersion reports (default 13000, CUDA 13.0);
 *                            cuModuleLoadData refuses a fatbin that needs a newer driver
 * Each device also has a PCI location (FC_PCI_BUS in fakecuda.h) for the stand-in NVML. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test/fakecuda/fakecuda.h"

static int env_int(const char *name, int def, int lo, int hi, int *bad) {
    const char *v = getenv(name);
    if (!v || !*v) return def;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < lo || x > hi) {
        tandem_fakecuda_report("cuInit", "%s='%s': expected an integer in [%d, %d]", name, v, lo,
                               hi);
        *bad = 1;
        return def;
    }
    return (int)x;
}

/* The device-time model (fc_queue.c). Also re-read when a first context is retained again (a
 * process that closed its devices, e.g. between two training runs of one test, can change it). */
static void read_timing(int *bad) {
    fc_cfg.launch_ns = (uint64_t)env_int("TANDEM_FAKECUDA_LAUNCH_NS", 4000, 0, 100000000, bad);
    fc_cfg.op_ns = (uint64_t)env_int("TANDEM_FAKECUDA_OP_NS", 3000, 0, 1000000000, bad);
    fc_cfg.bytes_per_us = (uint64_t)env_int("TANDEM_FAKECUDA_BYTES_PER_US", 200000, 1, 1000000000, bad);
    fc_cfg.delay_ns = (uint64_t)env_int("TANDEM_FAKECUDA_STREAM_DELAY_US", 0, 0, 10000000, bad) * 1000u;
    fc_cfg.delay_device = env_int("TANDEM_FAKECUDA_DELAY_DEVICE", 0, 0, FC_MAX_DEVICES - 1, bad);
}

/* Re-read whenever no context is retained, so one process can try several configurations. */
static int read_config(void) {
    int bad = 0;
    fc_cfg.device_count = env_int("TANDEM_FAKECUDA_DEVICES", 2, 0, FC_MAX_DEVICES, &bad);
    int arch = env_int("TANDEM_FAKECUDA_ARCH", 89, 30, 199, &bad);
    fc_cfg.cc_major = arch / 10;
    fc_cfg.cc_minor = arch % 10;
    fc_cfg.no_peer = env_int("TANDEM_FAKECUDA_NO_PEER", 0, 0, 1, &bad);
    fc_cfg.total_mem = (size_t)env_int("TANDEM_FAKECUDA_MEM_MB", 8192, 1, 1 << 20, &bad) << 20;
    fc_cfg.async = env_int("TANDEM_FAKECUDA_ASYNC", 1, 0, 1, &bad);
    fc_cfg.hazards = env_int("TANDEM_FAKECUDA_HAZARDS", 1, 0, 1, &bad);
    fc_cfg.check_access = env_int("TANDEM_FAKECUDA_CHECK_ACCESS", 0, 0, 1, &bad);
    const char *seed = getenv("TANDEM_FAKECUDA_SEED");
    if (seed && *seed) {
        fc_cfg.seed = (unsigned)strtoul(seed, NULL, 10);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        fc_cfg.seed = (unsigned)(ts.tv_nsec ^ ts.tv_sec ^ getpid()) % 1000000u;
    }
    fc_cfg.driver_version = env_int("TANDEM_FAKECUDA_DRIVER_VERSION", FC_DRIVER_VERSION, 11000, 99000, &bad);
    read_timing(&bad);
    return bad ? -1 : 0;
}

int fc_shared_optin(void) {
    switch (fc_cfg.cc_major * 10 + fc_cfg.cc_minor) {
    case 80: case 87: return 163 * 1024;
    case 86: case 89: return 99 * 1024;
    case 90: return 227 * 1024;
    case 75: return 64 * 1024;
    default: return FC_SHARED_PER_BLOCK;
    }
}

FC_EXPORT CUresult cuInit(unsigned int flags) {
    tandem_fakecuda_lock();
    CUresult r = CUDA_SUCCESS;
    if (flags != 0) {
        r = fc_fail(CUDA_ERROR_INVALID_VALUE, "cuInit", "flags must be 0, got %u", flags);
    } else {
        int busy = 0;
        for (int i = 0; i < FC_MAX_DEVICES; i++) busy |= fc_ctxs[i].refcount > 0;
        if (!busy) {
            if (read_config() != 0) {
                r = CUDA_ERROR_INVALID_VALUE;
            } else {
                for (int i = 0; i < FC_MAX_DEVICES; i++) {
                    unsigned keep = fc_ctxs[i].flags; /* flags set before a re-read stay */
                    memset(&fc_ctxs[i], 0, sizeof fc_ctxs[i]);
                    fc_ctxs[i].device = i;
                    fc_ctxs[i].flags = keep;
                }
            }
        }
        /* Like the real driver: no device is an error from cuInit, but not a misuse. */
        if (r == CUDA_SUCCESS && fc_cfg.device_count == 0) r = CUDA_ERROR_NO_DEVICE;
        if (r == CUDA_SUCCESS) fc_initialized = 1;
    }
    tandem_fakecuda_unlock();
    return r;
}

FC_EXPORT CUresult cuDriverGetVersion(int *version) {
    if (!version)
        return fc_fail(CUDA_ERROR_INVALID_VALUE, "cuDriverGetVersion", "version is NULL");
    /* cuDriverGetVersion works before cuInit: read the variable here too */
    int bad = 0;
    *version = fc_initialized ? fc_cfg.driver_version
                              : env_int("TANDEM_FAKECUDA_DRIVER_VERSION", FC_DRIVER_VERSION, 11000, 99000, &bad);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuGetErrorName(CUresult error, const char **str) {
    if (!str) return fc_fail(CUDA_ERROR_INVALID_VALUE, "cuGetErrorName", "str is NULL");
    *str = fc_error_name(error);
    if (!*str)
        return fc_fail(CUDA_ERROR_INVALID_VALUE, "cuGetErrorName", "unknown CUresult %d",
                       (int)error);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuGetErrorString(CUresult error, const char **str) {
    if (!str) return fc_fail(CUDA_ERROR_INVALID_VALUE, "cuGetErrorString", "str is NULL");
    const char *s = NULL;
    switch (error) {
    case CUDA_SUCCESS: s = "no error"; break;
    case CUDA_ERROR_INVALID_VALUE: s = "invalid argument"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: s = "out of memory"; break;
    case CUDA_ERROR_NOT_INITIALIZED: s = "initialization error"; break;
    case CUDA_ERROR_NO_DEVICE: s = "no CUDA-capable device is detected"; break;
    case CUDA_ERROR_INVALID_DEVICE: s = "invalid device ordinal"; break;
    case CUDA_ERROR_INVALID_IMAGE: s = "device kernel image is invalid"; break;
    case CUDA_ERROR_INVALID_CONTEXT: s = "invalid device context"; break;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: s = "no kernel image is available for execution on the device"; break;
    case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED: s = "peer access is not supported between these two devices"; break;
    case CUDA_ERROR_INVALID_HANDLE: s = "invalid resource handle"; break;
    case CUDA_ERROR_NOT_FOUND: s = "named symbol not found"; break;
    case CUDA_ERROR_NOT_READY: s = "device not ready"; break;
    case CUDA_ERROR_ILLEGAL_ADDRESS: s = "an illegal memory access was encountered"; break;
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: s = "too many resources requested for launch"; break;
    case CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: s = "peer access is already enabled"; break;
    case CUDA_ERROR_PEER_ACCESS_NOT_ENABLED: s = "peer access has not been enabled"; break;
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: s = "context is destroyed"; break;
    case CUDA_ERROR_NOT_SUPPORTED: s = "operation not supported"; break;
    default: s = fc_error_name(error); break; /* the name is the best description we have */
    }
    *str = s;
    if (!s)
        return fc_fail(CUDA_ERROR_INVALID_VALUE, "cuGetErrorString", "unknown CUresult %d",
                       (int)error);
    return CUDA_SUCCESS;
}

/* Validate a device ordinal; lock held. */
static CUresult check_dev(const char *call, CUdevice dev) {
    if (dev < 0 || dev >= fc_cfg.device_count)
        return fc_fail(CUDA_ERROR_INVALID_DEVICE, call, "device %d does not exist (%d devices)",
                       dev, fc_cfg.device_count);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuDeviceGetCount(int *count) {
    CUresult r = fc_enter("cuDeviceGetCount", 0);
    if (r) return fc_leave(r);
    if (!count) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetCount", "count is NULL"));
    *count = fc_cfg.device_count;
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    CUresult r = fc_enter("cuDeviceGet", 0);
    if (r) return fc_leave(r);
    if (!device) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, "cuDeviceGet", "device is NULL"));
    if ((r = check_dev("cuDeviceGet", ordinal))) return fc_leave(r);
    *device = ordinal;
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    CUresult r = fc_enter("cuDeviceGetName", 0);
    if (r) return fc_leave(r);
    if (!name || len <= 0)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetName",
                                "name buffer NULL or len %d <= 0", len));
    if ((r = check_dev("cuDeviceGetName", dev))) return fc_leave(r);
    snprintf(name, (size_t)len, "Tandem stand-in GPU %d", dev);
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attrib, CUdevice dev) {
    const char *call = "cuDeviceGetAttribute";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    if (!value) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "value is NULL"));
    if ((r = check_dev(call, dev))) return fc_leave(r);
    int v;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = FC_SHARED_PER_BLOCK; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = 16; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
    /* PCI location (domain:bus:device), which the stand-in NVML reports too */
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = (int)FC_PCI_BUS(dev, fc_cfg.device_count); break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = fc_cfg.cc_major; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = fc_cfg.cc_minor; break;
    /* above 48 KiB a kernel opts in with cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) */
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: v = fc_shared_optin(); break;
    default:
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call,
                                "attribute %d is not modelled by the stand-in driver",
                                (int)attrib));
    }
    *value = v;
    return fc_leave(CUDA_SUCCESS);
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
    CUresult r = fc_enter("cuDeviceTotalMem", 0);
    if (r) return fc_leave(r);
    if (!bytes) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, "cuDeviceTotalMem", "bytes is NULL"));
    if ((r = check_dev("cuDeviceTotalMem", dev))) return fc_leave(r);
    *bytes = fc_cfg.total_mem;
    return fc_leave(CUDA_SUCCESS);
}
FC_EXPORT_V2(cuDeviceTotalMem)

FC_EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer) {
    const char *call = "cuDeviceCanAccessPeer";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    if (!can) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "canAccessPeer is NULL"));
    if ((r = check_dev(call, dev)) || (r = check_dev(call, peer))) return fc_leave(r);
    *can = (dev != peer && !fc_cfg.no_peer) ? 1 : 0;
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    const char *call = "cuDevicePrimaryCtxRetain";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    if (!pctx) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "pctx is NULL"));
    if ((r = check_dev(call, dev))) return fc_leave(r);
    int busy = 0, bad = 0;
    for (int i = 0; i < FC_MAX_DEVICES; i++) busy |= fc_ctxs[i].refcount > 0;
    if (!busy) read_timing(&bad); /* a bad value was reported; its default stays */
    fc_ctxs[dev].refcount++;
    *pctx = (CUcontext)(void *)&fc_ctxs[dev];
    return fc_leave(CUDA_SUCCESS);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
    const char *call = "cuDevicePrimaryCtxRelease";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    if ((r = check_dev(call, dev))) return fc_leave(r);
    fc_ctx *c = &fc_ctxs[dev];
    if (c->refcount == 0)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_CONTEXT, call,
                                "device %d: primary context released more often than retained",
                                dev));
    if (--c->refcount == 0) {
        /* The context is destroyed: its memory, streams, events and modules go with it, and
         * other contexts lose their peer mappings of it. Queued work finishes first. */
        fc_retire_ctx_streams(c);
        fc_drain_ctx(NULL);
        fc_mem_kill_ctx(c);
        fc_kill_ctx_objects(c);
        memset(c->peer_enabled, 0, sizeof c->peer_enabled);
        c->sticky = CUDA_SUCCESS;
        for (int i = 0; i < FC_MAX_DEVICES; i++) fc_ctxs[i].peer_enabled[dev] = 0;
    }
    return fc_leave(CUDA_SUCCESS);
}
FC_EXPORT_V2(cuDevicePrimaryCtxRelease)

/* As in CUDA >= 11: allowed while the context is active; one scheduling mode at most. */
CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
    const char *call = "cuDevicePrimaryCtxSetFlags";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    if ((r = check_dev(call, dev))) return fc_leave(r);
    unsigned sched = flags & CU_CTX_SCHED_MASK;
    if ((flags & ~CU_CTX_SCHED_MASK) || (sched != 0 && sched != 1 && sched != 2 && sched != 4))
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call,
                                "flags 0x%x: the stand-in models one CU_CTX_SCHED_* mode only",
                                flags));
    fc_ctxs[dev].flags = flags;
    return fc_leave(CUDA_SUCCESS);
}
FC_EXPORT_V2(cuDevicePrimaryCtxSetFlags)

FC_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
    const char *call = "cuDevicePrimaryCtxGetState";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    if ((r = check_dev(call, dev))) return fc_leave(r);
    if (!flags || !active)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "flags or active is NULL"));
    *flags = fc_ctxs[dev].flags;
    *active = fc_ctxs[dev].refcount > 0;
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT int tandem_fakecuda_ctx_flags(int dev) {
    tandem_fakecuda_lock();
    int f = dev >= 0 && dev < FC_MAX_DEVICES ? (int)fc_ctxs[dev].flags : -1;
    tandem_fakecuda_unlock();
    return f;
}

/* The fc_ctx behind a CUcontext handle, or NULL if it is none of ours. */
fc_ctx *fc_ctx_of(CUcontext h) {
    for (int i = 0; i < fc_cfg.device_count; i++)
        if ((void *)h == (void *)&fc_ctxs[i]) return &fc_ctxs[i];
    return NULL;
}

FC_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
    const char *call = "cuCtxSetCurrent";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    if (!ctx) {
        fc_set_current(NULL);
        return fc_leave(CUDA_SUCCESS);
    }
    fc_ctx *c = fc_ctx_of(ctx);
    if (!c) return fc_leave(fc_fail(CUDA_ERROR_INVALID_CONTEXT, call, "%p is not a context", (void *)ctx));
    if (c->refcount == 0)
        return fc_leave(fc_fail(CUDA_ERROR_CONTEXT_IS_DESTROYED, call,
                                "device %d's primary context is not retained", c->device));
    fc_set_current(c);
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) {
    CUresult r = fc_enter("cuCtxGetCurrent", 0);
    if (r) return fc_leave(r);
    if (!pctx) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, "cuCtxGetCurrent", "pctx is NULL"));
    *pctx = (CUcontext)(void *)fc_current();
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuCtxSynchronize(void) {
    CUresult r = fc_enter("cuCtxSynchronize", 1);
    if (r) return fc_leave(r);
    fc_stream *c = fc_capture_of_ctx(fc_current());
    if (c) return fc_leave(fc_capture_reject(c, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuCtxSynchronize",
                                             "synchronising the context"));
    if ((r = fc_capture_unsafe("cuCtxSynchronize", "synchronising a context"))) return fc_leave(r);
    FC_COUNT(fc_current()->device, ctx_syncs);
    fc_drain_ctx(fc_current());
    return fc_leave(fc_current()->sticky);
}

FC_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
    const char *call = "cuCtxEnablePeerAccess";
    CUresult r = fc_enter(call, 1);
    if (r) return fc_leave(r);
    fc_ctx *cur = fc_current(), *p = fc_ctx_of(peer);
    if (flags != 0) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "flags must be 0, got %u", flags));
    if (!p || p->refcount == 0)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_CONTEXT, call, "peer %p is not a live context", (void *)peer));
    if (p == cur)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_DEVICE, call,
                                "device %d cannot enable peer access to itself", cur->device));
    if (fc_cfg.no_peer)
        return fc_leave(fc_fail(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, call,
                                "devices %d and %d have no peer access (TANDEM_FAKECUDA_NO_PEER=1); "
                                "check cuDeviceCanAccessPeer first",
                                cur->device, p->device));
    /* Not a misuse: callers commonly treat this code as success. */
    if (cur->peer_enabled[p->device]) return fc_leave(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    cur->peer_enabled[p->device] = 1;
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT int tandem_fakecuda_query_device(int dev, tandem_fakecuda_device_state *out) {
    tandem_fakecuda_lock();
    /* NVML works without cuInit; the configuration is the one cuInit would read. */
    if (!fc_initialized) read_config();
    memset(out, 0, sizeof *out);
    out->count = fc_cfg.device_count;
    int ok = dev >= 0 && dev < fc_cfg.device_count;
    if (ok) {
        out->pci_bus = FC_PCI_BUS(dev, fc_cfg.device_count);
        out->total_mem = fc_cfg.total_mem;
        out->used_mem = fc_initialized ? fc_ctxs[dev].used_bytes : 0;
    }
    tandem_fakecuda_unlock();
    return ok ? 0 : 1;
}
