/* dialect.h — the CUDA-C dialect every kernel source (kernels/NAME.cu) is written in, and its only include.
 *
 * The same source compiles two ways:
 *   nvcc (__CUDACC__)     → real CUDA kernels in tandem.fatbin;
 *   host cc -DTANDEM_EMU  → plain C run by the emulator (test/emu) with CUDA semantics:
 *                           threads of a block as fibers, real barriers, lockstep warp exchange.
 * Kernel code may use: KERNEL, LAUNCH_BOUNDS(n) (every kernel: its fixed block size), DEVICE_FN, threadIdx/blockIdx/blockDim/gridDim, __shared__
 * (static) and DYNAMIC_SHARED(type, name), __syncthreads, __shfl_sync / __shfl_xor_sync /
 * __shfl_down_sync / __shfl_up_sync (3 arguments: width is always 32), __ballot_sync,
 * __any_sync, __all_sync, atomicAdd (float, int), atomicMax (int), atomicCAS (int, unsigned),
 * the float math functions below, bf16 through ktypes.h, and one tensor-core operation,
 * tandem_mma_bf16_16816 (below). Write C that is also C++:
 * no designated initializers, explicit casts from void *, no VLAs.
 * Every kernel takes exactly one parameter: its argument struct, passed by value.
 */
#ifndef TANDEM_DIALECT_H
#define TANDEM_DIALECT_H

#include "kernels/ktypes.h"

#define TANDEM_WARP_SIZE 32
#define TANDEM_FULL_MASK 0xffffffffu

#if defined(__CUDACC__)
/* ------------------------------------------------------------------------ nvcc ---- */
#define KERNEL extern "C" __global__ void
/* KERNEL LAUNCH_BOUNDS(n) name(...): the kernel is only ever launched with at most n threads
 * per block (its geometry in <group>_host.c uses the same constant), so ptxas may budget
 * 64K / n registers per thread; a larger block fails to launch. */
#define LAUNCH_BOUNDS(n) __launch_bounds__(n)
#define DEVICE_FN static __device__ __forceinline__
#define RESTRICT __restrict__
#define DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#define tandem_expf(x) __expf(x)
/* mma.sync needs sm_80 (every fatbin target has it). */
DEVICE_FN void tandem_mma_bf16_16816(float *d, const uint32_t *a, const uint32_t *b, const float *c) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%10,%11,%12,%13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
                   "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

#elif defined(TANDEM_EMU)
/* ------------------------------------------------------------- emulator (host C) ---- */
#include <math.h>

typedef struct tandem_emu_dim3 {
    unsigned x, y, z;
} tandem_emu_dim3;

/* Per-CUDA-thread context; implemented in test/emu. */
typedef struct tandem_emu_thread_ctx {
    tandem_emu_dim3 thread_idx, block_idx, block_dim, grid_dim;
} tandem_emu_thread_ctx;
const tandem_emu_thread_ctx *tandem_emu_ctx(void);

#define threadIdx (tandem_emu_ctx()->thread_idx)
#define blockIdx (tandem_emu_ctx()->block_idx)
#define blockDim (tandem_emu_ctx()->block_dim)
#define gridDim (tandem_emu_ctx()->grid_dim)

#define KERNEL void
#define LAUNCH_BOUNDS(n) /* register budgets do not exist on the host */
#define DEVICE_FN static inline
#define RESTRICT restrict
/* Blocks run one at a time per OS thread and the threads of a block are fibers of that OS
 * thread, so thread-local static storage is exactly per-block shared memory. */
#define __shared__ static _Thread_local
void *tandem_emu_dynamic_shared(void);
#define DYNAMIC_SHARED(type, name) type *name = (type *)tandem_emu_dynamic_shared()

void tandem_emu_syncthreads(void);
/* The source location identifies the barrier (a divergent barrier is reported when threads
 * wait at different ones); a return address would not, as the compiler may duplicate a call. */
void tandem_emu_syncthreads_at(const char *file, int line);
#define __syncthreads() tandem_emu_syncthreads_at(__FILE__, __LINE__)

/* Warp exchange: every lane in mask deposits, then all read (lockstep semantics). */
uint32_t tandem_emu_shfl_u32(unsigned mask, uint32_t v, int mode, int lane_arg);
enum { TANDEM_EMU_SHFL_IDX, TANDEM_EMU_SHFL_XOR, TANDEM_EMU_SHFL_DOWN, TANDEM_EMU_SHFL_UP };
static inline float tandem_emu_shfl_f32(unsigned m, float v, int mode, int l) {
    uint32_t u;
    memcpy(&u, &v, 4);
    u = tandem_emu_shfl_u32(m, u, mode, l);
    memcpy(&v, &u, 4);
    return v;
}
static inline int tandem_emu_shfl_i32(unsigned m, int v, int mode, int l) {
    return (int)tandem_emu_shfl_u32(m, (uint32_t)v, mode, l);
}
static inline unsigned tandem_emu_shfl_uns(unsigned m, unsigned v, int mode, int l) {
    return tandem_emu_shfl_u32(m, v, mode, l);
}
#define TANDEM_EMU_SHFL(m, v, mode, l)                                                    \
    _Generic((v), float: tandem_emu_shfl_f32, int: tandem_emu_shfl_i32,                   \
             unsigned: tandem_emu_shfl_uns)(m, v, mode, l)
#define __shfl_sync(m, v, l) TANDEM_EMU_SHFL(m, v, TANDEM_EMU_SHFL_IDX, l)
#define __shfl_xor_sync(m, v, l) TANDEM_EMU_SHFL(m, v, TANDEM_EMU_SHFL_XOR, l)
#define __shfl_down_sync(m, v, l) TANDEM_EMU_SHFL(m, v, TANDEM_EMU_SHFL_DOWN, l)
#define __shfl_up_sync(m, v, l) TANDEM_EMU_SHFL(m, v, TANDEM_EMU_SHFL_UP, l)

unsigned tandem_emu_ballot(unsigned mask, int pred);
#define __ballot_sync(m, p) tandem_emu_ballot(m, (p) != 0)
#define __any_sync(m, p) (tandem_emu_ballot(m, (p) != 0) != 0u)
#define __all_sync(m, p) (tandem_emu_ballot(m, (p) != 0) == ((m) & tandem_emu_ballot(m, 1)))

/* The tensor-core operation as a warp exchange: all 32 lanes deposit their fragments, then
 * each reads its part of D (emu_warp.c). */
void tandem_emu_mma_bf16_16816(float *d, const uint32_t *a, const uint32_t *b, const float *c);
#define tandem_mma_bf16_16816(d, a, b, c) tandem_emu_mma_bf16_16816(d, a, b, c)

/* Atomics: blocks may run on several OS threads at once, so these are real atomics. */
float tandem_emu_atomic_add_f32(float *p, float v);
int tandem_emu_atomic_add_i32(int *p, int v);
unsigned tandem_emu_atomic_add_u32(unsigned *p, unsigned v);
int tandem_emu_atomic_max_i32(int *p, int v);
int tandem_emu_atomic_cas_i32(int *p, int cmp, int v);
unsigned tandem_emu_atomic_cas_u32(unsigned *p, unsigned cmp, unsigned v);
#define atomicAdd(p, v)                                                                   \
    _Generic((p), float *: tandem_emu_atomic_add_f32, int *: tandem_emu_atomic_add_i32,   \
             unsigned *: tandem_emu_atomic_add_u32)(p, v)
#define atomicMax(p, v) tandem_emu_atomic_max_i32(p, v)
#define atomicCAS(p, c, v)                                                                \
    _Generic((p), int *: tandem_emu_atomic_cas_i32, unsigned *: tandem_emu_atomic_cas_u32)(p, c, v)

static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
#define __expf(x) expf(x)
#define __logf(x) logf(x)
#define __fdividef(a, b) ((a) / (b))
#define tandem_expf(x) expf(x)
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }

#else
#error "dialect.h: compile kernels with nvcc or with -DTANDEM_EMU (the emulator)"
#endif

/* tandem_mma_bf16_16816(d, a, b, c): D = A B + C on the tensor cores of one warp, A [16 x 16]
 * and B [16 x 8] bf16, C and D [16 x 8] f32 (d may be c). Every lane of a full warp calls it
 * together, outside divergent code (mma.sync.aligned). Each lane holds fragments, as the PTX
 * ISA's "Matrix Fragments for mma.m16n8k16 with floating point type" lays them out; with
 * g = lane / 4 and t = lane % 4, and each uint32_t two bf16 (the lower index in the low half):
 *   a[0] = A[g][2t, 2t+1]     a[1] = A[g+8][2t, 2t+1]   a[2] = A[g][2t+8, 2t+9]   a[3] = A[g+8][2t+8, 2t+9]
 *   b[0] = B[2t, 2t+1][g]     b[1] = B[2t+8, 2t+9][g]
 *   c[0], c[1] = C[g][2t, 2t+1]                        c[2], c[3] = C[g+8][2t, 2t+1]   (d alike)
 * Products are exact and summed in at least f32 (the order is the hardware's). */

#endif /* TANDEM_DIALECT_H */
