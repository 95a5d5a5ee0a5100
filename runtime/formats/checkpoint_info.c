/* checkpoint_info.c — the public checkpoint reader (runtime/tandem_checkpoint.h) over the
 * checkpoint and safetensors readers of this folder. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/core/config.h"
#include "runtime/formats/checkpoint.h"
#include "tandem.h"

struct tandem_ckpt {
    tandem_st_file *f;
    int64_t step;
    char path[]; /* as given */
};

tandem_status tandem_ckpt_open(const char *path, tandem_ckpt **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_ckpt_open: NULL argument");
    *out = NULL;
    if (!path) return tandem_fail(TANDEM_E_INVALID, "tandem_ckpt_open: NULL path");
    tandem_st_file *f = NULL;
    TANDEM_TRY(tandem_checkpoint_open(path, -1, &f));
    const char *s = tandem_st_meta_find(f, TANDEM_CKPT_KEY_STEP); /* present: checked by open */
    char *end = NULL;
    errno = 0;
    const long long step = strtoll(s, &end, 10);
    if (errno || end == s || *end || step < 0) {
        tandem_st_close(f);
        return tandem_fail(TANDEM_E_FORMAT, "%s: __metadata__ step is \"%.32s\", expected a step count",
                           path, s);
    }
    tandem_ckpt *c = tandem_malloc(sizeof *c + strlen(path) + 1);
    if (!c) {
        tandem_st_close(f);
        return tandem_fail(TANDEM_E_NOMEM, "checkpoint %s: out of memory", path);
    }
    c->f = f;
    c->step = step;
    memcpy(c->path, path, strlen(path) + 1);
    *out = c;
    return TANDEM_OK;
}

tandem_status tandem_ckpt_open_latest(const char *run_dir, tandem_ckpt **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_ckpt_open_latest: NULL argument");
    *out = NULL;
    char path[4096];
    int64_t step = 0;
    int found = 0;
    TANDEM_TRY(tandem_checkpoint_find_latest(run_dir, path, sizeof path, &step, &found));
    if (!found)
        return tandem_fail(TANDEM_E_INVALID, "%s: no valid checkpoint (ckpt-<step>.safetensors) in the "
                           "directory; train into it first, or name a checkpoint file", run_dir);
    return tandem_ckpt_open(path, out);
}

void tandem_ckpt_close(tandem_ckpt *c) {
    if (!c) return;
    tandem_st_close(c->f);
    tandem_free(c);
}

const char *tandem_ckpt_path(const tandem_ckpt *c) { return c ? c->path : ""; }
int64_t tandem_ckpt_step(const tandem_ckpt *c) { return c ? c->step : -1; }

static const char *meta_or_empty(const tandem_ckpt *c, const char *key) {
    const char *v = c ? tandem_st_meta_find(c->f, key) : NULL;
    return v ? v : "";
}

const char *tandem_ckpt_format_version(const tandem_ckpt *c) {
    return meta_or_empty(c, TANDEM_CKPT_KEY_FORMAT_VERSION);
}
const char *tandem_ckpt_config_yaml(const tandem_ckpt *c) { return meta_or_empty(c, TANDEM_CKPT_KEY_CONFIG); }
const char *tandem_ckpt_symbols_json(const tandem_ckpt *c) { return meta_or_empty(c, TANDEM_CKPT_KEY_SYMBOLS); }

tandem_status tandem_ckpt_config(const tandem_ckpt *c, tandem_config **out) {
    if (!c || !out) return tandem_fail(TANDEM_E_INVALID, "tandem_ckpt_config: NULL argument");
    *out = NULL;
    const char *yaml = tandem_st_meta_find(c->f, TANDEM_CKPT_KEY_CONFIG);
    if (!yaml) return tandem_fail(TANDEM_E_FORMAT, "%s: __metadata__ has no config", c->path);
    tandem_config *cfg = NULL;
    TANDEM_TRY(tandem_config_create(&cfg));
    char origin[4200];
    snprintf(origin, sizeof origin, "%s: __metadata__ config", c->path);
    tandem_status st = tandem_config_load_string(cfg, yaml, strlen(yaml), origin);
    if (st != TANDEM_OK) {
        char why[1024]; /* a config that does not load makes the file malformed, not the call */
        snprintf(why, sizeof why, "%s", tandem_last_error());
        tandem_config_destroy(cfg);
        return tandem_fail(TANDEM_E_FORMAT, "%s", why);
    }
    *out = cfg;
    return TANDEM_OK;
}

int tandem_ckpt_meta_count(const tandem_ckpt *c) { return c ? tandem_st_meta_count(c->f) : 0; }

int tandem_ckpt_meta_get(const tandem_ckpt *c, int i, const char **key, const char **value) {
    const tandem_st_meta *m = c && i >= 0 && i < tandem_st_meta_count(c->f) ? tandem_st_meta_get(c->f, i) : NULL;
    if (key) *key = m ? m->key : NULL;
    if (value) *value = m ? m->value : NULL;
    return m != NULL;
}

const char *tandem_ckpt_meta_find(const tandem_ckpt *c, const char *key) {
    return c && key ? tandem_st_meta_find(c->f, key) : NULL;
}

int tandem_ckpt_tensor_count(const tandem_ckpt *c) { return c ? tandem_st_count(c->f) : 0; }

tandem_status tandem_ckpt_tensor_info(const tandem_ckpt *c, int i, tandem_ckpt_tensor *out) {
    if (!c || !out) return tandem_fail(TANDEM_E_INVALID, "tandem_ckpt_tensor_info: NULL argument");
    if (i < 0 || i >= tandem_st_count(c->f))
        return tandem_fail(TANDEM_E_INVALID, "%s: tensor %d: expected 0..%d", c->path, i, tandem_st_count(c->f) - 1);
    const tandem_st_info *e = tandem_st_get(c->f, i);
    memset(out, 0, sizeof *out);
    out->name = e->name;
    out->dtype = e->dtype;
    out->ndim = e->ndim;
    for (int d = 0; d < e->ndim && d < TANDEM_MAX_DIMS; d++) out->shape[d] = e->shape[d];
    out->bytes = e->bytes;
    return TANDEM_OK;
}
