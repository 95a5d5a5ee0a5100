/* gemm_epi.cu — a GEMM's epilogue as passes of their own (kernels/gemm_epi.h). Launch geometry:
 * kernels/gemm_epi_host.c. Helpers are prefixed gemm_epi_ (one translation unit in the fatbin). */
#include "kernels/dialect.h"

#include "kernels/gemm_epi.h"

DEVICE_FN float gemm_epi_load(const float *x, const tandem_bf16 *x16, int64_t i) {
    return x ? x[i] : tandem_bf16_to_f32(x16[i]);
}

/* Blocks: x over the columns, y over the rows of all items (looping past the grid's y). */
KERNEL LAUNCH_BOUNDS(TANDEM_K_GEMM_EPI_THREADS) tandem_k_gemm_epi_apply(tandem_k_gemm_epi_apply_args a) {
    const int64_t rows = (int64_t)a.batch * a.m;
    const int has_bias = a.bias != NULL || a.bias16 != NULL;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
        const int64_t q = r / a.m, base = q * a.stride_c + (r - q * a.m) * a.n; /* once per row */
        for (int j = (int)(blockIdx.x * blockDim.x + threadIdx.x); j < a.n; j += (int)(gridDim.x * blockDim.x)) {
            const int64_t x = base + j;
            float v = gemm_epi_load(a.c, a.c16, x);
            if (has_bias) v += gemm_epi_load(a.bias, a.bias16, j);
            if (a.epi == TANDEM_K_GEMM_EPI_GELU_AUX) {
                tandem_k_store2(a.aux, a.aux16, x, v);
                v = tandem_gelu_tanh(v);
            } else if (a.epi == TANDEM_K_GEMM_EPI_DGELU) {
                v *= tandem_gelu_tanh_grad(gemm_epi_load(a.aux, a.aux16, x));
            }
            tandem_k_store2(a.c, a.c16, x, v);
        }
    }
}

/* Block (COLS, SLICES): thread (tx, ty) sums rows ty, ty + SLICES, ... of its column (a warp reads
 * consecutive columns of a row), then row 0 adds the slices in order. */
KERNEL LAUNCH_BOUNDS(TANDEM_K_GEMM_BGRAD_COLS * TANDEM_K_GEMM_BGRAD_SLICES)
tandem_k_gemm_epi_bgrad(tandem_k_gemm_epi_bgrad_args a) {
    __shared__ float slices[TANDEM_K_GEMM_BGRAD_SLICES][TANDEM_K_GEMM_BGRAD_COLS + 1]; /* +1: no bank conflicts */
    const int tx = (int)threadIdx.x, ty = (int)threadIdx.y, c = (int)blockIdx.x * TANDEM_K_GEMM_BGRAD_COLS + tx;
    float s = 0.0f;
    if (c < a.cols)
        for (int r = ty; r < a.rows; r += TANDEM_K_GEMM_BGRAD_SLICES) s += gemm_epi_load(a.a, a.a16, (int64_t)r * a.cols + c);
    slices[ty][tx] = s;
    __syncthreads();
    if (ty == 0 && c < a.cols) {
        float t = 0.0f;
        for (int k = 0; k < TANDEM_K_GEMM_BGRAD_SLICES; k++) t += slices[k][tx];
        a.out[c] = t;
    }
}
