/* tiny_corpus.h — a small dataset in the LJSpeech layout for tests that train or index:
 * dir/metadata.csv (id|text|text) and dir/wavs/u<i>.wav, n utterances of a sine with a slow
 * envelope plus noise (16-bit PCM, 22050 Hz), 0.1 s up to (max_frames - 1.2) hops long, with short
 * English texts. Written through the shared corpus writer of test/fixtures.h. Header-only. */
#ifndef TANDEM_TEST_TINY_CORPUS_H
#define TANDEM_TEST_TINY_CORPUS_H

#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/core/config.h"
#include "test/fixtures.h"
#include "test/testutil.h"

static const char *const tiny_corpus_texts[] = {"a cat", "the dog ran", "red sun", "blue sea and sky",
                                                "one tree", "big hill", "so far away", "we go", "in time"};

static inline void tiny_corpus_write(const char *dir, int n, int max_frames, tandem_rng *r) {
    const int hop = TANDEM_FEATURE_HOP, rate = TANDEM_FEATURE_SAMPLE_RATE;
    tandem_test_corpus w;
    tandem_test_corpus_open(&w, dir);
    float *buf = malloc(sizeof(float) * (size_t)max_frames * hop);
    assert_non_null(buf);
    for (int i = 0; i < n; i++) {
        const int len = (int)tandem_rng_int(r, 2205, max_frames * hop - 300);
        const double f = tandem_rng_uniform(r, 150.0f, 3000.0f);
        for (int k = 0; k < len; k++)
            buf[k] = (float)(0.3 * sin(2 * M_PI * f * k / rate) * (1.0 + sin(k * 0.001)) +
                             0.03 * tandem_rng_uniform(r, -1.0f, 1.0f));
        char id[16];
        snprintf(id, sizeof id, "u%d", i);
        const char *t = tiny_corpus_texts[i % (int)(sizeof tiny_corpus_texts / sizeof tiny_corpus_texts[0])];
        tandem_test_corpus_add(&w, id, t, buf, len, rate, 1, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    }
    free(buf);
    tandem_test_corpus_close(&w);
}

/* A config small enough to train on such a corpus in a few seconds: d_model 16, one layer,
 * batch 2, max_frames 32, no validation, no periodic checkpoints (the last one is written),
 * max_steps steps; train and out copied in. */
static inline void tiny_corpus_train_config(tandem_config *cfg, const char *train, const char *out, int max_steps) {
    tandem_config_init(cfg);
    static const char *const kv[][2] = {
        {"model_size", "custom"}, {"d_model", "16"}, {"layers", "1"}, {"heads", "2"},
        {"reduction", "2"}, {"max_text", "24"}, {"max_frames", "32"}, {"batch_size", "2"},
        {"grad_accum", "1"}, {"num_workers", "1"}, {"prefetch_buffer_size", "3"},
        {"lr", "0.003"}, {"warmup_steps", "2"}, {"log_every", "1"}, {"val_every", "0"},
        {"keep", "3"}, {"checkpoint_every", "0"},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) CHECK(tandem_config_set(cfg, kv[i][0], kv[i][1]));
    char steps[24];
    snprintf(steps, sizeof steps, "%d", max_steps);
    CHECK(tandem_config_set(cfg, "max_steps", steps));
    CHECK(tandem_config_set(cfg, "train_data", train));
    CHECK(tandem_config_set(cfg, "out", out));
}

#endif
