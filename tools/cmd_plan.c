/* cmd_plan.c — `tandem plan`: the memory plan of a config for every arena, without opening a
 * device (tandem_plan_report, tandem_train.h: planning-only pools that know the target backend's
 * alignment but own no memory), so it runs the same on a laptop and on the training server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tandem.h"
#include "tools/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem plan --config FILE [--batch-size N] [--data-gpu-memory MiB]\n"
            "                   [--model-gpu-memory MiB] [--backend cuda|host]\n\n"
            "Prints the memory plan of every arena (data device, model device, with validation\n"
            "the free-running evaluation's on the model device, pinned host staging) for a\n"
            "config, without opening a device. --backend picks the alignment the\n"
            "plan uses: cuda (default, 256 B) or host (64 B). Budgets (MiB, 0 = size by plan)\n"
            "come from the config or the flags; a plan over budget exits with status 2.\n\n"
            "config keys:\n");
    char keys[8192];
    tandem_config_describe(keys, sizeof keys);
    fputs(keys, f);
}

/* The pools log an over-budget report through the hook; here the same report goes to stdout
 * with the rest of the plan, so the logged copy is dropped while planning. */
static void quiet_hook(void *user, tandem_log_level level, const char *msg) {
    (void)user, (void)level, (void)msg;
}

static int fail_usage(const char *fmt, const char *arg) {
    fprintf(stderr, "tandem plan: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see tandem plan --help)\n");
    return 2;
}

int cli_plan(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *config_path = NULL;
    tandem_backend backend = TANDEM_BACKEND_CUDA;
    /* overrides: flag → config key, applied in order after the file */
    static const struct { const char *flag, *key; } flags[] = {
        {"--batch-size", "batch_size"},
        {"--data-gpu-memory", "data_gpu_memory"},
        {"--model-gpu-memory", "model_gpu_memory"},
    };
    const char *over_flag[16], *over_key[16], *over_val[16];
    int n_over = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) return fail_usage("option '%s' needs a value", a);
        const char *v = argv[++i];
        if (strcmp(a, "--config") == 0) {
            config_path = v;
        } else if (strcmp(a, "--backend") == 0) {
            if (strcmp(v, "cuda") == 0) backend = TANDEM_BACKEND_CUDA;
            else if (strcmp(v, "host") == 0) backend = TANDEM_BACKEND_HOST;
            else return fail_usage("--backend '%s': expected cuda or host", v);
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
    if (st != TANDEM_OK) return cli_fail("plan", st);
    tandem_plan_options po;
    tandem_plan_options_init(&po);
    po.backend = backend;
    po.config_name = config_path;
    enum { TEXT_MAX = 32768 };
    char *text = malloc(TEXT_MAX);
    if (!text) {
        tandem_config_destroy(cfg);
        fprintf(stderr, "tandem plan: out of memory\n");
        return 1;
    }
    size_t len = 0;
    tandem_log_set_hook(quiet_hook, NULL);
    st = tandem_plan_report(cfg, &po, text, TEXT_MAX, &len);
    tandem_log_set_hook(NULL, NULL);
    tandem_config_destroy(cfg);
    fputs(text, stdout); /* over budget too: the reports say what does not fit */
    free(text);
    return cli_fail("plan", st);
}
