/* tandem_cost.h — the step cost model (part of tandem.h; DESIGN.md §5): one real training step
 * of a config is recorded launch by launch and priced on a GPU's published peaks, without a
 * GPU. Every kernel declares its FLOPs and bytes from its arguments (kernels/registry.h), GEMMs
 * are priced from their shapes and dtypes, copies from their sizes; the step runs on a dry
 * device (nothing executes: shapes alone decide the launch list, so `base` at batch 32 takes
 * seconds). docs/BENCHMARKS-training.md ("Step cost model") gives the model, the constants and
 * their sources, and the floor's definition.
 *
 * Owns nothing after it returns; allocates while it runs (the model's tables, the record, the
 * dry device; its arena is address space only) and frees it all. Any thread, one call at a
 * time (the recorder is process-wide: do not train in the same process meanwhile).
 * Errors: TANDEM_E_INVALID for an unknown GPU or a config the model refuses; TANDEM_E_NOMEM.
 */
/* tandem.h first, outside the guard (see tandem_text.h). */
#include "tandem.h"

#ifndef TANDEM_COST_PUBLIC_H
#define TANDEM_COST_PUBLIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tandem_cost_options {
    const char *gpu;         /* "h100" (default), "a100", "rtx4090" or "l4" */
    int json;                /* 1: one JSON object (every launch, categories, totals, floor) */
    int launches;            /* 1: the text lists every launch too (JSON always does) */
    int tf32;                /* 1: price f32 GEMMs at the TF32 tensor peak (default 0: the
                                runtime's cuBLASLt GEMMs compute in exact fp32 today) */
    const char *config_name; /* named in the first line; NULL: "config" */
} tandem_cost_options;

void tandem_cost_options_init(tandem_cost_options *o);

/* The cost report of one training step of cfg (its batch_size, grad_accum and precision) on
 * o->gpu: per-category totals (launches, FLOPs, bytes read and written, modelled time), the
 * modelled step in a CUDA graph and eager, the ten most expensive launches, the floor (minimum
 * FLOPs and the strict minimum traffic), bytes moved against it and against the library minimum
 * traffic (docs/BENCHMARKS-training.md, "The floor"). Written into buf (NUL-terminated,
 * truncated to cap); *len (may be NULL) = the length it needs (call again with a larger buffer
 * when it exceeds cap). */
tandem_status tandem_cost_report(const tandem_config *cfg, const tandem_cost_options *o, char *buf,
                                 size_t cap, size_t *len);

/* The headline figures of the same report, as numbers (what `tandem validate` shows). */
typedef struct tandem_cost_estimate {
    char gpu[16];            /* the GPU key priced */
    int64_t launches;        /* kernels + GEMMs + copies of one optimizer step */
    double graph_ms;         /* modelled step, replayed as a CUDA graph */
    double eager_ms;         /* modelled step, launched one by one */
    double floor_ms;         /* the floor: minimum FLOPs at peak or minimum traffic at full bandwidth */
    double samples_per_s;    /* batch_size x grad_accum / graph_ms */
    double bytes;            /* bytes the step's launches read and write */
    double min_bytes;        /* the strict minimum traffic (docs/BENCHMARKS-training.md, "The floor") */
    double lib_min_bytes;    /* the library minimum traffic: library GEMMs, fused attention */
} tandem_cost_estimate;
tandem_status tandem_cost_estimate_step(const tandem_config *cfg, const tandem_cost_options *o,
                                        tandem_cost_estimate *out);

#ifdef __cplusplus
}
#endif

#endif
