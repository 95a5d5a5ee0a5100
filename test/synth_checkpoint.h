/* synth_checkpoint.h — a small random model written as a trainer-style checkpoint (parameters
 * under the model's table names, the config YAML and the symbol table in the metadata), for the
 * synthesis tests (test_synth, test_api_synth). Header-only; include after <cmocka.h> (failures
 * are cmocka assertions). */
#ifndef TANDEM_TEST_SYNTH_CHECKPOINT_H
#define TANDEM_TEST_SYNTH_CHECKPOINT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/os/os.h"
#include "runtime/core/config.h"
#include "runtime/formats/checkpoint.h"
#include "runtime/formats/safetensors.h"
#include "runtime/model/model.h"
#include "runtime/text/symbols.h"
#include "test/testutil.h"

typedef struct model_file {
    tandem_model_param *param; /* the model's table (names, shapes, offsets) */
    int n_params;
    int64_t n_flat;
    float *flat; /* [n_flat] values */
    char yaml[8192];
} model_file;

/* The tiny config: d 16, 2 layers, 2 heads, r 2, max_text 16, max_frames 16. */
static inline void synth_ckpt_config(tandem_config *cfg) {
    tandem_config_init(cfg);
    const char *kv[][2] = {{"model_size", "custom"}, {"d_model", "16"}, {"layers", "2"},
                           {"heads", "2"},           {"reduction", "2"}, {"max_text", "16"},
                           {"max_frames", "16"},
                           {"tf32", "false"}}; /* exact fp32 on cuda: compared with a double reference */
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        assert_int_equal(tandem_config_set(cfg, kv[i][0], kv[i][1]), TANDEM_OK);
    assert_int_equal(tandem_config_check(cfg), TANDEM_OK);
}

/* The parameter table comes from the model itself (names and shapes are its contract); the
 * values are drawn uniformly from seed (layer-norm gains in [0.8, 1.2], the rest in
 * [-0.3, 0.3]). Free with synth_ckpt_free. */
static inline void synth_ckpt_make(model_file *mf, uint64_t seed) {
    memset(mf, 0, sizeof *mf);
    tandem_config cfg;
    synth_ckpt_config(&cfg);
    tandem_config_dump(&cfg, mf->yaml, sizeof mf->yaml);
    cfg.batch_size = 1;
    cfg.grad_accum = 1;
    tandem_model_dims dims;
    assert_int_equal(tandem_model_dims_from_config(&cfg, tandem_symbols_count(), &dims), TANDEM_OK);
    tandem_device *dev = NULL;
    tandem_pool *pool = NULL;
    assert_int_equal(tandem_device_open(TANDEM_BACKEND_HOST, 0, &dev), TANDEM_OK);
    assert_int_equal(tandem_pool_create(dev, "table", 0, &pool), TANDEM_OK);
    tandem_model m;
    assert_int_equal(tandem_model_declare(&m, dev, pool, &dims), TANDEM_OK);
    mf->n_params = m.n_params;
    mf->n_flat = m.n_flat;
    mf->param = malloc(sizeof *mf->param * (size_t)m.n_params);
    memcpy(mf->param, m.param, sizeof *mf->param * (size_t)m.n_params);
    tandem_model_free(&m);
    tandem_pool_destroy(pool);
    tandem_device_close(dev);

    mf->flat = calloc((size_t)mf->n_flat, sizeof(float));
    tandem_rng r = {seed};
    for (int i = 0; i < mf->n_params; i++) {
        const tandem_model_param *p = &mf->param[i];
        const int gain = strstr(p->name, "ln") && strstr(p->name, ".weight");
        for (int64_t k = 0; k < p->numel; k++)
            mf->flat[p->offset + k] = gain ? tandem_rng_uniform(&r, 0.8f, 1.2f)
                                           : tandem_rng_uniform(&r, -0.3f, 0.3f);
    }
}

static inline void synth_ckpt_free(model_file *mf) {
    free(mf->param);
    free(mf->flat);
    memset(mf, 0, sizeof *mf);
}

/* mf's parameters as writer tensors into ts [n_params], in table order; skip: a parameter
 * left out (NULL: none). Returns how many. */
static inline int synth_ckpt_tensors(const model_file *mf, const char *skip, tandem_st_tensor *ts) {
    int n = 0;
    for (int i = 0; i < mf->n_params; i++) {
        const tandem_model_param *p = &mf->param[i];
        if (skip && !strcmp(skip, p->name)) continue;
        ts[n].name = p->name;
        ts[n].dtype = TANDEM_F32;
        ts[n].ndim = p->ndim;
        ts[n].shape[0] = p->shape[0];
        ts[n].shape[1] = p->shape[1];
        ts[n].data = mf->flat + p->offset;
        n++;
    }
    return n;
}

/* A checkpoint as the trainer writes it (checkpoint writer: format_version and step added)
 * into directory dir; its path into path. */
static inline void synth_ckpt_write(const model_file *mf, const char *dir, char *path, size_t cap) {
    tandem_st_tensor *ts = calloc((size_t)mf->n_params, sizeof *ts);
    synth_ckpt_tensors(mf, NULL, ts);
    char *sym = NULL;
    size_t sl = 0;
    assert_int_equal(tandem_symbols_to_json(&sym, &sl), TANDEM_OK);
    tandem_checkpoint *c = NULL;
    assert_int_equal(tandem_checkpoint_create(dir, 1, ts, mf->n_params, 65536, &c), TANDEM_OK);
    const tandem_st_meta meta[] = {{TANDEM_CKPT_KEY_CONFIG, mf->yaml}, {TANDEM_CKPT_KEY_SYMBOLS, sym}};
    assert_int_equal(tandem_checkpoint_save(c, 7, meta, 2, NULL, NULL), TANDEM_OK);
    snprintf(path, cap, "%s", tandem_checkpoint_last_path(c));
    tandem_checkpoint_free(c);
    tandem_free(sym);
    free(ts);
}

#endif
