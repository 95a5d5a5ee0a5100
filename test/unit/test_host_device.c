/* test_host_device.c — the host backend through the public API and its backend table: two
 * devices at once, memory, copies in every direction, events across threads and their timing,
 * kernel launches through the registry, GEMM, and auto backend selection without a driver. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

#include <cmocka.h>

#include "platform/device.h"
#include "platform/os/log.h"
#include "platform/os/os.h"
#include "kernels/registry.h"
#include "test/testutil.h"
#include "tools/env_options.h"

static tandem_rng rng;

typedef struct {
    tandem_device *dev[2];
    tandem_stream *s[2];
} two_devs;

static int open_two(void **state) {
    unsetenv("TANDEM_HOST_DEVICES");
    if (cli_env_apply(NULL, 0) != TANDEM_OK) return -1;
    two_devs *t = calloc(1, sizeof *t);
    for (int i = 0; i < 2; i++) {
        if (tandem_device_open(TANDEM_BACKEND_HOST, i, &t->dev[i]) != TANDEM_OK) return -1;
        if (tandem_stream_create(t->dev[i], &t->s[i]) != TANDEM_OK) return -1;
    }
    *state = t;
    return 0;
}

static int close_two(void **state) {
    two_devs *t = *state;
    for (int i = 0; i < 2; i++) {
        tandem_stream_destroy(t->s[i]);
        tandem_device_close(t->dev[i]);
    }
    free(t);
    return 0;
}

static void test_two_devices_info(void **state) {
    two_devs *t = *state;
    int count = 0;
    assert_int_equal(tandem_device_count(TANDEM_BACKEND_HOST, &count), TANDEM_OK);
    assert_int_equal(count, 2);
    assert_true(t->dev[0] != t->dev[1]);
    for (int i = 0; i < 2; i++) {
        tandem_device_info info;
        assert_int_equal(tandem_device_get_info(t->dev[i], &info), TANDEM_OK);
        assert_int_equal(info.backend, TANDEM_BACKEND_HOST);
        assert_int_equal(info.ordinal, i);
        assert_memory_equal(info.name, "host CPU (", 10);
        assert_int_equal(info.name[strlen(info.name) - 1], ')');
        assert_int_equal(info.cc_major, 0);
        assert_int_equal(info.cc_minor, 0);
        assert_int_equal(info.supports_bf16, 0);
        assert_true(info.total_memory > ((size_t)64 << 20));
        assert_int_equal(info.multiprocessors, tandem_cpu_count());
        assert_int_equal(tandem_device_sync(t->dev[i]), TANDEM_OK);
    }
    assert_true(tandem_device_can_access_peer(t->dev[0], t->dev[1]));
    assert_true(tandem_device_can_access_peer(t->dev[1], t->dev[0]));

    tandem_device *bad = (tandem_device *)1;
    assert_int_equal(tandem_device_open(TANDEM_BACKEND_HOST, 2, &bad), TANDEM_E_INVALID);
    assert_null(bad);
    assert_non_null(strstr(tandem_last_error(), "host device 2"));
}

static void test_host_device_count_env(void **state) {
    (void)state;
    int count = -1;
    char err[256];
    setenv("TANDEM_HOST_DEVICES", "3", 1);
    assert_int_equal(cli_env_apply(err, sizeof err), TANDEM_OK);
    assert_int_equal(tandem_host_device_count(&count), TANDEM_OK);
    assert_int_equal(count, 3);
    tandem_device *d = NULL;
    assert_int_equal(tandem_device_open(TANDEM_BACKEND_HOST, 2, &d), TANDEM_OK);
    assert_int_equal(d->info.ordinal, 2);
    tandem_device_close(d);
    setenv("TANDEM_HOST_DEVICES", "two", 1); /* rejected: the count stays 3 */
    assert_int_equal(cli_env_apply(err, sizeof err), TANDEM_E_INVALID);
    assert_non_null(strstr(err, "TANDEM_HOST_DEVICES='two'"));
    assert_int_equal(tandem_host_device_count(&count), TANDEM_OK);
    assert_int_equal(count, 3);
    setenv("TANDEM_HOST_DEVICES", "0", 1); /* none */
    assert_int_equal(cli_env_apply(err, sizeof err), TANDEM_OK);
    assert_int_equal(tandem_host_device_count(&count), TANDEM_OK);
    assert_int_equal(count, 0);
    assert_int_equal(tandem_device_open(TANDEM_BACKEND_HOST, 0, &d), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "host_devices"));
    unsetenv("TANDEM_HOST_DEVICES");
    assert_int_equal(cli_env_apply(err, sizeof err), TANDEM_OK);
    assert_int_equal(tandem_host_device_count(&count), TANDEM_OK);
    assert_int_equal(count, 2);
}

static void test_mem_alloc(void **state) {
    two_devs *t = *state;
    for (int i = 0; i < 2; i++) {
        size_t bytes = (size_t)tandem_rng_int(&rng, 1, 1 << 20);
        uint64_t c0 = tandem_alloc_count();
        tandem_dptr p = 0;
        assert_int_equal(t->dev[i]->ops->mem_alloc(t->dev[i], bytes, &p), TANDEM_OK);
        assert_true(tandem_alloc_count() > c0); /* device memory is counted */
        assert_true(p != 0);
        assert_true((p & 4095) == 0);
        memset((void *)(uintptr_t)p, 0xa5, bytes); /* the whole range is usable (ASan checks) */
        t->dev[i]->ops->mem_free(t->dev[i], p);

        void *pinned = NULL;
        assert_int_equal(t->dev[i]->ops->host_alloc_pinned(t->dev[i], bytes, &pinned), TANDEM_OK);
        assert_true(((uintptr_t)pinned & 63) == 0);
        memset(pinned, 0x5a, bytes);
        t->dev[i]->ops->host_free_pinned(t->dev[i], pinned);
    }
}

static void test_copies_round_trip(void **state) {
    two_devs *t = *state;
    const tandem_backend_ops *o0 = t->dev[0]->ops, *o1 = t->dev[1]->ops;
    for (int round = 0; round < 6; round++) {
        size_t n = round == 0 ? 0 : (size_t)tandem_rng_int(&rng, 1, 300000);
        size_t cap = n ? n : 1;
        unsigned char *src = malloc(cap), *back = malloc(cap);
        tandem_rng_fill_bytes(&rng, src, n);
        memset(back, 0, cap);
        tandem_dptr a0 = 0, b0 = 0, a1 = 0;
        assert_int_equal(o0->mem_alloc(t->dev[0], cap, &a0), TANDEM_OK);
        assert_int_equal(o0->mem_alloc(t->dev[0], cap, &b0), TANDEM_OK);
        assert_int_equal(o1->mem_alloc(t->dev[1], cap, &a1), TANDEM_OK);
        assert_int_equal(o0->copy_h2d(t->s[0], a0, src, n), TANDEM_OK);          /* host → dev0 */
        assert_int_equal(o0->copy_d2d(t->s[0], b0, a0, n), TANDEM_OK);           /* dev0 → dev0 */
        assert_int_equal(o0->copy_peer(t->s[0], t->dev[1], a1, b0, n), TANDEM_OK); /* dev0 → dev1 */
        assert_int_equal(o1->copy_d2h(t->s[1], back, a1, n), TANDEM_OK);         /* dev1 → host */
        assert_int_equal(tandem_stream_sync(t->s[1]), TANDEM_OK);
        if (n) assert_memory_equal(back, src, n);
        o0->mem_free(t->dev[0], a0);
        o0->mem_free(t->dev[0], b0);
        o1->mem_free(t->dev[1], a1);
        free(src);
        free(back);
    }
    unsigned char x = 1;
    assert_int_equal(o0->copy_h2d(t->s[0], 0, &x, 1), TANDEM_E_INVALID);
}

/* ---- events across threads -------------------------------------------------------------------- */

#define ROUNDS 50
#define N_FLOATS 4099

typedef struct {
    two_devs *t;
    tandem_event *ready; /* recorded on dev0's stream after the fill */
    tandem_dptr buf0;    /* [N_FLOATS] on dev0 */
    tandem_mutex m;
    tandem_cond c;
    int produced, consumed; /* rounds */
    float values[ROUNDS];
    int errors;
} xthread;

static void *producer(void *arg) {
    xthread *x = arg;
    for (int r = 0; r < ROUNDS; r++) {
        tandem_mutex_lock(&x->m);
        while (x->consumed < r) tandem_cond_wait(&x->c, &x->m); /* buffer free again */
        tandem_mutex_unlock(&x->m);
        tandem_k_fill_f32_args a = {(float *)(uintptr_t)x->buf0, N_FLOATS, x->values[r]};
        tandem_launch_dims d = tandem_dims_1d(N_FLOATS, 256);
        if (x->t->dev[0]->ops->launch(x->t->s[0], TANDEM_KID_fill_f32, &d, &a, sizeof a) != TANDEM_OK ||
            tandem_event_record(x->ready, x->t->s[0]) != TANDEM_OK)
            x->errors++;
        tandem_mutex_lock(&x->m);
        x->produced = r + 1;
        tandem_cond_broadcast(&x->c);
        tandem_mutex_unlock(&x->m);
    }
    return NULL;
}

static void *consumer(void *arg) {
    xthread *x = arg;
    tandem_device *d1 = x->t->dev[1];
    tandem_dptr buf1 = 0;
    float *host = malloc(N_FLOATS * sizeof *host);
    if (d1->ops->mem_alloc(d1, N_FLOATS * sizeof(float), &buf1) != TANDEM_OK) x->errors++;
    for (int r = 0; r < ROUNDS && buf1; r++) {
        tandem_mutex_lock(&x->m);
        while (x->produced <= r) tandem_cond_wait(&x->c, &x->m);
        tandem_mutex_unlock(&x->m);
        int done = 0;
        if (tandem_stream_wait_event(x->t->s[1], x->ready) != TANDEM_OK ||
            tandem_event_sync(x->ready) != TANDEM_OK || tandem_event_query(x->ready, &done) != TANDEM_OK ||
            !done)
            x->errors++;
        /* dev1 pulls the slot from dev0, as the ring does. */
        if (x->t->dev[0]->ops->copy_peer(x->t->s[0], d1, buf1, x->buf0, N_FLOATS * sizeof(float)) != TANDEM_OK ||
            d1->ops->copy_d2h(x->t->s[1], host, buf1, N_FLOATS * sizeof(float)) != TANDEM_OK)
            x->errors++;
        for (int i = 0; i < N_FLOATS; i++)
            if (host[i] != x->values[r]) {
                x->errors++;
                break;
            }
        tandem_mutex_lock(&x->m);
        x->consumed = r + 1;
        tandem_cond_broadcast(&x->c);
        tandem_mutex_unlock(&x->m);
    }
    if (buf1) d1->ops->mem_free(d1, buf1);
    free(host);
    return NULL;
}

static void test_events_across_threads(void **state) {
    two_devs *t = *state;
    xthread x;
    memset(&x, 0, sizeof x);
    x.t = t;
    tandem_mutex_init(&x.m);
    tandem_cond_init(&x.c);
    for (int r = 0; r < ROUNDS; r++) x.values[r] = tandem_rng_uniform(&rng, -100.f, 100.f);
    assert_int_equal(tandem_event_create(t->dev[0], &x.ready), TANDEM_OK);
    assert_int_equal(t->dev[0]->ops->mem_alloc(t->dev[0], N_FLOATS * sizeof(float), &x.buf0), TANDEM_OK);
    tandem_thread ta, tb;
    assert_int_equal(tandem_thread_start(&tb, consumer, &x, "test-consumer"), TANDEM_OK);
    assert_int_equal(tandem_thread_start(&ta, producer, &x, "test-producer"), TANDEM_OK);
    tandem_thread_join(&ta);
    tandem_thread_join(&tb);
    assert_int_equal(x.errors, 0);
    assert_int_equal(x.consumed, ROUNDS);
    t->dev[0]->ops->mem_free(t->dev[0], x.buf0);
    tandem_event_destroy(x.ready);
    tandem_cond_destroy(&x.c);
    tandem_mutex_destroy(&x.m);
}

static void test_event_timing(void **state) {
    two_devs *t = *state;
    tandem_event *e0, *e1, *never, *other;
    assert_int_equal(tandem_event_create(t->dev[0], &e0), TANDEM_OK);
    assert_int_equal(tandem_event_create(t->dev[0], &e1), TANDEM_OK);
    assert_int_equal(tandem_event_create(t->dev[0], &never), TANDEM_OK);
    assert_int_equal(tandem_event_create(t->dev[1], &other), TANDEM_OK);

    /* Never recorded: complete (as in CUDA), but it has no time. */
    int done = 0;
    assert_int_equal(tandem_event_query(never, &done), TANDEM_OK);
    assert_int_equal(done, 1);
    assert_int_equal(tandem_event_sync(never), TANDEM_OK);
    assert_int_equal(tandem_stream_wait_event(t->s[1], never), TANDEM_OK);
    float ms = -1;
    assert_int_equal(tandem_event_elapsed_ms(never, e0, &ms), TANDEM_E_STATE);
    assert_non_null(strstr(tandem_last_error(), "never recorded"));

    long sleep_ms = (long)tandem_rng_int(&rng, 5, 30);
    assert_int_equal(tandem_event_record(e0, t->s[0]), TANDEM_OK);
    assert_int_equal(tandem_event_elapsed_ms(e0, e1, &ms), TANDEM_E_STATE);
    struct timespec ts = {0, sleep_ms * 1000000L};
    nanosleep(&ts, NULL);
    assert_int_equal(tandem_event_record(e1, t->s[0]), TANDEM_OK);
    assert_int_equal(tandem_event_elapsed_ms(e0, e1, &ms), TANDEM_OK);
    assert_true(ms >= (float)sleep_ms - 1e-3f);
    assert_true(ms < (float)sleep_ms + 5000.f);
    float back = 0;
    assert_int_equal(tandem_event_elapsed_ms(e1, e0, &back), TANDEM_OK);
    assert_true(back <= -(float)sleep_ms + 1e-3f);

    /* An event is recorded on a stream of its own device. */
    assert_int_equal(tandem_event_record(other, t->s[0]), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "host device 1"));
    /* ...and any device's stream may wait on it. */
    assert_int_equal(tandem_event_record(other, t->s[1]), TANDEM_OK);
    assert_int_equal(tandem_stream_wait_event(t->s[0], other), TANDEM_OK);

    tandem_event_destroy(e0);
    tandem_event_destroy(e1);
    tandem_event_destroy(never);
    tandem_event_destroy(other);
}

/* ---- kernels and GEMM -------------------------------------------------------------------------- */

static void test_launch_fill(void **state) {
    two_devs *t = *state;
    tandem_device *d = t->dev[1];
    int64_t n = tandem_rng_int(&rng, 1, 10000);
    float value = tandem_rng_uniform(&rng, -3.f, 3.f);
    tandem_dptr buf = 0;
    assert_int_equal(d->ops->mem_alloc(d, (size_t)(n + 1) * sizeof(float), &buf), TANDEM_OK);
    float *p = (float *)(uintptr_t)buf;
    for (int64_t i = 0; i <= n; i++) p[i] = -7.f; /* poison, plus one guard element */
    tandem_k_fill_f32_args a = {p, n, value};
    tandem_launch_dims dims = tandem_dims_1d(n, 256);
    assert_int_equal(d->ops->launch(t->s[1], TANDEM_KID_fill_f32, &dims, &a, sizeof a), TANDEM_OK);
    for (int64_t i = 0; i < n; i++) assert_true(p[i] == value);
    assert_true(p[n] == -7.f);

    a.value = value + 1.f;
    assert_int_equal(d->ops->launch(t->s[1], TANDEM_KID_fill_f32, &dims, &a, sizeof a - 1), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "fill_f32"));
    assert_int_equal(d->ops->launch(t->s[1], TANDEM_KERNEL_COUNT, &dims, &a, sizeof a), TANDEM_E_INVALID);
    assert_int_equal(d->ops->launch(t->s[1], -1, &dims, &a, sizeof a), TANDEM_E_INVALID);
    for (int64_t i = 0; i < n; i++) assert_true(p[i] == value); /* rejected launches did nothing */
    d->ops->mem_free(d, buf);
}

static void test_gemm(void **state) {
    two_devs *t = *state;
    tandem_device *d = t->dev[0];
    tandem_gemm_desc g = {0};
    g.trans_a = (int)tandem_rng_int(&rng, 0, 1);
    g.trans_b = (int)tandem_rng_int(&rng, 0, 1);
    g.m = tandem_rng_int(&rng, 1, 33);
    g.n = tandem_rng_int(&rng, 1, 33);
    g.k = tandem_rng_int(&rng, 1, 33);
    g.batch = 1;
    size_t na = (size_t)(g.m * g.k), nb = (size_t)(g.k * g.n), nc = (size_t)(g.m * g.n);
    float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4), *c0 = malloc(nc * 4);
    for (size_t i = 0; i < na; i++) a[i] = tandem_rng_uniform(&rng, -1, 1);
    for (size_t i = 0; i < nb; i++) b[i] = tandem_rng_uniform(&rng, -1, 1);
    for (size_t i = 0; i < nc; i++) c[i] = c0[i] = tandem_rng_uniform(&rng, -1, 1);
    float alpha = 0.75f, beta = -0.5f;
    assert_int_equal(d->ops->gemm_prepare(d, &g), TANDEM_OK);
    assert_int_equal(d->ops->gemm(t->s[0], &g, alpha, (tandem_dptr)(uintptr_t)a, (tandem_dptr)(uintptr_t)b,
                                  beta, (tandem_dptr)(uintptr_t)c),
                     TANDEM_OK);
    for (int64_t i = 0; i < g.m; i++)
        for (int64_t j = 0; j < g.n; j++) {
            double s = 0;
            for (int64_t p = 0; p < g.k; p++) {
                double av = g.trans_a ? a[p * g.m + i] : a[i * g.k + p];
                double bv = g.trans_b ? b[j * g.k + p] : b[p * g.n + j];
                s += av * bv;
            }
            double want = alpha * s + beta * c0[i * g.n + j];
            assert_true(fabs(c[i * g.n + j] - want) <= 1e-4 * (1 + fabs(want)));
        }
    assert_int_equal(d->ops->gemm(t->s[0], &g, alpha, 0, (tandem_dptr)(uintptr_t)b, beta,
                                  (tandem_dptr)(uintptr_t)c),
                     TANDEM_E_INVALID);
    free(a);
    free(b);
    free(c);
    free(c0);
}

/* ---- auto selection ---------------------------------------------------------------------------- */

typedef struct {
    int infos;
    char line[512];
} log_capture;

static void capture(void *user, tandem_log_level level, const char *msg) {
    log_capture *c = user;
    if (level == TANDEM_LOG_DEBUG && strstr(msg, "host backend")) { /* DEBUG: the CLI shows it under --verbose */
        c->infos++;
        snprintf(c->line, sizeof c->line, "%s", msg);
    }
}

static void test_auto_without_driver(void **state) {
    (void)state;
    int n = 0;
    if (tandem_cuda_device_count(&n) != TANDEM_E_NODRIVER) {
        print_message("a CUDA driver is present here; auto-selection without one is not testable\n");
        skip();
    }
    log_capture cap = {0};
    tandem_log_set_hook(capture, &cap);
    tandem_log_set_level(TANDEM_LOG_DEBUG);
    tandem_device *d = NULL;
    assert_int_equal(tandem_device_open(TANDEM_BACKEND_AUTO, 0, &d), TANDEM_OK);
    int count = 0;
    assert_int_equal(tandem_device_count(TANDEM_BACKEND_AUTO, &count), TANDEM_OK);
    tandem_log_set_level(TANDEM_LOG_INFO);
    tandem_log_set_hook(NULL, NULL);
    assert_int_equal(d->info.backend, TANDEM_BACKEND_HOST);
    assert_int_equal(count, 2);
    assert_int_equal(cap.infos, 1); /* one notice, however often auto is resolved */
    assert_non_null(strstr(cap.line, "no CUDA driver ("));
    assert_non_null(strstr(cap.line, "): using the host backend"));
    tandem_device_close(d);

    assert_int_equal(tandem_device_count(TANDEM_BACKEND_CUDA, &count), TANDEM_E_NODRIVER);
    assert_int_equal(count, 0);
    assert_int_equal(tandem_device_open((tandem_backend)7, 0, &d), TANDEM_E_INVALID);
}

int main(void) {
    rng.s = tandem_test_seed("test_host_device");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_devices_info),
        cmocka_unit_test(test_host_device_count_env),
        cmocka_unit_test(test_mem_alloc),
        cmocka_unit_test(test_copies_round_trip),
        cmocka_unit_test(test_events_across_threads),
        cmocka_unit_test(test_event_timing),
        cmocka_unit_test(test_launch_fill),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_auto_without_driver),
    };
    return cmocka_run_group_tests(tests, open_two, close_two);
}
