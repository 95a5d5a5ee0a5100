/* synth.c — checkpoint → autoregressive log-mel → Griffin-Lim (see synth.h). */
#include "runtime/run/synth.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/formats/checkpoint.h"
#include "runtime/core/dev.h"
#include "runtime/audio/griffinlim.h"
#include "runtime/audio/mel.h"
#include "platform/os/log.h"
#include "runtime/model/model.h"
#include "runtime/model/model_kv.h"
#include "platform/os/os.h"
#include "runtime/formats/safetensors.h"
#include "runtime/text/phonemes.h"
#include "runtime/text/symbols.h"
#include "runtime/core/utf8.h"

struct tandem_synth {
    char path[1100];
    tandem_config cfg;      /* as stored in the checkpoint */
    tandem_model_dims dims; /* B = 1, one micro-batch */
    char device_desc[256];
    int frame_limit;   /* frames a public run generates at most */
    int gl_iters;      /* 0: no waveform */
    uint64_t seed;
    tandem_device *dev;
    int dev_borrowed;  /* 1: the caller's device (tandem_synth_open_device): not closed here */
    tandem_stream *s;
    tandem_pool *pool;
    int pool_borrowed;  /* 1: a planning pool of tandem_synth_declare_plan's caller */
    tandem_model model;
    int model_declared;
    tandem_model_kv kv; /* the one-position forward with cached keys and values */
    int recompute;      /* 1: the whole causal forward per step instead (options.recompute) */
    /* the B = 1 batch the forward reads */
    tandem_tensor *tokens;       /* [1, Tt] i32 */
    tandem_tensor *mels;         /* [1, F, 80] f32: generated frames, silence ln(1e-5) beyond */
    tandem_tensor *frame_mask;   /* [1, F] f32 (unused by the forward; part of a batch) */
    tandem_tensor *stop_targets; /* [1, F] f32 (likewise) */
    /* pinned host I/O */
    void *pinned;
    int32_t *ids;      /* [Tt] */
    float *io;         /* [F, 80] mel in/out */
    float *step_out;   /* [r*80 + r] one position's group and stop logits */
    /* host results */
    float *mel;        /* [F, 80] */
    float *stop_logit; /* [F] */
    float *audio;      /* [F * 256] */
    tandem_griffinlim *gl;
    tandem_text_norm norm;
    tandem_phonemes ph; /* text_input: phonemes (the checkpoint's config) */
    int norm_init;
    /* the speaker table (checkpoint metadata "speakers"): n_spk NUL-terminated names */
    char *spk_names;
    uint32_t n_spk;
    int spk;           /* the speaker token's speaker, -1: none (a single-speaker model) */
};

/* ---- open ------------------------------------------------------------------------------------- */

static tandem_status open_device(tandem_synth *s, tandem_backend backend) {
    tandem_backend use = backend;
    if (backend == TANDEM_BACKEND_AUTO) {
        int n = 0;
        use = tandem_cuda_device_count(&n) == TANDEM_OK && n > 0 ? TANDEM_BACKEND_CUDA
                                                                 : TANDEM_BACKEND_HOST;
    }
    TANDEM_TRY(tandem_device_open(use, 0, &s->dev));
    tandem_device_info info;
    TANDEM_TRY(tandem_device_get_info(s->dev, &info));
    snprintf(s->device_desc, sizeof s->device_desc, "%s device 0 (%s)",
             use == TANDEM_BACKEND_CUDA ? "CUDA" : "host", info.name);
    return TANDEM_OK;
}

/* The checkpoint's symbol table must be this build's: the embedding rows are token ids. */
static tandem_status check_symbols(const tandem_synth *s, const tandem_st_file *f) {
    const char *theirs = tandem_st_meta_find(f, TANDEM_CKPT_KEY_SYMBOLS);
    if (!theirs)
        return tandem_fail(TANDEM_E_FORMAT,
                           "checkpoint '%s': metadata has no '%s' entry (the symbol table); "
                           "expected a checkpoint written by tandem train", s->path,
                           TANDEM_CKPT_KEY_SYMBOLS);
    char *ours = NULL;
    size_t len = 0;
    TANDEM_TRY(tandem_symbols_to_json(&ours, &len));
    int same = strcmp(ours, theirs) == 0;
    tandem_free(ours);
    if (!same)
        return tandem_fail(TANDEM_E_FORMAT,
                           "checkpoint '%s': its symbol table differs from this build's (symbols "
                           "version %d); the token ids would not match its embeddings", s->path,
                           TANDEM_SYMBOLS_VERSION);
    return TANDEM_OK;
}

static tandem_status dims_of(tandem_synth *s);

const char *tandem_synth_speaker_name(const tandem_synth *s, int k) {
    if (!s || k < 0 || (uint32_t)k >= s->n_spk) return NULL;
    const char *p = s->spk_names;
    while (k--) p += strlen(p) + 1;
    return p;
}

/* The checkpoint's speaker table, and the speaker `want` names (NULL: the first). */
static tandem_status read_speakers(tandem_synth *s, const tandem_st_file *f, const char *want) {
    const char *json = tandem_st_meta_find(f, TANDEM_CKPT_KEY_SPEAKERS);
    s->spk = -1;
    if (json) {
        tandem_status st = tandem_speakers_from_json(json, &s->spk_names, &s->n_spk);
        if (st != TANDEM_OK) return tandem_fail(st, "checkpoint '%s': %s", s->path, tandem_last_error());
    }
    if (s->n_spk == 0) {
        if (want)
            return tandem_fail(TANDEM_E_INVALID, "speaker '%s': checkpoint '%s' was trained on one speaker (no "
                               "speaker table); leave out --speaker", want, s->path);
        return TANDEM_OK;
    }
    s->spk = 0;
    if (!want) return TANDEM_OK;
    for (s->spk = 0; (uint32_t)s->spk < s->n_spk; s->spk++)
        if (strcmp(tandem_synth_speaker_name(s, s->spk), want) == 0) return TANDEM_OK;
    char list[512];
    size_t o = 0;
    for (uint32_t k = 0; k < s->n_spk && o + 70 < sizeof list; k++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", k ? ", " : "", tandem_synth_speaker_name(s, (int)k));
    return tandem_fail(TANDEM_E_INVALID, "speaker '%s' is not in checkpoint '%s'; its %u speakers: %s%s", want,
                       s->path, s->n_spk, list, o + 70 >= sizeof list ? ", ..." : "");
}

static tandem_status read_config(tandem_synth *s, const tandem_st_file *f) {
    const char *yaml = tandem_st_meta_find(f, TANDEM_CKPT_KEY_CONFIG);
    if (!yaml)
        return tandem_fail(TANDEM_E_FORMAT,
                           "checkpoint '%s': metadata has no '%s' entry (the run's config); "
                           "expected a checkpoint written by tandem train", s->path,
                           TANDEM_CKPT_KEY_CONFIG);
    char origin[1200];
    snprintf(origin, sizeof origin, "%s (metadata '%s')", s->path, TANDEM_CKPT_KEY_CONFIG);
    TANDEM_TRY(tandem_config_load_string(&s->cfg, yaml, strlen(yaml), origin));
    return dims_of(s);
}

/* The inference sizes of s->cfg: batch 1, fp32 (the master weights), forward only. */
static tandem_status dims_of(tandem_synth *s) {
    tandem_config icfg = s->cfg;
    icfg.batch_size = 1;
    icfg.grad_accum = 1;
    icfg.precision = TANDEM_PRECISION_FP32; /* checkpoints hold fp32 master weights */
    TANDEM_TRY(tandem_model_dims_from_config(&icfg, tandem_symbols_count() + (int)s->n_spk, &s->dims));
    s->dims.forward_only = 1; /* parameters and activations only */
    return TANDEM_OK;
}

/* The key/value cache and the B = 1 batch the forward reads, into s->pool (the model is in). */
static tandem_status declare_rest(tandem_synth *s) {
    const tandem_model_dims *d = &s->dims;
    s->model_declared = 1;
    TANDEM_TRY(tandem_model_kv_declare(&s->kv, &s->model, s->pool));
    const int64_t tok[2] = {1, d->text_len}, mel[3] = {1, d->frames, d->n_mels},
                  fr[2] = {1, d->frames};
    TANDEM_TRY(tandem_pool_declare(s->pool, "synth.tokens", TANDEM_I32, 2, tok, TANDEM_PERSISTENT,
                                   0, 0, &s->tokens));
    TANDEM_TRY(tandem_pool_declare(s->pool, "synth.mels", TANDEM_F32, 3, mel, TANDEM_PERSISTENT, 0,
                                   0, &s->mels));
    TANDEM_TRY(tandem_pool_declare(s->pool, "synth.frame_mask", TANDEM_F32, 2, fr,
                                   TANDEM_PERSISTENT, 0, 0, &s->frame_mask));
    return tandem_pool_declare(s->pool, "synth.stop_targets", TANDEM_F32, 2, fr, TANDEM_PERSISTENT,
                               0, 0, &s->stop_targets);
}

static tandem_status declare(tandem_synth *s) {
    TANDEM_TRY(tandem_pool_create(s->dev, "synth", 0, &s->pool));
    TANDEM_TRY(tandem_model_declare(&s->model, s->dev, s->pool, &s->dims));
    return declare_rest(s);
}

tandem_status tandem_synth_declare_plan(const tandem_config *cfg, tandem_backend backend,
                                        tandem_pool *pool, uint32_t n_speakers, tandem_synth **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "synth plan: out is NULL");
    *out = NULL;
    if (!cfg || !pool) return tandem_fail(TANDEM_E_INVALID, "synth plan: NULL argument");
    tandem_synth *s = tandem_calloc(1, sizeof *s);
    if (!s) return tandem_fail(TANDEM_E_NOMEM, "synth: out of memory");
    s->cfg = *cfg;
    s->pool = pool;
    s->pool_borrowed = 1;
    s->n_spk = n_speakers; /* the embedding's speaker rows (names are not needed to plan) */
    tandem_status st = dims_of(s);
    if (st == TANDEM_OK) st = tandem_model_declare_plan(&s->model, backend, pool, &s->dims);
    if (st == TANDEM_OK) st = declare_rest(s);
    if (st != TANDEM_OK) {
        tandem_synth_close(s);
        return st;
    }
    *out = s;
    return TANDEM_OK;
}

/* The pinned I/O block, its one declaration: ids, io, step_out (in that order). */
static tandem_status stage_io(const tandem_model_dims *d, tandem_staging_plan *p) {
    TANDEM_TRY(tandem_staging_begin(p, "synth", "device", TANDEM_STAGING_ALWAYS,
                                    "token ids in; mel frames, stop logits out", NULL));
    TANDEM_TRY(tandem_staging_add(p, "ids", TANDEM_I32, 1, d->text_len, 0, 0));
    TANDEM_TRY(tandem_staging_add(p, "io", TANDEM_F32, 2, d->frames, d->n_mels, 0));
    return tandem_staging_add(p, "step_out", TANDEM_F32, 1, d->group + d->r, 0, 0);
}

static tandem_status alloc_host(tandem_synth *s) {
    const tandem_model_dims *d = &s->dims;
    const size_t mel = (size_t)d->frames * d->n_mels;
    tandem_staging_plan sp;
    tandem_staging_init(&sp);
    TANDEM_TRY(stage_io(d, &sp));
    TANDEM_TRY(tandem_staging_alloc(s->dev, &sp, 0, &s->pinned));
    s->ids = tandem_staging_ptr(&sp, 0, s->pinned, 0);
    s->io = tandem_staging_ptr(&sp, 0, s->pinned, 1);
    s->step_out = tandem_staging_ptr(&sp, 0, s->pinned, 2);
    s->mel = tandem_calloc(mel, sizeof(float));
    s->stop_logit = tandem_calloc((size_t)d->frames, sizeof(float));
    s->audio = tandem_calloc((size_t)d->frames * TANDEM_MEL_HOP, sizeof(float));
    if (!s->mel || !s->stop_logit || !s->audio)
        return tandem_fail(TANDEM_E_NOMEM, "synth: out of host memory for %d frames", d->frames);
    TANDEM_TRY(tandem_griffinlim_create(d->frames, &s->gl));
    tandem_text_norm_init(&s->norm);
    tandem_phonemes_init(&s->ph);
    s->norm_init = 1;
    char backend[96];
    if (s->cfg.text_input == TANDEM_TEXT_INPUT_PHONEMES &&
        !*tandem_phonemes_backend(TANDEM_TEXT_INPUT_PHONEMES, backend, sizeof backend))
        return tandem_fail(TANDEM_E_UNSUPPORTED, "synth: the model reads phonemes (text_input: "
                           "phonemes) but espeak-ng cannot be loaded: %s", tandem_last_error());
    return TANDEM_OK;
}

/* Every parameter by its table name and shape into one flat host copy, then one upload. Other
 * tensors of the file (AdamW moments) are not needed for inference. */
static tandem_status load_params(tandem_synth *s, const tandem_st_file *f) {
    tandem_model *m = &s->model;
    float *flat = tandem_calloc((size_t)m->n_flat, sizeof(float));
    if (!flat) return tandem_fail(TANDEM_E_NOMEM, "synth: out of host memory for the parameters");
    tandem_status st = TANDEM_OK;
    for (int i = 0; i < m->n_params && st == TANDEM_OK; i++) {
        const tandem_model_param *p = &m->param[i];
        st = tandem_st_read_tensor(f, p->name, TANDEM_F32, p->ndim, p->shape, flat + p->offset,
                                   (size_t)p->numel * sizeof(float));
    }
    for (int64_t i = 0; i < m->n_flat && st == TANDEM_OK; i++)
        if (!isfinite(flat[i]))
            st = tandem_fail(TANDEM_E_FORMAT, "checkpoint '%s': non-finite parameter value at flat "
                             "index %" PRId64, s->path, i);
    if (st == TANDEM_OK)
        st = tandem_tensor_upload(s->s, m->params, flat, (size_t)m->n_flat * sizeof(float));
    if (st == TANDEM_OK) st = tandem_stream_sync(s->s);
    tandem_free(flat);
    return st;
}

static tandem_status open_all(tandem_synth *s, const tandem_synth_options *o) {
    tandem_st_file *f = NULL;
    TANDEM_TRY(tandem_checkpoint_open(s->path, -1, &f));
    tandem_status st = read_speakers(s, f, o->speaker);
    if (st == TANDEM_OK) st = read_config(s, f);
    if (st == TANDEM_OK) st = check_symbols(s, f);
    if (st == TANDEM_OK) st = open_device(s, o->backend);
    if (st == TANDEM_OK) st = tandem_stream_create(s->dev, &s->s);
    if (st == TANDEM_OK) st = declare(s);
    if (st == TANDEM_OK) st = alloc_host(s);
    if (st == TANDEM_OK) st = tandem_pool_commit(s->pool);
    if (st == TANDEM_OK) st = load_params(s, f);
    tandem_st_close(f);
    TANDEM_TRY(st);
    TANDEM_TRY(tandem_op_fill(s->s, s->frame_mask, 1.0f));
    TANDEM_TRY(tandem_op_fill(s->s, s->stop_targets, 0.0f));
    return tandem_stream_sync(s->s);
}

void tandem_synth_options_init(tandem_synth_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->backend = TANDEM_BACKEND_AUTO;
    o->gl_iters = TANDEM_SYNTH_DEFAULT_GL_ITERS;
    o->seed = 1;
}

static tandem_status check_options(const char *checkpoint, const tandem_synth_options *o) {
    if (o->max_frames < 0)
        return tandem_fail(TANDEM_E_INVALID, "synth %s: max_frames %d; expected 0 (the trained "
                           "limit) or more", checkpoint, o->max_frames);
    if (!(o->prenet_dropout >= 0.0 && o->prenet_dropout < 1.0))
        return tandem_fail(TANDEM_E_INVALID, "synth %s: prenet_dropout %g; expected 0 (off) up to "
                           "below 1", checkpoint, o->prenet_dropout);
    if (o->prenet_dropout > 0.0 && o->recompute)
        return tandem_fail(TANDEM_E_INVALID, "synth %s: prenet_dropout needs the key/value cache "
                           "(recompute off)", checkpoint);
    if (o->gl_iters < 0 || o->gl_iters > 10000)
        return tandem_fail(TANDEM_E_INVALID, "synth %s: gl_iters %d; expected 0 (no waveform) "
                           "to 10000", checkpoint, o->gl_iters);
    return TANDEM_OK;
}

tandem_status tandem_synth_open(const char *checkpoint, const tandem_synth_options *o,
                                tandem_synth **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "synth: out is NULL");
    *out = NULL;
    if (!checkpoint) return tandem_fail(TANDEM_E_INVALID, "synth: checkpoint path is NULL");
    tandem_synth_options defaults;
    tandem_synth_options_init(&defaults);
    if (!o) o = &defaults;
    TANDEM_TRY(check_options(checkpoint, o));
    tandem_synth *s = tandem_calloc(1, sizeof *s);
    if (!s) return tandem_fail(TANDEM_E_NOMEM, "synth: out of memory");
    snprintf(s->path, sizeof s->path, "%s", checkpoint);
    tandem_status st = open_all(s, o);
    if (st != TANDEM_OK) {
        tandem_synth_close(s);
        return st;
    }
    s->frame_limit = o->max_frames > 0 && o->max_frames < s->dims.frames ? o->max_frames : s->dims.frames;
    s->gl_iters = o->gl_iters;
    s->seed = o->seed;
    s->recompute = o->recompute != 0;
    s->kv.drop_p = (float)o->prenet_dropout;
    s->kv.drop_seed = o->seed;
    tandem_logf(TANDEM_LOG_DEBUG, "synth: %s on %s: d %d, layers %d, r %d, max_text %d, "
                "max_frames %d", s->path, s->device_desc, s->dims.d, s->dims.layers, s->dims.r,
                s->dims.text_len, s->dims.frames);
    *out = s;
    return TANDEM_OK;
}

tandem_status tandem_synth_open_device(tandem_device *dev, const tandem_config *cfg, uint32_t n_speakers,
                                       int gl_iters, tandem_synth **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "synth: out is NULL");
    *out = NULL;
    if (!dev || !cfg) return tandem_fail(TANDEM_E_INVALID, "synth open on a device: NULL argument");
    tandem_synth *s = tandem_calloc(1, sizeof *s);
    if (!s) return tandem_fail(TANDEM_E_NOMEM, "synth: out of memory");
    snprintf(s->path, sizeof s->path, "(the training run's parameters)");
    s->cfg = *cfg;
    s->dev = dev;
    s->dev_borrowed = 1;
    s->n_spk = n_speakers; /* names are not needed: the test sentences use speaker 0 */
    s->spk = n_speakers ? 0 : -1;
    tandem_device_info info;
    tandem_status st = dims_of(s);
    if (st == TANDEM_OK) st = tandem_device_get_info(dev, &info);
    if (st == TANDEM_OK)
        snprintf(s->device_desc, sizeof s->device_desc, "%s", info.name);
    if (st == TANDEM_OK) st = tandem_stream_create(s->dev, &s->s);
    if (st == TANDEM_OK) st = declare(s);
    if (st == TANDEM_OK) st = alloc_host(s);
    if (st == TANDEM_OK) st = tandem_pool_commit(s->pool);
    if (st == TANDEM_OK) st = tandem_op_fill(s->s, s->frame_mask, 1.0f);
    if (st == TANDEM_OK) st = tandem_op_fill(s->s, s->stop_targets, 0.0f);
    if (st == TANDEM_OK) st = tandem_stream_sync(s->s);
    if (st != TANDEM_OK) {
        tandem_synth_close(s);
        return st;
    }
    s->frame_limit = s->dims.frames;
    s->gl_iters = gl_iters;
    s->seed = 1;
    *out = s;
    return TANDEM_OK;
}

tandem_status tandem_synth_copy_params(tandem_synth *s, tandem_stream *from, const tandem_tensor *params) {
    if (!s || !from || !params) return tandem_fail(TANDEM_E_INVALID, "synth copy params: NULL argument");
    const int64_t n = tandem_tensor_numel(params);
    if (n != s->model.n_flat || tandem_tensor_dtype(params) != TANDEM_F32)
        return tandem_fail(TANDEM_E_INVALID, "synth copy params: %lld elements; the inference model "
                           "has %lld f32 parameters (another model's tensor?)", (long long)n,
                           (long long)s->model.n_flat);
    TANDEM_TRY(tandem_stream_sync(from)); /* the update that wrote them has finished */
    TANDEM_TRY(tandem_dev_copy(s->s, s->model.params, 0, params, 0, (size_t)n * sizeof(float)));
    tandem_model_params_changed(&s->model);
    return tandem_stream_sync(s->s);
}

void tandem_synth_close(tandem_synth *s) {
    if (!s) return;
    tandem_model_kv_free(&s->kv);
    if (s->model_declared) tandem_model_free(&s->model);
    tandem_staging_free(s->dev, s->pinned);
    if (s->pool && !s->pool_borrowed) tandem_pool_destroy(s->pool);
    if (s->s) tandem_stream_destroy(s->s);
    if (s->dev && !s->dev_borrowed) tandem_device_close(s->dev);
    if (s->gl) tandem_griffinlim_free(s->gl);
    if (s->norm_init) tandem_text_norm_free(&s->norm), tandem_phonemes_free(&s->ph);
    tandem_free(s->mel);
    tandem_free(s->stop_logit);
    tandem_free(s->audio);
    tandem_free(s->spk_names);
    tandem_free(s);
}

const tandem_config *tandem_synth_config(const tandem_synth *s) { return &s->cfg; }

void tandem_synth_pool_stats(const tandem_synth *s, tandem_pool_stats *out) {
    tandem_pool_get_stats(s->pool, out);
}

tandem_status tandem_synth_get_info(const tandem_synth *s, tandem_synth_info *out) {
    if (!s || !out) return tandem_fail(TANDEM_E_INVALID, "tandem_synth_get_info: NULL argument");
    memset(out, 0, sizeof *out);
    out->d_model = s->cfg.d_model;
    out->layers = s->cfg.layers;
    out->heads = s->cfg.heads;
    out->reduction = s->cfg.reduction;
    out->max_text = s->cfg.max_text;
    out->max_frames = s->cfg.max_frames;
    out->frame_limit = s->frame_limit;
    out->n_mels = TANDEM_MEL_N_MELS;
    out->hop = TANDEM_MEL_HOP;
    out->sample_rate = TANDEM_MEL_SAMPLE_RATE;
    out->mel_floats = (size_t)s->frame_limit * TANDEM_MEL_N_MELS;
    out->audio_samples = (size_t)s->frame_limit * TANDEM_MEL_HOP;
    out->speakers = (int)s->n_spk;
    out->speaker = tandem_synth_speaker_name(s, s->spk);
    return tandem_device_get_info(s->dev, &out->device);
}

/* ---- text --------------------------------------------------------------------------------------- */

/* Every distinct code point the table lacks, as "'x' (U+0078), ..." (at most 8). */
static void list_unknown(const uint32_t *cps, size_t n, char *buf, size_t cap) {
    uint32_t seen[8];
    int ns = 0;
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && ns < 8; i++) {
        if (tandem_symbols_id(cps[i]) >= 0) continue;
        int dup = 0;
        for (int k = 0; k < ns; k++) dup |= seen[k] == cps[i];
        if (dup) continue;
        seen[ns++] = cps[i];
        char u[5] = {0};
        if (!tandem_utf8_encode(cps[i], u)) u[0] = '?';
        int w = snprintf(buf + used, cap - used, "%s'%s' (U+%04X)", ns > 1 ? ", " : "", u,
                         (unsigned)cps[i]);
        if (w < 0 || (size_t)w >= cap - used) break;
        used += (size_t)w;
    }
}

tandem_status tandem_synth_encode(tandem_synth *s, const char *text, size_t len, int lang,
                                  int32_t *ids, int *count, tandem_lang *used) {
    if (!s || !text || !ids || !count) return tandem_fail(TANDEM_E_INVALID, "synth encode: NULL argument");
    if (lang >= TANDEM_LANG_COUNT)
        return tandem_fail(TANDEM_E_INVALID, "synth: language %d; expected en or fa", lang);
    tandem_status st = tandem_text_normalize(&s->norm, text, len);
    if (st == TANDEM_E_INVALID)
        return tandem_fail(TANDEM_E_INVALID, "text: invalid UTF-8 at byte %zu", s->norm.bad_offset);
    TANDEM_TRY(st);
    const tandem_lang lg = lang < 0 ? s->norm.lang : (tandem_lang)lang;
    size_t n = s->norm.out_len;
    if (n == 0) return tandem_fail(TANDEM_E_INVALID, "text: nothing left after normalisation");
    for (size_t i = 0; i < n; i++)
        if (tandem_symbols_id(s->norm.out[i]) < 0) {
            char names[256];
            list_unknown(s->norm.out, n, names, sizeof names);
            return tandem_fail(TANDEM_E_INVALID,
                               "text: character(s) not in the symbol table: %s (after "
                               "normalisation; the model knows space, . , ? ! ; : ' -, a-z and "
                               "the Persian letters)", names);
        }
    const uint32_t *in = NULL;
    TANDEM_TRY(tandem_phonemes_of(&s->ph, (tandem_text_input)s->cfg.text_input, s->norm.out, n, lg, &in, &n));
    if (n == 0) return tandem_fail(TANDEM_E_INVALID, "text: no phonemes for it (espeak-ng gave none)");
    const size_t need = n + TANDEM_SYMBOLS_FRAMING + (s->spk >= 0);
    if (need > (size_t)s->dims.text_len)
        return tandem_fail(TANDEM_E_INVALID,
                           "text: %zu tokens after normalisation%s (incl. <lang>, %sBOS, EOS); the "
                           "model was trained with max_text %d", need,
                           s->cfg.text_input == TANDEM_TEXT_INPUT_PHONEMES ? " and phonemes" : "",
                           s->spk >= 0 ? "<spk>, " : "", s->dims.text_len);
    uint16_t tmp[16384];
    size_t got = 0;
    if (need > sizeof tmp / sizeof tmp[0])
        return tandem_fail(TANDEM_E_INVALID, "text: %zu tokens is too long", need);
    TANDEM_TRY(tandem_symbols_encode(in, n, lg, tmp, sizeof tmp / sizeof tmp[0], &got, NULL));
    if (s->spk >= 0) { /* [<lang>, <spk>, BOS, ...] as the index frames a speaker's utterance */
        memmove(tmp + 2, tmp + 1, (got - 1) * sizeof *tmp);
        tmp[1] = (uint16_t)(tandem_symbols_count() + s->spk);
        got++;
    }
    for (int i = 0; i < s->dims.text_len; i++) ids[i] = (size_t)i < got ? tmp[i] : TANDEM_SYM_PAD;
    *count = (int)got;
    if (used) *used = lg;
    return TANDEM_OK;
}

/* ---- generation ------------------------------------------------------------------------------------ */

static tandem_status set_text(tandem_synth *s, const char *text, size_t len, int lang,
                              int *count, tandem_lang *used) {
    TANDEM_TRY(tandem_synth_encode(s, text, len, lang, s->ids, count, used));
    return tandem_dev_upload(s->s, s->tokens, 0, s->ids, (size_t)s->dims.text_len * sizeof(int32_t));
}

static tandem_status forward(tandem_synth *s, int text_count) {
    /* Every mel key is unmasked: causality alone keeps later (still zero) groups out of the
     * outputs read, exactly as for a real frame in training. */
    const int32_t text_len[1] = {text_count}, frame_len[1] = {s->dims.frames};
    tandem_model_batch b;
    memset(&b, 0, sizeof b);
    b.tokens = s->tokens;
    b.mels = s->mels;
    b.frame_mask = s->frame_mask;
    b.stop_targets = s->stop_targets;
    b.host_text_lengths = text_len;
    b.host_frame_lengths = frame_len;
    return tandem_model_forward(&s->model, s->s, &b, 0);
}

/* Step j by the whole causal forward: mel_out[j] (r frames) and its r stop logits into
 * step_out; the group is copied into the input mels so that step j + 1's prenet sees it. */
static tandem_status step_recompute(tandem_synth *s, int count, int j) {
    const tandem_model_dims *d = &s->dims;
    const size_t gbytes = (size_t)d->group * sizeof(float), off = (size_t)j * gbytes;
    TANDEM_TRY(forward(s, count));
    /* mel_out [1, Tm, r*80] position j is frames j*r .. j*r+r-1 of mels [1, F, 80] */
    TANDEM_TRY(tandem_dev_copy(s->s, s->mels, off, s->model.mel_out, off, gbytes));
    TANDEM_TRY(tandem_dev_download(s->s, s->step_out, s->model.mel_out, off, gbytes));
    TANDEM_TRY(tandem_dev_download(s->s, s->step_out + d->group, s->model.stop_out,
                                   (size_t)j * d->r * sizeof(float), (size_t)d->r * sizeof(float)));
    return tandem_stream_sync(s->s);
}

/* Step j with the key/value cache (runtime/model/model_kv.h): the same outputs into step_out. */
static tandem_status step_kv(tandem_synth *s, int j) {
    const tandem_model_dims *d = &s->dims;
    TANDEM_TRY(tandem_model_kv_step(&s->kv, s->s, j));
    TANDEM_TRY(tandem_dev_download(s->s, s->step_out, s->kv.mel, 0,
                                   (size_t)d->group * sizeof(float)));
    TANDEM_TRY(tandem_dev_download(s->s, s->step_out + d->group, s->kv.stop, 0,
                                   (size_t)d->r * sizeof(float)));
    return tandem_stream_sync(s->s);
}

static float sigmoidf_(float z) { return 1.0f / (1.0f + expf(-z)); }

/* Generation from the uploaded ids (s->ids, count real), into res (lang and timing: the caller's). */
static tandem_status generate(tandem_synth *s, int count, int max_frames, tandem_synth_result *res) {
    const tandem_model_dims *d = &s->dims;
    if (max_frames <= 0 || max_frames > d->frames) max_frames = d->frames;
    TANDEM_TRY(tandem_op_fill(s->s, s->mels, tandem_mel_silence())); /* padding as in training */

    const int max_steps = (max_frames + d->r - 1) / d->r;
    int frames = 0, steps = 0;
    tandem_synth_stop why = TANDEM_SYNTH_STOP_MAX_FRAMES;
    if (!s->recompute) TANDEM_TRY(tandem_model_kv_begin(&s->kv, s->s, s->ids, count));
    for (int j = 0; j < max_steps; j++) {
        TANDEM_TRY(s->recompute ? step_recompute(s, count, j) : step_kv(s, j));
        memcpy(s->mel + (size_t)j * d->group, s->step_out, (size_t)d->group * sizeof(float));
        memcpy(s->stop_logit + (size_t)j * d->r, s->step_out + d->group, (size_t)d->r * sizeof(float));
        steps = j + 1;
        frames = steps * d->r;
        int stop_at = -1;
        for (int k = 0; k < d->r && stop_at < 0; k++)
            if (sigmoidf_(s->step_out[d->group + k]) > 0.5f) stop_at = k;
        if (stop_at >= 0) {
            frames = j * d->r + stop_at + 1;
            why = TANDEM_SYNTH_STOP_HEAD;
            break;
        }
    }
    if (frames > max_frames) frames = max_frames;
    res->frames = frames;
    res->steps = steps;
    res->stop = why;
    res->stop_frame = why == TANDEM_SYNTH_STOP_HEAD ? frames - 1 : -1;
    res->tokens = count;
    res->mel = s->mel;
    res->stop_logit = s->stop_logit;
    res->sample_rate = TANDEM_MEL_SAMPLE_RATE;
    return TANDEM_OK;
}

tandem_status tandem_synth_generate(tandem_synth *s, const char *text, size_t len, int lang,
                                    int max_frames, tandem_synth_result *res) {
    if (!s || !text || !res) return tandem_fail(TANDEM_E_INVALID, "synth generate: NULL argument");
    memset(res, 0, sizeof *res);
    const uint64_t t0 = tandem_now_ns();
    int count = 0;
    tandem_lang used = TANDEM_LANG_EN;
    TANDEM_TRY(set_text(s, text, len, lang, &count, &used));
    TANDEM_TRY(generate(s, count, max_frames, res));
    res->lang = used;
    res->seconds = (double)(tandem_now_ns() - t0) * 1e-9;
    return TANDEM_OK;
}

/* ids [count] → s->ids padded, uploaded. */
static tandem_status set_ids(tandem_synth *s, const int32_t *ids, int count) {
    const tandem_model_dims *d = &s->dims;
    if (!ids || count < 1 || count > d->text_len)
        return tandem_fail(TANDEM_E_INVALID, "synth: %d token ids; expected 1..%d (max_text)", count,
                           d->text_len);
    for (int i = 0; i < d->text_len; i++) {
        const int32_t id = i < count ? ids[i] : TANDEM_SYM_PAD;
        if (id < 0 || id >= d->vocab)
            return tandem_fail(TANDEM_E_INVALID, "synth: token id %d at %d; expected 0..%d", id, i,
                               d->vocab - 1);
        s->ids[i] = id;
    }
    return tandem_dev_upload(s->s, s->tokens, 0, s->ids, (size_t)d->text_len * sizeof(int32_t));
}

tandem_status tandem_synth_generate_ids(tandem_synth *s, const int32_t *ids, int count,
                                        int max_frames, tandem_synth_result *res) {
    if (!s || !res) return tandem_fail(TANDEM_E_INVALID, "synth generate: NULL argument");
    memset(res, 0, sizeof *res);
    const uint64_t t0 = tandem_now_ns();
    TANDEM_TRY(set_ids(s, ids, count));
    TANDEM_TRY(generate(s, count, max_frames, res));
    res->lang = ids[0] == TANDEM_SYM_LANG_FA ? TANDEM_LANG_FA : TANDEM_LANG_EN;
    res->seconds = (double)(tandem_now_ns() - t0) * 1e-9;
    return TANDEM_OK;
}

/* One forward with target [frames, 80] as the input mels (ids uploaded, count real). */
static tandem_status teacher_forced(tandem_synth *s, int count, const float *target, int frames,
                                    float *pred) {
    const tandem_model_dims *d = &s->dims;
    if (!target || !pred || frames < 1 || frames > d->frames)
        return tandem_fail(TANDEM_E_INVALID, "synth teacher forcing: %d frames%s; expected 1..%d",
                           frames, target && pred ? "" : " (or a NULL buffer)", d->frames);
    const size_t n = (size_t)frames * d->n_mels, all = (size_t)d->frames * d->n_mels;
    memcpy(s->io, target, n * sizeof(float));
    for (size_t i = n; i < all; i++) s->io[i] = tandem_mel_silence(); /* padding as in training */
    TANDEM_TRY(tandem_dev_upload(s->s, s->mels, 0, s->io, all * sizeof(float)));
    TANDEM_TRY(forward(s, count));
    TANDEM_TRY(tandem_dev_download(s->s, s->io, s->model.mel_out, 0, n * sizeof(float)));
    TANDEM_TRY(tandem_stream_sync(s->s));
    memcpy(pred, s->io, n * sizeof(float));
    return TANDEM_OK;
}

tandem_status tandem_synth_teacher_forced(tandem_synth *s, const char *text, size_t len, int lang,
                                          const float *target, int frames, float *pred) {
    if (!s || !text) return tandem_fail(TANDEM_E_INVALID, "synth teacher forcing: NULL argument");
    int count = 0;
    TANDEM_TRY(set_text(s, text, len, lang, &count, NULL));
    return teacher_forced(s, count, target, frames, pred);
}

tandem_status tandem_synth_teacher_forced_ids(tandem_synth *s, const int32_t *ids, int count,
                                              const float *target, int frames, float *pred) {
    if (!s) return tandem_fail(TANDEM_E_INVALID, "synth teacher forcing: NULL argument");
    TANDEM_TRY(set_ids(s, ids, count));
    return teacher_forced(s, count, target, frames, pred);
}

tandem_status tandem_synth_vocode(tandem_synth *s, const float *mel, int frames, int iters,
                                  uint64_t seed, const float **audio, int64_t *samples) {
    if (!s || !mel || !audio || !samples) return tandem_fail(TANDEM_E_INVALID, "synth vocode: NULL argument");
    if (frames < 1 || frames > s->dims.frames)
        return tandem_fail(TANDEM_E_INVALID, "synth vocode: %d frames; expected 1..%d", frames,
                           s->dims.frames);
    TANDEM_TRY(tandem_griffinlim_synthesize(s->gl, mel, frames, iters, seed, s->audio));
    *audio = s->audio;
    *samples = (int64_t)frames * TANDEM_MEL_HOP;
    return TANDEM_OK;
}

/* ---- the public run -------------------------------------------------------------------------------- */

/* A caller's buffer must hold the worst case of the frame limit (checked before any work). */
static tandem_status check_buffers(const tandem_synth *s, const tandem_synth_buffers *b) {
    if (!b) return TANDEM_OK;
    const size_t mel = (size_t)s->frame_limit * TANDEM_MEL_N_MELS;
    const size_t audio = (size_t)s->frame_limit * TANDEM_MEL_HOP;
    if (b->mel && b->mel_capacity < mel)
        return tandem_fail(TANDEM_E_INVALID, "synth run: the mel buffer holds %zu floats; the "
                           "frame limit %d x %d bands needs %zu", b->mel_capacity, s->frame_limit,
                           TANDEM_MEL_N_MELS, mel);
    if (b->audio && s->gl_iters > 0 && b->audio_capacity < audio)
        return tandem_fail(TANDEM_E_INVALID, "synth run: the audio buffer holds %zu samples; the "
                           "frame limit %d x %d samples needs %zu", b->audio_capacity,
                           s->frame_limit, TANDEM_MEL_HOP, audio);
    return TANDEM_OK;
}

tandem_status tandem_synth_run(tandem_synth *s, const char *text, tandem_lang lang,
                               const tandem_synth_buffers *into, tandem_synth_result *out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "synth run: out is NULL");
    memset(out, 0, sizeof *out);
    if (!s || !text) return tandem_fail(TANDEM_E_INVALID, "synth run: NULL argument");
    TANDEM_TRY(check_buffers(s, into));
    tandem_synth_result r;
    TANDEM_TRY(tandem_synth_generate(s, text, strlen(text), (int)lang, s->frame_limit, &r));
    if (into && into->mel) {
        memcpy(into->mel, r.mel, (size_t)r.frames * TANDEM_MEL_N_MELS * sizeof(float));
        r.mel = into->mel;
    }
    if (s->gl_iters > 0) {
        float *audio = into && into->audio ? into->audio : s->audio;
        const uint64_t t0 = tandem_now_ns();
        TANDEM_TRY(tandem_griffinlim_synthesize(s->gl, r.mel, r.frames, s->gl_iters, s->seed, audio));
        r.vocode_seconds = (double)(tandem_now_ns() - t0) * 1e-9;
        r.audio = audio;
        r.samples = (int64_t)r.frames * TANDEM_MEL_HOP;
    }
    *out = r;
    return TANDEM_OK;
}
