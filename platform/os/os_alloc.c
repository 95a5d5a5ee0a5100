/* os_alloc.c — counted heap allocation. Every allocation the runtime makes goes through
 * here (or is noted with tandem_alloc_note), so tests can read tandem_alloc_count() before
 * and after a region and prove that nothing was allocated after the plan was committed. */
#include "platform/os/os.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint_fast64_t alloc_count;

void tandem_alloc_note(void) {
    atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed);
}

uint64_t tandem_alloc_count(void) {
    return (uint64_t)atomic_load_explicit(&alloc_count, memory_order_relaxed);
}

void *tandem_malloc(size_t bytes) {
    tandem_alloc_note();
    /* malloc(0) may return NULL, which callers would read as out-of-memory. */
    return malloc(bytes ? bytes : 1);
}

void *tandem_calloc(size_t n, size_t size) {
    tandem_alloc_note();
    if (n == 0 || size == 0) n = size = 1;
    return calloc(n, size);
}

void *tandem_realloc(void *p, size_t bytes) {
    /* A realloc may move the block: it counts as an allocation. */
    tandem_alloc_note();
    return realloc(p, bytes ? bytes : 1);
}

void tandem_free(void *p) {
    free(p);
}

void *tandem_aligned_alloc(size_t alignment, size_t bytes) {
    /* posix_memalign wants a power of two that is a multiple of sizeof(void *). */
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    if ((alignment & (alignment - 1)) != 0) return NULL;
    tandem_alloc_note();
    void *p = NULL;
    if (posix_memalign(&p, alignment, bytes ? bytes : 1) != 0) return NULL;
    return p;
}

void tandem_aligned_free(void *p) {
    free(p);
}

char *tandem_strdup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = tandem_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}
