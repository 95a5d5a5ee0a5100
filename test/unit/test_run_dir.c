/* test_run_dir.c — issue 10's run-side hardening, end to end on the trainer (runtime/run/: run
 * directory, checkpoints on resume, metrics, stop) with the shrunk model of test_trainer.c:
 *
 *   lock:        a second trainer on a run directory fails at once naming the holder's pid;
 *                after the first is destroyed the second starts (class 5).
 *   non-empty:   a fresh run refuses a directory holding a run; new_run moves the old files
 *                into previous-1/, whole in one place even when killed at any step (class 5).
 *   temp sweep:  a dead process's loss.png temp is removed, a live process's checkpoint temp is
 *                left alone (class 5).
 *   fallback:    a newer checkpoint with NaN in a parameter, Inf in a moment, or a sampler
 *                position past the data is skipped with a warning; the resume continues from the
 *                older good one (classes 6 and 9).
 *   metrics:     after a "kill" (the newest checkpoint removed, a partial line appended) the resume
 *                drops the rows after its step: every step appears once (class 7); a metrics write
 *                cut short by a file-size limit (child process, RLIMIT_FSIZE) ends the run with
 *                TANDEM_E_IO after a final checkpoint (class 7).
 *   stuck file:  a FIFO put in place of a WAV mid-run is skipped (never read), and a stop request
 *                ends the run with a checkpoint within the deadline (class 3); every WAV turned
 *                into a 64 GiB sparse ("endless") file mid-run: the ring drains, and a stop
 *                request from another thread still ends the run with a checkpoint within 5 s.
 *   endings:     the training data unreadable mid-run ends the run after a checkpoint of the last
 *                completed step; an unreadable held-out set, a blocked samples/ or ckpt-best are
 *                warnings; a non-finite end writes none; a stop lands between micro-batches.
 * Seed printed; replay with TANDEM_TEST_SEED.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/core/config.h"
#include "runtime/run/run_dir.h"
#include "platform/os/log.h"
#include "platform/os/os.h"
#include "tandem.h"
#include "test/fixtures.h"
#include "test/tiny_corpus.h"

#define MAX_FRAMES 32

static uint64_t seed;
static char root[256];
static int seq;

static void small_config(tandem_config *cfg, const char *train, const char *out, int max_steps, int ckpt_every) {
    tandem_config_init(cfg);
    static const char *const kv[][2] = {
        {"model_size", "custom"}, {"d_model", "16"}, {"layers", "1"}, {"heads", "2"},
        {"reduction", "2"}, {"max_text", "24"}, {"max_frames", "32"}, {"batch_size", "2"},
        {"grad_accum", "2"}, {"num_workers", "1"}, {"prefetch_buffer_size", "3"},
        {"lr", "0.003"}, {"warmup_steps", "2"}, {"log_every", "1"},
        {"val_every", "0"}, {"keep", "3"},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) CHECK(tandem_config_set(cfg, kv[i][0], kv[i][1]));
    char v[32];
    snprintf(v, sizeof v, "%d", max_steps);
    CHECK(tandem_config_set(cfg, "max_steps", v));
    snprintf(v, sizeof v, "%d", ckpt_every);
    CHECK(tandem_config_set(cfg, "checkpoint_every", v));
    snprintf(v, sizeof v, "%llu", (unsigned long long)(seed % 1000000));
    CHECK(tandem_config_set(cfg, "seed", v));
    snprintf(cfg->train_data, sizeof cfg->train_data, "%s", train);
    snprintf(cfg->out, sizeof cfg->out, "%s", out);
}

/* A fresh corpus of 7 utterances and an out path, both new under root. */
static void fresh(char *data, char *out, size_t cap) {
    int k = seq++;
    snprintf(data, cap, "%s/data_%d", root, k);
    snprintf(out, cap, "%s/run_%d", root, k);
    tandem_rng r = {seed + (uint64_t)k};
    tiny_corpus_write(data, 7, MAX_FRAMES, &r);
}

static tandem_status train(const tandem_config *cfg, const char *resume, int new_run, tandem_trainer_summary *sum) {
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = tandem_test_backend();
    o.resume_dir = resume;
    o.new_run = new_run;
    return tandem_test_train_run(cfg, &o, sum);
}

static int exists(const char *dir, const char *name) {
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

/* ---- class 5 ---- */

static void test_lock(void **state) {
    (void)state;
    char data[300], out[300];
    fresh(data, out, sizeof data);
    tandem_config cfg;
    small_config(&cfg, data, out, 2, 0);
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = tandem_test_backend();
    tandem_trainer *a = NULL, *b = NULL;
    CHECK(tandem_trainer_create(&cfg, &o, &a));
    o.resume_dir = out; /* even as a resume of the same directory */
    tandem_status st = tandem_trainer_create(&cfg, &o, &b);
    printf("second trainer: %s: %s\n", tandem_status_name(st), tandem_last_error());
    assert_int_equal(st, TANDEM_E_STATE);
    assert_null(b);
    char pid[32];
    snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
    assert_non_null(strstr(tandem_last_error(), pid));
    assert_non_null(strstr(tandem_last_error(), out));
    tandem_trainer_summary sum;
    CHECK(tandem_trainer_run(a, &sum));
    tandem_trainer_destroy(a);
    CHECK(train(&cfg, out, 0, &sum)); /* the lock went with the first */
}

static void test_nonempty(void **state) {
    (void)state;
    char data[300], out[300], prev[400];
    fresh(data, out, sizeof data);
    tandem_config cfg;
    small_config(&cfg, data, out, 2, 0);
    tandem_trainer_summary sum;
    CHECK(train(&cfg, NULL, 0, &sum));
    assert_true(exists(out, "ckpt-00000002.safetensors"));
    tandem_status st = train(&cfg, NULL, 0, &sum);
    printf("fresh run on a run directory: %s: %s\n", tandem_status_name(st), tandem_last_error());
    assert_int_equal(st, TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "--resume"));
    assert_non_null(strstr(tandem_last_error(), "--new-run"));
    assert_true(exists(out, "ckpt-00000002.safetensors")); /* untouched */
    small_config(&cfg, data, out, 1, 0);
    CHECK(train(&cfg, NULL, 1, &sum));
    snprintf(prev, sizeof prev, "%s/previous-1", out);
    assert_true(exists(prev, "ckpt-00000002.safetensors"));
    assert_true(exists(prev, "metrics.jsonl"));
    assert_true(exists(out, "ckpt-00000001.safetensors"));
    assert_false(exists(out, "ckpt-00000002.safetensors"));
}

static void test_temp_sweep(void **state) {
    (void)state;
    char data[300], out[300], dead_tmp[64], live_tmp[64];
    fresh(data, out, sizeof data);
    CHECK(tandem_mkdir_p(out));
    fflush(NULL);
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    snprintf(dead_tmp, sizeof dead_tmp, ".loss.png.tmp.%ld.0", (long)dead);
    snprintf(live_tmp, sizeof live_tmp, ".ckpt-00000009.safetensors.tmp.%ld.0", (long)getppid());
    char p[700];
    snprintf(p, sizeof p, "%s/%s", out, dead_tmp);
    tandem_test_write_file(p, "x", 1);
    snprintf(p, sizeof p, "%s/%s", out, live_tmp);
    tandem_test_write_file(p, "x", 1);
    tandem_config cfg;
    small_config(&cfg, data, out, 1, 0);
    tandem_trainer_summary sum;
    CHECK(train(&cfg, NULL, 0, &sum));
    assert_false(exists(out, dead_tmp)); /* its process is gone */
    assert_true(exists(out, live_tmp));  /* a live process's in-flight write */
}

/* --new-run killed (SIGKILL) after each step of its move: the previous run is whole in exactly
 * one place (out, after the next open rolls the staging directory back, or previous-1). */
static const char *const prev_files[] = {"ckpt-00000001.safetensors", "ckpt-00000002.safetensors",
                                         "ckpt-best.safetensors", "metrics.jsonl", "loss.png",
                                         "events.out.tfevents.1.host"};
enum { N_PREV = sizeof prev_files / sizeof prev_files[0] };
static int kill_at;

static void kill_hook(int stage) {
    if (stage == kill_at) raise(SIGKILL);
}

/* How many of the previous run's files are in dir with their own bytes. */
static int whole_in(const char *dir) {
    int n = 0;
    for (int i = 0; i < N_PREV; i++) {
        char p[700];
        size_t len = 0;
        snprintf(p, sizeof p, "%s/%s", dir, prev_files[i]);
        char *b = access(p, F_OK) == 0 ? tandem_test_read_file_ok(p, &len) : NULL;
        n += b && len == strlen(prev_files[i]) && !memcmp(b, prev_files[i], len);
        free(b);
    }
    return n;
}

static void test_new_run_atomic_kill(void **state) {
    (void)state;
    int finished = 0;
    for (kill_at = 0; !finished; kill_at++) {
        char out[300], prev[400], p[700];
        snprintf(out, sizeof out, "%s/newrun_kill_%d", root, kill_at);
        CHECK(tandem_mkdir_p(out));
        for (int i = 0; i < N_PREV; i++) {
            snprintf(p, sizeof p, "%s/%s", out, prev_files[i]);
            tandem_test_write_file(p, prev_files[i], strlen(prev_files[i]));
        }
        int pid = tandem_test_fork(0);
        if (pid == 0) {
            tandem_run_dir rd;
            tandem_run_dir_test_stage = kill_hook;
            _exit(tandem_run_dir_open(&rd, out, NULL, 1) == TANDEM_OK ? 0 : 3);
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        finished = WIFEXITED(status);
        if (finished) assert_int_equal(WEXITSTATUS(status), 0);
        else assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        tandem_run_dir rd; /* the next open, as a resume of out: rolls back, moves nothing */
        CHECK(tandem_run_dir_open(&rd, out, out, 0));
        tandem_run_dir_close(&rd);
        snprintf(prev, sizeof prev, "%s/previous-1", out);
        const int here = whole_in(out), there = whole_in(prev);
        printf("killed after stage %d%s: %d files in out, %d in previous-1\n", kill_at,
               finished ? " (not reached: finished)" : "", here, there);
        assert_true((here == N_PREV && there == 0 && access(prev, F_OK) != 0) || (here == 0 && there == N_PREV));
        assert_int_equal(there == N_PREV, kill_at >= N_PREV + 1); /* the last rename is the commit */
        snprintf(p, sizeof p, "%s/" TANDEM_RUN_STAGING_PREFIX "%d", out, pid);
        assert_int_not_equal(access(p, F_OK), 0);
    }
    assert_int_equal(kill_at, N_PREV + 3); /* stages: staging made, each file, the rename */
}

/* ---- classes 6 and 9 ---- */

/* Overwrite 4 bytes of the data section (from its start, or back from its end) of a checkpoint. */
static void poke_data(const char *path, int from_end, uint32_t bits) {
    size_t n = 0;
    unsigned char *b = tandem_test_read_file_ok(path, &n);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | b[i];
    size_t at = from_end ? n - 4 : 8 + (size_t)hl;
    memcpy(b + at, &bits, 4);
    tandem_test_write_file(path, b, n);
    free(b);
}

/* Set the sampler_position value's first digit (same length: the header stays valid JSON). */
static void poke_position(const char *path, char digit) {
    size_t n = 0;
    char *b = tandem_test_read_file_ok(path, &n);
    char *k = strstr(b + 8, "\"sampler_position\":\"");
    assert_non_null(k);
    k[strlen("\"sampler_position\":\"")] = digit;
    tandem_test_write_file(path, b, n);
    free(b);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Replace the first `from` in a checkpoint's header by `to` (the header length follows). */
static void rewrite_header(const char *path, const char *from, const char *to) {
    size_t n = 0;
    unsigned char *b = tandem_test_read_file_ok(path, &n);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | b[i];
    char *h = calloc(1, hl + 1);
    memcpy(h, b + 8, hl);
    char *at = strstr(h, from);
    assert_non_null(at);
    const size_t lf = strlen(from), lt = strlen(to), nl = hl - lf + lt;
    unsigned char *o = malloc(n - lf + lt);
    for (int i = 0; i < 8; i++) o[i] = (unsigned char)(nl >> (8 * i));
    memcpy(o + 8, h, (size_t)(at - h));
    memcpy(o + 8 + (at - h), to, lt);
    memcpy(o + 8 + (at - h) + lt, at + lf, hl - (size_t)(at - h) - lf);
    memcpy(o + 8 + nl, b + 8 + hl, n - 8 - hl);
    tandem_test_write_file(path, o, n - lf + lt);
    free(o), free(h), free(b);
}

static void fallback_case(int kind) {
    char data[300], out[300], p4[400];
    fresh(data, out, sizeof data);
    tandem_config cfg;
    small_config(&cfg, data, out, 4, 2);
    tandem_trainer_summary sum;
    CHECK(train(&cfg, NULL, 0, &sum));
    snprintf(p4, sizeof p4, "%s/ckpt-00000004.safetensors", out);
    if (kind == 0) poke_data(p4, 0, 0x7fc00000u);      /* NaN in the first parameter */
    else if (kind == 1) poke_data(p4, 1, 0x7f800000u); /* +Inf in the last moment */
    else if (kind == 2) poke_position(p4, '9');        /* past the 7 utterances */
    else if (kind == 3) poke_data(p4, 1, 0xbf800000u); /* -1 in the last second moment */
    else if (kind == 4) rewrite_header(p4, "\"sampler_epoch\":\"", "\"sampler_epoch\":\"922337203685477580");
    else rewrite_header(p4, "d_model: 16\\n", "d_model: 8192\\n"); /* a header claiming ~2.4 GB */
    size_t n_bad = 0;
    char *bad = tandem_test_read_file_ok(p4, &n_bad);
    small_config(&cfg, data, out, 6, 2);
    tandem_test_log_capture(TANDEM_LOG_WARN);
    tandem_status st = train(&cfg, out, 0, &sum);
    char log[2048];
    snprintf(log, sizeof log, "%s", tandem_test_log_text());
    tandem_test_log_stop();
    CHECK(st);
    printf("case %d: resumed from step %lld; %.300s\n", kind, (long long)sum.first_step, log);
    assert_int_equal(sum.first_step, 2);
    assert_int_equal(sum.last_step, 6);
    assert_non_null(strstr(log, "ckpt-00000004.safetensors skipped"));
    static const char *const why[] = {"non-finite", "non-finite", "sampler_position", "never negative",
                                      "sampler_epoch", "does not describe"};
    assert_non_null(strstr(log, why[kind]));
    /* the skipped newer checkpoint was set aside whole, not overwritten by this line's step 4 */
    char aside[400];
    snprintf(aside, sizeof aside, "%s/skipped-1/ckpt-00000004.safetensors", out);
    size_t n_aside = 0;
    char *kept = tandem_test_read_file_ok(aside, &n_aside);
    assert_true(n_aside == n_bad && memcmp(kept, bad, n_bad) == 0);
    assert_true(exists(out, "ckpt-00000004.safetensors"));
    free(kept), free(bad);
}

static void test_fallback_nan_param(void **state) { (void)state; fallback_case(0); }
static void test_fallback_inf_moment(void **state) { (void)state; fallback_case(1); }
static void test_fallback_bad_position(void **state) { (void)state; fallback_case(2); }
static void test_fallback_negative_second_moment(void **state) { (void)state; fallback_case(3); }
static void test_fallback_huge_sampler_epoch(void **state) { (void)state; fallback_case(4); }
static void test_fallback_header_shapes(void **state) { (void)state; fallback_case(5); }

/* A fresh 2-step run (data, out: 300 bytes; its ckpt-2 path into p: 400 bytes; its config). */
static void two_step_run(char *data, char *out, char *p, tandem_config *cfg) {
    fresh(data, out, 300);
    small_config(cfg, data, out, 2, 2);
    tandem_trainer_summary sum;
    CHECK(train(cfg, NULL, 0, &sum));
    snprintf(p, 400, "%s/ckpt-00000002.safetensors", out);
}

/* A run directory whose only checkpoint's header describes d_model 8192 over d_model 16 tensors:
 * the config for --resume (read from it) fails at once naming the tensor, nothing is built. */
static void test_resume_header_claims_huge_model(void **state) {
    (void)state;
    char data[300], out[300], p[400];
    tandem_config cfg;
    two_step_run(data, out, p, &cfg);
    rewrite_header(p, "d_model: 16\\n", "d_model: 8192\\n");
    tandem_test_log_capture(TANDEM_LOG_WARN);
    const double t0 = now_s();
    tandem_status st = tandem_trainer_resume_config(out, &cfg);
    const double dt = now_s() - t0;
    char log[2048];
    snprintf(log, sizeof log, "%s", tandem_test_log_text());
    tandem_test_log_stop();
    printf("resume config: %s in %.3f s: %s; log: %.300s\n", tandem_status_name(st), dt, tandem_last_error(), log);
    assert_int_equal(st, TANDEM_E_INVALID);
    assert_non_null(strstr(log, "does not describe"));
    assert_non_null(strstr(log, "sym_emb.weight"));
    assert_true(dt < 5.0);
}

/* --init-from a checkpoint file with a NaN parameter is refused naming the tensor. */
static void test_init_from_nonfinite(void **state) {
    (void)state;
    char data[300], out[300], p[400], out2[400];
    tandem_config cfg;
    two_step_run(data, out, p, &cfg);
    poke_data(p, 0, 0x7fc00000u);
    snprintf(out2, sizeof out2, "%s_init", out);
    small_config(&cfg, data, out2, 2, 2);
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = tandem_test_backend();
    o.init_from = p;
    tandem_trainer *t = NULL;
    tandem_status st = tandem_trainer_create(&cfg, &o, &t);
    printf("init-from NaN: %s: %s\n", tandem_status_name(st), tandem_last_error());
    assert_int_equal(st, TANDEM_E_FORMAT);
    assert_null(t);
    assert_non_null(strstr(tandem_last_error(), "non-finite"));
    assert_non_null(strstr(tandem_last_error(), "sym_emb.weight"));
}

/* ---- class 7 ---- */

/* Steps of metrics.jsonl's training rows: counts[s] for s in 1..max. */
static void count_steps(const char *out, int *counts, int max) {
    char p[400];
    snprintf(p, sizeof p, "%s/metrics.jsonl", out);
    size_t n = 0;
    char *t = tandem_test_read_file_ok(p, &n);
    assert_true(n > 0 && t[n - 1] == '\n');
    memset(counts, 0, sizeof(int) * (size_t)(max + 1));
    for (char *l = t; *l; l = strchr(l, '\n') + 1) {
        long s = strtol(l + 8, NULL, 10);
        assert_true(strncmp(l, "{\"step\":", 8) == 0 && s >= 0 && s <= max);
        if (strstr(l, "\"loss\"") && strstr(l, "\"loss\"") < strchr(l, '\n')) counts[s]++;
    }
    free(t);
}

static void test_metrics_once_after_kill(void **state) {
    (void)state;
    char data[300], out[300], p[400];
    fresh(data, out, sizeof data);
    tandem_config cfg;
    small_config(&cfg, data, out, 8, 4);
    tandem_trainer_summary sum;
    CHECK(train(&cfg, NULL, 0, &sum));
    /* as if killed after logging steps 5..8 but before ckpt 8 was written, mid-line */
    snprintf(p, sizeof p, "%s/ckpt-00000008.safetensors", out);
    assert_int_equal(unlink(p), 0);
    snprintf(p, sizeof p, "%s/metrics.jsonl", out);
    FILE *f = fopen(p, "ab");
    fputs("{\"step\":9,\"lo", f);
    fclose(f);
    CHECK(train(&cfg, out, 0, &sum));
    assert_int_equal(sum.first_step, 4);
    int counts[9];
    count_steps(out, counts, 8);
    for (int s = 1; s <= 8; s++) {
        if (counts[s] != 1) fail_msg("step %d appears %d times in metrics.jsonl", s, counts[s]);
    }
}

static void test_metrics_full_then_checkpoint(void **state) {
    (void)state;
    char data[300], out[300], p[400];
    fresh(data, out, sizeof data);
    tandem_config cfg;
    small_config(&cfg, data, out, 2, 0);
    tandem_trainer_summary sum;
    CHECK(train(&cfg, NULL, 0, &sum));
    struct stat ck;
    snprintf(p, sizeof p, "%s/ckpt-00000002.safetensors", out);
    assert_int_equal(stat(p, &ck), 0);
    /* pad metrics.jsonl past the checkpoint's size (rows of step 0, kept by the resume's cut), so a
     * per-file size limit stops the metrics while a checkpoint still fits */
    snprintf(p, sizeof p, "%s/metrics.jsonl", out);
    FILE *f = fopen(p, "ab");
    for (off_t w = 0; w < ck.st_size + 4096; w += 32) fputs("{\"step\":0,\"pad\":1234567890123}\n", f);
    fclose(f);
    struct stat ms;
    assert_int_equal(stat(p, &ms), 0);
    small_config(&cfg, data, out, 50, 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {(rlim_t)ms.st_size + 1500, (rlim_t)ms.st_size + 1500};
        setrlimit(RLIMIT_FSIZE, &rl);
        tandem_status st = train(&cfg, out, 0, &sum);
        printf("child: %s: %s; last step %lld, checkpoint %s\n", tandem_status_name(st), tandem_last_error(),
               (long long)sum.last_step, sum.checkpoint);
        fflush(stdout);
        _exit(st == TANDEM_E_IO && strstr(tandem_last_error(), "metrics") ? (int)sum.last_step : 100);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    const int last = WEXITSTATUS(status);
    assert_true(last > 2 && last < 50);
    snprintf(p, sizeof p, "ckpt-%08d.safetensors", last);
    assert_true(exists(out, p)); /* the final checkpoint of the step whose line did not fit */
    int counts[51];
    count_steps(out, counts, 50); /* whole lines only */
    printf("metrics write failed at step %d: %s written, metrics.jsonl ends with a whole line\n", last, p);
}

/* ---- class 3 ---- */

typedef struct stuck_run {
    tandem_trainer *t;
    char wav[700];
    int fifo_made;
    tandem_status st;
    tandem_trainer_summary sum;
} stuck_run;

static void stuck_on_step(void *user, const tandem_step_metrics *m) {
    stuck_run *s = user;
    if (m->step == 1) { /* a WAV becomes a FIFO nobody writes into; renamed over it so the loader
                          * never sees the name missing (an unlink first made it "No such file") */
        char tmp[sizeof s->wav + 8];
        snprintf(tmp, sizeof tmp, "%s.fifo", s->wav);
        s->fifo_made = mkfifo(tmp, 0644) == 0 && rename(tmp, s->wav) == 0;
    }
    if (m->step == 8) tandem_trainer_request_stop(s->t); /* 32 utterances: every file sampled */
}

static void stuck_run_fn(void *arg) {
    stuck_run *s = arg;
    s->st = tandem_trainer_run(s->t, &s->sum);
}

static void test_fifo_mid_run(void **state) {
    (void)state;
    char data[300], out[300];
    fresh(data, out, sizeof data);
    tandem_config cfg;
    small_config(&cfg, data, out, 1000, 0);
    static stuck_run s; /* static: a hung run's thread (the old code) keeps using it */
    memset(&s, 0, sizeof s);
    char meta[400];
    snprintf(meta, sizeof meta, "%s/metadata.csv", data);
    char *csv = tandem_test_read_file_ok(meta, NULL);
    char id[64] = "";
    sscanf(csv, "%63[^|]", id);
    free(csv);
    snprintf(s.wav, sizeof s.wav, "%s/wavs/%s.wav", data, id);
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = tandem_test_backend();
    o.on_step = stuck_on_step;
    o.on_step_user = &s;
    CHECK(tandem_trainer_create(&cfg, &o, &s.t));
    tandem_test_log_capture(TANDEM_LOG_WARN);
    double took = 0;
    const int done = tandem_test_finishes_within(stuck_run_fn, &s, 60000, &took);
    char log[2048];
    snprintf(log, sizeof log, "%s", tandem_test_log_text());
    tandem_test_log_stop();
    if (!done) fail_msg("the run did not end within 60 s of its start (stuck on the FIFO %s)", s.wav);
    assert_true(s.fifo_made);
    CHECK(s.st);
    printf("FIFO in place of %s: run ended at step %lld after %.0f ms, checkpoint %s\n", s.wav,
           (long long)s.sum.last_step, took, s.sum.checkpoint);
    assert_true(s.sum.stopped_by_request);
    assert_int_equal(s.sum.last_step, 8);
    assert_true(exists(out, "ckpt-00000008.safetensors"));
    if (!strstr(log, "not a regular file"))
        fail_msg("expected a warning naming the FIFO 'not a regular file'; the run logged:\n%s", log);
    tandem_trainer_destroy(s.t);
}

/* Every WAV of the corpus becomes a 64 GiB sparse file at step 1 (an "endless" file: reading it
 * takes many seconds); a second later, with the ring drained, a stop is requested from another
 * thread. The run must return, with a checkpoint, within 5 s of the request. */
typedef struct endless_run {
    tandem_trainer *t;
    char data[300];
    int n_wavs;
    uint64_t t_req, t_end;
    tandem_status st;
    tandem_trainer_summary sum;
    tandem_thread stopper;
    int stopper_started;
} endless_run;

static void *stopper_main(void *arg) {
    endless_run *e = arg;
    usleep(1000 * 1000);
    e->t_req = tandem_now_ns();
    tandem_trainer_request_stop(e->t);
    return NULL;
}

static void endless_on_step(void *user, const tandem_step_metrics *m) {
    endless_run *e = user;
    if (m->step != 1) return;
    for (int i = 0; i < 7; i++) {
        char p[400];
        snprintf(p, sizeof p, "%s/wavs/u%d.wav", e->data, i);
        int fd = open(p, O_WRONLY | O_TRUNC);
        if (fd >= 0 && ftruncate(fd, (off_t)1 << 36) == 0) e->n_wavs++;
        if (fd >= 0) close(fd);
    }
    e->stopper_started = tandem_thread_start(&e->stopper, stopper_main, e, "test-stop") == TANDEM_OK;
}

static void endless_run_fn(void *arg) {
    endless_run *e = arg;
    e->st = tandem_trainer_run(e->t, &e->sum);
    e->t_end = tandem_now_ns();
}

static void test_endless_file_stop(void **state) {
    (void)state;
    char out[300];
    static endless_run e; /* static: a hung run's thread (the old code) keeps using it */
    memset(&e, 0, sizeof e);
    fresh(e.data, out, sizeof out);
    tandem_config cfg;
    small_config(&cfg, e.data, out, 1000, 0);
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = tandem_test_backend();
    o.on_step = endless_on_step;
    o.on_step_user = &e;
    CHECK(tandem_trainer_create(&cfg, &o, &e.t));
    double took = 0;
    const int done = tandem_test_finishes_within(endless_run_fn, &e, 60000, &took);
    if (!done) fail_msg("the run did not end within 60 s of its start");
    if (e.stopper_started) tandem_thread_join(&e.stopper);
    assert_int_equal(e.n_wavs, 7);
    const double after_ms = (double)(e.t_end - e.t_req) * 1e-6;
    printf("endless files: stop requested at step %lld's wait, run returned %.0f ms later (%s), checkpoint %s\n",
           (long long)e.sum.last_step, after_ms, tandem_status_name(e.st), e.sum.checkpoint);
    CHECK(e.st);
    assert_true(e.t_req > 0 && after_ms <= 5000.0);
    assert_true(e.sum.stopped_by_request);
    char ck[64];
    snprintf(ck, sizeof ck, "ckpt-%08lld.safetensors", (long long)e.sum.last_step);
    assert_true(exists(out, ck));
    tandem_trainer_destroy(e.t);
}

/* ---- endings (issue 27): what fails after trained steps keeps them ---- */

/* Every WAV of dir renamed over by a FIFO (never read: "not a regular file"). */
static int fifo_all(const char *dir) {
    int n = 0;
    for (int i = 0; i < 7; i++) {
        char p[400], tmp[420];
        snprintf(p, sizeof p, "%s/wavs/u%d.wav", dir, i);
        snprintf(tmp, sizeof tmp, "%s.fifo", p);
        n += mkfifo(tmp, 0644) == 0 && rename(tmp, p) == 0;
    }
    return n;
}

typedef struct ending {
    char data[300], val[300], out[300];
    int at, mode, done; /* at step `at`, mode: 0 train data, 1 val data unreadable, 2 samples/, 3 ckpt-best */
    tandem_trainer *t;
    tandem_thread stopper;
    int stopper_started;
    uint64_t t_req;
    char why[2048]; /* the run's error */
} ending;

/* Takes every descriptor this process may open, and keeps taking those other threads close for
 * `ms` (a loader thread that had a file open when the table filled frees its descriptor a little
 * later; without this the loader keeps reusing that one and the run never runs out). */
static void take_all_descriptors(int ms) {
    const uint64_t t0 = tandem_now_ns();
    do {
        while (open("/dev/null", O_RDONLY) >= 0) continue;
        usleep(1000);
    } while (tandem_now_ns() - t0 < (uint64_t)ms * 1000000u);
}

static void ending_on_step(void *user, const tandem_step_metrics *m) {
    ending *e = user;
    if (e->mode == 4 && e->done) take_all_descriptors(0); /* and at every later step */
    if (m->step != e->at || e->done) return;
    e->done = 1;
    char p[400];
    if (e->mode == 0) assert_int_equal(fifo_all(e->data), 7);
    if (e->mode == 1) assert_int_equal(fifo_all(e->val), 7);
    if (e->mode == 2) { /* samples/ becomes a file: every WAV write fails (ENOTDIR) */
        snprintf(p, sizeof p, "%s/samples", e->out);
        assert_int_equal(tandem_test_rmtree(p), 0);
        fclose(fopen(p, "w"));
    }
    if (e->mode == 4) take_all_descriptors(300); /* every file descriptor, kept taken */
    if (e->mode == 3) { /* a directory where the best checkpoint goes */
        snprintf(p, sizeof p, "%s/ckpt-best.safetensors", e->out);
        unlink(p);
        assert_int_equal(mkdir(p, 0755), 0);
    }
}

static tandem_status run_ending(ending *e, const tandem_config *cfg, tandem_trainer_summary *sum) {
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = tandem_test_backend();
    o.on_step = ending_on_step;
    o.on_step_user = e;
    CHECK(tandem_trainer_create(cfg, &o, &e->t));
    e->done = 0;
    tandem_status st = tandem_trainer_run(e->t, sum);
    snprintf(e->why, sizeof e->why, "%s", tandem_last_error()); /* destroy may set messages of its own */
    tandem_trainer_destroy(e->t);
    e->t = NULL;
    return st;
}

/* The training data turns unreadable mid-run (every WAV a FIFO): the run ends with the loader's
 * error, after a checkpoint of the last completed step, which a resume takes. */
static void test_data_error_checkpoints(void **state) {
    (void)state;
    static ending e;
    memset(&e, 0, sizeof e);
    fresh(e.data, e.out, sizeof e.data);
    e.at = 3;
    tandem_config cfg;
    small_config(&cfg, e.data, e.out, 1000, 0);
    tandem_trainer_summary sum;
    tandem_status st = run_ending(&e, &cfg, &sum);
    printf("training data unreadable at step 3: %s: %s; last step %lld\n", tandem_status_name(st), e.why,
           (long long)sum.last_step);
    assert_int_not_equal(st, TANDEM_OK);
    assert_true(sum.last_step >= 3 && sum.last_step < 1000);
    char ck[64];
    snprintf(ck, sizeof ck, "ckpt-%08lld.safetensors", (long long)sum.last_step);
    assert_true(exists(e.out, ck));
    assert_non_null(strstr(e.why, "written first"));
    assert_non_null(strstr(e.why, ck));
}

/* A fresh corpus, run directory and held-out set of n_val utterances (validated every 2 steps). */
static void with_val(ending *e, tandem_config *cfg, int n_val, int max_steps) {
    memset(e, 0, sizeof *e);
    fresh(e->data, e->out, sizeof e->data);
    snprintf(e->val, sizeof e->val, "%s/val_%d", root, seq++);
    tandem_rng r = {seed ^ (uint64_t)seq};
    tiny_corpus_write(e->val, n_val, MAX_FRAMES, &r);
    small_config(cfg, e->data, e->out, max_steps, 0);
    snprintf(cfg->val_data, sizeof cfg->val_data, "%s", e->val);
    CHECK(tandem_config_set(cfg, "val_every", "2"));
}

/* The held-out set unreadable, samples/ a file, a directory at ckpt-best: each a warning, the run
 * reaches max_steps and its final checkpoint. */
static void aux_case(int mode, const char *expect) {
    static ending e;
    tandem_config cfg;
    with_val(&e, &cfg, 7, 8);
    e.at = 1, e.mode = mode;
    if (mode == 2) CHECK(tandem_config_set(&cfg, "test_sentences", "a test."));
    tandem_trainer_summary sum;
    tandem_test_log_capture(TANDEM_LOG_WARN);
    tandem_status st = run_ending(&e, &cfg, &sum);
    char log[4096];
    snprintf(log, sizeof log, "%s", tandem_test_log_text());
    tandem_test_log_stop();
    printf("mode %d: %s (%s); last step %lld; warnings:\n%s", mode, tandem_status_name(st),
           st ? e.why : "", (long long)sum.last_step, log);
    CHECK(st);
    assert_int_equal(sum.last_step, 8);
    assert_true(exists(e.out, "ckpt-00000008.safetensors"));
    if (!strstr(log, expect)) fail_msg("expected a warning with '%s'", expect);
}

static void test_val_unreadable_goes_on(void **state) { (void)state; aux_case(1, "validation failed"); }
static void test_samples_blocked_goes_on(void **state) { (void)state; aux_case(2, "sample not written"); }
static void test_best_blocked_goes_on(void **state) { (void)state; aux_case(3, "ckpt-best.safetensors) failed"); }

/* The run ends on non-finite steps: no checkpoint of that state, and the error says so. */
static void test_nonfinite_end_no_checkpoint(void **state) {
    (void)state;
    char data[300], out[300];
    fresh(data, out, sizeof data);
    tandem_config cfg;
    small_config(&cfg, data, out, 20, 0);
    CHECK(tandem_config_set(&cfg, "max_nonfinite", "2"));
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = tandem_test_backend();
    o.nonfinite_from = 2, o.nonfinite_count = 5;
    tandem_trainer_summary sum;
    tandem_status st = tandem_test_train_run(&cfg, &o, &sum);
    printf("non-finite end: %s: %s\n", tandem_status_name(st), tandem_last_error());
    assert_int_equal(st, TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "no final checkpoint"));
    assert_false(exists(out, "ckpt-00000004.safetensors"));
}

/* A stop request during a step of 1024 micro-batches ends the run between two of them: the step
 * is dropped, the checkpoint is of the step before, and the run returns within a second. */
static void *stop_soon(void *arg) {
    ending *e = arg;
    usleep(20 * 1000);
    e->t_req = tandem_now_ns();
    tandem_trainer_request_stop(e->t);
    return NULL;
}

static void stop_on_step(void *user, const tandem_step_metrics *m) {
    ending *e = user;
    if (m->step == 1) e->stopper_started = tandem_thread_start(&e->stopper, stop_soon, e, "test-stop") == TANDEM_OK;
}

static void test_stop_between_micro_batches(void **state) {
    (void)state;
    static ending e;
    memset(&e, 0, sizeof e);
    fresh(e.data, e.out, sizeof e.data);
    tandem_config cfg;
    small_config(&cfg, e.data, e.out, 10, 0);
    CHECK(tandem_config_set(&cfg, "grad_accum", "1024"));
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = tandem_test_backend();
    o.on_step = stop_on_step;
    o.on_step_user = &e;
    CHECK(tandem_trainer_create(&cfg, &o, &e.t));
    tandem_trainer_summary sum;
    const uint64_t t0 = tandem_now_ns();
    CHECK(tandem_trainer_run(e.t, &sum));
    const uint64_t t1 = tandem_now_ns();
    if (e.stopper_started) tandem_thread_join(&e.stopper);
    tandem_trainer_destroy(e.t);
    const double after_ms = (double)(t1 - e.t_req) * 1e-6;
    printf("grad_accum 1024: stop requested 20 ms into step 2, run returned %.0f ms later (whole run %.0f ms), "
           "last step %lld\n", after_ms, (double)(t1 - t0) * 1e-6, (long long)sum.last_step);
    assert_true(e.stopper_started && sum.stopped_by_request);
    assert_int_equal(sum.last_step, 1);
    assert_true(exists(e.out, "ckpt-00000001.safetensors"));
    assert_true(after_ms < 1000.0);
    small_config(&cfg, e.data, e.out, 2, 0); /* the resume repeats step 2 from its first batch */
    CHECK(tandem_config_set(&cfg, "grad_accum", "1024"));
    CHECK(train(&cfg, e.out, 0, &sum));
    assert_int_equal(sum.first_step, 1);
}

/* --resume on a live run's directory before its first checkpoint: "in use by pid N", not "no usable
 * checkpoint" (the CLI reads the run's config from its checkpoint before the trainer locks). */
static void test_resume_live_run_in_use(void **state) {
    (void)state;
    char data[300], out[300];
    fresh(data, out, sizeof data);
    tandem_config cfg, rc;
    small_config(&cfg, data, out, 2, 0);
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = tandem_test_backend();
    tandem_trainer *a = NULL;
    CHECK(tandem_trainer_create(&cfg, &o, &a)); /* holds the lock, no checkpoint yet */
    tandem_config_init(&rc);
    tandem_status st = tandem_trainer_resume_config(out, &rc);
    printf("resume config of a live run: %s: %s\n", tandem_status_name(st), tandem_last_error());
    char pid[32];
    snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
    assert_int_equal(st, TANDEM_E_STATE);
    assert_non_null(strstr(tandem_last_error(), pid));
    tandem_trainer_destroy(a);
    st = tandem_trainer_resume_config(out, &rc); /* the lock went with it: the plain answer again */
    assert_int_equal(st, TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "no usable checkpoint"));
}

/* A fresh run that fails before step 1 (its training data unreadable after the step-0 validation
 * wrote metrics, samples and events) leaves nothing that blocks the same command again. */
static void test_failed_start_retry(void **state) {
    (void)state;
    static ending e;
    tandem_config cfg;
    with_val(&e, &cfg, 3, 2);
    CHECK(tandem_config_set(&cfg, "test_sentences", "a test."));
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = tandem_test_backend();
    tandem_trainer *t = NULL;
    tandem_trainer_summary sum;
    CHECK(tandem_trainer_create(&cfg, &o, &t));
    assert_int_equal(fifo_all(e.data), 7);
    tandem_status st = tandem_trainer_run(t, &sum);
    printf("failed before step 1: %s: %s\n", tandem_status_name(st), tandem_last_error());
    assert_int_not_equal(st, TANDEM_OK);
    assert_int_equal(sum.last_step, 0);
    tandem_trainer_destroy(t);
    assert_false(exists(e.out, "metrics.jsonl"));
    assert_false(exists(e.out, "samples"));
    for (int i = 0; i < 7; i++) { /* the data readable again, the same command */
        char p[400];
        snprintf(p, sizeof p, "%s/wavs/u%d.wav", e.data, i);
        unlink(p);
    }
    tandem_rng r2 = {seed + (uint64_t)(seq - 2)};
    tiny_corpus_write(e.data, 7, MAX_FRAMES, &r2);
    CHECK(train(&cfg, NULL, 0, &sum));
    assert_int_equal(sum.last_step, 2);
}

/* Out of file descriptors mid-run (EMFILE): the loader fails at once with TANDEM_E_IO naming the
 * limit and `ulimit -n`, not after an epoch of "bad files" with TANDEM_E_FORMAT (a data error). In
 * a child: the descriptors stay taken. */
static void test_fd_limit_is_a_system_error(void **state) {
    (void)state;
    static ending e;
    memset(&e, 0, sizeof e);
    fresh(e.data, e.out, sizeof e.data);
    e.at = 2, e.mode = 4;
    tandem_config cfg;
    small_config(&cfg, e.data, e.out, 1000, 0);
    const int pid = tandem_test_fork(256);
    assert_true(pid >= 0);
    if (pid == 0) {
        tandem_trainer_summary sum;
        tandem_status st = run_ending(&e, &cfg, &sum);
        printf("child, out of descriptors at step 2: %s: %s\n", tandem_status_name(st), e.why);
        fflush(stdout);
        _exit(st == TANDEM_E_IO && strstr(e.why, "ulimit -n") && strstr(e.why, "system limit") ? 0 : 1);
    }
    assert_int_equal(tandem_test_child_exit(pid), 0);
}

/* metadata.csv loses rows between runs: the newest checkpoint's sampler position is past the data.
 * The resume is refused naming the change (rows and listing hash, then and now) instead of going on
 * from the older checkpoint, which would overwrite the newest; both stay as they were. */
static void test_dataset_change_named(void **state) {
    (void)state;
    char data[300], out[300], meta[400];
    fresh(data, out, sizeof data);
    tandem_config cfg;
    small_config(&cfg, data, out, 8, 4); /* ckpt 4 at position 2, ckpt 8 at position 4 of 7 */
    tandem_trainer_summary sum;
    CHECK(train(&cfg, NULL, 0, &sum));
    snprintf(meta, sizeof meta, "%s/metadata.csv", data);
    size_t n = 0;
    char *csv = tandem_test_read_file_ok(meta, &n);
    char *cut = csv;
    for (int i = 0; i < 4 && cut; i++) cut = strchr(cut, '\n') ? strchr(cut, '\n') + 1 : NULL;
    assert_non_null(cut);
    tandem_test_write_file(meta, csv, (size_t)(cut - csv)); /* 4 rows of 7 */
    free(csv);
    small_config(&cfg, data, out, 12, 4);
    tandem_status st = train(&cfg, out, 0, &sum);
    printf("dataset shrunk: %s: %s\n", tandem_status_name(st), tandem_last_error());
    assert_int_equal(st, TANDEM_E_INVALID);
    const char *e = tandem_last_error();
    assert_non_null(strstr(e, "dataset changed"));
    assert_non_null(strstr(e, "ckpt-00000008.safetensors"));
    assert_non_null(strstr(e, "7 usable utterances"));
    assert_non_null(strstr(e, "listing hash"));
    assert_true(exists(out, "ckpt-00000008.safetensors") && exists(out, "ckpt-00000004.safetensors"));
}

static int setup(void **state) {
    (void)state;
    seed = tandem_test_seed("test_run_dir");
    return tandem_test_mkdtemp(root, sizeof root, "test_run_dir");
}
static int teardown(void **state) {
    (void)state;
    return tandem_test_rmtree(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock),
        cmocka_unit_test(test_nonempty),
        cmocka_unit_test(test_temp_sweep),
        cmocka_unit_test(test_new_run_atomic_kill),
        cmocka_unit_test(test_fallback_nan_param),
        cmocka_unit_test(test_fallback_inf_moment),
        cmocka_unit_test(test_fallback_bad_position),
        cmocka_unit_test(test_fallback_negative_second_moment),
        cmocka_unit_test(test_fallback_huge_sampler_epoch),
        cmocka_unit_test(test_fallback_header_shapes),
        cmocka_unit_test(test_resume_header_claims_huge_model),
        cmocka_unit_test(test_init_from_nonfinite),
        cmocka_unit_test(test_metrics_once_after_kill),
        cmocka_unit_test(test_metrics_full_then_checkpoint),
        cmocka_unit_test(test_fifo_mid_run),
        cmocka_unit_test(test_endless_file_stop),
        cmocka_unit_test(test_data_error_checkpoints),
        cmocka_unit_test(test_val_unreadable_goes_on),
        cmocka_unit_test(test_samples_blocked_goes_on),
        cmocka_unit_test(test_best_blocked_goes_on),
        cmocka_unit_test(test_nonfinite_end_no_checkpoint),
        cmocka_unit_test(test_stop_between_micro_batches),
        cmocka_unit_test(test_resume_live_run_in_use),
        cmocka_unit_test(test_failed_start_retry),
        cmocka_unit_test(test_fd_limit_is_a_system_error),
        cmocka_unit_test(test_dataset_change_named),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
