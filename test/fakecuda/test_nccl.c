/* test_nccl.c — the cuda backend's collectives (platform/cuda/nccl.c, the coll_* entries of
 * platform/device.h) through the stand-in libnccl.so.2 and driver (test/fakecuda/fc_nccl.c):
 *   - all-reduce sum of f32 and bf16 over 2 ranks (one host thread each, ncclCommInitRank) and
 *     3 ranks (one thread, ncclCommInitAll + a group), random inputs, outputs poisoned first,
 *     compared with a double reference (f32: 1e-6 relative; bf16: half an ulp of bf16 plus
 *     float rounding), every rank's output bit-identical; counts over one staging chunk;
 *   - broadcast from a non-zero root;
 *   - 2 processes (fresh processes through exec of this binary: the stand-in driver's worker
 *     threads do not survive fork) all-reducing through the shared-memory rendezvous;
 *   - each strictness rejection: count, type, root, call order across ranks (the asynchronous
 *     error on every rank), a wrong communicator (timeout), a bad root, a host pointer, an
 *     unsupported op and type, a stale communicator, nranks disagreeing at init;
 *   - a killed rank: the survivor fails with "died" well within the bound;
 *   - loading: a missing library and a too-old version are refused naming what was found. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform/cuda/nccl.h"
#include "platform/cuda/nccl_api.h"
#include "platform/device.h"
#include "platform/os/log.h"
#include "runtime/core/dev.h"
#include "test/fixtures.h"
#include "test/testutil.h"

#define DRIVER TANDEM_FAKECUDA_DIR "/libcuda.so.1"
#define LIBNCCL TANDEM_FAKECUDA_DIR "/libnccl.so.2"
#define BIG 300000 /* f32 elements: over the stand-in's 1 MiB staging chunk */

static char self_path[4096];
static int (*fc_error_count)(void);

/* ---- helpers ---- */

static void use_driver(void) {
    tandem_runtime_options o;
    tandem_runtime_options_init(&o);
    o.cuda_driver = DRIVER;
    o.cublaslt = TANDEM_FAKECUDA_DIR "/libcublasLt.so.13";
    CHECK(tandem_runtime_set_options(&o));
}

static uint64_t rng_state;
static float frand(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) / (double)(1u << 24)) * 2.0f - 1.0f;
}
static uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static double from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Rank r's input for a run with this seed: n elements of type t (host bytes). */
static void *make_input(uint64_t seed, int r, size_t n, tandem_dtype t) {
    rng_state = seed * 1000003u + (uint64_t)r * 7919u + 1;
    size_t es = t == TANDEM_F32 ? 4 : 2;
    unsigned char *p = malloc(n * es);
    for (size_t i = 0; i < n; i++) {
        float v = frand();
        if (t == TANDEM_F32) memcpy(p + 4 * i, &v, 4);
        else {
            uint16_t h = to_bf16(v);
            memcpy(p + 2 * i, &h, 2);
        }
    }
    return p;
}

/* Compare out (type t, n elements) with the double sum of the nranks inputs. */
static void check_sum(const void *out, uint64_t seed, int nranks, size_t n, tandem_dtype t) {
    double *ref = calloc(n, sizeof *ref);
    for (int r = 0; r < nranks; r++) {
        unsigned char *in = make_input(seed, r, n, t);
        for (size_t i = 0; i < n; i++) {
            if (t == TANDEM_F32) {
                float v;
                memcpy(&v, in + 4 * i, 4);
                ref[i] += v;
            } else {
                uint16_t h;
                memcpy(&h, in + 2 * i, 2);
                ref[i] += from_bf16(h);
            }
        }
        free(in);
    }
    for (size_t i = 0; i < n; i++) {
        double got;
        if (t == TANDEM_F32) {
            float v;
            memcpy(&v, (const unsigned char *)out + 4 * i, 4);
            got = v;
        } else {
            uint16_t h;
            memcpy(&h, (const unsigned char *)out + 2 * i, 2);
            got = from_bf16(h);
        }
        /* f32: nranks-1 float additions; bf16: those and one rounding to 8 bits of mantissa */
        double tol = (t == TANDEM_F32 ? 4e-7 * nranks : 1.0 / 256) * (fabs(ref[i]) + 1e-3) + 1e-6 * nranks;
        if (!(fabs(got - ref[i]) <= tol)) {
            fprintf(stderr, "element %zu: got %.9g, expected %.9g (tolerance %.3g)\n", i, got, ref[i], tol);
            fail();
        }
    }
    free(ref);
}

/* One rank: device, stream, send and recv buffers. */
typedef struct rank_io {
    tandem_device *dev;
    tandem_stream s;
    tandem_coll *c;
    tandem_dptr send, recv;
    size_t bytes;
} rank_io;

static void io_open(rank_io *io, int ordinal, size_t bytes) {
    memset(io, 0, sizeof *io);
    CHECK(tandem_cuda_device_open(ordinal, &io->dev));
    CHECK(io->dev->ops->stream_create(io->dev, &io->s));
    io->s.dev = io->dev;
    io->bytes = bytes;
    CHECK(io->dev->ops->mem_alloc(io->dev, bytes ? bytes : 4, &io->send));
    CHECK(io->dev->ops->mem_alloc(io->dev, bytes ? bytes : 4, &io->recv));
}

static void io_close(rank_io *io) {
    if (io->c) io->dev->ops->coll_close(io->c);
    io->dev->ops->mem_free(io->dev, io->send);
    io->dev->ops->mem_free(io->dev, io->recv);
    io->dev->ops->stream_destroy(&io->s);
    io->dev->ops->close(io->dev);
}

/* Upload rank r's input and NaN-poison recv. */
static void io_fill(rank_io *io, uint64_t seed, int r, size_t n, tandem_dtype t) {
    void *in = make_input(seed, r, n, t);
    size_t bytes = n * (t == TANDEM_F32 ? 4 : 2);
    unsigned char *poison = malloc(bytes ? bytes : 1);
    memset(poison, 0xff, bytes); /* NaN in f32 and bf16 */
    CHECK(io->dev->ops->copy_h2d(&io->s, io->send, in, bytes));
    CHECK(io->dev->ops->copy_h2d(&io->s, io->recv, poison, bytes));
    CHECK(io->dev->ops->stream_sync(&io->s));
    free(in);
    free(poison);
}

static void *io_result(rank_io *io, size_t bytes) {
    void *out = malloc(bytes ? bytes : 1);
    CHECK(io->dev->ops->stream_sync(&io->s));
    CHECK(io->dev->ops->coll_check(io->c));
    CHECK(io->dev->ops->copy_d2h(&io->s, out, io->recv, bytes));
    CHECK(io->dev->ops->stream_sync(&io->s));
    return out;
}

/* ---- 2 ranks, a host thread each ---- */

typedef struct thread_rank {
    rank_io io;
    int rank, nranks;
    tandem_coll_id id;
    tandem_dtype t;
    size_t n;
    uint64_t seed;
    void *out;
    tandem_status st;
} thread_rank;

static void *rank_thread(void *arg) {
    thread_rank *tr = arg;
    tr->st = tr->io.dev->ops->coll_open(tr->io.dev, &tr->id, tr->nranks, tr->rank, &tr->io.c);
    if (tr->st != TANDEM_OK) return NULL;
    tr->st = tr->io.dev->ops->coll_all_reduce_sum(tr->io.c, &tr->io.s, tr->io.send, tr->io.recv, tr->n, tr->t);
    if (tr->st == TANDEM_OK) tr->out = io_result(&tr->io, tr->n * (tr->t == TANDEM_F32 ? 4 : 2));
    return NULL;
}

static void two_threads(tandem_dtype t, size_t n, uint64_t seed) {
    thread_rank tr[2];
    pthread_t th[2];
    int before = fc_error_count();
    for (int r = 0; r < 2; r++) {
        memset(&tr[r], 0, sizeof tr[r]);
        io_open(&tr[r].io, r, n * 4);
        io_fill(&tr[r].io, seed, r, n, t);
        tr[r].rank = r;
        tr[r].nranks = 2;
        tr[r].t = t;
        tr[r].n = n;
    }
    CHECK(tr[0].io.dev->ops->coll_unique_id(tr[0].io.dev, &tr[0].id));
    tr[1].id = tr[0].id;
    for (int r = 0; r < 2; r++) assert_int_equal(pthread_create(&th[r], NULL, rank_thread, &tr[r]), 0);
    for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
    for (int r = 0; r < 2; r++) {
        if (tr[r].st != TANDEM_OK) fprintf(stderr, "rank %d: %s\n", r, tandem_last_error());
        assert_int_equal(tr[r].st, TANDEM_OK);
    }
    check_sum(tr[0].out, seed, 2, n, t);
    assert_memory_equal(tr[0].out, tr[1].out, n * (t == TANDEM_F32 ? 4 : 2));
    for (int r = 0; r < 2; r++) {
        free(tr[r].out);
        io_close(&tr[r].io);
    }
    assert_int_equal(fc_error_count(), before);
}

static void test_two_threads_f32(void **state) {
    (void)state;
    two_threads(TANDEM_F32, BIG, 11);
}
static void test_two_threads_bf16(void **state) {
    (void)state;
    two_threads(TANDEM_BF16, 1000, 12);
}

/* ---- 3 ranks from one thread: open_local + group ---- */

static void three_local(tandem_dtype t, size_t n, uint64_t seed) {
    rank_io io[3];
    tandem_device *devs[3];
    tandem_coll *c[3];
    int before = fc_error_count();
    for (int r = 0; r < 3; r++) {
        io_open(&io[r], r, n * 4);
        io_fill(&io[r], seed, r, n, t);
        devs[r] = io[r].dev;
    }
    CHECK(devs[0]->ops->coll_open_local(devs, 3, c));
    for (int r = 0; r < 3; r++) io[r].c = c[r];
    CHECK(devs[0]->ops->coll_group(1));
    for (int r = 0; r < 3; r++)
        CHECK(devs[r]->ops->coll_all_reduce_sum(c[r], &io[r].s, io[r].send, io[r].recv, n, t));
    CHECK(devs[0]->ops->coll_group(0));
    void *out[3];
    for (int r = 0; r < 3; r++) out[r] = io_result(&io[r], n * (t == TANDEM_F32 ? 4 : 2));
    check_sum(out[0], seed, 3, n, t);
    for (int r = 1; r < 3; r++) assert_memory_equal(out[0], out[r], n * (t == TANDEM_F32 ? 4 : 2));
    /* broadcast from rank 2, in place on the others' recv */
    CHECK(devs[0]->ops->coll_group(1));
    for (int r = 0; r < 3; r++)
        CHECK(devs[r]->ops->coll_broadcast(c[r], &io[r].s, io[r].send, io[r].recv, n, t, 2));
    CHECK(devs[0]->ops->coll_group(0));
    void *want = make_input(seed, 2, n, t);
    for (int r = 0; r < 3; r++) {
        void *b = io_result(&io[r], n * (t == TANDEM_F32 ? 4 : 2));
        assert_memory_equal(b, want, n * (t == TANDEM_F32 ? 4 : 2));
        free(b);
        free(out[r]);
    }
    free(want);
    for (int r = 0; r < 3; r++) io_close(&io[r]);
    assert_int_equal(fc_error_count(), before);
}

static void test_three_local_f32(void **state) {
    (void)state;
    three_local(TANDEM_F32, BIG, 21);
}
static void test_three_local_bf16(void **state) {
    (void)state;
    three_local(TANDEM_BF16, 4097, 22);
}

/* ---- strictness: two local ranks calling differently ---- */

typedef enum { MIS_COUNT, MIS_TYPE, MIS_ROOT, MIS_ORDER } mismatch;

/* Rank 0 and rank 1 make different calls; both must fail with the asynchronous error naming
 * `what`, outputs untouched (still NaN), and the comm stays failed. */
static void rejected_mismatch(mismatch m, const char *what) {
    rank_io io[2];
    tandem_device *devs[2];
    tandem_coll *c[2];
    size_t n = 64;
    for (int r = 0; r < 2; r++) {
        io_open(&io[r], r, n * 4 + 4);
        io_fill(&io[r], 5, r, n, TANDEM_F32);
        devs[r] = io[r].dev;
    }
    CHECK(devs[0]->ops->coll_open_local(devs, 2, c));
    int before = fc_error_count();
    CHECK(devs[0]->ops->coll_group(1));
    for (int r = 0; r < 2; r++) {
        io[r].c = c[r];
        tandem_dtype t = m == MIS_TYPE && r == 1 ? TANDEM_BF16 : TANDEM_F32;
        size_t cnt = m == MIS_COUNT && r == 1 ? n + 1 : n;
        if (m == MIS_ROOT) CHECK(devs[r]->ops->coll_broadcast(c[r], &io[r].s, io[r].send, io[r].recv, n, t, r));
        else if (m == MIS_ORDER && r == 1)
            CHECK(devs[r]->ops->coll_broadcast(c[r], &io[r].s, io[r].send, io[r].recv, n, t, 0));
        else CHECK(devs[r]->ops->coll_all_reduce_sum(c[r], &io[r].s, io[r].send, io[r].recv, cnt, t));
    }
    CHECK(devs[0]->ops->coll_group(0));
    for (int r = 0; r < 2; r++) {
        CHECK(devs[r]->ops->stream_sync(&io[r].s));
        tandem_status st = devs[r]->ops->coll_check(c[r]);
        assert_int_equal(st, TANDEM_E_DEVICE);
        const char *e = tandem_last_error();
        if (!strstr(e, what) || !strstr(e, "invalid usage")) {
            fprintf(stderr, "rank %d: expected \"%s\" in: %s\n", r, what, e);
            fail();
        }
        float out[4];
        CHECK(devs[r]->ops->copy_d2h(&io[r].s, out, io[r].recv, sizeof out));
        CHECK(devs[r]->ops->stream_sync(&io[r].s));
        assert_true(isnan(out[0]) && isnan(out[3]));
        /* failed for good: the next call is refused at once */
        assert_int_not_equal(devs[r]->ops->coll_all_reduce_sum(c[r], &io[r].s, io[r].send, io[r].recv, n,
                                                               TANDEM_F32), TANDEM_OK);
    }
    assert_true(fc_error_count() - before >= 2); /* one line per rank at least */
    for (int r = 0; r < 2; r++) io_close(&io[r]);
}

static void test_reject_count(void **state) {
    (void)state;
    rejected_mismatch(MIS_COUNT, "count: rank 0 passed 64 elements, rank 1 passed 65");
}
static void test_reject_type(void **state) {
    (void)state;
    rejected_mismatch(MIS_TYPE, "datatype: rank 0 passed 7, rank 1 passed 9");
}
static void test_reject_root(void **state) {
    (void)state;
    rejected_mismatch(MIS_ROOT, "root: rank 0 passed 0, rank 1 passed 1");
}
static void test_reject_order(void **state) {
    (void)state;
    rejected_mismatch(MIS_ORDER, "call order: rank 0's collective #1 is ncclAllReduce, rank 1's #1 is ncclBroadcast");
}

/* Rank 0 of group A and rank 1 of group B: neither partner comes; both time out naming the
 * rank that did not arrive. TANDEM_FAKENCCL_TIMEOUT_MS is 1500 for this test. */
static void test_reject_wrong_comm(void **state) {
    (void)state;
    setenv("TANDEM_FAKENCCL_TIMEOUT_MS", "1500", 1);
    rank_io io[2];
    tandem_device *devs[2];
    tandem_coll *a[2], *b[2];
    for (int r = 0; r < 2; r++) {
        io_open(&io[r], r, 64);
        io_fill(&io[r], 6, r, 16, TANDEM_F32);
        devs[r] = io[r].dev;
    }
    CHECK(devs[0]->ops->coll_open_local(devs, 2, a));
    CHECK(devs[0]->ops->coll_open_local(devs, 2, b));
    int before = fc_error_count();
    CHECK(devs[0]->ops->coll_all_reduce_sum(a[0], &io[0].s, io[0].send, io[0].recv, 16, TANDEM_F32));
    CHECK(devs[1]->ops->coll_all_reduce_sum(b[1], &io[1].s, io[1].send, io[1].recv, 16, TANDEM_F32));
    CHECK(devs[0]->ops->stream_sync(&io[0].s));
    CHECK(devs[1]->ops->stream_sync(&io[1].s));
    assert_int_equal(devs[0]->ops->coll_check(a[0]), TANDEM_E_DEVICE);
    assert_non_null(strstr(tandem_last_error(), "rank 1 did not reach ncclAllReduce #1 within 1500 ms"));
    assert_int_equal(devs[1]->ops->coll_check(b[1]), TANDEM_E_DEVICE);
    assert_non_null(strstr(tandem_last_error(), "rank 0 did not reach ncclAllReduce #1"));
    assert_int_equal(fc_error_count() - before, 2);
    for (int r = 0; r < 2; r++) {
        devs[r]->ops->coll_abort(a[r]);
        devs[r]->ops->coll_abort(b[r]);
    }
    for (int r = 0; r < 2; r++) io_close(&io[r]);
    unsetenv("TANDEM_FAKENCCL_TIMEOUT_MS");
}

/* Immediate rejections (the call returns the error): a root out of range, a host pointer, a
 * stale comm; an op and a type the stand-in does not implement (straight through the library). */
static void test_reject_immediate(void **state) {
    (void)state;
    rank_io io[2];
    tandem_device *devs[2];
    tandem_coll *c[2];
    for (int r = 0; r < 2; r++) {
        io_open(&io[r], r, 64);
        devs[r] = io[r].dev;
    }
    CHECK(devs[0]->ops->coll_open_local(devs, 2, c));
    int before = fc_error_count();
    assert_int_equal(devs[0]->ops->coll_broadcast(c[0], &io[0].s, io[0].send, io[0].recv, 4, TANDEM_F32, 2),
                     TANDEM_E_DEVICE);
    assert_non_null(strstr(tandem_last_error(), "root 2: expected 0..1"));
    float host[4];
    assert_int_equal(devs[0]->ops->coll_all_reduce_sum(c[0], &io[0].s, (tandem_dptr)(uintptr_t)host, io[0].recv, 4,
                                                       TANDEM_F32), TANDEM_E_DEVICE);
    assert_non_null(strstr(tandem_last_error(), "sendbuff"));
    /* rank 1's buffer on rank 0's device context */
    assert_int_equal(devs[0]->ops->coll_all_reduce_sum(c[0], &io[0].s, io[0].send, io[1].recv, 4, TANDEM_F32),
                     TANDEM_E_DEVICE);
    assert_non_null(strstr(tandem_last_error(), "recvbuff"));
    assert_int_equal(fc_error_count() - before, 3);

    void *h = dlopen(LIBNCCL, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    tandem_pfn_ncclAllReduce ar;
    tandem_pfn_ncclCommInitAll init_all;
    tandem_pfn_ncclCommDestroy destroy;
    tandem_pfn_ncclGetLastError last;
    tandem_pfn_ncclCommInitRank init_rank;
    tandem_pfn_ncclGetUniqueId get_id;
    *(void **)&ar = dlsym(h, "ncclAllReduce");
    *(void **)&init_all = dlsym(h, "ncclCommInitAll");
    *(void **)&destroy = dlsym(h, "ncclCommDestroy");
    *(void **)&last = dlsym(h, "ncclGetLastError");
    *(void **)&init_rank = dlsym(h, "ncclCommInitRank");
    *(void **)&get_id = dlsym(h, "ncclGetUniqueId");
    ncclComm_t raw[2];
    int ords[2] = {0, 1};
    assert_int_equal(init_all(raw, 2, ords), ncclSuccess);
    assert_int_equal(ar(NULL, NULL, 4, ncclFloat32, ncclMax, raw[0], NULL), ncclInvalidArgument);
    assert_non_null(strstr(last(raw[0]), "implements ncclSum (0) only"));
    assert_int_equal(ar(NULL, NULL, 4, ncclInt32, ncclSum, raw[0], NULL), ncclInvalidArgument);
    assert_non_null(strstr(last(raw[0]), "datatype 2"));
    assert_int_equal(destroy(raw[0]), ncclSuccess);
    assert_int_equal(ar(NULL, NULL, 4, ncclFloat32, ncclSum, raw[0], NULL), ncclInvalidArgument);
    assert_non_null(strstr(last(NULL), "not a live communicator"));
    assert_int_equal(destroy(raw[1]), ncclSuccess);
    /* nobody else joins: the init times out naming the missing rank */
    tandem_pfn_ncclGroupStart group_start;
    tandem_pfn_ncclGroupEnd group_end;
    *(void **)&group_start = dlsym(h, "ncclGroupStart");
    *(void **)&group_end = dlsym(h, "ncclGroupEnd");
    ncclUniqueId id;
    ncclComm_t x, y;
    setenv("TANDEM_FAKENCCL_TIMEOUT_MS", "300", 1);
    assert_int_equal(get_id(&id), ncclSuccess);
    assert_int_equal(init_rank(&x, 2, id, 0), ncclRemoteError);
    assert_non_null(strstr(last(NULL), "rank 1 did not reach ncclCommInitRank within 300 ms"));
    /* nranks disagreeing, a rank taken twice (inside a group: the joins do not wait) */
    assert_int_equal(get_id(&id), ncclSuccess);
    assert_int_equal(group_start(), ncclSuccess);
    assert_int_equal(init_rank(&x, 2, id, 0), ncclSuccess);
    assert_int_equal(init_rank(&y, 3, id, 1), ncclInvalidUsage);
    assert_non_null(strstr(last(NULL), "rank 1 says nranks 3, an earlier rank said 2"));
    assert_int_equal(init_rank(&y, 2, id, 0), ncclInvalidUsage);
    assert_non_null(strstr(last(NULL), "rank 0 joined twice"));
    assert_int_equal(group_end(), ncclRemoteError); /* rank 1 never came */
    assert_int_equal(group_end(), ncclInvalidUsage); /* no group open */
    unsetenv("TANDEM_FAKENCCL_TIMEOUT_MS");
    assert_int_equal(fc_error_count() - before, 11);
    for (int r = 0; r < 2; r++) io[r].c = c[r]; /* closed with the rank */
    for (int r = 0; r < 2; r++) io_close(&io[r]);
}

/* The device API (runtime/core/dev.h) on committed tensors: an in-place all-reduce of a range
 * [off, off + m) of a gradient-like tensor on 2 devices sums that range only; a range past the
 * tensor's end is refused before reaching NCCL. */
static void test_dev_api_tensor_range(void **state) {
    (void)state;
    enum { N = 5000, OFF = 1000, M = 3000 };
    tandem_device *dev[2];
    tandem_stream s[2];
    tandem_pool *pool[2];
    tandem_tensor *t[2];
    tandem_coll *c[2];
    int before = fc_error_count();
    int64_t shape[1] = {N};
    for (int r = 0; r < 2; r++) {
        CHECK(tandem_cuda_device_open(r, &dev[r]));
        CHECK(dev[r]->ops->stream_create(dev[r], &s[r]));
        s[r].dev = dev[r];
        CHECK(tandem_pool_create(dev[r], "grads", 0, &pool[r]));
        CHECK(tandem_pool_declare(pool[r], "grad", TANDEM_F32, 1, shape, TANDEM_PERSISTENT, 0, 0, &t[r]));
        CHECK(tandem_pool_commit(pool[r]));
        float *in = make_input(41, r, N, TANDEM_F32);
        CHECK(tandem_dev_upload(&s[r], t[r], 0, in, N * 4));
        free(in);
    }
    CHECK(tandem_dev_coll_open_local(dev, 2, c));
    CHECK(tandem_dev_coll_group(dev[0], 1));
    for (int r = 0; r < 2; r++) CHECK(tandem_dev_all_reduce_sum(c[r], &s[r], t[r], OFF, M));
    CHECK(tandem_dev_coll_group(dev[0], 0));
    assert_int_equal(tandem_dev_all_reduce_sum(c[0], &s[0], t[0], OFF, N), TANDEM_E_INVALID);
    float *mine[2], *out = malloc(N * 4);
    for (int r = 0; r < 2; r++) mine[r] = make_input(41, r, N, TANDEM_F32);
    for (int r = 0; r < 2; r++) {
        CHECK(dev[r]->ops->stream_sync(&s[r]));
        CHECK(tandem_dev_coll_check(dev[r], c[r]));
        CHECK(tandem_dev_download(&s[r], out, t[r], 0, N * 4));
        CHECK(dev[r]->ops->stream_sync(&s[r]));
        for (int i = 0; i < N; i++) {
            float want = i >= OFF && i < OFF + M ? mine[0][i] + mine[1][i] : mine[r][i];
            if (out[i] != want) fail_msg("rank %d element %d: %g, expected %g", r, i, out[i], want);
        }
    }
    for (int r = 0; r < 2; r++) {
        free(mine[r]);
        tandem_dev_coll_close(dev[r], c[r], 0);
        tandem_pool_destroy(pool[r]);
        dev[r]->ops->stream_destroy(&s[r]);
        dev[r]->ops->close(dev[r]);
    }
    free(out);
    assert_int_equal(fc_error_count(), before);
}

/* The host backend's collectives are MPI's (platform/host/host_mpi.c): the group is the
 * launcher's world, so the id carries nothing and devices of one process cannot be separate
 * ranks. A build without MPI says so and how to get it. (Joining needs mpirun: test_dp,
 * check_dp_2_ranks.) */
static void test_host_collectives(void **state) {
    (void)state;
    tandem_device *h = NULL;
    CHECK(tandem_host_device_open(0, &h));
    tandem_coll_id id;
    memset(&id, 0x5a, sizeof id);
    tandem_coll *c = (tandem_coll *)&id;
    const tandem_status st = tandem_dev_coll_unique_id(h, &id);
    if (st == TANDEM_OK) { /* built with MPI */
        for (size_t i = 0; i < sizeof id.bytes; i++) assert_int_equal(id.bytes[i], 0);
        assert_int_equal(tandem_dev_coll_open_local(&h, 1, &c), TANDEM_E_UNSUPPORTED);
        assert_null(c);
        assert_non_null(strstr(tandem_last_error(), "launch one process per rank with mpirun"));
    } else {
        assert_int_equal(st, TANDEM_E_UNSUPPORTED);
        assert_non_null(strstr(tandem_last_error(), "this build has no MPI; rebuild with `make MPI=1`"));
        assert_int_equal(tandem_dev_coll_open(h, &id, 2, 0, &c), TANDEM_E_UNSUPPORTED);
        assert_null(c);
    }
    h->ops->close(h);
}

/* ---- loading ---- */

static void test_load_errors(void **state) {
    (void)state;
    /* the process-wide load is once; the refusals are shown in fresh processes */
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' --load '%s/missing/libnccl.so.2'", self_path, TANDEM_FAKECUDA_DIR);
    int rc = system(cmd);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
    snprintf(cmd, sizeof cmd, "TANDEM_FAKENCCL_VERSION=21200 '%s' --load '%s'", self_path, LIBNCCL);
    rc = system(cmd);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
    CHECK(tandem_nccl_load(LIBNCCL));
    assert_int_equal(tandem_nccl_version(), 22809);
    assert_string_equal(tandem_nccl_describe(), LIBNCCL ": NCCL 2.28.9");
}

static int load_main(const char *lib) {
    tandem_status st = tandem_nccl_load(lib);
    const char *e = tandem_last_error();
    int missing = strstr(lib, "missing") != NULL;
    if (missing && st == TANDEM_E_NODRIVER && strstr(e, "dlopen(") && strstr(e, "NCCL 2.13 or newer is needed")) return 0;
    if (!missing && st == TANDEM_E_DEVICE && strstr(e, "is NCCL 2.12.0 (version code 21200)") &&
        strstr(e, "needs NCCL 2.13 (21300) or newer"))
        return 0;
    fprintf(stderr, "unexpected load outcome %d: %s\n", (int)st, e);
    return 1;
}

/* ---- processes ---- */

static void id_hex(const tandem_coll_id *id, char *out) {
    for (int i = 0; i < TANDEM_COLL_ID_BYTES; i++) sprintf(out + 2 * i, "%02x", id->bytes[i]);
}
static void id_parse(const char *s, tandem_coll_id *id) {
    for (int i = 0; i < TANDEM_COLL_ID_BYTES; i++) {
        unsigned v;
        sscanf(s + 2 * i, "%2x", &v);
        id->bytes[i] = (unsigned char)v;
    }
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A rank in its own process: "sum" all-reduces and checks; "die" (rank 1) is killed after
 * joining; rank 0 in "die" expects the error within 5 s (the timeout is 60 s). */
static int rank_main(int rank, const char *idhex, const char *mode) {
    use_driver();
    if (tandem_nccl_load(LIBNCCL) != TANDEM_OK) return 2;
    tandem_coll_id id;
    id_parse(idhex, &id);
    size_t n = BIG;
    rank_io io;
    io_open(&io, rank, n * 4);
    io_fill(&io, 31, rank, n, TANDEM_F32);
    if (io.dev->ops->coll_open(io.dev, &id, 2, rank, &io.c) != TANDEM_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, tandem_last_error());
        return 3;
    }
    if (strcmp(mode, "die") == 0 && rank == 1) raise(SIGKILL);
    double t0 = now_s();
    CHECK(io.dev->ops->coll_all_reduce_sum(io.c, &io.s, io.send, io.recv, n, TANDEM_F32));
    CHECK(io.dev->ops->stream_sync(&io.s));
    tandem_status st = io.dev->ops->coll_check(io.c);
    if (strcmp(mode, "die") == 0) {
        double took = now_s() - t0;
        const char *e = tandem_last_error();
        if (st == TANDEM_E_DEVICE && strstr(e, "rank 1 (pid ") && strstr(e, "died") && took < 5.0) {
            io.dev->ops->coll_abort(io.c);
            io.c = NULL;
            io_close(&io);
            return 0;
        }
        fprintf(stderr, "rank 0 after the kill: status %d after %.2f s: %s\n", (int)st, took, e);
        return 4;
    }
    if (st != TANDEM_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, tandem_last_error());
        return 5;
    }
    float *out = malloc(n * 4);
    CHECK(io.dev->ops->copy_d2h(&io.s, out, io.recv, n * 4));
    CHECK(io.dev->ops->stream_sync(&io.s));
    check_sum(out, 31, 2, n, TANDEM_F32);
    free(out);
    io_close(&io);
    return fc_error_count() == 0 ? 0 : 6;
}

static void two_processes(const char *mode, int *status) {
    tandem_coll_id id;
    CHECK(tandem_nccl_load(LIBNCCL));
    CHECK(tandem_cuda_coll_unique_id(NULL, &id));
    char hex[2 * TANDEM_COLL_ID_BYTES + 1];
    id_hex(&id, hex);
    pid_t pid[2];
    for (int r = 0; r < 2; r++) {
        pid[r] = fork();
        assert_true(pid[r] >= 0);
        if (pid[r] == 0) {
            char rs[8];
            snprintf(rs, sizeof rs, "%d", r);
            setenv("TANDEM_FAKENCCL_TIMEOUT_MS", "60000", 1);
            execl(self_path, self_path, "--rank", rs, hex, mode, (char *)NULL);
            _exit(127);
        }
    }
    for (int r = 0; r < 2; r++) {
        assert_int_equal(waitpid(pid[r], &status[r], 0), pid[r]);
        if (WIFSIGNALED(status[r])) fprintf(stderr, "rank %d: killed by signal %d\n", r, WTERMSIG(status[r]));
    }
}

static void test_two_processes(void **state) {
    (void)state;
    int st[2];
    two_processes("sum", st);
    for (int r = 0; r < 2; r++) {
        assert_true(WIFEXITED(st[r]));
        assert_int_equal(WEXITSTATUS(st[r]), 0);
    }
}

static void test_killed_rank(void **state) {
    (void)state;
    int st[2];
    two_processes("die", st);
    assert_true(WIFEXITED(st[0]));
    assert_int_equal(WEXITSTATUS(st[0]), 0);
    assert_true(WIFSIGNALED(st[1]) && WTERMSIG(st[1]) == SIGKILL);
}

int main(int argc, char **argv) {
    ssize_t k = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (k <= 0) return 2;
    self_path[k] = '\0';
    setenv("TANDEM_FAKECUDA_DEVICES", "3", 1);
    if (argc == 3 && strcmp(argv[1], "--load") == 0) return load_main(argv[2]);
    use_driver();
    void *drv = dlopen(DRIVER, RTLD_NOW);
    if (!drv) return 2;
    *(void **)&fc_error_count = dlsym(drv, "tandem_fakecuda_error_count");
    if (argc == 5 && strcmp(argv[1], "--rank") == 0) return rank_main(atoi(argv[2]), argv[3], argv[4]);
    /* the first load decides the library for the process: the stand-in, not a real one */
    if (tandem_nccl_load(LIBNCCL) != TANDEM_OK) {
        fprintf(stderr, "%s\n", tandem_last_error());
        return 2;
    }
    if (!tandem_test_have_fatbin()) { /* host-only build: the stand-in cannot open a CUDA device */
        printf("test_nccl: this build has no fatbin: only the load and host-backend checks run\n");
        const struct CMUnitTest few[] = {cmocka_unit_test(test_load_errors), cmocka_unit_test(test_host_collectives)};
        return cmocka_run_group_tests(few, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_errors),        cmocka_unit_test(test_two_threads_f32),
        cmocka_unit_test(test_two_threads_bf16),   cmocka_unit_test(test_three_local_f32),
        cmocka_unit_test(test_three_local_bf16),   cmocka_unit_test(test_reject_count),
        cmocka_unit_test(test_reject_type),        cmocka_unit_test(test_reject_root),
        cmocka_unit_test(test_reject_order),       cmocka_unit_test(test_reject_wrong_comm),
        cmocka_unit_test(test_reject_immediate),   cmocka_unit_test(test_two_processes),
        cmocka_unit_test(test_killed_rank),        cmocka_unit_test(test_host_collectives),
        cmocka_unit_test(test_dev_api_tensor_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
