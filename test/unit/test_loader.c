/* test_loader.c — the audio loader threads (runtime/data/loader.h) on corpora the test writes:
 *   - rows hold exactly the written audio (16-bit PCM written as integers q: q / 32768; float
 *     WAVs: as written), zero past the length, the utterance's tokens padded with 0, lengths,
 *     positions, the batch's audio seconds; row r of batch n is the sampler's (n*B + r)-th
 *     utterance (index order without shuffling; with shuffling the order of a sampler built
 *     here from the same items and seed), for 1 and 3 worker threads; no allocation after start;
 *   - a resume position (set_pos) continues that stream; set_pos after start and a second
 *     start are refused;
 *   - files longer than a row, shorter than one hop and not audio are skipped: every delivered
 *     row is a good file in stream order, and too_long / decode_failures / files_ok count
 *     exactly the positions the workers consumed, by kind; each skip is logged naming the file;
 *   - a bad file (also one of finite but huge float samples) met on every epoch is logged once;
 *   - a whole epoch of bad files is an error naming a file; take times out, and returns at once
 *     when the loader is cancelled or stopped while workers and the consumer block;
 *   - events recorded before give_back are waited on (the buffers are refilled correctly);
 *   - stage times: read and decode once per decoded file, resample once per resampled file.
 * Devices: two host devices; with TANDEM_TEST_BACKEND=cuda two cuda devices (a GPU, or the
 * stand-in driver, which reports a wait on a never-recorded event as misuse).
 * Seed printed; replay with TANDEM_TEST_SEED. */
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

#include "platform/os/os.h"
#include "runtime/audio/audio.h"
#include "runtime/data/loader.h"
#include "runtime/data/plan_layout.h"
#include "runtime/data/sampler.h"
#include "runtime/data/stage_times.h"
#include "runtime/data/text_index.h"
#include "test/fixtures.h"

enum { MAX_UTTS = 16, B = 2, MAX_TEXT = 16, S = 4096 /* samples per row: 16 frames */ };

/* HUGE: float samples that are finite but far beyond full scale (1e30) */
typedef enum kind { GOOD_PCM16, GOOD_FLOAT, GOOD_16K, TOO_LONG, TOO_SHORT, CORRUPT, HUGE } kind;
static int is_good(kind k) { return k == GOOD_PCM16 || k == GOOD_FLOAT || k == GOOD_16K; }

static const char *const texts[] = {"a cat", "the dog", "red sun", "blue sea", "one tree", "big hill",
                                    "so far", "we go", "in time", "old man", "new day"};

static uint64_t seed;
static tandem_device *data_dev, *model_dev;

/* ---- the corpus: utterance i is "u<i>", of kind[i] -------------------------------------------- */

typedef struct corpus {
    char dir[256];
    int n;
    kind kind[MAX_UTTS];
    int64_t len[MAX_UTTS];  /* samples the decoder yields (good kinds) */
    float *want[MAX_UTTS];  /* [len] those samples */
    char path[MAX_UTTS][320];
} corpus;

/* Samples at 22050 Hz in [min, max] for a good file (a row holds at most S). */
static int64_t good_len(tandem_rng *r) { return tandem_rng_int(r, 256, S); }

static void write_utt(corpus *c, tandem_test_corpus *w, int i, tandem_rng *r) {
    char id[16];
    snprintf(id, sizeof id, "u%d", i);
    const char *path = tandem_test_corpus_path(w, id);
    snprintf(c->path[i], sizeof c->path[i], "%s", path);
    const kind k = c->kind[i];
    int64_t n = k == TOO_LONG ? tandem_rng_int(r, S + 1, S + 2000)
              : k == TOO_SHORT ? tandem_rng_int(r, 1, 255) : good_len(r);
    if (k == GOOD_16K) n = n * 16000 / 22050; /* decoded length is checked below */
    float *x = malloc(sizeof(float) * (size_t)(n + 1));
    if (k == CORRUPT) {
        unsigned char junk[3000];
        tandem_rng_fill_bytes(r, junk, sizeof junk);
        memcpy(junk, "RIFF", 4); /* a plausible start, then garbage */
        tandem_test_write_file(path, junk, sizeof junk);
    } else if (k == HUGE) {
        for (int64_t j = 0; j < n; j++) x[j] = (float)(1e30 * sin(0.05 * (double)j));
        tandem_test_write_audio(path, x, n, 22050, 1, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
    } else if (k == GOOD_PCM16 || k == TOO_LONG || k == TOO_SHORT) {
        short *q = malloc(sizeof(short) * (size_t)n);
        for (int64_t j = 0; j < n; j++) {
            q[j] = (short)tandem_rng_int(r, -30000, 30000);
            x[j] = (float)q[j] / 32768.0f; /* libsndfile's normalised read of 16-bit PCM */
        }
        SNDFILE *f = tandem_test_sf_create(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 22050, 1);
        assert_int_equal(sf_writef_short(f, q, n), n);
        sf_close(f);
        free(q);
    } else {
        const int rate = k == GOOD_16K ? 16000 : 22050;
        const double f0 = tandem_rng_uniform(r, 100.0f, 3000.0f);
        for (int64_t j = 0; j < n; j++)
            x[j] = (float)(0.5 * sin(2 * M_PI * f0 * (double)j / rate)) + tandem_rng_uniform(r, -0.01f, 0.01f);
        tandem_test_write_audio(path, x, n, rate, 1, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
    }
    tandem_test_corpus_row(w, id, texts[i % (int)(sizeof texts / sizeof texts[0])]);
    c->len[i] = n;
    c->want[i] = x;
}

static void make_corpus(corpus *c, const kind *kinds, int n, tandem_rng *r) {
    memset(c, 0, sizeof *c);
    assert_true(n <= MAX_UTTS);
    assert_int_equal(tandem_test_mkdtemp(c->dir, sizeof c->dir, "test_loader"), 0);
    tandem_test_corpus w;
    tandem_test_corpus_open(&w, c->dir);
    c->n = n;
    for (int i = 0; i < n; i++) {
        c->kind[i] = kinds[i];
        write_utt(c, &w, i, r);
    }
    tandem_test_corpus_close(&w);
    /* resampled files: the documented length, and the decoder's samples as the expectation */
    for (int i = 0; i < n; i++) {
        if (c->kind[i] != GOOD_16K) continue;
        const int64_t frames = c->len[i];
        c->len[i] = (int64_t)llround((double)frames * 22050.0 / 16000.0);
        free(c->want[i]);
        c->want[i] = malloc(sizeof(float) * S);
        int64_t got = 0;
        CHECK(tandem_audio_load(c->path[i], c->want[i], S, &got, NULL));
        assert_int_equal(got, c->len[i]);
    }
}

static void free_corpus(corpus *c) {
    for (int i = 0; i < c->n; i++) free(c->want[i]);
    assert_int_equal(tandem_test_rmtree(c->dir), 0);
}

static void open_index(const corpus *c, tandem_text_index *ix) {
    tandem_text_index_config ic;
    tandem_text_index_config_default(&ic);
    ic.data_dir = c->dir;
    ic.max_text = MAX_TEXT;
    ic.max_samples = 0; /* no duration filter: the loader meets the bad files itself */
    ic.num_workers = 1;
    ic.use_cache = 0;
    CHECK(tandem_text_index_open(&ic, ix));
    assert_int_equal(ix->n_train, (uint32_t)c->n);
}

/* The corpus entry of index utterance u, from its id "u<i>". */
static int entry_of(const tandem_text_index *ix, uint32_t u) {
    int i = -1;
    assert_int_equal(sscanf(tandem_utt_id(ix, &ix->utts[u]), "u%d", &i), 1);
    return i;
}

/* The utterance at sampler position pos of the stream (items, s, shuffle). */
static uint32_t item_at(const tandem_text_index *ix, uint64_t s, int shuffle, tandem_sampler_pos pos) {
    tandem_sampler ref;
    CHECK(tandem_sampler_init(&ref, ix->train, ix->n_train, s, shuffle));
    CHECK(tandem_sampler_set_pos(&ref, pos));
    const uint32_t u = tandem_sampler_next(&ref, NULL);
    tandem_sampler_free(&ref);
    return u;
}

/* ---- a loader ------------------------------------------------------------------------------ */

static tandem_loader_config loader_config(const corpus *c, const tandem_text_index *ix, int workers,
                                          uint64_t s, int shuffle, tandem_stage_times *times) {
    tandem_loader_config lc = {
        .ix = ix, .data_dir = c->dir, .items = ix->train, .n_items = ix->n_train, .batch = B,
        .max_text = MAX_TEXT, .max_samples = S, .num_workers = workers, .seed = s, .shuffle = shuffle,
        .data_dev = data_dev, .model_dev = model_dev, .times = times,
    };
    return lc;
}

/* Row r of b holds corpus entry i's audio, tokens and lengths exactly. */
static void check_row(const corpus *c, const tandem_text_index *ix, const tandem_staged_batch *b, int r) {
    const uint32_t u = b->utt[r];
    const int i = entry_of(ix, u);
    assert_true(is_good(c->kind[i]));
    if (b->lengths[r] != c->len[i])
        fail_msg("batch %lld row %d (u%d): %d samples, expected %lld", (long long)b->seq, r, i, b->lengths[r],
                 (long long)c->len[i]);
    const float *row = b->audio + (size_t)r * S;
    for (int64_t j = 0; j < S; j++) {
        const float want = j < c->len[i] ? c->want[i][j] : 0.0f;
        if (row[j] != want)
            fail_msg("batch %lld row %d (u%d) sample %lld: %.9g, expected %.9g", (long long)b->seq, r, i,
                     (long long)j, row[j], want);
    }
    const tandem_utt *utt = &ix->utts[u];
    const uint16_t *tok = tandem_utt_tokens(ix, utt);
    assert_int_equal(b->text_lengths[r], utt->n_tok);
    for (int t = 0; t < MAX_TEXT; t++) assert_int_equal(b->tokens[r * MAX_TEXT + t], t < utt->n_tok ? tok[t] : 0);
}

/* The batch's rows and seconds, and each row's position against the stream `want` [n][2]
 * (utterance index, linear position). */
static void check_batch(const corpus *c, const tandem_text_index *ix, const tandem_staged_batch *b,
                        const uint32_t *want_utt, const int64_t *want_pos) {
    double secs = 0;
    for (int r = 0; r < B; r++) {
        check_row(c, ix, b, r);
        secs += (double)c->len[entry_of(ix, b->utt[r])] / 22050.0;
        if (want_utt) assert_int_equal(b->utt[r], want_utt[r]);
        if (want_pos) {
            assert_int_equal(b->pos[r].epoch, want_pos[r] / ix->n_train);
            assert_int_equal(b->pos[r].index, want_pos[r] % ix->n_train);
        }
    }
    assert_true(fabs(b->audio_seconds - secs) <= 1e-9 * secs);
}

/* Takes n_batches batches and checks them against the sampler stream from position `from`
 * (every file good: row r of batch k is stream element k*B + r). Taking and giving back
 * allocate nothing (the loader allocated everything at create). */
static void take_stream(tandem_loader *l, const corpus *c, const tandem_text_index *ix, uint64_t s, int shuffle,
                        int64_t from, int n_batches) {
    uint32_t *want_utt = malloc(sizeof(uint32_t) * (size_t)n_batches * B);
    int64_t *want_pos = malloc(sizeof(int64_t) * (size_t)n_batches * B);
    tandem_sampler ref;
    CHECK(tandem_sampler_init(&ref, ix->train, ix->n_train, s, shuffle));
    tandem_sampler_pos p0 = {from / ix->n_train, from % ix->n_train};
    CHECK(tandem_sampler_set_pos(&ref, p0));
    for (int k = 0; k < n_batches * B; k++) {
        tandem_sampler_pos at;
        want_utt[k] = tandem_sampler_next(&ref, &at);
        want_pos[k] = at.epoch * ix->n_train + at.index;
    }
    tandem_sampler_free(&ref);
    const uint64_t allocs = tandem_alloc_count();
    for (int k = 0; k < n_batches; k++) {
        tandem_staged_batch *b = NULL;
        CHECK(tandem_loader_take(l, 10000, &b));
        assert_int_equal(b->seq, k);
        check_batch(c, ix, b, want_utt + k * B, want_pos + k * B);
        tandem_loader_give_back(l, b, 0);
    }
    assert_int_equal(tandem_alloc_count(), allocs);
    free(want_utt);
    free(want_pos);
}

/* ---- tests --------------------------------------------------------------------------------- */

static const kind mixed[] = {GOOD_PCM16, GOOD_FLOAT, GOOD_PCM16, GOOD_FLOAT, GOOD_PCM16, GOOD_FLOAT, GOOD_PCM16};

static void test_rows_in_sampler_order(void **state) {
    (void)state;
    tandem_rng r = {seed ^ 1};
    corpus c;
    make_corpus(&c, mixed, 7, &r);
    tandem_text_index ix;
    open_index(&c, &ix);
    for (int shuffle = 0; shuffle <= 1; shuffle++) {
        for (int workers = 1; workers <= 3; workers += 2) {
            const uint64_t s = tandem_rng_next(&r);
            tandem_loader_config lc = loader_config(&c, &ix, workers, s, shuffle, NULL);
            tandem_loader *l = NULL;
            CHECK(tandem_loader_create(&lc, &l));
            CHECK(tandem_loader_start(l));
            take_stream(l, &c, &ix, s, shuffle, 0, 3 * 7); /* six epochs, batches across their ends */
            tandem_loader_stop(l);
            tandem_loader_stats st;
            tandem_loader_get_stats(l, &st);
            assert_int_equal(st.decode_failures + st.too_long, 0);
            assert_int_equal(st.files_ok, st.next_pos.epoch * 7 + st.next_pos.index);
            assert_true(st.files_ok >= 3 * 7 * B);
            tandem_loader_destroy(l);
            printf("shuffle %d, %d workers: %d batches in sampler order, %llu files decoded\n", shuffle, workers,
                   3 * 7, (unsigned long long)st.files_ok);
        }
    }
    tandem_text_index_free(&ix);
    free_corpus(&c);
}

static void test_resume_position(void **state) {
    (void)state;
    tandem_rng r = {seed ^ 2};
    corpus c;
    make_corpus(&c, mixed, 7, &r);
    tandem_text_index ix;
    open_index(&c, &ix);
    const uint64_t s = tandem_rng_next(&r);
    tandem_loader_config lc = loader_config(&c, &ix, 2, s, 1, NULL);
    for (int trial = 0; trial < 3; trial++) {
        const int64_t from = tandem_rng_int(&r, 0, 4 * 7 - 1);
        tandem_loader *l = NULL;
        CHECK(tandem_loader_create(&lc, &l));
        CHECK(tandem_loader_set_pos(l, (tandem_sampler_pos){from / 7, from % 7}));
        CHECK(tandem_loader_start(l));
        take_stream(l, &c, &ix, s, 1, from, 8);
        assert_int_equal(tandem_loader_set_pos(l, (tandem_sampler_pos){0, 0}), TANDEM_E_STATE);
        assert_int_equal(tandem_loader_start(l), TANDEM_E_STATE);
        tandem_loader_destroy(l);
    }
    tandem_loader *l = NULL;
    CHECK(tandem_loader_create(&lc, &l));
    assert_int_equal(tandem_loader_set_pos(l, (tandem_sampler_pos){0, 7}), TANDEM_E_INVALID);
    assert_int_equal(tandem_loader_set_pos(l, (tandem_sampler_pos){-1, 0}), TANDEM_E_INVALID);
    tandem_loader_destroy(l); /* never started */
    tandem_text_index_free(&ix);
    free_corpus(&c);
}

/* Counts of each outcome over stream positions [0, consumed). */
static void expect_counts(const corpus *c, const tandem_text_index *ix, uint64_t s, int shuffle,
                          const tandem_loader_stats *st) {
    const int64_t consumed = st->next_pos.epoch * ix->n_train + st->next_pos.index;
    tandem_sampler ref;
    CHECK(tandem_sampler_init(&ref, ix->train, ix->n_train, s, shuffle));
    uint64_t ok = 0, too_long = 0, failed = 0;
    for (int64_t k = 0; k < consumed; k++) {
        const kind kd = c->kind[entry_of(ix, tandem_sampler_next(&ref, NULL))];
        if (is_good(kd)) ok++;
        else if (kd == TOO_LONG) too_long++;
        else failed++;
    }
    tandem_sampler_free(&ref);
    printf("  %lld positions consumed: %llu ok, %llu too long, %llu failed (loader: %llu, %llu, %llu)\n",
           (long long)consumed, (unsigned long long)ok, (unsigned long long)too_long, (unsigned long long)failed,
           (unsigned long long)st->files_ok, (unsigned long long)st->too_long,
           (unsigned long long)st->decode_failures);
    assert_int_equal(st->files_ok, ok);
    assert_int_equal(st->too_long, too_long);
    assert_int_equal(st->decode_failures, failed);
}

static const kind with_bad[] = {GOOD_PCM16, TOO_LONG, GOOD_FLOAT, TOO_SHORT, GOOD_PCM16, CORRUPT,
                                GOOD_FLOAT, GOOD_PCM16, TOO_LONG, GOOD_FLOAT};

static void test_bad_files_skipped(void **state) {
    (void)state;
    tandem_rng r = {seed ^ 3};
    corpus c;
    make_corpus(&c, with_bad, 10, &r);
    tandem_text_index ix;
    open_index(&c, &ix);
    for (int workers = 1; workers <= 3; workers += 2) {
        const uint64_t s = tandem_rng_next(&r);
        tandem_loader_config lc = loader_config(&c, &ix, workers, s, 1, NULL);
        tandem_loader *l = NULL;
        CHECK(tandem_loader_create(&lc, &l));
        tandem_test_log_capture(TANDEM_LOG_WARN);
        CHECK(tandem_loader_start(l));
        /* one worker: the good files of the stream, in stream order */
        tandem_sampler ref;
        CHECK(tandem_sampler_init(&ref, ix.train, ix.n_train, s, 1));
        for (int k = 0; k < 12; k++) {
            tandem_staged_batch *b = NULL;
            CHECK(tandem_loader_take(l, 10000, &b));
            for (int row = 0; row < B; row++) {
                check_row(&c, &ix, b, row);
                assert_int_equal(item_at(&ix, s, 1, b->pos[row]), b->utt[row]); /* the row's own position */
                if (workers > 1) continue;
                tandem_sampler_pos at;
                uint32_t u;
                do u = tandem_sampler_next(&ref, &at);
                while (!is_good(c.kind[entry_of(&ix, u)]));
                assert_int_equal(b->utt[row], u);
                assert_int_equal(b->pos[row].epoch, at.epoch);
                assert_int_equal(b->pos[row].index, at.index);
            }
            tandem_loader_give_back(l, b, 0);
        }
        tandem_sampler_free(&ref);
        tandem_loader_stop(l);
        tandem_test_log_stop();
        tandem_loader_stats st;
        tandem_loader_get_stats(l, &st);
        expect_counts(&c, &ix, s, 1, &st);
        const char *log = tandem_test_log_text();
        for (int i = 0; i < c.n; i++) {
            if (is_good(c.kind[i])) continue;
            char want[400];
            snprintf(want, sizeof want, "loader: skipping 'u%d' this time: ", i);
            const char *line = strstr(log, want);
            if (!line) fail_msg("no skip logged for u%d; log:\n%s", i, log);
            const char *end = strchr(line, '\n');
            if (!strstr(line, c.path[i]) || strstr(line, c.path[i]) > end)
                fail_msg("the skip of u%d does not name %s: %.*s", i, c.path[i], (int)(end - line), line);
        }
        tandem_loader_destroy(l);
    }
    tandem_text_index_free(&ix);
    free_corpus(&c);
}

static void test_epoch_of_failures(void **state) {
    (void)state;
    tandem_rng r = {seed ^ 4};
    static const kind bad[] = {CORRUPT, TOO_SHORT, CORRUPT, TOO_SHORT};
    corpus c;
    make_corpus(&c, bad, 4, &r);
    tandem_text_index ix;
    open_index(&c, &ix);
    tandem_loader_config lc = loader_config(&c, &ix, 2, tandem_rng_next(&r), 1, NULL);
    tandem_loader *l = NULL;
    CHECK(tandem_loader_create(&lc, &l));
    tandem_test_log_capture(TANDEM_LOG_ERROR); /* the skips are expected here */
    CHECK(tandem_loader_start(l));
    tandem_staged_batch *b = NULL;
    const uint64_t t0 = tandem_now_ns();
    assert_int_equal(tandem_loader_take(l, 10000, &b), TANDEM_E_FORMAT);
    const char *msg = tandem_last_error();
    printf("%s (after %.3f s)\n", msg, (double)(tandem_now_ns() - t0) / 1e9);
    assert_non_null(strstr(msg, "failed in a row"));
    int named = 0;
    for (int i = 0; i < c.n; i++) named |= strstr(msg, c.path[i]) != NULL;
    assert_true(named);
    assert_int_equal(tandem_loader_take(l, 0, &b), TANDEM_E_FORMAT); /* stays failed */
    tandem_loader_destroy(l);
    tandem_test_log_stop();
    tandem_text_index_free(&ix);
    free_corpus(&c);
}

/* A bad file met on every epoch is logged once (naming the file and why), counted every time;
 * huge float samples are such a file. */
static void test_bad_file_reported_once(void **state) {
    (void)state;
    tandem_rng r = {seed ^ 9};
    static const kind kinds[] = {GOOD_PCM16, HUGE, GOOD_FLOAT, CORRUPT};
    corpus c;
    make_corpus(&c, kinds, 4, &r);
    tandem_text_index ix;
    open_index(&c, &ix);
    tandem_loader_config lc = loader_config(&c, &ix, 1, tandem_rng_next(&r), 1, NULL);
    tandem_loader *l = NULL;
    CHECK(tandem_loader_create(&lc, &l));
    tandem_test_log_capture(TANDEM_LOG_WARN);
    CHECK(tandem_loader_start(l));
    for (int k = 0; k < 8; k++) { /* 16 good rows: 8 epochs, each visiting both bad files */
        tandem_staged_batch *b = NULL;
        CHECK(tandem_loader_take(l, 10000, &b));
        for (int row = 0; row < B; row++) check_row(&c, &ix, b, row);
        tandem_loader_give_back(l, b, 0);
    }
    tandem_loader_stop(l);
    tandem_test_log_stop();
    tandem_loader_stats st;
    tandem_loader_get_stats(l, &st);
    assert_true(st.decode_failures >= 2 * 7);
    const char *log = tandem_test_log_text();
    for (int i = 1; i < 4; i += 2) {
        char want[64];
        snprintf(want, sizeof want, "loader: skipping 'u%d' this time: ", i);
        int n = 0;
        for (const char *p = log; (p = strstr(p, want)) != NULL; p++) n++;
        if (n != 1) fail_msg("u%d: %d skip lines, want 1 (counted %llu failures); log:\n%s", i, n,
                             (unsigned long long)st.decode_failures, log);
        const char *line = strstr(log, want), *end = strchr(line, '\n');
        if (!strstr(line, c.path[i]) || strstr(line, c.path[i]) > end) fail_msg("u%d: the file is not named", i);
        /* it is retried at every visit (a file may be fixed meanwhile): the line says so */
        if (!strstr(line, "tried again at each visit") || strstr(line, "tried again") > end)
            fail_msg("u%d: the line does not say the file is tried again", i);
    }
    const char *huge = strstr(log, "loader: skipping 'u1' this time: ");
    assert_true(strstr(huge, "full scale") && strstr(huge, "full scale") < strchr(huge, '\n'));
    tandem_loader_destroy(l);
    tandem_text_index_free(&ix);
    free_corpus(&c);
}

typedef struct blocked_take {
    tandem_loader *l;
    tandem_status st;
    char msg[256];
} blocked_take;

static void take_forever(void *arg) {
    blocked_take *t = arg;
    tandem_staged_batch *b = NULL;
    t->st = tandem_loader_take(t->l, -1, &b);
    snprintf(t->msg, sizeof t->msg, "%s", tandem_last_error());
}

static void stop_loader(void *l) { tandem_loader_stop(l); }
static void destroy_loader(void *l) { tandem_loader_destroy(l); }

static void *cancel_later(void *arg) {
    usleep(50000);
    tandem_loader_cancel(arg);
    return NULL;
}

/* Every staged batch taken and none given back: the workers block, and so does take. */
static void test_take_timeout_and_stop(void **state) {
    (void)state;
    tandem_rng r = {seed ^ 5};
    corpus c;
    make_corpus(&c, mixed, 7, &r);
    tandem_text_index ix;
    open_index(&c, &ix);
    tandem_loader_config lc = loader_config(&c, &ix, 3, tandem_rng_next(&r), 0, NULL);
    tandem_loader *l = NULL;
    CHECK(tandem_loader_create(&lc, &l));
    CHECK(tandem_loader_start(l));
    tandem_staged_batch *held[TANDEM_LAYOUT_STAGING];
    for (int k = 0; k < TANDEM_LAYOUT_STAGING; k++) CHECK(tandem_loader_take(l, 10000, &held[k]));
    uint64_t t0 = tandem_now_ns();
    tandem_staged_batch *b = NULL;
    assert_int_equal(tandem_loader_take(l, 50, &b), TANDEM_E_STATE);
    double waited = (double)(tandem_now_ns() - t0) / 1e6;
    printf("timeout: %s (%.1f ms)\n", tandem_last_error(), waited);
    assert_non_null(strstr(tandem_last_error(), "not staged after 50 ms"));
    assert_true(waited >= 49.0 && waited < 2000.0);
    /* a consumer blocked without a timeout is released by a cancel from another thread; a
     * loader that never wakes it fails here instead of hanging the suite */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_later, l), 0);
    blocked_take bt = {l, TANDEM_OK, ""};
    const int returned = tandem_test_finishes_within(take_forever, &bt, 2000, &waited);
    pthread_join(th, NULL);
    if (!returned) fail_msg("take(-1) still blocked 2 s after a cancel 50 ms in");
    printf("cancel released a blocked take after %.1f ms: %s\n", waited, bt.msg);
    assert_int_equal(bt.st, TANDEM_E_STATE);
    /* stop joins workers blocked on a full set of staged batches */
    if (!tandem_test_finishes_within(stop_loader, l, 2000, &waited)) fail_msg("stop still joining after 2 s");
    assert_int_equal(tandem_loader_take(l, -1, &b), TANDEM_E_STATE); /* at once, after a stop */
    for (int j = 0; j < TANDEM_LAYOUT_STAGING; j++) tandem_loader_give_back(l, held[j], 0);
    tandem_loader_destroy(l);
    /* destroyed before anything was taken, with the workers mid-corpus */
    CHECK(tandem_loader_create(&lc, &l));
    CHECK(tandem_loader_start(l));
    if (!tandem_test_finishes_within(destroy_loader, l, 2000, &waited)) fail_msg("destroy still joining after 2 s");
    tandem_text_index_free(&ix);
    free_corpus(&c);
}

/* Each batch handed back with both events recorded after (empty) work on a stream of each
 * device: the loader waits on them before refilling, and the rows stay right. */
static void test_recorded_events(void **state) {
    (void)state;
    tandem_rng r = {seed ^ 6};
    corpus c;
    make_corpus(&c, mixed, 7, &r);
    tandem_text_index ix;
    open_index(&c, &ix);
    tandem_stream *ds = NULL, *ms = NULL;
    CHECK(tandem_stream_create(data_dev, &ds));
    CHECK(tandem_stream_create(model_dev, &ms));
    tandem_loader_config lc = loader_config(&c, &ix, 2, 0, 0, NULL);
    tandem_loader *l = NULL;
    CHECK(tandem_loader_create(&lc, &l));
    CHECK(tandem_loader_start(l));
    for (int k = 0; k < 10; k++) {
        tandem_staged_batch *b = NULL;
        CHECK(tandem_loader_take(l, 10000, &b));
        uint32_t want_utt[B];
        for (int row = 0; row < B; row++) want_utt[row] = ix.train[(k * B + row) % 7];
        check_batch(&c, &ix, b, want_utt, NULL);
        const int recorded = k % 3 != 2; /* some batches go back without uploads */
        if (recorded) {
            CHECK(tandem_event_record(b->audio_sent, ds));
            CHECK(tandem_event_record(b->text_sent, ms));
        }
        tandem_loader_give_back(l, b, recorded);
    }
    tandem_loader_cancel(l);
    CHECK(tandem_stream_sync(ds));
    CHECK(tandem_stream_sync(ms));
    tandem_loader_destroy(l);
    tandem_stream_destroy(ds);
    tandem_stream_destroy(ms);
    tandem_text_index_free(&ix);
    free_corpus(&c);
}

static void test_stage_times(void **state) {
    (void)state;
    tandem_rng r = {seed ^ 7};
    static const kind kinds[] = {GOOD_PCM16, GOOD_16K, GOOD_FLOAT, TOO_LONG, GOOD_16K, GOOD_PCM16};
    corpus c;
    make_corpus(&c, kinds, 6, &r);
    tandem_text_index ix;
    open_index(&c, &ix);
    tandem_stage_times times;
    tandem_stage_times_init(&times);
    tandem_loader_config lc = loader_config(&c, &ix, 2, 0, 0, &times);
    tandem_loader *l = NULL;
    CHECK(tandem_loader_create(&lc, &l));
    tandem_test_log_capture(TANDEM_LOG_ERROR);
    CHECK(tandem_loader_start(l));
    for (int k = 0; k < 5; k++) {
        tandem_staged_batch *b = NULL;
        CHECK(tandem_loader_take(l, 10000, &b));
        for (int row = 0; row < B; row++) check_row(&c, &ix, b, row); /* resampled rows included */
        tandem_loader_give_back(l, b, 0);
    }
    tandem_loader_stop(l);
    tandem_test_log_stop();
    tandem_loader_stats st;
    tandem_loader_get_stats(l, &st);
    expect_counts(&c, &ix, 0, 0, &st);
    /* positions consumed in index order: the resampled ones among them */
    const int64_t consumed = st.next_pos.epoch * ix.n_train + st.next_pos.index;
    uint64_t resampled = 0;
    for (int64_t k = 0; k < consumed; k++) resampled += c.kind[entry_of(&ix, ix.train[k % ix.n_train])] == GOOD_16K;
    tandem_stage_stat s[TANDEM_STAGE_COUNT];
    tandem_stage_times_get(&times, s);
    char table[2048];
    tandem_stage_times_format(s, 0, table, sizeof table);
    printf("%llu files, %llu resampled:\n%s", (unsigned long long)st.files_ok, (unsigned long long)resampled, table);
    assert_int_equal(st.resampled, resampled);
    assert_int_equal(s[TANDEM_STAGE_READ].count, st.files_ok); /* too-long files stop in the decoder */
    assert_int_equal(s[TANDEM_STAGE_DECODE].count, st.files_ok);
    assert_int_equal(s[TANDEM_STAGE_RESAMPLE].count, resampled);
    for (int k = TANDEM_STAGE_H2D; k <= TANDEM_STAGE_DEVICE_RESAMPLE; k++) assert_int_equal(s[k].count, 0);
    uint64_t by_format = 0; /* every decode also under its container's stage */
    for (int k = TANDEM_STAGE_DECODE_WAV; k <= TANDEM_STAGE_DECODE_OTHER; k++) by_format += s[k].count;
    assert_int_equal(by_format, st.files_ok);
    tandem_loader_destroy(l);
    tandem_stage_times_destroy(&times);
    tandem_text_index_free(&ix);
    free_corpus(&c);
}

static void test_bad_config(void **state) {
    (void)state;
    tandem_rng r = {seed ^ 8};
    corpus c;
    make_corpus(&c, mixed, 3, &r);
    tandem_text_index ix;
    open_index(&c, &ix);
    const tandem_loader_config good = loader_config(&c, &ix, 1, 0, 0, NULL);
    for (int k = 0; k < 6; k++) {
        tandem_loader_config lc = good;
        switch (k) {
        case 0: lc.batch = 0; break;
        case 1: lc.num_workers = 0; break;
        case 2: lc.n_items = 0; break;
        case 3: lc.max_samples = 0; break;
        case 4: lc.model_dev = NULL; break;
        default: lc.ix = NULL; break;
        }
        tandem_loader *l = NULL;
        assert_int_equal(tandem_loader_create(&lc, &l), TANDEM_E_INVALID);
        assert_null(l);
        assert_non_null(strstr(tandem_last_error(), "loader: bad configuration"));
    }
    tandem_text_index_free(&ix);
    free_corpus(&c);
}

static int group_setup(void **state) {
    (void)state;
    const tandem_backend be = tandem_test_backend();
    if (tandem_device_open(be, 0, &data_dev) != TANDEM_OK) {
        fprintf(stderr, "test_loader: data device: %s\n", tandem_last_error());
        return -1;
    }
    if (tandem_device_open(be, 1, &model_dev) != TANDEM_OK) model_dev = data_dev; /* one GPU: both roles */
    printf("devices: %s, %s\n", be == TANDEM_BACKEND_CUDA ? "cuda" : "host",
           model_dev == data_dev ? "one device in both roles" : "data 0, model 1");
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    if (model_dev != data_dev) tandem_device_close(model_dev);
    tandem_device_close(data_dev);
    return 0;
}

int main(void) {
    seed = tandem_test_seed("test_loader");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_in_sampler_order), cmocka_unit_test(test_resume_position),
        cmocka_unit_test(test_bad_files_skipped),     cmocka_unit_test(test_epoch_of_failures),
        cmocka_unit_test(test_bad_file_reported_once),
        cmocka_unit_test(test_take_timeout_and_stop), cmocka_unit_test(test_recorded_events),
        cmocka_unit_test(test_stage_times),           cmocka_unit_test(test_bad_config),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
