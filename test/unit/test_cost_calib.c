/* test_cost_calib.c — the step cost model (runtime/run/cost.h) against every time measured on a GPU:
 * bench/calibration/h100-2026-11-24-*.tsv hold the per-op and per-step times measured on an H100,
 * the launch lists the measured commits make (recorded by their own `tandem cost`) and their
 * kernels' compiled code (their fatbins read by tools/sass_table.sh). Each launch is priced with
 * tandem_cost_price on the h100 spec; each op's modelled sum is compared with its measurement.
 *
 *   ops:    every measured op within its bound (±25 %, or the wider bound the table below states
 *           for an op the model cannot meet honestly; docs/BENCHMARKS-training.md says why)
 *   steps:  every measured step within ±15 % (or its stated bound), graph launch overhead included
 *   table:  the built kernel code table covers every registry kernel on sm_80, sm_89 and sm_90
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/run/cost.h"
#include "runtime/run/kernel_code.h"
#include "tandem.h"
#include "test/testutil.h"

#define CALIB TANDEM_SOURCE_DIR "/bench/calibration/h100-2026-11-24-"

enum { MAX_ROWS = 2048, MAX_CODE = 128 };

typedef struct launch_row {
    char cas[48], commit[16], kernel[48];
    int kind;
    double count;
    tandem_rec_entry e;
} launch_row;

typedef struct code_row {
    char commit[16], name[48];
    tandem_kernel_code c;
} code_row;

static launch_row rows[MAX_ROWS];
static int nrows;
static code_row codes[MAX_CODE];
static int ncodes;

static FILE *open_calib(const char *what) {
    char path[512];
    snprintf(path, sizeof path, CALIB "%s", what);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("cannot open %s", path);
    return f;
}

static void load_launches(void) {
    FILE *f = open_calib("launches.tsv");
    char line[1024];
    nrows = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        assert_true(nrows < MAX_ROWS);
        launch_row *r = &rows[nrows++];
        memset(r, 0, sizeof *r);
        tandem_rec_entry *e = &r->e;
        long long blocks, m, n, k, batch;
        int a_type, tf32;
        unsigned threads, shmem;
        double beta;
        const int got = sscanf(line, "%47s %15s %d %47s %lf %lf %lf %lf %lf %lld %u %u %lld %lld %lld %lld %d %d %lf",
                               r->cas, r->commit, &r->kind, r->kernel, &r->count, &e->cost.flops,
                               &e->cost.tensor_flops, &e->cost.bytes_read, &e->cost.bytes_written, &blocks, &threads,
                               &shmem, &m, &n, &k, &batch, &a_type, &tf32, &beta);
        if (got != 19) fail_msg("launches.tsv: %d fields of 19 in '%s'", got, line);
        e->kind = (tandem_rec_kind)r->kind;
        e->kernel = -1;
        e->blocks = blocks;
        e->threads = threads;
        e->shmem = shmem;
        e->gemm = (tandem_gemm_desc){.m = m, .n = n, .k = k, .batch = batch, .a_type = (tandem_dtype)a_type, .tf32 = tf32};
        e->beta = (float)beta;
    }
    fclose(f);
}

static void load_code(void) {
    FILE *f = open_calib("kernel-code.tsv");
    char line[1024];
    ncodes = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        assert_true(ncodes < MAX_CODE);
        code_row *r = &codes[ncodes++];
        tandem_kernel_code *c = &r->c;
        const int got = sscanf(line, "%15s %d %47s %d %d %d %d %d %d %d %d %d %d %d %lf %d %d %d %d", r->commit,
                               &c->arch, r->name, &c->regs, &c->shared, &c->stack, &c->instrs, &c->loop_instrs,
                               &c->loops, &c->ldg_bytes, &c->stg_bytes, &c->lds, &c->sts, &c->ldsm, &c->hmma_flops,
                               &c->ffma, &c->fadd_fmul, &c->mufu, &c->bar);
        if (got != 19) fail_msg("kernel-code.tsv: %d fields of 19 in '%s'", got, line);
        c->kernel = r->name;
    }
    fclose(f);
}

static const tandem_kernel_code *code_of(const char *commit, const char *kernel) {
    for (int i = 0; i < ncodes; i++)
        if (strcmp(codes[i].commit, commit) == 0 && strcmp(codes[i].name, kernel) == 0) return &codes[i].c;
    fail_msg("kernel-code.tsv has no %s of %s", kernel, commit);
    return NULL;
}

/* ms the model gives the launches of (cas, commit) whose kernel is in the comma list (or every
 * launch for "*" with graph overhead; every GEMM for "gemm") */
static double modelled_ms(const char *cas, const char *commit, const char *kernels) {
    const tandem_gpu_spec *g = tandem_gpu_find("h100");
    const int step = strcmp(kernels, "*") == 0, gemm = strcmp(kernels, "gemm") == 0;
    double s = 0;
    for (int i = 0; i < nrows; i++) {
        const launch_row *r = &rows[i];
        if (strcmp(r->cas, cas) || strcmp(r->commit, commit)) continue;
        int take = step || (gemm && r->kind == TANDEM_REC_GEMM);
        if (!take && r->kind == TANDEM_REC_KERNEL) {
            char list[300];
            snprintf(list, sizeof list, ",%s,", kernels);
            char key[64];
            snprintf(key, sizeof key, ",%s,", r->kernel);
            take = strstr(list, key) != NULL;
        }
        if (!take) continue;
        tandem_cost_terms t;
        tandem_cost_price(&r->e, r->kind == TANDEM_REC_KERNEL ? code_of(r->commit, r->kernel) : NULL, g, 0, &t);
        s += r->count * (t.seconds + (step ? g->launch_graph_us * 1e-6 : 0));
        if (getenv("TANDEM_CALIB_VERBOSE") && !step)
            printf("    %-22s x%-3g %8.1f us  %s  memory %.1f issue %.1f latency %.1f tensor %.1f fp32 %.1f  warps/SM %.0f\n",
                   r->kernel, r->count, t.seconds * 1e6, tandem_cost_bound_name(t.bound), t.s[0] * 1e6, t.s[1] * 1e6,
                   t.s[2] * 1e6, t.s[3] * 1e6, t.s[4] * 1e6, t.warps_sm);
    }
    return s * 1e3;
}

/* The bound each measured figure is held to: the model within ±25 % of an op, ±15 % of a step,
 * unless listed here with the factor it meets (measured / modelled in [1/f, f]) and why; the doc
 * (docs/BENCHMARKS-training.md, "Calibration") says the same. Kernel code whose loop trip counts
 * the recorded bytes do not show (a scan of data re-read from cache by every thread or block, a
 * serial chain of dependent loads) is the one physical gap named here. */
static const struct wider_bound { const char *cas, *commit, *op; double factor; } wider[] = {
    /* every thread counted the whole batch's key mask: loop trips of B*T per thread */
    {"base_bf16_materialised", "8f1d8a1", "guided attention", 20.0},
    /* every block still scans the key mask, and sums it serially from shared memory */
    {"base_bf16_materialised", "057a2d7", "guided attention", 5.0},
    /* one thread walked 6 400 tokens with a dependent load per match */
    {"base_bf16_materialised", "8f1d8a1", "seq_embed_bwd", 55.0},
    /* every block lists its symbol's rows by scanning all tokens (cache reads, not in the bytes) */
    {"base_bf16_materialised", "057a2d7", "seq_embed_bwd", 6.0},
    /* a block reduction and barriers per row sit in the outer loop, outside the innermost one */
    {"base_bf16_materialised", "8f1d8a1", "layernorm backward", 3.2},
    /* 2.2 TB/s measured where softmax and the layout kernels reach the model's 3.0 TB/s: not explained */
    {"base_bf16_materialised", "8f1d8a1", "cast", 1.45},
    /* steps with the ops above in them (ga 3.4 ms, seq_embed_bwd 1.5 ms, LN 1.8 ms short) */
    {"base_bf16_materialised", "8f1d8a1", "step", 1.3},
    {"base_bf16_fused", "8f1d8a1", "step", 1.25},
    {"tiny_bf16", "8f1d8a1", "step", 1.25},
};

static int within(const char *cas, const char *commit, const char *op, double measured, double model, char *bound,
                  size_t cap) {
    for (size_t i = 0; i < sizeof wider / sizeof wider[0]; i++)
        if (!strcmp(wider[i].cas, cas) && !strcmp(wider[i].commit, commit) && !strcmp(wider[i].op, op)) {
            const double f = wider[i].factor, r = measured / model;
            snprintf(bound, cap, "x%.2f", f);
            return r <= f && r >= 1.0 / f;
        }
    const double b = strcmp(op, "step") == 0 ? 0.15 : 0.25;
    snprintf(bound, cap, "±%.0f%%", b * 100);
    return fabs(model / measured - 1.0) <= b;
}

static void check_measured(int steps) {
    load_launches();
    load_code();
    FILE *f = open_calib("measured.tsv");
    char line[1024];
    int n = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        char cas[48], commit[16], op[48], kernels[256];
        double ms;
        char *fld[6] = {0};
        int k = 0;
        for (char *p = strtok(line, "\t\n"); p && k < 6; p = strtok(NULL, "\t\n")) fld[k++] = p;
        assert_true(k >= 5);
        snprintf(cas, sizeof cas, "%s", fld[0]);
        snprintf(commit, sizeof commit, "%s", fld[1]);
        snprintf(op, sizeof op, "%s", fld[2]);
        snprintf(kernels, sizeof kernels, "%s", fld[3]);
        ms = atof(fld[4]);
        if ((strcmp(op, "step") == 0) != steps) continue;
        const double model = modelled_ms(cas, commit, kernels);
        char bound[16];
        const int ok = within(cas, commit, op, ms, model, bound, sizeof bound);
        printf("  %-24s %-8s %-20s measured %8.3f ms  modelled %8.3f ms  measured/modelled %5.2f  bound %s %s\n",
               cas, commit, op, ms, model, ms / model, bound, ok ? "ok" : "MISSED");
        bad += !ok;
        n++;
    }
    fclose(f);
    assert_true(n > 0);
    if (bad) fail_msg("%d of %d measured %s outside their bounds", bad, n, steps ? "steps" : "ops");
}

static void test_ops(void **state) {
    (void)state;
    check_measured(0);
}

static void test_steps(void **state) {
    (void)state;
    check_measured(1);
}

static void test_table(void **state) {
    (void)state;
    static const int arches[] = {80, 89, 90};
    for (int i = 0; i < TANDEM_KERNEL_COUNT; i++)
        for (int a = 0; a < 3; a++)
            if (!tandem_kernel_code_find(arches[a], tandem_kernel_table[i].name))
                fail_msg("the kernel code table (%s) has no %s on sm_%d: run `make kernel-code-table` on a "
                         "machine with cuobjdump", tandem_kernel_code_source(), tandem_kernel_table[i].name, arches[a]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops),
        cmocka_unit_test(test_steps),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
