/* checkpoint.h — training checkpoints: safetensors files <dir>/ckpt-<step>.safetensors
 * (step zero-padded to 8 digits), written atomically, the last K kept, and the newest valid
 * one found on resume.
 *
 * A checkpoint holds whatever tensors the caller lists (parameters, optimizer moments) and
 * string metadata. save() adds format_version and step itself; the caller passes the rest,
 * under the TANDEM_CKPT_KEY_* names by convention: config (the YAML text), rng_state,
 * sampler_epoch, sampler_position, symbols (the symbol table as JSON).
 *
 * Owns: the directory's ckpt-*.safetensors files (it deletes older ones and stale temp files
 * of its own names) and a safetensors writer sized at create, so save() allocates nothing. */
#ifndef TANDEM_RUNTIME_CHECKPOINT_H
#define TANDEM_RUNTIME_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/formats/safetensors.h"
#include "tandem.h"

#define TANDEM_CKPT_FORMAT_VERSION "1"
#define TANDEM_CKPT_KEY_FORMAT_VERSION "format_version"
#define TANDEM_CKPT_KEY_STEP "step"
#define TANDEM_CKPT_KEY_CONFIG "config"
#define TANDEM_CKPT_KEY_RNG "rng_state"
#define TANDEM_CKPT_KEY_SAMPLER_EPOCH "sampler_epoch"
#define TANDEM_CKPT_KEY_SAMPLER_POSITION "sampler_position"
#define TANDEM_CKPT_KEY_SYMBOLS "symbols"
/* The best-by-validation checkpoint's file name, and the validation L1 it was written for. */
#define TANDEM_CKPT_BEST_NAME "ckpt-best.safetensors"
#define TANDEM_CKPT_KEY_BEST_VAL_L1 "best_val_l1"
/* Metadata entries a save may pass (besides format_version and step). */
#define TANDEM_CKPT_MAX_META 30

typedef struct tandem_checkpoint tandem_checkpoint;

/* Create dir (mkdir -p), remove stale temp files of ckpt-*.safetensors left by a crash, and
 * size the writer for these tensors (see tandem_st_writer_create; chunk_bytes 0) and up to
 * meta_bytes_max bytes of caller metadata. keep >= 1. */
tandem_status tandem_checkpoint_create(const char *dir, int keep, const tandem_st_tensor *tensors,
                                       int count, size_t meta_bytes_max, tandem_checkpoint **out);
void tandem_checkpoint_free(tandem_checkpoint *c);

/* Write <dir>/ckpt-<step>.safetensors atomically (temp, fsync, rename, fsync dir); once it is
 * durable, delete the older checkpoints beyond the newest `keep` with step <= this one (newer
 * files, e.g. from a run resumed from an older checkpoint, are left alone). No heap
 * allocation. fetch/ctx as in tandem_st_write. */
tandem_status tandem_checkpoint_save(tandem_checkpoint *c, int64_t step, const tandem_st_meta *meta,
                                     int meta_count, tandem_st_fetch_fn fetch, void *ctx);
/* Write <dir>/ckpt-best.safetensors the same way (atomic; the same tensors and metadata rules),
 * outside the rotation: its name is not ckpt-<step>, so pruning never deletes it and a resume never
 * picks it (resume takes the newest ckpt-<step>). No heap allocation. */
tandem_status tandem_checkpoint_save_best(tandem_checkpoint *c, int64_t step, const tandem_st_meta *meta,
                                          int meta_count, tandem_st_fetch_fn fetch, void *ctx);
/* A checkpoint with a NaN or Inf in an F32 tensor is still written (it is the state) but is not
 * "good": a warning names it, and pruning never deletes the newest good checkpoint (the newest
 * step saved with finite values only, or marked with set_good, e.g. the one a run resumed from),
 * so a diverged run cannot rotate away the last checkpoint a resume can use. */
void tandem_checkpoint_set_good(tandem_checkpoint *c, int64_t step);
/* Path of the last file save() wrote ("" before the first). */
const char *tandem_checkpoint_last_path(const tandem_checkpoint *c);

/* "<dir>/ckpt-<step>.safetensors" into buf. */
tandem_status tandem_checkpoint_path(const char *dir, int64_t step, char *buf, size_t cap);
/* Step of a checkpoint file name ("ckpt-00000120.safetensors" → 120); -1 when name is not one. */
int64_t tandem_checkpoint_parse_name(const char *name);

/* Open path as a checkpoint: a valid safetensors file whose metadata has format_version
 * TANDEM_CKPT_FORMAT_VERSION and, when expected_step >= 0, step == expected_step. */
tandem_status tandem_checkpoint_open(const char *path, int64_t expected_step, tandem_st_file **out);

/* The newest valid checkpoint in dir: candidates are tried from the highest step down; a
 * truncated or corrupt one is skipped with a warning through the log hook. *found = 0 (and
 * TANDEM_OK) when dir has none; a missing dir is TANDEM_E_IO. Allocates (run before commit). */
tandem_status tandem_checkpoint_find_latest(const char *dir, char *path, size_t cap, int64_t *step,
                                            int *found);
/* The same with the caller's own test: a candidate that opens as a checkpoint is taken only when
 * accept(ctx, f, path) returns TANDEM_OK (its message goes into the skip warning); accept NULL
 * takes any. f is closed afterwards either way. */
typedef tandem_status (*tandem_checkpoint_accept_fn)(void *ctx, const tandem_st_file *f, const char *path);
tandem_status tandem_checkpoint_find_usable(const char *dir, tandem_checkpoint_accept_fn accept, void *ctx,
                                            char *path, size_t cap, int64_t *step, int *found);

#endif
