/* run_ckpt.c — a training run's checkpoints (see run_ckpt.h). */
#include "runtime/run/run_ckpt.h"
#include "runtime/run/dp.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/core/dev.h"
#include "runtime/run/ckpt_check.h"
#include "runtime/run/resume.h"
#include "runtime/run/run_dir.h"
#include "runtime/text/symbols.h"

#define NAME_CAP (TANDEM_MODEL_PARAM_NAME_MAX + 8)

/* A metadata counter: digits only, within [lo, hi]; absent: def (older checkpoints). */
static tandem_status meta_int(const tandem_st_file *f, const char *path, const char *key, int64_t def,
                              int64_t lo, int64_t hi, int64_t *v) {
    const char *s = tandem_st_meta_find(f, key);
    if (!s) {
        *v = def;
        return TANDEM_OK;
    }
    char *end = NULL;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x < lo || x > hi)
        return tandem_fail(TANDEM_E_FORMAT, "%s: __metadata__ %s is \"%.32s\", expected an integer in [%" PRId64
                           ", %" PRId64 "]", path, key, s, lo, hi);
    *v = x;
    return TANDEM_OK;
}

typedef struct find_ctx {
    int64_t n_train;
    const tandem_ckpt_data *data; /* the training set now; NULL: not checked (peek) */
    tandem_train_state st;
    tandem_sampler_pos next;
    char changed[1400]; /* a newer checkpoint refused for a dataset change: why */
} find_ctx;

/* tandem_checkpoint_find_usable's test: counters and sampler position in range, the tensors its
 * config describes (checked before anything is built from that config), values finite. */
static tandem_status accept(void *ctx, const tandem_st_file *f, const char *path) {
    find_ctx *c = ctx;
    int64_t step = 0;
    TANDEM_TRY(meta_int(f, path, TANDEM_CKPT_KEY_STEP, 0, 0, TANDEM_CKPT_COUNTER_MAX, &step));
    c->st.step = step;
    TANDEM_TRY(meta_int(f, path, "updates", step, 0, step, &c->st.updates));
    TANDEM_TRY(meta_int(f, path, "skipped", 0, 0, step, &c->st.skipped));
    TANDEM_TRY(meta_int(f, path, "skipped_in_row", 0, 0, step, &c->st.skipped_in_row));
    TANDEM_TRY(meta_int(f, path, TANDEM_CKPT_KEY_SAMPLER_EPOCH, 0, 0, TANDEM_CKPT_COUNTER_MAX, &c->next.epoch));
    char why[sizeof c->changed];
    const int changed = c->data && tandem_ckpt_data_changed(f, path, c->data, why, sizeof why);
    if (meta_int(f, path, TANDEM_CKPT_KEY_SAMPLER_POSITION, 0, 0, c->n_train > 0 ? c->n_train - 1 : INT64_MAX,
                 &c->next.index) != TANDEM_OK) {
        if (!changed) return TANDEM_E_FORMAT; /* meta_int's message */
        if (!c->changed[0]) snprintf(c->changed, sizeof c->changed, "%s", why);
        return tandem_fail(TANDEM_E_INVALID, "%s, and its sampler position is past the data", why);
    }
    TANDEM_TRY(tandem_ckpt_check_shapes(f, path));
    return tandem_ckpt_check_values(f, path, 0);
}

/* The newest usable checkpoint of dir, opened, its counters in *c. */
static tandem_status find_open(const char *dir, find_ctx *c, tandem_st_file **out, char *path, size_t cap,
                               int64_t *step) {
    int found = 0;
    *out = NULL;
    TANDEM_TRY(tandem_checkpoint_find_usable(dir, accept, c, path, cap, step, &found));
    if (c->changed[0]) /* an older one would go on and overwrite the newest */
        return tandem_fail(TANDEM_E_INVALID, "resume: %s, and its sampler position is past the data; a resume "
                           "never continues from an older checkpoint that would overwrite it: restore the "
                           "dataset, or start a new run from its weights with --init-from", c->changed);
    if (!found) {
        TANDEM_TRY(tandem_run_dir_check_free(dir)); /* a live run before its first checkpoint */
        return tandem_fail(TANDEM_E_INVALID, "resume: no usable checkpoint in '%s' (each one skipped is named in a "
                           "warning above)", dir);
    }
    TANDEM_TRY(tandem_checkpoint_open(path, *step, out));
    return accept(c, *out, path); /* the counters of the one taken */
}

tandem_status tandem_run_ckpt_peek(const char *dir, tandem_st_file **out, char *path, size_t cap) {
    *out = NULL;
    struct stat sb;
    const int missing = stat(dir, &sb) != 0;
    if (missing || !S_ISDIR(sb.st_mode))
        return tandem_fail(TANDEM_E_INVALID, "'%s' is not a run directory (%s); expected the --out of an earlier "
                           "tandem train, holding ckpt-<step>.safetensors", dir,
                           missing ? strerror(errno) : "not a directory");
    find_ctx c = {.n_train = 0};
    int64_t step = 0;
    tandem_status st = find_open(dir, &c, out, path, cap, &step);
    if (st != TANDEM_OK && *out) {
        tandem_st_close(*out);
        *out = NULL;
    }
    return st;
}

tandem_status tandem_run_ckpt_find(const char *dir, const tandem_config *cfg, const tandem_text_index *ix,
                                   tandem_st_file **out, tandem_train_state *st, tandem_sampler_pos *next) {
    char path[1100], why[1400];
    int64_t step = 0;
    tandem_ckpt_data now;
    tandem_ckpt_data_of(ix, &now);
    find_ctx c = {.n_train = ix->n_train, .data = &now};
    TANDEM_TRY(find_open(dir, &c, out, path, sizeof path, &step));
    if (tandem_ckpt_data_changed(*out, path, &now, why, sizeof why))
        tandem_logf(TANDEM_LOG_WARN, "resume: %s; the sampler continues at the checkpoint's position in the new "
                    "listing", why);
    *st = c.st;
    const tandem_st_file *f = *out;
    const char *rs = tandem_st_meta_find(f, TANDEM_CKPT_KEY_RNG);
    const int64_t rng = rs ? strtoll(rs, NULL, 10) : cfg->seed;
    if (rng != cfg->seed)
        tandem_logf(TANDEM_LOG_WARN, "resume: the checkpoint's seed is %" PRId64 ", the config's %"
                    PRId64 "; the sampler continues with the config's", rng, cfg->seed);
    *next = c.next;
    tandem_logf(TANDEM_LOG_INFO, "resume: %s (step %" PRId64 ", sampler epoch %" PRId64
                ", position %" PRId64 ")", path, step, next->epoch, next->index);
    return TANDEM_OK;
}

/* The table: one entry per parameter, then per adam_m, then per adam_v; returns the largest
 * parameter's element count. */
static int64_t build_table(tandem_run_ckpt *c, const tandem_model *m) {
    static const char *const prefix[3] = {"", "adam_m.", "adam_v."};
    tandem_tensor *flat[3] = {m->params, m->adam_m, m->adam_v};
    int64_t biggest = 1;
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < m->n_params; i++) {
            const int j = k * m->n_params + i;
            char *name = c->names + (size_t)j * NAME_CAP;
            snprintf(name, NAME_CAP, "%s%s", prefix[k], m->param[i].name);
            tandem_st_tensor *e = &c->tensors[j];
            e->name = name;
            e->dtype = TANDEM_F32;
            e->ndim = m->param[i].ndim;
            e->shape[0] = m->param[i].shape[0];
            e->shape[1] = m->param[i].shape[1];
            e->user = &c->entries[j];
            c->entries[j].flat = flat[k];
            c->entries[j].off = m->param[i].offset;
            if (m->param[i].numel > biggest) biggest = m->param[i].numel;
        }
    return biggest;
}

/* The dataset's speaker table as the checkpoint's "speakers" entry (NULL for one speaker). */
static tandem_status speakers_json(const tandem_text_index *ix, char **json) {
    *json = NULL;
    if (!ix || ix->n_speakers == 0) return TANDEM_OK;
    const char **names = tandem_malloc(ix->n_speakers * sizeof *names);
    if (!names) return tandem_fail(TANDEM_E_NOMEM, "trainer: out of memory");
    tandem_text_index_speakers(ix, names);
    tandem_status st = tandem_speakers_to_json(names, ix->n_speakers, json);
    tandem_free(names);
    return st;
}

static tandem_status create_parts(tandem_run_ckpt *c, const tandem_model *m, const tandem_config *cfg,
                                  const tandem_text_index *ix, int resume) {
    c->count = 3 * m->n_params;
    c->tensors = tandem_calloc((size_t)c->count, sizeof *c->tensors);
    c->entries = tandem_calloc((size_t)c->count, sizeof *c->entries);
    c->names = tandem_calloc((size_t)c->count, NAME_CAP);
    if (!c->tensors || !c->entries || !c->names)
        return tandem_fail(TANDEM_E_NOMEM, "trainer: out of memory for the checkpoint table");
    const int64_t biggest = build_table(c, m);
    size_t len = 0;
    TANDEM_TRY(tandem_symbols_to_json(&c->symbols_json, &len));
    TANDEM_TRY(speakers_json(ix, &c->speakers_json));
    if (c->speakers_json) len += strlen(c->speakers_json) + 16;
    const size_t cl = tandem_config_dump(cfg, NULL, 0) + 1;
    c->cfg_yaml = tandem_malloc(cl);
    if (!c->cfg_yaml) return tandem_fail(TANDEM_E_NOMEM, "trainer: out of memory");
    tandem_config_dump(cfg, c->cfg_yaml, cl);
    if (resume) {
        c->load_buf = tandem_malloc((size_t)biggest * sizeof(float));
        if (!c->load_buf) return tandem_fail(TANDEM_E_NOMEM, "trainer: out of memory");
    }
    /* the paths escaped as JSON take at most 6 bytes a byte (\u00XX) */
    const size_t paths = 6 * (strlen(c->train_abs) + strlen(c->val_abs)) + 128;
    const size_t meta = cl + len + paths + 1024 + sizeof c->data;
    return tandem_checkpoint_create(cfg->out, cfg->keep, c->tensors, c->count, meta, &c->writer);
}

tandem_status tandem_run_ckpt_create(tandem_run_ckpt *c, const tandem_model *m, const tandem_config *cfg,
                                     const tandem_text_index *ix, tandem_stream *s, int resume) {
    memset(c, 0, sizeof *c);
    c->s = s;
    c->seed = cfg->seed;
    c->best_val_l1 = INFINITY;
    /* absolute data paths: a resume from another working directory still finds the data */
    if (!cfg->train_data[0] || !realpath(cfg->train_data, c->train_abs)) c->train_abs[0] = '\0';
    if (!cfg->val_data[0] || !realpath(cfg->val_data, c->val_abs)) c->val_abs[0] = '\0';
    tandem_ckpt_data_of(ix, &c->data);
    tandem_status st = create_parts(c, m, cfg, ix, resume);
    if (st != TANDEM_OK) tandem_run_ckpt_free(c);
    return st;
}

tandem_status tandem_run_ckpt_restore(tandem_run_ckpt *c, const tandem_st_file *f) {
    const char *theirs = tandem_st_meta_find(f, TANDEM_CKPT_KEY_SPEAKERS), *ours = c->speakers_json;
    if (strcmp(theirs ? theirs : "[]", ours ? ours : "[]") != 0)
        return tandem_fail(TANDEM_E_INVALID, "resume: the checkpoint's speaker table %.200s is not the dataset's "
                           "%.200s; resume with the data it was trained on", theirs ? theirs : "[] (one speaker)",
                           ours ? ours : "[] (one speaker)");
    for (int j = 0; j < c->count; j++) {
        const tandem_st_tensor *e = &c->tensors[j];
        const tandem_run_ckpt_entry *ce = &c->entries[j];
        int64_t numel = e->ndim > 1 ? e->shape[0] * e->shape[1] : e->shape[0];
        size_t bytes = (size_t)numel * sizeof(float);
        TANDEM_TRY(tandem_st_read_tensor(f, e->name, TANDEM_F32, e->ndim, e->shape, c->load_buf, bytes));
        TANDEM_TRY(tandem_dev_upload(c->s, ce->flat, (size_t)ce->off * sizeof(float), c->load_buf,
                                     bytes));
        TANDEM_TRY(tandem_stream_sync(c->s));
    }
    return TANDEM_OK;
}

static tandem_status fetch(void *ctx, void *user, void *dst, size_t offset, size_t bytes) {
    tandem_run_ckpt *c = ctx;
    const tandem_run_ckpt_entry *e = user;
    TANDEM_TRY(tandem_dev_download(c->s, dst, e->flat, (size_t)e->off * sizeof(float) + offset,
                                   bytes));
    return tandem_stream_sync(c->s);
}

static tandem_status save(tandem_run_ckpt *c, const tandem_train_state *st, tandem_sampler_pos next,
                          int to_best) {
    char upd[32], skp[32], row[32], rng[32], ep[32], pos[32], best[40];
    snprintf(upd, sizeof upd, "%" PRId64, st->updates);
    snprintf(skp, sizeof skp, "%" PRId64, st->skipped);
    snprintf(row, sizeof row, "%" PRId64, st->skipped_in_row);
    /* The run's only random state: initialisation and the sampler's permutations are pure
     * functions of the seed (no dropout), so the seed is the RNG state. */
    snprintf(rng, sizeof rng, "%" PRId64, c->seed);
    snprintf(ep, sizeof ep, "%" PRId64, next.epoch);
    snprintf(pos, sizeof pos, "%" PRId64, next.index);
    snprintf(best, sizeof best, "%.17g", c->best_val_l1);
    char ws[16];
    snprintf(ws, sizeof ws, "%d", c->world_size > 1 ? c->world_size : 1);
    const tandem_st_meta meta[] = {
        {TANDEM_CKPT_KEY_CONFIG, c->cfg_yaml},
        {TANDEM_CKPT_KEY_SYMBOLS, c->symbols_json},
        {TANDEM_CKPT_KEY_SAMPLER_EPOCH, ep},
        {TANDEM_CKPT_KEY_SAMPLER_POSITION, pos},
        {"updates", upd},
        {"skipped", skp},
        {"skipped_in_row", row},
        {TANDEM_CKPT_KEY_RNG, rng},
        {TANDEM_CKPT_KEY_TRAIN_ABS, c->train_abs},
        {TANDEM_CKPT_KEY_VAL_ABS, c->val_abs},
        {TANDEM_CKPT_KEY_TRAIN_ROWS, c->data.rows},
        {TANDEM_CKPT_KEY_TRAIN_LISTING, c->data.listing},
        {"freeze", c->freeze},
        {"freeze_trained", c->freeze_trained}, /* left out when NULL */
        {TANDEM_DP_KEY_WORLD_SIZE, ws},
        {TANDEM_CKPT_KEY_SPEAKERS, c->speakers_json}, /* left out for one speaker */
        {TANDEM_CKPT_KEY_BEST_VAL_L1, best},          /* last: left out while there is no best */
    };
    int n = (int)(sizeof meta / sizeof meta[0]) - (c->best_val_l1 < INFINITY ? 0 : 1);
    tandem_st_meta use[sizeof meta / sizeof meta[0]];
    int k = 0;
    for (int i = 0; i < n; i++)
        if (meta[i].value) use[k++] = meta[i];
    n = k;
    if (!to_best) return tandem_checkpoint_save(c->writer, st->step, use, n, fetch, c);
    return tandem_checkpoint_save_best(c->writer, st->step, use, n, fetch, c);
}

tandem_status tandem_run_ckpt_save(tandem_run_ckpt *c, const tandem_train_state *st,
                                   tandem_sampler_pos next) {
    return save(c, st, next, 0);
}

tandem_status tandem_run_ckpt_best(tandem_run_ckpt *c, const tandem_train_state *st, tandem_sampler_pos next,
                                   double val_l1) {
    if (st->step < 1 || !(val_l1 < c->best_val_l1)) return TANDEM_OK; /* NaN never improves */
    const double before = c->best_val_l1;
    c->best_val_l1 = val_l1;
    tandem_status rc = save(c, st, next, 1);
    if (rc != TANDEM_OK) {
        c->best_val_l1 = before;
        return rc;
    }
    tandem_logf(TANDEM_LOG_INFO, "step %" PRId64 ": validation L1 %.5g, the best so far: " TANDEM_CKPT_BEST_NAME
                " written", st->step, val_l1);
    return TANDEM_OK;
}

void tandem_run_ckpt_resumed(tandem_run_ckpt *c, const tandem_st_file *f, int64_t step) {
    tandem_checkpoint_set_good(c->writer, step); /* checked finite by find */
    const char *best = tandem_st_meta_find(f, TANDEM_CKPT_KEY_BEST_VAL_L1);
    char *end = NULL;
    const double v = best ? strtod(best, &end) : NAN;
    if (best && end != best && !*end && v == v) c->best_val_l1 = v;
}

tandem_status tandem_run_ckpt_freeze(tandem_run_ckpt *c, const tandem_st_file *f, const char *spec) {
    const char *stored = f ? tandem_st_meta_find(f, "freeze") : NULL;
    const char *use = spec ? spec : stored ? stored : "";
    if (strlen(use) >= sizeof c->freeze)
        return tandem_fail(TANDEM_E_INVALID, "--freeze: %zu bytes of groups, at most %zu", strlen(use),
                           sizeof c->freeze - 1);
    if (!spec && stored && stored[0])
        tandem_logf(TANDEM_LOG_INFO, "resume: freezing '%s' as the run did (--freeze \"\" trains everything)", stored);
    else if (spec && f && strcmp(spec, stored ? stored : ""))
        tandem_logf(TANDEM_LOG_INFO, "resume: --freeze changes '%s' -> '%s'", stored ? stored : "", spec);
    memcpy(c->freeze, use, strlen(use) + 1);
    const char *trained = f ? tandem_st_meta_find(f, "freeze_trained") : NULL;
    if (trained && !(c->freeze_trained = tandem_strdup(trained)))
        return tandem_fail(TANDEM_E_NOMEM, "resume: out of memory");
    return TANDEM_OK;
}

void tandem_run_ckpt_free(tandem_run_ckpt *c) {
    if (c->writer) tandem_checkpoint_free(c->writer);
    tandem_free(c->tensors);
    tandem_free(c->entries);
    tandem_free(c->names);
    tandem_free(c->cfg_yaml);
    tandem_free(c->symbols_json);
    tandem_free(c->speakers_json);
    tandem_free(c->freeze_trained);
    tandem_free(c->load_buf);
    memset(c, 0, sizeof *c);
}
