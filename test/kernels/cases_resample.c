/* cases_resample.c — kernel-test cases for the resampler (kernels/resample.h).
 *
 * The class table is the plan's (the six covered rates, tandem_resample_design), the taps random
 * (the kernel only indexes them). Row classes are random in [-2, 6]: -1 is the copy class, -2
 * and 6 are out of range (taken as copies); input lengths random in [-5, in_stride + 20]
 * (negative and past the row: clamped), so rows end inside, at and beyond the window, and some
 * outputs are clamped to the row. Shapes: one short row, odd sizes that are not multiples of the
 * block, and one row longer than the grid (1024 blocks of 256) with few real samples, which only
 * the grid-stride loop writes to the end.
 *
 * Tolerance 1e-10 (normalised squared error): the same 8 float lanes on both sides; nvcc
 * contracts the multiply-adds into FMAs, which moves each sum by ~1e-7 relative at most.
 */
#include <stdio.h>

#include "test/kernels/kcase.h"
#include "runtime/audio/resample.h"

typedef struct rs_shape {
    int batch;
    int64_t in_stride, out_stride;
    int max_len; /* largest in_len drawn; 0: in_stride + 20 */
} rs_shape;

static const rs_shape shapes[] = {
    {1, 40, 30, 0}, {3, 1100, 517, 0}, {4, 901, 1203, 0}, {1, 64, 262144 + 300, 50}, {0, 0, 0, 0},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static int64_t rs_classes(tandem_k_rs_classes *k) {
    int64_t n = 0;
    k->n = TANDEM_RS_CLASSES;
    for (int i = 0; i < TANDEM_RS_CLASSES; i++) {
        tandem_rs_design d;
        tandem_resample_design(tandem_resample_class_rate(i), &d);
        k->up[i] = d.up, k->down[i] = d.down, k->taps[i] = d.taps, k->off[i] = (int32_t)n;
        n += (int64_t)d.up * d.taps;
    }
    return n;
}

static void rs_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    rs_shape s = shapes[idx];
    if (s.batch == 0) {
        s.batch = (int)tandem_rng_int(rng, 1, 5);
        s.in_stride = tandem_rng_int(rng, 1, 1500);
        s.out_stride = tandem_rng_int(rng, 1, 900);
    }
    tandem_k_rs_classes k;
    const int64_t n_taps = rs_classes(&k);
    c->i[0] = s.batch, c->i[1] = s.in_stride, c->i[2] = s.out_stride, c->i[3] = n_taps;
    snprintf(c->desc, sizeof c->desc, "batch=%d in_stride=%lld out_stride=%lld", s.batch, (long long)s.in_stride,
             (long long)s.out_stride);
    tandem_kcase_set_buf(c, 0, "in", TANDEM_F32, s.batch * s.in_stride, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 1, "in_len", TANDEM_I32, s.batch, TANDEM_KB_IN, -5.0f,
                         (float)(s.max_len ? s.max_len : s.in_stride + 20));
    tandem_kcase_set_buf(c, 2, "cls", TANDEM_I32, s.batch, TANDEM_KB_IN, -2.0f, (float)TANDEM_RS_CLASSES);
    tandem_kcase_set_buf(c, 3, "taps", TANDEM_F32, n_taps, TANDEM_KB_IN, -0.05f, 0.05f);
    tandem_kcase_set_buf(c, 4, "out", TANDEM_F32, s.batch * s.out_stride, TANDEM_KB_OUT, 0, 0);
    tandem_kcase_set_buf(c, 5, "out_len", TANDEM_I32, s.batch, TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-10;
}

static void rs_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_resample_args *a = (tandem_k_resample_args *)args;
    a->in = (const float *)bufs[0];
    a->in_len = (const int32_t *)bufs[1];
    a->cls = (const int32_t *)bufs[2];
    a->taps = (const float *)bufs[3];
    a->out = (float *)bufs[4];
    a->out_len = (int32_t *)bufs[5];
    a->batch = (int)c->i[0];
    a->in_stride = c->i[1];
    a->out_stride = c->i[2];
    a->n_taps = rs_classes(&a->classes);
}
const tandem_kcase_spec tandem_kcase_resample = {N_SHAPES, rs_make, rs_bind};
