/* cost.h — the step cost model (DESIGN.md §5; `tandem cost`, runtime/tandem_cost.h).
 *
 * One real training step is run and recorded (runtime/core/dev.h's recorder: every kernel
 * launch, GEMM and copy that passes dev.c, with the kernel's registry cost function, the GEMM's
 * shape cost, the copy's bytes), usually on the dry device (nothing executes: shapes alone
 * decide the launch list) and, in the tests, on a real backend whose own counters can be
 * compared. The record is then priced on a GPU's published peaks: each launch takes
 * max(FLOPs / peak of its unit, bytes / memory bandwidth) plus a launch overhead (eager or in a
 * CUDA graph). Nothing here is a hand-written list: a launch added to the model shows up here.
 *
 * Owns: a run owns its pool, model, stream, the recorder's buffer and, when it opened it, the
 * dry device. Allocates in open only (the recorder's buffer before the pool's commit); a step
 * allocates nothing. One thread.
 */
#ifndef TANDEM_RUNTIME_RUN_COST_H
#define TANDEM_RUNTIME_RUN_COST_H

#include <stdint.h>

#include "runtime/core/config.h"
#include "runtime/core/dev.h"
#include "runtime/model/model.h"
#include "tandem.h"

/* ---- recording a step -------------------------------------------------------------------------- */

typedef struct tandem_cost_run tandem_cost_run;

/* cfg checked (batch_size, precision, grad_accum as the run would use). dev NULL: a dry device
 * (a CUDA device in the model's eyes, so bf16 works) opened and owned by the run; else a device
 * the caller keeps open. Declares the model and one synthetic batch per micro-batch (full
 * lengths, valid tokens), commits, initialises the parameters and uploads the batches. */
tandem_status tandem_cost_run_open(const tandem_config *cfg, tandem_device *dev, tandem_cost_run **out);
/* One optimizer step (begin, every micro-batch, update, read-back) with the recorder on; the
 * step's record replaces the previous one. Synchronises the run's stream. */
tandem_status tandem_cost_run_step(tandem_cost_run *r);
const tandem_rec_entry *tandem_cost_run_entries(const tandem_cost_run *r, int64_t *n);
const tandem_model *tandem_cost_run_model(const tandem_cost_run *r);
void tandem_cost_run_close(tandem_cost_run *r);

/* ---- pricing ------------------------------------------------------------------------------------ */

/* A GPU's peaks (dense, no 2:4 sparsity) and launch overheads; sources in docs/BENCHMARKS-training.md, "Step cost model". */
typedef struct tandem_gpu_spec {
    const char *key;        /* "h100" */
    const char *name;       /* "NVIDIA H100 SXM5 80 GB" */
    double bf16_tflops;     /* tensor cores, bf16 inputs, f32 accumulation */
    double tf32_tflops;     /* tensor cores, TF32 */
    double fp32_tflops;     /* CUDA cores, f32 FMA */
    double bandwidth_gbs;   /* device memory, GB/s (10^9) */
    double launch_eager_us; /* per launch queued from the host one by one */
    double launch_graph_us; /* per node of an instantiated CUDA graph */
    int sms;                /* streaming multiprocessors */
} tandem_gpu_spec;

/* By key ("h100", "h200", "a100", "rtx4090", "l4"); NULL if unknown. */
const tandem_gpu_spec *tandem_gpu_find(const char *key);
/* The keys, "h100|h200|a100|rtx4090|l4", for messages. */
const char *tandem_gpu_keys(void);

typedef enum tandem_cost_cat {
    TANDEM_COST_GEMM_LINEAR = 0, /* linear layers and heads (one matrix of weights per product) */
    TANDEM_COST_GEMM_ATTENTION,  /* batched per (item, head): QK^T, PV and their gradients */
    TANDEM_COST_ATTN_ELEMENTWISE,/* passes over [B, H, T, T]: softmax, guided attention */
    TANDEM_COST_LAYOUT,          /* q/k/v and head (un)packing */
    TANDEM_COST_CAST,            /* f32 <-> bf16 */
    TANDEM_COST_ELEMENTWISE,     /* GELU, bias, dropout, fills, scaling */
    TANDEM_COST_LAYERNORM,
    TANDEM_COST_REDUCTION,       /* bias-gradient column sums, norms, checks */
    TANDEM_COST_LOSS,
    TANDEM_COST_OPTIMIZER,
    TANDEM_COST_COPY,
    TANDEM_COST_DATA,            /* batch preparation, prenet input, embeddings, features */
    TANDEM_COST_CATS
} tandem_cost_cat;

const char *tandem_cost_cat_name(tandem_cost_cat c);
tandem_cost_cat tandem_cost_category(const tandem_rec_entry *e);
/* "layernorm_fwd", "gemm bf16 [2048x768x256] x1", "copy d2h 12 B" into buf. */
const char *tandem_cost_describe(const tandem_rec_entry *e, char *buf, size_t cap);

/* Time of one launch on g without launch overhead, seconds: max(FLOPs / peak, bytes /
 * bandwidth); the peak is the bf16 tensor one for bf16 GEMMs, TF32 for f32 GEMMs when tf32,
 * else FP32. A kernel whose grid has fewer blocks than g has SMs reaches only blocks / SMs of
 * either peak (the rest of the GPU idles). Copies between host and device are priced at the device bandwidth too (they are
 * a few bytes per step here). */
double tandem_cost_seconds(const tandem_rec_entry *e, const tandem_gpu_spec *g, int tf32);

#endif
