/* cost_model.c — pricing a recorded step on a GPU (cost.h) and the report of tandem_cost.h.
 * The constants and their sources are in docs/BENCHMARKS-training.md, "Step cost model". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "platform/os/strbuf.h"
#include "runtime/run/cost.h"

/* Dense peaks from NVIDIA's datasheets (no 2:4 sparsity: the datasheets' starred figures
 * halved); launch overheads: eager ~4 us per launch queued one by one, ~1 us per node of a
 * replayed CUDA graph; clocks, mma.sync rates, efficiencies, latency and SM limits: see the doc.
 * key name bf16 tf32 fp32 GB/s eager graph SMs | arch GHz mma.sync gemm_eff bw_eff latency
 * warps blocks regs smem per SM */
static const tandem_gpu_spec gpus[] = {
    {"h100", "NVIDIA H100 SXM5 80 GB", 989.4, 494.7, 66.9, 3350.0, 4.0, 1.0, 132,
     90, 1.98, 494.7, 0.8, 0.9, 800, 64, 32, 65536, 233472},
    {"h200", "NVIDIA H200 SXM 141 GB", 989.4, 494.7, 66.9, 4800.0, 4.0, 1.0, 132,
     90, 1.98, 494.7, 0.8, 0.9, 800, 64, 32, 65536, 233472},
    {"a100", "NVIDIA A100 SXM4 80 GB", 312.0, 156.0, 19.5, 2039.0, 4.0, 1.0, 108,
     80, 1.41, 312.0, 0.8, 0.9, 800, 64, 32, 65536, 167936},
    {"rtx4090", "NVIDIA GeForce RTX 4090", 165.2, 82.6, 82.6, 1008.0, 4.0, 1.0, 128,
     89, 2.52, 165.2, 0.8, 0.9, 800, 48, 24, 65536, 102400},
    {"l4", "NVIDIA L4", 121.0, 60.0, 30.3, 300.0, 4.0, 1.0, 58,
     89, 2.04, 121.0, 0.8, 0.9, 800, 48, 24, 65536, 102400},
};
#define NGPUS (int)(sizeof gpus / sizeof gpus[0])

const tandem_gpu_spec *tandem_gpu_find(const char *key) {
    for (int i = 0; key && i < NGPUS; i++)
        if (strcmp(gpus[i].key, key) == 0) return &gpus[i];
    return NULL;
}

const char *tandem_gpu_keys(void) { return "h100|h200|a100|rtx4090|l4"; }

static const char *const cat_names[TANDEM_COST_CATS] = {
    "gemm-linear", "gemm-attention", "attention-elementwise", "layout", "cast", "elementwise",
    "layernorm",   "reduction",      "loss",                  "optimizer", "copy", "data",
};

const char *tandem_cost_cat_name(tandem_cost_cat c) {
    return (int)c >= 0 && c < TANDEM_COST_CATS ? cat_names[c] : "?";
}

static tandem_cost_cat kernel_category(int id) {
    switch (id) {
    case TANDEM_KID_cast_f32_bf16: case TANDEM_KID_cast_bf16_f32: return TANDEM_COST_CAST;
    case TANDEM_KID_gemm_f32: case TANDEM_KID_gemm_bf16: return TANDEM_COST_GEMM_LINEAR;
    case TANDEM_KID_layernorm_fwd: case TANDEM_KID_layernorm_bwd: case TANDEM_KID_layernorm_bwd_params:
        return TANDEM_COST_LAYERNORM;
    case TANDEM_KID_row_sum_f32: case TANDEM_KID_col_sum_acc:
    case TANDEM_KID_sum_squares:
    case TANDEM_KID_reduce_sum: case TANDEM_KID_nonfinite_check: return TANDEM_COST_REDUCTION;
    case TANDEM_KID_l1_masked_fwd: case TANDEM_KID_l1_masked_bwd: case TANDEM_KID_bce_stop_fwd:
    case TANDEM_KID_bce_stop_bwd: return TANDEM_COST_LOSS;
    case TANDEM_KID_adamw: return TANDEM_COST_OPTIMIZER;
    case TANDEM_KID_qkv_split: case TANDEM_KID_qkv_merge_grad: case TANDEM_KID_heads_merge:
    case TANDEM_KID_heads_split_grad: case TANDEM_KID_mel_rows_pad:
    case TANDEM_KID_mel_rows_take: return TANDEM_COST_LAYOUT;
    case TANDEM_KID_softmax_causal_fwd: case TANDEM_KID_softmax_causal_bwd: case TANDEM_KID_ga_fwd:
    case TANDEM_KID_ga_bwd: return TANDEM_COST_ATTN_ELEMENTWISE;
    case TANDEM_KID_mel_stft: case TANDEM_KID_mel_project: case TANDEM_KID_mel_log:
    case TANDEM_KID_mel_targets: case TANDEM_KID_batch_prep: case TANDEM_KID_prenet_input:
    case TANDEM_KID_seq_embed_fwd: case TANDEM_KID_seq_embed_bwd: return TANDEM_COST_DATA;
    default: break;
    }
    /* a kernel not named above: by its group (new attention kernels are attention work) */
    if (id >= 0 && id < TANDEM_KERNEL_COUNT && strncmp(tandem_kernel_table[id].group, "attention", 9) == 0)
        return TANDEM_COST_ATTN_ELEMENTWISE;
    return TANDEM_COST_ELEMENTWISE;
}

tandem_cost_cat tandem_cost_category(const tandem_rec_entry *e) {
    switch (e->kind) {
    case TANDEM_REC_KERNEL: return kernel_category(e->kernel);
    case TANDEM_REC_GEMM:
        /* both operands batched per item: attention's per-(item, head) products; a linear layer
         * or head shares one weight matrix (stride 0) */
        return e->gemm.batch > 1 && e->gemm.stride_a > 0 && e->gemm.stride_b > 0 ? TANDEM_COST_GEMM_ATTENTION
                                                                                : TANDEM_COST_GEMM_LINEAR;
    default: return TANDEM_COST_COPY;
    }
}

const char *tandem_cost_describe(const tandem_rec_entry *e, char *buf, size_t cap) {
    static const char *const copies[] = {"h2d", "d2h", "d2d", "peer"};
    const tandem_gemm_desc *g = &e->gemm;
    switch (e->kind) {
    case TANDEM_REC_KERNEL:
        snprintf(buf, cap, "%s", e->kernel >= 0 && e->kernel < TANDEM_KERNEL_COUNT
                                     ? tandem_kernel_table[e->kernel].name : "?");
        break;
    case TANDEM_REC_GEMM:
        snprintf(buf, cap, "gemm %s %s%s m=%lld n=%lld k=%lld x%lld%s", g->tf32 ? "tf32" : tandem_dtype_name(g->a_type),
                 g->trans_a ? "T" : "N", g->trans_b ? "T" : "N", (long long)g->m, (long long)g->n,
                 (long long)g->k, (long long)g->batch, e->beta != 0.0f ? " +C" : "");
        break;
    case TANDEM_REC_ALL_REDUCE:
        snprintf(buf, cap, "all-reduce %.0f B", e->cost.bytes_read);
        break;
    default:
        snprintf(buf, cap, "copy %s %.0f B", copies[e->kind - TANDEM_REC_COPY_H2D], e->cost.bytes_read);
    }
    return buf;
}

/* ---- the report -------------------------------------------------------------------------------- */

typedef struct cat_total {
    int64_t launches;
    double flops, rd, wr, s;
} cat_total;

typedef struct cost_sum {
    const tandem_gpu_spec *gpu;
    int tf32;
    const tandem_rec_entry *e;
    int64_t n;
    double *sec;               /* [n] per launch, without overhead */
    tandem_cost_bound *bound;  /* [n] what limits each */
    cat_total cat[TANDEM_COST_CATS], all;
    int64_t kinds[3];          /* kernels, GEMMs, copies */
    double min_flops, min_bytes, min_flops_s, min_bytes_s;
    double lib_bytes;          /* min_traffic_library: what the issue-12 traffic target is against */
} cost_sum;

static void sum_launches(cost_sum *c) {
    for (int64_t i = 0; i < c->n; i++) {
        const tandem_rec_entry *e = &c->e[i];
        tandem_cost_terms terms;
        const tandem_kernel_code *code = e->kind == TANDEM_REC_KERNEL && e->kernel >= 0 && e->kernel < TANDEM_KERNEL_COUNT
                                             ? tandem_kernel_code_find(c->gpu->arch, tandem_kernel_table[e->kernel].name)
                                             : NULL;
        tandem_cost_price(e, code, c->gpu, c->tf32, &terms);
        c->sec[i] = terms.seconds;
        c->bound[i] = terms.bound;
        cat_total *t = &c->cat[tandem_cost_category(e)];
        for (cat_total *x = t; x; x = x == t ? &c->all : NULL) {
            x->launches++;
            x->flops += e->cost.flops;
            x->rd += e->cost.bytes_read;
            x->wr += e->cost.bytes_written;
            x->s += c->sec[i];
        }
        c->kinds[e->kind == TANDEM_REC_KERNEL ? 0 : e->kind == TANDEM_REC_GEMM ? 1 : 2]++;
        if (tandem_cost_category(e) == TANDEM_COST_GEMM_LINEAR) c->min_flops += e->cost.flops;
    }
}

/* Attention's least FLOPs, whatever the path: the causal half of Q K^T and P V forward and of
 * dP, dV, dQ, dK backward (6 products of 2 dh per query-key pair), no recomputation. */
static double min_attention_flops(const tandem_model *m) {
    const tandem_model_dims *d = &m->dims;
    const double pairs = (double)d->seq * (d->seq + 1) / 2.0;
    return (double)d->micro_batches * d->layers * d->batch * d->heads * pairs * 6.0 * 2.0 * d->head_dim;
}

/* What every definition of a step's least traffic shares: per parameter, AdamW's read of param,
 * grad, m, v and write of param, m, v (28 B), the gradient written once (4 B), the GEMM weights
 * read by the forward and by dx (bf16: the copy written once and read twice, 6 B; fp32: the
 * masters read twice, 8 B); the batch read once per micro-batch. */
static double params_and_inputs(const tandem_model *m) {
    const tandem_model_dims *d = &m->dims;
    const double per_param = 32.0 + (d->bf16 ? 6.0 : 8.0);
    const double inputs = (double)d->batch * (d->text_len * 4.0 + d->frames * (d->n_mels + 2) * 4.0);
    return per_param * (double)m->n_real + d->micro_batches * inputs;
}

/* Row counts of one micro-batch: all N rows carry keys and values; the query side of a block
 * (attention queries, out-proj, LN2, MLP) matters on every row but in the last block, whose
 * text rows reach no loss (there only the B * Tm mel rows). Returns sum over layers of the
 * query rows. */
static double query_rows(const tandem_model_dims *d, double *N, double *mel) {
    *N = (double)d->batch * d->seq;
    *mel = (double)d->batch * d->mel_len;
    return (d->layers - 1) * *N + *mel;
}

/* The strict minimum traffic (docs/BENCHMARKS-training.md, "Step cost model"): the activations
 * the backward needs written once and read once (E bytes each) — per layer and row x, LN1 out,
 * k, v (4 d) and on the query rows q, attention out, x + attn, LN2 out and the 4d hidden (8 d) —
 * the residual-stream gradient (f32) written and read once per layer, the final LN output and the
 * prenet input likewise. Activation gradients inside a layer cost nothing here: a bound below
 * every implementation, not one an implementation of library GEMMs can approach. */
static double min_traffic(const tandem_model *m) {
    const tandem_model_dims *d = &m->dims;
    const double E = d->bf16 ? 2.0 : 4.0;
    double N, mel;
    const double Q = query_rows(d, &N, &mel);
    const double layers = d->layers * N * d->d * (4.0 * E * 2.0 + 4.0 * 2.0) + Q * d->d * 8.0 * E * 2.0;
    const double ends = mel * (d->d + d->group) * E * 2.0;
    return params_and_inputs(m) + d->micro_batches * (layers + ends);
}

/* The library minimum traffic (same section): the least any step moves that runs every linear
 * product as a library GEMM (operands read from memory, the result written; epilogues fuse bias,
 * GELU with its aux output, dGELU, bias gradients and the residual add), attention as one fused
 * kernel each way, LayerNorm as its own kernel, and recomputes nothing. Per layer and row, in
 * activation elements of E bytes (d each) and residual-gradient elements of 4 bytes:
 *   all rows  LN1 fwd (x, ln1: 2), K/V GEMM (ln1, k v: 3), attention reads k v (2) and the
 *             backward reads k v, writes dk dv (4), d(K/V) GEMMs dx (3) and dW (3), LN1 backward
 *             (dln1, x: 2; residual gradient read and written: 2)            = 19 E + 2 g
 *   query rows q written (1), attention fwd q, o (2), bwd q o do dq (4), dQ into dx and dW (2),
 *             out-proj + residual (o, x, x_mid: 3), LN2 (2), fc with GELU aux (ln2, pre, h: 9),
 *             proj + residual (h, x_mid, x_out: 6); backward proj dx with dGELU (dres, pre,
 *             dpre: 8 + g), proj dW (h: 4 + g), fc dx (dpre, dln2: 5), fc dW (5), LN2 backward
 *             (2 + 2 g), out-proj dx (do: 1 + g) and dW (o: 1 + g)            = 55 E + 6 g
 * and at the ends, per mel row: final LN (2 d), heads (read 1 d, dx 1 d, dW 1 d), final LN
 * backward (2 d + 1 g), prenet GEMM (group in, pre and act out: 2 d), the embedding reading act
 * (1 d), its backward reading pre and writing dpre (2 d), prenet dW (group and dpre: 1 d); per
 * row x0 written (1 d) and the residual gradient read by the embedding backward (1 g). */
static double min_traffic_library(const tandem_model *m) {
    const tandem_model_dims *d = &m->dims;
    const double E = d->bf16 ? 2.0 : 4.0, g = 4.0, D = d->d;
    double N, mel;
    const double Q = query_rows(d, &N, &mel);
    const double layers = d->layers * N * D * (19.0 * E + 2.0 * g) + Q * D * (55.0 * E + 6.0 * g);
    const double ends = mel * (D * (13.0 * E + g) + 2.0 * d->group * E) + N * D * (E + g);
    return params_and_inputs(m) + d->micro_batches * (layers + ends);
}

static void floor_of(cost_sum *c, const tandem_model *m) {
    c->min_bytes = min_traffic(m);
    c->lib_bytes = min_traffic_library(m);
    c->min_flops += min_attention_flops(m);
    /* the peak the step's GEMMs get: bf16, TF32 (--tf32 or the config's tf32), else FP32 */
    const int tf32 = c->tf32 || m->dims.tf32;
    const double peak = m->dims.bf16 ? c->gpu->bf16_tflops : tf32 ? c->gpu->tf32_tflops : c->gpu->fp32_tflops;
    c->min_flops_s = c->min_flops / (peak * 1e12);
    c->min_bytes_s = c->min_bytes / (c->gpu->bandwidth_gbs * 1e9);
}

static double step_ms(const cost_sum *c, double overhead_us) {
    return c->all.s * 1e3 + (double)c->all.launches * overhead_us * 1e-3;
}

static int is_attention(const tandem_rec_entry *e) {
    const tandem_cost_cat k = tandem_cost_category(e);
    return k == TANDEM_COST_GEMM_ATTENTION || k == TANDEM_COST_ATTN_ELEMENTWISE;
}

/* Indices of the ten most expensive launches (outside attention when skip_attention), most
 * expensive first (ties: the earlier). */
static int top10(const cost_sum *c, int64_t *top, int skip_attention) {
    int k = 0;
    for (int64_t i = 0; i < c->n; i++) {
        if (skip_attention && is_attention(&c->e[i])) continue;
        int j;
        if (k < 10) {
            j = k++;
        } else {
            if (!(c->sec[i] > c->sec[top[9]])) continue;
            j = 9;
        }
        while (j > 0 && c->sec[i] > c->sec[top[j - 1]]) {
            top[j] = top[j - 1];
            j--;
        }
        top[j] = i;
    }
    return k;
}

static void text_header(tandem_strbuf *o, const cost_sum *c, const tandem_model *m, const char *name) {
    const tandem_model_dims *d = &m->dims;
    const tandem_gpu_spec *g = c->gpu;
    tandem_strbuf_printf(o, "cost of one training step of %s: d_model %d, layers %d, heads %d, r %d, batch %d x "
                         "grad_accum %d, T %d (%d text + %d mel), %s, %lld parameters\n",
                         name, d->d, d->layers, d->heads, d->r, d->batch, d->micro_batches, d->seq, d->text_len,
                         d->mel_len, d->bf16 ? "bf16" : "fp32", (long long)m->n_real);
    tandem_strbuf_printf(o, "recorded from the code path on the dry device: %lld launches (%lld kernels, %lld GEMMs, "
                         "%lld copies)\n", (long long)c->n, (long long)c->kinds[0], (long long)c->kinds[1],
                         (long long)c->kinds[2]);
    tandem_strbuf_printf(o, "GPU %s (%s): bf16 tensor %.1f TFLOP/s, TF32 %.1f, FP32 %.1f, memory %.0f GB/s; "
                         "launch %.1f us eager, %.1f us in a graph; f32 GEMMs at %s; every time below is modelled (%s)\n\n", g->key, g->name,
                         g->bf16_tflops, g->tf32_tflops, g->fp32_tflops, g->bandwidth_gbs, g->launch_eager_us,
                         g->launch_graph_us, c->tf32 ? "TF32" : "FP32", tandem_kernel_code_source());
}

static void text_categories(tandem_strbuf *o, const cost_sum *c) {
    tandem_strbuf_printf(o, "%-22s %8s %11s %10s %10s %11s %6s\n", "category", "launches", "GFLOP", "GB read",
                         "GB written", "modelled ms", "share");
    for (int k = 0; k <= TANDEM_COST_CATS; k++) {
        const cat_total *t = k < TANDEM_COST_CATS ? &c->cat[k] : &c->all;
        if (!t->launches) continue;
        tandem_strbuf_printf(o, "%-22s %8lld %11.2f %10.3f %10.3f %11.3f %5.1f%% modelled\n",
                             k < TANDEM_COST_CATS ? cat_names[k] : "total", (long long)t->launches, t->flops * 1e-9,
                             t->rd * 1e-9, t->wr * 1e-9, t->s * 1e3, c->all.s > 0 ? 100.0 * t->s / c->all.s : 0.0);
    }
}

static void text_summary(tandem_strbuf *o, const cost_sum *c) {
    const tandem_gpu_spec *g = c->gpu;
    const double moved = c->all.rd + c->all.wr;
    tandem_strbuf_printf(o, "\nmodelled step: %.3f ms in a CUDA graph, %.3f ms eager (kernels alone %.3f ms; "
                         "%lld launches x %.1f / %.1f us)\n", step_ms(c, g->launch_graph_us),
                         step_ms(c, g->launch_eager_us), c->all.s * 1e3, (long long)c->all.launches,
                         g->launch_graph_us, g->launch_eager_us);
    tandem_strbuf_printf(o, "modelled floor: minimum FLOPs %.2f GFLOP (%.3f ms at peak), minimum traffic %.3f GB (%.3f ms); "
                         "floor %.3f ms\n", c->min_flops * 1e-9, c->min_flops_s * 1e3, c->min_bytes * 1e-9,
                         c->min_bytes_s * 1e3,
                         (c->min_flops_s > c->min_bytes_s ? c->min_flops_s : c->min_bytes_s) * 1e3);
    tandem_strbuf_printf(o, "bytes moved %.3f GB = %.2f x the minimum traffic; FLOPs %.2f GFLOP = %.2f x the minimum\n",
                         moved * 1e-9, c->min_bytes > 0 ? moved / c->min_bytes : 0.0, c->all.flops * 1e-9,
                         c->min_flops > 0 ? c->all.flops / c->min_flops : 0.0);
    tandem_strbuf_printf(o, "library minimum traffic %.3f GB (library GEMMs, fused attention, no recomputation): "
                         "bytes moved = %.2f x it\n", c->lib_bytes * 1e-9, c->lib_bytes > 0 ? moved / c->lib_bytes : 0.0);
}

static void text_launch(tandem_strbuf *o, const cost_sum *c, int64_t i) {
    char what[128];
    const tandem_rec_entry *e = &c->e[i];
    tandem_strbuf_printf(o, "%6lld  %-21s %-44s %9.2f %9.3f %9.2f %-7s modelled\n", (long long)i, cat_names[tandem_cost_category(e)],
                         tandem_cost_describe(e, what, sizeof what), e->cost.flops * 1e-6,
                         (e->cost.bytes_read + e->cost.bytes_written) * 1e-6, c->sec[i] * 1e6,
                         tandem_cost_bound_name(c->bound[i]));
}

static void text_top(tandem_strbuf *o, const cost_sum *c, int all) {
    static const char head[] = "%6s  %-21s %-44s %9s %9s %9s %s\n";
    if (all) {
        tandem_strbuf_printf(o, "\nevery launch, in order:\n");
        tandem_strbuf_printf(o, head, "#", "category", "launch", "MFLOP", "MB", "us", "bound");
        for (int64_t i = 0; i < c->n; i++) text_launch(o, c, i);
    }
    for (int skip = 0; skip < 2; skip++) {
        int64_t top[10];
        const int k = top10(c, top, skip);
        tandem_strbuf_printf(o, "\ntop 10 launches by modelled time%s:\n",
                             skip ? " outside attention (gemm-attention, attention-elementwise)" : "");
        tandem_strbuf_printf(o, head, "#", "category", "launch", "MFLOP", "MB", "us", "bound");
        for (int j = 0; j < k; j++) text_launch(o, c, top[j]);
    }
}

static void json_report(tandem_strbuf *o, const cost_sum *c, const tandem_model *m, const char *name) {
    const tandem_model_dims *d = &m->dims;
    tandem_strbuf_printf(o, "{\"config\":\"%s\",\"gpu\":\"%s\",\"precision\":\"%s\",\"batch\":%d,\"grad_accum\":%d,"
                         "\"tf32\":%d,\"launches\":[", name, c->gpu->key, d->bf16 ? "bf16" : "fp32", d->batch,
                         d->micro_batches, c->tf32);
    char what[128];
    for (int64_t i = 0; i < c->n; i++) {
        const tandem_rec_entry *e = &c->e[i];
        tandem_strbuf_printf(o, "%s{\"launch\":\"%s\",\"category\":\"%s\",\"flops\":%.17g,\"bytes_read\":%.17g,"
                             "\"bytes_written\":%.17g,\"us\":%.6g}", i ? "," : "",
                             tandem_cost_describe(e, what, sizeof what), cat_names[tandem_cost_category(e)],
                             e->cost.flops, e->cost.bytes_read, e->cost.bytes_written, c->sec[i] * 1e6);
    }
    tandem_strbuf_printf(o, "],\"categories\":{");
    int first = 1;
    for (int k = 0; k < TANDEM_COST_CATS; k++) {
        const cat_total *t = &c->cat[k];
        if (!t->launches) continue;
        tandem_strbuf_printf(o, "%s\"%s\":{\"launches\":%lld,\"flops\":%.17g,\"bytes_read\":%.17g,"
                             "\"bytes_written\":%.17g,\"ms\":%.6g}", first ? "" : ",", cat_names[k],
                             (long long)t->launches, t->flops, t->rd, t->wr, t->s * 1e3);
        first = 0;
    }
    tandem_strbuf_printf(o, "},\"kernels\":%lld,\"gemms\":%lld,\"copies\":%lld,\"flops\":%.17g,\"bytes\":%.17g,"
                         "\"kernel_ms\":%.6g,\"graph_ms\":%.6g,\"eager_ms\":%.6g,\"min_flops\":%.17g,"
                         "\"min_bytes\":%.17g,\"lib_min_bytes\":%.17g,\"floor_ms\":%.6g}\n", (long long)c->kinds[0], (long long)c->kinds[1],
                         (long long)c->kinds[2], c->all.flops, c->all.rd + c->all.wr, c->all.s * 1e3,
                         step_ms(c, c->gpu->launch_graph_us), step_ms(c, c->gpu->launch_eager_us), c->min_flops,
                         c->min_bytes, c->lib_bytes,
                         (c->min_flops_s > c->min_bytes_s ? c->min_flops_s : c->min_bytes_s) * 1e3);
}

void tandem_cost_options_init(tandem_cost_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->gpu = "h100";
}

static tandem_status write_report(const cost_sum *c, const tandem_model *m, const tandem_cost_options *o,
                                  tandem_strbuf *out) {
    const char *name = o->config_name ? o->config_name : "config";
    if (o->json) {
        json_report(out, c, m, name);
        return TANDEM_OK;
    }
    text_header(out, c, m, name);
    text_categories(out, c);
    text_summary(out, c);
    text_top(out, c, o->launches);
    return TANDEM_OK;
}

/* Record one step of cfg and price it on o's GPU (o NULL: the defaults) into c; release with
 * price_release (*r keeps the entries alive). */
static tandem_status price_step(const tandem_config *cfg, const tandem_cost_options *o, cost_sum *c,
                                tandem_cost_run **r) {
    memset(c, 0, sizeof *c);
    *r = NULL;
    const char *gpu = o && o->gpu ? o->gpu : "h100";
    c->gpu = tandem_gpu_find(gpu);
    if (!c->gpu)
        return tandem_fail(TANDEM_E_INVALID, "cost: GPU '%s' is not known; expected one of %s", gpu,
                           tandem_gpu_keys());
    c->tf32 = o && o->tf32;
    TANDEM_TRY(tandem_cost_run_open(cfg, NULL, r));
    TANDEM_TRY(tandem_cost_run_step(*r));
    c->e = tandem_cost_run_entries(*r, &c->n);
    c->sec = tandem_calloc((size_t)c->n + 1, sizeof *c->sec);
    c->bound = tandem_calloc((size_t)c->n + 1, sizeof *c->bound);
    if (!c->sec || !c->bound) return tandem_fail(TANDEM_E_NOMEM, "cost: out of host memory");
    sum_launches(c);
    floor_of(c, tandem_cost_run_model(*r));
    return TANDEM_OK;
}

static void price_release(cost_sum *c, tandem_cost_run *r) {
    tandem_free(c->sec);
    tandem_free(c->bound);
    if (r) tandem_cost_run_close(r);
}

tandem_status tandem_cost_report(const tandem_config *cfg, const tandem_cost_options *o, char *buf, size_t cap,
                                 size_t *len) {
    if (len) *len = 0;
    if (buf && cap) buf[0] = 0;
    if (!cfg || (!buf && cap)) return tandem_fail(TANDEM_E_INVALID, "tandem_cost_report: NULL argument");
    tandem_cost_options def;
    tandem_cost_options_init(&def);
    if (!o) o = &def; /* write_report reads its other fields */
    cost_sum c;
    tandem_cost_run *r = NULL;
    tandem_status st = price_step(cfg, o, &c, &r);
    if (st == TANDEM_OK) {
        tandem_strbuf out = {buf, cap, 0};
        st = write_report(&c, tandem_cost_run_model(r), o, &out);
        if (len) *len = out.len;
    }
    price_release(&c, r);
    return st;
}

tandem_status tandem_cost_estimate_step(const tandem_config *cfg, const tandem_cost_options *o,
                                        tandem_cost_estimate *out) {
    if (!cfg || !out) return tandem_fail(TANDEM_E_INVALID, "tandem_cost_estimate_step: NULL argument");
    memset(out, 0, sizeof *out);
    cost_sum c;
    tandem_cost_run *r = NULL;
    tandem_status st = price_step(cfg, o, &c, &r);
    if (st == TANDEM_OK) {
        snprintf(out->gpu, sizeof out->gpu, "%s", c.gpu->key);
        out->launches = c.all.launches;
        out->graph_ms = step_ms(&c, c.gpu->launch_graph_us);
        out->eager_ms = step_ms(&c, c.gpu->launch_eager_us);
        out->floor_ms = (c.min_flops_s > c.min_bytes_s ? c.min_flops_s : c.min_bytes_s) * 1e3;
        out->samples_per_s = out->graph_ms > 0 ? cfg->batch_size * cfg->grad_accum / (out->graph_ms * 1e-3) : 0;
        out->bytes = c.all.rd + c.all.wr;
        out->min_bytes = c.min_bytes;
        out->lib_min_bytes = c.lib_bytes;
    }
    price_release(&c, r);
    return st;
}
