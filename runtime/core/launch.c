/* launch.c — the typed launchers of the basic kernels (see launch.h). */
#include "runtime/core/launch.h"

tandem_status tandem_fill_f32(tandem_stream *s, float *out, int64_t n, float value) {
    TANDEM_KARGS(fill_f32, a);
    a.out = out, a.n = n, a.value = value;
    return TANDEM_LAUNCH(s, fill_f32, &a);
}

tandem_status tandem_scale_f32(tandem_stream *s, float *x, int64_t n, float alpha) {
    TANDEM_KARGS(scale_f32, a);
    a.x = x, a.n = n, a.alpha = alpha;
    return TANDEM_LAUNCH(s, scale_f32, &a);
}

tandem_status tandem_axpy_f32(tandem_stream *s, float alpha, const float *x, float *y,
                              tandem_bf16 *y16, int64_t n) {
    TANDEM_KARGS(axpy_f32, a);
    a.x = x, a.y = y, a.y16 = y16, a.n = n, a.alpha = alpha;
    return TANDEM_LAUNCH(s, axpy_f32, &a);
}

tandem_status tandem_cast_f32_bf16(tandem_stream *s, const float *in, tandem_bf16 *out, int64_t n) {
    TANDEM_KARGS(cast_f32_bf16, a);
    a.in = in, a.out = out, a.n = n;
    return TANDEM_LAUNCH(s, cast_f32_bf16, &a);
}

tandem_status tandem_cast_bf16_f32(tandem_stream *s, const tandem_bf16 *in, float *out, int64_t n) {
    TANDEM_KARGS(cast_bf16_f32, a);
    a.in = in, a.out = out, a.n = n;
    return TANDEM_LAUNCH(s, cast_bf16_f32, &a);
}

tandem_status tandem_row_sum_f32(tandem_stream *s, const float *x, float *out, int rows, int cols) {
    TANDEM_KARGS(row_sum_f32, a);
    a.x = x, a.out = out, a.rows = rows, a.cols = cols;
    return TANDEM_LAUNCH(s, row_sum_f32, &a);
}
