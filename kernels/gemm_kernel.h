/* gemm_kernel.h — the fatbin's own GEMM (used on cuda when cuBLASLt is absent).
 * Row-major: C[b] = epilogue(alpha * op(A[b]) @ op(B[b]) + beta * C[b] (+ bias)); see tandem.h.
 * A, B f32 (gemm_f32) or bf16 (gemm_bf16); the accumulation f32; C f32 (gemm_bf16: or bf16). */
#ifndef TANDEM_KERNELS_GEMM_KERNEL_H
#define TANDEM_KERNELS_GEMM_KERNEL_H

#include "kernels/ktypes.h"

/* Block of TANDEM_K_GEMM_THREADS_XY x TANDEM_K_GEMM_THREADS_XY threads per 64 x 64 tile of C. */
#define TANDEM_K_GEMM_THREADS_XY 16

/* The epilogue after v = alpha op(A) op(B) + beta C (+ bias[j]), as the GEMM op's
 * (platform/device.h): NONE stores v; GELU_AUX stores v into aux (laid out as C) and
 * tandem_gelu_tanh(v) into C; DGELU stores v * tandem_gelu_tanh_grad(aux) (kernels/layers.h). */
#define TANDEM_K_GEMM_EPI_NONE 0
#define TANDEM_K_GEMM_EPI_GELU_AUX 1
#define TANDEM_K_GEMM_EPI_DGELU 2

typedef struct tandem_k_gemm_f32_args {
    const float *a; /* [batch, M, K] or [batch, K, M] when trans_a */
    const float *b; /* [batch, K, N] or [batch, N, K] when trans_b */
    float *c;       /* [batch, M, N] */
    int m, n, k, batch;
    int trans_a, trans_b;
    int64_t stride_a, stride_b, stride_c; /* elements between batch items */
    float alpha, beta;
    const float *bias; /* [n] or NULL: C[b, i, j] += bias[j] after alpha and beta (the GEMM
                          op's BIAS epilogue, platform/device.h) */
    int epi;    /* TANDEM_K_GEMM_EPI_* */
    float *aux; /* [batch, M, N] (batch stride stride_c): GELU_AUX writes it, DGELU reads it */
    const float *c_src; /* [batch, M, N] or NULL: beta C reads it instead of c (apart from c) */
    float *bgrad;       /* [M] or NULL: bgrad[i] = sum over k of op(A)[i, k] (written; batch 1), the GEMM
                           op's BGRAD epilogue: the blocks of the first column tile sum the A slices
                           they stage, k in order */
} tandem_k_gemm_f32_args;

/* The same product with bf16 A and B (mixed precision, runtime/model/model.h "Precision"): each
 * bf16 element is widened to f32 exactly, products are accumulated in f32. C, the bias and aux
 * are f32 (c, bias, aux) or bf16 (c16, bias16, aux16: rounded to nearest even from the f32
 * value), all of C's type: exactly one of c and c16 is set. */
typedef struct tandem_k_gemm_bf16_args {
    const tandem_bf16 *a; /* [batch, M, K] or [batch, K, M] when trans_a */
    const tandem_bf16 *b; /* [batch, K, N] or [batch, N, K] when trans_b */
    float *c;             /* [batch, M, N] or NULL */
    int m, n, k, batch;
    int trans_a, trans_b;
    int64_t stride_a, stride_b, stride_c; /* elements between batch items */
    float alpha, beta;
    const float *bias; /* [n] or NULL, as gemm_f32 */
    int epi;           /* TANDEM_K_GEMM_EPI_*, as gemm_f32 */
    float *aux;        /* as gemm_f32, with an f32 C */
    tandem_bf16 *c16;  /* [batch, M, N] or NULL: a bf16 C */
    const tandem_bf16 *bias16; /* [n] or NULL: the bias with a bf16 C */
    tandem_bf16 *aux16;        /* the aux matrix with a bf16 C */
    const float *c_src;        /* as gemm_f32 (an f32 C only), or NULL */
    float *bgrad;              /* as gemm_f32 (the widened bf16 A summed in f32), or NULL */
} tandem_k_gemm_bf16_args;

#endif
