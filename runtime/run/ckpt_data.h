/* ckpt_data.h — the training set a checkpoint was written against: its usable utterances
 * (metadata train_rows) and an FNV-1a hash of their ids in index order (train_listing, 16 hex
 * digits), so a resume names a dataset change instead of only finding a sampler position out of
 * range. Checkpoints without them (older ones) count as unchanged. Allocates nothing. */
#ifndef TANDEM_RUNTIME_RUN_CKPT_DATA_H
#define TANDEM_RUNTIME_RUN_CKPT_DATA_H

#include <stddef.h>

#include "runtime/data/text_index.h"
#include "runtime/formats/safetensors.h"

#define TANDEM_CKPT_KEY_TRAIN_ROWS "train_rows"
#define TANDEM_CKPT_KEY_TRAIN_LISTING "train_listing"

typedef struct tandem_ckpt_data {
    char rows[24], listing[24]; /* the metadata values */
} tandem_ckpt_data;

void tandem_ckpt_data_of(const tandem_text_index *ix, tandem_ckpt_data *d);
/* 1 when f records another training set than d, with why = "the dataset changed since <path> was
 * written: N usable utterances (listing hash H) then, M (listing hash K) now"; else 0. */
int tandem_ckpt_data_changed(const tandem_st_file *f, const char *path, const tandem_ckpt_data *d, char *why,
                             size_t cap);

#endif
