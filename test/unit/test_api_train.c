/* test_api_train.c — the training half of the public API, used as an embedding program uses it
 * (tandem.h only, besides the test's own corpus writer), on a small corpus written here with a
 * shrunk model (d 16, 1 layer, max_frames 32) on the host backend:
 *
 *   config:     create holds the defaults; set / get round-trip every kind of key (int, float,
 *               bool, enum, path); an unknown key names the nearest one; a short buffer and a
 *               broken cross-key rule are TANDEM_E_INVALID; dump loads back to the same dump.
 *   callback:   one call per step, steps 1..N in order; every field in range (busy %, ring
 *               occupancy within the ring, ETA, rates); val_l1 set exactly on the validated steps;
 *               `logged` exactly on the steps metrics.jsonl has, with the same loss / l1 / lr /
 *               val_l1; a stop requested from the callback ends the run after that step with a
 *               checkpoint; the text cache goes to the cache_dir given.
 *   contract:   a create that fails (no such dataset; bf16 on host devices, refused by the
 *               model's declare; a model arena over its budget, which fails at the commit after
 *               devices, pools, pipelines and the model exist) returns NULL and leaves nothing
 *               behind (the sanitizer build checks for leaks); destroy / close accept NULL.
 *   checkpoint: the newest one of the run: step, format version, the config (YAML and loaded:
 *               same dump as the run's), symbols, every metadata entry, the tensor table
 *               (parameters and both moments, same shapes); bad files and directories fail
 *               with NULL handles.
 *   plan:       the report of the run's config (names the config, every arena — the evaluation's too —, pinned staging),
 *               truncation keeps the needed length, a model arena budget of 1 MiB is
 *               TANDEM_E_BUDGET with the whole report still written.
 *   data:       prep counts the corpus and hits the cache the second time; the data-side run
 *               checks N batches, reaching its stages in order.
 * Seed printed; replay with TANDEM_TEST_SEED.
 */
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

#include "tandem.h"
#include "test/fixtures.h"
#include "test/tiny_corpus.h"

#define MAX_FRAMES 32
#define STEPS 6

static uint64_t seed;
static char root[256], data[300], val[300], cache[300];

static tandem_config *small_config(const char *out) {
    tandem_config *cfg = NULL;
    CHECK(tandem_config_create(&cfg));
    char s[32];
    snprintf(s, sizeof s, "%llu", (unsigned long long)(seed % 1000000));
    const char *const kv[][2] = {
        {"model_size", "custom"}, {"d_model", "16"}, {"layers", "1"}, {"heads", "2"}, {"reduction", "2"},
        {"max_text", "24"}, {"max_frames", "32"}, {"batch_size", "2"}, {"num_workers", "1"},
        {"prefetch_buffer_size", "3"}, {"lr", "0.003"}, {"warmup_steps", "2"}, {"log_every", "4"},
        {"checkpoint_every", "0"}, {"val_every", "3"}, {"val_batches", "1"}, {"max_steps", "6"},
        {"seed", s}, {"train_data", data}, {"val_data", val}, {"out", out},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) CHECK(tandem_config_set(cfg, kv[i][0], kv[i][1]));
    CHECK(tandem_config_check(cfg));
    return cfg;
}

/* ---- config ------------------------------------------------------------------------------------ */

static void expect_get(const tandem_config *cfg, const char *key, const char *want) {
    char v[TANDEM_CONFIG_VALUE_MAX];
    CHECK(tandem_config_get(cfg, key, v, sizeof v));
    if (strcmp(v, want) != 0) fail_msg("config key %s: got '%s', expected '%s'", key, v, want);
}

static void test_config(void **state) {
    (void)state;
    tandem_config *cfg = NULL;
    CHECK(tandem_config_create(&cfg));
    expect_get(cfg, "model_size", "tiny");
    expect_get(cfg, "d_model", "256"); /* the tiny preset */
    expect_get(cfg, "shuffle", "true");
    expect_get(cfg, "train_data", "");
    static const char *const round[][2] = {{"batch_size", "16"}, {"lr", "0.00025"}, {"shuffle", "false"},
                                           {"precision", "bf16"}, {"out", "runs/a b/é"}, {"seed", "9007199254740993"}};
    for (size_t i = 0; i < sizeof round / sizeof round[0]; i++) {
        CHECK(tandem_config_set(cfg, round[i][0], round[i][1]));
        expect_get(cfg, round[i][0], round[i][1]);
    }
    char v[8];
    assert_int_equal(tandem_config_get(cfg, "out", v, sizeof v), TANDEM_E_INVALID);
    assert_string_equal(v, "");
    assert_int_equal(tandem_config_get(cfg, "batch_sise", v, sizeof v), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "batch_size"));
    assert_int_equal(tandem_config_set_from(cfg, "--heads", "heads", "many"), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "--heads"));
    /* the dump loads back to the same config */
    size_t n = tandem_config_dump(cfg, NULL, 0);
    char *a = malloc(n + 1), *b = malloc(n + 1);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(tandem_config_dump(cfg, a, n + 1), n);
    tandem_config *back = NULL;
    CHECK(tandem_config_create(&back));
    CHECK(tandem_config_load_string(back, a, n, "dump"));
    assert_int_equal(tandem_config_dump(back, b, n + 1), n);
    assert_string_equal(a, b);
    /* a broken rule across keys */
    CHECK(tandem_config_set(back, "heads", "3"));
    assert_int_equal(tandem_config_check(back), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "heads 3"));
    assert_true(tandem_config_describe(NULL, 0) > 1000);
    free(a);
    free(b);
    tandem_config_destroy(back);
    tandem_config_destroy(cfg);
    tandem_config_destroy(NULL);
}

/* ---- training through the callback --------------------------------------------------------------- */

typedef struct step_log {
    tandem_trainer *t;
    int n, stop_after;
    tandem_step_metrics m[16];
} step_log;

static void on_step(void *user, const tandem_step_metrics *m) {
    step_log *l = user;
    if (l->n < 16) l->m[l->n] = *m;
    l->n++;
    if (l->stop_after > 0 && l->n == l->stop_after) tandem_trainer_request_stop(l->t);
}

/* steps of metrics.jsonl lines with a loss, and their loss / l1 / lr / val_l1 / ga (-1 when
 * absent) */
static int read_metrics(const char *out, int64_t *step, double (*v)[5], int cap) {
    char path[400], line[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", out);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int n = 0;
    static const char *const keys[5] = {"\"loss\":", "\"l1\":", "\"lr\":", "\"val_l1\":", "\"ga\":"};
    while (fgets(line, sizeof line, f) && n < cap) {
        if (!strstr(line, keys[0])) continue; /* the step-0 validation line */
        step[n] = strtoll(strstr(line, "\"step\":") + 7, NULL, 10);
        for (int k = 0; k < 5; k++) {
            const char *p = strstr(line, keys[k]);
            v[n][k] = p ? strtod(p + strlen(keys[k]), NULL) : -1;
        }
        n++;
    }
    fclose(f);
    return n;
}

static void check_step(const tandem_step_metrics *m, int i) {
    assert_int_equal(m->step, i + 1);
    assert_int_equal(m->total_steps, STEPS);
    assert_true(isfinite(m->loss) && m->loss > 0 && m->l1 > 0 && m->stop_bce > 0 && m->lr > 0);
    assert_true(m->ga > 0 && m->ga <= 1); /* the guided-attention loss, on by default */
    assert_true(m->grad_norm > 0 && !m->skipped);
    assert_true(m->step_ms > 0 && m->data_wait_ms >= 0 && m->data_wait_ms <= m->step_ms);
    assert_true(m->model_busy_pct >= 0 && m->model_busy_pct <= 100);
    assert_true(m->data_busy_pct >= 0 && m->data_busy_pct <= 100);
    assert_int_equal(m->ring_slots, 3);
    assert_true(m->ring_occupancy >= 0 && m->ring_occupancy <= 3);
    assert_true(m->samples_per_s > 0 && m->x_realtime > 0 && m->step_cv >= 0);
    assert_true(m->eta_s >= 0);
    const int validated = (i + 1) % 3 == 0 || i + 1 == STEPS;
    assert_int_equal(m->val_l1 >= 0, validated);
    assert_int_equal(m->val_stop_bce >= 0, validated);
    /* the free-running evaluation runs with every validation */
    assert_int_equal(m->eval_stop_within >= 0, validated);
    assert_int_equal(m->eval_len_ratio > 0, validated);
    assert_int_equal(m->eval_dtw_l1 > 0, validated);
    assert_int_equal(m->eval_text_dep > 0, validated);
    assert_int_equal(m->eval_spec_var >= 0, validated);
    assert_int_equal(m->eval_ident >= 0, validated);
    assert_true(m->eval_ident <= 1);
    assert_int_equal(m->eval_ms > 0, validated);
    assert_true(m->eval_stop_within <= 1);
}

static void test_train_callback(void **state) {
    (void)state;
    char out[300];
    snprintf(out, sizeof out, "%s/run", root);
    tandem_config *cfg = small_config(out);
    static step_log l;
    memset(&l, 0, sizeof l);
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = TANDEM_BACKEND_HOST;
    o.on_step = on_step;
    o.on_step_user = &l;
    o.cache_dir = cache;
    CHECK(tandem_trainer_create(cfg, &o, &l.t));
    tandem_config_destroy(cfg); /* the trainer holds its own copy */
    tandem_trainer_summary sum;
    CHECK(tandem_trainer_run(l.t, &sum));
    tandem_trainer_destroy(l.t);
    assert_int_equal(l.n, STEPS);
    assert_int_equal(sum.steps_run, STEPS);
    assert_true(sum.loss_first == l.m[0].loss && sum.loss_last == l.m[STEPS - 1].loss);
    assert_true(sum.val_l1_last == l.m[STEPS - 1].val_l1);
    assert_non_null(strstr(sum.checkpoint, "ckpt-00000006.safetensors"));
    for (int i = 0; i < STEPS; i++) check_step(&l.m[i], i);
    /* the logged steps are metrics.jsonl's lines, with the same numbers */
    int64_t steps[16];
    double v[16][5];
    const int n = read_metrics(out, steps, v, 16);
    int logged = 0;
    for (int i = 0; i < STEPS; i++) {
        const tandem_step_metrics *m = &l.m[i];
        if (!m->logged) continue;
        assert_true(logged < n);
        assert_int_equal(steps[logged], m->step);
        const double want[5] = {m->loss, m->l1, m->lr, m->val_l1, m->ga};
        for (int k = 0; k < 5; k++) assert_true(fabs(v[logged][k] - want[k]) <= 1e-8 * fabs(want[k]));
        logged++;
    }
    assert_int_equal(logged, n);
    assert_int_equal(n, 3); /* validations 3 and 6, log_every 4 */
    printf("callback: %d steps, %d logged like metrics.jsonl; last loss %.4f, val_l1 %.4f\n", l.n, n,
           l.m[STEPS - 1].loss, l.m[STEPS - 1].val_l1);
    /* the text cache went where it was told */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls '%s'/text-*.cache >/dev/null 2>&1", cache);
    assert_int_equal(system(cmd), 0);

    /* a stop requested from the callback: that step is the last, and it is checkpointed */
    snprintf(out, sizeof out, "%s/run_stop", root);
    cfg = small_config(out);
    memset(&l, 0, sizeof l);
    l.stop_after = 2;
    CHECK(tandem_trainer_create(cfg, &o, &l.t));
    tandem_config_destroy(cfg);
    CHECK(tandem_trainer_run(l.t, &sum));
    tandem_trainer_destroy(l.t);
    assert_int_equal(l.n, 2);
    assert_true(sum.stopped_by_request);
    assert_int_equal(sum.last_step, 2);
    assert_non_null(strstr(sum.checkpoint, "ckpt-00000002.safetensors"));
    tandem_trainer_request_stop(NULL);
    tandem_trainer_destroy(NULL);
}

static void test_create_fails_clean(void **state) {
    (void)state;
    char out[300], none[300];
    snprintf(out, sizeof out, "%s/run_fail", root);
    snprintf(none, sizeof none, "%s/no_such_dataset", root);
    tandem_config *cfg = small_config(out);
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = TANDEM_BACKEND_HOST;
    o.cache_dir = cache;
    tandem_trainer *t = (tandem_trainer *)&o; /* not NULL: create must clear it */
    CHECK(tandem_config_set(cfg, "batch_size", "512")); /* a ring of 3 x 512 utterances */
    CHECK(tandem_config_set(cfg, "model_gpu_memory", "1"));
    tandem_status st = tandem_trainer_create(cfg, &o, &t);
    printf("model arena of 1 MiB: %s: %.200s\n", tandem_status_name(st), tandem_last_error());
    assert_int_equal(st, TANDEM_E_BUDGET);
    assert_null(t);
    assert_non_null(strstr(tandem_last_error(), "model"));
    CHECK(tandem_config_set(cfg, "model_gpu_memory", "0"));
    CHECK(tandem_config_set(cfg, "batch_size", "2"));
    /* refused by the model's declare, after the devices and both pipelines */
    CHECK(tandem_config_set(cfg, "precision", "bf16"));
    t = (tandem_trainer *)&o;
    st = tandem_trainer_create(cfg, &o, &t);
    printf("bf16 on host devices: %s: %.200s\n", tandem_status_name(st), tandem_last_error());
    assert_int_equal(st, TANDEM_E_UNSUPPORTED);
    assert_null(t);
    CHECK(tandem_config_set(cfg, "precision", "fp32"));
    CHECK(tandem_config_set(cfg, "train_data", none));
    t = (tandem_trainer *)&o;
    st = tandem_trainer_create(cfg, &o, &t);
    printf("no dataset: %s: %.200s\n", tandem_status_name(st), tandem_last_error());
    assert_int_not_equal(st, TANDEM_OK);
    assert_null(t);
    assert_non_null(strstr(tandem_last_error(), "no_such_dataset"));
    tandem_config_destroy(cfg);
}

/* ---- checkpoints --------------------------------------------------------------------------------- */

static void test_checkpoint(void **state) {
    (void)state;
    char run[300], path[400];
    snprintf(run, sizeof run, "%s/run", root); /* written by test_train_callback */
    tandem_ckpt *c = NULL;
    CHECK(tandem_ckpt_open_latest(run, &c));
    assert_int_equal(tandem_ckpt_step(c), STEPS);
    assert_string_equal(tandem_ckpt_format_version(c), "1");
    assert_non_null(strstr(tandem_ckpt_path(c), "ckpt-00000006.safetensors"));
    char version[32];
    snprintf(version, sizeof version, "\"version\":%d,", TANDEM_SYMBOLS_VERSION);
    assert_non_null(strstr(tandem_ckpt_symbols_json(c), version));
    tandem_config *cfg = NULL;
    CHECK(tandem_ckpt_config(c, &cfg));
    expect_get(cfg, "d_model", "16");
    expect_get(cfg, "out", run);
    tandem_config *want = small_config(run);
    char a[8192], b[8192];
    tandem_config_dump(cfg, a, sizeof a);
    tandem_config_dump(want, b, sizeof b);
    assert_string_equal(a, b);
    assert_string_equal(tandem_ckpt_config_yaml(c), b);
    static const char *const keys[] = {"format_version", "step", "config", "symbols", "updates", "skipped",
                                       "skipped_in_row", "rng_state", "sampler_epoch", "sampler_position"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        int found = 0;
        for (int i = 0; i < tandem_ckpt_meta_count(c); i++) {
            const char *key, *value;
            assert_true(tandem_ckpt_meta_get(c, i, &key, &value));
            found += strcmp(key, keys[k]) == 0 && value == tandem_ckpt_meta_find(c, key);
        }
        if (found != 1) fail_msg("metadata key %s found %d times", keys[k], found);
    }
    const char *key = "x", *value = "x";
    assert_false(tandem_ckpt_meta_get(c, tandem_ckpt_meta_count(c), &key, &value));
    assert_null(key);
    assert_null(value);
    assert_string_equal(tandem_ckpt_meta_find(c, "updates"), "6");
    /* parameters, then adam_m.<name> and adam_v.<name> of the same shapes */
    const int n = tandem_ckpt_tensor_count(c);
    assert_true(n > 0 && n % 3 == 0);
    for (int i = 0; i < n / 3; i++) {
        tandem_ckpt_tensor p, m, v;
        CHECK(tandem_ckpt_tensor_info(c, i, &p));
        CHECK(tandem_ckpt_tensor_info(c, i + n / 3, &m));
        CHECK(tandem_ckpt_tensor_info(c, i + 2 * n / 3, &v));
        char mn[128];
        snprintf(mn, sizeof mn, "adam_m.%s", p.name);
        assert_string_equal(m.name, mn);
        assert_int_equal(p.dtype, TANDEM_F32);
        assert_int_equal(p.bytes, m.bytes);
        assert_int_equal(p.bytes, v.bytes);
        assert_int_equal(p.ndim, v.ndim);
    }
    tandem_ckpt_tensor e;
    assert_int_equal(tandem_ckpt_tensor_info(c, n, &e), TANDEM_E_INVALID);
    printf("checkpoint: %s: step %lld, %d tensors, %d metadata entries\n", tandem_ckpt_path(c),
           (long long)tandem_ckpt_step(c), n, tandem_ckpt_meta_count(c));
    tandem_config_destroy(cfg);
    tandem_config_destroy(want);
    tandem_ckpt_close(c);
    tandem_ckpt_close(NULL);
    /* not checkpoints */
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    c = (tandem_ckpt *)&e;
    assert_int_equal(tandem_ckpt_open(path, &c), TANDEM_E_FORMAT);
    assert_null(c);
    c = (tandem_ckpt *)&e;
    assert_int_equal(tandem_ckpt_open_latest(cache, &c), TANDEM_E_INVALID);
    assert_null(c);
    snprintf(path, sizeof path, "%s/no_such_run", root);
    assert_int_equal(tandem_ckpt_open_latest(path, &c), TANDEM_E_IO);
    assert_null(c);
}

/* ---- plan, prep, the data side --------------------------------------------------------------------- */

static void count_lines(void *user, tandem_log_level level, const char *msg) {
    (void)level, (void)msg;
    ++*(int *)user;
}

static void test_plan(void **state) {
    (void)state;
    tandem_config *cfg = small_config("unused");
    tandem_plan_options po;
    tandem_plan_options_init(&po);
    po.config_name = "small.yaml";
    static char text[32768], cut[64];
    size_t len = 0, cut_len = 0;
    CHECK(tandem_plan_report(cfg, &po, text, sizeof text, &len));
    assert_int_equal(len, strlen(text));
    assert_non_null(strstr(text, "plan for small.yaml: model_size custom (d_model 16"));
    assert_non_null(strstr(text, "[data device]"));
    assert_non_null(strstr(text, "[model device]"));
    assert_non_null(strstr(text, "[model device, free-running evaluation at validation]"));
    assert_non_null(strstr(text, "pinned host staging"));
    assert_non_null(strstr(text, "alignment 256 B"));
    CHECK(tandem_plan_report(cfg, &po, cut, sizeof cut, &cut_len));
    assert_int_equal(cut_len, len);
    assert_int_equal(strlen(cut), sizeof cut - 1);
    assert_memory_equal(cut, text, sizeof cut - 1);
    po.backend = TANDEM_BACKEND_HOST;
    CHECK(tandem_plan_report(cfg, &po, text, sizeof text, &len));
    assert_non_null(strstr(text, "alignment 64 B"));
    /* over budget: the error names the arena, the report is whole */
    CHECK(tandem_config_set(cfg, "batch_size", "512"));
    CHECK(tandem_config_set(cfg, "model_gpu_memory", "1"));
    int logged = 0; /* the pool logs its report too (as documented): counted, not shown */
    tandem_log_set_hook(count_lines, &logged);
    assert_int_equal(tandem_plan_report(cfg, &po, text, sizeof text, &len), TANDEM_E_BUDGET);
    tandem_log_set_hook(NULL, NULL);
    assert_true(logged > 0);
    assert_non_null(strstr(tandem_last_error(), "pool 'model'"));
    assert_null(strstr(tandem_last_error(), "pool 'data'"));
    /* the config validates: the free-running evaluation's arena is counted too */
    assert_non_null(strstr(text, "one GPU in both roles needs the three arenas on it"));
    assert_int_equal(len, strlen(text));
    tandem_config_destroy(cfg);
}

/* `buckets` > 1: the plan shows the shape classes and their real-frame share exactly as the
 * trainer chooses them (its startup report), from the training set's headers; a training set that
 * does not open is named, the plan still whole; buckets 0 shows none. */
static void test_plan_buckets(void **state) {
    (void)state;
    char out[300];
    snprintf(out, sizeof out, "%s/run_buckets_plan", root);
    tandem_config *cfg = small_config(out);
    CHECK(tandem_config_set(cfg, "buckets", "3"));
    tandem_plan_options po;
    tandem_plan_options_init(&po);
    po.backend = TANDEM_BACKEND_HOST;
    static char text[32768];
    size_t len = 0;
    CHECK(tandem_plan_report(cfg, &po, text, sizeof text, &len));
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = TANDEM_BACKEND_HOST;
    o.cache_dir = cache;
    tandem_trainer *t = NULL;
    CHECK(tandem_trainer_create(cfg, &o, &t));
    tandem_trainer_startup su;
    CHECK(tandem_trainer_startup_report(t, &su));
    tandem_trainer_destroy(t);
    char want[256];
    int n = snprintf(want, sizeof want, "length bucketing: %d shape classes of [", su.n_buckets);
    for (int c = 0; c < su.n_buckets; c++) n += snprintf(want + n, sizeof want - n, "%s%d", c ? ", " : "",
                                                         su.bucket_frames[c]);
    snprintf(want + n, sizeof want - n, "] mel frames (from 3 asked); %.1f %% of the planned frames real",
             su.bucket_real_pct);
    const char *line = strstr(text, "length bucketing");
    assert_non_null(line);
    printf("trainer: %d classes; plan: %.*s\n", su.n_buckets, (int)strcspn(line, "\n"), line);
    assert_true(su.n_buckets >= 1 && su.bucket_frames[su.n_buckets - 1] == 32);
    assert_non_null(strstr(text, want));
    CHECK(tandem_config_set(cfg, "train_data", out)); /* not a dataset */
    CHECK(tandem_plan_report(cfg, &po, text, sizeof text, &len));
    assert_non_null(strstr(text, "length bucketing: buckets 3; classes unknown, train data '"));
    assert_non_null(strstr(text, "[model device]"));
    CHECK(tandem_config_set(cfg, "buckets", "0"));
    CHECK(tandem_plan_report(cfg, &po, text, sizeof text, &len));
    assert_null(strstr(text, "length bucketing"));
    tandem_config_destroy(cfg);
}

static void test_prep(void **state) {
    (void)state;
    tandem_data_prep_options o;
    tandem_data_prep_options_init(&o);
    o.data_dir = data;
    o.max_frames = MAX_FRAMES;
    o.max_text = 24;
    o.cache_dir = cache;
    tandem_data_prep_report r;
    for (int pass = 0; pass < 2; pass++) {
        CHECK(tandem_data_prep(&o, &r));
        assert_int_equal(r.rows, 5);
        assert_int_equal(r.utterances, 5);
        assert_int_equal(r.n_train, 5);
        assert_int_equal(r.n_val, 0);
        assert_int_equal(r.lang_en, 5);
        assert_int_equal(r.files_scanned, 5);
        assert_true(r.min_s >= 0.1 && r.max_s <= MAX_FRAMES * 256 / 22050.0 && r.min_s <= r.mean_s &&
                    r.mean_s <= r.max_s);
        assert_int_equal(r.too_long + r.too_short + r.unreadable, 0);
        assert_true(r.symbols > 5 && r.symbols_version >= 1 && r.tokens > 15);
        assert_int_equal(r.cache_hit, pass);
        assert_memory_equal(r.cache_path, cache, strlen(cache));
    }
    for (int k = 0; k < TANDEM_DATA_SKIP_REASONS; k++) assert_string_not_equal(tandem_data_skip_reason_name(k), "?");
    assert_string_equal(tandem_data_skip_reason_name(TANDEM_DATA_SKIP_REASONS), "?");
    char none[300];
    snprintf(none, sizeof none, "%s/no_such_dataset", root);
    o.data_dir = none;
    assert_int_not_equal(tandem_data_prep(&o, &r), TANDEM_OK);
    o.data_dir = data;
    o.max_frames = 4;
    assert_int_equal(tandem_data_prep(&o, &r), TANDEM_E_INVALID);
}

typedef struct stage_log {
    int n, stage[8];
} stage_log;

static void on_stage(void *user, const tandem_data_run_report *r) {
    stage_log *l = user;
    if (l->n < 8) l->stage[l->n] = r->stage;
    l->n++;
}

static void test_data_run(void **state) {
    (void)state;
    tandem_config *cfg = small_config("unused");
    stage_log l = {0};
    tandem_data_run_options o;
    tandem_data_run_options_init(&o);
    o.data_dir = data;
    o.steps = 4;
    o.backend = TANDEM_BACKEND_HOST;
    o.poison_on_release = 1;
    o.cache_dir = cache;
    o.on_stage = on_stage;
    o.on_stage_user = &l;
    tandem_data_run_report r;
    CHECK(tandem_data_run(cfg, &o, &r));
    assert_int_equal(l.n, 4);
    for (int i = 0; i < 4; i++) assert_int_equal(l.stage[i], TANDEM_DATA_STAGE_INDEXED + i);
    assert_int_equal(r.stage, TANDEM_DATA_STAGE_DONE);
    assert_int_equal(r.utterances, 5);
    assert_int_equal(r.consumed, 4);
    assert_true(r.produced >= 4);
    assert_int_equal(r.batch_size, 2);
    assert_int_equal(r.ring_slots, 3);
    assert_true(r.model_arena_mib > 0 && r.data_arena_mib > 0 && r.wall_s > 0 && r.audio_seconds > 0);
    assert_true(r.mean_ready_slots >= 0 && r.mean_ready_slots <= 3);
    assert_non_null(strstr(r.devices, "host"));
    assert_true(strlen(r.stages) > 0);
    printf("data run: %lld batches in %.3f s, devices: %s\n", (long long)r.consumed, r.wall_s, r.devices);
    /* host devices are peers; the config key force_staged takes the staged path anyway */
    assert_int_equal(r.peer, 1);
    CHECK(tandem_config_set(cfg, "force_staged", "true"));
    CHECK(tandem_data_run(cfg, &o, &r));
    assert_int_equal(r.peer, 0);
    assert_int_equal(r.consumed, 4);
    o.steps = 0;
    assert_int_equal(tandem_data_run(cfg, &o, &r), TANDEM_E_INVALID);
    tandem_config_destroy(cfg);
}

int main(void) {
    seed = tandem_test_seed("test_api_train");
    if (tandem_test_mkdtemp(root, sizeof root, "test_api_train") != 0) return 1;
    snprintf(data, sizeof data, "%s/data", root);
    snprintf(val, sizeof val, "%s/val", root);
    snprintf(cache, sizeof cache, "%s/cache", root);
    tandem_rng r = {seed};
    tiny_corpus_write(data, 5, MAX_FRAMES, &r);
    tiny_corpus_write(val, 2, MAX_FRAMES, &r);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),        cmocka_unit_test(test_prep),
        cmocka_unit_test(test_train_callback), cmocka_unit_test(test_checkpoint),
        cmocka_unit_test(test_create_fails_clean), cmocka_unit_test(test_plan),
        cmocka_unit_test(test_plan_buckets),
        cmocka_unit_test(test_data_run),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (tandem_test_rmtree(root) != 0) fprintf(stderr, "could not remove %s\n", root);
    return rc;
}
