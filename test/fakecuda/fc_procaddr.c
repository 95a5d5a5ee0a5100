/* fc_procaddr.c — stand-in driver: cuGetProcAddress, the only way the backend finds the
 * other entry points. It serves the base names of TANDEM_CUDA_DRIVER_CALLS (platform/
 * cuda_api.h) at API version 12.0 or later, i.e. the signatures cuda_api.h declares; any other
 * name is CUDA_ERROR_NOT_FOUND (no error line: probing for an optional call is legitimate).
 * A versioned name ("cuMemAlloc_v2") or an API version below 12.0 is a caller bug and is
 * reported. */
#include <string.h>

#include "test/fakecuda/fakecuda.h"

typedef struct {
    const char *name;
    void *fn;
} fc_proc;

static const fc_proc procs[] = {
#define FC_PROC(name) {#name, (void *)name},
    TANDEM_CUDA_DRIVER_CALLS(FC_PROC)
#undef FC_PROC
    {"cuGetProcAddress", (void *)cuGetProcAddress_v2},
};

static int has_version_suffix(const char *s) {
    const char *u = strrchr(s, '_');
    return u && (strncmp(u, "_v", 2) == 0 || strcmp(u, "_ptsz") == 0 || strcmp(u, "_ptds") == 0);
}

FC_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version,
                                       cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *status) {
    const char *call = "cuGetProcAddress";
    if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!symbol || !pfn) return fc_fail(CUDA_ERROR_INVALID_VALUE, call, "symbol or pfn is NULL");
    *pfn = NULL;
    if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM || flags > 3)
        return fc_fail(CUDA_ERROR_INVALID_VALUE, call,
                       "%s: flags 0x%llx; the stand-in serves the legacy default stream only",
                       symbol, (unsigned long long)flags);
    if (has_version_suffix(symbol))
        return fc_fail(CUDA_ERROR_NOT_FOUND, call,
                       "'%s': ask for the base name; cudaVersion selects the version", symbol);
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        if (strcmp(procs[i].name, symbol) != 0) continue;
        if (cuda_version < 12000) {
            if (status) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
            return fc_fail(CUDA_ERROR_NOT_FOUND, call,
                           "%s at cudaVersion %d: the stand-in implements the 12.0+ signatures only",
                           symbol, cuda_version);
        }
        *pfn = procs[i].fn;
        if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_NOT_FOUND;
}

/* The v1 entry point (CUDA 11.3 - 11.8 callers): no per-symbol status. */
FC_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cuda_version,
                                    cuuint64_t flags);
FC_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cuda_version,
                                    cuuint64_t flags) {
    return cuGetProcAddress_v2(symbol, pfn, cuda_version, flags, NULL);
}
