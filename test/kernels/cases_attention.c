/* cases_attention.c — kernel-test cases for the attention kernels (kernels/attention.h).
 *
 * Layout transforms, shapes (B, T, H, dh): a single element; odd sizes well off the 256-thread
 * block; the tiny model's attention (T = 128 text + 512/4 mel positions, H 4, dh 64); the base
 * model's (T = 200 + 800/2, H 8, dh 64), whose 1.8 M elements exceed the 4096-block grid cap
 * so threads take a second grid-stride trip; and a random shape.
 * Softmax rows, shapes (B, H, T): one row of one key; rows shorter than, just past and several
 * times a warp; the tiny model's scores; the base model's; a random shape. The key mask is
 * random 0/1 on small shapes (key 0 is often masked, so rows with no allowed key occur) and
 * mostly real (7 in 8) on the large ones. The forward's odd cases compute a block of query rows
 * only (often one row, as a key/value-cached synthesis step does).
 *
 * Tolerances (normalised squared error, kcase.h):
 *   transforms: 1e-12, i.e. exact — they only move floats.
 *   softmax fwd/bwd: 1e-10 — host sums in double, the kernel in a float warp tree, and libm's
 *     expf and CUDA's may differ by an ulp: expected error ~1e-14; one wrong or unmasked element
 *     in a row of 600 gives > 1e-6.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test/kernels/kcase.h"

/* ---- layout transforms: c->i = {B, T, H, dh} ---- */
static const int layout_shapes[][4] = {
    {1, 1, 1, 1}, {2, 5, 3, 7}, {3, 37, 2, 33}, {2, 256, 4, 64}, {2, 600, 8, 64}, {-1, 0, 0, 0},
};
#define N_LAYOUT ((int)(sizeof layout_shapes / sizeof layout_shapes[0]))

/* Picks the shape and returns the element count of one per-head tensor [B, H, T, dh]. */
static int64_t layout_shape(int idx, tandem_rng *rng, tandem_kcase *c) {
    const int *s = layout_shapes[idx];
    int64_t B = s[0], T = s[1], H = s[2], dh = s[3];
    if (B < 0) {
        B = tandem_rng_int(rng, 1, 4);
        T = tandem_rng_int(rng, 1, 300);
        H = tandem_rng_int(rng, 1, 8);
        dh = tandem_rng_int(rng, 1, 80);
    }
    c->i[0] = B;
    c->i[1] = T;
    c->i[2] = H;
    c->i[3] = dh;
    c->tol = 1e-12;
    snprintf(c->desc, sizeof c->desc, "B=%lld T=%lld H=%lld dh=%lld", (long long)B, (long long)T,
             (long long)H, (long long)dh);
    return B * T * H * dh;
}

static void qkv_split_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = layout_shape(idx, rng, c);
    tandem_kcase_set_buf(c, 0, "qkv", TANDEM_F32, 3 * n, TANDEM_KB_IN, -2.0f, 2.0f);
    c->i[7] = idx % 3; /* q, k, v f32, bf16 (the bf16 model's GEMM operands), or both */
    int j = tandem_kcase_out2(c, 1, "q", "q16", n, (int)c->i[7]);
    j = tandem_kcase_out2(c, j, "k", "k16", n, (int)c->i[7]);
    tandem_kcase_out2(c, j, "v", "v16", n, (int)c->i[7]);
    tandem_kcase_desc2(c, (int)c->i[7]);
}
static void qkv_split_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_qkv_split_args *a = (tandem_k_qkv_split_args *)args;
    a->qkv = (const float *)bufs[0];
    int j = tandem_kcase_bind2(bufs, 1, (int)c->i[7], &a->q, &a->q16);
    j = tandem_kcase_bind2(bufs, j, (int)c->i[7], &a->k, &a->k16);
    tandem_kcase_bind2(bufs, j, (int)c->i[7], &a->v, &a->v16);
    a->batch = (int)c->i[0];
    a->seq = (int)c->i[1];
    a->heads = (int)c->i[2];
    a->head_dim = (int)c->i[3];
}
const tandem_kcase_spec tandem_kcase_qkv_split = {N_LAYOUT, qkv_split_make, qkv_split_bind};

static void qkv_merge_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = layout_shape(idx, rng, c);
    tandem_kcase_set_buf(c, 0, "dq", TANDEM_F32, n, TANDEM_KB_IN, -2.0f, 2.0f);
    tandem_kcase_set_buf(c, 1, "dk", TANDEM_F32, n, TANDEM_KB_IN, -2.0f, 2.0f);
    tandem_kcase_set_buf(c, 2, "dv", TANDEM_F32, n, TANDEM_KB_IN, -2.0f, 2.0f);
    c->i[7] = idx % 2 ? TANDEM_KCASE_OUT_BOTH : TANDEM_KCASE_OUT_F32; /* odd: bf16(dqkv) too */
    tandem_kcase_out2(c, 3, "dqkv", "dqkv16", 3 * n, (int)c->i[7]);
    tandem_kcase_desc2(c, (int)c->i[7]);
}
static void qkv_merge_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_qkv_merge_grad_args *a = (tandem_k_qkv_merge_grad_args *)args;
    a->dq = (const float *)bufs[0];
    a->dk = (const float *)bufs[1];
    a->dv = (const float *)bufs[2];
    tandem_kcase_bind2(bufs, 3, (int)c->i[7], &a->dqkv, &a->dqkv16);
    a->batch = (int)c->i[0];
    a->seq = (int)c->i[1];
    a->heads = (int)c->i[2];
    a->head_dim = (int)c->i[3];
}
const tandem_kcase_spec tandem_kcase_qkv_merge_grad = {N_LAYOUT, qkv_merge_make, qkv_merge_bind};

static void heads_merge_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = layout_shape(idx, rng, c);
    tandem_kcase_set_buf(c, 0, "o", TANDEM_F32, n, TANDEM_KB_IN, -2.0f, 2.0f);
    c->i[7] = idx % 3; /* y f32, bf16 (the output projection's operand), or both */
    tandem_kcase_out2(c, 1, "y", "y16", n, (int)c->i[7]);
    tandem_kcase_desc2(c, (int)c->i[7]);
}
static void heads_merge_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_heads_merge_args *a = (tandem_k_heads_merge_args *)args;
    a->o = (const float *)bufs[0];
    tandem_kcase_bind2(bufs, 1, (int)c->i[7], &a->y, &a->y16);
    a->batch = (int)c->i[0];
    a->seq = (int)c->i[1];
    a->heads = (int)c->i[2];
    a->head_dim = (int)c->i[3];
}
const tandem_kcase_spec tandem_kcase_heads_merge = {N_LAYOUT, heads_merge_make, heads_merge_bind};

static void heads_split_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = layout_shape(idx, rng, c);
    tandem_kcase_set_buf(c, 0, "dy", TANDEM_F32, n, TANDEM_KB_IN, -2.0f, 2.0f);
    c->i[7] = idx % 3; /* d_o f32, bf16 (the GEMMs' operand), or both */
    tandem_kcase_out2(c, 1, "d_o", "d_o16", n, (int)c->i[7]);
    tandem_kcase_desc2(c, (int)c->i[7]);
}
static void heads_split_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_heads_split_grad_args *a = (tandem_k_heads_split_grad_args *)args;
    a->dy = (const float *)bufs[0];
    tandem_kcase_bind2(bufs, 1, (int)c->i[7], &a->d_o, &a->d_o16);
    a->batch = (int)c->i[0];
    a->seq = (int)c->i[1];
    a->heads = (int)c->i[2];
    a->head_dim = (int)c->i[3];
}
const tandem_kcase_spec tandem_kcase_heads_split_grad = {N_LAYOUT, heads_split_make,
                                                         heads_split_bind};

/* ---- softmax rows: c->i = {B, H, T}; c->f[0] = largest key-mask value ---- */
static const int softmax_shapes[][3] = {
    {1, 1, 1}, {2, 3, 17}, {1, 2, 33}, {3, 1, 100}, {2, 4, 256}, {1, 8, 600}, {-1, 0, 0},
};
#define N_SOFTMAX ((int)(sizeof softmax_shapes / sizeof softmax_shapes[0]))

static int64_t softmax_shape(int idx, tandem_rng *rng, tandem_kcase *c) {
    const int *s = softmax_shapes[idx];
    int64_t B = s[0], H = s[1], T = s[2];
    if (B < 0) {
        B = tandem_rng_int(rng, 1, 3);
        H = tandem_rng_int(rng, 1, 4);
        T = tandem_rng_int(rng, 1, 200);
    }
    c->i[0] = B;
    c->i[1] = H;
    c->i[2] = T;
    /* mask values in [0, hi]: 0/1 on small rows, mostly nonzero on long ones */
    c->f[0] = T >= 200 ? 7.0f : 1.0f;
    c->tol = 1e-10;
    snprintf(c->desc, sizeof c->desc, "B=%lld H=%lld T=%lld", (long long)B, (long long)H,
             (long long)T);
    return B * H * T * T;
}

/* The forward computes query rows q0 .. q0 + nq - 1 (c->i[3], c->i[4]; s and p hold only them):
 * all rows on even cases, on odd ones a random block, often the one row of a cached step. */
static void softmax_fwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = softmax_shape(idx, rng, c);
    const int64_t T = c->i[2];
    c->i[3] = 0, c->i[4] = T;
    if (idx % 2) {
        c->i[4] = tandem_rng_int(rng, 0, 1) ? 1 : tandem_rng_int(rng, 1, (int)T);
        c->i[3] = tandem_rng_int(rng, 0, (int)(T - c->i[4]));
        n = n / T * c->i[4];
        snprintf(c->desc + strlen(c->desc), sizeof c->desc - strlen(c->desc), " rows %lld+%lld",
                 (long long)c->i[3], (long long)c->i[4]);
    }
    /* sizes 2, 5 (mod 3 == 2) write p as bf16 (the bf16 model's kept P): 1e-7, the backward's
     * reason (one-ulp rounding flips from the f32-vs-double row sum) */
    c->i[5] = idx % 3 == 2;
    if (c->i[5]) {
        c->tol = 1e-7;
        snprintf(c->desc + strlen(c->desc), sizeof c->desc - strlen(c->desc), " bf16");
    }
    /* scores as they come out of Q K^T / sqrt(dh) for unit-scale inputs, and wider */
    tandem_kcase_set_buf(c, 0, "s", TANDEM_F32, n, TANDEM_KB_IN, -8.0f, 8.0f);
    tandem_kcase_set_buf(c, 1, "key_mask", TANDEM_U8, c->i[0] * c->i[2], TANDEM_KB_IN, 0.0f, c->f[0]);
    tandem_kcase_set_buf(c, 2, "p", c->i[5] ? TANDEM_BF16 : TANDEM_F32, n, TANDEM_KB_OUT, 0, 0);
}
static void softmax_fwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_softmax_causal_fwd_args *a = (tandem_k_softmax_causal_fwd_args *)args;
    a->s = (const float *)bufs[0];
    a->key_mask = (const uint8_t *)bufs[1];
    a->p = bufs[2];
    a->batch = (int)c->i[0];
    a->heads = (int)c->i[1];
    a->seq = (int)c->i[2];
    a->q0 = (int)c->i[3];
    a->nq = (int)c->i[4];
    a->bf16 = (int)c->i[5];
}
const tandem_kcase_spec tandem_kcase_softmax_causal_fwd = {N_SOFTMAX, softmax_fwd_make,
                                                           softmax_fwd_bind};

/* Odd sizes in bf16 (p read and ds written as bf16, model bf16 mode): ds 1e-7 — both sides round
 * the same product to bf16, and the row sum's f32-vs-double difference (~1e-7 relative) flips the
 * rounding of a few elements by one bf16 ulp, ~1e-9 of the energy; a wrong element is O(1). */
static void softmax_bwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = softmax_shape(idx, rng, c);
    const int bf16 = idx % 2;
    const tandem_dtype dt = bf16 ? TANDEM_BF16 : TANDEM_F32;
    c->i[3] = bf16;
    if (bf16) {
        c->tol = 1e-7;
        snprintf(c->desc + strlen(c->desc), sizeof c->desc - strlen(c->desc), " bf16");
    }
    tandem_kcase_set_buf(c, 0, "dp", TANDEM_F32, n, TANDEM_KB_IN, -2.0f, 2.0f);
    /* any values in [0, 1]: the formula does not assume the rows sum to 1 */
    tandem_kcase_set_buf(c, 1, "p", dt, n, TANDEM_KB_IN, 0.0f, 1.0f);
    tandem_kcase_set_buf(c, 2, "ds", dt, n, TANDEM_KB_OUT, 0, 0);
}
static void softmax_bwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_softmax_causal_bwd_args *a = (tandem_k_softmax_causal_bwd_args *)args;
    a->dp = (const float *)bufs[0];
    a->p = bufs[1];
    a->ds = bufs[2];
    a->batch = (int)c->i[0];
    a->heads = (int)c->i[1];
    a->seq = (int)c->i[2];
    a->bf16 = (int)c->i[3];
}
const tandem_kcase_spec tandem_kcase_softmax_causal_bwd = {N_SOFTMAX, softmax_bwd_make,
                                                           softmax_bwd_bind};

/* ---- guided attention: c->i = {B, H, ga_heads, Tt, Tm}; key masks random 0/1 (the counts are
 * what the kernels read), probabilities in [0, 1]; in the backward dp is accumulated into. ---- */
static const int ga_shapes[][5] = {
    {1, 1, 1, 1, 1}, {2, 3, 1, 7, 9}, {3, 4, 2, 40, 33}, {2, 4, 4, 128, 128}, {-1, 0, 0, 0, 0},
};
#define N_GA ((int)(sizeof ga_shapes / sizeof ga_shapes[0]))

static int64_t ga_shape(int idx, tandem_rng *rng, tandem_kcase *c) {
    const int *s = ga_shapes[idx];
    int64_t B = s[0], H = s[1], Hg = s[2], Tt = s[3], Tm = s[4];
    if (B < 0) {
        B = tandem_rng_int(rng, 1, 3);
        H = tandem_rng_int(rng, 1, 4);
        Hg = tandem_rng_int(rng, 1, H);
        Tt = tandem_rng_int(rng, 1, 60);
        Tm = tandem_rng_int(rng, 1, 60);
    }
    c->i[0] = B, c->i[1] = H, c->i[2] = Hg, c->i[3] = Tt, c->i[4] = Tm;
    c->f[0] = idx == 2 ? 0.05f : 0.2f; /* sigma */
    c->f[1] = tandem_rng_uniform(rng, 0.1f, 2.0f); /* scale */
    c->tol = 1e-10;
    snprintf(c->desc, sizeof c->desc, "B=%lld H=%lld ga_heads=%lld Tt=%lld Tm=%lld", (long long)B,
             (long long)H, (long long)Hg, (long long)Tt, (long long)Tm);
    return B * H * (Tt + Tm) * (Tt + Tm);
}
static void ga_fwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = ga_shape(idx, rng, c);
    c->i[5] = idx % 2; /* odd sizes read p as bf16 (exactly representable inputs: same tolerance) */
    if (c->i[5]) snprintf(c->desc + strlen(c->desc), sizeof c->desc - strlen(c->desc), " bf16");
    tandem_kcase_set_buf(c, 0, "p", c->i[5] ? TANDEM_BF16 : TANDEM_F32, n, TANDEM_KB_IN, 0.0f, 1.0f);
    tandem_kcase_set_buf(c, 1, "key_mask", TANDEM_U8, c->i[0] * (c->i[3] + c->i[4]), TANDEM_KB_IN, 0.0f, 1.0f);
    tandem_kcase_set_buf(c, 2, "rows", TANDEM_F32, c->i[0] * c->i[2] * c->i[4], TANDEM_KB_OUT, 0, 0);
}
static void ga_fwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_ga_fwd_args *a = (tandem_k_ga_fwd_args *)args;
    a->p = bufs[0];
    a->bf16 = (int)c->i[5];
    a->key_mask = (const uint8_t *)bufs[1];
    a->rows = (float *)bufs[2];
    a->batch = (int)c->i[0], a->heads = (int)c->i[1], a->ga_heads = (int)c->i[2];
    a->text_len = (int)c->i[3], a->mel_len = (int)c->i[4];
    a->sigma = c->f[0], a->scale = c->f[1];
}
const tandem_kcase_spec tandem_kcase_ga_fwd = {N_GA, ga_fwd_make, ga_fwd_bind};

static void ga_bwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = ga_shape(idx, rng, c);
    tandem_kcase_set_buf(c, 0, "dp", TANDEM_F32, n, TANDEM_KB_INOUT, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 1, "key_mask", TANDEM_U8, c->i[0] * (c->i[3] + c->i[4]), TANDEM_KB_IN, 0.0f, 1.0f);
}
static void ga_bwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_ga_bwd_args *a = (tandem_k_ga_bwd_args *)args;
    a->dp = (float *)bufs[0];
    a->key_mask = (const uint8_t *)bufs[1];
    a->batch = (int)c->i[0], a->heads = (int)c->i[1], a->ga_heads = (int)c->i[2];
    a->text_len = (int)c->i[3], a->mel_len = (int)c->i[4];
    a->sigma = c->f[0], a->scale = c->f[1];
}
const tandem_kcase_spec tandem_kcase_ga_bwd = {N_GA, ga_bwd_make, ga_bwd_bind};

/* ---- fused attention: c->i = {B, T, H, dh, ga_heads, Tt, bf16, kv}; c->f = {sigma, ga scale,
 * largest key-mask value}. q, k, v are the column blocks of one qkv [B, T, 3d] (the model's
 * layout, ld 3d); kv = 1: one query row, the last position (q0 = T - 1, the KV-cache step),
 * B = 1. Sizes off the 16-row / 32-key tiles, head sizes below, at and past one warp (1..2
 * columns per lane), bf16 inputs and outputs, with and without guided attention, masks random
 * 0/1 on small shapes (rows with no allowed key occur) and mostly real on large ones.
 * Backward inputs lse and ga_sum are random (in [1, 3] and [0, 1]): the formula holds for any
 * values, and p = exp(s - lse) stays in (0, 1] for these scores.
 * Tolerance: f32 1e-10 (host and kernel sum in different orders in f32: ~1e-14 expected; one
 * wrong or unmasked key in a row of 100 gives > 1e-6). bf16 outputs 1e-7: both sides round the
 * same f32 value to bf16, and an f32 difference of ~1e-7 relative flips the rounding of a few
 * elements in 10^4 by one bf16 ulp (2^-8), ~1e-9 of the energy. ---- */
static const int fa_shapes[][8] = {
    {1, 1, 1, 1, 0, 0, 0, 0},    {2, 37, 2, 33, 1, 10, 0, 0},  {1, 70, 3, 64, 2, 20, 1, 0},
    {2, 100, 2, 64, 1, 40, 0, 0}, {3, 45, 1, 16, 0, 5, 1, 0}, {1, 90, 2, 64, 0, 30, 0, 1},
    {1, 33, 2, 40, 0, 8, 1, 1},  {-1, 0, 0, 0, 0, 0, 0, 0},
};
#define N_FA ((int)(sizeof fa_shapes / sizeof fa_shapes[0]))

static void fa_shape(int idx, tandem_rng *rng, tandem_kcase *c, int kv_ok) {
    int64_t v[8];
    for (int j = 0; j < 8; j++) v[j] = fa_shapes[idx][j];
    if (v[0] < 0) {
        v[0] = tandem_rng_int(rng, 1, 3), v[1] = tandem_rng_int(rng, 1, 80);
        v[2] = tandem_rng_int(rng, 1, 3), v[3] = tandem_rng_int(rng, 1, TANDEM_K_ATTN_FA_MAX_DH);
        v[4] = tandem_rng_int(rng, 0, v[2]), v[5] = tandem_rng_int(rng, 0, v[1] - 1);
        v[6] = tandem_rng_int(rng, 0, 1), v[7] = 0;
    }
    if (!kv_ok) v[7] = 0; /* the backward has no KV-cache form */
    for (int j = 0; j < 8; j++) c->i[j] = v[j];
    c->f[0] = 0.2f, c->f[1] = tandem_rng_uniform(rng, 0.1f, 2.0f);
    c->f[2] = v[1] >= 90 ? 7.0f : 1.0f;
    c->tol = v[6] ? 1e-7 : 1e-10;
    snprintf(c->desc, sizeof c->desc, "B=%lld T=%lld H=%lld dh=%lld ga_heads=%lld Tt=%lld %s%s",
             (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3], (long long)v[4],
             (long long)v[5], v[6] ? "bf16" : "f32", v[7] ? " kv-step" : "");
}

/* The guided-attention buffers [B, ga_heads, Tm] at j, j + 1: outputs (forward) or ga_sum an
 * input; a 1-element unused input without guided attention. */
static int fa_ga_bufs(tandem_kcase *c, int j, int out) {
    const int64_t n = c->i[0] * c->i[4] * (c->i[1] - c->i[5]);
    const int on = c->i[4] > 0 && n > 0;
    tandem_kcase_set_buf(c, j, "ga_sum", TANDEM_F32, on ? n : 1, on && out ? TANDEM_KB_OUT : TANDEM_KB_IN, 0.0f, 1.0f);
    if (!out) return j + 1;
    tandem_kcase_set_buf(c, j + 1, "ga_rows", TANDEM_F32, on ? n : 1, on ? TANDEM_KB_OUT : TANDEM_KB_IN, 0.0f, 1.0f);
    return j + 2;
}

/* The shape, and buffers 0 (qkv) and 1 (key_mask) both passes read; returns the operand dtype. */
static tandem_dtype fa_inputs(int idx, tandem_rng *rng, tandem_kcase *c, int kv_ok) {
    fa_shape(idx, rng, c, kv_ok);
    const int64_t B = c->i[0], T = c->i[1], d = c->i[2] * c->i[3];
    const tandem_dtype dt = c->i[6] ? TANDEM_BF16 : TANDEM_F32;
    tandem_kcase_set_buf(c, 0, "qkv", dt, B * T * 3 * d, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 1, "key_mask", TANDEM_U8, B * T, TANDEM_KB_IN, 0.0f, c->f[2]);
    return dt;
}

static void fa_fwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    const tandem_dtype dt = fa_inputs(idx, rng, c, 1);
    const int64_t B = c->i[0], T = c->i[1], d = c->i[2] * c->i[3];
    tandem_kcase_set_buf(c, 2, "o", dt, (c->i[7] ? 1 : T) * B * d, TANDEM_KB_OUT, 0, 0);
    tandem_kcase_set_buf(c, 3, "lse", TANDEM_F32, B * c->i[2] * (c->i[7] ? 1 : T), TANDEM_KB_OUT, 0, 0);
    fa_ga_bufs(c, 4, 1);
}
static void fa_fwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_attn_fused_fwd_args *a = (tandem_k_attn_fused_fwd_args *)args;
    const int B = (int)c->i[0], T = (int)c->i[1], H = (int)c->i[2], dh = (int)c->i[3];
    const size_t es = c->i[6] ? 2 : 4, d = (size_t)H * dh;
    const char *qkv = (const char *)bufs[0];
    memset(a, 0, sizeof *a);
    a->q = qkv, a->k = qkv + d * es, a->v = qkv + 2 * d * es;
    a->key_mask = (const uint8_t *)bufs[1];
    a->o = bufs[2], a->lse = (float *)bufs[3];
    a->ga_sum = (float *)bufs[4], a->ga_rows = (float *)bufs[5];
    a->batch = B, a->seq = T, a->heads = H, a->head_dim = dh;
    a->q0 = c->i[7] ? T - 1 : 0, a->q_rows = c->i[7] ? 1 : T;
    if (c->i[7]) a->q = qkv + (size_t)(T - 1) * 3 * d * es;
    a->ld_q = 3 * (int)d, a->hs_q = dh, a->ld_k = 3 * (int)d, a->hs_k = dh, a->ld_o = (int)d, a->bf16 = (int)c->i[6];
    a->ga_heads = (int)c->i[4], a->text_len = (int)c->i[5];
    a->qk_scale = (float)(1.0 / sqrt((double)dh)), a->ga_sigma = c->f[0], a->ga_scale = c->f[1];
}
const tandem_kcase_spec tandem_kcase_attn_fused_fwd = {N_FA, fa_fwd_make, fa_fwd_bind};

static void fa_bwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    const tandem_dtype dt = fa_inputs(idx, rng, c, 0);
    const int64_t B = c->i[0], T = c->i[1], d = c->i[2] * c->i[3];
    tandem_kcase_set_buf(c, 2, "o", dt, B * T * d, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 3, "dy", TANDEM_F32, B * T * d, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 4, "lse", TANDEM_F32, B * c->i[2] * T, TANDEM_KB_IN, 1.0f, 3.0f);
    fa_ga_bufs(c, 5, 0);
    tandem_kcase_set_buf(c, 6, "dqkv", TANDEM_F32, B * T * 3 * d, TANDEM_KB_OUT, 0, 0);
}
static void fa_bwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_attn_fused_bwd_args *a = (tandem_k_attn_fused_bwd_args *)args;
    const int H = (int)c->i[2], dh = (int)c->i[3], d = H * dh;
    const size_t es = c->i[6] ? 2 : 4;
    const char *qkv = (const char *)bufs[0];
    float *dqkv = (float *)bufs[6];
    memset(a, 0, sizeof *a);
    a->q = qkv, a->k = qkv + (size_t)d * es, a->v = qkv + 2 * (size_t)d * es;
    a->key_mask = (const uint8_t *)bufs[1];
    a->o = bufs[2], a->dy = (const float *)bufs[3], a->lse = (const float *)bufs[4];
    a->ga_sum = (const float *)bufs[5];
    a->dq = dqkv, a->dk = dqkv + d, a->dv = dqkv + 2 * d;
    a->batch = (int)c->i[0], a->seq = (int)c->i[1], a->heads = H, a->head_dim = dh;
    a->ld_q = 3 * d, a->ld_o = d, a->ld_g = 3 * d, a->bf16 = (int)c->i[6];
    a->ga_heads = (int)c->i[4], a->text_len = (int)c->i[5];
    a->qk_scale = (float)(1.0 / sqrt((double)dh)), a->ga_sigma = c->f[0], a->ga_scale = c->f[1];
}
const tandem_kcase_spec tandem_kcase_attn_fused_bwd = {N_FA, fa_bwd_make, fa_bwd_bind};
