/* profile_ops.h — device time per operation of one training step (`tandem profile`;
 * docs/TRAINING.md "Profile"). Wraps runtime/core/dev.h's op profile: events after every kernel
 * and GEMM queued on the model stream during one step, then, after the step's read-back, each
 * op's device time = its event − max(the previous op's event, its host launch time on the device
 * clock): the time the device spent on it, gaps waiting for the host excluded. Aggregated by op
 * name. Owns the events and arrays (created at init, before the pool commit). One thread (the
 * training loop's). */
#ifndef TANDEM_RUNTIME_RUN_PROFILE_OPS_H
#define TANDEM_RUNTIME_RUN_PROFILE_OPS_H

#include "runtime/core/dev.h"
#include "tandem.h"

#define TANDEM_PROFILE_MAX_NAMES 96

typedef struct tandem_profile_ops {
    tandem_dev_op_profile p;
    int cap;
    tandem_op_time agg[TANDEM_PROFILE_MAX_NAMES]; /* by descending device time after end */
    int names, timed, overflow, done;
    double total_ms; /* Σ op device time */
    double span_ms;  /* the anchor to the last op's end */
} tandem_profile_ops;

/* cap events on dev for ops on stream s (cap 0: off, nothing made). Nothing left on failure. */
tandem_status tandem_profile_ops_init(tandem_profile_ops *x, tandem_device *dev, tandem_stream *s, int cap);
void tandem_profile_ops_free(tandem_profile_ops *x);
/* Around one step: attach before its first op; end after its read-back (detach, aggregate). */
tandem_status tandem_profile_ops_begin(tandem_profile_ops *x);
tandem_status tandem_profile_ops_end(tandem_profile_ops *x);

#endif
