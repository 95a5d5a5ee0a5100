/* device.h — the device interface every backend implements (DESIGN.md §3).
 *
 * A backend is a table of functions (tandem_backend_ops). The public tandem_device /
 * tandem_stream / tandem_event handles are the structs below; each carries a pointer to its
 * backend's table and a backend-private part. Device memory is addressed by tandem_dptr
 * (a CUdeviceptr on cuda, a plain pointer value on host), so runtime code never sees a
 * CUDA type. Owns: nothing global; each device owns its context, streams and events.
 */
#ifndef TANDEM_PLATFORM_DEVICE_H
#define TANDEM_PLATFORM_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/ktypes.h" /* tandem_launch_dims */
#include "tandem.h"

typedef uint64_t tandem_dptr;

/* One GEMM in the row-major convention of tandem.h, on raw device addresses. Dense matrices,
 * leading dimension = row length of the stored matrix; batch strides in elements. Element
 * types: f32 unless set (the type fields come last and TANDEM_F32 is 0, so a zero-initialised
 * or positionally initialised descriptor is all-f32). Mixed precision (runtime/model/model.h,
 * "Precision"): A and B both TANDEM_BF16 with f32 accumulation and an f32 or bf16 C, on cuda
 * only; the host backend takes f32 only. */
/* What a GEMM does to C after v = alpha op(A) op(B) + beta C (cuBLASLt's epilogues; every
 * backend computes the same). NONE is 0, so a zeroed descriptor has none. bias is [n] of C's
 * type, the same for every item (cuBLASLt's default bias type is D's); aux is a matrix laid
 * out as C (leading dimension n, batch stride stride_c) of C's type (cuBLASLt's default aux
 * type is D's). gelu is the tanh form (kernels/layers.h tandem_gelu_tanh), gelu' its
 * derivative (tandem_gelu_tanh_grad). */
typedef enum tandem_gemm_epilogue {
    TANDEM_GEMM_EPI_NONE = 0,
    TANDEM_GEMM_EPI_BIAS = 1,          /* C = v + bias[j] (CUBLASLT_EPILOGUE_BIAS) */
    TANDEM_GEMM_EPI_GELU_AUX_BIAS = 2, /* aux = v + bias[j]; C = gelu(aux) (GELU_AUX_BIAS) */
    TANDEM_GEMM_EPI_DGELU = 3,         /* C = v gelu'(aux): aux is the forward's pre-activation
                                          (CUBLASLT_EPILOGUE_DGELU) */
    TANDEM_GEMM_EPI_BGRAD = 4,         /* C = v; bias[i] = sum over k of op(A)[i, k], i < m, written
                                          (not added): with trans_a, batch 1 and an f32 C only, the
                                          weight gradient dW = dy^T x giving dy's column sums, its
                                          bias's gradient, in the same pass. cuBLASLt's BGRADB (its B
                                          is our A; its D's columns are our C's rows) */
} tandem_gemm_epilogue;
#define TANDEM_GEMM_EPI_COUNT 5
/* Which epilogues read a bias / write one (the bias gradient) / touch an aux matrix. */
static inline int tandem_gemm_epi_has_bias(tandem_gemm_epilogue e) {
    return e == TANDEM_GEMM_EPI_BIAS || e == TANDEM_GEMM_EPI_GELU_AUX_BIAS;
}
static inline int tandem_gemm_epi_bias_out(tandem_gemm_epilogue e) { return e == TANDEM_GEMM_EPI_BGRAD; }
/* ... either way: the descriptor's bias pointer is set. */
static inline int tandem_gemm_epi_bias_ptr(tandem_gemm_epilogue e) {
    return tandem_gemm_epi_has_bias(e) || tandem_gemm_epi_bias_out(e);
}
static inline int tandem_gemm_epi_has_aux(tandem_gemm_epilogue e) {
    return e == TANDEM_GEMM_EPI_GELU_AUX_BIAS || e == TANDEM_GEMM_EPI_DGELU;
}

typedef struct tandem_gemm_desc {
    int trans_a, trans_b;
    int64_t m, n, k;
    int64_t batch;
    int64_t stride_a, stride_b, stride_c; /* elements between batch items (0 when batch == 1) */
    tandem_dtype a_type, b_type, c_type;  /* TANDEM_F32 (0) or TANDEM_BF16 (C: with bf16 A, B) */
    tandem_gemm_epilogue epilogue;        /* part of the shape (a plan per epilogue) */
    tandem_dptr bias; /* the epilogue's bias's address, set by runtime/core/dev.c from the
                         caller's view for the backend (not part of the shape) */
    int tf32; /* f32 A and B on cuda with cuBLASLt: CUBLAS_COMPUTE_32F_FAST_TF32 (A and B rounded
                 to TF32's 10-bit mantissa, f32 accumulation; the config's `tf32`). Part of the
                 shape. The host GEMM and the fatbin's gemm_f32 compute exact f32 either way. */
    tandem_dptr aux; /* the epilogue's aux matrix's address, set like bias (last, so positional
                        initialisers of the fields above stay valid) */
    tandem_dptr c_src; /* 0: beta C reads C itself (in place); else the f32 matrix beta C reads,
                          laid out as C and apart from it (cuBLASLt's C != D), set like bias */
} tandem_gemm_desc;

typedef struct tandem_backend_ops tandem_backend_ops;

/* Collectives across model devices (data-parallel training, docs/SCALING.md). A tandem_coll is
 * one rank's membership in a group of nranks devices (threads of one process, processes, or
 * machines): backend-private, created by coll_open / coll_open_local, freed by coll_close.
 * The unique id is made by one rank (coll_unique_id) and handed to the others by the launcher
 * (MPI broadcast, rendezvous) before coll_open; its bytes are opaque. cuda: NCCL
 * (platform/cuda/nccl.h); host: MPI (platform/host/host_mpi.h; a build without MPI answers
 * TANDEM_E_UNSUPPORTED saying how to get it). */
#define TANDEM_COLL_ID_BYTES 128
typedef struct tandem_coll_id {
    unsigned char bytes[TANDEM_COLL_ID_BYTES];
} tandem_coll_id;
typedef struct tandem_coll tandem_coll;

struct tandem_device {
    const tandem_backend_ops *ops;
    tandem_device_info info;
    void *impl; /* backend-private */
};

struct tandem_stream {
    tandem_device *dev;
    void *impl;
};

struct tandem_event {
    tandem_device *dev;
    void *impl;
};

/* A captured sequence of a stream's work, replayed as one launch (CUDA graphs). Created
 * before a pool is committed (the handle and its backend part are the only allocations);
 * capture and instantiation happen later, in the driver. */
typedef struct tandem_graph {
    tandem_device *dev;
    void *impl;
    int ready; /* 1: an instance exists (graph_end succeeded) */
} tandem_graph;

struct tandem_backend_ops {
    const char *name; /* "host", "cuda" */
    void (*close)(tandem_device *dev);
    tandem_status (*sync)(tandem_device *dev);
    int (*can_access_peer)(const tandem_device *dst, const tandem_device *src);

    /* Device memory: the arena (one allocation per pool) and pinned host staging memory. */
    tandem_status (*mem_alloc)(tandem_device *dev, size_t bytes, tandem_dptr *out);
    void (*mem_free)(tandem_device *dev, tandem_dptr p);
    tandem_status (*host_alloc_pinned)(tandem_device *dev, size_t bytes, void **out);
    void (*host_free_pinned)(tandem_device *dev, void *p);

    tandem_status (*stream_create)(tandem_device *dev, tandem_stream *s);
    void (*stream_destroy)(tandem_stream *s);
    tandem_status (*stream_sync)(tandem_stream *s);

    tandem_status (*event_create)(tandem_device *dev, tandem_event *e);
    void (*event_destroy)(tandem_event *e);
    tandem_status (*event_record)(tandem_event *e, tandem_stream *s);
    tandem_status (*stream_wait_event)(tandem_stream *s, tandem_event *e);
    /* Optional (NULL: event_record then stream_wait_event): `after` waits for the work queued on
     * `before` (one device) through e, as capture-internal edges inside a graph capture (CUDA: a
     * plain record and wait, so `after` forks from / joins into `before`'s capture; the
     * external nodes event_record makes while capturing would not). */
    tandem_status (*stream_order)(tandem_stream *after, tandem_stream *before, tandem_event *e);
    tandem_status (*event_query)(tandem_event *e, int *done);
    tandem_status (*event_sync)(tandem_event *e);
    tandem_status (*event_elapsed_ms)(tandem_event *start, tandem_event *end, float *ms);

    /* Asynchronous on cuda (host memory must be pinned for true overlap), synchronous on host. */
    tandem_status (*copy_h2d)(tandem_stream *s, tandem_dptr dst, const void *src, size_t bytes);
    tandem_status (*copy_d2h)(tandem_stream *s, void *dst, tandem_dptr src, size_t bytes);
    tandem_status (*copy_d2d)(tandem_stream *s, tandem_dptr dst, tandem_dptr src, size_t bytes);
    /* dst on dst_dev, src on s's device; only called when can_access_peer(dst_dev, src dev)
     * or both are host devices. */
    tandem_status (*copy_peer)(tandem_stream *s, tandem_device *dst_dev, tandem_dptr dst,
                               tandem_dptr src, size_t bytes);

    /* Launch registered kernel `kernel_id` (kernels/registry.h) with its argument struct. */
    tandem_status (*launch)(tandem_stream *s, int kernel_id, const tandem_launch_dims *dims,
                            const void *args, size_t args_size);

    /* GEMM: prepare resolves the algorithm for a shape once (before commit); gemm runs it.
     * A prepare for a shape already prepared is a no-op. gemm on an unprepared shape is an
     * error on cuda (shapes are fixed, so this is a programming error caught in tests). */
    tandem_status (*gemm_prepare)(tandem_device *dev, const tandem_gemm_desc *d);
    tandem_status (*gemm)(tandem_stream *s, const tandem_gemm_desc *d, float alpha, tandem_dptr a,
                          tandem_dptr b, float beta, tandem_dptr c);
    /* The prepared shapes that do not run as the backend's library GEMM with its fused epilogue
     * (cuda: cuBLASLt's product + an epilogue kernel, or the fatbin GEMM), one line each
     * "GEMM <shape>: <how> (<why>)\n" into buf (truncated to cap); returns how many. NULL: none. */
    int (*gemm_fallbacks)(tandem_device *dev, char *buf, size_t cap);

    /* Whether launching kernel_id with these dims would pass the device's per-block limits
     * (dynamic shared memory against what the kernel may use), checked when a plan is made;
     * NULL: no such limits (host). TANDEM_E_UNSUPPORTED naming the need and the limit. */
    tandem_status (*launch_check)(tandem_device *dev, int kernel_id, const tandem_launch_dims *dims);

    /* Collectives (see tandem_coll above); NULL where the backend has none. open blocks until
     * every rank joined (or fails naming who is missing); open_local makes n members at once,
     * one per device of this process (ranks 0..n-1 in devs' order, out[n]). Every rank calls
     * the same collectives in the same order with the same count, type and root. The
     * operations are queued on s and return at once: a failure seen while they run (a rank
     * died, arguments differing across ranks) is reported by coll_check, and on the next
     * synchronisation of s by the caller checking coll_check. group(1) ... group(0) brackets
     * calls on several members from one thread (each would otherwise wait for the others). */
    tandem_status (*coll_unique_id)(tandem_device *dev, tandem_coll_id *out);
    tandem_status (*coll_open)(tandem_device *dev, const tandem_coll_id *id, int nranks, int rank,
                               tandem_coll **out);
    tandem_status (*coll_open_local)(tandem_device *const *devs, int n, tandem_coll **out);
    void (*coll_close)(tandem_coll *c);
    void (*coll_abort)(tandem_coll *c); /* a failed group: leave without waiting for the others */
    tandem_status (*coll_group)(int begin);
    /* recv[count] = sum over ranks of send[count] (send == recv: in place); type F32 or BF16 */
    tandem_status (*coll_all_reduce_sum)(tandem_coll *c, tandem_stream *s, tandem_dptr send,
                                         tandem_dptr recv, size_t count, tandem_dtype type);
    /* recv[count] of every rank = send[count] of rank root (send used on root only) */
    tandem_status (*coll_broadcast)(tandem_coll *c, tandem_stream *s, tandem_dptr send,
                                    tandem_dptr recv, size_t count, tandem_dtype type, int root);
    tandem_status (*coll_check)(tandem_coll *c);

    /* Graphs (cuda: stream capture, global mode, through the driver API). NULL on a backend
     * without them (host: its calls run as they are made, so a step simply runs eagerly).
     *   graph_create  the backend part of g (before commit)
     *   graph_begin   s starts capturing: what is queued on s from now on is recorded, not run;
     *                 event records and waits on s become external event nodes
     *   graph_end     s stops capturing; the capture is instantiated into g (replacing an older
     *                 instance); on failure the capture is ended all the same and g unchanged
     *   graph_launch  the instance queued on s as one launch
     *   graph_destroy the instance and the backend part */
    tandem_status (*graph_create)(tandem_device *dev, tandem_graph *g);
    tandem_status (*graph_begin)(tandem_graph *g, tandem_stream *s);
    tandem_status (*graph_end)(tandem_graph *g, tandem_stream *s);
    tandem_status (*graph_launch)(tandem_graph *g, tandem_stream *s);
    void (*graph_destroy)(tandem_graph *g);
};

/* Backend entry points. */
tandem_status tandem_host_device_open(int ordinal, tandem_device **out);
tandem_status tandem_host_device_count(int *count);
/* TANDEM_E_NODRIVER (with *count = 0) when libcuda.so.1 cannot be loaded. */
tandem_status tandem_cuda_device_count(int *count);
tandem_status tandem_cuda_device_open(int ordinal, tandem_device **out);

/* Why the driver could not be used (for diagnose): "" when it loaded fine. */
const char *tandem_cuda_driver_status(void);
/* Whether cuBLASLt was found (after a cuda device was opened), and its version or why not. */
int tandem_cuda_have_cublaslt(char *why, size_t cap);

#endif
