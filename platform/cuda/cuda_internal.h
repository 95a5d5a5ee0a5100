/* cuda_internal.h — what the cuda backend's files (cuda_device.c: devices, memory, streams,
 * events, launches; cuda_blaslt.c: GEMM through cuBLASLt or the fatbin kernel) share.
 * Not for use outside platform/cuda/cuda_*.c. */
#ifndef TANDEM_PLATFORM_CUDA_INTERNAL_H
#define TANDEM_PLATFORM_CUDA_INTERNAL_H

#include "platform/cuda/cuda_driver.h"
#include "platform/device.h"
#include "platform/os/os.h"
#include "kernels/registry.h"

/* Distinct GEMM shapes one device can prepare (shapes are fixed, so this bounds the model). */
#define TANDEM_CUDA_GEMM_CACHE 256
/* cuBLASLt workspace per stream: a matmul may use it as scratch until it completes, so two
 * streams sharing one would race (issue 11 item 3). */
#define TANDEM_CUDA_LT_WORKSPACE ((size_t)32 << 20)

typedef struct tandem_cuda_gemm_plan tandem_cuda_gemm_plan; /* cuda_blaslt.c */

typedef struct tandem_cuda_dev {
    int ordinal;
    CUdevice cu_dev;
    CUcontext ctx;                          /* the device's primary context */
    CUfunction funcs[TANDEM_KERNEL_COUNT];  /* every registered kernel, resolved at open */
    unsigned max_shmem[TANDEM_KERNEL_COUNT]; /* dynamic shared memory each may use (opted in at open) */
    unsigned max_threads[TANDEM_KERNEL_COUNT]; /* block size each allows (launch bounds, registers) */
    /* GEMM (cuda_blaslt.c): plans for prepared shapes, fixed capacity, allocated at open */
    void *lt;                               /* cublasLtHandle_t, NULL without cuBLASLt */
    tandem_mutex gemm_lock;
    int gemm_count;
    tandem_cuda_gemm_plan *gemm_plans;      /* [TANDEM_CUDA_GEMM_CACHE] */
} tandem_cuda_dev;

static inline tandem_cuda_dev *tandem_cuda_impl(const tandem_device *d) { return (tandem_cuda_dev *)d->impl; }
/* A stream's backend part: the driver stream and, with cuBLASLt, its own workspace. */
typedef struct tandem_cuda_stream_impl {
    CUstream cs;
    CUdeviceptr lt_workspace; /* TANDEM_CUDA_LT_WORKSPACE bytes, or 0 without cuBLASLt */
    int capturing;            /* between graph_begin and graph_end: events become external nodes */
} tandem_cuda_stream_impl;
static inline CUstream tandem_cuda_stream(const tandem_stream *s) {
    return ((const tandem_cuda_stream_impl *)s->impl)->cs;
}

/* Make the device's context current on the calling thread (every backend entry does this:
 * callers may be on any thread). */
tandem_status tandem_cuda_make_current(const tandem_cuda_dev *d);

/* cuda_device.c: launch a registered kernel (also used for the fallback GEMM). */
tandem_status tandem_cuda_launch(tandem_stream *s, int kernel_id, const tandem_launch_dims *dims,
                                 const void *args, size_t args_size);

/* cuda_blaslt.c */
tandem_status tandem_cuda_gemm_init(tandem_cuda_dev *d);  /* at open: cuBLASLt handle, workspace, plan table */
void tandem_cuda_gemm_free(tandem_cuda_dev *d);           /* at close */
/* at stream create, with cuBLASLt: the stream's workspace */
tandem_status tandem_cuda_gemm_stream_init(tandem_cuda_dev *d, tandem_cuda_stream_impl *si);
tandem_status tandem_cuda_gemm_prepare(tandem_device *dev, const tandem_gemm_desc *g);
tandem_status tandem_cuda_gemm(tandem_stream *s, const tandem_gemm_desc *g, float alpha, tandem_dptr a,
                               tandem_dptr b, float beta, tandem_dptr c);
/* The plans that do not run as cuBLASLt's fused GEMM, one line each into buf ("GEMM <shape>:
 * <how> (<why>)"); returns how many. */
int tandem_cuda_gemm_fallbacks(tandem_device *dev, char *buf, size_t cap);

/* cuda_gemm_epi.c: g's epilogue as kernels of its own on s, after the plain product of our A (a)
 * into C (c) was queued there (the split path of a plan cuBLASLt rejects). */
tandem_status tandem_cuda_gemm_epi_pass(tandem_stream *s, const tandem_gemm_desc *g, tandem_dptr a, tandem_dptr c);

#endif
