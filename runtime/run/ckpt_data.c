/* ckpt_data.c — the training set a checkpoint was written against (see ckpt_data.h). */
#include "runtime/run/ckpt_data.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void tandem_ckpt_data_of(const tandem_text_index *ix, tandem_ckpt_data *d) {
    uint64_t h = UINT64_C(14695981039346656037);
    for (uint32_t i = 0; i < ix->n_train; i++) {
        for (const unsigned char *p = (const unsigned char *)tandem_utt_id(ix, &ix->utts[ix->train[i]]); *p; p++)
            h = (h ^ *p) * UINT64_C(1099511628211);
        h = (h ^ '\n') * UINT64_C(1099511628211); /* "ab","c" differs from "a","bc" */
    }
    snprintf(d->rows, sizeof d->rows, "%" PRIu32, ix->n_train);
    snprintf(d->listing, sizeof d->listing, "%016" PRIx64, h);
}

int tandem_ckpt_data_changed(const tandem_st_file *f, const char *path, const tandem_ckpt_data *d, char *why,
                             size_t cap) {
    const char *rows = tandem_st_meta_find(f, TANDEM_CKPT_KEY_TRAIN_ROWS);
    const char *listing = tandem_st_meta_find(f, TANDEM_CKPT_KEY_TRAIN_LISTING);
    if (!rows || !listing || (!strcmp(rows, d->rows) && !strcmp(listing, d->listing))) return 0;
    snprintf(why, cap, "the dataset changed since %s was written: %.20s usable utterances (listing hash %.20s) "
             "then, %s (listing hash %s) now", path, rows, listing, d->rows, d->listing);
    return 1;
}
