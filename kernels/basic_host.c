/* basic_host.c — launch geometry and host implementations of the basic kernels (basic.cu).
 *
 * The host implementations are the readable reference the emulated kernels are compared with,
 * and what the host backend runs. They follow the kernels' semantics (kernels/basic.h), not
 * their thread structure.
 */
#include <stdint.h>

#include "kernels/host_parallel.h"
#include "kernels/registry.h"

/* Loops over runtime lengths compile to vector code: GCC's -O2 cost model ("very cheap")
 * vectorises only loops that need no scalar epilogue. Vectorising changes no result here:
 * float reductions keep their order (no -ffast-math), element-wise loops do the same
 * operation per element. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

/* Host parallel loops (host_pool.h): at least this many elements, or rows of row_sum, per
 * range, so that waking a thread is worth it. Each element is computed by one index with the
 * same arithmetic, so the results do not depend on the thread count. */
enum { HOST_GRAIN = 16384 };

/* Threads per block of the element-wise kernels and of row_sum_f32 (basic.cu assumes a
 * multiple of 32 for row_sum's warp reduction). */
enum { ELEMENTWISE_THREADS = TANDEM_K_BASIC_THREADS, ROW_SUM_THREADS = TANDEM_ROW_SUM_THREADS };

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
static void fill_f32_range(void *ctx, int64_t i0, int64_t i1) {
    const tandem_k_fill_f32_args *a = ctx;
    for (int64_t i = i0; i < i1; i++) a->out[i] = a->value;
}
void tandem_k_fill_f32_host(const tandem_k_fill_f32_args *a) {
    tandem_host_parallel_for(a->n, HOST_GRAIN, fill_f32_range, (void *)a);
}

/* ---- scale_f32 ---- */
void tandem_k_scale_f32_geom(const tandem_k_scale_f32_args *a, tandem_launch_dims *d) {
    elementwise_dims(a->n, d);
}
static void scale_f32_range(void *ctx, int64_t i0, int64_t i1) {
    const tandem_k_scale_f32_args *a = ctx;
    for (int64_t i = i0; i < i1; i++) a->x[i] *= a->alpha;
}
void tandem_k_scale_f32_host(const tandem_k_scale_f32_args *a) {
    tandem_host_parallel_for(a->n, HOST_GRAIN, scale_f32_range, (void *)a);
}

/* ---- axpy_f32 ---- */
void tandem_k_axpy_f32_geom(const tandem_k_axpy_f32_args *a, tandem_launch_dims *d) {
    elementwise_dims(a->n, d);
}
static void axpy_f32_range(void *ctx, int64_t i0, int64_t i1) {
    const tandem_k_axpy_f32_args *a = ctx;
    /* restrict locals: the loop compiles to vector code (a store through a->y could otherwise
     * change a's fields, so they would be reloaded every element) */
    float *restrict y = a->y;
    const float *restrict x = a->x;
    const float alpha = a->alpha;
    for (int64_t i = i0; i < i1; i++) y[i] += alpha * x[i];
    if (a->y16)
        for (int64_t i = i0; i < i1; i++) a->y16[i] = tandem_f32_to_bf16(y[i]);
}
void tandem_k_axpy_f32_host(const tandem_k_axpy_f32_args *a) {
    tandem_host_parallel_for(a->n, HOST_GRAIN, axpy_f32_range, (void *)a);
}

/* ---- cast_f32_bf16 ---- */
void tandem_k_cast_f32_bf16_geom(const tandem_k_cast_f32_bf16_args *a, tandem_launch_dims *d) {
    elementwise_dims(a->n, d);
}
static void cast_f32_bf16_range(void *ctx, int64_t i0, int64_t i1) {
    const tandem_k_cast_f32_bf16_args *a = ctx;
    for (int64_t i = i0; i < i1; i++) a->out[i] = tandem_f32_to_bf16(a->in[i]);
}
void tandem_k_cast_f32_bf16_host(const tandem_k_cast_f32_bf16_args *a) {
    tandem_host_parallel_for(a->n, HOST_GRAIN, cast_f32_bf16_range, (void *)a);
}

/* ---- cast_bf16_f32 ---- */
void tandem_k_cast_bf16_f32_geom(const tandem_k_cast_bf16_f32_args *a, tandem_launch_dims *d) {
    elementwise_dims(a->n, d);
}
static void cast_bf16_f32_range(void *ctx, int64_t i0, int64_t i1) {
    const tandem_k_cast_bf16_f32_args *a = ctx;
    for (int64_t i = i0; i < i1; i++) a->out[i] = tandem_bf16_to_f32(a->in[i]);
}
void tandem_k_cast_bf16_f32_host(const tandem_k_cast_bf16_f32_args *a) {
    tandem_host_parallel_for(a->n, HOST_GRAIN, cast_bf16_f32_range, (void *)a);
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
static void row_sum_f32_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_row_sum_f32_args *a = ctx;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = a->x + r * a->cols; /* [cols] */
        double s = 0.0;
        for (int c = 0; c < a->cols; c++) s += x[c];
        a->out[r] = (float)s;
    }
}
void tandem_k_row_sum_f32_host(const tandem_k_row_sum_f32_args *a) {
    int64_t grain = a->cols > 0 ? HOST_GRAIN / a->cols + 1 : HOST_GRAIN;
    tandem_host_parallel_for(a->rows, grain, row_sum_f32_rows, (void *)a);
}

/* ---- costs (registry.h): element-wise passes read and write each element once ------------ */

void tandem_k_fill_f32_cost(const tandem_k_fill_f32_args *a, tandem_kernel_cost *c) {
    tandem_kcost(c, 0.0, 0.0, 4.0 * (double)a->n);
}
void tandem_k_scale_f32_cost(const tandem_k_scale_f32_args *a, tandem_kernel_cost *c) {
    tandem_kcost(c, (double)a->n, 4.0 * (double)a->n, 4.0 * (double)a->n);
}
void tandem_k_axpy_f32_cost(const tandem_k_axpy_f32_args *a, tandem_kernel_cost *c) {
    tandem_kcost(c, 2.0 * (double)a->n, 8.0 * (double)a->n, tandem_k_out_bytes(a->y, a->y16) * (double)a->n);
}
void tandem_k_cast_f32_bf16_cost(const tandem_k_cast_f32_bf16_args *a, tandem_kernel_cost *c) {
    tandem_kcost(c, (double)a->n, 4.0 * (double)a->n, 2.0 * (double)a->n); /* one rounding */
}
void tandem_k_cast_bf16_f32_cost(const tandem_k_cast_bf16_f32_args *a, tandem_kernel_cost *c) {
    tandem_kcost(c, 0.0, 2.0 * (double)a->n, 4.0 * (double)a->n); /* a shift */
}
void tandem_k_row_sum_f32_cost(const tandem_k_row_sum_f32_args *a, tandem_kernel_cost *c) {
    const double n = (double)a->rows * (double)a->cols;
    tandem_kcost(c, n, 4.0 * n, 4.0 * (double)a->rows);
}
