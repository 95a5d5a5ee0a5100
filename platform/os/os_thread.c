/* os_thread.c — threads, mutexes, condition variables (monotonic timed waits), the monotonic
 * clock and the CPU count. Lock errors are programming errors and assert. */
#include "platform/os/os.h"

#include <assert.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "platform/os/log.h"

tandem_status tandem_thread_start(tandem_thread *t, tandem_thread_fn fn, void *arg, const char *name) {
    assert(t && fn);
    int rc = pthread_create(&t->handle, NULL, fn, arg);
    if (rc != 0)
        return tandem_fail(rc == EAGAIN ? TANDEM_E_NOMEM : TANDEM_E_INTERNAL,
                           "pthread_create for thread '%s': %s", name ? name : "(unnamed)",
                           strerror(rc));
    if (name && name[0]) {
        /* Linux limits names to 15 bytes + NUL; the name only helps debuggers, so a failure
         * to set it is ignored. */
        char short_name[16];
        size_t n = strlen(name);
        if (n > sizeof short_name - 1) n = sizeof short_name - 1;
        memcpy(short_name, name, n);
        short_name[n] = '\0';
        (void)pthread_setname_np(t->handle, short_name);
    }
    return TANDEM_OK;
}

void *tandem_thread_join(tandem_thread *t) {
    void *ret = NULL;
    int rc = pthread_join(t->handle, &ret);
    assert(rc == 0);
    (void)rc;
    return ret;
}

void tandem_mutex_init(tandem_mutex *m) {
    int rc = pthread_mutex_init(&m->m, NULL);
    assert(rc == 0);
    (void)rc;
}

void tandem_mutex_destroy(tandem_mutex *m) {
    int rc = pthread_mutex_destroy(&m->m);
    assert(rc == 0);
    (void)rc;
}

void tandem_mutex_lock(tandem_mutex *m) {
    int rc = pthread_mutex_lock(&m->m);
    assert(rc == 0);
    (void)rc;
}

void tandem_mutex_unlock(tandem_mutex *m) {
    int rc = pthread_mutex_unlock(&m->m);
    assert(rc == 0);
    (void)rc;
}

void tandem_cond_init(tandem_cond *c) {
    /* Timed waits measure against the monotonic clock, so a wall-clock jump (NTP, suspend)
     * neither cuts a wait short nor stretches it. */
    pthread_condattr_t attr;
    int rc = pthread_condattr_init(&attr);
    assert(rc == 0);
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    assert(rc == 0);
    rc = pthread_cond_init(&c->c, &attr);
    assert(rc == 0);
    pthread_condattr_destroy(&attr);
    (void)rc;
}

void tandem_cond_destroy(tandem_cond *c) {
    int rc = pthread_cond_destroy(&c->c);
    assert(rc == 0);
    (void)rc;
}

void tandem_cond_wait(tandem_cond *c, tandem_mutex *m) {
    int rc = pthread_cond_wait(&c->c, &m->m);
    assert(rc == 0);
    (void)rc;
}

int tandem_cond_timedwait_ns(tandem_cond *c, tandem_mutex *m, uint64_t timeout_ns) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + timeout_ns % 1000000000ull;
    ts.tv_sec += (time_t)(timeout_ns / 1000000000ull + ns / 1000000000ull);
    ts.tv_nsec = (long)(ns % 1000000000ull);
    int rc = pthread_cond_timedwait(&c->c, &m->m, &ts);
    assert(rc == 0 || rc == ETIMEDOUT);
    return rc == ETIMEDOUT;
}

void tandem_cond_signal(tandem_cond *c) {
    pthread_cond_signal(&c->c);
}

void tandem_cond_broadcast(tandem_cond *c) {
    pthread_cond_broadcast(&c->c);
}

uint64_t tandem_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int tandem_cpu_count(void) {
    /* The affinity mask is what this process may actually use (containers, taskset). */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

size_t tandem_ram_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}
