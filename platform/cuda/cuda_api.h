/* cuda_api.h — the project's own declarations of the CUDA driver API and cuBLASLt subset the
 * cuda backend uses, so the project builds where the CUDA toolkit is absent. Types, enum values
 * and struct layouts match cuda.h / cublasLt.h / library_types.h of CUDA 12-13: every value
 * is compared with the toolkit headers by test/unit/test_cuda_api.c when they are installed;
 * the tandem_pfn_* signatures were checked by assigning the toolkit's declared functions to
 * them in a C11 -Werror build against CUDA 13.0's headers.
 *
 * Nothing here declares a function: the backend resolves every entry point at run time
 * (dlopen + cuGetProcAddress) into the tandem_pfn_* pointer types below. The stand-in driver
 * (test/fakecuda) defines functions with these exact signatures under the base names;
 * with TANDEM_CUDA_API_PROTOTYPES defined before inclusion this header also declares those
 * prototypes (base names, no _v2 suffix) so an implementation is type-checked against it.
 *
 * Versioned entry points: the backend asks cuGetProcAddress for the base name ("cuMemAlloc")
 * with cudaVersion TANDEM_CUDA_API_VERSION (12000), and the driver returns the entry point of
 * that API version (cuMemAlloc_v2, cuStreamDestroy_v2, ...). Every typedef below is the
 * signature of the version a 12.0 request yields.
 */
#ifndef TANDEM_PLATFORM_CUDA_API_H
#define TANDEM_PLATFORM_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

/* The API version requested from cuGetProcAddress (CUDA 12.0). */
#define TANDEM_CUDA_API_VERSION 12000

/* ================================ driver API ============================================ */

typedef enum cudaError_enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED = 4,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER = 36,
    CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    CUDA_ERROR_SHARED_OBJECT_INIT_FAILED = 303,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_NOT_PERMITTED = 800,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900, /* the call is not permitted while capturing */
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901, /* the capture was invalidated by an earlier error */
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = 903,   /* end capture on a stream that did not begin it */
    CUDA_ERROR_STREAM_CAPTURE_UNJOINED = 904,    /* a stream forked into the capture not joined back */
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION = 905,   /* a dependency on work outside the capture */
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906,    /* the legacy stream during a global capture */
    CUDA_ERROR_CAPTURED_EVENT = 907,             /* query/sync of an event recorded in a capture */
    CUDA_ERROR_UNKNOWN = 999
} CUresult;

typedef int CUdevice;                  /* ordinal-like handle */
typedef unsigned long long CUdeviceptr; /* 64-bit device address (CUdeviceptr_v2) */
typedef uint64_t cuuint64_t;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUgraph_st *CUgraph;         /* a captured graph */
typedef struct CUgraphExec_st *CUgraphExec; /* its executable instance */

/* Stream capture (cuStreamBeginCapture, cuStreamIsCapturing). */
typedef enum CUstreamCaptureMode_enum {
    CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
    CU_STREAM_CAPTURE_MODE_RELAXED = 2
} CUstreamCaptureMode;
typedef enum CUstreamCaptureStatus_enum {
    CU_STREAM_CAPTURE_STATUS_NONE = 0,
    CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
    CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2
} CUstreamCaptureStatus;

/* Function attributes (cuFuncGetAttribute / cuFuncSetAttribute). */
typedef enum CUfunction_attribute_enum {
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0, /* the block size __launch_bounds__ and registers allow */
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,     /* static shared memory */
    CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 /* settable: the opt-in above 48 KiB */
} CUfunction_attribute;

typedef enum CUdevice_attribute_enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,    /* PCI location: matches CUDA ordinals to NVML */
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
    CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
    CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
} CUdevice_attribute;

/* cuGetProcAddress flags (cuuint64_t) and per-symbol result. */
typedef enum CUdriverProcAddress_flags_enum {
    CU_GET_PROC_ADDRESS_DEFAULT = 0,
    CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1 << 0,
    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 1 << 1
} CUdriverProcAddress_flags;

typedef enum CUdriverProcAddressQueryResult_enum {
    CU_GET_PROC_ADDRESS_SUCCESS = 0,
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} CUdriverProcAddressQueryResult;

/* cuStreamCreate / cuEventCreate / cuMemHostAlloc flags */
#define CU_STREAM_DEFAULT 0x0u
#define CU_STREAM_NON_BLOCKING 0x1u
#define CU_EVENT_DEFAULT 0x0u
#define CU_EVENT_BLOCKING_SYNC 0x1u
#define CU_EVENT_DISABLE_TIMING 0x2u
/* cuEventRecordWithFlags / cuStreamWaitEvent flags: inside a capture, an event record / wait
 * node on an event outside the graph (outside a capture they change nothing) */
#define CU_EVENT_RECORD_EXTERNAL 0x1u
#define CU_EVENT_WAIT_EXTERNAL 0x1u
/* primary context scheduling (cuDevicePrimaryCtxSetFlags): how a host thread waits */
#define CU_CTX_SCHED_AUTO 0x00u
#define CU_CTX_SCHED_SPIN 0x01u
#define CU_CTX_SCHED_YIELD 0x02u
#define CU_CTX_SCHED_BLOCKING_SYNC 0x04u
#define CU_CTX_SCHED_MASK 0x07u
#define CU_MEMHOSTALLOC_PORTABLE 0x01u
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02u
#define CU_MEMHOSTALLOC_WRITECOMBINED 0x04u

/* ---- entry points (signatures of the CUDA 12.0 versions) ---- */
typedef CUresult (*tandem_pfn_cuInit)(unsigned int flags);
typedef CUresult (*tandem_pfn_cuDriverGetVersion)(int *version);
/* cuGetProcAddress_v2 (CUDA >= 12.0); the v1 symbol "cuGetProcAddress" lacks symbolStatus. */
typedef CUresult (*tandem_pfn_cuGetProcAddress)(const char *symbol, void **pfn, int cudaVersion,
                                                cuuint64_t flags,
                                                CUdriverProcAddressQueryResult *symbolStatus);
typedef CUresult (*tandem_pfn_cuGetProcAddress_v1)(const char *symbol, void **pfn,
                                                   int cudaVersion, cuuint64_t flags);
typedef CUresult (*tandem_pfn_cuGetErrorName)(CUresult error, const char **str);
typedef CUresult (*tandem_pfn_cuGetErrorString)(CUresult error, const char **str);

typedef CUresult (*tandem_pfn_cuDeviceGetCount)(int *count);
typedef CUresult (*tandem_pfn_cuDeviceGet)(CUdevice *device, int ordinal);
typedef CUresult (*tandem_pfn_cuDeviceGetName)(char *name, int len, CUdevice dev);
typedef CUresult (*tandem_pfn_cuDeviceGetAttribute)(int *value, CUdevice_attribute attrib,
                                                    CUdevice dev);
typedef CUresult (*tandem_pfn_cuDeviceTotalMem)(size_t *bytes, CUdevice dev); /* _v2 */
typedef CUresult (*tandem_pfn_cuDeviceCanAccessPeer)(int *canAccessPeer, CUdevice dev,
                                                     CUdevice peerDev);

typedef CUresult (*tandem_pfn_cuDevicePrimaryCtxRetain)(CUcontext *pctx, CUdevice dev);
typedef CUresult (*tandem_pfn_cuDevicePrimaryCtxRelease)(CUdevice dev); /* _v2 */
typedef CUresult (*tandem_pfn_cuDevicePrimaryCtxSetFlags)(CUdevice dev, unsigned int flags); /* _v2 */
typedef CUresult (*tandem_pfn_cuDevicePrimaryCtxGetState)(CUdevice dev, unsigned int *flags,
                                                          int *active);
typedef CUresult (*tandem_pfn_cuCtxSetCurrent)(CUcontext ctx);
typedef CUresult (*tandem_pfn_cuCtxGetCurrent)(CUcontext *pctx);
typedef CUresult (*tandem_pfn_cuCtxSynchronize)(void);
typedef CUresult (*tandem_pfn_cuCtxEnablePeerAccess)(CUcontext peerContext, unsigned int flags);

typedef CUresult (*tandem_pfn_cuMemAlloc)(CUdeviceptr *dptr, size_t bytes); /* _v2 */
typedef CUresult (*tandem_pfn_cuMemFree)(CUdeviceptr dptr);                 /* _v2 */
typedef CUresult (*tandem_pfn_cuMemHostAlloc)(void **pp, size_t bytes, unsigned int flags);
typedef CUresult (*tandem_pfn_cuMemFreeHost)(void *p);
typedef CUresult (*tandem_pfn_cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes,
                                                 CUstream stream); /* _v2 */
typedef CUresult (*tandem_pfn_cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes,
                                                 CUstream stream); /* _v2 */
typedef CUresult (*tandem_pfn_cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                                 CUstream stream); /* _v2 */
typedef CUresult (*tandem_pfn_cuMemcpyPeerAsync)(CUdeviceptr dst, CUcontext dstContext,
                                                 CUdeviceptr src, CUcontext srcContext,
                                                 size_t bytes, CUstream stream);

typedef CUresult (*tandem_pfn_cuStreamCreate)(CUstream *stream, unsigned int flags);
typedef CUresult (*tandem_pfn_cuStreamDestroy)(CUstream stream); /* _v2 */
typedef CUresult (*tandem_pfn_cuStreamSynchronize)(CUstream stream);
typedef CUresult (*tandem_pfn_cuStreamWaitEvent)(CUstream stream, CUevent event,
                                                 unsigned int flags);

typedef CUresult (*tandem_pfn_cuEventCreate)(CUevent *event, unsigned int flags);
typedef CUresult (*tandem_pfn_cuEventDestroy)(CUevent event); /* _v2 */
typedef CUresult (*tandem_pfn_cuEventRecord)(CUevent event, CUstream stream);
typedef CUresult (*tandem_pfn_cuEventQuery)(CUevent event); /* CUDA_ERROR_NOT_READY if pending */
typedef CUresult (*tandem_pfn_cuEventSynchronize)(CUevent event);
typedef CUresult (*tandem_pfn_cuEventElapsedTime)(float *ms, CUevent start, CUevent end);
typedef CUresult (*tandem_pfn_cuEventRecordWithFlags)(CUevent event, CUstream stream, unsigned int flags);
typedef CUresult (*tandem_pfn_cuStreamQuery)(CUstream stream); /* CUDA_ERROR_NOT_READY if pending */

/* Graphs. cuStreamBeginCapture at 12.0 is cuStreamBeginCapture_v2 (with the mode);
 * cuGraphInstantiateWithFlags is asked for by that name (cuGraphInstantiate's 12.0 form). */
typedef CUresult (*tandem_pfn_cuStreamBeginCapture)(CUstream stream, CUstreamCaptureMode mode);
typedef CUresult (*tandem_pfn_cuStreamEndCapture)(CUstream stream, CUgraph *graph);
typedef CUresult (*tandem_pfn_cuStreamIsCapturing)(CUstream stream, CUstreamCaptureStatus *status);
typedef CUresult (*tandem_pfn_cuGraphInstantiateWithFlags)(CUgraphExec *exec, CUgraph graph,
                                                           unsigned long long flags);
typedef CUresult (*tandem_pfn_cuGraphLaunch)(CUgraphExec exec, CUstream stream);
typedef CUresult (*tandem_pfn_cuGraphExecDestroy)(CUgraphExec exec);
typedef CUresult (*tandem_pfn_cuGraphDestroy)(CUgraph graph);

typedef CUresult (*tandem_pfn_cuModuleLoadData)(CUmodule *module, const void *image);
typedef CUresult (*tandem_pfn_cuModuleUnload)(CUmodule module);
typedef CUresult (*tandem_pfn_cuModuleGetFunction)(CUfunction *func, CUmodule module,
                                                   const char *name);
typedef CUresult (*tandem_pfn_cuLaunchKernel)(CUfunction f, unsigned int gridDimX,
                                              unsigned int gridDimY, unsigned int gridDimZ,
                                              unsigned int blockDimX, unsigned int blockDimY,
                                              unsigned int blockDimZ, unsigned int sharedMemBytes,
                                              CUstream stream, void **kernelParams, void **extra);
typedef CUresult (*tandem_pfn_cuFuncGetAttribute)(int *pi, CUfunction_attribute attrib, CUfunction hfunc);
typedef CUresult (*tandem_pfn_cuFuncSetAttribute)(CUfunction hfunc, CUfunction_attribute attrib, int value);

/* ================================ cuBLASLt ============================================== */

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_ARCH_MISMATCH = 8,
    CUBLAS_STATUS_MAPPING_ERROR = 11,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_INTERNAL_ERROR = 14,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
    CUBLAS_STATUS_LICENSE_ERROR = 16
} cublasStatus_t;

/* library_types.h */
typedef enum cudaDataType_t {
    CUDA_R_32F = 0,
    CUDA_R_64F = 1,
    CUDA_R_16F = 2,
    CUDA_R_32I = 10,
    CUDA_R_16BF = 14
} cudaDataType;
typedef cudaDataType cudaDataType_t;

typedef enum {
    CUBLAS_COMPUTE_32F = 68,
    CUBLAS_COMPUTE_32F_PEDANTIC = 69,
    CUBLAS_COMPUTE_32F_FAST_16BF = 75,
    CUBLAS_COMPUTE_32F_FAST_TF32 = 77
} cublasComputeType_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;

typedef enum { CUBLASLT_POINTER_MODE_HOST = 0, CUBLASLT_POINTER_MODE_DEVICE = 1 } cublasLtPointerMode_t;

typedef enum { CUBLASLT_ORDER_COL = 0, CUBLASLT_ORDER_ROW = 1 } cublasLtOrder_t;

/* Attribute value types in comments, as the real header documents them. */
typedef enum {
    CUBLASLT_MATRIX_LAYOUT_TYPE = 0,                 /* uint32_t (cudaDataType) */
    CUBLASLT_MATRIX_LAYOUT_ORDER = 1,                /* int32_t (cublasLtOrder_t) */
    CUBLASLT_MATRIX_LAYOUT_ROWS = 2,                 /* uint64_t */
    CUBLASLT_MATRIX_LAYOUT_COLS = 3,                 /* uint64_t */
    CUBLASLT_MATRIX_LAYOUT_LD = 4,                   /* int64_t */
    CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,          /* int32_t */
    CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6  /* int64_t, elements */
} cublasLtMatrixLayoutAttribute_t;

typedef enum {
    CUBLASLT_MATMUL_DESC_COMPUTE_TYPE = 0,           /* int32_t */
    CUBLASLT_MATMUL_DESC_SCALE_TYPE = 1,             /* int32_t */
    CUBLASLT_MATMUL_DESC_POINTER_MODE = 2,           /* int32_t */
    CUBLASLT_MATMUL_DESC_TRANSA = 3,                 /* int32_t (cublasOperation_t) */
    CUBLASLT_MATMUL_DESC_TRANSB = 4,                 /* int32_t */
    CUBLASLT_MATMUL_DESC_TRANSC = 5,                 /* int32_t */
    CUBLASLT_MATMUL_DESC_EPILOGUE = 7,               /* uint32_t (cublasLtEpilogue_t) */
    CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,           /* void * (device) */
    CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE = 10,     /* int64_t */
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 11,  /* void * (device) */
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 12,       /* int64_t */
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE = 13, /* int64_t */
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE = 22, /* int32_t (cudaDataType), default -1: D's */
    CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26         /* int32_t (cudaDataType) */
} cublasLtMatmulDescAttributes_t;

typedef enum {
    CUBLASLT_EPILOGUE_DEFAULT = 1,
    CUBLASLT_EPILOGUE_RELU = 2,
    CUBLASLT_EPILOGUE_BIAS = 4,
    CUBLASLT_EPILOGUE_RELU_BIAS = 2 | 4,
    CUBLASLT_EPILOGUE_GELU = 32,
    CUBLASLT_EPILOGUE_GELU_AUX = 32 | 128,
    CUBLASLT_EPILOGUE_GELU_BIAS = 32 | 4,
    CUBLASLT_EPILOGUE_GELU_AUX_BIAS = 32 | 128 | 4,
    CUBLASLT_EPILOGUE_DGELU = 64 | 128,
    CUBLASLT_EPILOGUE_DGELU_BGRAD = 64 | 128 | 16,
    CUBLASLT_EPILOGUE_BGRADA = 256,
    CUBLASLT_EPILOGUE_BGRADB = 512
} cublasLtEpilogue_t;

typedef enum {
    CUBLASLT_MATMUL_PREF_SEARCH_MODE = 0,            /* uint32_t */
    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,    /* uint64_t */
    CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK = 3,  /* uint32_t: cublasLtReductionScheme_t bits allowed */
    /* uint32_t each, default 256: the heuristic returns only algorithms that work with
     * pointers aligned to at least this many bytes */
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8
} cublasLtMatmulPreferenceAttributes_t;

/* Split-K reductions: in place (the output added to under counters) or in a workspace,
 * reduced by a separate pass. */
typedef enum {
    CUBLASLT_REDUCTION_SCHEME_NONE = 0,
    CUBLASLT_REDUCTION_SCHEME_INPLACE = 1,
    CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE = 2,
    CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE = 4,
    CUBLASLT_REDUCTION_SCHEME_MASK = 0x7
} cublasLtReductionScheme_t;

/* Opaque handles; the descriptor structs' sizes are the real header's (64/256/64 bytes). */
typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct { uint64_t data[8]; } cublasLtMatrixLayoutOpaque_t;
typedef cublasLtMatrixLayoutOpaque_t *cublasLtMatrixLayout_t;
typedef struct { uint64_t data[32]; } cublasLtMatmulDescOpaque_t;
typedef cublasLtMatmulDescOpaque_t *cublasLtMatmulDesc_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulPreferenceOpaque_t;
typedef cublasLtMatmulPreferenceOpaque_t *cublasLtMatmulPreference_t;

/* Semi-opaque algorithm: 64 bytes, copied by value. */
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;

typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;

typedef size_t (*tandem_pfn_cublasLtGetVersion)(void);
typedef cublasStatus_t (*tandem_pfn_cublasLtCreate)(cublasLtHandle_t *handle);
typedef cublasStatus_t (*tandem_pfn_cublasLtDestroy)(cublasLtHandle_t handle);
typedef cublasStatus_t (*tandem_pfn_cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t *desc,
                                                              cublasComputeType_t computeType,
                                                              cudaDataType_t scaleType);
typedef cublasStatus_t (*tandem_pfn_cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t desc);
typedef cublasStatus_t (*tandem_pfn_cublasLtMatmulDescSetAttribute)(
    cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void *buf,
    size_t sizeInBytes);
typedef cublasStatus_t (*tandem_pfn_cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t *layout,
                                                                cudaDataType type, uint64_t rows,
                                                                uint64_t cols, int64_t ld);
typedef cublasStatus_t (*tandem_pfn_cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t layout);
typedef cublasStatus_t (*tandem_pfn_cublasLtMatrixLayoutSetAttribute)(
    cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, const void *buf,
    size_t sizeInBytes);
typedef cublasStatus_t (*tandem_pfn_cublasLtMatmulPreferenceCreate)(
    cublasLtMatmulPreference_t *pref);
typedef cublasStatus_t (*tandem_pfn_cublasLtMatmulPreferenceDestroy)(
    cublasLtMatmulPreference_t pref);
typedef cublasStatus_t (*tandem_pfn_cublasLtMatmulPreferenceSetAttribute)(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
    size_t sizeInBytes);
typedef cublasStatus_t (*tandem_pfn_cublasLtMatmulAlgoGetHeuristic)(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t pref, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int *returnAlgoCount);
/* D = alpha * op(A) op(B) + beta * C, column-major; alpha/beta host pointers (pointer mode
 * host); the stream is a CUstream (cudaStream_t is the same type). */
typedef cublasStatus_t (*tandem_pfn_cublasLtMatmul)(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
    cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
    const void *C, cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc,
    const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspaceSizeInBytes,
    CUstream stream);

/* ================== call lists (X-macros) ================================================ */
/* Every driver call the backend resolves through cuGetProcAddress (cuGetProcAddress itself is
 * found with dlsym), and every cuBLASLt call it resolves with dlsym. */
#define TANDEM_CUDA_DRIVER_CALLS(X)                                                       \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)                 \
    X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute)         \
    X(cuDeviceTotalMem) X(cuDeviceCanAccessPeer) X(cuDevicePrimaryCtxRetain)              \
    X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxSynchronize) \
    X(cuCtxEnablePeerAccess) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost) \
    X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemcpyPeerAsync)    \
    X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent)       \
    X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventQuery)                    \
    X(cuEventSynchronize) X(cuEventElapsedTime) X(cuModuleLoadData) X(cuModuleUnload)      \
    X(cuModuleGetFunction) X(cuLaunchKernel)                                               \
    X(cuDevicePrimaryCtxSetFlags) X(cuDevicePrimaryCtxGetState)                           \
    X(cuFuncGetAttribute) X(cuFuncSetAttribute)                                           \
    X(cuEventRecordWithFlags) X(cuStreamQuery) X(cuStreamBeginCapture)                    \
    X(cuStreamEndCapture) X(cuStreamIsCapturing) X(cuGraphInstantiateWithFlags)           \
    X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)
#define TANDEM_CUBLASLT_CALLS(X)                                                          \
    X(cublasLtGetVersion) X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate) \
    X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute)                         \
    X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)                           \
    X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulPreferenceCreate)                  \
    X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute)             \
    X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)

/* ================== optional prototypes for an implementation (stand-in) ================= */
#ifdef TANDEM_CUDA_API_PROTOTYPES
#define TANDEM_CUDA_PROTO(name) extern __typeof__(*(tandem_pfn_##name)0) name;
TANDEM_CUDA_DRIVER_CALLS(TANDEM_CUDA_PROTO)
TANDEM_CUBLASLT_CALLS(TANDEM_CUDA_PROTO)
#undef TANDEM_CUDA_PROTO
/* A real driver exports it as cuGetProcAddress_v2 (and v1 as cuGetProcAddress). */
extern __typeof__(*(tandem_pfn_cuGetProcAddress)0) cuGetProcAddress_v2;
#endif

#endif
