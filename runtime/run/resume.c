/* resume.c — a resume's config: the stored one, compared with the caller's (see resume.h). */
#include "runtime/run/resume.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/formats/checkpoint.h"
#include "runtime/run/run_ckpt.h"
#include "runtime/text/symbols.h"

tandem_status tandem_resume_stored_config(const tandem_st_file *f, const char *path, tandem_config *old) {
    const char *yaml = tandem_st_meta_find(f, TANDEM_CKPT_KEY_CONFIG);
    if (!yaml)
        return tandem_fail(TANDEM_E_FORMAT, "%s: __metadata__ has no '%s' (the run's config); expected a "
                           "checkpoint written by tandem train", path, TANDEM_CKPT_KEY_CONFIG);
    char origin[PATH_MAX + 32];
    snprintf(origin, sizeof origin, "%s: __metadata__ config", path);
    tandem_config_init(old);
    return tandem_config_load_string(old, yaml, strlen(yaml), origin);
}

static int is_fixed(const char *key) {
    static const char *const fixed[] = {TANDEM_RESUME_FIXED_KEYS};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!strcmp(fixed[i], key)) return 1;
    return 0;
}

static int is_dir_key(const char *key) {
    return !strcmp(key, "train_data") || !strcmp(key, "val_data") || !strcmp(key, "out");
}

/* Two directory paths name the same directory (both exist), or are the same text. */
static int same_dir(const char *a, const char *b) {
    struct stat x, y;
    if (!strcmp(a, b)) return 1;
    return a[0] && b[0] && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

static tandem_status check_symbols(const tandem_st_file *f, const char *path) {
    const char *theirs = tandem_st_meta_find(f, TANDEM_CKPT_KEY_SYMBOLS);
    if (!theirs) return TANDEM_OK; /* written before symbols were stored: the ids of that build */
    char *ours = NULL;
    TANDEM_TRY(tandem_symbols_to_json(&ours, NULL));
    const int same = strcmp(ours, theirs) == 0;
    tandem_free(ours);
    if (same) return TANDEM_OK;
    return tandem_fail(TANDEM_E_INVALID, "resume from %s: its symbol table differs from this build's (symbols "
                       "version %d), so its embedding rows are other token ids; start a new run with "
                       "--init-from %s instead (rows copied by symbol name)", path, TANDEM_SYMBOLS_VERSION, path);
}

typedef struct diff_list {
    char run_dir[PATH_MAX]; /* the checkpoint's directory */
    char refused[2048];
    size_t len;
    int n_refused;
} diff_list;

/* The checkpoint's directory for key: its stored (maybe relative) path, or the absolute one it
 * recorded when the stored one does not resolve from here. */
static const char *stored_dir(const tandem_st_file *f, const char *key, const char *v) {
    const char *abs = !strcmp(key, "train_data")  ? tandem_st_meta_find(f, TANDEM_CKPT_KEY_TRAIN_ABS)
                      : !strcmp(key, "val_data") ? tandem_st_meta_find(f, TANDEM_CKPT_KEY_VAL_ABS)
                                                 : NULL;
    struct stat sb;
    return abs && abs[0] && stat(v, &sb) != 0 ? abs : v;
}

/* One key: listed when changed, collected when fixed. */
static void compare_key(const char *key, const tandem_st_file *f, const tandem_config *old, const tandem_config *cfg,
                        int force, int quiet, diff_list *d) {
    char a[TANDEM_CONFIG_VALUE_MAX], b[TANDEM_CONFIG_VALUE_MAX];
    if (tandem_config_get(old, key, a, sizeof a) != TANDEM_OK || tandem_config_get(cfg, key, b, sizeof b) != TANDEM_OK)
        return;
    if (is_dir_key(key) ? same_dir(stored_dir(f, key, a), b) || (!strcmp(key, "out") && same_dir(d->run_dir, b))
                        : !strcmp(a, b))
        return; /* out: the directory resumed is the run's directory, however the stored path spells it */
    const int fixed = is_fixed(key);
    if (fixed && !force) {
        if (d->len < sizeof d->refused)
            d->len += (size_t)snprintf(d->refused + d->len, sizeof d->refused - d->len, "%s%s %s -> %s",
                                       d->n_refused ? ", " : "", key, a, b);
        d->n_refused++;
    } else if (fixed) {
        tandem_logf(TANDEM_LOG_WARN, "resume: key '%s' changes %s -> %s (forced: it changes the model's shapes "
                    "or the order of the training data)", key, a, b);
    } else if (!quiet) {
        tandem_logf(TANDEM_LOG_INFO, "resume: key '%s' changes %s -> %s", key, a, b);
    }
}

/* Every schema key, in the dump's order (one "key: value" line each). */
static tandem_status compare_all(const tandem_st_file *f, const tandem_config *old, const tandem_config *cfg,
                                 int force, int quiet, diff_list *d) {
    const size_t n = tandem_config_dump(cfg, NULL, 0) + 1;
    char *dump = tandem_malloc(n);
    if (!dump) return tandem_fail(TANDEM_E_NOMEM, "resume: out of memory");
    tandem_config_dump(cfg, dump, n);
    for (char *line = dump; *line;) {
        char *end = strchr(line, '\n');
        char *colon = strchr(line, ':');
        if (!end) end = line + strlen(line);
        if (colon && colon < end) {
            *colon = '\0';
            compare_key(line, f, old, cfg, force, quiet, d);
        }
        line = *end ? end + 1 : end;
    }
    tandem_free(dump);
    return TANDEM_OK;
}

tandem_status tandem_resume_check(const tandem_st_file *f, const char *path, const tandem_config *cfg,
                                  int force, int quiet) {
    TANDEM_TRY(check_symbols(f, path));
    tandem_config old;
    TANDEM_TRY(tandem_resume_stored_config(f, path, &old));
    diff_list d;
    memset(&d, 0, sizeof d);
    const char *slash = strrchr(path, '/');
    snprintf(d.run_dir, sizeof d.run_dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    TANDEM_TRY(compare_all(f, &old, cfg, force, quiet, &d));
    if (!d.n_refused) return TANDEM_OK;
    return tandem_fail(TANDEM_E_INVALID, "resume from %s refused: %s %s the model's shapes or the order of the "
                       "training data (checkpoint -> now: %s); leave %s out to continue the run as it was, start "
                       "a new run (--init-from %s keeps the weights), or force it (--force-resume; shapes that "
                       "differ still fail to load)", path, d.n_refused == 1 ? "this key" : "these keys",
                       d.n_refused == 1 ? "changes" : "change", d.refused, d.n_refused == 1 ? "it" : "them", path);
}

tandem_status tandem_resume_check_dir(const char *dir, const tandem_config *cfg, int force) {
    tandem_st_file *f = NULL;
    char path[PATH_MAX];
    TANDEM_TRY(tandem_run_ckpt_peek(dir, &f, path, sizeof path));
    tandem_status st = tandem_resume_check(f, path, cfg, force, 0);
    tandem_st_close(f);
    return st;
}

/* A stored relative data path that no longer resolves (another working directory): the absolute
 * one the checkpoint recorded, when that is a directory. */
static tandem_status fix_data_path(const tandem_st_file *f, tandem_config *cfg, const char *key,
                                   const char *abs_key) {
    char v[TANDEM_CONFIG_VALUE_MAX];
    TANDEM_TRY(tandem_config_get(cfg, key, v, sizeof v));
    const char *abs = tandem_st_meta_find(f, abs_key);
    struct stat sb;
    if (!v[0] || v[0] == '/' || !abs || stat(v, &sb) == 0 || stat(abs, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return TANDEM_OK;
    tandem_logf(TANDEM_LOG_INFO, "resume: %s '%s' is not found from this directory; using %s, recorded by the "
                "checkpoint", key, v, abs);
    return tandem_config_set_from(cfg, abs_key, key, abs);
}

static tandem_status resume_config(const char *run_dir, tandem_config *cfg) {
    tandem_st_file *f = NULL;
    char path[PATH_MAX];
    TANDEM_TRY(tandem_run_ckpt_peek(run_dir, &f, path, sizeof path));
    tandem_status st = tandem_resume_stored_config(f, path, cfg);
    if (st == TANDEM_OK) st = tandem_config_set_from(cfg, "--resume", "out", run_dir);
    if (st == TANDEM_OK) st = fix_data_path(f, cfg, "train_data", TANDEM_CKPT_KEY_TRAIN_ABS);
    if (st == TANDEM_OK) st = fix_data_path(f, cfg, "val_data", TANDEM_CKPT_KEY_VAL_ABS);
    tandem_st_close(f);
    return st;
}

tandem_status tandem_trainer_resume_config(const char *run_dir, tandem_config *cfg) {
    if (!run_dir || !cfg) return tandem_fail(TANDEM_E_INVALID, "tandem_trainer_resume_config: NULL argument");
    tandem_config keep = *cfg;
    tandem_status st = resume_config(run_dir, cfg);
    if (st != TANDEM_OK) *cfg = keep; /* on failure cfg is unchanged */
    return st;
}
