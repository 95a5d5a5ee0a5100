/* init_from.h — fine-tuning: a new run's parameters taken from a checkpoint (`--init-from`).
 *
 * Only the parameters: not the AdamW moments, the step counters or the sampler position (the new
 * run starts at step 0 with fresh moments). Every model parameter is looked up by name:
 *   - same shape: copied;
 *   - sym_emb.weight with another symbol table (rows [V_old, d] → [V, d]): each row of a symbol
 *     the checkpoint also has is copied by the symbol's NAME (its text in the checkpoint's
 *     `symbols` metadata), the rows of new symbols keep their initialisation;
 *   - another shape, or absent: keeps its initialisation.
 * Every parameter not copied whole, and every checkpoint parameter the model has no use for, is
 * reported (a warning each), then one info line counts what was copied.
 * Owns nothing; the caller's host buffer holds one parameter. One thread: the trainer's. */
#ifndef TANDEM_RUNTIME_RUN_INIT_FROM_H
#define TANDEM_RUNTIME_RUN_INIT_FROM_H

#include "runtime/formats/safetensors.h"
#include "runtime/model/model.h"
#include "tandem.h"

/* Open `from` before the pool commit (opening allocates): a checkpoint file, or a run directory
 * (its newest usable checkpoint). *path gets the file's path. On failure *out = NULL. */
tandem_status tandem_init_from_open(const char *from, tandem_st_file **out, char *path, size_t cap);
/* After tandem_model_init_params: copy the parameters of f into m as above, through buf (host
 * floats, at least the largest parameter's numel), synchronously on s. */
tandem_status tandem_init_from_apply(const tandem_st_file *f, const char *path, const tandem_model *m,
                                     tandem_stream *s, float *buf);

#endif
