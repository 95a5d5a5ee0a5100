/* replicas.c — several model devices in one process (replicas.h). */
#include "runtime/run/replicas.h"

#include <stdio.h>
#include <string.h>

#include "platform/device.h"
#include "platform/os/log.h"
#include "platform/os/os.h"
#include "platform/os/strbuf.h"
#include "runtime/core/config.h"
#include "runtime/run/trainer.h"

typedef struct replica {
    tandem_trainer *t;
    tandem_replicas *g;
    int rank;
    tandem_thread thread;
    int started;
    tandem_status st;
    char why[1024];
    tandem_trainer_summary sum;
} replica;

struct tandem_replicas {
    int n;
    replica r[TANDEM_CONFIG_MAX_DEVICES];
    tandem_mutex m;
    int failed_rank; /* the first replica whose run failed; -1: none */
};

/* The data device of each replica: data_devices in turn; automatic: the lowest GPU that is not a
 * model device, else each replica's own model device (both roles on it). */
static void data_ordinals(const int *model, int nm, const int *data, int nd, int count, int *out) {
    if (nd > 0) {
        for (int i = 0; i < nm; i++) out[i] = data[i % nd];
        return;
    }
    int spare = -1;
    for (int d = 0; d < count && spare < 0; d++) {
        int used = 0;
        for (int i = 0; i < nm; i++) used |= model[i] == d;
        if (!used) spare = d;
    }
    for (int i = 0; i < nm; i++) out[i] = spare >= 0 ? spare : model[i];
}

/* What a group cannot do (yet), before anything is opened; *count: the CUDA devices there are. */
static tandem_status check_group(const tandem_trainer_options *o, const int *model, int nm, int *count_out) {
    if (o && o->world_size > 1)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "config: model_devices lists %d devices and the launcher started "
                           "%d ranks: several model devices per process with several processes is not built; "
                           "launch one rank per model device instead (torchrun --nproc-per-node %d, mpirun -np "
                           "%d; docs/SCALING.md)", nm, o->world_size, nm, nm);
    if (o && o->backend == TANDEM_BACKEND_HOST)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "config: model_devices lists %d devices on the host backend: the "
                           "host's collectives join processes (MPI), not devices of one process; run `mpirun -np "
                           "%d tandem train ...` with model_devices: auto (docs/SCALING.md)", nm, nm);
    int count = 0;
    const tandem_status st = tandem_device_count(TANDEM_BACKEND_CUDA, &count);
    if (st != TANDEM_OK) {
        char why[800];
        snprintf(why, sizeof why, "%s", tandem_last_error());
        return tandem_fail(st, "config: model_devices lists %d CUDA devices: %s", nm, why);
    }
    for (int i = 0; i < nm; i++)
        if (model[i] >= count)
            return tandem_fail(TANDEM_E_DEVICE, "config: model_devices: CUDA %d: only %d CUDA device%s (ordinals "
                               "0..%d)", model[i], count, count == 1 ? "" : "s", count - 1);
    *count_out = count;
    return TANDEM_OK;
}

/* The startup line: every replica's devices. */
static void describe(const int *model, const int *dev_data, int n, char *buf, size_t cap) {
    tandem_strbuf b = {buf, cap, 0};
    buf[0] = 0;
    tandem_strbuf_printf(&b, "%d model devices in this process, data-parallel (one replica each):", n);
    for (int i = 0; i < n; i++)
        tandem_strbuf_printf(&b, "%s replica %d: model CUDA %d fed by data CUDA %d", i ? ";" : "", i, model[i],
                             dev_data[i]);
}

static void free_group(tandem_replicas *g, int from) {
    for (int i = g->n - 1; i >= from; i--)
        if (g->r[i].t) tandem_trainer_destroy(g->r[i].t);
    tandem_mutex_destroy(&g->m);
    tandem_free(g);
}

tandem_status tandem_replicas_create(const tandem_config *cfg, const tandem_trainer_options *o, const int *model,
                                     int n_model, const int *data, int n_data, tandem_trainer **out) {
    *out = NULL;
    int count = 0, dev_data[TANDEM_CONFIG_MAX_DEVICES];
    TANDEM_TRY(check_group(o, model, n_model, &count));
    data_ordinals(model, n_model, data, n_data, count, dev_data);
    tandem_replicas *g = tandem_calloc(1, sizeof *g);
    if (!g) return tandem_fail(TANDEM_E_NOMEM, "trainer: out of memory for %d replicas", n_model);
    tandem_mutex_init(&g->m);
    g->n = n_model, g->failed_rank = -1;
    tandem_status st = TANDEM_OK;
    for (int i = 0; st == TANDEM_OK && i < n_model; i++) {
        tandem_trainer_options oi;
        if (o) oi = *o;
        else tandem_trainer_options_init(&oi);
        oi.world_size = n_model, oi.rank = i, oi.local_rank = i;
        if (i > 0) oi.on_step = NULL, oi.on_step_user = NULL; /* replica 0 reports */
        g->r[i].g = g, g->r[i].rank = i;
        st = tandem_trainer_create_replica(cfg, &oi, 1, dev_data[i], model[i], &g->r[i].t);
        if (st != TANDEM_OK) {
            char why[900];
            snprintf(why, sizeof why, "%s", tandem_last_error());
            st = tandem_fail(st, "replica %d (model CUDA %d, data CUDA %d): %s", i, model[i], dev_data[i], why);
        }
    }
    tandem_trainer *ts[TANDEM_CONFIG_MAX_DEVICES];
    for (int i = 0; i < n_model; i++) ts[i] = g->r[i].t;
    if (st == TANDEM_OK) st = tandem_trainer_join_local(ts, n_model);
    if (st != TANDEM_OK) {
        char why[1024];
        snprintf(why, sizeof why, "%s", tandem_last_error());
        free_group(g, 0);
        return tandem_fail(st, "%s", why);
    }
    char desc[512];
    describe(model, dev_data, n_model, desc, sizeof desc);
    tandem_trainer_set_group(g->r[0].t, g, desc);
    tandem_logf(TANDEM_LOG_INFO, "trainer: %s", desc);
    *out = g->r[0].t;
    return TANDEM_OK;
}

/* After a replica's run: on failure the others stop and its communicator is left, so a
 * collective waiting for it fails instead of waiting for ever. */
static void finished(replica *r, tandem_status st) {
    r->st = st;
    if (st == TANDEM_OK) return;
    snprintf(r->why, sizeof r->why, "%s", tandem_last_error());
    tandem_replicas *g = r->g;
    tandem_mutex_lock(&g->m);
    if (g->failed_rank < 0) g->failed_rank = r->rank;
    tandem_mutex_unlock(&g->m);
    for (int i = 0; i < g->n; i++) tandem_trainer_stop_replica(g->r[i].t);
    tandem_trainer_leave_group(r->t);
}

static void *replica_main(void *arg) {
    replica *r = arg;
    finished(r, tandem_trainer_run_replica(r->t, &r->sum));
    return NULL;
}

tandem_status tandem_replicas_run(tandem_replicas *g, tandem_trainer_summary *sum) {
    tandem_status st = TANDEM_OK;
    for (int i = 1; i < g->n && st == TANDEM_OK; i++) {
        char name[24]; /* the thread name keeps its first 15 bytes */
        snprintf(name, sizeof name, "replica%d", i);
        st = tandem_thread_start(&g->r[i].thread, replica_main, &g->r[i], name);
        g->r[i].started = st == TANDEM_OK;
    }
    if (st != TANDEM_OK) { /* the started ones wait for a peer that never comes: end them */
        char why[900];
        snprintf(why, sizeof why, "%s", tandem_last_error());
        finished(&g->r[0], tandem_fail(st, "trainer: starting the replicas' threads: %s", why));
    } else {
        finished(&g->r[0], tandem_trainer_run_replica(g->r[0].t, &g->r[0].sum));
    }
    for (int i = 1; i < g->n; i++)
        if (g->r[i].started) tandem_thread_join(&g->r[i].thread), g->r[i].started = 0;
    if (sum) *sum = g->r[0].sum;
    if (g->failed_rank < 0) return TANDEM_OK;
    const replica *f = &g->r[g->failed_rank];
    return tandem_fail(f->st, "replica %d of %d: %s", f->rank, g->n, f->why);
}

void tandem_replicas_request_stop(tandem_replicas *g) {
    for (int i = 0; i < g->n; i++) tandem_trainer_stop_replica(g->r[i].t);
}

void tandem_replicas_free(tandem_replicas *g) {
    if (g) free_group(g, 1);
}
