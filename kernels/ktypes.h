/* ktypes.h — plain C types shared by kernels (device), their host implementations and the
 * launcher: bf16 storage and conversions, launch geometry. Valid C11 and CUDA C++. */
#ifndef TANDEM_KTYPES_H
#define TANDEM_KTYPES_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define TANDEM_HD __host__ __device__ __forceinline__
#else
#define TANDEM_HD static inline
#endif

/* bf16 is stored as its 16 bits everywhere, so host, emulator and device agree bit for bit. */
typedef uint16_t tandem_bf16;

TANDEM_HD float tandem_bf16_to_f32(tandem_bf16 h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round to nearest, ties to even; NaN stays a (quiet) NaN. */
TANDEM_HD tandem_bf16 tandem_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (tandem_bf16)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (tandem_bf16)(u >> 16);
}

/* Element i of a producer's output v: into y (f32) and/or y16 (bf16, rounded as cast_f32_bf16
 * rounds), either NULL when unwanted, so a GEMM operand needs no cast pass after its producer. */
TANDEM_HD void tandem_k_store2(float *y, tandem_bf16 *y16, int64_t i, float v) {
    if (y) y[i] = v;
    if (y16) y16[i] = tandem_f32_to_bf16(v);
}
/* Bytes per element such a pair writes (the kernels' costs). */
TANDEM_HD double tandem_k_out_bytes(const float *y, const tandem_bf16 *y16) {
    return (y ? 4.0 : 0.0) + (y16 ? 2.0 : 0.0);
}

/* Geometry of one launch: grid and block in 3-D plus dynamic shared memory in bytes. */
typedef struct tandem_launch_dims {
    unsigned grid[3];
    unsigned block[3];
    unsigned shmem;
} tandem_launch_dims;

/* 1-D geometry: ceil(n / block) blocks of `block` threads. */
TANDEM_HD tandem_launch_dims tandem_dims_1d(int64_t n, unsigned block) {
    tandem_launch_dims d;
    int64_t g = (n + block - 1) / block;
    d.grid[0] = (unsigned)(g > 0 ? g : 1);
    d.grid[1] = d.grid[2] = 1;
    d.block[0] = block;
    d.block[1] = d.block[2] = 1;
    d.shmem = 0;
    return d;
}

/* What one launch costs, declared by each kernel from its arguments (DESIGN.md §5): the step
 * cost model (`tandem cost`) sums these over the launch list a real step records. Bytes are
 * the minimum DRAM traffic the kernel needs (each input read once, each output written once). */
typedef struct tandem_kernel_cost {
    double flops;         /* arithmetic operations (a fused multiply-add counts 2) */
    double bytes_read;    /* device memory read */
    double bytes_written; /* device memory written */
    double tensor_flops;  /* of flops, those on bf16 tensor cores (tandem_mma_bf16_16816) */
} tandem_kernel_cost;

#endif
