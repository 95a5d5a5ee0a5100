/* test_ring.c — the N-slot ring between the data device and the model device, through the
 * whole data pipeline on two host devices, with the consumer on its own thread:
 *   - every batch arrives once, in the sampler's order (checked by the utterance ids each batch
 *     carries and by the tokens and frame counts on the model device), every utterance once per
 *     epoch; the sampler itself is checked against its contract (permutations, seeds, resume);
 *   - no slot is overwritten before it is released: released slots are poisoned with NaN, a held
 *     slot's contents must not change while held, and a fresh batch must hold no NaN;
 *   - an error injected on the data side (its step k fails) or raised by the consumer (abort)
 *     ends both sides within 2 s, with the error reported to the other side.
 * The corpus is written by the test (sine tones through libsndfile, short texts).
 * Devices: two host devices by default; with TANDEM_TEST_BACKEND=cuda the roles of
 * tandem_pipeline_open_devices on the cuda backend (a GPU, or the stand-in driver, which runs
 * the work synchronously but reports every misuse, e.g. a wait on a never-recorded event). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sndfile.h>

#include "runtime/core/config.h"
#include "platform/os/os.h"
#include "runtime/data/pipeline.h"
#include "runtime/data/sampler.h"
#include "test/testutil.h"
#include "runtime/data/text_index.h"

enum { N_UTTS = 7, BATCH = 2, FRAMES = 16, MAX_TEXT = 16 };
#define SAMPLES (FRAMES * TANDEM_MEL_HOP)

static tandem_backend backend = TANDEM_BACKEND_HOST; /* TANDEM_TEST_BACKEND=cuda: TANDEM_BACKEND_CUDA */
static int64_t acquire_ms = 5000;                   /* per batch; longer on the (emulating) stand-in */

static const char *const texts[N_UTTS] = {"a cat", "the dog", "red sun", "blue sea", "one tree", "big hill", "so far"};

typedef struct corpus {
    char dir[256];
    int n_samples[N_UTTS];
} corpus;

/* N_UTTS 16-bit mono WAVs of random length (>= one hop, <= SAMPLES) and metadata.csv. */
static void write_corpus(corpus *c, tandem_rng *r) {
    snprintf(c->dir, sizeof c->dir, "/tmp/tandem_test_ring_XXXXXX");
    assert_non_null(mkdtemp(c->dir));
    char path[512];
    snprintf(path, sizeof path, "%s/wavs", c->dir);
    assert_int_equal(tandem_mkdir_p(path), TANDEM_OK);
    snprintf(path, sizeof path, "%s/metadata.csv", c->dir);
    FILE *meta = fopen(path, "w");
    assert_non_null(meta);
    static float buf[SAMPLES];
    for (int i = 0; i < N_UTTS; i++) {
        c->n_samples[i] = (int)tandem_rng_int(r, 300, SAMPLES);
        double f = tandem_rng_uniform(r, 100.0f, 4000.0f);
        for (int k = 0; k < c->n_samples[i]; k++) buf[k] = (float)(0.5 * sin(2 * M_PI * f * k / 22050.0));
        snprintf(path, sizeof path, "%s/wavs/u%d.wav", c->dir, i);
        SF_INFO info = {.samplerate = 22050, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
        SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
        assert_non_null(sf);
        assert_int_equal(sf_writef_float(sf, buf, c->n_samples[i]), c->n_samples[i]);
        sf_close(sf);
        fprintf(meta, "u%d|%s|%s\n", i, texts[i], texts[i]);
    }
    fclose(meta);
}

static void remove_corpus(corpus *c) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->dir);
    assert_int_equal(system(cmd), 0);
}

typedef struct fixture {
    corpus c;
    tandem_config cfg;
    tandem_text_index ix;
    tandem_device *data_dev, *model_dev;
    tandem_pool *data_pool, *model_pool;
    tandem_pipeline *pipe;
    uint64_t seed;
} fixture;

static void setup(fixture *fx, tandem_rng *r, int poison, int64_t fail_at) {
    memset(fx, 0, sizeof *fx);
    write_corpus(&fx->c, r);
    tandem_config_init(&fx->cfg);
    fx->cfg.batch_size = BATCH;
    fx->cfg.max_frames = FRAMES;
    fx->cfg.max_text = MAX_TEXT;
    fx->cfg.prefetch_buffer_size = 3;
    fx->cfg.num_workers = 2;
    fx->cfg.shuffle = 1;
    fx->seed = tandem_rng_next(r) >> 1;
    fx->cfg.seed = (int64_t)fx->seed;
    assert_int_equal(tandem_config_check(&fx->cfg), TANDEM_OK);
    tandem_text_index_config ic;
    tandem_text_index_config_default(&ic);
    ic.data_dir = fx->c.dir;
    ic.max_text = MAX_TEXT;
    ic.max_samples = SAMPLES;
    ic.num_workers = 1;
    ic.use_cache = 0;
    assert_int_equal(tandem_text_index_open(&ic, &fx->ix), TANDEM_OK);
    assert_int_equal(fx->ix.n_train, N_UTTS);
    char desc[256];
    if (tandem_pipeline_open_devices(backend, &fx->data_dev, &fx->model_dev, desc, sizeof desc) != TANDEM_OK)
        fail_msg("open devices: %s", tandem_last_error());
    printf("devices: %s\n", desc);
    assert_int_equal(tandem_pool_create(fx->data_dev, "data", 0, &fx->data_pool), TANDEM_OK);
    assert_int_equal(tandem_pool_create(fx->model_dev, "model", 0, &fx->model_pool), TANDEM_OK);
    tandem_pipeline_options o;
    tandem_pipeline_options_init(&o);
    o.cfg = &fx->cfg;
    o.ix = &fx->ix;
    o.data_dir = fx->c.dir;
    o.data_dev = fx->data_dev;
    o.model_dev = fx->model_dev;
    o.data_pool = fx->data_pool;
    o.model_pool = fx->model_pool;
    o.poison_on_release = poison;
    o.fail_at_batch = fail_at;
    assert_int_equal(tandem_pipeline_create(&o, &fx->pipe), TANDEM_OK);
    assert_int_equal(tandem_pool_commit(fx->data_pool), TANDEM_OK);
    assert_int_equal(tandem_pool_commit(fx->model_pool), TANDEM_OK);
    assert_int_equal(tandem_pipeline_start(fx->pipe), TANDEM_OK);
}

static void teardown(fixture *fx) {
    tandem_pipeline_destroy(fx->pipe);
    tandem_pool_destroy(fx->data_pool);
    tandem_pool_destroy(fx->model_pool);
    tandem_pipeline_close_devices(fx->data_dev, fx->model_dev);
    tandem_text_index_free(&fx->ix);
    remove_corpus(&fx->c);
}

/* ---- the sampler on its own ---------------------------------------------------------------- */

static void test_sampler(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_ring sampler")};
    uint32_t items[50];
    const uint32_t n = (uint32_t)tandem_rng_int(&r, 2, 50);
    for (uint32_t i = 0; i < n; i++) items[i] = 1000 + 3 * i;
    const uint64_t seed = tandem_rng_next(&r);
    tandem_sampler a, b, other;
    assert_int_equal(tandem_sampler_init(&a, items, n, seed, 1), TANDEM_OK);
    assert_int_equal(tandem_sampler_init(&b, items, n, seed, 1), TANDEM_OK);
    assert_int_equal(tandem_sampler_init(&other, items, n, seed + 1, 1), TANDEM_OK);
    uint32_t seq[4][50];
    int differs_seed = 0;
    for (int e = 0; e < 4; e++) {
        int seen[50] = {0};
        for (uint32_t i = 0; i < n; i++) {
            tandem_sampler_pos at;
            seq[e][i] = tandem_sampler_next(&a, &at);
            assert_int_equal(at.epoch, e);
            assert_int_equal(at.index, i);
            assert_int_equal(tandem_sampler_next(&b, NULL), seq[e][i]); /* deterministic */
            differs_seed |= tandem_sampler_next(&other, NULL) != seq[e][i];
            assert_true(seq[e][i] >= 1000 && (seq[e][i] - 1000) % 3 == 0);
            seen[(seq[e][i] - 1000) / 3]++;
        }
        for (uint32_t i = 0; i < n; i++) assert_int_equal(seen[i], 1); /* a permutation */
    }
    /* epochs and seeds give different orders (n >= 5: a collision has probability <= 1/120) */
    if (n >= 5) {
        assert_true(differs_seed);
        assert_true(memcmp(seq[0], seq[1], n * sizeof(uint32_t)) || memcmp(seq[1], seq[2], n * sizeof(uint32_t)));
    }
    /* resume anywhere: the stream continues exactly */
    for (int trial = 0; trial < 20; trial++) {
        tandem_sampler_pos pos = {tandem_rng_int(&r, 0, 3), tandem_rng_int(&r, 0, n - 1)};
        tandem_sampler c;
        assert_int_equal(tandem_sampler_init(&c, items, n, seed, 1), TANDEM_OK);
        assert_int_equal(tandem_sampler_set_pos(&c, pos), TANDEM_OK);
        for (int64_t e = pos.epoch, i = pos.index; e < 4; i = 0, e++)
            for (; i < n; i++) assert_int_equal(tandem_sampler_next(&c, NULL), seq[e][i]);
        tandem_sampler_free(&c);
    }
    tandem_sampler_pos bad = {0, n};
    assert_int_equal(tandem_sampler_set_pos(&a, bad), TANDEM_E_INVALID);
    /* shuffle off: index order */
    tandem_sampler plain;
    assert_int_equal(tandem_sampler_init(&plain, items, n, seed, 0), TANDEM_OK);
    for (uint32_t i = 0; i < 2 * n; i++) assert_int_equal(tandem_sampler_next(&plain, NULL), items[i % n]);
    tandem_sampler_free(&plain);
    tandem_sampler_free(&a);
    tandem_sampler_free(&b);
    tandem_sampler_free(&other);
}

/* ---- order, once per epoch, no overwrite before release -------------------------------------- */

typedef struct consumer {
    fixture *fx;
    int n_batches;
    tandem_status st;
    char err[512];
    uint32_t got_utt[64 * BATCH];
    tandem_sampler_pos got_pos[64 * BATCH];
    int32_t tokens[BATCH * MAX_TEXT], text_len[BATCH], frames[BATCH];
    float mels[BATCH * FRAMES * TANDEM_MEL_N_MELS], again[BATCH * FRAMES * TANDEM_MEL_N_MELS];
} consumer;

#define CHECK(cond, ...)                                          \
    do {                                                          \
        if (!(cond)) {                                            \
            c->st = TANDEM_E_INTERNAL;                            \
            snprintf(c->err, sizeof c->err, __VA_ARGS__);         \
            return NULL;                                          \
        }                                                         \
    } while (0)

static void *consume(void *arg) {
    consumer *c = arg;
    fixture *fx = c->fx;
    tandem_stream *s = tandem_pipeline_consumer_stream(fx->pipe);
    for (int n = 0; n < c->n_batches; n++) {
        tandem_batch_view v;
        c->st = tandem_pipeline_acquire(fx->pipe, &v, acquire_ms);
        if (c->st != TANDEM_OK) {
            snprintf(c->err, sizeof c->err, "acquire %d: %s", n, tandem_last_error());
            return NULL;
        }
        CHECK(v.seq == n, "batch %d arrived as seq %lld", n, (long long)v.seq);
        const tandem_ring_slot *t = v.t;
        CHECK(tandem_tensor_download(s, c->mels, t->mels, sizeof c->mels) == TANDEM_OK, "download");
        CHECK(tandem_tensor_download(s, c->tokens, t->tokens, sizeof c->tokens) == TANDEM_OK, "download");
        CHECK(tandem_tensor_download(s, c->text_len, t->text_lengths, sizeof c->text_len) == TANDEM_OK, "download");
        CHECK(tandem_tensor_download(s, c->frames, t->frame_lengths, sizeof c->frames) == TANDEM_OK, "download");
        for (int b = 0; b < BATCH; b++) {
            const uint32_t u = v.utt[b];
            c->got_utt[n * BATCH + b] = u;
            c->got_pos[n * BATCH + b] = v.pos[b];
            const tandem_utt *utt = &fx->ix.utts[u];
            /* the data in the slot is this utterance's: tokens, text length, frame count */
            CHECK(c->text_len[b] == utt->n_tok, "batch %d row %d: text length %d, utterance has %u", n, b,
                  c->text_len[b], utt->n_tok);
            for (int i = 0; i < MAX_TEXT; i++) {
                int want = i < utt->n_tok ? tandem_utt_tokens(&fx->ix, utt)[i] : 0;
                CHECK(c->tokens[b * MAX_TEXT + i] == want, "batch %d row %d token %d", n, b, i);
            }
            int idx = atoi(tandem_utt_id(&fx->ix, utt) + 1);
            CHECK(c->frames[b] == fx->c.n_samples[idx] / TANDEM_MEL_HOP, "batch %d row %d: %d frames, expected %d", n, b,
                  c->frames[b], fx->c.n_samples[idx] / TANDEM_MEL_HOP);
        }
        /* a fresh batch holds no poison: its slot was fully rewritten after the last release */
        for (size_t i = 0; i < BATCH * FRAMES * TANDEM_MEL_N_MELS; i++)
            CHECK(isfinite(c->mels[i]), "batch %d: NaN at %zu (a poisoned slot was not rewritten)", n, i);
        /* hold the slot while the producer runs ahead: it must not be touched */
        usleep(3000);
        CHECK(tandem_tensor_download(s, c->again, t->mels, sizeof c->again) == TANDEM_OK, "download");
        CHECK(memcmp(c->mels, c->again, sizeof c->mels) == 0, "batch %d: slot %d changed while in use", n, v.slot);
        c->st = tandem_pipeline_release(fx->pipe, v.slot);
        if (c->st != TANDEM_OK) {
            snprintf(c->err, sizeof c->err, "release: %s", tandem_last_error());
            return NULL;
        }
    }
    return NULL;
}

static void test_order_once_per_epoch(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_ring order")};
    fixture fx;
    setup(&fx, &r, 1, -1);
    consumer *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->fx = &fx;
    c->n_batches = (3 * N_UTTS + BATCH - 1) / BATCH + 1; /* three epochs and then some */
    tandem_thread th;
    assert_int_equal(tandem_thread_start(&th, consume, c, "test-consumer"), TANDEM_OK);
    tandem_thread_join(&th);
    if (c->st != TANDEM_OK) fail_msg("consumer: %s", c->err);
    assert_int_equal(tandem_pipeline_stop(fx.pipe), TANDEM_OK);

    /* the sampler's order, from an independent sampler with the same seed */
    tandem_sampler ref;
    assert_int_equal(tandem_sampler_init(&ref, fx.ix.train, fx.ix.n_train, fx.seed, 1), TANDEM_OK);
    int count[4][N_UTTS] = {{0}};
    for (int i = 0; i < c->n_batches * BATCH; i++) {
        tandem_sampler_pos at;
        uint32_t want = tandem_sampler_next(&ref, &at);
        assert_int_equal(c->got_utt[i], want);
        assert_int_equal(c->got_pos[i].epoch, at.epoch);
        assert_int_equal(c->got_pos[i].index, at.index);
        if (at.epoch < 3) count[at.epoch][c->got_utt[i]]++;
    }
    for (int e = 0; e < 3; e++)
        for (int u = 0; u < N_UTTS; u++) assert_int_equal(count[e][u], 1);
    tandem_pipeline_stats s;
    tandem_pipeline_get_stats(fx.pipe, &s);
    assert_int_equal(s.consumed, c->n_batches);
    assert_true(s.batches >= c->n_batches);
    assert_int_equal(s.decode_failures, 0);
    assert_true(s.mean_ready_slots >= 0 && s.mean_ready_slots <= 3);
    tandem_sampler_free(&ref);
    free(c);
    teardown(&fx);
}

/* ---- errors end both sides ------------------------------------------------------------------- */

static void test_producer_error(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_ring producer error")};
    fixture fx;
    const int fail_at = (int)tandem_rng_int(&r, 0, 5);
    setup(&fx, &r, 0, fail_at);
    const uint64_t t0 = tandem_now_ns();
    int got = 0;
    tandem_status st;
    for (;;) {
        tandem_batch_view v;
        st = tandem_pipeline_acquire(fx.pipe, &v, acquire_ms);
        if (st != TANDEM_OK) break;
        got++;
        assert_int_equal(tandem_pipeline_release(fx.pipe, v.slot), TANDEM_OK);
    }
    /* the consumer sees the data side's error, not a timeout, and every batch before it */
    assert_int_equal(st, TANDEM_E_INTERNAL);
    assert_non_null(strstr(tandem_last_error(), "injected failure"));
    assert_true(got <= fail_at);
    assert_int_equal(tandem_pipeline_stop(fx.pipe), TANDEM_E_INTERNAL);
    const double secs = (double)(tandem_now_ns() - t0) / 1e9;
    printf("producer error at batch %d: consumer got %d batches, both sides ended in %.3f s\n", fail_at, got, secs);
    assert_true(secs < 2.0);
    teardown(&fx);
}

static void test_consumer_error(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_ring consumer error")};
    fixture fx;
    setup(&fx, &r, 0, -1);
    const int take = (int)tandem_rng_int(&r, 0, 4);
    for (int i = 0; i < take; i++) {
        tandem_batch_view v;
        assert_int_equal(tandem_pipeline_acquire(fx.pipe, &v, acquire_ms), TANDEM_OK);
        assert_int_equal(tandem_pipeline_release(fx.pipe, v.slot), TANDEM_OK);
    }
    usleep(20000); /* let the producer fill the ring and block on a full ring */
    const uint64_t t0 = tandem_now_ns();
    tandem_pipeline_abort(fx.pipe, TANDEM_E_IO, "consumer: the model step failed");
    tandem_batch_view v;
    assert_int_equal(tandem_pipeline_acquire(fx.pipe, &v, 5000), TANDEM_E_IO);
    assert_non_null(strstr(tandem_last_error(), "model step failed"));
    assert_int_equal(tandem_pipeline_stop(fx.pipe), TANDEM_E_IO); /* joins the data side's threads */
    const double secs = (double)(tandem_now_ns() - t0) / 1e9;
    printf("consumer error after %d batches: both sides ended in %.3f s\n", take, secs);
    assert_true(secs < 2.0);
    teardown(&fx);
}

/* A clean stop with the ring full and loaders blocked returns OK at once. */
static void test_clean_stop(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_ring clean stop")};
    fixture fx;
    setup(&fx, &r, 0, -1);
    usleep(20000);
    const uint64_t t0 = tandem_now_ns();
    assert_int_equal(tandem_pipeline_stop(fx.pipe), TANDEM_OK);
    assert_true((double)(tandem_now_ns() - t0) / 1e9 < 2.0);
    tandem_batch_view v;
    assert_int_equal(tandem_pipeline_acquire(fx.pipe, &v, 100), TANDEM_E_STATE);
    teardown(&fx);
}

int main(void) {
    const char *be = getenv("TANDEM_TEST_BACKEND");
    if (be && strcmp(be, "cuda") == 0) {
        backend = TANDEM_BACKEND_CUDA;
        acquire_ms = 60000;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampler),
        cmocka_unit_test(test_order_once_per_epoch),
        cmocka_unit_test(test_producer_error),
        cmocka_unit_test(test_consumer_error),
        cmocka_unit_test(test_clean_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
