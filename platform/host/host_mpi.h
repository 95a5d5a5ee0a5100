/* host_mpi.h — the host backend's collectives (platform/device.h, tandem_coll) over MPI, so
 * data-parallel training runs across processes on machines without GPUs (`mpirun -np 2 tandem
 * train ...`; docs/SCALING.md). MPI is an optional build dependency (mk/46-mpi.mk): built with
 * TANDEM_HAVE_MPI=1 these call OpenMPI; without it every entry answers TANDEM_E_UNSUPPORTED
 * saying how to get it.
 *
 * The group is the launcher's world (MPI_COMM_WORLD, duplicated per tandem_coll): the unique id
 * carries nothing, coll_open checks that nranks and rank are MPI's. MPI is initialised by the
 * first coll_open (MPI_THREAD_SERIALIZED) and finalised at process exit, unless a tandem_coll
 * was aborted: then the process leaves without MPI_Finalize (which would wait for the others)
 * and mpirun ends the job. Host streams run their work as it is queued, so each collective has
 * finished when the call returns. Threads: a tandem_coll is used by one thread at a time.
 * Allocates: at open only. */
#ifndef TANDEM_PLATFORM_HOST_MPI_H
#define TANDEM_PLATFORM_HOST_MPI_H

#include "platform/device.h"

tandem_status tandem_host_coll_unique_id(tandem_device *dev, tandem_coll_id *out);
tandem_status tandem_host_coll_open(tandem_device *dev, const tandem_coll_id *id, int nranks, int rank,
                                    tandem_coll **out);
tandem_status tandem_host_coll_open_local(tandem_device *const *devs, int n, tandem_coll **out);
void tandem_host_coll_close(tandem_coll *c);
void tandem_host_coll_abort(tandem_coll *c);
tandem_status tandem_host_coll_group(int begin);
tandem_status tandem_host_coll_all_reduce_sum(tandem_coll *c, tandem_stream *s, tandem_dptr send,
                                              tandem_dptr recv, size_t count, tandem_dtype type);
tandem_status tandem_host_coll_broadcast(tandem_coll *c, tandem_stream *s, tandem_dptr send,
                                         tandem_dptr recv, size_t count, tandem_dtype type, int root);
tandem_status tandem_host_coll_check(tandem_coll *c);

#endif
