/* cmd_cost.c — `tandem cost`: the step cost model (tandem_cost_report, tandem_cost.h): one real
 * training step of a config recorded launch by launch on a dry device (nothing executes, no GPU
 * needed) and priced on a GPU's published peaks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tandem.h"
#include "tools/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem cost --config FILE [--gpu h100|h200|a100|rtx4090|l4] [--batch N]\n"
            "                   [--precision fp32|bf16] [--grad-accum N] [--tf32] [--launches] [--json]\n\n"
            "Records one training step of the config from the code path, launch by launch, on a dry\n"
            "device (nothing executes: shapes decide the launch list) and prices it on the GPU's\n"
            "published peaks: per-category totals (launches, FLOPs, bytes), the modelled step in a\n"
            "CUDA graph and eager, the ten most expensive launches, the floor (minimum FLOPs and\n"
            "minimum traffic) and bytes moved against it and against the library minimum traffic\n"
            "(library GEMMs, fused attention). --launches lists every launch; --json\n"
            "prints one JSON object with all of it; --tf32 prices f32 GEMMs at the TF32 peak.\n"
            "The model, its constants and sources: docs/BENCHMARKS-training.md, \"Step cost model\".\n");
}

static int fail_usage(const char *fmt, const char *arg) {
    fprintf(stderr, "tandem cost: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see tandem cost --help)\n");
    return 2;
}

/* The report into a growing buffer (the text of a large step with --launches or --json is
 * hundreds of KiB): a second call when the first did not fit. */
static int print_report(const tandem_config *cfg, const tandem_cost_options *o) {
    size_t cap = (size_t)1 << 20, len = 0;
    for (int round = 0; round < 2; round++) {
        char *text = malloc(cap);
        if (!text) return fprintf(stderr, "tandem cost: out of memory\n"), 1;
        tandem_status st = tandem_cost_report(cfg, o, text, cap, &len);
        if (st == TANDEM_OK && len >= cap && round == 0) {
            free(text);
            cap = len + 1;
            continue;
        }
        if (st == TANDEM_OK) fputs(text, stdout);
        free(text);
        return cli_fail("cost", st);
    }
    return 1;
}

int cli_cost(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *config_path = NULL;
    tandem_cost_options o;
    tandem_cost_options_init(&o);
    static const struct { const char *flag, *key; } flags[] = {
        {"--batch", "batch_size"}, {"--precision", "precision"}, {"--grad-accum", "grad_accum"}};
    const char *over_flag[16], *over_key[16], *over_val[16];
    int n_over = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0 || strcmp(a, "--launches") == 0 || strcmp(a, "--tf32") == 0) {
            *(a[2] == 'j' ? &o.json : a[2] == 'l' ? &o.launches : &o.tf32) = 1;
            continue;
        }
        if (i + 1 >= argc) return fail_usage("option '%s' needs a value", a);
        const char *v = argv[++i];
        if (strcmp(a, "--config") == 0) {
            config_path = v;
        } else if (strcmp(a, "--gpu") == 0) {
            o.gpu = v;
        } else {
            int k = 0;
            while (k < 3 && strcmp(a, flags[k].flag) != 0) k++;
            if (k == 3) return fail_usage("unknown option '%s'", a);
            if (n_over == 16) return fail_usage("too many overrides (at '%s')", a);
            over_flag[n_over] = flags[k].flag;
            over_key[n_over] = flags[k].key;
            over_val[n_over++] = v;
        }
    }
    if (!config_path) return fail_usage("%s", "--config FILE is required");
    tandem_config *cfg = NULL;
    tandem_status st = cli_load_config(&cfg, config_path, n_over, over_flag, over_key, over_val);
    if (st != TANDEM_OK) return cli_fail("cost", st);
    o.config_name = config_path;
    int rc = print_report(cfg, &o);
    tandem_config_destroy(cfg);
    return rc;
}
