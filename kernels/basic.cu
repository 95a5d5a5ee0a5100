/* basic.cu — the first device kernels: fill, scale, axpy, f32<->bf16 casts, row-wise sum.
 *
 * Written in the dialect (dialect.h): compiled by nvcc into the fatbin and by the host C
 * compiler with -DTANDEM_EMU for the emulator. Element-wise kernels use a grid-stride loop so
 * any grid covers any n (kernels/basic_host.c caps the grid, so large n takes several strides).
 * Host implementations and launch geometry: kernels/basic_host.c.
 */
#include "kernels/dialect.h"

#include "kernels/basic.h"


/* First element index of this thread and the stride of the grid-stride loop. */
DEVICE_FN int64_t tandem_k_first_index(void) {
    return (int64_t)blockIdx.x * (int64_t)blockDim.x + (int64_t)threadIdx.x;
}
DEVICE_FN int64_t tandem_k_grid_stride(void) {
    return (int64_t)gridDim.x * (int64_t)blockDim.x;
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_BASIC_THREADS) tandem_k_fill_f32(tandem_k_fill_f32_args a) {
    int64_t stride = tandem_k_grid_stride();
    for (int64_t i = tandem_k_first_index(); i < a.n; i += stride) a.out[i] = a.value;
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_BASIC_THREADS) tandem_k_scale_f32(tandem_k_scale_f32_args a) {
    int64_t stride = tandem_k_grid_stride();
    for (int64_t i = tandem_k_first_index(); i < a.n; i += stride) a.x[i] *= a.alpha;
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_BASIC_THREADS) tandem_k_axpy_f32(tandem_k_axpy_f32_args a) {
    int64_t stride = tandem_k_grid_stride();
    for (int64_t i = tandem_k_first_index(); i < a.n; i += stride)
        tandem_k_store2(a.y, a.y16, i, a.y[i] + a.alpha * a.x[i]);
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_BASIC_THREADS) tandem_k_cast_f32_bf16(tandem_k_cast_f32_bf16_args a) {
    int64_t stride = tandem_k_grid_stride();
    for (int64_t i = tandem_k_first_index(); i < a.n; i += stride)
        a.out[i] = tandem_f32_to_bf16(a.in[i]);
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_BASIC_THREADS) tandem_k_cast_bf16_f32(tandem_k_cast_bf16_f32_args a) {
    int64_t stride = tandem_k_grid_stride();
    for (int64_t i = tandem_k_first_index(); i < a.n; i += stride)
        a.out[i] = tandem_bf16_to_f32(a.in[i]);
}

/* Sum of v over the 32 lanes of a full warp; the total lands in lane 0. */
DEVICE_FN float tandem_k_warp_sum(float v) {
    for (int offset = TANDEM_WARP_SIZE / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(TANDEM_FULL_MASK, v, offset);
    return v;
}

/* One block per row (grid.x = rows, block = TANDEM_ROW_SUM_THREADS). Each thread sums a strided
 * slice of the row, each warp reduces its 32 partial sums with shuffles, warp totals meet in
 * shared memory, and the first warp reduces those. The whole block leaves together when the row
 * is out of range, so no thread skips a barrier the others reach. */
KERNEL LAUNCH_BOUNDS(TANDEM_ROW_SUM_THREADS) tandem_k_row_sum_f32(tandem_k_row_sum_f32_args a) {
    __shared__ float warp_totals[TANDEM_ROW_SUM_THREADS / TANDEM_WARP_SIZE];
    int row = (int)blockIdx.x;
    if (row >= a.rows) return;
    int tid = (int)threadIdx.x;
    int lane = tid % TANDEM_WARP_SIZE;
    int warp = tid / TANDEM_WARP_SIZE;
    int nwarps = (int)blockDim.x / TANDEM_WARP_SIZE;

    const float *x = a.x + (int64_t)row * a.cols; /* [cols] */
    float v = 0.0f;
    for (int c = tid; c < a.cols; c += (int)blockDim.x) v += x[c];

    v = tandem_k_warp_sum(v);
    if (lane == 0) warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? warp_totals[lane] : 0.0f;
        v = tandem_k_warp_sum(v);
        if (lane == 0) a.out[row] = v;
    }
}

/* The kernel sources (kernels/<group>.cu) share one translation unit in the fatbin
 * build: keep this name local. */
#undef TANDEM_ROW_SUM_THREADS
