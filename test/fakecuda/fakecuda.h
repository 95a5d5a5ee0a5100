/* fakecuda.h — private state of the stand-in driver (test-only; see docs/TESTING.md).
 *
 * libcuda.so.1 (fc_*.c) implements, on the CPU, the driver-API subset of platform/cuda/cuda_api.h:
 * devices, primary contexts, memory (device memory is emulator buffers, so CUdeviceptr values
 * are host addresses the emulated kernels dereference), streams and events (work runs
 * synchronously, under one process-wide lock, at the moment it is queued), modules from the
 * real fatbin bytes and launches through the kernel emulator. libcublasLt.so.13 (fc_cublaslt.c)
 * reaches that state through the tandem_fakecuda_* bridge below, exported by libcuda.so.1.
 *
 * Strictness: every misuse a compute-sanitizer run would flag returns an error code AND prints
 * exactly one line "fakecuda: error: <call>: <why>" to stderr, counted in
 * tandem_fakecuda_error_count(), so a test can assert that no such line was printed.
 *
 * Owns: the device table, the primary contexts, every handle ever created (kept until exit,
 * marked dead when destroyed, so a stale handle is reported instead of dereferenced), and the
 * allocation table.
 */
#ifndef TANDEM_TEST_FAKECUDA_H
#define TANDEM_TEST_FAKECUDA_H

#include <stddef.h>
#include <stdint.h>

#define TANDEM_CUDA_API_PROTOTYPES
#include "platform/cuda/cuda_api.h"

#define FC_EXPORT __attribute__((visibility("default")))
/* Export name##_v2, the symbol a real libcuda.so.1 has for the version cuda_api.h describes;
 * the base name stays hidden (in a real driver it is the older ABI). */
#define FC_EXPORT_V2(name)                                                                \
    extern __typeof__(name) name##_v2 __attribute__((alias(#name), visibility("default")));
#define FC_MAX_DEVICES 8
#define FC_DRIVER_VERSION 13000 /* what cuDriverGetVersion reports (CUDA 13.0) */

/* ---- bridge exported by libcuda.so.1 (used by libcublasLt.so.13 and by tests) ---- */
FC_EXPORT int tandem_fakecuda_error_count(void);
/* Print "fakecuda: error: <call>: <why>" and count it. */
FC_EXPORT void tandem_fakecuda_report(const char *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The process-wide lock every call holds while it runs (recursive). */
FC_EXPORT void tandem_fakecuda_lock(void);
FC_EXPORT void tandem_fakecuda_unlock(void);
/* With the lock held: 0 when stream (NULL = the current context's default stream) is alive
 * and belongs to the current context, else reports (naming call) and returns nonzero. */
FC_EXPORT int tandem_fakecuda_check_stream(const char *call, CUstream stream);
/* With the lock held: 0 when [p, p + bytes) lies inside one live device allocation of the
 * current context, else reports "<what> ..." and returns nonzero. */
FC_EXPORT int tandem_fakecuda_check_device_range(const char *call, const char *what,
                                                 const void *p, size_t bytes);
/* With the lock held: whether p lies inside a live device allocation (of any context). */
FC_EXPORT int tandem_fakecuda_is_device_memory(const void *p);

/* What the stand-in NVML (libnvidia-ml.so.1, fc_nvml.c) knows of device dev: the configured
 * device count (read from the environment when cuInit has not run yet), the PCI location
 * cuDeviceGetAttribute reports, total memory and the bytes allocated in its context. Takes the
 * lock. 0 when dev exists, nonzero otherwise (out->count is set either way). */
typedef struct tandem_fakecuda_device_state {
    int count;
    unsigned pci_domain, pci_bus, pci_device;
    size_t total_mem, used_mem;
} tandem_fakecuda_device_state;
FC_EXPORT int tandem_fakecuda_query_device(int dev, tandem_fakecuda_device_state *out);
/* PCI bus of device dev of n: device 0 sits on the highest bus, as on a machine where CUDA's
 * fastest-first order is the reverse of NVML's PCI order, so matching by index would be wrong. */
#define FC_PCI_BUS(dev, n) (0x18u + 0x20u * (unsigned)((n) - 1 - (dev)))

/* ---- internal state (libcuda.so.1 only) ---- */

typedef enum { FC_KIND_STREAM = 1, FC_KIND_EVENT, FC_KIND_MODULE, FC_KIND_FUNCTION } fc_kind;

typedef struct fc_ctx fc_ctx;

/* Common head of every handle object. */
typedef struct fc_obj {
    fc_kind kind;
    int alive;
    fc_ctx *ctx;
} fc_obj;

struct fc_ctx {
    int device;
    int refcount;          /* primary context retains; 0 = inactive */
    int peer_enabled[FC_MAX_DEVICES]; /* this context may access device i's memory */
    CUresult sticky;       /* a kernel fault poisons the context until it is released */
    size_t used_bytes;     /* device memory allocated in it */
};

typedef struct fc_stream {
    fc_obj h;
    unsigned flags;
} fc_stream;

typedef struct fc_event {
    fc_obj h;
    unsigned flags;
    int recorded;
    uint64_t seq;          /* global order of records */
    uint64_t t_ns;         /* monotonic time of the last record */
} fc_event;

typedef struct fc_module fc_module;
typedef struct fc_function {
    fc_obj h;
    fc_module *module;
    int kernel_id;         /* kernels/registry.h */
    char name[96];
    /* From the cubin the device runs (have_cubin 0: it would JIT the PTX, limits unknown). */
    int have_cubin;
    int registers;         /* per thread */
    unsigned static_shared, max_threads; /* max_threads: __launch_bounds__, 0 if none */
    int max_dynamic_shared; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
} fc_function;

/* Per-block limits of the configured architecture (fc_device.c). */
#define FC_SHARED_PER_BLOCK (48 * 1024)   /* without opt-in */
#define FC_REGS_PER_BLOCK 65536
int fc_shared_optin(void);                /* sm_80 163 KiB, sm_86/89 99 KiB, sm_90 227 KiB */

typedef struct fc_config {
    int device_count;      /* TANDEM_FAKECUDA_DEVICES, default 2 */
    int cc_major, cc_minor; /* TANDEM_FAKECUDA_ARCH, default 89 */
    int no_peer;           /* TANDEM_FAKECUDA_NO_PEER=1 */
    size_t total_mem;      /* TANDEM_FAKECUDA_MEM_MB, default 8192 */
    int driver_version;    /* TANDEM_FAKECUDA_DRIVER_VERSION, default FC_DRIVER_VERSION */
} fc_config;

extern fc_config fc_cfg;
extern fc_ctx fc_ctxs[FC_MAX_DEVICES];
extern int fc_initialized;

/* The fc_ctx behind a CUcontext handle (live or not), or NULL if it is none of ours. */
fc_ctx *fc_ctx_of(CUcontext h);
/* Resolve the stream a call queues on: NULL means the current context's default stream.
 * Reports and returns an error if it is unknown, destroyed, or of another context than the
 * current one. Lock held. */
CUresult fc_check_stream(const char *call, CUstream s);
/* 0 when [p, p + bytes) lies inside one live device allocation of ctx, else reports. */
int fc_check_range(const char *call, const char *what, const void *p, size_t bytes,
                   const fc_ctx *ctx);
/* Words of a kernel's args struct that point into another device's memory, which ctx may
 * not access (no peer access enabled), are reported: nonzero then. */
int fc_check_kernel_pointers(const char *call, const char *kernel, const void *args,
                             size_t size, const fc_ctx *ctx);
/* After a launch: a kernel that wrote into the padding between an allocation's end and the
 * 256-byte boundary (where the emulator's guard cannot see it) is reported; nonzero then. */
int fc_check_padding(const char *call, const char *kernel);

/* Current context of the calling thread (NULL if none). */
fc_ctx *fc_current(void);
void fc_set_current(fc_ctx *c);

/* Handle table: every object ever created stays registered; lookups compare pointer values
 * only, so a dead or foreign handle is never dereferenced before it is found. */
void fc_register(fc_obj *o);
/* The live object of that kind at h, else NULL (sets *dead when h was one and is destroyed). */
fc_obj *fc_lookup(const void *h, fc_kind kind, int *dead);
/* Mark every object of ctx dead (its primary context was released to zero). */
void fc_kill_ctx_objects(fc_ctx *c);

/* Allocation table (device memory and pinned host memory). */
typedef enum { FC_MEM_DEVICE = 1, FC_MEM_HOST } fc_mem_kind;
void fc_mem_kill_ctx(fc_ctx *c); /* free every allocation of ctx */

/* Lock + init check + current-context check at the top of a call. */
CUresult fc_enter(const char *call, int need_ctx);
/* Returns r after dropping the lock. */
CUresult fc_leave(CUresult r);
/* Report and return code, lock still held (callers `return fc_leave(fc_fail(...))`). */
CUresult fc_fail(CUresult code, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

const char *fc_error_name(CUresult r);

#endif
