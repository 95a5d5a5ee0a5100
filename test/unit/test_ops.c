/* test_ops.c — tandem_op_fill / scale / axpy / cast / row_sum on committed tensors of a host
 * device, each against a result computed here (double sums, bf16 rounding by integer
 * arithmetic), and their argument checks: wrong dtype, size, rank, uncommitted tensor or a
 * tensor of another device → an error that names the tensor. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tandem.h"
#include "test/testutil.h"

static tandem_rng rng;

/* Sizes off the 256-thread block: N elements, ROWS x COLS matrices. */
enum { N = 1037, ROWS = 6, COLS = 301 };

typedef struct {
    tandem_device *dev;
    tandem_stream *s;
    tandem_pool *pool;
    tandem_tensor *x, *y, *h, *i32, *xs, *rows, *sums, *rows_bad, *x3, *out2d;
} env;

static tandem_tensor *declare(tandem_pool *p, const char *name, tandem_dtype dt, int nd,
                              const int64_t *shape) {
    tandem_tensor *t = NULL;
    assert_int_equal(tandem_pool_declare(p, name, dt, nd, shape, TANDEM_PERSISTENT, 0, 0, &t),
                     TANDEM_OK);
    return t;
}

static int setup(void **state) {
    env *e = calloc(1, sizeof *e);
    if (tandem_device_open(TANDEM_BACKEND_HOST, 0, &e->dev) != TANDEM_OK) return -1;
    if (tandem_stream_create(e->dev, &e->s) != TANDEM_OK) return -1;
    if (tandem_pool_create(e->dev, "ops-test", 0, &e->pool) != TANDEM_OK) return -1;
    int64_t n[1] = {N}, short_n[1] = {N - 1}, m[2] = {ROWS, COLS}, r[1] = {ROWS},
            r_bad[1] = {ROWS + 1}, m3[3] = {2, 3, COLS}, o2[2] = {2, 3};
    e->x = declare(e->pool, "x", TANDEM_F32, 1, n);
    e->y = declare(e->pool, "y", TANDEM_F32, 1, n);
    e->h = declare(e->pool, "x_bf16", TANDEM_BF16, 1, n);
    e->i32 = declare(e->pool, "ids", TANDEM_I32, 1, n);
    e->xs = declare(e->pool, "x_short", TANDEM_F32, 1, short_n);
    e->rows = declare(e->pool, "mat", TANDEM_F32, 2, m);
    e->sums = declare(e->pool, "sums", TANDEM_F32, 1, r);
    e->rows_bad = declare(e->pool, "sums_bad", TANDEM_F32, 1, r_bad);
    e->x3 = declare(e->pool, "mat3", TANDEM_F32, 3, m3);
    e->out2d = declare(e->pool, "sums2d", TANDEM_F32, 2, o2);
    if (tandem_pool_commit(e->pool) != TANDEM_OK) return -1;
    *state = e;
    return 0;
}

static int teardown(void **state) {
    env *e = *state;
    tandem_pool_destroy(e->pool);
    tandem_stream_destroy(e->s);
    tandem_device_close(e->dev);
    free(e);
    return 0;
}

static void put(env *e, tandem_tensor *t, const void *src) {
    assert_int_equal(tandem_tensor_upload(e->s, t, src, tandem_tensor_bytes(t)), TANDEM_OK);
}
static void get(env *e, void *dst, tandem_tensor *t) {
    assert_int_equal(tandem_tensor_download(e->s, dst, t, tandem_tensor_bytes(t)), TANDEM_OK);
}
static void expect_error(tandem_status st, tandem_status want, const char *name, const char *also) {
    assert_int_equal(st, want);
    const char *msg = tandem_last_error();
    if (!strstr(msg, name) || (also && !strstr(msg, also)))
        fail_msg("error message \"%s\" should name '%s'%s%s", msg, name, also ? " and say " : "",
                 also ? also : "");
}

static void test_fill_scale_axpy(void **state) {
    env *e = *state;
    static float x[N], y[N], got[N];
    float v = tandem_rng_uniform(&rng, -5.0f, 5.0f);
    assert_int_equal(tandem_op_fill(e->s, e->x, v), TANDEM_OK);
    get(e, got, e->x);
    for (int i = 0; i < N; i++) assert_true(got[i] == v);

    tandem_rng_fill(&rng, x, N, -3.0f, 3.0f);
    put(e, e->x, x);
    float alpha = tandem_rng_uniform(&rng, -2.0f, 2.0f);
    assert_int_equal(tandem_op_scale(e->s, e->x, alpha), TANDEM_OK);
    get(e, got, e->x);
    for (int i = 0; i < N; i++) assert_float_equal(got[i], (double)x[i] * alpha, 1e-6);

    tandem_rng_fill(&rng, x, N, -3.0f, 3.0f);
    tandem_rng_fill(&rng, y, N, -3.0f, 3.0f);
    put(e, e->x, x);
    put(e, e->y, y);
    alpha = tandem_rng_uniform(&rng, -2.0f, 2.0f);
    assert_int_equal(tandem_op_axpy(e->s, alpha, e->x, e->y), TANDEM_OK);
    get(e, got, e->y);
    for (int i = 0; i < N; i++) assert_float_equal(got[i], y[i] + (double)alpha * x[i], 1e-5);
    get(e, got, e->x); /* x untouched */
    assert_memory_equal(got, x, sizeof x);
}

/* bf16 of f by integer round-to-nearest-even on the bit pattern, written out here. */
static uint16_t bf16_expected(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t hi = u >> 16, lo = u & 0xffffu;
    if (lo > 0x8000u || (lo == 0x8000u && (hi & 1u))) hi++;
    return (uint16_t)hi;
}

static void test_cast(void **state) {
    env *e = *state;
    static float x[N], back[N];
    static uint16_t h[N];
    tandem_rng_fill(&rng, x, N, -1000.0f, 1000.0f);
    x[0] = 1.0f + 1.0f / 256.0f;           /* exactly halfway, even below: rounds down */
    x[1] = 1.0f + 3.0f / 256.0f;           /* exactly halfway, odd below: rounds up */
    x[2] = -0.0f;
    x[3] = 3.0e38f;                        /* rounds up into the next exponent */
    put(e, e->x, x);
    assert_int_equal(tandem_op_cast(e->s, e->x, e->h), TANDEM_OK);
    get(e, h, e->h);
    for (int i = 0; i < N; i++)
        if (h[i] != bf16_expected(x[i]))
            fail_msg("bf16(%.9g) = 0x%04x, expected 0x%04x", x[i], h[i], bf16_expected(x[i]));
    assert_int_equal(h[0], 0x3f80);
    assert_int_equal(h[1], 0x3f82);

    assert_int_equal(tandem_op_cast(e->s, e->h, e->y), TANDEM_OK);
    get(e, back, e->y);
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)h[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        assert_memory_equal(&back[i], &f, 4);
        /* and the round trip stays within half a bf16 ulp: 2^-8 of x's binade, so of |x| */
        assert_true(fabs((double)back[i] - x[i]) <= fabs((double)x[i]) * (1.0 / 256.0));
    }
    /* same dtype: a copy */
    assert_int_equal(tandem_op_cast(e->s, e->x, e->y), TANDEM_OK);
    get(e, back, e->y);
    assert_memory_equal(back, x, sizeof back);
}

static void check_sums(const float *got, const float *x, int rows, int cols) {
    for (int row = 0; row < rows; row++) {
        double sum = 0.0;
        for (int c = 0; c < cols; c++) sum += x[row * cols + c];
        assert_float_equal(got[row], sum, 1e-4);
    }
}

static void test_row_sum(void **state) {
    env *e = *state;
    static float m[ROWS * COLS], m3[2 * 3 * COLS], got[ROWS];
    tandem_rng_fill(&rng, m, ROWS * COLS, -1.0f, 1.0f);
    put(e, e->rows, m);
    assert_int_equal(tandem_op_row_sum(e->s, e->rows, e->sums), TANDEM_OK); /* [6, 301] → [6] */
    get(e, got, e->sums);
    check_sums(got, m, ROWS, COLS);
    /* [2, 3, 301] → [2, 3]: every leading dimension is a row */
    tandem_rng_fill(&rng, m3, 2 * 3 * COLS, -1.0f, 1.0f);
    put(e, e->x3, m3);
    assert_int_equal(tandem_op_row_sum(e->s, e->x3, e->out2d), TANDEM_OK);
    get(e, got, e->out2d);
    check_sums(got, m3, 6, COLS);
}

static void test_errors(void **state) {
    env *e = *state;
    expect_error(tandem_op_fill(e->s, e->h, 1.0f), TANDEM_E_INVALID, "'x_bf16'", "expected f32");
    expect_error(tandem_op_scale(e->s, e->i32, 2.0f), TANDEM_E_INVALID, "'ids'", "i32");
    expect_error(tandem_op_axpy(e->s, 1.0f, e->xs, e->y), TANDEM_E_INVALID, "'x_short'",
                 "equal element counts");
    expect_error(tandem_op_axpy(e->s, 1.0f, e->x, e->h), TANDEM_E_INVALID, "'x_bf16'", NULL);
    expect_error(tandem_op_cast(e->s, e->x, e->xs), TANDEM_E_INVALID, "'x_short'", NULL);
    expect_error(tandem_op_cast(e->s, e->i32, e->x), TANDEM_E_UNSUPPORTED, "'ids'", "i32");
    expect_error(tandem_op_row_sum(e->s, e->rows, e->rows_bad), TANDEM_E_INVALID, "'sums_bad'",
                 "expected 6");
    expect_error(tandem_op_row_sum(e->s, e->h, e->out2d), TANDEM_E_INVALID, "'x_bf16'", NULL);
    expect_error(tandem_op_fill(NULL, e->x, 0.0f), TANDEM_E_INVALID, "stream", NULL);
    expect_error(tandem_op_fill(e->s, NULL, 0.0f), TANDEM_E_INVALID, "NULL", NULL);
}

/* Before commit there is no address; a tensor of another device is refused. */
static void test_state_and_device(void **state) {
    env *e = *state;
    tandem_pool *late = NULL;
    int64_t n[1] = {8};
    assert_int_equal(tandem_pool_create(e->dev, "late", 0, &late), TANDEM_OK);
    tandem_tensor *t = declare(late, "not_yet", TANDEM_F32, 1, n);
    expect_error(tandem_op_fill(e->s, t, 1.0f), TANDEM_E_STATE, "'not_yet'", "commit");
    tandem_pool_destroy(late);

    tandem_device *dev1 = NULL;
    tandem_pool *p1 = NULL;
    assert_int_equal(tandem_device_open(TANDEM_BACKEND_HOST, 1, &dev1), TANDEM_OK);
    assert_int_equal(tandem_pool_create(dev1, "far", 0, &p1), TANDEM_OK);
    tandem_tensor *far = declare(p1, "far_x", TANDEM_F32, 1, n);
    assert_int_equal(tandem_pool_commit(p1), TANDEM_OK);
    expect_error(tandem_op_scale(e->s, far, 2.0f), TANDEM_E_INVALID, "'far_x'", "device");
    tandem_pool_destroy(p1);
    tandem_device_close(dev1);
}

int main(void) {
    rng.s = tandem_test_seed("test_ops");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_scale_axpy),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_row_sum),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_state_and_device),
    };
    return cmocka_run_group_tests_name("ops", tests, setup, teardown);
}
