/* plan_layout.c — declares the arenas' tensors from a config (see plan_layout.h). */
#include "runtime/data/plan_layout.h"

#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"

#define PINNED_ALIGN 64

static size_t round64(size_t x) { return (x + PINNED_ALIGN - 1) / PINNED_ALIGN * PINNED_ALIGN; }

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
    return tandem_mel_plan_declare(p, NULL, "mel", cfg->batch_size, cfg->max_frames, samples, 0, &l->mel);
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

    /* Pinned staging, from the shapes (the same whether or not a pool was given). */
    const size_t b = (size_t)cfg->batch_size, t = (size_t)cfg->max_text, f = (size_t)cfg->max_frames;
    const size_t m = (size_t)cfg->n_mels;
    out->n_staging = TANDEM_LAYOUT_STAGING;
    out->pinned_batch_bytes = round64(b * f * TANDEM_MEL_HOP * 4) + round64(b * 4) + round64(b * t * 4) + round64(b * 4);
    out->pinned_slot_bytes = round64(b * f * m * 4) + round64(b * f * 4) + round64(b * f * 4) + round64(b * 4);
    out->pinned_bytes = (size_t)out->n_staging * out->pinned_batch_bytes + (size_t)out->n_slots * out->pinned_slot_bytes;
    return TANDEM_OK;
}

void tandem_layout_release(tandem_layout *l) {
    if (l) tandem_mel_plan_release(&l->mel);
}

static const char *mib(size_t b, char *buf, size_t cap) {
    snprintf(buf, cap, "%.2f MiB", (double)b / (1 << 20));
    return buf;
}

size_t tandem_layout_pinned_report(const tandem_layout *l, char *buf, size_t cap) {
    char a[32], s[32], tot[32];
    int n = snprintf(buf, cap,
                     "pinned host staging: %s\n"
                     "  staged batches     %d x %s  (audio + tokens: loader threads fill one while one "
                     "uploads)\n"
                     "  ring slots         %d x %s  (features staged when the devices have no peer "
                     "access; not allocated otherwise)\n",
                     mib(l->pinned_bytes, tot, sizeof tot), l->n_staging, mib(l->pinned_batch_bytes, a, sizeof a),
                     l->n_slots, mib(l->pinned_slot_bytes, s, sizeof s));
    return n > 0 ? (size_t)n : 0;
}
