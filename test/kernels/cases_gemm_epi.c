/* cases_gemm_epi.c — kernel-test cases for the GEMM epilogue passes (kernels/gemm_epi.h).
 *
 * gemm_epi_apply: each epilogue (none, GELU writing aux, dGELU reading aux in [-3, 3]) with and
 * without a bias, f32 and bf16 C, batch 1 and 3 with gaps between the items (which must stay
 * untouched: INOUT, compared whole), n around the 256-thread block, and a random shape.
 * Tolerance 1e-12: the kernel and the host twin do the same float operations per element.
 * gemm_epi_bgrad: column sums of f32 and bf16 [rows, cols] around the 32 x 8 block, against the
 * host's double sums in row order: 1e-10 (float sums over up to 3000 rows in [-1, 1]).
 */
#include <stdio.h>

#include "test/kernels/kcase.h"

/* m, n, batch, epi (0 none, 1 GELU_AUX, 2 DGELU), bias, bf16; m < 0: random */
static const int apply_shapes[][6] = {
    {1, 1, 1, 0, 1, 0},  {7, 33, 1, 1, 1, 0}, {5, 257, 3, 2, 0, 0}, {64, 512, 1, 1, 1, 1},
    {3, 300, 3, 2, 1, 1}, {9, 40, 3, 0, 1, 1}, {130, 96, 1, 2, 0, 0}, {-1, 0, 0, 0, 0, 0},
};
#define N_APPLY ((int)(sizeof apply_shapes / sizeof apply_shapes[0]))

static void apply_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t m = apply_shapes[idx][0], n = apply_shapes[idx][1], batch = apply_shapes[idx][2];
    int epi = apply_shapes[idx][3], bias = apply_shapes[idx][4], bf16 = apply_shapes[idx][5];
    if (m < 0) {
        m = tandem_rng_int(rng, 1, 200), n = tandem_rng_int(rng, 1, 700), batch = tandem_rng_int(rng, 1, 4);
        epi = tandem_rng_int(rng, 0, 2), bias = tandem_rng_int(rng, 0, 1), bf16 = tandem_rng_int(rng, 0, 1);
    }
    const int64_t stride = batch > 1 ? m * n + tandem_rng_int(rng, 1, 9) : 0, cn = stride * (batch - 1) + m * n;
    const tandem_dtype t = bf16 ? TANDEM_BF16 : TANDEM_F32;
    c->i[0] = m, c->i[1] = n, c->i[2] = batch, c->i[3] = stride, c->i[4] = epi, c->i[5] = bias, c->i[6] = bf16;
    tandem_kcase_set_buf(c, 0, "c", t, cn, TANDEM_KB_INOUT, -4.0f, 4.0f);
    tandem_kcase_set_buf(c, 1, "bias", t, n, TANDEM_KB_IN, -1.0f, 1.0f);
    /* aux: written by GELU (INOUT keeps the gaps' values), read by dGELU */
    tandem_kcase_set_buf(c, 2, "aux", t, cn, epi == 2 ? TANDEM_KB_IN : TANDEM_KB_INOUT, -3.0f, 3.0f);
    c->tol = 1e-12;
    snprintf(c->desc, sizeof c->desc, "m=%lld n=%lld batch=%lld epi=%d bias=%d %s", (long long)m, (long long)n,
             (long long)batch, epi, bias, bf16 ? "bf16" : "f32");
}
static void apply_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_gemm_epi_apply_args *a = (tandem_k_gemm_epi_apply_args *)args;
    static const int epis[3] = {TANDEM_K_GEMM_EPI_NONE, TANDEM_K_GEMM_EPI_GELU_AUX, TANDEM_K_GEMM_EPI_DGELU};
    const int bf16 = (int)c->i[6], bias = (int)c->i[5];
    memset(a, 0, sizeof *a);
    if (bf16) {
        a->c16 = (tandem_bf16 *)bufs[0], a->aux16 = (tandem_bf16 *)bufs[2];
        a->bias16 = bias ? (const tandem_bf16 *)bufs[1] : NULL;
    } else {
        a->c = (float *)bufs[0], a->aux = (float *)bufs[2];
        a->bias = bias ? (const float *)bufs[1] : NULL;
    }
    a->m = (int)c->i[0], a->n = (int)c->i[1], a->batch = (int)c->i[2], a->stride_c = c->i[3];
    a->epi = epis[c->i[4]];
}
const tandem_kcase_spec tandem_kcase_gemm_epi_apply = {N_APPLY, apply_make, apply_bind};

/* rows, cols, bf16 */
static const int bgrad_shapes[][3] = {{1, 1, 0}, {33, 31, 0}, {300, 257, 1}, {3000, 64, 1}, {17, 1000, 0}, {-1, 0, 0}};
#define N_BGRAD ((int)(sizeof bgrad_shapes / sizeof bgrad_shapes[0]))

static void bgrad_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t rows = bgrad_shapes[idx][0], cols = bgrad_shapes[idx][1], bf16 = bgrad_shapes[idx][2];
    if (rows < 0) rows = tandem_rng_int(rng, 1, 2000), cols = tandem_rng_int(rng, 1, 700), bf16 = tandem_rng_int(rng, 0, 1);
    c->i[0] = rows, c->i[1] = cols, c->i[2] = bf16;
    tandem_kcase_set_buf(c, 0, "a", bf16 ? TANDEM_BF16 : TANDEM_F32, rows * cols, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 1, "out", TANDEM_F32, cols, TANDEM_KB_OUT, 0.0f, 0.0f);
    c->tol = 1e-10;
    snprintf(c->desc, sizeof c->desc, "rows=%lld cols=%lld %s", (long long)rows, (long long)cols, bf16 ? "bf16" : "f32");
}
static void bgrad_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_gemm_epi_bgrad_args *a = (tandem_k_gemm_epi_bgrad_args *)args;
    memset(a, 0, sizeof *a);
    if (c->i[2]) a->a16 = (const tandem_bf16 *)bufs[0];
    else a->a = (const float *)bufs[0];
    a->out = (float *)bufs[1];
    a->rows = (int)c->i[0], a->cols = (int)c->i[1];
}
const tandem_kcase_spec tandem_kcase_gemm_epi_bgrad = {N_BGRAD, bgrad_make, bgrad_bind};
