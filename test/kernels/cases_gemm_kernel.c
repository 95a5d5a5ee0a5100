/* cases_gemm_kernel.c — kernel-test cases for the fatbin GEMMs (kernels/gemm_kernel.h):
 * gemm_f32, and gemm_bf16 on the same shapes with bf16 A and B.
 *
 * Shapes: odd m/n/k (1, 7, 33, 65, 130) around the kernel's 64-wide tiles and 16-deep K
 * slices, exact tile multiples, all four transpose combinations, batch 1 and 3, a batch that
 * shares one B (stride_b = 0), beta = 0 with C poisoned (proves C is not read), a larger
 * multi-tile case and a random one. alpha and beta are never 0 or 1 except that beta = 0 case.
 * Every other shape adds a bias [n] (the GEMM op's BIAS epilogue); the shapes take the
 * epilogues in turn (none, GELU_AUX writing aux, DGELU reading aux in [-3, 3]); gemm_bf16 writes
 * a bf16 C (with bf16 bias and aux) on the even shapes with an epilogue, where the tolerance is 1e-5: one
 * element's rounding to bf16 may differ by an ulp (2^-8) between the float kernel and the
 * double reference.
 * Four shapes (and the random one by chance) also sum op(A)'s rows into bgrad [batch, m] (the
 * GEMM op's BGRAD epilogue), against the reference's double sums.
 *
 * Tolerance 1e-9 (normalised squared error): the kernel accumulates in float in its own order,
 * the host reference in double; for K <= 300 with inputs in [-1, 1] the expected error is
 * about K * eps^2 ~ 1e-12. One wrong or missing product term in one element of the largest
 * case still gives ~1e-8, so the threshold catches indexing errors at the tile edges.
 * gemm_bf16 keeps the same threshold: the product of two bf16 values is exact in f32 (8 + 8
 * significant bits), so the kernel's only error is again its f32 accumulation order; the host
 * reference widens the same bf16 inputs and sums in double.
 */
#include <stdio.h>

#include "test/kernels/kcase.h"

typedef struct gemm_shape {
    int64_t m, n, k, batch;
    int trans_a, trans_b;
    int share_b; /* all batch items use the same B */
    int beta_zero;
} gemm_shape;

static const gemm_shape shapes[] = {
    {1, 1, 1, 1, 0, 0, 0, 0},      {7, 33, 65, 1, 0, 1, 0, 0},  {33, 7, 130, 3, 1, 0, 0, 0},
    {65, 130, 33, 1, 1, 1, 0, 0},  {130, 65, 7, 3, 0, 0, 0, 0}, {1, 130, 65, 3, 1, 1, 0, 0},
    {64, 64, 64, 1, 0, 1, 0, 0},   {130, 1, 1, 1, 1, 0, 0, 1},  {65, 33, 130, 3, 0, 1, 1, 0},
    {190, 260, 300, 2, 1, 0, 0, 0}, {-1, -1, -1, -1, 0, 0, 0, 0},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static void gemm_make_typed(int idx, tandem_rng *rng, tandem_kcase *c, tandem_dtype ab, tandem_dtype ct) {
    gemm_shape s = shapes[idx];
    if (s.m < 0) { /* random */
        s.m = tandem_rng_int(rng, 1, 150);
        s.n = tandem_rng_int(rng, 1, 150);
        s.k = tandem_rng_int(rng, 1, 150);
        s.batch = tandem_rng_int(rng, 1, 3);
        s.trans_a = (int)tandem_rng_int(rng, 0, 1);
        s.trans_b = (int)tandem_rng_int(rng, 0, 1);
    }
    c->i[0] = s.m;
    c->i[1] = s.n;
    c->i[2] = s.k;
    c->i[3] = s.batch;
    c->i[4] = s.trans_a;
    c->i[5] = s.trans_b;
    c->i[6] = s.share_b;
    c->f[0] = tandem_rng_uniform(rng, 0.5f, 1.5f) * (tandem_rng_int(rng, 0, 1) ? 1.0f : -1.0f);
    c->f[1] = s.beta_zero ? 0.0f : tandem_rng_uniform(rng, -1.5f, -0.25f);

    c->nbufs = 3;
    tandem_kcase_buf *a = &c->bufs[0], *b = &c->bufs[1], *cc = &c->bufs[2];
    a->name = "a";
    a->dtype = ab;
    a->count = s.batch * s.m * s.k;
    a->role = TANDEM_KB_IN;
    a->lo = -1.0f;
    a->hi = 1.0f;
    b->name = "b";
    b->dtype = ab;
    b->count = (s.share_b ? 1 : s.batch) * s.k * s.n;
    b->role = TANDEM_KB_IN;
    b->lo = -1.0f;
    b->hi = 1.0f;
    cc->name = "c";
    cc->dtype = ct;
    cc->count = s.batch * s.m * s.n;
    cc->role = s.beta_zero ? TANDEM_KB_OUT : TANDEM_KB_INOUT;
    cc->lo = -1.0f;
    cc->hi = 1.0f;
    /* the BIAS epilogue on every other shape (the random one by chance) */
    c->i[7] = shapes[idx].m < 0 ? tandem_rng_int(rng, 0, 1) : idx % 2;
    if (c->i[7]) {
        tandem_kcase_buf *bias = &c->bufs[c->nbufs++];
        bias->name = "bias";
        bias->dtype = ct;
        bias->count = s.n;
        bias->role = TANDEM_KB_IN;
        bias->lo = -1.0f;
        bias->hi = 1.0f;
    }
    /* the GELU epilogues in turn; the aux matrix laid out as C */
    const int64_t epi = shapes[idx].m < 0 ? tandem_rng_int(rng, 0, 2) : idx % 3;
    c->i[7] |= epi << 1; /* bit 0: the bias; bits 1-2: the epilogue; aux follows the bias */
    if (epi != TANDEM_K_GEMM_EPI_NONE)
        tandem_kcase_set_buf(c, c->nbufs++, "aux", ct, s.batch * s.m * s.n,
                             epi == TANDEM_K_GEMM_EPI_DGELU ? TANDEM_KB_IN : TANDEM_KB_OUT, -3.0f, 3.0f);
    /* two shapes read beta C from a separate source (c_src): C is then an output only, poisoned */
    c->f[2] = ct == TANDEM_F32 && (idx == 4 || idx == 9);
    if (c->f[2] != 0.0f) {
        cc->role = TANDEM_KB_OUT;
        tandem_kcase_set_buf(c, c->nbufs++, "c_src", TANDEM_F32, s.batch * s.m * s.n, TANDEM_KB_IN, -1.0f, 1.0f);
    }
    c->f[3] = shapes[idx].m < 0 ? (float)tandem_rng_int(rng, 0, 1) : (float)(idx % 4 == 1 || idx == 6);
    if (c->f[3] != 0.0f) tandem_kcase_set_buf(c, c->nbufs++, "bgrad", TANDEM_F32, s.batch * s.m, TANDEM_KB_OUT, 0, 0);
    c->tol = ct == TANDEM_BF16 ? 1e-5 : 1e-9;
    snprintf(c->desc, sizeof c->desc, "m=%lld n=%lld k=%lld batch=%lld ta=%d tb=%d%s%s epi=%lld%s%s%s a=%.3g b=%.3g",
             (long long)s.m, (long long)s.n, (long long)s.k, (long long)s.batch, s.trans_a,
             s.trans_b, s.share_b ? " shared-B" : "", (c->i[7] & 1) ? " +bias" : "", (long long)epi,
             ct == TANDEM_BF16 ? " C bf16" : "", c->f[2] != 0.0f ? " C from c_src" : "",
             c->f[3] != 0.0f ? " +bgrad" : "", c->f[0], c->f[1]);
}

static void gemm_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    gemm_make_typed(idx, rng, c, TANDEM_F32, TANDEM_F32);
}

static void gemm_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_gemm_f32_args *a = (tandem_k_gemm_f32_args *)args;
    a->a = (const float *)bufs[0];
    a->b = (const float *)bufs[1];
    a->c = (float *)bufs[2];
    a->m = (int)c->i[0];
    a->n = (int)c->i[1];
    a->k = (int)c->i[2];
    a->batch = (int)c->i[3];
    a->trans_a = (int)c->i[4];
    a->trans_b = (int)c->i[5];
    a->stride_a = c->i[0] * c->i[2];
    a->stride_b = c->i[6] ? 0 : c->i[2] * c->i[1];
    a->stride_c = c->i[0] * c->i[1];
    a->alpha = c->f[0];
    a->beta = c->f[1];
    a->bias = (c->i[7] & 1) ? (const float *)bufs[3] : NULL;
    a->epi = (int)(c->i[7] >> 1);
    a->aux = a->epi != TANDEM_K_GEMM_EPI_NONE ? (float *)bufs[3 + (c->i[7] & 1)] : NULL;
    const int last = c->nbufs - 1 - (c->f[3] != 0.0f); /* c_src, then bgrad */
    a->c_src = c->f[2] != 0.0f ? (const float *)bufs[last] : NULL;
    a->bgrad = c->f[3] != 0.0f ? (float *)bufs[c->nbufs - 1] : NULL;
}

const tandem_kcase_spec tandem_kcase_gemm_f32 = {N_SHAPES, gemm_make, gemm_bind};

static void gemm_bf16_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    gemm_make_typed(idx, rng, c, TANDEM_BF16, idx % 2 == 0 && idx % 3 != 0 ? TANDEM_BF16 : TANDEM_F32);
}

static void gemm_bf16_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_gemm_f32_args f;
    gemm_bind(c, bufs, &f); /* same fields; only the operand pointer types differ */
    tandem_k_gemm_bf16_args *a = (tandem_k_gemm_bf16_args *)args;
    a->a = (const tandem_bf16 *)bufs[0];
    a->b = (const tandem_bf16 *)bufs[1];
    a->c = f.c;
    a->m = f.m;
    a->n = f.n;
    a->k = f.k;
    a->batch = f.batch;
    a->trans_a = f.trans_a;
    a->trans_b = f.trans_b;
    a->stride_a = f.stride_a;
    a->stride_b = f.stride_b;
    a->stride_c = f.stride_c;
    a->alpha = f.alpha;
    a->beta = f.beta;
    a->bias = f.bias;
    a->epi = f.epi;
    a->aux = f.aux;
    a->c_src = f.c_src;
    a->bgrad = f.bgrad;
    if (c->bufs[2].dtype == TANDEM_BF16) { /* C, bias and aux bf16 */
        a->c16 = (tandem_bf16 *)bufs[2], a->c = NULL;
        a->bias16 = (const tandem_bf16 *)f.bias, a->bias = NULL;
        a->aux16 = (tandem_bf16 *)f.aux, a->aux = NULL;
    }
}

const tandem_kcase_spec tandem_kcase_gemm_bf16 = {N_SHAPES, gemm_bf16_make, gemm_bf16_bind};
