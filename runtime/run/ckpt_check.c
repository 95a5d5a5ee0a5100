/* ckpt_check.c — a checkpoint's tensors against its own config, and its values (ckpt_check.h). */
#include "runtime/run/ckpt_check.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/model/model.h"
#include "runtime/run/resume.h"

static void shape_str(char *b, size_t cap, int ndim, const int64_t *shape) {
    if (ndim == 1) snprintf(b, cap, "[%" PRId64 "]", shape[0]);
    else snprintf(b, cap, "[%" PRId64 ", %" PRId64 "]", shape[0], ndim > 1 ? shape[1] : 0);
}

/* name (with prefix) in f as F32 of p's shape. */
static tandem_status check_one(const tandem_st_file *f, const char *path, const char *prefix,
                               const tandem_model_param *p, const tandem_config *cfg) {
    char name[TANDEM_MODEL_PARAM_NAME_MAX + 8], want[64], got[64] = "absent";
    snprintf(name, sizeof name, "%s%s", prefix, p->name);
    const tandem_st_info *x = tandem_st_find(f, name);
    shape_str(want, sizeof want, p->ndim, p->shape);
    if (x) shape_str(got, sizeof got, x->ndim, x->shape);
    /* sym_emb rows are symbols + speakers, not the config's: their tables are checked later */
    const int rows_free = !strcmp(p->name, "sym_emb.weight");
    if (x && x->dtype == TANDEM_F32 && x->ndim == p->ndim && (rows_free || x->shape[0] == p->shape[0]) &&
        (p->ndim < 2 || x->shape[1] == p->shape[1]))
        return TANDEM_OK;
    return tandem_fail(TANDEM_E_FORMAT, "%s: tensor %s is %s%s, but the checkpoint's own config (d_model %d, "
                       "layers %d, max_text %d, max_frames %d, reduction %d) needs F32 %s: the header does not "
                       "describe these tensors", path, name, got, x && x->dtype != TANDEM_F32 ? " (not F32)" : "",
                       cfg->d_model, cfg->layers, cfg->max_text, cfg->max_frames, cfg->reduction, want);
}

tandem_status tandem_ckpt_check_shapes(const tandem_st_file *f, const char *path) {
    tandem_config cfg;
    TANDEM_TRY(tandem_resume_stored_config(f, path, &cfg));
    const tandem_st_info *emb = tandem_st_find(f, "sym_emb.weight");
    if (!emb || emb->ndim != 2)
        return tandem_fail(TANDEM_E_FORMAT, "%s: no 2-D tensor sym_emb.weight; expected a checkpoint written by "
                           "tandem train", path);
    tandem_model_dims d;
    TANDEM_TRY(tandem_model_dims_from_config(&cfg, emb->shape[0] > INT32_MAX ? INT32_MAX : (int)emb->shape[0], &d));
    tandem_model_param *table = NULL;
    int n = 0;
    TANDEM_TRY(tandem_model_param_table(&d, &table, &n));
    static const char *const prefix[3] = {"", "adam_m.", "adam_v."};
    tandem_status st = TANDEM_OK;
    for (int k = 0; k < 3 && st == TANDEM_OK; k++)
        for (int i = 0; i < n && st == TANDEM_OK; i++) st = check_one(f, path, prefix[k], &table[i], &cfg);
    tandem_free(table);
    return st;
}

tandem_status tandem_ckpt_check_values(const tandem_st_file *f, const char *path, int params_only) {
    for (int i = 0; i < tandem_st_count(f); i++) {
        const tandem_st_info *x = tandem_st_get(f, i);
        const int moment = !strncmp(x->name, "adam_m.", 7) || !strncmp(x->name, "adam_v.", 7);
        if (x->dtype != TANDEM_F32 || (params_only && moment)) continue;
        const int second = !strncmp(x->name, "adam_v.", 7);
        const unsigned char *b = x->data;
        for (size_t k = 0; k + 4 <= x->bytes; k += 4) {
            uint32_t u;
            memcpy(&u, b + k, 4);
            if ((u & 0x7f800000u) == 0x7f800000u)
                return tandem_fail(TANDEM_E_FORMAT, "%s: tensor %s holds a non-finite value (%s at element %zu); "
                                   "a model continues only from finite %s", path, x->name,
                                   (u & 0x007fffffu) ? "NaN" : "Inf", k / 4,
                                   params_only ? "parameters" : "parameters and moments");
            if (second && (u & 0x80000000u) && (u & 0x7fffffffu)) {
                float v;
                memcpy(&v, &u, 4);
                return tandem_fail(TANDEM_E_FORMAT, "%s: tensor %s holds %g at element %zu; AdamW's second "
                                   "moments are averages of squares, never negative: the optimizer state is "
                                   "corrupt", path, x->name, (double)v, k / 4);
            }
        }
    }
    return TANDEM_OK;
}
