/* cases_attention_tc.c — kernel-test cases for the tensor-core attention
 * kernels (kernels/attention_tc.h), bf16 operands always.
 *
 * Shapes (B, T, H, dh, ga_heads, Tt, bf16 gradient copies): one position; T
 * around the 16-row sub-tile and the 64-row tile (15, 16, 17, 64, 65) and
 * several tiles (130); every head size the kernels serve (16, 32, 48, 64);
 * guided attention on and off; a random shape. The key mask is random 0/1 on
 * small shapes (rows with no allowed key occur) and mostly real on T >= 90.
 *
 * Tolerance 1e-12 (normalised squared error, kcase.h): the host twins follow
 * the kernels' arithmetic step for step (attention_tc_host.c), so the emulated
 * kernel and its twin agree to the bit; one bf16 ulp of difference in one
 * output element of a case gives ~1e-8.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test/kernels/kcase.h"

/* c->i = {B, T, H, dh, ga_heads, Tt, w16}; B < 0: random. w16: 0 f32 gradients, 1 f32 and their
 * bf16 copies, 2 the bf16 copies only (bf16 training: f.dq, f.dk, f.dv NULL) */
static const int tc_shapes[][7] = {
    {1, 1, 1, 16, 0, 0, 0},   {2, 15, 2, 32, 1, 5, 1},  {1, 16, 1, 64, 0, 0, 1},   {2, 17, 2, 48, 2, 6, 0},
    {1, 64, 2, 64, 1, 20, 2}, {2, 65, 1, 16, 1, 30, 1}, {1, 130, 2, 64, 2, 40, 1}, {-1, 0, 0, 0, 0, 0, 0},
};
#define N_TC ((int)(sizeof tc_shapes / sizeof tc_shapes[0]))

static void tc_shape(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t v[7];
    for (int j = 0; j < 7; j++) v[j] = tc_shapes[idx][j];
    if (v[0] < 0) {
        v[0] = tandem_rng_int(rng, 1, 3), v[1] = tandem_rng_int(rng, 1, 100);
        v[2] = tandem_rng_int(rng, 1, 3), v[3] = 16 * tandem_rng_int(rng, 1, 4);
        v[4] = tandem_rng_int(rng, 0, v[2]), v[5] = tandem_rng_int(rng, 0, v[1] - 1);
        v[6] = tandem_rng_int(rng, 0, 2);
    }
    for (int j = 0; j < 7; j++) c->i[j] = v[j];
    c->f[0] = 0.2f, c->f[1] = tandem_rng_uniform(rng, 0.1f, 2.0f);
    c->f[2] = v[1] >= 90 ? 7.0f : 1.0f;
    c->tol = 1e-12;
    snprintf(c->desc, sizeof c->desc, "B=%lld T=%lld H=%lld dh=%lld ga_heads=%lld Tt=%lld%s", (long long)v[0],
             (long long)v[1], (long long)v[2], (long long)v[3], (long long)v[4], (long long)v[5],
             v[6] == 2 ? " bf16 grads only" : (v[6] ? " +bf16 grads" : ""));
}

/* Buffers 0 (qkv, bf16) and 1 (key_mask) both passes read; the guided-attention
 * buffers [B, ga_heads, Tm] from j (forward: outputs ga_sum, ga_rows; backward:
 * input ga_sum). */
static int tc_inputs(int idx, tandem_rng *rng, tandem_kcase *c, int fwd) {
    tc_shape(idx, rng, c);
    const int64_t B = c->i[0], T = c->i[1], d = c->i[2] * c->i[3];
    tandem_kcase_set_buf(c, 0, "qkv", TANDEM_BF16, B * T * 3 * d, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 1, "key_mask", TANDEM_U8, B * T, TANDEM_KB_IN, 0.0f, c->f[2]);
    const int64_t n = B * c->i[4] * (T - c->i[5]);
    const int on = c->i[4] > 0 && n > 0;
    const tandem_kb_role out = on && fwd ? TANDEM_KB_OUT : TANDEM_KB_IN;
    tandem_kcase_set_buf(c, 2, "ga_sum", TANDEM_F32, on ? n : 1, out, 0.0f, 1.0f);
    if (fwd) tandem_kcase_set_buf(c, 3, "ga_rows", TANDEM_F32, on ? n : 1, out, 0.0f, 1.0f);
    return fwd ? 4 : 3;
}

/* The shared fields of both passes' arguments (the fused kernels' struct). */
static void tc_dims(const tandem_kcase *c, int *B, int *T, int *H, int *dh, float *scale) {
    *B = (int)c->i[0], *T = (int)c->i[1], *H = (int)c->i[2], *dh = (int)c->i[3];
    *scale = (float)(1.0 / sqrt((double)*dh));
}

static void tc_fwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    const int j = tc_inputs(idx, rng, c, 1);
    const int64_t B = c->i[0], T = c->i[1], d = c->i[2] * c->i[3];
    tandem_kcase_set_buf(c, j, "o", TANDEM_BF16, B * T * d, TANDEM_KB_OUT, 0, 0);
    tandem_kcase_set_buf(c, j + 1, "lse", TANDEM_F32, B * c->i[2] * T, TANDEM_KB_OUT, 0, 0);
}
static void tc_fwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_attn_tc_fwd_args *a = (tandem_k_attn_tc_fwd_args *)args;
    int B, T, H, dh;
    float scale;
    tc_dims(c, &B, &T, &H, &dh, &scale);
    const size_t d = (size_t)H * dh;
    const tandem_bf16 *qkv = (const tandem_bf16 *)bufs[0];
    memset(a, 0, sizeof *a);
    a->q = qkv, a->k = qkv + d, a->v = qkv + 2 * d;
    a->key_mask = (const uint8_t *)bufs[1];
    a->ga_sum = (float *)bufs[2], a->ga_rows = (float *)bufs[3];
    a->o = bufs[4], a->lse = (float *)bufs[5];
    a->batch = B, a->seq = T, a->heads = H, a->head_dim = dh, a->q0 = 0, a->q_rows = T;
    a->ld_q = a->ld_k = 3 * (int)d, a->hs_q = a->hs_k = dh, a->ld_o = (int)d, a->bf16 = 1;
    a->ga_heads = (int)c->i[4], a->text_len = (int)c->i[5];
    a->qk_scale = scale, a->ga_sigma = c->f[0], a->ga_scale = c->f[1];
}
const tandem_kcase_spec tandem_kcase_attn_tc_fwd = {N_TC, tc_fwd_make, tc_fwd_bind};

static void tc_bwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    const int j = tc_inputs(idx, rng, c, 0);
    const int64_t B = c->i[0], T = c->i[1], d = c->i[2] * c->i[3];
    tandem_kcase_set_buf(c, j, "o", TANDEM_BF16, B * T * d, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, j + 1, "dy", TANDEM_F32, B * T * d, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, j + 2, "lse", TANDEM_F32, B * c->i[2] * T, TANDEM_KB_IN, 1.0f, 3.0f);
    const int f32 = c->i[6] != 2;
    if (f32) tandem_kcase_set_buf(c, j + 3, "dqkv", TANDEM_F32, B * T * 3 * d, TANDEM_KB_OUT, 0, 0);
    if (c->i[6]) tandem_kcase_set_buf(c, j + 3 + f32, "dqkv16", TANDEM_BF16, B * T * 3 * d, TANDEM_KB_OUT, 0, 0);
}
static void tc_bwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_attn_tc_bwd_args *A = (tandem_k_attn_tc_bwd_args *)args;
    tandem_k_attn_fused_bwd_args *a = &A->f;
    int B, T, H, dh;
    float scale;
    tc_dims(c, &B, &T, &H, &dh, &scale);
    const size_t d = (size_t)H * dh;
    const tandem_bf16 *qkv = (const tandem_bf16 *)bufs[0];
    float *dqkv = c->i[6] != 2 ? (float *)bufs[6] : NULL;
    memset(A, 0, sizeof *A);
    a->q = qkv, a->k = qkv + d, a->v = qkv + 2 * d;
    a->key_mask = (const uint8_t *)bufs[1], a->ga_sum = (const float *)bufs[2];
    a->o = bufs[3], a->dy = (const float *)bufs[4], a->lse = (const float *)bufs[5];
    if (dqkv) a->dq = dqkv, a->dk = dqkv + d, a->dv = dqkv + 2 * d;
    if (c->i[6]) {
        tandem_bf16 *g16 = (tandem_bf16 *)bufs[dqkv ? 7 : 6];
        A->dq16 = g16, A->dk16 = g16 + d, A->dv16 = g16 + 2 * d;
    }
    a->batch = B, a->seq = T, a->heads = H, a->head_dim = dh;
    a->ld_q = 3 * (int)d, a->ld_o = (int)d, a->ld_g = 3 * (int)d, a->bf16 = 1;
    a->ga_heads = (int)c->i[4], a->text_len = (int)c->i[5];
    a->qk_scale = scale, a->ga_sigma = c->f[0], a->ga_scale = c->f[1];
}
const tandem_kcase_spec tandem_kcase_attn_tc_bwd = {N_TC, tc_bwd_make, tc_bwd_bind};
