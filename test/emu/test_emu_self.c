/* test_emu_self.c — the kernel emulator against its own planted kernels (planted.cu): planted
 * bugs must be caught and named (kernel, block, thread), and correct kernels must give the
 * answers of independent double-precision references computed here. */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "test/emu/emu_internal.h"
#include "test/emu/planted.h"
#include "kernels/registry.h"
#include "test/testutil.h"

static tandem_rng rng;

#define TRAMP(k, T)                                                                       \
    static void tr_##k(const void *p) {                                                   \
        T a;                                                                              \
        memcpy(&a, p, sizeof a);                                                          \
        k(a);                                                                             \
    }
TRAMP(tandem_kt_oob_write, tandem_kt_vec_args)
TRAMP(tandem_kt_oob_read, tandem_kt_vec_args)
TRAMP(tandem_kt_underrun, tandem_kt_vec_args)
TRAMP(tandem_kt_divergent_exit, tandem_kt_vec_args)
TRAMP(tandem_kt_divergent_sites, tandem_kt_vec_args)
TRAMP(tandem_kt_reverse_static, tandem_kt_vec_args)
TRAMP(tandem_kt_reverse_dynamic, tandem_kt_vec_args)
TRAMP(tandem_kt_dyn_overrun, tandem_kt_vec_args)
TRAMP(tandem_kt_reduce, tandem_kt_reduce_args)
TRAMP(tandem_kt_warp, tandem_kt_warp_args)
TRAMP(tandem_kt_badwarp, tandem_kt_badwarp_args)
TRAMP(tandem_kt_atomic, tandem_kt_atomic_args)
TRAMP(tandem_kt_mma, tandem_kt_mma_args)
TRAMP(tandem_kt_index, tandem_kt_index_args)
TRAMP(tandem_kt_deep, tandem_kt_vec_args)
TRAMP(tandem_kt_shift_race, tandem_kt_vec_args)

#define LAUNCH(k, d, a) tandem_emu_launch_fn(#k, tr_##k, (d), (a))

static tandem_launch_dims dims(unsigned grid, unsigned block, unsigned shmem) {
    tandem_launch_dims d;
    d.grid[0] = grid, d.grid[1] = d.grid[2] = 1;
    d.block[0] = block, d.block[1] = d.block[2] = 1;
    d.shmem = shmem;
    return d;
}

static unsigned ceil_div(unsigned a, unsigned b) { return (a + b - 1) / b; }

/* The launch must fail and its message contain every needle. */
static void expect_error(int rc, ...) {
    const char *err = tandem_emu_last_error();
    printf("  caught: %s\n", err);
    assert_int_not_equal(rc, 0);
    va_list ap;
    va_start(ap, rc);
    for (const char *needle; (needle = va_arg(ap, const char *)) != NULL;) {
        if (!strstr(err, needle)) {
            va_end(ap);
            fail_msg("error message lacks \"%s\": %s", needle, err);
        }
    }
    va_end(ap);
}

static void expect_ok(int rc) {
    if (rc != 0) fail_msg("launch failed: %s", tandem_emu_last_error());
}

static float *rand_floats(size_t n, float lo, float hi) {
    float *p = (float *)tandem_emu_buf_alloc(n * sizeof *p);
    assert_non_null(p);
    tandem_rng_fill(&rng, p, (int64_t)n, lo, hi);
    return p;
}

static const unsigned block_sizes[] = {32, 64, 96, 128, 256, 1024};
static unsigned pick_block(void) {
    return block_sizes[tandem_rng_int(&rng, 0, (int64_t)(sizeof block_sizes / sizeof *block_sizes) - 1)];
}

/* ---- memory checking ------------------------------------------------------------------------ */

static void test_oob_write_caught(void **state) {
    (void)state;
    for (int rep = 0; rep < 4; rep++) {
        unsigned block = pick_block(), n = (unsigned)tandem_rng_int(&rng, 1, 5000);
        float *out = (float *)tandem_emu_buf_alloc(n * sizeof(float));
        tandem_kt_vec_args a = {NULL, out, (int)n, 0};
        tandem_launch_dims d = dims(ceil_div(n + 1, block), block, 0);
        char who[160], off[64];
        /* element n is written by global thread n */
        snprintf(who, sizeof who, "kernel tandem_kt_oob_write block (%u,0,0) thread (%u,0,0): out-of-bounds write",
                 n / block, n % block);
        snprintf(off, sizeof off, "offset %u of buffer", n * 4);
        expect_error(LAUNCH(tandem_kt_oob_write, &d, &a), who, off, "0 bytes past its end", NULL);
        tandem_emu_buf_free(out);
    }
}

static void test_oob_read_caught(void **state) {
    (void)state;
    unsigned block = pick_block(), n = (unsigned)tandem_rng_int(&rng, 1, 5000);
    float *in = rand_floats(n, -1, 1), *out = rand_floats(n, 0, 0);
    tandem_kt_vec_args a = {in, out, (int)n, 0};
    tandem_launch_dims d = dims(ceil_div(n, block), block, 0);
    char who[160];
    snprintf(who, sizeof who, "block (%u,0,0) thread (%u,0,0): out-of-bounds read", (n - 1) / block,
             (n - 1) % block);
    expect_error(LAUNCH(tandem_kt_oob_read, &d, &a), "kernel tandem_kt_oob_read", who, NULL);
    tandem_emu_buf_free(in);
    tandem_emu_buf_free(out);
}

static void test_underrun_caught(void **state) {
    (void)state;
    unsigned n = 300;
    float *out = rand_floats(n, 0, 1);
    tandem_kt_vec_args a = {NULL, out, (int)n, 0};
    tandem_launch_dims d = dims(ceil_div(n, 128), 128, 0);
    expect_error(LAUNCH(tandem_kt_underrun, &d, &a), "kernel tandem_kt_underrun",
                 "4 bytes before its start", NULL);
    /* The canary was repaired: a correct launch on the same buffers passes again. */
    a.in = rand_floats(n, 0, 1);
    expect_ok(LAUNCH(tandem_kt_reverse_static, &d, &a));
    tandem_emu_buf_free((void *)a.in);
    tandem_emu_buf_free(out);
}

static void test_use_after_free_caught(void **state) {
    (void)state;
    float *out = rand_floats(64, 0, 1);
    tandem_emu_buf_free(out);
    tandem_kt_vec_args a = {NULL, out, 10, 0};
    tandem_launch_dims d = dims(1, 32, 0);
    expect_error(LAUNCH(tandem_kt_oob_write, &d, &a), "thread (0,0,0): out-of-bounds write",
                 "use after free", NULL);
}

static void test_buf_find(void **state) {
    (void)state;
    size_t bytes = (size_t)tandem_rng_int(&rng, 1, 100000);
    unsigned char *p = (unsigned char *)tandem_emu_buf_alloc(bytes);
    void *base = NULL;
    for (size_t i = 0; i < bytes; i++) assert_int_equal(p[i], 0xFF); /* poisoned */
    assert_int_equal(tandem_emu_buf_find(p + bytes - 1, &base), bytes);
    assert_ptr_equal(base, p);
    assert_int_equal(tandem_emu_buf_find(p + bytes, &base), 0);
    assert_int_equal(tandem_emu_buf_find(p - 1, &base), 0);
    tandem_emu_buf_free(p);
    assert_int_equal(tandem_emu_buf_find(p, &base), 0);
}

static void test_stack_overflow_caught(void **state) {
    (void)state;
    float *out = rand_floats(1, 0, 0);
    tandem_kt_vec_args a = {NULL, out, 10, 0};
    tandem_launch_dims d = dims(2, 64, 0);
    expect_ok(LAUNCH(tandem_kt_deep, &d, &a)); /* 10 KiB deep: fits */
    a.n = (int)(tandem_emu_stack_size() / 1024) + 64;
    expect_error(LAUNCH(tandem_kt_deep, &d, &a), "kernel tandem_kt_deep block (0,0,0) thread (0,0,0)",
                 "stack overflow", NULL);
    a.n = 10; /* and the stacks are usable again */
    expect_ok(LAUNCH(tandem_kt_deep, &d, &a));
    tandem_emu_buf_free(out);
}

/* ---- barriers and shared memory ----------------------------------------------------------- */

static void test_divergent_barrier_caught(void **state) {
    (void)state;
    float *in = rand_floats(256, -1, 1), *out = rand_floats(256, 0, 0);
    tandem_kt_vec_args a = {in, out, 256, 40};
    tandem_launch_dims d = dims(3, 64, 0);
    expect_error(LAUNCH(tandem_kt_divergent_exit, &d, &a),
                 "kernel tandem_kt_divergent_exit block (0,0,0) thread (40,0,0): divergent __syncthreads",
                 "40 other thread(s)", NULL);
    expect_error(LAUNCH(tandem_kt_divergent_sites, &d, &a), "kernel tandem_kt_divergent_sites block (0,0,0)",
                 "divergent __syncthreads", "planted.cu:", "different one at", NULL);
    /* cut = blockDim: no thread leaves early, so it passes */
    a.cut = 64;
    expect_ok(LAUNCH(tandem_kt_divergent_exit, &d, &a));
    for (int t = 0; t < 64; t++) assert_float_equal(out[t], in[(t + 1) % 64], 0);
    tandem_emu_buf_free(in);
    tandem_emu_buf_free(out);
}

/* Reversal within each block through shared memory is only right if __syncthreads orders every
 * thread's write before any thread's read (a fiber that ran ahead would read poison). */
static void check_reverse(const float *in, const float *out, unsigned n, unsigned block) {
    for (unsigned i = 0; i < n; i++) {
        unsigned b = i / block, t = i % block, src = b * block + (block - 1 - t);
        float want = src < n ? in[src] : 0.0f;
        if (out[i] != want) fail_msg("out[%u] = %g, want %g (n %u, block %u)", i, out[i], want, n, block);
    }
}

static void test_shared_memory_barrier_order(void **state) {
    (void)state;
    for (int rep = 0; rep < 6; rep++) {
        unsigned block = pick_block(), n = (unsigned)tandem_rng_int(&rng, 1, 6000);
        float *in = rand_floats(n, -10, 10), *out = rand_floats(n, 0, 0);
        tandem_kt_vec_args a = {in, out, (int)n, 0};
        tandem_launch_dims d = dims(ceil_div(n, block), block, 0);
        expect_ok(LAUNCH(tandem_kt_reverse_static, &d, &a));
        check_reverse(in, out, n, block);
        memset(out, 0xFF, n * sizeof *out);
        d.shmem = block * (unsigned)sizeof(float);
        expect_ok(LAUNCH(tandem_kt_reverse_dynamic, &d, &a));
        check_reverse(in, out, n, block);
        tandem_emu_buf_free(in);
        tandem_emu_buf_free(out);
    }
}

/* A missing barrier shows up as wrong results: the emulator does not always run the writer
 * of a shared-memory element before its reader. */
static void test_missing_barrier_exposed(void **state) {
    (void)state;
    unsigned block = 64, n = block * 4;
    float *in = rand_floats(n, 1, 2), *out = rand_floats(n, 0, 0);
    tandem_kt_vec_args a = {in, out, (int)n, 0};
    tandem_launch_dims d = dims(4, block, 0);
    expect_ok(LAUNCH(tandem_kt_shift_race, &d, &a)); /* no error is reported: the data is wrong */
    unsigned wrong_blocks = 0;
    for (unsigned b = 0; b < 4; b++) {
        int wrong = 0;
        for (unsigned t = 1; t < block; t++) wrong |= out[b * block + t] != in[b * block + t - 1];
        wrong_blocks += (unsigned)wrong;
    }
    printf("  blocks with wrong results without the barrier: %u of 4\n", wrong_blocks);
    assert_true(wrong_blocks >= 2);
    tandem_emu_buf_free(in);
    tandem_emu_buf_free(out);
}

static void test_dynamic_shared_overrun_caught(void **state) {
    (void)state;
    unsigned block = pick_block(), n = block * 2;
    float *out = rand_floats(n, 0, 0);
    tandem_kt_vec_args a = {NULL, out, (int)n, 0};
    tandem_launch_dims d = dims(2, block, block * 4);
    char who[128], off[96];
    snprintf(who, sizeof who, "block (0,0,0) thread (%u,0,0): out-of-bounds write", block - 1);
    snprintf(off, sizeof off, "offset %u of dynamic shared memory (%u bytes", block * 4, block * 4);
    expect_error(LAUNCH(tandem_kt_dyn_overrun, &d, &a), who, off, NULL);
    tandem_emu_buf_free(out);
}

/* ---- warps ---------------------------------------------------------------------------------- */

static void test_bad_shuffle_masks_caught(void **state) {
    (void)state;
    int *out = (int *)tandem_emu_buf_alloc(64 * sizeof(int));
    tandem_kt_badwarp_args a = {out, 0};
    tandem_launch_dims d = dims(1, 32, 0);
    a.variant = 0;
    expect_error(LAUNCH(tandem_kt_badwarp, &d, &a), "kernel tandem_kt_badwarp block (0,0,0) thread (0,0,0)",
                 "bad shuffle mask", "lane 5 (thread (5,0,0)), which has exited", NULL);
    a.variant = 1;
    expect_error(LAUNCH(tandem_kt_badwarp, &d, &a), "thread (16,0,0): bad shuffle mask",
                 "excludes the calling lane 16", NULL);
    a.variant = 2;
    expect_error(LAUNCH(tandem_kt_badwarp, &d, &a), "bad shuffle mask", "with mask 0x0000ffff", NULL);
    a.variant = 3;
    expect_error(LAUNCH(tandem_kt_badwarp, &d, &a), "thread (0,0,0): bad shuffle mask", "reads lane 20", NULL);
    a.variant = 4;
    expect_error(LAUNCH(tandem_kt_badwarp, &d, &a), "bad shuffle mask", "waits at __syncthreads instead", NULL);
    a.variant = 5;
    d = dims(1, 48, 0);
    expect_error(LAUNCH(tandem_kt_badwarp, &d, &a), "thread (32,0,0): bad shuffle mask",
                 "this warp has only 16 thread(s)", NULL);
    /* A correct partial-mask shuffle passes. */
    a.variant = 6;
    d = dims(1, 32, 0);
    expect_ok(LAUNCH(tandem_kt_badwarp, &d, &a));
    for (int t = 0; t < 32; t++) assert_int_equal(out[t], t < 16 ? (t ^ 8) * 10 : t * 10);
    tandem_emu_buf_free(out);
}

static void test_warp_ops(void **state) {
    (void)state;
    unsigned block = 64, grid = 3, n = block * grid;
    int *in = (int *)tandem_emu_buf_alloc(n * sizeof(int)), *scan = (int *)tandem_emu_buf_alloc(n * sizeof(int));
    int *bcast = (int *)tandem_emu_buf_alloc(n * sizeof(int)), *bfly = (int *)tandem_emu_buf_alloc(n * sizeof(int));
    unsigned *vote = (unsigned *)tandem_emu_buf_alloc(n / 32 * 3 * sizeof(unsigned));
    for (unsigned i = 0; i < n; i++) in[i] = (int)tandem_rng_int(&rng, -1000, 1000);
    /* warp 1: all odd, warp 2: all even, so any/all see both outcomes */
    for (unsigned i = 32; i < 64; i++) in[i] |= 1;
    for (unsigned i = 64; i < 96; i++) in[i] &= ~1;
    tandem_kt_warp_args a = {in, scan, bcast, bfly, vote, (int)n};
    tandem_launch_dims d = dims(grid, block, 0);
    expect_ok(LAUNCH(tandem_kt_warp, &d, &a));
    for (unsigned w = 0; w < n / 32; w++) {
        const int *x = in + w * 32;
        long long run = 0, total = 0;
        unsigned bal = 0;
        for (int l = 0; l < 32; l++) {
            total += x[l];
            if (x[l] & 1) bal |= 1u << l;
        }
        for (int l = 0; l < 32; l++) {
            run += x[l];
            assert_int_equal(scan[w * 32 + l], run);
            assert_int_equal(bcast[w * 32 + l], x[(unsigned)TANDEM_KT_BCAST_SRC(l) % 32]);
            assert_int_equal(bfly[w * 32 + l], total);
        }
        assert_int_equal(vote[w * 3 + 0], bal);
        assert_int_equal(vote[w * 3 + 1], bal != 0);
        assert_int_equal(vote[w * 3 + 2], bal == 0xffffffffu);
    }
    tandem_emu_buf_free(in);
    tandem_emu_buf_free(scan);
    tandem_emu_buf_free(bcast);
    tandem_emu_buf_free(bfly);
    tandem_emu_buf_free(vote);
}

/* The tensor-core product against a double loop over the same bf16 values; a divergent or
 * partial warp is an error. */
static void test_mma(void **state) {
    (void)state;
    tandem_bf16 *A = (tandem_bf16 *)tandem_emu_buf_alloc(256 * sizeof(tandem_bf16));
    tandem_bf16 *B = (tandem_bf16 *)tandem_emu_buf_alloc(128 * sizeof(tandem_bf16));
    float *C = rand_floats(128, -1, 1), *D = rand_floats(128, 0, 0);
    for (int i = 0; i < 256; i++) A[i] = tandem_f32_to_bf16(tandem_rng_uniform(&rng, -2, 2));
    for (int i = 0; i < 128; i++) B[i] = tandem_f32_to_bf16(tandem_rng_uniform(&rng, -2, 2));
    for (int i = 0; i < 128; i++) D[i] = NAN;
    tandem_kt_mma_args a = {A, B, C, D, 0};
    tandem_launch_dims d = dims(1, 32, 0);
    expect_ok(LAUNCH(tandem_kt_mma, &d, &a));
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 8; j++) {
            double ref = C[i * 8 + j];
            for (int k = 0; k < 16; k++)
                ref += (double)tandem_bf16_to_f32(A[i * 16 + k]) * tandem_bf16_to_f32(B[k * 8 + j]);
            assert_true(fabs(D[i * 8 + j] - ref) <= 1e-6 * (1.0 + fabs(ref)));
        }
    a.variant = 1;
    expect_error(LAUNCH(tandem_kt_mma, &d, &a), "tandem_mma_bf16_16816", "lane 3", "exited", NULL);
    a.variant = 0;
    d = dims(1, 16, 0);
    expect_error(LAUNCH(tandem_kt_mma, &d, &a), "tandem_mma_bf16_16816", "only 16 thread(s)", NULL);
    tandem_emu_buf_free(A);
    tandem_emu_buf_free(B);
    tandem_emu_buf_free(C);
    tandem_emu_buf_free(D);
}

static void run_reduce(unsigned n, unsigned block) {
    unsigned grid = ceil_div(n, 2 * block);
    float *x = rand_floats(n, -1, 1), *partial = rand_floats(grid, 0, 0), *total = rand_floats(1, 0, 0);
    *total = 0.0f;
    tandem_kt_reduce_args a = {x, partial, total, (int)n};
    tandem_launch_dims d = dims(grid, block, 0);
    expect_ok(LAUNCH(tandem_kt_reduce, &d, &a));
    double all = 0, err = 0, norm = 0;
    for (unsigned b = 0; b < grid; b++) {
        double s = 0;
        for (unsigned i = b * 2 * block; i < (b + 1) * 2 * block && i < n; i++) s += x[i];
        err += (partial[b] - s) * (partial[b] - s);
        norm += s * s;
        all += s;
    }
    if (!(err <= 1e-10 * norm + 1e-20))
        fail_msg("block sums off: normalised error %g (n %u, block %u)", err / norm, n, block);
    if (!(fabs(*total - all) <= 1e-4 * (fabs(all) + 1.0)))
        fail_msg("total %g, want %g (n %u, block %u)", *total, all, n, block);
    printf("  reduce n=%u block=%u grid=%u: total %.6f (ref %.6f)\n", n, block, grid, *total, all);
    tandem_emu_buf_free(x);
    tandem_emu_buf_free(partial);
    tandem_emu_buf_free(total);
}

static void test_shuffle_reduction(void **state) {
    (void)state;
    static const unsigned sizes[] = {1, 31, 32, 33, 1000, 4097, 65536 + 7};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) run_reduce(sizes[i], pick_block());
    run_reduce((unsigned)tandem_rng_int(&rng, 2, 100000), 1024);
}

/* ---- atomics -------------------------------------------------------------------------------- */

static void run_atomics(unsigned n, unsigned block) {
    float *vals = rand_floats(n, 0, 1);
    int *keys = (int *)tandem_emu_buf_alloc(n * sizeof(int));
    int *ints = (int *)tandem_emu_buf_alloc(6 * sizeof(int));
    float *fsum = (float *)tandem_emu_buf_alloc(sizeof(float));
    int kmax = -2147483647;
    for (unsigned i = 0; i < n; i++) {
        keys[i] = (int)tandem_rng_int(&rng, -1000000, 1000000);
        if (keys[i] > kmax) kmax = keys[i];
    }
    memset(ints, 0, 6 * sizeof(int));
    ints[2] = -2147483647; /* imax starts at the bottom */
    *fsum = 0.0f;
    tandem_kt_atomic_args a = {vals, keys, &ints[0], &ints[1], fsum, &ints[2], (unsigned *)&ints[3],
                               &ints[4], &ints[5], (int)n};
    tandem_launch_dims d = dims(ceil_div(n, block), block, 0);
    expect_ok(LAUNCH(tandem_kt_atomic, &d, &a));
    double ref = 0;
    for (unsigned i = 0; i < n; i++) ref += vals[i];
    assert_int_equal(ints[0], n);
    assert_int_equal(ints[1], (long long)n * (n - 1) / 2);
    assert_int_equal(ints[2], kmax);
    assert_int_equal((unsigned)ints[3], 3u * n);
    assert_int_equal(ints[4], 1);
    assert_int_equal(ints[5], 1);
    if (!(fabs(*fsum - ref) <= 1e-4 * ref)) fail_msg("float atomicAdd sum %g, want %g", *fsum, ref);
    tandem_emu_buf_free(vals);
    tandem_emu_buf_free(keys);
    tandem_emu_buf_free(ints);
    tandem_emu_buf_free(fsum);
}

static void test_atomics_add_up(void **state) {
    (void)state;
    run_atomics((unsigned)tandem_rng_int(&rng, 1000, 40000), 256);
    run_atomics(1, 32);
}

/* Blocks on 4 OS threads at once: atomics stay exact, faults are still attributed. */
static void test_worker_threads(void **state) {
    (void)state;
    tandem_emu_set_threads(4);
    run_atomics(50000, 128);
    run_reduce(100000, 256);
    unsigned n = 20000, block = 128;
    float *out = (float *)tandem_emu_buf_alloc(n * sizeof(float));
    tandem_kt_vec_args a = {NULL, out, (int)n, 0};
    tandem_launch_dims d = dims(ceil_div(n + 1, block), block, 0);
    char who[128];
    snprintf(who, sizeof who, "block (%u,0,0) thread (%u,0,0): out-of-bounds write", n / block, n % block);
    expect_error(LAUNCH(tandem_kt_oob_write, &d, &a), who, NULL);
    tandem_emu_set_threads(0);
    tandem_emu_buf_free(out);
}

/* ---- geometry, limits, registry ------------------------------------------------------------ */

static void test_index_3d(void **state) {
    (void)state;
    tandem_launch_dims d;
    d.grid[0] = 3, d.grid[1] = 2, d.grid[2] = 2;
    d.block[0] = 4, d.block[1] = 3, d.block[2] = 2;
    d.shmem = 0;
    unsigned threads = 3 * 2 * 2 * 4 * 3 * 2;
    unsigned *out = (unsigned *)tandem_emu_buf_alloc(threads * 12 * sizeof(unsigned));
    tandem_kt_index_args a = {out};
    expect_ok(LAUNCH(tandem_kt_index, &d, &a));
    unsigned g = 0;
    for (unsigned bz = 0; bz < 2; bz++)
        for (unsigned by = 0; by < 2; by++)
            for (unsigned bx = 0; bx < 3; bx++)
                for (unsigned tz = 0; tz < 2; tz++)
                    for (unsigned ty = 0; ty < 3; ty++)
                        for (unsigned tx = 0; tx < 4; tx++, g++) {
                            const unsigned want[12] = {tx, ty, tz, bx, by, bz, 4, 3, 2, 3, 2, 2};
                            for (int k = 0; k < 12; k++) assert_int_equal(out[g * 12 + k], want[k]);
                        }
    tandem_emu_buf_free(out);
}

static void test_launch_limits(void **state) {
    (void)state;
    float *out = rand_floats(2048, 0, 0);
    tandem_kt_vec_args a = {NULL, out, 0, 0};
    tandem_launch_dims d = dims(1, 1025, 0);
    expect_error(LAUNCH(tandem_kt_oob_write, &d, &a), "kernel tandem_kt_oob_write", "1025 threads", NULL);
    d.block[0] = 32, d.block[1] = 32, d.block[2] = 2;
    expect_error(LAUNCH(tandem_kt_oob_write, &d, &a), "2048 threads", NULL);
    d = dims(0, 32, 0);
    expect_error(LAUNCH(tandem_kt_oob_write, &d, &a), "zero dimension", NULL);
    d = dims(1, 32, 48 * 1024 + 1);
    expect_error(LAUNCH(tandem_kt_oob_write, &d, &a), "49153 bytes of dynamic shared memory", "limit 49152", NULL);
    tandem_emu_set_shmem_limit(100 * 1024);
    a.n = 64;
    expect_ok(LAUNCH(tandem_kt_oob_write, &d, &a)); /* n = 64 > 32 threads: in bounds */
    tandem_emu_set_shmem_limit(48 * 1024);
    tandem_emu_buf_free(out);
}

static void test_registry_launch(void **state) {
    (void)state;
    int64_t n = tandem_rng_int(&rng, 1, 5000);
    float *out = (float *)tandem_emu_buf_alloc((size_t)n * sizeof(float));
    tandem_k_fill_f32_args a;
    a.out = out, a.n = n, a.value = tandem_rng_uniform(&rng, -5, 5);
    void *params[] = {&a};
    tandem_launch_dims d = tandem_dims_1d(n, 128);
    expect_ok(tandem_emu_launch_by_name("tandem_k_fill_f32", &d, params));
    for (int64_t i = 0; i < n; i++) assert_float_equal(out[i], a.value, 0);
    expect_error(tandem_emu_launch_by_name("tandem_k_no_such", &d, params), "no emulated kernel named", NULL);
    expect_error(tandem_emu_launch(TANDEM_KID_fill_f32, &d, &a, sizeof a + 4), "kernel tandem_k_fill_f32",
                 "expected", NULL);
    assert_int_equal(tandem_emu_kernel_count, TANDEM_KERNEL_COUNT);
    assert_int_equal(tandem_emu_kernel_lookup("tandem_k_fill_f32"), TANDEM_KID_fill_f32);
    tandem_emu_buf_free(out);
}

/* The fault handler is installed for a launch only. */
static void test_handler_restored(void **state) {
    (void)state;
    struct sigaction before, after;
    sigaction(SIGSEGV, NULL, &before);
    float *out = rand_floats(10, 0, 0);
    tandem_kt_vec_args a = {NULL, out, 10, 0};
    tandem_launch_dims d = dims(1, 32, 0);
    expect_error(LAUNCH(tandem_kt_oob_write, &d, &a), "out-of-bounds write", NULL);
    sigaction(SIGSEGV, NULL, &after);
    assert_true(before.sa_handler == after.sa_handler);
    assert_int_equal(before.sa_flags, after.sa_flags);
    tandem_emu_buf_free(out);
}

int main(void) {
    rng.s = tandem_test_seed("test_emu_self");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oob_write_caught),
        cmocka_unit_test(test_oob_read_caught),
        cmocka_unit_test(test_underrun_caught),
        cmocka_unit_test(test_use_after_free_caught),
        cmocka_unit_test(test_buf_find),
        cmocka_unit_test(test_stack_overflow_caught),
        cmocka_unit_test(test_divergent_barrier_caught),
        cmocka_unit_test(test_shared_memory_barrier_order),
        cmocka_unit_test(test_missing_barrier_exposed),
        cmocka_unit_test(test_dynamic_shared_overrun_caught),
        cmocka_unit_test(test_bad_shuffle_masks_caught),
        cmocka_unit_test(test_warp_ops),
        cmocka_unit_test(test_mma),
        cmocka_unit_test(test_shuffle_reduction),
        cmocka_unit_test(test_atomics_add_up),
        cmocka_unit_test(test_worker_threads),
        cmocka_unit_test(test_index_3d),
        cmocka_unit_test(test_launch_limits),
        cmocka_unit_test(test_registry_launch),
        cmocka_unit_test(test_handler_restored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
