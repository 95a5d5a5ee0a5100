/* fc_hazard.c — stand-in driver: the hazard detector.
 *
 * Every queued op declares the byte ranges of device (and pinned host) memory it reads and
 * writes (copies: source and destination; kernels: fc_access.c; cuBLASLt: A, B, C, bias, D and
 * the workspace). The detector keeps, per byte range, the last writer and the latest readers
 * (stream slot, the op's epoch in its stream's vector clock, and the op's description). An op
 * on stream s with clock v conflicts with an earlier access by op a on another stream t when
 * v[t] < epoch(a) — nothing (event wait, host synchronisation) orders a before it — and one of
 * the two writes. Each conflict is reported once per op as
 *   fakecuda: error: hazard: <op a> on stream t <reads|writes> [range] ...; <op> on stream s ...
 * Ranges freed with cuMemFree / cuMemFreeHost are forgotten (those calls synchronise). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/fakecuda/fakecuda.h"

#define FC_READERS 4

typedef struct fc_who {
    int slot;        /* -1: none */
    uint32_t epoch;
    int device;
    char op[120];
} fc_who;

typedef struct seg {
    uintptr_t lo, hi;
    fc_who w;
    fc_who r[FC_READERS];
} seg;

static seg *segs;
static size_t nseg, capseg;

static void who_none(fc_who *w) {
    memset(w, 0, sizeof *w);
    w->slot = -1;
}

static void seg_init(seg *s, uintptr_t lo, uintptr_t hi) {
    s->lo = lo;
    s->hi = hi;
    who_none(&s->w);
    for (int i = 0; i < FC_READERS; i++) who_none(&s->r[i]);
}

/* First segment with hi > p. */
static size_t first_after(uintptr_t p) {
    size_t lo = 0, hi = nseg;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (segs[mid].hi <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void insert_at(size_t i, const seg *s) {
    if (nseg == capseg) {
        capseg = capseg ? capseg * 2 : 1024;
        seg *n = realloc(segs, capseg * sizeof *n);
        if (!n) abort(); /* test-only */
        segs = n;
    }
    memmove(&segs[i + 1], &segs[i], (nseg - i) * sizeof *segs);
    segs[i] = *s;
    nseg++;
}

/* Split segments so that lo and hi fall on boundaries, and fill gaps in [lo, hi). */
static void cover(uintptr_t lo, uintptr_t hi) {
    size_t i = first_after(lo);
    if (i < nseg && segs[i].lo < lo) { /* split at lo */
        seg right = segs[i];
        right.lo = lo;
        segs[i].hi = lo;
        insert_at(++i, &right);
    }
    uintptr_t p = lo;
    while (p < hi) {
        if (i < nseg && segs[i].lo <= p) { /* segs[i].lo == p */
            if (segs[i].hi > hi) {
                seg right = segs[i];
                right.lo = hi;
                segs[i].hi = hi;
                insert_at(i + 1, &right);
            }
            p = segs[i].hi;
            i++;
            continue;
        }
        uintptr_t end = (i < nseg && segs[i].lo < hi) ? segs[i].lo : hi;
        seg g;
        seg_init(&g, p, end);
        insert_at(i, &g);
        p = end;
        i++;
    }
}

static int unordered(const fc_who *a, const fc_stream *s) {
    return a->slot >= 0 && a->slot != s->slot && s->vc.c[a->slot] < a->epoch;
}

static void report(const fc_who *a, int a_writes, const fc_stream *s, const fc_op *op,
                   const fc_access *x, const seg *g) {
    tandem_fakecuda_report(
        "hazard",
        "%s on stream %d (device %d) %s [0x%llx, +%zu); %s on stream %d (device %d) %s %s "
        "[0x%llx, +%zu) with no event wait or synchronisation ordering the two",
        a->op, a->slot, a->device, a_writes ? "writes" : "reads", (unsigned long long)g->lo,
        (size_t)(g->hi - g->lo), op->desc, s->slot, s->h.ctx->device,
        x->write ? "writes" : "reads", x->what, (unsigned long long)x->p, x->n);
}

static void who_set(fc_who *w, const fc_stream *s, const fc_op *op) {
    w->slot = s->slot;
    w->epoch = s->vc.c[s->slot];
    w->device = s->h.ctx->device;
    size_t n = strlen(op->desc);
    if (n >= sizeof w->op) n = sizeof w->op - 1;
    memcpy(w->op, op->desc, n);
    w->op[n] = 0;
}

void fc_hazard_check(const fc_stream *s, const fc_op *op, const fc_acc_list *acc) {
    int reported = 0;
    for (int k = 0; k < acc->n; k++) {
        const fc_access *x = &acc->a[k];
        if (!x->n) continue;
        uintptr_t lo = x->p, hi = x->p + x->n;
        cover(lo, hi);
        for (size_t i = first_after(lo); i < nseg && segs[i].lo < hi; i++) {
            seg *g = &segs[i];
            if (!reported && unordered(&g->w, s)) {
                report(&g->w, 1, s, op, x, g);
                reported = 1;
            }
            for (int r = 0; r < FC_READERS && x->write && !reported; r++) {
                if (unordered(&g->r[r], s)) {
                    report(&g->r[r], 0, s, op, x, g);
                    reported = 1;
                }
            }
            if (x->write) {
                who_set(&g->w, s, op);
                for (int r = 0; r < FC_READERS; r++) who_none(&g->r[r]);
                continue;
            }
            /* A read: replace this stream's entry, else a free one, else the oldest. */
            int at = -1;
            for (int r = 0; r < FC_READERS && at < 0; r++)
                if (g->r[r].slot == s->slot) at = r;
            for (int r = 0; r < FC_READERS && at < 0; r++)
                if (g->r[r].slot < 0) at = r;
            if (at < 0) {
                at = 0;
                for (int r = 1; r < FC_READERS; r++)
                    if (g->r[r].epoch < g->r[at].epoch) at = r;
            }
            who_set(&g->r[at], s, op);
        }
    }
}

void fc_hazard_forget(uintptr_t p, size_t n) {
    if (!n || !nseg) return;
    uintptr_t hi = p + n;
    cover(p, hi);
    size_t i = first_after(p), j = i;
    while (j < nseg && segs[j].lo < hi) j++;
    memmove(&segs[i], &segs[j], (nseg - j) * sizeof *segs);
    nseg -= j - i;
}

__attribute__((destructor)) static void fc_hazard_unload(void) {
    free(segs);
    segs = NULL;
    nseg = capseg = 0;
}
