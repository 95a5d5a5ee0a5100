/* plan_layout.c — declares the arenas' tensors and the data side's pinned staging from a config
 * (see plan_layout.h). */
#include "runtime/data/plan_layout.h"

#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"

static tandem_status decl(tandem_pool *p, const char *name, tandem_dtype dt, int ndim,
                          int64_t d0, int64_t d1, int64_t d2, tandem_lifetime lt, int first,
                          int last, tandem_tensor **out) {
    const int64_t shape[3] = {d0, d1, d2};
    return tandem_pool_declare(p, name, dt, ndim, shape, lt, first, last, out);
}

static tandem_status declare_ring(const tandem_config *cfg, tandem_pool *p, tandem_layout *l) {
    const int64_t b = cfg->batch_size, t = cfg->max_text, f = cfg->max_frames, m = cfg->n_mels;
    const tandem_lifetime P = TANDEM_PERSISTENT;
    for (int k = 0; k < l->n_slots; k++) {
        tandem_ring_slot *s = &l->slot[k];
        char n[6][48];
        static const char *const what[6] = {"tokens", "text_lengths", "mels",
                                            "frame_mask", "stop_targets", "frame_lengths"};
        for (int i = 0; i < 6; i++) snprintf(n[i], sizeof n[i], "ring.%d.%s", k, what[i]);
        /* declaration order = placement order from the top: one slot's tensors stay together */
        TANDEM_TRY(decl(p, n[0], TANDEM_I32, 2, b, t, 0, P, 0, 0, &s->tokens));
        TANDEM_TRY(decl(p, n[1], TANDEM_I32, 1, b, 0, 0, P, 0, 0, &s->text_lengths));
        TANDEM_TRY(decl(p, n[2], TANDEM_F32, 3, b, f, m, P, 0, 0, &s->mels));
        TANDEM_TRY(decl(p, n[3], TANDEM_F32, 2, b, f, 0, P, 0, 0, &s->frame_mask));
        TANDEM_TRY(decl(p, n[4], TANDEM_F32, 2, b, f, 0, P, 0, 0, &s->stop_targets));
        TANDEM_TRY(decl(p, n[5], TANDEM_I32, 1, b, 0, 0, P, 0, 0, &s->frame_lengths));
    }
    return TANDEM_OK;
}

static tandem_status declare_data(const tandem_config *cfg, tandem_pool *p, tandem_layout *l) {
    /* the pipeline's own declaration of the feature path; per-step ops start at 0 */
    const int64_t samples = (int64_t)cfg->max_frames * TANDEM_MEL_HOP;
    TANDEM_TRY(tandem_resample_plan_declare(p, "resample", cfg->batch_size, samples, &l->rs));
    return tandem_mel_plan_declare(p, NULL, "mel", cfg->batch_size, cfg->max_frames, samples, 0, &l->mel);
}

tandem_status tandem_layout_stage_batches(tandem_staging_plan *p, int batch, int max_text,
                                          int64_t max_samples) {
    for (int i = 0; i < TANDEM_LAYOUT_STAGING; i++) {
        char name[TANDEM_STAGING_NAME_MAX];
        snprintf(name, sizeof name, "loader.%d", i);
        TANDEM_TRY(tandem_staging_begin(p, name, "data device", TANDEM_STAGING_ALWAYS,
                                        "staged batch: loader threads fill one while one uploads", NULL));
        /* in the order of TANDEM_STAGED_* */
        /* native-rate rows: room for the highest rate the data device resamples */
        TANDEM_TRY(tandem_staging_add(p, "audio", TANDEM_F32, 2, batch, tandem_resample_in_samples(max_samples), 0));
        TANDEM_TRY(tandem_staging_add(p, "lengths", TANDEM_I32, 1, batch, 0, 0));
        TANDEM_TRY(tandem_staging_add(p, "tokens", TANDEM_I32, 2, batch, max_text, 0));
        TANDEM_TRY(tandem_staging_add(p, "text_lengths", TANDEM_I32, 1, batch, 0, 0));
        TANDEM_TRY(tandem_staging_add(p, "rate_classes", TANDEM_I32, 1, batch, 0, 0));
    }
    return TANDEM_OK;
}

/* One block for every slot's staged features (the pipeline copies a slot through them when the
 * data device cannot write the model device's memory). */
static tandem_status stage_ring(const tandem_config *cfg, int n_slots, tandem_staging_plan *p) {
    const int64_t b = cfg->batch_size, f = cfg->max_frames, m = cfg->n_mels;
    TANDEM_TRY(tandem_staging_begin(p, TANDEM_LAYOUT_RING_STAGING, "data device", TANDEM_STAGING_NO_PEER,
                                    "ring slots' features on their way to the model device", NULL));
    for (int k = 0; k < n_slots; k++) {
        static const char *const what[TANDEM_RING_STAGED_BUFS] = {"mels", "frame_mask", "stop_targets",
                                                                  "frame_lengths"};
        char n[TANDEM_RING_STAGED_BUFS][TANDEM_STAGING_NAME_MAX];
        for (int i = 0; i < TANDEM_RING_STAGED_BUFS; i++) snprintf(n[i], sizeof n[i], "%d.%s", k, what[i]);
        TANDEM_TRY(tandem_staging_add(p, n[TANDEM_RING_STAGED_MELS], TANDEM_F32, 3, b, f, m));
        TANDEM_TRY(tandem_staging_add(p, n[TANDEM_RING_STAGED_MASK], TANDEM_F32, 2, b, f, 0));
        TANDEM_TRY(tandem_staging_add(p, n[TANDEM_RING_STAGED_STOP], TANDEM_F32, 2, b, f, 0));
        TANDEM_TRY(tandem_staging_add(p, n[TANDEM_RING_STAGED_FRAMES], TANDEM_I32, 1, b, 0, 0));
    }
    return TANDEM_OK;
}

tandem_status tandem_layout_declare(const tandem_config *cfg, tandem_pool *data_pool,
                                    tandem_pool *model_pool, tandem_layout *out) {
    if (!cfg || !out) return tandem_fail(TANDEM_E_INVALID, "tandem_layout_declare: NULL argument");
    memset(out, 0, sizeof *out);
    if (cfg->prefetch_buffer_size < 1 || cfg->prefetch_buffer_size > TANDEM_CONFIG_MAX_PREFETCH)
        return tandem_fail(TANDEM_E_INVALID, "layout: prefetch_buffer_size %d: expected 1 to %d",
                           cfg->prefetch_buffer_size, TANDEM_CONFIG_MAX_PREFETCH);
    out->n_slots = cfg->prefetch_buffer_size;
    if (model_pool) TANDEM_TRY(declare_ring(cfg, model_pool, out));
    if (data_pool) TANDEM_TRY(declare_data(cfg, data_pool, out));

    /* pinned staging, from the shapes (the same whether or not a pool was given) */
    tandem_staging_init(&out->staging);
    TANDEM_TRY(tandem_layout_stage_batches(&out->staging, cfg->batch_size, cfg->max_text,
                                           (int64_t)cfg->max_frames * TANDEM_MEL_HOP));
    return stage_ring(cfg, out->n_slots, &out->staging);
}

void tandem_layout_release(tandem_layout *l) {
    if (!l) return;
    tandem_mel_plan_release(&l->mel);
    tandem_resample_plan_release(&l->rs);
}

size_t tandem_layout_pinned_report(const tandem_layout *l, char *buf, size_t cap) {
    return tandem_staging_report(l ? &l->staging : NULL, buf, cap);
}
