/* run_buckets.h — length bucketing in a training run (docs/TRAINING.md, "Length bucketing"): the
 * shape classes chosen from the training set (runtime/data/buckets.h) for the model's plan and
 * the pipeline, the CUDA-graph key of a step's classes, and the real-frame accounting.
 * Owns nothing allocated; the trainer's thread only.
 */
#ifndef TANDEM_RUNTIME_RUN_BUCKETS_H
#define TANDEM_RUNTIME_RUN_BUCKETS_H

#include <stdint.h>

#include "runtime/core/config.h"
#include "runtime/data/buckets.h"
#include "runtime/data/pipeline.h"
#include "runtime/model/model.h"

/* Graph keys per ring slot at most: classes ^ micro-batches above it run eagerly. */
#define TANDEM_RUN_BUCKETS_MAX_COMBOS 64

typedef struct tandem_run_buckets {
    int k;                               /* classes; 0: off (every batch max_frames) */
    uint32_t frames[TANDEM_BUCKETS_MAX]; /* ascending, the last = max_frames */
    double expected;                     /* real-frame fraction the classes give the training set */
    int64_t real, planned;               /* this step's batches: real mel frames, B * class frames */
    int64_t win_real, win_planned;       /* since the last metrics line */
    int64_t run_real, run_planned;       /* over the run */
    int last_frames;                     /* the class of the last batch added */
} tandem_run_buckets;

/* The classes for cfg->buckets over ix's training set (off when buckets <= 1), logged. */
tandem_status tandem_run_buckets_open(tandem_run_buckets *rb, const tandem_config *cfg, const tandem_text_index *ix);
/* The model plans every class. */
void tandem_run_buckets_dims(const tandem_run_buckets *rb, tandem_model_dims *dims);
/* The pipeline draws batches of them. */
void tandem_run_buckets_pipeline(const tandem_run_buckets *rb, tandem_pipeline_options *po);
/* Graph keys per ring slot for a step of A micro-batches: classes ^ A (1 when off); 0 when over
 * TANDEM_RUN_BUCKETS_MAX_COMBOS (the step runs eagerly). */
int tandem_run_buckets_combos(const tandem_run_buckets *rb, int A);
/* The key of a step whose micro-batches are v [A]: their classes as digits base k. */
int tandem_run_buckets_combo(const tandem_run_buckets *rb, const tandem_batch_view *v, int A);
/* A consumed batch (B rows) into this step's counts. */
void tandem_run_buckets_add(tandem_run_buckets *rb, const tandem_batch_view *v, int B);
/* This step's real-frame share in % (its counts move into the window's and the run's). */
double tandem_run_buckets_step(tandem_run_buckets *rb);
/* The window's share in % since the last call (a metrics line), then a new window. */
double tandem_run_buckets_window(tandem_run_buckets *rb);
/* The run's share in %. */
double tandem_run_buckets_run(const tandem_run_buckets *rb);

#endif
