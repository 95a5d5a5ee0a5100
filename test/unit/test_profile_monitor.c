/* test_profile_monitor.c — `tandem profile`, `tandem monitor` and the verdict lines of `tandem train`,
 * run as the built command (build/tandem) the way a user runs them, plus tandem_metrics_last_line.
 *
 *   last line:  the last complete metrics.jsonl line; a line still being written is skipped; a
 *               FIFO in its place is refused at once (never blocks).
 *   host (plain run): profile --json on the host backend: per-device busy, stage times, ops of the
 *               last step timed (> 0, named), a verdict with a recommendation; text mode prints
 *               the same sections; monitor without NVML says why (exit 1), with --run shows the
 *               run's last line (exit 0) and refuses a FIFO there without blocking.
 *   stand-in (the @cuda variant, TANDEM_TEST_BACKEND=cuda; run_on_cuda.sh exports the stand-in's
 *               libraries, which the command inherits): monitor --count 2 lists both stand-in
 *               GPUs with NVML readings; train with TANDEM_FAKECUDA_STREAM_DELAY_US reports the
 *               device-side wait and ends "verdict: input-bound" with a recommendation; without it,
 *               "launch-/host-bound" (tiny kernels, no graphs); profile through the stand-in times
 *               the ops with events and gives the same verdicts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "tandem.h"
#include "test/fixtures.h"
#include "test/testutil.h"
#include "test/tiny_corpus.h"

#define TANDEM_CLI TANDEM_TEST_BUILD_DIR "/tandem"

static char root[256], corpus[400], config[400];
static int cuda;

/* Runs "build/tandem <args>" with env prefix (may be ""), output (stdout + stderr) into a new
 * buffer; returns the exit code. A 300 s timeout turns a hang into a failure. */
static int cli(const char *env, const char *args, char **out) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "env %s timeout 300 %s %s 2>&1", env, TANDEM_CLI, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += got;
        if (n + 1 == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
    }
    buf[n] = '\0';
    int rc = pclose(p);
    printf("$ %s %s -> %d\n%s", env, args, WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, buf);
    *out = buf;
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void test_last_line(void **state) {
    (void)state;
    char dir[400], path[450], buf[256];
    snprintf(dir, sizeof dir, "%s/lastline", root);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(tandem_metrics_last_line(dir, buf, sizeof buf), TANDEM_E_IO); /* no file yet */
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    const char text[] = "{\"step\":1}\n{\"step\":2,\"loss\":0.5}\n{\"step\":3,\"lo";
    tandem_test_write_file(path, text, sizeof text - 1);
    CHECK(tandem_metrics_last_line(dir, buf, sizeof buf));
    assert_string_equal(buf, "{\"step\":2,\"loss\":0.5}");
    tandem_test_write_file(path, "", 0);
    CHECK(tandem_metrics_last_line(dir, buf, sizeof buf));
    assert_string_equal(buf, "");
    remove(path);
    assert_int_equal(mkfifo(path, 0644), 0);
    assert_int_equal(tandem_metrics_last_line(dir, buf, sizeof buf), TANDEM_E_IO); /* refused, not blocked */
    assert_non_null(strstr(tandem_last_error(), "metrics.jsonl"));
}

static void test_profile_host(void **state) {
    (void)state;
    if (cuda) skip();
    char args[1200], *out = NULL;
    snprintf(args, sizeof args, "profile --config %s --train-data %s --steps 5 --backend host --json", config, corpus);
    assert_int_equal(cli("", args, &out), 0);
    assert_non_null(strstr(out, "\"busy_from_events\": 0"));
    assert_non_null(strstr(out, "\"model\": {\"device\": \"host 1\""));
    assert_non_null(strstr(out, "\"name\": \"feature kernels\""));
    assert_non_null(strstr(out, "\"name\": \"gemm\""));
    assert_null(strstr(out, "\"timed\": 0,"));
    assert_non_null(strstr(out, "\"bound\": \""));
    assert_null(strstr(out, "launch-/host-bound")); /* host devices launch nothing */
    assert_non_null(strstr(out, "\"recommendation\": \""));
    free(out);
    snprintf(args, sizeof args, "profile --config %s --train-data %s --steps 4 --backend host", config, corpus);
    assert_int_equal(cli("", args, &out), 0);
    assert_non_null(strstr(out, "model device (host 1): busy "));
    assert_non_null(strstr(out, "data device (host 0): busy "));
    assert_non_null(strstr(out, "data path stages"));
    assert_non_null(strstr(out, "ops of the last step: "));
    assert_non_null(strstr(out, "\nverdict: "));
    assert_non_null(strstr(out, "\nrecommendation: "));
    free(out);
    assert_int_equal(cli("", "profile --steps 4", &out), 2); /* no --config */
    free(out);
}

static void test_monitor_host(void **state) {
    (void)state;
    if (cuda) skip();
    char *out = NULL, args[600], dir[400], path[450];
    assert_int_equal(cli("TANDEM_NVML=none", "monitor --count 1", &out), 1);
    assert_true(strstr(out, "no NVML") || strstr(out, "no CUDA device"));
    free(out);
    snprintf(dir, sizeof dir, "%s/monrun", root);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    const char line[] = "{\"step\":7,\"loss\":0.25,\"step_ms\":12.5,\"data_wait_ms\":0.5,\"model_busy_pct\":91,"
                        "\"data_busy_pct\":13}\n";
    tandem_test_write_file(path, line, sizeof line - 1);
    snprintf(args, sizeof args, "monitor --count 2 --interval 0.05 --run %s", dir);
    assert_int_equal(cli("TANDEM_NVML=none", args, &out), 0);
    assert_non_null(strstr(out, "step 7  loss 0.2500  step 12.5 ms  data wait 0.50 ms  model 91 %"));
    free(out);
    remove(path);
    assert_int_equal(mkfifo(path, 0644), 0);
    assert_int_equal(cli("TANDEM_NVML=none", args, &out), 0); /* would hang on open() without the check */
    assert_non_null(strstr(out, "FIFO"));
    free(out);
    assert_int_equal(cli("", "monitor --interval 0", &out), 2);
    free(out);
}

static void test_monitor_standin(void **state) {
    (void)state;
    if (!cuda) skip();
    char *out = NULL;
    assert_int_equal(cli("", "monitor --count 2 --interval 0.05", &out), 0);
    assert_non_null(strstr(out, "GPU 0  "));
    if (!tandem_test_real_gpu()) assert_non_null(strstr(out, "GPU 1  ")); /* the stand-in's second GPU */
    assert_non_null(strstr(out, "util "));
    assert_non_null(strstr(out, " MiB"));
    free(out);
}

static void train_standin(const char *env, const char *name, const char *bound) {
    char args[1200], *out = NULL;
    snprintf(args, sizeof args, "train --config %s --train-data %s --out %s/%s --max-steps 6 --backend cuda", config,
             corpus, root, name);
    assert_int_equal(cli(env, args, &out), 0);
    char want[96];
    snprintf(want, sizeof want, "\nverdict: %s over 4 steps: ", bound);
    assert_non_null(strstr(out, want));
    assert_non_null(strstr(out, "\nrecommendation: "));
    snprintf(want, sizeof want, "[%s]", bound); /* the live verdict on the progress lines */
    assert_non_null(strstr(out, want));
    assert_non_null(strstr(out, "model ") && strstr(out, " \xc2\xb7 data "));
    free(out);
}

static void test_train_standin(void **state) {
    (void)state;
    if (!cuda || tandem_test_real_gpu()) skip(); /* the stand-in's injected delays */
    train_standin("TANDEM_FAKECUDA_STREAM_DELAY_US=150000", "slow_data", "input-bound");
    train_standin("", "launch", "launch-/host-bound");
}

static void test_profile_standin(void **state) {
    (void)state;
    if (!cuda || tandem_test_real_gpu()) skip(); /* the stand-in's injected delays */
    char args[1200], *out = NULL;
    snprintf(args, sizeof args, "profile --config %s --train-data %s --steps 4 --json", config, corpus);
    assert_int_equal(cli("TANDEM_FAKECUDA_STREAM_DELAY_US=150000", args, &out), 0);
    assert_non_null(strstr(out, "\"busy_from_events\": 1"));
    assert_non_null(strstr(out, "\"bound\": \"input-bound\""));
    assert_null(strstr(out, "\"data_wait_device_ms\": 0.0000"));
    assert_null(strstr(out, "\"timed\": 0,"));
    free(out);
}

static int setup(void **state) {
    (void)state;
    const char *be = getenv("TANDEM_TEST_BACKEND");
    cuda = be && !strcmp(be, "cuda");
    uint64_t seed = tandem_test_seed("test_profile_monitor");
    if (tandem_test_mkdtemp(root, sizeof root, "profmon")) return -1;
    snprintf(corpus, sizeof corpus, "%s/data", root);
    tandem_rng r = {seed};
    tiny_corpus_write(corpus, 16, 32, &r);
    snprintf(config, sizeof config, "%s/small.yaml", root);
    const char yaml[] = "model_size: custom\nd_model: 16\nlayers: 1\nheads: 2\nreduction: 2\nmax_text: 24\n"
                        "max_frames: 32\nbatch_size: 2\nnum_workers: 1\nprefetch_buffer_size: 2\nwarmup_steps: 2\n"
                        "log_every: 1\ncheckpoint_every: 0\nval_every: 0\nshuffle: false\n";
    tandem_test_write_file(config, yaml, sizeof yaml - 1);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    return tandem_test_rmtree(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_last_line),
        cmocka_unit_test(test_profile_host),
        cmocka_unit_test(test_monitor_host),
        cmocka_unit_test(test_monitor_standin),
        cmocka_unit_test(test_train_standin),
        cmocka_unit_test(test_profile_standin),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
