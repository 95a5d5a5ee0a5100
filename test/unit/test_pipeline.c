/* test_pipeline.c — the whole data side on two devices, on a tiny corpus the test writes
 * (sine tones through libsndfile: 22050 Hz 16-bit, 16000 Hz 16-bit (resampled on the data
 * device), 11025 Hz (resampled on the CPU: not a device rate), stereo float):
 *   - the mels, mask, stop targets and frame lengths in the ring equal tandem_mel_batch of the
 *     same audio computed directly (decoded at its rate with tandem_audio_decode_native and
 *     resampled by tandem_resample_batch, on a device of its own),
 *     with peer copies and with copies staged through pinned host memory;
 *   - a file corrupted after the index was built is skipped and counted mid-run, its rows are
 *     filled with the next utterances, and the run goes on;
 *   - length bucketing: every utterance once per epoch, batches of the fixed shapes only, their
 *     packed features equal to the direct computation's leading frames;
 *   - backend AUTO gives cuda devices whenever the driver reports any, else host devices;
 *   - the stage table saw every stage: decode for every file (and under WAV), the device
 *     resampler every batch, the CPU resampler on its own for the 11025 Hz files only.
 * Devices: two host devices by default; with TANDEM_TEST_BACKEND=cuda the roles of
 * tandem_pipeline_open_devices on the cuda backend (a GPU, or the stand-in driver, which
 * reports every misuse as a "fakecuda: error" line). On the stand-in the whole file runs once
 * more in a child process with TANDEM_FAKECUDA_NO_PEER=1, so the staged path is also taken
 * because the devices lack peer access (not only because it was forced). */
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

#include "runtime/audio/audio.h"
#include "runtime/core/config.h"
#include "runtime/core/dev.h"
#include "runtime/audio/mel_device.h"
#include "runtime/audio/resample.h"
#include "platform/os/os.h"
#include "runtime/data/buckets.h"
#include "runtime/data/pipeline.h"
#include "test/fixtures.h"
#include "runtime/data/text_index.h"
#include "tools/env_options.h"

enum { N_UTTS = 9, BATCH = 3, FRAMES = 32, MAX_TEXT = 16, M = TANDEM_MEL_N_MELS };
#define SAMPLES (FRAMES * TANDEM_MEL_HOP)

static tandem_backend backend = TANDEM_BACKEND_HOST; /* TANDEM_TEST_BACKEND=cuda: TANDEM_BACKEND_CUDA */
static int64_t acquire_ms = 10000;                  /* per batch; longer on the (emulating) stand-in */

static const char *const texts[N_UTTS] = {"a cat", "the dog", "red sun", "blue sea", "one tree",
                                          "big hill", "so far", "we go", "in time"};

typedef struct corpus {
    char dir[256];
} corpus;

/* Utterance i: 22050 Hz 16-bit mono, except i % 4 == 1 (16000 Hz, resampled on the data
 * device), i % 4 == 2 (stereo float) and i % 4 == 3 (11025 Hz, resampled by libsamplerate). Lengths random, at most SAMPLES at 22050 Hz. */
static void write_corpus(corpus *c, tandem_rng *r) {
    assert_int_equal(tandem_test_mkdtemp(c->dir, sizeof c->dir, "test_pipeline"), 0);
    tandem_test_corpus w;
    tandem_test_corpus_open(&w, c->dir);
    static float buf[2 * SAMPLES];
    for (int i = 0; i < N_UTTS; i++) {
        const int rate = i % 4 == 1 ? 16000 : i % 4 == 3 ? 11025 : 22050, ch = i % 4 == 2 ? 2 : 1;
        const int n = (int)tandem_rng_int(r, 300, (int64_t)SAMPLES * rate / 22050 - 8);
        const double f = tandem_rng_uniform(r, 100.0f, 4000.0f), f2 = tandem_rng_uniform(r, 100.0f, 4000.0f);
        for (int k = 0; k < n; k++)
            for (int j = 0; j < ch; j++)
                buf[k * ch + j] = (float)(0.4 * sin(2 * M_PI * (j ? f2 : f) * k / rate) +
                                          0.05 * tandem_rng_uniform(r, -1.0f, 1.0f));
        char id[16];
        snprintf(id, sizeof id, "u%d", i);
        tandem_test_corpus_add(&w, id, texts[i], buf, n, rate, ch,
                               SF_FORMAT_WAV | (ch == 2 ? SF_FORMAT_FLOAT : SF_FORMAT_PCM_16));
    }
    tandem_test_corpus_close(&w);
}

static void remove_corpus(corpus *c) { assert_int_equal(tandem_test_rmtree(c->dir), 0); }

static void open_index(const corpus *c, tandem_text_index *ix) {
    tandem_text_index_config ic;
    tandem_text_index_config_default(&ic);
    ic.data_dir = c->dir;
    ic.max_text = MAX_TEXT;
    ic.max_samples = SAMPLES;
    ic.num_workers = 1;
    ic.use_cache = 0;
    assert_int_equal(tandem_text_index_open(&ic, ix), TANDEM_OK);
    assert_int_equal(ix->n_train, N_UTTS);
    for (uint32_t i = 0; i < ix->count; i++) assert_true(ix->utts[i].n_samples > 0); /* durations scanned */
}

/* The direct computation: each file decoded at its rate, the resampling kernel and
 * tandem_mel_batch on a device and pool of its own. */
#define IN_SAMPLES (SAMPLES * 48000 / 22050 + 8) /* >= tandem_resample_in_samples(SAMPLES) */
typedef struct reference {
    tandem_device *dev;
    tandem_pool *pool;
    tandem_stream *s;
    tandem_mel_plan plan;
    tandem_resample_plan rs;
    tandem_audio_decoder *dec;
    float audio[BATCH * IN_SAMPLES];
    int32_t lengths[BATCH], cls[BATCH];
} reference;

/* Host: a third host device. Cuda: device 0 again (its own handle, pool and stream), so the
 * reference runs the same kernels and GEMM as the pipeline's data device. */
static void ref_init(reference *r) {
    const int ordinal = backend == TANDEM_BACKEND_CUDA ? 0 : 2;
    if (tandem_device_open(backend, ordinal, &r->dev) != TANDEM_OK) fail_msg("reference device: %s", tandem_last_error());
    assert_int_equal(tandem_pool_create(r->dev, "ref", 0, &r->pool), TANDEM_OK);
    assert_int_equal(tandem_mel_plan_declare(r->pool, r->dev, "ref", BATCH, FRAMES, SAMPLES, 0, &r->plan), TANDEM_OK);
    assert_int_equal(tandem_resample_plan_declare(r->pool, "ref_rs", BATCH, SAMPLES, &r->rs), TANDEM_OK);
    assert_true(r->rs.in_stride <= IN_SAMPLES);
    assert_int_equal(tandem_resample_plan_prepare(&r->rs), TANDEM_OK);
    assert_int_equal(tandem_pool_commit(r->pool), TANDEM_OK);
    assert_int_equal(tandem_stream_create(r->dev, &r->s), TANDEM_OK);
    assert_int_equal(tandem_mel_upload_constants(&r->plan, r->s), TANDEM_OK);
    assert_int_equal(tandem_resample_upload(&r->rs, r->s), TANDEM_OK);
    assert_int_equal(tandem_audio_decoder_create(&r->dec), TANDEM_OK);
}

static void ref_free(reference *r) {
    tandem_stream_destroy(r->s);
    tandem_mel_plan_release(&r->plan);
    tandem_resample_plan_release(&r->rs);
    tandem_audio_decoder_free(r->dec);
    tandem_pool_destroy(r->pool);
    tandem_device_close(r->dev);
}

typedef struct host_batch {
    float mels[BATCH * FRAMES * M], mask[BATCH * FRAMES], stop[BATCH * FRAMES];
    int32_t frames[BATCH];
} host_batch;

static void download_slot(tandem_stream *s, const tandem_ring_slot *t, host_batch *h) {
    assert_int_equal(tandem_tensor_download(s, h->mels, t->mels, sizeof h->mels), TANDEM_OK);
    assert_int_equal(tandem_tensor_download(s, h->mask, t->frame_mask, sizeof h->mask), TANDEM_OK);
    assert_int_equal(tandem_tensor_download(s, h->stop, t->stop_targets, sizeof h->stop), TANDEM_OK);
    assert_int_equal(tandem_tensor_download(s, h->frames, t->frame_lengths, sizeof h->frames), TANDEM_OK);
    assert_int_equal(tandem_stream_sync(s), TANDEM_OK);
}

/* Reference features of the batch's utterances, decoded independently of the loader. */
static void ref_batch(reference *r, const corpus *c, const tandem_text_index *ix, const uint32_t *utt, host_batch *h) {
    memset(r->audio, 0, sizeof r->audio);
    int64_t n22[BATCH];
    const int64_t stride = r->rs.in_stride;
    for (int b = 0; b < BATCH; b++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", c->dir, tandem_utt_audio(ix, &ix->utts[utt[b]]));
        int64_t n = 0;
        int rate = 0;
        assert_int_equal(tandem_audio_decode_native(r->dec, path, r->audio + (size_t)b * stride, stride, SAMPLES, &n,
                                                    &rate, NULL), TANDEM_OK);
        r->lengths[b] = (int32_t)n;
        r->cls[b] = rate == 22050 ? TANDEM_K_RS_COPY : tandem_resample_class(rate);
        n22[b] = tandem_audio_resampled_count(n, rate);
    }
    assert_int_equal(tandem_tensor_upload(r->s, r->rs.in, r->audio, sizeof(float) * (size_t)(BATCH * stride)), TANDEM_OK);
    assert_int_equal(tandem_tensor_upload(r->s, r->rs.in_len, r->lengths, sizeof r->lengths), TANDEM_OK);
    assert_int_equal(tandem_tensor_upload(r->s, r->rs.cls, r->cls, sizeof r->cls), TANDEM_OK);
    assert_int_equal(tandem_resample_batch(&r->rs, r->s, stride, r->plan.audio, r->plan.lengths, SAMPLES), TANDEM_OK);
    assert_int_equal(tandem_mel_batch(&r->plan, r->s), TANDEM_OK);
    assert_int_equal(tandem_tensor_download(r->s, h->mels, r->plan.mel, sizeof h->mels), TANDEM_OK);
    assert_int_equal(tandem_tensor_download(r->s, h->mask, r->plan.mask, sizeof h->mask), TANDEM_OK);
    assert_int_equal(tandem_tensor_download(r->s, h->stop, r->plan.stop, sizeof h->stop), TANDEM_OK);
    assert_int_equal(tandem_tensor_download(r->s, h->frames, r->plan.frames, sizeof h->frames), TANDEM_OK);
    assert_int_equal(tandem_stream_sync(r->s), TANDEM_OK);
    for (int b = 0; b < BATCH; b++) assert_int_equal(h->frames[b], n22[b] / TANDEM_MEL_HOP);
}

typedef struct run {
    tandem_config cfg;
    tandem_device *data_dev, *model_dev;
    tandem_pool *data_pool, *model_pool;
    tandem_pipeline *pipe;
} run;

/* Length bucketing for the next run_start (0: off). */
static int start_k;
static const uint32_t *start_frames;

static void run_start(run *x, const corpus *c, const tandem_text_index *ix, uint64_t seed, int force_staged) {
    memset(x, 0, sizeof *x);
    tandem_config_init(&x->cfg);
    x->cfg.batch_size = BATCH;
    x->cfg.max_frames = FRAMES;
    x->cfg.max_text = MAX_TEXT;
    x->cfg.prefetch_buffer_size = 2;
    x->cfg.num_workers = 2;
    x->cfg.seed = (int64_t)(seed >> 1);
    assert_int_equal(tandem_config_check(&x->cfg), TANDEM_OK);
    char desc[256];
    if (tandem_pipeline_open_devices(backend, &x->data_dev, &x->model_dev, desc, sizeof desc) != TANDEM_OK)
        fail_msg("open devices: %s", tandem_last_error());
    printf("devices: %s\n", desc);
    const int can_peer = x->data_dev == x->model_dev || tandem_device_can_access_peer(x->model_dev, x->data_dev);
    assert_int_equal(tandem_pool_create(x->data_dev, "data", 0, &x->data_pool), TANDEM_OK);
    assert_int_equal(tandem_pool_create(x->model_dev, "model", 0, &x->model_pool), TANDEM_OK);
    tandem_pipeline_options o;
    tandem_pipeline_options_init(&o);
    o.cfg = &x->cfg;
    o.ix = ix;
    o.data_dir = c->dir;
    o.data_dev = x->data_dev;
    o.model_dev = x->model_dev;
    o.data_pool = x->data_pool;
    o.model_pool = x->model_pool;
    o.force_staged = force_staged;
    o.poison_on_release = 1;
    o.n_buckets = start_k;
    o.bucket_frames = start_frames;
    assert_int_equal(tandem_pipeline_create(&o, &x->pipe), TANDEM_OK);
    assert_int_equal(tandem_pipeline_peer(x->pipe), !force_staged && can_peer);
    const char *no_peer = getenv("TANDEM_FAKECUDA_NO_PEER");
    if (backend == TANDEM_BACKEND_CUDA && no_peer && strcmp(no_peer, "1") == 0 && x->data_dev != x->model_dev)
        assert_int_equal(tandem_pipeline_peer(x->pipe), 0); /* the stand-in without peer access */
    assert_int_equal(tandem_pool_commit(x->data_pool), TANDEM_OK);
    assert_int_equal(tandem_pool_commit(x->model_pool), TANDEM_OK);
    assert_int_equal(tandem_pipeline_start(x->pipe), TANDEM_OK);
}

static void run_end(run *x) {
    tandem_pipeline_destroy(x->pipe);
    tandem_pool_destroy(x->data_pool);
    tandem_pool_destroy(x->model_pool);
    tandem_pipeline_close_devices(x->data_dev, x->model_dev);
}

/* Frames past an item's length hold silence, ln(1e-5), exactly (they feed the model's prenet;
 * a loud 0 there taught the stop head "input 0 → stop"). Counts the padded values seen. */
static int64_t padded_values_seen;
static void check_silence_padding(const host_batch *got, int64_t seq) {
    for (int b = 0; b < BATCH; b++)
        for (int f = got->frames[b]; f < FRAMES; f++)
            for (int m = 0; m < M; m++) {
                const float x = got->mels[((size_t)b * FRAMES + f) * M + m];
                if (x != tandem_mel_silence())
                    fail_msg("batch %lld row %d padded frame %d band %d: %g, expected silence ln(1e-5) = %g",
                             (long long)seq, b, f, m, (double)x, (double)tandem_mel_silence());
                padded_values_seen++;
            }
}

static void check_equal(const host_batch *got, const host_batch *want, int64_t seq) {
    double max_diff = 0;
    for (size_t i = 0; i < BATCH * FRAMES * M; i++) {
        assert_true(isfinite(got->mels[i]));
        double d = fabs((double)got->mels[i] - want->mels[i]);
        if (d > max_diff) max_diff = d;
    }
    if (max_diff > 1e-6) fail_msg("batch %lld: ring mels differ from the direct computation by %g", (long long)seq, max_diff);
    assert_memory_equal(got->mask, want->mask, sizeof got->mask);
    assert_memory_equal(got->stop, want->stop, sizeof got->stop);
    assert_memory_equal(got->frames, want->frames, sizeof got->frames);
    check_silence_padding(got, seq);
}

static void run_and_compare(int force_staged) {
    tandem_rng r = {tandem_test_seed(force_staged ? "test_pipeline staged" : "test_pipeline peer")};
    corpus c;
    write_corpus(&c, &r);
    tandem_text_index ix;
    open_index(&c, &ix);
    reference ref;
    ref_init(&ref);
    run x;
    run_start(&x, &c, &ix, tandem_rng_next(&r), force_staged);
    tandem_stream *cs = tandem_pipeline_consumer_stream(x.pipe);
    static host_batch got, want;
    const int n_batches = 2 * N_UTTS / BATCH; /* two epochs */
    padded_values_seen = 0;
    for (int n = 0; n < n_batches; n++) {
        tandem_batch_view v;
        assert_int_equal(tandem_pipeline_acquire(x.pipe, &v, acquire_ms), TANDEM_OK);
        download_slot(cs, v.t, &got);
        ref_batch(&ref, &c, &ix, v.utt, &want);
        check_equal(&got, &want, v.seq);
        assert_int_equal(tandem_pipeline_release(x.pipe, v.slot), TANDEM_OK);
    }
    assert_int_equal(tandem_pipeline_stop(x.pipe), TANDEM_OK);
    assert_true(padded_values_seen > 0); /* the corpus has items shorter than max_frames */
    tandem_pipeline_stats s;
    tandem_pipeline_get_stats(x.pipe, &s);
    assert_int_equal(s.consumed, n_batches);
    assert_int_equal(s.decode_failures, 0);
    assert_true(s.resampled > 0 && s.resampled_cpu > 0 && s.resampled_cpu < s.resampled);
    for (int st = 0; st <= TANDEM_STAGE_DECODE_WAV; st++) assert_true(s.stages[st].count > 0);
    /* decode is timed for every file (all WAV here), the CPU resampler on its own for the
       11025 Hz files only (16000 Hz is resampled on the data device, every batch) */
    assert_int_equal(s.stages[TANDEM_STAGE_DECODE].count, s.files_ok);
    assert_int_equal(s.stages[TANDEM_STAGE_DECODE_WAV].count, s.files_ok);
    assert_int_equal(s.stages[TANDEM_STAGE_RESAMPLE].count, s.resampled_cpu);
    assert_int_equal(s.stages[TANDEM_STAGE_DEVICE_RESAMPLE].count, s.batches);
    assert_true(s.audio_seconds > 0 && s.wall_ms > 0 && s.data_busy_pct > 0);
    char table[2048];
    tandem_stage_times_format(s.stages, s.wall_ms, table, sizeof table);
    printf("%s", table);
    run_end(&x);
    ref_free(&ref);
    tandem_text_index_free(&ix);
    remove_corpus(&c);
}

static void test_ring_equals_direct_peer(void **state) {
    (void)state;
    run_and_compare(0);
}

static void test_ring_equals_direct_staged(void **state) {
    (void)state;
    run_and_compare(1);
}

static void test_corrupt_file_mid_run(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_pipeline corrupt")};
    corpus c;
    write_corpus(&c, &r);
    tandem_text_index ix;
    open_index(&c, &ix); /* durations cached while the file was fine */
    const int bad = (int)tandem_rng_int(&r, 0, N_UTTS - 1);
    char path[600];
    snprintf(path, sizeof path, "%s/wavs/u%d.wav", c.dir, bad);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    for (int i = 0; i < 64; i++) fputc((int)(tandem_rng_next(&r) & 0xff), f); /* garbage over the header */
    fclose(f);
    uint32_t bad_utt = UINT32_MAX;
    for (uint32_t i = 0; i < ix.count; i++)
        if (atoi(tandem_utt_id(&ix, &ix.utts[i]) + 1) == bad) bad_utt = i;
    assert_true(bad_utt != UINT32_MAX);

    run x;
    run_start(&x, &c, &ix, tandem_rng_next(&r), 0);
    tandem_stream *cs = tandem_pipeline_consumer_stream(x.pipe);
    static host_batch got;
    int seen[N_UTTS] = {0};
    const int n_batches = 3 * N_UTTS / BATCH; /* three epochs: the bad file comes up three times */
    for (int n = 0; n < n_batches; n++) {
        tandem_batch_view v;
        assert_int_equal(tandem_pipeline_acquire(x.pipe, &v, acquire_ms), TANDEM_OK);
        download_slot(cs, v.t, &got);
        for (size_t i = 0; i < BATCH * FRAMES * M; i++) assert_true(isfinite(got.mels[i]));
        for (int b = 0; b < BATCH; b++) {
            assert_int_not_equal(v.utt[b], bad_utt);
            seen[v.utt[b]]++;
        }
        assert_int_equal(tandem_pipeline_release(x.pipe, v.slot), TANDEM_OK);
    }
    assert_int_equal(tandem_pipeline_stop(x.pipe), TANDEM_OK);
    tandem_pipeline_stats s;
    tandem_pipeline_get_stats(x.pipe, &s);
    printf("corrupt u%d: %llu decode failures counted, %llu files decoded\n", bad,
           (unsigned long long)s.decode_failures, (unsigned long long)s.files_ok);
    /* the first two epochs' worth of rows were consumed: the file failed at least twice */
    assert_true(s.decode_failures >= 2);
    for (uint32_t u = 0; u < N_UTTS; u++)
        if (u != bad_utt) assert_true(seen[u] >= 2);
    run_end(&x);
    tandem_text_index_free(&ix);
    remove_corpus(&c);
}

/* One bucketed batch against the direct computation at max_frames: its features are that
 * computation's first v->frames frames of each row, packed [B, frames, 80] (mask, stop targets
 * likewise), silence past each row's frames. */
static void check_bucketed(tandem_stream *cs, const tandem_batch_view *v, const host_batch *want) {
    static host_batch got; /* whole tensors; only the leading [B, F] part is the batch's */
    const int F = v->frames;
    download_slot(cs, v->t, &got);
    int64_t real = 0;
    for (int b = 0; b < BATCH; b++) {
        assert_int_equal(got.frames[b], want->frames[b]);
        assert_true(got.frames[b] <= F);
        real += got.frames[b];
        for (int f = 0; f < F; f++) {
            for (int m = 0; m < M; m++) {
                const float g = got.mels[((size_t)b * F + f) * M + m], w = want->mels[((size_t)b * FRAMES + f) * M + m];
                if (fabs((double)g - w) > 1e-6)
                    fail_msg("batch %lld row %d frame %d band %d: %g, direct %g", (long long)v->seq, b, f, m, g, w);
            }
            assert_true(got.mask[b * F + f] == want->mask[b * FRAMES + f]);
            assert_true(got.stop[b * F + f] == want->stop[b * FRAMES + f]);
        }
    }
    assert_int_equal(v->real_frames, real);
}

/* The ring copies the device layer recorded (dev.h's recorder): the producer's four per batch, in
 * batch order (mels, mask, stop, frame lengths; peer, same-device or staged D2H, never the test's
 * own downloads on cs and the reference's stream). Each batch's copies must move only its class's packed [B, frames, ...]
 * part: BATCH * frames * (M + 2) floats + the lengths, against the whole slot's
 * BATCH * FRAMES * (M + 2) + BATCH. seq_frames [n]: the class of batch seq. */
static void check_ring_copy_bytes(const tandem_dev_recorder *rec, const tandem_stream *cs, const tandem_stream *ref,
                                  const int *seq_frames, int n) {
    assert_true(rec->n <= rec->cap);
    int64_t got[4 * 64], g = 0;
    for (int64_t i = 0; i < rec->n && g < 4 * 64; i++) {
        const tandem_rec_entry *e = &rec->entries[i];
        if (e->kind == TANDEM_REC_COPY_PEER || e->kind == TANDEM_REC_COPY_D2D ||
            (e->kind == TANDEM_REC_COPY_D2H && e->stream != cs && e->stream != ref))
            got[g++] = (int64_t)e->cost.bytes_read;
    }
    assert_true(g >= 4 * (int64_t)n);
    const int64_t whole = (int64_t)BATCH * FRAMES * (M + 2) * 4 + BATCH * 4;
    int64_t small_seen = 0, small_bytes = 0;
    for (int b = 0; b < n; b++) {
        const int64_t f = seq_frames[b], *c = &got[4 * b];
        if (c[0] != BATCH * f * M * 4 || c[1] != BATCH * f * 4 || c[2] != BATCH * f * 4 || c[3] != BATCH * 4)
            fail_msg("batch %d (%lld frames): ring copies of %lld, %lld, %lld, %lld bytes; expected %lld, %lld, "
                     "%lld, %d", b, (long long)f, (long long)c[0], (long long)c[1], (long long)c[2],
                     (long long)c[3], (long long)(BATCH * f * M * 4), (long long)(BATCH * f * 4),
                     (long long)(BATCH * f * 4), BATCH * 4);
        if (f < FRAMES) small_seen++, small_bytes = c[0] + c[1] + c[2] + c[3];
    }
    assert_true(small_seen > 0);
    printf("ring copies: %d batches as recorded; a batch of a smaller class moved %lld bytes of the slot's "
           "%lld\n", n, (long long)small_bytes, (long long)whole);
}

/* Length bucketing (issue 14): with the training set's classes, over three epochs every
 * utterance is in exactly one batch's distinct rows per epoch, each batch's shape is one of the
 * classes and holds its rows, the features equal the direct computation's (check_bucketed),
 * and the position after a batch is the next batch's. */
static void test_bucketed_epochs(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_pipeline buckets")};
    corpus c;
    write_corpus(&c, &r);
    tandem_text_index ix;
    open_index(&c, &ix);
    uint32_t frames[TANDEM_BUCKETS_MAX], k = 0;
    double real = 0;
    assert_int_equal(tandem_buckets_for_index(&ix, 3, FRAMES, 1, NULL, frames, &k, &real), TANDEM_OK);
    printf("classes:");
    for (uint32_t i = 0; i < k; i++) printf(" %u", frames[i]);
    printf(" (%.1f %% real)\n", 100 * real);
    assert_true(k >= 2 && frames[k - 1] == FRAMES);
    reference ref;
    ref_init(&ref);
    run x;
    static tandem_rec_entry entries[1 << 15];
    static tandem_dev_recorder rec;
    rec.entries = entries, rec.cap = 1 << 15;
    tandem_dev_record(&rec); /* the ring copies' bytes (check_ring_copy_bytes) */
    int seq_frames[64], n_seq = 0;
    start_k = (int)k, start_frames = frames;
    run_start(&x, &c, &ix, tandem_rng_next(&r), 0);
    start_k = 0, start_frames = NULL;
    tandem_stream *cs = tandem_pipeline_consumer_stream(x.pipe);
    static host_batch want;
    int seen[3][N_UTTS], used[TANDEM_BUCKETS_MAX] = {0};
    memset(seen, 0, sizeof seen);
    tandem_sampler_pos expect = {0, 0};
    for (;;) {
        tandem_batch_view v;
        if (tandem_pipeline_acquire(x.pipe, &v, acquire_ms) != TANDEM_OK) fail_msg("acquire: %s", tandem_last_error());
        const int64_t e = v.pos[0].epoch;
        if (e == 3) break;
        assert_true(v.pos[0].epoch == expect.epoch && v.pos[0].index == expect.index);
        expect = v.next_pos;
        uint32_t cls = 0;
        while (cls < k && frames[cls] != (uint32_t)v.frames) cls++;
        assert_true(cls < k); /* a shape of the fixed set */
        used[cls]++;
        assert_true(v.seq == n_seq && n_seq < 64);
        seq_frames[n_seq++] = v.frames;
        assert_true(v.n_real >= 1 && v.n_real <= BATCH);
        for (uint32_t b = 0; b < v.n_real; b++) seen[e][v.utt[b]]++;
        ref_batch(&ref, &c, &ix, v.utt, &want);
        check_bucketed(cs, &v, &want);
        assert_int_equal(tandem_pipeline_release(x.pipe, v.slot), TANDEM_OK);
    }
    for (int e = 0; e < 3; e++)
        for (uint32_t u = 0; u < N_UTTS; u++)
            if (seen[e][u] != 1) fail_msg("epoch %d: utterance %u in %d batches, expected 1", e, u, seen[e][u]);
    int shapes = 0;
    for (uint32_t i = 0; i < k; i++) shapes += used[i] > 0;
    printf("3 epochs: every utterance once per epoch; %d of %u shapes used\n", shapes, k);
    assert_true(shapes >= 2);
    assert_int_equal(tandem_pipeline_stop(x.pipe), TANDEM_OK);
    tandem_dev_record(NULL);
    check_ring_copy_bytes(&rec, cs, ref.s, seq_frames, n_seq);
    tandem_pipeline_stats s;
    tandem_pipeline_get_stats(x.pipe, &s);
    assert_int_equal(s.too_long + s.decode_failures, 0);
    run_end(&x);
    ref_free(&ref);
    tandem_text_index_free(&ix);
    remove_corpus(&c);
}

/* Roles with backend AUTO (DESIGN.md §3): cuda devices whenever the driver reports any (two:
 * data 0, model 1; one: the same device in both roles), else two host devices. */
static void test_auto_roles(void **state) {
    (void)state;
    int n_cuda = 0;
    if (tandem_device_count(TANDEM_BACKEND_CUDA, &n_cuda) != TANDEM_OK) n_cuda = 0;
    if (backend == TANDEM_BACKEND_CUDA) assert_true(n_cuda >= 1);
    tandem_device *data = NULL, *model = NULL;
    char desc[256];
    assert_int_equal(tandem_pipeline_open_devices(TANDEM_BACKEND_AUTO, &data, &model, desc, sizeof desc), TANDEM_OK);
    printf("auto: %s\n", desc);
    tandem_device_info di, mi;
    assert_int_equal(tandem_device_get_info(data, &di), TANDEM_OK);
    assert_int_equal(tandem_device_get_info(model, &mi), TANDEM_OK);
    const tandem_backend want = n_cuda > 0 ? TANDEM_BACKEND_CUDA : TANDEM_BACKEND_HOST;
    assert_int_equal(di.backend, want);
    assert_int_equal(mi.backend, want);
    assert_int_equal(di.ordinal, 0);
    assert_int_equal(mi.ordinal, n_cuda == 1 ? 0 : 1);
    assert_true(n_cuda == 1 ? data == model : data != model);
    tandem_pipeline_close_devices(data, model);
}

/* On the stand-in driver: this file again in a child process with TANDEM_FAKECUDA_NO_PEER=1
 * (the driver reads its configuration once per process). Its output is echoed, so the
 * "fakecuda: error" lines it may print reach run_on_cuda.sh's check, and counted here too. */
static void test_stand_in_without_peer_access(void **state) {
    (void)state;
    char self[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = 0;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "TANDEM_FAKECUDA_NO_PEER=1 '%s' 2>&1", self);
    fflush(stdout);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    char line[2048];
    int errors = 0, passed = 0;
    while (fgets(line, sizeof line, f)) {
        printf("  no-peer| %s", line);
        errors += strncmp(line, "fakecuda: error", 15) == 0;
        passed += strncmp(line, "[  PASSED  ]", 12) == 0;
    }
    int rc = pclose(f);
    if (rc != 0 || !passed) fail_msg("the run without peer access failed (status %d)", rc);
    if (errors) fail_msg("the run without peer access: the stand-in reported %d misuse(s)", errors);
}

int main(void) {
    setenv("TANDEM_HOST_DEVICES", "3", 1); /* data, model, and the reference's own device */
    if (cli_env_apply(NULL, 0) != TANDEM_OK) return 2;
    const char *be = getenv("TANDEM_TEST_BACKEND"), *real = getenv("TANDEM_TEST_REAL_GPU"),
               *no_peer = getenv("TANDEM_FAKECUDA_NO_PEER");
    if (be && strcmp(be, "cuda") == 0) {
        backend = TANDEM_BACKEND_CUDA;
        acquire_ms = 120000;
    }
    const int stand_in = backend == TANDEM_BACKEND_CUDA && !(real && strcmp(real, "1") == 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_equals_direct_peer),
        cmocka_unit_test(test_ring_equals_direct_staged),
        cmocka_unit_test(test_corrupt_file_mid_run),
        cmocka_unit_test(test_bucketed_epochs),
        cmocka_unit_test(test_auto_roles),
    };
    const struct CMUnitTest tests_and_no_peer_run[] = {
        cmocka_unit_test(test_ring_equals_direct_peer),
        cmocka_unit_test(test_ring_equals_direct_staged),
        cmocka_unit_test(test_corrupt_file_mid_run),
        cmocka_unit_test(test_bucketed_epochs),
        cmocka_unit_test(test_auto_roles),
        cmocka_unit_test(test_stand_in_without_peer_access),
    };
    /* the child (NO_PEER set) runs the pipeline tests, not itself again */
    if (stand_in && !no_peer) return cmocka_run_group_tests(tests_and_no_peer_run, NULL, NULL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
