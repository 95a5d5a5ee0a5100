/* run_ckpt.h — a training run's checkpoints: the table that names every parameter and AdamW
 * moment as a checkpoint tensor (a view of the model's flat params / adam_m / adam_v at the
 * parameter's element offset), the metadata a resume needs, writing a checkpoint and restoring one.
 *
 * Tensor names: the parameter table's names, AdamW moments as adam_m.<name> / adam_v.<name>.
 * Metadata: config (YAML), symbols (JSON), sampler_epoch / sampler_position (of the next utterance
 * the model consumes), updates, skipped, skipped_in_row, rng_state (the seed: initialisation and
 * the sampler's permutations are pure functions of it, there is no dropout), train_data_abs /
 * val_data_abs (the data directories' absolute paths, "" when unknown), train_rows / train_listing
 * (the training set, ckpt_data.h), best_val_l1 (once a
 * validation improved: the L1 of ckpt-best.safetensors), freeze (the --freeze groups, "" none),
 * plus format_version and step from
 * runtime/formats/checkpoint.h.
 * Owns: the table, the checkpoint writer (sized at create: save allocates nothing), the config and
 * symbol texts and, for a resume, a host buffer of the largest parameter. One thread: the
 * trainer's. */
#ifndef TANDEM_RUNTIME_RUN_CKPT_H
#define TANDEM_RUNTIME_RUN_CKPT_H

#include <limits.h>
#include <stdint.h>

#include "runtime/core/config.h"
#include "runtime/data/sampler.h"
#include "runtime/data/text_index.h"
#include "runtime/formats/checkpoint.h"
#include "runtime/model/model.h"
#include "runtime/model/train_step.h"
#include "runtime/run/ckpt_data.h"
#include "tandem.h"

/* The largest step and sampler epoch a checkpoint may carry: beyond any run (10^12), and far
 * enough below INT64_MAX that counting on from it cannot overflow. */
#define TANDEM_CKPT_COUNTER_MAX INT64_C(1000000000000)

typedef struct tandem_run_ckpt_entry {
    tandem_tensor *flat; /* params, adam_m or adam_v */
    int64_t off;         /* elements */
} tandem_run_ckpt_entry;

typedef struct tandem_run_ckpt {
    tandem_checkpoint *writer;
    int count;                      /* 3 * n_params */
    tandem_st_tensor *tensors;      /* [count] */
    tandem_run_ckpt_entry *entries; /* [count], the tensors' user pointers */
    char *names;                    /* [count][TANDEM_MODEL_PARAM_NAME_MAX + 8] */
    char *cfg_yaml, *symbols_json;
    char *speakers_json;            /* NULL: a single-speaker dataset (no "speakers" entry) */
    float *load_buf;                /* the largest parameter (resume only) */
    tandem_stream *s;               /* model stream: downloads and uploads */
    int64_t seed;
    double best_val_l1;       /* the best validation L1 a checkpoint was written for; +inf: none */
    char train_abs[PATH_MAX], val_abs[PATH_MAX]; /* realpath of the data directories ("" unknown) */
    char freeze[256];         /* the run's --freeze groups ("" none), saved as metadata `freeze` */
    char *freeze_trained;     /* what --init-from did not fill (freeze.h text), metadata `freeze_trained`; NULL none */
    int world_size;           /* data-parallel ranks (runtime/run/dp.h), metadata `world_size` */
    tandem_ckpt_data data;    /* the training set (ckpt_data.h): metadata train_rows, train_listing */
} tandem_run_ckpt;

/* The newest usable checkpoint of dir, opened (before the pool commit: opening allocates), and the
 * counters it carries: *st (step, updates, skipped, skipped_in_row) and *next (sampler position).
 * Usable: valid safetensors and metadata (format_version, step; counters integers in range, step
 * and sampler epoch <= TANDEM_CKPT_COUNTER_MAX; the sampler position inside [0, n_train)), the
 * tensors its own config describes (ckpt_check.h: before any model is planned from that config),
 * every F32 value finite and every second moment >= 0;
 * newer ones that are not are skipped with a warning naming the file and why, so a resume falls
 * back to the newest good one. A seed other than cfg's is a warning (the sampler continues with
 * the config's). None usable is TANDEM_E_INVALID naming dir. A dataset change (ckpt_data.h) is a
 * warning while the position still fits the data; when it does not, the resume is refused naming
 * the change (TANDEM_E_INVALID), never continued from an older checkpoint that would overwrite it. */
tandem_status tandem_run_ckpt_find(const char *dir, const tandem_config *cfg, const tandem_text_index *ix,
                                   tandem_st_file **out, tandem_train_state *st, tandem_sampler_pos *next);
/* The newest usable checkpoint of dir as find picks it, without a training set to check the sampler
 * position against (a resume's config is read from it before the data is opened); its path into
 * path. None usable is TANDEM_E_INVALID naming dir; on failure *out = NULL. */
tandem_status tandem_run_ckpt_peek(const char *dir, tandem_st_file **out, char *path, size_t cap);
/* Build the table for m's parameters and the writer into cfg->out (keeping cfg->keep files); with
 * resume, the load buffer too. ix's speaker table (if any) is saved as the "speakers" entry.
 * On failure everything is freed (c zeroed). */
tandem_status tandem_run_ckpt_create(tandem_run_ckpt *c, const tandem_model *m, const tandem_config *cfg,
                                     const tandem_text_index *ix, tandem_stream *s, int resume);
/* Copy every table tensor of f into the model's committed tensors (synchronously). f's speaker
 * table must be the dataset's (an absent one = none): TANDEM_E_INVALID naming both otherwise. */
tandem_status tandem_run_ckpt_restore(tandem_run_ckpt *c, const tandem_st_file *f);
/* Write ckpt-<st->step>.safetensors with the metadata above. No heap allocation. */
tandem_status tandem_run_ckpt_save(tandem_run_ckpt *c, const tandem_train_state *st,
                                   tandem_sampler_pos next);
/* ckpt-best.safetensors (the same tensors and metadata) when val_l1 after st->step >= 1 steps is
 * below every earlier one (this run's, and the resumed checkpoint's best_val_l1); nothing
 * otherwise. No heap allocation. */
tandem_status tandem_run_ckpt_best(tandem_run_ckpt *c, const tandem_train_state *st, tandem_sampler_pos next,
                                   double val_l1);
/* A run resumed from f (step): that step counts as good for rotation, and its best_val_l1 is the
 * one to beat. */
void tandem_run_ckpt_resumed(tandem_run_ckpt *c, const tandem_st_file *f, int64_t step);
/* The run's freeze groups into c->freeze: spec when given (NULL: not given), else on a resume the
 * resumed checkpoint's (f; an info line), else none. A spec of 256 bytes or more is
 * TANDEM_E_INVALID. */
tandem_status tandem_run_ckpt_freeze(tandem_run_ckpt *c, const tandem_st_file *f, const char *spec);
void tandem_run_ckpt_free(tandem_run_ckpt *c);

#endif
