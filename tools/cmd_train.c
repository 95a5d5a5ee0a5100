/* cmd_train.c — `tandem train`: config (YAML) + command-line overrides → trainer (tandem_train.h),
 * the progress line drawn from its per-step callback (tools/progress.c).
 * Exit codes (cli_exit_code): 0 done (also after SIGINT/SIGTERM: the current step finishes and a
 * checkpoint is written), 2 bad usage, config, data or a plan over budget, 1 any other failure. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tandem.h"
#include "tools/cli.h"
#include "tools/progress.h"

static tandem_trainer *volatile g_trainer;

static void on_signal(int sig) {
    (void)sig;
    tandem_trainer *t = g_trainer;
    if (t) tandem_trainer_request_stop(t);
}

/* flag → config key */
static const struct {
    const char *flag, *key;
} k_flags[] = {
    {"--train-data", "train_data"},
    {"--val-data", "val_data"},
    {"--model-size", "model_size"},
    {"--batch-size", "batch_size"},
    {"--grad-accum", "grad_accum"},
    {"--num-workers", "num_workers"},
    {"--prefetch-buffer-size", "prefetch_buffer_size"},
    {"--force-staged", "force_staged"},
    {"--data-gpu", "data_gpu"},
    {"--model-gpu", "model_gpu"},
    {"--data-gpu-memory", "data_gpu_memory"},
    {"--model-gpu-memory", "model_gpu_memory"},
    {"--max-steps", "max_steps"},
    {"--lr", "lr"},
    {"--seed", "seed"},
    {"--out", "out"},
    {"--precision", "precision"},
    {"--checkpoint-every", "checkpoint_every"},
    {"--keep", "keep"},
    {"--log-every", "log_every"},
    {"--val-every", "val_every"},
    {"--warmup-steps", "warmup_steps"},
};
#define N_FLAGS (int)(sizeof k_flags / sizeof k_flags[0])

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem train [--config FILE.yaml] [--resume DIR | --new-run] [--backend auto|host|cuda] "
            "[--quiet] [overrides]\n\n"
            "Trains the acoustic model: the data device fills a ring of fixed-shape batches, the "
            "model device trains on them.\nOutput in --out: metrics.jsonl and "
            "ckpt-<step>.safetensors. SIGINT/SIGTERM: finish the step, checkpoint, exit 0.\n\n"
            "overrides (each sets the config key named after it):\n");
    for (int i = 0; i < N_FLAGS; i++) fprintf(f, "  %-24s %s\n", k_flags[i].flag, k_flags[i].key);
    fprintf(f, "\n  --resume DIR             continue from the newest valid checkpoint in DIR\n"
               "  --backend B              auto (cuda when present, else two host devices), host, cuda\n"
               "  --new-run                start a new run in a non-empty --out (the previous run's files\n"
               "                           move to OUT/previous-<n>/; without it such a directory is refused)\n"
               "  --quiet                  no progress line\n\nconfig keys:\n");
    char buf[16384];
    tandem_config_describe(buf, sizeof buf);
    fputs(buf, f);
}

static void print_summary(const tandem_trainer_summary *sum) {
    printf("devices: %s\n", sum->devices);
    printf("steps %lld..%lld (%lld run%s), loss %.4f -> %.4f, l1 %.4f -> %.4f", (long long)sum->first_step,
           (long long)sum->last_step, (long long)sum->steps_run,
           sum->stopped_by_request ? ", stopped by signal" : "", sum->loss_first, sum->loss_last,
           sum->l1_first, sum->l1_last);
    if (sum->val_l1_first >= 0) printf(", val l1 %.4f -> %.4f", sum->val_l1_first, sum->val_l1_last);
    if (sum->steps_measured > 0) {
        printf("\n%.1f samples/s, data wait %.2f %% of step time, model busy %.1f %%, data busy %.1f %%, "
               "step-time CV %.1f %% (%lld steps past warm-up), skipped steps %lld\n", sum->samples_per_s,
               sum->data_wait_pct, sum->model_busy_pct, sum->data_busy_pct, 100.0 * sum->step_cv,
               (long long)sum->steps_measured, (long long)sum->skipped);
        cli_print_verdict(stdout, &sum->verdict);
    } else {
        printf("\nrates not measured: the first 2 steps are warm-up and this run had no more; "
               "skipped steps %lld\n", (long long)sum->skipped);
    }
    if (sum->checkpoint[0]) printf("checkpoint: %s\n", sum->checkpoint);
}

int cli_train(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *config_path = NULL, *resume = NULL;
    tandem_backend backend = TANDEM_BACKEND_AUTO;
    int quiet = 0, new_run = 0;
    enum { MAX_OVER = 64 };
    const char *over_flag[MAX_OVER], *over_key[MAX_OVER], *over_val[MAX_OVER];
    int n_over = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--quiet") || !strcmp(a, "--new-run")) {
            if (a[2] == 'q') quiet = 1;
            else new_run = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "tandem train: option '%s' needs a value (see --help)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--config")) config_path = v;
        else if (!strcmp(a, "--resume")) resume = v;
        else if (!strcmp(a, "--backend")) {
            if (!cli_parse_backend("train", v, &backend)) return 2;
        } else {
            int k = 0;
            while (k < N_FLAGS && strcmp(a, k_flags[k].flag)) k++;
            if (k == N_FLAGS || n_over == MAX_OVER) {
                fprintf(stderr, "tandem train: unknown option '%s' (see --help)\n", a);
                return 2;
            }
            over_flag[n_over] = k_flags[k].flag;
            over_key[n_over] = k_flags[k].key;
            over_val[n_over++] = v;
        }
    }

    tandem_config *cfg = NULL;
    tandem_status st = cli_load_config(&cfg, config_path, n_over, over_flag, over_key, over_val);
    if (st != TANDEM_OK) return cli_fail("train", st);
    char train_data[TANDEM_CONFIG_VALUE_MAX], log_every[TANDEM_CONFIG_VALUE_MAX];
    if ((st = tandem_config_get(cfg, "train_data", train_data, sizeof train_data)) != TANDEM_OK ||
        (st = tandem_config_get(cfg, "log_every", log_every, sizeof log_every)) != TANDEM_OK) {
        tandem_config_destroy(cfg);
        return cli_fail("train", st);
    }
    if (!train_data[0]) {
        fprintf(stderr, "tandem train: no training data: give --train-data DIR or train_data in the "
                        "config\n");
        tandem_config_destroy(cfg);
        return 2;
    }
    cli_progress progress; /* on a terminal a bar, else a plain line every log_every steps */
    cli_progress_init(&progress, stdout, (int)strtoll(log_every, NULL, 10), 0);
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = backend;
    o.resume_dir = resume;
    o.new_run = new_run;
    if (!quiet) {
        o.on_step = cli_progress_on_step;
        o.on_step_user = &progress;
    }
    tandem_trainer *t = NULL;
    st = tandem_trainer_create(cfg, &o, &t);
    tandem_config_destroy(cfg);
    if (st != TANDEM_OK) return cli_fail("train", st);
    g_trainer = t;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    tandem_trainer_summary sum;
    st = tandem_trainer_run(t, &sum);
    g_trainer = NULL;
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    cli_progress_finish(&progress);
    const int rc = cli_fail("train", st);
    print_summary(&sum);
    tandem_trainer_destroy(t);
    return rc;
}
