/* test_ring.c — the N-slot ring between the data device and the model device (ring.h).
 * On its own (a model device for its events, no pipeline):
 *   - slots are claimed, published and acquired in sequence (slot = seq mod N); a claim with no
 *     free slot and an acquire with nothing ready in sequence time out naming the slot's state,
 *     also when a later slot is ready; release refuses slots that are not in use;
 *   - a stop with an error reaches both sides with its message even with slots ready, the first
 *     stop wins, a clean stop reads "stopped"; a blocked claim returns when another thread stops;
 *   - a producer and a consumer thread with random delays: every payload is read intact and in
 *     order, never overwritten while in use; the statistics count batches, blocked time and the
 *     time-weighted mean of ready slots.
 * Through the whole data pipeline on two host devices, with the consumer on its own thread:
 *   - every batch arrives once, in the sampler's order (checked by the utterance ids each batch
 *     carries and by the tokens and frame counts on the model device), every utterance once per
 *     epoch (the sampler itself is tested in test_sampler.c);
 *   - no slot is overwritten before it is released: released slots are poisoned with NaN, a held
 *     slot's contents must not change while held, and a fresh batch must hold no NaN;
 *   - an error injected on the data side (its step k fails) or raised by the consumer (abort)
 *     ends both sides within 2 s, with the error reported to the other side.
 * The corpus is written by the test (sine tones through libsndfile, short texts).
 * Devices: two host devices by default; with TANDEM_TEST_BACKEND=cuda the roles of
 * tandem_pipeline_open_devices on the cuda backend (a GPU, or the stand-in driver, which runs
 * the work synchronously but reports every misuse, e.g. a wait on a never-recorded event). */
#include <math.h>
#include <pthread.h>
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
#include "runtime/data/ring.h"
#include "runtime/data/sampler.h"
#include "test/fixtures.h"
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
    assert_int_equal(tandem_test_mkdtemp(c->dir, sizeof c->dir, "test_ring"), 0);
    tandem_test_corpus w;
    tandem_test_corpus_open(&w, c->dir);
    static float buf[SAMPLES];
    for (int i = 0; i < N_UTTS; i++) {
        c->n_samples[i] = (int)tandem_rng_int(r, 300, SAMPLES);
        double f = tandem_rng_uniform(r, 100.0f, 4000.0f);
        for (int k = 0; k < c->n_samples[i]; k++) buf[k] = (float)(0.5 * sin(2 * M_PI * f * k / 22050.0));
        char id[16];
        snprintf(id, sizeof id, "u%d", i);
        tandem_test_corpus_add(&w, id, texts[i], buf, c->n_samples[i], 22050, 1, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    }
    tandem_test_corpus_close(&w);
}

static void remove_corpus(corpus *c) { assert_int_equal(tandem_test_rmtree(c->dir), 0); }

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

/* ---- the ring on its own -------------------------------------------------------------------- */

static tandem_device *ring_device(void) {
    tandem_device *d = NULL;
    if (tandem_device_open(backend, 0, &d) != TANDEM_OK) fail_msg("device: %s", tandem_last_error());
    return d;
}

static void expect_timeout(tandem_status st, const char *what) {
    assert_int_equal(st, TANDEM_E_STATE);
    if (!strstr(tandem_last_error(), what)) fail_msg("expected '%s' in: %s", what, tandem_last_error());
}

static void test_ring_slot_states(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_ring slot states")};
    tandem_device *dev = ring_device();
    tandem_ring ring;
    assert_int_equal(tandem_ring_init(&ring, 0, dev), TANDEM_E_INVALID);
    assert_int_equal(tandem_ring_init(&ring, TANDEM_CONFIG_MAX_PREFETCH + 1, dev), TANDEM_E_INVALID);
    assert_int_equal(tandem_ring_init(&ring, 2, NULL), TANDEM_E_INVALID);
    const int n = (int)tandem_rng_int(&r, 1, 6);
    CHECK(tandem_ring_init(&ring, n, dev));
    int slot = -1;
    int64_t seq = -1;
    uint64_t waited = 0;
    for (int k = 0; k < n; k++) {
        CHECK(tandem_ring_claim(&ring, 0, &slot, &seq));
        assert_int_equal(slot, k);
        assert_int_equal(seq, k);
    }
    expect_timeout(tandem_ring_claim(&ring, 20, &slot, &seq), "slot 0 still FILLING after 20 ms");
    expect_timeout(tandem_ring_acquire(&ring, 20, &slot, &seq, &waited), "no batch ready after 20 ms (slot 0 is FILLING)");
    assert_true(waited >= 19000000ull);
    if (n > 1) { /* a later slot ready does not jump the sequence */
        tandem_ring_publish(&ring, n - 1);
        expect_timeout(tandem_ring_acquire(&ring, 10, &slot, &seq, NULL), "slot 0 is FILLING");
    }
    for (int k = 0; k < n - 1; k++) tandem_ring_publish(&ring, k);
    if (n == 1) tandem_ring_publish(&ring, 0);
    expect_timeout(tandem_ring_claim(&ring, 10, &slot, &seq), "slot 0 still READY");
    for (int k = 0; k < n; k++) {
        CHECK(tandem_ring_acquire(&ring, 0, &slot, &seq, NULL));
        assert_int_equal(slot, k);
        assert_int_equal(seq, k);
    }
    expect_timeout(tandem_ring_claim(&ring, 10, &slot, &seq), "slot 0 still IN_USE");
    assert_int_equal(tandem_ring_release(&ring, -1), TANDEM_E_INVALID);
    assert_int_equal(tandem_ring_release(&ring, n), TANDEM_E_INVALID);
    CHECK(tandem_ring_release(&ring, 0));
    assert_int_equal(tandem_ring_release(&ring, 0), TANDEM_E_STATE);
    assert_non_null(strstr(tandem_last_error(), "slot 0 is FREE, expected IN_USE"));
    CHECK(tandem_ring_claim(&ring, 0, &slot, &seq)); /* the next batch: slot 0 again */
    assert_int_equal(slot, 0);
    assert_int_equal(seq, n);
    tandem_ring_stats st;
    tandem_ring_get_stats(&ring, &st);
    assert_int_equal(st.produced, n);
    assert_int_equal(st.consumed, n);
    assert_int_equal(st.acquires, n);
    assert_true(st.wait_ms >= 19.0); /* the acquire that timed out above waited 20 ms */
    /* an error stop reaches both sides, ready slots or not; the first stop decides */
    tandem_ring_publish(&ring, 0);
    tandem_ring_stop(&ring, TANDEM_E_IO, "disk gone");
    tandem_ring_stop(&ring, TANDEM_OK, "later");
    assert_int_equal(tandem_ring_acquire(&ring, -1, &slot, &seq, NULL), TANDEM_E_IO);
    assert_non_null(strstr(tandem_last_error(), "disk gone"));
    assert_int_equal(tandem_ring_claim(&ring, -1, &slot, &seq), TANDEM_E_IO);
    tandem_status why = TANDEM_OK;
    char msg[64];
    assert_int_equal(tandem_ring_stopped(&ring, &why, msg, sizeof msg), 1);
    assert_int_equal(why, TANDEM_E_IO);
    assert_string_equal(msg, "disk gone");
    tandem_ring_destroy(&ring);
    /* a clean stop */
    CHECK(tandem_ring_init(&ring, n, dev));
    assert_int_equal(tandem_ring_stopped(&ring, &why, msg, sizeof msg), 0);
    tandem_ring_stop(&ring, TANDEM_OK, "run complete");
    assert_int_equal(tandem_ring_acquire(&ring, -1, &slot, &seq, NULL), TANDEM_E_STATE);
    assert_non_null(strstr(tandem_last_error(), "the pipeline was stopped: run complete"));
    tandem_ring_destroy(&ring);
    tandem_device_close(dev);
}

/* Occupancy is time-weighted: no slot ready from init to t1, all N from t1 on, read at least
 * 100 ms later. The mean is then at least N * 100 / (100 + (t1 - t0)) (t0: before init), the
 * smallest value of N * (t - t1) / (t - t0) for a reading time t >= t1 + 100 ms. */
static void test_ring_occupancy(void **state) {
    (void)state;
    tandem_device *dev = ring_device();
    tandem_ring ring;
    enum { N = 3 };
    const uint64_t t0 = tandem_now_ns();
    CHECK(tandem_ring_init(&ring, N, dev));
    for (int k = 0; k < N; k++) {
        int slot;
        int64_t seq;
        CHECK(tandem_ring_claim(&ring, 0, &slot, &seq));
        tandem_ring_publish(&ring, slot);
    }
    const uint64_t t1 = tandem_now_ns();
    usleep(100000);
    tandem_ring_stats st;
    tandem_ring_get_stats(&ring, &st);
    const double lo = N * 100e6 / (100e6 + (double)(t1 - t0));
    printf("mean ready %.4f of %d slots (at least %.4f)\n", st.mean_ready, N, lo);
    assert_true(st.mean_ready >= lo && st.mean_ready <= N);
    assert_int_equal(st.produced, N);
    assert_int_equal(st.consumed, 0);
    tandem_ring_destroy(&ring);
    tandem_device_close(dev);
}

enum { PAYLOAD = 64, HANDOFFS = 1500 };

typedef struct ring_run {
    tandem_ring ring;
    int64_t payload[TANDEM_CONFIG_MAX_PREFETCH][PAYLOAD];
    uint64_t seed;
    char err[256];
} ring_run;

static void jitter(tandem_rng *r) {
    if (tandem_rng_int(r, 0, 3) == 0) usleep((useconds_t)tandem_rng_int(r, 0, 200));
}

static void *ring_producer(void *arg) {
    ring_run *x = arg;
    tandem_rng r = {x->seed};
    for (int64_t n = 0; n < HANDOFFS; n++) {
        int slot;
        int64_t seq;
        if (tandem_ring_claim(&x->ring, -1, &slot, &seq) != TANDEM_OK || seq != n || slot != n % x->ring.n_slots) {
            snprintf(x->err, sizeof x->err, "claim %lld: slot %d seq %lld: %s", (long long)n, slot, (long long)seq,
                     tandem_last_error());
            tandem_ring_stop(&x->ring, TANDEM_E_INTERNAL, x->err);
            return NULL;
        }
        for (int i = 0; i < PAYLOAD; i++) {
            x->payload[slot][i] = n;
            if (i == PAYLOAD / 2) jitter(&r);
        }
        tandem_ring_publish(&x->ring, slot);
    }
    return NULL;
}

static void test_ring_threads(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_ring threads")};
    tandem_device *dev = ring_device();
    ring_run *x = calloc(1, sizeof *x);
    const int n = (int)tandem_rng_int(&r, 1, 4);
    x->seed = tandem_rng_next(&r);
    CHECK(tandem_ring_init(&x->ring, n, dev));
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, ring_producer, x), 0);
    for (int64_t k = 0; k < HANDOFFS; k++) {
        int slot;
        int64_t seq;
        tandem_status st = tandem_ring_acquire(&x->ring, 10000, &slot, &seq, NULL);
        if (st != TANDEM_OK) fail_msg("acquire %lld: %s (%s)", (long long)k, tandem_last_error(), x->err);
        assert_int_equal(seq, k);
        for (int i = 0; i < PAYLOAD; i++) assert_int_equal(x->payload[slot][i], k);
        jitter(&r);
        for (int i = 0; i < PAYLOAD; i++) assert_int_equal(x->payload[slot][i], k); /* not refilled in use */
        CHECK(tandem_ring_release(&x->ring, slot));
    }
    pthread_join(th, NULL);
    tandem_ring_stats st;
    tandem_ring_get_stats(&x->ring, &st);
    printf("%d slots: %d hand-offs, consumer blocked %.1f ms, mean ready %.2f\n", n, HANDOFFS, st.wait_ms,
           st.mean_ready);
    assert_int_equal(st.produced, HANDOFFS);
    assert_int_equal(st.consumed, HANDOFFS);
    assert_int_equal(st.acquires, HANDOFFS);
    assert_true(st.mean_ready >= 0 && st.mean_ready <= n);
    tandem_ring_destroy(&x->ring);
    free(x);
    tandem_device_close(dev);
}

static void *stop_later(void *arg) {
    usleep(50000);
    tandem_ring_stop(arg, TANDEM_OK, "shutting down");
    return NULL;
}

typedef struct blocked_claim {
    tandem_ring *ring;
    tandem_status st;
    char msg[256];
} blocked_claim;

static void claim_forever(void *arg) {
    blocked_claim *c = arg;
    int slot;
    int64_t seq;
    c->st = tandem_ring_claim(c->ring, -1, &slot, &seq);
    snprintf(c->msg, sizeof c->msg, "%s", tandem_last_error());
}

static void test_ring_stop_wakes_claim(void **state) {
    (void)state;
    tandem_device *dev = ring_device();
    tandem_ring ring;
    CHECK(tandem_ring_init(&ring, 1, dev));
    int slot;
    int64_t seq;
    CHECK(tandem_ring_claim(&ring, -1, &slot, &seq));
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, stop_later, &ring), 0);
    blocked_claim c = {&ring, TANDEM_OK, ""}; /* no free slot: the claim blocks until the stop */
    double ms = 0;
    const int returned = tandem_test_finishes_within(claim_forever, &c, 2000, &ms);
    pthread_join(th, NULL);
    if (!returned) fail_msg("claim still blocked 2 s after a stop 50 ms in");
    printf("blocked claim released after %.1f ms: %s\n", ms, c.msg);
    assert_int_equal(c.st, TANDEM_E_STATE);
    assert_non_null(strstr(c.msg, "shutting down"));
    assert_true(ms >= 40.0);
    tandem_ring_destroy(&ring);
    tandem_device_close(dev);
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

/* On the consumer thread: record the failure for the test's thread and end the thread. */
#define EXPECT(cond, ...)                                         \
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
        EXPECT(v.seq == n, "batch %d arrived as seq %lld", n, (long long)v.seq);
        const tandem_ring_slot *t = v.t;
        EXPECT(tandem_tensor_download(s, c->mels, t->mels, sizeof c->mels) == TANDEM_OK, "download");
        EXPECT(tandem_tensor_download(s, c->tokens, t->tokens, sizeof c->tokens) == TANDEM_OK, "download");
        EXPECT(tandem_tensor_download(s, c->text_len, t->text_lengths, sizeof c->text_len) == TANDEM_OK, "download");
        EXPECT(tandem_tensor_download(s, c->frames, t->frame_lengths, sizeof c->frames) == TANDEM_OK, "download");
        for (int b = 0; b < BATCH; b++) {
            const uint32_t u = v.utt[b];
            c->got_utt[n * BATCH + b] = u;
            c->got_pos[n * BATCH + b] = v.pos[b];
            const tandem_utt *utt = &fx->ix.utts[u];
            /* the data in the slot is this utterance's: tokens, text length, frame count */
            EXPECT(c->text_len[b] == utt->n_tok, "batch %d row %d: text length %d, utterance has %u", n, b,
                  c->text_len[b], utt->n_tok);
            for (int i = 0; i < MAX_TEXT; i++) {
                int want = i < utt->n_tok ? tandem_utt_tokens(&fx->ix, utt)[i] : 0;
                EXPECT(c->tokens[b * MAX_TEXT + i] == want, "batch %d row %d token %d", n, b, i);
            }
            int idx = atoi(tandem_utt_id(&fx->ix, utt) + 1);
            EXPECT(c->frames[b] == fx->c.n_samples[idx] / TANDEM_MEL_HOP, "batch %d row %d: %d frames, expected %d", n, b,
                  c->frames[b], fx->c.n_samples[idx] / TANDEM_MEL_HOP);
        }
        /* a fresh batch holds no poison: its slot was fully rewritten after the last release */
        for (size_t i = 0; i < BATCH * FRAMES * TANDEM_MEL_N_MELS; i++)
            EXPECT(isfinite(c->mels[i]), "batch %d: NaN at %zu (a poisoned slot was not rewritten)", n, i);
        /* hold the slot while the producer runs ahead: it must not be touched */
        usleep(3000);
        EXPECT(tandem_tensor_download(s, c->again, t->mels, sizeof c->again) == TANDEM_OK, "download");
        EXPECT(memcmp(c->mels, c->again, sizeof c->mels) == 0, "batch %d: slot %d changed while in use", n, v.slot);
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
    backend = tandem_test_backend();
    if (backend == TANDEM_BACKEND_CUDA) acquire_ms = 60000;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_slot_states),
        cmocka_unit_test(test_ring_occupancy),
        cmocka_unit_test(test_ring_threads),
        cmocka_unit_test(test_ring_stop_wakes_claim),
        cmocka_unit_test(test_order_once_per_epoch),
        cmocka_unit_test(test_producer_error),
        cmocka_unit_test(test_consumer_error),
        cmocka_unit_test(test_clean_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
