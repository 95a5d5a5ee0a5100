/* test_grad_layers.c — the layer kernels' host implementations (kernels/layers_host.c)
 * against this file's own double-precision forward references, and every backward against
 * central finite differences of those references.
 *
 * Method: loss = sum(out * w) with random w; the numeric gradient of every input and parameter
 * is (L(p + h) - L(p - h)) / 2h evaluated in double (h = 1e-5 at inputs of order 1: truncation
 * ~h^2 ~ 1e-10, rounding ~1e-16 / h ~ 1e-11, both far below the tolerance); the analytic one
 * is the host backward (f32) fed dy = w.
 *
 * Error: relative L2, ||a - ref|| / ||ref|| (absolute ||a - ref|| where ref is all zero).
 *   forward outputs  <= 1e-6: each f32 output carries one final rounding (2^-24 ~ 6e-8) plus
 *                              the f32 products of the inputs, a few ulp in all;
 *   gradients        <= 1e-5: f32 sums over a row or a column (up to ~700 terms) and the
 *                              cancellation in LayerNorm's dx put the analytic gradient a few
 *                              1e-7 from the truth; a single wrong element among the ~100-2000
 *                              checked moves the error to > 1e-2.
 * Accumulating gradients (dgamma, dbeta, db, d_sym_emb, d_pos_emb) start from random values and
 * must end at start + gradient; overwritten ones (dx, d_prenet_out) start as NaN.
 * Shapes are random per run (seed printed; replay with TANDEM_TEST_SEED).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/registry.h"
#include "test/testutil.h"

#define TOL_FWD 1e-6
#define TOL_GRAD 1e-5
#define FD_H 1e-5

static uint64_t seed;

/* ---- helpers ---- */
static float *fbuf(int64_t n) {
    float *p = (float *)malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    assert_non_null(p);
    return p;
}
static double *dbuf(int64_t n) {
    double *p = (double *)calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    assert_non_null(p);
    return p;
}
static void fnan(float *p, int64_t n) {
    for (int64_t i = 0; i < n; i++) p[i] = NAN;
}
static double *to_double(const float *p, int64_t n) {
    double *d = dbuf(n);
    for (int64_t i = 0; i < n; i++) d[i] = p[i];
    return d;
}

/* Relative L2 error of a (f32) against ref (double); fails the test, naming what, above tol. */
static void check(const char *what, const float *a, const double *ref, int64_t n, double tol) {
    double err = 0, norm = 0;
    int64_t worst = -1;
    double worst_d = -1;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i])) fail_msg("%s[%lld] is NaN (reference %g)", what, (long long)i, ref[i]);
        double d = (a[i] - ref[i]) * (a[i] - ref[i]);
        err += d;
        norm += ref[i] * ref[i];
        if (d > worst_d) worst_d = d, worst = i;
    }
    double rel = norm > 0 ? sqrt(err / norm) : sqrt(err);
    printf("  %-34s n=%-6lld error %.3g (tolerance %.0e)\n", what, (long long)n, rel, tol);
    if (!(rel <= tol))
        fail_msg("%s: error %.3g > %.0e (largest difference at [%lld]: got %.9g, reference %.9g)",
                 what, rel, tol, (long long)worst, a[worst], ref[worst]);
}

/* Central differences of loss() with respect to every element of p. */
typedef double (*loss_fn)(const void *ctx);
static void numeric_grad(loss_fn loss, const void *ctx, double *p, int64_t n, double *g) {
    for (int64_t i = 0; i < n; i++) {
        double keep = p[i];
        p[i] = keep + FD_H;
        double lp = loss(ctx);
        p[i] = keep - FD_H;
        double lm = loss(ctx);
        p[i] = keep;
        g[i] = (lp - lm) / (2 * FD_H);
    }
}
/* start + gradient, the expected value of an accumulated gradient. */
static double *plus(const float *start, const double *g, int64_t n) {
    double *r = dbuf(n);
    for (int64_t i = 0; i < n; i++) r[i] = start[i] + g[i];
    return r;
}

/* ---- LayerNorm ---- */
typedef struct {
    int rows, d;
    double *x, *gamma, *beta, *w; /* [rows, d], [d], [d], [rows, d] */
} ln_ctx;

/* y = (x - mean) / sqrt(var + eps) * gamma + beta, biased variance; optional outputs. */
static void ln_ref(const ln_ctx *c, double *y, double *mean, double *rstd) {
    for (int r = 0; r < c->rows; r++) {
        const double *x = c->x + (int64_t)r * c->d;
        double m = 0, v = 0;
        for (int k = 0; k < c->d; k++) m += x[k];
        m /= c->d;
        for (int k = 0; k < c->d; k++) v += (x[k] - m) * (x[k] - m);
        v /= c->d;
        double s = 1.0 / sqrt(v + (double)TANDEM_LAYERNORM_EPS);
        for (int k = 0; k < c->d; k++) y[(int64_t)r * c->d + k] = (x[k] - m) * s * c->gamma[k] + c->beta[k];
        if (mean) mean[r] = m;
        if (rstd) rstd[r] = s;
    }
}
static double ln_loss(const void *vc) {
    const ln_ctx *c = (const ln_ctx *)vc;
    int64_t n = (int64_t)c->rows * c->d;
    double *y = dbuf(n), l = 0;
    ln_ref(c, y, NULL, NULL);
    for (int64_t i = 0; i < n; i++) l += y[i] * c->w[i];
    free(y);
    return l;
}

static void run_layernorm(tandem_rng *rng, int rows, int d) {
    printf("layernorm rows=%d d=%d\n", rows, d);
    int64_t n = (int64_t)rows * d;
    float *x = fbuf(n), *gamma = fbuf(d), *beta = fbuf(d), *w = fbuf(n);
    float *y = fbuf(n), *mean = fbuf(rows), *rstd = fbuf(rows), *dx = fbuf(n);
    float *dgamma = fbuf(d), *dbeta = fbuf(d), *dgamma0 = fbuf(d), *dbeta0 = fbuf(d);
    float *scratch = fbuf(tandem_layernorm_bwd_scratch_floats(rows, d));
    /* Rows with their own offset and spread. Kept well conditioned (|offset| <= spread-ish,
     * d >= 4): with d = 2 or |mean| >> std the row is nearly degenerate, and the f32 mean and
     * rstd that the backward takes from the forward (as every framework's does) lose digits
     * that the cancellation in dx then amplifies past any f32 tolerance; that is conditioning,
     * not a bug to test for. The kernel test covers offset rows in the forward. */
    for (int r = 0; r < rows; r++) {
        float off = tandem_rng_uniform(rng, -1.0f, 1.0f), spread = tandem_rng_uniform(rng, 0.5f, 2.0f);
        tandem_rng_fill(rng, x + (int64_t)r * d, d, off - spread, off + spread);
    }
    tandem_rng_fill(rng, gamma, d, 0.5f, 1.5f);
    tandem_rng_fill(rng, beta, d, -0.5f, 0.5f);
    tandem_rng_fill(rng, w, n, -1.0f, 1.0f);
    tandem_rng_fill(rng, dgamma0, d, -1.0f, 1.0f);
    tandem_rng_fill(rng, dbeta0, d, -1.0f, 1.0f);
    memcpy(dgamma, dgamma0, (size_t)d * sizeof(float));
    memcpy(dbeta, dbeta0, (size_t)d * sizeof(float));
    fnan(y, n);
    fnan(dx, n);

    tandem_k_layernorm_fwd_args fa = {x, gamma, beta, y, NULL, mean, rstd, rows, d, TANDEM_LAYERNORM_EPS};
    tandem_k_layernorm_fwd_host(&fa);
    tandem_k_layernorm_bwd_args ba = {w, x, mean, rstd, gamma, dx, NULL, 0, scratch, rows, d, NULL};
    tandem_k_layernorm_bwd_host(&ba);
    tandem_k_layernorm_bwd_params_args pa = {scratch, dgamma, dbeta, NULL, rows, d};
    tandem_k_layernorm_bwd_params_host(&pa);

    ln_ctx c = {rows, d, to_double(x, n), to_double(gamma, d), to_double(beta, d), to_double(w, n)};
    double *ry = dbuf(n), *rmean = dbuf(rows), *rrstd = dbuf(rows);
    ln_ref(&c, ry, rmean, rrstd);
    check("layernorm_fwd y", y, ry, n, TOL_FWD);
    check("layernorm_fwd mean", mean, rmean, rows, TOL_FWD);
    check("layernorm_fwd rstd", rstd, rrstd, rows, TOL_FWD);

    double *gx = dbuf(n), *gg = dbuf(d), *gb = dbuf(d);
    numeric_grad(ln_loss, &c, c.x, n, gx);
    numeric_grad(ln_loss, &c, c.gamma, d, gg);
    numeric_grad(ln_loss, &c, c.beta, d, gb);
    double *eg = plus(dgamma0, gg, d), *eb = plus(dbeta0, gb, d);
    check("layernorm_bwd dx", dx, gx, n, TOL_GRAD);
    check("layernorm_bwd_params dgamma (+=)", dgamma, eg, d, TOL_GRAD);
    check("layernorm_bwd_params dbeta (+=)", dbeta, eb, d, TOL_GRAD);

    free(x), free(gamma), free(beta), free(w), free(y), free(mean), free(rstd), free(dx);
    free(dgamma), free(dbeta), free(dgamma0), free(dbeta0), free(scratch);
    free(c.x), free(c.gamma), free(c.beta), free(c.w), free(ry), free(rmean), free(rrstd);
    free(gx), free(gg), free(gb), free(eg), free(eb);
}

static void test_layernorm(void **state) {
    (void)state;
    tandem_rng rng = {seed ^ 0x11};
    run_layernorm(&rng, (int)tandem_rng_int(&rng, 1, 8), (int)tandem_rng_int(&rng, 4, 64));
    run_layernorm(&rng, 1, 1); /* d = 1: y = beta, dx = 0 */
    /* More rows than layernorm_bwd's 512 blocks: blocks take several rows each. */
    run_layernorm(&rng, (int)tandem_rng_int(&rng, 513, 700), (int)tandem_rng_int(&rng, 4, 6));
}

/* ---- GELU ---- */
typedef struct {
    int64_t n;
    double *x, *w;
} gelu_ctx;

static double gelu_ref(double x) {
    const double k = sqrt(2.0 / acos(-1.0));
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}
static double gelu_loss(const void *vc) {
    const gelu_ctx *c = (const gelu_ctx *)vc;
    double l = 0;
    for (int64_t i = 0; i < c->n; i++) l += gelu_ref(c->x[i]) * c->w[i];
    return l;
}

/* gelu_bwd's host implementation takes the derivative in vector code with its own exp and
 * recomputes with layers.h's scalar function only where the difference could show
 * (kernels/layers_host.c). Every element on a dense grid of x over [-12, 12] (spacing ~1e-5,
 * every range of the derivative and both recompute boundaries) must stay within a squared
 * relative error of 1e-12 of tandem_gelu_tanh_grad (the kernel test's tolerance, which a
 * one-element case applies to a single value); exact zeros and the |x| > 9 tails equal. */
static void test_gelu_bwd_grid(void **state) {
    (void)state;
    const int64_t n = 2400001;
    float *x = fbuf(n), *dy = fbuf(n), *dx = fbuf(n);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(-12.0 + 24.0 * (double)i / (double)(n - 1)), dy[i] = 1.0f;
    tandem_k_gelu_bwd_args a = {dy, x, dx, NULL, n};
    tandem_k_gelu_bwd_host(&a);
    double worst = 0.0;
    int64_t at = 0, differ = 0;
    for (int64_t i = 0; i < n; i++) {
        const float ref = tandem_gelu_tanh_grad(x[i]);
        if (dx[i] == ref) continue;
        differ++;
        const double e = ref != 0.0f ? ((double)dx[i] - ref) / ref : INFINITY;
        if (e * e > worst) worst = e * e, at = i;
    }
    printf("gelu_bwd grid: %lld of %lld elements differ from layers.h's, worst squared relative "
           "error %.3g at x = %.6g\n", (long long)differ, (long long)n, worst, (double)x[at]);
    assert_true(worst <= 1e-12);
    free(x), free(dy), free(dx);
}

static void test_gelu(void **state) {
    (void)state;
    tandem_rng rng = {seed ^ 0x22};
    int64_t n = tandem_rng_int(&rng, 50, 400);
    printf("gelu n=%lld\n", (long long)n);
    float *x = fbuf(n), *w = fbuf(n), *y = fbuf(n), *dx = fbuf(n), *inplace = fbuf(n);
    tandem_rng_fill(&rng, x, n, -5.0f, 5.0f);
    /* A few far out, where tanh saturates and the derivative's guard applies. */
    x[0] = 25.0f;
    x[1] = -25.0f;
    tandem_rng_fill(&rng, w, n, -1.0f, 1.0f);
    fnan(y, n);
    fnan(dx, n);
    tandem_k_gelu_fwd_args fa = {x, y, NULL, n};
    tandem_k_gelu_fwd_host(&fa);
    tandem_k_gelu_bwd_args ba = {w, x, dx, NULL, n};
    tandem_k_gelu_bwd_host(&ba);
    memcpy(inplace, w, (size_t)n * sizeof(float));
    tandem_k_gelu_bwd_args ia = {inplace, x, inplace, NULL, n}; /* dx aliasing dy */
    tandem_k_gelu_bwd_host(&ia);

    gelu_ctx c = {n, to_double(x, n), to_double(w, n)};
    double *ry = dbuf(n), *gx = dbuf(n);
    for (int64_t i = 0; i < n; i++) ry[i] = gelu_ref(c.x[i]);
    check("gelu_fwd y", y, ry, n, TOL_FWD);
    numeric_grad(gelu_loss, &c, c.x, n, gx);
    check("gelu_bwd dx", dx, gx, n, TOL_GRAD);
    check("gelu_bwd dx (in place)", inplace, gx, n, TOL_GRAD);

    /* Where x^3 overflows f32: gelu(x) -> max(x, 0), gelu'(x) -> 1 or 0, and no NaN. */
    float big[2] = {1e30f, -1e30f}, ybig[2], ones[2] = {1.0f, 1.0f}, dbig[2];
    tandem_k_gelu_fwd_args fb = {big, ybig, NULL, 2};
    tandem_k_gelu_fwd_host(&fb);
    tandem_k_gelu_bwd_args bb = {ones, big, dbig, NULL, 2};
    tandem_k_gelu_bwd_host(&bb);
    printf("  gelu(+-1e30) = %g, %g; gelu' = %g, %g\n", ybig[0], ybig[1], dbig[0], dbig[1]);
    assert_true(ybig[0] == 1e30f && ybig[1] == 0.0f);
    assert_true(dbig[0] == 1.0f && dbig[1] == 0.0f);
    free(x), free(w), free(y), free(dx), free(inplace), free(c.x), free(c.w), free(ry), free(gx);
}

/* ---- bias_add and its gradient col_sum_acc ---- */
typedef struct {
    int rows, d;
    double *y, *b, *w; /* [rows, d], [d], [rows, d] */
} bias_ctx;

static double bias_loss(const void *vc) {
    const bias_ctx *c = (const bias_ctx *)vc;
    double l = 0;
    for (int r = 0; r < c->rows; r++)
        for (int k = 0; k < c->d; k++) {
            int64_t i = (int64_t)r * c->d + k;
            l += (c->y[i] + c->b[k]) * c->w[i];
        }
    return l;
}

static void run_bias(tandem_rng *rng, int rows, int d) {
    printf("bias_add / col_sum_acc rows=%d d=%d\n", rows, d);
    int64_t n = (int64_t)rows * d;
    float *y = fbuf(n), *b = fbuf(d), *w = fbuf(n), *db = fbuf(d), *db0 = fbuf(d);
    tandem_rng_fill(rng, y, n, -2.0f, 2.0f);
    tandem_rng_fill(rng, b, d, -1.0f, 1.0f);
    tandem_rng_fill(rng, w, n, -1.0f, 1.0f);
    tandem_rng_fill(rng, db0, d, -1.0f, 1.0f);
    memcpy(db, db0, (size_t)d * sizeof(float));
    bias_ctx c = {rows, d, to_double(y, n), to_double(b, d), to_double(w, n)};

    tandem_k_bias_add_args fa = {y, b, rows, d};
    tandem_k_bias_add_host(&fa);
    tandem_k_col_sum_acc_args ba = {w, db, rows, d};
    tandem_k_col_sum_acc_host(&ba);

    double *ry = dbuf(n), *gb = dbuf(d);
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < d; k++) ry[(int64_t)r * d + k] = c.y[(int64_t)r * d + k] + c.b[k];
    check("bias_add y", y, ry, n, TOL_FWD);
    numeric_grad(bias_loss, &c, c.b, d, gb);
    double *eb = plus(db0, gb, d);
    check("col_sum_acc db (+=)", db, eb, d, TOL_GRAD);
    free(y), free(b), free(w), free(db), free(db0), free(c.y), free(c.b), free(c.w);
    free(ry), free(gb), free(eb);
}

static void test_bias(void **state) {
    (void)state;
    tandem_rng rng = {seed ^ 0x33};
    run_bias(&rng, (int)tandem_rng_int(&rng, 1, 40), (int)tandem_rng_int(&rng, 1, 50));
    /* Wider than the host's 256-column passes. */
    run_bias(&rng, (int)tandem_rng_int(&rng, 1, 6), (int)tandem_rng_int(&rng, 257, 600));
}

/* ---- seq_embed ---- */
typedef struct {
    int B, Tt, Tm, V, d;
    const int32_t *tokens;                     /* [B, Tt] */
    double *sym, *prenet, *pos, *w;            /* [V, d], [B, Tm, d], [T, d], [B, T, d] */
} seq_ctx;

static void seq_ref(const seq_ctx *c, double *x) {
    int T = c->Tt + c->Tm;
    for (int b = 0; b < c->B; b++)
        for (int t = 0; t < T; t++)
            for (int k = 0; k < c->d; k++) {
                double e = t < c->Tt ? c->sym[(int64_t)c->tokens[b * c->Tt + t] * c->d + k]
                                     : c->prenet[((int64_t)b * c->Tm + t - c->Tt) * c->d + k];
                x[((int64_t)b * T + t) * c->d + k] = e + c->pos[(int64_t)t * c->d + k];
            }
}
static double seq_loss(const void *vc) {
    const seq_ctx *c = (const seq_ctx *)vc;
    int64_t n = (int64_t)c->B * (c->Tt + c->Tm) * c->d;
    double *x = dbuf(n), l = 0;
    seq_ref(c, x);
    for (int64_t i = 0; i < n; i++) l += x[i] * c->w[i];
    free(x);
    return l;
}

static void test_seq_embed(void **state) {
    (void)state;
    tandem_rng rng = {seed ^ 0x44};
    int B = (int)tandem_rng_int(&rng, 1, 3), Tt = (int)tandem_rng_int(&rng, 1, 6);
    int Tm = (int)tandem_rng_int(&rng, 1, 5), V = (int)tandem_rng_int(&rng, 1, 7);
    int d = (int)tandem_rng_int(&rng, 1, 9), T = Tt + Tm;
    printf("seq_embed B=%d Tt=%d Tm=%d V=%d d=%d\n", B, Tt, Tm, V, d);
    int64_t nx = (int64_t)B * T * d, ns = (int64_t)V * d, np = (int64_t)B * Tm * d, nq = (int64_t)T * d;
    int32_t *tokens = (int32_t *)malloc((size_t)(B * Tt) * sizeof(int32_t));
    assert_non_null(tokens);
    for (int i = 0; i < B * Tt; i++) tokens[i] = (int32_t)tandem_rng_int(&rng, 0, V - 1);
    float *sym = fbuf(ns), *prenet = fbuf(np), *pos = fbuf(nq), *w = fbuf(nx), *x = fbuf(nx);
    float *dsym = fbuf(ns), *dsym0 = fbuf(ns), *dpos = fbuf(nq), *dpos0 = fbuf(nq), *dpre = fbuf(np);
    tandem_rng_fill(&rng, sym, ns, -1.0f, 1.0f);
    tandem_rng_fill(&rng, prenet, np, -1.0f, 1.0f);
    tandem_rng_fill(&rng, pos, nq, -1.0f, 1.0f);
    tandem_rng_fill(&rng, w, nx, -1.0f, 1.0f);
    tandem_rng_fill(&rng, dsym0, ns, -1.0f, 1.0f);
    tandem_rng_fill(&rng, dpos0, nq, -1.0f, 1.0f);
    memcpy(dsym, dsym0, (size_t)ns * sizeof(float));
    memcpy(dpos, dpos0, (size_t)nq * sizeof(float));
    fnan(x, nx);
    fnan(dpre, np);

    tandem_k_seq_embed_fwd_args fa = {tokens, sym, prenet, pos, x, B, Tt, Tm, V, d};
    tandem_k_seq_embed_fwd_host(&fa);
    tandem_k_seq_embed_bwd_args ba = {w, tokens, dsym, dpos, dpre, B, Tt, Tm, V, d};
    tandem_k_seq_embed_bwd_host(&ba);

    seq_ctx c = {B, Tt, Tm, V, d, tokens, to_double(sym, ns), to_double(prenet, np),
                 to_double(pos, nq), to_double(w, nx)};
    double *rx = dbuf(nx), *gs = dbuf(ns), *gp = dbuf(np), *gq = dbuf(nq);
    seq_ref(&c, rx);
    check("seq_embed_fwd x", x, rx, nx, TOL_FWD);
    numeric_grad(seq_loss, &c, c.sym, ns, gs);
    numeric_grad(seq_loss, &c, c.prenet, np, gp);
    numeric_grad(seq_loss, &c, c.pos, nq, gq);
    double *es = plus(dsym0, gs, ns), *eq = plus(dpos0, gq, nq);
    check("seq_embed_bwd d_sym_emb (+=)", dsym, es, ns, TOL_GRAD);
    check("seq_embed_bwd d_pos_emb (+=)", dpos, eq, nq, TOL_GRAD);
    check("seq_embed_bwd d_prenet_out", dpre, gp, np, TOL_GRAD);

    free(tokens), free(sym), free(prenet), free(pos), free(w), free(x);
    free(dsym), free(dsym0), free(dpos), free(dpos0), free(dpre);
    free(c.sym), free(c.prenet), free(c.pos), free(c.w), free(rx), free(gs), free(gp), free(gq);
    free(es), free(eq);
}

/* ---- prenet_input (no backward) ----
 * Reference written frame by frame: frame f of utterance b lands in group f / r + 1 at
 * offset (f % r) * n_mels, unless that group is past the end; group 0 stays zero. */
static void test_prenet_input(void **state) {
    (void)state;
    tandem_rng rng = {seed ^ 0x55};
    int B = (int)tandem_rng_int(&rng, 1, 4), Tm = (int)tandem_rng_int(&rng, 1, 30);
    int r = (int)tandem_rng_int(&rng, 1, 5), nm = (int)tandem_rng_int(&rng, 1, 80), F = Tm * r;
    printf("prenet_input B=%d Tm=%d r=%d n_mels=%d\n", B, Tm, r, nm);
    int64_t n = (int64_t)B * F * nm;
    float *mels = fbuf(n), *groups = fbuf(n);
    tandem_rng_fill(&rng, mels, n, -11.5f, 2.0f);
    fnan(groups, n);
    tandem_k_prenet_input_args a = {mels, groups, NULL, B, Tm, r, nm};
    tandem_k_prenet_input_host(&a);
    double *ref = dbuf(n); /* zeros */
    int64_t g = (int64_t)r * nm;
    for (int b = 0; b < B; b++)
        for (int f = 0; f < F; f++)
            for (int m = 0; m < nm; m++) {
                int j = f / r + 1;
                if (j < Tm) ref[((int64_t)b * Tm + j) * g + (f % r) * nm + m] = mels[((int64_t)b * F + f) * nm + m];
            }
    check("prenet_input groups", groups, ref, n, 0.0); /* a copy: exact */
    free(mels), free(groups), free(ref);
}

int main(void) {
    seed = tandem_test_seed("test_grad_layers");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_gelu),
        cmocka_unit_test(test_gelu_bwd_grid),
        cmocka_unit_test(test_bias),
        cmocka_unit_test(test_seq_embed),
        cmocka_unit_test(test_prenet_input),
    };
    return cmocka_run_group_tests_name("grad_layers", tests, NULL, NULL);
}
