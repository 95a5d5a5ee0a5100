/* cost_price.c — the time of one recorded launch on a GPU (cost.h): the largest of its memory,
 * instruction-issue, latency, tensor-core and CUDA-core terms. A fatbin kernel's issue and latency
 * terms come from its compiled code (runtime/run/kernel_code.h): its innermost loops are its
 * steady state, and the launch's recorded FLOPs and bytes say how many passes of them it makes.
 * The constants and their sources are in docs/BENCHMARKS-training.md, "Step cost model". */
#include <math.h>
#include <string.h>

#include "runtime/run/cost.h"

const char *tandem_cost_bound_name(tandem_cost_bound b) {
    static const char *const names[TANDEM_BOUND_COUNT] = {"memory", "issue", "latency", "tensor", "fp32"};
    return (int)b >= 0 && b < TANDEM_BOUND_COUNT ? names[b] : "?";
}

static double dmin(double a, double b) { return a < b ? a : b; }
static double dmax(double a, double b) { return a > b ? a : b; }

/* Blocks of this launch one SM holds at once: threads, registers (allocated per warp in 256s)
 * and shared memory (static + dynamic) against the SM's limits. */
static double blocks_per_sm(const tandem_rec_entry *e, const tandem_kernel_code *c, const tandem_gpu_spec *g) {
    const double wpb = ceil((e->threads ? e->threads : 256) / 32.0);
    double n = dmin(g->max_blocks_sm, floor(g->max_warps_sm / wpb));
    const double regs_block = ceil(c->regs * 32.0 / 256.0) * 256.0 * wpb;
    if (regs_block > 0) n = dmin(n, floor(g->regs_sm / regs_block));
    const double smem = (double)c->shared + e->shmem;
    if (smem > 0) n = dmin(n, floor(g->smem_sm / smem));
    return n < 1 ? 1 : n;
}

/* Passes of the innermost loops the launch makes, over all its warps: the most any of its recorded
 * quantities asks for (tensor FLOPs, CUDA-core FLOPs, global bytes) at what one pass does. */
static double loop_passes(const tandem_rec_entry *e, const tandem_kernel_code *c, double warps) {
    if (c->loops == 0) return warps;
    double p = 0;
    const double tensor = e->cost.tensor_flops, fp = e->cost.flops - tensor;
    const double fp_pass = 32.0 * (2.0 * c->ffma + c->fadd_fmul), bytes_pass = 32.0 * (c->ldg_bytes + c->stg_bytes);
    if (c->hmma_flops > 0) p = dmax(p, tensor / c->hmma_flops);
    if (fp_pass > 0) p = dmax(p, fp / fp_pass);
    if (bytes_pass > 0) p = dmax(p, (e->cost.bytes_read + e->cost.bytes_written) / bytes_pass);
    return p;
}

static void price_kernel(const tandem_rec_entry *e, const tandem_kernel_code *c, const tandem_gpu_spec *g,
                         tandem_cost_terms *t) {
    const double blocks = e->blocks > 0 ? (double)e->blocks : 1.0;
    const double active = dmin(g->sms, blocks), share = active / g->sms, hz = g->clock_ghz * 1e9;
    const double tensor = e->cost.tensor_flops;
    /* tensor-core work of a fatbin kernel is mma.sync: its own attainable rate, not the wgmma peak */
    t->s[TANDEM_BOUND_TENSOR] = tensor / (g->mma_sync_tflops * 1e12 * share);
    t->s[TANDEM_BOUND_FP32] = (e->cost.flops - tensor) / (g->fp32_tflops * 1e12 * share);
    if (!c) { /* no code to read: a roofline over the SMs the grid fills */
        t->s[TANDEM_BOUND_MEMORY] /= share;
        return;
    }
    t->have_code = 1;
    const double wpb = ceil((e->threads ? e->threads : 256) / 32.0), warps = blocks * wpb;
    const double resident = dmin(blocks_per_sm(e, c, g), ceil(blocks / active));
    const double w = resident * wpb, passes = loop_passes(e, c, warps);
    t->warps_sm = w;
    /* every warp runs the code around the loops once, each pass the loop body */
    const double instrs = passes * c->loop_instrs + warps * (c->instrs - (c->loops ? c->loop_instrs : 0));
    t->s[TANDEM_BOUND_ISSUE] = instrs / (active * dmin(4.0, w) * hz);
    /* a pass that loads from global memory waits a round trip; w warps per SM overlap theirs */
    const double pass_cycles = (c->ldg_bytes > 0 ? g->mem_latency : 0) + c->loop_instrs;
    t->s[TANDEM_BOUND_LATENCY] = passes / (active * w) * pass_cycles / hz;
}

/* A library GEMM (cuBLASLt): 128 x 128 output tiles, one per SM at a time, each at the SM's
 * share of gemm_eff x the peak; a partial last wave costs a whole one. */
static void price_gemm(const tandem_rec_entry *e, const tandem_gpu_spec *g, int tf32, tandem_cost_terms *t) {
    const tandem_gemm_desc *d = &e->gemm;
    const int tensor = d->a_type == TANDEM_BF16 || tf32 || d->tf32;
    const double peak = d->a_type == TANDEM_BF16 ? g->bf16_tflops : tf32 || d->tf32 ? g->tf32_tflops : g->fp32_tflops;
    const double tiles = ceil(d->m / 128.0) * ceil(d->n / 128.0) * (d->batch > 0 ? d->batch : 1);
    const double waves = ceil(tiles / g->sms);
    const double s = dmax(e->cost.flops / (peak * 1e12 * g->gemm_eff),
                          waves * 2.0 * 128.0 * 128.0 * d->k / (peak * 1e12 * g->gemm_eff / g->sms));
    t->s[tensor ? TANDEM_BOUND_TENSOR : TANDEM_BOUND_FP32] = s;
}

void tandem_cost_price(const tandem_rec_entry *e, const tandem_kernel_code *code, const tandem_gpu_spec *g,
                       int tf32, tandem_cost_terms *out) {
    memset(out, 0, sizeof *out);
    if (e->kind == TANDEM_REC_ALL_REDUCE) return; /* links are not in the GPU spec (docs/SCALING.md) */
    double bytes = e->cost.bytes_read + e->cost.bytes_written;
    if (e->kind == TANDEM_REC_COPY_H2D || e->kind == TANDEM_REC_COPY_D2H) bytes = e->cost.bytes_read;
    out->s[TANDEM_BOUND_MEMORY] = bytes / (g->bandwidth_gbs * 1e9 * g->bw_eff);
    if (e->kind == TANDEM_REC_KERNEL) price_kernel(e, code, g, out);
    if (e->kind == TANDEM_REC_GEMM) price_gemm(e, g, tf32, out);
    for (int b = 0; b < TANDEM_BOUND_COUNT; b++)
        if (out->s[b] > out->s[out->bound]) out->bound = (tandem_cost_bound)b;
    out->seconds = out->s[out->bound];
}

double tandem_cost_seconds(const tandem_rec_entry *e, const tandem_gpu_spec *g, int tf32) {
    const tandem_kernel_code *code = NULL;
    if (e->kind == TANDEM_REC_KERNEL && e->kernel >= 0 && e->kernel < TANDEM_KERNEL_COUNT)
        code = tandem_kernel_code_find(g->arch, tandem_kernel_table[e->kernel].name);
    tandem_cost_terms t;
    tandem_cost_price(e, code, g, tf32, &t);
    return t.seconds;
}
