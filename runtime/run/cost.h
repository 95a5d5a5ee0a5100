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
#include "runtime/run/kernel_code.h"
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

/* A GPU's peaks (dense, no 2:4 sparsity), launch overheads and the SM resources its kernels are
 * priced against; sources in docs/BENCHMARKS-training.md, "Step cost model". */
typedef struct tandem_gpu_spec {
    const char *key;        /* "h100" */
    const char *name;       /* "NVIDIA H100 SXM5 80 GB" */
    double bf16_tflops;     /* tensor cores, bf16 inputs, f32 accumulation (sm_90: wgmma) */
    double tf32_tflops;     /* tensor cores, TF32 */
    double fp32_tflops;     /* CUDA cores, f32 FMA */
    double bandwidth_gbs;   /* device memory, GB/s (10^9) */
    double launch_eager_us; /* per launch queued from the host one by one */
    double launch_graph_us; /* per node of an instantiated CUDA graph */
    int sms;                /* streaming multiprocessors */
    int arch;               /* the fatbin's SASS these run: 90, 80, 89 (runtime/run/kernel_code.h) */
    double clock_ghz;       /* SM clock under load: 4 warp instructions issued per SM per cycle */
    double mma_sync_tflops; /* bf16 mma.sync (the fatbin's tensor-core kernels), attainable */
    double gemm_eff;        /* of the peak, what a library GEMM's full waves of tiles attain */
    double bw_eff;          /* of the bandwidth, what a streaming kernel attains */
    int mem_latency;        /* cycles from a global load to its use, device memory */
    int max_warps_sm, max_blocks_sm, regs_sm, smem_sm; /* per SM */
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

/* What limits one launch in the model (the largest of its terms). */
typedef enum tandem_cost_bound {
    TANDEM_BOUND_MEMORY = 0, /* bytes / attainable bandwidth */
    TANDEM_BOUND_ISSUE,      /* the kernel's instructions / the SMs' issue rate */
    TANDEM_BOUND_LATENCY,    /* too few resident warps to cover a memory round trip per loop pass */
    TANDEM_BOUND_TENSOR,     /* tensor-core FLOPs at the unit's attainable rate */
    TANDEM_BOUND_FP32,       /* CUDA-core FLOPs */
    TANDEM_BOUND_COUNT
} tandem_cost_bound;

typedef struct tandem_cost_terms {
    double s[TANDEM_BOUND_COUNT]; /* seconds of each term */
    tandem_cost_bound bound;      /* the largest */
    double seconds;               /* its value: the launch's time without launch overhead */
    double warps_sm;              /* resident warps per SM (kernels with code) */
    int have_code;                /* the kernel code table had the kernel (else a roofline) */
} tandem_cost_terms;

const char *tandem_cost_bound_name(tandem_cost_bound b);

/* The terms of one launch on g (cost_price.c): code is the kernel's row of the kernel code table
 * for g's architecture (NULL: a roofline of its FLOPs and bytes only). GEMMs are library GEMMs:
 * full waves of 128 x 128 tiles at gemm_eff of the peak of their type (bf16 tensor, TF32 when
 * tf32 or the descriptor's tf32, else FP32). */
void tandem_cost_price(const tandem_rec_entry *e, const tandem_kernel_code *code, const tandem_gpu_spec *g,
                       int tf32, tandem_cost_terms *out);
/* tandem_cost_price's seconds with the built kernel code table's row for e's kernel. */
double tandem_cost_seconds(const tandem_rec_entry *e, const tandem_gpu_spec *g, int tf32);

#endif
