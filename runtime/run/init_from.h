/* init_from.h — fine-tuning: a new run's parameters taken from a checkpoint (`--init-from`).
 *
 * Only the parameters: not the AdamW moments, the step counters or the sampler position (the new
 * run starts at step 0 with fresh moments). Every model parameter is looked up by name:
 *   - same shape: copied;
 *   - sym_emb.weight ([symbols + speakers, d]) whenever the symbol or speaker table differs from
 *     the checkpoint's (in content or order, whatever the shapes): each symbol row is copied by
 *     the symbol's NAME (its text in the checkpoint's `symbols` metadata), each speaker row by
 *     the speaker's name (its `speakers` metadata); rows of new symbols and new speakers keep
 *     their initialisation and are named in the report;
 *   - another shape, or absent: keeps its initialisation.
 * Every parameter not copied whole, and every checkpoint parameter the model has no use for, is
 * reported (a warning each), then one info line counts what was copied.
 * The element ranges that keep their initialisation are returned, so that --freeze trains them.
 * Owns nothing; the caller's host buffer holds one parameter. One thread: the trainer's. */
#ifndef TANDEM_RUNTIME_RUN_INIT_FROM_H
#define TANDEM_RUNTIME_RUN_INIT_FROM_H

#include "runtime/formats/safetensors.h"
#include "runtime/model/model.h"
#include "tandem.h"

/* [begin, end) element ranges of the flat parameter tensor that --init-from did not fill (new
 * symbols' and speakers' rows, parameters absent or of another shape there): n pairs, in parameter order. */
typedef struct tandem_init_fresh {
    int64_t *span; /* tandem_free it */
    int n;
} tandem_init_fresh;

/* Open `from` before the pool commit (opening allocates): a checkpoint file, or a run directory
 * (its newest usable checkpoint). *path gets the file's path. On failure *out = NULL. */
tandem_status tandem_init_from_open(const char *from, tandem_st_file **out, char *path, size_t cap);
/* After tandem_model_init_params: copy the parameters of f into m as above, through buf (host
 * floats, at least the largest parameter's numel), synchronously on s. speakers_json: this run's
 * speaker table as checkpoints store it (NULL: one speaker). *kept gets the ranges not filled
 * (allocated even on failure, once the call got that far: tandem_free kept->span). */
tandem_status tandem_init_from_apply(const tandem_st_file *f, const char *path, const tandem_model *m,
                                     tandem_stream *s, float *buf, const char *speakers_json,
                                     tandem_init_fresh *kept);

#endif
