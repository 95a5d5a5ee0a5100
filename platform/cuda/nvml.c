/* nvml.c — loading libnvidia-ml.so.1 at run time, matching CUDA ordinals to NVML devices by
 * PCI location, and sampling them. See nvml.h. */
#include "platform/cuda/nvml.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/cuda/cuda_driver.h"
#include "platform/device.h"
#include "platform/os/log.h"
#include "platform/os/settings.h"
#include "platform/cuda/nvml_api.h"

typedef struct nvml_fns {
#define TANDEM_NVML_FN_FIELD(name) tandem_pfn_##name name;
    TANDEM_NVML_CALLS(TANDEM_NVML_FN_FIELD)
#undef TANDEM_NVML_FN_FIELD
} nvml_fns;

/* One CUDA ordinal: its NVML handle (NULL when unmatched) and why not. */
typedef struct nvml_dev {
    nvmlDevice_t handle;
    char bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
    char why[256]; /* "" when matched */
} nvml_dev;

static pthread_once_t open_once = PTHREAD_ONCE_INIT;
static tandem_status open_status = TANDEM_E_NODRIVER;
static char open_text[512]; /* describe(): the version line, or why NVML is not available */
static nvml_fns fn;
static nvml_dev devs[TANDEM_NVML_MAX_DEVICES];
static int cuda_count; /* CUDA ordinals seen at open (may exceed TANDEM_NVML_MAX_DEVICES) */

static const char *nvml_error_name(nvmlReturn_t r) {
    switch (r) {
#define NVML_NAME(x) case x: return #x;
        NVML_NAME(NVML_SUCCESS) NVML_NAME(NVML_ERROR_UNINITIALIZED)
        NVML_NAME(NVML_ERROR_INVALID_ARGUMENT) NVML_NAME(NVML_ERROR_NOT_SUPPORTED)
        NVML_NAME(NVML_ERROR_NO_PERMISSION) NVML_NAME(NVML_ERROR_ALREADY_INITIALIZED)
        NVML_NAME(NVML_ERROR_NOT_FOUND) NVML_NAME(NVML_ERROR_INSUFFICIENT_SIZE)
        NVML_NAME(NVML_ERROR_INSUFFICIENT_POWER) NVML_NAME(NVML_ERROR_DRIVER_NOT_LOADED)
        NVML_NAME(NVML_ERROR_TIMEOUT) NVML_NAME(NVML_ERROR_IRQ_ISSUE)
        NVML_NAME(NVML_ERROR_LIBRARY_NOT_FOUND) NVML_NAME(NVML_ERROR_FUNCTION_NOT_FOUND)
        NVML_NAME(NVML_ERROR_CORRUPTED_INFOROM) NVML_NAME(NVML_ERROR_GPU_IS_LOST)
        NVML_NAME(NVML_ERROR_RESET_REQUIRED) NVML_NAME(NVML_ERROR_OPERATING_SYSTEM)
        NVML_NAME(NVML_ERROR_LIB_RM_VERSION_MISMATCH) NVML_NAME(NVML_ERROR_IN_USE)
        NVML_NAME(NVML_ERROR_MEMORY) NVML_NAME(NVML_ERROR_NO_DATA) NVML_NAME(NVML_ERROR_UNKNOWN)
#undef NVML_NAME
    }
    return "NVML error";
}

/* "NVML_ERROR_GPU_IS_LOST (GPU is lost)" into buf. */
static void error_text(nvmlReturn_t r, char *buf, size_t cap) {
    const char *s = fn.nvmlErrorString ? fn.nvmlErrorString(r) : NULL;
    if (s)
        snprintf(buf, cap, "%s (%s)", nvml_error_name(r), s);
    else
        snprintf(buf, cap, "%s (%d)", nvml_error_name(r), (int)r);
}

/* Set the describe() text; returns st. */
static tandem_status set_text(tandem_status st, const char *fmt, ...) TANDEM_PRINTF(2, 3);
static tandem_status set_text(tandem_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(open_text, sizeof open_text, fmt, ap);
    va_end(ap);
    return st;
}

/* Find the NVML device of CUDA ordinal i by its PCI location. */
static void match_device(int i) {
    nvml_dev *d = &devs[i];
    CUdevice cu;
    int domain = 0, bus = 0, slot = 0;
    if (tandem_cu.cuDeviceGet(&cu, i) != CUDA_SUCCESS ||
        tandem_cu.cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, cu) != CUDA_SUCCESS ||
        tandem_cu.cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, cu) != CUDA_SUCCESS ||
        tandem_cu.cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, cu) != CUDA_SUCCESS) {
        snprintf(d->why, sizeof d->why, "the CUDA driver did not report its PCI location");
        return;
    }
    snprintf(d->bus_id, sizeof d->bus_id, NVML_DEVICE_PCI_BUS_ID_FMT, (unsigned)domain,
             (unsigned)bus, (unsigned)slot);
    nvmlReturn_t r = fn.nvmlDeviceGetHandleByPciBusId_v2(d->bus_id, &d->handle);
    if (r == NVML_SUCCESS) return;
    d->handle = NULL;
    char err[128];
    error_text(r, err, sizeof err);
    /* NOT_FOUND: e.g. a MIG instance or a device NVML does not manage */
    snprintf(d->why, sizeof d->why, "NVML has no device at PCI %s: %s", d->bus_id, err);
}

static tandem_status open_nvml(void) {
    char opt[TANDEM_RUNTIME_PATH_MAX];
    const char *lib = tandem_settings_path(TANDEM_SETTING_NVML, opt);
    if (!lib[0]) lib = "libnvidia-ml.so.1";
    if (strcmp(lib, "none") == 0)
        return set_text(TANDEM_E_UNSUPPORTED, "disabled (runtime option nvml \"none\"; in the CLI: TANDEM_NVML=none)");
    dlerror();
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL); /* kept for the life of the process */
    if (!h) {
        const char *e = dlerror();
        return set_text(TANDEM_E_NODRIVER, "not found: dlopen(%s): %s", lib, e ? e : "unknown error");
    }
    nvml_fns f;
    memset(&f, 0, sizeof f);
#define TANDEM_NVML_RESOLVE(name)                                                         \
    do {                                                                                  \
        void *p_ = dlsym(h, #name);                                                       \
        if (!p_)                                                                          \
            return set_text(TANDEM_E_DEVICE,                                             \
                             "%s has no %s: this NVML is older than the runtime needs; "  \
                             "update the NVIDIA driver", lib, #name);                     \
        memcpy(&f.name, &p_, sizeof p_);                                                  \
    } while (0);
    TANDEM_NVML_CALLS(TANDEM_NVML_RESOLVE)
#undef TANDEM_NVML_RESOLVE
    fn = f;
    char err[160];
    nvmlReturn_t r = fn.nvmlInit_v2();
    if (r != NVML_SUCCESS) {
        error_text(r, err, sizeof err);
        /* The user-space library without a loaded kernel driver (a container without GPUs):
         * as good as no NVML. */
        return set_text(r == NVML_ERROR_DRIVER_NOT_LOADED ? TANDEM_E_NODRIVER : TANDEM_E_DEVICE,
                         "%s loaded, but nvmlInit_v2 failed: %s", lib, err);
    }
    char nv[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE] = "?", drv[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "?";
    if (fn.nvmlSystemGetNVMLVersion(nv, sizeof nv) != NVML_SUCCESS) snprintf(nv, sizeof nv, "?");
    if (fn.nvmlSystemGetDriverVersion(drv, sizeof drv) != NVML_SUCCESS) snprintf(drv, sizeof drv, "?");
    nv[sizeof nv - 1] = drv[sizeof drv - 1] = '\0';
    unsigned nvml_count = 0;
    if ((r = fn.nvmlDeviceGetCount_v2(&nvml_count)) != NVML_SUCCESS) {
        error_text(r, err, sizeof err);
        fn.nvmlShutdown();
        return set_text(TANDEM_E_DEVICE, "%s: nvmlDeviceGetCount_v2 failed: %s", lib, err);
    }
    /* Without a CUDA driver there is nothing to match; NVML itself is still fine. */
    int n = 0;
    tandem_status cst = tandem_cuda_device_count(&n);
    cuda_count = cst == TANDEM_OK ? n : 0;
    int matched = 0;
    for (int i = 0; i < cuda_count && i < TANDEM_NVML_MAX_DEVICES; i++) {
        match_device(i);
        matched += devs[i].handle != NULL;
    }
    char cuda[128];
    if (cst != TANDEM_OK)
        snprintf(cuda, sizeof cuda, "%s, so no CUDA device to match",
                 cst == TANDEM_E_NODRIVER ? "no CUDA driver" : "the CUDA driver fails");
    else
        snprintf(cuda, sizeof cuda, "%d of %d CUDA device%s matched by PCI bus id", matched,
                 cuda_count, cuda_count == 1 ? "" : "s");
    set_text(TANDEM_OK, "%s: NVML %s, driver %s, %u device%s; %s", lib, nv, drv, nvml_count,
              nvml_count == 1 ? "" : "s", cuda);
    return TANDEM_OK;
}

static void open_once_fn(void) {
    open_status = open_nvml();
    if (open_status == TANDEM_OK) {
        tandem_logf(TANDEM_LOG_DEBUG, "NVML: %s", open_text);
    } else {
        memset(&fn, 0, sizeof fn); /* a half-resolved table is never used */
        memset(devs, 0, sizeof devs);
        cuda_count = 0;
    }
}

tandem_status tandem_nvml_open(void) {
    pthread_once(&open_once, open_once_fn);
    if (open_status == TANDEM_OK) return TANDEM_OK;
    return tandem_fail(open_status, "NVML %s", open_text);
}

const char *tandem_nvml_describe(void) {
    pthread_once(&open_once, open_once_fn);
    return open_text;
}

const char *tandem_nvml_bus_id(int cuda_ordinal) {
    pthread_once(&open_once, open_once_fn);
    if (cuda_ordinal < 0 || cuda_ordinal >= cuda_count || cuda_ordinal >= TANDEM_NVML_MAX_DEVICES)
        return "";
    return devs[cuda_ordinal].bus_id;
}

/* Whether r means "this GPU cannot tell" (leave the field out) rather than a failure. */
static int not_available(nvmlReturn_t r) {
    return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NO_PERMISSION || r == NVML_ERROR_NO_DATA;
}

static tandem_status query_fail(const char *call, nvmlReturn_t r, int ordinal) {
    char err[160];
    error_text(r, err, sizeof err);
    return tandem_fail(TANDEM_E_DEVICE, "%s failed: %s [CUDA device %d, PCI %s]", call, err,
                       ordinal, devs[ordinal].bus_id);
}

/* Run one query: set `bit` in out->have on success, skip an unavailable value, fail otherwise. */
#define NVML_QUERY(bit, call, args)                                                       \
    do {                                                                                  \
        nvmlReturn_t r_ = fn.call args;                                                   \
        if (r_ == NVML_SUCCESS) out->have |= (bit);                                       \
        else if (!not_available(r_)) return query_fail(#call, r_, cuda_ordinal);          \
    } while (0)

tandem_status tandem_nvml_sample(int cuda_ordinal, tandem_nvml_sample_t *out) {
    memset(out, 0, sizeof *out);
    pthread_once(&open_once, open_once_fn);
    if (open_status != TANDEM_OK)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "NVML is not available: %s", open_text);
    if (cuda_ordinal < 0 || cuda_ordinal >= cuda_count)
        return tandem_fail(TANDEM_E_INVALID, "NVML sample of CUDA device %d: expected 0..%d (%d CUDA device%s)",
                           cuda_ordinal, cuda_count - 1, cuda_count, cuda_count == 1 ? "" : "s");
    if (cuda_ordinal >= TANDEM_NVML_MAX_DEVICES)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "NVML sample of CUDA device %d: only the first %d devices are matched",
                           cuda_ordinal, TANDEM_NVML_MAX_DEVICES);
    const nvml_dev *d = &devs[cuda_ordinal];
    if (!d->handle)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "NVML sample of CUDA device %d: %s", cuda_ordinal, d->why);
    nvmlUtilization_t u;
    nvmlMemory_t m;
    unsigned mw = 0, sm = 0, mem = 0, temp = 0;
    NVML_QUERY(TANDEM_NVML_HAVE_UTIL, nvmlDeviceGetUtilizationRates, (d->handle, &u));
    NVML_QUERY(TANDEM_NVML_HAVE_MEMORY, nvmlDeviceGetMemoryInfo, (d->handle, &m));
    NVML_QUERY(TANDEM_NVML_HAVE_POWER, nvmlDeviceGetPowerUsage, (d->handle, &mw));
    NVML_QUERY(TANDEM_NVML_HAVE_SM_CLOCK, nvmlDeviceGetClockInfo, (d->handle, NVML_CLOCK_SM, &sm));
    NVML_QUERY(TANDEM_NVML_HAVE_MEM_CLOCK, nvmlDeviceGetClockInfo, (d->handle, NVML_CLOCK_MEM, &mem));
    NVML_QUERY(TANDEM_NVML_HAVE_TEMPERATURE, nvmlDeviceGetTemperature, (d->handle, NVML_TEMPERATURE_GPU, &temp));
    if (out->have & TANDEM_NVML_HAVE_UTIL) {
        out->gpu_util_pct = (int)u.gpu;
        out->mem_util_pct = (int)u.memory;
    }
    if (out->have & TANDEM_NVML_HAVE_MEMORY) {
        out->mem_used_bytes = m.used;
        out->mem_total_bytes = m.total;
    }
    if (out->have & TANDEM_NVML_HAVE_POWER) out->power_w = mw * 1e-3;
    if (out->have & TANDEM_NVML_HAVE_SM_CLOCK) out->sm_clock_mhz = (int)sm;
    if (out->have & TANDEM_NVML_HAVE_MEM_CLOCK) out->mem_clock_mhz = (int)mem;
    if (out->have & TANDEM_NVML_HAVE_TEMPERATURE) out->temperature_c = (int)temp;
    return TANDEM_OK;
}
#undef NVML_QUERY
