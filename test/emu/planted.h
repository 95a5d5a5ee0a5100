/* planted.h — argument structs and entry points of the emulator's own test kernels
 * (test/emu/planted.cu). They are not in the registry or the fatbin: some are deliberately
 * wrong (out-of-bounds, divergent barriers, bad shuffle masks) so test_emu_self can show the
 * emulator catches them; the others check CUDA semantics against double references. */
#ifndef TANDEM_TEST_EMU_PLANTED_H
#define TANDEM_TEST_EMU_PLANTED_H

#include "kernels/ktypes.h"

/* Element-wise kernels over [n] with 1-D geometry. */
typedef struct tandem_kt_vec_args {
    const float *in; /* [n] */
    float *out;      /* [n] */
    int n;
    int cut;         /* divergent kernels: threads with threadIdx.x >= cut leave early */
} tandem_kt_vec_args;

/* Block sums: partial[b] = sum of x over block b's 2*blockDim.x elements; total += all. */
typedef struct tandem_kt_reduce_args {
    const float *x; /* [n] */
    float *partial; /* [gridDim.x] */
    float *total;   /* [1], accumulated with atomicAdd */
    int n;
} tandem_kt_reduce_args;

/* Warp operations over [n] ints (n = threads of the launch). */
typedef struct tandem_kt_warp_args {
    const int *in;  /* [n] */
    int *scan;      /* [n] inclusive prefix sum within the warp (__shfl_up_sync) */
    int *bcast;     /* [n] in[src(lane)] of the same warp (__shfl_sync) */
    int *bfly;      /* [n] warp total via __shfl_xor_sync */
    unsigned *vote; /* [n / 32 * 3] per warp: ballot, any, all of in[i] & 1 */
    int n;
} tandem_kt_warp_args;

/* Deliberately bad warp operations; `variant` picks which (test_emu_self.c). */
typedef struct tandem_kt_badwarp_args {
    int *out; /* [blockDim.x] */
    int variant;
} tandem_kt_badwarp_args;

typedef struct tandem_kt_atomic_args {
    const float *vals; /* [n] */
    const int *keys;   /* [n] */
    int *count;        /* [1] += 1 per thread i < n */
    int *isum;         /* [1] += i */
    float *fsum;       /* [1] += vals[i] */
    int *imax;         /* [1] max of keys */
    unsigned *usum;    /* [1] += 3 */
    int *flag;         /* [1] 0 -> 1 by exactly one thread (atomicCAS) */
    int *winners;      /* [1] threads that saw the CAS succeed */
    int n;
} tandem_kt_atomic_args;

/* One warp's tensor-core product, fragments built from row-major bf16 A [16, 16] and B [16, 8]
 * by the documented layout (kernels/dialect.h): d = A B + c, all row-major. variant 1: lane 3
 * skips the mma (divergent: an error); variant 2: launched with 16 threads (an error). */
typedef struct tandem_kt_mma_args {
    const tandem_bf16 *a; /* [16, 16] */
    const tandem_bf16 *b; /* [16, 8] */
    const float *c;       /* [16, 8] */
    float *d;             /* [16, 8] */
    int variant;
} tandem_kt_mma_args;

/* Every thread writes its coordinates: out[gid * 12 + k], gid the linear global thread id. */
typedef struct tandem_kt_index_args {
    unsigned *out; /* [threads * 12] */
} tandem_kt_index_args;

void tandem_kt_oob_write(tandem_kt_vec_args a);
void tandem_kt_mma(tandem_kt_mma_args a);
void tandem_kt_oob_read(tandem_kt_vec_args a);
void tandem_kt_underrun(tandem_kt_vec_args a);
void tandem_kt_divergent_exit(tandem_kt_vec_args a);
void tandem_kt_divergent_sites(tandem_kt_vec_args a);
void tandem_kt_reverse_static(tandem_kt_vec_args a);
void tandem_kt_reverse_dynamic(tandem_kt_vec_args a);
void tandem_kt_dyn_overrun(tandem_kt_vec_args a);
void tandem_kt_reduce(tandem_kt_reduce_args a);
void tandem_kt_warp(tandem_kt_warp_args a);
void tandem_kt_badwarp(tandem_kt_badwarp_args a);
void tandem_kt_atomic(tandem_kt_atomic_args a);
void tandem_kt_index(tandem_kt_index_args a);
void tandem_kt_deep(tandem_kt_vec_args a);
void tandem_kt_shift_race(tandem_kt_vec_args a);

/* Source lane of tandem_kt_warp's __shfl_sync: also exercises srcLane >= 32 (taken mod 32). */
#define TANDEM_KT_BCAST_SRC(lane) ((int)((lane) * 7u + 37u))

#endif
