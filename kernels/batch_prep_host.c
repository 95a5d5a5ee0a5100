/* batch_prep_host.c — launch geometry and host implementation of batch_prep (batch_prep.h).
 * The host version loops per item in order; it is what the host backend runs and the
 * reference the emulated kernel is compared with. */
#include <stdint.h>

#include "kernels/host_parallel.h"
#include "kernels/registry.h"

enum { BATCH_PREP_THREADS = TANDEM_K_BATCH_PREP_THREADS, BATCH_PREP_MAX_BLOCKS = 1024 };

void tandem_k_batch_prep_geom(const tandem_k_batch_prep_args *a, tandem_launch_dims *d) {
    const int64_t n = (int64_t)a->batch * ((int64_t)a->text_len + a->mel_len + a->frames);
    *d = tandem_dims_1d(n, BATCH_PREP_THREADS);
    if (d->grid[0] > BATCH_PREP_MAX_BLOCKS) d->grid[0] = BATCH_PREP_MAX_BLOCKS;
}

typedef struct batch_prep_job {
    const tandem_k_batch_prep_args *a;
    float inv; /* the L1 normaliser, from every item's length */
} batch_prep_job;

/* Items [b0, b1). */
static void batch_prep_items(void *ctx, int64_t b0, int64_t b1) {
    const batch_prep_job *job = ctx;
    const tandem_k_batch_prep_args *a = job->a;
    const int seq = a->text_len + a->mel_len;
    const float inv = job->inv;
    for (int b = (int)b0; b < (int)b1; b++) {
        const int tl = tandem_k_batch_prep_clamp(a->text_lengths[b], a->text_len);
        const int fl = tandem_k_batch_prep_clamp(a->frame_lengths[b], a->frames);
        uint8_t *row = a->key_mask + (int64_t)b * seq; /* [Tt + Tm] */
        for (int t = 0; t < a->text_len; t++) row[t] = t < tl;
        for (int j = 0; j < a->mel_len; j++) row[a->text_len + j] = (int64_t)j * a->r < fl;
        const float *m = a->frame_mask + (int64_t)b * a->frames; /* [F] */
        float *w = a->l1_weight + (int64_t)b * a->frames;        /* [F] */
        for (int f = 0; f < a->frames; f++) w[f] = m[f] != 0.0f ? m[f] * inv : 0.0f;
    }
}

void tandem_k_batch_prep_host(const tandem_k_batch_prep_args *a) {
    batch_prep_job job = {a, tandem_k_batch_prep_inv(a->frame_lengths, a->batch, a->frames, a->channels)};
    /* items are small: split only batches of many long items */
    int64_t per_item = (int64_t)a->text_len + a->mel_len + a->frames;
    tandem_host_parallel_for(a->batch, per_item > 0 ? 16384 / per_item + 1 : 16384, batch_prep_items, &job);
}

/* ---- cost (registry.h) --------------------------------------------------------------------- */

void tandem_k_batch_prep_cost(const tandem_k_batch_prep_args *a, tandem_kernel_cost *c) {
    const double keys = (double)a->batch * ((double)a->text_len + a->mel_len);
    const double w = (double)a->batch * a->frames;
    tandem_kcost(c, keys + w, 8.0 * a->batch + 4.0 * w, keys + 4.0 * w);
}
