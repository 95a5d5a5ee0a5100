/* test_cost.c — the step cost model (runtime/run/cost.h, tandem_cost.h):
 *
 *   standin_tiny:  one training step of `tiny` (the default config, fp32, at batch 2: batch 8
 *                  costs minutes of CPU in the stand-in, and the launch list depends on the batch
 *                  only through the per-item head weight-gradient GEMMs, which batch 2 has;
 *                  TANDEM_TEST_COST_BATCH=8 runs the full size) run for real
 *                  through platform/cuda on the stand-in driver (test/fakecuda) with the recorder
 *                  on. The recorded launch list matches what the stand-in counted during the
 *                  step, kind by kind: launches per registry kernel, cuBLASLt matmuls (plus the
 *                  fatbin GEMM kernels when cuBLASLt is off) against recorded GEMMs, copies per
 *                  direction. Then the same step on the dry device records the very same list
 *                  (kind, kernel, GEMM descriptor, cost, in order): the dry mode does not drift
 *                  from a real run.
 *   standin_bf16:  the same for the small model in bf16 (the casts and bf16 GEMMs).
 *   entries_sane:  every recorded launch of tiny has a non-negative cost with bytes > 0, GEMM
 *                  FLOPs are 2 m n k batch, and the dry step allocates nothing.
 *   report:        tandem_cost_report's text and JSON for tiny name the totals, the modelled
 *                  times (graph < eager, both >= the kernels alone), the floor and the top 10;
 *                  an unknown GPU is an error naming the known ones.
 * (Every registered kernel's cost function is checked on every kernel test case, in
 * test/kernels/test_kernels.c: finite, non-negative, bytes > 0, at most every buffer once.)
 */
#include <dlfcn.h>
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

#include "platform/os/os.h"
#include "runtime/core/config.h"
#include "runtime/run/cost.h"
#include "tandem.h"
#include "test/fakecuda/fakecuda.h"
#include "test/fixtures.h"
#include "test/testutil.h"
#include "tools/env_options.h"

#define FAKECUDA_DIR TANDEM_TEST_BUILD_DIR "/test/fakecuda"
#define DRIVER FAKECUDA_DIR "/libcuda.so.1"
#define CUBLASLT FAKECUDA_DIR "/libcublasLt.so.13"

/* What the stand-in counted: launches per kernel, matmuls, copies per direction. */
typedef struct counts {
    tandem_fakecuda_counts fc;
    uint64_t matmuls;
} counts;

static void read_counts(counts *c) {
    void *h = dlopen(DRIVER, RTLD_NOW | RTLD_NOLOAD);
    void (*get)(tandem_fakecuda_counts *) = h ? (void (*)(tandem_fakecuda_counts *))dlsym(h, "tandem_fakecuda_get_counts") : NULL;
    if (!get) fail_msg("the cuda backend did not load the stand-in driver %s", DRIVER);
    get(&c->fc);
    void *l = dlopen(CUBLASLT, RTLD_NOW | RTLD_NOLOAD);
    uint64_t (*mm)(void) = l ? (uint64_t (*)(void))dlsym(l, "tandem_fakecublaslt_matmuls") : NULL;
    c->matmuls = mm ? mm() : 0; /* not loaded: cuBLASLt off, every GEMM is a fatbin kernel */
}

static void config_of(tandem_config *cfg, int small_bf16, const char *batch) {
    tandem_config_init(cfg);
    if (batch) CHECK(tandem_config_set(cfg, "batch_size", batch));
    if (small_bf16) {
        static const char *const kv[][2] = {
            {"model_size", "custom"}, {"d_model", "32"},  {"layers", "2"},      {"heads", "2"},
            {"reduction", "2"},       {"max_text", "12"}, {"max_frames", "24"}, {"batch_size", "3"},
            {"precision", "bf16"},
        };
        for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) CHECK(tandem_config_set(cfg, kv[i][0], kv[i][1]));
    }
    CHECK(tandem_config_check(cfg));
}

/* The report's minimum FLOPs (GFLOP), floor and kernels-alone time (ms) for cfg. */
static void floor_figures(const tandem_config *cfg, double *min_gflop, double *floor_ms, double *kernels_ms) {
    tandem_cost_options o;
    tandem_cost_options_init(&o);
    size_t cap = (size_t)1 << 20, len = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    CHECK(tandem_cost_report(cfg, &o, buf, cap, &len));
    const char *f = strstr(buf, "floor: minimum FLOPs "), *m = strstr(buf, "kernels alone ");
    assert_true(f && m);
    assert_int_equal(sscanf(f, "floor: minimum FLOPs %lf GFLOP (%*f ms at peak), minimum traffic %*f GB (%*f ms); "
                               "floor %lf ms", min_gflop, floor_ms), 2);
    assert_int_equal(sscanf(m, "kernels alone %lf", kernels_ms), 1);
    free(buf);
}

/* The floor is a lower bound whatever runs: the same minimum FLOPs with the fused and the
 * materialised attention (attention's causal products counted from the shape), and no floor above
 * the kernels' own modelled time (fp32 with tf32 on: the TF32 peak the step's GEMMs are priced at). */
static void test_floor(void **state) {
    (void)state;
    double flops[2], floor[2], kernels[2];
    const char *attn[2] = {"materialised", "fused"};
    for (int i = 0; i < 2; i++) {
        tandem_config cfg;
        tandem_config_init(&cfg);
        CHECK(tandem_config_set(&cfg, "attention", attn[i]));
        CHECK(tandem_config_check(&cfg));
        floor_figures(&cfg, &flops[i], &floor[i], &kernels[i]);
        printf("tiny fp32, %s attention: minimum %.3f GFLOP, floor %.4f ms, kernels %.4f ms\n", attn[i], flops[i],
               floor[i], kernels[i]);
        assert_true(floor[i] > 0.0 && floor[i] <= kernels[i]);
    }
    assert_true(fabs(flops[0] - flops[1]) <= 1e-9 * flops[0]);
}

/* The two traffic minima of docs/BENCHMARKS-training.md ("The floor") are lower bounds of their
 * classes: strict <= library <= what the recorded step moves, for tiny in fp32 and bf16, with the
 * fused and the materialised attention, and for the small bf16 model (its last block's mel rows
 * are 1/3 of the rows: the query-row split matters there). */
static void test_traffic_minima(void **state) {
    (void)state;
    static const char *const cases[][2] = {{"fp32", "fused"}, {"fp32", "materialised"}, {"bf16", "fused"}, {"bf16", "materialised"}};
    for (size_t i = 0; i <= sizeof cases / sizeof cases[0]; i++) {
        tandem_config cfg;
        const int small = i == sizeof cases / sizeof cases[0];
        config_of(&cfg, small, NULL);
        if (!small) {
            CHECK(tandem_config_set(&cfg, "precision", cases[i][0]));
            CHECK(tandem_config_set(&cfg, "attention", cases[i][1]));
            CHECK(tandem_config_check(&cfg));
        }
        tandem_cost_options o;
        tandem_cost_options_init(&o);
        tandem_cost_estimate e;
        CHECK(tandem_cost_estimate_step(&cfg, &o, &e));
        printf("%s %s: strict minimum %.4g GB <= library minimum %.4g GB <= moved %.4g GB\n",
               small ? "small" : "tiny", small ? "bf16" : cases[i][0], e.min_bytes * 1e-9, e.lib_min_bytes * 1e-9,
               e.bytes * 1e-9);
        assert_true(e.min_bytes > 0.0 && e.min_bytes < e.lib_min_bytes && e.lib_min_bytes <= e.bytes);
    }
}

/* The record of one step on dev (NULL: dry), copied out (the run is closed). */
static tandem_rec_entry *record(const tandem_config *cfg, tandem_device *dev, int64_t *n, counts *delta) {
    tandem_cost_run *r = NULL;
    CHECK(tandem_cost_run_open(cfg, dev, &r));
    counts c0, c1;
    if (delta) read_counts(&c0);
    CHECK(tandem_cost_run_step(r));
    if (delta) {
        read_counts(&c1);
        delta->matmuls = c1.matmuls - c0.matmuls;
        delta->fc.launches = c1.fc.launches - c0.fc.launches;
        for (int k = 0; k < TANDEM_KERNEL_COUNT; k++) delta->fc.kernel[k] = c1.fc.kernel[k] - c0.fc.kernel[k];
        delta->fc.copies_h2d = c1.fc.copies_h2d - c0.fc.copies_h2d;
        delta->fc.copies_d2h = c1.fc.copies_d2h - c0.fc.copies_d2h;
        delta->fc.copies_d2d = c1.fc.copies_d2d - c0.fc.copies_d2d;
        delta->fc.copies_peer = c1.fc.copies_peer - c0.fc.copies_peer;
    }
    const tandem_rec_entry *e = tandem_cost_run_entries(r, n);
    tandem_rec_entry *copy = malloc((size_t)(*n + 1) * sizeof *copy);
    assert_non_null(copy);
    memcpy(copy, e, (size_t)*n * sizeof *copy);
    tandem_cost_run_close(r);
    return copy;
}

/* Recorded kinds against the stand-in's counters. */
static void compare_counts(const tandem_rec_entry *e, int64_t n, const counts *d) {
    uint64_t kernel[TANDEM_KERNEL_COUNT] = {0}, gemms = 0, copies[4] = {0};
    for (int64_t i = 0; i < n; i++) {
        if (e[i].kind == TANDEM_REC_KERNEL) kernel[e[i].kernel]++;
        else if (e[i].kind == TANDEM_REC_GEMM) gemms++;
        else copies[e[i].kind - TANDEM_REC_COPY_H2D]++;
    }
    /* without cuBLASLt the backend runs each GEMM as a fatbin kernel of its own */
    const uint64_t fallback = d->fc.kernel[TANDEM_KID_gemm_f32] + d->fc.kernel[TANDEM_KID_gemm_bf16];
    uint64_t kernels = 0;
    for (int k = 0; k < TANDEM_KERNEL_COUNT; k++) {
        uint64_t standin = d->fc.kernel[k];
        if (k == TANDEM_KID_gemm_f32 || k == TANDEM_KID_gemm_bf16) standin = 0;
        if (kernel[k] != standin)
            fail_msg("kernel %s: recorded %llu launches, the stand-in counted %llu", tandem_kernel_table[k].name,
                     (unsigned long long)kernel[k], (unsigned long long)standin);
        kernels += kernel[k];
    }
    printf("recorded %lld: %llu kernels, %llu GEMMs, copies h2d %llu d2h %llu d2d %llu peer %llu; stand-in: %llu "
           "launches (%llu of them fatbin GEMMs), %llu matmuls, copies %llu/%llu/%llu/%llu\n", (long long)n,
           (unsigned long long)kernels, (unsigned long long)gemms, (unsigned long long)copies[0],
           (unsigned long long)copies[1], (unsigned long long)copies[2], (unsigned long long)copies[3],
           (unsigned long long)d->fc.launches, (unsigned long long)fallback, (unsigned long long)d->matmuls,
           (unsigned long long)d->fc.copies_h2d, (unsigned long long)d->fc.copies_d2h,
           (unsigned long long)d->fc.copies_d2d, (unsigned long long)d->fc.copies_peer);
    assert_int_equal(gemms, d->matmuls + fallback);
    assert_int_equal(kernels + fallback, d->fc.launches);
    assert_int_equal(copies[0], d->fc.copies_h2d);
    assert_int_equal(copies[1], d->fc.copies_d2h);
    assert_int_equal(copies[2], d->fc.copies_d2d);
    assert_int_equal(copies[3], d->fc.copies_peer);
    assert_true(kernels > 0 && gemms > 0);
}

/* The dry record equals the real one entry by entry (streams differ: other runs). */
static void compare_records(const tandem_rec_entry *a, int64_t na, const tandem_rec_entry *b, int64_t nb) {
    assert_int_equal(na, nb);
    char wa[128], wb[128];
    for (int64_t i = 0; i < na; i++) {
        const tandem_gemm_desc *x = &a[i].gemm, *y = &b[i].gemm; /* field by field: padding differs */
        const int same_gemm = x->trans_a == y->trans_a && x->trans_b == y->trans_b && x->m == y->m &&
                              x->n == y->n && x->k == y->k && x->batch == y->batch && x->stride_a == y->stride_a &&
                              x->stride_b == y->stride_b && x->stride_c == y->stride_c &&
                              x->a_type == y->a_type && x->b_type == y->b_type && x->c_type == y->c_type;
        const int same = a[i].kind == b[i].kind && a[i].kernel == b[i].kernel && same_gemm && a[i].beta == b[i].beta &&
                         memcmp(&a[i].cost, &b[i].cost, sizeof a[i].cost) == 0;
        if (!same)
            fail_msg("launch %lld: the stand-in run recorded %s (%g flops, %g + %g bytes), the dry run %s (%g, %g + "
                     "%g)", (long long)i, tandem_cost_describe(&a[i], wa, sizeof wa), a[i].cost.flops,
                     a[i].cost.bytes_read, a[i].cost.bytes_written, tandem_cost_describe(&b[i], wb, sizeof wb),
                     b[i].cost.flops, b[i].cost.bytes_read, b[i].cost.bytes_written);
    }
}

static void standin_vs_dry(int small_bf16) {
    if (!tandem_test_have_fatbin()) skip(); /* host-only build: the stand-in runs the fatbin's kernels */
    if (access(DRIVER, R_OK) != 0 || access(CUBLASLT, R_OK) != 0)
        fail_msg("the stand-in driver is not built (%s); build it with make test-build", DRIVER);
    tandem_config cfg;
    const char *batch = getenv("TANDEM_TEST_COST_BATCH");
    config_of(&cfg, small_bf16, small_bf16 ? NULL : batch && batch[0] ? batch : "2");
    tandem_device *dev = NULL;
    CHECK(tandem_device_open(TANDEM_BACKEND_CUDA, 0, &dev));
    int64_t n_real = 0, n_dry = 0;
    counts d;
    memset(&d, 0, sizeof d);
    tandem_rec_entry *real = record(&cfg, dev, &n_real, &d);
    tandem_device_close(dev);
    void *h = dlopen(DRIVER, RTLD_NOW | RTLD_NOLOAD);
    int (*errors)(void) = h ? (int (*)(void))dlsym(h, "tandem_fakecuda_error_count") : NULL;
    assert_non_null(errors);
    assert_int_equal(errors(), 0); /* no misuse the stand-in would flag */
    compare_counts(real, n_real, &d);
    tandem_rec_entry *dry = record(&cfg, NULL, &n_dry, NULL);
    compare_records(real, n_real, dry, n_dry);
    printf("%s: the dry run recorded the same %lld launches in the same order\n",
           small_bf16 ? "small bf16" : "tiny fp32", (long long)n_dry);
    free(real);
    free(dry);
}

static void test_standin_tiny(void **state) {
    (void)state;
    standin_vs_dry(0);
}

static void test_standin_bf16(void **state) {
    (void)state;
    standin_vs_dry(1);
}

static void test_entries_sane(void **state) {
    (void)state;
    tandem_config cfg;
    config_of(&cfg, 0, NULL);
    tandem_cost_run *r = NULL;
    CHECK(tandem_cost_run_open(&cfg, NULL, &r));
    const uint64_t allocs = tandem_alloc_count();
    CHECK(tandem_cost_run_step(r));
    CHECK(tandem_cost_run_step(r)); /* a second step: same record, still nothing allocated */
    assert_int_equal(tandem_alloc_count(), allocs);
    int64_t n = 0;
    const tandem_rec_entry *e = tandem_cost_run_entries(r, &n);
    assert_true(n > 100);
    for (int64_t i = 0; i < n; i++) {
        char w[128];
        const tandem_kernel_cost *c = &e[i].cost;
        if (!(c->flops >= 0 && c->bytes_read >= 0 && c->bytes_written >= 0 && c->bytes_read + c->bytes_written > 0))
            fail_msg("launch %lld (%s): flops %g, bytes %g + %g", (long long)i,
                     tandem_cost_describe(&e[i], w, sizeof w), c->flops, c->bytes_read, c->bytes_written);
        if (e[i].kind == TANDEM_REC_GEMM) {
            const tandem_gemm_desc *g = &e[i].gemm;
            assert_true(c->flops == 2.0 * (double)g->m * (double)g->n * (double)g->k * (double)g->batch);
        }
    }
    tandem_cost_run_close(r);
}

static void test_report(void **state) {
    (void)state;
    tandem_config cfg;
    config_of(&cfg, 0, NULL);
    tandem_cost_options o;
    tandem_cost_options_init(&o);
    o.config_name = "tiny";
    size_t cap = (size_t)1 << 20, len = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    CHECK(tandem_cost_report(&cfg, &o, buf, cap, &len));
    assert_true(len > 0 && len < cap);
    printf("%s", buf);
    double graph = 0, eager = 0, kernels = 0;
    const char *m = strstr(buf, "modelled step: ");
    assert_non_null(m);
    assert_int_equal(sscanf(m, "modelled step: %lf ms in a CUDA graph, %lf ms eager (kernels alone %lf", &graph,
                            &eager, &kernels), 3);
    assert_true(kernels > 0 && graph > kernels && eager > graph);
    assert_non_null(strstr(buf, "floor: minimum FLOPs"));
    assert_non_null(strstr(buf, "top 10 launches"));
    assert_non_null(strstr(buf, "gemm-linear"));
    o.json = 1;
    CHECK(tandem_cost_report(&cfg, &o, buf, cap, &len));
    assert_true(buf[0] == '{' && strstr(buf, "\"graph_ms\":") && strstr(buf, "\"launches\":[{"));
    o.json = 0;
    o.gpu = "v100";
    assert_int_equal(tandem_cost_report(&cfg, &o, buf, cap, &len), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "h100|h200|a100|rtx4090|l4"));
    free(buf);
}

int main(void) {
    tandem_test_seed("test_cost");
    /* The cuda backend loads the driver once per process: point it at the stand-in first. */
    setenv("TANDEM_CUDA_DRIVER", DRIVER, 1);
    setenv("TANDEM_CUBLASLT", CUBLASLT, 1);
    if (cli_env_apply(NULL, 0) != TANDEM_OK) return 2;
    unsetenv("TANDEM_FAKECUDA_DEVICES");
    unsetenv("TANDEM_FAKECUDA_ARCH");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entries_sane),
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_floor),
        cmocka_unit_test(test_traffic_minima),
        cmocka_unit_test(test_standin_bf16),
        cmocka_unit_test(test_standin_tiny),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
