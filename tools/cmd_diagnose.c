/* cmd_diagnose.c — `tandem diagnose`: what this machine offers the runtime, as the public
 * device discovery (tandem_system.h) reports it. The CUDA driver (found, version, or why not),
 * each CUDA device and whether the fatbin runs on it (and whether opening it — module load,
 * every kernel resolved — works), peer access per ordered pair, the fatbin's architectures,
 * cuBLASLt, NVML (found and its version, and per CUDA device utilisation, memory, power,
 * clocks, temperature), the host backend, and what `auto` would choose.
 * Exit 0 when everything found works (no driver at all is a normal state), 1 when something
 * present fails (a driver that does not initialise, a device the fatbin cannot run on, ...). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tandem.h"
#include "tools/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem diagnose [--config FILE [--batch-size N] [--precision fp32|bf16]]\n\n"
            "Reports the CUDA driver (found and its version, or why not), each CUDA device (name,\n"
            "compute capability, memory, SMs) and whether the fatbin runs on it, peer access for\n"
            "each ordered pair of devices, the fatbin's architectures, whether cuBLASLt was found,\n"
            "NVML (found and its version, or why not; per CUDA device utilisation, memory, power,\n"
            "clocks and temperature), the host backend, and which devices `auto` would pick for\n"
            "the data and model roles.\n"
            "With --config: each CUDA device that opens also lists the config's GEMM shapes that\n"
            "cannot run as cuBLASLt's fused plan (a rejected epilogue split into a cuBLASLt GEMM +\n"
            "Tandem's epilogue kernel, or the fatbin's CUDA-core GEMM), by shape and why.\n\n"
            "environment:\n"
            "  TANDEM_CUDA_DRIVER  driver library to load instead of libcuda.so.1\n"
            "  TANDEM_FATBIN       fatbin file to use instead of the embedded one\n"
            "  TANDEM_CUBLASLT     cuBLASLt library to load, or \"none\" to use the fatbin GEMM\n"
            "  TANDEM_NVML         NVML library to load instead of libnvidia-ml.so.1, or \"none\"\n\n"
            "exit status: 0 when all that is present works (no CUDA driver is fine), 1 when\n"
            "something present fails.\n");
}

static void section_driver(const tandem_system_report *r) {
    printf("tandem %s diagnose\n\nCUDA driver\n", TANDEM_VERSION_STRING);
    if (r->driver_status == TANDEM_E_NODRIVER) {
        printf("  no CUDA driver: %s\n", r->driver_message);
    } else if (r->driver_status != TANDEM_OK) {
        printf("  present but FAILING: %s\n", r->driver_message);
    } else {
        const int v = r->driver_version;
        const char *lib = getenv("TANDEM_CUDA_DRIVER");
        printf("  found: %s, CUDA %d.%d\n", lib && lib[0] ? lib : "libcuda.so.1", v / 1000, v % 1000 / 10);
        if (r->count_status != TANDEM_OK) printf("  counting devices FAILED: %s\n", r->count_error);
    }
}

/* Which toolkit built the fatbin, the driver it needs and whether this one is new enough. */
static void section_floor(const tandem_system_report *r) {
    const int tk = r->fatbin_toolkit, fl = r->driver_floor, v = r->driver_version;
    if (tk) printf("  built by CUDA %d.%d", tk / 1000, tk % 1000 / 10);
    else printf("  toolkit not recorded");
    if (r->fatbin_ptx_isa) printf(", PTX ISA %d.%d", r->fatbin_ptx_isa / 10, r->fatbin_ptx_isa % 10);
    printf("\n  needs a CUDA %d.%d driver%s%s%s: ", fl / 1000, fl % 1000 / 10, r->driver_branch[0] ? " (" : "",
           r->driver_branch, r->driver_branch[0] ? " or newer)" : "");
    if (!v)
        printf("no driver to compare\n");
    else if (v >= fl)
        printf("this driver (CUDA %d.%d) meets it\n", v / 1000, v % 1000 / 10);
    else
        printf("this driver is CUDA %d.%d, TOO OLD\n", v / 1000, v % 1000 / 10);
}

static void section_fatbin(const tandem_system_report *r) {
    const char *env = getenv("TANDEM_FATBIN");
    printf("\nfatbin (%s)\n", env && env[0] ? env : "embedded in libtandem.a");
    if (r->fatbin_load_status != TANDEM_OK) {
        printf("  cannot be read: %s\n", r->fatbin_error);
    } else if (r->fatbin_parse_status != TANDEM_OK) {
        printf("  malformed: %s\n", r->fatbin_error);
    } else if (r->fatbin_images == 0) {
        printf("  empty: this is a host-only build (nvcc was not found), the cuda backend cannot run\n");
    } else {
        printf("  %zu bytes: %s\n", r->fatbin_bytes, r->fatbin_archs);
        for (int i = 0; i < r->kernels_missing && i < TANDEM_SYSTEM_MAX_MISSING; i++)
            printf("  missing kernel: %s\n", r->missing[i]);
        if (r->kernels_missing > TANDEM_SYSTEM_MAX_MISSING)
            printf("  ... and %d more missing\n", r->kernels_missing - TANDEM_SYSTEM_MAX_MISSING);
        section_floor(r);
        if (r->fatbin_entries > 0)
            printf("  %d kernel entry points; %d registered kernel%s, %s\n", r->fatbin_entries, r->kernel_count,
                   r->kernel_count == 1 ? "" : "s", r->kernels_missing ? "SOME MISSING (rebuild the fatbin)" : "all present");
        else
            printf("  entry points not listed (compressed SASS)\n");
    }
}

static void section_devices(const tandem_system_report *r) {
    printf("\nCUDA devices: %d\n", r->cuda_count);
    for (int i = 0; i < r->cuda_listed; i++) {
        const tandem_system_cuda_device *d = &r->cuda[i];
        if (d->query_status != TANDEM_OK) {
            printf("  %d: query FAILED: %s\n", i, d->query_error);
            continue;
        }
        const tandem_device_info *info = &d->info;
        printf("  %d: %s, compute capability %d.%d, %zu MiB, %d SMs, bf16 %s\n", i, info->name, info->cc_major,
               info->cc_minor, info->total_memory >> 20, info->multiprocessors, info->supports_bf16 ? "yes" : "no");
        if (r->fatbin_images > 0 && r->fatbin_parse_status == TANDEM_OK) {
            if (!d->fatbin_runs)
                printf("     fatbin: has NO code for compute capability %d.%d\n", info->cc_major, info->cc_minor);
            else if (d->fatbin_ptx)
                printf("     fatbin: runs (compute_%d PTX, compiled by the driver at load (JIT))\n", d->fatbin_arch);
            else
                printf("     fatbin: runs (sm_%d SASS)\n", d->fatbin_arch);
        }
        if (d->open_status == TANDEM_OK)
            printf("     open: ok (context, module, %d kernels resolved)\n", r->kernel_count);
        else
            printf("     open: FAILED: %s\n", d->open_error);
    }
    if (r->cuda_count > r->cuda_listed) printf("  (%d more not listed)\n", r->cuda_count - r->cuda_listed);
    if (r->cuda_count < 2) return;
    printf("\npeer access (dst reads src's memory directly; else copies are staged through pinned host memory)\n");
    for (int a = 0; a < r->cuda_listed; a++)
        for (int b = 0; b < r->cuda_listed; b++) {
            if (a == b) continue;
            const tandem_system_peer *p = &r->peer[a][b];
            if (p->status != TANDEM_OK)
                printf("  %d <- %d: query FAILED: %s\n", a, b, p->error);
            else
                printf("  %d <- %d: %s\n", a, b, p->can_access ? "yes" : "no");
        }
}

/* "n/a" or the value formatted with fmt into buf. */
static const char *field(unsigned have, char *buf, size_t cap, const char *fmt, double v) {
    if (!have) return "n/a";
    snprintf(buf, cap, fmt, v);
    return buf;
}

static void nvml_line(int i, const tandem_system_nvml_reading *s) {
    char u[16], mu[16], used[24], total[24], w[16], sm[16], mem[16], t[16];
    printf("  %d (PCI %s): busy %s (memory %s), memory %s / %s MiB, power %s, SM clock %s, "
           "memory clock %s, %s\n",
           i, s->pci_bus_id, field(s->have & TANDEM_SYSTEM_NVML_UTIL, u, sizeof u, "%.0f%%", s->gpu_util_pct),
           field(s->have & TANDEM_SYSTEM_NVML_UTIL, mu, sizeof mu, "%.0f%%", s->mem_util_pct),
           field(s->have & TANDEM_SYSTEM_NVML_MEMORY, used, sizeof used, "%.0f", (double)(s->mem_used_bytes >> 20)),
           field(s->have & TANDEM_SYSTEM_NVML_MEMORY, total, sizeof total, "%.0f", (double)(s->mem_total_bytes >> 20)),
           field(s->have & TANDEM_SYSTEM_NVML_POWER, w, sizeof w, "%.1f W", s->power_w),
           field(s->have & TANDEM_SYSTEM_NVML_SM_CLOCK, sm, sizeof sm, "%.0f MHz", s->sm_clock_mhz),
           field(s->have & TANDEM_SYSTEM_NVML_MEM_CLOCK, mem, sizeof mem, "%.0f MHz", s->mem_clock_mhz),
           field(s->have & TANDEM_SYSTEM_NVML_TEMPERATURE, t, sizeof t, "%.0f C", s->temperature_c));
}

/* NVML: found (version) or why not; one line of readings per CUDA device. */
static void section_nvml(const tandem_system_report *r) {
    printf("\nNVML\n");
    if (r->nvml_status != TANDEM_OK) {
        printf("  %s%s\n", r->nvml_status == TANDEM_E_DEVICE ? "present but FAILING: " : "", r->nvml_info);
        if (r->nvml_status != TANDEM_E_DEVICE) printf("  (optional: training metrics leave out utilisation, power, clocks)\n");
        return;
    }
    printf("  found: %s\n", r->nvml_info);
    const int n = r->driver_status == TANDEM_OK ? r->cuda_listed : 0;
    for (int i = 0; i < n; i++) {
        const tandem_system_nvml_reading *s = &r->cuda[i].nvml;
        if (s->status != TANDEM_OK)
            printf("  %d: %s%s\n", i, s->status == TANDEM_E_DEVICE ? "FAILED: " : "", s->error);
        else
            nvml_line(i, s);
    }
}

static void section_host(const tandem_system_report *r) {
    printf("\nhost backend\n");
    if (r->host_status != TANDEM_OK) {
        printf("  FAILED: %s\n", r->host_error);
        return;
    }
    printf("  %s, %d cores, %zu MiB RAM; %d host devices available\n", r->host.name, r->host.multiprocessors,
           r->host.total_memory >> 20, r->host_devices);
    printf("  %d threads per host device (TANDEM_HOST_THREADS, default: the CPUs this process may use);"
           " GEMM %s split over them, OpenBLAS threads %d\n",
           r->host_threads, r->host_gemm, r->blas_threads);
    if (r->blas_core[0]) printf("  OpenBLAS kernels: %s\n", r->blas_core);
    if (r->blas_hint[0]) printf("  hint: %s\n", r->blas_hint);
}

static void section_auto(const tandem_system_report *r) {
    printf("\nauto selection\n");
    const tandem_status drv = r->driver_status;
    const int ncuda = drv == TANDEM_OK ? r->cuda_count : 0;
    const int usable0 = ncuda > 0 && r->cuda[0].query_status == TANDEM_OK && r->cuda[0].open_status == TANDEM_OK;
    const int usable1 = ncuda > 1 && r->cuda[1].query_status == TANDEM_OK && r->cuda[1].open_status == TANDEM_OK;
    if (drv != TANDEM_OK && drv != TANDEM_E_NODRIVER) {
        printf("  fails: the CUDA driver is present but failing (no silent fallback to the host backend)\n");
    } else if (drv == TANDEM_E_NODRIVER || ncuda == 0) {
        printf("  backend host: data device = host 0, model device = host 1\n");
    } else if (ncuda == 1) {
        printf("  backend cuda: data and model roles both on cuda 0 (separate streams and arenas)%s\n",
               usable0 ? "" : " — but it does not open (see above)");
    } else {
        printf("  backend cuda: data device = cuda 0, model device = cuda 1%s\n",
               usable0 && usable1 ? "" : " — but one of them does not open (see above)");
    }
}

/* --config: the config's GEMM fallbacks on every CUDA device that opens. */
static void section_gemms(const tandem_system_report *r, const tandem_config *cfg, const char *path) {
    static char list[16384];
    char batch[32] = "?", prec[32] = "?";
    tandem_config_get(cfg, "batch_size", batch, sizeof batch);
    tandem_config_get(cfg, "precision", prec, sizeof prec);
    printf("\nGEMM plans of %s (training; batch %s, %s)\n", path, batch, prec);
    for (int i = 0; i < r->cuda_count && i < TANDEM_SYSTEM_MAX_CUDA; i++) {
        if (r->cuda[i].query_status != TANDEM_OK || r->cuda[i].open_status != TANDEM_OK) continue;
        int n = 0;
        tandem_status st = tandem_system_gemm_fallbacks(cfg, i, list, sizeof list, &n);
        if (st != TANDEM_OK) {
            printf("  cuda %d: cannot declare the model: %s\n", i, tandem_last_error());
            continue;
        }
        printf("  cuda %d: %s\n", i, n ? "fallbacks (slower than the fused plan):" : "every shape on cuBLASLt's fused plan");
        for (char *line = list; n && *line;) {
            char *end = strchr(line, '\n');
            printf("    %.*s\n", end ? (int)(end - line) : (int)strlen(line), line);
            line = end ? end + 1 : line + strlen(line);
        }
    }
    if (r->driver_status != TANDEM_OK || r->cuda_count == 0) printf("  no CUDA device\n");
}

int cli_diagnose(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *config_path = NULL, *over_flag[2], *over_key[2], *over_val[2];
    int n_over = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int known = !strcmp(a, "--config") || !strcmp(a, "--batch-size") || !strcmp(a, "--precision");
        if (!known || i + 1 >= argc || (a[2] != 'c' && n_over == 2)) {
            fprintf(stderr, "tandem diagnose: %s '%s'\n\n", known ? "missing value after" : "unexpected argument", a);
            usage(stderr);
            return 2;
        }
        if (!strcmp(a, "--config")) {
            config_path = argv[++i];
        } else {
            over_flag[n_over] = a, over_key[n_over] = a[2] == 'b' ? "batch_size" : "precision";
            over_val[n_over++] = argv[++i];
        }
    }
    tandem_config *cfg = NULL;
    if (config_path) {
        tandem_status cst = cli_load_config(&cfg, config_path, n_over, over_flag, over_key, over_val);
        if (cst != TANDEM_OK) return cli_fail("diagnose", cst);
    } else if (n_over) {
        fprintf(stderr, "tandem diagnose: %s needs --config\n", over_flag[0]);
        return 2;
    }
    tandem_log_set_level(TANDEM_LOG_WARN);
    static tandem_system_report r; /* ~90 KiB: not on the stack */
    tandem_status st = tandem_system_query(&r);
    if (st != TANDEM_OK) return cli_fail("diagnose", st);
    section_driver(&r);
    section_fatbin(&r);
    if (r.driver_status == TANDEM_OK) section_devices(&r);
    printf("\ncuBLASLt\n  %s%s\n", r.cublaslt ? "found: " : "not found: ", r.cublaslt_info);
    if (!r.cublaslt) printf("  GEMMs on CUDA devices use the fatbin's gemm_f32 kernel\n");
    section_nvml(&r);
    section_host(&r);
    section_auto(&r);
    if (cfg) section_gemms(&r, cfg, config_path);
    tandem_config_destroy(cfg);
    printf("\n%s\n", r.problems ? "problems found (see above)" : "ok");
    return r.problems ? 1 : 0;
}
