/* basic.h — argument structs of the basic element-wise and reduction kernels. */
#ifndef TANDEM_KERNELS_BASIC_H
#define TANDEM_KERNELS_BASIC_H

#include "kernels/ktypes.h"

/* Threads per block of the element-wise kernels and of row_sum_f32 (a multiple of 32 for its
 * warp reduction); basic_host.c launches exactly these, basic.cu declares them as launch bounds. */
#define TANDEM_K_BASIC_THREADS 256
#define TANDEM_ROW_SUM_THREADS 256

/* out[i] = value, i < n */
typedef struct tandem_k_fill_f32_args {
    float *out; /* [n] */
    int64_t n;
    float value;
} tandem_k_fill_f32_args;

/* x[i] *= alpha */
typedef struct tandem_k_scale_f32_args {
    float *x; /* [n] */
    int64_t n;
    float alpha;
} tandem_k_scale_f32_args;

/* y[i] += alpha * x[i] (and y16[i] = bf16 of the new y[i], when y16 is not NULL) */
typedef struct tandem_k_axpy_f32_args {
    const float *x; /* [n] */
    float *y;       /* [n] */
    tandem_bf16 *y16; /* [n] or NULL: the sum as the next GEMM's bf16 operand too */
    int64_t n;
    float alpha;
} tandem_k_axpy_f32_args;

/* out[i] = bf16(in[i]), round to nearest even */
typedef struct tandem_k_cast_f32_bf16_args {
    const float *in;  /* [n] */
    tandem_bf16 *out; /* [n] */
    int64_t n;
} tandem_k_cast_f32_bf16_args;

/* out[i] = float(in[i]) */
typedef struct tandem_k_cast_bf16_f32_args {
    const tandem_bf16 *in; /* [n] */
    float *out;            /* [n] */
    int64_t n;
} tandem_k_cast_bf16_f32_args;

/* out[r] = sum_c x[r, c]: one block per row, shuffle + shared-memory reduction */
typedef struct tandem_k_row_sum_f32_args {
    const float *x; /* [rows, cols] */
    float *out;     /* [rows] */
    int rows, cols;
} tandem_k_row_sum_f32_args;

#endif
