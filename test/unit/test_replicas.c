/* test_replicas.c — several model devices in one process (runtime/run/replicas.h, issue 15).
 * On the stand-in driver (the @cuda variant: TANDEM_TEST_BACKEND=cuda, 3 stand-in GPUs, the
 * stand-in libnccl.so.2):
 *   match   model_devices [1, 2] fed by data device 0 (automatic), batch 2 x grad_accum 2 per
 *           replica, against one model device with batch 2 x grad_accum 4 (the same 8 utterances
 *           per step): losses of 10 steps within 1e-5 relative; replica 0 alone wrote the run
 *           directory (10 metrics lines); the startup line names every replica's devices
 *   resume  5 steps, then a resume with the same model devices to 10: bit-identical to the
 *           uninterrupted run; a resume on one model device refused naming both
 *   stop    a stop request at step 3: both replicas stop there, the checkpoint of step 3 written
 * On the host backend (and for both): what a group cannot do is refused, naming the way out. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "tandem.h"
#include "platform/cuda/nccl.h"
#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/core/config.h"
#include "test/fixtures.h"
#include "test/testutil.h"
#include "test/tiny_corpus.h"
#include "tools/env_options.h"

#define STEPS 10
#define TOL 1e-5

static char root[256];
static uint64_t seed;

static void config(tandem_config *cfg, const char *out, int grad_accum, const char *model_devices) {
    char data[512], dir[512];
    snprintf(data, sizeof data, "%s/data", root);
    snprintf(dir, sizeof dir, "%s/%s", root, out);
    tiny_corpus_train_config(cfg, data, dir, STEPS);
    CHECK(tandem_config_set(cfg, "checkpoint_every", "5"));
    CHECK(tandem_config_set(cfg, "keep", "4"));
    char v[32];
    snprintf(v, sizeof v, "%d", grad_accum);
    CHECK(tandem_config_set(cfg, "grad_accum", v));
    snprintf(v, sizeof v, "%llu", (unsigned long long)(seed % 1000000));
    CHECK(tandem_config_set(cfg, "seed", v));
    CHECK(tandem_config_set(cfg, "model_devices", model_devices));
}

typedef struct step_log {
    int n, stop_at;
    int limit_at; /* at this step, limit the process's file size to metrics.jsonl's + 1000 bytes */
    const char *metrics;
    tandem_trainer *t;
    double loss[64];
} step_log;

static void on_step(void *ctx, const tandem_step_metrics *m) {
    step_log *l = ctx;
    if (l->n < 64) l->loss[l->n] = m->loss;
    l->n++;
    if (l->stop_at > 0 && m->step == l->stop_at) tandem_trainer_request_stop(l->t);
    struct stat sb;
    if (l->limit_at > 0 && m->step == l->limit_at && stat(l->metrics, &sb) == 0) {
        struct rlimit rl = {(rlim_t)sb.st_size + 1000, (rlim_t)sb.st_size + 1000};
        setrlimit(RLIMIT_FSIZE, &rl);
    }
}

/* create, run, destroy; the startup devices line into devices (when given). */
static tandem_status train(const tandem_config *cfg, const char *resume, int64_t run_steps, step_log *log,
                           char *devices, size_t cap) {
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = tandem_test_backend();
    o.resume_dir = resume;
    o.run_steps = run_steps;
    o.on_step = on_step;
    o.on_step_user = log;
    tandem_status st = tandem_trainer_create(cfg, &o, &log->t);
    if (st != TANDEM_OK) return st;
    tandem_trainer_startup r;
    if (devices && tandem_trainer_startup_report(log->t, &r) == TANDEM_OK) snprintf(devices, cap, "%s", r.devices);
    tandem_trainer_summary sum;
    st = tandem_trainer_run(log->t, &sum);
    char why[1024];
    snprintf(why, sizeof why, "%s", tandem_last_error());
    tandem_trainer_destroy(log->t);
    log->t = NULL;
    return st == TANDEM_OK ? st : tandem_fail(st, "%s", why);
}

static int count_lines(const char *path) {
    size_t len = 0;
    char *txt = tandem_test_read_file_ok(path, &len);
    int lines = 0;
    for (size_t k = 0; k < len; k++) lines += txt[k] == '\n';
    free(txt);
    return lines;
}

static void test_match_one_device(void **state) {
    (void)state;
    step_log ref = {0}, dp = {0};
    tandem_config cfg;
    config(&cfg, "single", 4, "1"); /* one model device, the same global batch */
    CHECK(train(&cfg, NULL, 0, &ref, NULL, 0));
    config(&cfg, "pair", 2, "[1, 2]");
    char devices[512] = "";
    CHECK(train(&cfg, NULL, 0, &dp, devices, sizeof devices));
    assert_int_equal(ref.n, STEPS);
    assert_int_equal(dp.n, STEPS);
    if (!strstr(devices, "replica 0: model CUDA 1 fed by data CUDA 0") ||
        !strstr(devices, "replica 1: model CUDA 2 fed by data CUDA 0"))
        fail_msg("devices line \"%s\"; expected both replicas named with their data device 0", devices);
    double worst = 0;
    for (int i = 0; i < STEPS; i++) {
        const double rel = fabs(dp.loss[i] - ref.loss[i]) / fabs(ref.loss[i]);
        if (rel > worst) worst = rel;
        if (!(rel <= TOL))
            fail_msg("step %d: 2 model devices loss %.9g, one device %.9g (rel %.3g); expected within %g", i + 1,
                     dp.loss[i], ref.loss[i], rel, TOL);
    }
    char p[600];
    snprintf(p, sizeof p, "%s/pair/metrics.jsonl", root);
    assert_int_equal(count_lines(p), STEPS); /* replica 0 alone writes */
    printf("[ replicas ] model devices 1, 2 fed by data device 0 vs one model device with the same global batch: "
           "%d steps, worst relative loss difference %.3g (limit %g); loss %.6g -> %.6g\n", STEPS, worst, TOL,
           dp.loss[0], dp.loss[STEPS - 1]);
}

static void test_resume_same_devices(void **state) {
    (void)state;
    step_log full = {0}, a = {0}, b = {0}, c = {0};
    tandem_config cfg;
    config(&cfg, "full", 2, "1,2");
    CHECK(train(&cfg, NULL, 0, &full, NULL, 0));
    config(&cfg, "split", 2, "1,2");
    CHECK(train(&cfg, NULL, 5, &a, NULL, 0));
    CHECK(train(&cfg, cfg.out, 0, &b, NULL, 0));
    assert_int_equal(a.n, 5);
    assert_int_equal(b.n, 5);
    tandem_test_expect_resumed_losses(full.loss, a.loss, b.loss, 5);
    config(&cfg, "split", 2, "1"); /* one model device: another world size, refused */
    tandem_status st = train(&cfg, cfg.out, 0, &c, NULL, 0);
    assert_int_equal(st, TANDEM_E_INVALID);
    if (!strstr(tandem_last_error(), "trained on 2 ranks, now 1"))
        fail_msg("resume on one model device of a 2-replica run: \"%s\"; expected it refused naming both",
                 tandem_last_error());
    assert_int_equal(c.n, 0);
    printf("[ replicas ] resume at step 5 on the same 2 model devices: steps 6..10 bit-identical\n");
}

static void test_stop(void **state) {
    (void)state;
    tandem_config cfg;
    config(&cfg, "stop", 2, "[1, 2]");
    CHECK(tandem_config_set(&cfg, "checkpoint_every", "0"));
    step_log l = {0};
    l.stop_at = 3;
    CHECK(train(&cfg, NULL, 0, &l, NULL, 0));
    assert_int_equal(l.n, 3);
    char p[600];
    snprintf(p, sizeof p, "%s/stop/ckpt-00000003.safetensors", root);
    struct stat sb;
    if (stat(p, &sb) != 0) fail_msg("%s: missing; expected replica 0's checkpoint of the stop step", p);
}

/* What a group refuses before opening anything, each naming what to do instead. */
static void test_refusals(void **state) {
    (void)state;
    tandem_config cfg;
    step_log l = {0};
    tandem_status st;
    if (tandem_test_backend() == TANDEM_BACKEND_HOST) {
        config(&cfg, "refused", 2, "[0, 1]");
        st = train(&cfg, NULL, 0, &l, NULL, 0);
        assert_int_equal(st, TANDEM_E_UNSUPPORTED);
        if (!strstr(tandem_last_error(), "host backend") || !strstr(tandem_last_error(), "mpirun -np 2"))
            fail_msg("two model devices on the host: \"%s\"; expected the refusal naming mpirun", tandem_last_error());
    }
    config(&cfg, "refused", 2, "[1, 7]"); /* past the devices there are */
    st = train(&cfg, NULL, 0, &l, NULL, 0);
    assert_int_not_equal(st, TANDEM_OK);
    if (tandem_test_backend() != TANDEM_BACKEND_HOST && !strstr(tandem_last_error(), "CUDA 7"))
        fail_msg("model_devices [1, 7] on 3 devices: \"%s\"; expected it to name CUDA 7", tandem_last_error());
    config(&cfg, "refused", 2, "1");
    CHECK(tandem_config_set(&cfg, "data_devices", "0, 1"));
    st = train(&cfg, NULL, 0, &l, NULL, 0);
    assert_int_equal(st, TANDEM_E_INVALID);
    if (!strstr(tandem_last_error(), "data_devices lists 2 devices for 1 model device"))
        fail_msg("two data devices for one model device: \"%s\"", tandem_last_error());
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = tandem_test_backend();
    o.world_size = 2, o.rank = 0;
    config(&cfg, "refused", 2, "1,2");
    tandem_trainer *t = NULL;
    st = tandem_trainer_create(&cfg, &o, &t);
    assert_null(t);
    assert_int_equal(st, TANDEM_E_UNSUPPORTED);
    if (!strstr(tandem_last_error(), "one rank per model device"))
        fail_msg("model devices with 2 launcher ranks: \"%s\"", tandem_last_error());
    assert_int_equal(l.n, 0);
}

/* Replica 0 fails mid-run (its metrics.jsonl hits a file-size limit set at step 2): replica 1, which waits in
 * the next step's all-reduce for it, must end too, and run return replica 0's error, within a
 * bounded time. In a child process (the limit is per process; forked before this process touched
 * a CUDA device: a driver does not survive fork), bounded by alarm. */
static void test_replica_fails(void **state) {
    (void)state;
    tandem_config cfg;
    config(&cfg, "fails", 2, "[1, 2]");
    CHECK(tandem_config_set(&cfg, "max_steps", "100000"));
    CHECK(tandem_config_set(&cfg, "checkpoint_every", "0"));
    CHECK(tandem_config_set(&cfg, "tensorboard", "false"));
    char errlog[600];
    snprintf(errlog, sizeof errlog, "%s/fails.stderr", root);
    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* the stand-in's own error line for replica 1's failed all-reduce is expected here: kept
           out of this test's output, where any "fakecuda: error" line fails the run */
        if (!freopen(errlog, "w", stderr)) _exit(4);
        /* the stand-in's own wait for a missing rank outlasts the alarm: only replica 0 leaving
           its communicator (replicas.c) can end replica 1's wait */
        setenv("TANDEM_FAKENCCL_TIMEOUT_MS", "600000", 1);
        alarm(240); /* a hang ends the child by SIGALRM: the parent reports it */
        signal(SIGXFSZ, SIG_IGN);
        char metrics[1100];
        snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", cfg.out);
        step_log l = {0};
        l.limit_at = 2, l.metrics = metrics; /* set once running: the stand-in NCCL's segments are files too */
        const uint64_t t0 = tandem_now_ns();
        tandem_status st = train(&cfg, NULL, 0, &l, NULL, 0);
        const double s = (double)(tandem_now_ns() - t0) * 1e-9;
        printf("[ replicas ] replica 0 failed at step %d: the group ended in %.1f s: %s: %s\n", l.n, s,
               tandem_status_name(st), tandem_last_error());
        fflush(NULL);
        _exit(st == TANDEM_E_IO && strstr(tandem_last_error(), "replica 0 of 2") && l.n > 1 ? 0 : 3);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    char *err = tandem_test_read_file_ok(errlog, NULL);
    for (char *line = strtok(err, "\n"); line; line = strtok(NULL, "\n")) printf("  child: %s\n", line);
    free(err);
    if (WIFSIGNALED(status))
        fail_msg("the group did not end after replica 0 failed (child ended by signal %d: %s)", WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? "a hang past 240 s" : "a crash");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("child status %d: expected replica 0's metrics error naming it (line above)", WEXITSTATUS(status));
}

/* tandem plan: each replica's devices and arenas, and what a data device feeding two holds. */
static void test_plan_lines(void **state) {
    (void)state;
    tandem_config cfg;
    config(&cfg, "plan", 2, "[1, 2]");
    CHECK(tandem_config_set(&cfg, "data_devices", "[0]"));
    static char text[1 << 16];
    size_t len = 0;
    CHECK(tandem_plan_report(&cfg, NULL, text, sizeof text, &len));
    if (!strstr(text, "2 model devices in one process") || !strstr(text, "replica 1: model CUDA 2 (") ||
        !strstr(text, "fed by data CUDA 0") || !strstr(text, "CUDA 0 holds 2 data arenas"))
        fail_msg("plan of model_devices [1, 2], data_devices [0]:\n%s", text);
}

int main(void) {
    seed = tandem_test_seed("test_replicas");
    if (tandem_test_mkdtemp(root, sizeof root, "test_replicas") != 0) return 1;
    char p[300];
    snprintf(p, sizeof p, "%s/cache", root);
    setenv("XDG_CACHE_HOME", p, 1);
    const int cuda = tandem_test_backend() == TANDEM_BACKEND_CUDA;
    if (cuda && !tandem_test_real_gpu()) {
        setenv("TANDEM_FAKECUDA_DEVICES", "3", 1); /* before the first driver call */
        if (tandem_nccl_load(TANDEM_TEST_BUILD_DIR "/test/fakecuda/libnccl.so.2") != TANDEM_OK) {
            fprintf(stderr, "test_replicas: %s\n", tandem_last_error());
            return 1;
        }
    }
    if (cli_env_apply(NULL, 0) != TANDEM_OK) return 2;
    tandem_rng r = {seed};
    snprintf(p, sizeof p, "%s/data", root);
    tiny_corpus_write(p, 9, 32, &r);
    const struct CMUnitTest host_tests[] = {
        cmocka_unit_test(test_plan_lines),
        cmocka_unit_test(test_refusals),
    };
    const struct CMUnitTest cuda_tests[] = {
        cmocka_unit_test(test_replica_fails), /* first: it forks, before this process opens a device */
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_match_one_device),
        cmocka_unit_test(test_resume_same_devices),
        cmocka_unit_test(test_stop),
    };
    const int rc = cuda ? cmocka_run_group_tests(cuda_tests, NULL, NULL) : cmocka_run_group_tests(host_tests, NULL, NULL);
    if (rc == 0) tandem_test_rmtree(root);
    return rc;
}
