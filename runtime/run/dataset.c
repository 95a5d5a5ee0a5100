/* dataset.c — a run's index and batches (see dataset.h). */
#include "runtime/run/dataset.h"

#include <string.h>

#include "platform/os/log.h"
#include "runtime/audio/mel.h"
#include "runtime/data/plan_layout.h"

tandem_status tandem_run_open_index(const tandem_config *cfg, const char *dir, const char *cache_dir,
                                    tandem_text_index *ix) {
    tandem_text_index_config icfg;
    tandem_text_index_config_default(&icfg);
    icfg.data_dir = dir;
    icfg.max_text = cfg->max_text;
    icfg.max_samples = (int64_t)cfg->max_frames * TANDEM_MEL_HOP;
    icfg.seed = (uint64_t)cfg->seed;
    icfg.val_fraction = 0.0; /* the held-out set is its own directory */
    icfg.cache_dir = cache_dir;
    return tandem_text_index_open(&icfg, ix);
}

tandem_status tandem_run_acquire(tandem_pipeline *p, tandem_batch_view *v, tandem_model_batch *mb,
                                 double *wait_ms) {
    TANDEM_TRY(tandem_pipeline_acquire(p, v, 600000));
    *wait_ms += v->wait_ms;
    memset(mb, 0, sizeof *mb);
    mb->tokens = v->t->tokens;
    mb->mels = v->t->mels;
    mb->frame_mask = v->t->frame_mask;
    mb->stop_targets = v->t->stop_targets;
    mb->text_lengths = v->t->text_lengths;
    mb->frame_lengths = v->t->frame_lengths;
    return TANDEM_OK;
}
