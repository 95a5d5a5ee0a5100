/* validation.h — the trainer's validation: the held-out set's own pipeline and the loss of the
 * model on a fixed subset of it.
 *
 * The fixed subset: the first val_batches * batch_size utterances of the held-out set in index
 * order (fewer when the set is smaller), visited in the same order at every validation, so two
 * validations of the same parameters give the same numbers bit for bit. The pipeline streams the
 * subset unshuffled, forever; each validation takes a whole number of passes' worth of batches
 * ending on a pass boundary, so each one starts at the subset's first utterance. With n < val_
 * batches * B utterances: n / gcd(n, B) batches are (n / gcd(n, B)) * B / n whole passes.
 * Optionally the mel figure's utterance (row 0 of the first batch) is read back for figures.h.
 * After the losses, the free-running evaluation of runtime/run/val_speak.h runs on the same
 * parameters (its summary in speak.last).
 *
 * Owns: the held-out index, its two arenas (the ring tensors carry the same names as the training
 * pipeline's, so they get arenas of their own), its pipeline. Everything is allocated by open and
 * declare, before the commit. One thread: the trainer's. */
#ifndef TANDEM_RUNTIME_RUN_VALIDATION_H
#define TANDEM_RUNTIME_RUN_VALIDATION_H

#include <stdint.h>

#include "runtime/core/config.h"
#include "runtime/data/pipeline.h"
#include "runtime/data/text_index.h"
#include "runtime/model/train_step.h"
#include "runtime/report/figures.h"
#include "runtime/run/val_speak.h"
#include "tandem.h"

typedef struct tandem_validation {
    tandem_config vcfg;            /* the training config, unshuffled, 2 ring slots */
    tandem_text_index vix;
    int have_index;
    int batches;                   /* per validation */
    tandem_pool *data_pool, *model_pool;
    tandem_pipeline *pipe;         /* NULL: no validation */
    int started;
    int failed;                    /* a validation failed: none runs again (run_end.h) */
    int32_t fig_len;               /* the figure utterance's real frames, read back with its mel */
    tandem_val_speak speak;        /* free-running evaluation (val_speak.h); speak.syn NULL: off */
} tandem_validation;

/* Index cfg->val_data when it is set and val_every > 0 (text cache in cache_dir); no usable
 * utterance leaves validation off. v is zeroed first. */
tandem_status tandem_validation_index(tandem_validation *v, const tandem_config *cfg, const char *cache_dir);
/* Create its arenas on the two devices and its pipeline (consumer: the model stream s); declares
 * only — commit with tandem_validation_commit. Also the free-running evaluation's model
 * (committed here: its own pool on the model device). No-op when validation is off. */
tandem_status tandem_validation_declare(tandem_validation *v, tandem_device *data_dev,
                                        tandem_device *model_dev, tandem_stream *s);
tandem_status tandem_validation_commit(tandem_validation *v);
tandem_status tandem_validation_start(tandem_validation *v);
/* Mean l1 / stop BCE of m over the fixed subset after `step` steps. With fig (not NULL), the mel
 * figure's target and teacher-forced prediction are taken from the first batch. */
tandem_status tandem_validation_run(tandem_validation *v, tandem_model *m, tandem_stream *s,
                                    const tandem_optim *o, tandem_figures *fig, int64_t step,
                                    double *l1, double *stop_bce);
/* Stop its threads, with an error to pass on when st != TANDEM_OK. */
void tandem_validation_stop(tandem_validation *v, tandem_status st, const char *why);
void tandem_validation_free(tandem_validation *v);

#endif
