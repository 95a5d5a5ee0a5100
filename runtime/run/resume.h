/* resume.h — what a resume takes from the run it continues: the config and symbol table stored in
 * the run's newest usable checkpoint, compared key by key with the config the caller hands in.
 *
 * Changed keys are listed (an info line each: key, old value, new value). Keys that fix the
 * model's shapes or the order of the training data (TANDEM_RESUME_FIXED_KEYS below) are refused
 * — one message naming every such key with both values — unless force, when each is a warning
 * instead. Directory keys (train_data, val_data, out) compare by the directory they name (the
 * same directory through another path is no change). A symbol table other than this build's is
 * refused always (the embedding rows are token ids; --init-from maps them by symbol name).
 *
 * tandem_trainer_resume_config (tandem_train.h) is the public face: the checkpoint's config
 * with `out` set to the run directory and, where a stored relative data path no longer resolves,
 * the absolute path the checkpoint recorded (train_data_abs / val_data_abs).
 * Owns nothing; allocates only while comparing (run before the commit). One thread. */
#ifndef TANDEM_RUNTIME_RUN_RESUME_H
#define TANDEM_RUNTIME_RUN_RESUME_H

#include "runtime/core/config.h"
#include "runtime/formats/safetensors.h"
#include "tandem.h"

/* Refused on resume unless forced: model shapes and the training data's order. */
#define TANDEM_RESUME_FIXED_KEYS                                                                 \
    "d_model", "layers", "heads", "reduction", "max_text", "max_frames", "n_mels", "batch_size", \
        "grad_accum", "seed", "shuffle", "train_data", "val_fraction", "buckets", "text_input"

/* Metadata keys of the absolute data paths a checkpoint records (absent in older ones). */
#define TANDEM_CKPT_KEY_TRAIN_ABS "train_data_abs"
#define TANDEM_CKPT_KEY_VAL_ABS "val_data_abs"

/* The config stored in checkpoint f (path names it in messages) into *old. */
tandem_status tandem_resume_stored_config(const tandem_st_file *f, const char *path, tandem_config *old);
/* Compare cfg with checkpoint f's config and symbols as above. quiet: no info lines (a second
 * check of the same run). */
tandem_status tandem_resume_check(const tandem_st_file *f, const char *path, const tandem_config *cfg,
                                  int force, int quiet);
/* The newest usable checkpoint of dir (valid, counters in range, finite values; no training set
 * at hand, so the sampler position is not checked) checked against cfg (tandem_resume_check). */
tandem_status tandem_resume_check_dir(const char *dir, const tandem_config *cfg, int force);

#endif
