/* gemm_epi.h — a GEMM's epilogue as passes of their own, after a plain library GEMM: what the
 * cuda backend runs when cuBLASLt's heuristic rejects a plan with a fused epilogue
 * (platform/cuda/cuda_blaslt.c), so such a GEMM stays on the tensor cores instead of the
 * fatbin's CUDA-core GEMM. The same functions as the GEMM op's epilogues (platform/device.h). */
#ifndef TANDEM_KERNELS_GEMM_EPI_H
#define TANDEM_KERNELS_GEMM_EPI_H

#include "kernels/gemm_kernel.h"
#include "kernels/ktypes.h"
#include "kernels/layers.h"

#define TANDEM_K_GEMM_EPI_THREADS 256
#define TANDEM_K_GEMM_EPI_ROWS_MAX 65535 /* blockIdx.y: larger C loop round the grid */

/* gemm_epi_apply: per element v = C (the plain GEMM's alpha op(A) op(B) + beta C), then
 *   bias (bias or bias16 set):  v += bias[j]
 *   epi GELU_AUX (gemm_kernel.h TANDEM_K_GEMM_EPI_*): aux = v; C = gelu(v)
 *   epi DGELU:                  C = v gelu'(aux)
 *   else                        C = v
 * C, bias and aux all f32 (c, bias, aux) or all bf16 (c16, bias16, aux16: a bf16 C was rounded
 * by the GEMM, and each result is rounded again: one rounding more than the fused epilogue).
 * Blocks of THREADS columns x one row of the [batch * m] rows (one division per row). */
typedef struct tandem_k_gemm_epi_apply_args {
    float *c;                  /* [batch, m, n] (batch stride stride_c), or NULL */
    tandem_bf16 *c16;          /* the same in bf16, or NULL: exactly one of c, c16 */
    const float *bias;         /* [n] or NULL */
    const tandem_bf16 *bias16; /* [n] or NULL (with c16) */
    float *aux;                /* laid out as C: GELU_AUX writes it, DGELU reads it; or NULL */
    tandem_bf16 *aux16;        /* the same with c16 */
    int m, n, batch;
    int64_t stride_c;          /* elements between batch items (>= m n when batch > 1) */
    int epi;                   /* TANDEM_K_GEMM_EPI_NONE, _GELU_AUX or _DGELU */
} tandem_k_gemm_epi_apply_args;

/* gemm_epi_bgrad: out[c] = sum over r of a[r, c] (written, not added): the BGRAD epilogue's bias
 * gradient, the column sums of the weight gradient's A stored [rows = k, cols = m]. f32 or bf16 A
 * (widened exactly), f32 sums in a fixed order (row slices, then the slices in order): no atomics.
 * Blocks of TANDEM_K_GEMM_BGRAD_COLS columns x TANDEM_K_GEMM_BGRAD_SLICES row slices. */
#define TANDEM_K_GEMM_BGRAD_COLS 32
#define TANDEM_K_GEMM_BGRAD_SLICES 8
typedef struct tandem_k_gemm_epi_bgrad_args {
    const float *a;         /* [rows, cols], or NULL */
    const tandem_bf16 *a16; /* the same in bf16, or NULL: exactly one of a, a16 */
    float *out;             /* [cols] */
    int rows, cols;
} tandem_k_gemm_epi_bgrad_args;

#endif
