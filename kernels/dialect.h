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
 * the float math functions below, and bf16 through ktypes.h. Write C that is also C++:
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

#endif /* TANDEM_DIALECT_H */
