/* emu_mem.c — guarded emulated device memory: every buffer ends at a PROT_NONE page and has
 * canary bytes before it; freed buffers stay PROT_NONE for a while (quarantine) so a use after
 * free faults too. Owns the registry of buffers, which also describes fault addresses. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test/emu/emu_rt.h"

#define FRONT_MIN 64                  /* canary bytes at least */
#define QUARANTINE_BYTES (256u << 20) /* freed mappings kept PROT_NONE, in virtual bytes */

typedef struct buf_rec {
    tandem_emu_guarded g;
    int freed;
    uint64_t seq; /* allocation order, to evict the oldest freed first */
} buf_rec;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static buf_rec *reg;
static size_t reg_n, reg_cap;
static size_t quarantined;
static uint64_t reg_seq;

size_t tandem_emu_page(void) {
    static size_t page;
    if (!page) page = (size_t)sysconf(_SC_PAGESIZE);
    return page;
}

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

int tandem_emu_guarded_map(tandem_emu_guarded *g, size_t cap) {
    size_t page = tandem_emu_page();
    size_t body = round_up(cap + FRONT_MIN, page);
    memset(g, 0, sizeof *g);
    g->map_len = body + 2 * page;
    void *m = mmap(NULL, g->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return -1;
    g->map = (char *)m;
    g->lo = g->map + page;
    g->hi = g->lo + body;
    if (mprotect(g->lo, body, PROT_READ | PROT_WRITE) != 0) {
        munmap(m, g->map_len);
        g->map = NULL;
        return -1;
    }
    tandem_emu_guarded_place(g, cap);
    return 0;
}

void tandem_emu_guarded_unmap(tandem_emu_guarded *g) {
    if (g->map) munmap(g->map, g->map_len);
    memset(g, 0, sizeof *g);
}

void tandem_emu_guarded_place(tandem_emu_guarded *g, size_t bytes) {
    g->bytes = bytes;
    g->data = g->hi - bytes;
    memset(g->lo, TANDEM_EMU_CANARY, (size_t)(g->data - g->lo));
    memset(g->data, 0xFF, bytes);
}

size_t tandem_emu_guarded_damage(tandem_emu_guarded *g, int repair) {
    size_t front = (size_t)(g->data - g->lo), dist = 0;
    /* Scan from the front so the reported byte is the farthest one: the underrun's extent. */
    for (size_t i = 0; i < front; i++) {
        if ((unsigned char)g->lo[i] != TANDEM_EMU_CANARY) {
            dist = front - i;
            break;
        }
    }
    if (dist && repair) memset(g->lo, TANDEM_EMU_CANARY, front);
    return dist;
}

/* ---- registry ------------------------------------------------------------------------------ */

static void evict_quarantine_locked(size_t need) {
    while (quarantined + need > QUARANTINE_BYTES) {
        size_t oldest = reg_n;
        for (size_t i = 0; i < reg_n; i++)
            if (reg[i].freed && (oldest == reg_n || reg[i].seq < reg[oldest].seq)) oldest = i;
        if (oldest == reg_n) return;
        quarantined -= reg[oldest].g.map_len;
        tandem_emu_guarded_unmap(&reg[oldest].g);
        reg[oldest] = reg[--reg_n];
    }
}

void *tandem_emu_buf_alloc(size_t bytes) {
    tandem_emu_guarded g;
    if (tandem_emu_guarded_map(&g, bytes) != 0) return NULL;
    pthread_mutex_lock(&reg_lock);
    if (reg_n == reg_cap) {
        size_t cap = reg_cap ? reg_cap * 2 : 64;
        buf_rec *r = (buf_rec *)realloc(reg, cap * sizeof *r);
        if (!r) {
            pthread_mutex_unlock(&reg_lock);
            tandem_emu_guarded_unmap(&g);
            return NULL;
        }
        reg = r;
        reg_cap = cap;
    }
    reg[reg_n].g = g;
    reg[reg_n].freed = 0;
    reg[reg_n].seq = reg_seq++;
    reg_n++;
    pthread_mutex_unlock(&reg_lock);
    return g.data;
}

void tandem_emu_buf_free(void *p) {
    if (!p) return;
    pthread_mutex_lock(&reg_lock);
    size_t i = 0;
    while (i < reg_n && (reg[i].freed || reg[i].g.data != (char *)p)) i++;
    if (i == reg_n) {
        pthread_mutex_unlock(&reg_lock);
        /* A programming error in a test or the stand-in driver: stop loudly. */
        fprintf(stderr, "tandem_emu_buf_free: %p is not the start of a live emulator buffer\n", p);
        abort();
    }
    tandem_emu_guarded *g = &reg[i].g;
    /* Keep the address range reserved but inaccessible, with its pages given back. */
    madvise(g->map, g->map_len, MADV_DONTNEED);
    mprotect(g->map, g->map_len, PROT_NONE);
    reg[i].freed = 1;
    reg[i].seq = reg_seq++;
    size_t len = g->map_len;
    evict_quarantine_locked(len);
    quarantined += len;
    pthread_mutex_unlock(&reg_lock);
}

size_t tandem_emu_buf_find(const void *p, void **base) {
    const char *c = (const char *)p;
    size_t size = 0;
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < reg_n; i++) {
        const tandem_emu_guarded *g = &reg[i].g;
        if (!reg[i].freed && c >= g->data && c < g->data + g->bytes) {
            size = g->bytes;
            if (base) *base = g->data;
            break;
        }
    }
    pthread_mutex_unlock(&reg_lock);
    if (!size && base) *base = NULL;
    return size;
}

/* "offset 4000 of buffer 0x... (4000 bytes): 0 bytes past its end" */
static void describe_in(const buf_rec *r, const char *a, char *buf, size_t cap) {
    const tandem_emu_guarded *g = &r->g;
    long long off = (long long)(a - g->data);
    const char *what = r->freed ? "freed buffer" : "buffer";
    if (r->freed)
        snprintf(buf, cap, "offset %lld of %s %p (%zu bytes): use after free", off, what,
                 (void *)g->data, g->bytes);
    else if (a >= g->data + g->bytes)
        snprintf(buf, cap, "offset %lld of %s %p (%zu bytes): %llu bytes past its end", off, what,
                 (void *)g->data, g->bytes, (unsigned long long)(a - (g->data + g->bytes)));
    else if (a < g->data)
        snprintf(buf, cap, "offset %lld of %s %p (%zu bytes): %llu bytes before its start", off,
                 what, (void *)g->data, g->bytes, (unsigned long long)(g->data - a));
    else
        snprintf(buf, cap, "offset %lld of %s %p (%zu bytes)", off, what, (void *)g->data, g->bytes);
}

void tandem_emu_describe_addr(const void *addr, char *buf, size_t cap) {
    const char *a = (const char *)addr;
    if ((uintptr_t)a < tandem_emu_page()) {
        snprintf(buf, cap, "near a null pointer");
        return;
    }
    pthread_mutex_lock(&reg_lock);
    const buf_rec *near = NULL;
    uintptr_t best = UINTPTR_MAX;
    for (size_t i = 0; i < reg_n; i++) {
        const tandem_emu_guarded *g = &reg[i].g;
        if (a >= g->map && a < g->map + g->map_len) {
            describe_in(&reg[i], a, buf, cap);
            pthread_mutex_unlock(&reg_lock);
            return;
        }
        uintptr_t d = a < g->data ? (uintptr_t)(g->data - a) : (uintptr_t)(a - (g->data + g->bytes));
        if (d < best) {
            best = d;
            near = &reg[i];
        }
    }
    if (near) {
        char in[200];
        describe_in(near, a, in, sizeof in);
        snprintf(buf, cap, "outside every emulator buffer; nearest: %s", in);
    } else {
        snprintf(buf, cap, "outside every emulator buffer (none allocated)");
    }
    pthread_mutex_unlock(&reg_lock);
}

int tandem_emu_check_buffers(char *buf, size_t cap) {
    int bad = 0;
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < reg_n; i++) {
        if (reg[i].freed) continue;
        size_t dist = tandem_emu_guarded_damage(&reg[i].g, 1);
        if (dist && !bad) {
            bad = 1;
            snprintf(buf, cap,
                     "out-of-bounds write before buffer %p (%zu bytes): canary damaged up to %zu bytes "
                     "before its start (found after the launch, so block and thread are unknown)",
                     (void *)reg[i].g.data, reg[i].g.bytes, dist);
        }
    }
    pthread_mutex_unlock(&reg_lock);
    return bad;
}
