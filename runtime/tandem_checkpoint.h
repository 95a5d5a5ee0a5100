/* tandem_checkpoint.h — reading a training checkpoint's metadata (part of tandem.h; include
 * tandem.h).
 *
 * A checkpoint is <run dir>/ckpt-<step, 8 digits>.safetensors (docs/FORMATS.md): every parameter
 * and the AdamW moments as F32 tensors, and string metadata: format_version, step, config (the
 * run's config as YAML), symbols (the symbol table as JSON), sampler and optimizer counters.
 * A tandem_ckpt is one such file opened read-only and validated (header, dtypes, shapes, offsets,
 * format version): the file is read whole into memory the handle owns (never mapped, so a file
 * truncated or rewritten while open cannot fault; one that changes while read is refused), the
 * strings and tensor descriptions point into the handle and live until close. Tensor data is not read here (tandem_synth.h and the trainer load it).
 *
 * Threads: the accessors of one open checkpoint may be called from any threads at once (they only
 * read); close must not overlap them. Allocation: open allocates (the entry table, the file's bytes);
 * the accessors do not, except tandem_ckpt_config, which creates a config.
 * Errors: TANDEM_E_IO for a file or directory that cannot be read, TANDEM_E_FORMAT for a file that
 * is not a valid checkpoint (the message names the file, the offset and the field), TANDEM_E_INVALID
 * for a run directory without any valid checkpoint.
 */
/* tandem.h first, outside the guard: it includes every public header in order, this one too */
#include "tandem.h"

#ifndef TANDEM_CHECKPOINT_PUBLIC_H
#define TANDEM_CHECKPOINT_PUBLIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tandem_ckpt tandem_ckpt;

/* Open and validate a checkpoint file. On failure *out = NULL and nothing is left to free. */
tandem_status tandem_ckpt_open(const char *path, tandem_ckpt **out);
/* Open the newest valid checkpoint of a run directory: candidates are tried from the highest
 * step down, a truncated or corrupt one is skipped with a warning through the log hook. */
tandem_status tandem_ckpt_open_latest(const char *run_dir, tandem_ckpt **out);
/* Unmap and free; NULL is ignored. */
void tandem_ckpt_close(tandem_ckpt *c);

/* The file opened. */
const char *tandem_ckpt_path(const tandem_ckpt *c);
/* Optimizer steps taken when it was written. */
int64_t tandem_ckpt_step(const tandem_ckpt *c);
/* The checkpoint format version ("1"). */
const char *tandem_ckpt_format_version(const tandem_ckpt *c);
/* The run's config as YAML, as tandem_config_dump wrote it ("" when absent). */
const char *tandem_ckpt_config_yaml(const tandem_ckpt *c);
/* The run's config as a new config (destroy it with tandem_config_destroy). A checkpoint without
 * one, or with one that does not load, is TANDEM_E_FORMAT naming the file. *out = NULL on failure. */
tandem_status tandem_ckpt_config(const tandem_ckpt *c, tandem_config **out);
/* The symbol table the model was trained with, as JSON ({"version":1,"pad":0,...,"symbols":[...]};
 * "" when absent). */
const char *tandem_ckpt_symbols_json(const tandem_ckpt *c);

/* Every __metadata__ entry in file order (the ones above included): count, then the i-th key and
 * value (0 <= i < count; out of range → 0 and both NULL). find returns NULL for an absent key. */
int tandem_ckpt_meta_count(const tandem_ckpt *c);
int tandem_ckpt_meta_get(const tandem_ckpt *c, int i, const char **key, const char **value);
const char *tandem_ckpt_meta_find(const tandem_ckpt *c, const char *key);

/* The tensors it holds, in file order. */
typedef struct tandem_ckpt_tensor {
    const char *name;               /* parameter name; AdamW moments as adam_m.<name>, adam_v.<name> */
    tandem_dtype dtype;
    int ndim;
    int64_t shape[TANDEM_MAX_DIMS];
    size_t bytes;
} tandem_ckpt_tensor;
int tandem_ckpt_tensor_count(const tandem_ckpt *c);
/* The i-th tensor's description (0 <= i < count, else TANDEM_E_INVALID). */
tandem_status tandem_ckpt_tensor_info(const tandem_ckpt *c, int i, tandem_ckpt_tensor *out);

#ifdef __cplusplus
}
#endif
#endif /* TANDEM_CHECKPOINT_PUBLIC_H */
