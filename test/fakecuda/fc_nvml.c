/* fc_nvml.c — stand-in NVML (libnvidia-ml.so.1, test-only): the subset of platform/cuda/nvml_api.h,
 * answering for the stand-in driver's devices (it links against libcuda.so.1 and asks it
 * through tandem_fakecuda_query_device, so both always agree on the devices).
 *
 * Enumeration: NVML orders devices by PCI bus like the real library; the stand-in driver puts
 * CUDA device 0 on the highest bus (FC_PCI_BUS), so NVML index i is CUDA device n-1-i and only
 * matching by PCI bus id finds the right device.
 *
 * Values, for the device that is CUDA ordinal d (fixed, deterministic; chosen to be plausible
 * for a recent GPU and different per device, so a mix-up shows):
 *   utilisation       gpu 60 + 7d %, memory 25 + 3d %   (fixed: the stand-in keeps no kernel
 *                                                         timeline to derive them from)
 *   memory            total = the driver's per-device memory (TANDEM_FAKECUDA_MEM_MB),
 *                     used = bytes allocated with cuMemAlloc in its context right now,
 *                     free = total - used
 *   power             80000 + 12500d mW, or NVML_ERROR_NOT_SUPPORTED when
 *                     TANDEM_FAKECUDA_NVML_NO_POWER=1 (as on many GeForce boards)
 *   clocks            SM and graphics 2520 - 15d MHz, memory 10501 MHz, video 1950 MHz
 *   temperature       48 + 2d degrees C (sensor NVML_TEMPERATURE_GPU only)
 *   versions          NVML "13.580.00-standin", driver "580.00-standin"
 *
 * Strict like the stand-in driver: any call before nvmlInit_v2 (or after the matching
 * nvmlShutdown), a handle that is not one of its devices, a NULL output, an unknown clock type
 * or sensor, an index out of range, a malformed bus id or a too small version buffer returns
 * the NVML error code AND prints one "fakecuda: error: <call>: <why>" line (counted by
 * tandem_fakecuda_error_count). A well-formed bus id with no device behind it is
 * NVML_ERROR_NOT_FOUND without a report: asking is not a misuse. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/fakecuda/fakecuda.h"
#define TANDEM_NVML_API_PROTOTYPES
#include "platform/cuda/nvml_api.h"

#define FC_NVML_VERSION "13.580.00-standin"
#define FC_NVML_DRIVER_VERSION "580.00-standin"

/* The handle objects: slot d is CUDA device d. */
struct nvmlDevice_st {
    int cuda_dev;
};
static struct nvmlDevice_st devices[FC_MAX_DEVICES];
static int init_count; /* nvmlInit_v2 minus nvmlShutdown (NVML is reference counted) */

static nvmlReturn_t nv_fail(nvmlReturn_t r, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static nvmlReturn_t nv_fail(nvmlReturn_t r, const char *call, const char *fmt, ...) {
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    tandem_fakecuda_report(call, "%s", why);
    return r;
}

/* Lock + initialised check at the top of every call but init/shutdown/error string. */
static nvmlReturn_t enter(const char *call) {
    tandem_fakecuda_lock();
    if (init_count == 0)
        return nv_fail(NVML_ERROR_UNINITIALIZED, call, "nvmlInit_v2 has not been called");
    return NVML_SUCCESS;
}

static nvmlReturn_t leave(nvmlReturn_t r) {
    tandem_fakecuda_unlock();
    return r;
}

/* The CUDA ordinal behind a handle; compares the pointer with the table before using it. */
static nvmlReturn_t check_handle(const char *call, nvmlDevice_t h, int *cuda_dev) {
    tandem_fakecuda_device_state st;
    tandem_fakecuda_query_device(0, &st);
    for (int d = 0; d < st.count; d++)
        if (h == &devices[d]) {
            *cuda_dev = devices[d].cuda_dev;
            return NVML_SUCCESS;
        }
    return nv_fail(NVML_ERROR_INVALID_ARGUMENT, call, "%p is not a device handle of this NVML (%d devices)",
                   (void *)h, st.count);
}

FC_EXPORT nvmlReturn_t nvmlInit_v2(void) {
    tandem_fakecuda_lock();
    for (int d = 0; d < FC_MAX_DEVICES; d++) devices[d].cuda_dev = d;
    init_count++;
    return leave(NVML_SUCCESS);
}

FC_EXPORT nvmlReturn_t nvmlShutdown(void) {
    tandem_fakecuda_lock();
    if (init_count == 0)
        return leave(nv_fail(NVML_ERROR_UNINITIALIZED, "nvmlShutdown", "called more often than nvmlInit_v2"));
    init_count--;
    return leave(NVML_SUCCESS);
}

FC_EXPORT const char *nvmlErrorString(nvmlReturn_t r) {
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

static nvmlReturn_t copy_version(const char *call, const char *v, char *buf, unsigned len) {
    nvmlReturn_t r = enter(call);
    if (r) return leave(r);
    if (!buf) return leave(nv_fail(NVML_ERROR_INVALID_ARGUMENT, call, "version is NULL"));
    if (strlen(v) + 1 > len)
        return leave(nv_fail(NVML_ERROR_INSUFFICIENT_SIZE, call, "length %u < %zu bytes needed", len, strlen(v) + 1));
    memcpy(buf, v, strlen(v) + 1);
    return leave(NVML_SUCCESS);
}

FC_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    return copy_version("nvmlSystemGetNVMLVersion", FC_NVML_VERSION, version, length);
}

FC_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    return copy_version("nvmlSystemGetDriverVersion", FC_NVML_DRIVER_VERSION, version, length);
}

FC_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    const char *call = "nvmlDeviceGetCount_v2";
    nvmlReturn_t r = enter(call);
    if (r) return leave(r);
    if (!count) return leave(nv_fail(NVML_ERROR_INVALID_ARGUMENT, call, "deviceCount is NULL"));
    tandem_fakecuda_device_state st;
    tandem_fakecuda_query_device(0, &st);
    *count = (unsigned)st.count;
    return leave(NVML_SUCCESS);
}

FC_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    const char *call = "nvmlDeviceGetHandleByIndex_v2";
    nvmlReturn_t r = enter(call);
    if (r) return leave(r);
    if (!device) return leave(nv_fail(NVML_ERROR_INVALID_ARGUMENT, call, "device is NULL"));
    tandem_fakecuda_device_state st;
    tandem_fakecuda_query_device(0, &st);
    if (index >= (unsigned)st.count)
        return leave(nv_fail(NVML_ERROR_INVALID_ARGUMENT, call, "index %u: expected < %d", index, st.count));
    /* PCI order: the device with `index` devices on lower buses */
    int found = 0;
    for (int d = 0; d < st.count; d++) {
        unsigned rank = 0;
        for (int e = 0; e < st.count; e++) rank += FC_PCI_BUS(e, st.count) < FC_PCI_BUS(d, st.count);
        if (rank == index) found = d;
    }
    *device = &devices[found];
    return leave(NVML_SUCCESS);
}

FC_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvmlDevice_t *device) {
    const char *call = "nvmlDeviceGetHandleByPciBusId_v2";
    nvmlReturn_t r = enter(call);
    if (r) return leave(r);
    if (!bus_id || !device) return leave(nv_fail(NVML_ERROR_INVALID_ARGUMENT, call, "pciBusId or device is NULL"));
    unsigned domain, bus, slot, func;
    int used = -1;
    if (sscanf(bus_id, "%x:%x:%x.%x%n", &domain, &bus, &slot, &func, &used) != 4 || used < 0 ||
        bus_id[used] != '\0' || bus > 0xff || slot > 0x1f || func > 7)
        return leave(nv_fail(NVML_ERROR_INVALID_ARGUMENT, call,
                             "'%s' is not a PCI bus id (domain:bus:device.function, hex)", bus_id));
    tandem_fakecuda_device_state st;
    for (int d = 0; tandem_fakecuda_query_device(d, &st) == 0; d++)
        if (st.pci_domain == domain && st.pci_bus == bus && st.pci_device == slot && func == 0) {
            *device = &devices[d];
            return leave(NVML_SUCCESS);
        }
    return leave(NVML_ERROR_NOT_FOUND);
}

FC_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u) {
    const char *call = "nvmlDeviceGetUtilizationRates";
    int d = 0;
    nvmlReturn_t r = enter(call);
    if (r || (r = check_handle(call, h, &d))) return leave(r);
    if (!u) return leave(nv_fail(NVML_ERROR_INVALID_ARGUMENT, call, "utilization is NULL"));
    u->gpu = 60u + 7u * (unsigned)d;
    u->memory = 25u + 3u * (unsigned)d;
    return leave(NVML_SUCCESS);
}

FC_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *m) {
    const char *call = "nvmlDeviceGetMemoryInfo";
    int d = 0;
    nvmlReturn_t r = enter(call);
    if (r || (r = check_handle(call, h, &d))) return leave(r);
    if (!m) return leave(nv_fail(NVML_ERROR_INVALID_ARGUMENT, call, "memory is NULL"));
    tandem_fakecuda_device_state st;
    tandem_fakecuda_query_device(d, &st);
    m->total = st.total_mem;
    m->used = st.used_mem;
    m->free = st.total_mem - st.used_mem;
    return leave(NVML_SUCCESS);
}

FC_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned int *mw) {
    const char *call = "nvmlDeviceGetPowerUsage";
    int d = 0;
    nvmlReturn_t r = enter(call);
    if (r || (r = check_handle(call, h, &d))) return leave(r);
    if (!mw) return leave(nv_fail(NVML_ERROR_INVALID_ARGUMENT, call, "power is NULL"));
    const char *no = getenv("TANDEM_FAKECUDA_NVML_NO_POWER");
    if (no && strcmp(no, "1") == 0) return leave(NVML_ERROR_NOT_SUPPORTED);
    *mw = 80000u + 12500u * (unsigned)d;
    return leave(NVML_SUCCESS);
}

FC_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, nvmlClockType_t type, unsigned int *mhz) {
    const char *call = "nvmlDeviceGetClockInfo";
    int d = 0;
    nvmlReturn_t r = enter(call);
    if (r || (r = check_handle(call, h, &d))) return leave(r);
    if (!mhz) return leave(nv_fail(NVML_ERROR_INVALID_ARGUMENT, call, "clock is NULL"));
    switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM: *mhz = 2520u - 15u * (unsigned)d; break;
    case NVML_CLOCK_MEM: *mhz = 10501u; break;
    case NVML_CLOCK_VIDEO: *mhz = 1950u; break;
    default:
        return leave(nv_fail(NVML_ERROR_INVALID_ARGUMENT, call, "clock type %d is not an nvmlClockType_t", (int)type));
    }
    return leave(NVML_SUCCESS);
}

FC_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, nvmlTemperatureSensors_t sensor, unsigned int *c) {
    const char *call = "nvmlDeviceGetTemperature";
    int d = 0;
    nvmlReturn_t r = enter(call);
    if (r || (r = check_handle(call, h, &d))) return leave(r);
    if (!c) return leave(nv_fail(NVML_ERROR_INVALID_ARGUMENT, call, "temp is NULL"));
    if (sensor != NVML_TEMPERATURE_GPU)
        return leave(nv_fail(NVML_ERROR_INVALID_ARGUMENT, call, "sensor %d: only NVML_TEMPERATURE_GPU (0) exists", (int)sensor));
    *c = 48u + 2u * (unsigned)d;
    return leave(NVML_SUCCESS);
}
