/* index_summary.c — a text index summarised for people (index_summary.h). */
#include "runtime/run/index_summary.h"

#include <stdio.h>

#include "runtime/audio/audio.h"
#include "runtime/audio/mel.h"

_Static_assert(TANDEM_TRAINER_SKIP_REASONS == TANDEM_SKIP_COUNT,
               "the public report counts every skip reason of the index");

void tandem_index_summary(const tandem_text_index *ix, const tandem_config *cfg, tandem_trainer_startup *r) {
    r->rows = ix->lines;
    r->utterances = ix->count;
    r->n_train = ix->n_train;
    for (int k = 0; k < TANDEM_SKIP_COUNT; k++) r->skipped[k] = ix->skipped[k];
    r->too_long = ix->audio_too_long;
    r->too_short = ix->audio_too_short;
    r->unreadable = ix->audio_unreadable;
    r->max_s_allowed = (double)cfg->max_frames * TANDEM_MEL_HOP / TANDEM_AUDIO_RATE;
    uint32_t longest = 0;
    for (uint32_t i = 0; i < ix->count; i++)
        if (ix->utts[i].n_samples > longest) longest = ix->utts[i].n_samples;
    r->longest_s = (double)longest / TANDEM_AUDIO_RATE;
    r->cache_hit = ix->cache_hit;
    snprintf(r->cache_path, sizeof r->cache_path, "%s", ix->cache_path);
}
