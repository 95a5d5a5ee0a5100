/* nvml_fields.h — NVML readings of the training devices as fields of the current metrics.jsonl
 * line ("<role>_gpu_util_pct", "<role>_power_w", ...; docs/TRAINING.md). NVML is optional: when it
 * is missing, or a device stops answering, the fields are left out (said once through the log
 * hook) and the run goes on. Owns nothing (NVML itself is loaded once per process by
 * platform/cuda/nvml.c). One thread: the training loop's. */
#ifndef TANDEM_RUNTIME_RUN_NVML_FIELDS_H
#define TANDEM_RUNTIME_RUN_NVML_FIELDS_H

#include "runtime/report/metrics.h"
#include "tandem.h"

typedef struct tandem_nvml_fields {
    int on; /* NVML loaded and the model device is a CUDA device */
} tandem_nvml_fields;

/* Load NVML when the model device is a CUDA device (never fails: a missing NVML is logged at INFO). */
void tandem_nvml_fields_open(tandem_nvml_fields *n, const tandem_device *model_dev);
/* Add dev's readings as "<role>_..." fields of the line being built in m; fields the GPU cannot
 * report are left out. A device lost mid-run turns NVML off with one warning. */
void tandem_nvml_fields_add(tandem_nvml_fields *n, tandem_metrics *m, const char *role,
                            const tandem_device *dev);

/* dev's NVML GPU utilisation %, or -1 (NVML off, a host device, no reading). */
int tandem_nvml_fields_util(const tandem_nvml_fields *n, const tandem_device *dev);

#endif
