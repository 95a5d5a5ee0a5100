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
            "usage: tandem plan --config FILE [--backend cuda|host] [--KEY VALUE ...]\n\n"
            "Prints the memory plan of every arena (data device, model device, with validation\n"
            "the free-running evaluation's on the model device, pinned host staging) for a\n"
            "config, without opening a device. --backend picks the alignment the\n"
            "plan uses: cuda (default, 256 B) or host (64 B). Budgets (MiB, 0 = size by plan)\n"
            "come from the config or the flags; a plan over budget exits with status 2.\n"
            "With buckets N > 1 and train_data set it also shows the length-bucketing classes\n"
            "(mel frames each, real-frame share), chosen from the audio headers as training does.\n"
            "The device flags (--data-gpu, --model-gpu, --data-gpu-memory, --model-gpu-memory) and\n"
            "every other config key are accepted as in tandem train.\n");
    cli_print_config_flags(f);
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
    static cli_overrides ov;
    ov.n = 0;
    for (int i = 1; i < argc; i++) {
        const char *iv = cli_opt_split(argv[i]), *a = argv[i], *v;
        if (strcmp(a, "--config") == 0 || strcmp(a, "--backend") == 0) {
            if (!(v = cli_opt_value("plan", argc, argv, &i, iv))) return 2;
            if (a[2] == 'c') config_path = v;
            else if (strcmp(v, "cuda") == 0) backend = TANDEM_BACKEND_CUDA;
            else if (strcmp(v, "host") == 0) backend = TANDEM_BACKEND_HOST;
            else return fail_usage("--backend '%s': expected cuda or host", v);
        } else {
            const int r = cli_config_option("plan", argc, argv, &i, iv, &ov);
            if (r < 0) return 2;
            if (r == 0) return fail_usage("unknown option '%s'", a);
        }
    }
    if (!config_path) return fail_usage("%s", "--config FILE is required");

    tandem_config *cfg = NULL;
    tandem_status st = cli_load_config(&cfg, config_path, ov.n, ov.flag, ov.key, ov.val);
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
    tandem_log_set_hook(cli_quiet_hook, NULL); /* the pools log an over-budget report: it is in the text */
    st = tandem_plan_report(cfg, &po, text, TEXT_MAX, &len);
    tandem_log_set_hook(NULL, NULL);
    tandem_config_destroy(cfg);
    fputs(text, stdout); /* over budget too: the reports say what does not fit */
    free(text);
    return cli_fail("plan", st);
}
