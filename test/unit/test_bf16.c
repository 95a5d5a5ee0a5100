/* test_bf16.c — precision bf16 (runtime/model/model.h, "Precision"):
 *
 *   host refuses: a bf16 model on a host device is TANDEM_E_UNSUPPORTED naming precision.
 *   plan:         for the tiny model on CUDA alignment, the bf16 plan declares the GEMM-only
 *                 activations (LN outputs, q/k/v, attention probabilities, heads merged, GELU
 *                 outputs, prenet input) bf16 and everything else f32 as fp32, adds the bf16
 *                 weight copy, and its model arena is smaller than the fp32 plan's.
 *   gradients:    one micro-batch's gradients through the stand-in cuda driver in bf16 vs the
 *                 fp32 host backend's (whose gradients test_model_grad checks against central
 *                 differences in double): normalised error ||g16 - g32|| / ||g32|| <= TOL_GRAD.
 *   training:     TRAIN_STEPS steps in bf16 on the stand-in vs fp32 on the host from the same
 *                 seed and batch: loss relative difference <= TOL_LOSS at every step, and the
 *                 stand-in reported no misuse (bf16 layouts, ranges).
 *
 * Tolerances. bf16 keeps 8 significant bits: one rounding is off by at most u = 2^-9 ~ 2e-3
 * relative. A value on the forward path of this 2-layer model passes about 10 roundings
 * (prenet input, LN1, q/k/v, P, heads merged, LN2, GELU per layer, final LN, weights), so
 * worst-case aligned errors reach ~10u = 2e-2 and independent ones ~sqrt(10)u ~ 6e-3; the
 * loss is a mean of many such values, so TOL_LOSS = 2e-2 is the worst case, not a loose guess.
 * Gradients pass the forward's roundings plus the backward's casts of dy (about twice as
 * many, but the norm-wise error averages them): TOL_GRAD = 2e-2 = 10u as well. Observed: loss
 * ~4e-5 relative (the L1 averages thousands of independent errors), gradients ~3e-3 (1.5u).
 * A wrong seam (an uncast f32 read as bf16, a stale weight
 * copy, a bf16 tensor read with f32 strides) is off by O(1).
 * TANDEM_TEST_NO_CUBLASLT=1 runs the cuda parts on the fatbin's gemm_bf16 instead of the
 * stand-in cuBLASLt. Seed printed; replay with TANDEM_TEST_SEED.
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

#include "runtime/core/config.h"
#include "runtime/core/dev.h"
#include "runtime/model/model.h"
#include "runtime/text/symbols.h"
#include "runtime/core/pool_internal.h"
#include "tandem.h"
#include "test/model_batch.h"
#include "test/fixtures.h"
#include "runtime/model/train_step.h"
#include "tools/env_options.h"

#define FAKECUDA_DIR TANDEM_TEST_BUILD_DIR "/test/fakecuda"
#define DRIVER FAKECUDA_DIR "/libcuda.so.1"
#define CUBLASLT FAKECUDA_DIR "/libcublasLt.so.13"

#define TRAIN_STEPS 5
#define TOL_LOSS 2e-2
#define TOL_GRAD 2e-2

static uint64_t seed;

static void small_config(tandem_config *cfg, const char *precision) {
    model_batch_small_config(cfg);
    CHECK(tandem_config_set(cfg, "lr", "0.003"));
    CHECK(tandem_config_set(cfg, "warmup_steps", "2"));
    CHECK(tandem_config_set(cfg, "max_steps", "100"));
    CHECK(tandem_config_set(cfg, "precision", precision));
    CHECK(tandem_config_check(cfg));
}

/* ---- a model with one fixed batch ----------------------------------------------------------- */

typedef struct run {
    tandem_config cfg;
    tandem_model_dims dims;
    tandem_device *dev;
    tandem_stream *s;
    tandem_pool *pool;
    tandem_model m;
    tandem_optim opt;
    tandem_train_state st;
    tandem_tensor *tok, *mel, *msk, *stp;
    tandem_model_batch mb;
} run;

static void run_open(run *r, tandem_backend be, const char *precision, const host_batch *hb) {
    memset(r, 0, sizeof *r);
    small_config(&r->cfg, precision);
    CHECK(tandem_model_dims_from_config(&r->cfg, tandem_symbols_count(), &r->dims));
    tandem_optim_from_config(&r->cfg, &r->opt);
    CHECK(tandem_device_open(be, 0, &r->dev));
    CHECK(tandem_stream_create(r->dev, &r->s));
    CHECK(tandem_pool_create(r->dev, "model", 0, &r->pool));
    CHECK(tandem_model_declare(&r->m, r->dev, r->pool, &r->dims));
    const tandem_model_dims *d = &r->dims;
    const int64_t s2[2] = {d->batch, d->text_len}, s3[3] = {d->batch, d->frames, 80};
    const int64_t sf[2] = {d->batch, d->frames};
    CHECK(tandem_pool_declare(r->pool, "tokens", TANDEM_I32, 2, s2, TANDEM_PERSISTENT, 0, 0, &r->tok));
    CHECK(tandem_pool_declare(r->pool, "mels", TANDEM_F32, 3, s3, TANDEM_PERSISTENT, 0, 0, &r->mel));
    CHECK(tandem_pool_declare(r->pool, "mask", TANDEM_F32, 2, sf, TANDEM_PERSISTENT, 0, 0, &r->msk));
    CHECK(tandem_pool_declare(r->pool, "stop", TANDEM_F32, 2, sf, TANDEM_PERSISTENT, 0, 0, &r->stp));
    CHECK(tandem_pool_commit(r->pool));
    CHECK(tandem_model_init_params(&r->m, r->s, seed));
    const size_t nt = (size_t)d->batch * d->text_len, nf = (size_t)d->batch * d->frames;
    CHECK(tandem_tensor_upload(r->s, r->tok, hb->tokens, nt * 4));
    CHECK(tandem_tensor_upload(r->s, r->mel, hb->mels, nf * 80 * 4));
    CHECK(tandem_tensor_upload(r->s, r->msk, hb->mask, nf * 4));
    CHECK(tandem_tensor_upload(r->s, r->stp, hb->stop, nf * 4));
    CHECK(tandem_stream_sync(r->s));
    r->mb.tokens = r->tok;
    r->mb.mels = r->mel;
    r->mb.frame_mask = r->msk;
    r->mb.stop_targets = r->stp;
    r->mb.host_text_lengths = hb->text_len; /* staged and uploaded by the model */
    r->mb.host_frame_lengths = hb->frame_len;
}

static void run_close(run *r) {
    tandem_model_free(&r->m);
    tandem_pool_destroy(r->pool);
    tandem_stream_destroy(r->s);
    tandem_device_close(r->dev);
}

static void need_stand_in(void) {
    if (access(DRIVER, R_OK) != 0 || access(CUBLASLT, R_OK) != 0)
        fail_msg("the stand-in driver is not built (%s); build it with make test-build", DRIVER);
}

static void no_misuse(void) {
    void *h = dlopen(DRIVER, RTLD_NOW | RTLD_NOLOAD);
    int (*count)(void) = h ? (int (*)(void))dlsym(h, "tandem_fakecuda_error_count") : NULL;
    if (!count) fail_msg("the cuda backend did not load the stand-in driver %s", DRIVER);
    assert_int_equal(count(), 0);
}

/* ---- tests ------------------------------------------------------------------------------------ */

static void test_host_refuses(void **state) {
    (void)state;
    tandem_config cfg;
    small_config(&cfg, "bf16");
    tandem_model_dims d;
    CHECK(tandem_model_dims_from_config(&cfg, tandem_symbols_count(), &d));
    assert_int_equal(d.bf16, 1);
    tandem_device *dev;
    tandem_pool *pool;
    CHECK(tandem_device_open(TANDEM_BACKEND_HOST, 0, &dev));
    CHECK(tandem_pool_create(dev, "model", 0, &pool));
    tandem_model m;
    assert_int_equal(tandem_model_declare(&m, dev, pool, &d), TANDEM_E_UNSUPPORTED);
    printf("host: %s\n", tandem_last_error());
    assert_non_null(strstr(tandem_last_error(), "precision bf16"));
    assert_non_null(strstr(tandem_last_error(), "fp32"));
    tandem_model_free(&m);
    tandem_pool_destroy(pool);
    tandem_device_close(dev);
}

static void plan_attn(const char *precision, const char *attention, tandem_backend be, tandem_model *m,
                      tandem_pool **pool, tandem_pool_stats *stats) {
    tandem_config cfg;
    tandem_config_init(&cfg); /* the tiny model */
    CHECK(tandem_config_set(&cfg, "precision", precision));
    CHECK(tandem_config_set(&cfg, "attention", attention));
    CHECK(tandem_config_check(&cfg));
    tandem_model_dims d;
    CHECK(tandem_model_dims_from_config(&cfg, tandem_symbols_count(), &d));
    CHECK(tandem_pool_create_offline("model", be, 0, pool));
    CHECK(tandem_model_declare_plan(m, be, *pool, &d));
    CHECK(tandem_pool_plan(*pool));
    tandem_pool_get_stats(*pool, stats);
}
/* The fused attention: what the plan below checks (fp32 on cuda: auto is materialised). */
static void plan_of(const char *precision, tandem_backend be, tandem_model *m, tandem_pool **pool,
                    tandem_pool_stats *stats) {
    plan_attn(precision, "fused", be, m, pool, stats);
}

/* attention: auto on a CUDA model device: fused on tensor cores in bf16, materialised in fp32. */
static void test_attention_auto(void **state) {
    (void)state;
    const char *prec[2] = {"bf16", "fp32"};
    for (int i = 0; i < 2; i++) {
        tandem_model m;
        tandem_pool *p;
        tandem_pool_stats st;
        plan_attn(prec[i], "auto", TANDEM_BACKEND_CUDA, &m, &p, &st);
        printf("auto, %s on cuda: %s\n", prec[i], tandem_attention_tc(&m.attn) ? "fused, tensor cores"
                                                   : tandem_attention_fused(&m.attn) ? "fused" : "materialised");
        /* materialised on CUDA in either precision until a GPU has measured the TC kernels */
        assert_int_equal(tandem_attention_tc(&m.attn), 0);
        assert_int_equal(tandem_attention_fused(&m.attn), 0);
        tandem_model_free(&m);
        tandem_pool_destroy(p);
    }
}

/* strict_gemm: with cuBLASLt's heuristic rejecting the GELU epilogue (the stand-in's knob), the
 * model declares fine and lists the fc GEMMs as split fallbacks; with strict_gemm the declare
 * fails naming them. Without the knob, strict_gemm declares (nothing falls back). */
static void test_strict_gemm(void **state) {
    (void)state;
    need_stand_in();
    if (getenv("TANDEM_TEST_NO_CUBLASLT") || getenv("TANDEM_FAKECUDA_LT_NO_ALGO_EPILOGUE")) skip();
    tandem_config cfg;
    small_config(&cfg, "bf16");
    tandem_model_dims dims;
    CHECK(tandem_model_dims_from_config(&cfg, tandem_symbols_count(), &dims));
    for (int knob = 0; knob < 2; knob++)
        for (int strict = 0; strict < 2; strict++) {
            if (knob) setenv("TANDEM_FAKECUDA_LT_NO_ALGO_EPILOGUE", "GELU_AUX_BIAS", 1);
            tandem_device *dev;
            tandem_pool *pool;
            tandem_model m;
            memset(&m, 0, sizeof m);
            CHECK(tandem_device_open(TANDEM_BACKEND_CUDA, 0, &dev)); /* a fresh plan table */
            CHECK(tandem_pool_create(dev, "model", 0, &pool));
            dims.strict_gemm = strict;
            tandem_status st = tandem_model_declare(&m, dev, pool, &dims);
            char list[4096];
            const int n = tandem_dev_gemm_fallbacks(dev, list, sizeof list);
            printf("knob %d strict %d: %s, %d fallbacks\n", knob, strict, tandem_status_name(st), n);
            assert_int_equal(n, knob ? 2 : 0); /* fc in the first block and in the last (mel rows) */
            assert_int_equal(st, knob && strict ? TANDEM_E_UNSUPPORTED : TANDEM_OK);
            if (knob) assert_non_null(strstr(list, "gelu (aux out): cuBLASLt GEMM + epilogue kernel"));
            if (knob && strict) assert_non_null(strstr(tandem_last_error(), "strict_gemm: 2 GEMM shapes"));
            tandem_model_free(&m); /* also after a failed declare: what it allocated */
            tandem_pool_destroy(pool);
            tandem_device_close(dev);
            unsetenv("TANDEM_FAKECUDA_LT_NO_ALGO_EPILOGUE");
        }
}

static void test_plan(void **state) {
    (void)state;
    tandem_model m32, m16;
    tandem_pool *p32, *p16;
    tandem_pool_stats s32, s16;
    plan_of("fp32", TANDEM_BACKEND_CUDA, &m32, &p32, &s32);
    plan_of("bf16", TANDEM_BACKEND_CUDA, &m16, &p16, &s16);
    printf("tiny model arena: fp32 %.2f MiB, bf16 %.2f MiB (persistent %zu vs %zu B, per-step "
           "peak %zu vs %zu B)\n", s32.arena_bytes / 1048576.0, s16.arena_bytes / 1048576.0,
           s32.persistent_bytes, s16.persistent_bytes, s32.per_step_peak, s16.per_step_peak);
    assert_true(s16.arena_bytes < s32.arena_bytes);
    assert_true(s16.per_step_peak < s32.per_step_peak);

    assert_null(m32.wcopy);
    assert_non_null(m16.wcopy);
    assert_int_equal(tandem_tensor_dtype(m16.wcopy), TANDEM_BF16);
    /* every parameter: the linear weights, and the biases a bf16 GEMM output adds (the MLP fc's
     * GELU epilogue: cuBLASLt's bias type is D's) */
    assert_int_equal(tandem_tensor_numel(m16.wcopy), m16.n_flat);
    for (int l = 0; l < m16.dims.layers; l++) {
        const tandem_model_layer *a = &m32.layer[l], *b = &m16.layer[l];
        /* the fused attention (tiny's head size) keeps qkv, read by its kernels as operands,
         * and f32 row statistics instead of per-head q, k, v and P */
        assert_true(tandem_attention_fused(&m16.attn));
        assert_true(tandem_attention_tc(&m16.attn)); /* bf16, dh 64: on tensor cores */
        assert_false(tandem_attention_tc(&m32.attn));
        /* f: the GELU epilogue's aux output, of g's type (the DGELU epilogue reads it) */
        const tandem_tensor *gemm_only[6] = {b->h1, b->qkv, b->att, b->h2, b->g, b->f};
        const tandem_tensor *gemm_only32[6] = {a->h1, a->qkv, a->att, a->h2, a->g, a->f};
        assert_null(b->p);
        assert_int_equal(tandem_tensor_dtype(b->lse), TANDEM_F32);
        assert_int_equal(tandem_tensor_dtype(b->ga_sum), TANDEM_F32);
        for (int i = 0; i < 6; i++) {
            assert_int_equal(tandem_tensor_dtype(gemm_only[i]), TANDEM_BF16);
            assert_int_equal(tandem_tensor_dtype(gemm_only32[i]), TANDEM_F32);
            assert_int_equal(tandem_tensor_numel(gemm_only[i]), tandem_tensor_numel(gemm_only32[i]));
        }
        const tandem_tensor *f32[5] = {b->x, b->x_mid, b->mean1, b->rstd2, b->mean2};
        for (int i = 0; i < 5; i++) assert_int_equal(tandem_tensor_dtype(f32[i]), TANDEM_F32);
    }
    assert_int_equal(tandem_tensor_dtype(m16.hf), TANDEM_BF16);
    assert_int_equal(tandem_tensor_dtype(m16.groups), TANDEM_BF16);
    const tandem_tensor *f32[7] = {m16.params, m16.grads, m16.adam_m, m16.adam_v, m16.mel_out,
                                   m16.stop_out, m16.dres};
    for (int i = 0; i < 7; i++) assert_int_equal(tandem_tensor_dtype(f32[i]), TANDEM_F32);
    char rep[4096];
    tandem_pool_report(p16, rep, sizeof rep);
    printf("%s\n", rep);
    tandem_model_free(&m32);
    tandem_model_free(&m16);
    tandem_pool_destroy(p32);
    tandem_pool_destroy(p16);

    /* a planning pool for host devices refuses bf16 as the host device does */
    tandem_config cfg;
    tandem_config_init(&cfg);
    CHECK(tandem_config_set(&cfg, "precision", "bf16"));
    tandem_model_dims d;
    CHECK(tandem_model_dims_from_config(&cfg, tandem_symbols_count(), &d));
    tandem_pool *ph;
    CHECK(tandem_pool_create_offline("model", TANDEM_BACKEND_HOST, 0, &ph));
    tandem_model mh;
    assert_int_equal(tandem_model_declare_plan(&mh, TANDEM_BACKEND_HOST, ph, &d), TANDEM_E_UNSUPPORTED);
    tandem_model_free(&mh);
    tandem_pool_destroy(ph);
}

static float *download(run *r, tandem_tensor *t) {
    float *p = malloc((size_t)r->m.n_flat * sizeof(float));
    assert_non_null(p);
    CHECK(tandem_tensor_download(r->s, p, t, (size_t)r->m.n_flat * sizeof(float)));
    CHECK(tandem_stream_sync(r->s));
    return p;
}

/* FNV-1a of the bytes of p [n]: a fingerprint two builds' runs compare bit for bit. */
static unsigned long long fnv1a(const float *p, int64_t n) {
    const unsigned char *b = (const unsigned char *)p;
    unsigned long long h = 1469598103934665603ull;
    for (size_t i = 0; i < (size_t)n * sizeof *p; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void test_gradients(void **state) {
    (void)state;
    if (!tandem_test_have_fatbin()) {
        printf("host-only build (empty fatbin): skipped\n");
        skip();
    }
    need_stand_in();
    tandem_rng rng = {seed ^ 0x6f16};
    tandem_config cfg;
    small_config(&cfg, "fp32");
    tandem_model_dims d;
    CHECK(tandem_model_dims_from_config(&cfg, tandem_symbols_count(), &d));
    host_batch hb;
    make_batch(&rng, &d, &hb);
    float *g[2];
    double loss[2];
    int64_t n_flat = 0;
    for (int k = 0; k < 2; k++) {
        run r;
        run_open(&r, k ? TANDEM_BACKEND_CUDA : TANDEM_BACKEND_HOST, k ? "bf16" : "fp32", &hb);
        tandem_step_result res;
        CHECK(tandem_train_grads(&r.m, r.s, &r.opt, &r.mb, &res));
        loss[k] = res.loss;
        n_flat = r.m.n_flat;
        g[k] = download(&r, r.m.grads);
        run_close(&r);
    }
    no_misuse();
    double num = 0.0, den = 0.0;
    run r;
    run_open(&r, TANDEM_BACKEND_HOST, "fp32", &hb); /* for the parameter table only */
    for (int p = 0; p < r.m.n_params; p++) {
        const tandem_model_param *pp = &r.m.param[p];
        double pn = 0.0, pd = 0.0;
        for (int64_t i = pp->offset; i < pp->offset + pp->numel; i++) {
            double e = (double)g[1][i] - g[0][i];
            pn += e * e;
            pd += (double)g[0][i] * g[0][i];
        }
        num += pn;
        den += pd;
        if (pd > 0 && sqrt(pn / pd) > TOL_GRAD)
            printf("  %-28s normalised error %.2e\n", pp->name, sqrt(pn / pd));
    }
    run_close(&r);
    double err = sqrt(num / den);
    printf("gradients: fp32 host loss %.9g, bf16 stand-in %.9g; ||g16 - g32|| / ||g32|| = %.2e "
           "(limit %.0e); bits fnv1a fp32 %016llx, bf16 %016llx\n", loss[0], loss[1], err, TOL_GRAD,
           fnv1a(g[0], n_flat), fnv1a(g[1], n_flat));
    assert_true(err <= TOL_GRAD);
    assert_true(fabs(loss[1] - loss[0]) <= TOL_LOSS * fabs(loss[0]));
    free(g[0]);
    free(g[1]);
    free_batch(&hb);
}

static void test_training_matches_fp32(void **state) {
    (void)state;
    if (!tandem_test_have_fatbin()) {
        printf("host-only build (empty fatbin): skipped\n");
        skip();
    }
    need_stand_in();
    tandem_rng rng = {seed ^ 0xb16};
    tandem_config cfg;
    small_config(&cfg, "fp32");
    tandem_model_dims d;
    CHECK(tandem_model_dims_from_config(&cfg, tandem_symbols_count(), &d));
    host_batch hb;
    make_batch(&rng, &d, &hb);
    double loss[2][TRAIN_STEPS];
    for (int k = 0; k < 2; k++) {
        run r;
        run_open(&r, k ? TANDEM_BACKEND_CUDA : TANDEM_BACKEND_HOST, k ? "bf16" : "fp32", &hb);
        tandem_device_info info;
        CHECK(tandem_device_get_info(r.dev, &info));
        printf("%s run on '%s'\n", k ? "bf16" : "fp32", info.name);
        for (int i = 0; i < TRAIN_STEPS; i++) {
            tandem_step_result res;
            CHECK(tandem_train_step(&r.m, r.s, &r.opt, &r.st, &r.mb, &res));
            assert_false(res.skipped);
            loss[k][i] = res.loss;
        }
        run_close(&r);
    }
    no_misuse();
    for (int i = 0; i < TRAIN_STEPS; i++) {
        double rel = fabs(loss[1][i] - loss[0][i]) / fabs(loss[0][i]);
        printf("step %d: fp32 host loss %.9g, bf16 stand-in cuda %.9g, relative difference %.2e "
               "(limit %.0e)\n", i, loss[0][i], loss[1][i], rel, TOL_LOSS);
        assert_true(rel <= TOL_LOSS);
    }
    /* the weights moved: a stale bf16 copy would repeat step 0's loss */
    assert_true(loss[1][TRAIN_STEPS - 1] < loss[1][0]);
    free_batch(&hb);
}

int main(void) {
    seed = tandem_test_seed("test_bf16");
    /* The cuda backend loads the driver once per process: point it at the stand-in first. */
    setenv("TANDEM_CUDA_DRIVER", DRIVER, 1);
    const char *no_lt = getenv("TANDEM_TEST_NO_CUBLASLT");
    setenv("TANDEM_CUBLASLT", no_lt && !strcmp(no_lt, "1") ? "none" : CUBLASLT, 1);
    if (cli_env_apply(NULL, 0) != TANDEM_OK) return 2;
    unsetenv("TANDEM_FAKECUDA_DEVICES");
    unsetenv("TANDEM_FAKECUDA_ARCH");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_refuses),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_attention_auto),
        cmocka_unit_test(test_strict_gemm),
        cmocka_unit_test(test_gradients),
        cmocka_unit_test(test_training_matches_fp32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
