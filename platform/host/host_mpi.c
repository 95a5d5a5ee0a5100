/* host_mpi.c — the host backend's collectives over MPI (host_mpi.h). */
#include "platform/host/host_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"

#if defined(TANDEM_HAVE_MPI) && TANDEM_HAVE_MPI

#include <limits.h>
#include <mpi.h>

#include "kernels/ktypes.h"

struct tandem_coll {
    MPI_Comm comm;
    int rank, nranks;
    tandem_status failed; /* TANDEM_OK, or the first collective's failure (sticky) */
    char why[256];
};

static int we_initialised, aborted;
static MPI_Op bf16_sum = MPI_OP_NULL; /* made by the first coll_open, kept until MPI_Finalize */

/* MPI has no bf16: a user op on its 16-bit words, summing in float and rounding once per
 * addition (two ranks: the sum rounded once, as NCCL and the stand-in do). Commutative. */
static void sum_bf16(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    const tandem_bf16 *a = in;
    tandem_bf16 *b = inout;
    for (int i = 0; i < *len; i++) b[i] = tandem_f32_to_bf16(tandem_bf16_to_f32(a[i]) + tandem_bf16_to_f32(b[i]));
}

/* At exit: MPI_Finalize when this library initialised MPI and no group failed (after a
 * failure the others may wait in a collective forever; leaving without it makes mpirun end
 * the job, which is what a failed rank must cause). */
static void finalize_at_exit(void) {
    int fin = 0;
    if (!aborted && MPI_Finalized(&fin) == MPI_SUCCESS && !fin) MPI_Finalize();
}

static tandem_status mpi_err(tandem_coll *c, const char *op, int rc) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "MPI error %d", rc);
    tandem_status st = tandem_fail(TANDEM_E_DEVICE, "MPI %s on rank %d of %d failed: %s; a rank may have "
                                   "died (mpirun's output names it)", op, c ? c->rank : -1,
                                   c ? c->nranks : -1, s);
    if (c && c->failed == TANDEM_OK) {
        c->failed = st;
        snprintf(c->why, sizeof c->why, "%s", tandem_last_error());
    }
    return st;
}

static tandem_status init_mpi(void) {
    int on = 0;
    if (MPI_Initialized(&on) != MPI_SUCCESS)
        return tandem_fail(TANDEM_E_DEVICE, "MPI_Initialized failed");
    if (on) return TANDEM_OK;
    int provided = 0;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) return mpi_err(NULL, "MPI_Init_thread", rc);
    we_initialised = 1;
    atexit(finalize_at_exit);
    return TANDEM_OK;
}

tandem_status tandem_host_coll_unique_id(tandem_device *dev, tandem_coll_id *out) {
    (void)dev;
    memset(out, 0, sizeof *out); /* MPI's world is the group: nothing to hand round */
    return TANDEM_OK;
}

tandem_status tandem_host_coll_open(tandem_device *dev, const tandem_coll_id *id, int nranks, int rank,
                                    tandem_coll **out) {
    (void)dev, (void)id;
    *out = NULL;
    TANDEM_TRY(init_mpi());
    int size = 0, me = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (size != nranks || me != rank)
        return tandem_fail(TANDEM_E_INVALID, "host collectives: asked for rank %d of %d, MPI's world is rank %d "
                           "of %d; launch with `mpirun -np %d` (the ranks come from the launcher)", rank, nranks,
                           me, size, nranks);
    tandem_coll *c = tandem_calloc(1, sizeof *c);
    if (!c) return tandem_fail(TANDEM_E_NOMEM, "host collectives: out of memory");
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
    if (rc != MPI_SUCCESS) {
        tandem_free(c);
        return mpi_err(NULL, "MPI_Comm_dup", rc);
    }
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN); /* errors come back, not abort */
    if (bf16_sum == MPI_OP_NULL && (rc = MPI_Op_create(sum_bf16, 1, &bf16_sum)) != MPI_SUCCESS) {
        MPI_Comm_free(&c->comm);
        tandem_free(c);
        return mpi_err(NULL, "MPI_Op_create", rc);
    }
    c->rank = rank, c->nranks = nranks;
    *out = c;
    return TANDEM_OK;
}

tandem_status tandem_host_coll_open_local(tandem_device *const *devs, int n, tandem_coll **out) {
    (void)devs;
    *out = NULL;
    return tandem_fail(TANDEM_E_UNSUPPORTED, "host collectives: %d host devices in one process; MPI ranks are "
                       "processes: launch one process per rank with mpirun", n);
}

void tandem_host_coll_close(tandem_coll *c) {
    if (!c) return;
    if (c->failed == TANDEM_OK) MPI_Comm_free(&c->comm); /* collective: every rank closes */
    else aborted = 1;
    tandem_free(c);
}

void tandem_host_coll_abort(tandem_coll *c) {
    aborted = 1; /* no MPI_Finalize at exit: mpirun ends the others */
    tandem_free(c);
}

tandem_status tandem_host_coll_group(int begin) {
    (void)begin; /* one rank per process: nothing to bracket */
    return TANDEM_OK;
}

static tandem_status usable(tandem_coll *c, tandem_stream *s, const char *op) {
    (void)s;
    if (c->failed != TANDEM_OK) return tandem_fail(c->failed, "%s after a failed collective: %s", op, c->why);
    return TANDEM_OK;
}

tandem_status tandem_host_coll_all_reduce_sum(tandem_coll *c, tandem_stream *s, tandem_dptr send,
                                              tandem_dptr recv, size_t count, tandem_dtype type) {
    TANDEM_TRY(usable(c, s, "MPI all-reduce"));
    if (type != TANDEM_F32 && type != TANDEM_BF16)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "host all-reduce: dtype %d; the host backend sums f32 and bf16",
                           (int)type);
    const size_t es = type == TANDEM_F32 ? sizeof(float) : sizeof(tandem_bf16);
    char *r = (char *)(uintptr_t)recv;
    if (send != recv) memcpy(r, (const void *)(uintptr_t)send, count * es);
    for (size_t at = 0; at < count;) { /* MPI counts are int */
        const int n = count - at > (size_t)INT_MAX ? INT_MAX : (int)(count - at);
        int rc = type == TANDEM_F32 ? MPI_Allreduce(MPI_IN_PLACE, r + at * es, n, MPI_FLOAT, MPI_SUM, c->comm)
                                    : MPI_Allreduce(MPI_IN_PLACE, r + at * es, n, MPI_UINT16_T, bf16_sum, c->comm);
        if (rc != MPI_SUCCESS) return mpi_err(c, "MPI_Allreduce", rc);
        at += (size_t)n;
    }
    return TANDEM_OK;
}

tandem_status tandem_host_coll_broadcast(tandem_coll *c, tandem_stream *s, tandem_dptr send,
                                         tandem_dptr recv, size_t count, tandem_dtype type, int root) {
    TANDEM_TRY(usable(c, s, "MPI broadcast"));
    if (root < 0 || root >= c->nranks)
        return tandem_fail(TANDEM_E_INVALID, "host broadcast: root %d; expected 0..%d", root, c->nranks - 1);
    const size_t el = type == TANDEM_F32 || type == TANDEM_I32 ? 4 : type == TANDEM_U8 ? 1 : 2;
    unsigned char *r = (unsigned char *)(uintptr_t)recv;
    if (c->rank == root && send != recv) memcpy(r, (const void *)(uintptr_t)send, count * el);
    size_t bytes = count * el;
    for (size_t at = 0; at < bytes;) {
        const int n = bytes - at > (size_t)INT_MAX ? INT_MAX : (int)(bytes - at);
        int rc = MPI_Bcast(r + at, n, MPI_BYTE, root, c->comm);
        if (rc != MPI_SUCCESS) return mpi_err(c, "MPI_Bcast", rc);
        at += (size_t)n;
    }
    return TANDEM_OK;
}

tandem_status tandem_host_coll_check(tandem_coll *c) {
    if (c->failed != TANDEM_OK) return tandem_fail(c->failed, "%s", c->why);
    return TANDEM_OK;
}

#else /* built without MPI */

static tandem_status no_mpi(void) {
    return tandem_fail(TANDEM_E_UNSUPPORTED, "host collectives: this build has no MPI; rebuild with `make MPI=1` "
                       "(OpenMPI: tools/deps.sh installs openmpi-bin libopenmpi-dev) for multi-process "
                       "training on the host");
}

tandem_status tandem_host_coll_unique_id(tandem_device *dev, tandem_coll_id *out) {
    (void)dev, (void)out;
    return no_mpi();
}
tandem_status tandem_host_coll_open(tandem_device *dev, const tandem_coll_id *id, int nranks, int rank,
                                    tandem_coll **out) {
    (void)dev, (void)id, (void)nranks, (void)rank;
    *out = NULL;
    return no_mpi();
}
tandem_status tandem_host_coll_open_local(tandem_device *const *devs, int n, tandem_coll **out) {
    (void)devs, (void)n;
    *out = NULL;
    return no_mpi();
}
void tandem_host_coll_close(tandem_coll *c) { (void)c; }
void tandem_host_coll_abort(tandem_coll *c) { (void)c; }
tandem_status tandem_host_coll_group(int begin) {
    (void)begin;
    return no_mpi();
}
tandem_status tandem_host_coll_all_reduce_sum(tandem_coll *c, tandem_stream *s, tandem_dptr send,
                                              tandem_dptr recv, size_t count, tandem_dtype type) {
    (void)c, (void)s, (void)send, (void)recv, (void)count, (void)type;
    return no_mpi();
}
tandem_status tandem_host_coll_broadcast(tandem_coll *c, tandem_stream *s, tandem_dptr send,
                                         tandem_dptr recv, size_t count, tandem_dtype type, int root) {
    (void)c, (void)s, (void)send, (void)recv, (void)count, (void)type, (void)root;
    return no_mpi();
}
tandem_status tandem_host_coll_check(tandem_coll *c) {
    (void)c;
    return no_mpi();
}

#endif
