/* trainer.h — the training loop (DESIGN.md §7, §8): data pipeline → model steps → metrics,
 * validation and checkpoints.
 *
 * Per step: grad_accum micro-batches are acquired from the ring (the model stream waits for
 * each slot), forward + backward queued on the slot's tensors (the key mask and the loss
 * normalisers are built on the device from the slot's lengths: no device→host read), the slot
 * released; then the update (train_step.h), whose scalar read-back is the step's only
 * synchronisation. Measured per step: step time, data wait (time blocked in acquire), model-device
 * busy % = the step's device work / step time — from device events around each micro-batch's
 * and the update's work on a CUDA model device (the stream's waits for ring slots are outside
 * them), from host clocks ((step - wait) / step) on a host device, whose work runs in the
 * calling thread — data-device busy % (pipeline events), samples/s, × real time, and the
 * step-time coefficient of variation over the last 50 steps.
 *
 * Devices: data_gpu / model_gpu (CUDA ordinals, -1 = automatic: DESIGN.md §3) pick the roles;
 * the same ordinal for both is one device in both roles. On the host backend they are ignored
 * (two host devices). Validation uses a fixed subset of the held-out set: its first
 * val_batches * batch_size utterances in index order (fewer when the set is smaller), visited
 * in the same order at every validation.
 *
 * Output in cfg.out: metrics.jsonl (one object per logged step: step, loss, l1, stop_bce, lr,
 * grad_norm, step_ms, data_wait_ms, model_busy_pct, data_busy_pct, samples_per_s, x_realtime,
 * step_cv, skipped, and val_l1 / val_stop_bce when validated; a fresh run with validation
 * also writes a step-0 line with only val_l1 / val_stop_bce, the initial parameters' values), ckpt-<step>.safetensors (every
 * parameter under its table name, AdamW moments as adam_m.<name> / adam_v.<name>, metadata:
 * config, step, updates, skipped, skipped_in_row, rng_state, sampler position, symbols),
 * and, at every checkpoint (the final one included), the figures of runtime/report/figures.h,
 * replaced atomically (no per-checkpoint copies):
 *   loss.png — train loss and val_l1 of every logged step (the points of metrics.jsonl; a
 *     fixed-capacity history of TANDEM_FIGURES_HISTORY points per series made at create, which
 *     halves its resolution when full; on resume it continues from the resume directory's
 *     metrics.jsonl up to the checkpoint's step);
 *   mel.png — with a validation set: target vs teacher-forced prediction of the fixed
 *     subset's first utterance (row 0 of each validation's first batch), its real frames only,
 *     as of the latest validation (so a checkpoint between validations shows the prediction
 *     of the last one; a resumed run draws it from its first validation on). Writing a figure
 *     allocates nothing; a failed write is a warning, not an error.
 * Resume: the newest valid checkpoint of the resume directory restores parameters, moments,
 * step counters and the sampler position of the next utterance the model consumes (not the
 * one the loader had prefetched up to), so a resumed run sees the same batches in the same
 * order as an uninterrupted one: on the host backend its losses are bit-identical.
 *
 * Stop: tandem_trainer_request_stop (async-signal-safe) ends the loop after the current step;
 * a checkpoint is written and run returns TANDEM_OK. Non-finite steps are skipped; max_nonfinite
 * in a row is an error.
 * Read-back: the step's scalars (losses, gradient norm, skip flag) are read back every step,
 * not only on logged steps: AdamW's bias correction uses the count of applied updates, which
 * depends on whether the previous step was skipped, and max_nonfinite stops on a run of
 * skipped steps; moving both onto the device would change the AdamW kernel and train_step.
 * The read-back is also the step's one synchronisation, which the event timings rely on.
 * Owns: devices, pools, pipelines (train and optional validation), model, checkpoint writer,
 * metrics file, figures; everything allocated in create, nothing in run's loop.
 */
#ifndef TANDEM_RUNTIME_TRAINER_H
#define TANDEM_RUNTIME_TRAINER_H

#include <stdint.h>

#include "runtime/core/config.h"
#include "runtime/report/figures.h"
#include "tandem.h"
#include "runtime/model/train_step.h"

typedef struct tandem_trainer tandem_trainer;

typedef struct tandem_trainer_options {
    const tandem_config *cfg;   /* train_data required; val_data optional; out = run directory */
    tandem_backend backend;     /* AUTO: cuda when present, else two host devices */
    const char *resume_dir;     /* NULL: fresh start */
    int quiet;                  /* no progress output */
    int64_t run_steps;          /* > 0: stop (and checkpoint) after this many steps of this run,
                                   leaving the schedule (max_steps) as it is; 0: no limit */
    /* test hook: steps [nonfinite_from, nonfinite_from + nonfinite_count) get NaN gradients
       (written over the gradients before the update), as a diverging run would */
    int64_t nonfinite_from, nonfinite_count;
    /* optional: called after every step with its result (loss, skipped, ...), on the thread
       that runs the loop; for embedding programs and tests */
    void (*on_step)(void *ctx, const tandem_step_result *r);
    void *on_step_ctx;
} tandem_trainer_options;

typedef struct tandem_trainer_summary {
    int64_t first_step, steps_run, last_step;
    double loss_first, loss_last, l1_first, l1_last;
    double val_l1_first, val_l1_last; /* < 0: never validated */
    double samples_per_s, data_wait_pct, model_busy_pct, data_busy_pct, step_cv;
    int64_t skipped;
    char devices[512];
    char checkpoint[1100]; /* last checkpoint written */
    int busy_from_events;  /* 1: model_busy_pct measured with device events */
    int64_t steps_measured; /* steps behind the rates above (the first 2 are warm-up, left out) */
    int stopped_by_request;
} tandem_trainer_summary;

tandem_status tandem_trainer_create(const tandem_trainer_options *o, tandem_trainer **out);
/* Train until max_steps or a stop request. */
tandem_status tandem_trainer_run(tandem_trainer *t, tandem_trainer_summary *summary);
void tandem_trainer_destroy(tandem_trainer *t);
/* Async-signal-safe: finish the current step, checkpoint, return. */
void tandem_trainer_request_stop(tandem_trainer *t);
/* The figures' state (loss history, last mel), for embedding programs and tests. */
const tandem_figures *tandem_trainer_figures(const tandem_trainer *t);

#endif
