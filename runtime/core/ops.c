/* ops.c — the element-wise and reduction ops of tandem.h (tandem_op_*) on committed tensors.
 *
 * Each op checks its tensors (dtype, element counts, committed), then queues the kernel through
 * its typed launcher (runtime/core/launch.h) on the tensors' device pointers.
 * Errors name the op, the tensor and what was expected.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>

#include "platform/os/log.h"
#include "runtime/core/launch.h"
#include "runtime/core/pool_internal.h"

/* "[2, 3, 80]" into buf. */
static const char *shape_str(const tandem_tensor *t, char *buf, size_t cap) {
    size_t len = 0;
    int nd = tandem_tensor_ndim(t);
    len += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < nd && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, i ? ", " : "",
                                tandem_tensor_dim(t, i));
    if (len < cap) snprintf(buf + len, cap - len, "]");
    return buf;
}

static tandem_status check_stream(const char *op, const tandem_stream *s) {
    if (!s || !s->dev)
        return tandem_fail(TANDEM_E_INVALID, "%s: stream is NULL or has no device", op);
    return TANDEM_OK;
}

/* t must exist, be committed on the stream's device, and (unless want < 0) have dtype want.
 * role names the parameter ("x", "out") so the message says which argument was wrong. */
static tandem_status check_tensor(const char *op, const char *role, const tandem_stream *s,
                                  const tandem_tensor *t, int want) {
    if (!t) return tandem_fail(TANDEM_E_INVALID, "%s: tensor %s is NULL", op, role);
    if (want >= 0 && tandem_tensor_dtype(t) != (tandem_dtype)want) {
        char sh[96];
        return tandem_fail(TANDEM_E_INVALID, "%s: %s '%s' %s is %s, expected %s", op, role,
                           tandem_tensor_name(t), shape_str(t, sh, sizeof sh),
                           tandem_dtype_name(tandem_tensor_dtype(t)),
                           tandem_dtype_name((tandem_dtype)want));
    }
    if (tandem_tensor_addr(t) == 0)
        return tandem_fail(TANDEM_E_STATE, "%s: %s '%s' has no device address; commit its pool first",
                           op, role, tandem_tensor_name(t));
    const tandem_device *td = tandem_tensor_device(t);
    if (td != s->dev)
        return tandem_fail(TANDEM_E_INVALID,
                           "%s: %s '%s' lives on %s device %d but the stream is on %s device %d; "
                           "expected a stream of the tensor's device",
                           op, role, tandem_tensor_name(t), tandem_dev_backend_name(td),
                           td ? td->info.ordinal : -1, tandem_dev_backend_name(s->dev),
                           s->dev->info.ordinal);
    return TANDEM_OK;
}

static tandem_status check_same_numel(const char *op, const char *role_a, const tandem_tensor *a,
                                      const char *role_b, const tandem_tensor *b) {
    if (tandem_tensor_numel(a) == tandem_tensor_numel(b)) return TANDEM_OK;
    char sa[96], sb[96];
    return tandem_fail(TANDEM_E_INVALID,
                       "%s: %s '%s' %s has %" PRId64 " elements but %s '%s' %s has %" PRId64
                       "; expected equal element counts",
                       op, role_a, tandem_tensor_name(a), shape_str(a, sa, sizeof sa),
                       tandem_tensor_numel(a), role_b, tandem_tensor_name(b),
                       shape_str(b, sb, sizeof sb), tandem_tensor_numel(b));
}

tandem_status tandem_op_fill(tandem_stream *s, tandem_tensor *t, float value) {
    static const char op[] = "tandem_op_fill";
    TANDEM_TRY(check_stream(op, s));
    TANDEM_TRY(check_tensor(op, "t", s, t, TANDEM_F32));
    const int64_t n = tandem_tensor_numel(t);
    return n ? tandem_fill_f32(s, tandem_tensor_f32(t), n, value) : TANDEM_OK;
}

tandem_status tandem_op_scale(tandem_stream *s, tandem_tensor *x, float alpha) {
    static const char op[] = "tandem_op_scale";
    TANDEM_TRY(check_stream(op, s));
    TANDEM_TRY(check_tensor(op, "x", s, x, TANDEM_F32));
    const int64_t n = tandem_tensor_numel(x);
    return n ? tandem_scale_f32(s, tandem_tensor_f32(x), n, alpha) : TANDEM_OK;
}

tandem_status tandem_op_axpy(tandem_stream *s, float alpha, const tandem_tensor *x,
                             tandem_tensor *y) {
    static const char op[] = "tandem_op_axpy";
    TANDEM_TRY(check_stream(op, s));
    TANDEM_TRY(check_tensor(op, "x", s, x, TANDEM_F32));
    TANDEM_TRY(check_tensor(op, "y", s, y, TANDEM_F32));
    TANDEM_TRY(check_same_numel(op, "x", x, "y", y));
    const int64_t n = tandem_tensor_numel(y);
    if (n == 0) return TANDEM_OK;
    return tandem_axpy_f32(s, alpha, tandem_tensor_f32(x), tandem_tensor_f32(y), NULL, n);
}

tandem_status tandem_op_cast(tandem_stream *s, const tandem_tensor *src, tandem_tensor *dst) {
    static const char op[] = "tandem_op_cast";
    TANDEM_TRY(check_stream(op, s));
    TANDEM_TRY(check_tensor(op, "src", s, src, -1));
    TANDEM_TRY(check_tensor(op, "dst", s, dst, -1));
    TANDEM_TRY(check_same_numel(op, "src", src, "dst", dst));
    tandem_dtype from = tandem_tensor_dtype(src), to = tandem_tensor_dtype(dst);
    int64_t n = tandem_tensor_numel(src);
    if (n == 0) return TANDEM_OK;
    if (from == TANDEM_F32 && to == TANDEM_BF16)
        return tandem_cast_f32_bf16(s, tandem_tensor_f32(src), tandem_tensor_bf16(dst), n);
    if (from == TANDEM_BF16 && to == TANDEM_F32)
        return tandem_cast_bf16_f32(s, tandem_tensor_bf16(src), tandem_tensor_f32(dst), n);
    if (from == to) /* same dtype: a plain copy */
        return tandem_dev_copy(s, dst, 0, src, 0, tandem_tensor_bytes(src));
    return tandem_fail(TANDEM_E_UNSUPPORTED,
                       "%s: no cast from %s (src '%s') to %s (dst '%s'); supported: f32 -> bf16, "
                       "bf16 -> f32, and copies between tensors of the same dtype",
                       op, tandem_dtype_name(from), tandem_tensor_name(src), tandem_dtype_name(to),
                       tandem_tensor_name(dst));
}

tandem_status tandem_op_row_sum(tandem_stream *s, const tandem_tensor *x, tandem_tensor *out) {
    static const char op[] = "tandem_op_row_sum";
    TANDEM_TRY(check_stream(op, s));
    TANDEM_TRY(check_tensor(op, "x", s, x, TANDEM_F32));
    TANDEM_TRY(check_tensor(op, "out", s, out, TANDEM_F32));
    int nd = tandem_tensor_ndim(x);
    char sx[96], so[96];
    if (nd < 1)
        return tandem_fail(TANDEM_E_INVALID, "%s: x '%s' is a scalar; expected rank >= 1", op,
                           tandem_tensor_name(x));
    /* x [rows..., cols] → out [rows...] (any shape with that many elements). */
    int64_t cols = tandem_tensor_dim(x, nd - 1), rows = 1;
    for (int i = 0; i < nd - 1; i++) rows *= tandem_tensor_dim(x, i);
    if (tandem_tensor_numel(out) != rows)
        return tandem_fail(TANDEM_E_INVALID,
                           "%s: out '%s' %s has %" PRId64 " elements, expected %" PRId64
                           " (one per row of x '%s' %s)",
                           op, tandem_tensor_name(out), shape_str(out, so, sizeof so),
                           tandem_tensor_numel(out), rows, tandem_tensor_name(x),
                           shape_str(x, sx, sizeof sx));
    if (rows > INT_MAX || cols > INT_MAX)
        return tandem_fail(TANDEM_E_UNSUPPORTED,
                           "%s: x '%s' %s has %" PRId64 " rows of %" PRId64
                           "; the kernel takes at most %d of each",
                           op, tandem_tensor_name(x), shape_str(x, sx, sizeof sx), rows, cols,
                           INT_MAX);
    if (rows == 0) return TANDEM_OK;
    return tandem_row_sum_f32(s, tandem_tensor_f32(x), tandem_tensor_f32(out), (int)rows,
                              (int)cols);
}
