/* cuda_gemm_epi.c — a GEMM's epilogue as kernels of its own (kernels/gemm_epi.h), queued after
 * the plain cuBLASLt product when cuBLASLt rejects the fused plan (cuda_blaslt.c): the bias, GELU
 * with its aux output, dGELU (gemm_epi_apply over C in place) and the bias gradient's column sums
 * of A (gemm_epi_bgrad). The same functions as the fused epilogues (platform/device.h). */
#include <string.h>

#include "kernels/registry.h"
#include "platform/cuda/cuda_internal.h"

static tandem_status epi_apply(tandem_stream *s, const tandem_gemm_desc *g, tandem_dptr c) {
    tandem_k_gemm_epi_apply_args x;
    memset(&x, 0, sizeof x);
    const int bf16 = g->c_type == TANDEM_BF16, bias = tandem_gemm_epi_has_bias(g->epilogue);
    if (bf16) {
        x.c16 = (tandem_bf16 *)(uintptr_t)c;
        x.bias16 = bias ? (const tandem_bf16 *)(uintptr_t)g->bias : NULL;
        x.aux16 = (tandem_bf16 *)(uintptr_t)g->aux;
    } else {
        x.c = (float *)(uintptr_t)c;
        x.bias = bias ? (const float *)(uintptr_t)g->bias : NULL;
        x.aux = (float *)(uintptr_t)g->aux;
    }
    x.m = (int)g->m, x.n = (int)g->n, x.batch = (int)g->batch, x.stride_c = g->stride_c;
    x.epi = g->epilogue == TANDEM_GEMM_EPI_GELU_AUX_BIAS ? TANDEM_K_GEMM_EPI_GELU_AUX
            : g->epilogue == TANDEM_GEMM_EPI_DGELU      ? TANDEM_K_GEMM_EPI_DGELU
                                                         : TANDEM_K_GEMM_EPI_NONE;
    tandem_launch_dims dims;
    tandem_kernel_table[TANDEM_KID_gemm_epi_apply].geom(&x, &dims);
    return tandem_cuda_launch(s, TANDEM_KID_gemm_epi_apply, &dims, &x, sizeof x);
}

/* bias[i] = sum over k of op(A)[i, k]: with trans_a (the only BGRAD shape, platform/device.h) A is
 * stored [k, m], so the sums run down its columns. */
static tandem_status epi_bgrad(tandem_stream *s, const tandem_gemm_desc *g, tandem_dptr a) {
    if (!g->trans_a || g->batch != 1)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "cuda GEMM: the BGRAD epilogue as a kernel of its own takes "
                           "trans_a and batch 1 (got trans_a %d, batch %lld)", g->trans_a, (long long)g->batch);
    tandem_k_gemm_epi_bgrad_args x;
    memset(&x, 0, sizeof x);
    if (g->a_type == TANDEM_BF16) x.a16 = (const tandem_bf16 *)(uintptr_t)a;
    else x.a = (const float *)(uintptr_t)a;
    x.out = (float *)(uintptr_t)g->bias;
    x.rows = (int)g->k, x.cols = (int)g->m;
    tandem_launch_dims dims;
    tandem_kernel_table[TANDEM_KID_gemm_epi_bgrad].geom(&x, &dims);
    return tandem_cuda_launch(s, TANDEM_KID_gemm_epi_bgrad, &dims, &x, sizeof x);
}

tandem_status tandem_cuda_gemm_epi_pass(tandem_stream *s, const tandem_gemm_desc *g, tandem_dptr a, tandem_dptr c) {
    if (tandem_gemm_epi_bias_out(g->epilogue)) return epi_bgrad(s, g, a);
    if (g->epilogue == TANDEM_GEMM_EPI_NONE) return TANDEM_OK;
    return epi_apply(s, g, c);
}
