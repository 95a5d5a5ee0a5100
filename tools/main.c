/* main.c — the `tandem` command: applies the TANDEM_* environment to the runtime options
 * (tools/env_options.c), then dispatches to subcommands (tools/cmd_*.c). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/env_options.h"
#include "tandem.h"

/* Subcommands not built yet resolve to NULL (weak), so the table can list the whole plan. */
#pragma weak cli_diagnose
#pragma weak cli_plan
#pragma weak cli_corpus
#pragma weak cli_prep
#pragma weak cli_features
#pragma weak cli_pipeline
#pragma weak cli_train
#pragma weak cli_synth
#pragma weak cli_plot
#pragma weak cli_cost
#pragma weak cli_validate

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} cli_cmd;

static const cli_cmd cmds[] = {
    {"diagnose", cli_diagnose, "driver, devices, peer access, fatbin architectures, cuBLASLt"},
    {"plan", cli_plan, "print the memory plan of a config for every arena (no device needed)"},
    {"corpus", cli_corpus, "write a demo LJSpeech-layout corpus spoken by espeak-ng"},
    {"prep", cli_prep, "index a dataset and build its text cache"},
    {"features", cli_features, "log-mel features of one audio file to .npy"},
    {"pipeline", cli_pipeline, "run the data side alone and report its throughput"},
    {"train", cli_train, "train the acoustic model"},
    {"synth", cli_synth, "synthesize speech from a checkpoint"},
    {"plot", cli_plot, "loss curve and target-vs-predicted mel PNGs of a run"},
    {"cost", cli_cost, "model one training step's cost on a GPU from its recorded launches"},
    {"profile", cli_profile, "train N steps and report busy/idle, data wait, op times and the bottleneck"},
    {"monitor", cli_monitor, "live NVML view of every GPU and of a running training's metrics"},
    {"validate", cli_validate, "check a config, its dataset and the devices before training"},
    /* one line per command: `tandem help` and `tandem help <command>` follow from this table */
};
#define NCMDS (int)(sizeof cmds / sizeof cmds[0])

int cli_exit_code(tandem_status st) {
    switch (st) {
    case TANDEM_OK: return 0;
    case TANDEM_E_INVALID:
    case TANDEM_E_FORMAT:
    case TANDEM_E_BUDGET: return 2;
    default: return 1;
    }
}

int cli_fail(const char *cmd, tandem_status st) {
    if (st == TANDEM_OK) return 0;
    const char *msg = tandem_last_error();
    fprintf(stderr, "tandem %s: error: %s\n", cmd, msg && msg[0] ? msg : tandem_status_name(st));
    return cli_exit_code(st);
}

int cli_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return 1;
    return 0;
}

int cli_parse_backend(const char *cmd, const char *v, tandem_backend *out) {
    static const struct { const char *name; tandem_backend b; } names[] = {
        {"auto", TANDEM_BACKEND_AUTO}, {"host", TANDEM_BACKEND_HOST}, {"cuda", TANDEM_BACKEND_CUDA}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(v, names[i].name) == 0) {
            *out = names[i].b;
            return 1;
        }
    fprintf(stderr, "tandem %s: --backend '%s': expected auto, host or cuda\n", cmd, v);
    return 0;
}

tandem_status cli_load_config(tandem_config **out, const char *path, int n, const char *const *flag,
                              const char *const *key, const char *const *val) {
    return cli_load_config_from(out, path, NULL, n, flag, key, val);
}

tandem_status cli_load_config_from(tandem_config **out, const char *path, const char *resume, int n,
                                   const char *const *flag, const char *const *key, const char *const *val) {
    tandem_config *cfg = NULL;
    tandem_status st = tandem_config_create(&cfg);
    if (st == TANDEM_OK && path) st = tandem_config_load(cfg, path);
    else if (st == TANDEM_OK && resume) st = tandem_trainer_resume_config(resume, cfg);
    for (int i = 0; st == TANDEM_OK && i < n; i++) st = tandem_config_set_from(cfg, flag[i], key[i], val[i]);
    if (st == TANDEM_OK) st = tandem_config_check(cfg);
    if (st != TANDEM_OK) {
        tandem_config_destroy(cfg);
        cfg = NULL;
    }
    *out = cfg;
    return st;
}

static void usage(FILE *f) {
    fprintf(f, "tandem %s — train a TTS acoustic model on two devices\n\n", TANDEM_VERSION_STRING);
    fprintf(f, "usage: tandem <command> [options]   (tandem help <command> or tandem <command> --help for "
               "details)\n\n");
    for (int i = 0; i < NCMDS; i++)
        if (cmds[i].fn) fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
    fprintf(f, "  %-10s %s\n", "help", "this list, or one command's options: tandem help <command>");
    cli_env_usage(f);
}

/* `tandem help [command]`: the list, or the command's own --help. */
static int help(int argc, char **argv) {
    if (argc < 3) {
        usage(stdout);
        return 0;
    }
    for (int i = 0; i < NCMDS; i++)
        if (cmds[i].fn && strcmp(argv[2], cmds[i].name) == 0) {
            char *args[] = {argv[2], (char *)"--help", NULL};
            return cmds[i].fn(2, args);
        }
    fprintf(stderr, "tandem help: unknown command '%s'\n\n", argv[2]);
    usage(stderr);
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("tandem %s\n", TANDEM_VERSION_STRING);
        return 0;
    }
    if (strcmp(argv[1], "help") == 0) return help(argc, argv);
    for (int i = 0; i < NCMDS; i++) {
        if (strcmp(argv[1], cmds[i].name) != 0) continue;
        if (!cmds[i].fn) {
            fprintf(stderr, "tandem: '%s' is not part of this build yet\n", cmds[i].name);
            return 2;
        }
        char err[512]; /* the library reads no environment: it gets the TANDEM_* variables here */
        if (!cli_wants_help(argc - 1, argv + 1) && cli_env_apply(err, sizeof err) != TANDEM_OK) {
            fprintf(stderr, "tandem: %s (see tandem --help, \"environment\")\n", err);
            return 2;
        }
        /* a closed pipe or a file-size limit fails the write (EPIPE, EFBIG) instead of killing the
         * process, so every command reports it and train checkpoints first */
        signal(SIGPIPE, SIG_IGN);
        signal(SIGXFSZ, SIG_IGN);
        int n = argc - 1;
        cli_global_flags(cmds[i].name, &n, argv + 1);
        /* validate reports each missing input among its findings (exit 2 as well) */
        if (!cli_wants_help(n, argv + 1) && strcmp(cmds[i].name, "validate") != 0) {
            const int rc = cli_check_inputs(cmds[i].name, n, argv + 1);
            if (rc) return rc;
        }
        int rc = cmds[i].fn(n, argv + 1);
        if ((fflush(stdout) != 0 || ferror(stdout)) && rc == 0) { /* what it printed is part of its result */
            fprintf(stderr, "tandem %s: error: standard output could not be written (was the reading end of a "
                    "pipe closed, or the disk full?)\n", argv[1]);
            rc = 1;
        }
        return rc;
    }
    fprintf(stderr, "tandem: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
