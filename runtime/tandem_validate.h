/* tandem_validate.h — checking a training setup before training (part of tandem.h; include
 * tandem.h): what `tandem validate` prints. Given a config (loaded and checked: its keys and
 * values are valid by then), it looks at
 *   - the config as a whole: settings that are legal but probably not meant (no validation set,
 *     warm-up longer than the run, ...);
 *   - the dataset: the index (rows, usable utterances, rows and audio left out by reason, the
 *     text cache) and a probe of a sample of the audio files (each decoded: readable, its rate,
 *     its duration against max_frames);
 *   - the memory plan (the arenas a run commits, `tandem plan`) against the budgets and against
 *     the memory of the devices the run would use (on two host devices: the machine's physical
 *     RAM; a plan larger is an error naming both sizes, planned only, never allocated);
 *   - the devices: the CUDA driver, whether the fatbin has code for each device and the driver
 *     is new enough for it (what `tandem diagnose` checks), bf16 support for precision bf16;
 *   - the expected throughput from the step cost model (tandem_cost.h: one step recorded on a dry
 *     device, priced on an H100's published peaks; a model, not a measurement), and the data side's
 *     CPU capacity from the probe's decode times against it (the data device is measured by
 *     `tandem pipeline`).
 * Each finding has a level, the area, what was found and what to change.
 *
 * Threads: any; calls may run at once on different reports. Allocation: while it runs (the index,
 * the plan, one decode buffer, the system report); nothing is kept. Errors: the call fails only
 * for NULL arguments or out of memory; everything else it finds is a finding.
 */
/* tandem.h first, outside the guard: it includes every public header in order, this one too */
#include "tandem.h"

#ifndef TANDEM_VALIDATE_PUBLIC_H
#define TANDEM_VALIDATE_PUBLIC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tandem_finding_level {
    TANDEM_FINDING_INFO = 0,
    TANDEM_FINDING_WARN,   /* legal, but probably not what was meant, or costs speed */
    TANDEM_FINDING_ERROR,  /* training would fail or could not start */
} tandem_finding_level;

typedef struct tandem_finding {
    tandem_finding_level level;
    char area[16];         /* "config", "data", "audio", "plan", "device", "speed" */
    char what[512];        /* what was found */
    char fix[320];         /* what to change ("" when nothing needs to) */
} tandem_finding;

#define TANDEM_VALIDATE_MAX_FINDINGS 48

typedef struct tandem_validate_options {
    tandem_backend backend;  /* AUTO (default): the devices a run would use; HOST: skip CUDA */
    const char *cache_dir;   /* text cache; NULL (default): the runtime option's */
    int probe_files;         /* audio files decoded, spread over the index (default 16; 0: none) */
} tandem_validate_options;
void tandem_validate_options_init(tandem_validate_options *o);

typedef struct tandem_validate_report {
    int n;                   /* findings in f (in the order found; beyond the maximum, dropped) */
    int infos, warnings, errors; /* counts (all, also dropped ones) */
    tandem_finding f[TANDEM_VALIDATE_MAX_FINDINGS];
    tandem_trainer_startup data; /* the dataset fields (rows .. cache_path) of the training set */
    int data_indexed;        /* 1: the fields above are valid */
    int probed, probe_failed, probe_resampled; /* audio files decoded, failed, not at 22050 Hz */
    double probe_cpu_ms, probe_resample_ms, probe_seconds; /* the probe's decoding as a loader thread
                                does it (libsamplerate only for rates the data device does not
                                resample): CPU time, of it resampling, audio decoded */
    double data_arena_mib, model_arena_mib; /* the plan (0 when it failed) */
} tandem_validate_report;

/* Check cfg (and its train_data / val_data) as above into *r. TANDEM_OK whenever the report was
 * made; the exit rule of `tandem validate`: errors > 0 → 2, warnings > 0 → 1, else 0. */
tandem_status tandem_validate(const tandem_config *cfg, const tandem_validate_options *o,
                              tandem_validate_report *r);

#ifdef __cplusplus
}
#endif
#endif /* TANDEM_VALIDATE_PUBLIC_H */
