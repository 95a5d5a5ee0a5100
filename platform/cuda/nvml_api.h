/* nvml_api.h — the project's own declarations of the NVML subset platform/cuda/nvml.c uses, so the
 * project builds where nvml.h is absent (no CUDA toolkit, no driver development package).
 *
 * Values, struct layouts and signatures are those of nvml.h (NVML API version 12, drivers of
 * CUDA 12.x/13.x). No nvml.h was installed where this was written: they were checked by reading
 * NVIDIA's nvml.h (the 2023 header of API version 12) as reference text, not by compiling
 * against it. test/unit/test_nvml.c compares every value below with an installed nvml.h when
 * one is found ($CUDA_HOME/include, /usr/local/cuda/include, /usr/include).
 *
 * Nothing here declares a function: the runtime resolves every entry point with dlsym into the
 * tandem_pfn_* pointer types below. The stand-in library (test/fakecuda/fc_nvml.c) defines them
 * under these exact names; with TANDEM_NVML_API_PROTOTYPES defined before inclusion this header
 * also declares those prototypes, so the stand-in is type-checked against it.
 *
 * Versioned entry points are named with their suffix (nvmlInit_v2, ...): nvml.h maps the plain
 * names onto these with macros, and the library exports both; the runtime asks for the
 * versioned symbol so an old library that lacks it is reported instead of silently used. */
#ifndef TANDEM_PLATFORM_NVML_API_H
#define TANDEM_PLATFORM_NVML_API_H

typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef struct nvmlDevice_st *nvmlDevice_t;

typedef enum nvmlClockType_enum {
    NVML_CLOCK_GRAPHICS = 0,
    NVML_CLOCK_SM = 1,
    NVML_CLOCK_MEM = 2,
    NVML_CLOCK_VIDEO = 3
} nvmlClockType_t;

typedef enum nvmlTemperatureSensors_enum { NVML_TEMPERATURE_GPU = 0 } nvmlTemperatureSensors_t;

/* Percent of the last sample period (1/6 s to 1 s depending on the product) during which a
 * kernel ran / device memory was read or written. */
typedef struct nvmlUtilization_st {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

/* nvmlDeviceGetMemoryInfo (v1 struct): bytes; used includes what the driver reserves. */
typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

/* Buffer sizes the header guarantees to be large enough. */
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
/* The bus id format of nvmlPciInfo_t.busId: domain:bus:device.function, hex. */
#define NVML_DEVICE_PCI_BUS_ID_FMT "%08X:%02X:%02X.0"

/* ---- entry points ---- */
typedef nvmlReturn_t (*tandem_pfn_nvmlInit_v2)(void);
typedef nvmlReturn_t (*tandem_pfn_nvmlShutdown)(void);
typedef const char *(*tandem_pfn_nvmlErrorString)(nvmlReturn_t result);
typedef nvmlReturn_t (*tandem_pfn_nvmlSystemGetNVMLVersion)(char *version, unsigned int length);
typedef nvmlReturn_t (*tandem_pfn_nvmlSystemGetDriverVersion)(char *version, unsigned int length);
typedef nvmlReturn_t (*tandem_pfn_nvmlDeviceGetCount_v2)(unsigned int *deviceCount);
typedef nvmlReturn_t (*tandem_pfn_nvmlDeviceGetHandleByIndex_v2)(unsigned int index,
                                                                 nvmlDevice_t *device);
typedef nvmlReturn_t (*tandem_pfn_nvmlDeviceGetHandleByPciBusId_v2)(const char *pciBusId,
                                                                    nvmlDevice_t *device);
typedef nvmlReturn_t (*tandem_pfn_nvmlDeviceGetUtilizationRates)(nvmlDevice_t device,
                                                                 nvmlUtilization_t *utilization);
typedef nvmlReturn_t (*tandem_pfn_nvmlDeviceGetMemoryInfo)(nvmlDevice_t device,
                                                           nvmlMemory_t *memory);
/* milliwatts */
typedef nvmlReturn_t (*tandem_pfn_nvmlDeviceGetPowerUsage)(nvmlDevice_t device,
                                                           unsigned int *power);
/* MHz */
typedef nvmlReturn_t (*tandem_pfn_nvmlDeviceGetClockInfo)(nvmlDevice_t device,
                                                          nvmlClockType_t type,
                                                          unsigned int *clock);
/* degrees C */
typedef nvmlReturn_t (*tandem_pfn_nvmlDeviceGetTemperature)(nvmlDevice_t device,
                                                            nvmlTemperatureSensors_t sensorType,
                                                            unsigned int *temp);

/* Every entry point platform/cuda/nvml.c resolves with dlsym (all required). */
#define TANDEM_NVML_CALLS(X)                                                              \
    X(nvmlInit_v2) X(nvmlShutdown) X(nvmlErrorString) X(nvmlSystemGetNVMLVersion)         \
    X(nvmlSystemGetDriverVersion) X(nvmlDeviceGetCount_v2) X(nvmlDeviceGetHandleByIndex_v2) \
    X(nvmlDeviceGetHandleByPciBusId_v2) X(nvmlDeviceGetUtilizationRates)                   \
    X(nvmlDeviceGetMemoryInfo) X(nvmlDeviceGetPowerUsage) X(nvmlDeviceGetClockInfo)        \
    X(nvmlDeviceGetTemperature)

#ifdef TANDEM_NVML_API_PROTOTYPES
#define TANDEM_NVML_PROTO(name) extern __typeof__(*(tandem_pfn_##name)0) name;
TANDEM_NVML_CALLS(TANDEM_NVML_PROTO)
#undef TANDEM_NVML_PROTO
#endif

#endif
