/* trainer.h — the training loop (DESIGN.md §7, §8): data pipeline → model steps → metrics,
 * validation and checkpoints. The API is public (runtime/tandem_train.h: options, per-step
 * metrics, summary, create / run / request_stop / destroy); this header adds what the runtime's
 * own tests see (the figures' state). The loop's parts live beside it: device roles
 * (runtime/data/roles.h), the checkpoint table and resume (run_ckpt.h), step measurement
 * (step_timer.h), NVML fields (nvml_fields.h), validation (validation.h).
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
 * in a row is an error (the step that reaches it still goes to on_step, then run fails).
 * Progress: every step's numbers go to the on_step callback (tandem_step_metrics) after its
 * metrics line and validation, before its checkpoint; the library prints nothing.
 * Read-back: the step's scalars (losses, gradient norm, skip flag) are read back every step,
 * not only on logged steps: AdamW's bias correction uses the count of applied updates, which
 * depends on whether the previous step was skipped, and max_nonfinite stops on a run of
 * skipped steps; moving both onto the device would change the AdamW kernel and train_step.
 * The read-back is also the step's one synchronisation, which the event timings rely on.
 * Owns: devices, pools, pipelines (train and optional validation), model, checkpoint writer,
 * metrics file, figures; everything allocated in create, nothing in run's loop. create either
 * returns a whole trainer or frees what it built.
 */
#ifndef TANDEM_RUNTIME_TRAINER_H
#define TANDEM_RUNTIME_TRAINER_H

#include "runtime/report/figures.h"
#include "tandem.h"

/* For runtime/run/replicas.c (several model devices in one process):
 *   create_replica  one replica, options' world_size / rank saying which, on the CUDA ordinals
 *                   given (the config, which its checkpoints keep, is the group's); join_later:
 *                   its collective is opened by join_local once every replica is built
 *   join_local      the n replicas' communicators and the parameters' broadcast (dp.h)
 *   run_replica / stop_replica  one replica's loop / stop request (the public ones go to the group)
 *   leave_group     after its run failed, from its own thread: abort its communicator
 *   set_group       replica 0 owns the group; desc: the devices line of all replicas */
typedef struct tandem_replicas tandem_replicas;
tandem_status tandem_trainer_create_replica(const tandem_config *cfg, const tandem_trainer_options *o,
                                            int join_later, int data_gpu, int model_gpu, tandem_trainer **out);
tandem_status tandem_trainer_join_local(tandem_trainer *const *ts, int n);
tandem_status tandem_trainer_run_replica(tandem_trainer *t, tandem_trainer_summary *sum);
void tandem_trainer_stop_replica(tandem_trainer *t);
void tandem_trainer_leave_group(tandem_trainer *t);
void tandem_trainer_set_group(tandem_trainer *t, tandem_replicas *g, const char *desc);

/* The figures' state (loss history, last mel), for tests. */
const tandem_figures *tandem_trainer_figures(const tandem_trainer *t);

#endif
