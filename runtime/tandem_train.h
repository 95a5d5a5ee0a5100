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

/* ---- where the time goes: the verdict (docs/TRAINING.md "Verdicts") ---------------------------- */

typedef enum tandem_bound {
    TANDEM_BOUND_UNKNOWN = 0, /* no step measured yet */
    TANDEM_BOUND_INPUT,       /* the model device waits for data: median data wait > 2 % of step */
    TANDEM_BOUND_LAUNCH,      /* the model device waits for the host: median model busy (host
                                 launch time counted as idle) below 50 % of the step */
    TANDEM_BOUND_DEVICE,      /* neither: the model device's own work sets the pace */
} tandem_bound;

#define TANDEM_VERDICT_INPUT_WAIT_PCT 2.0   /* input-bound above this data wait, % of step */
#define TANDEM_VERDICT_LAUNCH_BUSY_PCT 50.0 /* launch-/host-bound below this model busy % */
#define TANDEM_VERDICT_WINDOW 256           /* the medians are over at most this many steps */

typedef struct tandem_verdict {
    tandem_bound bound;
    int steps;                   /* steps behind the medians */
    double step_ms;              /* median step time */
    double data_wait_ms;         /* median data wait (device-side on CUDA) */
    double data_wait_device_ms;  /* median of its part the model stream stalled on the copies */
    double wait_pct;             /* data_wait_ms / step_ms, % */
    double model_busy_pct;       /* median model busy %, host launch time counted as idle */
    double model_occupied_pct;   /* median share of the step inside the step's work regions */
    double data_busy_pct;        /* data device, latest */
    char why[320];               /* the rule that fired, with its numbers */
    char advice[320];            /* one recommendation (loader threads, ring depth, batch size,
                                    precision, CUDA graphs) */
} tandem_verdict;

/* What the rules read besides the per-step medians. */
typedef struct tandem_verdict_context {
    int cuda;          /* 1: the model device is a CUDA device (launch-bound applies) */
    int num_workers;   /* config (0 = one per core) */
    int ring_slots;    /* prefetch_buffer_size */
    int batch_size;
    int bf16;          /* precision bf16 */
    int graphs;        /* 1: the step replays as one CUDA graph (cuda_graphs and a supported device) */
    double data_busy_pct, ring_occupancy, step_cv;
} tandem_verdict_context;

/* "input-bound", "launch-/host-bound", "device-bound", "unknown". */
const char *tandem_bound_name(tandem_bound b);
/* The verdict over n steps' figures (arrays of n; the last TANDEM_VERDICT_WINDOW are used) by the
 * rules above; n = 0 gives TANDEM_BOUND_UNKNOWN. Allocation-free; any thread. */
void tandem_verdict_compute(const double *step_ms, const double *data_wait_ms, const double *data_wait_device_ms,
                            const double *busy_pct, const double *occupied_pct, int n,
                            const tandem_verdict_context *ctx, tandem_verdict *out);

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
    double data_wait_ms;   /* time the model device waited for its batches (CUDA: device events
                              from the previous work's end to the batch's arrival on the stream) */
    double data_wait_device_ms; /* of it, the model stream stalled on the copies after the host
                              had queued its wait (CUDA; 0 on host devices) */
    double model_busy_pct; /* model-device work / step time, host launch time counted as idle
                              (device events on CUDA; host clocks: step minus data wait) */
    double model_occupied_pct; /* share of the step inside the step's work regions (launch gaps
                              inside them included); busy far below it: launch-/host-bound */
    double data_busy_pct;  /* data-device work / wall time since the run started */
    double ring_occupancy; /* ready ring slots, time-weighted mean since the run started */
    int ring_slots;        /* prefetch_buffer_size */
    double samples_per_s;  /* utterances trained per second */
    double x_realtime;     /* seconds of audio trained per wall second */
    double real_frames_pct; /* real mel frames / frames of the step's batch shapes, % (length
                              bucketing raises it; metrics.jsonl: over the lines' window) */
    int frames;            /* the shape class (mel frames) of the step's last micro-batch */
    double step_cv;        /* coefficient of variation of step_ms over the last 50 steps */
    double val_l1, val_stop_bce; /* validation after this step; both < 0 when it did not validate */
    /* free-running evaluation at that validation (docs/TRAINING.md, "Free-running evaluation");
       all < 0 when it did not run (no validation this step, or no validation set) */
    double eval_stop_within;  /* fraction of the evaluated utterances whose stop fired within
                                 ±20 % of the true length */
    double eval_len_ratio;    /* median generated / true length */
    double eval_dtw_l1;       /* mean DTW-aligned L1 of the generated against the true mel */
    double eval_text_dep;     /* teacher-forced L1 with shuffled texts / with the right texts */
    double eval_spec_var;     /* generated / true mean frame-to-frame change (drone ~0, speech ~1) */
    double eval_ident;        /* fraction whose nearest true mel (DTW) among the set is their own */
    double eval_ms;           /* wall time of the evaluation */
    double eta_s;          /* estimated seconds to max_steps; < 0 when unknown */
    int logged;            /* 1: this step wrote a metrics.jsonl line */
    tandem_verdict verdict; /* over this run's steps so far, past the first two (warm-up) */
    const char *model_device_name, *data_device_name; /* "CUDA 1", "host 0" (the trainer's) */
    int nvml;              /* 1: the NVML readings below are valid */
    int model_gpu_util_pct, data_gpu_util_pct; /* NVML utilisation (-1: none for that device) */
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
    int profile_ops;         /* > 0: time up to this many kernels/GEMMs of this run's last step
                                with events (`tandem profile`; tandem_trainer_op_times); 0 (default):
                                off */
    int force_resume;        /* 0 (default): a resume whose config changes a key that fixes the model's
                                shapes or the data order (d_model, layers, heads, reduction, max_text,
                                max_frames, batch_size, grad_accum, seed, shuffle, train_data, buckets) is
                                refused naming each key, old and new value; 1: go on (a warning each) */
    const char *init_from;   /* NULL (default); else a checkpoint file or run directory whose parameters
                                (only: not the moments, step or sampler) start this new run; tensors of
                                another shape keep their initialisation and are reported, sym_emb rows
                                are copied by symbol name (docs/TRAINING.md, "Fine-tuning") */
    const char *freeze;      /* NULL (default): none (a resume keeps the run's own); else comma-separated
                                parameter groups not trained — embeddings, prenet, blocks.N,
                                blocks.A-B, final_norm, heads, or a parameter-name prefix — whose
                                parameters and AdamW moments stay as they are ("" trains all) */
    /* test hook: steps [nonfinite_from, nonfinite_from + nonfinite_count) (0-based) get NaN
       gradients before the update, as a diverging run would; default -1, 0 (off) */
    int64_t nonfinite_from, nonfinite_count;
    /* data-parallel (docs/SCALING.md): this process is rank `rank` of `world_size` (<= 1, the
       default: alone). The caller takes them from its launcher (the CLI: OpenMPI's, torchrun's
       or Slurm's environment). Each rank trains a replica on its shard of every global batch of
       world_size * grad_accum * batch_size; gradients are summed across ranks (host: MPI, a
       build option), so every rank takes the same step, equal to one device with grad_accum *
       world_size. Rank 0 alone writes the run directory (checkpoints, metrics, figures); every
       rank reads a resume's checkpoint. local_rank: the rank within its machine, of
       local_world_size ranks there (0: unknown); on CUDA with automatic roles they pick this
       rank's GPUs (docs/SCALING.md, "Each rank's GPUs"); the host backend ignores them. */
    int world_size, rank, local_rank, local_world_size;
    /* data-parallel on CUDA: how rank 0's NCCL id reaches the other ranks. NULL (default): the
       launcher's MPI (mpirun); "HOST:PORT" (torchrun's MASTER_ADDR:MASTER_PORT, "[IPv6]:PORT"):
       a TCP rendezvous where rank 0 listens on that address and the others connect, each
       waiting at most rendezvous_timeout_ms (0: TANDEM_RENDEZVOUS_TIMEOUT_MS) for all to arrive;
       a timeout names the ranks that never came. Read during create only. */
    const char *rendezvous;
    int rendezvous_timeout_ms;
} tandem_trainer_options;

#define TANDEM_RENDEZVOUS_TIMEOUT_MS 300000 /* 5 minutes: ranks of one job start within it */

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
    double data_wait_device_pct; /* share of step time the model stream stalled on the copies */
    double model_occupied_pct;
    tandem_verdict verdict;  /* over the measured steps (docs/TRAINING.md "Verdicts") */
    /* the data path's stages over the run: count, total and mean ms (tandem_stage_name order:
       read, decode, resample, h2d, features, ring_copy) */
    int stages;
    char stage_name[8][16];
    double stage_count[8], stage_total_ms[8], stage_mean_ms[8];
    double wall_ms;          /* the run's wall time (the data side's clock) */
    double real_frames_pct;  /* real mel frames / frames of the batch shapes over the run, % */
} tandem_trainer_summary;

/* The config a resume of run_dir continues with (`tandem train --resume DIR` alone): the config
 * stored in run_dir's newest usable checkpoint, with out = run_dir and, where a stored relative
 * data path does not resolve from the current directory, the absolute one the checkpoint recorded.
 * Set keys on it afterwards to change them (the trainer lists each change and refuses those that
 * change shapes or the data order unless options.force_resume). On failure cfg is unchanged. */
tandem_status tandem_trainer_resume_config(const char *run_dir, tandem_config *cfg);

/* Build everything a run needs from cfg (train_data required; val_data optional; out is the run
 * directory, created) and o (NULL: the defaults): index the data (text cache), open the devices,
 * plan and commit both arenas, initialise or restore the parameters. The config is copied; o's
 * strings are read during create only. On failure *out = NULL and nothing is left to free. */
tandem_status tandem_trainer_create(const tandem_config *cfg, const tandem_trainer_options *o,
                                    tandem_trainer **out);
/* What create set up, for the caller to show before run (`tandem train` prints it at start): the
 * devices and roles, the training set (rows, usable, left out by reason), the text cache, the
 * memory plan, and where the run starts. Plain data the caller owns. */
#define TANDEM_TRAINER_SKIP_REASONS 11 /* = TANDEM_DATA_SKIP_REASONS (tandem_data_skip_reason_name) */
typedef struct tandem_trainer_startup {
    char devices[512];          /* the device roles in words */
    uint32_t rows;              /* non-empty lines of metadata.csv */
    uint32_t utterances;        /* rows the text frontend accepted */
    uint32_t n_train;           /* usable for training (after the duration filter) */
    uint32_t skipped[TANDEM_TRAINER_SKIP_REASONS]; /* rows left out, by reason */
    uint32_t too_long, too_short, unreadable; /* audio left out by the duration filter */
    double max_s_allowed;       /* max_frames in seconds: longer audio is too long */
    double longest_s;           /* the longest utterance found (also a too-long one), seconds */
    int cache_hit;              /* 1: the text index came from the cache */
    char cache_path[1024];      /* "" when there is no persistent cache */
    uint32_t n_val;             /* utterances each validation uses (the fixed subset; 0: none) */
    double data_arena_mib, model_arena_mib; /* committed arenas */
    int ring_slots;
    int64_t start_step;         /* 0 for a fresh run; the checkpoint's step on resume */
    int n_buckets;              /* length bucketing's shape classes (0: off, every batch max_frames) */
    int bucket_frames[8];       /* their mel frames, ascending */
    double bucket_real_pct;     /* the real-frame share they give over the training set, %
                                   (without bucketing: that of max_frames) */
    int gemm_fallbacks;         /* GEMM shapes not on cuBLASLt's fused plan (model device; 0 on host) */
    char gemm_fallback_list[2048]; /* one line each: "GEMM <shape>: <how> (<why>)" */
} tandem_trainer_startup;
/* Fill *r from a created trainer; TANDEM_E_INVALID for NULL arguments. */
tandem_status tandem_trainer_startup_report(const tandem_trainer *t, tandem_trainer_startup *r);
/* Train until max_steps, run_steps or a stop request, then write a checkpoint (unless the last
 * step wrote one) and fill *summary (may be NULL; filled on failure too, as far as the run got).
 * A stop request ends the run after the current step and returns TANDEM_OK. Call once. */
tandem_status tandem_trainer_run(tandem_trainer *t, tandem_trainer_summary *summary);
/* One op kind's device time at the profiled step (options.profile_ops). */
typedef struct tandem_op_time {
    const char *name;  /* kernel name (kernels/registry.h) or "gemm"; static storage */
    int count;         /* launches of it in the step */
    double device_ms;  /* their device time, gaps waiting for the host excluded */
} tandem_op_time;

/* After run with options.profile_ops: up to cap op kinds by descending device time into out;
 * returns how many; *ops (may be NULL) = ops timed, *total_ms = their device time, *span_ms = the
 * profiled step's device span from its first op's queueing to its last op's end, *overflow = ops
 * past profile_ops, not timed. 0 when nothing was profiled. */
int tandem_trainer_op_times(const tandem_trainer *t, tandem_op_time *out, int cap, int *ops, double *total_ms,
                            double *span_ms, int *overflow);
/* The last complete line of run_dir/metrics.jsonl into buf ("" when there is none yet), for a
 * monitor of a running training: never blocks (a FIFO or device in its place is refused:
 * TANDEM_E_IO naming it), reads only the file's tail, a line still being written is skipped. */
tandem_status tandem_metrics_last_line(const char *run_dir, char *buf, size_t cap);
/* Async-signal-safe and thread-safe: the loop ends at the next micro-batch boundary (the step in
 * progress is not counted; before the first step when run has not reached it), then run writes
 * the checkpoint of the last completed step and returns. Bounded even when a loader thread meets
 * a stuck file: a step waiting for data notices the request within 50 ms, no loader read can
 * block (runtime/data/loader.h, "Stopping"), so run returns within one micro-batch plus about a
 * second (≤ 5 s, docs/TRAINING.md "Run directory rules"). NULL is ignored. */
void tandem_trainer_request_stop(tandem_trainer *t);
/* Stop and join the threads, free everything create allocated; NULL is ignored. */
void tandem_trainer_destroy(tandem_trainer *t);

/* ---- memory plan ----------------------------------------------------------------------------- */

typedef struct tandem_plan_options {
    tandem_backend backend;  /* CUDA (default, 256-byte alignment) or HOST (64 bytes); AUTO plans
                                as CUDA. No device is opened either way. */
    const char *config_name; /* named in the first line ("plan for <name>: ..."); NULL: "config" */
    int speakers;            /* speaker embedding rows (after the symbols' in sym_emb.weight, as
                                training allocates them); -1 (default): the speaker count of the
                                config's train_data index (0 when it cannot be opened: the plan's
                                embedding line says why) */
} tandem_plan_options;

void tandem_plan_options_init(tandem_plan_options *o);

/* The memory plan of a training run of cfg without opening a device: every arena (data device:
 * the feature path; model device: the ring, parameters, optimizer state and activations) with its
 * report (bytes per class, peak, budget, largest tensors), the pinned host staging, and the total
 * for one GPU in both roles — the text `tandem plan` prints. With `buckets` > 1 it names the
 * shape classes training would choose from train_data's file headers (docs/TRAINING.md, "Length
 * bucketing") and their real-frame share. Written into buf (NUL-terminated,
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
