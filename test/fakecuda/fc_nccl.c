/* fc_nccl.c — the stand-in libnccl.so.2 (test-only; docs/TESTING.md, docs/SCALING.md): the NCCL
 * calls of platform/cuda/nccl_api.h across the threads of one process (several devices) and
 * across processes on one machine, on top of the stand-in driver (linked against libcuda.so.1,
 * so device pointers and streams are checked in its tables and collectives run on its streams).
 *
 * Rendezvous: ncclGetUniqueId creates a POSIX shared-memory segment (/dev/shm/tandem_fcnccl_*)
 * and writes its name into the id; every rank maps it in ncclCommInitRank. The segment holds a
 * process-shared robust mutex and condition, each rank's pid, and per collective one descriptor
 * and one staging chunk (FN_CHUNK bytes) per rank. A collective is queued on the caller's
 * stream (tandem_fakecuda_submit: stream-ordered, hazards declared); when the stream reaches it,
 * the rank posts its descriptor and copies its data in, waits at a barrier, checks that every
 * rank posted the same call (sequence number, operation, count, type, op, root), reduces all
 * ranks' chunks in rank order (so every rank gets bit-identical sums), waits again, and so on
 * per chunk. Sums are in float, bf16 rounded once at the end (round to nearest even).
 *
 * Strict: an invalid call returns ncclInvalidArgument / ncclInvalidUsage at once; what only the
 * meeting of ranks shows (different counts, types, ops, roots, call order) fails the collective
 * on every rank: the comm's asynchronous error (ncclCommGetAsyncError) is set, the outputs are
 * left untouched, and the comm stays failed. A rank that died (its pid gone or a zombie), left
 * (destroy/abort) or did not arrive within TANDEM_FAKENCCL_TIMEOUT_MS (default 30000) fails the
 * others within one poll (FN_POLL_MS) or the timeout. Every error prints one
 * "fakecuda: error: <call>: <why>" line (counted by the stand-in driver), and its text is what
 * ncclGetLastError returns. Implemented: ncclSum on ncclFloat32 / ncclBfloat16 only.
 * TANDEM_FAKENCCL_VERSION overrides the version ncclGetVersion reports (the "too old" test).
 *
 * Owns: every comm ever created (kept until exit, marked dead when destroyed, so a stale comm
 * is reported instead of dereferenced) and the segment mappings of live comms. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test/fakecuda/fakecuda.h"

/* the NCCL entry points are the library's exports (everything else stays hidden) */
#pragma GCC visibility push(default)
#define TANDEM_NCCL_API_PROTOTYPES
#include "platform/cuda/nccl_api.h"
#pragma GCC visibility pop

#define FN_MAX_RANKS 16
#define FN_CHUNK (1u << 20) /* staging bytes per rank per round */
#define FN_POLL_MS 20
#define FN_MAGIC 0x6e63636cu

enum { FN_ALLREDUCE = 1, FN_BROADCAST = 2 };

typedef struct fn_desc {
    uint64_t seq; /* the comm's collective number, from 1 */
    int kind, dtype, op, root;
    uint64_t count;
} fn_desc;

typedef struct fn_shared {
    uint32_t magic;
    int nranks; /* set by the first rank to join */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int joined;
    int taken[FN_MAX_RANKS];
    pid_t pid[FN_MAX_RANKS];
    int left[FN_MAX_RANKS];        /* destroyed or aborted */
    uint64_t arrived[FN_MAX_RANKS]; /* barriers each rank entered */
    uint64_t barrier_gen;
    int barrier_count;
    int failed; /* ncclResult_t of a failure every rank sees, 0 = none */
    char why[384];
    fn_desc desc[FN_MAX_RANKS];
    unsigned char data[FN_MAX_RANKS][FN_CHUNK];
} fn_shared;

struct ncclComm {
    uint32_t magic;
    int alive;
    int rank, nranks;
    fn_shared *sh;
    char name[64];
    uint64_t seq;          /* collectives queued */
    atomic_int async;      /* ncclResult_t */
    atomic_int pending;    /* queued, not yet run */
    char last[512];
    struct ncclComm *next; /* registry */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ncclComm *registry;
static _Thread_local char thread_last[512];
static _Thread_local int group_depth;
static _Thread_local int report_errors = 1; /* 0: the stand-in driver already printed the line */
static _Thread_local struct ncclComm *group_joins[FN_MAX_RANKS * 4];
static _Thread_local int group_join_count;

/* ---- errors ---- */

static ncclResult_t fail(struct ncclComm *c, ncclResult_t r, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static ncclResult_t fail(struct ncclComm *c, ncclResult_t r, const char *call, const char *fmt, ...) {
    char msg[448];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (report_errors) tandem_fakecuda_report(call, "%s", msg);
    snprintf(thread_last, sizeof thread_last, "%.40s: %s", call, msg);
    if (c) snprintf(c->last, sizeof c->last, "%.40s: %s", call, msg);
    return r;
}

static long env_long(const char *name, long def) {
    const char *v = getenv(name);
    return v && v[0] ? strtol(v, NULL, 10) : def;
}

static uint64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* Whether process pid still runs (a zombie — killed, not yet reaped — does not). */
static int pid_alive(pid_t pid) {
    if (pid == getpid()) return 1;
    if (kill(pid, 0) != 0 && errno == ESRCH) return 0;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

/* ---- the shared segment ---- */

static void sh_lock(fn_shared *sh) {
    if (pthread_mutex_lock(&sh->mu) == EOWNERDEAD) {
        pthread_mutex_consistent(&sh->mu);
        if (!sh->failed) {
            sh->failed = ncclSystemError;
            snprintf(sh->why, sizeof sh->why, "a rank died while holding the communicator's lock");
        }
    }
}

static fn_shared *sh_map(const char *name, int create) {
    int fd = shm_open(name, create ? O_CREAT | O_EXCL | O_RDWR : O_RDWR, 0600);
    if (fd < 0) return NULL;
    if (create && ftruncate(fd, sizeof(fn_shared)) != 0) {
        close(fd);
        shm_unlink(name);
        return NULL;
    }
    void *p = mmap(NULL, sizeof(fn_shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

/* Wait (lock held) on the segment's condition for at most one poll, then check the others:
 * nonzero (sh->failed set) when one died or left, or when deadline passed. `waiting_for`
 * says which ranks matter: those with arrived[] below target (target 0: those not joined). */
static int sh_wait(struct ncclComm *c, uint64_t deadline, uint64_t target, const char *what) {
    fn_shared *sh = c->sh;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += FN_POLL_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    if (pthread_cond_timedwait(&sh->cv, &sh->mu, &ts) == EOWNERDEAD) pthread_mutex_consistent(&sh->mu);
    if (sh->failed) return 1;
    for (int r = 0; r < c->nranks; r++) {
        int missing = target ? sh->arrived[r] < target : !sh->taken[r];
        if (r == c->rank || !missing) continue;
        if (sh->taken[r] && sh->left[r]) {
            sh->failed = ncclRemoteError;
            snprintf(sh->why, sizeof sh->why,
                     "rank %d left the communicator (ncclCommDestroy/Abort) before %s", r, what);
        } else if (sh->taken[r] && !pid_alive(sh->pid[r])) {
            sh->failed = ncclRemoteError;
            snprintf(sh->why, sizeof sh->why, "rank %d (pid %d) died before %s", r, (int)sh->pid[r], what);
        } else if (now_ms() >= deadline) {
            sh->failed = ncclRemoteError;
            snprintf(sh->why, sizeof sh->why,
                     "rank %d did not reach %s within %ld ms (TANDEM_FAKENCCL_TIMEOUT_MS); every rank must "
                     "make the same calls in the same order on the same communicator",
                     r, what, env_long("TANDEM_FAKENCCL_TIMEOUT_MS", 30000));
        }
        if (sh->failed) {
            pthread_cond_broadcast(&sh->cv);
            return 1;
        }
    }
    return 0;
}

/* All ranks meet; nonzero (sh->failed) on failure. Lock held. */
static int sh_barrier(struct ncclComm *c, const char *what) {
    fn_shared *sh = c->sh;
    if (sh->failed) return 1;
    uint64_t gen = sh->barrier_gen;
    uint64_t target = ++sh->arrived[c->rank];
    if (++sh->barrier_count == c->nranks) {
        sh->barrier_count = 0;
        sh->barrier_gen++;
        pthread_cond_broadcast(&sh->cv);
        return 0;
    }
    uint64_t deadline = now_ms() + (uint64_t)env_long("TANDEM_FAKENCCL_TIMEOUT_MS", 30000);
    while (sh->barrier_gen == gen)
        if (sh_wait(c, deadline, target, what)) return 1;
    return 0;
}

/* ---- version, ids, errors ---- */

ncclResult_t ncclGetVersion(int *version) {
    if (!version) return fail(NULL, ncclInvalidArgument, "ncclGetVersion", "version is NULL");
    *version = (int)env_long("TANDEM_FAKENCCL_VERSION", 22809);
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    if (!id) return fail(NULL, ncclInvalidArgument, "ncclGetUniqueId", "uniqueId is NULL");
    static atomic_int counter;
    memset(id, 0, sizeof *id);
    char name[64];
    snprintf(name, sizeof name, "/tandem_fcnccl_%d_%d_%lx", (int)getpid(), atomic_fetch_add(&counter, 1),
             (unsigned long)now_ms());
    fn_shared *sh = sh_map(name, 1);
    if (!sh) return fail(NULL, ncclSystemError, "ncclGetUniqueId", "shm_open(%s): %s", name, strerror(errno));
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&sh->mu, &ma);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    pthread_cond_init(&sh->cv, &ca);
    sh->magic = FN_MAGIC;
    munmap(sh, sizeof *sh);
    memcpy(id->internal, name, strlen(name) + 1);
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

/* The live comm at c, else NULL (never dereferences a pointer that is not registered). */
static struct ncclComm *comm_of(ncclComm_t c) {
    pthread_mutex_lock(&reg_lock);
    struct ncclComm *p = registry;
    while (p && p != c) p = p->next;
    pthread_mutex_unlock(&reg_lock);
    return p && p->alive ? p : NULL;
}

const char *ncclGetLastError(ncclComm_t comm) {
    struct ncclComm *c = comm ? comm_of(comm) : NULL;
    return c && c->last[0] ? c->last : thread_last;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err) {
    struct ncclComm *c = comm_of(comm);
    if (!c) return fail(NULL, ncclInvalidArgument, "ncclCommGetAsyncError", "comm %p is not a live communicator", (void *)comm);
    if (!err) return fail(c, ncclInvalidArgument, "ncclCommGetAsyncError", "asyncError is NULL");
    *err = (ncclResult_t)atomic_load(&c->async);
    return ncclSuccess;
}

/* ---- communicators ---- */

/* Take rank in the segment named by id; the wait for the others is comm_wait_joined. */
static ncclResult_t comm_join(ncclComm_t *out, int nranks, const ncclUniqueId *id, int rank) {
    const char *call = "ncclCommInitRank";
    if (!out) return fail(NULL, ncclInvalidArgument, call, "comm is NULL");
    *out = NULL;
    if (nranks < 1 || nranks > FN_MAX_RANKS)
        return fail(NULL, ncclInvalidArgument, call, "nranks %d: the stand-in takes 1..%d", nranks, FN_MAX_RANKS);
    if (rank < 0 || rank >= nranks)
        return fail(NULL, ncclInvalidArgument, call, "rank %d: expected 0..%d (nranks %d)", rank, nranks - 1, nranks);
    char name[64];
    memcpy(name, id->internal, sizeof name);
    name[sizeof name - 1] = '\0';
    if (strncmp(name, "/tandem_fcnccl_", 15) != 0)
        return fail(NULL, ncclInvalidArgument, call, "the unique id was not made by ncclGetUniqueId");
    fn_shared *sh = sh_map(name, 0);
    if (!sh || sh->magic != FN_MAGIC)
        return fail(NULL, ncclInvalidUsage, call,
                    "unique id %s: no such rendezvous (already complete, or made on another machine)", name);
    struct ncclComm *c = calloc(1, sizeof *c);
    c->magic = FN_MAGIC;
    c->rank = rank;
    c->nranks = nranks;
    c->sh = sh;
    snprintf(c->name, sizeof c->name, "%s", name);
    ncclResult_t r = ncclSuccess;
    sh_lock(sh);
    if (sh->nranks == 0) sh->nranks = nranks;
    if (sh->nranks != nranks)
        r = fail(c, ncclInvalidUsage, call, "rank %d says nranks %d, an earlier rank said %d", rank, nranks, sh->nranks);
    else if (sh->taken[rank])
        r = fail(c, ncclInvalidUsage, call, "rank %d joined twice (pid %d and pid %d)", rank, (int)sh->pid[rank],
                 (int)getpid());
    if (r == ncclSuccess) {
        sh->taken[rank] = 1;
        sh->pid[rank] = getpid();
        if (++sh->joined == nranks) shm_unlink(name); /* complete: the name is no longer needed */
        pthread_cond_broadcast(&sh->cv);
    }
    pthread_mutex_unlock(&sh->mu);
    if (r != ncclSuccess) {
        munmap(sh, sizeof *sh);
        free(c);
        return r;
    }
    c->alive = 1;
    pthread_mutex_lock(&reg_lock);
    c->next = registry;
    registry = c;
    pthread_mutex_unlock(&reg_lock);
    *out = c;
    return ncclSuccess;
}

static ncclResult_t comm_wait_joined(struct ncclComm *c) {
    fn_shared *sh = c->sh;
    uint64_t deadline = now_ms() + (uint64_t)env_long("TANDEM_FAKENCCL_TIMEOUT_MS", 30000);
    ncclResult_t r = ncclSuccess;
    sh_lock(sh);
    while (sh->joined < c->nranks && !sh->failed)
        if (sh_wait(c, deadline, 0, "ncclCommInitRank")) break;
    if (sh->joined < c->nranks) {
        shm_unlink(c->name);
        r = fail(c, sh->failed ? (ncclResult_t)sh->failed : ncclRemoteError, "ncclCommInitRank", "rank %d: %s",
                 c->rank, sh->why);
    }
    pthread_mutex_unlock(&sh->mu);
    if (r != ncclSuccess) atomic_store(&c->async, r);
    return r;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    ncclResult_t r = comm_join(comm, nranks, &id, rank);
    if (r != ncclSuccess) return r;
    if (group_depth > 0) { /* joined now, waited for at ncclGroupEnd */
        if (group_join_count == (int)(sizeof group_joins / sizeof group_joins[0]))
            return fail(*comm, ncclInvalidUsage, "ncclCommInitRank", "too many inits in one group");
        group_joins[group_join_count++] = *comm;
        return ncclSuccess;
    }
    return comm_wait_joined(*comm);
}

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
    if (!comms || ndev < 1 || ndev > FN_MAX_RANKS)
        return fail(NULL, ncclInvalidArgument, "ncclCommInitAll", "comms %p, ndev %d: expected 1..%d", (void *)comms,
                    ndev, FN_MAX_RANKS);
    tandem_fakecuda_device_state st;
    for (int i = 0; i < ndev; i++) {
        int d = devlist ? devlist[i] : i;
        if (tandem_fakecuda_query_device(d, &st) != 0)
            return fail(NULL, ncclInvalidArgument, "ncclCommInitAll", "devlist[%d] = %d: no such device (%d devices)",
                        i, d, st.count);
        for (int j = 0; j < i; j++)
            if (devlist && devlist[j] == d)
                return fail(NULL, ncclInvalidUsage, "ncclCommInitAll", "device %d listed twice", d);
    }
    ncclUniqueId id;
    ncclResult_t r = ncclGetUniqueId(&id);
    for (int i = 0; r == ncclSuccess && i < ndev; i++) r = comm_join(&comms[i], ndev, &id, i);
    return r;
}

static ncclResult_t comm_leave(ncclComm_t comm, const char *call, int wait) {
    struct ncclComm *c = comm_of(comm);
    if (!c) return fail(NULL, ncclInvalidArgument, call, "comm %p is not a live communicator (destroyed twice?)",
                        (void *)comm);
    /* queued collectives finish first (each is bounded by the timeout) */
    while (wait && atomic_load(&c->pending) > 0) usleep(1000);
    c->alive = 0;
    /* collectives still queued (abort) find the comm failed and skip */
    int ok = ncclSuccess;
    atomic_compare_exchange_strong(&c->async, &ok, ncclRemoteError);
    sh_lock(c->sh);
    c->sh->left[c->rank] = 1;
    pthread_cond_broadcast(&c->sh->cv);
    pthread_mutex_unlock(&c->sh->mu);
    /* the mapping stays when operations may still run (abort); they find the comm dead */
    if (atomic_load(&c->pending) == 0) munmap(c->sh, sizeof *c->sh), c->sh = NULL;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) { return comm_leave(comm, "ncclCommDestroy", 1); }
ncclResult_t ncclCommAbort(ncclComm_t comm) { return comm_leave(comm, "ncclCommAbort", 0); }

ncclResult_t ncclGroupStart(void) {
    group_depth++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
    if (group_depth == 0) return fail(NULL, ncclInvalidUsage, "ncclGroupEnd", "no ncclGroupStart before it");
    if (--group_depth > 0) return ncclSuccess;
    ncclResult_t r = ncclSuccess;
    for (int i = 0; i < group_join_count; i++) {
        ncclResult_t ri = comm_wait_joined(group_joins[i]);
        if (r == ncclSuccess) r = ri;
    }
    group_join_count = 0;
    return r;
}

/* ---- collectives ---- */

typedef struct fn_call {
    struct ncclComm *c;
    fn_desc d;
    const unsigned char *send;
    unsigned char *recv;
    size_t esize;
} fn_call;

static const char *kind_name(int k) { return k == FN_ALLREDUCE ? "ncclAllReduce" : "ncclBroadcast"; }

static float bf16_to_f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t f_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* Sum of every rank's chunk (rank order) into out: n elements. */
static void reduce_chunk(const fn_shared *sh, int nranks, int dtype, size_t n, unsigned char *out) {
    for (size_t i = 0; i < n; i++) {
        float acc = 0.0f;
        for (int r = 0; r < nranks; r++) {
            if (dtype == ncclFloat32) {
                float v;
                memcpy(&v, sh->data[r] + 4 * i, 4);
                acc = r == 0 ? v : acc + v;
            } else {
                uint16_t h;
                memcpy(&h, sh->data[r] + 2 * i, 2);
                acc = r == 0 ? bf16_to_f(h) : acc + bf16_to_f(h);
            }
        }
        if (dtype == ncclFloat32) memcpy(out + 4 * i, &acc, 4);
        else {
            uint16_t h = f_to_bf16(acc);
            memcpy(out + 2 * i, &h, 2);
        }
    }
}

/* The first difference between rank r's descriptor and rank 0's, into why; 0 if none. */
static int desc_differs(const fn_desc *a, const fn_desc *b, int r, char *why, size_t cap) {
    if (a->seq != b->seq || a->kind != b->kind)
        snprintf(why, cap, "call order: rank 0's collective #%llu is %s, rank %d's #%llu is %s", (unsigned long long)a->seq,
                 kind_name(a->kind), r, (unsigned long long)b->seq, kind_name(b->kind));
    else if (a->count != b->count)
        snprintf(why, cap, "count: rank 0 passed %llu elements, rank %d passed %llu", (unsigned long long)a->count, r,
                 (unsigned long long)b->count);
    else if (a->dtype != b->dtype)
        snprintf(why, cap, "datatype: rank 0 passed %d, rank %d passed %d", a->dtype, r, b->dtype);
    else if (a->op != b->op)
        snprintf(why, cap, "reduction op: rank 0 passed %d, rank %d passed %d", a->op, r, b->op);
    else if (a->root != b->root)
        snprintf(why, cap, "root: rank 0 passed %d, rank %d passed %d", a->root, r, b->root);
    else
        return 0;
    return 1;
}

/* One collective, all chunks, lock of the segment held. Returns 0 or sets sh->failed. */
static int run_rounds(fn_call *k) {
    struct ncclComm *c = k->c;
    fn_shared *sh = c->sh;
    size_t per = FN_CHUNK / k->esize, total = (size_t)k->d.count;
    char what[96];
    for (size_t off = 0, round = 0; off < total || round == 0; off += per, round++) {
        size_t n = total - off < per ? total - off : per;
        if (round == 0) sh->desc[c->rank] = k->d;
        int contributes = k->d.kind == FN_ALLREDUCE || c->rank == k->d.root;
        if (contributes && n) memcpy(sh->data[c->rank], k->send + off * k->esize, n * k->esize);
        snprintf(what, sizeof what, "%s #%llu", kind_name(k->d.kind), (unsigned long long)k->d.seq);
        if (sh_barrier(c, what)) return 1;
        if (round == 0)
            for (int r = 1; r < c->nranks && !sh->failed; r++)
                if (desc_differs(&sh->desc[0], &sh->desc[r], r, sh->why, sizeof sh->why)) {
                    sh->failed = ncclInvalidUsage;
                    pthread_cond_broadcast(&sh->cv);
                }
        if (sh->failed) return 1;
        /* the outputs are written only once every chunk of every rank is known good: round 0
           checked the descriptors, so from here a failure is a rank lost mid-way */
        if (k->d.kind == FN_ALLREDUCE) reduce_chunk(sh, c->nranks, k->d.dtype, n, k->recv + off * k->esize);
        else if (n) memcpy(k->recv + off * k->esize, sh->data[k->d.root], n * k->esize);
        if (sh_barrier(c, what)) return 1;
    }
    return 0;
}

static void run_collective(void *arg) {
    fn_call *k = arg;
    struct ncclComm *c = k->c;
    int depth = tandem_fakecuda_unlock_all(); /* the others' streams must run meanwhile */
    if (atomic_load(&c->async) == ncclSuccess && c->sh) {
        sh_lock(c->sh);
        if (run_rounds(k)) {
            ncclResult_t r = (ncclResult_t)c->sh->failed;
            char why[384];
            snprintf(why, sizeof why, "%s", c->sh->why);
            pthread_mutex_unlock(&c->sh->mu);
            atomic_store(&c->async, r);
            tandem_fakecuda_relock(depth);
            fail(c, r, kind_name(k->d.kind), "rank %d of %d, collective #%llu: %s", c->rank, c->nranks,
                 (unsigned long long)k->d.seq, why);
            atomic_fetch_sub(&c->pending, 1);
            return;
        }
        pthread_mutex_unlock(&c->sh->mu);
    }
    tandem_fakecuda_relock(depth);
    atomic_fetch_sub(&c->pending, 1);
}

static ncclResult_t enqueue(int kind, const void *send, void *recv, size_t count, ncclDataType_t dtype,
                            ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
    const char *call = kind_name(kind);
    struct ncclComm *c = comm_of(comm);
    if (!c) return fail(NULL, ncclInvalidArgument, call, "comm %p is not a live communicator", (void *)comm);
    int async = atomic_load(&c->async);
    if (async != ncclSuccess)
        return fail(c, (ncclResult_t)async, call, "the communicator failed earlier: %s", c->last);
    if (dtype != ncclFloat32 && dtype != ncclBfloat16)
        return fail(c, ncclInvalidArgument, call, "datatype %d: the stand-in implements ncclFloat32 (7) and ncclBfloat16 (9)",
                    (int)dtype);
    if (kind == FN_ALLREDUCE && op != ncclSum)
        return fail(c, ncclInvalidArgument, call, "reduction op %d: the stand-in implements ncclSum (0) only", (int)op);
    if (root < 0 || root >= c->nranks)
        return fail(c, ncclInvalidArgument, call, "root %d: expected 0..%d", root, c->nranks - 1);
    size_t esize = dtype == ncclFloat32 ? 4 : 2;
    if (count > SIZE_MAX / esize) return fail(c, ncclInvalidArgument, call, "count %zu overflows", count);
    int need_send = kind == FN_ALLREDUCE || c->rank == root;
    ncclResult_t r = ncclSuccess;
    tandem_fakecuda_lock();
    report_errors = 0;
    if (tandem_fakecuda_check_stream(call, stream) != 0)
        r = fail(c, ncclInvalidArgument, call, "stream %p is not a live stream of the current context", (void *)stream);
    else if (count && need_send && tandem_fakecuda_check_device_range(call, "sendbuff", send, count * esize) != 0)
        r = fail(c, ncclInvalidArgument, call, "sendbuff %p (%zu bytes) is not device memory of the current context",
                 send, count * esize);
    else if (count && tandem_fakecuda_check_device_range(call, "recvbuff", recv, count * esize) != 0)
        r = fail(c, ncclInvalidArgument, call, "recvbuff %p (%zu bytes) is not device memory of the current context",
                 recv, count * esize);
    report_errors = 1;
    if (r == ncclSuccess) {
        fn_call *k = calloc(1, sizeof *k);
        k->c = c;
        k->d.seq = ++c->seq;
        k->d.kind = kind;
        k->d.count = count;
        k->d.dtype = (int)dtype;
        k->d.op = kind == FN_ALLREDUCE ? (int)op : -1;
        k->d.root = kind == FN_BROADCAST ? root : -1;
        k->send = send;
        k->recv = recv;
        k->esize = esize;
        fc_access acc[2];
        int na = 0;
        if (count && need_send) acc[na++] = (fc_access){(uintptr_t)send, count * esize, 0, "sendbuff"};
        if (count) acc[na++] = (fc_access){(uintptr_t)recv, count * esize, 1, "recvbuff"};
        char desc[96];
        snprintf(desc, sizeof desc, "%s rank %d #%llu", call, c->rank, (unsigned long long)k->d.seq);
        atomic_fetch_add(&c->pending, 1);
        tandem_fakecuda_submit(stream, desc, run_collective, k, acc, na);
    }
    tandem_fakecuda_unlock();
    return r;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
    return enqueue(FN_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
    return enqueue(FN_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}
