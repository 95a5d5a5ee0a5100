/* tandem_system.h — what this machine offers the runtime (part of tandem.h), everything
 * `tandem diagnose` shows: the CUDA driver (found, its version, or why not), each CUDA device
 * (properties, whether the fatbin has code for it, whether opening it — context, module, every
 * registered kernel resolved — works, NVML readings), peer access per ordered pair, the
 * fatbin's architectures and kernel entry points, cuBLASLt, NVML, and the host backend (cores,
 * memory, threads per host device, the host GEMM and OpenBLAS).
 *
 * A missing driver, cuBLASLt or NVML is a normal state, reported, not an error;
 * report.problems says whether something that is present fails.
 *
 * tandem_system_query loads the CUDA driver, cuBLASLt and NVML if not yet loaded (process-wide,
 * once) and opens and closes every listed device, so it takes a moment on a machine with GPUs;
 * it allocates only while it runs (a fatbin summary, the devices it opens). Any thread may call
 * it. The report is large (about 90 KiB: the peer table): give it static or heap storage.
 */
/* tandem.h first, outside the guard (see tandem_text.h). */
#include "tandem.h"

#ifndef TANDEM_SYSTEM_H
#define TANDEM_SYSTEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CUDA devices reported one by one (a machine with more says how many in driver.devices). */
#define TANDEM_SYSTEM_MAX_CUDA 16
/* Missing kernel entry points named (the count says how many in all). */
#define TANDEM_SYSTEM_MAX_MISSING 5

/* Which NVML readings of a device are valid (a GPU may not support a query, or the user may
 * lack permission; the rest is still read). */
enum {
    TANDEM_SYSTEM_NVML_UTIL = 1 << 0,        /* gpu_util_pct, mem_util_pct */
    TANDEM_SYSTEM_NVML_MEMORY = 1 << 1,      /* mem_used_bytes, mem_total_bytes */
    TANDEM_SYSTEM_NVML_POWER = 1 << 2,       /* power_w */
    TANDEM_SYSTEM_NVML_SM_CLOCK = 1 << 3,    /* sm_clock_mhz */
    TANDEM_SYSTEM_NVML_MEM_CLOCK = 1 << 4,   /* mem_clock_mhz */
    TANDEM_SYSTEM_NVML_TEMPERATURE = 1 << 5  /* temperature_c */
};

typedef struct tandem_system_nvml_reading {
    tandem_status status;      /* TANDEM_OK: the readings flagged in have are valid */
    char error[256];           /* why not, otherwise */
    char pci_bus_id[32];       /* "00000000:41:00.0"; "" when unknown */
    unsigned have;             /* TANDEM_SYSTEM_NVML_* bits */
    int gpu_util_pct;          /* % of NVML's last sample period a kernel ran */
    int mem_util_pct;          /* % of it device memory was read or written */
    uint64_t mem_used_bytes;   /* all processes, the driver's reservation included */
    uint64_t mem_total_bytes;
    double power_w;
    int sm_clock_mhz, mem_clock_mhz;
    int temperature_c;
} tandem_system_nvml_reading;

typedef struct tandem_system_cuda_device {
    tandem_status query_status;  /* the properties below are valid when TANDEM_OK */
    char query_error[256];
    tandem_device_info info;     /* name, compute capability, memory, SMs, bf16 */
    /* the fatbin image this device would load (when report.fatbin has images): */
    int fatbin_runs;             /* 1: it has code for this compute capability */
    int fatbin_arch;             /* e.g. 86 */
    int fatbin_ptx;              /* 1: PTX for compute_<arch>, compiled by the driver at load
                                    (JIT); 0: sm_<arch> SASS */
    tandem_status open_status;   /* opening it: context, module, every kernel resolved */
    char open_error[256];
    tandem_system_nvml_reading nvml; /* when NVML is open */
} tandem_system_cuda_device;

typedef struct tandem_system_peer {
    tandem_status status;        /* the query itself */
    int can_access;              /* dst reads src's memory directly (else copies are staged) */
    char error[256];
} tandem_system_peer;

typedef struct tandem_system_report {
    /* the CUDA driver */
    tandem_status driver_status; /* TANDEM_OK; TANDEM_E_NODRIVER (none: a normal state); else
                                    present but failing */
    char driver_message[512];    /* why not, when not TANDEM_OK */
    int driver_version;          /* e.g. 12040 for CUDA 12.4 (also when it is too old for the fatbin) */
    tandem_status count_status;  /* counting its devices (driver present) */
    char count_error[256];
    int cuda_count;              /* devices the driver reports (all, also beyond the listed) */
    int cuda_listed;             /* min(cuda_count, TANDEM_SYSTEM_MAX_CUDA) */
    tandem_system_cuda_device cuda[TANDEM_SYSTEM_MAX_CUDA];
    tandem_system_peer peer[TANDEM_SYSTEM_MAX_CUDA][TANDEM_SYSTEM_MAX_CUDA]; /* [dst][src] */

    /* the fatbin the cuda backend loads */
    tandem_status fatbin_load_status;  /* reading it (an override file may be missing) */
    tandem_status fatbin_parse_status; /* parsing it */
    char fatbin_error[512];
    size_t fatbin_bytes;
    int fatbin_images;           /* 0: a host-only build (no nvcc), the cuda backend cannot run */
    char fatbin_archs[256];      /* "sm_80 sm_86 sm_89 sm_90 compute_90" */
    int fatbin_entries;          /* kernel entry points listed; 0: not listed (compressed SASS) */
    int fatbin_toolkit;          /* the CUDA toolkit that built it (13000 = 13.0), 0 if unknown */
    int fatbin_ptx_isa;          /* newest PTX ISA it holds (90 = 9.0), 0 for none */
    int driver_floor;            /* the driver it needs: cuDriverGetVersion >= this (13000) */
    char driver_branch[16];      /* "R580": the Linux driver branch of that floor, "" if unknown */
    int kernel_count;            /* kernels this build registers */
    int kernels_missing;         /* registered kernels without an entry point (when listed) */
    char missing[TANDEM_SYSTEM_MAX_MISSING][96]; /* the first of them */

    /* cuBLASLt (GEMMs on CUDA devices; without it the fatbin's GEMM kernel) */
    int cublaslt;                /* found */
    char cublaslt_info[512];     /* its version, or why not */

    /* NVML (optional: training metrics then leave out utilisation, power, clocks) */
    tandem_status nvml_status;   /* TANDEM_OK; TANDEM_E_DEVICE: present but failing; else absent
                                    or disabled (a normal state) */
    char nvml_info[512];         /* its version and the driver's, or why not */

    /* the host backend */
    tandem_status host_status;   /* counting and opening host device 0 */
    char host_error[256];
    tandem_device_info host;     /* CPU name, cores, RAM */
    int host_devices;            /* host devices available */
    int host_threads;            /* worker threads per host device */
    char host_gemm[16];          /* "cblas" (OpenBLAS) or "blocked" (built in) */
    int blas_threads;            /* OpenBLAS's own threads (0 without OpenBLAS) */
    char blas_core[64];          /* OpenBLAS's kernel family for this CPU; "" without */
    char blas_hint[256];         /* advice about that choice; "" when none */

    int problems;                /* something present fails (a driver that does not initialise,
                                    a device that does not open, missing kernels, ...) */
} tandem_system_report;

/* Fill *out (zeroed first). TANDEM_OK whenever the report was made, also when it lists
 * problems; TANDEM_E_INVALID for a NULL out. */
tandem_status tandem_system_query(tandem_system_report *out);

/* The GEMM shapes of cfg's model (training) that CUDA device `ordinal` cannot run as cuBLASLt's
 * fused plan — split into a cuBLASLt GEMM + Tandem's epilogue kernel, or on the fatbin's CUDA-core
 * GEMM — one line each ("GEMM <shape>: <how> (<why>)") into buf, their count into *n. Opens the
 * device and declares the model there (no arena is committed, nothing runs), then closes it.
 * The config's strict_gemm is ignored here (the list is the answer). */
tandem_status tandem_system_gemm_fallbacks(const tandem_config *cfg, int ordinal, char *buf, size_t cap, int *n);

/* NVML's current readings of CUDA device cuda_ordinal alone (`tandem monitor`; loads NVML and the
 * driver once per process): *out zeroed, then filled; returns and stores in out->status NVML's
 * status (no NVML is TANDEM_E_NODRIVER or TANDEM_E_UNSUPPORTED, a normal state; the message in
 * out->error says why). Six NVML queries; allocation-free after the first call; any thread. */
tandem_status tandem_system_nvml_read(int cuda_ordinal, tandem_system_nvml_reading *out);

#ifdef __cplusplus
}
#endif
#endif /* TANDEM_SYSTEM_H */
