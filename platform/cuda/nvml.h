/* nvml.h — NVML (the NVIDIA Management Library) when present: utilisation, memory, power,
 * clocks and temperature of each CUDA device, for `tandem diagnose` and the training metrics.
 * NVML is optional: without it (no libnvidia-ml.so.1, or TANDEM_NVML=none) everything else
 * works and callers simply leave these numbers out.
 *
 * The library is loaded once per process with dlopen("libnvidia-ml.so.1") (or $TANDEM_NVML),
 * its entry points resolved with dlsym (platform/cuda/nvml_api.h), nvmlInit_v2 called, and each CUDA
 * ordinal matched to its NVML device by PCI location (domain:bus:device from
 * cuDeviceGetAttribute): NVML enumerates GPUs in PCI order while CUDA puts the fastest first,
 * so the two indices differ on mixed machines.
 *
 * Owns (process-wide, immutable after the one-time open): the library handle, the resolved
 * entry points, the NVML handle and PCI bus id of each CUDA ordinal, the open status and its
 * description. tandem_nvml_sample is thread-safe (NVML is) and allocation-free. */
#ifndef TANDEM_PLATFORM_NVML_H
#define TANDEM_PLATFORM_NVML_H

#include <stdint.h>

#include "tandem.h"

/* CUDA ordinals beyond this are not matched (sampling them is TANDEM_E_UNSUPPORTED). */
#define TANDEM_NVML_MAX_DEVICES 64

/* Which fields of a sample are valid: a GPU may not support a query (power on many GeForce
 * boards, utilisation on MIG instances) or the user may lack permission; that field is left
 * out, the rest is still reported. */
enum {
    TANDEM_NVML_HAVE_UTIL = 1 << 0,        /* gpu_util_pct, mem_util_pct */
    TANDEM_NVML_HAVE_MEMORY = 1 << 1,      /* mem_used_bytes, mem_total_bytes */
    TANDEM_NVML_HAVE_POWER = 1 << 2,       /* power_w */
    TANDEM_NVML_HAVE_SM_CLOCK = 1 << 3,    /* sm_clock_mhz */
    TANDEM_NVML_HAVE_MEM_CLOCK = 1 << 4,   /* mem_clock_mhz */
    TANDEM_NVML_HAVE_TEMPERATURE = 1 << 5  /* temperature_c */
};

typedef struct tandem_nvml_sample_t {
    unsigned have;             /* TANDEM_NVML_HAVE_* bits */
    int gpu_util_pct;          /* % of NVML's last sample period (1/6..1 s) a kernel ran */
    int mem_util_pct;          /* % of it device memory was read or written */
    uint64_t mem_used_bytes;   /* all processes, including the driver's reservation */
    uint64_t mem_total_bytes;
    double power_w;            /* board power draw */
    int sm_clock_mhz;          /* current SM clock */
    int mem_clock_mhz;         /* current memory clock */
    int temperature_c;         /* GPU die */
} tandem_nvml_sample_t;

/* Load and initialise NVML and match the CUDA devices, once per process (thread-safe; later
 * calls return the same status and set the same message). Not having NVML is a normal state:
 *   TANDEM_E_NODRIVER     the library is not there, or NVML finds no NVIDIA kernel driver;
 *   TANDEM_E_UNSUPPORTED  disabled with TANDEM_NVML=none;
 *   TANDEM_E_DEVICE       present but unusable (an entry point missing, nvmlInit failing).
 * Callers that only want the numbers treat any of these as "no NVML" and go on. Loads the CUDA
 * driver (tandem_cuda_driver_load) to learn the devices' PCI locations; without one, NVML
 * still opens but no CUDA ordinal is matched. */
tandem_status tandem_nvml_open(void);

/* One line about NVML for people: "libnvidia-ml.so.1: NVML 12.550.54.15, driver 550.54.15" when
 * open, else why not (the message tandem_nvml_open set). Opens NVML if not yet tried. */
const char *tandem_nvml_describe(void);

/* The PCI bus id ("00000000:41:00.0") of CUDA device cuda_ordinal as NVML was asked for it,
 * "" when unknown (NVML not open, ordinal not a CUDA device). */
const char *tandem_nvml_bus_id(int cuda_ordinal);

/* Read the current values of CUDA device cuda_ordinal into *out (out->have says which are
 * valid). TANDEM_E_INVALID for an ordinal that is not a CUDA device; TANDEM_E_UNSUPPORTED when
 * NVML is not open or has no device at that PCI location (the message says which);
 * TANDEM_E_DEVICE when an NVML query fails for another reason than "not supported" (GPU lost,
 * ...). Six NVML queries, each a round trip to the kernel driver: call it once per logged
 * step, not per kernel. Allocation-free. */
tandem_status tandem_nvml_sample(int cuda_ordinal, tandem_nvml_sample_t *out);

#endif
