/* model_batch.h — the small model and a synthetic host-side training batch for the model tests
 * (test_train, test_bf16): random tokens and lengths, smooth fake log-mels on the real frames,
 * the frame mask and stop targets (1 from the last real frame on). Header-only, test code. */
#ifndef TANDEM_TEST_MODEL_BATCH_H
#define TANDEM_TEST_MODEL_BATCH_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "runtime/core/config.h"
#include "runtime/model/model.h"
#include "test/fixtures.h"

/* cfg = the defaults with the small model both tests train: custom, d_model 32, 2 layers,
 * 2 heads, reduction 2, max_text 12, max_frames 24, batch 3 (callers add their own keys). */
static inline void model_batch_small_config(tandem_config *cfg) {
    static const char *const kv[][2] = {
        {"model_size", "custom"}, {"d_model", "32"},  {"layers", "2"},     {"heads", "2"},
        {"reduction", "2"},       {"max_text", "12"}, {"max_frames", "24"}, {"batch_size", "3"},
    };
    tandem_config_init(cfg);
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) CHECK(tandem_config_set(cfg, kv[i][0], kv[i][1]));
}

typedef struct host_batch {
    int B, TT, F;
    int32_t *tokens, *text_len, *frame_len;
    float *mels, *mask, *stop;
} host_batch;

static inline void make_batch(tandem_rng *r, const tandem_model_dims *d, host_batch *hb) {
    hb->B = d->batch;
    hb->TT = d->text_len;
    hb->F = d->frames;
    hb->tokens = calloc((size_t)d->batch * d->text_len, sizeof(int32_t));
    hb->text_len = calloc((size_t)d->batch, sizeof(int32_t));
    hb->frame_len = calloc((size_t)d->batch, sizeof(int32_t));
    hb->mels = calloc((size_t)d->batch * d->frames * 80, sizeof(float));
    hb->mask = calloc((size_t)d->batch * d->frames, sizeof(float));
    hb->stop = calloc((size_t)d->batch * d->frames, sizeof(float));
    for (int b = 0; b < d->batch; b++) {
        hb->text_len[b] = (int)tandem_rng_int(r, 4, d->text_len);
        hb->frame_len[b] = (int)tandem_rng_int(r, d->frames / 2, d->frames);
        for (int t = 0; t < hb->text_len[b]; t++)
            hb->tokens[b * d->text_len + t] = (int)tandem_rng_int(r, 1, d->vocab - 1);
        double ph = tandem_rng_uniform(r, 0, 6.28f), fr = tandem_rng_uniform(r, 0.1f, 0.4f);
        for (int f = 0; f < d->frames; f++) {
            hb->mask[b * d->frames + f] = f < hb->frame_len[b];
            hb->stop[b * d->frames + f] = f >= hb->frame_len[b] - 1;
            if (f >= hb->frame_len[b]) continue;
            for (int c = 0; c < 80; c++)
                hb->mels[((size_t)b * d->frames + f) * 80 + c] =
                    (float)(-4.0 + 2.0 * sin(ph + fr * f + 0.08 * c) + cos(0.05 * c * (b + 1)));
        }
    }
}

static inline void free_batch(host_batch *hb) {
    free(hb->tokens);
    free(hb->text_len);
    free(hb->frame_len);
    free(hb->mels);
    free(hb->mask);
    free(hb->stop);
}

#endif
