/* test_model_kv.c — inference with the key/value cache (runtime/model/model_kv.h) against the
 * full forward, in both precisions, on a small random model (B = 1, forward only):
 *   the cache runs the text positions, then every mel position j; the full forward gets the
 *   cache's own generated groups as its input mels (so both see the same inputs and no
 *   difference feeds back), and every generated frame and stop logit must agree:
 *     fp32 (host, and the stand-in cuda driver): within 1e-5 relative (same kernels, the
 *       GEMMs' f32 accumulation order is the only difference);
 *     bf16 (stand-in cuda only; the host refuses bf16): within TOL_BF16 = 2e-2 = 10u, u = 2^-9,
 *       of (1 + |x|): the two paths cast the same quantities at the same seams, and an f32
 *       accumulation-order difference can move a value across at most one bf16 rounding per
 *       seam, ~10 seams on this 2-layer path (test_bf16's derivation). A wrong seam, stride or
 *       cache position is off by O(1).
 *   Both attention paths: fused, and materialised (scores, the one-row softmax, P V).
 *   Nothing is allocated by begin and the steps (tandem_alloc_count). Texts of several lengths
 *   exercise the key mask of the padded text positions.
 * TANDEM_TEST_BACKEND=cuda runs fp32 and bf16 on the stand-in; plain: fp32 on the host. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/model/model_kv.h"
#include "runtime/text/symbols.h"
#include "test/model_batch.h"

#define TOL_FP32 1e-5
#define TOL_BF16 2e-2

static uint64_t g_seed;
static tandem_backend g_backend = TANDEM_BACKEND_HOST;

typedef struct kv_run {
    tandem_model_dims dims;
    tandem_device *dev;
    tandem_stream *s;
    tandem_pool *pool;
    tandem_model m;
    tandem_model_kv kv;
    tandem_tensor *tok, *mel, *msk, *stp;
} kv_run;

static void kv_open(kv_run *r, const char *precision, int materialised) {
    memset(r, 0, sizeof *r);
    tandem_config cfg;
    model_batch_small_config(&cfg);
    CHECK(tandem_config_set(&cfg, "batch_size", "1"));
    CHECK(tandem_config_set(&cfg, "precision", precision));
    /* exact f32 GEMMs: with TF32 the one-row cache GEMMs and the full forward's differ by TF32's
     * rounding wherever cuBLASLt picks a tensor-core algorithm for one and not the other (a real
     * H100: 1.5e-4), which the stand-in (TF32 rounding on every f32 GEMM) never shows */
    CHECK(tandem_config_set(&cfg, "tf32", "false"));
    CHECK(tandem_model_dims_from_config(&cfg, tandem_symbols_count(), &r->dims));
    r->dims.forward_only = 1;
    r->dims.attn_materialised = materialised; /* 1: scores, one-row softmax, P V (model_kv.c) */
    CHECK(tandem_device_open(g_backend, 0, &r->dev));
    CHECK(tandem_stream_create(r->dev, &r->s));
    CHECK(tandem_pool_create(r->dev, "model", 0, &r->pool));
    CHECK(tandem_model_declare(&r->m, r->dev, r->pool, &r->dims));
    CHECK(tandem_model_kv_declare(&r->kv, &r->m, r->pool));
    const tandem_model_dims *d = &r->dims;
    const int64_t s2[2] = {1, d->text_len}, s3[3] = {1, d->frames, 80}, sf[2] = {1, d->frames};
    CHECK(tandem_pool_declare(r->pool, "tokens", TANDEM_I32, 2, s2, TANDEM_PERSISTENT, 0, 0, &r->tok));
    CHECK(tandem_pool_declare(r->pool, "mels", TANDEM_F32, 3, s3, TANDEM_PERSISTENT, 0, 0, &r->mel));
    CHECK(tandem_pool_declare(r->pool, "mask", TANDEM_F32, 2, sf, TANDEM_PERSISTENT, 0, 0, &r->msk));
    CHECK(tandem_pool_declare(r->pool, "stop", TANDEM_F32, 2, sf, TANDEM_PERSISTENT, 0, 0, &r->stp));
    CHECK(tandem_pool_commit(r->pool));
    CHECK(tandem_model_init_params(&r->m, r->s, g_seed));
    CHECK(tandem_op_fill(r->s, r->msk, 1.0f));
    CHECK(tandem_op_fill(r->s, r->stp, 0.0f));
    CHECK(tandem_stream_sync(r->s));
}

static void kv_close(kv_run *r) {
    tandem_model_kv_free(&r->kv);
    tandem_model_free(&r->m);
    tandem_pool_destroy(r->pool);
    tandem_stream_destroy(r->s);
    tandem_device_close(r->dev);
}

/* One text of count real tokens: the cache's generation vs the full forward; the worst
 * relative difference. */
static double compare(kv_run *r, tandem_rng *rng, int count) {
    const tandem_model_dims *d = &r->dims;
    const int G = d->group, Tm = d->mel_len, R = d->r;
    int32_t ids[64];
    for (int t = 0; t < d->text_len; t++)
        ids[t] = t < count ? (int32_t)tandem_rng_int(rng, 0, d->vocab - 1) : TANDEM_SYM_PAD;
    float *kmel = calloc((size_t)Tm * G, sizeof(float)), *kstop = calloc((size_t)Tm * R, sizeof(float));
    float *fmel = calloc((size_t)Tm * G, sizeof(float)), *fstop = calloc((size_t)Tm * R, sizeof(float));
    const uint64_t a0 = tandem_alloc_count();
    CHECK(tandem_model_kv_begin(&r->kv, r->s, ids, count));
    for (int j = 0; j < Tm; j++) {
        CHECK(tandem_model_kv_step(&r->kv, r->s, j));
        CHECK(tandem_dev_download(r->s, kmel + (size_t)j * G, r->kv.mel, 0, (size_t)G * 4));
        CHECK(tandem_dev_download(r->s, kstop + (size_t)j * R, r->kv.stop, 0, (size_t)R * 4));
        CHECK(tandem_stream_sync(r->s));
    }
    assert_true(tandem_alloc_count() == a0);
    /* the full forward with the generated frames as its (shifted) input */
    CHECK(tandem_tensor_upload(r->s, r->tok, ids, (size_t)d->text_len * 4));
    CHECK(tandem_tensor_upload(r->s, r->mel, kmel, (size_t)Tm * G * 4));
    const int32_t tl[1] = {count}, fl[1] = {d->frames};
    tandem_model_batch b;
    memset(&b, 0, sizeof b);
    b.tokens = r->tok, b.mels = r->mel, b.frame_mask = r->msk, b.stop_targets = r->stp;
    b.host_text_lengths = tl, b.host_frame_lengths = fl;
    CHECK(tandem_model_forward(&r->m, r->s, &b, 0));
    CHECK(tandem_dev_download(r->s, fmel, r->m.mel_out, 0, (size_t)Tm * G * 4));
    CHECK(tandem_dev_download(r->s, fstop, r->m.stop_out, 0, (size_t)Tm * R * 4));
    CHECK(tandem_stream_sync(r->s));
    double worst = 0, mag = 0;
    for (int i = 0; i < Tm * G; i++) {
        worst = fmax(worst, fabs((double)kmel[i] - fmel[i]) / (1.0 + fabs(fmel[i])));
        mag = fmax(mag, fabs(fmel[i]));
    }
    for (int i = 0; i < Tm * R; i++)
        worst = fmax(worst, fabs((double)kstop[i] - fstop[i]) / (1.0 + fabs(fstop[i])));
    assert_true(mag > 0.1); /* not a vacuous comparison of zeros */
    free(kmel), free(kstop), free(fmel), free(fstop);
    return worst;
}

static void check_precision(const char *precision, double tol) {
    for (int mat = 0; mat < 2; mat++) {
        kv_run r;
        kv_open(&r, precision, mat);
        tandem_rng rng = {g_seed ^ 0x4b56};
        const int counts[3] = {3, 7, r.dims.text_len};
        for (int k = 0; k < 3; k++) {
            const double w = compare(&r, &rng, counts[k]);
            printf("  %s, %s attention, %d of %d text tokens: kv cache vs full forward, worst "
                   "relative difference %.2e (tolerance %.0e)\n", precision,
                   mat ? "materialised" : "fused", counts[k], r.dims.text_len, w, tol);
            assert_true(w <= tol);
        }
        kv_close(&r);
    }
}

static void test_fp32(void **state) {
    (void)state;
    check_precision("fp32", TOL_FP32);
}

static void test_bf16(void **state) {
    (void)state;
    if (g_backend != TANDEM_BACKEND_CUDA) {
        printf("  bf16: the host backend trains and infers in fp32 only; the cuda variant runs it\n");
        skip();
    }
    check_precision("bf16", TOL_BF16);
}

int main(void) {
    g_seed = tandem_test_seed("test_model_kv");
    const char *be = getenv("TANDEM_TEST_BACKEND");
    if (be && !strcmp(be, "cuda")) g_backend = TANDEM_BACKEND_CUDA;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp32),
        cmocka_unit_test(test_bf16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
