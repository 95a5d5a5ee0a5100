/* emu_launch.c — the launch API: checks the geometry against CUDA's limits, runs the blocks on
 * worker OS threads (each with its fibers, dynamic shared memory and signal stack), catches
 * faults while a launch runs (handler installed for the launch only, then restored) and
 * checks every buffer's canary afterwards. Launches are serialised. */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "test/emu/emu_rt.h"

#if TANDEM_EMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#define SHMEM_LIMIT_DEFAULT (48u << 10)
#define SHMEM_LIMIT_MAX (227u << 10)

static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;
static tandem_emu_worker *workers[TANDEM_EMU_MAX_WORKERS];
static int threads_setting;                      /* 0: $TANDEM_EMU_THREADS or 1 */
static unsigned shmem_limit = SHMEM_LIMIT_DEFAULT;
static struct sigaction old_segv, old_bus;       /* valid while a launch runs */
static _Thread_local char last_err[TANDEM_EMU_ERR_MAX];

const char *tandem_emu_last_error(void) { return last_err; }

void tandem_emu_set_threads(int n) { __atomic_store_n(&threads_setting, n, __ATOMIC_RELAXED); }

void tandem_emu_set_shmem_limit(unsigned bytes) {
    __atomic_store_n(&shmem_limit, bytes < SHMEM_LIMIT_MAX ? bytes : SHMEM_LIMIT_MAX, __ATOMIC_RELAXED);
}

static int thread_count(void) {
    int n = __atomic_load_n(&threads_setting, __ATOMIC_RELAXED);
    if (n <= 0) {
        const char *e = getenv("TANDEM_EMU_THREADS");
        n = e ? atoi(e) : 1;
    }
    if (n < 1) n = 1;
    return n > TANDEM_EMU_MAX_WORKERS ? TANDEM_EMU_MAX_WORKERS : n;
}

int tandem_emu_launch_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_err, sizeof last_err, fmt, ap);
    va_end(ap);
    return 1;
}

/* CUDA's limits for compute capability 8.x / 9.x. */
static int check_dims(const char *name, const tandem_launch_dims *d) {
    if (!d) return tandem_emu_launch_error("kernel %s: launch without dimensions", name);
    const unsigned *g = d->grid, *b = d->block;
    if (!g[0] || !g[1] || !g[2] || !b[0] || !b[1] || !b[2])
        return tandem_emu_launch_error("kernel %s: launch: grid (%u,%u,%u) block (%u,%u,%u) has a zero "
                            "dimension",
                            name, g[0], g[1], g[2], b[0], b[1], b[2]);
    unsigned long long threads = (unsigned long long)b[0] * b[1] * b[2];
    if (threads > TANDEM_EMU_MAX_BLOCK_THREADS || b[2] > 64)
        return tandem_emu_launch_error("kernel %s: launch: block (%u,%u,%u) has %llu threads; limits are "
                            "1024 threads per block and 64 in z",
                            name, b[0], b[1], b[2], threads);
    if (g[0] > 0x7fffffffu || g[1] > 65535 || g[2] > 65535)
        return tandem_emu_launch_error("kernel %s: launch: grid (%u,%u,%u) exceeds (2^31-1, 65535, 65535)",
                            name, g[0], g[1], g[2]);
    unsigned lim = __atomic_load_n(&shmem_limit, __ATOMIC_RELAXED);
    if (d->shmem > lim)
        return tandem_emu_launch_error("kernel %s: launch: %u bytes of dynamic shared memory requested, "
                            "limit %u",
                            name, d->shmem, lim);
    return 0;
}

/* ---- faults -------------------------------------------------------------------------------- */

static void chain(int sig, siginfo_t *si, void *uc) {
    const struct sigaction *old = sig == SIGBUS ? &old_bus : &old_segv;
    if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
        old->sa_sigaction(sig, si, uc);
    } else if (!(old->sa_flags & SA_SIGINFO) && old->sa_handler != SIG_IGN &&
               old->sa_handler != SIG_DFL) {
        old->sa_handler(sig);
    } else {
        /* Not ours: let the faulting instruction run again under the default action. */
        signal(sig, SIG_DFL);
    }
}

static void on_fault(int sig, siginfo_t *si, void *ucv) {
    tandem_emu_worker *w = tandem_emu_tl_worker;
    if (!w || !w->in_block || !w->cur) {
        chain(sig, si, ucv); /* a fault outside emulated kernel code */
        return;
    }
    w->fault_addr = si->si_addr;
    w->fault_sig = sig;
    w->fault_fiber = w->cur;
    w->fault_write = -1;
#if defined(__x86_64__)
    if (sig == SIGSEGV) /* page-fault error code: bit 1 = write */
        w->fault_write = (((ucontext_t *)ucv)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#endif
#if TANDEM_EMU_ASAN
    __sanitizer_start_switch_fiber(NULL, w->os_stack_bottom, w->os_stack_size);
#endif
    siglongjmp(w->fault_jmp, 1);
}

static void install_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    /* NODEFER: the handler leaves by siglongjmp without restoring the signal mask. */
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
}

static void restore_handlers(void) {
    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
}

/* ---- workers ------------------------------------------------------------------------------- */

static void *worker_main(void *arg) {
    tandem_emu_worker *w = (tandem_emu_worker *)arg;
    tandem_emu_launch_state *l = w->launch;
    tandem_emu_worker *prev = tandem_emu_tl_worker;
    tandem_emu_tl_worker = w;
    stack_t alt, old;
    memset(&alt, 0, sizeof alt);
    alt.ss_sp = w->alt_stack;
    alt.ss_size = w->alt_size;
    int have_old = sigaltstack(&alt, &old) == 0;
    for (;;) {
        if (__atomic_load_n(&l->failed, __ATOMIC_ACQUIRE)) break;
        uint64_t b = __atomic_fetch_add(&l->next_block, 1, __ATOMIC_RELAXED);
        if (b >= l->nblocks) break;
        if (tandem_emu_run_block(w, b) != 0) break;
    }
    if (have_old) {
        if (old.ss_flags & SS_DISABLE) {
            memset(&old, 0, sizeof old);
            old.ss_flags = SS_DISABLE;
        }
        sigaltstack(&old, NULL);
    }
    tandem_emu_tl_worker = prev;
    return NULL;
}

static tandem_emu_worker *get_worker(int i, unsigned nthreads) {
    if (!workers[i]) {
        workers[i] = (tandem_emu_worker *)calloc(1, sizeof *workers[i]);
        if (!workers[i]) return NULL;
    }
    return tandem_emu_worker_prepare(workers[i], nthreads) == 0 ? workers[i] : NULL;
}

int tandem_emu_launch_fn(const char *name, tandem_emu_tramp tramp, const tandem_launch_dims *d,
                         const void *args) {
    if (!name) name = "(unnamed)";
    if (!tramp) return tandem_emu_launch_error("kernel %s: no kernel function", name);
    if (check_dims(name, d)) return 1;

    pthread_mutex_lock(&launch_lock);
    static tandem_emu_launch_state l; /* guarded by launch_lock; large error buffer */
    memset(&l, 0, sizeof l);
    l.name = name;
    l.tramp = tramp;
    l.args = args;
    l.dims = *d;
    l.nblocks = (uint64_t)d->grid[0] * d->grid[1] * d->grid[2];
    l.nthreads = d->block[0] * d->block[1] * d->block[2];

    int nw = thread_count();
    if ((uint64_t)nw > l.nblocks) nw = (int)l.nblocks;
    tandem_emu_worker *ws[TANDEM_EMU_MAX_WORKERS];
    for (int i = 0; i < nw; i++) {
        ws[i] = get_worker(i, l.nthreads);
        if (!ws[i]) {
            pthread_mutex_unlock(&launch_lock);
            return tandem_emu_launch_error("kernel %s: cannot map fiber stacks for %u threads", name, l.nthreads);
        }
        ws[i]->launch = &l;
    }

    install_handlers();
    pthread_t tids[TANDEM_EMU_MAX_WORKERS];
    int started = 0;
    for (int i = 1; i < nw; i++) {
        if (pthread_create(&tids[i], NULL, worker_main, ws[i]) != 0) break;
        started = i;
    }
    worker_main(ws[0]); /* the calling thread is worker 0 */
    for (int i = 1; i <= started; i++) pthread_join(tids[i], NULL);
    restore_handlers();

    char msg[TANDEM_EMU_ERR_MAX - 64];
    int damaged = tandem_emu_check_buffers(msg, sizeof msg); /* also repairs canaries */
    if (l.failed)
        snprintf(last_err, sizeof last_err, "%s", l.err);
    else if (damaged)
        snprintf(last_err, sizeof last_err, "kernel %s: %s", name, msg);
    else
        last_err[0] = '\0';
    int rc = l.failed || damaged;
    for (int i = 0; i < nw; i++) ws[i]->launch = NULL;
    pthread_mutex_unlock(&launch_lock);
    return rc;
}
