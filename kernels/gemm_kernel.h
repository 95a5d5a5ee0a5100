/* gemm_kernel.h — the fatbin's own GEMM (used on cuda when cuBLASLt is absent).
 * Row-major, f32: C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b]; see tandem.h. */
#ifndef TANDEM_KERNELS_GEMM_KERNEL_H
#define TANDEM_KERNELS_GEMM_KERNEL_H

#include "ktypes.h"

typedef struct tandem_k_gemm_f32_args {
    const float *a; /* [batch, M, K] or [batch, K, M] when trans_a */
    const float *b; /* [batch, K, N] or [batch, N, K] when trans_b */
    float *c;       /* [batch, M, N] */
    int m, n, k, batch;
    int trans_a, trans_b;
    int64_t stride_a, stride_b, stride_c; /* elements between batch items */
    float alpha, beta;
} tandem_k_gemm_f32_args;

#endif
