/* test_trainer.c — the training loop end to end (runtime/run/trainer.h) on a small corpus the
 * test writes (sine-and-noise WAVs, 22050 Hz), with a shrunk model (d 16, 1 layer, r 2,
 * max_frames 32) so each run takes about a second on the host backend:
 *
 *   resume:      N = 8 steps straight vs 4 steps + checkpoint + resume + 4 steps (grad_accum 2,
 *                shuffling on, 7 utterances so batches cross epoch boundaries, prefetching ring):
 *                the losses of every step and the final parameters and AdamW moments are
 *                bit-identical (host backend).
 *   checkpoint:  the final checkpoint parses as safetensors with a parser written here (header
 *                length, JSON, dtypes, shapes, data_offsets contiguous and covering the data
 *                exactly) and carries the metadata a resume needs.
 *   nonfinite:   NaN gradients injected (test hook) at 2 steps are skipped and counted, the run
 *                goes on; injected at every step it stops after max_nonfinite in a row with an
 *                error naming max_nonfinite.
 *   validation:  with lr 0 (parameters never change) every validation gives the same val_l1,
 *                bit for bit, so every validation saw the same utterances in the same order;
 *                held-out sets of 3 (fewer than val_batches * B = 4) and 6 utterances; the
 *                free-running evaluation's figures (eval_*) are likewise the same each time.
 *   devices:     (TANDEM_TEST_BACKEND=cuda, two stand-in devices) data_gpu 1 / model_gpu 0 are
 *                the roles used, busy % comes from device events, and the losses match the
 *                host run's within 1e-5 relative (f32, summation order only); both runs
 *                validate and write mel.png, whose pixels agree within MEL_TOL levels.
 *   bad configs: `tandem train` exits 2 with a message naming the key and line (unknown key,
 *                wrong type) or the model arena (--model-gpu-memory 1).
 *   figures:     checkpoints at steps 3, 6 and 8 (validation every 2, logging every 3): no
 *                loss.png / mel.png before the first checkpoint, both after it; the runtime's
 *                allocation counter is the same at every step (the checkpoints that write
 *                the figures included). At the end both decode with libpng at the expected
 *                sizes (800 x 480; the mel of the first held-out utterance's
 *                floor(samples / 256) frames, read from its WAV here); the loss history holds
 *                exactly the logged steps (parsed from metrics.jsonl here) with the losses the
 *                step hook saw, and the val_l1 of every validation; `tandem plot` on the run,
 *                the final checkpoint and the held-out set redraws the same figures: loss.png
 *                pixel for pixel (same points, same code), mel.png within colour-quantisation
 *                tolerance (target from the WAV by the host recipe, prediction by synth's B = 1
 *                teacher-forced forward of the checkpoint — independent of the trainer's data
 *                path and B = 2 forward). In the resume test the resumed run's loss.png is
 *                byte-identical to the straight run's (its history continues from metrics.jsonl).
 * Seed printed; replay with TANDEM_TEST_SEED.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <dlfcn.h>
#include <sndfile.h>

#include "runtime/core/config.h"
#include "runtime/report/figures.h"
#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/report/plot.h"
#include "runtime/formats/safetensors.h"
#include "tandem.h"
#include "test/fixtures.h"
#include "test/tiny_corpus.h"
#include "runtime/run/trainer.h"
#include "tools/env_options.h"

#define MAX_FRAMES 32
#define MAX_STEPS 8
#define TOL_CUDA 1e-5
/* colour levels a redrawn mel pixel may differ by: the B = 1 and B = 2 forwards and the two
 * feature paths may differ in the last bits, which moves a value across a level boundary now
 * and then; 8 levels is a few hundredths of the colour scale (measured: 0 pixels differ) */
#define MEL_TOL 8

static uint64_t seed;
static char root[256];
static tandem_backend backend = TANDEM_BACKEND_HOST;

/* n utterances of 0.1 .. 0.37 s (at most MAX_FRAMES frames). */
static void write_corpus(const char *dir, int n, tandem_rng *r) { tiny_corpus_write(dir, n, MAX_FRAMES, r); }

static void small_config(tandem_config *cfg, const char *train, const char *out) {
    tandem_config_init(cfg);
    static const char *const kv[][2] = {
        {"model_size", "custom"}, {"d_model", "16"}, {"layers", "1"}, {"heads", "2"},
        {"reduction", "2"}, {"max_text", "24"}, {"max_frames", "32"}, {"batch_size", "2"},
        {"grad_accum", "2"}, {"num_workers", "1"}, {"prefetch_buffer_size", "3"},
        {"lr", "0.003"}, {"warmup_steps", "2"}, {"log_every", "1"}, {"checkpoint_every", "0"},
        {"val_every", "0"}, {"keep", "2"},
        {"tf32", "false"}, /* exact fp32 on cuda: its losses are compared with the host's at 1e-5 */
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) CHECK(tandem_config_set(cfg, kv[i][0], kv[i][1]));
    char v[32];
    snprintf(v, sizeof v, "%d", MAX_STEPS);
    CHECK(tandem_config_set(cfg, "max_steps", v));
    snprintf(v, sizeof v, "%llu", (unsigned long long)(seed % 1000000));
    CHECK(tandem_config_set(cfg, "seed", v));
    snprintf(cfg->train_data, sizeof cfg->train_data, "%s", train);
    snprintf(cfg->out, sizeof cfg->out, "%s", out);
}

typedef struct step_log {
    int n;
    double loss[64];
    int skipped[64];
    int frames[64]; /* the step's batch shape (length bucketing) */
    uint64_t allocs[64]; /* the runtime's allocation counter after the step */
} step_log;

static void on_step(void *ctx, const tandem_step_metrics *r) {
    step_log *l = ctx;
    if (l->n < 64) {
        l->loss[l->n] = r->loss;
        l->skipped[l->n] = r->skipped;
        l->frames[l->n] = r->frames;
        l->allocs[l->n] = tandem_alloc_count();
    }
    l->n++;
}

/* One trainer run; returns its status (the message stays in tandem_last_error). */
static tandem_status train(const tandem_config *cfg, const char *resume, int64_t run_steps,
                           int64_t nan_from, int64_t nan_count, step_log *log,
                           tandem_trainer_summary *sum) {
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = backend;
    o.resume_dir = resume;
    o.run_steps = run_steps;
    o.nonfinite_from = nan_from;
    o.nonfinite_count = nan_count;
    o.on_step = on_step;
    o.on_step_user = log;
    return tandem_test_train_run(cfg, &o, sum);
}

/* ---- an independent minimal safetensors check ---------------------------------------------- */

typedef struct jcur {
    const char *p, *end;
} jcur;

static void jws(jcur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\t' || *c->p == '\r')) c->p++;
}
static int jeat(jcur *c, char ch) {
    jws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}
/* A string without escapes other than \" and \\ and \n (enough for our names and values);
 * copies at most cap - 1 bytes. */
static int jstr(jcur *c, char *out, size_t cap) {
    jws(c);
    if (c->p >= c->end || *c->p != '"') return 0;
    size_t n = 0;
    for (c->p++; c->p < c->end && *c->p != '"'; c->p++) {
        char ch = *c->p;
        if (ch == '\\') {
            if (++c->p >= c->end) return 0;
            ch = *c->p == 'n' ? '\n' : *c->p;
        }
        if (n + 1 < cap) out[n++] = ch;
    }
    if (c->p >= c->end) return 0;
    c->p++;
    out[n] = 0;
    return 1;
}
static int juint(jcur *c, uint64_t *v) {
    jws(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return 0;
    *v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') *v = *v * 10 + (uint64_t)(*c->p++ - '0');
    return 1;
}

typedef struct st_range {
    uint64_t begin, end;
} st_range;

static int cmp_range(const void *a, const void *b) {
    const st_range *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* Parses path; returns the number of tensors; fails the test on any inconsistency. Counts
 * the metadata keys that a resume needs in *meta_found. */
static int check_safetensors(const char *path, int *meta_found) {
    size_t file_len = 0;
    unsigned char *buf = tandem_test_read_file_ok(path, &file_len);
    const long size = (long)file_len;
    assert_true(size >= 8);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | buf[i]; /* little-endian u64 */
    assert_true(8 + hlen <= (uint64_t)size);
    const uint64_t data_bytes = (uint64_t)size - 8 - hlen;
    jcur c = {(const char *)buf + 8, (const char *)buf + 8 + hlen};
    assert_true(jeat(&c, '{'));
    st_range *ranges = calloc(4096, sizeof *ranges);
    int n = 0;
    *meta_found = 0;
    char key[256], s[256];
    do {
        assert_true(jstr(&c, key, sizeof key));
        assert_true(jeat(&c, ':'));
        assert_true(jeat(&c, '{'));
        if (!strcmp(key, "__metadata__")) {
            do {
                char *val = malloc(1 << 20);
                assert_true(jstr(&c, s, sizeof s));
                assert_true(jeat(&c, ':'));
                assert_true(jstr(&c, val, 1 << 20));
                static const char *const need[] = {"format_version", "step", "config",
                                                   "sampler_epoch", "sampler_position",
                                                   "rng_state", "symbols", "skipped_in_row"};
                for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) *meta_found += !strcmp(s, need[i]);
                free(val);
            } while (jeat(&c, ','));
            assert_true(jeat(&c, '}'));
            continue;
        }
        char dtype[16] = "";
        uint64_t numel = 1, b = 0, e = 0;
        int have_shape = 0, have_off = 0;
        do {
            assert_true(jstr(&c, s, sizeof s));
            assert_true(jeat(&c, ':'));
            if (!strcmp(s, "dtype")) assert_true(jstr(&c, dtype, sizeof dtype));
            else if (!strcmp(s, "shape")) {
                assert_true(jeat(&c, '['));
                if (!jeat(&c, ']')) {
                    do {
                        uint64_t d;
                        assert_true(juint(&c, &d));
                        numel *= d;
                    } while (jeat(&c, ','));
                    assert_true(jeat(&c, ']'));
                }
                have_shape = 1;
            } else if (!strcmp(s, "data_offsets")) {
                assert_true(jeat(&c, '['));
                assert_true(juint(&c, &b));
                assert_true(jeat(&c, ','));
                assert_true(juint(&c, &e));
                assert_true(jeat(&c, ']'));
                have_off = 1;
            } else
                fail_msg("%s: tensor %s: unexpected field '%s'", path, key, s);
        } while (jeat(&c, ','));
        assert_true(jeat(&c, '}'));
        if (!have_shape || !have_off || strcmp(dtype, "F32"))
            fail_msg("%s: tensor %s: dtype '%s' (expected F32), shape %d, offsets %d", path, key,
                     dtype, have_shape, have_off);
        if (e - b != numel * 4 || e < b || e > data_bytes)
            fail_msg("%s: tensor %s: offsets [%llu, %llu) for %llu floats, data %llu bytes", path,
                     key, (unsigned long long)b, (unsigned long long)e, (unsigned long long)numel,
                     (unsigned long long)data_bytes);
        assert_true(n < 4096);
        ranges[n].begin = b;
        ranges[n++].end = e;
    } while (jeat(&c, ','));
    assert_true(jeat(&c, '}'));
    jws(&c);
    assert_true(c.p == c.end); /* only padding spaces after the object */
    assert_true((8 + hlen) % 8 == 0);
    qsort(ranges, (size_t)n, sizeof *ranges, cmp_range);
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        assert_true(ranges[i].begin == at); /* contiguous, no overlap, no gap */
        at = ranges[i].end;
    }
    assert_true(at == data_bytes);
    free(ranges);
    free(buf);
    return n;
}

/* ---- tests ----------------------------------------------------------------------------------- */

static void compare_checkpoints(const char *a, const char *b) {
    tandem_st_file *fa, *fb;
    CHECK(tandem_st_open(a, &fa));
    CHECK(tandem_st_open(b, &fb));
    assert_int_equal(tandem_st_count(fa), tandem_st_count(fb));
    for (int i = 0; i < tandem_st_count(fa); i++) {
        const tandem_st_info *x = tandem_st_get(fa, i), *y = tandem_st_find(fb, x->name);
        assert_non_null(y);
        assert_int_equal(x->bytes, y->bytes);
        if (memcmp(x->data, y->data, x->bytes) != 0)
            fail_msg("tensor %s differs between the straight and the resumed run", x->name);
    }
    tandem_st_close(fa);
    tandem_st_close(fb);
}

static void compare_files(const char *dir_a, const char *dir_b, const char *name) {
    char pa[400], pb[400];
    snprintf(pa, sizeof pa, "%s/%s", dir_a, name);
    snprintf(pb, sizeof pb, "%s/%s", dir_b, name);
    size_t na, nb;
    unsigned char *a = tandem_test_read_file_ok(pa, &na), *b = tandem_test_read_file_ok(pb, &nb);
    if (na != nb || memcmp(a, b, na)) fail_msg("%s (%zu bytes) and %s (%zu bytes) differ", pa, na, pb, nb);
    printf("%s: the straight and the resumed run wrote the same %zu bytes\n", name, na);
    free(a);
    free(b);
}

static void test_resume_bit_identical(void **state) {
    (void)state;
    char data[300], a[300], b[300];
    snprintf(data, sizeof data, "%s/resume_data", root);
    snprintf(a, sizeof a, "%s/straight", root);
    snprintf(b, sizeof b, "%s/resumed", root);
    tandem_rng r = {seed};
    write_corpus(data, 7, &r);
    tandem_config ca, cb;
    small_config(&ca, data, a);
    small_config(&cb, data, b);
    step_log la = {0}, lb = {0};
    tandem_trainer_summary s;
    CHECK(train(&ca, NULL, 0, -1, 0, &la, &s));
    assert_int_equal(la.n, MAX_STEPS);
    char last_a[1100];
    snprintf(last_a, sizeof last_a, "%s", s.checkpoint);
    CHECK(train(&cb, NULL, MAX_STEPS / 2, -1, 0, &lb, &s));
    assert_int_equal(lb.n, MAX_STEPS / 2);
    assert_int_equal(s.last_step, MAX_STEPS / 2);
    CHECK(train(&cb, b, 0, -1, 0, &lb, &s));
    assert_int_equal(lb.n, MAX_STEPS);
    assert_int_equal(s.first_step, MAX_STEPS / 2);
    for (int i = 0; i < MAX_STEPS; i++)
        printf("step %d: straight %.17g, %s %.17g\n", i, la.loss[i],
               i < MAX_STEPS / 2 ? "first half" : "resumed", lb.loss[i]);
    assert_memory_equal(la.loss, lb.loss, sizeof la.loss[0] * MAX_STEPS);
    compare_checkpoints(last_a, s.checkpoint);
    compare_files(a, b, "loss.png");
    printf("resume: %d steps straight vs %d + resume + %d: losses, parameters and moments "
           "bit-identical\n", MAX_STEPS, MAX_STEPS / 2, MAX_STEPS / 2);

    int meta = 0;
    const int n = check_safetensors(s.checkpoint, &meta);
    printf("checkpoint %s: %d tensors, header and byte ranges consistent, %d of 8 resume "
           "metadata keys\n", s.checkpoint, n, meta);
    assert_true(n >= 3 * 10);
    assert_int_equal(n % 3, 0); /* parameters, adam_m, adam_v */
    assert_int_equal(meta, 8);
}

/* Length bucketing (issue 14): `buckets: 3` on 9 utterances of 3 .. 32 frames, one micro-batch per
 * step: every step's batch
 * has one of at most 3 shapes (multiples of r, the largest max_frames), more than one is used,
 * the run's real-frame share is above the unbucketed run's, and the allocation counter stays
 * put from the first step on; 8 steps straight vs 4 + resume
 * + 4 give bit-identical losses (the bucket sampler's position is in the checkpoint).
 * `buckets: 1` is off: its losses equal `buckets: 0`'s bit for bit. */
static void test_bucketing(void **state) {
    (void)state;
    char data[300], out[300];
    snprintf(data, sizeof data, "%s/bucket_data", root);
    tandem_rng r = {seed ^ 0xb0c4};
    write_corpus(data, 9, &r);
    const char *runs[] = {"bucket_off", "bucket_one", "bucket_straight", "bucket_resumed"};
    static const char *const nb[] = {"0", "1", "3", "3"};
    step_log lg[4];
    tandem_trainer_summary s[4];
    memset(lg, 0, sizeof lg);
    for (int i = 0; i < 4; i++) {
        tandem_config cfg;
        snprintf(out, sizeof out, "%s/%s", root, runs[i]);
        small_config(&cfg, data, out);
        CHECK(tandem_config_set(&cfg, "buckets", nb[i]));
        /* one micro-batch per step, so every batch's shape is logged: with 2, a step reports its
         * last micro-batch only and a smaller class could miss all 8 (1 run in ~8 failed) */
        CHECK(tandem_config_set(&cfg, "grad_accum", "1"));
        if (i < 3) {
            CHECK(train(&cfg, NULL, 0, -1, 0, &lg[i], &s[i]));
        } else {
            CHECK(train(&cfg, NULL, MAX_STEPS / 2, -1, 0, &lg[i], &s[i]));
            CHECK(train(&cfg, out, 0, -1, 0, &lg[i], &s[i]));
        }
        assert_int_equal(lg[i].n, MAX_STEPS);
    }
    assert_memory_equal(lg[0].loss, lg[1].loss, sizeof lg[0].loss[0] * MAX_STEPS);
    int shapes[MAX_FRAMES + 1] = {0}, distinct = 0;
    for (int i = 0; i < MAX_STEPS; i++) {
        printf("step %d: off %.17g (%d frames), buckets 3 %.17g (%d frames), resumed %.17g\n", i, lg[0].loss[i],
               lg[0].frames[i], lg[2].loss[i], lg[2].frames[i], lg[3].loss[i]);
        assert_int_equal(lg[0].frames[i], MAX_FRAMES);
        const int f = lg[2].frames[i];
        assert_true(f >= 2 && f <= MAX_FRAMES && f % 2 == 0);
        assert_int_equal(lg[3].frames[i], f);
        distinct += shapes[f]++ == 0;
    }
    assert_true(distinct >= 2 && distinct <= 3);
    for (int i = 1; i < MAX_STEPS; i++) assert_int_equal(lg[2].allocs[i], lg[2].allocs[0]); /* none after commit */
    assert_memory_equal(lg[2].loss, lg[3].loss, sizeof lg[2].loss[0] * MAX_STEPS);
    printf("real frames: off %.1f %%, buckets 3 %.1f %% (resumed half %.1f %%); %d shapes\n", s[0].real_frames_pct,
           s[2].real_frames_pct, s[3].real_frames_pct, distinct);
    assert_true(s[2].real_frames_pct > s[0].real_frames_pct);
}

static void test_nonfinite(void **state) {
    (void)state;
    char data[300], out[300];
    snprintf(data, sizeof data, "%s/nan_data", root);
    snprintf(out, sizeof out, "%s/nan_run", root);
    tandem_rng r = {seed ^ 0x77};
    write_corpus(data, 5, &r);
    tandem_config cfg;
    small_config(&cfg, data, out);
    CHECK(tandem_config_set(&cfg, "max_nonfinite", "3"));
    step_log l = {0};
    tandem_trainer_summary s;
    CHECK(train(&cfg, NULL, 0, 2, 2, &l, &s)); /* steps 2 and 3 get NaN gradients */
    assert_int_equal(l.n, MAX_STEPS);
    for (int i = 0; i < MAX_STEPS; i++) assert_int_equal(l.skipped[i], i == 2 || i == 3);
    assert_int_equal(s.skipped, 2);
    printf("nonfinite: 2 injected steps skipped and counted (summary skipped %lld), run finished\n",
           (long long)s.skipped);

    step_log l2 = {0};
    snprintf(cfg.out, sizeof cfg.out, "%s/nan_run2", root);
    tandem_status st = train(&cfg, NULL, 0, 1, 1000, &l2, &s);
    printf("nonfinite every step from 1: %s: %s\n", tandem_status_name(st), tandem_last_error());
    assert_int_not_equal(st, TANDEM_OK);
    assert_non_null(strstr(tandem_last_error(), "max_nonfinite = 3"));
    assert_non_null(strstr(tandem_last_error(), "3 non-finite steps in a row"));
    assert_int_equal(l2.n, 1 + 3);
}

/* The value of key (e.g. "val_l1") of every metrics line that has it, in order. */
static int read_key(const char *out, const char *key, double *v, int cap, int64_t *steps) {
    char path[400], line[4096], pat[64];
    snprintf(path, sizeof path, "%s/metrics.jsonl", out);
    snprintf(pat, sizeof pat, "\"%s\":", key);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, pat);
        if (!p || n == cap) continue;
        v[n] = strtod(p + strlen(pat), NULL);
        steps[n++] = strtoll(strstr(line, "\"step\":") + 7, NULL, 10);
    }
    fclose(f);
    return n;
}

static int read_val_l1(const char *out, double *v, int cap, int64_t *steps) {
    return read_key(out, "val_l1", v, cap, steps);
}

/* With fixed parameters every validation's free-running evaluation gives the same figures
 * (a fixed subset, deterministic generation), each in its range. */
static void check_eval_fixed(const char *out, int want) {
    static const char *const keys[] = {"eval_stop_within", "eval_ident", "eval_len_ratio",
                                       "eval_dtw_l1", "eval_text_dep", "eval_spec_var"};
    for (int k = 0; k < 6; k++) {
        double v[8];
        int64_t steps[8];
        const int n = read_key(out, keys[k], v, 8, steps);
        assert_int_equal(n, want);
        printf("  %s %.6g at every validation\n", keys[k], v[0]);
        for (int i = 0; i < n; i++) {
            assert_true(isfinite(v[i]) && v[i] >= 0);
            assert_memory_equal(&v[i], &v[0], sizeof v[0]);
        }
        if (k <= 1) assert_true(v[0] <= 1); /* fractions */
        else if (k < 5) assert_true(v[0] > 0); /* spectral variation: 0 for an untrained drone */
    }
}

static void test_validation_fixed_subset(void **state) {
    (void)state;
    const int sizes[2] = {3, 6};
    char data[300], val[300], out[300];
    snprintf(data, sizeof data, "%s/val_train", root);
    tandem_rng r = {seed ^ 0x99};
    write_corpus(data, 5, &r);
    for (int k = 0; k < 2; k++) {
        snprintf(val, sizeof val, "%s/val_%d", root, sizes[k]);
        snprintf(out, sizeof out, "%s/val_run_%d", root, sizes[k]);
        write_corpus(val, sizes[k], &r);
        tandem_config cfg;
        small_config(&cfg, data, out);
        snprintf(cfg.val_data, sizeof cfg.val_data, "%s", val);
        CHECK(tandem_config_set(&cfg, "val_every", "2"));
        CHECK(tandem_config_set(&cfg, "val_batches", "2"));
        CHECK(tandem_config_set(&cfg, "lr", "0")); /* the parameters never change */
        CHECK(tandem_config_set(&cfg, "max_steps", "6"));
        step_log l = {0};
        tandem_trainer_summary s;
        CHECK(train(&cfg, NULL, 0, -1, 0, &l, &s));
        double v[8];
        int64_t steps[8];
        const int n = read_val_l1(out, v, 8, steps);
        printf("validation over %d held-out utterances:", sizes[k]);
        for (int i = 0; i < n; i++) printf(" step %lld val_l1 %.9g;", (long long)steps[i], v[i]);
        printf("\n");
        assert_int_equal(n, 4); /* step 0 (initial parameters), 2, 4, 6 */
        for (int i = 0; i < n; i++) {
            assert_int_equal(steps[i], 2 * i);
            assert_true(isfinite(v[i]) && v[i] > 0);
            assert_memory_equal(&v[i], &v[0], sizeof v[0]);
        }
        assert_true(s.val_l1_first == s.val_l1_last);
        check_eval_fixed(out, n);
    }
}

/* ---- figures ---------------------------------------------------------------------------------- */

static int file_exists(const char *dir, const char *name) {
    char p[400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat sb;
    return stat(p, &sb) == 0 && sb.st_size > 0;
}

typedef struct fig_log {
    step_log steps;
    uint64_t allocs[64];
    int have_loss[64], have_mel[64];
    const char *out;
} fig_log;

static void on_step_fig(void *ctx, const tandem_step_metrics *r) {
    fig_log *l = ctx;
    const int i = l->steps.n;
    if (i < 64) {
        l->allocs[i] = tandem_alloc_count();
        l->have_loss[i] = file_exists(l->out, "loss.png");
        l->have_mel[i] = file_exists(l->out, "mel.png");
    }
    on_step(&l->steps, r);
}

/* Pixels of two same-sized RGB images whose largest channel difference exceeds tol. */
static long pixels_differing(const unsigned char *a, const unsigned char *b, int w, int h, int tol) {
    long n = 0;
    for (long i = 0; i < (long)w * h; i++) {
        int d = 0;
        for (int c = 0; c < 3; c++) {
            int e = abs((int)a[3 * i + c] - (int)b[3 * i + c]);
            if (e > d) d = e;
        }
        n += d > tol;
    }
    return n;
}

static void test_figures(void **state) {
    (void)state;
    char data[300], val[300], out[300], redraw[300], path[400];
    snprintf(data, sizeof data, "%s/fig_train", root);
    snprintf(val, sizeof val, "%s/fig_val", root);
    snprintf(out, sizeof out, "%s/fig_run", root);
    snprintf(redraw, sizeof redraw, "%s/fig_redraw", root);
    tandem_rng r = {seed ^ 0x3131};
    write_corpus(data, 5, &r);
    write_corpus(val, 3, &r);
    tandem_config cfg;
    small_config(&cfg, data, out);
    snprintf(cfg.val_data, sizeof cfg.val_data, "%s", val);
    CHECK(tandem_config_set(&cfg, "val_every", "2"));
    CHECK(tandem_config_set(&cfg, "val_batches", "1"));
    CHECK(tandem_config_set(&cfg, "log_every", "3"));
    CHECK(tandem_config_set(&cfg, "checkpoint_every", "3"));
    /* free-running evaluation of two test sentences at every validation, WAVs under samples/
     * (inside the allocation-free window checked below) */
    CHECK(tandem_config_set(&cfg, "test_sentences", "a test.|another one"));
    static fig_log l;
    memset(&l, 0, sizeof l);
    l.out = out;
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = backend;
    o.on_step = on_step_fig;
    o.on_step_user = &l;
    tandem_trainer *t = NULL;
    tandem_trainer_summary sum;
    CHECK(tandem_trainer_create(&cfg, &o, &t));
    CHECK(tandem_trainer_run(t, &sum));
    /* the history as the trainer drew it, copied before destroy */
    tandem_figures_series tr, va;
    tandem_figures_history(tandem_trainer_figures(t), &tr, &va);
    float tr_step[16], tr_val[16], va_step[16], va_val[16];
    assert_true(tr.n <= 16 && va.n <= 16);
    memcpy(tr_step, tr.step, (size_t)tr.n * sizeof(float));
    memcpy(tr_val, tr.value, (size_t)tr.n * sizeof(float));
    memcpy(va_step, va.step, (size_t)va.n * sizeof(float));
    memcpy(va_val, va.value, (size_t)va.n * sizeof(float));
    int64_t mel_step = 0;
    const int mel_frames = tandem_figures_mel_frames(tandem_trainer_figures(t), &mel_step);
    tandem_trainer_destroy(t);
    assert_int_equal(l.steps.n, MAX_STEPS);

    /* checkpoints after steps 3, 6, 8: on_step of step i (0-based) runs before step i's own
     * checkpoint, so the figures appear at i = 3; the counter never moves */
    for (int i = 0; i < MAX_STEPS; i++) {
        printf("figures: step %d: allocations %llu, loss.png %d, mel.png %d\n", i + 1,
               (unsigned long long)l.allocs[i], l.have_loss[i], l.have_mel[i]);
        assert_int_equal(l.have_loss[i], i >= 3);
        assert_int_equal(l.have_mel[i], i >= 3);
        assert_true(l.allocs[i] == l.allocs[0]);
    }

    for (int step = 0; step <= MAX_STEPS; step += 2)
        for (int k = 1; k <= 2; k++) {
            char wav[64];
            snprintf(wav, sizeof wav, "samples/step-%08d-%d.wav", step, k);
            assert_true(file_exists(out, wav));
        }

    /* the logged steps, independently: metrics.jsonl */
    snprintf(path, sizeof path, "%s/metrics.jsonl", out);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096];
    int nl = 0, nv = 0;
    int64_t lsteps[16], vsteps[16];
    double lval[16], vval[16];
    while (fgets(line, sizeof line, f)) {
        const char *st = strstr(line, "\"step\":"), *lo = strstr(line, "\"loss\":"), *vl = strstr(line, "\"val_l1\":");
        assert_non_null(st);
        if (lo && nl < 16) {
            lsteps[nl] = strtoll(st + 7, NULL, 10);
            lval[nl++] = strtod(lo + 7, NULL);
        }
        if (vl && nv < 16) {
            vsteps[nv] = strtoll(st + 7, NULL, 10);
            vval[nv++] = strtod(vl + 9, NULL);
        }
    }
    fclose(f);
    /* logged: validation steps 2, 4, 6, 8, log_every 3 → 3, 6, and the last step 8 */
    static const int64_t want_logged[] = {2, 3, 4, 6, 8}, want_val[] = {0, 2, 4, 6, 8};
    assert_int_equal(nl, 5);
    assert_int_equal(nv, 5);
    assert_int_equal(tr.n, nl);
    assert_int_equal(va.n, nv);
    assert_int_equal(tr.stride, 1);
    for (int k = 0; k < nl; k++) {
        assert_int_equal(lsteps[k], want_logged[k]);
        assert_true(tr_step[k] == (float)lsteps[k]);
        /* the hook's loss of that step; the figure holds the float of the value metrics.jsonl
         * holds (what `tandem plot` reads back), which may round apart from the hook's double */
        const double hook = l.steps.loss[lsteps[k] - 1];
        printf("loss point %d: step %g, figure %.9g, hook %.17g, metrics %.9g\n", k, tr_step[k],
               tr_val[k], hook, lval[k]);
        assert_true(tr_val[k] == (float)lval[k]);
        assert_true(fabs(lval[k] - hook) <= 1e-8 * fabs(hook));
    }
    for (int k = 0; k < nv; k++) {
        assert_int_equal(vsteps[k], want_val[k]);
        assert_true(va_step[k] == (float)vsteps[k]);
        assert_true(fabs(va_val[k] - vval[k]) <= 1e-6 * fabs(vval[k]));
    }

    /* the mel: the first held-out utterance, its real frames, predicted at the last validation */
    snprintf(path, sizeof path, "%s/wavs/u0.wav", val);
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open(path, SFM_READ, &info);
    assert_non_null(sf);
    sf_close(sf);
    const int want_frames = (int)(info.frames / 256);
    printf("mel figure: %d frames (u0: %lld samples), predicted at step %lld\n", mel_frames,
           (long long)info.frames, (long long)mel_step);
    assert_int_equal(mel_frames, want_frames);
    assert_int_equal(mel_step, MAX_STEPS);

    int w, h, w2, h2, mw, mh;
    snprintf(path, sizeof path, "%s/loss.png", out);
    unsigned char *loss = tandem_test_read_png(path, &w, &h);
    assert_int_equal(w, 800);
    assert_int_equal(h, 480);
    snprintf(path, sizeof path, "%s/mel.png", out);
    unsigned char *mel = tandem_test_read_png(path, &w, &h);
    /* three panels (target, teacher-forced, free-running) as wide as the longer of the true
     * and the generated length: 2 px per frame, 2 per band, a gap of 6 between panels, then
     * the colour scale */
    const int panels_w = w - TANDEM_PLOT_MEL_BAR_W;
    assert_true(panels_w >= 2 * want_frames && panels_w % 2 == 0);
    tandem_plot_mel_size_n(panels_w / 2, 80, 3, &mw, &mh);
    assert_int_equal(w, mw);
    assert_int_equal(h, mh);
    assert_int_equal(h, 3 * 2 * 80 + 2 * 6);

    /* `tandem plot` from the run's files: the same figures */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s/tandem' plot --run '%s' --checkpoint '%s' --data '%s' --out-dir '%s'",
             TANDEM_TEST_BUILD_DIR, out, sum.checkpoint, val, redraw);
    CHECK(tandem_mkdir_p(redraw));
    const int rc = system(cmd);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
    snprintf(path, sizeof path, "%s/loss.png", redraw);
    unsigned char *loss2 = tandem_test_read_png(path, &w2, &h2);
    assert_int_equal(w2, 800);
    assert_int_equal(h2, 480);
    const long dl = pixels_differing(loss, loss2, 800, 480, 0);
    snprintf(path, sizeof path, "%s/mel.png", redraw);
    unsigned char *mel2 = tandem_test_read_png(path, &w2, &h2);
    assert_int_equal(w2, w);
    assert_int_equal(h2, h);
    /* per panel: the top (target) and bottom (prediction) halves */
    const int ph = 2 * 80;
    const long dt = pixels_differing(mel, mel2, w, ph, MEL_TOL);
    const long dp = pixels_differing(mel + (size_t)(ph + 6) * w * 3, mel2 + (size_t)(ph + 6) * w * 3, w, ph, MEL_TOL);
    const size_t third = (size_t)2 * (ph + 6) * w * 3;
    const long dg = pixels_differing(mel + third, mel2 + third, w, ph, MEL_TOL);
    printf("free-running panel: %ld of %d pixels differ by more than %d levels\n", dg, w * ph, MEL_TOL);
    assert_true(dg <= (long)w * ph / 100);
    printf("tandem plot redraw: loss.png %ld of %d pixels differ; mel.png target %ld, prediction "
           "%ld of %d pixels differ by more than %d levels (%ld, %ld at all)\n", dl, 800 * 480, dt, dp,
           w * ph, MEL_TOL, pixels_differing(mel, mel2, w, ph, 0),
           pixels_differing(mel + (size_t)(ph + 6) * w * 3, mel2 + (size_t)(ph + 6) * w * 3, w, ph, 0));
    /* not a blank panel: the target's colours vary */
    long varied = 0;
    for (long i = 0; i < (long)w * ph; i++) varied += memcmp(mel + 3 * i, mel, 3) != 0;
    assert_true(varied > (long)w * ph / 4);
    assert_int_equal(dl, 0);
    assert_true(dt <= (long)w * ph / 100);
    assert_true(dp <= (long)w * ph / 100);
    free(loss);
    free(loss2);
    free(mel);
    free(mel2);
}

/* The data device's CUDA ordinal: 1 when a second device exists (the stand-in has two), else 0
 * (a real single-GPU machine under `make test-gpu`: both roles on device 0). */
static const char *cuda_data_ordinal(void) {
    int n = 0;
    return tandem_device_count(TANDEM_BACKEND_CUDA, &n) == TANDEM_OK && n >= 2 ? "1" : "0";
}

/* data_gpu 1, model_gpu 0 on two (stand-in) CUDA devices; losses vs the host backend. */
static void test_device_roles(void **state) {
    (void)state;
    if (backend != TANDEM_BACKEND_CUDA) {
        printf("device roles: host backend run (data_gpu/model_gpu are CUDA ordinals); the "
               "cuda variant of this test checks them\n");
        skip();
    }
    char data[300], val[300], out[300];
    snprintf(data, sizeof data, "%s/roles_data", root);
    snprintf(val, sizeof val, "%s/roles_val", root);
    tandem_rng r = {seed ^ 0x55};
    write_corpus(data, 4, &r);
    write_corpus(val, 2, &r);
    step_log l[2] = {{0}, {0}};
    tandem_trainer_summary s[2];
    for (int k = 0; k < 2; k++) {
        tandem_config cfg;
        snprintf(out, sizeof out, "%s/roles_%d", root, k);
        small_config(&cfg, data, out);
        CHECK(tandem_config_set(&cfg, "max_steps", "3"));
        CHECK(tandem_config_set(&cfg, "shuffle", "false"));
        /* validation at steps 0 and 3: the mel figure's read-back from the model device */
        snprintf(cfg.val_data, sizeof cfg.val_data, "%s", val);
        CHECK(tandem_config_set(&cfg, "val_every", "3"));
        CHECK(tandem_config_set(&cfg, "val_batches", "1"));
        if (k == 1) {
            CHECK(tandem_config_set(&cfg, "data_gpu", cuda_data_ordinal()));
            CHECK(tandem_config_set(&cfg, "model_gpu", "0"));
        }
        backend = k ? TANDEM_BACKEND_CUDA : TANDEM_BACKEND_HOST;
        CHECK(train(&cfg, NULL, 0, -1, 0, &l[k], &s[k]));
        printf("%s: %s; model busy %.1f %% (%s)\n", k ? "cuda" : "host", s[k].devices,
               s[k].model_busy_pct, s[k].busy_from_events ? "device events" : "host clocks");
        assert_true(file_exists(out, "loss.png") && file_exists(out, "mel.png"));
    }
    /* the same figures from both backends: the losses agree to 1e-5, so do the pixels */
    char pa[400], pb[400];
    snprintf(pa, sizeof pa, "%s/roles_0/mel.png", root);
    snprintf(pb, sizeof pb, "%s/roles_1/mel.png", root);
    int wa, ha, wb, hb;
    unsigned char *ma = tandem_test_read_png(pa, &wa, &ha), *mb = tandem_test_read_png(pb, &wb, &hb);
    assert_int_equal(wa, wb);
    assert_int_equal(ha, hb);
    const long dm = pixels_differing(ma, mb, wa, ha, MEL_TOL);
    printf("mel.png host vs cuda: %ld of %d pixels differ by more than %d levels\n", dm, wa * ha, MEL_TOL);
    assert_true(dm <= (long)wa * ha / 100);
    free(ma);
    free(mb);
    backend = TANDEM_BACKEND_CUDA;
    if (cuda_data_ordinal()[0] == '1') {
        assert_non_null(strstr(s[1].devices, "data device: CUDA 1"));
        assert_non_null(strstr(s[1].devices, "model device: CUDA 0"));
    } else { /* a single GPU */
        assert_non_null(strstr(s[1].devices, "CUDA device 0"));
        assert_non_null(strstr(s[1].devices, "in both roles"));
    }
    assert_int_equal(s[1].busy_from_events, 1);
    assert_int_equal(s[0].busy_from_events, 0);
    /* events measured the regions; busy counts the host's launch time as idle, so through the
     * stand-in (small kernels launched one by one) it may be 0, never above the regions' span */
    assert_true(s[1].model_occupied_pct > 0 && s[1].model_occupied_pct <= 100);
    assert_true(s[1].model_busy_pct >= 0 && s[1].model_busy_pct <= s[1].model_occupied_pct);
    /* NVML fields: on the stand-in (TANDEM_NVML names its libnvidia-ml.so.1) both roles report;
     * the host run has none. */
    char mp[400], *mj = NULL;
    size_t mlen = 0;
    snprintf(mp, sizeof mp, "%s/roles_0/metrics.jsonl", root);
    assert_int_equal(tandem_file_read_all(mp, &mj, &mlen), TANDEM_OK);
    assert_null(strstr(mj, "gpu_util_pct"));
    tandem_free(mj);
    const char *nvml = getenv("TANDEM_NVML");
    if (nvml && strstr(nvml, "fakecuda")) {
        snprintf(mp, sizeof mp, "%s/roles_1/metrics.jsonl", root);
        assert_int_equal(tandem_file_read_all(mp, &mj, &mlen), TANDEM_OK);
        const char *want[] = {"\"model_gpu_util_pct\":", "\"data_gpu_util_pct\":", "\"model_mem_used_mib\":",
                              "\"model_power_w\":", "\"data_sm_mhz\":", "\"model_temp_c\":"};
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
            if (!strstr(mj, want[i])) fail_msg("%s lacks the NVML field %s", mp, want[i]);
        printf("metrics.jsonl carries the NVML fields of both devices\n");
        tandem_free(mj);
    }
    for (int i = 0; i < 3; i++) {
        const double rel = fabs(l[1].loss[i] - l[0].loss[i]) / fabs(l[0].loss[i]);
        printf("step %d: host %.10g, cuda %.10g, relative difference %.2e (limit %.0e)\n", i,
               l[0].loss[i], l[1].loss[i], rel, TOL_CUDA);
        assert_true(rel <= TOL_CUDA);
    }
}

/* ---- graph mode (docs/TRAINING.md): counts through the stand-in, graphs on and off ----------- */

/* The stand-in's counters (test/fakecuda/fakecuda.h, tandem_fakecuda_dev_counts). */
typedef struct fc_counts {
    uint64_t kernel_launches, captured_launches, graph_launches, graph_instantiations;
    uint64_t stream_syncs, ctx_syncs, event_syncs, copies;
    uint64_t matmuls, captured_matmuls, tf32_matmuls;
} fc_counts;
typedef void (*fc_counts_fn)(fc_counts *out);

enum { GRAPH_STEPS = 7 };
typedef struct graph_log {
    fc_counts_fn counts;
    fc_counts at[GRAPH_STEPS + 1]; /* the training loop's calls after step i (1-based); [0] unused */
    double loss[GRAPH_STEPS + 1];
    int logged[GRAPH_STEPS + 1];
    uint64_t allocs[GRAPH_STEPS + 1]; /* the runtime's allocation counter */
} graph_log;

static void on_step_graph(void *ctx, const tandem_step_metrics *m) {
    graph_log *g = ctx;
    if (m->step < 1 || m->step > GRAPH_STEPS) return;
    if (g->counts) g->counts(&g->at[m->step]); /* on_step runs on the loop's thread */
    g->loss[m->step] = m->loss;
    g->logged[m->step] = m->logged;
    g->allocs[m->step] = tandem_alloc_count();
}

static const char *graph_buckets = "0"; /* the next graph_run's `buckets` */

/* Another thread of the embedding program synchronising its own CUDA work on device 0 while the
 * trainer captures its step (as Tandem's own loader threads do): a global-mode capture forbids
 * that and is invalidated by it (a real H100 failed the first training step so), a
 * thread-local one does not care. The neighbour records and synchronises an event of its own in
 * a loop for the whole run. */
typedef struct neighbour {
    tandem_device *dev;
    tandem_stream *s;
    tandem_event *e;
    volatile int stop;
    long syncs;
    tandem_status st;
} neighbour;

static void *neighbour_main(void *arg) {
    neighbour *n = arg;
    while (!n->stop && n->st == TANDEM_OK) {
        n->st = tandem_event_record(n->e, n->s);
        if (n->st == TANDEM_OK) n->st = tandem_event_sync(n->e);
        n->syncs++;
    }
    return NULL;
}

static void neighbour_start(neighbour *n, pthread_t *th) {
    memset(n, 0, sizeof *n);
    CHECK(tandem_device_open(TANDEM_BACKEND_CUDA, 0, &n->dev));
    CHECK(tandem_stream_create(n->dev, &n->s));
    CHECK(tandem_event_create(n->dev, &n->e));
    assert_int_equal(pthread_create(th, NULL, neighbour_main, n), 0);
}

static void neighbour_stop(neighbour *n, pthread_t th) {
    n->stop = 1;
    assert_int_equal(pthread_join(th, NULL), 0);
    printf("neighbour thread: %ld event synchronisations on device 0 during the run (%s)\n", n->syncs,
           n->st == TANDEM_OK ? "all ok" : tandem_last_error());
    assert_int_equal(n->st, TANDEM_OK);
    tandem_event_destroy(n->e);
    tandem_stream_destroy(n->s);
    tandem_device_close(n->dev);
}

static void graph_run(const char *data, const char *name, tandem_backend be, const char *graphs,
                      const char *precision, graph_log *g) {
    char out[300];
    snprintf(out, sizeof out, "%s/%s", root, name);
    tandem_config cfg;
    small_config(&cfg, data, out);
    char v[16];
    snprintf(v, sizeof v, "%d", GRAPH_STEPS);
    CHECK(tandem_config_set(&cfg, "max_steps", v));
    CHECK(tandem_config_set(&cfg, "shuffle", "false"));
    CHECK(tandem_config_set(&cfg, "log_every", "3"));
    CHECK(tandem_config_set(&cfg, "cuda_graphs", graphs));
    CHECK(tandem_config_set(&cfg, "precision", precision));
    CHECK(tandem_config_set(&cfg, "buckets", graph_buckets));
    if (getenv("TANDEM_TEST_GRAPH_TINY")) { /* tiny's launch list (layers, heads, r, B 8), narrow and short */
        static const char *const kv[][2] = {{"layers", "4"}, {"heads", "4"}, {"reduction", "4"},
                                            {"batch_size", "8"}, {"grad_accum", "1"}};
        for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) CHECK(tandem_config_set(&cfg, kv[i][0], kv[i][1]));
    }
    if (be == TANDEM_BACKEND_CUDA) {
        CHECK(tandem_config_set(&cfg, "data_gpu", cuda_data_ordinal()));
        CHECK(tandem_config_set(&cfg, "model_gpu", "0"));
    }
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = be;
    o.on_step = on_step_graph;
    o.on_step_user = g;
    tandem_trainer_summary sum;
    CHECK(tandem_test_train_run(&cfg, &o, &sum));
}

/* Per step, the training loop's own driver calls through the stand-in (the loader and
 * data-device threads wait on their own events, off the model stream): a graph run launches
 * exactly one graph and no kernel, matmul or copy of its own, and synchronises nothing except on
 * the logged steps (two stream syncs: the drain of the queued steps before it, and the read-back); an eager run launches its kernels one by one, with the same syncs. The losses of
 * the logged steps: graph and eager identical (same operations in the same order), both within
 * TOL_CUDA of the host's (which reads back every step); bf16 likewise graph = eager. The
 * runtime's allocation counter is the same after every step (captures included).
 * TANDEM_TEST_GRAPH_TINY=1: the tiny preset's launch list (4 layers, 4 heads, r 4, batch 8,
 * grad_accum 1) at the test's width and lengths, for the per-step counts of docs/TRAINING.md. */
/* Length bucketing on the stand-in (`buckets: 3`, unshuffled, grad_accum 2): the host and the
 * cuda runs (graphs on: one graph per ring slot and pair of shape classes, captured as each
 * first comes up; and eager) agree within TOL_CUDA at the logged steps, graphs = eager exactly,
 * and the allocation counter stays put after the first step (captures of new classes included). */
static void test_bucketing_cuda(void **state) {
    (void)state;
    if (backend != TANDEM_BACKEND_CUDA) skip();
    char data[300];
    snprintf(data, sizeof data, "%s/bucket_cuda_data", root);
    tandem_rng r = {seed ^ 0xb0c5};
    write_corpus(data, 9, &r);
    static graph_log g[3];
    memset(g, 0, sizeof g);
    graph_buckets = "3";
    graph_run(data, "bucket_host", TANDEM_BACKEND_HOST, "true", "fp32", &g[0]);
    graph_run(data, "bucket_graphs", TANDEM_BACKEND_CUDA, "true", "fp32", &g[1]);
    graph_run(data, "bucket_eager", TANDEM_BACKEND_CUDA, "false", "fp32", &g[2]);
    graph_buckets = "0";
    for (int i = 1; i <= GRAPH_STEPS; i++) {
        if (!g[1].logged[i]) continue;
        const double rel = fabs(g[1].loss[i] - g[0].loss[i]) / fabs(g[0].loss[i]);
        printf("buckets step %d: host %.10g, graphs %.10g, eager %.10g (rel. %.1e)\n", i, g[0].loss[i],
               g[1].loss[i], g[2].loss[i], rel);
        assert_true(rel <= TOL_CUDA);
        assert_true(g[1].loss[i] == g[2].loss[i]);
    }
    for (int k = 1; k < 3; k++)
        for (int i = 2; i <= GRAPH_STEPS; i++) assert_int_equal(g[k].allocs[i], g[k].allocs[1]);
}

static void test_graphs(void **state) {
    (void)state;
    if (backend != TANDEM_BACKEND_CUDA) skip();
    const char *drv = getenv("TANDEM_CUDA_DRIVER");
    void *h = drv ? dlopen(drv, RTLD_NOW | RTLD_NOLOAD) : NULL;
    fc_counts_fn counts = h ? (fc_counts_fn)dlsym(h, "tandem_fakecuda_get_thread_counts") : NULL;
    char data[300];
    snprintf(data, sizeof data, "%s/graph_data", root);
    tandem_rng r = {seed ^ 0x6a};
    write_corpus(data, getenv("TANDEM_TEST_GRAPH_TINY") ? 9 : 5, &r);
    static graph_log g[5];
    memset(g, 0, sizeof g);
    for (int k = 0; k < 5; k++) g[k].counts = counts;
    graph_run(data, "graph_host", TANDEM_BACKEND_HOST, "true", "fp32", &g[0]);
    neighbour nb;
    pthread_t nb_thread;
    neighbour_start(&nb, &nb_thread);
    graph_run(data, "graph_on", TANDEM_BACKEND_CUDA, "true", "fp32", &g[1]);
    neighbour_stop(&nb, nb_thread);
    graph_run(data, "graph_off", TANDEM_BACKEND_CUDA, "false", "fp32", &g[2]);
    graph_run(data, "graph_bf16_on", TANDEM_BACKEND_CUDA, "true", "bf16", &g[3]);
    graph_run(data, "graph_bf16_off", TANDEM_BACKEND_CUDA, "false", "bf16", &g[4]);
    for (int i = 1; i <= GRAPH_STEPS; i++) {
        assert_int_equal(g[1].logged[i], i % 3 == 0 || i == GRAPH_STEPS);
        if (!g[1].logged[i]) continue;
        const double rel = fabs(g[1].loss[i] - g[0].loss[i]) / fabs(g[0].loss[i]);
        printf("step %d: host %.10g, graphs %.10g, eager %.10g (rel. %.1e, limit %.0e); bf16 graphs %.10g, "
               "eager %.10g\n", i, g[0].loss[i], g[1].loss[i], g[2].loss[i], rel, TOL_CUDA, g[3].loss[i],
               g[4].loss[i]);
        assert_true(rel <= TOL_CUDA);
        assert_true(g[1].loss[i] == g[2].loss[i]);
        assert_true(isfinite(g[3].loss[i]) && g[3].loss[i] == g[4].loss[i]);
    }
    /* Graph handles are made before the commit; capturing and instantiating (first steps)
     * allocate nothing of the runtime's own (the driver's graph memory is its own). */
    for (int k = 1; k < 5; k++)
        for (int i = 2; i <= GRAPH_STEPS; i++) assert_int_equal(g[k].allocs[i], g[k].allocs[1]);
    if (!counts) {
        printf("graph counts: not the stand-in driver (TANDEM_TEST_REAL_GPU): counts skipped\n");
        return;
    }
    for (int k = 1; k <= 2; k++)
        for (int i = 2; i <= GRAPH_STEPS; i++) {
            const fc_counts *a = &g[k].at[i - 1], *b = &g[k].at[i];
            const uint64_t graphs = b->graph_launches - a->graph_launches,
                           launches = b->kernel_launches - a->kernel_launches,
                           matmuls = b->matmuls - a->matmuls, copies = b->copies - a->copies,
                           syncs = b->stream_syncs - a->stream_syncs, ctx = b->ctx_syncs - a->ctx_syncs,
                           ev = b->event_syncs - a->event_syncs;
            printf("%s step %d%s: %llu graph launch(es), %llu kernel launches, %llu matmuls, %llu copies, %llu "
                   "stream / %llu context / %llu event synchronisations\n", k == 1 ? "graphs" : "eager", i,
                   g[k].logged[i] ? " (logged)" : "", (unsigned long long)graphs, (unsigned long long)launches,
                   (unsigned long long)matmuls, (unsigned long long)copies, (unsigned long long)syncs,
                   (unsigned long long)ctx, (unsigned long long)ev);
            assert_int_equal(graphs, k == 1 ? 1 : 0);
            if (k == 1) assert_int_equal(launches + matmuls + copies, 0);
            else assert_true(launches > 10 && matmuls > 10);
            /* a logged step: the drain of the steps queued before it (its device figures start
             * on an idle stream; none when the step before was read back too) and its read-back */
            assert_int_equal(syncs, g[k].logged[i] ? 1 + !g[k].logged[i - 1] : 0);
            assert_int_equal(ctx, 0);
            assert_int_equal(ev, 0);
        }
}

/* build/tandem train with extra arguments; stderr into err; returns the exit code. */
static int run_cli(const char *args, char *err, size_t cap) {
    char cmd[2048], errf[400];
    snprintf(errf, sizeof errf, "%s/cli_err.txt", root);
    snprintf(cmd, sizeof cmd, "'%s/tandem' train --quiet --backend host %s", TANDEM_TEST_BUILD_DIR, args);
    return tandem_test_run_stderr(cmd, errf, err, cap);
}

static void test_bad_configs(void **state) {
    (void)state;
    if (backend == TANDEM_BACKEND_CUDA) skip(); /* command-line behaviour: host run only */
    char data[300], yaml[300], args[1200], err[4096];
    snprintf(data, sizeof data, "%s/cfg_data", root);
    tandem_rng r = {seed ^ 0x33};
    write_corpus(data, 3, &r);
    snprintf(yaml, sizeof yaml, "%s/bad.yaml", root);
    static const struct {
        const char *text, *expect[2];
    } cases[] = {
        {"batch_size: 2\nlearning_rate: 0.1\n", {"learning_rate", ":2"}},
        {"seed: 1\nlayers: 2\nbatch_size: many\n", {"batch_size", ":3"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(yaml, "w");
        assert_non_null(f);
        fputs(cases[i].text, f);
        fclose(f);
        snprintf(args, sizeof args, "--config '%s' --train-data '%s' --out '%s/cfg_out'", yaml, data, root);
        const int rc = run_cli(args, err, sizeof err);
        printf("bad config %zu: exit %d: %s", i, rc, err);
        assert_int_equal(rc, 2);
        for (int j = 0; j < 2; j++) assert_non_null(strstr(err, cases[i].expect[j]));
    }
    snprintf(args, sizeof args, "--train-data '%s' --out '%s/cfg_out' --model-size tiny "
             "--batch-size 2 --model-gpu-memory 1", data, root);
    const int rc = run_cli(args, err, sizeof err);
    printf("tiny plan in a 1 MiB model arena: exit %d: %.300s\n", rc, err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "model"));
    assert_true(strstr(err, "budget") || strstr(err, "Budget") || strstr(err, "BUDGET"));
}

int main(void) {
    seed = tandem_test_seed("test_trainer");
    const char *be = getenv("TANDEM_TEST_BACKEND");
    if (be && !strcmp(be, "cuda")) {
        backend = TANDEM_BACKEND_CUDA;
        if (!getenv("TANDEM_TEST_REAL_GPU")) setenv("TANDEM_FAKECUDA_DEVICES", "2", 1);
    }
    if (tandem_test_mkdtemp(root, sizeof root, "test_trainer") != 0) return 1;
    char cache[300];
    snprintf(cache, sizeof cache, "%s/cache", root);
    setenv("XDG_CACHE_HOME", cache, 1); /* the text cache stays inside the test's directory */
    if (cli_env_apply(NULL, 0) != TANDEM_OK) return 2;
    const struct CMUnitTest host_tests[] = {
        cmocka_unit_test(test_resume_bit_identical),
        cmocka_unit_test(test_bucketing),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_validation_fixed_subset),
        cmocka_unit_test(test_figures),
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_device_roles),
        cmocka_unit_test(test_graphs),
    };
    /* On the stand-in (emulated kernels, slow) only the device-role run. */
    const struct CMUnitTest cuda_tests[] = {
        cmocka_unit_test(test_device_roles),
        cmocka_unit_test(test_graphs),
        cmocka_unit_test(test_bucketing_cuda),
    };
    const int rc = backend == TANDEM_BACKEND_CUDA
                       ? cmocka_run_group_tests_name("trainer_cuda", cuda_tests, NULL, NULL)
                       : cmocka_run_group_tests_name("trainer", host_tests, NULL, NULL);
    if (tandem_test_rmtree(root) != 0) fprintf(stderr, "could not remove %s\n", root);
    return rc;
}
