/* train_step.h — one optimizer step of the model (DESIGN.md §7): gradients zeroed, for each of
 * grad_accum micro-batches forward → masked L1 + stop BCE (reduced on the device) → backward
 * with gradients summed, then the global gradient norm, the non-finite check, clipping and
 * AdamW (decoupled weight decay on the linear weights only) with a warm-up + cosine learning
 * rate. Nothing of a step is decided on the host: the skip decision (gradient norm or a loss
 * NaN/Inf), the step and update counters and the learning rate live on the device (model
 * train_ctr and sched; kernels/train.h, train_schedule), and the step's scalars are copied
 * into pinned memory asynchronously. The host reads them when it collects (one
 * synchronisation, at the caller's choice: every step, or only the logged ones), so a whole
 * step can be captured once and replayed (CUDA graphs, docs/TRAINING.md).
 *
 * Precision: AdamW updates the f32 master weights; in bf16 mode (model.h, "Precision") the
 * update is followed by the cast of the linear weights into their bf16 copy.
 *
 * Deterministic on the host backend: every kernel and reduction runs in a fixed order, so the
 * same parameters, batches and state give bit-identical losses (exact resume).
 * Owns nothing: the state lives in the model's tensors and in tandem_train_state.
 */
#ifndef TANDEM_RUNTIME_TRAIN_STEP_H
#define TANDEM_RUNTIME_TRAIN_STEP_H

#include <stdint.h>

#include "runtime/core/config.h"
#include "runtime/model/model.h"
#include "tandem.h"

typedef struct tandem_optim {
    double lr;           /* peak learning rate */
    double min_lr_ratio; /* the cosine ends at lr * min_lr_ratio */
    int64_t warmup_steps;
    int64_t max_steps;   /* the cosine's length */
    float beta1, beta2, eps;
    float weight_decay;  /* applied to [0, decay_end) of the flat parameters */
    float clip_norm;     /* global gradient norm limit; <= 0: no clipping */
    float stop_weight;   /* loss = l1 + stop_weight * stop_bce */
    float prenet_dropout; /* drop probability on the prenet output of training forwards */
    uint64_t seed;        /* the run's seed: the dropout mask's first counter */
    float ga_weight;      /* loss += ga_weight * ga (guided attention, docs/TRAINING.md) */
    float ga_sigma;
    int ga_heads;         /* the first ga_heads heads of every layer; 0 = off */
    /* frozen parameters (--freeze): [begin, end) element ranges of the flat tensors, sorted and
       disjoint, n_frozen pairs (the caller owns them). Their gradients are zeroed before the
       norm (so they neither count in it nor clip the rest) and AdamW skips them: no update, no
       moment change. 0 (default): everything trains. */
    const int64_t *frozen;
    int n_frozen;
    /* data-parallel (runtime/run/dp.h): this replica is rank dp_rank of dp_world (0 or 1: alone).
       Its micro-batch i is micro-batch dp_rank * grad_accum + i of the global step (the dropout
       mask's counter), and each loss is scaled by 1 / (grad_accum * dp_world), so the gradients
       summed across ranks are those of single-device training with grad_accum * dp_world. */
    int dp_world, dp_rank;
} tandem_optim;

/* From the config's training keys. */
void tandem_optim_from_config(const tandem_config *cfg, tandem_optim *out);

/* The learning rate of step `step` (0-based): linear warm-up over warmup_steps to lr, then a
 * half cosine from lr to lr * min_lr_ratio at max_steps (held there after). */
double tandem_optim_lr(const tandem_optim *o, int64_t step);

/* What a checkpoint must keep besides the tensors to continue the same run. */
typedef struct tandem_train_state {
    int64_t step;          /* optimizer steps taken (applied or skipped) */
    int64_t updates;       /* steps applied: AdamW's t for the bias corrections */
    int64_t skipped;       /* steps skipped for non-finite values, in total */
    int64_t skipped_in_row;
} tandem_train_state;

typedef struct tandem_step_result {
    int64_t step;      /* the step this was (0-based) */
    double loss;       /* mean over micro-batches of l1 + stop_weight * stop_bce + ga_weight * ga */
    double l1, stop_bce;
    double ga;         /* guided-attention loss (0 when off) */
    double grad_norm;  /* before clipping */
    double lr;
    int skipped;       /* 1: non-finite loss or gradient, parameters unchanged */
} tandem_step_result;

/* Write st into the device's counters (train_ctr) and wait: before the first step of a run,
 * after a resume. tandem_train_step does it itself. Fails past INT32_MAX steps. */
tandem_status tandem_train_state_put(tandem_model *m, tandem_stream *s, const tandem_train_state *st);

/* The step in parts, for a loop that acquires each micro-batch from the ring:
 *   begin (zero the gradients; st->step is the dropout mask's step counter, NULL: 0) ·
 *   micro(b, i) for i = 0 .. grad_accum-1 · finish.
 * micro() queues forward, loss and backward of micro-batch i (the batch's tensors may be
 * released once it returns: everything reading them is queued on s). finish() queues the norm,
 * the check and AdamW, reads the step's scalars back (synchronises s) and advances st. */
tandem_status tandem_train_begin(tandem_model *m, tandem_stream *s, const tandem_train_state *st);
tandem_status tandem_train_micro(tandem_model *m, tandem_stream *s, const tandem_optim *o,
                                 const tandem_model_batch *b, int i);
tandem_status tandem_train_finish(tandem_model *m, tandem_stream *s, const tandem_optim *o,
                                  tandem_train_state *st, tandem_step_result *out);

/* finish() in two parts: update() queues the norm, the check, the schedule, AdamW and the
 * asynchronous copies of the step's scalars and counters (st is not read: the device's
 * counters hold the state); collect() synchronises s and reads the latest of them: st becomes
 * the device's counters (every step taken so far, skipped ones counted), out the last step's
 * scalars. Steps between two collects are counted, not lost. */
tandem_status tandem_train_update(tandem_model *m, tandem_stream *s, const tandem_optim *o,
                                  const tandem_train_state *st);
tandem_status tandem_train_collect(tandem_model *m, tandem_stream *s, const tandem_optim *o,
                                   tandem_train_state *st, tandem_step_result *out);

/* All of it: batches [grad_accum] micro-batches. */
tandem_status tandem_train_step(tandem_model *m, tandem_stream *s, const tandem_optim *o,
                                tandem_train_state *st, const tandem_model_batch *batches,
                                tandem_step_result *out);

/* Gradients only (begin + micro-batches + the norm), no update: for tests and diagnostics.
 * Synchronises s; *loss receives the mean loss. */
tandem_status tandem_train_grads(tandem_model *m, tandem_stream *s, const tandem_optim *o,
                                 const tandem_model_batch *batches, tandem_step_result *out);

/* Validation: forward + loss of one batch, no gradients. Synchronises s. */
tandem_status tandem_train_eval(tandem_model *m, tandem_stream *s, const tandem_optim *o,
                                const tandem_model_batch *b, double *l1, double *stop_bce);

#endif
