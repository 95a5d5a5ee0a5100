/* prep.c — preparing a dataset (tandem_data_prep, runtime/tandem_data.h): the text index built or
 * loaded from the text cache (runtime/data/text_index.h), summarised for people. */
#include <stdint.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/audio/audio.h"
#include "runtime/audio/mel.h"
#include "runtime/data/plan_layout.h"
#include "runtime/data/text_index.h"
#include "runtime/text/symbols.h"
#include "tandem.h"

_Static_assert(TANDEM_DATA_SKIP_REASONS == TANDEM_SKIP_COUNT, "public skip reasons = the index's");

void tandem_data_prep_options_init(tandem_data_prep_options *o) {
    if (!o) return;
    tandem_text_index_config d;
    tandem_text_index_config_default(&d);
    memset(o, 0, sizeof *o);
    o->max_text = d.max_text;
    o->max_frames = 512; /* the tiny preset's */
    o->num_workers = 0;
    o->check_audio = d.check_audio;
    o->use_cache = d.use_cache;
    o->vctk_mic = d.vctk_mic;
}

const char *tandem_data_skip_reason_name(int reason) {
    return reason >= 0 && reason < TANDEM_DATA_SKIP_REASONS ? tandem_skip_reason_name((tandem_skip_reason)reason)
                                                            : "?";
}

static tandem_status check_options(const tandem_data_prep_options *o) {
    if (!o->data_dir) return tandem_fail(TANDEM_E_INVALID, "prep: no dataset directory (data_dir)");
    if (o->max_text < 4 || o->max_text > 65535)
        return tandem_fail(TANDEM_E_INVALID, "prep: max_text %d: expected 4..65535", o->max_text);
    if (o->max_frames < 16 || o->max_frames > 16384)
        return tandem_fail(TANDEM_E_INVALID, "prep: max_frames %d: expected 16..16384", o->max_frames);
    if (!(o->val_fraction >= 0 && o->val_fraction < 1))
        return tandem_fail(TANDEM_E_INVALID, "prep: val_fraction %g: expected a number in [0, 1)", o->val_fraction);
    if (o->num_workers < 0) return tandem_fail(TANDEM_E_INVALID, "prep: num_workers %d: expected >= 0", o->num_workers);
    if (o->layout < 0 || o->layout > TANDEM_LAYOUT_LAST)
        return tandem_fail(TANDEM_E_INVALID, "prep: layout %d: expected 0 (auto) .. %d", o->layout, TANDEM_LAYOUT_LAST);
    return TANDEM_OK;
}

/* Durations: read from each file's header when the index was built, cached with it. */
static void durations(const tandem_text_index *ix, tandem_data_prep_report *r) {
    uint64_t samples = 0;
    uint32_t scanned = 0, lo = UINT32_MAX, hi = 0;
    for (uint32_t i = 0; i < ix->count; i++) {
        const uint32_t ns = ix->utts[i].n_samples;
        if (!ns) continue;
        samples += ns;
        scanned++;
        if (ns < lo) lo = ns;
        if (ns > hi) hi = ns;
    }
    r->files_scanned = scanned;
    if (!scanned) return;
    r->total_s = (double)samples / TANDEM_AUDIO_RATE;
    r->mean_s = r->total_s / scanned;
    r->min_s = (double)lo / TANDEM_AUDIO_RATE;
    r->max_s = (double)hi / TANDEM_AUDIO_RATE;
}

static void summarise(const tandem_text_index *ix, const tandem_text_index_config *icfg, tandem_data_prep_report *r) {
    r->rows = ix->lines;
    r->layout = (int)ix->layout;
    r->speakers = ix->n_speakers;
    r->utterances = ix->count;
    r->n_train = ix->n_train;
    r->n_val = ix->n_val;
    for (int k = 0; k < TANDEM_DATA_SKIP_REASONS; k++) r->skipped[k] = ix->skipped[k];
    r->lang_en = ix->lang_count[TANDEM_LANG_EN];
    r->lang_fa = ix->lang_count[TANDEM_LANG_FA];
    durations(ix, r);
    r->too_long = ix->audio_too_long;
    r->too_short = ix->audio_too_short;
    r->unreadable = ix->audio_unreadable;
    r->max_s_allowed = (double)icfg->max_samples / TANDEM_AUDIO_RATE;
    r->tokens = ix->n_tokens;
    r->max_tokens = ix->max_tok;
    r->symbols_version = TANDEM_SYMBOLS_VERSION;
    r->symbols = tandem_symbols_count();
    r->cache_hit = ix->cache_hit;
    memcpy(r->cache_path, ix->cache_path, sizeof r->cache_path);
    r->cache_key = ix->key;
}

tandem_status tandem_data_prep(const tandem_data_prep_options *o, tandem_data_prep_report *r) {
    if (!o || !r) return tandem_fail(TANDEM_E_INVALID, "tandem_data_prep: NULL argument");
    memset(r, 0, sizeof *r);
    TANDEM_TRY(check_options(o));
    tandem_text_index_config icfg;
    tandem_text_index_config_default(&icfg);
    icfg.data_dir = o->data_dir;
    icfg.column = o->raw_text ? TANDEM_TEXT_COLUMN_RAW : TANDEM_TEXT_COLUMN_NORMALIZED;
    icfg.max_text = o->max_text;
    icfg.num_workers = o->num_workers;
    icfg.check_audio = o->check_audio;
    icfg.val_fraction = o->val_fraction;
    icfg.seed = o->seed;
    icfg.layout = (tandem_data_layout)o->layout;
    icfg.vctk_mic = o->vctk_mic;
    icfg.max_samples = (int64_t)o->max_frames * TANDEM_MEL_HOP; /* one hop per mel frame */
    icfg.use_cache = o->use_cache;
    icfg.cache_dir = o->cache_dir;
    const uint64_t t0 = tandem_now_ns();
    tandem_text_index ix;
    TANDEM_TRY(tandem_text_index_open(&icfg, &ix));
    r->ms = (double)(tandem_now_ns() - t0) * 1e-6;
    summarise(&ix, &icfg, r);
    tandem_text_index_free(&ix);
    return TANDEM_OK;
}
