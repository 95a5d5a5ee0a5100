/* cmd_diagnose.c — `tandem diagnose`: what this machine offers the runtime. The CUDA driver
 * (found, version, or why not), each CUDA device and whether the fatbin runs on it (and
 * whether opening it — module load, every kernel resolved — works), peer access per ordered
 * pair, the fatbin's architectures, cuBLASLt, NVML (found and its version, and per CUDA device
 * utilisation, memory, power, clocks, temperature), the host backend, and what `auto` would choose.
 * Exit 0 when everything found works (no driver at all is a normal state), 1 when something
 * present fails (a driver that does not initialise, a device the fatbin cannot run on, ...). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "platform/cuda/cuda_driver.h"
#include "platform/device.h"
#include "platform/cuda/fatbin.h"
#include "platform/cuda/nvml.h"
#include "platform/host/host_gemm.h"
#include "platform/host/host_pool.h"
#include "platform/os/os.h"
#include "kernels/registry.h"
#include "tandem.h"

#define MAX_LISTED 16

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem diagnose\n\n"
            "Reports the CUDA driver (found and its version, or why not), each CUDA device (name,\n"
            "compute capability, memory, SMs) and whether the fatbin runs on it, peer access for\n"
            "each ordered pair of devices, the fatbin's architectures, whether cuBLASLt was found,\n"
            "NVML (found and its version, or why not; per CUDA device utilisation, memory, power,\n"
            "clocks and temperature), the host backend, and which devices `auto` would pick for\n"
            "the data and model roles.\n\n"
            "environment:\n"
            "  TANDEM_CUDA_DRIVER  driver library to load instead of libcuda.so.1\n"
            "  TANDEM_FATBIN       fatbin file to use instead of the embedded one\n"
            "  TANDEM_CUBLASLT     cuBLASLt library to load, or \"none\" to use the fatbin GEMM\n"
            "  TANDEM_NVML         NVML library to load instead of libnvidia-ml.so.1, or \"none\"\n\n"
            "exit status: 0 when all that is present works (no CUDA driver is fine), 1 when\n"
            "something present fails.\n");
}

/* Which image of the fatbin a device of cc major.minor would use: "sm_86 SASS", "compute_90
 * PTX (JIT)", or NULL. SASS is preferred, the newest one that fits. */
static const char *image_for(const tandem_fatbin_summary *s, int major, int minor, char *buf, size_t cap) {
    int best_sass = -1, best_ptx = -1, cc = major * 10 + minor;
    for (int i = 0; i < s->image_count; i++) {
        const tandem_fatbin_image *im = &s->images[i];
        if (im->kind == TANDEM_FATBIN_SASS && im->arch / 10 == major && im->arch % 10 <= minor && im->arch > best_sass)
            best_sass = im->arch;
        if (im->kind == TANDEM_FATBIN_PTX && im->arch <= cc && im->arch > best_ptx) best_ptx = im->arch;
    }
    if (best_sass >= 0)
        snprintf(buf, cap, "sm_%d SASS", best_sass);
    else if (best_ptx >= 0)
        snprintf(buf, cap, "compute_%d PTX, compiled by the driver at load (JIT)", best_ptx);
    else
        return NULL;
    return buf;
}

static int section_fatbin(tandem_fatbin_summary *sum, int *have) {
    const void *bin = NULL;
    size_t len = 0;
    void *owned = NULL;
    const char *env = getenv("TANDEM_FATBIN");
    char src[300];
    snprintf(src, sizeof src, "%s", env && env[0] ? env : "embedded in libtandem.a");
    *have = 0;
    printf("\nfatbin (%s)\n", src);
    if (tandem_fatbin_load(&bin, &len, &owned) != TANDEM_OK) {
        printf("  cannot be read: %s\n", tandem_last_error());
        return 1;
    }
    int bad = 0;
    if (tandem_fatbin_parse(bin, len, sum) != TANDEM_OK) {
        printf("  malformed: %s\n", tandem_last_error());
        bad = 1;
    } else if (sum->image_count == 0) {
        printf("  empty: this is a host-only build (nvcc was not found), the cuda backend cannot run\n");
    } else {
        char archs[256];
        tandem_fatbin_arch_string(sum, archs, sizeof archs);
        printf("  %zu bytes: %s\n", len, archs);
        int missing = 0;
        for (int k = 0; k < TANDEM_KERNEL_COUNT; k++) {
            int found = 0;
            for (int e = 0; e < sum->entry_count && !found; e++)
                found = strcmp(sum->entries[e], tandem_kernel_table[k].entry) == 0;
            if (!found && sum->entry_count > 0 && missing++ < 5)
                printf("  missing kernel: %s\n", tandem_kernel_table[k].entry);
        }
        if (missing > 5) printf("  ... and %d more missing\n", missing - 5);
        if (sum->entry_count > 0)
            printf("  %d kernel entry points; %d registered kernel%s, %s\n", sum->entry_count, TANDEM_KERNEL_COUNT,
                   TANDEM_KERNEL_COUNT == 1 ? "" : "s", missing ? "SOME MISSING (rebuild the fatbin)" : "all present");
        else
            printf("  entry points not listed (compressed SASS)\n");
        bad = missing > 0;
        *have = 1;
    }
    tandem_free(owned);
    return bad;
}

/* "n/a" or the value formatted with fmt into buf. */
static const char *field(int have, char *buf, size_t cap, const char *fmt, double v) {
    if (!have) return "n/a";
    snprintf(buf, cap, fmt, v);
    return buf;
}

/* NVML: found (version) or why not; one line of readings per CUDA device. No NVML is a normal
 * state; a query failing on a device NVML has is a problem. */
static int section_nvml(int ncuda) {
    printf("\nNVML\n");
    tandem_status st = tandem_nvml_open();
    if (st != TANDEM_OK) {
        printf("  %s%s\n", st == TANDEM_E_DEVICE ? "present but FAILING: " : "", tandem_nvml_describe());
        if (st != TANDEM_E_DEVICE) printf("  (optional: training metrics leave out utilisation, power, clocks)\n");
        return st == TANDEM_E_DEVICE;
    }
    printf("  found: %s\n", tandem_nvml_describe());
    int fail = 0;
    for (int i = 0; i < ncuda && i < MAX_LISTED; i++) {
        tandem_nvml_sample_t s;
        st = tandem_nvml_sample(i, &s);
        if (st != TANDEM_OK) {
            printf("  %d: %s%s\n", i, st == TANDEM_E_DEVICE ? "FAILED: " : "", tandem_last_error());
            fail |= st == TANDEM_E_DEVICE;
            continue;
        }
        char u[16], mu[16], used[24], total[24], w[16], sm[16], mem[16], t[16];
        printf("  %d (PCI %s): busy %s (memory %s), memory %s / %s MiB, power %s, SM clock %s, "
               "memory clock %s, %s\n",
               i, tandem_nvml_bus_id(i), field(s.have & TANDEM_NVML_HAVE_UTIL, u, sizeof u, "%.0f%%", s.gpu_util_pct),
               field(s.have & TANDEM_NVML_HAVE_UTIL, mu, sizeof mu, "%.0f%%", s.mem_util_pct),
               field(s.have & TANDEM_NVML_HAVE_MEMORY, used, sizeof used, "%.0f", (double)(s.mem_used_bytes >> 20)),
               field(s.have & TANDEM_NVML_HAVE_MEMORY, total, sizeof total, "%.0f", (double)(s.mem_total_bytes >> 20)),
               field(s.have & TANDEM_NVML_HAVE_POWER, w, sizeof w, "%.1f W", s.power_w),
               field(s.have & TANDEM_NVML_HAVE_SM_CLOCK, sm, sizeof sm, "%.0f MHz", s.sm_clock_mhz),
               field(s.have & TANDEM_NVML_HAVE_MEM_CLOCK, mem, sizeof mem, "%.0f MHz", s.mem_clock_mhz),
               field(s.have & TANDEM_NVML_HAVE_TEMPERATURE, t, sizeof t, "%.0f C", s.temperature_c));
    }
    return fail;
}

int cli_diagnose(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "tandem diagnose: unexpected argument '%s'\n\n", argv[1]);
        usage(stderr);
        return 2;
    }
    tandem_log_set_level(TANDEM_LOG_WARN);
    int fail = 0;
    printf("tandem %s diagnose\n\nCUDA driver\n", TANDEM_VERSION_STRING);
    tandem_status drv = tandem_cuda_driver_load();
    int ncuda = 0;
    if (drv == TANDEM_E_NODRIVER) {
        printf("  no CUDA driver: %s\n", tandem_cuda_driver_status());
    } else if (drv != TANDEM_OK) {
        printf("  present but FAILING: %s\n", tandem_cuda_driver_status());
        fail = 1;
    } else {
        int v = tandem_cuda_driver_version();
        const char *lib = getenv("TANDEM_CUDA_DRIVER");
        printf("  found: %s, CUDA %d.%d\n", lib && lib[0] ? lib : "libcuda.so.1", v / 1000, v % 1000 / 10);
        if (tandem_cuda_device_count(&ncuda) != TANDEM_OK) {
            printf("  counting devices FAILED: %s\n", tandem_last_error());
            fail = 1;
        }
    }

    static tandem_fatbin_summary sum; /* ~25 KiB: not on the stack */
    int have_fatbin = 0;
    fail |= section_fatbin(&sum, &have_fatbin);

    int usable[MAX_LISTED] = {0};
    if (drv == TANDEM_OK) {
        printf("\nCUDA devices: %d\n", ncuda);
        for (int i = 0; i < ncuda && i < MAX_LISTED; i++) {
            tandem_device_info info;
            if (tandem_cuda_query(i, &info) != TANDEM_OK) {
                printf("  %d: query FAILED: %s\n", i, tandem_last_error());
                fail = 1;
                continue;
            }
            printf("  %d: %s, compute capability %d.%d, %zu MiB, %d SMs, bf16 %s\n", i, info.name, info.cc_major,
                   info.cc_minor, info.total_memory >> 20, info.multiprocessors, info.supports_bf16 ? "yes" : "no");
            char img[96];
            if (have_fatbin) {
                if (image_for(&sum, info.cc_major, info.cc_minor, img, sizeof img))
                    printf("     fatbin: runs (%s)\n", img);
                else
                    printf("     fatbin: has NO code for compute capability %d.%d\n", info.cc_major, info.cc_minor);
            }
            tandem_device *dev = NULL;
            if (tandem_cuda_device_open(i, &dev) == TANDEM_OK) {
                printf("     open: ok (context, module, %d kernels resolved)\n", TANDEM_KERNEL_COUNT);
                tandem_device_close(dev);
                usable[i] = 1;
            } else {
                printf("     open: FAILED: %s\n", tandem_last_error());
                fail = 1;
            }
        }
        if (ncuda > MAX_LISTED) printf("  (%d more not listed)\n", ncuda - MAX_LISTED);
        if (ncuda > 1) {
            printf("\npeer access (dst reads src's memory directly; else copies are staged through pinned host memory)\n");
            for (int a = 0; a < ncuda && a < MAX_LISTED; a++)
                for (int b = 0; b < ncuda && b < MAX_LISTED; b++) {
                    if (a == b) continue;
                    int can = 0;
                    if (tandem_cuda_query_peer(a, b, &can) != TANDEM_OK) {
                        printf("  %d <- %d: query FAILED: %s\n", a, b, tandem_last_error());
                        fail = 1;
                    } else {
                        printf("  %d <- %d: %s\n", a, b, can ? "yes" : "no");
                    }
                }
        }
    }

    char why[512];
    int lt = tandem_cuda_have_cublaslt(why, sizeof why);
    printf("\ncuBLASLt\n  %s%s\n", lt ? "found: " : "not found: ", why);
    if (!lt) printf("  GEMMs on CUDA devices use the fatbin's gemm_f32 kernel\n");

    fail |= section_nvml(drv == TANDEM_OK ? ncuda : 0);

    printf("\nhost backend\n");
    tandem_device *host = NULL;
    int nhost = 0;
    if (tandem_host_device_count(&nhost) == TANDEM_OK && tandem_device_open(TANDEM_BACKEND_HOST, 0, &host) == TANDEM_OK) {
        tandem_device_info hi;
        tandem_device_get_info(host, &hi);
        printf("  %s, %d cores, %zu MiB RAM; %d host devices available\n", hi.name, hi.multiprocessors,
               hi.total_memory >> 20, nhost);
        printf("  %d threads per host device (TANDEM_HOST_THREADS, default: the CPUs this process may use);"
               " GEMM %s split over them, OpenBLAS threads %d\n",
               tandem_host_device_threads(host), tandem_host_gemm_impl(), tandem_host_blas_threads());
        if (tandem_host_blas_core()[0]) printf("  OpenBLAS kernels: %s\n", tandem_host_blas_core());
        if (tandem_host_blas_hint()[0]) printf("  hint: %s\n", tandem_host_blas_hint());
        tandem_device_close(host);
    } else {
        printf("  FAILED: %s\n", tandem_last_error());
        fail = 1;
    }

    printf("\nauto selection\n");
    if (drv != TANDEM_OK && drv != TANDEM_E_NODRIVER) {
        printf("  fails: the CUDA driver is present but failing (no silent fallback to the host backend)\n");
    } else if (drv == TANDEM_E_NODRIVER || ncuda == 0) {
        printf("  backend host: data device = host 0, model device = host 1\n");
    } else if (ncuda == 1) {
        printf("  backend cuda: data and model roles both on cuda 0 (separate streams and arenas)%s\n",
               usable[0] ? "" : " — but it does not open (see above)");
    } else {
        printf("  backend cuda: data device = cuda 0, model device = cuda 1%s\n",
               usable[0] && usable[1] ? "" : " — but one of them does not open (see above)");
    }
    printf("\n%s\n", fail ? "problems found (see above)" : "ok");
    return fail ? 1 : 0;
}
