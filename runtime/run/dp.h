/* dp.h — data-parallel training (docs/SCALING.md): this process's replica is rank `rank` of
 * `world` model devices, each training on its own shard of every global batch, with the
 * gradients summed across ranks after the backward pass so the optimizer step is the same
 * everywhere and equals single-device training with grad_accum * world micro-batches (the
 * global batch world * grad_accum * batch_size).
 *
 * What it does for the trainer (runtime/run/trainer.c calls it in small hooks):
 *   declare   a one-float vote tensor in the model arena (before the commit), and the group's
 *             unique id on every rank: on the host none (MPI's world); on cuda rank 0 makes
 *             the NCCL id and hands it over through the rendezvous on the trainer option
 *             `rendezvous` (platform/os/rendezvous.h) when given, else through the
 *             launcher's MPI (a host group opened and closed for it)
 *   open      joins the group (tandem_dev_coll_open: MPI on the host, NCCL on cuda) and
 *             broadcasts rank 0's parameters, so every replica starts from the same ones
 *   plan      after the model's declare: the gradient buckets (dp_bucket_mb, counted by
 *             walking the backward's stages once and logged), the communication stream and its
 *             two events, and for bf16 on the wire a [bucket] bf16 scratch in the model arena
 *   backward_begin  before the last micro-batch of a step: the model's backward hook
 *             (tandem_model.grads_final) collects the ranges whose gradients are final; each
 *             time they fill a bucket, the communication stream waits on an event of the model
 *             stream and all-reduces the bucket (bf16: cast, all-reduce, widen back), so the
 *             all-reduce of layer l overlaps the backward of layer l-1
 *   reduce    after the last micro-batch's backward, before the update: the last bucket, the
 *             model stream joined to the communication stream (the update waits for every
 *             bucket), and the micro-batches' losses [A, 3] summed (then scaled by 1/world),
 *             so the global-norm clip, the non-finite skip and the reported loss are the same
 *             on every rank. The loss scale 1/(A*world) of tandem_optim.dp_world makes the sum
 *             the mean-loss gradient (no scaling after it). Without backward_begin (a step
 *             whose gradients the trainer's test hook overwrites) every bucket is queued here.
 *   agree     every step: the ranks' stop votes summed (a stop request on any rank stops all
 *             at the same step boundary)
 *   step_pos  the sampler position after n global steps of this run (what a checkpoint keeps:
 *             resume on the same world size continues exactly)
 *
 * Owns: the tandem_coll, the communication stream and its events. Threads: the trainer's thread
 * only (a replica's, for several model devices in one process). Allocates: at declare (the id
 * exchange: MPI's host group or the rendezvous' table, freed there), at plan (stream, events) and
 * at open (the backend's group), all before the first step; the vote tensor and the bf16 scratch
 * live in the model arena. */
#ifndef TANDEM_RUNTIME_RUN_DP_H
#define TANDEM_RUNTIME_RUN_DP_H

#include "runtime/core/dev.h"
#include "runtime/data/sampler.h"
#include "runtime/formats/safetensors.h"
#include "runtime/model/model.h"

/* Ranges a bucket may gather before it is queued (a stage has a decayed and an undecayed part). */
#define TANDEM_DP_PENDING 8

typedef struct tandem_dp {
    int world, rank;        /* world <= 1: off (every call below is a no-op) */
    tandem_device *dev;
    tandem_coll *coll;
    tandem_tensor *vote;    /* [1] f32: the stop vote */
    int failed;             /* a collective failed: close aborts */
    tandem_sampler_pos start; /* the sampler position this run started from */
    tandem_coll_id id;      /* the group's unique id, the same on every rank after declare */
    /* gradient buckets (plan) */
    int bf16;               /* on the wire: 1 bf16 (cast into wire and back), 0 f32 in place */
    int64_t cap;            /* elements per bucket */
    int n_buckets;          /* per step, counted at plan */
    int64_t largest;        /* elements of the largest bucket */
    tandem_stream *cs;      /* the communication stream */
    tandem_event *fork, *join; /* model stream -> cs before each bucket; cs -> model stream at reduce */
    tandem_tensor *wire;    /* [cap] bf16, persistent (bf16 only) */
    tandem_model *m;
    /* the bucket being filled: up to TANDEM_DP_PENDING ranges [b, e) of the flat gradient */
    int64_t pend[2 * TANDEM_DP_PENDING];
    int n_pend;
    int64_t pend_n;         /* their elements */
    int counting;           /* plan's walk: count buckets, queue nothing */
    int flushed;            /* buckets queued (or counted) since the last reset */
    int armed;              /* backward_begin: the hook is set for this step */
    int forked;             /* cs has work the model stream has not joined yet */
} tandem_dp;

/* The checkpoint metadata key holding the ranks a run trained on (absent: 1). */
#define TANDEM_DP_KEY_WORLD_SIZE "world_size"

/* A resume on another world size changes the global batch (and so what a step means): refused
 * naming both unless force (then a warning). f: the resume checkpoint, path: its run directory. */
tandem_status tandem_dp_check_resume(const tandem_st_file *f, const char *path, int world, int force);

/* world_size / rank / rendezvous from the trainer's options (checked); exchanges the unique id
 * (a network wait of up to rendezvous_timeout_ms for the other ranks), unless local: a replica
 * of this process, joined by tandem_dp_open_local. */
tandem_status tandem_dp_declare(tandem_dp *dp, const tandem_trainer_options *o, int local, tandem_device *dev,
                                tandem_pool *pool, tandem_sampler_pos start);
/* After tandem_model_declare, before the commit: buckets of bucket_mb MiB of the wire dtype
 * (bf16: bf16, else f32), counted, logged once ("data-parallel: N buckets of <= X MiB, f32"). */
tandem_status tandem_dp_plan(tandem_dp *dp, tandem_model *m, tandem_pool *pool, double bucket_mb, int bf16);
tandem_status tandem_dp_open(tandem_dp *dp, tandem_stream *s, tandem_model *m);
/* Several model devices of this process (runtime/run/replicas.h): one communicator each from
 * the backend's local open (ncclCommInitAll), then rank 0's parameters broadcast to all, in one
 * group from this thread. dps[i] is rank i of n (declared with world n); on failure none is open. */
tandem_status tandem_dp_open_local(tandem_dp *const *dps, tandem_stream *const *ss, tandem_model *const *ms, int n);
/* Before the last micro-batch of a step: its backward queues the buckets as they fill. */
void tandem_dp_backward_begin(tandem_dp *dp);
tandem_status tandem_dp_reduce(tandem_dp *dp, tandem_stream *s, tandem_model *m);
/* *stop = 1 when any rank votes local != 0. Synchronises s. */
tandem_status tandem_dp_agree(tandem_dp *dp, tandem_stream *s, int local, int *stop);
/* start + steps * world * chunk items (chunk = one rank's items per step). */
tandem_sampler_pos tandem_dp_step_pos(const tandem_dp *dp, int64_t steps, int64_t chunk, uint32_t n_items);
/* failed: the run ended in an error (this rank's or a collective's): leave the group without
 * waiting for the others (the host backend then skips MPI_Finalize, so mpirun ends the job). */
void tandem_dp_close(tandem_dp *dp, int failed);

#endif
