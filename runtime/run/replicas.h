/* replicas.h — several model devices in one process (config model_devices, docs/SCALING.md):
 * one trainer replica per model device, each with its own data pipeline, ring and model stream,
 * fed by a data device of data_devices (in turn; one data device may feed several replicas,
 * each with its own arena and streams on it), trained data-parallel as ranks 0..n-1 of one
 * group (runtime/run/dp.h): the sampler shards every global batch by replica, the gradients are
 * summed across the model devices (NCCL, one communicator per device from ncclCommInitAll), so
 * n replicas with grad_accum A equal one device with grad_accum n * A.
 *
 * Replica 0 is the trainer the embedder holds: its thread (the caller's) runs replica 0's loop
 * and gets every on_step callback; it alone writes the run directory. Replicas 1..n-1 run their
 * loops on threads of their own started by run and joined before it returns. A stop request is
 * passed to every replica (they agree on the step through the group's vote). When one replica
 * fails, the others are asked to stop and its communicator is aborted, so a collective waiting
 * for it fails (the stand-in NCCL does so at once) rather than waiting for ever; run returns the
 * first failure's message, naming the replica.
 *
 * Not combined with several processes yet (a launcher's world size > 1 is refused), and CUDA
 * only (the host backend's collectives are MPI ranks, one per process).
 * Owns: the replicas past the first and their threads. Threads: create / run / destroy from the
 * embedder's thread; request_stop from any thread or a signal handler. Allocates: at create
 * (the replicas) and at run's start (the threads). */
#ifndef TANDEM_RUNTIME_RUN_REPLICAS_H
#define TANDEM_RUNTIME_RUN_REPLICAS_H

#include "tandem.h"

typedef struct tandem_replicas tandem_replicas;

/* n_model > 1 ordinals in model[], n_data data ordinals (0: automatic). *out is replica 0, which
 * owns the group. */
tandem_status tandem_replicas_create(const tandem_config *cfg, const tandem_trainer_options *o, const int *model,
                                     int n_model, const int *data, int n_data, tandem_trainer **out);
tandem_status tandem_replicas_run(tandem_replicas *g, tandem_trainer_summary *sum);
void tandem_replicas_request_stop(tandem_replicas *g);
/* Destroys replicas 1..n-1 and frees the group (replica 0 is the caller's to finish). */
void tandem_replicas_free(tandem_replicas *g);

#endif
