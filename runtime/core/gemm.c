/* gemm.c — the GEMM op of tandem.h: shape checks, then the device backend's gemm.
 *
 * Row-major at the API (see tandem.h): op(A) [M, K], op(B) [K, N], C [M, N]; rank-3 tensors
 * are batches [batch, rows, cols] with equal batch sizes. The tensors' shapes become a
 * tandem_gemm_desc (platform/device.h) on device addresses; the backend picks the
 * implementation (CBLAS / blocked on host, cuBLASLt / fatbin kernel on cuda).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "runtime/core/dev.h"
#include "runtime/core/pool_internal.h"

static tandem_status check_shape(const char *op, const tandem_gemm_shape *sh) {
    if (sh->m < 0 || sh->n < 0 || sh->k < 0 || sh->batch < 1)
        return tandem_fail(TANDEM_E_INVALID,
                           "%s: bad shape m=%" PRId64 " n=%" PRId64 " k=%" PRId64 " batch=%" PRId64
                           "; expected m, n, k >= 0 and batch >= 1",
                           op, sh->m, sh->n, sh->k, sh->batch);
    return TANDEM_OK;
}

/* The descriptor of a dense batch: items packed one after another. */
static void desc_from_shape(const tandem_gemm_shape *sh, tandem_gemm_desc *d) {
    memset(d, 0, sizeof *d); /* element types f32: the public GEMM op is f32 */
    d->trans_a = sh->trans_a != 0;
    d->trans_b = sh->trans_b != 0;
    d->m = sh->m;
    d->n = sh->n;
    d->k = sh->k;
    d->batch = sh->batch;
    int batched = sh->batch > 1;
    d->stride_a = batched ? sh->m * sh->k : 0;
    d->stride_b = batched ? sh->k * sh->n : 0;
    d->stride_c = batched ? sh->m * sh->n : 0;
}

tandem_status tandem_gemm_prepare(tandem_device *dev, const tandem_gemm_shape *shape) {
    static const char op[] = "tandem_gemm_prepare";
    if (!dev) return tandem_fail(TANDEM_E_INVALID, "%s: device is NULL", op);
    if (!shape) return tandem_fail(TANDEM_E_INVALID, "%s: shape is NULL", op);
    TANDEM_TRY(check_shape(op, shape));
    tandem_gemm_desc d;
    desc_from_shape(shape, &d);
    return tandem_dev_gemm_prepare(dev, &d);
}

/* "'w' [256, 80]" into buf. */
static const char *describe(const tandem_tensor *t, char *buf, size_t cap) {
    size_t len = (size_t)snprintf(buf, cap, "'%s' [", tandem_tensor_name(t));
    for (int i = 0; i < tandem_tensor_ndim(t) && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, i ? ", " : "",
                                tandem_tensor_dim(t, i));
    if (len < cap) snprintf(buf + len, cap - len, "]");
    return buf;
}

static tandem_status check_operand(const char *op, const char *role, const tandem_stream *s,
                                   const tandem_tensor *t) {
    if (!t) return tandem_fail(TANDEM_E_INVALID, "%s: tensor %s is NULL", op, role);
    char ds[128];
    if (tandem_tensor_dtype(t) != TANDEM_F32)
        return tandem_fail(TANDEM_E_INVALID, "%s: %s %s is %s, expected f32", op, role,
                           describe(t, ds, sizeof ds), tandem_dtype_name(tandem_tensor_dtype(t)));
    int nd = tandem_tensor_ndim(t);
    if (nd != 2 && nd != 3)
        return tandem_fail(TANDEM_E_INVALID,
                           "%s: %s %s has rank %d, expected 2 ([rows, cols]) or 3 "
                           "([batch, rows, cols])",
                           op, role, describe(t, ds, sizeof ds), nd);
    if (tandem_tensor_addr(t) == 0)
        return tandem_fail(TANDEM_E_STATE, "%s: %s %s has no device address; commit its pool first",
                           op, role, describe(t, ds, sizeof ds));
    const tandem_device *td = tandem_tensor_device(t);
    if (td != s->dev)
        return tandem_fail(TANDEM_E_INVALID,
                           "%s: %s %s lives on %s device %d but the stream is on %s device %d; "
                           "expected a stream of the tensor's device",
                           op, role, describe(t, ds, sizeof ds), tandem_dev_backend_name(td),
                           td ? td->info.ordinal : -1, tandem_dev_backend_name(s->dev),
                           s->dev->info.ordinal);
    return TANDEM_OK;
}

tandem_status tandem_gemm(tandem_stream *s, int trans_a, int trans_b, float alpha,
                          const tandem_tensor *a, const tandem_tensor *b, float beta,
                          tandem_tensor *c) {
    static const char op[] = "tandem_gemm";
    if (!s || !s->dev)
        return tandem_fail(TANDEM_E_INVALID, "%s: stream is NULL or has no device", op);
    TANDEM_TRY(check_operand(op, "A", s, a));
    TANDEM_TRY(check_operand(op, "B", s, b));
    TANDEM_TRY(check_operand(op, "C", s, c));

    char da[128], db[128], dc[128];
    int nd = tandem_tensor_ndim(a);
    if (tandem_tensor_ndim(b) != nd || tandem_tensor_ndim(c) != nd)
        return tandem_fail(TANDEM_E_INVALID, "%s: ranks differ: A %s, B %s, C %s; expected all "
                           "rank 2 or all rank 3", op, describe(a, da, sizeof da),
                           describe(b, db, sizeof db), describe(c, dc, sizeof dc));
    int64_t batch = 1;
    if (nd == 3) {
        batch = tandem_tensor_dim(a, 0);
        if (tandem_tensor_dim(b, 0) != batch || tandem_tensor_dim(c, 0) != batch)
            return tandem_fail(TANDEM_E_INVALID, "%s: batch sizes differ: A %s, B %s, C %s", op,
                               describe(a, da, sizeof da), describe(b, db, sizeof db),
                               describe(c, dc, sizeof dc));
    }
    /* Stored row/column counts of the matrices (the last two dims). */
    int64_t a_r = tandem_tensor_dim(a, nd - 2), a_c = tandem_tensor_dim(a, nd - 1);
    int64_t b_r = tandem_tensor_dim(b, nd - 2), b_c = tandem_tensor_dim(b, nd - 1);
    int64_t c_r = tandem_tensor_dim(c, nd - 2), c_c = tandem_tensor_dim(c, nd - 1);
    tandem_gemm_shape sh;
    sh.trans_a = trans_a != 0;
    sh.trans_b = trans_b != 0;
    sh.m = sh.trans_a ? a_c : a_r;
    sh.k = sh.trans_a ? a_r : a_c;
    int64_t kb = sh.trans_b ? b_c : b_r;
    sh.n = sh.trans_b ? b_r : b_c;
    sh.batch = batch;
    if (kb != sh.k)
        return tandem_fail(TANDEM_E_INVALID,
                           "%s: inner dimensions differ: op(A) of A %s has K=%" PRId64
                           ", op(B) of B %s has K=%" PRId64 " (trans_a=%d, trans_b=%d)",
                           op, describe(a, da, sizeof da), sh.k, describe(b, db, sizeof db), kb,
                           sh.trans_a, sh.trans_b);
    if (c_r != sh.m || c_c != sh.n) {
        char want[64] = "";
        if (nd == 3) snprintf(want, sizeof want, "%" PRId64 ", ", batch);
        return tandem_fail(TANDEM_E_INVALID,
                           "%s: C %s should be [%s%" PRId64 ", %" PRId64 "] for A %s and B %s "
                           "(trans_a=%d, trans_b=%d)",
                           op, describe(c, dc, sizeof dc), want, sh.m, sh.n,
                           describe(a, da, sizeof da), describe(b, db, sizeof db), sh.trans_a,
                           sh.trans_b);
    }
    tandem_gemm_desc d;
    desc_from_shape(&sh, &d);
    return tandem_dev_gemm(s, &d, alpha, tandem_view_of(a), tandem_view_of(b), beta,
                           tandem_view_of(c));
}
