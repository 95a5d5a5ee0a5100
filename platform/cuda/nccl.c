/* nccl.c — loading libnccl.so.2 and the cuda backend's collectives over it. See nccl.h. */
#include "platform/cuda/nccl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "platform/cuda/cuda_driver.h"
#include "platform/cuda/cuda_internal.h"
#include "platform/cuda/nccl_api.h"
#include "platform/os/log.h"
#include "platform/os/os.h"

typedef struct nccl_fns {
#define NCCL_FN_FIELD(name, ret, params) tandem_pfn_##name name;
    TANDEM_NCCL_CALLS(NCCL_FN_FIELD)
#undef NCCL_FN_FIELD
} nccl_fns;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *load_path; /* the first caller's choice, read inside the once */
static tandem_status load_status = TANDEM_E_NODRIVER;
static char load_text[512];   /* describe(): the version line or why not */
static int nccl_version;
static nccl_fns fn;

struct tandem_coll {
    tandem_device *dev;
    ncclComm_t comm;
    int rank, nranks;
};

static void version_text(int v, char *buf, size_t cap) {
    /* NCCL_VERSION(X,Y,Z): X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9 on */
    if (v >= 20900) snprintf(buf, cap, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    else snprintf(buf, cap, "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
}

static tandem_status load(const char *lib) {
    dlerror();
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(load_text, sizeof load_text,
                 "dlopen(%s): %s; NCCL 2.13 or newer is needed for collectives across GPUs "
                 "(install NCCL, e.g. the CUDA toolkit's libnccl.so.2, or name it with TANDEM_NCCL)",
                 lib, e ? e : "unknown error");
        return TANDEM_E_NODRIVER;
    }
    nccl_fns f;
    memset(&f, 0, sizeof f);
#define NCCL_RESOLVE(name, ret, params)                                                   \
    do {                                                                                  \
        void *p_ = dlsym(h, #name);                                                       \
        if (!p_) {                                                                        \
            snprintf(load_text, sizeof load_text,                                         \
                     "%s has no %s: it is older than NCCL 2.13, which this runtime needs", \
                     lib, #name);                                                         \
            return TANDEM_E_DEVICE;                                                       \
        }                                                                                 \
        memcpy(&f.name, &p_, sizeof p_);                                                  \
    } while (0);
    TANDEM_NCCL_CALLS(NCCL_RESOLVE)
#undef NCCL_RESOLVE
    int v = 0;
    ncclResult_t r = f.ncclGetVersion(&v);
    char found[32];
    version_text(v, found, sizeof found);
    if (r != ncclSuccess) {
        snprintf(load_text, sizeof load_text, "%s: ncclGetVersion failed (ncclResult_t %d)", lib, (int)r);
        return TANDEM_E_DEVICE;
    }
    if (v < TANDEM_NCCL_MIN_VERSION) {
        snprintf(load_text, sizeof load_text,
                 "%s is NCCL %s (version code %d); this runtime needs NCCL 2.13 (21300) or newer: "
                 "update NCCL",
                 lib, found, v);
        return TANDEM_E_DEVICE;
    }
    fn = f;
    nccl_version = v;
    snprintf(load_text, sizeof load_text, "%s: NCCL %s", lib, found);
    return TANDEM_OK;
}

static void load_once_fn(void) {
    const char *lib = load_path && load_path[0] ? load_path : "libnccl.so.2";
    load_status = load(lib);
}

tandem_status tandem_nccl_load(const char *lib) {
    static pthread_mutex_t path_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&path_lock);
    if (!load_path) load_path = lib ? lib : "";
    pthread_once(&load_once, load_once_fn);
    pthread_mutex_unlock(&path_lock);
    if (load_status == TANDEM_OK) return TANDEM_OK;
    return tandem_fail(load_status, "%s", load_text);
}

int tandem_nccl_version(void) { return load_status == TANDEM_OK ? nccl_version : 0; }

const char *tandem_nccl_describe(void) { return load_text; }

/* "ncclAllReduce failed: invalid usage (ncclInvalidUsage=5): <the library's last error>" */
static tandem_status nccl_fail(const char *call, ncclResult_t r, ncclComm_t comm, const char *ctx) {
    const char *text = fn.ncclGetErrorString ? fn.ncclGetErrorString(r) : NULL;
    const char *last = fn.ncclGetLastError ? fn.ncclGetLastError(comm) : NULL;
    return tandem_fail(TANDEM_E_DEVICE, "%s failed [%s]: %s (ncclResult_t %d)%s%s", call, ctx,
                       text ? text : "unknown NCCL error", (int)r, last && last[0] ? ": " : "",
                       last && last[0] ? last : "");
}

/* The device's context current for the call, the caller's restored after (callers may be on
 * any thread, as with every backend entry). */
static tandem_status enter(tandem_device *dev, CUcontext *prev) {
    *prev = NULL;
    TANDEM_TRY(tandem_nccl_load(NULL));
    TANDEM_CU_TRY(cuCtxGetCurrent, (prev), "device %d", dev->info.ordinal);
    return tandem_cuda_make_current(dev->impl);
}
static void leave(CUcontext prev) { tandem_cu.cuCtxSetCurrent(prev); }

tandem_status tandem_cuda_coll_unique_id(tandem_device *dev, tandem_coll_id *out) {
    (void)dev;
    memset(out, 0, sizeof *out);
    TANDEM_TRY(tandem_nccl_load(NULL));
    ncclUniqueId id;
    ncclResult_t r = fn.ncclGetUniqueId(&id);
    if (r != ncclSuccess) return nccl_fail("ncclGetUniqueId", r, NULL, "making a communicator id");
    _Static_assert(sizeof id == sizeof out->bytes, "tandem_coll_id holds an ncclUniqueId");
    memcpy(out->bytes, &id, sizeof id);
    return TANDEM_OK;
}

static tandem_status coll_new(tandem_device *dev, int rank, int nranks, tandem_coll **out) {
    tandem_coll *c = tandem_malloc(sizeof *c);
    if (!c) return tandem_fail(TANDEM_E_NOMEM, "collective member for device %d", dev->info.ordinal);
    c->dev = dev;
    c->comm = NULL;
    c->rank = rank;
    c->nranks = nranks;
    *out = c;
    return TANDEM_OK;
}

tandem_status tandem_cuda_coll_open(tandem_device *dev, const tandem_coll_id *id, int nranks,
                                    int rank, tandem_coll **out) {
    *out = NULL;
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return tandem_fail(TANDEM_E_INVALID, "collective open: rank %d of %d: expected 0 <= rank < nranks",
                           rank, nranks);
    CUcontext prev;
    tandem_status st = enter(dev, &prev);
    tandem_coll *c = NULL;
    if (st == TANDEM_OK) st = coll_new(dev, rank, nranks, &c);
    if (st == TANDEM_OK) {
        ncclUniqueId uid;
        memcpy(&uid, id->bytes, sizeof uid);
        char ctx[96];
        snprintf(ctx, sizeof ctx, "device %d, rank %d of %d", dev->info.ordinal, rank, nranks);
        ncclResult_t r = fn.ncclCommInitRank(&c->comm, nranks, uid, rank);
        if (r != ncclSuccess) {
            st = nccl_fail("ncclCommInitRank", r, NULL, ctx);
            tandem_free(c);
            c = NULL;
        }
    }
    leave(prev);
    *out = c;
    return st;
}

tandem_status tandem_cuda_coll_open_local(tandem_device *const *devs, int n, tandem_coll **out) {
    for (int i = 0; i < n; i++) out[i] = NULL;
    if (n < 1 || n > 64) return tandem_fail(TANDEM_E_INVALID, "collective open: %d devices, expected 1..64", n);
    CUcontext prev;
    TANDEM_TRY(enter(devs[0], &prev));
    int ordinals[64];
    ncclComm_t comms[64];
    for (int i = 0; i < n; i++) ordinals[i] = devs[i]->info.ordinal;
    tandem_status st = TANDEM_OK;
    ncclResult_t r = fn.ncclCommInitAll(comms, n, ordinals);
    if (r != ncclSuccess) st = nccl_fail("ncclCommInitAll", r, NULL, "one communicator per local device");
    for (int i = 0; st == TANDEM_OK && i < n; i++) {
        st = coll_new(devs[i], i, n, &out[i]);
        if (st == TANDEM_OK) out[i]->comm = comms[i];
    }
    if (st != TANDEM_OK && r == ncclSuccess) {
        for (int i = 0; i < n; i++) {
            fn.ncclCommDestroy(comms[i]);
            tandem_free(out[i]);
            out[i] = NULL;
        }
    }
    leave(prev);
    return st;
}

/* Destroy (wait for the queued collectives) or abort (do not) c's communicator; free c. */
static void coll_end(tandem_coll *c, int abort) {
    if (!c) return;
    CUcontext prev;
    if (enter(c->dev, &prev) == TANDEM_OK) (abort ? fn.ncclCommAbort : fn.ncclCommDestroy)(c->comm);
    leave(prev);
    tandem_free(c);
}

void tandem_cuda_coll_close(tandem_coll *c) { coll_end(c, 0); }
void tandem_cuda_coll_abort(tandem_coll *c) { coll_end(c, 1); }

tandem_status tandem_cuda_coll_group(int begin) {
    TANDEM_TRY(tandem_nccl_load(NULL));
    ncclResult_t r = begin ? fn.ncclGroupStart() : fn.ncclGroupEnd();
    if (r != ncclSuccess) return nccl_fail(begin ? "ncclGroupStart" : "ncclGroupEnd", r, NULL, "group");
    return TANDEM_OK;
}

static tandem_status nccl_type(tandem_dtype t, const char *call, ncclDataType_t *out) {
    if (t == TANDEM_F32) *out = ncclFloat32;
    else if (t == TANDEM_BF16) *out = ncclBfloat16;
    else return tandem_fail(TANDEM_E_INVALID, "%s: element type %d: expected f32 or bf16", call, (int)t);
    return TANDEM_OK;
}

static tandem_status coll_stream(tandem_coll *c, tandem_stream *s, const char *call) {
    if (s->dev != c->dev)
        return tandem_fail(TANDEM_E_INVALID, "%s: the stream is on device %d, the communicator's rank %d on device %d",
                           call, s->dev->info.ordinal, c->rank, c->dev->info.ordinal);
    return TANDEM_OK;
}

tandem_status tandem_cuda_coll_all_reduce_sum(tandem_coll *c, tandem_stream *s, tandem_dptr send,
                                              tandem_dptr recv, size_t count, tandem_dtype type) {
    ncclDataType_t t = ncclFloat32;
    TANDEM_TRY(nccl_type(type, "all-reduce", &t));
    TANDEM_TRY(coll_stream(c, s, "all-reduce"));
    CUcontext prev;
    tandem_status st = enter(c->dev, &prev);
    if (st == TANDEM_OK) {
        ncclResult_t r = fn.ncclAllReduce((const void *)(uintptr_t)send, (void *)(uintptr_t)recv, count, t,
                                          ncclSum, c->comm, tandem_cuda_stream(s));
        if (r != ncclSuccess) {
            char ctx[96];
            snprintf(ctx, sizeof ctx, "rank %d of %d, %zu elements", c->rank, c->nranks, count);
            st = nccl_fail("ncclAllReduce", r, c->comm, ctx);
        }
    }
    leave(prev);
    return st;
}

tandem_status tandem_cuda_coll_broadcast(tandem_coll *c, tandem_stream *s, tandem_dptr send,
                                         tandem_dptr recv, size_t count, tandem_dtype type, int root) {
    ncclDataType_t t = ncclFloat32;
    TANDEM_TRY(nccl_type(type, "broadcast", &t));
    TANDEM_TRY(coll_stream(c, s, "broadcast"));
    CUcontext prev;
    tandem_status st = enter(c->dev, &prev);
    if (st == TANDEM_OK) {
        ncclResult_t r = fn.ncclBroadcast((const void *)(uintptr_t)send, (void *)(uintptr_t)recv, count, t, root,
                                          c->comm, tandem_cuda_stream(s));
        if (r != ncclSuccess) {
            char ctx[96];
            snprintf(ctx, sizeof ctx, "rank %d of %d, root %d, %zu elements", c->rank, c->nranks, root, count);
            st = nccl_fail("ncclBroadcast", r, c->comm, ctx);
        }
    }
    leave(prev);
    return st;
}

tandem_status tandem_cuda_coll_check(tandem_coll *c) {
    TANDEM_TRY(tandem_nccl_load(NULL));
    ncclResult_t async = ncclSuccess;
    ncclResult_t r = fn.ncclCommGetAsyncError(c->comm, &async);
    char ctx[64];
    snprintf(ctx, sizeof ctx, "rank %d of %d", c->rank, c->nranks);
    if (r != ncclSuccess) return nccl_fail("ncclCommGetAsyncError", r, c->comm, ctx);
    if (async != ncclSuccess && async != ncclInProgress) return nccl_fail("a collective", async, c->comm, ctx);
    return TANDEM_OK;
}
