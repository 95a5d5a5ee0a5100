/* index_summary.h — what an opened text index says about a dataset, in the public start-up
 * report's fields (tandem_trainer_startup, tandem_train.h): rows, usable utterances, rows left
 * out by reason, audio left out by the duration filter, the longest utterance, the text cache.
 * Shared by the trainer's start-up report and `tandem validate` (validate.c). No allocation. */
#ifndef TANDEM_RUNTIME_RUN_INDEX_SUMMARY_H
#define TANDEM_RUNTIME_RUN_INDEX_SUMMARY_H

#include "runtime/core/config.h"
#include "runtime/data/text_index.h"
#include "tandem.h"

/* Fill the dataset fields of r (rows .. cache_path) from ix opened with cfg's duration filter. */
void tandem_index_summary(const tandem_text_index *ix, const tandem_config *cfg, tandem_trainer_startup *r);

#endif
