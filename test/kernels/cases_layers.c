/* cases_layers.c — kernel-test cases for the layer kernels (kernels/layers.h).
 *
 * Shapes per kernel: degenerate (1), widths that are not multiples of the block (LayerNorm
 * blocks are 128 threads, col_sum_acc tiles 32 columns, element-wise blocks 256), row counts
 * past the 512 LayerNorm-backward blocks (so blocks take several rows), the tiny model's real
 * shapes (d 256, T = 128 + 128, r 4, B 4), the largest reasonable (d 4096 for LayerNorm: 32 KiB
 * of shared partials; base model shapes; element-wise sizes past the 4096-block grid cap, so
 * threads take a second trip round the grid-stride loop), and one random shape.
 *
 * Tolerances (normalised squared error, kcase.h):
 *   layernorm_fwd/bwd: 1e-10 — the kernel's float tree sums against the host's double ones:
 *     relative differences ~1e-7 (squared ~1e-14); a wrong or missing row gives ~1.
 *   layernorm_bwd_params, col_sum_acc, seq_embed_bwd: 1e-10 — float sums in another order
 *     than the host's (or the host's double); ~1e-14 expected.
 *   gelu, bias_add, seq_embed_fwd, prenet_input: 1e-12 — the same float operations on both
 *     sides (one rounding each; nvcc may fuse, hence not 0).
 */
#include <stdio.h>
#include <string.h>

#include "test/kernels/kcase.h"

/* ---- LayerNorm: rows x d ---- */
static const int ln_shapes[][2] = {
    {1, 1}, {3, 31}, {5, 129}, {600, 100}, {1024, 256}, {700, 512}, {20, 4096}, {-1, -1},
};
#define N_LN ((int)(sizeof ln_shapes / sizeof ln_shapes[0]))

static void ln_pick(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t rows = ln_shapes[idx][0], d = ln_shapes[idx][1];
    if (rows < 0) {
        rows = tandem_rng_int(rng, 1, 1500);
        d = tandem_rng_int(rng, 1, 700);
    }
    c->i[0] = rows;
    c->i[1] = d;
    snprintf(c->desc, sizeof c->desc, "rows=%lld d=%lld", (long long)rows, (long long)d);
}

static void ln_fwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    ln_pick(idx, rng, c);
    int64_t rows = c->i[0], d = c->i[1];
    /* An offset mean: the variance must be taken around it, not as E[x^2] - mean^2. */
    tandem_kcase_set_buf(c, 0, "x", TANDEM_F32, rows * d, TANDEM_KB_IN, 1.0f, 4.0f);
    tandem_kcase_set_buf(c, 1, "gamma", TANDEM_F32, d, TANDEM_KB_IN, 0.5f, 1.5f);
    tandem_kcase_set_buf(c, 2, "beta", TANDEM_F32, d, TANDEM_KB_IN, -0.5f, 0.5f);
    c->i[7] = idx % 3; /* y f32, bf16 (the bf16 model's GEMM operand), or both */
    int j = tandem_kcase_out2(c, 3, "y", "y16", rows * d, (int)c->i[7]);
    tandem_kcase_set_buf(c, j, "mean", TANDEM_F32, rows, TANDEM_KB_OUT, 0, 0);
    tandem_kcase_set_buf(c, j + 1, "rstd", TANDEM_F32, rows, TANDEM_KB_OUT, 0, 0);
    c->tol = c->i[7] ? 1e-7 : 1e-10; /* bf16: an ulp of f32 difference flips a rounding */
    tandem_kcase_desc2(c, (int)c->i[7]);
}
static void ln_fwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_layernorm_fwd_args *a = (tandem_k_layernorm_fwd_args *)args;
    a->x = (const float *)bufs[0];
    a->gamma = (const float *)bufs[1];
    a->beta = (const float *)bufs[2];
    int j = tandem_kcase_bind2(bufs, 3, (int)c->i[7], &a->y, &a->y16);
    a->mean = (float *)bufs[j];
    a->rstd = (float *)bufs[j + 1];
    a->rows = (int)c->i[0];
    a->d = (int)c->i[1];
    a->eps = TANDEM_LAYERNORM_EPS;
}
const tandem_kcase_spec tandem_kcase_layernorm_fwd = {N_LN, ln_fwd_make, ln_fwd_bind};

/* mean and rstd are inputs of any value here: the backward is a function of them. */
static void ln_bwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    ln_pick(idx, rng, c);
    int64_t rows = c->i[0], d = c->i[1];
    c->i[2] = idx % 4 == 3 || idx == 5; /* dy in bf16 (a bf16 model's dx GEMM writes it so) */
    tandem_kcase_set_buf(c, 0, "dy", c->i[2] ? TANDEM_BF16 : TANDEM_F32, rows * d, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 1, "x", TANDEM_F32, rows * d, TANDEM_KB_IN, -2.0f, 2.0f);
    tandem_kcase_set_buf(c, 2, "mean", TANDEM_F32, rows, TANDEM_KB_IN, -0.3f, 0.3f);
    tandem_kcase_set_buf(c, 3, "rstd", TANDEM_F32, rows, TANDEM_KB_IN, 0.5f, 2.0f);
    tandem_kcase_set_buf(c, 4, "gamma", TANDEM_F32, d, TANDEM_KB_IN, 0.5f, 1.5f);
    c->i[6] = idx % 3 == 1; /* every third size accumulates into dx (the residual stream's gradient) */
    tandem_kcase_set_buf(c, 5, "dx", TANDEM_F32, rows * d, c->i[6] ? TANDEM_KB_INOUT : TANDEM_KB_OUT, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 6, "scratch", TANDEM_F32, tandem_layernorm_bwd_scratch_floats((int)rows, (int)d),
            TANDEM_KB_OUT, 0, 0);
    c->i[7] = idx % 2; /* odd sizes also write bf16(dx), the bf16 model's GEMM operand */
    if (c->i[7]) tandem_kcase_set_buf(c, 7, "dx16", TANDEM_BF16, rows * d, TANDEM_KB_OUT, 0, 0);
    c->tol = c->i[7] ? 1e-7 : 1e-10; /* bf16: an ulp of f32 difference flips a rounding */
    tandem_kcase_desc2(c, c->i[7] ? TANDEM_KCASE_OUT_BOTH : TANDEM_KCASE_OUT_F32);
    if (c->i[6]) strncat(c->desc, " dx+=", sizeof c->desc - strlen(c->desc) - 1);
    if (c->i[2]) strncat(c->desc, " dy bf16", sizeof c->desc - strlen(c->desc) - 1);
}
static void ln_bwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_layernorm_bwd_args *a = (tandem_k_layernorm_bwd_args *)args;
    a->dy = c->i[2] ? NULL : (const float *)bufs[0];
    a->dy16 = c->i[2] ? (const tandem_bf16 *)bufs[0] : NULL;
    a->x = (const float *)bufs[1];
    a->mean = (const float *)bufs[2];
    a->rstd = (const float *)bufs[3];
    a->gamma = (const float *)bufs[4];
    a->dx = (float *)bufs[5];
    a->scratch = (float *)bufs[6];
    a->dx16 = c->i[7] ? (tandem_bf16 *)bufs[7] : NULL;
    a->accumulate = (int)c->i[6];
    a->rows = (int)c->i[0];
    a->d = (int)c->i[1];
}
const tandem_kcase_spec tandem_kcase_layernorm_bwd = {N_LN, ln_bwd_make, ln_bwd_bind};

static void ln_params_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    ln_pick(idx, rng, c);
    int64_t rows = c->i[0], d = c->i[1];
    tandem_kcase_set_buf(c, 0, "scratch", TANDEM_F32, tandem_layernorm_bwd_scratch_floats((int)rows, (int)d),
            TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 1, "dgamma", TANDEM_F32, d, TANDEM_KB_INOUT, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 2, "dbeta", TANDEM_F32, d, TANDEM_KB_INOUT, -1.0f, 1.0f);
    c->i[6] = idx % 2 == 0; /* even sizes also sum dx into dbias (a linear layer's bias gradient) */
    if (c->i[6]) tandem_kcase_set_buf(c, 3, "dbias", TANDEM_F32, d, TANDEM_KB_INOUT, -1.0f, 1.0f);
    if (c->i[6]) strncat(c->desc, " +dbias", sizeof c->desc - strlen(c->desc) - 1);
    c->tol = 1e-10;
}
static void ln_params_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_layernorm_bwd_params_args *a = (tandem_k_layernorm_bwd_params_args *)args;
    a->scratch = (const float *)bufs[0];
    a->dgamma = (float *)bufs[1];
    a->dbeta = (float *)bufs[2];
    a->dbias = c->i[6] ? (float *)bufs[3] : NULL;
    a->rows = (int)c->i[0];
    a->d = (int)c->i[1];
}
const tandem_kcase_spec tandem_kcase_layernorm_bwd_params = {N_LN, ln_params_make, ln_params_bind};

/* ---- GELU: n; the tiny model's MLP activation is B*T*4d = 4*256*1024 ---- */
static const int64_t gelu_sizes[] = {1, 31, 257, 100003, 4 * 256 * 1024, -1};
#define N_GELU ((int)(sizeof gelu_sizes / sizeof gelu_sizes[0]))

static int64_t gelu_pick(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = gelu_sizes[idx] > 0 ? gelu_sizes[idx] : tandem_rng_int(rng, 2, 20000);
    c->i[0] = n;
    /* Size 257 spans |x| > 20, where the derivative's guard takes over. */
    c->f[0] = idx == 2 ? 30.0f : 6.0f;
    return n;
}

static void gelu_fwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = gelu_pick(idx, rng, c);
    tandem_kcase_set_buf(c, 0, "x", TANDEM_F32, n, TANDEM_KB_IN, -c->f[0], c->f[0]);
    c->i[7] = idx % 3; /* y f32, bf16 (the bf16 model's GEMM operand), or both */
    tandem_kcase_out2(c, 1, "y", "y16", n, (int)c->i[7]);
    c->tol = c->i[7] ? 1e-7 : 1e-12; /* bf16: an ulp of exp difference flips a rounding */
    snprintf(c->desc, sizeof c->desc, "n=%lld |x|<%g", (long long)n, c->f[0]);
    tandem_kcase_desc2(c, (int)c->i[7]);
}
static void gelu_fwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_gelu_fwd_args *a = (tandem_k_gelu_fwd_args *)args;
    a->x = (const float *)bufs[0];
    tandem_kcase_bind2(bufs, 1, (int)c->i[7], &a->y, &a->y16);
    a->n = c->i[0];
}
const tandem_kcase_spec tandem_kcase_gelu_fwd = {N_GELU, gelu_fwd_make, gelu_fwd_bind};

/* Odd sizes run in place (dx aliasing dy), as the model may. */
static void gelu_bwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = gelu_pick(idx, rng, c);
    c->i[1] = idx % 2; /* in place */
    tandem_kcase_set_buf(c, 0, "dy", TANDEM_F32, n, c->i[1] ? TANDEM_KB_INOUT : TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 1, "x", TANDEM_F32, n, TANDEM_KB_IN, -c->f[0], c->f[0]);
    if (!c->i[1]) tandem_kcase_set_buf(c, 2, "dx", TANDEM_F32, n, TANDEM_KB_OUT, 0, 0);
    /* sizes 2, 3 (mod 4) also write bf16(dx), the bf16 model's GEMM operand */
    c->i[7] = idx % 4 >= 2 ? TANDEM_KCASE_OUT_BOTH : TANDEM_KCASE_OUT_F32;
    if (c->i[7]) tandem_kcase_set_buf(c, c->nbufs, "dx16", TANDEM_BF16, n, TANDEM_KB_OUT, 0, 0);
    c->tol = c->i[7] ? 1e-7 : 1e-12; /* bf16: an ulp of exp difference flips a rounding */
    snprintf(c->desc, sizeof c->desc, "n=%lld |x|<%g%s", (long long)n, c->f[0],
             c->i[1] ? " in-place" : "");
    tandem_kcase_desc2(c, (int)c->i[7]);
}
static void gelu_bwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_gelu_bwd_args *a = (tandem_k_gelu_bwd_args *)args;
    a->dy = (const float *)bufs[0];
    a->x = (const float *)bufs[1];
    a->dx = c->i[1] ? (float *)bufs[0] : (float *)bufs[2];
    a->dx16 = c->i[7] ? (tandem_bf16 *)bufs[c->i[1] ? 2 : 3] : NULL;
    a->n = c->i[0];
}
const tandem_kcase_spec tandem_kcase_gelu_bwd = {N_GELU, gelu_bwd_make, gelu_bwd_bind};

/* ---- bias_add, col_sum_acc: rows x d ---- */
static const int cols_shapes[][2] = {
    {1, 1}, {33, 31}, {300, 257}, {1024, 256}, {1100, 1000} /* > the 4096 x 256 grid cap */,
    {-1, -1},
};
#define N_COLS ((int)(sizeof cols_shapes / sizeof cols_shapes[0]))

static void cols_pick(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t rows = cols_shapes[idx][0], d = cols_shapes[idx][1];
    if (rows < 0) {
        rows = tandem_rng_int(rng, 1, 2000);
        d = tandem_rng_int(rng, 1, 700);
    }
    c->i[0] = rows;
    c->i[1] = d;
    snprintf(c->desc, sizeof c->desc, "rows=%lld d=%lld", (long long)rows, (long long)d);
}

static void bias_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    cols_pick(idx, rng, c);
    tandem_kcase_set_buf(c, 0, "y", TANDEM_F32, c->i[0] * c->i[1], TANDEM_KB_INOUT, -2.0f, 2.0f);
    tandem_kcase_set_buf(c, 1, "b", TANDEM_F32, c->i[1], TANDEM_KB_IN, -1.0f, 1.0f);
    c->tol = 1e-12;
}
static void bias_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_bias_add_args *a = (tandem_k_bias_add_args *)args;
    a->y = (float *)bufs[0];
    a->b = (const float *)bufs[1];
    a->rows = (int)c->i[0];
    a->d = (int)c->i[1];
}
const tandem_kcase_spec tandem_kcase_bias_add = {N_COLS, bias_make, bias_bind};

static void colsum_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    cols_pick(idx, rng, c);
    tandem_kcase_set_buf(c, 0, "dy", TANDEM_F32, c->i[0] * c->i[1], TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 1, "db", TANDEM_F32, c->i[1], TANDEM_KB_INOUT, -1.0f, 1.0f);
    c->tol = 1e-10;
}
static void colsum_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_col_sum_acc_args *a = (tandem_k_col_sum_acc_args *)args;
    a->dy = (const float *)bufs[0];
    a->db = (float *)bufs[1];
    a->rows = (int)c->i[0];
    a->d = (int)c->i[1];
}
const tandem_kcase_spec tandem_kcase_col_sum_acc = {N_COLS, colsum_make, colsum_bind};

/* ---- seq_embed: B, Tt, Tm, V, d ---- */
static const int seq_shapes[][5] = {
    {1, 1, 1, 1, 1},          /* every token the same id */
    {2, 5, 3, 7, 33},
    {3, 17, 9, 80, 130},
    {4, 128, 128, 100, 256},  /* tiny */
    {2, 200, 400, 200, 512},  /* base sequence, fewer utterances */
    {5, 150, 7, 2, 300},      /* two ids: ~128 matches per chunk of 256 tokens (the padding
                                 symbol's case: the backward's eight-load steps), two column
                                 groups, 750 tokens: a partial last chunk */
    {-1, -1, -1, -1, -1},
};
#define N_SEQ ((int)(sizeof seq_shapes / sizeof seq_shapes[0]))

static void seq_pick(int idx, tandem_rng *rng, tandem_kcase *c) {
    for (int k = 0; k < 5; k++) c->i[k] = seq_shapes[idx][k];
    if (c->i[0] < 0) {
        c->i[0] = tandem_rng_int(rng, 1, 5);
        c->i[1] = tandem_rng_int(rng, 1, 60);
        c->i[2] = tandem_rng_int(rng, 1, 60);
        c->i[3] = tandem_rng_int(rng, 1, 120);
        c->i[4] = tandem_rng_int(rng, 1, 300);
    }
    snprintf(c->desc, sizeof c->desc, "B=%lld Tt=%lld Tm=%lld V=%lld d=%lld", (long long)c->i[0],
             (long long)c->i[1], (long long)c->i[2], (long long)c->i[3], (long long)c->i[4]);
}

static void seq_fwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    seq_pick(idx, rng, c);
    int64_t B = c->i[0], Tt = c->i[1], Tm = c->i[2], V = c->i[3], d = c->i[4];
    tandem_kcase_set_buf(c, 0, "tokens", TANDEM_I32, B * Tt, TANDEM_KB_IN, 0.0f, (float)(V - 1));
    tandem_kcase_set_buf(c, 1, "sym_emb", TANDEM_F32, V * d, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 2, "prenet_out", TANDEM_F32, B * Tm * d, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 3, "pos_emb", TANDEM_F32, (Tt + Tm) * d, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 4, "x", TANDEM_F32, B * (Tt + Tm) * d, TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-12;
}
static void seq_fwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_seq_embed_fwd_args *a = (tandem_k_seq_embed_fwd_args *)args;
    a->tokens = (const int32_t *)bufs[0];
    a->sym_emb = (const float *)bufs[1];
    a->prenet_out = (const float *)bufs[2];
    a->pos_emb = (const float *)bufs[3];
    a->x = (float *)bufs[4];
    a->batch = (int)c->i[0];
    a->text_len = (int)c->i[1];
    a->mel_len = (int)c->i[2];
    a->vocab = (int)c->i[3];
    a->d = (int)c->i[4];
}
const tandem_kcase_spec tandem_kcase_seq_embed_fwd = {N_SEQ, seq_fwd_make, seq_fwd_bind};

static void seq_bwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    seq_pick(idx, rng, c);
    int64_t B = c->i[0], Tt = c->i[1], Tm = c->i[2], V = c->i[3], d = c->i[4];
    tandem_kcase_set_buf(c, 0, "dx", TANDEM_F32, B * (Tt + Tm) * d, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 1, "tokens", TANDEM_I32, B * Tt, TANDEM_KB_IN, 0.0f, (float)(V - 1));
    tandem_kcase_set_buf(c, 2, "d_sym_emb", TANDEM_F32, V * d, TANDEM_KB_INOUT, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 3, "d_pos_emb", TANDEM_F32, (Tt + Tm) * d, TANDEM_KB_INOUT, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 4, "d_prenet_out", TANDEM_F32, B * Tm * d, TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-10;
}
static void seq_bwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_seq_embed_bwd_args *a = (tandem_k_seq_embed_bwd_args *)args;
    a->dx = (const float *)bufs[0];
    a->tokens = (const int32_t *)bufs[1];
    a->d_sym_emb = (float *)bufs[2];
    a->d_pos_emb = (float *)bufs[3];
    a->d_prenet_out = (float *)bufs[4];
    a->batch = (int)c->i[0];
    a->text_len = (int)c->i[1];
    a->mel_len = (int)c->i[2];
    a->vocab = (int)c->i[3];
    a->d = (int)c->i[4];
}
const tandem_kcase_spec tandem_kcase_seq_embed_bwd = {N_SEQ, seq_bwd_make, seq_bwd_bind};

/* ---- prenet_input: B, Tm, r, n_mels ---- */
static const int prenet_shapes[][4] = {
    {1, 1, 1, 1}, {2, 3, 2, 80}, {3, 7, 3, 17}, {4, 128, 4, 80} /* tiny */,
    {8, 400, 2, 80} /* base */, {-1, -1, -1, -1},
};
#define N_PRENET ((int)(sizeof prenet_shapes / sizeof prenet_shapes[0]))

static void prenet_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    for (int k = 0; k < 4; k++) c->i[k] = prenet_shapes[idx][k];
    if (c->i[0] < 0) {
        c->i[0] = tandem_rng_int(rng, 1, 6);
        c->i[1] = tandem_rng_int(rng, 1, 100);
        c->i[2] = tandem_rng_int(rng, 1, 5);
        c->i[3] = 80;
    }
    int64_t n = c->i[0] * c->i[1] * c->i[2] * c->i[3];
    tandem_kcase_set_buf(c, 0, "mels", TANDEM_F32, n, TANDEM_KB_IN, -11.5f, 2.0f);
    c->i[7] = idx % 3; /* groups f32, bf16 (the bf16 model's GEMM operand), or both */
    tandem_kcase_out2(c, 1, "groups", "groups16", n, (int)c->i[7]);
    c->tol = 1e-12;
    snprintf(c->desc, sizeof c->desc, "B=%lld Tm=%lld r=%lld n_mels=%lld", (long long)c->i[0],
             (long long)c->i[1], (long long)c->i[2], (long long)c->i[3]);
    tandem_kcase_desc2(c, (int)c->i[7]);
}
static void prenet_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_prenet_input_args *a = (tandem_k_prenet_input_args *)args;
    a->mels = (const float *)bufs[0];
    tandem_kcase_bind2(bufs, 1, (int)c->i[7], &a->groups, &a->groups16);
    a->batch = (int)c->i[0];
    a->mel_len = (int)c->i[1];
    a->r = (int)c->i[2];
    a->n_mels = (int)c->i[3];
}
const tandem_kcase_spec tandem_kcase_prenet_input = {N_PRENET, prenet_make, prenet_bind};

/* ---- prenet_dropout: in place, exact (the mask is integer arithmetic; kept values are one
 * float multiply on both sides). Probabilities 0 (identity), 0.5 (the default) and others;
 * counters random, step and micro large enough to use their high bits. ---- */
static void dropout_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    static const float ps[] = {0.5f, 0.0f, 0.1f, 0.9f, 0.5f};
    int64_t n = gelu_sizes[idx] > 0 ? gelu_sizes[idx] : tandem_rng_int(rng, 2, 20000);
    c->i[0] = n;
    c->i[1] = (int64_t)tandem_rng_next(rng);            /* seed */
    c->i[2] = tandem_rng_int(rng, 0, 1 << 30) * 4099LL; /* step */
    c->i[3] = tandem_rng_int(rng, 0, 7);                /* micro */
    c->f[0] = ps[idx % 5];
    tandem_kcase_set_buf(c, 0, "x", TANDEM_F32, n, TANDEM_KB_INOUT, -3.0f, 3.0f);
    /* odd cases read the step from a device counter (step_at) instead of the argument */
    tandem_kcase_set_buf(c, 1, "step_at", TANDEM_I32, 1, TANDEM_KB_IN, 0.0f, 1.0e6f);
    c->tol = 0.0;
    snprintf(c->desc, sizeof c->desc, "n=%lld p=%g", (long long)n, c->f[0]);
}
static void dropout_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_prenet_dropout_args *a = (tandem_k_prenet_dropout_args *)args;
    a->x = (float *)bufs[0];
    a->n = c->i[0];
    a->p = c->f[0];
    a->scale = 1.0f / (1.0f - c->f[0]);
    a->seed = (uint64_t)c->i[1];
    a->step = c->i[2];
    a->micro = c->i[3];
    a->step_at = (c->i[0] & 1) ? (const int *)bufs[1] : NULL;
}
const tandem_kcase_spec tandem_kcase_prenet_dropout = {N_GELU, dropout_make, dropout_bind};

/* ---- mel_rows_pad: B, Tt, Tm, d (d past one 128-column block; a row count past nothing) ---- */
static const int pad_shapes[][4] = {
    {1, 1, 1, 1}, {2, 5, 3, 33}, {3, 7, 9, 200}, {4, 16, 8, 130}, {-1, -1, -1, -1},
};
#define N_PAD ((int)(sizeof pad_shapes / sizeof pad_shapes[0]))

static void pad_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    for (int i = 0; i < 4; i++) c->i[i] = pad_shapes[idx][i];
    if (c->i[0] < 0) {
        c->i[0] = tandem_rng_int(rng, 1, 4);
        c->i[1] = tandem_rng_int(rng, 1, 20);
        c->i[2] = tandem_rng_int(rng, 1, 20);
        c->i[3] = tandem_rng_int(rng, 1, 300);
    }
    const int64_t B = c->i[0], Tt = c->i[1], Tm = c->i[2], d = c->i[3];
    snprintf(c->desc, sizeof c->desc, "B=%lld Tt=%lld Tm=%lld d=%lld", (long long)B, (long long)Tt,
             (long long)Tm, (long long)d);
    tandem_kcase_set_buf(c, 0, "src", TANDEM_F32, B * Tm * d, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 1, "dst", TANDEM_F32, B * (Tt + Tm) * d, TANDEM_KB_OUT, 0.0f, 0.0f);
    c->tol = 0.0; /* copies and zeros: exact */
}
static void pad_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_mel_rows_pad_args *a = (tandem_k_mel_rows_pad_args *)args;
    a->src = (const float *)bufs[0];
    a->dst = (float *)bufs[1];
    a->batch = (int)c->i[0];
    a->text_len = (int)c->i[1];
    a->mel_len = (int)c->i[2];
    a->d = (int)c->i[3];
}
const tandem_kcase_spec tandem_kcase_mel_rows_pad = {N_PAD, pad_make, pad_bind};

/* ---- mel_rows_take: mel_rows_pad's shapes; odd ones in bf16 ---- */
static void take_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    pad_make(idx, rng, c);
    const int64_t B = c->i[0], Tt = c->i[1], Tm = c->i[2], d = c->i[3];
    const tandem_dtype t = idx % 2 ? TANDEM_BF16 : TANDEM_F32;
    tandem_kcase_set_buf(c, 0, "src", t, B * (Tt + Tm) * d, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 1, "dst", t, B * Tm * d, TANDEM_KB_OUT, 0.0f, 0.0f);
    if (t == TANDEM_BF16) strncat(c->desc, " bf16", sizeof c->desc - strlen(c->desc) - 1);
}
static void take_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_mel_rows_take_args *a = (tandem_k_mel_rows_take_args *)args;
    memset(a, 0, sizeof *a);
    if (c->bufs[0].dtype == TANDEM_BF16)
        a->src16 = (const tandem_bf16 *)bufs[0], a->dst16 = (tandem_bf16 *)bufs[1];
    else
        a->src = (const float *)bufs[0], a->dst = (float *)bufs[1];
    a->batch = (int)c->i[0];
    a->text_len = (int)c->i[1];
    a->mel_len = (int)c->i[2];
    a->d = (int)c->i[3];
}
const tandem_kcase_spec tandem_kcase_mel_rows_take = {N_PAD, take_make, take_bind};
