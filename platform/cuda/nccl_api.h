/* nccl_api.h — the project's own declarations of the NCCL subset platform/cuda/nccl.c uses, so
 * the project builds where nccl.h is absent. Values, the unique id's size and the signatures
 * are those of nccl.h 2.x (written against NCCL 2.28.9 as the CUDA 13.0 toolkit here ships it).
 *
 * Checked at build time: when an nccl.h is installed (NCCL_H in mk/45-nccl.mk), the build
 * compiles platform/cuda/check/nccl_api.c, which includes nccl.h FIRST and then this header. With
 * nccl.h's guard NCCL_H_ defined, the types below are not defined again (nccl.h's own are
 * used), every tandem_pfn_* typedef is then built from nccl.h's types and the real function is
 * assigned to it (a signature mismatch fails the -Werror build), and every value in the
 * TANDEM_NCCL_VALUES list is compared with nccl.h's by _Static_assert. The check object is not
 * part of libtandem.a.
 *
 * Nothing here declares a function: nccl.c resolves every entry point with dlsym into the
 * tandem_pfn_* pointer types. The stand-in library (test/fakecuda/fc_nccl.c) defines them under
 * these names; with TANDEM_NCCL_API_PROTOTYPES defined before inclusion this header also declares
 * those prototypes, so the stand-in is type-checked against it. */
#ifndef TANDEM_PLATFORM_NCCL_API_H
#define TANDEM_PLATFORM_NCCL_API_H

#include <stddef.h>

/* NCCL_VERSION(2, 13, 0) = 21300: ncclGetLastError (2.13) and ncclBfloat16 (2.10) exist. */
#define TANDEM_NCCL_MIN_VERSION 21300

/* Every enum value the project uses, with its value in nccl.h: X(name, value). */
#define TANDEM_NCCL_VALUES(X)                                                             \
    X(ncclSuccess, 0) X(ncclUnhandledCudaError, 1) X(ncclSystemError, 2)                  \
    X(ncclInternalError, 3) X(ncclInvalidArgument, 4) X(ncclInvalidUsage, 5)              \
    X(ncclRemoteError, 6) X(ncclInProgress, 7) X(ncclSum, 0) X(ncclProd, 1) X(ncclMax, 2) \
    X(ncclMin, 3) X(ncclAvg, 4) X(ncclFloat32, 7) X(ncclBfloat16, 9) X(ncclNumTypes, 12)  \
    X(NCCL_UNIQUE_ID_BYTES, 128)

#ifndef NCCL_H_ /* not after the real nccl.h (the build-time check) */
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct ncclComm *ncclComm_t;
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;
typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclNumResults = 8
} ncclResult_t;
/* ncclRedOp_t keeps nccl.h's ABI (an int-sized enum with a 0x7fffffff maximum). */
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4, ncclNumOps = 5,
               ncclMaxRedOp = 0x7fffffff } ncclRedOp_t;
typedef enum {
    ncclInt8 = 0, ncclUint8 = 1, ncclInt32 = 2, ncclUint32 = 3, ncclInt64 = 4, ncclUint64 = 5,
    ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9, ncclFloat8e4m3 = 10,
    ncclFloat8e5m2 = 11, ncclNumTypes = 12
} ncclDataType_t;
/* cudaStream_t in nccl.h: the same struct pointer as the driver API's CUstream. */
typedef struct CUstream_st *cudaStream_t;
#endif

/* The entry points, X(name, return type, parameter list). */
#define TANDEM_NCCL_CALLS(X)                                                                   \
    X(ncclGetVersion, ncclResult_t, (int *version))                                            \
    X(ncclGetUniqueId, ncclResult_t, (ncclUniqueId * uniqueId))                                \
    X(ncclCommInitRank, ncclResult_t, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank)) \
    X(ncclCommInitAll, ncclResult_t, (ncclComm_t * comm, int ndev, const int *devlist))         \
    X(ncclCommDestroy, ncclResult_t, (ncclComm_t comm))                                        \
    X(ncclCommAbort, ncclResult_t, (ncclComm_t comm))                                          \
    X(ncclCommGetAsyncError, ncclResult_t, (ncclComm_t comm, ncclResult_t * asyncError))      \
    X(ncclAllReduce, ncclResult_t,                                                             \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,           \
       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream))                                  \
    X(ncclBroadcast, ncclResult_t,                                                             \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, \
       ncclComm_t comm, cudaStream_t stream))                                                  \
    X(ncclGroupStart, ncclResult_t, (void))                                                    \
    X(ncclGroupEnd, ncclResult_t, (void))                                                      \
    X(ncclGetErrorString, const char *, (ncclResult_t result))                                 \
    X(ncclGetLastError, const char *, (ncclComm_t comm))

#define TANDEM_NCCL_PFN(name, ret, params) typedef ret(*tandem_pfn_##name) params;
TANDEM_NCCL_CALLS(TANDEM_NCCL_PFN)
#undef TANDEM_NCCL_PFN

#ifdef TANDEM_NCCL_API_PROTOTYPES
#define TANDEM_NCCL_PROTO(name, ret, params) ret name params;
TANDEM_NCCL_CALLS(TANDEM_NCCL_PROTO)
#undef TANDEM_NCCL_PROTO
#endif

#endif
