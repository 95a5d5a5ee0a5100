/* cli_flags.c — options of the commands that take a config: `--name value` or `--name=value`,
 * every config key as a flag (dashes or underscores), MyXTTS's names too (tandem_config.h), and
 * the help text of those flags, all generated from the schema (tandem_config_key_at). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tools/cli.h"

const char *cli_opt_split(char *arg) {
    if (strncmp(arg, "--", 2) != 0) return NULL;
    char *eq = strchr(arg, '=');
    if (!eq) return NULL;
    *eq = '\0';
    return eq + 1;
}

const char *cli_opt_value(const char *cmd, int argc, char **argv, int *i, const char *inline_value) {
    if (inline_value) return inline_value;
    /* the next word is another option: this one was given without its value */
    if (*i + 1 >= argc || (strncmp(argv[*i + 1], "--", 2) == 0 && argv[*i + 1][2])) {
        fprintf(stderr, "tandem %s: option '%s' needs a value (see tandem help %s)\n", cmd, argv[*i], cmd);
        return NULL;
    }
    return argv[++*i];
}

/* A switch's optional value ("--mixed-precision false"). */
static int is_bool_word(const char *s) {
    static const char *const w[] = {"true", "false", "yes", "no", "on", "off", "1", "0"};
    for (size_t k = 0; k < sizeof w / sizeof w[0]; k++)
        if (strcasecmp(s, w[k]) == 0) return 1;
    return 0;
}

int cli_config_option(const char *cmd, int argc, char **argv, int *i, const char *inline_value,
                      cli_overrides *ov) {
    const char *a = argv[*i];
    if (strncmp(a, "--", 2) != 0) return 0;
    const int kind = tandem_config_name_kind(a + 2);
    if (kind == TANDEM_CONFIG_NAME_UNKNOWN) return 0;
    const char *v = "true"; /* a MyXTTS switch: the flag alone means true */
    if (kind != TANDEM_CONFIG_NAME_SWITCH && !(v = cli_opt_value(cmd, argc, argv, i, inline_value))) return -1;
    if (kind == TANDEM_CONFIG_NAME_SWITCH && inline_value) v = inline_value;
    else if (kind == TANDEM_CONFIG_NAME_SWITCH && *i + 1 < argc && is_bool_word(argv[*i + 1])) v = argv[++*i];
    if (ov->n == CLI_MAX_OVERRIDES) {
        fprintf(stderr, "tandem %s: more than %d config options (at '%s')\n", cmd, CLI_MAX_OVERRIDES, a);
        return -1;
    }
    ov->flag[ov->n] = a;
    ov->key[ov->n] = a + 2;
    ov->val[ov->n++] = v;
    return 1;
}

int cli_unknown_option(const char *cmd, const char *arg) {
    char hint[128];
    cli_suggest_flag(arg, hint, sizeof hint);
    fprintf(stderr, "tandem %s: unknown option '%s'%s (tandem help %s lists them)\n", cmd, arg, hint, cmd);
    return 2;
}

void cli_print_config_flags(FILE *f) {
    fprintf(f, "\nconfig keys, each also a flag: --key VALUE or --key=VALUE (dashes or underscores;\n"
               "flags override the --config file):\n");
    const int n = tandem_config_key_count();
    for (int i = 0; i < n; i++) {
        tandem_config_key_info k;
        if (tandem_config_key_at(i, &k) != TANDEM_OK) continue;
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", k.key);
        for (char *c = flag + 2; *c; c++)
            if (*c == '_') *c = '-';
        fprintf(f, "  %-24s %s\n  %-24s   %s; default %s\n", flag, k.doc, "", k.expected, k.def[0] ? k.def : "''");
    }
    fprintf(f, "\nMyXTTS names are accepted too (docs/MIGRATING.md); each use prints one info line:\n");
    const int na = tandem_config_alias_count();
    for (int i = 0; i < na; i++) {
        tandem_config_alias_info a;
        if (tandem_config_alias_at(i, &a) != TANDEM_OK) continue;
        if (a.key && strcmp(a.key, a.name) == 0) continue;
        fprintf(f, "  %-28s %s%s\n", a.name, a.key ? "-> " : a.is_switch ? "(flag) " : "", a.key ? a.key : "accepted, sets nothing");
    }
}

void cli_quiet_hook(void *user, tandem_log_level level, const char *msg) {
    (void)user, (void)level, (void)msg;
}
