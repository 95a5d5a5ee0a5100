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

#include "test/fixtures.h"
#include "test/testutil.h"

static const char *const tiny_corpus_texts[] = {"a cat", "the dog ran", "red sun", "blue sea and sky",
                                                "one tree", "big hill", "so far away", "we go", "in time"};

static void tiny_corpus_write(const char *dir, int n, int max_frames, tandem_rng *r) {
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

#endif
