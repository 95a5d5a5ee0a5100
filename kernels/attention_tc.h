/* attention_tc.h — fused causal attention on tensor cores, for bf16 training: the arguments,
 * outputs, masks and guided-attention term of attn_fused_fwd / attn_fused_bwd (kernels/attention.h),
 * with the six products (Q K^T and P V forward; Q K^T, dO V^T, dS K, P^T dO, dS^T Q backward) as
 * warp multiply-accumulates (tandem_mma_bf16_16816, kernels/dialect.h) and no [B, H, T, T] tensor.
 *
 * Serves: bf16 = 1, q0 = 0, q_rows = seq (training), head_dim a multiple of 16 up to
 * TANDEM_K_ATTN_TC_MAX_DH (tandem_k_attn_tc_ok); the launchers (runtime/model/launchers.c) pick
 * these kernels for such shapes and attn_fused_* for the rest.
 *
 * Rounding (mirrored exactly by the host twins in attention_tc_host.c, so the emulator test is
 * tight): every product's operands are bf16 — q, k, v, o as stored; P and dS rounded from f32;
 * dO = bf16(dy). Each mma sums its 16 products onto its f32 accumulator (the emulator in double,
 * rounded once; a GPU in at least f32 in its own order). Keys (forward, dQ) and queries (dK, dV)
 * go in sub-tiles of 16: the forward's running max and sums move once per 16 keys; the softmax sum
 * l adds the unrounded f32 p (as FlashAttention-2 does); D = rowsum(dy o O) is summed by one
 * thread per row, in column order. */
#ifndef TANDEM_KERNELS_ATTENTION_TC_H
#define TANDEM_KERNELS_ATTENTION_TC_H

#include "kernels/attention.h"

#define TANDEM_K_ATTN_TC_THREADS 128 /* 4 warps of 16 rows (forward, dQ) or 16 keys (dK, dV) */
#define TANDEM_K_ATTN_TC_BQ 64       /* query rows per forward / dQ block */
#define TANDEM_K_ATTN_TC_BK 64       /* keys per shared tile, and per dK / dV block */
#define TANDEM_K_ATTN_TC_PAD 8       /* bf16 per shared row past its width: conflict-free fragments */
#define TANDEM_K_ATTN_TC_MAX_DH 64

/* The forward's arguments are attn_fused_fwd's (bf16 = 1, q0 = 0, q_rows = seq). */
typedef tandem_k_attn_fused_fwd_args tandem_k_attn_tc_fwd_args;

/* The backward's: attn_fused_bwd's (bf16 = 1), and optional bf16 copies of dq, dk, dv written in
 * the same pass (the QKV projection's backward GEMMs take them: no cast after). f.dq, f.dk, f.dv
 * may be NULL where their copy is given: bf16 training writes only the copies. */
typedef struct tandem_k_attn_tc_bwd_args {
    tandem_k_attn_fused_bwd_args f;
    tandem_bf16 *dq16, *dk16, *dv16; /* as f.dq, f.dk, f.dv (ld_g), or NULL */
} tandem_k_attn_tc_bwd_args;

/* 1 when the tensor-core kernels serve a head size. */
TANDEM_HD int tandem_k_attn_tc_ok(int head_dim) {
    return head_dim > 0 && head_dim % 16 == 0 && head_dim <= TANDEM_K_ATTN_TC_MAX_DH;
}

/* D_i = rowsum(dy o O)_i - gc ga_sum_i of the backward, summed in column order by one thread
 * (the kernels and their host twins share it: the same f32 sum). o is bf16. */
TANDEM_HD float tandem_k_attn_tc_delta(const tandem_k_attn_fused_bwd_args *a, int b, int h, int i, float gc) {
    const int64_t at = tandem_k_attn_at(b, a->seq, i, a->ld_o, h, a->head_dim);
    float d = 0.0f;
    for (int c = 0; c < a->head_dim; c++) d += a->dy[at + c] * tandem_k_attn_load(a->o, at + c, 1);
    if (gc != 0.0f)
        d -= gc * a->ga_sum[((int64_t)b * a->ga_heads + h) * (a->seq - a->text_len) + i - a->text_len];
    return d;
}

/* Shared memory (bf16 elements) of a row-major tile of `rows` rows and `width` columns. */
TANDEM_HD int tandem_k_attn_tc_tile(int rows, int width) { return rows * (width + TANDEM_K_ATTN_TC_PAD); }

#endif
