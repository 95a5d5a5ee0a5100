/* cli_inputs.c — what every command checks before it runs: the paths its flags name exist (a
 * missing config, dataset, checkpoint or run is bad input: exit 2, README "Exit codes"), the
 * global --quiet / --verbose, and "did you mean" for a mistyped flag. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/cli.h"

enum { PATH_FILE, PATH_DIR, PATH_ANY };

int cli_check_path(const char *cmd, const char *what, const char *path, int want_dir) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        fprintf(stderr, "tandem %s: error: %s '%s': %s (check the path)\n", cmd, what, path, strerror(errno));
        return 2;
    }
    if (want_dir == PATH_DIR && !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "tandem %s: error: %s '%s': not a directory (expected a directory)\n", cmd, what, path);
        return 2;
    }
    if (want_dir == PATH_FILE && S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "tandem %s: error: %s '%s': a directory (expected a file)\n", cmd, what, path);
        return 2;
    }
    return 0;
}

/* The flags that name an input, with the kind of path each expects (--resume: the trainer says
 * "is not a run directory" itself, exit 2). */
static const struct { const char *flag; int kind; } inputs[] = {
    {"config", PATH_FILE},    {"train-data", PATH_DIR},  {"val-data", PATH_DIR}, {"data", PATH_DIR},
    {"checkpoint", PATH_ANY}, {"init-from", PATH_ANY}, {"run", PATH_DIR},
};

/* name ("--train_data=x" or "--train-data") equals flag (dashes) up to '=' or the end. */
static int same_flag(const char *name, const char *flag) {
    for (; *flag; name++, flag++)
        if (*name != *flag && !(*name == '_' && *flag == '-')) return 0;
    return *name == '\0' || *name == '=';
}

int cli_check_inputs(const char *cmd, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) != 0) continue;
        for (size_t k = 0; k < sizeof inputs / sizeof inputs[0]; k++) {
            if (!same_flag(argv[i] + 2, inputs[k].flag)) continue;
            const char *eq = strchr(argv[i], '=');
            const char *v = eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : NULL;
            if (!v || !v[0] || (!eq && !strncmp(v, "--", 2))) break; /* the command says what is missing */
            char what[40];
            snprintf(what, sizeof what, "--%s", inputs[k].flag);
            const int rc = cli_check_path(cmd, what, v, inputs[k].kind);
            if (rc) return rc;
        }
    }
    return 0;
}

int cli_global_flags(const char *cmd, int *argc, char **argv) {
    int n = 0;
    for (int i = 0; i < *argc; i++) {
        const int verbose = !strcmp(argv[i], "--verbose"), quiet = !strcmp(argv[i], "--quiet");
        if (verbose) tandem_log_set_level(TANDEM_LOG_DEBUG);
        if (quiet) tandem_log_set_level(TANDEM_LOG_WARN);
        if (verbose || (quiet && strcmp(cmd, "train") != 0)) continue; /* train's --quiet also drops its report */
        argv[n++] = argv[i];
    }
    argv[n] = NULL;
    *argc = n;
    return 0;
}

/* ---- did you mean ---- */

static int distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (int i = 0; i <= la; i++) d[i][0] = i;
    for (int j = 0; j <= lb; j++) d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

/* The commands' own flags (the config keys and MyXTTS names come from the library). */
static const char *const own_flags[] = {
    "config", "out", "resume", "new-run", "force-resume", "init-from", "freeze", "backend", "quiet", "verbose",
    "checkpoint", "text", "mel-out", "speaker", "lang", "gl-iters", "kv-cache", "data", "steps", "run", "json",
    "count", "speakers", "seed", "force", "probe", "gpu", "interval", "rendezvous-timeout", "help",
};

static void consider(const char *typed, const char *name, char *best, size_t cap, int *best_d) {
    char flag[96];
    snprintf(flag, sizeof flag, "%s", name);
    for (char *c = flag; *c; c++)
        if (*c == '_') *c = '-';
    const int d = distance(typed, flag);
    if (d < *best_d) {
        *best_d = d;
        snprintf(best, cap, "--%s", flag);
    }
}

void cli_suggest_flag(const char *arg, char *out, size_t cap) {
    out[0] = '\0';
    char typed[96];
    snprintf(typed, sizeof typed, "%s", arg + strspn(arg, "-"));
    typed[strcspn(typed, "=")] = '\0';
    for (char *c = typed; *c; c++)
        if (*c == '_') *c = '-';
    int best_d = 99;
    char best[100] = "";
    for (size_t i = 0; i < sizeof own_flags / sizeof own_flags[0]; i++) consider(typed, own_flags[i], best, sizeof best, &best_d);
    for (int i = 0, n = tandem_config_key_count(); i < n; i++) {
        tandem_config_key_info k;
        if (tandem_config_key_at(i, &k) == TANDEM_OK) consider(typed, k.key, best, sizeof best, &best_d);
    }
    for (int i = 0, n = tandem_config_alias_count(); i < n; i++) {
        tandem_config_alias_info a;
        if (tandem_config_alias_at(i, &a) == TANDEM_OK) consider(typed, a.name, best, sizeof best, &best_d);
    }
    if (best[0] && best_d <= 2 + (int)strlen(typed) / 5) snprintf(out, cap, " (did you mean '%s'?)", best);
}
