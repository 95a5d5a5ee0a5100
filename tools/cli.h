/* cli.h — subcommands of the `tandem` command. Each lives in tools/cmd_<name>.c and defines
 * `int cli_<name>(int argc, char **argv)` (argv[0] is the subcommand name) returning the exit
 * code: 0 success, 1 runtime failure, 2 bad usage or bad input/config. */
#ifndef TANDEM_TOOLS_CLI_H
#define TANDEM_TOOLS_CLI_H

#include <stdio.h>

#include "tandem.h"

int cli_diagnose(int argc, char **argv);
int cli_plan(int argc, char **argv);
int cli_corpus(int argc, char **argv);
int cli_prep(int argc, char **argv);
int cli_features(int argc, char **argv);
int cli_pipeline(int argc, char **argv);
int cli_train(int argc, char **argv);
int cli_synth(int argc, char **argv);
int cli_plot(int argc, char **argv);
int cli_cost(int argc, char **argv);
int cli_profile(int argc, char **argv);
int cli_monitor(int argc, char **argv);
int cli_validate(int argc, char **argv);

/* The one status → exit-code mapping of every command (README "Exit codes"):
 * 0 TANDEM_OK; 2 bad usage or bad input — TANDEM_E_INVALID, TANDEM_E_FORMAT, TANDEM_E_BUDGET
 * (the user can fix the command line, config or data); 1 any other failure (I/O, device,
 * driver, memory, unsupported, internal). */
int cli_exit_code(tandem_status st);
/* Prints "tandem <cmd>: error: <tandem_last_error()>" (or the status name when the message is
 * empty) to stderr and returns cli_exit_code(st). For st == TANDEM_OK prints nothing, returns 0. */
int cli_fail(const char *cmd, tandem_status st);

/* True if argv holds -h or --help. */
int cli_wants_help(int argc, char **argv);
/* Parse a --backend value (auto, host, cuda) into *out; on anything else print
 * "tandem <cmd>: --backend 'v': expected auto, host or cuda" and return 0. */
int cli_parse_backend(const char *cmd, const char *v, tandem_backend *out);

/* The effective config of a command, created into *out: FILE (or the defaults when path is
 * NULL), then the n command-line overrides (flag[i] sets key[i] to val[i]; errors name the
 * flag), then the cross-key checks. On failure *out = NULL (nothing to destroy). */
tandem_status cli_load_config(tandem_config **out, const char *path, int n, const char *const *flag,
                              const char *const *key, const char *const *val);
/* The same with the base config, when path is NULL and resume is not, taken from the run resume
 * continues (tandem_trainer_resume_config: `tandem train --resume DIR` without --config). */
tandem_status cli_load_config_from(tandem_config **out, const char *path, const char *resume, int n,
                                   const char *const *flag, const char *const *key, const char *const *val);

/* ---- options (tools/cli_flags.c) ----
 * Commands that take a config accept every config key as a flag (`--batch-size 16`,
 * `--batch_size=16`) and MyXTTS's names (tandem_config_name_kind), collected in order and applied
 * after the file by cli_load_config. */
#define CLI_MAX_OVERRIDES 128
typedef struct cli_overrides {
    int n;
    const char *flag[CLI_MAX_OVERRIDES], *key[CLI_MAX_OVERRIDES], *val[CLI_MAX_OVERRIDES];
} cli_overrides;
/* "--name=value": cuts arg at '=' in place and returns the value; NULL when arg has no '='. */
const char *cli_opt_split(char *arg);
/* The value of option argv[*i]: inline_value when given (--name=value), else argv[*i + 1]
 * (*i advanced); NULL after printing "option needs a value" when there is none. */
const char *cli_opt_value(const char *cmd, int argc, char **argv, int *i, const char *inline_value);
/* argv[*i] as a config flag into ov: 1 taken, 0 not a config name, -1 error (printed). */
int cli_config_option(const char *cmd, int argc, char **argv, int *i, const char *inline_value,
                      cli_overrides *ov);
/* Prints "unknown option" (with "did you mean" when a flag is close) and returns 2. */
int cli_unknown_option(const char *cmd, const char *arg);
/* " (did you mean '--x'?)" for the nearest flag of any command, config key or MyXTTS name, or "". */
void cli_suggest_flag(const char *arg, char *out, size_t cap);
/* 0 when path exists and is of the kind asked (0 a file, 1 a directory, 2 either); else prints
 * "tandem CMD: error: WHAT 'PATH': ..." and returns 2 (bad input). */
int cli_check_path(const char *cmd, const char *what, const char *path, int want_dir);
/* The same for every input path argv names (--config, --train-data, --val-data, --data,
 * --checkpoint, --init-from, --run): 0 or 2. */
int cli_check_inputs(const char *cmd, int argc, char **argv);
/* --verbose (DEBUG lines too) and --quiet (warnings and errors only) for every command: sets the
 * log level and removes them from argv (train keeps --quiet: it also drops its report). */
int cli_global_flags(const char *cmd, int *argc, char **argv);
/* A log hook that drops every line: for commands that print the same facts in their report
 * (plan's over-budget pool report, validate's findings). */
void cli_quiet_hook(void *user, tandem_log_level level, const char *msg);
/* Every config key as a flag with its doc, range and default, then the MyXTTS names. */
void cli_print_config_flags(FILE *f);

#endif
