/* test_dev.c — the internal device API (runtime/core/dev.h) and the checks it gives its callers:
 *
 *   copies:    upload / download / device copy on byte ranges of committed tensors move exactly
 *              those bytes; a range past the tensor, an uncommitted tensor, a tensor of another
 *              device or a NULL host pointer is an error naming the tensor.
 *   GEMM:      tandem_dev_gemm on views (tensor + element offset), single and batched with
 *              strides, against a product computed here in double; a dtype other than the
 *              descriptor's, a view the product reaches past, an uncommitted operand or one on
 *              another device is an error naming it; an empty product does nothing.
 *   launches:  a typed launcher fills its kernel's arguments; tandem_launch refuses a wrong
 *              argument size or an unknown kernel, naming it.
 *   pinned:    allocation and free (NULL is a no-op); NULL arguments are refused.
 *   attention: the driver's tensor checks (too small, wrong dtype, uncommitted, the bf16-only
 *              scratch missing in bf16 mode) name the tensor before anything is queued.
 * TANDEM_TEST_BACKEND=cuda runs it on cuda devices 0 and 1 (the stand-in driver in make test).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core/dev.h"
#include "runtime/core/launch.h"
#include "runtime/model/attention.h"
#include "tandem.h"
#include "test/fixtures.h"

enum { N = 64 };

typedef struct env {
    tandem_device *dev, *dev2;
    tandem_stream *s;
    tandem_pool *pool, *pool2, *pending;
    tandem_tensor *a, *b, *c, *i32, *h, *mask, *small, *other, *uncommitted;
} env;

static tandem_tensor *declare(tandem_pool *p, const char *name, tandem_dtype dt, int64_t n) {
    tandem_tensor *t = NULL;
    const int64_t shape[1] = {n};
    if (tandem_pool_declare(p, name, dt, 1, shape, TANDEM_PERSISTENT, 0, 0, &t) != TANDEM_OK)
        fail_msg("declare %s: %s", name, tandem_last_error());
    return t;
}

/* The products test_gemm runs (the cuda backend wants each shape prepared before commit). */
static tandem_gemm_desc desc(int ta, int tb, int64_t m, int64_t n, int64_t k, int64_t batch) {
    tandem_gemm_desc g;
    memset(&g, 0, sizeof g);
    g.trans_a = ta, g.trans_b = tb, g.m = m, g.n = n, g.k = k, g.batch = batch;
    if (batch > 1) g.stride_a = m * k + 1, g.stride_b = 0, g.stride_c = m * n + 2;
    return g;
}

static int setup(void **state) {
    env *e = calloc(1, sizeof *e);
    const tandem_backend backend = tandem_test_backend();
    /* the second device: ordinal 1 (two host devices, the stand-in's two GPUs), or ordinal 0
     * again on a single real GPU (both roles on one device) */
    int count = 0;
    const int second = tandem_device_count(backend, &count) == TANDEM_OK && count >= 2 ? 1 : 0;
    if (!e || tandem_device_open(backend, 0, &e->dev) != TANDEM_OK ||
        tandem_device_open(backend, second, &e->dev2) != TANDEM_OK) {
        fprintf(stderr, "test_dev: cannot open two devices: %s\n", tandem_last_error());
        return -1;
    }
    if (tandem_stream_create(e->dev, &e->s) != TANDEM_OK) return -1;
    if (tandem_pool_create(e->dev, "dev-test", 0, &e->pool) != TANDEM_OK ||
        tandem_pool_create(e->dev2, "dev-test-2", 0, &e->pool2) != TANDEM_OK ||
        tandem_pool_create(e->dev, "never-committed", 0, &e->pending) != TANDEM_OK)
        return -1;
    e->a = declare(e->pool, "a", TANDEM_F32, N);
    e->b = declare(e->pool, "b", TANDEM_F32, N);
    e->c = declare(e->pool, "c", TANDEM_F32, N);
    e->i32 = declare(e->pool, "ids", TANDEM_I32, N);
    e->h = declare(e->pool, "h", TANDEM_BF16, N);
    e->mask = declare(e->pool, "mask", TANDEM_U8, N);
    e->small = declare(e->pool, "small", TANDEM_F32, 16);
    e->other = declare(e->pool2, "elsewhere", TANDEM_F32, N);
    e->uncommitted = declare(e->pending, "pending", TANDEM_F32, N);
    tandem_gemm_desc gs[4] = {desc(0, 1, 3, 2, 4, 1), desc(1, 0, 3, 2, 4, 2), desc(1, 0, 3, 2, 4, 2),
                              desc(1, 0, 3, 2, 4, 1)};
    gs[2].epilogue = TANDEM_GEMM_EPI_BIAS;
    gs[3].epilogue = TANDEM_GEMM_EPI_BGRAD; /* test_gemm_bias */
    for (int i = 0; i < 4; i++)
        if (tandem_dev_gemm_prepare(e->dev, &gs[i]) != TANDEM_OK) return -1;
    if (tandem_pool_commit(e->pool) != TANDEM_OK || tandem_pool_commit(e->pool2) != TANDEM_OK)
        return -1;
    *state = e;
    return 0;
}

static int teardown(void **state) {
    env *e = *state;
    if (!e) return 0;
    tandem_pool_destroy(e->pool);
    tandem_pool_destroy(e->pool2);
    tandem_pool_destroy(e->pending);
    tandem_stream_destroy(e->s);
    tandem_device_close(e->dev);
    tandem_device_close(e->dev2);
    free(e);
    return 0;
}

/* st is `want` and the message names every string given. */
static void expect(tandem_status st, tandem_status want, const char *name, const char *name2) {
    if (st != want)
        fail_msg("status %s, expected %s (%s)", tandem_status_name(st), tandem_status_name(want),
                 tandem_last_error());
    if (!strstr(tandem_last_error(), name) || (name2 && !strstr(tandem_last_error(), name2)))
        fail_msg("error \"%s\" should name '%s'%s%s", tandem_last_error(), name,
                 name2 ? " and " : "", name2 ? name2 : "");
}

static void put(env *e, tandem_tensor *t, const float *v) {
    CHECK(tandem_dev_upload(e->s, t, 0, v, N * sizeof(float)));
}
static void get(env *e, float *v, const tandem_tensor *t) {
    CHECK(tandem_dev_download(e->s, v, t, 0, N * sizeof(float)));
    CHECK(tandem_stream_sync(e->s));
}

static void test_copies(void **state) {
    env *e = *state;
    float x[N], y[N], z[N];
    for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = -1.0f;
    put(e, e->a, y);
    put(e, e->b, y);
    /* a[8 .. 24) = x[0 .. 16);  b[40 .. 56) = a[8 .. 24);  z = b[36 .. 60) */
    CHECK(tandem_dev_upload(e->s, e->a, 8 * sizeof(float), x, 16 * sizeof(float)));
    CHECK(tandem_dev_copy(e->s, e->b, 40 * sizeof(float), e->a, 8 * sizeof(float),
                          16 * sizeof(float)));
    CHECK(tandem_dev_download(e->s, z, e->b, 36 * sizeof(float), 24 * sizeof(float)));
    CHECK(tandem_stream_sync(e->s));
    for (int i = 0; i < 24; i++) assert_true(z[i] == (i >= 4 && i < 20 ? (float)(i - 4) : -1.0f));

    const size_t all = N * sizeof(float);
    expect(tandem_dev_upload(e->s, e->a, all - 8, x, 16), TANDEM_E_INVALID, "'a'", "inside");
    expect(tandem_dev_download(e->s, z, e->b, all + 4, 0), TANDEM_E_INVALID, "'b'", NULL);
    expect(tandem_dev_copy(e->s, e->b, 0, e->a, 4, all), TANDEM_E_INVALID, "'a'", NULL);
    expect(tandem_dev_download(e->s, z, e->uncommitted, 0, 4), TANDEM_E_STATE, "'pending'",
           "commit");
    expect(tandem_dev_upload(e->s, e->other, 0, x, 4), TANDEM_E_INVALID, "'elsewhere'",
           "stream");
    expect(tandem_dev_upload(e->s, e->a, 0, NULL, 4), TANDEM_E_INVALID, "NULL", NULL);
    expect(tandem_dev_download(NULL, z, e->a, 0, 4), TANDEM_E_INVALID, "stream", NULL);
}

/* C[b] (+)= alpha op(A[b]) op(B) + beta C[b] in double, on the layouts desc() describes. */
static void reference(const tandem_gemm_desc *g, float alpha, const float *a, const float *b,
                      float beta, float *c) {
    for (int64_t t = 0; t < g->batch; t++)
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                double acc = 0.0;
                for (int64_t p = 0; p < g->k; p++) {
                    double av = g->trans_a ? a[t * g->stride_a + p * g->m + i]
                                           : a[t * g->stride_a + i * g->k + p];
                    double bv = g->trans_b ? b[t * g->stride_b + j * g->k + p]
                                           : b[t * g->stride_b + p * g->n + j];
                    acc += av * bv;
                }
                float *cv = &c[t * g->stride_c + i * g->n + j];
                *cv = (float)(alpha * acc + beta * *cv);
            }
}

static void test_gemm(void **state) {
    env *e = *state;
    float a[N], b[N], c[N], want[N];
    tandem_rng rng = {7};
    for (int i = 0; i < N; i++) {
        a[i] = tandem_rng_uniform(&rng, -1, 1);
        b[i] = tandem_rng_uniform(&rng, -1, 1);
        c[i] = tandem_rng_uniform(&rng, -1, 1);
    }
    const tandem_gemm_desc gs[2] = {desc(0, 1, 3, 2, 4, 1), desc(1, 0, 3, 2, 4, 2)};
    for (int t = 0; t < 2; t++) { /* A from element 5, B from 11, C from 3 */
        const tandem_gemm_desc *g = &gs[t];
        put(e, e->a, a);
        put(e, e->b, b);
        put(e, e->c, c);
        memcpy(want, c, sizeof c);
        reference(g, 0.5f, a + 5, b + 11, 2.0f, want + 3);
        CHECK(tandem_dev_gemm(e->s, g, 0.5f, tandem_view_at(e->a, 5), tandem_view_at(e->b, 11),
                              2.0f, tandem_view_at(e->c, 3)));
        float got[N];
        get(e, got, e->c);
        for (int i = 0; i < N; i++)
            if (fabsf(got[i] - want[i]) > 1e-5f)
                fail_msg("product %d: C[%d] = %g, expected %g", t, i, got[i], want[i]);
    }
    const tandem_gemm_desc *g = &gs[1];
    tandem_gemm_desc g16 = *g;
    g16.a_type = TANDEM_BF16;
    const tandem_view a0 = tandem_view_of(e->a), b0 = tandem_view_of(e->b);
    const tandem_view c0 = tandem_view_of(e->c);
    expect(tandem_dev_gemm(e->s, &g16, 1, a0, b0, 0, c0), TANDEM_E_INVALID, "'a'", "bf16");
    expect(tandem_dev_gemm(e->s, g, 1, tandem_view_at(e->a, N - 20), b0, 0, c0), TANDEM_E_INVALID,
           "'a'", "reaches");
    expect(tandem_dev_gemm(e->s, g, 1, a0, b0, 0, tandem_view_at(e->c, N)), TANDEM_E_INVALID,
           "'c'", NULL);
    expect(tandem_dev_gemm(e->s, g, 1, a0, tandem_view_of(e->uncommitted), 0, c0), TANDEM_E_STATE,
           "'pending'", NULL);
    expect(tandem_dev_gemm(e->s, g, 1, a0, b0, 0, tandem_view_of(e->other)), TANDEM_E_INVALID,
           "'elsewhere'", NULL);
    expect(tandem_dev_gemm(e->s, g, 1, a0, tandem_view_of(e->i32), 0, c0), TANDEM_E_INVALID,
           "'ids'", "i32");
    tandem_gemm_desc empty = *g;
    empty.m = 0; /* nothing to compute: no operand is read */
    CHECK(tandem_dev_gemm(e->s, &empty, 1, tandem_view_of(e->uncommitted), b0, 0, c0));
}

/* The BIAS epilogue: C[b, i, j] += bias[j] after alpha and beta, the bias a checked view. At
 * element 3 the bias is 12 bytes off a 16-byte boundary: @cuda the GEMM must leave cuBLASLt
 * (whose epilogue would fault on a GPU, and the stand-in refuses) for the fatbin GEMM. */
static void test_gemm_bias(void **state) {
    env *e = *state;
    float a[N], b[N], c[N], bias[16], want[N];
    tandem_rng rng = {11};
    for (int i = 0; i < N; i++) {
        a[i] = tandem_rng_uniform(&rng, -1, 1);
        b[i] = tandem_rng_uniform(&rng, -1, 1);
        c[i] = tandem_rng_uniform(&rng, -1, 1);
    }
    for (int i = 0; i < 16; i++) bias[i] = tandem_rng_uniform(&rng, -1, 1);
    tandem_gemm_desc g = desc(1, 0, 3, 2, 4, 2);
    g.epilogue = TANDEM_GEMM_EPI_BIAS;
    put(e, e->a, a);
    put(e, e->b, b);
    put(e, e->c, c);
    CHECK(tandem_dev_upload(e->s, e->small, 0, bias, sizeof bias));
    CHECK(tandem_stream_sync(e->s));
    memcpy(want, c, sizeof c);
    reference(&g, 0.5f, a, b, 2.0f, want);
    for (int t = 0; t < g.batch; t++) /* bias from element 3 of 'small' */
        for (int i = 0; i < g.m; i++)
            for (int j = 0; j < g.n; j++) want[t * g.stride_c + i * g.n + j] += bias[3 + j];
    CHECK(tandem_dev_gemm_epi(e->s, &g, 0.5f, tandem_view_of(e->a), tandem_view_of(e->b), 2.0f,
                              tandem_view_of(e->c), tandem_view_at(e->small, 3)));
    float got[N];
    get(e, got, e->c);
    for (int i = 0; i < N; i++)
        if (fabsf(got[i] - want[i]) > 1e-5f) fail_msg("C[%d] = %g, expected %g", i, got[i], want[i]);
    const tandem_view a0 = tandem_view_of(e->a), b0 = tandem_view_of(e->b), c0 = tandem_view_of(e->c);
    expect(tandem_dev_gemm(e->s, &g, 1, a0, b0, 0, c0), TANDEM_E_INVALID, "lacks a bias", NULL);
    tandem_gemm_desc plain = desc(1, 0, 3, 2, 4, 2);
    expect(tandem_dev_gemm_epi(e->s, &plain, 1, a0, b0, 0, c0, tandem_view_of(e->small)),
           TANDEM_E_INVALID, "was given a bias", NULL);
    expect(tandem_dev_gemm_epi(e->s, &g, 1, a0, b0, 0, c0, tandem_view_at(e->small, 15)),
           TANDEM_E_INVALID, "'small'", "reaches");
    expect(tandem_dev_gemm_epi(e->s, &g, 1, a0, b0, 0, c0, tandem_view_of(e->i32)),
           TANDEM_E_INVALID, "'ids'", "i32");
    tandem_gemm_desc odd = g;
    odd.epilogue = (tandem_gemm_epilogue)7;
    expect(tandem_dev_gemm_epi(e->s, &odd, 1, a0, b0, 0, c0, tandem_view_of(e->small)),
           TANDEM_E_INVALID, "epilogue 7", NULL);
    /* BGRAD: a weight gradient's shape only; the bias gradient [m] written, apart from C */
    tandem_gemm_desc bg = g; /* batch 2 */
    bg.epilogue = TANDEM_GEMM_EPI_BGRAD;
    expect(tandem_dev_gemm_epi(e->s, &bg, 1, a0, b0, 0, c0, tandem_view_of(e->small)), TANDEM_E_UNSUPPORTED,
           "bias-gradient epilogue", "batch 1");
    bg = desc(0, 0, 3, 2, 4, 1);
    bg.epilogue = TANDEM_GEMM_EPI_BGRAD;
    expect(tandem_dev_gemm_epi(e->s, &bg, 1, a0, b0, 0, c0, tandem_view_of(e->small)), TANDEM_E_UNSUPPORTED,
           "trans_a 0", NULL);
    bg.trans_a = 1;
    expect(tandem_dev_gemm_epi(e->s, &bg, 1, a0, b0, 0, c0, tandem_view_at(e->c, 4)), TANDEM_E_INVALID,
           "bias gradient overlaps C", NULL);
    CHECK(tandem_dev_gemm_epi(e->s, &bg, 1, a0, b0, 0, c0, tandem_view_at(e->small, 2)));
    float sums[16];
    CHECK(tandem_dev_download(e->s, sums, e->small, 0, sizeof sums));
    CHECK(tandem_stream_sync(e->s));
    for (int i = 0; i < 3; i++) { /* A [k 4, m 3] */
        const float want_i = ((a[i] + a[3 + i]) + a[6 + i]) + a[9 + i];
        if (fabsf(sums[2 + i] - want_i) > 1e-6f) fail_msg("bias gradient[%d] = %g, expected %g", i, sums[2 + i], want_i);
    }
}

static void test_launch(void **state) {
    env *e = *state;
    float v[N];
    CHECK(tandem_fill_f32(e->s, tandem_tensor_f32(e->a), N, 2.5f));
    get(e, v, e->a);
    for (int i = 0; i < N; i++) assert_true(v[i] == 2.5f);
    TANDEM_KARGS(fill_f32, args);
    args.out = tandem_tensor_f32(e->a), args.n = N, args.value = 1.0f;
    expect(tandem_launch(e->s, TANDEM_KID_fill_f32, &args, sizeof args - 4), TANDEM_E_INVALID,
           "fill_f32", "bytes");
    expect(tandem_launch(e->s, TANDEM_KERNEL_COUNT, &args, sizeof args), TANDEM_E_INVALID,
           "registry", NULL);
    expect(tandem_launch(e->s, TANDEM_KID_fill_f32, NULL, sizeof args), TANDEM_E_INVALID, "NULL",
           NULL);
}

static void test_pinned(void **state) {
    env *e = *state;
    void *p = NULL;
    CHECK(tandem_dev_pinned_alloc(e->dev, 4096, &p));
    assert_non_null(p);
    memset(p, 0x5a, 4096);
    tandem_dev_pinned_free(e->dev, p);
    tandem_dev_pinned_free(e->dev, NULL);
    expect(tandem_dev_pinned_alloc(NULL, 16, &p), TANDEM_E_INVALID, "NULL", NULL);
    assert_string_equal(tandem_dev_backend_name(NULL), "no");
    assert_true(tandem_dev_same_backend(e->dev, e->dev2));
    assert_false(tandem_dev_same_backend(e->dev, NULL));
}

/* Shape {1, 4, 1, 3}: qkv 36, model and heads 12, scores 16, mask 4 elements. */
static void test_attention_checks(void **state) {
    env *e = *state;
    tandem_attention_shape sh = {1, 4, 1, 3, 0, 1}; /* the materialised path's tensors */
    tandem_attention_fwd_io f = {.qkv = e->small, .key_mask = e->mask, .q = e->a, .k = e->b,
                                 .v = e->c, .p = e->i32, .o = e->b, .y = e->c};
    expect(tandem_attention_fwd(e->s, &sh, &f), TANDEM_E_INVALID, "'qkv'", "at least 36");
    f.qkv = e->a;
    expect(tandem_attention_fwd(e->s, &sh, &f), TANDEM_E_INVALID, "'p'", "i32");
    tandem_attention_bwd_io b = {.dy = e->a, .q = e->a, .k = e->b, .v = e->c, .p = e->uncommitted};
    expect(tandem_attention_bwd(e->s, &sh, &b), TANDEM_E_STATE, "'pending'", NULL);
    b.p = e->other;
    expect(tandem_attention_bwd(e->s, &sh, &b), TANDEM_E_INVALID, "'elsewhere'", NULL);
    b.p = e->a; /* the inputs pass now; d_o is the first tensor missing */
    expect(tandem_attention_bwd(e->s, &sh, &b), TANDEM_E_INVALID, "'d_o'", "NULL");
    /* bf16: the operands q, k, v, p, y are bf16, and the f32 scores are needed */
    sh.bf16 = 1;
    expect(tandem_attention_fwd(e->s, &sh, &f), TANDEM_E_INVALID, "'q'", "bf16");
    f.q = f.k = f.v = f.p = f.y = e->h;
    expect(tandem_attention_fwd(e->s, &sh, &f), TANDEM_E_INVALID, "'scores'", "NULL");
    f.scores = e->h;
    expect(tandem_attention_fwd(e->s, &sh, &f), TANDEM_E_INVALID, "'scores'", "bf16");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copies),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_gemm_bias),
        cmocka_unit_test(test_launch),
        cmocka_unit_test(test_pinned),
        cmocka_unit_test(test_attention_checks),
    };
    return cmocka_run_group_tests_name("dev", tests, setup, teardown);
}
