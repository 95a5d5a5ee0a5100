/* cuda_driver.c — loading libcuda.so.1 at run time, resolving its entry points, and turning
 * CUresult codes into messages. See cuda_driver.h. */
#include "platform/cuda/cuda_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/cuda/fatbin.h"
#include "platform/os/os.h"
#include "platform/os/settings.h"

tandem_cuda_fns tandem_cu;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static tandem_status load_status = TANDEM_E_NODRIVER;
static char load_why[512]; /* "" when the driver loaded fine */
static int driver_version;
static int no_devices; /* cuInit said CUDA_ERROR_NO_DEVICE: a working driver with zero devices */
static void *driver_lib;

static tandem_status load_fail(tandem_status st, const char *fmt, ...) TANDEM_PRINTF(2, 3);
static tandem_status load_fail(tandem_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(load_why, sizeof load_why, fmt, ap);
    va_end(ap);
    return st;
}

void tandem_cuda_error_text(CUresult r, char *buf, size_t cap) {
    const char *name = NULL, *text = NULL;
    /* usable even before the load finished: the two are resolved first */
    if (tandem_cu.cuGetErrorName && tandem_cu.cuGetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
    if (tandem_cu.cuGetErrorString && tandem_cu.cuGetErrorString(r, &text) != CUDA_SUCCESS) text = NULL;
    if (name && text)
        snprintf(buf, cap, "%s (%s)", name, text);
    else if (name)
        snprintf(buf, cap, "%s", name);
    else
        snprintf(buf, cap, "CUresult %d (unknown to this driver)", (int)r);
}

tandem_status tandem_cuda_fail(const char *call, CUresult r, const char *ctx_fmt, ...) {
    char err[192], ctx[256];
    tandem_cuda_error_text(r, err, sizeof err);
    va_list ap;
    va_start(ap, ctx_fmt);
    vsnprintf(ctx, sizeof ctx, ctx_fmt, ap);
    va_end(ap);
    tandem_status st = r == CUDA_ERROR_OUT_OF_MEMORY ? TANDEM_E_NOMEM : TANDEM_E_DEVICE;
    if (ctx[0]) return tandem_fail(st, "%s failed: %s [%s]", call, err, ctx);
    return tandem_fail(st, "%s failed: %s", call, err);
}

/* cuGetProcAddress as the driver offers it: v2 (CUDA >= 12.0) or v1 (11.3 - 11.8). */
static tandem_pfn_cuGetProcAddress get_proc_v2;
static tandem_pfn_cuGetProcAddress_v1 get_proc_v1;

static tandem_status resolve(const char *lib, const char *name, void **out) {
    CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult r;
    *out = NULL;
    if (get_proc_v2)
        r = get_proc_v2(name, out, TANDEM_CUDA_API_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q);
    else
        r = get_proc_v1(name, out, TANDEM_CUDA_API_VERSION, CU_GET_PROC_ADDRESS_DEFAULT);
    if (r == CUDA_SUCCESS && q == CU_GET_PROC_ADDRESS_SUCCESS && *out) return TANDEM_OK;
    const char *why = q == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                          ? "the driver is older than the CUDA 12.0 API this runtime needs"
                          : "symbol not found";
    return load_fail(TANDEM_E_DEVICE,
                     "%s: cuGetProcAddress(\"%s\", CUDA %d) failed (CUresult %d): %s; update the "
                     "NVIDIA driver",
                     lib, name, TANDEM_CUDA_API_VERSION, (int)r, why);
}

const char *tandem_cuda_driver_branch(int v) {
    /* the CUDA toolkit release notes' minimum drivers for x.0 (minor versions run on the same) */
    if (v >= 13000 && v < 14000) return "R580";
    if (v >= 12000 && v < 13000) return "R525";
    return "";
}

/* The driver must support what built the fatbin the backend loads: SASS of a newer major
 * toolkit and PTX of a newer ISA do not load (CUDA_ERROR_UNSUPPORTED_PTX_VERSION, or SASS
 * compatibility undocumented), so an old driver is refused here, naming both versions, rather
 * than at the first module load. A fatbin that cannot be read is left to the device open. */
static tandem_status check_floor(const char *lib) {
    const void *bin = NULL;
    size_t len = 0;
    void *owned = NULL;
    if (tandem_fatbin_load(&bin, &len, &owned) != TANDEM_OK) return TANDEM_OK;
    tandem_fatbin_summary *sum = tandem_malloc(sizeof *sum);
    int floor = 0, tk = 0;
    if (sum && tandem_fatbin_parse(bin, len, sum) == TANDEM_OK) {
        floor = tandem_fatbin_driver_floor(sum);
        tk = sum->toolkit_version;
    }
    tandem_free(sum);
    tandem_free(owned);
    if (driver_version >= floor) return TANDEM_OK;
    const char *br = tandem_cuda_driver_branch(floor);
    return load_fail(TANDEM_E_DEVICE,
                     "%s is a CUDA %d.%d driver; the fatbin (built by CUDA %d.%d) needs a CUDA %d.%d driver%s%s%s: "
                     "update the NVIDIA driver, or rebuild the fatbin with an older toolkit (make "
                     "CUDA_HOME=/usr/local/cuda-12.x)",
                     lib, driver_version / 1000, driver_version % 1000 / 10, tk / 1000, tk % 1000 / 10, floor / 1000,
                     floor % 1000 / 10, br[0] ? " (" : "", br, br[0] ? " or newer)" : "");
}

static tandem_status load(void) {
    char opt[TANDEM_RUNTIME_PATH_MAX];
    const char *lib = tandem_settings_path(TANDEM_SETTING_CUDA_DRIVER, opt);
    if (!lib[0]) lib = "libcuda.so.1";
    dlerror();
    driver_lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!driver_lib) {
        const char *e = dlerror();
        return load_fail(TANDEM_E_NODRIVER, "dlopen(%s): %s", lib, e ? e : "unknown error");
    }
    void *p = dlsym(driver_lib, "cuGetProcAddress_v2");
    if (p) {
        memcpy(&get_proc_v2, &p, sizeof p);
    } else {
        p = dlsym(driver_lib, "cuGetProcAddress");
        if (!p)
            return load_fail(TANDEM_E_DEVICE,
                             "%s has neither cuGetProcAddress_v2 nor cuGetProcAddress: the driver "
                             "is older than CUDA 11.3 (this runtime needs a CUDA 12 driver)",
                             lib);
        memcpy(&get_proc_v1, &p, sizeof p);
    }
    tandem_cuda_fns fns;
    memset(&fns, 0, sizeof fns);
#define TANDEM_RESOLVE(name)                                                              \
    do {                                                                                  \
        void *fp_;                                                                        \
        tandem_status st_ = resolve(lib, #name, &fp_);                                    \
        if (st_ != TANDEM_OK) return st_;                                                 \
        memcpy(&fns.name, &fp_, sizeof fp_);                                              \
    } while (0);
    TANDEM_CUDA_DRIVER_CALLS(TANDEM_RESOLVE)
#undef TANDEM_RESOLVE
    tandem_cu = fns;
    CUresult r = tandem_cu.cuInit(0);
    /* A driver installed on a machine (or container) without a visible GPU: not a failure,
     * just zero devices, so `auto` picks the host backend with a notice. */
    if (r == CUDA_ERROR_NO_DEVICE) no_devices = 1;
    if (r != CUDA_SUCCESS && !no_devices) {
        char err[192];
        tandem_cuda_error_text(r, err, sizeof err);
        return load_fail(TANDEM_E_DEVICE, "%s loaded, but cuInit failed: %s", lib, err);
    }
    r = tandem_cu.cuDriverGetVersion(&driver_version);
    if (r != CUDA_SUCCESS) {
        char err[192];
        tandem_cuda_error_text(r, err, sizeof err);
        return load_fail(TANDEM_E_DEVICE, "%s: cuDriverGetVersion failed: %s", lib, err);
    }
    if (driver_version < TANDEM_CUDA_API_VERSION)
        return load_fail(TANDEM_E_DEVICE,
                         "%s is a CUDA %d.%d driver; this runtime needs CUDA 12.0 or newer", lib,
                         driver_version / 1000, driver_version % 1000 / 10);
    return check_floor(lib);
}

static void load_once_fn(void) {
    load_status = load();
    if (load_status == TANDEM_OK) {
        load_why[0] = '\0';
    } else if (load_status == TANDEM_E_DEVICE) {
        /* an unusable driver: keep the error strings resolvable but nothing else */
        tandem_pfn_cuGetErrorName gn = tandem_cu.cuGetErrorName;
        tandem_pfn_cuGetErrorString gs = tandem_cu.cuGetErrorString;
        memset(&tandem_cu, 0, sizeof tandem_cu);
        tandem_cu.cuGetErrorName = gn;
        tandem_cu.cuGetErrorString = gs;
    }
}

tandem_status tandem_cuda_driver_load(void) {
    pthread_once(&load_once, load_once_fn);
    if (load_status == TANDEM_OK) return TANDEM_OK;
    return tandem_fail(load_status, "%s", load_why);
}

const char *tandem_cuda_driver_status(void) {
    pthread_once(&load_once, load_once_fn);
    return load_why;
}

int tandem_cuda_driver_version(void) {
    pthread_once(&load_once, load_once_fn);
    return driver_version;
}

tandem_status tandem_cuda_device_count(int *count) {
    *count = 0;
    TANDEM_TRY(tandem_cuda_driver_load());
    if (no_devices) return TANDEM_OK;
    int n = 0;
    TANDEM_CU_TRY(cuDeviceGetCount, (&n), "counting CUDA devices");
    *count = n;
    return TANDEM_OK;
}

tandem_status tandem_cuda_query(int ordinal, tandem_device_info *info) {
    memset(info, 0, sizeof *info);
    int n = 0;
    TANDEM_TRY(tandem_cuda_device_count(&n));
    if (ordinal < 0 || ordinal >= n)
        return tandem_fail(TANDEM_E_INVALID, "CUDA device %d: expected 0..%d (%d device%s)", ordinal,
                           n - 1, n, n == 1 ? "" : "s");
    CUdevice dev;
    TANDEM_CU_TRY(cuDeviceGet, (&dev, ordinal), "device %d", ordinal);
    info->backend = TANDEM_BACKEND_CUDA;
    info->ordinal = ordinal;
    TANDEM_CU_TRY(cuDeviceGetName, (info->name, (int)sizeof info->name, dev), "device %d", ordinal);
    info->name[sizeof info->name - 1] = '\0';
    TANDEM_CU_TRY(cuDeviceGetAttribute, (&info->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
                  "device %d, compute capability major", ordinal);
    TANDEM_CU_TRY(cuDeviceGetAttribute, (&info->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
                  "device %d, compute capability minor", ordinal);
    TANDEM_CU_TRY(cuDeviceGetAttribute, (&info->multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
                  "device %d, multiprocessor count", ordinal);
    TANDEM_CU_TRY(cuDeviceTotalMem, (&info->total_memory, dev), "device %d", ordinal);
    info->supports_bf16 = info->cc_major >= 8; /* bf16 arithmetic from Ampere on */
    return TANDEM_OK;
}

tandem_status tandem_cuda_query_peer(int dst, int src, int *can) {
    *can = 0;
    TANDEM_TRY(tandem_cuda_driver_load());
    CUdevice d, s;
    TANDEM_CU_TRY(cuDeviceGet, (&d, dst), "device %d", dst);
    TANDEM_CU_TRY(cuDeviceGet, (&s, src), "device %d", src);
    TANDEM_CU_TRY(cuDeviceCanAccessPeer, (can, d, s), "device %d reading device %d", dst, src);
    return TANDEM_OK;
}
