/* cases_basic.c — kernel-test cases for the basic kernels (kernels/basic.h).
 *
 * Sizes: 1, a partial warp (31), just past one block (257), a few blocks (1000), many blocks
 * (100003), past the 4096-block grid cap so threads take a second trip round the grid-stride
 * loop (4096 * 256 + 12345), and one random size.
 *
 * Tolerances (normalised squared error, kcase.h):
 *   fill, casts: 1e-12, i.e. exact in practice — one element off by one bf16 ulp among a
 *     million still exceeds it. Host and kernel run the same conversion (ktypes.h).
 *   scale, axpy: 1e-10 — one rounding per element, but nvcc may contract y + a*x into an FMA
 *     (one rounding instead of two), so bit equality is not guaranteed.
 *   row_sum: 1e-10 — the kernel's float tree against the host's double sum; the expected
 *     error is ~1e-14, while a single dropped element gives > 1e-6.
 */
#include <stdio.h>

#include "test/kernels/kcase.h"

static const int64_t elementwise_sizes[] = {1, 31, 257, 1000, 100003, 4096 * 256 + 12345, -1};
#define N_ELEMENTWISE ((int)(sizeof elementwise_sizes / sizeof elementwise_sizes[0]))

static int64_t pick_n(int idx, tandem_rng *rng) {
    int64_t n = elementwise_sizes[idx];
    return n > 0 ? n : tandem_rng_int(rng, 2, 20000);
}

/* ---- fill_f32: out [n] ---- */
static void fill_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = pick_n(idx, rng);
    c->i[0] = n;
    c->f[0] = tandem_rng_uniform(rng, -100.0f, 100.0f);
    tandem_kcase_set_buf(c, 0, "out", TANDEM_F32, n, TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-12;
    snprintf(c->desc, sizeof c->desc, "n=%lld value=%g", (long long)n, c->f[0]);
}
static void fill_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_fill_f32_args *a = (tandem_k_fill_f32_args *)args;
    a->out = (float *)bufs[0];
    a->n = c->i[0];
    a->value = c->f[0];
}
const tandem_kcase_spec tandem_kcase_fill_f32 = {N_ELEMENTWISE, fill_make, fill_bind};

/* ---- scale_f32: x [n] in place ---- */
static void scale_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = pick_n(idx, rng);
    c->i[0] = n;
    c->f[0] = tandem_rng_uniform(rng, -3.0f, 3.0f);
    tandem_kcase_set_buf(c, 0, "x", TANDEM_F32, n, TANDEM_KB_INOUT, -4.0f, 4.0f);
    c->tol = 1e-10;
    snprintf(c->desc, sizeof c->desc, "n=%lld alpha=%g", (long long)n, c->f[0]);
}
static void scale_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_scale_f32_args *a = (tandem_k_scale_f32_args *)args;
    a->x = (float *)bufs[0];
    a->n = c->i[0];
    a->alpha = c->f[0];
}
const tandem_kcase_spec tandem_kcase_scale_f32 = {N_ELEMENTWISE, scale_make, scale_bind};

/* ---- axpy_f32: x [n], y [n] in place ---- */
static void axpy_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = pick_n(idx, rng);
    c->i[0] = n;
    c->f[0] = tandem_rng_uniform(rng, -3.0f, 3.0f);
    tandem_kcase_set_buf(c, 0, "x", TANDEM_F32, n, TANDEM_KB_IN, -2.0f, 2.0f);
    tandem_kcase_set_buf(c, 1, "y", TANDEM_F32, n, TANDEM_KB_INOUT, -2.0f, 2.0f);
    c->i[7] = idx % 2; /* odd sizes also write bf16(y), the bf16 model's GEMM operand */
    if (c->i[7]) tandem_kcase_set_buf(c, 2, "y16", TANDEM_BF16, n, TANDEM_KB_OUT, 0, 0);
    c->tol = c->i[7] ? 1e-7 : 1e-10; /* bf16: an FMA's other rounding flips a bf16 one */
    snprintf(c->desc, sizeof c->desc, "n=%lld alpha=%g%s", (long long)n, c->f[0],
             c->i[7] ? " +bf16" : "");
}
static void axpy_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_axpy_f32_args *a = (tandem_k_axpy_f32_args *)args;
    a->x = (const float *)bufs[0];
    a->y = (float *)bufs[1];
    a->y16 = c->i[7] ? (tandem_bf16 *)bufs[2] : NULL;
    a->n = c->i[0];
    a->alpha = c->f[0];
}
const tandem_kcase_spec tandem_kcase_axpy_f32 = {N_ELEMENTWISE, axpy_make, axpy_bind};

/* ---- cast_f32_bf16: in [n] f32 → out [n] bf16 ---- */
static void cast_fb_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = pick_n(idx, rng);
    c->i[0] = n;
    /* A wide range so many exponents (and the rounding carry into them) are exercised. */
    tandem_kcase_set_buf(c, 0, "in", TANDEM_F32, n, TANDEM_KB_IN, -3000.0f, 3000.0f);
    tandem_kcase_set_buf(c, 1, "out", TANDEM_BF16, n, TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-12;
    snprintf(c->desc, sizeof c->desc, "n=%lld", (long long)n);
}
static void cast_fb_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_cast_f32_bf16_args *a = (tandem_k_cast_f32_bf16_args *)args;
    a->in = (const float *)bufs[0];
    a->out = (tandem_bf16 *)bufs[1];
    a->n = c->i[0];
}
const tandem_kcase_spec tandem_kcase_cast_f32_bf16 = {N_ELEMENTWISE, cast_fb_make, cast_fb_bind};

/* ---- cast_bf16_f32: in [n] bf16 → out [n] f32 ---- */
static void cast_bf_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = pick_n(idx, rng);
    c->i[0] = n;
    tandem_kcase_set_buf(c, 0, "in", TANDEM_BF16, n, TANDEM_KB_IN, -3000.0f, 3000.0f);
    tandem_kcase_set_buf(c, 1, "out", TANDEM_F32, n, TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-12;
    snprintf(c->desc, sizeof c->desc, "n=%lld", (long long)n);
}
static void cast_bf_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_cast_bf16_f32_args *a = (tandem_k_cast_bf16_f32_args *)args;
    a->in = (const tandem_bf16 *)bufs[0];
    a->out = (float *)bufs[1];
    a->n = c->i[0];
}
const tandem_kcase_spec tandem_kcase_cast_bf16_f32 = {N_ELEMENTWISE, cast_bf_make, cast_bf_bind};

/* ---- row_sum_f32: x [rows, cols] → out [rows] ----
 * cols below, at and above the 256-thread block, rows from one to many blocks. */
static const int64_t row_sum_shapes[][2] = {
    {1, 1}, {3, 31}, {7, 257}, {64, 1000}, {5, 100003}, {1000, 33}, {-1, -1},
};
#define N_ROW_SUM ((int)(sizeof row_sum_shapes / sizeof row_sum_shapes[0]))

static void row_sum_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t rows = row_sum_shapes[idx][0], cols = row_sum_shapes[idx][1];
    if (rows < 0) {
        rows = tandem_rng_int(rng, 1, 300);
        cols = tandem_rng_int(rng, 1, 3000);
    }
    c->i[0] = rows;
    c->i[1] = cols;
    tandem_kcase_set_buf(c, 0, "x", TANDEM_F32, rows * cols, TANDEM_KB_IN, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 1, "out", TANDEM_F32, rows, TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-10;
    snprintf(c->desc, sizeof c->desc, "rows=%lld cols=%lld", (long long)rows, (long long)cols);
}
static void row_sum_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_row_sum_f32_args *a = (tandem_k_row_sum_f32_args *)args;
    a->x = (const float *)bufs[0];
    a->out = (float *)bufs[1];
    a->rows = (int)c->i[0];
    a->cols = (int)c->i[1];
}
const tandem_kcase_spec tandem_kcase_row_sum_f32 = {N_ROW_SUM, row_sum_make, row_sum_bind};
