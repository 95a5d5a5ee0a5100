/* cuda_driver.h — the CUDA driver as the cuda backend sees it: loaded once per process with
 * dlopen("libcuda.so.1") (or $TANDEM_CUDA_DRIVER), every entry point resolved through
 * cuGetProcAddress for API version 12.0, cuInit called. Also the raw device queries that
 * `tandem diagnose` needs without opening a device (which would load the fatbin).
 *
 * Owns (process-wide, immutable after the one-time load): the library handle, the function
 * table tandem_cu, the load status and its message.
 */
#ifndef TANDEM_PLATFORM_CUDA_DRIVER_H
#define TANDEM_PLATFORM_CUDA_DRIVER_H

#include <stddef.h>

#include "platform/cuda/cuda_api.h"
#include "platform/os/log.h"
#include "tandem.h"

typedef struct tandem_cuda_fns {
#define TANDEM_CUDA_FN_FIELD(name) tandem_pfn_##name name;
    TANDEM_CUDA_DRIVER_CALLS(TANDEM_CUDA_FN_FIELD)
#undef TANDEM_CUDA_FN_FIELD
} tandem_cuda_fns;

/* Valid once tandem_cuda_driver_load() has returned TANDEM_OK. */
extern tandem_cuda_fns tandem_cu;

/* Load the driver once per process (thread-safe). TANDEM_E_NODRIVER when the library cannot
 * be loaded; TANDEM_E_DEVICE when it loads but is unusable (missing entry points, cuInit
 * failing, or older than the fatbin needs: tandem_fatbin_driver_floor of the fatbin the
 * backend would load, e.g. CUDA 13.0 = R580 for a CUDA 13.0 build; the message names both
 * versions). Later calls return the same status and set the same message. */
tandem_status tandem_cuda_driver_load(void);
/* cuDriverGetVersion of the driver (e.g. 12040), also when it is too old for the fatbin; 0 when
 * none could be asked. */
int tandem_cuda_driver_version(void);
/* "R580" for a CUDA 13.0 floor, "R525" for 12.0: the Linux driver branch that first supports
 * CUDA version v (13000); "" when not known. */
const char *tandem_cuda_driver_branch(int v);

/* Record "<call> failed: CUDA_ERROR_X (text) [context]" for tandem_last_error(); returns
 * TANDEM_E_NOMEM for CUDA_ERROR_OUT_OF_MEMORY, TANDEM_E_DEVICE otherwise. */
tandem_status tandem_cuda_fail(const char *call, CUresult r, const char *ctx_fmt, ...)
    TANDEM_PRINTF(3, 4);
/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" into buf. */
void tandem_cuda_error_text(CUresult r, char *buf, size_t cap);

/* Call a driver entry point and return its failure as a tandem_status naming the call, the
 * CUresult and a context, e.g.
 *   TANDEM_CU_TRY(cuMemAlloc, (&p, bytes), "device %d, %zu bytes", ordinal, bytes);  */
#define TANDEM_CU_TRY(fn, args, ...)                                                      \
    do {                                                                                  \
        CUresult tandem_cu_r_ = tandem_cu.fn args;                                        \
        if (tandem_cu_r_ != CUDA_SUCCESS) return tandem_cuda_fail(#fn, tandem_cu_r_, __VA_ARGS__); \
    } while (0)
/* For teardown paths that cannot return a status: a failure is logged as a warning. */
#define TANDEM_CU_WARN(fn, args, ...)                                                     \
    do {                                                                                  \
        CUresult tandem_cu_r_ = tandem_cu.fn args;                                        \
        if (tandem_cu_r_ != CUDA_SUCCESS) {                                               \
            tandem_cuda_fail(#fn, tandem_cu_r_, __VA_ARGS__);                             \
            tandem_logf(TANDEM_LOG_WARN, "%s", tandem_last_error());                      \
        }                                                                                 \
    } while (0)

/* ---- raw queries (no context, no fatbin): for diagnose ---- */
/* Name, compute capability, memory and SM count of CUDA device `ordinal`. */
tandem_status tandem_cuda_query(int ordinal, tandem_device_info *info);
/* *can = whether device dst can access device src's memory (cuDeviceCanAccessPeer). */
tandem_status tandem_cuda_query_peer(int dst, int src, int *can);

#endif
