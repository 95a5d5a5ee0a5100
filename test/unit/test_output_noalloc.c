/* test_output_noalloc.c — what the training loop writes after the pool commit (checkpoints,
 * PNG plots, metrics lines, .npy) makes no heap allocation at all: not through the runtime's
 * counter, and not through libc either (libpng and zlib included). This binary interposes
 * malloc & co. to count every call; under AddressSanitizer, which owns malloc, the libc count
 * is skipped and only the runtime's counter is checked. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>

#include <cmocka.h>

#include "runtime/formats/checkpoint.h"
#include "runtime/report/metrics.h"
#include "runtime/formats/npy.h"
#include "runtime/report/plot.h"
#include "test/fixtures.h"

#if defined(__SANITIZE_ADDRESS__)
#define COUNT_LIBC 0
static long libc_calls(void) { return 0; }
#else
#define COUNT_LIBC 1
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
static volatile long n_calls;
/* default visibility (the build hides symbols) so libc, libpng and zlib bind to these too */
#define SHIM __attribute__((visibility("default")))
SHIM void *malloc(size_t n) { n_calls++; return __libc_malloc(n); }
SHIM void *calloc(size_t a, size_t b) { n_calls++; return __libc_calloc(a, b); }
SHIM void *realloc(void *p, size_t n) { n_calls++; return __libc_realloc(p, n); }
SHIM void *memalign(size_t a, size_t n) { n_calls++; return __libc_memalign(a, n); }
SHIM void *aligned_alloc(size_t a, size_t n) { n_calls++; return __libc_memalign(a, n); }
SHIM int posix_memalign(void **r, size_t a, size_t n) {
    n_calls++;
    *r = __libc_memalign(a, n);
    return *r ? 0 : 12;
}
SHIM void free(void *p) { __libc_free(p); }
static long libc_calls(void) { return n_calls; }
#endif

static tandem_rng rng;
static char scratch[256];
static float weights[50000], moments[50000];

static tandem_status fetch(void *ctx, void *user, void *dst, size_t offset, size_t bytes) {
    (void)ctx;
    memcpy(dst, (const char *)user + offset, bytes);
    return TANDEM_OK;
}

static void test_outputs_do_not_allocate(void **state) {
    (void)state;
    assert_int_equal(tandem_test_mkdtemp(scratch, sizeof scratch, "test_noalloc"), 0);
    for (int i = 0; i < 50000; i++) weights[i] = tandem_rng_uniform(&rng, -1, 1);
    char dir[300], png[300], mel[300], jsonl[300], npy[300];
    snprintf(dir, sizeof dir, "%s/ckpt", scratch);
    snprintf(png, sizeof png, "%s/loss.png", scratch);
    snprintf(mel, sizeof mel, "%s/mel.png", scratch);
    snprintf(jsonl, sizeof jsonl, "%s/metrics.jsonl", scratch);
    snprintf(npy, sizeof npy, "%s/mel.npy", scratch);

    /* init: everything sized here */
    tandem_st_tensor ts[2] = {{"w", TANDEM_F32, 2, {250, 200}, weights, NULL},
                              {"adam.m.w", TANDEM_F32, 2, {250, 200}, NULL, moments}};
    tandem_checkpoint *c = NULL;
    assert_int_equal(tandem_checkpoint_create(dir, 2, ts, 2, 4096, &c), TANDEM_OK);
    tandem_plot *p = NULL;
    assert_int_equal(tandem_plot_create(1024, 768, &p), TANDEM_OK);
    tandem_metrics *m = NULL;
    assert_int_equal(tandem_metrics_open(jsonl, 0, &m), TANDEM_OK);
    enum { H = 400, T = 200 };
    static float steps[H], loss[H], target[T * 80], pred[T * 80];
    for (int i = 0; i < T * 80; i++) target[i] = tandem_rng_uniform(&rng, -11, 2), pred[i] = target[i] * 0.9f;
    tandem_st_meta meta[2] = {{"config", "model:\n  size: tiny\n"}, {"rng_state", "12345"}};

    if (COUNT_LIBC) { /* the shim sees libc's own allocations (fopen allocates its FILE) */
        long c0 = libc_calls();
        FILE *f = fopen(jsonl, "r");
        assert_non_null(f);
        fclose(f);
        assert_true(libc_calls() > c0);
    }
    uint64_t counted = tandem_alloc_count();
    long before = libc_calls();
    for (int s = 1; s <= 6; s++) { /* "training": log each step, checkpoint + plots each 2 */
        steps[s - 1] = (float)s;
        loss[s - 1] = 1.0f / (float)s;
        tandem_metrics_begin(m, s);
        tandem_metrics_set(m, "loss", loss[s - 1]);
        tandem_metrics_set(m, "val_l1", NAN);
        assert_int_equal(tandem_metrics_end(m), TANDEM_OK);
        if (s % 2) continue;
        assert_int_equal(tandem_checkpoint_save(c, s, meta, 2, fetch, NULL), TANDEM_OK);
        assert_int_equal(tandem_plot_loss(p, png, 800, 500, steps, loss, s, steps, loss, s), TANDEM_OK);
        assert_int_equal(tandem_plot_mel(p, mel, target, pred, T, 80), TANDEM_OK);
        const int64_t shape[2] = {T, 80};
        assert_int_equal(tandem_npy_write_f32(npy, pred, 2, shape), TANDEM_OK);
    }
    long after = libc_calls();
    print_message("runtime allocations %llu, libc allocation calls %ld%s\n",
                  (unsigned long long)(tandem_alloc_count() - counted), after - before,
                  COUNT_LIBC ? "" : " (not counted under AddressSanitizer)");
    assert_int_equal(tandem_alloc_count(), counted);
    assert_int_equal(after - before, 0);

    tandem_metrics_close(m);
    tandem_plot_free(p);
    tandem_checkpoint_free(c);
    assert_int_equal(tandem_test_rmtree(scratch), 0);
}

int main(void) {
    rng.s = tandem_test_seed("test_output_noalloc");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outputs_do_not_allocate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
