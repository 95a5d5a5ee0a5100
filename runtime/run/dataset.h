/* dataset.h — what the trainer, its validation and the data-side run share about data: the index
 * of a dataset opened with a config's duration filter, and a ring batch described for the model.
 * Owns nothing; opening an index allocates (before any pool commit). One thread (the caller's). */
#ifndef TANDEM_RUNTIME_RUN_DATASET_H
#define TANDEM_RUNTIME_RUN_DATASET_H

#include <signal.h>

#include "runtime/core/config.h"
#include "runtime/data/pipeline.h"
#include "runtime/data/text_index.h"
#include "runtime/model/model.h"
#include "tandem.h"

/* Index dir (text cache in cache_dir, NULL = the index's default) with cfg's max_text, the
 * duration filter of max_frames and cfg's seed. When dir is cfg's train_data and val_fraction > 0
 * its seeded share is held out (ix->val, never trained on; the same split for the same seed, so
 * on resume and on every rank); otherwise no split. Free with tandem_text_index_free. */
tandem_status tandem_run_open_index(const tandem_config *cfg, const char *dir, const char *cache_dir,
                                    tandem_text_index *ix);

/* The held-out share of train_data (val_fraction > 0) as an index of its own whose train list
 * is that share, in index order: what validation visits. */
tandem_status tandem_run_open_heldout(const tandem_config *cfg, const char *cache_dir, tandem_text_index *ix);

/* Acquire the next batch of p (the consumer stream waits for it), describe its slot's tensors for
 * the model (lengths included: the model builds its key mask and loss normalisers from them on the
 * device) and add the time acquire blocked to *wait_ms. Waits at most
 * TANDEM_RUN_ACQUIRE_TIMEOUT_MS; with stop (may be NULL) it looks at *stop every
 * TANDEM_RUN_ACQUIRE_SLICE_MS and returns TANDEM_E_STATE once it is set, so an empty ring
 * (a stuck loader) never holds a stop request up. */
#define TANDEM_RUN_ACQUIRE_TIMEOUT_MS 600000
#define TANDEM_RUN_ACQUIRE_SLICE_MS 50
tandem_status tandem_run_acquire(tandem_pipeline *p, tandem_batch_view *v, tandem_model_batch *mb,
                                 double *wait_ms, const volatile sig_atomic_t *stop);
/* The same, with events around the consumer stream's wait for the slot (pre, post: may be NULL;
 * tandem_pipeline_acquire_timed). */
tandem_status tandem_run_acquire_timed(tandem_pipeline *p, tandem_batch_view *v, tandem_model_batch *mb,
                                       double *wait_ms, const volatile sig_atomic_t *stop, tandem_event *pre,
                                       tandem_event *post);

#endif
