/* fc_memory.c — stand-in driver: device and pinned host memory, and the copies.
 *
 * Device memory comes from the kernel emulator (tandem_emu_buf_alloc): guarded buffers whose
 * host addresses serve as CUdeviceptr values, so emulated kernels dereference them directly
 * and the emulator catches a kernel that strays outside them. Every allocation is recorded
 * with its context; a copy must stay inside allocations of the right context(s). Copies are
 * checked when queued and run on the stream (fc_queue.c), declaring what they read and write
 * to the hazard detector. As in CUDA, a copy from pageable host memory takes the bytes when it
 * is queued, and a copy into pageable host memory returns when it is done; pinned host memory
 * is read or written when the copy runs. cuMemFree and cuMemFreeHost wait for all queued work
 * (as cuMemFree synchronises on a GPU). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test/emu/emu.h"
#include "test/fakecuda/fakecuda.h"

typedef struct fc_alloc {
    uintptr_t base;
    size_t size;
    size_t pad;  /* device: bytes after size up to the 256-byte boundary (poisoned 0xFF) */
    fc_ctx *ctx;
    fc_mem_kind kind;
} fc_alloc;

static fc_alloc *allocs;
static size_t alloc_count, alloc_cap;

static fc_alloc *find_alloc(uintptr_t p) {
    for (size_t i = 0; i < alloc_count; i++)
        if (p >= allocs[i].base && p - allocs[i].base < allocs[i].size) return &allocs[i];
    return NULL;
}

static void add_alloc(uintptr_t base, size_t size, size_t pad, fc_ctx *ctx, fc_mem_kind kind) {
    if (alloc_count == alloc_cap) {
        size_t cap = alloc_cap ? alloc_cap * 2 : 64;
        fc_alloc *n = realloc(allocs, cap * sizeof *n);
        if (!n) abort(); /* test-only: host out of memory is fatal */
        allocs = n;
        alloc_cap = cap;
    }
    allocs[alloc_count++] = (fc_alloc){base, size, pad, ctx, kind};
}

static void release(fc_alloc *a) {
    fc_hazard_forget(a->base, a->size + a->pad);
    if (a->kind == FC_MEM_DEVICE) {
        a->ctx->used_bytes -= a->size;
        tandem_emu_buf_free((void *)a->base);
    } else {
        free((void *)a->base);
    }
    *a = allocs[--alloc_count];
}

void fc_mem_kill_ctx(fc_ctx *c) {
    for (size_t i = alloc_count; i-- > 0;)
        if (allocs[i].ctx == c) release(&allocs[i]);
}

__attribute__((destructor)) static void fc_memory_unload(void) {
    free(allocs);
    allocs = NULL;
    alloc_count = alloc_cap = 0;
}

int fc_check_range(const char *call, const char *what, const void *ptr, size_t bytes,
                   const fc_ctx *ctx) {
    uintptr_t p = (uintptr_t)ptr;
    fc_alloc *a = find_alloc(p);
    if (!a) {
        tandem_fakecuda_report(call, "%s 0x%llx is not inside any live device allocation", what,
                               (unsigned long long)p);
        return -1;
    }
    if (a->kind != FC_MEM_DEVICE) {
        tandem_fakecuda_report(call, "%s 0x%llx is pinned host memory, not device memory", what,
                               (unsigned long long)p);
        return -1;
    }
    if (a->ctx != ctx) {
        tandem_fakecuda_report(call,
                               "%s 0x%llx is memory of device %d, but the call runs in device "
                               "%d's context",
                               what, (unsigned long long)p, a->ctx->device, ctx->device);
        return -1;
    }
    size_t off = (size_t)(p - a->base);
    if (bytes > a->size - off) {
        tandem_fakecuda_report(call,
                               "%s [0x%llx, +%zu) overruns its allocation [0x%llx, +%zu) by %zu "
                               "bytes",
                               what, (unsigned long long)p, bytes, (unsigned long long)a->base,
                               a->size, bytes - (a->size - off));
        return -1;
    }
    return 0;
}

FC_EXPORT int tandem_fakecuda_check_device_range(const char *call, const char *what,
                                                 const void *p, size_t bytes) {
    fc_ctx *c = fc_current();
    if (!c) {
        tandem_fakecuda_report(call, "no current context on this thread");
        return -1;
    }
    return fc_check_range(call, what, p, bytes, c);
}

int fc_check_kernel_pointers(const char *call, const char *kernel, const void *args,
                             size_t size, const fc_ctx *ctx) {
    /* Pointers in an args struct are 8-byte aligned; a non-pointer word that happens to equal
     * an address inside another device's allocation is vanishingly unlikely. */
    for (size_t off = 0; off + 8 <= size; off += 8) {
        uint64_t w;
        memcpy(&w, (const char *)args + off, 8);
        fc_alloc *a = find_alloc((uintptr_t)w);
        if (!a || a->kind != FC_MEM_DEVICE || a->ctx == ctx) continue;
        if (ctx->peer_enabled[a->ctx->device]) continue;
        tandem_fakecuda_report(call,
                               "%s: argument word at offset %zu (0x%llx) points into device %d's "
                               "memory, which device %d cannot access (peer access not enabled)",
                               kernel, off, (unsigned long long)w, a->ctx->device, ctx->device);
        return -1;
    }
    return 0;
}

int fc_check_padding(const char *call, const char *kernel) {
    for (size_t i = 0; i < alloc_count; i++) {
        const fc_alloc *a = &allocs[i];
        const unsigned char *pad = (const unsigned char *)(a->base + a->size);
        for (size_t j = 0; j < a->pad; j++) {
            if (pad[j] == 0xFF) continue;
            tandem_fakecuda_report(call,
                                   "%s wrote %zu bytes past the end of allocation [0x%llx, +%zu) "
                                   "(device %d)",
                                   kernel, j + 1, (unsigned long long)a->base, a->size,
                                   a->ctx->device);
            memset((void *)pad, 0xFF, a->pad); /* report once */
            return -1;
        }
    }
    return 0;
}

int fc_alloc_range(uintptr_t p, uintptr_t *base, size_t *size) {
    const fc_alloc *a = find_alloc(p);
    if (!a || a->kind != FC_MEM_DEVICE) return -1;
    *base = a->base;
    *size = a->size;
    return 0;
}

FC_EXPORT int tandem_fakecuda_is_device_memory(const void *p) {
    const fc_alloc *a = find_alloc((uintptr_t)p);
    return a && a->kind == FC_MEM_DEVICE;
}

/* Host side of a copy: pageable memory is fine, pinned memory must fit its allocation, and
 * device memory passed as a host pointer is a bug (it would work here, not on a GPU). */
static int check_host_range(const char *call, const char *what, const void *ptr, size_t bytes) {
    uintptr_t p = (uintptr_t)ptr;
    if (!ptr) {
        tandem_fakecuda_report(call, "%s is NULL", what);
        return -1;
    }
    fc_alloc *a = find_alloc(p);
    if (!a) return 0;
    if (a->kind == FC_MEM_DEVICE) {
        tandem_fakecuda_report(call, "%s 0x%llx is device memory of device %d, not host memory",
                               what, (unsigned long long)p, a->ctx->device);
        return -1;
    }
    size_t off = (size_t)(p - a->base);
    if (bytes > a->size - off) {
        tandem_fakecuda_report(call, "%s [%p, +%zu) overruns its pinned allocation [%p, +%zu)",
                               what, ptr, bytes, (void *)a->base, a->size);
        return -1;
    }
    return 0;
}

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytes) {
    const char *call = "cuMemAlloc";
    CUresult r = fc_enter(call, 1);
    if (r) return fc_leave(r);
    if ((r = fc_capture_unsafe(call, "allocating"))) return fc_leave(r);
    fc_ctx *c = fc_current();
    if (!dptr) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "dptr is NULL"));
    if (bytes == 0) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "size 0"));
    /* Out of memory is an outcome, not a misuse: error code, no line. */
    if (bytes > fc_cfg.total_mem - c->used_bytes) return fc_leave(CUDA_ERROR_OUT_OF_MEMORY);
    /* Emulator buffers end at a page boundary; rounding the buffer up to 256 bytes gives the
     * base the alignment cuMemAlloc guarantees. The padding stays poisoned and is checked
     * after every launch (fc_check_padding); copies are checked against the exact size. */
    size_t rounded = (bytes + 255) & ~(size_t)255;
    void *p = tandem_emu_buf_alloc(rounded);
    if (!p) return fc_leave(CUDA_ERROR_OUT_OF_MEMORY);
    add_alloc((uintptr_t)p, bytes, rounded - bytes, c, FC_MEM_DEVICE);
    c->used_bytes += bytes;
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return fc_leave(CUDA_SUCCESS);
}
FC_EXPORT_V2(cuMemAlloc)

CUresult cuMemFree(CUdeviceptr dptr) {
    const char *call = "cuMemFree";
    CUresult r = fc_enter(call, 1);
    if (r) return fc_leave(r);
    if ((r = fc_capture_unsafe(call, "freeing"))) return fc_leave(r); /* it synchronises */
    fc_alloc *a = find_alloc((uintptr_t)dptr);
    if (!a || a->base != (uintptr_t)dptr || a->kind != FC_MEM_DEVICE)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call,
                                "0x%llx is not the start of a live device allocation (double "
                                "free, or a pointer cuMemAlloc did not return)",
                                (unsigned long long)dptr));
    if (a->ctx != fc_current())
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call,
                                "0x%llx belongs to device %d, but the current context is device %d",
                                (unsigned long long)dptr, a->ctx->device, fc_current()->device));
    fc_drain_ctx(NULL);
    if (!(a = find_alloc((uintptr_t)dptr))) return fc_leave(CUDA_SUCCESS); /* freed meanwhile */
    release(a);
    return fc_leave(CUDA_SUCCESS);
}
FC_EXPORT_V2(cuMemFree)

FC_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags) {
    const char *call = "cuMemHostAlloc";
    CUresult r = fc_enter(call, 1);
    if (r) return fc_leave(r);
    if ((r = fc_capture_unsafe(call, "allocating"))) return fc_leave(r);
    const unsigned known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                           CU_MEMHOSTALLOC_WRITECOMBINED;
    if (!pp) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "pp is NULL"));
    if (bytes == 0) return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "size 0"));
    if (flags & ~known)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "unknown flags 0x%x", flags));
    size_t rounded = (bytes + 4095) & ~(size_t)4095;
    void *p = aligned_alloc(4096, rounded);
    if (!p) return fc_leave(CUDA_ERROR_OUT_OF_MEMORY);
    add_alloc((uintptr_t)p, bytes, 0, fc_current(), FC_MEM_HOST);
    *pp = p;
    return fc_leave(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuMemFreeHost(void *p) {
    const char *call = "cuMemFreeHost";
    CUresult r = fc_enter(call, 0);
    if (r) return fc_leave(r);
    if ((r = fc_capture_unsafe(call, "freeing pinned memory"))) return fc_leave(r); /* it synchronises */
    fc_alloc *a = find_alloc((uintptr_t)p);
    if (!a || a->base != (uintptr_t)p || a->kind != FC_MEM_HOST)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call,
                                "%p is not the start of live pinned memory from cuMemHostAlloc", p));
    fc_drain_ctx(NULL);
    if ((a = find_alloc((uintptr_t)p))) release(a);
    return fc_leave(CUDA_SUCCESS);
}

static int is_pinned(const void *p) {
    const fc_alloc *a = find_alloc((uintptr_t)p);
    return a && a->kind == FC_MEM_HOST;
}

static void run_copy(fc_op *op) { memcpy(op->dst, op->owned ? op->owned : op->src, op->bytes); }

/* Queue dst <- src on stream; dst_mem / src_mem: whether each side is tracked memory. */
static void queue_copy(const char *call, CUstream stream, void *dst, const void *src, size_t bytes,
                       int dst_mem, int src_mem, int snapshot) {
    fc_stream *s = fc_stream_of(stream);
    if (!s->capture) FC_COUNT(s->h.ctx->device, copies);
    if (strcmp(call, "cuMemcpyHtoDAsync") == 0) fc_counts.copies_h2d++;
    else if (strcmp(call, "cuMemcpyDtoHAsync") == 0) fc_counts.copies_d2h++;
    else if (strcmp(call, "cuMemcpyDtoDAsync") == 0) fc_counts.copies_d2d++;
    else fc_counts.copies_peer++;
    fc_op *op = fc_op_new("%s of %zu bytes", call, bytes);
    op->run = run_copy;
    op->dst = dst;
    op->src = src;
    op->bytes = bytes;
    if (snapshot) {
        op->owned = malloc(bytes);
        if (!op->owned) abort(); /* test-only */
        memcpy(op->owned, src, bytes);
    }
    fc_acc_list L;
    L.n = 0;
    if (src_mem) fc_acc_add(&L, src, bytes, 0, "source");
    if (dst_mem) fc_acc_add(&L, dst, bytes, 1, "destination");
    fc_submit(s, op, &L);
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes,
                                     CUstream stream) {
    const char *call = "cuMemcpyHtoDAsync";
    CUresult r = fc_enter(call, 1);
    if (r || (r = fc_check_stream(call, stream))) return fc_leave(r);
    if (bytes == 0) return fc_leave(CUDA_SUCCESS);
    if (fc_check_range(call, "destination", (void *)(uintptr_t)dst, bytes, fc_current()) ||
        check_host_range(call, "source", src, bytes))
        return fc_leave(CUDA_ERROR_INVALID_VALUE);
    int pinned = is_pinned(src);
    if (!pinned && fc_stream_of(stream)->capture) /* a graph's memcpy node takes pinned memory only */
        return fc_leave(fc_capture_reject(fc_stream_of(stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, call,
                                          "a copy from pageable memory (synchronous)"));
    queue_copy(call, stream, (void *)(uintptr_t)dst, src, bytes, 1, pinned, !pinned);
    return fc_leave(CUDA_SUCCESS);
}
FC_EXPORT_V2(cuMemcpyHtoDAsync)

CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream stream) {
    const char *call = "cuMemcpyDtoHAsync";
    CUresult r = fc_enter(call, 1);
    if (r || (r = fc_check_stream(call, stream))) return fc_leave(r);
    if (bytes == 0) return fc_leave(CUDA_SUCCESS);
    if (fc_check_range(call, "source", (void *)(uintptr_t)src, bytes, fc_current()) ||
        check_host_range(call, "destination", dst, bytes))
        return fc_leave(CUDA_ERROR_INVALID_VALUE);
    int pinned = is_pinned(dst);
    if (!pinned && fc_stream_of(stream)->capture)
        return fc_leave(fc_capture_reject(fc_stream_of(stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, call,
                                          "a copy into pageable memory (synchronous)"));
    if (!pinned && (r = fc_capture_unsafe(call, "a copy into pageable memory (synchronous)"))) return fc_leave(r);
    queue_copy(call, stream, dst, (void *)(uintptr_t)src, bytes, pinned, 1, 0);
    if (!pinned) { /* pageable destination: the call returns once the bytes are there */
        fc_stream *s = fc_stream_of(stream);
        fc_vc *vc = malloc(sizeof *vc);
        if (!vc) abort(); /* test-only */
        *vc = s->vc;
        fc_stream_drain(s);
        fc_observe_vc(vc);
        free(vc);
        return fc_leave(s->h.ctx->sticky);
    }
    return fc_leave(CUDA_SUCCESS);
}
FC_EXPORT_V2(cuMemcpyDtoHAsync)

static int overlap(CUdeviceptr a, CUdeviceptr b, size_t n) { return a < b + n && b < a + n; }

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                     CUstream stream) {
    const char *call = "cuMemcpyDtoDAsync";
    CUresult r = fc_enter(call, 1);
    if (r || (r = fc_check_stream(call, stream))) return fc_leave(r);
    if (bytes == 0) return fc_leave(CUDA_SUCCESS);
    if (fc_check_range(call, "destination", (void *)(uintptr_t)dst, bytes, fc_current()) ||
        fc_check_range(call, "source", (void *)(uintptr_t)src, bytes, fc_current()))
        return fc_leave(CUDA_ERROR_INVALID_VALUE);
    if (overlap(dst, src, bytes))
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call,
                                "source 0x%llx and destination 0x%llx overlap (%zu bytes)",
                                (unsigned long long)src, (unsigned long long)dst, bytes));
    queue_copy(call, stream, (void *)(uintptr_t)dst, (void *)(uintptr_t)src, bytes, 1, 1, 0);
    return fc_leave(CUDA_SUCCESS);
}
FC_EXPORT_V2(cuMemcpyDtoDAsync)

/* Stricter than CUDA (which stages a peer copy itself when access is off): the stand-in
 * requires peer access enabled in one direction between the two contexts, so a backend that
 * reports peer access without enabling it, or takes the peer path without it, is caught. */
FC_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                     CUcontext src_ctx, size_t bytes, CUstream stream) {
    const char *call = "cuMemcpyPeerAsync";
    CUresult r = fc_enter(call, 1);
    if (r || (r = fc_check_stream(call, stream))) return fc_leave(r);
    fc_ctx *d = fc_ctx_of(dst_ctx), *s = fc_ctx_of(src_ctx), *cur = fc_current();
    if (!d || !d->refcount || !s || !s->refcount)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_CONTEXT, call,
                                "%s context %p is not a live context", (!d || !d->refcount) ? "dst" : "src",
                                (!d || !d->refcount) ? (void *)dst_ctx : (void *)src_ctx));
    if (cur != d && cur != s)
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_CONTEXT, call,
                                "queued in device %d's context, which is neither source (%d) nor "
                                "destination (%d)",
                                cur->device, s->device, d->device));
    if (d != s && !d->peer_enabled[s->device] && !s->peer_enabled[d->device])
        return fc_leave(fc_fail(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, call,
                                "peer access between devices %d and %d was never enabled "
                                "(cuCtxEnablePeerAccess)",
                                s->device, d->device));
    if (bytes == 0) return fc_leave(CUDA_SUCCESS);
    if (fc_check_range(call, "destination", (void *)(uintptr_t)dst, bytes, d) ||
        fc_check_range(call, "source", (void *)(uintptr_t)src, bytes, s))
        return fc_leave(CUDA_ERROR_INVALID_VALUE);
    if (overlap(dst, src, bytes))
        return fc_leave(fc_fail(CUDA_ERROR_INVALID_VALUE, call, "source and destination overlap"));
    queue_copy(call, stream, (void *)(uintptr_t)dst, (void *)(uintptr_t)src, bytes, 1, 1, 0);
    return fc_leave(CUDA_SUCCESS);
}
