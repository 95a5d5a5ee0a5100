/* cmd_validate.c — `tandem validate`: checks a config, its dataset, the memory plan and the
 * devices before training (tandem_validate, tandem_validate.h) and prints every finding with
 * what to change. Exit 0 all well, 1 warnings, 2 errors (a config that does not load is one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tandem.h"
#include "tools/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem validate [--config FILE] [--train-data DIR] [--val-data DIR] [--backend auto|host|cuda]\n"
            "                       [--probe N] [--KEY VALUE ...]\n\n"
            "Checks a training setup without training: the config's keys and values (a MyXTTS config\n"
            "too: docs/MIGRATING.md), the dataset (index: rows, usable utterances, rows and audio left\n"
            "out by reason, text cache; N audio files decoded: readable, rate, duration against\n"
            "max_frames), the memory plan against the budgets and the devices' memory, whether the\n"
            "fatbin runs on the devices and the driver is new enough, and the expected throughput\n"
            "when a cost model is built in. Each finding says what to change.\n\n"
            "  --config FILE     the config to check (default: none, the flags alone, as tandem train)\n"
            "  --backend B       auto (default: the devices a run would use), host (no CUDA checks), cuda\n"
            "  --probe N         audio files to decode (default 16; 0: none)\n\n"
            "exit status: 0 no warnings, 1 warnings, 2 errors.\n");
    cli_print_config_flags(f);
}

static const char *level_name(tandem_finding_level lv) {
    return lv == TANDEM_FINDING_ERROR ? "error" : lv == TANDEM_FINDING_WARN ? "warn " : "ok   ";
}

static void config_error(void) {
    printf("error [config] %s\n        fix: correct that key or value (tandem help train lists them)\n",
           tandem_last_error());
}

/* Every config error at once: the file's (its first), each flag's on its own, then the checks
 * across keys when each value is valid. Returns the count printed (at least 1). */
static int config_errors(const char *path, const cli_overrides *ov) {
    int n = 0;
    tandem_config *c = NULL;
    if (tandem_config_create(&c) != TANDEM_OK) {
        config_error();
        return 1;
    }
    if (path && tandem_config_load(c, path) != TANDEM_OK) {
        config_error();
        n++;
        tandem_config_destroy(c); /* the flags are checked against the defaults instead */
        if (tandem_config_create(&c) != TANDEM_OK) return n;
    }
    for (int i = 0; i < ov->n; i++)
        if (tandem_config_set_from(c, ov->flag[i], ov->key[i], ov->val[i]) != TANDEM_OK) config_error(), n++;
    if (n == 0 && tandem_config_check(c) != TANDEM_OK) config_error(), n++;
    tandem_config_destroy(c);
    if (n == 0) printf("error [config] the config does not load (its error was not repeated)\n"), n++;
    return n;
}

int cli_validate(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *config_path = NULL;
    tandem_validate_options o;
    tandem_validate_options_init(&o);
    static cli_overrides ov;
    ov.n = 0;
    for (int i = 1; i < argc; i++) {
        const char *iv = cli_opt_split(argv[i]), *a = argv[i], *v;
        if (!strcmp(a, "--config") || !strcmp(a, "--backend") || !strcmp(a, "--probe")) {
            if (!(v = cli_opt_value("validate", argc, argv, &i, iv))) return 2;
            if (a[2] == 'c') config_path = v;
            else if (a[2] == 'b') {
                if (!cli_parse_backend("validate", v, &o.backend)) return 2;
            } else {
                char *end;
                long n = strtol(v, &end, 10);
                if (!*v || *end || n < 0 || n > 100000) {
                    fprintf(stderr, "tandem validate: --probe '%s': expected an integer in [0, 100000]\n", v);
                    return 2;
                }
                o.probe_files = (int)n;
            }
        } else {
            const int r = cli_config_option("validate", argc, argv, &i, iv, &ov);
            if (r < 0) return 2;
            if (r == 0) return cli_unknown_option("validate", a);
        }
    }
    const char *name = config_path ? config_path : "the flags"; /* as train: flags alone are a config */
    tandem_config *cfg = NULL;
    tandem_status st = cli_load_config(&cfg, config_path, ov.n, ov.flag, ov.key, ov.val);
    if (st != TANDEM_OK) {
        const int n = config_errors(config_path, &ov);
        printf("\n%s: %d error%s\n", name, n, n == 1 ? "" : "s");
        return 2;
    }
    printf("ok    [config] %s: every key and value is valid\n", name);
    static tandem_validate_report r; /* ~45 KiB */
    tandem_log_set_hook(cli_quiet_hook, NULL); /* the findings say it all; the index's and pools' lines repeat it */
    st = tandem_validate(cfg, &o, &r);
    tandem_log_set_hook(NULL, NULL);
    tandem_config_destroy(cfg);
    if (st != TANDEM_OK) return cli_fail("validate", st);
    for (int i = 0; i < r.n; i++) {
        const tandem_finding *f = &r.f[i];
        printf("%s [%s] %s\n", level_name(f->level), f->area, f->what);
        if (f->fix[0]) printf("        fix: %s\n", f->fix);
    }
    if (r.n < r.infos + r.warnings + r.errors)
        printf("(%d more findings not listed)\n", r.infos + r.warnings + r.errors - r.n);
    printf("\n%s: %d error%s, %d warning%s\n", name, r.errors, r.errors == 1 ? "" : "s", r.warnings,
           r.warnings == 1 ? "" : "s");
    return r.errors ? 2 : r.warnings ? 1 : 0;
}
