/* emu_sched.c — runs one block: its CUDA threads as fibers, switched cooperatively. A fiber
 * runs until it exits or waits (barrier, warp operation); when none can run, pending warp
 * operations are exchanged, else the barrier is released — after checking that every thread
 * of the block reached the same __syncthreads. Also: the thread context, dynamic shared
 * memory, and turning a caught fault into an error naming the thread. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "test/emu/emu_rt.h"

#if TANDEM_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define STACK_SIZE ((size_t)256 << 10) /* instrumented frames are larger */
#else
#define STACK_SIZE ((size_t)128 << 10)
#endif
#define ALT_STACK_SIZE ((size_t)256 << 10)
#define SHM_CAP ((size_t)227 << 10) /* the largest dynamic shared memory any GPU offers */

_Thread_local tandem_emu_worker *tandem_emu_tl_worker;

size_t tandem_emu_stack_size(void) { return STACK_SIZE; }

static size_t stack_stride(void) { return tandem_emu_page() + STACK_SIZE; }

int tandem_emu_worker_prepare(tandem_emu_worker *w, unsigned nthreads) {
    size_t page = tandem_emu_page();
    if (!w->fibers) {
        w->fibers = (tandem_emu_fiber *)calloc(TANDEM_EMU_MAX_BLOCK_THREADS, sizeof *w->fibers);
        if (!w->fibers) return -1;
    }
    if (!w->stacks) {
        /* Reserved once for the largest block; pages are touched only as stacks are used. */
        w->stacks_len = (size_t)TANDEM_EMU_MAX_BLOCK_THREADS * stack_stride();
        void *m = mmap(NULL, w->stacks_len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return -1;
        w->stacks = (char *)m;
    }
    while (w->fibers_ready < nthreads) {
        char *g = w->stacks + (size_t)w->fibers_ready * stack_stride();
        if (mprotect(g, page, PROT_NONE) != 0) return -1; /* guard below each stack */
        w->fibers[w->fibers_ready].stack_lo = g + page;
        w->fibers_ready++;
    }
    if (!w->shm.map && tandem_emu_guarded_map(&w->shm, SHM_CAP) != 0) return -1;
    if (!w->alt_stack) {
        void *m = mmap(NULL, ALT_STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (m == MAP_FAILED) return -1;
        w->alt_stack = (char *)m;
        w->alt_size = ALT_STACK_SIZE;
    }
    return 0;
}

/* ---- what kernel code calls ---------------------------------------------------------------- */

static tandem_emu_worker *current_worker(const char *what) {
    tandem_emu_worker *w = tandem_emu_tl_worker;
    if (!w || !w->cur) {
        /* A kernel function called directly instead of through a launch. */
        fprintf(stderr, "tandem emulator: %s used outside an emulated launch\n", what);
        abort();
    }
    return w;
}

const tandem_emu_thread_ctx *tandem_emu_ctx(void) {
    return &current_worker("threadIdx/blockIdx/blockDim/gridDim")->cur->ctx;
}

void *tandem_emu_dynamic_shared(void) {
    /* With shmem = 0 this points at the guard page: any use faults and is reported. */
    return current_worker("dynamic shared memory")->shm.data;
}

void tandem_emu_syncthreads_at(const char *file, int line) {
    tandem_emu_worker *w = current_worker("__syncthreads");
    tandem_emu_fiber *f = w->cur;
    /* The source location tells one __syncthreads from another in the same kernel. */
    f->site_file = file;
    f->site_line = line;
    f->state = TANDEM_EMU_F_BARRIER;
    tandem_emu_yield(w, f, 0);
}

void tandem_emu_syncthreads(void) { tandem_emu_syncthreads_at("(unknown)", 0); }

static int same_site(const tandem_emu_fiber *a, const tandem_emu_fiber *b) {
    return a->site_line == b->site_line &&
           (a->site_file == b->site_file || strcmp(a->site_file, b->site_file) == 0);
}

/* ---- switching ----------------------------------------------------------------------------- */

void tandem_emu_yield(tandem_emu_worker *w, tandem_emu_fiber *f, int final) {
#if TANDEM_EMU_ASAN
    __sanitizer_start_switch_fiber(final ? NULL : &f->asan_fake_stack, w->os_stack_bottom,
                                   w->os_stack_size);
#else
    (void)final;
#endif
    tandem_emu_fctx_switch(&f->fctx, &w->sched);
#if TANDEM_EMU_ASAN
    __sanitizer_finish_switch_fiber(f->asan_fake_stack, &w->os_stack_bottom, &w->os_stack_size);
#endif
}

void tandem_emu_fiber_entry(void) {
    tandem_emu_worker *w = tandem_emu_tl_worker;
#if TANDEM_EMU_ASAN
    __sanitizer_finish_switch_fiber(NULL, &w->os_stack_bottom, &w->os_stack_size);
#endif
    tandem_emu_fiber *f = w->cur;
    w->launch->tramp(w->launch->args);
    f->state = TANDEM_EMU_F_EXITED;
    tandem_emu_yield(w, f, 1);
    abort(); /* an exited fiber is never resumed */
}

static void run_fiber(tandem_emu_worker *w, tandem_emu_fiber *f) {
    w->cur = f;
    f->started = 1;
#if TANDEM_EMU_ASAN
    __sanitizer_start_switch_fiber(&w->sched_fake_stack, f->stack_lo, STACK_SIZE);
#endif
    tandem_emu_fctx_switch(&w->sched, &f->fctx);
#if TANDEM_EMU_ASAN
    __sanitizer_finish_switch_fiber(w->sched_fake_stack, NULL, NULL);
#endif
    w->cur = NULL;
}

/* ---- errors -------------------------------------------------------------------------------- */

void tandem_emu_fail(tandem_emu_worker *w, const tandem_emu_fiber *f, const char *fmt, ...) {
    tandem_emu_launch_state *l = w->launch;
    int expected = 0;
    if (!__atomic_compare_exchange_n(&l->failed, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return; /* the first error wins */
    char msg[TANDEM_EMU_ERR_MAX - 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const tandem_emu_dim3 *b = &w->block_idx;
    if (f)
        snprintf(l->err, sizeof l->err, "kernel %s block (%u,%u,%u) thread (%u,%u,%u): %s", l->name,
                 b->x, b->y, b->z, f->ctx.thread_idx.x, f->ctx.thread_idx.y, f->ctx.thread_idx.z,
                 msg);
    else
        snprintf(l->err, sizeof l->err, "kernel %s block (%u,%u,%u): %s", l->name, b->x, b->y, b->z,
                 msg);
}

#define TID3(f) (f)->ctx.thread_idx.x, (f)->ctx.thread_idx.y, (f)->ctx.thread_idx.z

/* All live threads wait at a barrier: release them if they all wait at the same one and none
 * has exited; otherwise the barrier is divergent. */
static int resolve_barrier(tandem_emu_worker *w, unsigned live) {
    const tandem_emu_fiber *first = NULL, *other = NULL, *exited = NULL;
    for (unsigned i = 0; i < w->nthreads; i++) {
        const tandem_emu_fiber *f = &w->fibers[i];
        if (f->state == TANDEM_EMU_F_BARRIER) {
            if (!first) first = f;
            else if (!other && !same_site(f, first)) other = f;
        } else if (f->state == TANDEM_EMU_F_EXITED && !exited) {
            exited = f;
        }
    }
    if (exited) {
        tandem_emu_fail(w, exited,
                        "divergent __syncthreads: this thread exited without reaching the "
                        "__syncthreads at %s:%d at which %u other thread(s) of the block wait, "
                        "e.g. thread (%u,%u,%u)",
                        first->site_file, first->site_line, live, TID3(first));
        return -1;
    }
    if (other) {
        tandem_emu_fail(w, other,
                        "divergent __syncthreads: this thread waits at the __syncthreads at "
                        "%s:%d while thread (%u,%u,%u) waits at a different one at %s:%d",
                        other->site_file, other->site_line, TID3(first), first->site_file,
                        first->site_line);
        return -1;
    }
    for (unsigned i = 0; i < w->nthreads; i++)
        if (w->fibers[i].state == TANDEM_EMU_F_BARRIER) w->fibers[i].state = TANDEM_EMU_F_READY;
    return 0;
}

/* Between two waits the fibers run one after another, alternately in ascending and descending
 * thread order (starting direction by block parity): a kernel that reads another thread's
 * shared-memory write without a barrier between them then sees stale data in some block,
 * whichever of the two threads comes first. */
static int schedule(tandem_emu_worker *w, uint64_t b) {
    unsigned n = w->nthreads, live = n;
    for (uint64_t pass = b;; pass++) {
        int down = (int)(pass & 1);
        for (unsigned k = 0; k < n; k++) {
            tandem_emu_fiber *f = &w->fibers[down ? n - 1 - k : k];
            if (f->state != TANDEM_EMU_F_READY) continue;
            run_fiber(w, f);
            if (f->state == TANDEM_EMU_F_FAILED) return -1;
            if (f->state == TANDEM_EMU_F_EXITED) live--;
        }
        if (live == 0) return 0;
        int r = tandem_emu_resolve_warps(w);
        if (r < 0) return -1;
        if (r == 0 && resolve_barrier(w, live) != 0) return -1;
    }
}

/* ---- faults -------------------------------------------------------------------------------- */

static void unpoison_stacks(tandem_emu_worker *w) {
#if TANDEM_EMU_ASAN
    /* Abandoned fibers leave their frames' redzones poisoned; the stacks are reused. */
    for (unsigned i = 0; i < w->nthreads; i++)
        if (w->fibers[i].started) __asan_unpoison_memory_region(w->fibers[i].stack_lo, STACK_SIZE);
#else
    (void)w;
#endif
}

/* Returns 1 when the fault is a stack overflow (it hit a fiber stack's guard page). */
static int describe_fault(tandem_emu_worker *w, char *buf, size_t cap) {
    const char *a = (const char *)w->fault_addr;
    if (a >= w->stacks && a < w->stacks + w->stacks_len) {
        size_t off = (size_t)(a - w->stacks) % stack_stride();
        if (off < tandem_emu_page()) {
            snprintf(buf, cap, "each emulated thread has a %zu KiB stack", STACK_SIZE >> 10);
            return 1;
        }
        snprintf(buf, cap, "inside the stack of another emulated thread");
        return 0;
    }
    const tandem_emu_guarded *s = &w->shm;
    if (a >= s->map && a < s->map + s->map_len) {
        snprintf(buf, cap, "offset %lld of dynamic shared memory (%zu bytes requested at launch)",
                 (long long)(a - s->data), s->bytes);
        return 0;
    }
    tandem_emu_describe_addr(a, buf, cap);
    return 0;
}

static int fault_landed(tandem_emu_worker *w) {
#if TANDEM_EMU_ASAN
    __sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
    w->in_block = 0;
    w->cur = NULL;
    w->fault_fiber->state = TANDEM_EMU_F_FAILED;
    char where[512];
    int overflow = describe_fault(w, where, sizeof where);
    const char *kind = w->fault_write > 0 ? "write" : w->fault_write == 0 ? "read" : "access";
    tandem_emu_fail(w, w->fault_fiber, "%s%s at %p (%s): %s", overflow ? "stack overflow: " : "out-of-bounds ",
                    kind, w->fault_addr, w->fault_sig == SIGBUS ? "SIGBUS" : "SIGSEGV", where);
    unpoison_stacks(w);
    return -1;
}

/* ---- one block ----------------------------------------------------------------------------- */

static void setup_block(tandem_emu_worker *w, uint64_t b) {
    const tandem_emu_launch_state *l = w->launch;
    const tandem_launch_dims *d = &l->dims;
    tandem_emu_dim3 bi, bd, gd;
    bi.x = (unsigned)(b % d->grid[0]);
    bi.y = (unsigned)(b / d->grid[0] % d->grid[1]);
    bi.z = (unsigned)(b / ((uint64_t)d->grid[0] * d->grid[1]));
    bd.x = d->block[0], bd.y = d->block[1], bd.z = d->block[2];
    gd.x = d->grid[0], gd.y = d->grid[1], gd.z = d->grid[2];
    w->block_idx = bi;
    w->nthreads = l->nthreads;
    tandem_emu_guarded_place(&w->shm, d->shmem); /* poisoned 0xFF before every block */
    for (unsigned i = 0; i < l->nthreads; i++) {
        tandem_emu_fiber *f = &w->fibers[i];
        f->ctx.thread_idx.x = i % bd.x;
        f->ctx.thread_idx.y = i / bd.x % bd.y;
        f->ctx.thread_idx.z = i / (bd.x * bd.y);
        f->ctx.block_idx = bi;
        f->ctx.block_dim = bd;
        f->ctx.grid_dim = gd;
        f->tid = i;
        f->state = TANDEM_EMU_F_READY;
        f->started = 0;
        f->asan_fake_stack = NULL;
        tandem_emu_fctx_make(&f->fctx, f->stack_lo, STACK_SIZE);
    }
}

int tandem_emu_run_block(tandem_emu_worker *w, uint64_t b) {
    setup_block(w, b);
    /* A fault in a fiber long-jumps back here from the signal handler (emu_launch.c). */
    if (sigsetjmp(w->fault_jmp, 0)) return fault_landed(w);
    w->in_block = 1;
    int rc = schedule(w, b);
    w->in_block = 0;
    if (rc != 0) {
        unpoison_stacks(w);
        return -1;
    }
    size_t dmg = tandem_emu_guarded_damage(&w->shm, 1);
    if (dmg) {
        tandem_emu_fail(w, NULL,
                        "out-of-bounds write up to %zu byte(s) before the start of dynamic shared "
                        "memory (%zu bytes requested at launch)",
                        dmg, w->shm.bytes);
        return -1;
    }
    return 0;
}
