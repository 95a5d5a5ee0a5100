/* capacity.h — the data side's capacity against the model's consumption (what `tandem pipeline`
 * and `tandem validate` print): utterances/s and audio-seconds/s per CPU core and in total, per
 * device, the headroom over the model's samples/s (measured when the caller has a measured step,
 * else the step cost model's, labelled "modelled"), and what to do when the data side is the limit.
 *
 * The model of the data side: each utterance costs the CPU its read + decode + CPU resample time
 * (one core, from the loader's stage totals) and the data device its share of the device's busy
 * time. Loader threads run on min(threads, cores) cores; the data device works beside them:
 * capacity = min(CPU, device). A host data device runs its kernels on the same cores, so both
 * figures are measured while sharing them (its busy time already carries the contention; adding
 * the two instead under-predicted a run's delivered rate by 16 %, min() by 8 %).
 */
#ifndef TANDEM_RUNTIME_RUN_CAPACITY_H
#define TANDEM_RUNTIME_RUN_CAPACITY_H

#include <stddef.h>

#include "runtime/core/config.h"
#include "runtime/data/pipeline.h"
#include "tandem.h"

typedef struct tandem_capacity {
    int cores, threads;          /* CPU cores; loader threads */
    int host_device;             /* 1: the data device is a host device (shares the cores) */
    double cpu_ms_per_utt;       /* read + decode + CPU resample per file, one core */
    double dev_ms_per_utt;       /* data-device busy per utterance; < 0: not measured */
    double dev_resample_pct;     /* of the data device's busy time, the resampling kernel */
    double cpu_resample_pct;     /* of the CPU time per utterance, libsamplerate */
    double utt_seconds;          /* mean audio per utterance */
    double cpu_utt_s, dev_utt_s, utt_s; /* capacities; dev_utt_s < 0: not measured */
    double measured_utt_s;       /* what the run delivered; < 0: no run */
    double model_samples_s;      /* the model's consumption; <= 0: unknown */
    char model_source[160];      /* "modelled on an h100 by the step cost model (...)" / "measured" */
} tandem_capacity;

/* From a data run's statistics (a run of batches of `batch`, `threads` loader threads). */
void tandem_capacity_from_stats(const tandem_pipeline_stats *s, int batch, int threads, int host_device,
                                tandem_capacity *c);
/* From CPU figures alone (validate's probe): files decoded in cpu_ms at seconds of audio. */
void tandem_capacity_from_cpu(double cpu_ms, double cpu_resample_ms, int files, double seconds, int threads,
                              tandem_capacity *c);
/* The model's side: measured_samples_s > 0 is a measured step; else cfg's step priced by the step
 * cost model (tandem_cost_estimate_step), or unknown when it cannot price cfg. */
void tandem_capacity_model(tandem_capacity *c, const tandem_config *cfg, double measured_samples_s);
/* utt_s / model_samples_s; 0 when the model's side is unknown. */
double tandem_capacity_headroom(const tandem_capacity *c);
/* The report, lines indented by two spaces; snprintf contract. */
size_t tandem_capacity_format(const tandem_capacity *c, char *buf, size_t cap);

#endif
