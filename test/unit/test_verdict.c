/* test_verdict.c — the measurement behind the verdicts and the verdicts themselves
 * (runtime/run/verdict.c, runtime/run/step_timer.c; docs/TRAINING.md "Measurement", "Verdicts").
 *
 *   rules:        tandem_verdict_compute on made-up steps: input-bound exactly above 2 % median
 *                 data wait, launch-/host-bound below 50 % median busy on CUDA only, device-bound
 *                 otherwise; medians (one outlier step changes nothing); each with its numbers
 *                 and a recommendation.
 *   host run:     the host backend measures with clocks under the same names: no device-side
 *                 wait, busy = occupied, a verdict in the summary and in every step after warm-up.
 *   stand-in runs (the @cuda variant, TANDEM_TEST_BACKEND=cuda): the stand-in's device-time model
 *                 (test/fakecuda/fc_queue.c) with
 *                 - TANDEM_FAKECUDA_STREAM_DELAY_US on the data device: the model stream stalls on
 *                   the ring slot's copies (data_wait_device_ms > 0) and the run is input-bound,
 *                   with a loader/ring/data-device recommendation;
 *                 - no delay, default rates: small kernels launched one by one: launch-/host-bound
 *                   (busy far below the regions' span), recommending CUDA graphs / batch size;
 *                 - no delay, a slow modelled device (TANDEM_FAKECUDA_OP_NS large): device-bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/core/config.h"
#include "tandem.h"
#include "test/fixtures.h"
#include "test/testutil.h"
#include "test/tiny_corpus.h"

#define MAX_FRAMES 32

static uint64_t seed;
static char root[256];

static tandem_verdict_context ctx(int cuda) {
    tandem_verdict_context c;
    memset(&c, 0, sizeof c);
    c.cuda = cuda;
    c.num_workers = 2;
    c.ring_slots = 3;
    c.batch_size = 8;
    c.data_busy_pct = 30;
    c.ring_occupancy = 0.2;
    c.step_cv = 0.05;
    return c;
}

/* n steps of step_ms with waits wait_ms and busy %; step k = 0 an outlier. */
static void verdict_of(double step_ms, double wait_ms, double busy, int cuda, tandem_verdict *v) {
    enum { N = 9 };
    double st[N], w[N], wd[N], b[N], o[N];
    for (int k = 0; k < N; k++) {
        st[k] = step_ms;
        w[k] = wait_ms;
        wd[k] = wait_ms / 2;
        b[k] = busy;
        o[k] = 95;
    }
    st[0] = 100 * step_ms; /* one outlier: medians ignore it */
    w[0] = step_ms;
    b[0] = 100 - busy;
    tandem_verdict_context c = ctx(cuda);
    tandem_verdict_compute(st, w, wd, b, o, N, &c, v);
    assert_int_equal(v->steps, N);
    assert_true(v->why[0] && (v->bound == TANDEM_BOUND_UNKNOWN || v->advice[0]));
}

static void test_rules(void **state) {
    (void)state;
    tandem_verdict v;
    verdict_of(100, 2.01, 90, 1, &v);
    assert_int_equal(v.bound, TANDEM_BOUND_INPUT);
    assert_true(v.wait_pct > 2.0 && v.wait_pct < 2.02);
    assert_non_null(strstr(v.why, "2.0 %"));
    assert_non_null(strstr(v.advice, "num_workers"));
    verdict_of(100, 1.99, 90, 1, &v);
    assert_int_equal(v.bound, TANDEM_BOUND_DEVICE);
    assert_non_null(strstr(v.advice, "bf16"));
    verdict_of(100, 0.5, 49, 1, &v);
    assert_int_equal(v.bound, TANDEM_BOUND_LAUNCH);
    assert_non_null(strstr(v.advice, "CUDA graphs"));
    { /* already a graph: the advice is the batch size, not graphs again */
        double st1[3] = {100, 100, 100}, w1[3] = {0.5, 0.5, 0.5}, z1[3] = {0}, b1[3] = {49, 49, 49};
        tandem_verdict_context c1 = ctx(1);
        c1.graphs = 1;
        tandem_verdict_compute(st1, w1, z1, b1, b1, 3, &c1, &v);
        assert_int_equal(v.bound, TANDEM_BOUND_LAUNCH);
        assert_non_null(strstr(v.advice, "already one CUDA graph launch"));
        assert_non_null(strstr(v.advice, "batch_size (now 8)"));
    }
    verdict_of(100, 0.5, 51, 1, &v);
    assert_int_equal(v.bound, TANDEM_BOUND_DEVICE);
    verdict_of(100, 0.5, 10, 0, &v); /* host devices: no launches to wait for */
    assert_int_equal(v.bound, TANDEM_BOUND_DEVICE);
    /* the input-bound advice follows the numbers: a saturated data device, an unsteady ring */
    double st[3] = {10, 10, 10}, w[3] = {5, 5, 5}, z[3] = {0}, b[3] = {90, 90, 90};
    tandem_verdict_context c = ctx(1);
    c.data_busy_pct = 95;
    tandem_verdict_compute(st, w, z, b, b, 3, &c, &v);
    assert_int_equal(v.bound, TANDEM_BOUND_INPUT);
    assert_non_null(strstr(v.advice, "saturated"));
    c = ctx(1);
    c.step_cv = 0.5;
    tandem_verdict_compute(st, w, z, b, b, 3, &c, &v);
    assert_non_null(strstr(v.advice, "prefetch_buffer_size"));
    tandem_verdict_compute(st, w, z, b, b, 0, &c, &v);
    assert_int_equal(v.bound, TANDEM_BOUND_UNKNOWN);
    assert_string_equal(tandem_bound_name(TANDEM_BOUND_LAUNCH), "launch-/host-bound");
}

/* ---- training runs ---------------------------------------------------------------------------- */

typedef struct seen {
    int n, verdicts, device_wait_steps;
    double max_device_wait;
} seen;

static void on_step(void *user, const tandem_step_metrics *m) {
    seen *s = user;
    s->n++;
    s->verdicts += m->verdict.bound != TANDEM_BOUND_UNKNOWN;
    s->device_wait_steps += m->data_wait_device_ms > 0;
    if (m->data_wait_device_ms > s->max_device_wait) s->max_device_wait = m->data_wait_device_ms;
    assert_true(m->data_wait_ms >= 0 && m->data_wait_device_ms >= 0);
    assert_true(m->data_wait_device_ms <= m->data_wait_ms + 1e-3 || tandem_test_backend() != TANDEM_BACKEND_CUDA);
    assert_true(m->model_busy_pct >= 0 && m->model_busy_pct <= m->model_occupied_pct + 1e-9);
    assert_non_null(m->model_device_name);
    assert_non_null(m->data_device_name);
}

static int g_eager; /* 1: cuda_graphs false (the launch-bound case: hundreds of launches a step) */

static void run(const char *name, int steps, int batch, tandem_trainer_summary *sum, seen *s) {
    char data[400], out[400];
    snprintf(data, sizeof data, "%s/data", root);
    snprintf(out, sizeof out, "%s/%s", root, name);
    tandem_config cfg;
    tandem_config_init(&cfg);
    static const char *const kv[][2] = {
        {"model_size", "custom"}, {"d_model", "16"}, {"layers", "1"}, {"heads", "2"},
        {"reduction", "2"}, {"max_text", "24"}, {"max_frames", "32"}, {"grad_accum", "1"},
        {"num_workers", "1"}, {"prefetch_buffer_size", "2"}, {"warmup_steps", "2"},
        {"log_every", "1"}, {"checkpoint_every", "0"}, {"val_every", "0"}, {"shuffle", "false"},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) CHECK(tandem_config_set(&cfg, kv[i][0], kv[i][1]));
    char v[32];
    snprintf(v, sizeof v, "%d", steps);
    CHECK(tandem_config_set(&cfg, "max_steps", v));
    snprintf(v, sizeof v, "%d", batch);
    CHECK(tandem_config_set(&cfg, "batch_size", v));
    if (g_eager) CHECK(tandem_config_set(&cfg, "cuda_graphs", "false"));
    snprintf(cfg.train_data, sizeof cfg.train_data, "%s", data);
    snprintf(cfg.out, sizeof cfg.out, "%s", out);
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = tandem_test_backend();
    o.on_step = on_step;
    o.on_step_user = s;
    memset(s, 0, sizeof *s);
    CHECK(tandem_test_train_run(&cfg, &o, sum));
    const tandem_verdict *x = &sum->verdict;
    printf("%s: %s over %d steps: step %.2f ms, wait %.3f ms (device %.3f ms), busy %.1f %%, occupied %.1f %%\n"
           "  why: %s\n  advice: %s\n", name, tandem_bound_name(x->bound), x->steps, x->step_ms, x->data_wait_ms,
           x->data_wait_device_ms, x->model_busy_pct, x->model_occupied_pct, x->why, x->advice);
    assert_int_equal(s->n, steps);
    assert_int_equal(s->verdicts, steps - 2); /* past warm-up */
    assert_int_equal(x->steps, steps - 2);
    assert_true(x->why[0] && x->advice[0]);
}

static void test_host_clocks(void **state) {
    (void)state;
    if (tandem_test_backend() == TANDEM_BACKEND_CUDA) skip();
    tandem_trainer_summary sum;
    seen s;
    run("host", 5, 2, &sum, &s);
    assert_int_equal(sum.busy_from_events, 0);
    assert_int_equal(s.device_wait_steps, 0);
    assert_true(sum.verdict.bound == TANDEM_BOUND_DEVICE || sum.verdict.bound == TANDEM_BOUND_INPUT);
    assert_true(fabs(sum.model_busy_pct - sum.model_occupied_pct) < 1e-9);
}

/* The stand-in re-reads its TANDEM_FAKECUDA_* settings when no context is retained: between
 * runs. */
static void set_model(const char *delay_us, const char *op_ns) {
    if (delay_us) setenv("TANDEM_FAKECUDA_STREAM_DELAY_US", delay_us, 1);
    else unsetenv("TANDEM_FAKECUDA_STREAM_DELAY_US");
    if (op_ns) setenv("TANDEM_FAKECUDA_OP_NS", op_ns, 1);
    else unsetenv("TANDEM_FAKECUDA_OP_NS");
}

static void test_standin_input_bound(void **state) {
    (void)state;
    /* the stand-in's modelled delays; a real GPU has neither */
    if (tandem_test_backend() != TANDEM_BACKEND_CUDA || tandem_test_real_gpu()) skip();
    tandem_trainer_summary sum;
    seen s;
    set_model("150000", NULL); /* 150 ms per copy or kernel on the data device: slower than a step */
    run("slow_data", 6, 2, &sum, &s);
    set_model(NULL, NULL);
    assert_int_equal(sum.busy_from_events, 1);
    assert_int_equal(sum.verdict.bound, TANDEM_BOUND_INPUT);
    assert_true(sum.verdict.data_wait_device_ms > 0 && s.max_device_wait > 10.0);
    assert_true(strstr(sum.verdict.advice, "num_workers") || strstr(sum.verdict.advice, "prefetch") ||
                strstr(sum.verdict.advice, "data device"));
}

static void test_standin_launch_bound(void **state) {
    (void)state;
    if (tandem_test_backend() != TANDEM_BACKEND_CUDA) skip();
    tandem_trainer_summary sum;
    seen s;
    set_model(NULL, NULL);
    g_eager = 1;
    run("launch", 6, 2, &sum, &s);
    g_eager = 0;
    assert_int_equal(sum.verdict.bound, TANDEM_BOUND_LAUNCH);
    assert_true(sum.verdict.model_busy_pct < TANDEM_VERDICT_LAUNCH_BUSY_PCT);
    assert_non_null(strstr(sum.verdict.advice, "CUDA graphs"));
}

static void test_standin_device_bound(void **state) {
    (void)state;
    /* the stand-in's modelled delays; a real GPU has neither */
    if (tandem_test_backend() != TANDEM_BACKEND_CUDA || tandem_test_real_gpu()) skip();
    tandem_trainer_summary sum;
    seen s;
    set_model(NULL, "10000000"); /* 10 ms per copy or kernel: a slow GPU the host easily feeds */
    run("slow_device", 5, 2, &sum, &s);
    set_model(NULL, NULL);
    assert_int_equal(sum.verdict.bound, TANDEM_BOUND_DEVICE);
    assert_true(sum.verdict.model_busy_pct >= TANDEM_VERDICT_LAUNCH_BUSY_PCT);
}

static int setup(void **state) {
    (void)state;
    seed = tandem_test_seed("test_verdict");
    if (tandem_test_mkdtemp(root, sizeof root, "verdict")) return -1;
    char data[400];
    snprintf(data, sizeof data, "%s/data", root);
    tandem_rng r = {seed};
    tiny_corpus_write(data, 16, MAX_FRAMES, &r);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    return tandem_test_rmtree(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_host_clocks),
        cmocka_unit_test(test_standin_input_bound),
        cmocka_unit_test(test_standin_launch_bound),
        cmocka_unit_test(test_standin_device_bound),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
