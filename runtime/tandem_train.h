/* tandem_train.h — training the acoustic model, and the memory plan of a training run (part of
 * tandem.h; include tandem.h). docs/API.md walks through an example; docs/TRAINING.md describes
 * the run's outputs.
 *
 * A trainer owns the two devices (data and model: DESIGN.md §3), their arenas, the data pipeline
 * (loader threads and the data-device thread), the model, the validation pipeline when the config
 * names val_data, the checkpoint writer, metrics.jsonl and the figures. Everything is allocated in
 * create; run allocates nothing. The library prints nothing: each step's numbers reach the caller
 * through the on_step callback (the `tandem train` progress line is drawn from it), and
 * everything else through the log hook.
 *
 * Output in the config's `out` directory: metrics.jsonl (one JSON object per logged step),
 * ckpt-<step>.safetensors (read them with tandem_checkpoint.h), loss.png and mel.png. The
 * directory is locked for the trainer's life (a second trainer on it fails naming the holder's
 * pid); a fresh run refuses a non-empty one unless options.new_run (docs/TRAINING.md).
 *
 * Threads: create, run and destroy on one thread (the loop and the callback run on the thread
 * that calls run); tandem_trainer_request_stop from any thread or a signal handler.
 * Errors: every call returns a tandem_status with its message in tandem_last_error() on the
 * calling thread: TANDEM_E_INVALID for a config or data the caller can fix (no usable utterance,
 * a non-finite run longer than max_nonfinite), TANDEM_E_BUDGET for a plan over an arena budget,
 * TANDEM_E_FORMAT for a corrupt checkpoint or cache, TANDEM_E_IO / _DEVICE / _NOMEM otherwise.
 */
/* tandem.h first, outside the guard: it includes every public header in order, this one too */
#include "tandem.h"

#ifndef TANDEM_TRAIN_PUBLIC_H
#define TANDEM_TRAIN_PUBLIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- training -------------------------------------------------------------------------------- */

typedef struct tandem_trainer tandem_trainer;

/* One optimizer step as measured (DESIGN.md §8). Times are wall-clock milliseconds; rates are
 * over this step alone. Fields that metrics.jsonl carries have its names (docs/TRAINING.md). */
typedef struct tandem_step_metrics {
    int64_t step;          /* optimizer steps done, this one included (1-based, as metrics.jsonl) */
    int64_t total_steps;   /* the config's max_steps */
    double loss;           /* l1 + stop_loss_weight * stop_bce + ga_weight * ga, mean over the
                              micro-batches */
    double l1, stop_bce;   /* masked mel L1; stop-token BCE */
    double ga;             /* guided-attention loss (docs/TRAINING.md; 0 when ga_weight is 0) */
    double lr;             /* learning rate this step used */
    double grad_norm;      /* global gradient norm before clipping */
    int skipped;           /* 1: non-finite loss or gradient, the update was not applied */
    double step_ms;        /* the whole step, waits for data included */
    double data_wait_ms;   /* time the model device waited for its batches */
    double model_busy_pct; /* model-device work / step time (device events on CUDA) */
    double data_busy_pct;  /* data-device work / wall time since the run started */
    double ring_occupancy; /* ready ring slots, time-weighted mean since the run started */
    int ring_slots;        /* prefetch_buffer_size */
    double samples_per_s;  /* utterances trained per second */
    double x_realtime;     /* seconds of audio trained per wall second */
    double step_cv;        /* coefficient of variation of step_ms over the last 50 steps */
    double val_l1, val_stop_bce; /* validation after this step; both < 0 when it did not validate */
    /* free-running evaluation at that validation (docs/TRAINING.md, "Free-running evaluation");
       all < 0 when it did not run (no validation this step, or no validation set) */
    double eval_stop_within;  /* fraction of the evaluated utterances whose stop fired within
                                 ±20 % of the true length */
    double eval_len_ratio;    /* median generated / true length */
    double eval_dtw_l1;       /* mean DTW-aligned L1 of the generated against the true mel */
    double eval_text_dep;     /* teacher-forced L1 with shuffled texts / with the right texts */
    double eval_ms;           /* wall time of the evaluation */
    double eta_s;          /* estimated seconds to max_steps; < 0 when unknown */
    int logged;            /* 1: this step wrote a metrics.jsonl line */
} tandem_step_metrics;

/* Called after every step, on the thread that runs the loop, after the step's metrics line and
 * validation and before its checkpoint. On a CUDA model device the step's scalars are read back
 * only on the steps that need them (logged, validated, checkpointed, the first and the last of
 * the run: docs/TRAINING.md, "Graph mode"); on the other steps loss, l1, stop_bce, ga,
 * grad_norm repeat the last values read, skipped is 0 and model_busy_pct is -1. It must not call back into this trainer except
 * tandem_trainer_request_stop; the time it takes counts in the next step's numbers. */
typedef void (*tandem_step_fn)(void *user, const tandem_step_metrics *m);

typedef struct tandem_trainer_options {
    tandem_backend backend;  /* AUTO (default): CUDA when a driver reports devices, else two host
                                devices; the config's data_gpu / model_gpu pick CUDA ordinals */
    const char *resume_dir;  /* NULL (default): a fresh run; else continue from the newest valid
                                checkpoint in this directory (parameters, optimizer state, step,
                                sampler position: the same batches as an uninterrupted run) */
    int64_t run_steps;       /* > 0: stop (and checkpoint) after this many steps of this run,
                                leaving max_steps and the schedule alone; 0 (default): no limit */
    tandem_step_fn on_step;  /* NULL (default): no callback */
    void *on_step_user;      /* handed to on_step */
    const char *cache_dir;   /* directory of the text cache; NULL (default): the index's default */
    int new_run;             /* 0 (default): a fresh run refuses a non-empty out directory; 1: start
                                a new run there, the previous run's files (checkpoints, metrics.jsonl,
                                figures) moved into out/previous-<n>/ (docs/TRAINING.md) */
    /* test hook: steps [nonfinite_from, nonfinite_from + nonfinite_count) (0-based) get NaN
       gradients before the update, as a diverging run would; default -1, 0 (off) */
    int64_t nonfinite_from, nonfinite_count;
} tandem_trainer_options;

/* Fill o with the defaults above. */
void tandem_trainer_options_init(tandem_trainer_options *o);

/* What a run did. Rates average the steps past the first two (warm-up). */
typedef struct tandem_trainer_summary {
    int64_t first_step, steps_run, last_step; /* step counter at the start and at the end */
    double loss_first, loss_last, l1_first, l1_last; /* of this run's first and last step */
    double val_l1_first, val_l1_last; /* < 0: never validated */
    double samples_per_s, data_wait_pct, model_busy_pct, data_busy_pct, step_cv;
    int64_t skipped;        /* non-finite steps skipped, over the whole training (resumes too) */
    char devices[512];      /* the device roles in words */
    char checkpoint[1100];  /* the last checkpoint written ("" when none) */
    int busy_from_events;   /* 1: model_busy_pct measured with device events */
    int64_t steps_measured; /* steps behind the rates above */
    int stopped_by_request; /* 1: tandem_trainer_request_stop ended the run */
} tandem_trainer_summary;

/* Build everything a run needs from cfg (train_data required; val_data optional; out is the run
 * directory, created) and o (NULL: the defaults): index the data (text cache), open the devices,
 * plan and commit both arenas, initialise or restore the parameters. The config is copied; o's
 * strings are read during create only. On failure *out = NULL and nothing is left to free. */
tandem_status tandem_trainer_create(const tandem_config *cfg, const tandem_trainer_options *o,
                                    tandem_trainer **out);
/* Train until max_steps, run_steps or a stop request, then write a checkpoint (unless the last
 * step wrote one) and fill *summary (may be NULL; filled on failure too, as far as the run got).
 * A stop request ends the run after the current step and returns TANDEM_OK. Call once. */
tandem_status tandem_trainer_run(tandem_trainer *t, tandem_trainer_summary *summary);
/* Async-signal-safe and thread-safe: the loop ends after the current step (before the first
 * one when run has not reached it), then run writes its checkpoint and returns. Bounded even when
 * a loader thread meets a stuck file: a step waiting for data notices the request within 50 ms
 * (that step is not counted), no loader read can block (runtime/data/loader.h, "Stopping"), so
 * run returns within the current step plus about a second (≤ 5 s, docs/TRAINING.md "Run
 * directory rules"). NULL is ignored. */
void tandem_trainer_request_stop(tandem_trainer *t);
/* Stop and join the threads, free everything create allocated; NULL is ignored. */
void tandem_trainer_destroy(tandem_trainer *t);

/* ---- memory plan ----------------------------------------------------------------------------- */

typedef struct tandem_plan_options {
    tandem_backend backend;  /* CUDA (default, 256-byte alignment) or HOST (64 bytes); AUTO plans
                                as CUDA. No device is opened either way. */
    const char *config_name; /* named in the first line ("plan for <name>: ..."); NULL: "config" */
} tandem_plan_options;

void tandem_plan_options_init(tandem_plan_options *o);

/* The memory plan of a training run of cfg without opening a device: every arena (data device:
 * the feature path; model device: the ring, parameters, optimizer state and activations) with its
 * report (bytes per class, peak, budget, largest tensors), the pinned host staging, and the total
 * for one GPU in both roles — the text `tandem plan` prints. Written into buf (NUL-terminated,
 * truncated to cap); *len (may be NULL) = the length it needs. An arena over its budget
 * (data_gpu_memory / model_gpu_memory) still gets the whole text and returns TANDEM_E_BUDGET, the
 * message naming each arena that does not fit (one per line); the pool also logs its report
 * through the hook. Other failures (TANDEM_E_INVALID for dimensions the model refuses) leave buf
 * "". Allocates while planning and frees it all before returning; any thread. */
tandem_status tandem_plan_report(const tandem_config *cfg, const tandem_plan_options *o, char *buf,
                                 size_t cap, size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* TANDEM_TRAIN_PUBLIC_H */
