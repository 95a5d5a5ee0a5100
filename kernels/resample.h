/* resample.h — the polyphase windowed-sinc resampler: rows of native-rate audio to the feature
 * recipe's 22050 Hz, batched, on the data device (kernel: kernels/resample.cu; host twin and
 * geometry: kernels/resample_host.c; taps designed in double at plan time by
 * runtime/audio/resample_plan.c).
 *
 * A rate r converts by the ratio up / down = 22050 / r (reduced): output sample n sits at input
 * time t = n * down / up, so its phase is p = (n * down) mod up and its first input sample is
 * i0 = floor(n * down / up) - K/2 + 1. y[n] = sum_{k < K} taps[off + p * K + k] * x[i0 + k],
 * samples outside [0, in_len) read as 0 (the signal is silent before and after the file),
 * accumulated in float in 8 lanes (lane k mod 8), the lanes summed in order.
 * Row lengths follow the decoder's rule: out_len = round(in_len * up / down), clamped to the
 * row; rows whose class is TANDEM_K_RS_COPY are already at 22050 Hz and are copied. Every
 * output sample of the row past out_len is written 0, so the features see fixed padding.
 */
#ifndef TANDEM_KERNELS_RESAMPLE_H
#define TANDEM_KERNELS_RESAMPLE_H

#include <stdint.h>

#include "kernels/ktypes.h"

#define TANDEM_K_RESAMPLE_THREADS 256
#define TANDEM_RS_OUT_RATE 22050
#define TANDEM_RS_MAX_CLASSES 8
#define TANDEM_RS_LANES 8 /* taps per phase are a multiple of this */
#define TANDEM_K_RS_COPY (-1)

/* The rate classes of one plan, passed by value. */
typedef struct tandem_k_rs_classes {
    int32_t n;                            /* classes in use */
    int32_t up[TANDEM_RS_MAX_CLASSES];    /* out = in * up / down */
    int32_t down[TANDEM_RS_MAX_CLASSES];
    int32_t taps[TANDEM_RS_MAX_CLASSES];  /* K: taps per phase, a multiple of TANDEM_RS_LANES */
    int32_t off[TANDEM_RS_MAX_CLASSES];   /* phase 0's first tap in the table; up * K taps each */
} tandem_k_rs_classes;

typedef struct tandem_k_resample_args {
    const float *in;         /* [batch, in_stride] native rate, row b's first in_len[b] used */
    const int32_t *in_len;   /* [batch] samples, clamped to [0, in_stride] */
    const int32_t *cls;      /* [batch] class index, or TANDEM_K_RS_COPY */
    const float *taps;       /* [n_taps] phase-major tables of every class */
    float *out;              /* [batch, out_stride] 22050 Hz, 0 past out_len[b] */
    int32_t *out_len;        /* [batch] */
    int64_t in_stride, out_stride, n_taps;
    int batch;
    tandem_k_rs_classes classes;
} tandem_k_resample_args;

/* Output samples of a row of `in_len` samples of class c: round(in_len * up / down) (half up,
 * as llround of the positive quotient), clamped to out_stride; the copy class keeps in_len. */
TANDEM_HD int64_t tandem_k_rs_out_len(const tandem_k_rs_classes *k, int c, int64_t in_len, int64_t out_stride) {
    int64_t n = in_len;
    if (c >= 0 && c < k->n) n = (2 * in_len * k->up[c] + k->down[c]) / (2 * (int64_t)k->down[c]);
    return n < out_stride ? n : out_stride;
}

/* Row b's class, in_len (clamped) and out_len; *c = TANDEM_K_RS_COPY for an unknown index. */
TANDEM_HD int64_t tandem_k_rs_row(const tandem_k_resample_args *a, int b, int *c, int64_t *in_len) {
    int64_t n = a->in_len[b];
    if (n < 0) n = 0;
    if (n > a->in_stride) n = a->in_stride;
    int k = a->cls[b];
    if (k < 0 || k >= a->classes.n) k = TANDEM_K_RS_COPY;
    *c = k;
    *in_len = n;
    return tandem_k_rs_out_len(&a->classes, k, n, a->out_stride);
}

/* Output sample n (< out_len) of a row x[0, len) of class c (not the copy class): the dot
 * product above, bounds-checked only where the window leaves the row. */
TANDEM_HD float tandem_k_rs_sample(const tandem_k_resample_args *a, int c, const float *x, int64_t len, int64_t n) {
    const int64_t up = a->classes.up[c], down = a->classes.down[c], K = a->classes.taps[c];
    const int64_t t = n * down;
    const int64_t i0 = t / up - K / 2 + 1;
    const float *h = a->taps + a->classes.off[c] + (t % up) * K;
    float lane[TANDEM_RS_LANES] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (i0 >= 0 && i0 + K <= len) {
        for (int64_t k = 0; k < K; k += TANDEM_RS_LANES)
            for (int j = 0; j < TANDEM_RS_LANES; j++) lane[j] += h[k + j] * x[i0 + k + j];
    } else {
        for (int64_t k = 0; k < K; k += TANDEM_RS_LANES)
            for (int j = 0; j < TANDEM_RS_LANES; j++) {
                const int64_t i = i0 + k + j;
                lane[j] += i >= 0 && i < len ? h[k + j] * x[i] : 0.0f;
            }
    }
    float s = 0.0f;
    for (int j = 0; j < TANDEM_RS_LANES; j++) s += lane[j];
    return s;
}

#endif
