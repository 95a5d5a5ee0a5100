/* gemm_epi_host.c — geometry, host implementations and costs of kernels/gemm_epi.h. */
#include "kernels/gemm_epi.h"
#include "kernels/registry.h"

static float epi_load(const float *x, const tandem_bf16 *x16, int64_t i) {
    return x ? x[i] : tandem_bf16_to_f32(x16[i]);
}

void tandem_k_gemm_epi_apply_geom(const tandem_k_gemm_epi_apply_args *a, tandem_launch_dims *d) {
    const int64_t rows = (int64_t)a->batch * a->m;
    *d = tandem_dims_1d(a->n, TANDEM_K_GEMM_EPI_THREADS);
    d->grid[1] = (unsigned)(rows < 1 ? 1 : rows > TANDEM_K_GEMM_EPI_ROWS_MAX ? TANDEM_K_GEMM_EPI_ROWS_MAX : rows);
}

void tandem_k_gemm_epi_apply_host(const tandem_k_gemm_epi_apply_args *a) {
    const int has_bias = a->bias || a->bias16;
    for (int64_t q = 0; q < a->batch; q++)
        for (int64_t i = 0; i < a->m; i++)
            for (int64_t j = 0; j < a->n; j++) {
                const int64_t x = q * a->stride_c + i * a->n + j;
                float v = epi_load(a->c, a->c16, x);
                if (has_bias) v += epi_load(a->bias, a->bias16, j);
                if (a->epi == TANDEM_K_GEMM_EPI_GELU_AUX) {
                    tandem_k_store2(a->aux, a->aux16, x, v);
                    v = tandem_gelu_tanh(v);
                } else if (a->epi == TANDEM_K_GEMM_EPI_DGELU) {
                    v *= tandem_gelu_tanh_grad(epi_load(a->aux, a->aux16, x));
                }
                tandem_k_store2(a->c, a->c16, x, v);
            }
}

void tandem_k_gemm_epi_apply_cost(const tandem_k_gemm_epi_apply_args *a, tandem_kernel_cost *c) {
    const double e = a->c16 ? 2.0 : 4.0, cn = (double)a->m * a->n * a->batch;
    const int aux_out = a->epi == TANDEM_K_GEMM_EPI_GELU_AUX, aux_in = a->epi == TANDEM_K_GEMM_EPI_DGELU;
    tandem_kcost(c, cn * (aux_out || aux_in ? 20.0 : 1.0),
                 cn * e * (aux_in ? 2.0 : 1.0) + (a->bias || a->bias16 ? e * a->n : 0.0),
                 cn * e * (aux_out ? 2.0 : 1.0));
}

void tandem_k_gemm_epi_bgrad_geom(const tandem_k_gemm_epi_bgrad_args *a, tandem_launch_dims *d) {
    *d = tandem_dims_1d(a->cols, TANDEM_K_GEMM_BGRAD_COLS);
    d->block[1] = TANDEM_K_GEMM_BGRAD_SLICES;
}

/* Each column's sum in double, rows in order (the kernel's float slices differ by rounding). */
void tandem_k_gemm_epi_bgrad_host(const tandem_k_gemm_epi_bgrad_args *a) {
    for (int c = 0; c < a->cols; c++) {
        double s = 0.0;
        for (int r = 0; r < a->rows; r++) s += epi_load(a->a, a->a16, (int64_t)r * a->cols + c);
        a->out[c] = (float)s;
    }
}

void tandem_k_gemm_epi_bgrad_cost(const tandem_k_gemm_epi_bgrad_args *a, tandem_kernel_cost *c) {
    const double n = (double)a->rows * a->cols;
    tandem_kcost(c, n, n * (a->a16 ? 2.0 : 4.0), 4.0 * a->cols);
}
