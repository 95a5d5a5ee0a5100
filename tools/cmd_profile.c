/* cmd_profile.c — `tandem profile`: the dual-device bottleneck profiler. Trains N steps of a config
 * on the chosen devices (into a temporary run directory unless --out), then prints per device
 * busy/idle, the data wait (device-side on CUDA), the data path's stage times, the device time of
 * every op of the last step (events between ops: options.profile_ops), and the verdict with its
 * recommendation (docs/TRAINING.md "Verdicts", "Profile"); --json prints one JSON object instead.
 * Exit codes: 0 done, 2 bad usage or config, 1 any other failure. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tandem.h"
#include "tools/cli.h"
#include "tools/progress.h"

#define PROFILE_OPS 65536 /* events for the profiled step's kernels and GEMMs */
#define TOP_OPS 40

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem profile --config FILE [--train-data DIR] [--steps N] [--json] [--out DIR]\n"
            "                      [--backend auto|host|cuda] [--<config-key> VALUE ...]\n\n"
            "Trains N steps (default 20; the first 2 are warm-up) of the config on the chosen devices\n"
            "(--data-gpu / --model-gpu like any config key) and reports where the time goes: per device\n"
            "busy and idle %%, the model device's data wait (measured on the device on CUDA), the data\n"
            "path's stage times, the device time of each op of the last step, and the verdict\n"
            "(input-bound, launch-/host-bound, device-bound) with one recommendation.\n"
            "The run directory is temporary (removed) unless --out DIR is given.\n\n"
            "  --json      one JSON object on stdout instead of the text report\n");
}

typedef struct prof_args {
    const char *config, *out;
    long steps;
    int json;
    tandem_backend backend;
    int n_over;
    const char *flag[32], *key[32], *val[32];
    char keybuf[32][64];
} prof_args;

/* --config-key VALUE → config key config_key (the config names unknown ones). */
static int parse(int argc, char **argv, prof_args *a) {
    memset(a, 0, sizeof *a);
    a->steps = 20;
    a->backend = TANDEM_BACKEND_AUTO;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--json")) {
            a->json = 1;
            continue;
        }
        if (strncmp(o, "--", 2) || i + 1 >= argc) {
            fprintf(stderr, "tandem profile: option '%s' %s (see --help)\n", o,
                    strncmp(o, "--", 2) ? "is not an option" : "needs a value");
            return 0;
        }
        const char *v = argv[++i];
        if (!strcmp(o, "--config")) a->config = v;
        else if (!strcmp(o, "--out")) a->out = v;
        else if (!strcmp(o, "--steps")) {
            char *end;
            a->steps = strtol(v, &end, 10);
            if (!*v || *end || a->steps < 3 || a->steps > 1000000) {
                fprintf(stderr, "tandem profile: --steps '%s': expected an integer in [3, 1000000]\n", v);
                return 0;
            }
        } else if (!strcmp(o, "--backend")) {
            if (!cli_parse_backend("profile", v, &a->backend)) return 0;
        } else if (a->n_over < 32 && strlen(o + 2) < 64) {
            char *k = a->keybuf[a->n_over];
            snprintf(k, 64, "%s", o + 2);
            for (char *c = k; *c; c++)
                if (*c == '-') *c = '_';
            a->flag[a->n_over] = o;
            a->key[a->n_over] = k;
            a->val[a->n_over++] = v;
        } else {
            fprintf(stderr, "tandem profile: too many options\n");
            return 0;
        }
    }
    if (!a->config) fprintf(stderr, "tandem profile: --config FILE is required (see --help)\n");
    return a->config != NULL;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

typedef struct report {
    tandem_trainer_summary sum;
    tandem_op_time kinds[TOP_OPS];
    int n_ops, timed, overflow;
    double op_ms, span_ms;
    char model_name[32], data_name[32];
} report;

static void on_step(void *user, const tandem_step_metrics *m) {
    report *r = user;
    snprintf(r->model_name, sizeof r->model_name, "%s", m->model_device_name ? m->model_device_name : "?");
    snprintf(r->data_name, sizeof r->data_name, "%s", m->data_device_name ? m->data_device_name : "?");
}

static void print_text(const prof_args *a, const report *r) {
    const tandem_trainer_summary *s = &r->sum;
    const tandem_verdict *v = &s->verdict;
    printf("profile: %lld steps of %s (%lld measured past warm-up)\ndevices: %s\n", (long long)s->steps_run,
           a->config, (long long)s->steps_measured, s->devices);
    printf("model device (%s): busy %.1f %%, idle %.1f %% (work regions span %.1f %%; busy from %s), median step "
           "%.2f ms\n", r->model_name, v->model_busy_pct, 100.0 - v->model_busy_pct, v->model_occupied_pct,
           s->busy_from_events ? "device events, host launch time counted as idle" : "host clocks", v->step_ms);
    printf("  data wait: median %.3f ms = %.2f %% of the step (of it the model stream stalled on the copies: %.3f ms)\n",
           v->data_wait_ms, v->wait_pct, v->data_wait_device_ms);
    printf("data device (%s): busy %.1f %%, idle %.1f %%\n", r->data_name, s->data_busy_pct,
           s->data_busy_pct < 100 ? 100.0 - s->data_busy_pct : 0.0);
    printf("data path stages over %.0f ms (count, total, mean):\n", s->wall_ms);
    for (int i = 0; i < s->stages; i++)
        printf("  %-16s %8.0f %10.2f ms %9.3f ms\n", s->stage_name[i], s->stage_count[i], s->stage_total_ms[i],
               s->stage_mean_ms[i]);
    printf("ops of the last step: %d timed%s, %.3f ms of device time in a %.3f ms span (gaps waiting for the "
           "host excluded)\n", r->timed, r->overflow ? " (more not timed)" : "", r->op_ms, r->span_ms);
    for (int i = 0; i < r->n_ops; i++)
        printf("  %-32s x%-4d %9.3f ms %5.1f %%\n", r->kinds[i].name, r->kinds[i].count, r->kinds[i].device_ms,
               r->op_ms > 0 ? 100.0 * r->kinds[i].device_ms / r->op_ms : 0.0);
    cli_print_verdict(stdout, v);
}

static void print_json(const prof_args *a, const report *r) {
    const tandem_trainer_summary *s = &r->sum;
    const tandem_verdict *v = &s->verdict;
    printf("{\"config\": \"%s\", \"steps\": %lld, \"steps_measured\": %lld, \"busy_from_events\": %d,\n", a->config,
           (long long)s->steps_run, (long long)s->steps_measured, s->busy_from_events);
    printf(" \"model\": {\"device\": \"%s\", \"busy_pct\": %.3f, \"idle_pct\": %.3f, \"occupied_pct\": %.3f, "
           "\"step_ms\": %.4f, \"data_wait_ms\": %.4f, \"data_wait_device_ms\": %.4f, \"data_wait_pct\": %.4f},\n",
           r->model_name, v->model_busy_pct, 100.0 - v->model_busy_pct, v->model_occupied_pct, v->step_ms,
           v->data_wait_ms, v->data_wait_device_ms, v->wait_pct);
    printf(" \"data\": {\"device\": \"%s\", \"busy_pct\": %.3f},\n \"stages\": [", r->data_name, s->data_busy_pct);
    for (int i = 0; i < s->stages; i++)
        printf("%s{\"name\": \"%s\", \"count\": %.0f, \"total_ms\": %.4f, \"mean_ms\": %.5f}", i ? ", " : "",
               s->stage_name[i], s->stage_count[i], s->stage_total_ms[i], s->stage_mean_ms[i]);
    printf("],\n \"ops\": {\"timed\": %d, \"overflow\": %d, \"device_ms\": %.4f, \"span_ms\": %.4f, \"top\": [",
           r->timed, r->overflow, r->op_ms, r->span_ms);
    for (int i = 0; i < r->n_ops; i++)
        printf("%s{\"name\": \"%s\", \"count\": %d, \"device_ms\": %.5f}", i ? ", " : "", r->kinds[i].name,
               r->kinds[i].count, r->kinds[i].device_ms);
    /* why and advice hold no quotes or backslashes (verdict.c writes them from numbers and names) */
    printf("]},\n \"verdict\": {\"bound\": \"%s\", \"why\": \"%s\", \"recommendation\": \"%s\"}}\n",
           tandem_bound_name(v->bound), v->why, v->advice);
}

/* Train a->steps steps into out and fill r. */
static tandem_status profile_run(const prof_args *a, const char *out, report *r) {
    tandem_config *cfg = NULL;
    tandem_status st = cli_load_config(&cfg, a->config, a->n_over, a->flag, a->key, a->val);
    if (st != TANDEM_OK) return st;
    char steps[32];
    snprintf(steps, sizeof steps, "%ld", a->steps);
    st = tandem_config_set(cfg, "out", out);
    if (st == TANDEM_OK) st = tandem_config_set(cfg, "max_steps", steps);
    if (st == TANDEM_OK) st = tandem_config_set(cfg, "checkpoint_every", "0");
    if (st == TANDEM_OK) st = tandem_config_set(cfg, "val_data", "");
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = a->backend;
    o.new_run = 1;
    o.profile_ops = PROFILE_OPS;
    o.on_step = on_step;
    o.on_step_user = r;
    tandem_trainer *t = NULL;
    if (st == TANDEM_OK) st = tandem_trainer_create(cfg, &o, &t);
    tandem_config_destroy(cfg);
    if (st != TANDEM_OK) return st;
    st = tandem_trainer_run(t, &r->sum);
    r->n_ops = tandem_trainer_op_times(t, r->kinds, TOP_OPS, &r->timed, &r->op_ms, &r->span_ms, &r->overflow);
    tandem_trainer_destroy(t);
    return st;
}

int cli_profile(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    prof_args a;
    if (!parse(argc, argv, &a)) return 2;
    char tmp[256] = "";
    if (!a.out) {
        const char *base = getenv("TMPDIR");
        snprintf(tmp, sizeof tmp, "%s/tandem-profile.XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(tmp)) {
            perror("tandem profile: temporary run directory");
            return 1;
        }
    }
    report *r = calloc(1, sizeof *r);
    if (!r) return 1;
    tandem_status st = profile_run(&a, a.out ? a.out : tmp, r);
    if (tmp[0]) nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    int rc = cli_fail("profile", st);
    if (st == TANDEM_OK) {
        if (a.json) print_json(&a, r);
        else print_text(&a, r);
    }
    free(r);
    return rc;
}
