/* system.c — tandem_system_query (tandem_system.h): the driver, devices, fatbin, cuBLASLt, NVML
 * and host backend, asked through the platform layer's own entry points in the order
 * `tandem diagnose` shows them (cuBLASLt is looked at after the devices were opened). */
#include "tandem.h"

#include <stdio.h>
#include <string.h>

#include "kernels/registry.h"
#include "platform/cuda/cuda_driver.h"
#include "platform/cuda/fatbin.h"
#include "platform/cuda/nvml.h"
#include "platform/device.h"
#include "platform/host/host_gemm.h"
#include "platform/host/host_pool.h"
#include "platform/os/log.h"
#include "platform/os/os.h"

/* The public bits are NVML's own. */
_Static_assert((int)TANDEM_SYSTEM_NVML_UTIL == (int)TANDEM_NVML_HAVE_UTIL &&
                   (int)TANDEM_SYSTEM_NVML_MEMORY == (int)TANDEM_NVML_HAVE_MEMORY &&
                   (int)TANDEM_SYSTEM_NVML_POWER == (int)TANDEM_NVML_HAVE_POWER &&
                   (int)TANDEM_SYSTEM_NVML_SM_CLOCK == (int)TANDEM_NVML_HAVE_SM_CLOCK &&
                   (int)TANDEM_SYSTEM_NVML_MEM_CLOCK == (int)TANDEM_NVML_HAVE_MEM_CLOCK &&
                   (int)TANDEM_SYSTEM_NVML_TEMPERATURE == (int)TANDEM_NVML_HAVE_TEMPERATURE,
               "tandem_system.h's NVML bits follow platform/cuda/nvml.h");

#define COPY_ERROR(dst) snprintf((dst), sizeof(dst), "%s", tandem_last_error())

static void query_driver(tandem_system_report *r) {
    r->driver_status = tandem_cuda_driver_load();
    r->driver_version = tandem_cuda_driver_version();
    if (r->driver_status != TANDEM_OK) {
        snprintf(r->driver_message, sizeof r->driver_message, "%s", tandem_cuda_driver_status());
        if (r->driver_status != TANDEM_E_NODRIVER) r->problems = 1;
        return;
    }
    r->driver_version = tandem_cuda_driver_version();
    r->count_status = tandem_cuda_device_count(&r->cuda_count);
    if (r->count_status != TANDEM_OK) {
        COPY_ERROR(r->count_error);
        r->cuda_count = 0;
        r->problems = 1;
    }
    r->cuda_listed = r->cuda_count < TANDEM_SYSTEM_MAX_CUDA ? r->cuda_count : TANDEM_SYSTEM_MAX_CUDA;
}

/* Registered kernels without an entry point in the summary (only when it lists them). */
static void missing_kernels(const tandem_fatbin_summary *sum, tandem_system_report *r) {
    r->kernel_count = TANDEM_KERNEL_COUNT;
    if (sum->entry_count == 0) return;
    for (int k = 0; k < TANDEM_KERNEL_COUNT; k++) {
        int found = 0;
        for (int e = 0; e < sum->entry_count && !found; e++)
            found = strcmp(sum->entries[e], tandem_kernel_table[k].entry) == 0;
        if (found) continue;
        if (r->kernels_missing < TANDEM_SYSTEM_MAX_MISSING)
            snprintf(r->missing[r->kernels_missing], sizeof r->missing[0], "%s", tandem_kernel_table[k].entry);
        r->kernels_missing++;
    }
    if (r->kernels_missing) r->problems = 1;
}

/* Reads and parses the fatbin into sum; 1 when it has images (devices can be matched). */
static int query_fatbin(tandem_fatbin_summary *sum, tandem_system_report *r) {
    const void *bin = NULL;
    void *owned = NULL;
    r->kernel_count = TANDEM_KERNEL_COUNT;
    r->fatbin_load_status = tandem_fatbin_load(&bin, &r->fatbin_bytes, &owned);
    if (r->fatbin_load_status != TANDEM_OK) {
        COPY_ERROR(r->fatbin_error);
        r->problems = 1;
        return 0;
    }
    int have = 0;
    r->fatbin_parse_status = tandem_fatbin_parse(bin, r->fatbin_bytes, sum);
    if (r->fatbin_parse_status != TANDEM_OK) {
        COPY_ERROR(r->fatbin_error);
        r->problems = 1;
    } else if (sum->image_count > 0) {
        r->fatbin_images = sum->image_count;
        tandem_fatbin_arch_string(sum, r->fatbin_archs, sizeof r->fatbin_archs);
        r->fatbin_entries = sum->entry_count;
        r->fatbin_toolkit = sum->toolkit_version;
        for (int i = 0; i < sum->image_count; i++)
            if (sum->images[i].kind == TANDEM_FATBIN_PTX) {
                int isa = sum->images[i].version_major * 10 + sum->images[i].version_minor;
                if (isa > r->fatbin_ptx_isa) r->fatbin_ptx_isa = isa;
            }
        r->driver_floor = tandem_fatbin_driver_floor(sum);
        snprintf(r->driver_branch, sizeof r->driver_branch, "%s", tandem_cuda_driver_branch(r->driver_floor));
        missing_kernels(sum, r);
        have = 1;
    }
    tandem_free(owned);
    return have;
}

/* The image a device of cc major.minor would load: the newest SASS of its major with a minor
 * <= its own, else the newest PTX <= its cc. */
static void image_for(const tandem_fatbin_summary *s, tandem_system_cuda_device *d) {
    const int major = d->info.cc_major, minor = d->info.cc_minor, cc = major * 10 + minor;
    int best_sass = -1, best_ptx = -1;
    for (int i = 0; i < s->image_count; i++) {
        const tandem_fatbin_image *im = &s->images[i];
        if (im->kind == TANDEM_FATBIN_SASS && im->arch / 10 == major && im->arch % 10 <= minor &&
            im->arch > best_sass)
            best_sass = im->arch;
        if (im->kind == TANDEM_FATBIN_PTX && im->arch <= cc && im->arch > best_ptx) best_ptx = im->arch;
    }
    d->fatbin_runs = best_sass >= 0 || best_ptx >= 0;
    d->fatbin_ptx = best_sass < 0 && best_ptx >= 0;
    d->fatbin_arch = best_sass >= 0 ? best_sass : best_ptx >= 0 ? best_ptx : 0;
}

static void query_devices(const tandem_fatbin_summary *sum, int have_fatbin, tandem_system_report *r) {
    for (int i = 0; i < r->cuda_listed; i++) {
        tandem_system_cuda_device *d = &r->cuda[i];
        d->query_status = tandem_cuda_query(i, &d->info);
        if (d->query_status != TANDEM_OK) {
            COPY_ERROR(d->query_error);
            r->problems = 1;
            continue;
        }
        if (have_fatbin) image_for(sum, d);
        tandem_device *dev = NULL;
        d->open_status = tandem_cuda_device_open(i, &dev);
        if (d->open_status == TANDEM_OK) {
            tandem_device_close(dev);
        } else {
            COPY_ERROR(d->open_error);
            r->problems = 1;
        }
    }
    if (r->cuda_count < 2) return;
    for (int a = 0; a < r->cuda_listed; a++)
        for (int b = 0; b < r->cuda_listed; b++) {
            if (a == b) continue;
            tandem_system_peer *p = &r->peer[a][b];
            p->status = tandem_cuda_query_peer(a, b, &p->can_access);
            if (p->status != TANDEM_OK) {
                COPY_ERROR(p->error);
                r->problems = 1;
            }
        }
}

tandem_status tandem_system_nvml_read(int cuda_ordinal, tandem_system_nvml_reading *n) {
    if (!n) return tandem_fail(TANDEM_E_INVALID, "tandem_system_nvml_read: NULL argument");
    memset(n, 0, sizeof *n);
    tandem_status st = tandem_nvml_open();
    if (st == TANDEM_OK) {
        snprintf(n->pci_bus_id, sizeof n->pci_bus_id, "%s", tandem_nvml_bus_id(cuda_ordinal));
        tandem_nvml_sample_t s;
        memset(&s, 0, sizeof s);
        st = tandem_nvml_sample(cuda_ordinal, &s);
        n->have = s.have;
        n->gpu_util_pct = s.gpu_util_pct;
        n->mem_util_pct = s.mem_util_pct;
        n->mem_used_bytes = s.mem_used_bytes;
        n->mem_total_bytes = s.mem_total_bytes;
        n->power_w = s.power_w;
        n->sm_clock_mhz = s.sm_clock_mhz;
        n->mem_clock_mhz = s.mem_clock_mhz;
        n->temperature_c = s.temperature_c;
    }
    n->status = st;
    if (st != TANDEM_OK) {
        n->have = 0;
        COPY_ERROR(n->error);
    }
    return st;
}

static void nvml_reading(int i, tandem_system_cuda_device *d, tandem_system_report *r) {
    if (tandem_system_nvml_read(i, &d->nvml) == TANDEM_E_DEVICE) r->problems = 1;
}

/* NVML: found or why not; one reading per listed CUDA device (none without a driver). */
static void query_nvml(tandem_system_report *r) {
    r->nvml_status = tandem_nvml_open();
    snprintf(r->nvml_info, sizeof r->nvml_info, "%s", tandem_nvml_describe());
    if (r->nvml_status != TANDEM_OK) {
        if (r->nvml_status == TANDEM_E_DEVICE) r->problems = 1;
        return;
    }
    const int n = r->driver_status == TANDEM_OK ? r->cuda_listed : 0;
    for (int i = 0; i < n; i++) nvml_reading(i, &r->cuda[i], r);
}

static void query_host(tandem_system_report *r) {
    tandem_device *host = NULL;
    r->host_status = tandem_host_device_count(&r->host_devices);
    if (r->host_status == TANDEM_OK) r->host_status = tandem_device_open(TANDEM_BACKEND_HOST, 0, &host);
    if (r->host_status != TANDEM_OK) {
        COPY_ERROR(r->host_error);
        r->problems = 1;
        return;
    }
    tandem_device_get_info(host, &r->host);
    r->host_threads = tandem_host_device_threads(host);
    snprintf(r->host_gemm, sizeof r->host_gemm, "%s", tandem_host_gemm_impl());
    r->blas_threads = tandem_host_blas_threads();
    snprintf(r->blas_core, sizeof r->blas_core, "%s", tandem_host_blas_core());
    snprintf(r->blas_hint, sizeof r->blas_hint, "%s", tandem_host_blas_hint());
    tandem_device_close(host);
}

tandem_status tandem_system_query(tandem_system_report *out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_system_query: out is NULL");
    memset(out, 0, sizeof *out);
    tandem_fatbin_summary *sum = tandem_malloc(sizeof *sum); /* ~25 KiB: not on the stack */
    if (!sum) return tandem_fail(TANDEM_E_NOMEM, "tandem_system_query: out of memory");
    query_driver(out);
    const int have_fatbin = query_fatbin(sum, out);
    if (out->driver_status == TANDEM_OK) query_devices(sum, have_fatbin, out);
    tandem_free(sum);
    out->cublaslt = tandem_cuda_have_cublaslt(out->cublaslt_info, sizeof out->cublaslt_info);
    query_nvml(out);
    query_host(out);
    return TANDEM_OK;
}
