/* tiny_corpus.h — a small dataset in the LJSpeech layout for tests that train or index:
 * dir/metadata.csv (id|text|text) and dir/wavs/u<i>.wav, n utterances of a sine with a slow
 * envelope plus noise (16-bit PCM, 22050 Hz), 0.1 s up to (max_frames - 1.2) hops long, with short
 * English texts. Header-only; include <cmocka.h> and test/testutil.h before it. */
#ifndef TANDEM_TEST_TINY_CORPUS_H
#define TANDEM_TEST_TINY_CORPUS_H

#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>

#include "platform/os/os.h"

static const char *const tiny_corpus_texts[] = {"a cat", "the dog ran", "red sun", "blue sea and sky",
                                                "one tree", "big hill", "so far away", "we go", "in time"};

static void tiny_corpus_write(const char *dir, int n, int max_frames, tandem_rng *r) {
    char path[512];
    snprintf(path, sizeof path, "%s/wavs", dir);
    assert_int_equal(tandem_mkdir_p(path), TANDEM_OK);
    snprintf(path, sizeof path, "%s/metadata.csv", dir);
    FILE *meta = fopen(path, "w");
    assert_non_null(meta);
    float *buf = malloc(sizeof(float) * (size_t)max_frames * 256);
    assert_non_null(buf);
    for (int i = 0; i < n; i++) {
        const int len = (int)tandem_rng_int(r, 2205, max_frames * 256 - 300);
        const double f = tandem_rng_uniform(r, 150.0f, 3000.0f);
        for (int k = 0; k < len; k++)
            buf[k] = (float)(0.3 * sin(2 * M_PI * f * k / 22050.0) * (1.0 + sin(k * 0.001)) +
                             0.03 * tandem_rng_uniform(r, -1.0f, 1.0f));
        snprintf(path, sizeof path, "%s/wavs/u%d.wav", dir, i);
        SF_INFO info = {.samplerate = 22050, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
        SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
        assert_non_null(sf);
        assert_int_equal(sf_writef_float(sf, buf, len), len);
        sf_close(sf);
        const char *t = tiny_corpus_texts[i % (int)(sizeof tiny_corpus_texts / sizeof tiny_corpus_texts[0])];
        fprintf(meta, "u%d|%s|%s\n", i, t, t);
    }
    free(buf);
    fclose(meta);
}

#endif
