/* registry.h — the one list of kernels. The launcher, the cuda backend (resolves every entry
 * in the fatbin at init), the emulator, the stand-in driver and the kernel tests all expand
 * TANDEM_KERNEL_LIST, so a kernel added here cannot skip any of them.
 *
 * An entry X(name, group) promises, by convention:
 *   kernels/<group>.h     typedef struct { ... } tandem_k_<name>_args;   (the parameter list)
 *   kernels/<group>.cu    KERNEL LAUNCH_BOUNDS(n) tandem_k_<name>(tandem_k_<name>_args a)
 *                         (the device kernel; n its fixed block size, a constant of <group>.h)
 *   kernels/<group>_host.c
 *       void tandem_k_<name>_geom(const tandem_k_<name>_args *a, tandem_launch_dims *d);
 *                         (blocks of exactly n threads: test_fatbin compares n with the cubin)
 *       void tandem_k_<name>_host(const tandem_k_<name>_args *a);    (host implementation)
 *       void tandem_k_<name>_cost(const tandem_k_<name>_args *a, tandem_kernel_cost *c);
 *                         (what one launch costs: FLOPs and the minimum bytes read and written,
 *                         from the arguments alone, never from device data (kernels/ktypes.h);
 *                         the table below references it, so an entry without one fails the link;
 *                         the step cost model, `tandem cost`, sums it over a recorded step)
 * The fatbin entry point is named "tandem_k_<name>". Device pointers in argument structs are
 * plain C pointers: host addresses on the host backend, CUdeviceptr values on cuda.
 */
#ifndef TANDEM_KERNELS_REGISTRY_H
#define TANDEM_KERNELS_REGISTRY_H

#include <stddef.h>

#include "kernels/ktypes.h"

#include "kernels/basic.h"
#include "kernels/gemm_kernel.h"
#include "kernels/gemm_epi.h"
#include "kernels/mel.h"
#include "kernels/resample.h"
#include "kernels/layers.h"
#include "kernels/train.h"
#include "kernels/attention.h"
#include "kernels/attention_tc.h"
#include "kernels/batch_prep.h"

/* X(name, group) */
#define TANDEM_KERNEL_LIST(X)                                                             \
    X(fill_f32, basic)                                                                    \
    X(scale_f32, basic)                                                                   \
    X(axpy_f32, basic)                                                                    \
    X(cast_f32_bf16, basic)                                                               \
    X(cast_bf16_f32, basic)                                                               \
    X(row_sum_f32, basic)                                                                 \
    X(gemm_f32, gemm_kernel)                                                              \
    X(gemm_bf16, gemm_kernel)                                                             \
    X(gemm_epi_apply, gemm_epi)                                                           \
    X(gemm_epi_bgrad, gemm_epi)                                                           \
    X(mel_stft, mel)                                                                      \
    X(mel_project, mel)                                                                   \
    X(mel_log, mel)                                                                       \
    X(mel_targets, mel)                                                                   \
    X(resample, resample)                                                                 \
    X(layernorm_fwd, layers)                                                              \
    X(layernorm_bwd, layers)                                                              \
    X(layernorm_bwd_params, layers)                                                       \
    X(gelu_fwd, layers)                                                                   \
    X(gelu_bwd, layers)                                                                   \
    X(bias_add, layers)                                                                   \
    X(col_sum_acc, layers)                                                                \
    X(seq_embed_fwd, layers)                                                              \
    X(seq_embed_bwd, layers)                                                              \
    X(prenet_input, layers)                                                               \
    X(prenet_dropout, layers)                                                             \
    X(mel_rows_pad, layers)                                                               \
    X(mel_rows_take, layers)                                                              \
    X(l1_masked_fwd, train)                                                               \
    X(l1_masked_bwd, train)                                                               \
    X(bce_stop_fwd, train)                                                                \
    X(bce_stop_bwd, train)                                                                \
    X(sum_squares, train)                                                                 \
    X(reduce_sum, train)                                                                  \
    X(nonfinite_check, train)                                                             \
    X(adamw, train)                                                                       \
    X(train_schedule, train)                                                              \
    X(qkv_split, attention)                                                               \
    X(qkv_merge_grad, attention)                                                          \
    X(heads_merge, attention)                                                             \
    X(heads_split_grad, attention)                                                        \
    X(softmax_causal_fwd, attention)                                                      \
    X(softmax_causal_bwd, attention)                                                      \
    X(ga_fwd, attention)                                                                  \
    X(ga_bwd, attention)                                                                  \
    X(attn_fused_fwd, attention)                                                          \
    X(attn_fused_bwd, attention)                                                          \
    X(attn_tc_fwd, attention_tc)                                                          \
    X(attn_tc_bwd, attention_tc)                                                          \
    X(batch_prep, batch_prep)

typedef enum tandem_kernel_id {
#define TANDEM_KID_ENUM(name, group) TANDEM_KID_##name,
    TANDEM_KERNEL_LIST(TANDEM_KID_ENUM)
#undef TANDEM_KID_ENUM
    TANDEM_KERNEL_COUNT
} tandem_kernel_id;

#ifndef __CUDACC__
/* For the cost functions: c = flops, and elements read / written at the given element sizes
 * (bytes). Counts are doubles: a step's totals pass 2^31 easily. */
static inline void tandem_kcost(tandem_kernel_cost *c, double flops, double read_bytes,
                                double written_bytes) {
    c->flops = flops;
    c->bytes_read = read_bytes;
    c->bytes_written = written_bytes;
}

/* A GEMM's cost (the fatbin GEMM kernels and the GEMM op share it): 2·m·n·k per item; A and B
 * read once each (an operand with batch stride 0 is one matrix shared by every item), at
 * ab_bytes per element; C (f32) read when beta != 0 and written once. */
static inline void tandem_kcost_gemm(tandem_kernel_cost *c, int64_t m, int64_t n, int64_t k,
                                     int64_t batch, int64_t stride_a, int64_t stride_b,
                                     double ab_bytes, float beta) {
    const double items = (double)batch, cn = (double)m * (double)n * items;
    const double an = (double)m * (double)k * (stride_a ? items : 1.0);
    const double bn = (double)k * (double)n * (stride_b ? items : 1.0);
    tandem_kcost(c, 2.0 * (double)m * (double)n * (double)k * items,
                 (an + bn) * ab_bytes + (beta != 0.0f ? cn * 4.0 : 0.0), cn * 4.0);
}

/* What a GEMM's epilogue adds to tandem_kcost_gemm's (which counts C as f32): C of ce bytes per
 * element, a bias [n], an aux matrix laid out as C written (aux_out) or read (aux_in). */
static inline void tandem_kcost_gemm_epi(tandem_kernel_cost *c, int64_t m, int64_t n, int64_t batch,
                                         float beta, double ce, int bias, int aux_out, int aux_in) {
    const double cn = (double)m * (double)n * (double)batch;
    c->bytes_written += cn * (ce - 4.0) + (aux_out ? ce * cn : 0.0);
    c->bytes_read += (beta != 0.0f ? cn * (ce - 4.0) : 0.0) + (bias ? ce * (double)n : 0.0) +
                     (aux_in ? ce * cn : 0.0);
}

#define TANDEM_KDECL(name, group)                                                         \
    void tandem_k_##name##_geom(const tandem_k_##name##_args *a, tandem_launch_dims *d);  \
    void tandem_k_##name##_host(const tandem_k_##name##_args *a);                         \
    void tandem_k_##name##_cost(const tandem_k_##name##_args *a, tandem_kernel_cost *c);
TANDEM_KERNEL_LIST(TANDEM_KDECL)
#undef TANDEM_KDECL

typedef struct tandem_kernel_info {
    const char *name;        /* "fill_f32" */
    const char *entry;       /* "tandem_k_fill_f32": the symbol in the fatbin */
    const char *group;       /* "basic": the kernels/<group>.* files it lives in */
    size_t args_size;        /* sizeof(tandem_k_<name>_args) */
    void (*geom)(const void *args, tandem_launch_dims *d);
    void (*host)(const void *args);
    void (*cost)(const void *args, tandem_kernel_cost *c); /* zeroes c, then fills it */
} tandem_kernel_info;

/* Indexed by tandem_kernel_id. */
extern const tandem_kernel_info tandem_kernel_table[TANDEM_KERNEL_COUNT];
/* Lookup by name ("fill_f32" or "tandem_k_fill_f32"); -1 if unknown. */
int tandem_kernel_find(const char *name);
#endif

#endif
