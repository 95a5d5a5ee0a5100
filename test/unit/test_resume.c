/* test_resume.c — continuing and starting from runs (runtime/run/resume.h, init_from.h, run_ckpt.h)
 * on the host backend, with a shrunk model (d 16, 1 layer, r 2, max_frames 32) on a small corpus
 * the test writes:
 *
 *   resume alone:   `tandem train --config F --train-data data --out run` (relative paths, 4 steps),
 *                   then from another directory `tandem train --resume ../run --max-steps 6` with
 *                   nothing else: it exits 0, lists max_steps 4 -> 6, finds the data through the
 *                   absolute path the checkpoint recorded, writes ckpt-00000006, and metrics.jsonl
 *                   holds every step 0..6 once. `--batch-size 4` on a resume exits 2 naming
 *                   batch_size 2 -> 4; `--seed 99 --out newrun` exits 2 and leaves no newrun
 *                   directory; `--resume nope` exits 2 naming it; `--seed 99 --force-resume` runs,
 *                   with a warning naming seed.
 *   changed keys:   (API) a resume with lr changed logs "key 'lr' changes"; one with batch_size
 *                   and max_frames changed is refused naming both with old and new values, the
 *                   new out directory it named is not created; forced, max_frames's shape change
 *                   then fails to load naming the tensor.
 *   grown symbols:  a checkpoint rewritten with an older, smaller symbol table (5 symbols fewer,
 *                   rows in reverse order, names in its metadata to match) starts a new run
 *                   (--init-from, lr 0 so the parameters stay as loaded): every row of a symbol the
 *                   checkpoint names holds that symbol's row, the 5 new rows hold what a fresh run
 *                   of the same seed initialises, every other parameter equals the checkpoint's;
 *                   the run starts at step 0 (not the checkpoint's), and the log names the rows;
 *                   from a max_text 24 checkpoint into max_text 28, pos_emb is reported (both
 *                   shapes) and initialised, the other 21 copied; a resume (even forced) of the
 *                   older table is refused, pointing at --init-from.
 *   best:           validation every step, keep 1: ckpt-best.safetensors holds the step with the
 *                   lowest val_l1 the step callback saw (and that value in best_val_l1), next to
 *                   the one numbered checkpoint kept; two resumes with lr 0 (no validation beats
 *                   it: they tie) each take the newest numbered checkpoint (not the best), and the
 *                   best survives their rotation.
 *   freeze:         a run trained 2 steps (every moment non-zero) resumed with --freeze
 *                   embeddings,blocks.0 for 2 steps: those parameters and their adam_m / adam_v
 *                   are bit for bit as before, every other weight and moment changed; the
 *                   groups are in the checkpoint's metadata and a later resume without --freeze
 *                   keeps them (logged, same check); a group naming nothing (blocks.7 of a
 *                   1-block model) is refused naming it.
 *   rotation:       (checkpoint.h) keep 2 over steps 1..5 with a best written at step 2: ckpt-best
 *                   stays, steps 4 and 5 stay, find_latest takes 5.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/core/config.h"
#include "runtime/formats/checkpoint.h"
#include "runtime/formats/safetensors.h"
#include "runtime/text/symbols.h"
#include "tandem.h"
#include "test/fixtures.h"
#include "test/tiny_corpus.h"
#include "tools/env_options.h"

#define MAX_FRAMES 32

static uint64_t seed;
static char root[256];

static const char *const k_small[][2] = {
    {"model_size", "custom"}, {"d_model", "16"}, {"layers", "1"}, {"heads", "2"}, {"reduction", "2"},
    {"max_text", "24"}, {"max_frames", "32"}, {"batch_size", "2"}, {"grad_accum", "1"}, {"num_workers", "1"},
    {"prefetch_buffer_size", "2"}, {"lr", "0.003"}, {"warmup_steps", "2"}, {"log_every", "1"},
    {"checkpoint_every", "2"}, {"val_every", "0"}, {"keep", "2"},
};

static void small_config(tandem_config *cfg, const char *train, const char *out, int64_t max_steps) {
    tandem_config_init(cfg);
    for (size_t i = 0; i < sizeof k_small / sizeof k_small[0]; i++)
        CHECK(tandem_config_set(cfg, k_small[i][0], k_small[i][1]));
    char v[32];
    snprintf(v, sizeof v, "%lld", (long long)max_steps);
    CHECK(tandem_config_set(cfg, "max_steps", v));
    snprintf(v, sizeof v, "%llu", (unsigned long long)(seed % 1000000));
    CHECK(tandem_config_set(cfg, "seed", v));
    CHECK(tandem_config_set(cfg, "train_data", train));
    CHECK(tandem_config_set(cfg, "out", out));
}

static void write_yaml(const char *path, int64_t max_steps) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (size_t i = 0; i < sizeof k_small / sizeof k_small[0]; i++) fprintf(f, "%s: %s\n", k_small[i][0], k_small[i][1]);
    fprintf(f, "max_steps: %lld\nseed: %llu\n", (long long)max_steps, (unsigned long long)(seed % 1000000));
    fclose(f);
}

typedef struct step_log {
    int n;
    int64_t step[64];
    double loss[64], val_l1[64];
} step_log;

static void on_step(void *ctx, const tandem_step_metrics *m) {
    step_log *l = ctx;
    if (l->n < 64) {
        l->step[l->n] = m->step;
        l->loss[l->n] = m->loss;
        l->val_l1[l->n] = m->val_l1;
    }
    l->n++;
}

static tandem_status train_with(const tandem_config *cfg, const char *resume, const char *init_from, int force,
                                const char *freeze, step_log *log, tandem_trainer_summary *sum) {
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = TANDEM_BACKEND_HOST;
    o.resume_dir = resume;
    o.init_from = init_from;
    o.force_resume = force;
    o.freeze = freeze;
    o.on_step = log ? on_step : NULL;
    o.on_step_user = log;
    return tandem_test_train_run(cfg, &o, sum);
}

static tandem_status train(const tandem_config *cfg, const char *resume, const char *init_from, int force,
                           step_log *log, tandem_trainer_summary *sum) {
    return train_with(cfg, resume, init_from, force, NULL, log, sum);
}

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* `tandem train` in directory dir with args; stderr into err (its info lines: no --quiet, which
 * keeps warnings and errors only); the exit code. */
static int run_cli(const char *dir, const char *args, char *err, size_t cap) {
    char cmd[2048], errf[400];
    snprintf(errf, sizeof errf, "%s/cli_err.txt", root);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s/tandem' train --backend host %s", dir, TANDEM_TEST_BUILD_DIR,
             args);
    return tandem_test_run_stderr(cmd, errf, err, cap);
}

/* Steps of metrics.jsonl in order into steps[], their count returned. */
static int metrics_steps(const char *path, int64_t *steps, int cap) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        const char *s = strstr(line, "\"step\":");
        assert_non_null(s);
        if (n < cap) steps[n] = strtoll(s + 7, NULL, 10);
        n++;
    }
    fclose(f);
    return n;
}

static void test_resume_alone(void **state) {
    (void)state;
    char dir[300], sub[400], err[8192], p[600];
    snprintf(dir, sizeof dir, "%s/alone", root);
    snprintf(sub, sizeof sub, "%s/elsewhere", dir);
    CHECK(tandem_mkdir_p(sub));
    snprintf(p, sizeof p, "%s/data", dir);
    tandem_rng r = {seed};
    tiny_corpus_write(p, 7, MAX_FRAMES, &r);
    snprintf(p, sizeof p, "%s/small.yaml", dir);
    write_yaml(p, 4);
    int rc = run_cli(dir, "--config small.yaml --train-data data --val-data data --out run", err, sizeof err);
    assert_int_equal(rc, 0);
    rc = run_cli(sub, "--resume ../run --max-steps 6", err, sizeof err);
    printf("resume alone from another directory: exit %d\n%s", rc, err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(err, "key 'max_steps' changes 4 -> 6"));
    assert_non_null(strstr(err, "recorded by the checkpoint"));
    snprintf(p, sizeof p, "%s/run/ckpt-00000006.safetensors", dir);
    assert_true(exists(p));
    int64_t steps[32];
    snprintf(p, sizeof p, "%s/run/metrics.jsonl", dir);
    const int n = metrics_steps(p, steps, 32);
    assert_int_equal(n, 6); /* no validation at step 0 in this config (val_every 0) */
    for (int i = 0; i < n; i++) assert_int_equal(steps[i], i + 1);
    assert_null(strstr(err, "key 'out'")); /* out is the run resumed, whatever the path's spelling */

    rc = run_cli(dir, "--resume run --max-steps 8 --batch-size 4", err, sizeof err);
    printf("resume with --batch-size 4: exit %d\n%s", rc, err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "batch_size 2 -> 4"));
    rc = run_cli(dir, "--resume run --max-steps 8 --seed 99 --out newrun", err, sizeof err);
    printf("resume with --seed 99 --out newrun: exit %d\n%s", rc, err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "seed"));
    snprintf(p, sizeof p, "%s/newrun", dir);
    assert_false(exists(p));
    rc = run_cli(dir, "--resume nope", err, sizeof err);
    printf("resume of a missing directory: exit %d\n%s", rc, err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "'nope' is not a run directory"));
    rc = run_cli(dir, "--resume run --max-steps 8 --seed 99 --force-resume", err, sizeof err);
    printf("resume with --seed 99 --force-resume: exit %d\n%s", rc, err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(err, "key 'seed' changes"));
    assert_non_null(strstr(err, "forced"));
}

static void test_resume_changed_keys(void **state) {
    (void)state;
    char data[400], out[400], other[400];
    snprintf(data, sizeof data, "%s/keys_data", root);
    snprintf(out, sizeof out, "%s/keys_run", root);
    snprintf(other, sizeof other, "%s/keys_other", root);
    tandem_rng r = {seed ^ 0x55};
    tiny_corpus_write(data, 5, MAX_FRAMES, &r);
    tandem_config cfg;
    small_config(&cfg, data, out, 2);
    tandem_trainer_summary sum;
    CHECK(train(&cfg, NULL, NULL, 0, NULL, &sum));

    small_config(&cfg, data, out, 4);
    CHECK(tandem_config_set(&cfg, "lr", "0.001"));
    tandem_test_log_capture(TANDEM_LOG_INFO);
    CHECK(train(&cfg, out, NULL, 0, NULL, &sum));
    printf("lr changed on resume:\n%s", tandem_test_log_text());
    assert_non_null(strstr(tandem_test_log_text(), "key 'lr' changes 0.003 -> 0.001"));
    tandem_test_log_stop();

    small_config(&cfg, data, other, 6);
    CHECK(tandem_config_set(&cfg, "batch_size", "3"));
    CHECK(tandem_config_set(&cfg, "max_frames", "64"));
    tandem_status st = train(&cfg, out, NULL, 0, NULL, &sum);
    printf("batch_size and max_frames changed: %s: %s\n", tandem_status_name(st), tandem_last_error());
    assert_int_equal(st, TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "batch_size 2 -> 3"));
    assert_non_null(strstr(tandem_last_error(), "max_frames 32 -> 64"));
    assert_false(exists(other));
    st = train(&cfg, out, NULL, 1, NULL, &sum);
    printf("forced: %s: %s\n", tandem_status_name(st), tandem_last_error());
    assert_int_not_equal(st, TANDEM_OK);
    assert_non_null(strstr(tandem_last_error(), "pos_emb.weight"));
}

/* The raw JSON strings of our symbol table's "symbols" array. */
static int our_symbols(char **json, const char **name, size_t *len, int cap) {
    CHECK(tandem_symbols_to_json(json, NULL));
    const char *p = strstr(*json, "\"symbols\":[");
    assert_non_null(p);
    p += strlen("\"symbols\":[");
    int n = 0;
    while (*p == '"') {
        const char *q = p + 1;
        while (*q != '"') q += *q == '\\' ? 2 : 1;
        assert_true(n < cap);
        name[n] = p; /* with its quotes */
        len[n++] = (size_t)(q + 1 - p);
        p = q + 1;
        if (*p == ',') p++;
    }
    return n;
}

#define DROP_FROM 10 /* symbols [DROP_FROM, DROP_FROM + DROP) are "new" in this build */
#define DROP 5

/* src rewritten as a checkpoint of an older build: ours minus DROP symbols, in reverse order. */
static void write_older(const char *src, const char *dst, int V, int d) {
    tandem_st_file *f = NULL;
    CHECK(tandem_st_open(src, &f));
    const int nt = tandem_st_count(f), nm = tandem_st_meta_count(f);
    tandem_st_tensor *t = calloc((size_t)nt, sizeof *t);
    tandem_st_meta *m = calloc((size_t)nm, sizeof *m);
    const char *name[512];
    size_t len[512];
    char *json = NULL;
    assert_int_equal(our_symbols(&json, name, len, 512), V);
    const int Vo = V - DROP;
    float *rows = malloc(sizeof(float) * (size_t)Vo * (size_t)d);
    char *syms = malloc(strlen(json) + 64);
    size_t o = (size_t)sprintf(syms, "%.*s", (int)(strstr(json, "\"symbols\":[") - json + 11), json);
    int k = 0;
    const float *emb = tandem_st_find(f, "sym_emb.weight")->data;
    for (int i = V - 1; i >= 0; i--) {
        if (i >= DROP_FROM && i < DROP_FROM + DROP) continue;
        memcpy(rows + (size_t)k * (size_t)d, emb + (size_t)i * (size_t)d, sizeof(float) * (size_t)d);
        o += (size_t)sprintf(syms + o, "%s%.*s", k ? "," : "", (int)len[i], name[i]);
        k++;
    }
    sprintf(syms + o, "]}");
    for (int i = 0; i < nt; i++) {
        const tandem_st_info *x = tandem_st_get(f, i);
        t[i] = (tandem_st_tensor){x->name, x->dtype, x->ndim, {x->shape[0], x->shape[1]}, x->data, NULL};
        if (!strcmp(x->name, "sym_emb.weight")) {
            t[i].shape[0] = Vo;
            t[i].data = rows;
        }
    }
    int mk = 0;
    for (int i = 0; i < nm; i++) {
        const tandem_st_meta *x = tandem_st_meta_get(f, i);
        if (strcmp(x->key, TANDEM_CKPT_KEY_FORMAT_VERSION) && strcmp(x->key, TANDEM_CKPT_KEY_STEP)) m[mk++] = *x;
        if (!strcmp(x->key, TANDEM_CKPT_KEY_SYMBOLS)) m[mk - 1].value = syms;
    }
    tandem_st_meta all[64];
    all[0] = (tandem_st_meta){TANDEM_CKPT_KEY_FORMAT_VERSION, TANDEM_CKPT_FORMAT_VERSION};
    all[1] = (tandem_st_meta){TANDEM_CKPT_KEY_STEP, tandem_st_meta_find(f, TANDEM_CKPT_KEY_STEP)};
    for (int i = 0; i < mk; i++) all[2 + i] = m[i];
    tandem_st_writer *w = NULL;
    CHECK(tandem_st_writer_create(t, nt, 1 << 20, 0, &w));
    CHECK(tandem_st_write(w, dst, all, mk + 2, NULL, NULL));
    tandem_st_writer_free(w);
    tandem_st_close(f);
    tandem_free(json);
    free(syms);
    free(rows);
    free(t);
    free(m);
}

/* Row i of tensor name in the checkpoint at path. */
static const float *tensor_of(const tandem_st_file *f, const char *name) {
    const tandem_st_info *x = tandem_st_find(f, name);
    assert_non_null(x);
    return x->data;
}

static void test_init_from_grown_symbols(void **state) {
    (void)state;
    char data[400], a[400], older[500], b[400], c[400];
    snprintf(data, sizeof data, "%s/init_data", root);
    snprintf(a, sizeof a, "%s/init_a", root);
    snprintf(b, sizeof b, "%s/init_b", root);
    snprintf(c, sizeof c, "%s/init_c", root);
    snprintf(older, sizeof older, "%s/older.safetensors", root);
    tandem_rng r = {seed ^ 0x77};
    tiny_corpus_write(data, 5, MAX_FRAMES, &r);
    tandem_config cfg;
    small_config(&cfg, data, a, 2);
    tandem_trainer_summary sa, sb, sc;
    CHECK(train(&cfg, NULL, NULL, 0, NULL, &sa));
    const int V = tandem_symbols_count(), d = 16;
    write_older(sa.checkpoint, older, V, d);

    /* B: from the older checkpoint; C: a fresh run of B's seed (the new rows' initialisation); lr 0 */
    small_config(&cfg, data, b, 1);
    CHECK(tandem_config_set(&cfg, "lr", "0"));
    CHECK(tandem_config_set(&cfg, "seed", "4242"));
    tandem_test_log_capture(TANDEM_LOG_INFO);
    step_log lb = {0};
    CHECK(train(&cfg, NULL, older, 0, &lb, &sb));
    printf("init-from log:\n%s", tandem_test_log_text());
    char want[200];
    snprintf(want, sizeof want, "%d rows copied by symbol name, %d new symbols initialised", V - DROP, DROP);
    assert_non_null(strstr(tandem_test_log_text(), want));
    tandem_test_log_stop();
    assert_int_equal(sb.first_step, 0);
    assert_int_equal(sb.last_step, 1);
    snprintf(cfg.out, sizeof cfg.out, "%s", c);
    CHECK(train(&cfg, NULL, NULL, 0, NULL, &sc));

    tandem_st_file *fa = NULL, *fb = NULL, *fc = NULL;
    CHECK(tandem_st_open(sa.checkpoint, &fa));
    CHECK(tandem_st_open(sb.checkpoint, &fb));
    CHECK(tandem_st_open(sc.checkpoint, &fc));
    const float *ea = tensor_of(fa, "sym_emb.weight"), *eb = tensor_of(fb, "sym_emb.weight"),
                *ec = tensor_of(fc, "sym_emb.weight");
    for (int i = 0; i < V; i++) {
        const int fresh = i >= DROP_FROM && i < DROP_FROM + DROP;
        const float *want_row = (fresh ? ec : ea) + (size_t)i * d;
        assert_memory_equal(eb + (size_t)i * d, want_row, sizeof(float) * d);
    }
    int others = 0;
    for (int i = 0; i < tandem_st_count(fa); i++) {
        const tandem_st_info *x = tandem_st_get(fa, i);
        if (!strncmp(x->name, "adam_", 5) || !strcmp(x->name, "sym_emb.weight")) continue;
        assert_memory_equal(tensor_of(fb, x->name), x->data, x->bytes);
        others++;
    }
    assert_int_not_equal(memcmp(tensor_of(fb, "prenet.weight"), tensor_of(fc, "prenet.weight"), 4), 0);
    printf("init-from: %d of %d sym_emb rows by name, %d new rows as a fresh run initialises them, %d other "
           "parameters as in the checkpoint; the run started at step 0\n", V - DROP, V, DROP, others);
    tandem_st_close(fa);
    tandem_st_close(fb);
    tandem_st_close(fc);

    /* another shape (max_text 28: pos_emb grows) is reported and keeps its initialisation */
    char d_out[400], want2[300];
    snprintf(d_out, sizeof d_out, "%s/init_d", root);
    small_config(&cfg, data, d_out, 1);
    CHECK(tandem_config_set(&cfg, "max_text", "28"));
    tandem_test_log_capture(TANDEM_LOG_INFO);
    CHECK(train(&cfg, NULL, sa.checkpoint, 0, NULL, &sb));
    snprintf(want2, sizeof want2, "pos_emb.weight is [40, 16] F32 there, [44, 16] F32 here; it keeps its "
             "initialisation");
    printf("max_text 28 from a max_text 24 checkpoint: %s\n", strstr(tandem_test_log_text(), "pos_emb") ? "reported" : "?");
    assert_non_null(strstr(tandem_test_log_text(), want2));
    assert_non_null(strstr(tandem_test_log_text(), "21 of 22 parameters copied whole"));
    tandem_test_log_stop();

    /* the older table cannot be resumed (its rows are other token ids) */
    char e_out[400], p[600];
    snprintf(e_out, sizeof e_out, "%s/init_e", root);
    CHECK(tandem_mkdir_p(e_out));
    snprintf(p, sizeof p, "%s/ckpt-00000002.safetensors", e_out);
    assert_int_equal(rename(older, p), 0);
    small_config(&cfg, data, e_out, 4);
    tandem_status st = train(&cfg, e_out, NULL, 1, NULL, &sb);
    printf("resume of the older table: %s: %s\n", tandem_status_name(st), tandem_last_error());
    assert_int_equal(st, TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "symbol table differs"));
    assert_non_null(strstr(tandem_last_error(), "--init-from"));
}

static int64_t meta_step(const char *path, double *best) {
    tandem_st_file *f = NULL;
    CHECK(tandem_st_open(path, &f));
    const int64_t s = strtoll(tandem_st_meta_find(f, TANDEM_CKPT_KEY_STEP), NULL, 10);
    const char *b = tandem_st_meta_find(f, TANDEM_CKPT_KEY_BEST_VAL_L1);
    *best = b ? strtod(b, NULL) : -1;
    tandem_st_close(f);
    return s;
}

static int count_numbered(const char *dir) {
    int n = 0;
    for (int64_t s = 0; s <= 64; s++) {
        char p[600];
        CHECK(tandem_checkpoint_path(dir, s, p, sizeof p));
        n += exists(p);
    }
    return n;
}

/* The step of the lowest val_l1 (the first one) over the logged steps >= 1. */
static int64_t argmin_val(const step_log *l, double *v) {
    int64_t at = -1;
    *v = INFINITY;
    for (int i = 0; i < l->n && i < 64; i++)
        if (l->step[i] >= 1 && l->val_l1[i] >= 0 && l->val_l1[i] < *v) {
            *v = l->val_l1[i];
            at = l->step[i];
        }
    return at;
}

static void test_best_checkpoint(void **state) {
    (void)state;
    char data[400], out[400], best[500];
    snprintf(data, sizeof data, "%s/best_data", root);
    snprintf(out, sizeof out, "%s/best_run", root);
    snprintf(best, sizeof best, "%s/" TANDEM_CKPT_BEST_NAME, out);
    tandem_rng r = {seed ^ 0x99};
    tiny_corpus_write(data, 6, MAX_FRAMES, &r);
    tandem_config cfg;
    small_config(&cfg, data, out, 6);
    CHECK(tandem_config_set(&cfg, "val_data", data));
    CHECK(tandem_config_set(&cfg, "val_every", "1"));
    CHECK(tandem_config_set(&cfg, "val_batches", "1"));
    CHECK(tandem_config_set(&cfg, "checkpoint_every", "1"));
    CHECK(tandem_config_set(&cfg, "keep", "1"));
    CHECK(tandem_config_set(&cfg, "lr", "0.05")); /* large: validation L1 moves both ways */
    step_log l = {0};
    tandem_trainer_summary sum;
    CHECK(train(&cfg, NULL, NULL, 0, &l, &sum));
    double v = 0, stored = 0;
    int64_t at = argmin_val(&l, &v);
    for (int i = 0; i < l.n; i++) printf("step %lld: val_l1 %.9g\n", (long long)l.step[i], l.val_l1[i]);
    printf("best: step %lld (val_l1 %.9g); ckpt-best holds step %lld\n", (long long)at, v,
           (long long)meta_step(best, &stored));
    assert_int_equal(meta_step(best, &stored), at);
    assert_true(stored == v);
    assert_int_equal(count_numbered(out), 1);

    /* lr 0 from here: the parameters stay, every validation ties with step 6's, none is better */
    const int64_t best_step = at;
    for (int k = 0; k < 2; k++) {
        small_config(&cfg, data, out, 9 + k);
        CHECK(tandem_config_set(&cfg, "val_data", data));
        CHECK(tandem_config_set(&cfg, "val_every", "1"));
        CHECK(tandem_config_set(&cfg, "val_batches", "1"));
        CHECK(tandem_config_set(&cfg, "checkpoint_every", "1"));
        CHECK(tandem_config_set(&cfg, "keep", "1"));
        CHECK(tandem_config_set(&cfg, "lr", "0"));
        l.n = 0;
        CHECK(train(&cfg, out, NULL, 0, &l, &sum));
        assert_int_equal(sum.first_step, k ? 9 : 6); /* the newest numbered checkpoint, not the best */
        assert_int_equal(meta_step(best, &stored), best_step);
        assert_true(stored == v);
        assert_int_equal(count_numbered(out), 1);
        printf("resume %d: from step %lld (the newest, not the best at %lld); ckpt-best still holds step %lld, "
               "rotation kept %d numbered checkpoint\n", k + 1, (long long)sum.first_step, (long long)best_step,
               (long long)meta_step(best, &stored), count_numbered(out));
    }
}

static int frozen_name(const char *n) {
    return !strcmp(n, "sym_emb.weight") || !strcmp(n, "pos_emb.weight") || !strncmp(n, "layers.0.", 9);
}

/* Every parameter and both moments of a against b: equal for the frozen ones, the trained ones
 * differ (at least one element); returns the frozen tensors compared. */
static int compare_frozen(const char *a, const char *b) {
    tandem_st_file *fa = NULL, *fb = NULL;
    CHECK(tandem_st_open(a, &fa));
    CHECK(tandem_st_open(b, &fb));
    int frozen = 0, trained = 0;
    for (int i = 0; i < tandem_st_count(fa); i++) {
        const tandem_st_info *x = tandem_st_get(fa, i);
        const char *n = !strncmp(x->name, "adam_", 5) ? x->name + 7 : x->name;
        const int same = !memcmp(tensor_of(fb, x->name), x->data, x->bytes);
        if (frozen_name(n)) {
            if (!same) fail_msg("frozen tensor %s changed", x->name);
            frozen++;
        } else if (!strncmp(x->name, "adam_", 5) || strstr(x->name, "weight")) {
            if (same) fail_msg("trained tensor %s did not change", x->name);
            trained++;
        }
    }
    tandem_st_close(fa);
    tandem_st_close(fb);
    printf("%s -> %s: %d frozen tensors (parameters, adam_m, adam_v) unchanged, %d trained ones changed\n", a, b,
           frozen, trained);
    return frozen;
}

static void test_freeze(void **state) {
    (void)state;
    char data[400], out[400], saved[500], p[600];
    snprintf(data, sizeof data, "%s/freeze_data", root);
    snprintf(out, sizeof out, "%s/freeze_run", root);
    snprintf(saved, sizeof saved, "%s/freeze_step2.safetensors", root);
    tandem_rng r = {seed ^ 0x31};
    tiny_corpus_write(data, 5, MAX_FRAMES, &r);
    tandem_config cfg;
    small_config(&cfg, data, out, 2);
    tandem_trainer_summary sum;
    CHECK(train_with(&cfg, NULL, NULL, 0, NULL, NULL, &sum)); /* moments of every parameter non-zero from here */
    size_t n = 0;
    void *bytes = tandem_test_read_file_ok(sum.checkpoint, &n);
    tandem_test_write_file(saved, bytes, n);
    free(bytes);

    small_config(&cfg, data, out, 4);
    tandem_status st = train_with(&cfg, out, NULL, 0, "embeddings,blocks.7", NULL, &sum);
    printf("--freeze blocks.7 of a 1-block model: %s: %s\n", tandem_status_name(st), tandem_last_error());
    assert_int_equal(st, TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "'blocks.7'"));
    CHECK(train_with(&cfg, out, NULL, 0, "embeddings,blocks.0", NULL, &sum));
    assert_int_equal(compare_frozen(saved, sum.checkpoint), 3 * (2 + 12)); /* 2 embeddings, 12 per block */
    double b;
    meta_step(sum.checkpoint, &b);
    tandem_st_file *f = NULL;
    CHECK(tandem_st_open(sum.checkpoint, &f));
    assert_string_equal(tandem_st_meta_find(f, "freeze"), "embeddings,blocks.0");
    tandem_st_close(f);

    small_config(&cfg, data, out, 6); /* a resume without --freeze keeps the run's */
    tandem_test_log_capture(TANDEM_LOG_INFO);
    CHECK(train_with(&cfg, out, NULL, 0, NULL, NULL, &sum));
    assert_non_null(strstr(tandem_test_log_text(), "freezing 'embeddings,blocks.0' as the run did"));
    tandem_test_log_stop();
    snprintf(p, sizeof p, "%s/ckpt-00000006.safetensors", out);
    compare_frozen(saved, p);
}

static tandem_status fetch_zero(void *ctx, void *user, void *dst, size_t offset, size_t bytes) {
    (void)ctx, (void)user, (void)offset;
    memset(dst, 0, bytes);
    return TANDEM_OK;
}

static void test_best_rotation(void **state) {
    (void)state;
    char dir[400], p[600];
    snprintf(dir, sizeof dir, "%s/rotation", root);
    const float w[4] = {1, 2, 3, 4};
    tandem_st_tensor t[2] = {{"w", TANDEM_F32, 1, {4, 0}, w, NULL}, {"z", TANDEM_F32, 1, {3, 0}, NULL, NULL}};
    tandem_checkpoint *c = NULL;
    CHECK(tandem_checkpoint_create(dir, 2, t, 2, 256, &c));
    const tandem_st_meta meta[1] = {{"note", "x"}};
    for (int64_t s = 1; s <= 5; s++) {
        CHECK(tandem_checkpoint_save(c, s, meta, 1, fetch_zero, NULL));
        if (s == 2) CHECK(tandem_checkpoint_save_best(c, s, meta, 1, fetch_zero, NULL));
    }
    tandem_checkpoint_free(c);
    snprintf(p, sizeof p, "%s/" TANDEM_CKPT_BEST_NAME, dir);
    double b;
    assert_int_equal(meta_step(p, &b), 2);
    for (int64_t s = 1; s <= 5; s++) {
        CHECK(tandem_checkpoint_path(dir, s, p, sizeof p));
        assert_int_equal(exists(p), s >= 4);
    }
    int64_t step = 0;
    int found = 0;
    CHECK(tandem_checkpoint_find_latest(dir, p, sizeof p, &step, &found));
    assert_int_equal(step, 5);
    printf("rotation (keep 2, steps 1..5, best at 2): ckpt-best (step 2), steps 4 and 5 kept; resume takes %s\n", p);
}

int main(void) {
    seed = tandem_test_seed("test_resume");
    if (tandem_test_mkdtemp(root, sizeof root, "test_resume") != 0) return 1;
    char cache[300];
    snprintf(cache, sizeof cache, "%s/cache", root);
    setenv("XDG_CACHE_HOME", cache, 1); /* the text cache stays inside the test's directory */
    if (cli_env_apply(NULL, 0) != TANDEM_OK) return 2;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_alone),        cmocka_unit_test(test_resume_changed_keys),
        cmocka_unit_test(test_init_from_grown_symbols), cmocka_unit_test(test_best_checkpoint),
        cmocka_unit_test(test_best_rotation),       cmocka_unit_test(test_freeze),
    };
    const int rc = cmocka_run_group_tests_name("resume", tests, NULL, NULL);
    if (tandem_test_rmtree(root) != 0) fprintf(stderr, "could not remove %s\n", root);
    return rc;
}
