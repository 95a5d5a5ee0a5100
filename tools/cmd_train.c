/* cmd_train.c — `tandem train`: config (YAML) + command-line overrides → trainer (tandem_train.h),
 * the progress line drawn from its per-step callback (tools/progress.c).
 * Exit codes (cli_exit_code): 0 done (also after SIGINT/SIGTERM/SIGHUP: the current step finishes
 * and a checkpoint is written; more such signals while it stops change nothing), 2 bad usage,
 * config, data or a plan over budget, 1 any other failure (also stdout failing, e.g. EPIPE: the
 * run stops with a checkpoint first). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tandem.h"
#include "tools/cli.h"
#include "tools/launch_env.h"
#include "tools/progress.h"

static tandem_trainer *volatile g_trainer;

static void on_signal(int sig) {
    (void)sig;
    tandem_trainer *t = g_trainer;
    if (t) tandem_trainer_request_stop(t);
}

/* The progress line, then a stop when stdout failed (a closed pipe): the run ends with a checkpoint. */
static void on_step(void *user, const tandem_step_metrics *m) {
    cli_progress *p = user;
    cli_progress_on_step(p, m);
    tandem_trainer *t = g_trainer;
    if (p->write_errno && t) tandem_trainer_request_stop(t);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem train [--config FILE.yaml] [--resume DIR [--force-resume] | --new-run] "
            "[--init-from CKPT] [--freeze GROUPS] [--backend auto|host|cuda] [--rendezvous-timeout S] "
            "[--quiet] [--KEY VALUE ...]\n\n"
            "Trains the acoustic model: the data device fills a ring of fixed-shape batches, the "
            "model device trains on them.\nOutput in --out: metrics.jsonl and "
            "ckpt-<step>.safetensors. SIGINT/SIGTERM/SIGHUP: finish the step, checkpoint, exit 0.\n"
            "At start it prints the devices and their roles, the dataset (usable utterances, rows\n"
            "and audio left out by reason), the text cache (hit or miss) and the memory plan.\n\n"
            "  --config FILE            YAML config: flat Tandem keys, or a MyXTTS config (model:, data:,\n"
            "                           training: sections; docs/MIGRATING.md)\n"
            "  --resume DIR             continue the run in DIR from its newest valid checkpoint: its config,\n"
            "                           data paths and symbol table (without --config); flags given change\n"
            "                           keys (each listed); keys that fix shapes or the data order are refused\n"
            "  --force-resume           resume even when the flags change such keys\n"
            "  --init-from CKPT         a new run starting from the parameters of CKPT (a checkpoint file\n"
            "                           or run directory): fine-tuning; other shapes are reported\n"
            "  --freeze GROUPS          parameter groups not trained, comma-separated: embeddings, prenet,\n"
            "                           blocks.N, blocks.A-B, final_norm, heads, or a parameter-name prefix\n"
            "  --backend B              auto (cuda when present, else two host devices), host, cuda\n"
            "  --new-run                start a new run in a non-empty --out (the previous run's files\n"
            "                           move to OUT/previous-<n>/; without it such a directory is refused)\n"
            "  --rendezvous-timeout S   data-parallel CUDA ranks launched torchrun style (MASTER_ADDR,\n"
            "                           MASTER_PORT): how long each waits for all to arrive (default 300)\n"
            "  --quiet                  warnings and errors only: no progress, start-up report or summary\n"
            "  --verbose                debug lines too (e.g. why no CUDA driver was loaded)\n");
    cli_print_config_flags(f);
}

/* What create set up, before the first step (the library prints nothing itself). */
static void print_startup(const tandem_trainer *t) {
    tandem_trainer_startup r;
    if (tandem_trainer_startup_report(t, &r) != TANDEM_OK) return;
    printf("devices: %s\n", r.devices);
    printf("data: %u rows, %u usable for training", r.rows, r.n_train);
    if (r.n_val) printf(", %u for validation", r.n_val);
    printf("; left out:");
    int any = 0;
    for (int k = 0; k < TANDEM_TRAINER_SKIP_REASONS; k++)
        if (r.skipped[k]) printf("%s %u %s", any++ ? "," : "", r.skipped[k], tandem_data_skip_reason_name(k));
    if (r.too_long)
        printf("%s %u audio too long (over %.2f s = max_frames; longest %.2f s: raise max_frames to keep them)",
               any++ ? "," : "", r.too_long, r.max_s_allowed, r.longest_s);
    if (r.too_short) printf("%s %u audio shorter than one hop", any++ ? "," : "", r.too_short);
    if (r.unreadable) printf("%s %u audio unreadable", any++ ? "," : "", r.unreadable);
    printf("%s\n", any ? "" : " none");
    printf("text cache: %s%s%s\n", r.cache_hit ? "hit" : "miss (built now)", r.cache_path[0] ? ", " : " (none: in memory)",
           r.cache_path);
    printf("memory plan: data arena %.1f MiB, model arena %.1f MiB (ring of %d slots)\n", r.data_arena_mib,
           r.model_arena_mib, r.ring_slots);
    if (r.n_buckets) {
        printf("length bucketing: %d shape classes of", r.n_buckets);
        for (int c = 0; c < r.n_buckets; c++) printf("%s %d", c ? "," : "", r.bucket_frames[c]);
        printf(" mel frames: %.1f %% of the planned frames real over the training set\n", r.bucket_real_pct);
    } else {
        printf("batch shape: every batch max_frames: %.1f %% of its frames real over the training set "
               "(`buckets: 3` cuts the padding)\n", r.bucket_real_pct);
    }
    if (r.gemm_fallbacks) /* each line already names the shape, how it runs and why */
        printf("GEMM fallbacks (%d shapes not on cuBLASLt's fused plan; `strict_gemm: true` refuses them):\n%s",
               r.gemm_fallbacks, r.gemm_fallback_list);
    if (r.start_step) printf("resuming at step %lld\n", (long long)r.start_step);
    fflush(stdout);
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
        printf("real frames %.1f %% of the batches' frames\n", sum->real_frames_pct);
        cli_print_verdict(stdout, &sum->verdict);
    } else {
        printf("\nrates not measured: the first 2 steps are warm-up and this run had no more; "
               "skipped steps %lld\n", (long long)sum->skipped);
    }
    if (sum->checkpoint[0]) printf("checkpoint: %s\n", sum->checkpoint);
}

/* --out is none of the inputs: config, --init-from checkpoint, dataset directories. */
static tandem_status check_out(const tandem_config *cfg, const char *config_path, const char *init_from,
                               const char *train_data) {
    char out[TANDEM_CONFIG_VALUE_MAX], val[TANDEM_CONFIG_VALUE_MAX];
    tandem_status st = tandem_config_get(cfg, "out", out, sizeof out);
    if (st == TANDEM_OK) st = tandem_config_get(cfg, "val_data", val, sizeof val);
    const char *o = out, *in[4] = {config_path, init_from, train_data, val[0] ? val : NULL};
    return st == TANDEM_OK ? tandem_files_check_distinct(&o, 1, in, 4) : st;
}

int cli_train(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *config_path = NULL, *resume = NULL;
    tandem_backend backend = TANDEM_BACKEND_AUTO;
    int quiet = 0, new_run = 0, force_resume = 0, rdzv_s = 0;
    const char *init_from = NULL, *freeze = NULL;
    static cli_overrides ov;
    ov.n = 0;
    for (int i = 1; i < argc; i++) {
        const char *iv = cli_opt_split(argv[i]), *a = argv[i], *v;
        if (!strcmp(a, "--quiet") || !strcmp(a, "--new-run") || !strcmp(a, "--force-resume")) {
            if (a[2] == 'q') quiet = 1;
            else if (a[2] == 'n') new_run = 1;
            else force_resume = 1;
        } else if (!strcmp(a, "--rendezvous-timeout")) {
            char *end = NULL;
            if (!(v = cli_opt_value("train", argc, argv, &i, iv))) return 2;
            const long x = strtol(v, &end, 10);
            if (*end || end == v || x < 1 || x > 86400) {
                fprintf(stderr, "tandem train: --rendezvous-timeout '%s': expected seconds from 1 to 86400\n", v);
                return 2;
            }
            rdzv_s = (int)x;
        } else if (!strcmp(a, "--resume") && !iv && (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2))) {
            fprintf(stderr, "tandem train: --resume needs the run directory to continue (--resume DIR, e.g. "
                            "--resume runs/tiny): MyXTTS's --resume took no value and picked the latest run; "
                            "Tandem resumes the run you name\n");
            return 2;
        } else if (!strcmp(a, "--config") || !strcmp(a, "--resume") || !strcmp(a, "--backend") ||
                   !strcmp(a, "--init-from") || !strcmp(a, "--freeze")) {
            if (!(v = cli_opt_value("train", argc, argv, &i, iv))) return 2;
            if (a[2] == 'c') config_path = v;
            else if (a[2] == 'r') resume = v;
            else if (a[2] == 'i') init_from = v;
            else if (a[2] == 'f') freeze = v;
            else if (!cli_parse_backend("train", v, &backend)) return 2;
        } else {
            const int r = cli_config_option("train", argc, argv, &i, iv, &ov);
            if (r < 0) return 2;
            if (r == 0) return cli_unknown_option("train", a);
        }
    }

    tandem_config *cfg = NULL;
    /* --resume without --config: the run's own config (its checkpoint's), then the flags */
    tandem_status st = cli_load_config_from(&cfg, config_path, resume, ov.n, ov.flag, ov.key, ov.val);
    if (st != TANDEM_OK) return cli_fail("train", st);
    char train_data[TANDEM_CONFIG_VALUE_MAX], log_every[TANDEM_CONFIG_VALUE_MAX];
    if ((st = tandem_config_get(cfg, "train_data", train_data, sizeof train_data)) != TANDEM_OK ||
        (st = tandem_config_get(cfg, "log_every", log_every, sizeof log_every)) != TANDEM_OK ||
        (st = check_out(cfg, config_path, init_from, train_data)) != TANDEM_OK) {
        tandem_config_destroy(cfg);
        return cli_fail("train", st);
    }
    if (!train_data[0]) {
        fprintf(stderr, "tandem train: no training data: give --train-data DIR or train_data in the "
                        "config\n");
        tandem_config_destroy(cfg);
        return 2;
    }
    if (cli_check_path("train", "train_data", train_data, 1)) { /* named by the config file */
        tandem_config_destroy(cfg);
        return 2;
    }
    cli_launch launch; /* data-parallel: the launcher's ranks (tools/launch_env.h) */
    char lerr[256];
    if (cli_launch_read(&launch, lerr, sizeof lerr) != 0) {
        fprintf(stderr, "tandem train: %s\n", lerr);
        tandem_config_destroy(cfg);
        return 2;
    }
    if (launch.rank > 0) quiet = 1; /* rank 0 reports progress (and writes the run directory) */
    cli_progress progress; /* on a terminal a bar, else a plain line every log_every steps */
    cli_progress_init(&progress, stdout, (int)strtoll(log_every, NULL, 10), 0);
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = backend;
    o.resume_dir = resume;
    o.new_run = new_run;
    o.force_resume = force_resume;
    o.init_from = init_from;
    o.freeze = freeze;
    o.world_size = launch.world, o.rank = launch.rank, o.local_rank = launch.local_rank;
    o.local_world_size = launch.local_world;
    if (launch.rendezvous[0]) o.rendezvous = launch.rendezvous; /* torchrun style: the CUDA ranks' NCCL id */
    if (rdzv_s) o.rendezvous_timeout_ms = rdzv_s * 1000;
    if (!quiet) {
        o.on_step = on_step;
        o.on_step_user = &progress;
    }
    tandem_trainer *t = NULL;
    st = tandem_trainer_create(cfg, &o, &t);
    tandem_config_destroy(cfg);
    if (st != TANDEM_OK) return cli_fail("train", st);
    if (!quiet) print_startup(t);
    if (!quiet && ferror(stdout)) progress.write_errno = errno ? errno : EIO; /* stops at the first step */
    g_trainer = t;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); /* a closed terminal or ssh session: stop like Ctrl-C */

    tandem_trainer_summary sum;
    st = tandem_trainer_run(t, &sum);
    g_trainer = NULL; /* the handlers stay: a signal during the rest of the stop is a no-op */
    cli_progress_finish(&progress);
    int rc = cli_fail("train", st);
    if (rc == 0 && progress.write_errno) {
        fprintf(stderr, "tandem train: error: standard output: %s (was the reading end of a pipe closed?); the "
                "run stopped at step %lld with a checkpoint: resume it with --resume\n",
                strerror(progress.write_errno), (long long)sum.last_step);
        rc = 1;
    }
    if (!quiet) print_summary(&sum); /* data-parallel: rank 0 reports */
    tandem_trainer_destroy(t);
    return rc;
}
