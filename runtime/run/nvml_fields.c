/* nvml_fields.c — NVML readings in metrics.jsonl (see nvml_fields.h). */
#include "runtime/run/nvml_fields.h"

#include <stdio.h>

#include "platform/cuda/nvml.h"
#include "platform/device.h"
#include "platform/os/log.h"

void tandem_nvml_fields_open(tandem_nvml_fields *n, const tandem_device *model_dev) {
    n->on = 0;
    if (model_dev->info.backend != TANDEM_BACKEND_CUDA) return;
    n->on = tandem_nvml_open() == TANDEM_OK;
    if (!n->on)
        tandem_logf(TANDEM_LOG_INFO, "NVML: %s; utilisation/power/clocks left out of metrics.jsonl",
                    tandem_nvml_describe());
}

void tandem_nvml_fields_add(tandem_nvml_fields *n, tandem_metrics *m, const char *role,
                            const tandem_device *dev) {
    tandem_nvml_sample_t s;
    if (!n->on || dev->info.backend != TANDEM_BACKEND_CUDA) return;
    tandem_status st = tandem_nvml_sample(dev->info.ordinal, &s);
    if (st == TANDEM_E_DEVICE) {
        tandem_logf(TANDEM_LOG_WARN, "NVML: %s; no more NVML fields in metrics.jsonl", tandem_last_error());
        n->on = 0;
    }
    if (st != TANDEM_OK) return;
    char key[48];
#define NVML_FIELD(bit, name, value)                                                      \
    if (s.have & (bit)) {                                                                 \
        snprintf(key, sizeof key, "%s_%s", role, name);                                   \
        tandem_metrics_set(m, key, (double)(value));                                      \
    }
    NVML_FIELD(TANDEM_NVML_HAVE_UTIL, "gpu_util_pct", s.gpu_util_pct)
    NVML_FIELD(TANDEM_NVML_HAVE_UTIL, "mem_util_pct", s.mem_util_pct)
    NVML_FIELD(TANDEM_NVML_HAVE_MEMORY, "mem_used_mib", s.mem_used_bytes / 1048576.0)
    NVML_FIELD(TANDEM_NVML_HAVE_MEMORY, "mem_total_mib", s.mem_total_bytes / 1048576.0)
    NVML_FIELD(TANDEM_NVML_HAVE_POWER, "power_w", s.power_w)
    NVML_FIELD(TANDEM_NVML_HAVE_SM_CLOCK, "sm_mhz", s.sm_clock_mhz)
    NVML_FIELD(TANDEM_NVML_HAVE_MEM_CLOCK, "mem_mhz", s.mem_clock_mhz)
    NVML_FIELD(TANDEM_NVML_HAVE_TEMPERATURE, "temp_c", s.temperature_c)
#undef NVML_FIELD
}

int tandem_nvml_fields_util(const tandem_nvml_fields *n, const tandem_device *dev) {
    tandem_nvml_sample_t s;
    if (!n->on || dev->info.backend != TANDEM_BACKEND_CUDA) return -1;
    if (tandem_nvml_sample(dev->info.ordinal, &s) != TANDEM_OK || !(s.have & TANDEM_NVML_HAVE_UTIL)) return -1;
    return (int)s.gpu_util_pct;
}
