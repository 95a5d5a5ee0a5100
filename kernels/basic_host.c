/* basic_host.c — launch geometry and host implementations of the basic kernels (basic.cu).
 *
 * The host implementations are the readable reference the emulated kernels are compared with,
 * and what the host backend runs. They follow the kernels' semantics (kernels/basic.h), not
 * their thread structure.
 */
#include <stdint.h>

#include "registry.h"

/* Threads per block of the element-wise kernels and of row_sum_f32 (basic.cu assumes a
 * multiple of 32 for row_sum's warp reduction). */
enum { ELEMENTWISE_THREADS = 256, ROW_SUM_THREADS = 256 };

/* More blocks than this add nothing on any current GPU (they would only queue), so larger
 * tensors take several trips around the kernels' grid-stride loops instead. */
enum { ELEMENTWISE_MAX_BLOCKS = 4096 };

static void elementwise_dims(int64_t n, tandem_launch_dims *d) {
    *d = tandem_dims_1d(n, ELEMENTWISE_THREADS);
    if (d->grid[0] > ELEMENTWISE_MAX_BLOCKS) d->grid[0] = ELEMENTWISE_MAX_BLOCKS;
}

/* ---- fill_f32 ---- */
void tandem_k_fill_f32_geom(const tandem_k_fill_f32_args *a, tandem_launch_dims *d) {
    elementwise_dims(a->n, d);
}
void tandem_k_fill_f32_host(const tandem_k_fill_f32_args *a) {
    for (int64_t i = 0; i < a->n; i++) a->out[i] = a->value;
}

/* ---- scale_f32 ---- */
void tandem_k_scale_f32_geom(const tandem_k_scale_f32_args *a, tandem_launch_dims *d) {
    elementwise_dims(a->n, d);
}
void tandem_k_scale_f32_host(const tandem_k_scale_f32_args *a) {
    for (int64_t i = 0; i < a->n; i++) a->x[i] *= a->alpha;
}

/* ---- axpy_f32 ---- */
void tandem_k_axpy_f32_geom(const tandem_k_axpy_f32_args *a, tandem_launch_dims *d) {
    elementwise_dims(a->n, d);
}
void tandem_k_axpy_f32_host(const tandem_k_axpy_f32_args *a) {
    for (int64_t i = 0; i < a->n; i++) a->y[i] += a->alpha * a->x[i];
}

/* ---- cast_f32_bf16 ---- */
void tandem_k_cast_f32_bf16_geom(const tandem_k_cast_f32_bf16_args *a, tandem_launch_dims *d) {
    elementwise_dims(a->n, d);
}
void tandem_k_cast_f32_bf16_host(const tandem_k_cast_f32_bf16_args *a) {
    for (int64_t i = 0; i < a->n; i++) a->out[i] = tandem_f32_to_bf16(a->in[i]);
}

/* ---- cast_bf16_f32 ---- */
void tandem_k_cast_bf16_f32_geom(const tandem_k_cast_bf16_f32_args *a, tandem_launch_dims *d) {
    elementwise_dims(a->n, d);
}
void tandem_k_cast_bf16_f32_host(const tandem_k_cast_bf16_f32_args *a) {
    for (int64_t i = 0; i < a->n; i++) a->out[i] = tandem_bf16_to_f32(a->in[i]);
}

/* ---- row_sum_f32 ---- */
void tandem_k_row_sum_f32_geom(const tandem_k_row_sum_f32_args *a, tandem_launch_dims *d) {
    /* One block per row; a grid of zero blocks is not a valid launch, so rows == 0 gets one
     * block that returns at once. */
    *d = tandem_dims_1d(a->rows, 1);
    d->block[0] = ROW_SUM_THREADS;
}
/* Accumulates in double: the reference is more accurate than the kernel's float tree, so
 * the comparison measures the kernel's error rather than two float orders against each other. */
void tandem_k_row_sum_f32_host(const tandem_k_row_sum_f32_args *a) {
    for (int r = 0; r < a->rows; r++) {
        const float *x = a->x + (int64_t)r * a->cols; /* [cols] */
        double s = 0.0;
        for (int c = 0; c < a->cols; c++) s += x[c];
        a->out[r] = (float)s;
    }
}
