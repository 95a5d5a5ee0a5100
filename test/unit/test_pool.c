/* test_pool.c — the tensor pool on host devices: declare/plan/commit, addresses inside the
 * arena, copies, validation, over-budget reports, planning-only pools, and the zero-allocation
 * promise: after commit, copies and accessors make no runtime allocation (tandem_alloc_count)
 * and no C heap call at all (malloc & co. are interposed in this binary and counted). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/core/config.h"
#include "platform/device.h"
#include "runtime/data/plan_layout.h"
#include "runtime/core/pool_internal.h"
#include "tandem.h"
#include "test/fixtures.h"

/* ---- malloc interposition ------------------------------------------------------------------
 * Definitions here win over libc's for every caller in the process (the runtime, libyaml,
 * OpenBLAS, ...). They forward to glibc's internal entry points and count calls made by this
 * thread while `counting` is on. Under AddressSanitizer the sanitizer owns malloc, so the
 * interposition is left out and the test relies on tandem_alloc_count alone. */
#if defined(__SANITIZE_ADDRESS__)
#define NO_INTERPOSE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NO_INTERPOSE 1
#endif
#endif

static _Thread_local int counting;
static atomic_long heap_calls;

#ifndef NO_INTERPOSE
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static void note_heap(void) {
    if (counting) atomic_fetch_add(&heap_calls, 1);
}
void *malloc(size_t n) {
    note_heap();
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t m) {
    note_heap();
    return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n) {
    note_heap();
    return __libc_realloc(p, n);
}
void *memalign(size_t a, size_t n) {
    note_heap();
    return __libc_memalign(a, n);
}
void *aligned_alloc(size_t a, size_t n) {
    note_heap();
    return __libc_memalign(a, n);
}
int posix_memalign(void **out, size_t a, size_t n) {
    note_heap();
    void *p = __libc_memalign(a, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
void free(void *p) { __libc_free(p); }
#endif

/* ---- helpers -------------------------------------------------------------------------------- */

static tandem_device *open_host(int ordinal) {
    tandem_device *d = NULL;
    assert_int_equal(tandem_device_open(TANDEM_BACKEND_HOST, ordinal, &d), TANDEM_OK);
    return d;
}

static tandem_tensor *declare(tandem_pool *p, const char *name, tandem_dtype dt, int ndim,
                              const int64_t *shape, tandem_lifetime lt, int first, int last) {
    tandem_tensor *t = NULL;
    tandem_status st = tandem_pool_declare(p, name, dt, ndim, shape, lt, first, last, &t);
    if (st != TANDEM_OK) fail_msg("declare %s: %s", name, tandem_last_error());
    return t;
}

#define MAX_T 40

typedef struct life {
    int persistent, first, last;
} life;

/* Random tensors: persistent ones and per-step ones with random live intervals. */
static int declare_random(tandem_rng *r, tandem_pool *p, tandem_tensor **ts, life *lf) {
    int n = (int)tandem_rng_int(r, 1, MAX_T);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        int ndim = (int)tandem_rng_int(r, 1, 4);
        int64_t shape[4];
        for (int d = 0; d < ndim; d++) shape[d] = tandem_rng_int(r, 1, 24);
        tandem_dtype dt = (tandem_dtype)tandem_rng_int(r, 0, 4);
        int a = (int)tandem_rng_int(r, 0, 9), b = (int)tandem_rng_int(r, 0, 9);
        lf[i].persistent = tandem_rng_int(r, 0, 2) == 0;
        lf[i].first = a < b ? a : b;
        lf[i].last = a < b ? b : a;
        ts[i] = declare(p, name, dt, ndim, shape,
                        lf[i].persistent ? TANDEM_PERSISTENT : TANDEM_PER_STEP, lf[i].first,
                        lf[i].last);
        /* bytes computed here, independently of the pool */
        int64_t numel = 1;
        for (int d = 0; d < ndim; d++) numel *= shape[d];
        static const size_t esz[] = {4, 2, 2, 4, 1};
        assert_int_equal(tandem_tensor_bytes(ts[i]), (size_t)numel * esz[dt]);
        assert_int_equal(tandem_tensor_numel(ts[i]), numel);
        assert_int_equal(tandem_tensor_ndim(ts[i]), ndim);
        assert_int_equal(tandem_tensor_dim(ts[i], ndim - 1), shape[ndim - 1]);
    }
    return n;
}

static int live_together(const life *a, const life *b) {
    return a->persistent || b->persistent || !(a->last < b->first || b->last < a->first);
}

/* ---- tests ------------------------------------------------------------------------------------ */

static void test_commit_addresses(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_pool addresses")};
    tandem_device *dev = open_host(0);
    tandem_stream *s = NULL;
    assert_int_equal(tandem_stream_create(dev, &s), TANDEM_OK);
    static unsigned char buf[24 * 24 * 24 * 24 * 4], back[24 * 24 * 24 * 24 * 4];
    for (int round = 0; round < 30; round++) {
        tandem_pool *p = NULL;
        assert_int_equal(tandem_pool_create(dev, "model", 0, &p), TANDEM_OK);
        tandem_tensor *ts[MAX_T];
        life lf[MAX_T];
        int n = declare_random(&r, p, ts, lf);
        assert_int_equal(tandem_tensor_addr(ts[0]), 0); /* no address before commit */
        assert_int_equal(tandem_pool_plan(p), TANDEM_OK);
        uint64_t before = tandem_alloc_count();
        assert_int_equal(tandem_pool_commit(p), TANDEM_OK);
        assert_int_equal(tandem_alloc_count() - before, 1); /* the one arena, nothing else */

        tandem_pool_stats st;
        tandem_pool_get_stats(p, &st);
        assert_int_equal(st.tensor_count, n);
        assert_int_equal(st.arena_bytes, st.persistent_bytes + st.per_step_peak);
        assert_true(st.per_step_peak <= st.per_step_sum);
        /* every address = one base + its offset, aligned, inside the arena */
        uint64_t base = tandem_tensor_addr(ts[0]) - tandem_tensor_offset(ts[0]);
        for (int i = 0; i < n; i++) {
            uint64_t a = tandem_tensor_addr(ts[i]);
            assert_int_equal(a % 64, 0);
            assert_int_equal(a, base + tandem_tensor_offset(ts[i]));
            assert_true(a + tandem_tensor_bytes(ts[i]) <= base + st.arena_bytes);
        }
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) {
                if (!live_together(&lf[i], &lf[j])) continue;
                uint64_t ai = tandem_tensor_addr(ts[i]), aj = tandem_tensor_addr(ts[j]);
                assert_true(ai + tandem_tensor_bytes(ts[i]) <= aj ||
                            aj + tandem_tensor_bytes(ts[j]) <= ai);
            }
        /* the memory is real: fill persistent tensors, then scribble over every per-step one;
         * the persistent contents must survive */
        for (int i = 0; i < n; i++) {
            memset(buf, lf[i].persistent ? 0x11 * (i % 15 + 1) : 0xEE, tandem_tensor_bytes(ts[i]));
            if (lf[i].persistent)
                assert_int_equal(tandem_tensor_upload(s, ts[i], buf, tandem_tensor_bytes(ts[i])),
                                 TANDEM_OK);
        }
        memset(buf, 0xEE, sizeof buf);
        for (int i = 0; i < n; i++)
            if (!lf[i].persistent)
                assert_int_equal(tandem_tensor_upload(s, ts[i], buf, tandem_tensor_bytes(ts[i])),
                                 TANDEM_OK);
        for (int i = 0; i < n; i++) {
            if (!lf[i].persistent) continue;
            size_t b = tandem_tensor_bytes(ts[i]);
            assert_int_equal(tandem_tensor_download(s, back, ts[i], b), TANDEM_OK);
            memset(buf, 0x11 * (i % 15 + 1), b);
            assert_memory_equal(back, buf, b);
        }
        tandem_pool_destroy(p);
    }
    tandem_stream_destroy(s);
    tandem_device_close(dev);
}

/* Data written to every tensor survives as long as no simultaneously-live tensor is written:
 * write all persistent tensors, then check none was clobbered by per-step ones. */
static void test_roundtrip_and_copies(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_pool copies")};
    tandem_device *d0 = open_host(0), *d1 = open_host(1);
    tandem_pool *p0 = NULL, *p1 = NULL;
    assert_int_equal(tandem_pool_create(d0, "data", 0, &p0), TANDEM_OK);
    assert_int_equal(tandem_pool_create(d1, "model", 0, &p1), TANDEM_OK);
    const int64_t shp[2] = {(int64_t)tandem_rng_int(&r, 1, 300), 80};
    tandem_tensor *a = declare(p0, "mels", TANDEM_F32, 2, shp, TANDEM_PERSISTENT, 0, 0);
    tandem_tensor *b = declare(p0, "mels_copy", TANDEM_F32, 2, shp, TANDEM_PERSISTENT, 0, 0);
    tandem_tensor *c = declare(p1, "ring_mels", TANDEM_F32, 2, shp, TANDEM_PERSISTENT, 0, 0);
    tandem_tensor *w = declare(p0, "scratch", TANDEM_F32, 2, shp, TANDEM_PER_STEP, 0, 1);

    tandem_stream *s0 = NULL, *s1 = NULL;
    assert_int_equal(tandem_stream_create(d0, &s0), TANDEM_OK);
    assert_int_equal(tandem_stream_create(d1, &s1), TANDEM_OK);
    float src[300 * 80], dst[300 * 80];
    size_t bytes = (size_t)shp[0] * 80 * sizeof(float);
    for (int64_t i = 0; i < shp[0] * 80; i++) src[i] = tandem_rng_uniform(&r, -5, 5);

    /* before commit: no memory */
    assert_int_equal(tandem_tensor_upload(s0, a, src, bytes), TANDEM_E_STATE);
    assert_int_equal(tandem_pool_commit(p0), TANDEM_OK);
    assert_int_equal(tandem_pool_commit(p1), TANDEM_OK);
    assert_int_equal(tandem_pool_commit(p0), TANDEM_E_STATE);

    assert_int_equal(tandem_tensor_upload(s0, a, src, bytes), TANDEM_OK);
    assert_int_equal(tandem_tensor_copy(s0, b, a), TANDEM_OK);
    assert_int_equal(tandem_tensor_copy(s0, w, a), TANDEM_OK); /* per-step scratch written */
    assert_int_equal(tandem_tensor_copy(s0, c, b), TANDEM_OK); /* peer: host to host */
    memset(dst, 0, sizeof dst);
    assert_int_equal(tandem_tensor_download(s1, dst, c, bytes), TANDEM_OK);
    assert_memory_equal(src, dst, bytes);
    memset(dst, 0, sizeof dst);
    assert_int_equal(tandem_tensor_download(s0, dst, a, bytes), TANDEM_OK);
    assert_memory_equal(src, dst, bytes);

    /* misuse: wrong size, wrong stream, stream on the destination for a cross-device copy */
    assert_int_equal(tandem_tensor_upload(s0, a, src, bytes - 4), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "'mels'"));
    assert_int_equal(tandem_tensor_download(s1, dst, a, bytes), TANDEM_E_INVALID);
    assert_int_equal(tandem_tensor_copy(s1, c, b), TANDEM_E_INVALID);

    tandem_stream_destroy(s0);
    tandem_stream_destroy(s1);
    tandem_pool_destroy(p0);
    tandem_pool_destroy(p1);
    tandem_device_close(d0);
    tandem_device_close(d1);
}

/* Two host devices whose backend table says "no peer access": a cross-device copy must be
 * refused and point at the staged path. The wrappers share the real devices' state. */
static tandem_backend_ops nopeer_ops;
static int never_peer(const tandem_device *a, const tandem_device *b) {
    (void)a, (void)b;
    return 0;
}
static void test_copy_without_peer(void **state) {
    (void)state;
    tandem_device *r0 = open_host(0), *r1 = open_host(1);
    nopeer_ops = *r0->ops;
    nopeer_ops.can_access_peer = never_peer;
    tandem_device f0 = *r0, f1 = *r1;
    f0.ops = f1.ops = &nopeer_ops;
    tandem_pool *p0 = NULL, *p1 = NULL;
    assert_int_equal(tandem_pool_create(&f0, "data", 0, &p0), TANDEM_OK);
    assert_int_equal(tandem_pool_create(&f1, "model", 0, &p1), TANDEM_OK);
    const int64_t shp[1] = {64};
    tandem_tensor *a = declare(p0, "a", TANDEM_U8, 1, shp, TANDEM_PERSISTENT, 0, 0);
    tandem_tensor *b = declare(p1, "b", TANDEM_U8, 1, shp, TANDEM_PERSISTENT, 0, 0);
    assert_int_equal(tandem_pool_commit(p0), TANDEM_OK);
    assert_int_equal(tandem_pool_commit(p1), TANDEM_OK);
    tandem_stream *s = NULL;
    assert_int_equal(tandem_stream_create(&f0, &s), TANDEM_OK);
    assert_int_equal(tandem_tensor_copy(s, b, a), TANDEM_E_UNSUPPORTED);
    assert_non_null(strstr(tandem_last_error(), "pinned"));
    tandem_stream_destroy(s);
    tandem_pool_destroy(p0);
    tandem_pool_destroy(p1);
    tandem_device_close(r0);
    tandem_device_close(r1);
}

/* After commit: copies, accessors, stats and reports make no allocation of any kind. */
static void test_zero_allocation_after_commit(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_pool zero-allocation")};
    tandem_device *d0 = open_host(0), *d1 = open_host(1);
    tandem_pool *p0 = NULL, *p1 = NULL;
    assert_int_equal(tandem_pool_create(d0, "data", 0, &p0), TANDEM_OK);
    assert_int_equal(tandem_pool_create(d1, "model", 0, &p1), TANDEM_OK);
    const int64_t shp[3] = {4, 16, 80};
    tandem_tensor *x = declare(p0, "x", TANDEM_F32, 3, shp, TANDEM_PERSISTENT, 0, 0);
    tandem_tensor *y = declare(p0, "y", TANDEM_F32, 3, shp, TANDEM_PER_STEP, 0, 2);
    tandem_tensor *z = declare(p1, "z", TANDEM_F32, 3, shp, TANDEM_PERSISTENT, 0, 0);
    assert_int_equal(tandem_pool_commit(p0), TANDEM_OK);
    assert_int_equal(tandem_pool_commit(p1), TANDEM_OK);
    tandem_stream *s0 = NULL, *s1 = NULL;
    assert_int_equal(tandem_stream_create(d0, &s0), TANDEM_OK);
    assert_int_equal(tandem_stream_create(d1, &s1), TANDEM_OK);
    static float host_in[4 * 16 * 80], host_out[4 * 16 * 80];
    for (size_t i = 0; i < sizeof host_in / sizeof host_in[0]; i++)
        host_in[i] = tandem_rng_uniform(&r, -1, 1);
    static char report[4096];
    tandem_status sts[64];
    int nst = 0;
    int64_t dims = 0;

    uint64_t count_before = tandem_alloc_count();
    atomic_store(&heap_calls, 0);
    counting = 1;
    for (int step = 0; step < 8; step++) {
        sts[nst++ % 64] = tandem_tensor_upload(s0, x, host_in, sizeof host_in);
        sts[nst++ % 64] = tandem_tensor_copy(s0, y, x);
        sts[nst++ % 64] = tandem_tensor_copy(s0, z, y);
        sts[nst++ % 64] = tandem_tensor_download(s1, host_out, z, sizeof host_out);
        sts[nst++ % 64] = tandem_stream_sync(s0);
        dims += tandem_tensor_dim(z, 2) + tandem_tensor_numel(y) + (int64_t)tandem_tensor_addr(x);
        tandem_pool_stats st;
        tandem_pool_get_stats(p0, &st);
        tandem_pool_report(p0, report, sizeof report);
    }
    /* an error path must not allocate either (the message buffer is preallocated) */
    tandem_status bad = tandem_tensor_upload(s0, x, host_in, 3);
    counting = 0;
    long heap = atomic_load(&heap_calls);
    uint64_t count_after = tandem_alloc_count();

    for (int i = 0; i < 40; i++) assert_int_equal(sts[i], TANDEM_OK);
    assert_int_equal(bad, TANDEM_E_INVALID);
    assert_true(dims != 0);
    assert_memory_equal(host_in, host_out, sizeof host_in);
    assert_int_equal(count_after, count_before);
#ifndef NO_INTERPOSE
    assert_int_equal(heap, 0);
    /* the interposition itself works: a heap call in the counted region is seen */
    void *(*volatile do_malloc)(size_t) = malloc; /* volatile: the call cannot be elided */
    counting = 1;
    void *probe = do_malloc(16);
    counting = 0;
    assert_int_equal(atomic_load(&heap_calls), 1);
    free(probe);
#else
    (void)heap;
    print_message("AddressSanitizer build: malloc not interposed, tandem_alloc_count only\n");
#endif
    tandem_stream_destroy(s0);
    tandem_stream_destroy(s1);
    tandem_pool_destroy(p0);
    tandem_pool_destroy(p1);
    tandem_device_close(d0);
    tandem_device_close(d1);
}

static void test_over_budget(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_pool budget")};
    tandem_device *dev = open_host(0);
    /* sizes are multiples of 64 B, so the arena is exactly their sum (host alignment 64) */
    int64_t n_small = tandem_rng_int(&r, 1, 1000), n_big = n_small + tandem_rng_int(&r, 1, 1000);
    const int64_t small[2] = {n_small, 16}, big[3] = {2, n_big, 32};
    size_t need = (size_t)n_small * 16 * 4 * 3 + (size_t)(2 * n_big * 32) * 4;

    tandem_pool *p = NULL;
    assert_int_equal(tandem_pool_create(dev, "model", need - 1, &p), TANDEM_OK);
    declare(p, "small_a", TANDEM_F32, 2, small, TANDEM_PERSISTENT, 0, 0);
    declare(p, "the_big_one", TANDEM_F32, 3, big, TANDEM_PERSISTENT, 0, 0);
    declare(p, "small_b", TANDEM_F32, 2, small, TANDEM_PERSISTENT, 0, 0);
    declare(p, "small_c", TANDEM_F32, 2, small, TANDEM_PER_STEP, 0, 3);

    tandem_test_log_capture(TANDEM_LOG_DEBUG);
    const char *log_text = tandem_test_log_text();
    assert_int_equal(tandem_pool_plan(p), TANDEM_E_BUDGET);
    char want[64];
    snprintf(want, sizeof want, "[2, %lld, 32]", (long long)n_big);
    assert_non_null(strstr(tandem_last_error(), "the_big_one"));
    assert_non_null(strstr(tandem_last_error(), want));
    /* the logged report: largest tensor first, with its shape; OVER by exactly 1 byte */
    char *big_at = strstr(log_text, "the_big_one"), *small_at = strstr(log_text, "small_a");
    assert_non_null(big_at);
    assert_non_null(small_at);
    assert_true(big_at < small_at);
    assert_non_null(strstr(log_text, want));
    assert_non_null(strstr(log_text, "OVER by 1 B"));
    assert_non_null(strstr(log_text, "persistent"));
    /* commit fails the same way, before any device work */
    uint64_t before = tandem_alloc_count();
    assert_int_equal(tandem_pool_commit(p), TANDEM_E_BUDGET);
    assert_int_equal(tandem_alloc_count(), before);
    tandem_log_set_hook(NULL, NULL);
    tandem_pool_destroy(p);

    /* exactly at budget: fine */
    assert_int_equal(tandem_pool_create(dev, "model", need, &p), TANDEM_OK);
    declare(p, "small_a", TANDEM_F32, 2, small, TANDEM_PERSISTENT, 0, 0);
    declare(p, "the_big_one", TANDEM_F32, 3, big, TANDEM_PERSISTENT, 0, 0);
    declare(p, "small_b", TANDEM_F32, 2, small, TANDEM_PERSISTENT, 0, 0);
    declare(p, "small_c", TANDEM_F32, 2, small, TANDEM_PER_STEP, 0, 3);
    assert_int_equal(tandem_pool_commit(p), TANDEM_OK);
    tandem_pool_stats s;
    tandem_pool_get_stats(p, &s);
    assert_int_equal(s.arena_bytes, need);
    tandem_pool_destroy(p);
    tandem_device_close(dev);
}

static void test_validation(void **state) {
    (void)state;
    tandem_device *dev = open_host(0);
    tandem_pool *p = NULL;
    assert_int_equal(tandem_pool_create(dev, "v", 0, &p), TANDEM_OK);
    const int64_t ok[2] = {3, 4}, zero[2] = {3, 0}, neg[2] = {-1, 4}, seven[7] = {1, 1, 1, 1, 1, 1, 1};
    const int64_t huge[3] = {INT64_MAX / 2, 4, 4};
    tandem_tensor *t = NULL;
    assert_int_equal(tandem_pool_declare(p, "a", TANDEM_F32, 2, ok, TANDEM_PERSISTENT, 0, 0, &t), TANDEM_OK);
    assert_int_equal(tandem_pool_declare(p, "a", TANDEM_F32, 2, ok, TANDEM_PERSISTENT, 0, 0, &t),
                     TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "declared twice"));
    assert_int_equal(tandem_pool_declare(p, "b", TANDEM_F32, 2, zero, TANDEM_PERSISTENT, 0, 0, &t),
                     TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "[3, 0]"));
    assert_int_equal(tandem_pool_declare(p, "b", TANDEM_F32, 2, neg, TANDEM_PERSISTENT, 0, 0, &t),
                     TANDEM_E_INVALID);
    assert_int_equal(tandem_pool_declare(p, "b", TANDEM_F32, 7, seven, TANDEM_PERSISTENT, 0, 0, &t),
                     TANDEM_E_INVALID);
    assert_int_equal(tandem_pool_declare(p, "b", TANDEM_F32, 0, ok, TANDEM_PERSISTENT, 0, 0, &t),
                     TANDEM_E_INVALID);
    assert_int_equal(tandem_pool_declare(p, "b", TANDEM_F32, 2, ok, TANDEM_PER_STEP, 3, 2, &t),
                     TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "3..2"));
    assert_int_equal(tandem_pool_declare(p, "b", (tandem_dtype)42, 2, ok, TANDEM_PERSISTENT, 0, 0, &t),
                     TANDEM_E_INVALID);
    assert_int_equal(tandem_pool_declare(p, "b", TANDEM_F32, 3, huge, TANDEM_PERSISTENT, 0, 0, &t),
                     TANDEM_E_INVALID);
    assert_int_equal(tandem_pool_declare(p, "", TANDEM_F32, 2, ok, TANDEM_PERSISTENT, 0, 0, &t),
                     TANDEM_E_INVALID);
    /* many tensors: handles stay valid across record blocks */
    tandem_tensor *first = NULL;
    for (int i = 0; i < 300; i++) {
        char name[16];
        snprintf(name, sizeof name, "m%d", i);
        assert_int_equal(tandem_pool_declare(p, name, TANDEM_U8, 1, ok, TANDEM_PER_STEP, i % 5, i % 5 + 1,
                                             i == 0 ? &first : &t), TANDEM_OK);
    }
    assert_string_equal(tandem_tensor_name(first), "m0");
    assert_int_equal(tandem_pool_commit(p), TANDEM_OK);
    assert_int_equal(tandem_pool_declare(p, "late", TANDEM_F32, 2, ok, TANDEM_PERSISTENT, 0, 0, &t),
                     TANDEM_E_STATE);
    assert_non_null(strstr(tandem_last_error(), "after commit"));
    assert_null(t);
    tandem_pool_destroy(p);
    tandem_device_close(dev);
}

static void test_offline_pool(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_pool offline")};
    static const struct { tandem_backend b; size_t align; } cases[] = {
        {TANDEM_BACKEND_CUDA, 256}, {TANDEM_BACKEND_HOST, 64}};
    for (int c = 0; c < 2; c++) {
        tandem_pool *p = NULL;
        assert_int_equal(tandem_pool_create_offline("plan", cases[c].b, 0, &p), TANDEM_OK);
        tandem_tensor *ts[MAX_T];
        life lf[MAX_T];
        int n = declare_random(&r, p, ts, lf);
        assert_int_equal(tandem_pool_plan(p), TANDEM_OK);
        for (int i = 0; i < n; i++) {
            assert_int_equal(tandem_tensor_offset(ts[i]) % cases[c].align, 0);
            assert_int_equal(tandem_tensor_addr(ts[i]), 0);
            assert_null(tandem_tensor_device(ts[i]));
        }
        tandem_pool_stats s;
        tandem_pool_get_stats(p, &s);
        assert_int_equal(s.arena_bytes % cases[c].align, 0);
        char rep[4096];
        size_t len = tandem_pool_report(p, rep, sizeof rep);
        assert_int_equal(strlen(rep), len < sizeof rep ? len : sizeof rep - 1);
        assert_non_null(strstr(rep, "planning only"));
        assert_non_null(strstr(rep, "largest tensors"));
        assert_int_equal(tandem_pool_commit(p), TANDEM_E_STATE);
        tandem_pool_destroy(p);
    }
}

/* The arenas a config implies: shapes from the config, the feature chain overlaid. */
static void test_layout_from_config(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_pool layout")};
    for (int round = 0; round < 10; round++) {
        tandem_config cfg;
        tandem_config_init(&cfg);
        char v[32];
        snprintf(v, sizeof v, "%d", (int)tandem_rng_int(&r, 1, 64));
        assert_int_equal(tandem_config_set(&cfg, "batch_size", v), TANDEM_OK);
        snprintf(v, sizeof v, "%d", (int)tandem_rng_int(&r, 2, 16));
        assert_int_equal(tandem_config_set(&cfg, "prefetch_buffer_size", v), TANDEM_OK);
        assert_int_equal(tandem_config_set(&cfg, "model_size", round % 2 ? "base" : "tiny"), TANDEM_OK);
        tandem_pool *data = NULL, *model = NULL;
        assert_int_equal(tandem_pool_create_offline("data", TANDEM_BACKEND_CUDA, 0, &data), TANDEM_OK);
        assert_int_equal(tandem_pool_create_offline("model", TANDEM_BACKEND_CUDA, 0, &model), TANDEM_OK);
        tandem_layout l;
        assert_int_equal(tandem_layout_declare(&cfg, data, model, &l), TANDEM_OK);
        assert_int_equal(tandem_pool_plan(data), TANDEM_OK);
        assert_int_equal(tandem_pool_plan(model), TANDEM_OK);

        const size_t b = (size_t)cfg.batch_size, f = (size_t)cfg.max_frames, t = (size_t)cfg.max_text;
        const size_t spec = b * f * TANDEM_MEL_N_BINS * 4, lin = b * f * TANDEM_MEL_N_MELS * 4;
        const size_t mels = b * f * TANDEM_MEL_N_MELS * 4, audio = b * f * TANDEM_MEL_HOP * 4;
        /* the data arena is the feature path's own declaration (runtime/audio/mel_device.h) */
        assert_int_equal(tandem_tensor_bytes(l.mel.mag), spec);
        assert_int_equal(tandem_tensor_bytes(l.mel.mel_lin), lin);
        assert_int_equal(tandem_tensor_bytes(l.mel.mel), mels);
        assert_int_equal(tandem_tensor_bytes(l.mel.audio), audio);
        assert_int_equal(tandem_tensor_bytes(l.slot[0].tokens), b * t * 4);
        assert_int_equal(tandem_tensor_bytes(l.slot[0].frame_mask), b * f * 4);
        assert_int_equal(tandem_tensor_bytes(l.slot[0].mels), tandem_tensor_bytes(l.mel.mel));
        assert_int_equal(tandem_tensor_bytes(l.slot[0].frame_mask), tandem_tensor_bytes(l.mel.mask));
        assert_int_equal(tandem_tensor_bytes(l.slot[0].stop_targets), tandem_tensor_bytes(l.mel.stop));
        assert_int_equal(tandem_tensor_bytes(l.slot[0].frame_lengths), tandem_tensor_bytes(l.mel.frames));
        tandem_pool_stats s;
        tandem_pool_get_stats(data, &s);
        size_t r256 = 256;
        /* |STFT| (ops 0..1) and linear mels (1..2) overlap at op 1: both live at the peak */
        assert_int_equal(s.per_step_peak, (spec + r256 - 1) / r256 * r256 + (lin + r256 - 1) / r256 * r256);
        /* model: only the ring so far, n_slots x one batch, each tensor rounded to 256 B */
        tandem_pool_get_stats(model, &s);
        assert_int_equal(s.tensor_count, 6 * cfg.prefetch_buffer_size);
        size_t slot = 0;
        const size_t parts[6] = {b * t * 4, b * 4, mels, b * f * 4, b * f * 4, b * 4};
        for (int i = 0; i < 6; i++) slot += (parts[i] + r256 - 1) / r256 * r256;
        assert_int_equal(s.persistent_bytes, slot * (size_t)cfg.prefetch_buffer_size);
        assert_true(tandem_staging_total(&l.staging, 0) >= 2 * (audio + b * t * 4) + (size_t)l.n_slots * mels);
        tandem_pool_destroy(data);
        tandem_pool_destroy(model);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_addresses),
        cmocka_unit_test(test_roundtrip_and_copies),
        cmocka_unit_test(test_copy_without_peer),
        cmocka_unit_test(test_zero_allocation_after_commit),
        cmocka_unit_test(test_over_budget),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_offline_pool),
        cmocka_unit_test(test_layout_from_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
