/* dataset.c — a run's index and batches (see dataset.h). */
#include "runtime/run/dataset.h"

#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
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
    icfg.val_fraction = strcmp(dir, cfg->train_data) == 0 ? cfg->val_fraction : 0.0;
    icfg.cache_dir = cache_dir;
    icfg.layout = (tandem_data_layout)cfg->dataset_layout;
    icfg.vctk_mic = cfg->vctk_mic;
    icfg.text_input = (tandem_text_input)cfg->text_input;
    return tandem_text_index_open(&icfg, ix);
}

tandem_status tandem_run_open_heldout(const tandem_config *cfg, const char *cache_dir, tandem_text_index *ix) {
    TANDEM_TRY(tandem_run_open_index(cfg, cfg->train_data, cache_dir, ix));
    uint32_t *t = ix->train, n = ix->n_train; /* swapped: the pipeline visits the train list */
    ix->train = ix->val;
    ix->n_train = ix->n_val;
    ix->val = t;
    ix->n_val = n;
    return TANDEM_OK;
}

tandem_status tandem_run_acquire(tandem_pipeline *p, tandem_batch_view *v, tandem_model_batch *mb,
                                 double *wait_ms, const volatile sig_atomic_t *stop) {
    return tandem_run_acquire_timed(p, v, mb, wait_ms, stop, NULL, NULL);
}

tandem_status tandem_run_acquire_timed(tandem_pipeline *p, tandem_batch_view *v, tandem_model_batch *mb,
                                       double *wait_ms, const volatile sig_atomic_t *stop, tandem_event *pre,
                                       tandem_event *post) {
    /* in slices, so a stop request is seen while the ring is empty (a stuck or slow loader) */
    const int64_t slice_ms = stop ? TANDEM_RUN_ACQUIRE_SLICE_MS : TANDEM_RUN_ACQUIRE_TIMEOUT_MS;
    const uint64_t t0 = tandem_now_ns();
    for (int64_t waited = 0;; waited += slice_ms) {
        tandem_status st = tandem_pipeline_acquire_timed(p, v, slice_ms, pre, post);
        if (st == TANDEM_OK) break;
        if (st != TANDEM_E_STATE || waited + slice_ms >= TANDEM_RUN_ACQUIRE_TIMEOUT_MS) return st;
        if (stop && *stop) {
            *wait_ms += (double)(tandem_now_ns() - t0) * 1e-6;
            return tandem_fail(TANDEM_E_STATE, "stopped while waiting for a batch");
        }
    }
    *wait_ms += (double)(tandem_now_ns() - t0) * 1e-6;
    memset(mb, 0, sizeof *mb);
    mb->tokens = v->t->tokens;
    mb->mels = v->t->mels;
    mb->frame_mask = v->t->frame_mask;
    mb->stop_targets = v->t->stop_targets;
    mb->text_lengths = v->t->text_lengths;
    mb->frame_lengths = v->t->frame_lengths;
    mb->frames = v->frames; /* the batch's shape class (length bucketing) */
    return TANDEM_OK;
}
