/* dev.h — the internal device API: with the public device/stream/event API of device.c, the
 * only code that calls a backend's table (platform/device.h). The rest of the library reaches
 * a device through these typed, checked wrappers — arena and pinned host memory, copies on byte
 * ranges of committed tensors, GEMMs on tensor views, kernel launches — so a tensor that is
 * uncommitted, on another device, of the wrong dtype or too small for the access is an error
 * naming it (or, for the pointer accessors, an assertion), never a silent fault in a kernel or
 * a driver. test/check_device_api.sh (make test) fails on any other caller of the table.
 *
 * Threads: whoever owns the stream (or, for memory, the device) passed in, as for the table.
 * Allocates: only tandem_dev_mem_alloc (the pool's arena), tandem_dev_pinned_alloc (pinned
 * staging), both before a pool is committed, and tandem_dev_dry_open; nothing else allocates
 * (the recorder appends into a buffer its caller made).
 */
#ifndef TANDEM_RUNTIME_CORE_DEV_H
#define TANDEM_RUNTIME_CORE_DEV_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/registry.h"
#include "platform/device.h"
#include "tandem.h"

/* ---- devices ------------------------------------------------------------------------------- */

/* The device's backend name for messages ("host", "cuda"; "no" for NULL). */
const char *tandem_dev_backend_name(const tandem_device *dev);
/* 1 when both devices run on one backend (the only case a peer copy can exist). */
int tandem_dev_same_backend(const tandem_device *a, const tandem_device *b);

/* A tensor a caller is about to hand to a kernel on s: present, committed on s's device, of
 * dtype dt, with at least min_elems elements. Errors name op, the role and the tensor. */
tandem_status tandem_dev_check_tensor(const char *op, const char *role, const tandem_stream *s,
                                      const tandem_tensor *t, tandem_dtype dt, int64_t min_elems);

/* ---- memory -------------------------------------------------------------------------------- */

/* A pool's arena (one per pool, at commit). */
tandem_status tandem_dev_mem_alloc(tandem_device *dev, size_t bytes, tandem_dptr *out);
void tandem_dev_mem_free(tandem_device *dev, tandem_dptr p);
/* Pinned host memory for staging copies (before commit). A backend without it:
 * TANDEM_E_UNSUPPORTED naming the backend. Free: NULL p is a no-op. */
tandem_status tandem_dev_pinned_alloc(tandem_device *dev, size_t bytes, void **out);
void tandem_dev_pinned_free(tandem_device *dev, void *p);

/* ---- copies on committed tensors ------------------------------------------------------------
 * Queued on s, which must be a stream of the tensor's device; [offset, offset + bytes) must lie
 * inside the tensor. Asynchronous on cuda (host memory must stay valid until s reaches the copy;
 * pinned for overlap), synchronous on host. Errors name the tensor and the range. */

tandem_status tandem_dev_upload(tandem_stream *s, const tandem_tensor *dst, size_t offset,
                                const void *src, size_t bytes);
tandem_status tandem_dev_download(tandem_stream *s, void *dst, const tandem_tensor *src,
                                  size_t offset, size_t bytes);
/* Between two tensors of s's device (ranges may be of one tensor; they must not overlap). */
tandem_status tandem_dev_copy(tandem_stream *s, const tandem_tensor *dst, size_t dst_offset,
                              const tandem_tensor *src, size_t src_offset, size_t bytes);
/* A whole tensor into an equally sized one on another device with peer access to it; s is a
 * stream of the source's device (the backend's copy_peer contract). */
tandem_status tandem_dev_copy_peer(tandem_stream *s, const tandem_tensor *dst,
                                   const tandem_tensor *src);
/* The leading bytes of src into the leading bytes of dst, across devices as above (a ring slot's
 * shape class packed at the start of tensors planned for the largest; bytes <= both sizes). */
tandem_status tandem_dev_copy_peer_prefix(tandem_stream *s, const tandem_tensor *dst,
                                          const tandem_tensor *src, size_t bytes);

/* ---- GEMM on tensor views --------------------------------------------------------------------
 * An operand is a committed tensor from element `off` on; the descriptor's strides say how far
 * a batched operand reaches. tandem_dev_gemm checks each operand's device, dtype (a_type,
 * b_type, c_type) and that the elements the descriptor reads or writes lie inside it. */
typedef struct tandem_view {
    const tandem_tensor *t;
    int64_t off; /* elements */
} tandem_view;

static inline tandem_view tandem_view_of(const tandem_tensor *t) {
    tandem_view v = {t, 0};
    return v;
}
static inline tandem_view tandem_view_at(const tandem_tensor *t, int64_t off) {
    tandem_view v = {t, off};
    return v;
}

/* C = alpha op(A) op(B) + beta C_src (+ the BIAS epilogue's bias, when bias is not NULL):
 * beta C reads c_src, an f32 matrix laid out as C and apart from it, instead of C itself (the
 * residual stream's x + f(x) without a copy of x first). */
tandem_status tandem_dev_gemm_from(tandem_stream *s, const tandem_gemm_desc *g, float alpha,
                                   tandem_view a, tandem_view b, float beta, tandem_view c_src,
                                   tandem_view c, const tandem_view *bias);

/* Resolve the algorithm for a shape once, before commit (a no-op where the backend has
 * nothing to resolve). */
tandem_status tandem_dev_gemm_prepare(tandem_device *dev, const tandem_gemm_desc *g);
/* The prepared shapes that fall back from the library's fused GEMM (platform/device.h,
 * gemm_fallbacks): one line each into buf, how many returned (0 on backends without any). */
int tandem_dev_gemm_fallbacks(tandem_device *dev, char *buf, size_t cap);
/* C = alpha op(A) op(B) + beta C in the row-major convention of tandem_gemm_desc. */
tandem_status tandem_dev_gemm(tandem_stream *s, const tandem_gemm_desc *g, float alpha,
                              tandem_view a, tandem_view b, float beta, tandem_view c);
/* The same with the descriptor's epilogue's operands (platform/device.h): EPI_BIAS takes bias,
 * a view of n elements of C's type (C[b, i, j] += bias[j] after alpha and beta); a descriptor
 * without an epilogue goes through tandem_dev_gemm. */
tandem_status tandem_dev_gemm_epi(tandem_stream *s, const tandem_gemm_desc *g, float alpha,
                                  tandem_view a, tandem_view b, float beta, tandem_view c,
                                  tandem_view bias);
/* The epilogues with an aux matrix: aux of C's type and layout (batch stride stride_c), apart
 * from C. EPI_GELU_AUX_BIAS takes bias too (written: aux; then C), EPI_DGELU bias NULL (read:
 * aux). */
tandem_status tandem_dev_gemm_aux(tandem_stream *s, const tandem_gemm_desc *g, float alpha,
                                  tandem_view a, tandem_view b, float beta, tandem_view c,
                                  const tandem_view *bias, tandem_view aux);

/* Whether a launch of kernel_id with dims fits the device's per-block limits (shared memory):
 * for plans, before any launch. TANDEM_OK on backends without such limits. */
tandem_status tandem_dev_launch_check(tandem_device *dev, int kernel_id, const tandem_launch_dims *dims);

/* ---- graphs (device.c) ----------------------------------------------------------------------
 * One step's work captured once and replayed as one launch (platform/device.h). create before
 * the pools are committed (the handle is the only allocation); begin/end around the calls to
 * record on s (nothing runs meanwhile; a synchronising or allocating call fails the capture);
 * launch replays it on s. A backend without graphs (host): supported() is 0 and create
 * returns TANDEM_E_UNSUPPORTED — the caller runs its step eagerly, which on the host is what a
 * replay would do anyway. */
int tandem_graph_supported(const tandem_device *dev);
tandem_status tandem_graph_create(tandem_device *dev, tandem_graph **out);
tandem_status tandem_graph_begin(tandem_graph *g, tandem_stream *s);
tandem_status tandem_graph_end(tandem_graph *g, tandem_stream *s);
tandem_status tandem_graph_launch(tandem_graph *g, tandem_stream *s);
void tandem_graph_destroy(tandem_graph *g);

/* ---- kernel launches -------------------------------------------------------------------------
 * args points at a tandem_k_<name>_args of exactly args_size bytes. An unknown id or a size
 * that differs from the registry's → TANDEM_E_INVALID naming the kernel. Callers use the typed
 * launchers (runtime/core/launch.h, runtime/model/launchers.h, runtime/audio/mel_device.c),
 * each the one place its argument struct is filled. */
tandem_status tandem_launch(tandem_stream *s, tandem_kernel_id id, const void *args,
                            size_t args_size);

/* Device pointers of committed tensors, for the typed launchers' arguments. The dtype is
 * asserted: a mismatch is a programming error (the tensor tables are fixed at declaration). */
float *tandem_tensor_f32(const tandem_tensor *t);
/* From element off on (asserted inside the tensor): a view's pointer, for a launcher. */
float *tandem_tensor_f32_at(const tandem_tensor *t, int64_t off);
tandem_bf16 *tandem_tensor_bf16(const tandem_tensor *t);
int32_t *tandem_tensor_i32(const tandem_tensor *t);
int32_t *tandem_tensor_i32_at(const tandem_tensor *t, int64_t off);
uint8_t *tandem_tensor_u8(const tandem_tensor *t);

/* ---- recording the launch list (the step cost model, runtime/run/cost.h) --------------------
 * While a recorder is installed, every kernel launch, GEMM, copy and all-reduce that passes its checks here
 * is appended to it, with its stream and its cost (the kernel's registry cost function, the
 * GEMM's from its shape and dtypes, a copy's bytes), before the backend runs it. One recorder
 * for the process (installing is for a tool or a test that controls every thread launching
 * meanwhile); appends are atomic. Off (the default) costs one relaxed load per call. */
typedef enum tandem_rec_kind {
    TANDEM_REC_KERNEL = 0,
    TANDEM_REC_GEMM,
    TANDEM_REC_COPY_H2D,
    TANDEM_REC_COPY_D2H,
    TANDEM_REC_COPY_D2D,
    TANDEM_REC_COPY_PEER,
    TANDEM_REC_ALL_REDUCE, /* a collective's bytes (this rank's buffer); not in the cost model's time */
    TANDEM_REC_KINDS
} tandem_rec_kind;

typedef struct tandem_rec_entry {
    tandem_rec_kind kind;
    int kernel;             /* TANDEM_REC_KERNEL: its tandem_kernel_id; else -1 */
    tandem_gemm_desc gemm;  /* TANDEM_REC_GEMM: the descriptor */
    float beta;             /* TANDEM_REC_GEMM: C read when nonzero */
    int64_t blocks;         /* TANDEM_REC_KERNEL: blocks in its grid (how much of a GPU it fills) */
    unsigned threads;       /* TANDEM_REC_KERNEL: threads per block */
    unsigned shmem;         /* TANDEM_REC_KERNEL: dynamic shared memory per block, bytes */
    const tandem_stream *stream;
    tandem_kernel_cost cost;
} tandem_rec_entry;

typedef struct tandem_dev_recorder {
    tandem_rec_entry *entries; /* [cap], the caller's */
    int64_t cap;
    _Atomic int64_t n;         /* calls seen; entries past cap are counted, not stored */
} tandem_dev_recorder;

/* Install r (n reset to 0) or, with NULL, stop recording. */
void tandem_dev_record(tandem_dev_recorder *r);
/* The cost of a GEMM on tandem_dev_gemm's terms (runtime/core/gemm.c's op too). */
void tandem_dev_gemm_cost(const tandem_gemm_desc *g, float beta, tandem_kernel_cost *c);

/* ---- the dry device ---------------------------------------------------------------------------
 * A device that executes nothing, for the cost model: `tandem cost` runs one real training step
 * on it, shapes alone deciding the launch list. It reports info (a CUDA device, as the model
 * requires for bf16); arena memory is address space only (never touched, so a 6 GiB arena costs
 * nothing), pinned host memory is real (the host writes staging buffers); streams and events
 * complete at once; launches, GEMMs and copies pass dev.c's checks, are recorded, and do nothing.
 * A download leaves its destination as it was: whatever the host later reads from a step's
 * read-back is what it held (zeros from the pinned allocation: a finite step, nothing skipped;
 * the skip decision lives on the device anyway, so it never changes the launch list).
 * Close with tandem_device_close. */
tandem_status tandem_dev_dry_open(const tandem_device_info *info, tandem_device **out);

/* ---- op profiling (`tandem profile`) ---------------------------------------------------------
 * While a profile is attached, every kernel launch and GEMM queued on its stream records the
 * profile's next event after it (with the op's name and the host clock at the launch), until
 * the buffer is full (overflow counted). Events and arrays are the caller's, made before commit;
 * nothing is allocated. One profile at a time per process;
 * attach and detach on the stream's thread (launches on other streams only read the pointer). */
typedef struct tandem_dev_op_profile {
    tandem_stream *s;
    tandem_event *anchor;  /* recorded on s by attach: the device clock's zero */
    uint64_t anchor_ns;    /* host clock then */
    tandem_event **ev;     /* [cap] */
    const char **name;     /* [cap]: kernel name, "gemm" */
    uint64_t *host_ns;     /* [cap]: host clock when the op was queued */
    int cap, n, overflow;
} tandem_dev_op_profile;
/* Attach p (its n reset to 0, its anchor recorded) or, with NULL, detach. */
tandem_status tandem_dev_op_profile_attach(tandem_dev_op_profile *p);

/* Work queued on `after` from now on runs after the work queued on `before` so far (two streams
 * of one device, e an event of it). Inside a graph capture of `before` this forks `after` into
 * the capture; `before` capturing and waiting on `after` joins it back (CUDA's cross-stream
 * capture). Elsewhere: event record and wait. */
tandem_status tandem_stream_order(tandem_stream *after, tandem_stream *before, tandem_event *e);

/* ---- collectives across model devices (platform/device.h tandem_coll; docs/SCALING.md) -------
 * A backend without collectives (host built without MPI) answers TANDEM_E_UNSUPPORTED naming
 * the backend and the way out. The reductions run in place on n elements of a committed f32 or bf16 tensor
 * from element off, on s (of the tensor's device), queued: failures seen while they run are
 * reported by tandem_dev_coll_check. Every rank makes the same calls in the same order. */
tandem_status tandem_dev_coll_unique_id(tandem_device *dev, tandem_coll_id *out);
tandem_status tandem_dev_coll_open(tandem_device *dev, const tandem_coll_id *id, int nranks, int rank,
                                   tandem_coll **out);
/* One member per device of this process (ranks 0..n-1 in devs' order); out[n]. */
tandem_status tandem_dev_coll_open_local(tandem_device *const *devs, int n, tandem_coll **out);
/* abort: leave without waiting for queued collectives or the other ranks (after a failure). */
void tandem_dev_coll_close(tandem_device *dev, tandem_coll *c, int abort);
/* Bracket calls on several members made from one thread (begin 1, then 0). */
tandem_status tandem_dev_coll_group(tandem_device *dev, int begin);
tandem_status tandem_dev_all_reduce_sum(tandem_coll *c, tandem_stream *s, const tandem_tensor *t,
                                        int64_t off, int64_t n);
tandem_status tandem_dev_broadcast(tandem_coll *c, tandem_stream *s, const tandem_tensor *t,
                                   int64_t off, int64_t n, int root);
tandem_status tandem_dev_coll_check(tandem_device *dev, tandem_coll *c);
/* The launcher's path for another backend's unique id: root's *id copied into every rank's
 * over c, a group of the host backend (MPI) on host device `host`; blocks. */
tandem_status tandem_dev_coll_share_id(tandem_device *host, tandem_coll *c, tandem_coll_id *id, int root);

#endif
