/* trainer.h — the training loop (DESIGN.md §7, §8): data pipeline → model steps → metrics,
 * validation and checkpoints.
 *
 * Per step: grad_accum micro-batches are acquired from the ring (the model stream waits for
 * each slot), their lengths read back (B ints each: the key mask and loss normalisers are
 * built on the host), forward + backward queued, the slot released; then the update
 * (train_step.h). Measured per step: step time, data wait (acquire + length read-back, the time
 * the model side spent waiting for input), model-device busy % = (step - wait) / step (host
 * clocks; the step ends with a synchronisation), data-device busy % (pipeline events), samples/s,
 * × real time, and the step-time coefficient of variation over the last 50 steps.
 *
 * Output in cfg.out: metrics.jsonl (one object per logged step: step, loss, l1, stop_bce, lr,
 * grad_norm, step_ms, data_wait_ms, model_busy_pct, data_busy_pct, samples_per_s, x_realtime,
 * step_cv, skipped, and val_l1 / val_stop_bce when validated), ckpt-<step>.safetensors (every
 * parameter under its table name, AdamW moments as adam_m.<name> / adam_v.<name>, metadata:
 * config, step, updates, skipped, sampler position, symbols). Resume: the newest valid
 * checkpoint of the resume directory restores parameters, moments, step counters and the
 * sampler position.
 *
 * Stop: tandem_trainer_request_stop (async-signal-safe) ends the loop after the current step;
 * a checkpoint is written and run returns TANDEM_OK. Non-finite steps are skipped; max_nonfinite
 * in a row is an error.
 * Owns: devices, pools, pipelines (train and optional validation), model, checkpoint writer,
 * metrics file; everything allocated in create, nothing in run's loop.
 */
#ifndef TANDEM_RUNTIME_TRAINER_H
#define TANDEM_RUNTIME_TRAINER_H

#include <stdint.h>

#include "config.h"
#include "tandem.h"

typedef struct tandem_trainer tandem_trainer;

typedef struct tandem_trainer_options {
    const tandem_config *cfg;   /* train_data required; val_data optional; out = run directory */
    tandem_backend backend;     /* AUTO: cuda when present, else two host devices */
    const char *resume_dir;     /* NULL: fresh start */
    int quiet;                  /* no progress output */
} tandem_trainer_options;

typedef struct tandem_trainer_summary {
    int64_t first_step, steps_run, last_step;
    double loss_first, loss_last, l1_first, l1_last;
    double val_l1_first, val_l1_last; /* < 0: never validated */
    double samples_per_s, data_wait_pct, model_busy_pct, data_busy_pct, step_cv;
    int64_t skipped;
    char devices[512];
    char checkpoint[1100]; /* last checkpoint written */
    int stopped_by_request;
} tandem_trainer_summary;

tandem_status tandem_trainer_create(const tandem_trainer_options *o, tandem_trainer **out);
/* Train until max_steps or a stop request. */
tandem_status tandem_trainer_run(tandem_trainer *t, tandem_trainer_summary *summary);
void tandem_trainer_destroy(tandem_trainer *t);
/* Async-signal-safe: finish the current step, checkpoint, return. */
void tandem_trainer_request_stop(tandem_trainer *t);

#endif
