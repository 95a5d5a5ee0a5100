/* dev.c — the internal device API (see dev.h): checks, then the backend's table. */
#include "runtime/core/dev.h"

#include <assert.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/core/pool_internal.h"

/* ---- op profiling (dev.h) ------------------------------------------------------------------- */

static _Atomic(tandem_dev_op_profile *) op_profile;

tandem_status tandem_dev_op_profile_attach(tandem_dev_op_profile *p) {
    atomic_store(&op_profile, (tandem_dev_op_profile *)NULL);
    if (!p) return TANDEM_OK;
    p->n = p->overflow = 0;
    /* drained first, so anchor_ns (host) and the anchor event (device) mark the same instant:
     * with work queued ahead the device reaches the anchor later than the host read its clock,
     * each op's launch-time bound then lands after its end (a real H100 timed the backward at 0) */
    TANDEM_TRY(tandem_stream_sync(p->s));
    p->anchor_ns = tandem_now_ns();
    TANDEM_TRY(tandem_event_record(p->anchor, p->s));
    atomic_store(&op_profile, p);
    return TANDEM_OK;
}

/* After an op queued on s: the attached profile's next event, when s is its stream. */
static tandem_status profile_op(tandem_stream *s, const char *name, uint64_t t_ns, tandem_status st) {
    tandem_dev_op_profile *p = atomic_load_explicit(&op_profile, memory_order_relaxed);
    if (st != TANDEM_OK || !p || p->s != s) return st;
    if (p->n >= p->cap) {
        p->overflow++;
        return st;
    }
    p->name[p->n] = name;
    p->host_ns[p->n] = t_ns;
    return tandem_event_record(p->ev[p->n++], s);
}

/* ---- devices ------------------------------------------------------------------------------- */

const char *tandem_dev_backend_name(const tandem_device *dev) {
    return dev && dev->ops ? dev->ops->name : "no";
}

int tandem_dev_same_backend(const tandem_device *a, const tandem_device *b) {
    return a && b && a->ops == b->ops;
}

static tandem_status check_stream(const char *op, const tandem_stream *s) {
    if (!s || !s->dev || !s->dev->ops)
        return tandem_fail(TANDEM_E_INVALID, "%s: stream is NULL or has no device", op);
    return TANDEM_OK;
}

/* ---- the recorder (dev.h) ------------------------------------------------------------------ */

static _Atomic(tandem_dev_recorder *) recorder;

void tandem_dev_record(tandem_dev_recorder *r) {
    if (r) atomic_store(&r->n, 0);
    atomic_store(&recorder, r);
}

/* The slot for the next entry, or NULL (not recording, or full: then only counted). */
static tandem_rec_entry *rec_slot(const tandem_stream *s, tandem_rec_kind kind) {
    tandem_dev_recorder *r = atomic_load_explicit(&recorder, memory_order_relaxed);
    if (!r) return NULL;
    const int64_t i = atomic_fetch_add(&r->n, 1);
    if (i >= r->cap) return NULL;
    tandem_rec_entry *e = &r->entries[i];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->kernel = -1;
    e->stream = s;
    return e;
}

static void rec_copy(const tandem_stream *s, tandem_rec_kind kind, size_t bytes) {
    tandem_rec_entry *e = rec_slot(s, kind);
    if (e) e->cost = (tandem_kernel_cost){.bytes_read = (double)bytes, .bytes_written = (double)bytes};
}

void tandem_dev_gemm_cost(const tandem_gemm_desc *g, float beta, tandem_kernel_cost *c) {
    tandem_kcost_gemm(c, g->m, g->n, g->k, g->batch, g->stride_a, g->stride_b,
                      (double)tandem_dtype_size(g->a_type), beta);
    tandem_kcost_gemm_epi(c, g->m, g->n, g->batch, beta, (double)tandem_dtype_size(g->c_type),
                          tandem_gemm_epi_has_bias(g->epilogue), g->epilogue == TANDEM_GEMM_EPI_GELU_AUX_BIAS,
                          g->epilogue == TANDEM_GEMM_EPI_DGELU);
    if (tandem_gemm_epi_bias_out(g->epilogue)) c->bytes_written += 4.0 * (double)g->m; /* the bias gradient */
}

/* ---- memory -------------------------------------------------------------------------------- */

tandem_status tandem_dev_mem_alloc(tandem_device *dev, size_t bytes, tandem_dptr *out) {
    if (!dev || !dev->ops || !out)
        return tandem_fail(TANDEM_E_INVALID, "device memory: NULL device or output");
    return dev->ops->mem_alloc(dev, bytes, out);
}

void tandem_dev_mem_free(tandem_device *dev, tandem_dptr p) {
    if (dev && p) dev->ops->mem_free(dev, p);
}

tandem_status tandem_dev_pinned_alloc(tandem_device *dev, size_t bytes, void **out) {
    if (!dev || !dev->ops || !out)
        return tandem_fail(TANDEM_E_INVALID, "pinned host memory: NULL device or output");
    *out = NULL;
    if (!dev->ops->host_alloc_pinned)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "pinned host memory: the %s backend has none",
                           dev->ops->name);
    return dev->ops->host_alloc_pinned(dev, bytes, out);
}

void tandem_dev_pinned_free(tandem_device *dev, void *p) {
    if (dev && p && dev->ops->host_free_pinned) dev->ops->host_free_pinned(dev, p);
}

/* ---- copies -------------------------------------------------------------------------------- */

/* t committed on s's device, [offset, offset + bytes) inside it. */
static tandem_status check_range(const char *op, const char *role, const tandem_stream *s,
                                 const tandem_tensor *t, size_t offset, size_t bytes) {
    if (!t) return tandem_fail(TANDEM_E_INVALID, "%s: %s tensor is NULL", op, role);
    if (tandem_tensor_addr(t) == 0)
        return tandem_fail(TANDEM_E_STATE, "%s: %s '%s' has no device address; commit its pool "
                           "first", op, role, tandem_tensor_name(t));
    const tandem_device *td = tandem_tensor_device(t);
    if (td != s->dev)
        return tandem_fail(TANDEM_E_INVALID,
                           "%s: %s '%s' lives on %s device %d but the stream is on %s device %d; "
                           "expected a stream of the tensor's device", op, role,
                           tandem_tensor_name(t), tandem_dev_backend_name(td),
                           td ? td->info.ordinal : -1, s->dev->ops->name, s->dev->info.ordinal);
    const size_t size = tandem_tensor_bytes(t);
    if (offset > size || bytes > size - offset)
        return tandem_fail(TANDEM_E_INVALID,
                           "%s: bytes [%zu, %zu) of %s '%s', which has %zu; expected a range "
                           "inside the tensor", op, offset, offset + bytes, role,
                           tandem_tensor_name(t), size);
    return TANDEM_OK;
}

tandem_status tandem_dev_check_tensor(const char *op, const char *role, const tandem_stream *s,
                                      const tandem_tensor *t, tandem_dtype dt, int64_t min_elems) {
    TANDEM_TRY(check_stream(op, s));
    if (!t) return tandem_fail(TANDEM_E_INVALID, "%s: tensor '%s' is NULL", op, role);
    TANDEM_TRY(check_range(op, role, s, t, 0, 0));
    if (tandem_tensor_dtype(t) != dt || tandem_tensor_numel(t) < min_elems)
        return tandem_fail(TANDEM_E_INVALID,
                           "%s: '%s' ('%s') is %s with %" PRId64 " elements; expected %s with at "
                           "least %" PRId64, op, role, tandem_tensor_name(t),
                           tandem_dtype_name(tandem_tensor_dtype(t)), tandem_tensor_numel(t),
                           tandem_dtype_name(dt), min_elems);
    return TANDEM_OK;
}

static tandem_dptr at(const tandem_tensor *t, size_t offset) {
    return tandem_tensor_addr(t) + (tandem_dptr)offset;
}

tandem_status tandem_dev_upload(tandem_stream *s, const tandem_tensor *dst, size_t offset,
                                const void *src, size_t bytes) {
    static const char op[] = "upload";
    TANDEM_TRY(check_stream(op, s));
    if (!src) return tandem_fail(TANDEM_E_INVALID, "%s: host source is NULL", op);
    TANDEM_TRY(check_range(op, "destination", s, dst, offset, bytes));
    rec_copy(s, TANDEM_REC_COPY_H2D, bytes);
    return s->dev->ops->copy_h2d(s, at(dst, offset), src, bytes);
}

tandem_status tandem_dev_download(tandem_stream *s, void *dst, const tandem_tensor *src,
                                  size_t offset, size_t bytes) {
    static const char op[] = "download";
    TANDEM_TRY(check_stream(op, s));
    if (!dst) return tandem_fail(TANDEM_E_INVALID, "%s: host destination is NULL", op);
    TANDEM_TRY(check_range(op, "source", s, src, offset, bytes));
    rec_copy(s, TANDEM_REC_COPY_D2H, bytes);
    return s->dev->ops->copy_d2h(s, dst, at(src, offset), bytes);
}

tandem_status tandem_dev_copy(tandem_stream *s, const tandem_tensor *dst, size_t dst_offset,
                              const tandem_tensor *src, size_t src_offset, size_t bytes) {
    static const char op[] = "device copy";
    TANDEM_TRY(check_stream(op, s));
    TANDEM_TRY(check_range(op, "destination", s, dst, dst_offset, bytes));
    TANDEM_TRY(check_range(op, "source", s, src, src_offset, bytes));
    if (!s->dev->ops->copy_d2d)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "%s: the %s backend has no device copy", op,
                           s->dev->ops->name);
    rec_copy(s, TANDEM_REC_COPY_D2D, bytes);
    return s->dev->ops->copy_d2d(s, at(dst, dst_offset), at(src, src_offset), bytes);
}

tandem_status tandem_dev_copy_peer(tandem_stream *s, const tandem_tensor *dst,
                                   const tandem_tensor *src) {
    if (dst && src && tandem_tensor_addr(dst) && tandem_tensor_bytes(dst) != tandem_tensor_bytes(src))
        return tandem_fail(TANDEM_E_INVALID, "peer copy '%s' -> '%s': the destination must be committed "
                           "and of the source's size (%zu bytes)", tandem_tensor_name(src),
                           tandem_tensor_name(dst), tandem_tensor_bytes(src));
    return tandem_dev_copy_peer_prefix(s, dst, src, src ? tandem_tensor_bytes(src) : 0);
}

tandem_status tandem_dev_copy_peer_prefix(tandem_stream *s, const tandem_tensor *dst,
                                          const tandem_tensor *src, size_t bytes) {
    static const char op[] = "peer copy";
    TANDEM_TRY(check_stream(op, s));
    if (!dst || !src) return tandem_fail(TANDEM_E_INVALID, "%s: NULL tensor", op);
    TANDEM_TRY(check_range(op, "source", s, src, 0, bytes));
    tandem_device *dd = tandem_tensor_device(dst);
    if (tandem_tensor_addr(dst) == 0 || tandem_tensor_bytes(dst) < bytes)
        return tandem_fail(TANDEM_E_INVALID, "%s '%s' -> '%s': the destination must be committed "
                           "and hold %zu bytes (it has %zu)", op, tandem_tensor_name(src),
                           tandem_tensor_name(dst), bytes, tandem_tensor_bytes(dst));
    if (!tandem_device_can_access_peer(dd, s->dev))
        return tandem_fail(TANDEM_E_UNSUPPORTED, "%s '%s' -> '%s': %s device %d cannot access "
                           "%s device %d", op, tandem_tensor_name(src), tandem_tensor_name(dst),
                           tandem_dev_backend_name(dd), dd ? dd->info.ordinal : -1,
                           s->dev->ops->name, s->dev->info.ordinal);
    rec_copy(s, TANDEM_REC_COPY_PEER, bytes);
    return s->dev->ops->copy_peer(s, dd, tandem_tensor_addr(dst), tandem_tensor_addr(src), bytes);
}

/* ---- GEMM ---------------------------------------------------------------------------------- */

static tandem_status check_desc(const char *op, const tandem_gemm_desc *g) {
    if (!g) return tandem_fail(TANDEM_E_INVALID, "%s: descriptor is NULL", op);
    if (g->m < 0 || g->n < 0 || g->k < 0 || g->batch < 1 || g->stride_a < 0 || g->stride_b < 0 ||
        g->stride_c < 0)
        return tandem_fail(TANDEM_E_INVALID,
                           "%s: bad shape m=%" PRId64 " n=%" PRId64 " k=%" PRId64
                           " batch=%" PRId64 "; expected m, n, k >= 0, batch >= 1 and strides "
                           ">= 0", op, g->m, g->n, g->k, g->batch);
    if ((int)g->epilogue < 0 || (int)g->epilogue >= TANDEM_GEMM_EPI_COUNT)
        return tandem_fail(TANDEM_E_INVALID, "%s: epilogue %d; expected a tandem_gemm_epilogue (0..%d)",
                           op, (int)g->epilogue, TANDEM_GEMM_EPI_COUNT - 1);
    if (tandem_gemm_epi_bias_out(g->epilogue) && (!g->trans_a || g->batch != 1 || g->c_type != TANDEM_F32))
        return tandem_fail(TANDEM_E_UNSUPPORTED,
                           "%s: the bias-gradient epilogue with trans_a %d, batch %" PRId64 ", C %s; it takes a "
                           "weight gradient's shape: trans_a 1 (dy^T), batch 1, an f32 C",
                           op, g->trans_a, g->batch, tandem_dtype_name(g->c_type));
    return TANDEM_OK;
}

tandem_status tandem_dev_launch_check(tandem_device *dev, int kernel_id, const tandem_launch_dims *dims) {
    if (!dev || !dev->ops || !dims) return tandem_fail(TANDEM_E_INVALID, "launch check: NULL argument");
    if (kernel_id < 0 || kernel_id >= TANDEM_KERNEL_COUNT)
        return tandem_fail(TANDEM_E_INVALID, "launch check: kernel id %d, expected 0..%d", kernel_id,
                           TANDEM_KERNEL_COUNT - 1);
    return dev->ops->launch_check ? dev->ops->launch_check(dev, kernel_id, dims) : TANDEM_OK;
}

tandem_status tandem_dev_gemm_prepare(tandem_device *dev, const tandem_gemm_desc *g) {
    static const char op[] = "GEMM prepare";
    if (!dev || !dev->ops) return tandem_fail(TANDEM_E_INVALID, "%s: device is NULL", op);
    TANDEM_TRY(check_desc(op, g));
    if (!dev->ops->gemm_prepare) return TANDEM_OK; /* nothing to resolve on this backend */
    return dev->ops->gemm_prepare(dev, g);
}

int tandem_dev_gemm_fallbacks(tandem_device *dev, char *buf, size_t cap) {
    if (buf && cap) buf[0] = 0;
    if (!dev || !dev->ops || !dev->ops->gemm_fallbacks) return 0;
    return dev->ops->gemm_fallbacks(dev, buf, cap);
}

/* The operand is a committed tensor of s's device and dtype dt holding elements
 * [off, off + (batch - 1) * stride + rows * cols). */
static tandem_status check_operand(const tandem_gemm_desc *g, const char *role,
                                   const tandem_stream *s, tandem_view v, tandem_dtype dt,
                                   int64_t elems, int64_t stride) {
    const tandem_tensor *t = v.t;
    char op[96];
    snprintf(op, sizeof op, "GEMM m=%" PRId64 " n=%" PRId64 " k=%" PRId64 " batch=%" PRId64, g->m,
             g->n, g->k, g->batch);
    TANDEM_TRY(check_range(op, role, s, t, 0, 0));
    if (tandem_tensor_dtype(t) != dt)
        return tandem_fail(TANDEM_E_INVALID, "%s: %s '%s' is %s, the descriptor says %s", op, role,
                           tandem_tensor_name(t), tandem_dtype_name(tandem_tensor_dtype(t)),
                           tandem_dtype_name(dt));
    const int64_t need = (g->batch - 1) * stride + elems, numel = tandem_tensor_numel(t);
    if (v.off < 0 || v.off > numel || need > numel - v.off)
        return tandem_fail(TANDEM_E_INVALID,
                           "%s: %s '%s' has %" PRId64 " elements but the product reaches elements "
                           "[%" PRId64 ", %" PRId64 ")", op, role, tandem_tensor_name(t), numel,
                           v.off, v.off + need);
    return TANDEM_OK;
}

static tandem_dptr view_addr(tandem_view v) {
    return tandem_tensor_addr(v.t) +
           (tandem_dptr)v.off * tandem_dtype_size(tandem_tensor_dtype(v.t));
}

/* Whether views x and y, extents xn and yn elements, share bytes (views of one tensor). */
static int views_overlap(tandem_view x, int64_t xn, tandem_view y, int64_t yn) {
    if (x.t != y.t) return 0; /* pool tensors never share bytes */
    return x.off < y.off + yn && y.off < x.off + xn;
}

/* The epilogue's operands: given exactly when the epilogue takes them, of C's type, the aux
 * matrix laid out as C and apart from it; their addresses into run. */
static tandem_status check_epilogue(const tandem_gemm_desc *g, const tandem_stream *s, tandem_view c,
                                    const tandem_view *bias, const tandem_view *aux, tandem_gemm_desc *run) {
    const int bias_out = tandem_gemm_epi_bias_out(g->epilogue);
    const int need_bias = tandem_gemm_epi_bias_ptr(g->epilogue);
    const int need_aux = tandem_gemm_epi_has_aux(g->epilogue);
    if (need_bias != (bias != NULL) || need_aux != (aux != NULL))
        return tandem_fail(TANDEM_E_INVALID,
                           "GEMM m=%" PRId64 " n=%" PRId64 ": epilogue %d %s %s; call tandem_dev_gemm_epi with "
                           "a bias for TANDEM_GEMM_EPI_BIAS (the bias gradient's output for BGRAD), "
                           "tandem_dev_gemm_aux with an aux matrix (and a bias for GELU_AUX_BIAS) for the GELU "
                           "epilogues, tandem_dev_gemm otherwise", g->m, g->n,
                           (int)g->epilogue, need_bias != (bias != NULL) ? (bias ? "was given" : "lacks")
                                                                          : (aux ? "was given" : "lacks"),
                           need_bias != (bias != NULL) ? "a bias" : "an aux matrix");
    run->bias = run->aux = 0;
    if (bias) { /* read: [n] of C's type; the bias gradient: [m] f32, apart from C */
        TANDEM_TRY(check_operand(g, bias_out ? "bias gradient" : "bias", s, *bias, g->c_type, bias_out ? g->m : g->n, 0));
        if (bias_out && views_overlap(*bias, g->m, c, g->m * g->n))
            return tandem_fail(TANDEM_E_INVALID, "GEMM m=%" PRId64 " n=%" PRId64 ": the bias gradient overlaps C in "
                               "'%s'; expected separate storage", g->m, g->n, tandem_tensor_name(c.t));
        run->bias = view_addr(*bias);
    }
    if (aux) {
        const int64_t extent = (g->batch - 1) * g->stride_c + g->m * g->n;
        TANDEM_TRY(check_operand(g, "aux", s, *aux, g->c_type, g->m * g->n, g->stride_c));
        if (views_overlap(*aux, extent, c, extent))
            return tandem_fail(TANDEM_E_INVALID, "GEMM m=%" PRId64 " n=%" PRId64 ": the aux matrix overlaps C in "
                               "'%s'; expected separate storage", g->m, g->n, tandem_tensor_name(c.t));
        run->aux = view_addr(*aux);
    }
    return TANDEM_OK;
}

/* beta C's source when it is not C: f32 C, laid out as C, apart from it; its address into run. */
static tandem_status check_c_src(const tandem_gemm_desc *g, const tandem_stream *s, tandem_view c,
                                 const tandem_view *c_src, tandem_gemm_desc *run) {
    run->c_src = 0;
    if (!c_src) return TANDEM_OK;
    const int64_t extent = (g->batch - 1) * g->stride_c + g->m * g->n;
    if (g->c_type != TANDEM_F32)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "GEMM m=%" PRId64 " n=%" PRId64 ": a separate source of beta C "
                           "needs an f32 C (C is %s)", g->m, g->n, tandem_dtype_name(g->c_type));
    TANDEM_TRY(check_operand(g, "C source", s, *c_src, g->c_type, g->m * g->n, g->stride_c));
    if (views_overlap(*c_src, extent, c, extent))
        return tandem_fail(TANDEM_E_INVALID, "GEMM m=%" PRId64 " n=%" PRId64 ": the source of beta C overlaps C "
                           "in '%s'; expected separate storage (or tandem_dev_gemm_epi for in place)", g->m, g->n,
                           tandem_tensor_name(c.t));
    run->c_src = view_addr(*c_src);
    return TANDEM_OK;
}

static tandem_status gemm_run(tandem_stream *s, const tandem_gemm_desc *g, float alpha,
                              tandem_view a, tandem_view b, float beta, tandem_view c,
                              const tandem_view *bias, const tandem_view *aux, const tandem_view *c_src) {
    static const char op[] = "GEMM";
    TANDEM_TRY(check_stream(op, s));
    if (!g) return tandem_fail(TANDEM_E_INVALID, "%s: descriptor is NULL", op);
    if (!s->dev->ops->gemm)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "%s: the %s backend has no GEMM", op,
                           s->dev->ops->name);
    if (g->m == 0 || g->n == 0 || g->batch == 0) return TANDEM_OK; /* nothing to compute */
    TANDEM_TRY(check_desc(op, g));
    TANDEM_TRY(check_operand(g, "A", s, a, g->a_type, g->m * g->k, g->stride_a));
    TANDEM_TRY(check_operand(g, "B", s, b, g->b_type, g->k * g->n, g->stride_b));
    TANDEM_TRY(check_operand(g, "C", s, c, g->c_type, g->m * g->n, g->stride_c));
    tandem_gemm_desc run = *g;
    TANDEM_TRY(check_epilogue(g, s, c, bias, aux, &run));
    TANDEM_TRY(check_c_src(g, s, c, c_src, &run));
    tandem_rec_entry *e = rec_slot(s, TANDEM_REC_GEMM);
    if (e) {
        e->gemm = run;
        e->beta = beta;
        tandem_dev_gemm_cost(&run, beta, &e->cost);
    }
    const uint64_t t0 = tandem_now_ns();
    return profile_op(s, "gemm", t0,
                      s->dev->ops->gemm(s, &run, alpha, view_addr(a), view_addr(b), beta, view_addr(c)));
}

tandem_status tandem_dev_gemm(tandem_stream *s, const tandem_gemm_desc *g, float alpha,
                              tandem_view a, tandem_view b, float beta, tandem_view c) {
    return gemm_run(s, g, alpha, a, b, beta, c, NULL, NULL, NULL);
}

tandem_status tandem_dev_gemm_epi(tandem_stream *s, const tandem_gemm_desc *g, float alpha,
                                  tandem_view a, tandem_view b, float beta, tandem_view c,
                                  tandem_view bias) {
    return gemm_run(s, g, alpha, a, b, beta, c, &bias, NULL, NULL);
}

tandem_status tandem_dev_gemm_from(tandem_stream *s, const tandem_gemm_desc *g, float alpha,
                                   tandem_view a, tandem_view b, float beta, tandem_view c_src,
                                   tandem_view c, const tandem_view *bias) {
    return gemm_run(s, g, alpha, a, b, beta, c, bias, NULL, &c_src);
}

tandem_status tandem_dev_gemm_aux(tandem_stream *s, const tandem_gemm_desc *g, float alpha,
                                  tandem_view a, tandem_view b, float beta, tandem_view c,
                                  const tandem_view *bias, tandem_view aux) {
    return gemm_run(s, g, alpha, a, b, beta, c, bias, &aux, NULL);
}

/* ---- launches ------------------------------------------------------------------------------ */

tandem_status tandem_launch(tandem_stream *s, tandem_kernel_id id, const void *args,
                            size_t args_size) {
    if ((int)id < 0 || id >= TANDEM_KERNEL_COUNT)
        return tandem_fail(TANDEM_E_INVALID, "launch: kernel id %d is not in the registry (0..%d)",
                           (int)id, TANDEM_KERNEL_COUNT - 1);
    const tandem_kernel_info *k = &tandem_kernel_table[id];
    if (!s || !s->dev || !s->dev->ops)
        return tandem_fail(TANDEM_E_INVALID, "launch %s: stream is NULL or has no device", k->name);
    if (!args)
        return tandem_fail(TANDEM_E_INVALID, "launch %s: argument struct is NULL", k->name);
    if (args_size != k->args_size)
        return tandem_fail(TANDEM_E_INVALID,
                           "launch %s: argument struct is %zu bytes, the registry expects %zu",
                           k->name, args_size, k->args_size);
    if (!s->dev->ops->launch)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "launch %s: the %s backend cannot launch kernels",
                           k->name, s->dev->ops->name);
    tandem_launch_dims dims;
    k->geom(args, &dims);
    tandem_rec_entry *e = rec_slot(s, TANDEM_REC_KERNEL);
    if (e) {
        e->kernel = (int)id;
        e->blocks = (int64_t)dims.grid[0] * dims.grid[1] * dims.grid[2];
        e->threads = dims.block[0] * dims.block[1] * dims.block[2];
        e->shmem = dims.shmem;
        k->cost(args, &e->cost);
    }
    const uint64_t t0 = tandem_now_ns();
    return profile_op(s, k->name, t0, s->dev->ops->launch(s, (int)id, &dims, args, args_size));
}

/* ---- pointer accessors --------------------------------------------------------------------- */

static uintptr_t typed(const tandem_tensor *t, tandem_dtype dt) {
    assert(t && tandem_tensor_dtype(t) == dt);
    return (uintptr_t)tandem_tensor_addr(t);
}

/* Element off of a 4-byte tensor of dtype dt (asserted inside it). */
static uintptr_t typed_at(const tandem_tensor *t, tandem_dtype dt, int64_t off) {
    const uintptr_t base = typed(t, dt);
    assert(off >= 0 && off <= tandem_tensor_numel(t));
    return base + (uintptr_t)off * 4;
}

float *tandem_tensor_f32(const tandem_tensor *t) { return (float *)typed(t, TANDEM_F32); }
float *tandem_tensor_f32_at(const tandem_tensor *t, int64_t off) {
    return (float *)typed_at(t, TANDEM_F32, off);
}
tandem_bf16 *tandem_tensor_bf16(const tandem_tensor *t) {
    return (tandem_bf16 *)typed(t, TANDEM_BF16);
}
int32_t *tandem_tensor_i32(const tandem_tensor *t) { return (int32_t *)typed(t, TANDEM_I32); }
int32_t *tandem_tensor_i32_at(const tandem_tensor *t, int64_t off) {
    return (int32_t *)typed_at(t, TANDEM_I32, off);
}
uint8_t *tandem_tensor_u8(const tandem_tensor *t) { return (uint8_t *)typed(t, TANDEM_U8); }

/* ---- collectives ------------------------------------------------------------------------------ */

static tandem_status no_coll(const tandem_device *dev, const char *op) {
    return tandem_fail(TANDEM_E_UNSUPPORTED,
                       "%s: the %s backend has no collectives; data-parallel training needs cuda (NCCL) or "
                       "host (MPI) devices", op, dev->ops->name);
}

tandem_status tandem_dev_coll_unique_id(tandem_device *dev, tandem_coll_id *out) {
    if (!dev->ops->coll_unique_id) return no_coll(dev, "collective id");
    return dev->ops->coll_unique_id(dev, out);
}

tandem_status tandem_dev_coll_open(tandem_device *dev, const tandem_coll_id *id, int nranks, int rank,
                                   tandem_coll **out) {
    *out = NULL;
    if (!dev->ops->coll_open) return no_coll(dev, "collective open");
    return dev->ops->coll_open(dev, id, nranks, rank, out);
}

tandem_status tandem_dev_coll_open_local(tandem_device *const *devs, int n, tandem_coll **out) {
    for (int i = 0; i < n; i++) out[i] = NULL;
    if (n < 1) return tandem_fail(TANDEM_E_INVALID, "collective open: %d devices, expected at least 1", n);
    for (int i = 1; i < n; i++)
        if (devs[i]->ops != devs[0]->ops)
            return tandem_fail(TANDEM_E_INVALID, "collective open: device %d is %s, device 0 is %s; expected one backend",
                               i, devs[i]->ops->name, devs[0]->ops->name);
    if (!devs[0]->ops->coll_open_local) return no_coll(devs[0], "collective open");
    return devs[0]->ops->coll_open_local(devs, n, out);
}

void tandem_dev_coll_close(tandem_device *dev, tandem_coll *c, int abort) {
    if (!c) return;
    if (abort) dev->ops->coll_abort(c);
    else dev->ops->coll_close(c);
}

tandem_status tandem_dev_coll_group(tandem_device *dev, int begin) {
    if (!dev->ops->coll_group) return no_coll(dev, "collective group");
    return dev->ops->coll_group(begin);
}

/* t f32 or bf16 on s's device, [off, off + n) inside it: the address of element off. */
static tandem_status coll_range(const char *op, tandem_stream *s, const tandem_tensor *t, int64_t off, int64_t n,
                                tandem_dptr *at_off) {
    TANDEM_TRY(check_stream(op, s));
    if (!s->dev->ops->coll_all_reduce_sum) return no_coll(s->dev, op);
    if (!t) return tandem_fail(TANDEM_E_INVALID, "%s: tensor is NULL", op);
    tandem_dtype dt = tandem_tensor_dtype(t);
    if (dt != TANDEM_F32 && dt != TANDEM_BF16)
        return tandem_fail(TANDEM_E_INVALID, "%s: '%s' is %s; expected f32 or bf16", op, tandem_tensor_name(t),
                           tandem_dtype_name(dt));
    if (off < 0 || n < 0) return tandem_fail(TANDEM_E_INVALID, "%s: elements [%" PRId64 ", +%" PRId64 ")", op, off, n);
    size_t es = tandem_dtype_size(dt);
    TANDEM_TRY(check_range(op, "buffer", s, t, (size_t)off * es, (size_t)n * es));
    *at_off = at(t, (size_t)off * es);
    return TANDEM_OK;
}

tandem_status tandem_dev_all_reduce_sum(tandem_coll *c, tandem_stream *s, const tandem_tensor *t, int64_t off,
                                        int64_t n) {
    tandem_dptr p = 0;
    TANDEM_TRY(coll_range("all-reduce", s, t, off, n, &p));
    rec_copy(s, TANDEM_REC_ALL_REDUCE, (size_t)n * tandem_dtype_size(tandem_tensor_dtype(t)));
    return s->dev->ops->coll_all_reduce_sum(c, s, p, p, (size_t)n, tandem_tensor_dtype(t));
}

tandem_status tandem_dev_broadcast(tandem_coll *c, tandem_stream *s, const tandem_tensor *t, int64_t off, int64_t n,
                                   int root) {
    tandem_dptr p = 0;
    TANDEM_TRY(coll_range("broadcast", s, t, off, n, &p));
    return s->dev->ops->coll_broadcast(c, s, p, p, (size_t)n, tandem_tensor_dtype(t), root);
}

tandem_status tandem_dev_coll_share_id(tandem_device *host, tandem_coll *c, tandem_coll_id *id, int root) {
    if (!host->ops->coll_broadcast) return no_coll(host, "collective id exchange");
    if (strcmp(host->ops->name, "host") != 0)
        return tandem_fail(TANDEM_E_INVALID, "collective id exchange: a %s device; expected a host device (its "
                           "group broadcasts host memory)", host->ops->name);
    const tandem_dptr p = (tandem_dptr)(uintptr_t)id->bytes; /* host "device" memory is host memory */
    return host->ops->coll_broadcast(c, NULL, p, p, sizeof id->bytes, TANDEM_U8, root);
}

tandem_status tandem_dev_coll_check(tandem_device *dev, tandem_coll *c) {
    if (!dev->ops->coll_check) return no_coll(dev, "collective check");
    return dev->ops->coll_check(c);
}

/* ---- the dry device (dev.h) ------------------------------------------------------------------ */

typedef struct dry_impl {
    tandem_dptr next; /* the next arena address handed out (address space only) */
} dry_impl;

static void dry_close(tandem_device *dev) {
    tandem_free(dev->impl);
    tandem_free(dev);
}
static tandem_status dry_ok_dev(tandem_device *dev) { return TANDEM_OK; }
static int dry_peer(const tandem_device *dst, const tandem_device *src) { return dst == src; }
static tandem_status dry_mem_alloc(tandem_device *dev, size_t bytes, tandem_dptr *out) {
    dry_impl *d = dev->impl;
    *out = d->next; /* 1 TiB up and 4 KiB apart: never dereferenced, never NULL */
    d->next += ((tandem_dptr)bytes + 8191) & ~(tandem_dptr)4095;
    return TANDEM_OK;
}
static void dry_mem_free(tandem_device *dev, tandem_dptr p) {}
static tandem_status dry_pinned_alloc(tandem_device *dev, size_t bytes, void **out) {
    *out = tandem_calloc(1, bytes ? bytes : 1);
    return *out ? TANDEM_OK
                : tandem_fail(TANDEM_E_NOMEM, "dry device: no host memory for %zu pinned bytes", bytes);
}
static void dry_pinned_free(tandem_device *dev, void *p) { tandem_free(p); }
static tandem_status dry_stream_create(tandem_device *dev, tandem_stream *s) { return TANDEM_OK; }
static void dry_stream_destroy(tandem_stream *s) {}
static tandem_status dry_ok_stream(tandem_stream *s) { return TANDEM_OK; }
static tandem_status dry_event_create(tandem_device *dev, tandem_event *e) { return TANDEM_OK; }
static void dry_event_destroy(tandem_event *e) {}
static tandem_status dry_ok_event(tandem_event *e) { return TANDEM_OK; }
static tandem_status dry_event_record(tandem_event *e, tandem_stream *s) { return TANDEM_OK; }
static tandem_status dry_wait(tandem_stream *s, tandem_event *e) { return TANDEM_OK; }
static tandem_status dry_query(tandem_event *e, int *done) {
    *done = 1;
    return TANDEM_OK;
}
static tandem_status dry_elapsed(tandem_event *a, tandem_event *b, float *ms) {
    *ms = 0.0f;
    return TANDEM_OK;
}
static tandem_status dry_h2d(tandem_stream *s, tandem_dptr d, const void *h, size_t n) { return TANDEM_OK; }
static tandem_status dry_d2h(tandem_stream *s, void *h, tandem_dptr d, size_t n) { return TANDEM_OK; }
static tandem_status dry_d2d(tandem_stream *s, tandem_dptr d, tandem_dptr x, size_t n) { return TANDEM_OK; }
static tandem_status dry_peer_copy(tandem_stream *s, tandem_device *dd, tandem_dptr d, tandem_dptr x,
                                   size_t n) {
    return TANDEM_OK;
}
static tandem_status dry_launch(tandem_stream *s, int id, const tandem_launch_dims *dims,
                                const void *args, size_t size) {
    return TANDEM_OK;
}
static tandem_status dry_gemm_prepare(tandem_device *dev, const tandem_gemm_desc *g) { return TANDEM_OK; }
static tandem_status dry_gemm(tandem_stream *s, const tandem_gemm_desc *g, float alpha, tandem_dptr a,
                              tandem_dptr b, float beta, tandem_dptr c) {
    return TANDEM_OK;
}

static const tandem_backend_ops dry_ops = {
    .name = "dry",
    .close = dry_close,
    .sync = dry_ok_dev,
    .can_access_peer = dry_peer,
    .mem_alloc = dry_mem_alloc,
    .mem_free = dry_mem_free,
    .host_alloc_pinned = dry_pinned_alloc,
    .host_free_pinned = dry_pinned_free,
    .stream_create = dry_stream_create,
    .stream_destroy = dry_stream_destroy,
    .stream_sync = dry_ok_stream,
    .event_create = dry_event_create,
    .event_destroy = dry_event_destroy,
    .event_record = dry_event_record,
    .stream_wait_event = dry_wait,
    .event_query = dry_query,
    .event_sync = dry_ok_event,
    .event_elapsed_ms = dry_elapsed,
    .copy_h2d = dry_h2d,
    .copy_d2h = dry_d2h,
    .copy_d2d = dry_d2d,
    .copy_peer = dry_peer_copy,
    .launch = dry_launch,
    .gemm_prepare = dry_gemm_prepare,
    .gemm = dry_gemm,
};

tandem_status tandem_dev_dry_open(const tandem_device_info *info, tandem_device **out) {
    if (!info || !out) return tandem_fail(TANDEM_E_INVALID, "dry device: NULL argument");
    *out = NULL;
    tandem_device *dev = tandem_calloc(1, sizeof *dev);
    dry_impl *d = tandem_calloc(1, sizeof *d);
    if (!dev || !d) {
        tandem_free(dev);
        tandem_free(d);
        return tandem_fail(TANDEM_E_NOMEM, "dry device: out of host memory");
    }
    d->next = (tandem_dptr)1 << 40;
    dev->ops = &dry_ops;
    dev->info = *info;
    dev->impl = d;
    *out = dev;
    return TANDEM_OK;
}
