/* host_pool.c — the host backend's worker pool (host_pool.h).
 *
 * One loop at a time per pool. The caller publishes a job (body, context, range, number of
 * parts) under the pool's mutex, bumps the generation and wakes the workers; then it takes
 * parts itself. Parts are claimed from one 64-bit atomic holding (generation << 32 | next
 * part), so a worker that wakes late, after its job is finished and a newer one published,
 * fails its claim instead of running the newer job's parts with the old job's body. The
 * caller returns once every part is done (it never waits for a worker merely to wake up:
 * on a loaded machine a descheduled worker costs nothing but its share of the parts).
 * More parts than threads (PARTS_PER_THREAD) let whoever is running take the parts of a
 * thread that is not.
 */
#include "platform/host/host_pool.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "platform/os/settings.h"

enum { POOL_MAX_THREADS = TANDEM_MAX_HOST_THREADS, PARTS_PER_THREAD = 4 };

struct tandem_host_pool {
    int threads;
    int fine; /* tests: ignore the grain (tandem_host_pool_set_fine) */
    int started; /* workers running */
    tandem_thread *workers;
    tandem_mutex m;
    tandem_cond wake; /* workers: a new generation or stop */
    tandem_cond done; /* the caller: the last part finished */
    tandem_mutex dispatch; /* held by the caller of the running loop */
    uint64_t generation;   /* under m */
    int stop;              /* under m */
    /* the job of `generation` (written under m before the generation is bumped) */
    tandem_host_range_fn fn;
    void *ctx;
    int64_t n;
    int parts;
    _Atomic uint64_t claim;   /* generation << 32 | next part */
    atomic_int remaining;     /* parts of the current job not finished */
};

static _Thread_local tandem_host_pool *entered;

int tandem_host_pool_threads(const tandem_host_pool *p) { return p ? p->threads : 1; }

void tandem_host_pool_set_fine(tandem_host_pool *p, int fine) { p->fine = fine != 0; }

tandem_host_pool *tandem_host_pool_enter(tandem_host_pool *p) {
    tandem_host_pool *prev = entered;
    entered = p;
    return prev;
}

void tandem_host_pool_leave(tandem_host_pool *previous) { entered = previous; }

int tandem_host_parallel_threads(void) { return entered ? entered->threads : 1; }

/* Part i of n split into `parts` near-equal contiguous ranges. */
static void part_range(int64_t n, int parts, int i, int64_t *b, int64_t *e) {
    *b = n * i / parts;
    *e = n * (i + 1) / parts;
}

/* Claims and runs parts of generation gen until none is left; returns when the claim fails. */
static void run_parts(tandem_host_pool *p, uint64_t gen, tandem_host_range_fn fn, void *ctx,
                      int64_t n, int parts) {
    tandem_host_pool *prev = tandem_host_pool_enter(NULL); /* nested loops run serially */
    uint64_t c = atomic_load(&p->claim);
    for (;;) {
        if ((c >> 32) != (gen & 0xffffffffu) || (int)(c & 0xffffffffu) >= parts) break;
        if (!atomic_compare_exchange_weak(&p->claim, &c, c + 1)) continue;
        int64_t b, e;
        part_range(n, parts, (int)(c & 0xffffffffu), &b, &e);
        fn(ctx, b, e);
        if (atomic_fetch_sub(&p->remaining, 1) == 1) {
            tandem_mutex_lock(&p->m);
            tandem_cond_signal(&p->done);
            tandem_mutex_unlock(&p->m);
        }
        c = atomic_load(&p->claim);
    }
    tandem_host_pool_leave(prev);
}

static void *worker_main(void *arg) {
    tandem_host_pool *p = arg;
    uint64_t seen = 0;
    tandem_mutex_lock(&p->m);
    for (;;) {
        while (!p->stop && p->generation == seen) tandem_cond_wait(&p->wake, &p->m);
        if (p->stop) break;
        seen = p->generation;
        tandem_host_range_fn fn = p->fn;
        void *ctx = p->ctx;
        int64_t n = p->n;
        int parts = p->parts;
        tandem_mutex_unlock(&p->m);
        run_parts(p, seen, fn, ctx, n, parts);
        tandem_mutex_lock(&p->m);
    }
    tandem_mutex_unlock(&p->m);
    return NULL;
}

int tandem_host_pool_default_threads(void) {
    int threads = tandem_settings_host_threads(); /* validated when set */
    if (threads > 0) return threads;
    threads = tandem_cpu_count();
    return threads < POOL_MAX_THREADS ? threads : POOL_MAX_THREADS;
}

tandem_status tandem_host_pool_create(int threads, const char *name, tandem_host_pool **out) {
    *out = NULL;
    if (threads < 1 || threads > POOL_MAX_THREADS)
        return tandem_fail(TANDEM_E_INVALID, "host pool '%s': %d threads; expected 1 to %d",
                           name ? name : "", threads, POOL_MAX_THREADS);
    tandem_host_pool *p = tandem_calloc(1, sizeof *p);
    tandem_thread *w = threads > 1 ? tandem_calloc((size_t)threads - 1, sizeof *w) : NULL;
    if (!p || (threads > 1 && !w)) {
        tandem_free(p);
        tandem_free(w);
        return tandem_fail(TANDEM_E_NOMEM, "host pool '%s': out of memory for %d threads",
                           name ? name : "", threads);
    }
    p->threads = threads;
    p->workers = w;
    tandem_mutex_init(&p->m);
    tandem_mutex_init(&p->dispatch);
    tandem_cond_init(&p->wake);
    tandem_cond_init(&p->done);
    atomic_init(&p->claim, 0);
    atomic_init(&p->remaining, 0);
    for (int i = 0; i < threads - 1; i++) {
        char tname[16];
        snprintf(tname, sizeof tname, "%.10s-w%d", name ? name : "pool", i + 1);
        tandem_status st = tandem_thread_start(&w[i], worker_main, p, tname);
        if (st != TANDEM_OK) {
            tandem_host_pool_destroy(p);
            return st;
        }
        p->started++;
    }
    *out = p;
    return TANDEM_OK;
}

void tandem_host_pool_destroy(tandem_host_pool *p) {
    if (!p) return;
    tandem_mutex_lock(&p->m);
    p->stop = 1;
    tandem_cond_broadcast(&p->wake);
    tandem_mutex_unlock(&p->m);
    for (int i = 0; i < p->started; i++) tandem_thread_join(&p->workers[i]);
    tandem_cond_destroy(&p->wake);
    tandem_cond_destroy(&p->done);
    tandem_mutex_destroy(&p->dispatch);
    tandem_mutex_destroy(&p->m);
    tandem_free(p->workers);
    tandem_free(p);
}

void tandem_host_parallel_for(int64_t n, int64_t grain, tandem_host_range_fn fn, void *ctx) {
    if (n <= 0) return;
    tandem_host_pool *p = entered;
    if (grain < 1 || (p && p->fine)) grain = 1;
    if (!p || p->threads < 2 || n <= grain ||
        pthread_mutex_trylock(&p->dispatch.m) != 0) { /* busy: another thread's loop */
        tandem_host_pool *prev = tandem_host_pool_enter(NULL); /* nested loops: serial too */
        fn(ctx, 0, n);
        tandem_host_pool_leave(prev);
        return;
    }
    int64_t most = (n + grain - 1) / grain, want = (int64_t)p->threads * PARTS_PER_THREAD;
    int parts = (int)(most < want ? most : want);
    tandem_mutex_lock(&p->m);
    uint64_t gen = ++p->generation;
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->parts = parts;
    atomic_store(&p->remaining, parts);
    atomic_store(&p->claim, (gen & 0xffffffffu) << 32);
    tandem_cond_broadcast(&p->wake);
    tandem_mutex_unlock(&p->m);

    run_parts(p, gen, fn, ctx, n, parts);

    if (atomic_load(&p->remaining) > 0) {
        tandem_mutex_lock(&p->m);
        while (atomic_load(&p->remaining) > 0) tandem_cond_wait(&p->done, &p->m);
        tandem_mutex_unlock(&p->m);
    }
    tandem_mutex_unlock(&p->dispatch);
}
