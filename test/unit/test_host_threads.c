/* test_host_threads.c — the host backend's threads change nothing: every registered kernel's
 * host implementation, and the host GEMM (CBLAS and blocked), give the same bytes on a pool of
 * 1 thread and on a pool of 3 threads that splits every loop as finely as it can
 * (tandem_host_pool_set_fine), on the random cases of the kernel test (test/kernels/cases_*.c)
 * and on the tiny model's GEMM shapes. Also the pool itself: each index exactly once, nested
 * and concurrent loops, the host_threads runtime option (and TANDEM_HOST_THREADS, which the
 * CLI and tests map onto it), and a host device's thread count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "platform/device.h"
#include "platform/host/host_gemm.h"
#include "platform/host/host_pool.h"
#include "test/kernels/kcase.h"
#include "platform/os/os.h"
#include "kernels/registry.h"
#include "test/testutil.h"
#include "tools/env_options.h"

static const tandem_kcase_spec *const specs[TANDEM_KERNEL_COUNT] = {
#define HT_SPEC(name, group) &tandem_kcase_##name,
    TANDEM_KERNEL_LIST(HT_SPEC)
#undef HT_SPEC
};

static uint64_t seed;
static tandem_host_pool *pool1, *pool3;

/* Runs the host implementation of kernel id on case c with pool p entered. */
static void run_host(int id, const tandem_kcase *c, void *const *bufs, tandem_host_pool *p) {
    const tandem_kernel_info *k = &tandem_kernel_table[id];
    void *args = calloc(1, k->args_size);
    assert_non_null(args);
    specs[id]->bind(c, bufs, args);
    tandem_host_pool *prev = tandem_host_pool_enter(p);
    k->host(args);
    tandem_host_pool_leave(prev);
    free(args);
}

/* Every kernel, every size of its case spec: identical inputs (outputs pre-filled with the
 * same random bytes, so an element neither run writes compares equal and one only a single
 * run writes most likely differs), then every buffer must be byte-equal. */
static void test_kernels_1_vs_3_threads(void **state) {
    (void)state;
    int kernels = 0, cases = 0;
    for (int id = 0; id < TANDEM_KERNEL_COUNT; id++) {
        const tandem_kernel_info *k = &tandem_kernel_table[id];
        tandem_rng rng = {seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(id + 1))};
        for (int sz = 0; sz < specs[id]->nsizes; sz++) {
            tandem_kcase c;
            memset(&c, 0, sizeof c);
            specs[id]->make(sz, &rng, &c);
            void *b1[TANDEM_KCASE_MAX_BUFS] = {0}, *b3[TANDEM_KCASE_MAX_BUFS] = {0};
            size_t bytes[TANDEM_KCASE_MAX_BUFS] = {0};
            for (int j = 0; j < c.nbufs; j++) {
                bytes[j] = (size_t)c.bufs[j].count * tandem_kcase_dtype_bytes(c.bufs[j].dtype);
                b1[j] = malloc(bytes[j] ? bytes[j] : 1);
                b3[j] = malloc(bytes[j] ? bytes[j] : 1);
                assert_true(b1[j] && b3[j]);
                if (c.bufs[j].role == TANDEM_KB_OUT) {
                    for (size_t q = 0; q < bytes[j]; q++) ((uint8_t *)b1[j])[q] = (uint8_t)tandem_rng_next(&rng);
                } else {
                    tandem_kcase_fill_random(b1[j], &c.bufs[j], &rng);
                }
                memcpy(b3[j], b1[j], bytes[j]);
            }
            run_host(id, &c, b1, pool1);
            run_host(id, &c, b3, pool3);
            for (int j = 0; j < c.nbufs; j++) {
                if (memcmp(b1[j], b3[j], bytes[j]) != 0) {
                    size_t q = 0;
                    while (((uint8_t *)b1[j])[q] == ((uint8_t *)b3[j])[q]) q++;
                    fail_msg("%s (%s): buffer %s differs between 1 and 3 threads at byte %zu "
                             "(seed %llu)",
                             k->name, c.desc, c.bufs[j].name, q, (unsigned long long)seed);
                }
                free(b1[j]);
                free(b3[j]);
            }
            cases++;
        }
        kernels++;
    }
    assert_int_equal(kernels, TANDEM_KERNEL_COUNT);
    printf("host threads: %d kernels, %d cases byte-identical with 1 and 3 threads\n", kernels, cases);
}

/* ---- GEMM ---- */
typedef tandem_status (*gemm_fn)(const tandem_gemm_desc *, float, const float *, const float *,
                                 float, float *);

static float *rand_floats(int64_t n, tandem_rng *rng) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    assert_non_null(p);
    tandem_rng_fill(rng, p, n, -1.0f, 1.0f);
    return p;
}

static void check_gemm(gemm_fn fn, const char *which, tandem_gemm_desc d, float beta, tandem_rng *rng) {
    int64_t items = d.batch > 1 ? d.batch : 1;
    int64_t na = (items - 1) * d.stride_a + d.m * d.k, nb = (items - 1) * d.stride_b + d.k * d.n;
    int64_t nc = (items - 1) * d.stride_c + d.m * d.n;
    float *a = rand_floats(na, rng), *b = rand_floats(nb, rng), *c1 = rand_floats(nc, rng);
    float *c3 = malloc((size_t)nc * sizeof *c3);
    assert_non_null(c3);
    memcpy(c3, c1, (size_t)nc * sizeof *c3);
    tandem_host_pool *prev = tandem_host_pool_enter(pool1);
    assert_int_equal(fn(&d, 0.7f, a, b, beta, c1), TANDEM_OK);
    tandem_host_pool_enter(pool3);
    assert_int_equal(fn(&d, 0.7f, a, b, beta, c3), TANDEM_OK);
    tandem_host_pool_leave(prev);
    if (memcmp(c1, c3, (size_t)nc * sizeof *c1) != 0)
        fail_msg("%s gemm m=%lld n=%lld k=%lld batch=%lld ta=%d tb=%d: C differs between 1 and 3 "
                 "threads (seed %llu)",
                 which, (long long)d.m, (long long)d.n, (long long)d.k, (long long)d.batch, d.trans_a,
                 d.trans_b, (unsigned long long)seed);
    free(a);
    free(b);
    free(c1);
    free(c3);
}

/* The tiny model's GEMMs (B 8, T 256, d 256, mel rows 128, r 4): linear forward, dx and dW
 * (row-split, column-split), the batched attention products and the strided head products;
 * plus odd sizes that leave partial split blocks. */
static void test_gemm_1_vs_3_threads(void **state) {
    (void)state;
    tandem_rng rng = {seed ^ 0x51};
    const int64_t N = 2048, D = 256, T = 256, dh = 64, BH = 32, Tm = 128, S = 8;
    const tandem_gemm_desc shapes[] = {
        {0, 1, N, 3 * D, D, 1, 0, 0, 0, 0, 0, 0, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0},          /* qkv forward */
        {0, 0, N, D, 4 * D, 1, 0, 0, 0, 0, 0, 0, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0},          /* proj dx */
        {1, 0, 4 * D, D, N, 1, 0, 0, 0, 0, 0, 0, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0},          /* fc dW */
        {1, 0, 80, 320, 1024, 1, 0, 0, 0, 0, 0, 0, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0},        /* prenet-like dW: n > m */
        {0, 1, T, T, dh, BH, T * dh, T * dh, T * T, 0, 0, 0, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0}, /* scores */
        {1, 0, T, dh, T, BH, T * T, T * dh, T * dh, 0, 0, 0, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0}, /* dV */
        {0, 1, Tm, 320, D, S, T * D, 0, Tm * 320, 0, 0, 0, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0},   /* mel head, strided items */
        {0, 0, 1001, 77, 333, 1, 0, 0, 0, 0, 0, 0, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0},        /* odd sizes */
        {0, 1, 256, 1024, 2048, 1, 0, 0, 0, 0, 0, 0, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0},      /* m < n */
        {1, 1, 37, 1500, 700, 1, 0, 0, 0, 0, 0, 0, TANDEM_GEMM_EPI_NONE, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        check_gemm(tandem_host_gemm, tandem_host_gemm_impl(), shapes[i], 0.0f, &rng);
        check_gemm(tandem_host_gemm, tandem_host_gemm_impl(), shapes[i], 1.0f, &rng);
        check_gemm(tandem_host_gemm_blocked, "blocked", shapes[i], 0.5f, &rng);
    }
}

/* ---- the pool ---- */
typedef struct {
    atomic_int *hits;
    int nested;
} count_job;

static void count_range(void *ctx, int64_t b, int64_t e) {
    count_job *j = ctx;
    assert_true(b < e);
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&j->hits[i], 1);
    if (j->nested) {
        /* inside a range: runs on this thread alone, over the whole range */
        assert_int_equal(tandem_host_parallel_threads(), 1);
    }
}

static void test_pool_covers_each_index_once(void **state) {
    (void)state;
    const int64_t sizes[] = {1, 2, 3, 11, 12, 13, 1000, 100003};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int grain = 1; grain <= 4096; grain *= 64) {
            int64_t n = sizes[s];
            atomic_int *hits = calloc((size_t)n, sizeof *hits);
            count_job j = {hits, 1};
            tandem_host_pool *prev = tandem_host_pool_enter(pool3);
            assert_int_equal(tandem_host_parallel_threads(), 3);
            tandem_host_parallel_for(n, grain, count_range, &j);
            tandem_host_pool_leave(prev);
            for (int64_t i = 0; i < n; i++)
                if (atomic_load(&hits[i]) != 1)
                    fail_msg("n=%lld grain=%d: index %lld run %d times", (long long)n, grain,
                             (long long)i, atomic_load(&hits[i]));
            free(hits);
        }
    assert_int_equal(tandem_host_parallel_threads(), 1); /* left: none entered */
}

/* Two threads sharing one pool: one gets the workers, the other runs its loop alone; both
 * loops complete exactly. */
typedef struct {
    tandem_host_pool *p;
    int64_t n;
    atomic_int *hits;
} sharer;

static void *share_main(void *arg) {
    sharer *s = arg;
    count_job j = {s->hits, 0};
    tandem_host_pool *prev = tandem_host_pool_enter(s->p);
    for (int r = 0; r < 200; r++) tandem_host_parallel_for(s->n, 1, count_range, &j);
    tandem_host_pool_leave(prev);
    return NULL;
}

static void test_pool_shared_by_two_threads(void **state) {
    (void)state;
    const int64_t n = 5000;
    sharer s[2];
    tandem_thread t[2];
    for (int i = 0; i < 2; i++) {
        s[i] = (sharer){pool3, n, calloc((size_t)n, sizeof(atomic_int))};
        assert_int_equal(tandem_thread_start(&t[i], share_main, &s[i], "sharer"), TANDEM_OK);
    }
    for (int i = 0; i < 2; i++) {
        tandem_thread_join(&t[i]);
        for (int64_t k = 0; k < n; k++) assert_int_equal(atomic_load(&s[i].hits[k]), 200);
        free(s[i].hits);
    }
}

/* A device opened now gets `threads` workers. */
static void expect_device_threads(int threads) {
    assert_int_equal(tandem_host_pool_default_threads(), threads);
    tandem_device *dev = NULL;
    assert_int_equal(tandem_device_open(TANDEM_BACKEND_HOST, 0, &dev), TANDEM_OK);
    assert_int_equal(tandem_host_device_threads(dev), threads);
#if defined(TANDEM_HAVE_CBLAS)
    assert_int_equal(tandem_host_blas_threads(), 1); /* the pool splits GEMMs, not OpenBLAS */
#endif
    tandem_device_close(dev);
}

static void test_pool_threads_setting(void **state) {
    (void)state;
    tandem_runtime_options o;
    tandem_runtime_options_init(&o);
    o.host_threads = 3;
    assert_int_equal(tandem_runtime_set_options(&o), TANDEM_OK);
    expect_device_threads(3);
    const int bad[] = {-1, -2, TANDEM_MAX_HOST_THREADS + 1, 100000};
    char range[32];
    snprintf(range, sizeof range, "expected 1 to %d", TANDEM_MAX_HOST_THREADS);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.host_threads = bad[i];
        assert_int_equal(tandem_runtime_set_options(&o), TANDEM_E_INVALID);
        assert_non_null(strstr(tandem_last_error(), "host_threads"));
        assert_non_null(strstr(tandem_last_error(), range));
        expect_device_threads(3); /* a rejected value changes nothing */
    }
    o.host_threads = 0; /* the default */
    assert_int_equal(tandem_runtime_set_options(&o), TANDEM_OK);
    int cpus = tandem_cpu_count();
    expect_device_threads(cpus < TANDEM_MAX_HOST_THREADS ? cpus : TANDEM_MAX_HOST_THREADS);
}

/* The same through the environment, as the CLI and the test binaries read it. */
static void test_pool_threads_env(void **state) {
    (void)state;
    char err[256];
    setenv("TANDEM_HOST_THREADS", "3", 1);
    assert_int_equal(cli_env_apply(err, sizeof err), TANDEM_OK);
    expect_device_threads(3);
    const char *bad[] = {"0", "-2", "x", "3x", "100000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("TANDEM_HOST_THREADS", bad[i], 1);
        assert_int_equal(cli_env_apply(err, sizeof err), TANDEM_E_INVALID);
        char want[64];
        snprintf(want, sizeof want, "TANDEM_HOST_THREADS='%s': expected an integer from 1 to %d", bad[i],
                 TANDEM_MAX_HOST_THREADS);
        assert_string_equal(err, want);
        expect_device_threads(3);
    }
    unsetenv("TANDEM_HOST_THREADS");
    assert_int_equal(cli_env_apply(err, sizeof err), TANDEM_OK);
    assert_int_equal(tandem_host_pool_default_threads(), tandem_cpu_count());
}

int main(void) {
    seed = tandem_test_seed("test_host_threads");
    if (tandem_host_pool_create(1, "ht1", &pool1) != TANDEM_OK ||
        tandem_host_pool_create(3, "ht3", &pool3) != TANDEM_OK) {
        fprintf(stderr, "cannot create the pools\n");
        return 1;
    }
    tandem_host_pool_set_fine(pool3, 1);
    (void)tandem_host_blas_set_threads(1); /* as a host device sets it */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernels_1_vs_3_threads),
        cmocka_unit_test(test_gemm_1_vs_3_threads),
        cmocka_unit_test(test_pool_covers_each_index_once),
        cmocka_unit_test(test_pool_shared_by_two_threads),
        cmocka_unit_test(test_pool_threads_setting),
        cmocka_unit_test(test_pool_threads_env),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tandem_host_pool_destroy(pool1);
    tandem_host_pool_destroy(pool3);
    return rc;
}
