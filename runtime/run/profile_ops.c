/* profile_ops.c — per-op device times of one step (see profile_ops.h). */
#include "runtime/run/profile_ops.h"

#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"

tandem_status tandem_profile_ops_init(tandem_profile_ops *x, tandem_device *dev, tandem_stream *s, int cap) {
    memset(x, 0, sizeof *x);
    if (cap <= 0) return TANDEM_OK;
    x->p.s = s;
    x->p.ev = tandem_calloc((size_t)cap, sizeof *x->p.ev);
    x->p.name = tandem_calloc((size_t)cap, sizeof *x->p.name);
    x->p.host_ns = tandem_calloc((size_t)cap, sizeof *x->p.host_ns);
    x->cap = x->p.cap = cap;
    tandem_status st = x->p.ev && x->p.name && x->p.host_ns
                           ? tandem_event_create(dev, &x->p.anchor)
                           : tandem_fail(TANDEM_E_NOMEM, "profile: out of memory for %d op events", cap);
    for (int i = 0; i < cap && st == TANDEM_OK; i++) st = tandem_event_create(dev, &x->p.ev[i]);
    if (st != TANDEM_OK) tandem_profile_ops_free(x);
    return st;
}

void tandem_profile_ops_free(tandem_profile_ops *x) {
    if (x->p.ev)
        for (int i = 0; i < x->cap; i++)
            if (x->p.ev[i]) tandem_event_destroy(x->p.ev[i]);
    if (x->p.anchor) tandem_event_destroy(x->p.anchor);
    tandem_free(x->p.ev);
    tandem_free(x->p.name);
    tandem_free(x->p.host_ns);
    memset(x, 0, sizeof *x);
}

tandem_status tandem_profile_ops_begin(tandem_profile_ops *x) {
    return x->cap > 0 ? tandem_dev_op_profile_attach(&x->p) : TANDEM_OK;
}

static void add(tandem_profile_ops *x, const char *name, double ms) {
    int i = 0;
    while (i < x->names && x->agg[i].name != name) i++;
    if (i == x->names) {
        if (x->names == TANDEM_PROFILE_MAX_NAMES) i--; /* the last entry takes the rest */
        else x->agg[x->names++] = (tandem_op_time){name, 0, 0};
    }
    x->agg[i].count++;
    x->agg[i].device_ms += ms;
}

static void sort_desc(tandem_op_time *a, int n) {
    for (int i = 1; i < n; i++) {
        tandem_op_time v = a[i];
        int j = i;
        for (; j > 0 && a[j - 1].device_ms < v.device_ms; j--) a[j] = a[j - 1];
        a[j] = v;
    }
}

tandem_status tandem_profile_ops_end(tandem_profile_ops *x) {
    if (x->cap <= 0) return TANDEM_OK;
    tandem_dev_op_profile *p = &x->p;
    tandem_dev_op_profile_attach(NULL);
    TANDEM_TRY(tandem_event_sync(p->anchor));
    double prev = 0;
    for (int i = 0; i < p->n; i++) {
        float d = 0;
        TANDEM_TRY(tandem_event_sync(p->ev[i]));
        TANDEM_TRY(tandem_event_elapsed_ms(p->anchor, p->ev[i], &d));
        const double launched = (double)(p->host_ns[i] - p->anchor_ns) * 1e-6;
        const double start = prev > launched ? prev : launched;
        const double ms = d > start ? d - start : 0;
        add(x, p->name[i], ms);
        x->total_ms += ms;
        if (d > prev) prev = d;
    }
    x->timed = p->n;
    x->overflow = p->overflow;
    x->span_ms = prev;
    x->done = 1;
    sort_desc(x->agg, x->names);
    return TANDEM_OK;
}
