/* fakecuda.h — private state of the stand-in driver (test-only; see docs/TESTING.md).
 *
 * libcuda.so.1 (fc_*.c) implements, on the CPU, the driver-API subset of platform/cuda/cuda_api.h:
 * devices, primary contexts, memory (device memory is emulator buffers, so CUdeviceptr values
 * are host addresses the emulated kernels dereference), streams and events (work queued on a
 * created stream runs asynchronously on the stream's worker thread, fc_queue.c; every queued
 * operation declares the ranges it reads and writes to the hazard detector, fc_hazard.c),
 * modules from the real fatbin bytes and launches through the kernel emulator. libcublasLt.so.13 (fc_cublaslt.c)
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
#define TANDEM_FAKECUDA_MAX_KERNELS 256 /* > TANDEM_KERNEL_COUNT (asserted in fc_module.c) */
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
/* Primary context flags of device dev (cuDevicePrimaryCtxSetFlags), -1 if no such device. */
FC_EXPORT int tandem_fakecuda_ctx_flags(int dev);
/* Flags an event was created with (-1: not a live event). */
FC_EXPORT int tandem_fakecuda_event_flags(CUevent ev);
/* With the lock held, for libcublasLt: queue run(arg) on stream (NULL = default) after
 * declaring the ranges it touches (fc_access *acc, n of them) to the hazard detector; arg is
 * freed (free()) after run. desc names the operation in reports. */
FC_EXPORT void tandem_fakecuda_submit(CUstream stream, const char *desc, void (*run)(void *),
                                      void *arg, const void *acc, int n);
/* What the driver API queued since the process started, counted when a call succeeds (for the
 * step cost model's test: its recorded launch list must match these kind by kind). Takes the
 * lock. Matmuls are counted by libcublasLt.so.13: tandem_fakecublaslt_matmuls() there. */
typedef struct tandem_fakecuda_counts {
    uint64_t launches;                          /* cuLaunchKernel, all kernels */
    uint64_t kernel[TANDEM_FAKECUDA_MAX_KERNELS]; /* per registry kernel id */
    uint64_t copies_h2d, copies_d2h, copies_d2d, copies_peer;
} tandem_fakecuda_counts;
FC_EXPORT void tandem_fakecuda_get_counts(tandem_fakecuda_counts *out);
/* Internal (libcuda.so.1): the counters, under the lock. */
extern tandem_fakecuda_counts fc_counts;

/* PCI bus of device dev of n: device 0 sits on the highest bus, as on a machine where CUDA's
 * fastest-first order is the reverse of NVML's PCI order, so matching by index would be wrong. */
#define FC_PCI_BUS(dev, n) (0x18u + 0x20u * (unsigned)((n) - 1 - (dev)))

/* ---- internal state (libcuda.so.1 only) ---- */

typedef enum {
    FC_KIND_STREAM = 1, FC_KIND_EVENT, FC_KIND_MODULE, FC_KIND_FUNCTION, FC_KIND_GRAPH, FC_KIND_EXEC
} fc_kind;

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
    unsigned flags;        /* cuDevicePrimaryCtxSetFlags (scheduling), kept across retains */
};

/* ---- asynchronous streams and the hazard detector (fc_queue.c, fc_hazard.c) ----
 * Each created stream has a slot (its index in vector clocks) and, when asynchronous execution
 * is on (TANDEM_FAKECUDA_ASYNC, default 1), a worker thread that runs its queue in order with
 * small random delays (TANDEM_FAKECUDA_SEED). The default (NULL) stream of a context runs work
 * inline, after the context's blocking streams (legacy default-stream semantics). */
#define FC_MAX_SLOTS 256  /* streams alive at once (slots 0..FC_MAX_DEVICES-1: default streams) */
#define FC_MAX_ACCESS 16  /* byte ranges one operation declares */
typedef struct fc_vc {
    uint32_t c[FC_MAX_SLOTS];
} fc_vc;

/* One byte range an operation reads or writes. */
typedef struct fc_access {
    uintptr_t p;
    size_t n;
    int write;
    const char *what; /* argument name ("out", "A", "workspace") */
} fc_access;
typedef struct fc_acc_list {
    fc_access a[FC_MAX_ACCESS];
    int n;
} fc_acc_list;
void fc_acc_add(fc_acc_list *L, const void *p, size_t bytes, int write, const char *what);
/* The ranges registry kernel kernel_id touches with this args struct (fc_access.c). */
void fc_kernel_accesses(int kernel_id, const void *args, fc_acc_list *L);

typedef struct fc_op fc_op;

#define FC_END_RING 4096  /* modelled end times kept per stream (by op position mod this) */

typedef struct fc_stream {
    fc_obj h;
    unsigned flags;
    int slot;
    fc_vc vc;              /* what this stream's next operation is ordered after */
    /* queue (lock held): ops enqueued and completed, in order */
    fc_op *head, *tail;
    uint64_t enqueued, done;
    int worker, quit;      /* a worker thread runs; asked to stop */
    uint64_t rng;          /* delay generator, seeded from TANDEM_FAKECUDA_SEED and the slot */
    uint64_t worker_tid;   /* pthread_t of the worker */
    /* stream capture (fc_graph.c): ops go into capture instead of the queue */
    struct fc_graph *capture;
    CUresult capture_err;  /* != 0: the capture was invalidated by that error */
    uint64_t cap_ops;      /* nodes this stream added to the capture */
    uint64_t cap_joined;   /* a stream forked into it: how many of them the origin has waited on */
    /* modelled device time (fc_queue.c, "Device time"): when its last op ended, and the end of
       each recent op by position (what a wait on a record of this stream waits for) */
    uint64_t clock_ns;
    uint64_t end_ns[FC_END_RING];
} fc_stream;

typedef struct fc_event {
    fc_obj h;
    unsigned flags;
    int recorded;
    uint64_t seq;          /* global order of records */
    uint64_t t_ns;         /* modelled device time of the last record (fc_queue.c) */
    fc_stream *rec_stream; /* stream of the last record (NULL: default stream, done at once) */
    uint64_t rec_op;       /* its position in that stream's queue */
    fc_vc vc;              /* the recording stream's clock at the record */
    int captured;          /* last recorded by a plain cuEventRecord inside a capture */
    struct fc_graph *cap_graph; /* captured: that capture, the stream and its cap_ops at the record */
    fc_stream *cap_stream;
    uint64_t cap_ops;
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
    int async;             /* TANDEM_FAKECUDA_ASYNC, default 1: streams run on workers */
    unsigned seed;         /* TANDEM_FAKECUDA_SEED, default from the clock (printed) */
    int hazards;           /* TANDEM_FAKECUDA_HAZARDS, default 1: report unordered accesses */
    int check_access;      /* TANDEM_FAKECUDA_CHECK_ACCESS=1: kernels write only what they declare */
    int device_count;      /* TANDEM_FAKECUDA_DEVICES, default 2 */
    int cc_major, cc_minor; /* TANDEM_FAKECUDA_ARCH, default 89 */
    int no_peer;           /* TANDEM_FAKECUDA_NO_PEER=1 */
    size_t total_mem;      /* TANDEM_FAKECUDA_MEM_MB, default 8192 */
    int driver_version;    /* TANDEM_FAKECUDA_DRIVER_VERSION, default FC_DRIVER_VERSION */
    /* device-time model (fc_queue.c, "Device time") */
    uint64_t launch_ns;    /* TANDEM_FAKECUDA_LAUNCH_NS, default 4000: submit to earliest start */
    uint64_t op_ns;        /* TANDEM_FAKECUDA_OP_NS, default 3000: fixed cost of a copy/kernel */
    uint64_t bytes_per_us; /* TANDEM_FAKECUDA_BYTES_PER_US, default 200000 (200 GB/s) */
    uint64_t delay_ns;     /* TANDEM_FAKECUDA_STREAM_DELAY_US x 1000, default 0 */
    int delay_device;      /* TANDEM_FAKECUDA_DELAY_DEVICE, default 0 (the automatic data device) */
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

/* The device allocation containing p: 0 and its base and size, or -1. */
int fc_alloc_range(uintptr_t p, uintptr_t *base, size_t *size);
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

/* Lock depth helpers (fc_state.c): release the lock however deep, take it back; wait on a
 * condition variable with the lock released completely. */
#include <pthread.h>
/* (exported: the stand-in NCCL, fc_nccl.c, waits for other ranks with the lock released) */
FC_EXPORT int tandem_fakecuda_unlock_all(void);
FC_EXPORT void tandem_fakecuda_relock(int depth);
void tandem_fakecuda_wait(pthread_cond_t *c);
/* The i-th registered handle object (NULL past the end); the table may grow meanwhile. */
fc_obj *fc_obj_at(size_t i);
/* Drain and stop the workers of ctx's streams (its primary context is being destroyed). */
void fc_retire_ctx_streams(fc_ctx *ctx);

/* ---- queueing (fc_queue.c); lock held for all ---- */
/* The stream behind a handle (NULL = the current context's default stream). */
fc_stream *fc_stream_of(CUstream h);
/* Operation to queue: run() executes it (lock held, on the stream's worker or inline);
 * fini() frees what it owns. The caller fills desc and the payload fields it needs. */
struct fc_op {
    fc_op *next;
    void (*run)(fc_op *op);
    void (*fini)(fc_op *op);
    fc_ctx *ctx;
    fc_stream *stream;
    uint64_t pos;           /* position in the stream's queue (1-based) */
    char desc[200];         /* "cuLaunchKernel tandem_k_fill_f32" ... for reports */
    /* payload */
    void *dst;
    const void *src;
    size_t bytes;
    void *owned;            /* freed by the default fini */
    int kernel_id;
    unsigned dims[7];       /* grid xyz, block xyz, shared bytes */
    fc_event *event;
    fc_stream *wait_stream; /* wait: until wait_stream->done >= wait_pos */
    uint64_t wait_pos;
    void (*user_run)(void *arg); /* bridge operations (cuBLASLt) */
    void *user_arg;
    fc_event *wait_event;   /* a captured external wait: resolved when the graph is launched */
    int borrowed;           /* a graph replay's op: owned / fini belong to the graph's template */
    uint64_t submit_ns;     /* host clock when queued */
    uint64_t dur_ns;        /* modelled device time (0: a record or a wait) */
};
fc_op *fc_op_new(const char *desc_fmt, ...) __attribute__((format(printf, 1, 2)));
/* Check the op's declared ranges against the hazard state, record them, and queue the op on
 * s (or run it inline on a default stream). Takes ownership of op. */
void fc_submit(fc_stream *s, fc_op *op, const fc_acc_list *acc);
/* Wait (releasing the lock) until s has completed everything queued so far. */
void fc_stream_drain(fc_stream *s);
/* Drain every stream of ctx (NULL: of every context). */
void fc_drain_ctx(fc_ctx *ctx);
/* Host observed that s completed up to pos / that clock vc completed. */
void fc_observe_vc(const fc_vc *vc);
/* Stop and join a stream's worker after draining it; frees its slot. */
void fc_stream_retire(fc_stream *s);
/* Allocate a slot for a new stream (-1: all in use) and initialise its clock. */
int fc_stream_init(fc_stream *s);
/* Whether the operation at pos of s completed. */
int fc_op_done(const fc_stream *s, uint64_t pos);
/* Wait on the shared condition (lock held, recursion depth 1). */
void fc_wait_cond(void);
void fc_broadcast(void);
/* Stop every worker (unload). */
void fc_queue_shutdown(void);

/* ---- stream capture and graphs (fc_graph.c); lock held for all ---- */
/* When s is capturing, op (with its ranges) becomes a node of the graph instead of running:
 * returns 1 (op taken). */
int fc_capture_take(fc_stream *s, fc_op *op, const fc_acc_list *acc);
/* The capturing stream of ctx (global mode: one at a time here), or NULL. */
fc_stream *fc_capture_of_ctx(const fc_ctx *ctx);
/* Fork and join (real CUDA's cross-stream capture): a stream not capturing that waits on an
 * event recorded inside a capture joins it (fc_capture_fork, 1 when it did); the origin
 * waiting on an event recorded on a forked stream joins that stream's work up to the record
 * (fc_capture_join). The capture ends only with every forked stream joined back. */
int fc_capture_fork(fc_stream *s, const fc_event *e);
void fc_capture_join(fc_stream *s, const fc_event *e);
/* Report call as unsupported during s's capture and invalidate it (returns the code). */
CUresult fc_capture_reject(fc_stream *s, CUresult code, const char *call, const char *why);
/* CUDA's capture modes: the capture that forbids this thread a potentially unsafe call, or NULL;
 * fc_capture_unsafe rejects (and invalidates that capture) or returns CUDA_SUCCESS. */
fc_stream *fc_capture_forbidding(void);
CUresult fc_capture_unsafe(const char *call, const char *what);
/* At unload: a graph's nodes and what they own (the handle itself is freed by the caller). */
void fc_graph_free_nodes(fc_obj *graph);
/* An event record / wait queued by a graph launch (fc_stream.c). */
void fc_event_mark_recorded(fc_event *e);
/* What the stand-in counted since load (tests: host synchronisations and launches per step). */
typedef struct tandem_fakecuda_dev_counts {
    uint64_t kernel_launches;   /* cuLaunchKernel outside a capture */
    uint64_t captured_launches; /* cuLaunchKernel into a capture */
    uint64_t graph_launches, graph_instantiations;
    uint64_t stream_syncs, ctx_syncs, event_syncs; /* host waits */
    uint64_t copies;            /* cuMemcpy*Async outside a capture */
    uint64_t matmuls, captured_matmuls; /* cublasLtMatmul outside / into a capture */
    uint64_t tf32_matmuls;              /* of both, those computing with TF32 inputs */
} tandem_fakecuda_dev_counts;
/* The counts of device dev (its context's streams, events and calls); zeros for no device. */
FC_EXPORT void tandem_fakecuda_get_device_counts(int dev, tandem_fakecuda_dev_counts *out);
/* The counts of the calls the calling thread made (all devices): a training loop's own, apart
 * from the loader and data-device threads'. */
FC_EXPORT void tandem_fakecuda_get_thread_counts(tandem_fakecuda_dev_counts *out);
/* With the lock held, for libcublasLt: one matmul queued on stream (counted). */
FC_EXPORT void tandem_fakecuda_count_matmul(CUstream stream, int tf32);
extern tandem_fakecuda_dev_counts fc_dev_counts[FC_MAX_DEVICES];
extern __thread tandem_fakecuda_dev_counts fc_thread_counts;
#define FC_COUNT(dev, field) (fc_dev_counts[(dev)].field++, fc_thread_counts.field++)

/* ---- hazards (fc_hazard.c) ---- */
/* Check op's ranges (stream slot, clock vc, epoch = vc->c[slot]) and record them. */
void fc_hazard_check(const fc_stream *s, const fc_op *op, const fc_acc_list *acc);
/* Forget everything recorded inside [p, p + n) (memory freed). */
void fc_hazard_forget(uintptr_t p, size_t n);

#endif
