/* planted.cu — the emulator's own test kernels, in the kernel dialect (see planted.h). Some
 * carry planted bugs on purpose; test_emu_self.c says which error each must produce. */
#include "kernels/dialect.h"

#include "test/emu/planted.h"

#define KT_BLOCK_MAX 1024

DEVICE_FN int kt_gid(void) { return (int)(blockIdx.x * blockDim.x + threadIdx.x); }

/* Planted bug: `<=` writes one element past the end. */
KERNEL tandem_kt_oob_write(tandem_kt_vec_args a) {
    int i = kt_gid();
    if (i <= a.n) a.out[i] = 1.0f;
}

/* Planted bug: the last thread reads in[n]. */
KERNEL tandem_kt_oob_read(tandem_kt_vec_args a) {
    int i = kt_gid();
    if (i < a.n) a.out[i] = a.in[i + 1];
}

/* Planted bug: thread 0 writes out[-1] (caught by the canary after the launch). */
KERNEL tandem_kt_underrun(tandem_kt_vec_args a) {
    int i = kt_gid();
    if (i < a.n) a.out[i - 1] = 2.0f;
}

/* Planted bug: threads >= cut return before a barrier the others reach. */
KERNEL tandem_kt_divergent_exit(tandem_kt_vec_args a) {
    __shared__ float s[KT_BLOCK_MAX];
    int t = (int)threadIdx.x;
    if (t >= a.cut) return;
    s[t] = a.in[t];
    __syncthreads();
    a.out[t] = s[(t + 1) % a.cut];
}

/* Planted bug: odd and even threads wait at two different __syncthreads. */
KERNEL tandem_kt_divergent_sites(tandem_kt_vec_args a) {
    __shared__ float s[KT_BLOCK_MAX];
    int t = (int)threadIdx.x;
    if (t & 1) {
        s[t] = a.in[t] * 3.0f;
        __syncthreads();
        a.out[t] = s[t ^ 1] + 1.0f;
    } else {
        s[t] = a.in[t];
        __syncthreads();
        a.out[t] = s[t ^ 1] * 2.0f - s[t];
    }
}

/* out[b*B + t] = in[b*B + (B-1-t)] (0 past n): correct only if the barrier orders the
 * shared-memory writes of every thread before any read. */
KERNEL tandem_kt_reverse_static(tandem_kt_vec_args a) {
    __shared__ float s[KT_BLOCK_MAX];
    int t = (int)threadIdx.x, i = kt_gid();
    s[t] = i < a.n ? a.in[i] : 0.0f;
    __syncthreads();
    if (i < a.n) a.out[i] = s[(int)blockDim.x - 1 - t];
}

/* Same, in dynamic shared memory of blockDim.x floats. */
KERNEL tandem_kt_reverse_dynamic(tandem_kt_vec_args a) {
    DYNAMIC_SHARED(float, s);
    int t = (int)threadIdx.x, i = kt_gid();
    s[t] = i < a.n ? a.in[i] : 0.0f;
    __syncthreads();
    if (i < a.n) a.out[i] = s[(int)blockDim.x - 1 - t];
}

/* Planted bug: uses one float more dynamic shared memory than the launch declares. */
KERNEL tandem_kt_dyn_overrun(tandem_kt_vec_args a) {
    DYNAMIC_SHARED(float, s);
    int t = (int)threadIdx.x;
    s[t + 1] = 1.0f;
    __syncthreads();
    if (kt_gid() < a.n) a.out[kt_gid()] = s[t];
}

/* Block reduction: two elements per thread, shuffle-down within warps, warp totals through
 * static shared memory, butterfly (xor) over the warp totals; atomicAdd of block totals. */
KERNEL tandem_kt_reduce(tandem_kt_reduce_args a) {
    __shared__ float warp_tot[32];
    int t = (int)threadIdx.x, lane = t % 32, warp = t / 32;
    int nwarps = ((int)blockDim.x + 31) / 32;
    int i = (int)(blockIdx.x * blockDim.x * 2) + t;
    float v = 0.0f;
    if (i < a.n) v += a.x[i];
    if (i + (int)blockDim.x < a.n) v += a.x[i + (int)blockDim.x];
    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(TANDEM_FULL_MASK, v, off);
    if (lane == 0) warp_tot[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? warp_tot[lane] : 0.0f;
        for (int m = 1; m < 32; m *= 2) v += __shfl_xor_sync(TANDEM_FULL_MASK, v, m);
        if (lane == 0) {
            a.partial[blockIdx.x] = v;
            atomicAdd(a.total, v);
        }
    }
}

/* Scan (up), broadcast (idx, source lane >= 32 wraps), butterfly (xor), and votes. */
KERNEL tandem_kt_warp(tandem_kt_warp_args a) {
    int i = kt_gid(), lane = (int)threadIdx.x % 32;
    int x = a.in[i];
    int s = x;
    for (int d = 1; d < 32; d *= 2) {
        int y = __shfl_up_sync(TANDEM_FULL_MASK, s, d);
        if (lane >= d) s += y;
    }
    a.scan[i] = s;
    a.bcast[i] = __shfl_sync(TANDEM_FULL_MASK, x, TANDEM_KT_BCAST_SRC(lane));
    int b = x;
    for (int m = 16; m > 0; m /= 2) b += __shfl_xor_sync(TANDEM_FULL_MASK, b, m);
    a.bfly[i] = b;
    unsigned bal = __ballot_sync(TANDEM_FULL_MASK, x & 1);
    int any = __any_sync(TANDEM_FULL_MASK, x & 1);
    int all = __all_sync(TANDEM_FULL_MASK, x & 1);
    if (lane == 0) {
        a.vote[i / 32 * 3 + 0] = bal;
        a.vote[i / 32 * 3 + 1] = (unsigned)any;
        a.vote[i / 32 * 3 + 2] = (unsigned)all;
    }
}

/* Planted bugs, one per variant (one warp of 32 threads unless noted):
 *   0: lane 5 exits, the others shuffle with the full mask
 *   1: every lane uses mask 0x0000ffff, which excludes lanes 16..31
 *   2: lanes 0..15 use mask 0x0000ffff, lanes 16..31 the full mask
 *   3: lanes 0..15 read lane 20 with mask 0x0000ffff
 *   4: lanes 0..15 shuffle with the full mask, lanes 16..31 wait at __syncthreads
 *   5: a block of 48 threads; the second warp shuffles with the full mask
 *   6: correct: lanes 0..15 shuffle among themselves with 0x0000ffff (must pass) */
KERNEL tandem_kt_badwarp(tandem_kt_badwarp_args a) {
    int t = (int)threadIdx.x, lane = t % 32;
    int v = t * 10;
    switch (a.variant) {
    case 0:
        if (lane == 5) return;
        v = __shfl_down_sync(TANDEM_FULL_MASK, v, 1);
        break;
    case 1: v = __shfl_xor_sync(0x0000ffffu, v, 1); break;
    case 2: v = __shfl_xor_sync(lane < 16 ? 0x0000ffffu : TANDEM_FULL_MASK, v, 1); break;
    case 3:
        if (lane < 16) v = __shfl_sync(0x0000ffffu, v, 20);
        break;
    case 4:
        if (lane < 16) v = __shfl_down_sync(TANDEM_FULL_MASK, v, 1);
        else __syncthreads();
        break;
    case 5: v = __shfl_down_sync(TANDEM_FULL_MASK, v, 1); break;
    default:
        if (lane < 16) v = __shfl_xor_sync(0x0000ffffu, v, 8);
        break;
    }
    a.out[t] = v;
}

static uint32_t kt_pack(tandem_bf16 lo, tandem_bf16 hi) { return (uint32_t)lo | (uint32_t)hi << 16; }

KERNEL tandem_kt_mma(tandem_kt_mma_args a) {
    const int lane = (int)threadIdx.x % 32, g = lane / 4, t = lane % 4;
    uint32_t fa[4], fb[2];
    float c[4];
    for (int r = 0; r < 4; r++) { /* rows g, g+8; columns 2t.. then 2t+8.. */
        const int row = g + (r & 1) * 8, col = 2 * t + (r >> 1) * 8;
        fa[r] = kt_pack(a.a[row * 16 + col], a.a[row * 16 + col + 1]);
    }
    for (int r = 0; r < 2; r++) fb[r] = kt_pack(a.b[(2 * t + 8 * r) * 8 + g], a.b[(2 * t + 8 * r + 1) * 8 + g]);
    for (int x = 0; x < 4; x++) c[x] = a.c[(g + (x >> 1) * 8) * 8 + 2 * t + (x & 1)];
    if (a.variant == 1 && lane == 3) return;
    tandem_mma_bf16_16816(c, fa, fb, c); /* in place, as accumulating kernels call it */
    for (int x = 0; x < 4; x++) a.d[(g + (x >> 1) * 8) * 8 + 2 * t + (x & 1)] = c[x];
}

KERNEL tandem_kt_atomic(tandem_kt_atomic_args a) {
    int i = kt_gid();
    if (i >= a.n) return;
    atomicAdd(a.count, 1);
    atomicAdd(a.isum, i);
    atomicAdd(a.fsum, a.vals[i]);
    atomicMax(a.imax, a.keys[i]);
    atomicAdd(a.usum, 3u);
    if (atomicCAS(a.flag, 0, 1) == 0) atomicAdd(a.winners, 1);
}

KERNEL tandem_kt_index(tandem_kt_index_args a) {
    unsigned tpb = blockDim.x * blockDim.y * blockDim.z;
    unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned *o = a.out + (size_t)(block * tpb + t) * 12;
    o[0] = threadIdx.x, o[1] = threadIdx.y, o[2] = threadIdx.z;
    o[3] = blockIdx.x, o[4] = blockIdx.y, o[5] = blockIdx.z;
    o[6] = blockDim.x, o[7] = blockDim.y, o[8] = blockDim.z;
    o[9] = gridDim.x, o[10] = gridDim.y, o[11] = gridDim.z;
}

/* Planted bug: recursion n levels deep with 1 KiB frames overflows the thread's stack. */
static int kt_recurse(volatile char *up, int depth) {
    volatile char frame[1024];
    frame[0] = (char)(up[0] + 1);
    frame[1023] = frame[0];
    return depth > 0 ? kt_recurse(frame, depth - 1) + frame[1023] : frame[0];
}

KERNEL tandem_kt_deep(tandem_kt_vec_args a) {
    volatile char top[1] = {0};
    int r = kt_recurse(top, a.n);
    if (threadIdx.x == 0) a.out[0] = (float)r;
}

/* Planted bug: out[i] = in[i - 1] through shared memory, without the barrier between the write
 * and the neighbour's read. Correct only if the lower thread happens to run first. */
KERNEL tandem_kt_shift_race(tandem_kt_vec_args a) {
    __shared__ float s[KT_BLOCK_MAX];
    int t = (int)threadIdx.x, i = kt_gid();
    s[t] = i < a.n ? a.in[i] : 0.0f;
    if (i < a.n) a.out[i] = t > 0 ? s[t - 1] : (i > 0 ? a.in[i - 1] : 0.0f);
}
