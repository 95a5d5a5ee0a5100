/* tandem.h — the only header an embedding program includes.
 *
 * Tandem trains a TTS acoustic model on two devices (data + model). This header exposes the
 * runtime's building blocks: status and logging, devices and streams, the planned memory pool
 * with fixed-shape tensors, the GEMM op and the element-wise kernels; the headers it includes at
 * its end cover what an appliance does with them: the run configuration (tandem_config.h),
 * training and its memory plan (tandem_train.h), checkpoints (tandem_checkpoint.h), datasets
 * (tandem_data.h), synthesis (tandem_synth.h), log-mel features (tandem_features.h), the text
 * frontend (tandem_text.h), file writers (tandem_files.h), a run's figures (tandem_plot.h) and
 * device discovery (tandem_system.h). docs/API.md is the guide. Every call returns a
 * tandem_status; on failure tandem_last_error() holds a message for the calling thread.
 * Library code never exits and never prints except through the log hook.
 *
 * Failure contract: a function that hands back an object it builds (tandem_*_create, _open,
 * _init) either returns TANDEM_OK with the object complete, or returns the failure having
 * released everything it acquired (memory, files, mappings, threads, device objects) and set
 * *out to NULL (an _init into the caller's struct leaves it holding nothing). The caller
 * never destroys a half-built object; destroying NULL is always a no-op.
 *
 * NULL contract: a NULL handle, output pointer or required string is TANDEM_E_INVALID (never a
 * crash); an _options_init(NULL) or a free/close/destroy/request_stop of NULL does nothing; a
 * query on a NULL handle answers "nothing" ("" for text, 0 for counts and lengths, -1 for a step).
 * test_null_args checks the table of entry points.
 */
#ifndef TANDEM_H
#define TANDEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TANDEM_VERSION_STRING "0.1.0"

/* The feature recipe's numbers a client needs (log-mel of DESIGN.md §6; the full recipe is in
 * docs/ARCHITECTURE.md). Audio in and out is mono at TANDEM_FEATURE_SAMPLE_RATE; one log-mel
 * frame [TANDEM_FEATURE_N_MELS] per TANDEM_FEATURE_HOP samples. Fixed: a checkpoint is trained
 * on these, and the library fails to build if they differ from its own definition. */
#define TANDEM_FEATURE_SAMPLE_RATE 22050 /* Hz */
#define TANDEM_FEATURE_HOP 256           /* samples per frame */
#define TANDEM_FEATURE_N_MELS 80         /* mel bands per frame */

/* ---- status ------------------------------------------------------------------------- */

typedef enum tandem_status {
    TANDEM_OK = 0,
    TANDEM_E_INVALID,     /* bad argument, bad input data or config */
    TANDEM_E_NOMEM,       /* host or device allocation failed */
    TANDEM_E_IO,          /* file or OS call failed */
    TANDEM_E_FORMAT,      /* a file is malformed (fatbin, checkpoint, cache, audio) */
    TANDEM_E_NODRIVER,    /* no CUDA driver on this machine (not an error for auto selection) */
    TANDEM_E_DEVICE,      /* a driver / device call failed */
    TANDEM_E_UNSUPPORTED, /* the operation is not available on this backend or build */
    TANDEM_E_BUDGET,      /* the memory plan does not fit the budget */
    TANDEM_E_STATE,       /* call made in the wrong state (e.g. declare after commit) */
    TANDEM_E_INTERNAL,
} tandem_status;

/* Short name of a status ("TANDEM_E_INVALID"). */
const char *tandem_status_name(tandem_status st);
/* Message of the last failure on the calling thread ("" if none). */
const char *tandem_last_error(void);

/* ---- logging -------------------------------------------------------------------------- */

typedef enum tandem_log_level {
    TANDEM_LOG_ERROR = 0,
    TANDEM_LOG_WARN,
    TANDEM_LOG_INFO,
    TANDEM_LOG_DEBUG,
} tandem_log_level;

/* The hook receives every log line (no trailing newline). It may be called from any thread. */
typedef void (*tandem_log_fn)(void *user, tandem_log_level level, const char *msg);
/* Replace the log hook; NULL restores the default (stderr). */
void tandem_log_set_hook(tandem_log_fn fn, void *user);
/* Lines above this level are dropped before reaching the hook (default INFO). */
void tandem_log_set_level(tandem_log_level level);

/* ---- allocation accounting ------------------------------------------------------------- */

/* Number of heap/device allocations the runtime itself has made since start. Tests read it
 * before and after a region to prove that nothing is allocated after the plan is committed. */
uint64_t tandem_alloc_count(void);

/* ---- runtime options (process-wide) ------------------------------------------------------ */

/* What the library would otherwise have to find out from the environment: which driver
 * libraries to load, which fatbin, how many host devices and threads, where the text cache
 * lives. The library reads no environment variable; the `tandem` CLI maps its TANDEM_*
 * variables onto these fields (README.md, "Environment"), an embedding program sets them
 * itself or keeps the defaults. A zero field (0, NULL or "") selects the built-in default.
 * Owns: nothing (the library copies the strings into its own fixed storage). */

#define TANDEM_RUNTIME_PATH_MAX 4096 /* bytes of a path option, terminating NUL included */
#define TANDEM_MAX_HOST_DEVICES 64   /* largest host_devices */
#define TANDEM_MAX_HOST_THREADS 256  /* largest host_threads */
#define TANDEM_HOST_DEVICES_NONE (-1) /* host_devices: no host device at all */

typedef struct tandem_runtime_options {
    /* CUDA driver library to dlopen. NULL = "libcuda.so.1". Loaded once, at the first CUDA
     * call of the process: later changes do not reach it. CLI: TANDEM_CUDA_DRIVER. */
    const char *cuda_driver;
    /* cuBLASLt library for CUDA GEMMs. NULL = "libcublasLt.so.13", else "libcublasLt.so.12";
     * "none", "off" or "0" = the fatbin's own GEMM kernels. Loaded once, at the first CUDA
     * GEMM of the process. CLI: TANDEM_CUBLASLT. */
    const char *cublaslt;
    /* NVML library for utilisation/power/clock sampling. NULL = "libnvidia-ml.so.1"; "none" =
     * no sampling. Loaded once, at the first NVML use of the process. CLI: TANDEM_NVML. */
    const char *nvml;
    /* Fatbin file each CUDA device opened afterwards loads instead of the one embedded in
     * libtandem.a. NULL = the embedded fatbin. CLI: TANDEM_FATBIN. */
    const char *fatbin;
    /* Directory of the persistent text cache (created when missing), read by text indexes
     * opened afterwards. NULL = no persistent cache: each run normalises the corpus text in
     * memory (logged at INFO). CLI: TANDEM_CACHE_DIR, else $XDG_CACHE_HOME/tandem (absolute
     * values only), else $HOME/.cache/tandem. */
    const char *cache_dir;
    /* Host devices tandem_device_count reports: 1 to TANDEM_MAX_HOST_DEVICES;
     * TANDEM_HOST_DEVICES_NONE = none; 0 = 2. CLI: TANDEM_HOST_DEVICES. */
    int host_devices;
    /* Worker threads of each host device opened afterwards: 1 to TANDEM_MAX_HOST_THREADS;
     * 0 = the CPUs this process may run on (at most TANDEM_MAX_HOST_THREADS). Results are
     * bit-identical for any count. CLI: TANDEM_HOST_THREADS. */
    int host_threads;
} tandem_runtime_options;

/* Every field to its default (all zero). */
void tandem_runtime_options_init(tandem_runtime_options *o);
/* Check *o and make it the process's options; no allocation (strings are copied into fixed
 * storage of TANDEM_RUNTIME_PATH_MAX bytes each). A bad value — a path that does not fit, a
 * count out of range, o NULL — is TANDEM_E_INVALID naming the field and the accepted range,
 * and leaves the options as they were. Applies to what is opened afterwards (devices, text
 * indexes; the driver libraries only until their first use, see above); objects already
 * open keep what they were opened with. Threads: meant for start-up, from the thread that
 * sets up the library, before devices are opened; library internals read the options under
 * a lock, so a later call from any thread is safe, but it overwrites the strings that an
 * earlier tandem_runtime_get_options handed out. */
tandem_status tandem_runtime_set_options(const tandem_runtime_options *o);
/* The options in effect (the defaults until set). Strings point into the library's storage
 * (NULL where unset) and stay valid until the next tandem_runtime_set_options. Any thread. */
void tandem_runtime_get_options(tandem_runtime_options *out);

/* ---- devices ----------------------------------------------------------------------------- */

typedef enum tandem_backend {
    TANDEM_BACKEND_AUTO = 0, /* cuda when a driver is present, else host */
    TANDEM_BACKEND_HOST,
    TANDEM_BACKEND_CUDA,
} tandem_backend;

typedef struct tandem_device tandem_device;
typedef struct tandem_stream tandem_stream;
typedef struct tandem_event tandem_event;

typedef struct tandem_device_info {
    tandem_backend backend;
    int ordinal;
    char name[128];
    int cc_major, cc_minor;   /* compute capability; 0.0 on host */
    size_t total_memory;      /* bytes */
    int multiprocessors;      /* SMs, or CPU cores on host */
    int supports_bf16;        /* bf16 arithmetic is native */
} tandem_device_info;

/* Number of devices of a backend. CUDA without a driver: *count = 0 and TANDEM_E_NODRIVER. */
tandem_status tandem_device_count(tandem_backend backend, int *count);
tandem_status tandem_device_open(tandem_backend backend, int ordinal, tandem_device **out);
void tandem_device_close(tandem_device *dev);
tandem_status tandem_device_get_info(const tandem_device *dev, tandem_device_info *out);
/* Wait until all work queued on the device has finished. */
tandem_status tandem_device_sync(tandem_device *dev);
/* Whether dst can read src's memory directly (peer access). */
int tandem_device_can_access_peer(const tandem_device *dst, const tandem_device *src);

tandem_status tandem_stream_create(tandem_device *dev, tandem_stream **out);
void tandem_stream_destroy(tandem_stream *s);
tandem_status tandem_stream_sync(tandem_stream *s);

tandem_status tandem_event_create(tandem_device *dev, tandem_event **out);
void tandem_event_destroy(tandem_event *e);
/* Marks the point in s reached when all work queued before it has completed. */
tandem_status tandem_event_record(tandem_event *e, tandem_stream *s);
/* Work queued on s after this call starts only after e has completed (any device, any thread). */
tandem_status tandem_stream_wait_event(tandem_stream *s, tandem_event *e);
/* *done = 1 when e has completed (or was never recorded), else 0. */
tandem_status tandem_event_query(tandem_event *e, int *done);
tandem_status tandem_event_sync(tandem_event *e);
/* Milliseconds between two completed events. */
tandem_status tandem_event_elapsed_ms(tandem_event *start, tandem_event *end, float *ms);

/* ---- memory plan and tensors -------------------------------------------------------------- */

typedef enum tandem_dtype {
    TANDEM_F32 = 0,
    TANDEM_BF16,
    TANDEM_F16,
    TANDEM_I32,
    TANDEM_U8,
} tandem_dtype;

size_t tandem_dtype_size(tandem_dtype dt);
const char *tandem_dtype_name(tandem_dtype dt);

typedef enum tandem_lifetime {
    TANDEM_PERSISTENT = 0, /* lives for the whole run: parameters, optimizer state, ring slots */
    TANDEM_PER_STEP,       /* live from first_use to last_use within a step: activations, scratch */
} tandem_lifetime;

#define TANDEM_MAX_DIMS 6

typedef struct tandem_pool tandem_pool;
typedef struct tandem_tensor tandem_tensor;

/* A pool owns one device arena. budget_bytes = 0: the arena is sized by the plan. */
tandem_status tandem_pool_create(tandem_device *dev, const char *name, size_t budget_bytes,
                                 tandem_pool **out);
void tandem_pool_destroy(tandem_pool *pool);
/* Declare a fixed-shape tensor. first_use/last_use are op indices within a step (ignored
 * for persistent tensors). The returned handle stays valid for the pool's life. */
tandem_status tandem_pool_declare(tandem_pool *pool, const char *name, tandem_dtype dtype,
                                  int ndim, const int64_t *shape, tandem_lifetime lifetime,
                                  int first_use, int last_use, tandem_tensor **out);
/* Place every tensor (no device work). Over budget → TANDEM_E_BUDGET with a report logged. */
tandem_status tandem_pool_plan(tandem_pool *pool);
/* Plan if needed, allocate the arena, turn the plan into addresses. Nothing is allocated after. */
tandem_status tandem_pool_commit(tandem_pool *pool);
/* Human-readable plan: bytes per class, peak, budget, largest tensors. Returns bytes written
 * (excluding NUL), truncating to cap. */
size_t tandem_pool_report(const tandem_pool *pool, char *buf, size_t cap);

typedef struct tandem_pool_stats {
    size_t persistent_bytes; /* sum of persistent tensors (aligned) */
    size_t per_step_peak;    /* peak of overlaid per-step tensors */
    size_t per_step_sum;     /* what per-step tensors would need without overlaying */
    size_t arena_bytes;      /* persistent + per-step peak, = what commit allocates */
    size_t budget_bytes;     /* 0 = unlimited */
    int tensor_count;
} tandem_pool_stats;
void tandem_pool_get_stats(const tandem_pool *pool, tandem_pool_stats *out);

const char *tandem_tensor_name(const tandem_tensor *t);
tandem_dtype tandem_tensor_dtype(const tandem_tensor *t);
int tandem_tensor_ndim(const tandem_tensor *t);
int64_t tandem_tensor_dim(const tandem_tensor *t, int i);
int64_t tandem_tensor_numel(const tandem_tensor *t);
size_t tandem_tensor_bytes(const tandem_tensor *t);
/* Byte offset inside the arena (after plan) and device address (after commit). */
size_t tandem_tensor_offset(const tandem_tensor *t);
uint64_t tandem_tensor_addr(const tandem_tensor *t);

/* Copies between host memory and a committed tensor (whole tensor, bytes must match). */
tandem_status tandem_tensor_upload(tandem_stream *s, tandem_tensor *t, const void *src, size_t bytes);
tandem_status tandem_tensor_download(tandem_stream *s, void *dst, const tandem_tensor *t, size_t bytes);
/* Copy between tensors of equal size, on the same or different devices (peer or staged). */
tandem_status tandem_tensor_copy(tandem_stream *s, tandem_tensor *dst, const tandem_tensor *src);

/* ---- ops ------------------------------------------------------------------------------------- */

/* GEMM, row-major at this API: C[M,N] = alpha * op(A) @ op(B) + beta * C, where op(A) is
 * [M,K] (A stored [M,K], or [K,M] when trans_a) and op(B) is [K,N] (B stored [K,N], or [N,K]
 * when trans_b). Tensors of rank 3 are batches: [batch, rows, cols]. f32 in and out; compute f32.
 * On CUDA the algorithm for each shape is chosen once (tandem_gemm_prepare, before commit). */
typedef struct tandem_gemm_shape {
    int trans_a, trans_b;
    int64_t m, n, k;
    int64_t batch; /* 1 for a single product */
} tandem_gemm_shape;
tandem_status tandem_gemm_prepare(tandem_device *dev, const tandem_gemm_shape *shape);
tandem_status tandem_gemm(tandem_stream *s, int trans_a, int trans_b, float alpha,
                          const tandem_tensor *a, const tandem_tensor *b, float beta,
                          tandem_tensor *c);

/* Element-wise and reduction kernels (f32 unless named). */
tandem_status tandem_op_fill(tandem_stream *s, tandem_tensor *t, float value);
tandem_status tandem_op_scale(tandem_stream *s, tandem_tensor *x, float alpha);            /* x *= a */
tandem_status tandem_op_axpy(tandem_stream *s, float alpha, const tandem_tensor *x,
                             tandem_tensor *y);                                          /* y += a*x */
tandem_status tandem_op_cast(tandem_stream *s, const tandem_tensor *src, tandem_tensor *dst); /* f32<->bf16 */
/* out[r] = sum_c x[r, c] over the last dimension; out has numel(x)/last_dim elements. */
tandem_status tandem_op_row_sum(tandem_stream *s, const tandem_tensor *x, tandem_tensor *out);

#ifdef __cplusplus
}
#endif

/* The rest of the public API, one header per area (each includes this one first). */
#include "tandem_config.h"
#include "tandem_train.h"
#include "tandem_checkpoint.h"
#include "tandem_data.h"
#include "tandem_text.h"
#include "tandem_files.h"
#include "tandem_features.h"
#include "tandem_synth.h"
#include "tandem_plot.h"
#include "tandem_system.h"
#include "tandem_cost.h"
#include "tandem_validate.h"

#endif /* TANDEM_H */
