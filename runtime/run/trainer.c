/* trainer.c — the training loop (see trainer.h). */
#include "runtime/run/trainer.h"

#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/formats/checkpoint.h"
#include "runtime/core/dev.h"
#include "runtime/report/figures.h"
#include "platform/os/log.h"
#include "runtime/report/metrics.h"
#include "platform/cuda/nvml.h"
#include "runtime/model/model.h"
#include "platform/os/os.h"
#include "runtime/data/pipeline.h"
#include "runtime/text/symbols.h"
#include "runtime/data/text_index.h"
#include "runtime/model/train_step.h"

#define CV_WINDOW 50

typedef struct ck_entry {
    tandem_tensor *flat; /* params, adam_m or adam_v */
    int64_t off;         /* elements */
} ck_entry;

struct tandem_trainer {
    tandem_config cfg, vcfg;
    tandem_trainer_options opt;
    tandem_text_index ix, vix;
    int have_ix, have_vix;
    tandem_device *data_dev, *model_dev;
    char devices[512];
    tandem_pool *data_pool, *model_pool;
    tandem_pool *vdata_pool, *vmodel_pool; /* the validation pipeline's own arenas (its ring
                                              tensors carry the same names as the training one's) */
    tandem_stream *s; /* the model stream: consumer of both pipelines */
    tandem_pipeline *pipe, *vpipe;
    int started, vstarted;
    tandem_model model;
    int model_declared;
    tandem_optim optim;
    tandem_train_state st;
    /* model-device busy time on a CUDA model device: [micro_batches + 1] (start, end) pairs
       around each micro-batch's work and the update's */
    tandem_event **ev;
    int n_ev, use_events;
    int val_batches; /* batches per validation over the fixed subset */
    /* checkpoints */
    tandem_checkpoint *ckpt;
    tandem_st_tensor *ck_tensors; /* [3 * n_params] */
    ck_entry *ck_ent;
    char *ck_names;
    char *cfg_yaml, *symbols_json;
    tandem_st_file *resume_file;
    float *load_buf;
    tandem_sampler_pos next_pos;
    tandem_metrics *metrics;
    int nvml_on; /* NVML samples join metrics.jsonl (CUDA devices with NVML present) */
    tandem_progress progress;
    /* figures (figures.h), written at every checkpoint: the loss history of the logged steps
       and the mel of the fixed validation subset's first utterance, taken at each validation */
    tandem_figures *fig;
    int fig_mel;       /* 1: a validation set and f32 tensors to take the mel from */
    int32_t fig_len;   /* its real frames, read back with the mel */
    double window[CV_WINDOW];
    volatile sig_atomic_t stop;
};

void tandem_trainer_request_stop(tandem_trainer *t) {
    if (t) t->stop = 1;
}

/* ---- create ------------------------------------------------------------------------------------ */

static tandem_status open_index(const tandem_config *cfg, const char *dir, tandem_text_index *ix) {
    tandem_text_index_config icfg;
    tandem_text_index_config_default(&icfg);
    icfg.data_dir = dir;
    icfg.max_text = cfg->max_text;
    icfg.max_samples = (int64_t)cfg->max_frames * TANDEM_MEL_HOP;
    icfg.seed = (uint64_t)cfg->seed;
    icfg.val_fraction = 0.0; /* the held-out set is its own directory */
    return tandem_text_index_open(&icfg, ix);
}

static tandem_status make_pipeline(tandem_trainer *t, const tandem_config *cfg,
                                   const tandem_text_index *ix, const char *dir,
                                   tandem_pool *data_pool, tandem_pool *model_pool,
                                   tandem_sampler_pos start, tandem_pipeline **out) {
    tandem_pipeline_options po;
    tandem_pipeline_options_init(&po);
    po.cfg = cfg;
    po.ix = ix;
    po.data_dir = dir;
    po.data_dev = t->data_dev;
    po.model_dev = t->model_dev;
    po.data_pool = data_pool;
    po.model_pool = model_pool;
    po.consumer_stream = t->s;
    po.start_pos = start;
    return tandem_pipeline_create(&po, out);
}

/* Device roles: data_gpu / model_gpu (CUDA ordinals) when given and the backend resolves to
 * CUDA, else the automatic choice (tandem_pipeline_open_devices). */
static tandem_status open_devices(tandem_trainer *t) {
    const tandem_config *c = &t->cfg;
    int n = 0;
    if ((c->data_gpu < 0 && c->model_gpu < 0) || t->opt.backend == TANDEM_BACKEND_HOST ||
        tandem_cuda_device_count(&n) != TANDEM_OK || n == 0) {
        if ((c->data_gpu >= 0 || c->model_gpu >= 0) && t->opt.backend == TANDEM_BACKEND_CUDA)
            return tandem_fail(TANDEM_E_DEVICE, "config: data_gpu %d / model_gpu %d: no CUDA device "
                               "found", c->data_gpu, c->model_gpu);
        if (c->data_gpu >= 0 || c->model_gpu >= 0)
            tandem_logf(TANDEM_LOG_WARN, "data_gpu / model_gpu ignored: no CUDA device (two host "
                        "devices are used)");
        return tandem_pipeline_open_devices(t->opt.backend, &t->data_dev, &t->model_dev, t->devices,
                                            sizeof t->devices);
    }
    /* One ordinal given: the other role takes the other device when there are two, else the
     * same one. */
    int dg = c->data_gpu, mg = c->model_gpu;
    if (dg < 0) dg = n >= 2 && mg == 0 ? 1 : 0;
    if (mg < 0) mg = n >= 2 ? (dg == 1 ? 0 : 1) : dg;
    if (dg >= n || mg >= n)
        return tandem_fail(TANDEM_E_DEVICE, "config: %s %d: only %d CUDA device%s (ordinals 0..%d)",
                           dg >= n ? "data_gpu" : "model_gpu", dg >= n ? dg : mg, n, n == 1 ? "" : "s",
                           n - 1);
    TANDEM_TRY(tandem_device_open(TANDEM_BACKEND_CUDA, dg, &t->data_dev));
    if (mg == dg) t->model_dev = t->data_dev;
    else TANDEM_TRY(tandem_device_open(TANDEM_BACKEND_CUDA, mg, &t->model_dev));
    if (mg == dg)
        snprintf(t->devices, sizeof t->devices, "CUDA device %d (%s) in both roles (data_gpu = "
                 "model_gpu), separate arenas and streams", dg, t->data_dev->info.name);
    else
        snprintf(t->devices, sizeof t->devices, "data device: CUDA %d (%s), model device: CUDA %d "
                 "(%s); ring copies %s", dg, t->data_dev->info.name, mg, t->model_dev->info.name,
                 tandem_device_can_access_peer(t->model_dev, t->data_dev)
                     ? "peer to peer" : "staged through pinned host memory");
    return TANDEM_OK;
}

static int64_t meta_int(const tandem_st_file *f, const char *key, int64_t def) {
    const char *v = tandem_st_meta_find(f, key);
    return v ? strtoll(v, NULL, 10) : def;
}

/* Find and open the newest valid checkpoint (before commit: opening allocates). */
static tandem_status open_resume(tandem_trainer *t) {
    char path[1100];
    int64_t step = 0;
    int found = 0;
    TANDEM_TRY(tandem_checkpoint_find_latest(t->opt.resume_dir, path, sizeof path, &step, &found));
    if (!found)
        return tandem_fail(TANDEM_E_INVALID, "resume: no valid checkpoint in '%s'", t->opt.resume_dir);
    TANDEM_TRY(tandem_checkpoint_open(path, step, &t->resume_file));
    t->st.step = step;
    t->st.updates = meta_int(t->resume_file, "updates", step);
    t->st.skipped = meta_int(t->resume_file, "skipped", 0);
    t->st.skipped_in_row = meta_int(t->resume_file, "skipped_in_row", 0);
    const int64_t rng = meta_int(t->resume_file, TANDEM_CKPT_KEY_RNG, t->cfg.seed);
    if (rng != t->cfg.seed)
        tandem_logf(TANDEM_LOG_WARN, "resume: the checkpoint's seed is %" PRId64 ", the config's %"
                    PRId64 "; the sampler continues with the config's", rng, t->cfg.seed);
    t->next_pos.epoch = meta_int(t->resume_file, TANDEM_CKPT_KEY_SAMPLER_EPOCH, 0);
    t->next_pos.index = meta_int(t->resume_file, TANDEM_CKPT_KEY_SAMPLER_POSITION, 0);
    tandem_logf(TANDEM_LOG_INFO, "resume: %s (step %" PRId64 ", sampler epoch %" PRId64
                ", position %" PRId64 ")", path, step, t->next_pos.epoch, t->next_pos.index);
    return TANDEM_OK;
}

static tandem_status setup_checkpoints(tandem_trainer *t) {
    tandem_model *m = &t->model;
    const int n = 3 * m->n_params;
    t->ck_tensors = tandem_calloc((size_t)n, sizeof *t->ck_tensors);
    t->ck_ent = tandem_calloc((size_t)n, sizeof *t->ck_ent);
    t->ck_names = tandem_calloc((size_t)n, TANDEM_MODEL_PARAM_NAME_MAX + 8);
    if (!t->ck_tensors || !t->ck_ent || !t->ck_names)
        return tandem_fail(TANDEM_E_NOMEM, "trainer: out of memory for the checkpoint table");
    static const char *const prefix[3] = {"", "adam_m.", "adam_v."};
    tandem_tensor *flat[3] = {m->params, m->adam_m, m->adam_v};
    int64_t biggest = 1;
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < m->n_params; i++) {
            int j = k * m->n_params + i;
            char *name = t->ck_names + (size_t)j * (TANDEM_MODEL_PARAM_NAME_MAX + 8);
            snprintf(name, TANDEM_MODEL_PARAM_NAME_MAX + 8, "%s%s", prefix[k], m->param[i].name);
            tandem_st_tensor *e = &t->ck_tensors[j];
            e->name = name;
            e->dtype = TANDEM_F32;
            e->ndim = m->param[i].ndim;
            e->shape[0] = m->param[i].shape[0];
            e->shape[1] = m->param[i].shape[1];
            e->user = &t->ck_ent[j];
            t->ck_ent[j].flat = flat[k];
            t->ck_ent[j].off = m->param[i].offset;
            if (m->param[i].numel > biggest) biggest = m->param[i].numel;
        }
    size_t len = 0;
    TANDEM_TRY(tandem_symbols_to_json(&t->symbols_json, &len));
    size_t cl = tandem_config_dump(&t->cfg, NULL, 0) + 1;
    t->cfg_yaml = tandem_malloc(cl);
    if (!t->cfg_yaml) return tandem_fail(TANDEM_E_NOMEM, "trainer: out of memory");
    tandem_config_dump(&t->cfg, t->cfg_yaml, cl);
    if (t->resume_file) {
        t->load_buf = tandem_malloc((size_t)biggest * sizeof(float));
        if (!t->load_buf) return tandem_fail(TANDEM_E_NOMEM, "trainer: out of memory");
    }
    return tandem_checkpoint_create(t->cfg.out, t->cfg.keep, t->ck_tensors, n,
                                    cl + len + 1024, &t->ckpt);
}

/* The figures' buffers (before commit). On resume the loss history continues from the resumed
 * run's metrics.jsonl, cut at the checkpoint's step as `tandem plot` cuts it (figures.h). */
static tandem_status setup_figures(tandem_trainer *t) {
    const tandem_model *m = &t->model;
    t->fig_mel = t->vpipe != NULL;
    if (t->fig_mel && (tandem_tensor_dtype(m->mel_out) != TANDEM_F32 ||
                       tandem_tensor_numel(m->mel_out) < (int64_t)m->dims.frames * m->dims.n_mels ||
                       m->dims.n_mels != TANDEM_FIGURES_N_MELS)) {
        tandem_logf(TANDEM_LOG_WARN, "trainer: the model's mel output is not f32 [B, F, 80]; no "
                    "mel figure (loss.png only)");
        t->fig_mel = 0;
    }
    TANDEM_TRY(tandem_figures_create(TANDEM_FIGURES_HISTORY, t->fig_mel ? m->dims.frames : 0, &t->fig));
    if (!t->opt.resume_dir) return TANDEM_OK;
    char path[1100];
    snprintf(path, sizeof path, "%s/metrics.jsonl", t->opt.resume_dir);
    int lines = 0, bad = 0;
    if (tandem_figures_load_metrics(t->fig, path, &lines, &bad) != TANDEM_OK) {
        tandem_logf(TANDEM_LOG_WARN, "resume: %s; the loss figure starts at step %" PRId64,
                    tandem_last_error(), t->st.step);
        return TANDEM_OK;
    }
    tandem_figures_rewind(t->fig, t->st.step + 1);
    if (bad)
        tandem_logf(TANDEM_LOG_WARN, "resume: %s: %d unreadable line%s skipped for the loss figure",
                    path, bad, bad == 1 ? "" : "s");
    return TANDEM_OK;
}

const tandem_figures *tandem_trainer_figures(const tandem_trainer *t) { return t ? t->fig : NULL; }

/* NVML readings of one device as "<role>_..." fields of the current metrics line; fields the
 * GPU cannot report are left out. A device lost mid-run turns NVML off with one warning. */
static void add_nvml(tandem_trainer *t, const char *role, const tandem_device *dev) {
    tandem_nvml_sample_t s;
    if (!t->nvml_on || dev->info.backend != TANDEM_BACKEND_CUDA) return;
    tandem_status st = tandem_nvml_sample(dev->info.ordinal, &s);
    if (st == TANDEM_E_DEVICE) {
        tandem_logf(TANDEM_LOG_WARN, "NVML: %s; no more NVML fields in metrics.jsonl", tandem_last_error());
        t->nvml_on = 0;
    }
    if (st != TANDEM_OK) return;
    char key[48];
#define NVML_FIELD(bit, name, value)                                                      \
    if (s.have & (bit)) {                                                                 \
        snprintf(key, sizeof key, "%s_%s", role, name);                                   \
        tandem_metrics_set(t->metrics, key, (double)(value));                             \
    }
    NVML_FIELD(TANDEM_NVML_HAVE_UTIL, "gpu_util_pct", s.gpu_util_pct)
    NVML_FIELD(TANDEM_NVML_HAVE_UTIL, "mem_util_pct", s.mem_util_pct)
    NVML_FIELD(TANDEM_NVML_HAVE_MEMORY, "mem_used_mib", s.mem_used_bytes / 1048576.0)
    NVML_FIELD(TANDEM_NVML_HAVE_MEMORY, "mem_total_mib", s.mem_total_bytes / 1048576.0)
    NVML_FIELD(TANDEM_NVML_HAVE_POWER, "power_w", s.power_w)
    NVML_FIELD(TANDEM_NVML_HAVE_SM_CLOCK, "sm_mhz", s.sm_clock_mhz)
    NVML_FIELD(TANDEM_NVML_HAVE_MEM_CLOCK, "mem_mhz", s.mem_clock_mhz)
    NVML_FIELD(TANDEM_NVML_HAVE_TEMPERATURE, "temp_c", s.temperature_c)
#undef NVML_FIELD
}

tandem_status tandem_trainer_create(const tandem_trainer_options *o, tandem_trainer **out) {
    if (!o || !o->cfg || !out) return tandem_fail(TANDEM_E_INVALID, "trainer: NULL argument");
    *out = NULL;
    if (!o->cfg->train_data[0])
        return tandem_fail(TANDEM_E_INVALID, "config: key 'train_data': expected a dataset directory");
    tandem_trainer *t = tandem_calloc(1, sizeof *t);
    if (!t) return tandem_fail(TANDEM_E_NOMEM, "trainer: out of memory");
    *out = t;
    t->cfg = *o->cfg;
    t->opt = *o;
    t->opt.cfg = &t->cfg;
    tandem_optim_from_config(&t->cfg, &t->optim);
    tandem_model_dims dims;
    TANDEM_TRY(tandem_model_dims_from_config(&t->cfg, tandem_symbols_count(), &dims));
    TANDEM_TRY(tandem_mkdir_p(t->cfg.out));
    if (o->resume_dir) TANDEM_TRY(open_resume(t));

    TANDEM_TRY(open_index(&t->cfg, t->cfg.train_data, &t->ix));
    t->have_ix = 1;
    if (t->ix.n_train == 0)
        return tandem_fail(TANDEM_E_INVALID, "train data '%s': no usable utterance", t->cfg.train_data);
    if (t->cfg.val_data[0] && t->cfg.val_every > 0) {
        TANDEM_TRY(open_index(&t->cfg, t->cfg.val_data, &t->vix));
        t->have_vix = t->vix.n_train > 0;
        /* The fixed validation subset: the first val_batches * B utterances, visited in order.
         * The unshuffled stream over exactly these repeats them forever; every validation
         * takes a whole number of passes' worth of batches that ends on a pass boundary, so
         * each one starts at the subset's first utterance. With fewer utterances than
         * val_batches * B: n / gcd(n, B) batches are n / gcd(n, B) * B / n whole passes. */
        const uint32_t B = (uint32_t)t->cfg.batch_size, want = (uint32_t)t->cfg.val_batches * B;
        if (t->vix.n_train > want) t->vix.n_train = want;
        uint32_t g = t->vix.n_train, b = B;
        while (b) {
            uint32_t r = g % b;
            g = b;
            b = r;
        }
        t->val_batches = t->vix.n_train == want ? t->cfg.val_batches : (int)(t->vix.n_train / g);
    }
    TANDEM_TRY(open_devices(t));
    TANDEM_TRY(tandem_stream_create(t->model_dev, &t->s));
    TANDEM_TRY(tandem_pool_create(t->data_dev, "data", (size_t)t->cfg.data_gpu_memory << 20,
                                  &t->data_pool));
    TANDEM_TRY(tandem_pool_create(t->model_dev, "model", (size_t)t->cfg.model_gpu_memory << 20,
                                  &t->model_pool));
    TANDEM_TRY(make_pipeline(t, &t->cfg, &t->ix, t->cfg.train_data, t->data_pool, t->model_pool,
                             t->next_pos, &t->pipe));
    if (t->have_vix) {
        t->vcfg = t->cfg;
        t->vcfg.shuffle = 0; /* validation visits the held-out set in order */
        t->vcfg.prefetch_buffer_size = 2;
        tandem_sampler_pos zero = {0, 0};
        TANDEM_TRY(tandem_pool_create(t->data_dev, "val_data", 0, &t->vdata_pool));
        TANDEM_TRY(tandem_pool_create(t->model_dev, "val_model", 0, &t->vmodel_pool));
        TANDEM_TRY(make_pipeline(t, &t->vcfg, &t->vix, t->cfg.val_data, t->vdata_pool,
                                 t->vmodel_pool, zero, &t->vpipe));
    }
    TANDEM_TRY(tandem_model_declare(&t->model, t->model_dev, t->model_pool, &dims));
    t->model_declared = 1;
    tandem_device_info minfo;
    TANDEM_TRY(tandem_device_get_info(t->model_dev, &minfo));
    t->use_events = minfo.backend == TANDEM_BACKEND_CUDA;
    t->n_ev = 2 * (dims.micro_batches + 1);
    t->ev = tandem_calloc((size_t)t->n_ev, sizeof *t->ev);
    if (!t->ev) return tandem_fail(TANDEM_E_NOMEM, "trainer: out of memory for events");
    if (t->use_events)
        for (int i = 0; i < t->n_ev; i++) TANDEM_TRY(tandem_event_create(t->model_dev, &t->ev[i]));
    TANDEM_TRY(setup_checkpoints(t));
    TANDEM_TRY(setup_figures(t));
    char mpath[1100];
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", t->cfg.out);
    TANDEM_TRY(tandem_metrics_open(mpath, o->resume_dir != NULL, &t->metrics));
    if (minfo.backend == TANDEM_BACKEND_CUDA) { /* NVML is optional: never fails the run */
        t->nvml_on = tandem_nvml_open() == TANDEM_OK;
        if (!t->nvml_on)
            tandem_logf(TANDEM_LOG_INFO, "NVML: %s; utilisation/power/clocks left out of metrics.jsonl",
                        tandem_nvml_describe());
    }
    tandem_progress_init(&t->progress, stdout, (int)t->cfg.log_every, o->quiet);

    TANDEM_TRY(tandem_pool_commit(t->data_pool));
    TANDEM_TRY(tandem_pool_commit(t->model_pool));
    if (t->vpipe) {
        TANDEM_TRY(tandem_pool_commit(t->vdata_pool));
        TANDEM_TRY(tandem_pool_commit(t->vmodel_pool));
    }
    TANDEM_TRY(tandem_model_init_params(&t->model, t->s, (uint64_t)t->cfg.seed));
    if (t->resume_file) {
        for (int j = 0; j < 3 * t->model.n_params; j++) {
            const tandem_st_tensor *e = &t->ck_tensors[j];
            const ck_entry *ce = &t->ck_ent[j];
            int64_t numel = e->ndim > 1 ? e->shape[0] * e->shape[1] : e->shape[0];
            size_t bytes = (size_t)numel * sizeof(float);
            TANDEM_TRY(tandem_st_read_tensor(t->resume_file, e->name, TANDEM_F32, e->ndim, e->shape,
                                             t->load_buf, bytes));
            TANDEM_TRY(tandem_dev_upload(t->s, ce->flat, (size_t)ce->off * sizeof(float), t->load_buf, bytes));
            TANDEM_TRY(tandem_stream_sync(t->s));
        }
        tandem_st_close(t->resume_file);
        t->resume_file = NULL;
    }
    return TANDEM_OK;
}

void tandem_trainer_destroy(tandem_trainer *t) {
    if (!t) return;
    if (t->pipe) {
        if (t->started) tandem_pipeline_stop(t->pipe);
        tandem_pipeline_destroy(t->pipe);
    }
    if (t->vpipe) {
        if (t->vstarted) tandem_pipeline_stop(t->vpipe);
        tandem_pipeline_destroy(t->vpipe);
    }
    if (t->model_declared) tandem_model_free(&t->model);
    if (t->ev) {
        for (int i = 0; i < t->n_ev; i++)
            if (t->ev[i]) tandem_event_destroy(t->ev[i]);
        tandem_free(t->ev);
    }
    if (t->ckpt) tandem_checkpoint_free(t->ckpt);
    if (t->resume_file) tandem_st_close(t->resume_file);
    if (t->metrics) tandem_metrics_close(t->metrics);
    tandem_figures_free(t->fig);
    tandem_free(t->ck_tensors);
    tandem_free(t->ck_ent);
    tandem_free(t->ck_names);
    tandem_free(t->cfg_yaml);
    tandem_free(t->symbols_json);
    tandem_free(t->load_buf);
    if (t->data_pool) tandem_pool_destroy(t->data_pool);
    if (t->model_pool) tandem_pool_destroy(t->model_pool);
    if (t->vdata_pool) tandem_pool_destroy(t->vdata_pool);
    if (t->vmodel_pool) tandem_pool_destroy(t->vmodel_pool);
    if (t->s) tandem_stream_destroy(t->s);
    if (t->data_dev || t->model_dev) tandem_pipeline_close_devices(t->data_dev, t->model_dev);
    if (t->have_ix) tandem_text_index_free(&t->ix);
    if (t->have_vix || t->vix.utts) tandem_text_index_free(&t->vix);
    tandem_free(t);
}

/* ---- the loop ----------------------------------------------------------------------------------- */

static double ms_since(uint64_t t0) { return (double)(tandem_now_ns() - t0) * 1e-6; }

/* Acquire one batch and describe it for the model: the slot's tensors, lengths included
 * (the model builds its key mask and loss normalisers from them on the device). */
static tandem_status get_batch(tandem_pipeline *p, tandem_batch_view *v, tandem_model_batch *mb,
                               double *wait_ms) {
    TANDEM_TRY(tandem_pipeline_acquire(p, v, 600000));
    *wait_ms += v->wait_ms;
    memset(mb, 0, sizeof *mb);
    mb->tokens = v->t->tokens;
    mb->mels = v->t->mels;
    mb->frame_mask = v->t->frame_mask;
    mb->stop_targets = v->t->stop_targets;
    mb->text_lengths = v->t->text_lengths;
    mb->frame_lengths = v->t->frame_lengths;
    return TANDEM_OK;
}

/* The mel figure's utterance: row 0 of the validation's first batch (the fixed subset's first
 * utterance), target from the slot and teacher-forced prediction from the forward just run
 * (eval synchronised the stream; the slot is still held). */
static tandem_status take_mel(tandem_trainer *t, const tandem_batch_view *v, int64_t step) {
    const size_t bytes = (size_t)t->model.dims.frames * TANDEM_FIGURES_N_MELS * sizeof(float);
    TANDEM_TRY(tandem_dev_download(t->s, tandem_figures_mel_target(t->fig), v->t->mels, 0, bytes));
    TANDEM_TRY(tandem_dev_download(t->s, tandem_figures_mel_pred(t->fig), t->model.mel_out, 0, bytes));
    TANDEM_TRY(tandem_dev_download(t->s, &t->fig_len, v->t->frame_lengths, 0, sizeof t->fig_len));
    TANDEM_TRY(tandem_stream_sync(t->s));
    if (t->fig_len < 1 || t->fig_len > t->model.dims.frames)
        return tandem_fail(TANDEM_E_INTERNAL, "validation batch: frame length %d of row 0, expected "
                           "1..%d", (int)t->fig_len, t->model.dims.frames);
    return tandem_figures_set_mel(t->fig, t->fig_len, step);
}

/* Validation over the fixed subset after `step` steps. */
static tandem_status validate(tandem_trainer *t, int64_t step, double *l1, double *bce) {
    double sl = 0, sb = 0, wait = 0;
    for (int i = 0; i < t->val_batches; i++) {
        tandem_batch_view v;
        tandem_model_batch mb;
        TANDEM_TRY(get_batch(t->vpipe, &v, &mb, &wait));
        double a, b;
        TANDEM_TRY(tandem_train_eval(&t->model, t->s, &t->optim, &mb, &a, &b));
        if (i == 0 && t->fig_mel) TANDEM_TRY(take_mel(t, &v, step));
        TANDEM_TRY(tandem_pipeline_release(t->vpipe, v.slot));
        sl += a;
        sb += b;
    }
    *l1 = sl / t->val_batches;
    *bce = sb / t->val_batches;
    return TANDEM_OK;
}

static tandem_status ck_fetch(void *ctx, void *user, void *dst, size_t offset, size_t bytes) {
    tandem_trainer *t = ctx;
    const ck_entry *e = user;
    TANDEM_TRY(tandem_dev_download(t->s, dst, e->flat, (size_t)e->off * sizeof(float) + offset, bytes));
    return tandem_stream_sync(t->s);
}

/* loss.png and mel.png next to the checkpoints (allocation-free: figures.h, plot.h). They are
 * diagnostics: a failure to write one is a warning, the run goes on. */
static void write_figures(tandem_trainer *t) {
    if (tandem_figures_write_loss(t->fig, t->cfg.out) != TANDEM_OK)
        tandem_logf(TANDEM_LOG_WARN, "step %" PRId64 ": loss figure not written: %s", t->st.step,
                    tandem_last_error());
    if (tandem_figures_mel_frames(t->fig, NULL) > 0 && tandem_figures_write_mel(t->fig, t->cfg.out) != TANDEM_OK)
        tandem_logf(TANDEM_LOG_WARN, "step %" PRId64 ": mel figure not written: %s", t->st.step,
                    tandem_last_error());
}

static tandem_status save_checkpoint(tandem_trainer *t) {
    char upd[32], skp[32], row[32], rng[32], ep[32], pos[32];
    snprintf(upd, sizeof upd, "%" PRId64, t->st.updates);
    snprintf(skp, sizeof skp, "%" PRId64, t->st.skipped);
    snprintf(row, sizeof row, "%" PRId64, t->st.skipped_in_row);
    /* The run's only random state: initialisation and the sampler's permutations are pure
     * functions of the seed (no dropout), so the seed is the RNG state. */
    snprintf(rng, sizeof rng, "%" PRId64, t->cfg.seed);
    snprintf(ep, sizeof ep, "%" PRId64, t->next_pos.epoch);
    snprintf(pos, sizeof pos, "%" PRId64, t->next_pos.index);
    const tandem_st_meta meta[] = {
        {TANDEM_CKPT_KEY_CONFIG, t->cfg_yaml},
        {TANDEM_CKPT_KEY_SYMBOLS, t->symbols_json},
        {TANDEM_CKPT_KEY_SAMPLER_EPOCH, ep},
        {TANDEM_CKPT_KEY_SAMPLER_POSITION, pos},
        {"updates", upd},
        {"skipped", skp},
        {"skipped_in_row", row},
        {TANDEM_CKPT_KEY_RNG, rng},
    };
    TANDEM_TRY(tandem_checkpoint_save(t->ckpt, t->st.step, meta, (int)(sizeof meta / sizeof meta[0]),
                                      ck_fetch, t));
    write_figures(t);
    return TANDEM_OK;
}

/* The sampler position after the last row of a consumed batch. */
static void advance_pos(tandem_trainer *t, const tandem_batch_view *v) {
    tandem_sampler_pos p = v->pos[t->model.dims.batch - 1];
    p.index++;
    if (p.index >= (int64_t)t->ix.n_train) {
        p.index = 0;
        p.epoch++;
    }
    t->next_pos = p;
}

static double window_cv(const double *w, int n) {
    if (n < 2) return 0.0;
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++) mean += w[i];
    mean /= n;
    for (int i = 0; i < n; i++) var += (w[i] - mean) * (w[i] - mean);
    return mean > 0 ? sqrt(var / (n - 1)) / mean : 0.0;
}

tandem_status tandem_trainer_run(tandem_trainer *t, tandem_trainer_summary *sum) {
    if (!t) return tandem_fail(TANDEM_E_INVALID, "trainer run: NULL");
    tandem_trainer_summary S;
    memset(&S, 0, sizeof S);
    snprintf(S.devices, sizeof S.devices, "%s", t->devices);
    S.first_step = t->st.step;
    S.val_l1_first = S.val_l1_last = -1;
    TANDEM_TRY(tandem_pipeline_start(t->pipe));
    t->started = 1;
    if (t->vpipe) {
        TANDEM_TRY(tandem_pipeline_start(t->vpipe));
        t->vstarted = 1;
    }
    const tandem_model_dims *d = &t->model.dims;
    const int64_t max_steps = t->cfg.max_steps;
    double sum_step = 0, sum_wait = 0, sum_busy = 0, sum_samples = 0;
    int64_t n_meas = 0, wn = 0;
    tandem_status st = TANDEM_OK;
    int saved_at_end = 0;
    /* A fresh run validates the initial parameters too (a metrics line for step 0 with only
     * val_l1 / val_stop_bce): the reference a convergence check compares the end with. */
    if (t->vpipe && t->cfg.val_every > 0 && t->st.step == 0) {
        double vl1 = 0, vbce = 0;
        st = validate(t, 0, &vl1, &vbce);
        if (st == TANDEM_OK) {
            S.val_l1_first = S.val_l1_last = vl1;
            tandem_metrics_begin(t->metrics, 0);
            tandem_metrics_set(t->metrics, "val_l1", vl1);
            tandem_metrics_set(t->metrics, "val_stop_bce", vbce);
            st = tandem_metrics_end(t->metrics);
            if (st == TANDEM_OK) tandem_figures_add_val(t->fig, 0, vl1);
        }
    }
    const uint64_t run_t0 = tandem_now_ns();
    const int64_t run_end = t->opt.run_steps > 0 ? t->st.step + t->opt.run_steps : max_steps;
    const int A = d->micro_batches;
    while (st == TANDEM_OK && t->st.step < max_steps && t->st.step < run_end && !t->stop) {
        const uint64_t t0 = tandem_now_ns();
        double wait = 0, audio_s = 0;
        for (int a = 0; a < A && st == TANDEM_OK; a++) {
            tandem_batch_view v;
            tandem_model_batch mb;
            if ((st = get_batch(t->pipe, &v, &mb, &wait)) != TANDEM_OK) break;
            /* Recorded after acquire queued the wait for the slot: the pair spans only this
             * micro-batch's work on the model device. */
            if (t->use_events && (st = tandem_event_record(t->ev[2 * a], t->s)) != TANDEM_OK) break;
            if (a == 0) st = tandem_train_begin(&t->model, t->s);
            if (st == TANDEM_OK) st = tandem_train_micro(&t->model, t->s, &t->optim, &mb, a);
            if (st == TANDEM_OK && t->use_events) st = tandem_event_record(t->ev[2 * a + 1], t->s);
            /* v.pos points into the slot's metadata, which the producer rewrites once the
             * slot is released: read it first. */
            advance_pos(t, &v);
            audio_s += v.audio_seconds;
            tandem_status rs = tandem_pipeline_release(t->pipe, v.slot);
            if (st == TANDEM_OK) st = rs;
        }
        if (st != TANDEM_OK) break;
        const int64_t k = t->st.step - t->opt.nonfinite_from;
        if (t->opt.nonfinite_count > 0 && k >= 0 && k < t->opt.nonfinite_count &&
            (st = tandem_op_fill(t->s, t->model.grads, NAN)) != TANDEM_OK)
            break;
        if (t->use_events && (st = tandem_event_record(t->ev[2 * A], t->s)) != TANDEM_OK) break;
        tandem_step_result res;
        if ((st = tandem_train_update(&t->model, t->s, &t->optim, &t->st)) != TANDEM_OK) break;
        if (t->use_events && (st = tandem_event_record(t->ev[2 * A + 1], t->s)) != TANDEM_OK) break;
        if ((st = tandem_train_collect(&t->model, t->s, &t->optim, &t->st, &res)) != TANDEM_OK) break;
        const double step_ms = ms_since(t0);
        if (t->opt.on_step) t->opt.on_step(t->opt.on_step_ctx, &res);
        double busy_ms = step_ms - wait;
        if (t->use_events) {
            /* The end event of the update was queued before finish's read-back; the
             * read-back synchronised the stream, so every pair has completed. */
            busy_ms = 0;
            for (int a = 0; a <= A && st == TANDEM_OK; a++) {
                float ms = 0;
                st = tandem_event_elapsed_ms(t->ev[2 * a], t->ev[2 * a + 1], &ms);
                busy_ms += ms;
            }
            if (st != TANDEM_OK) break;
        }
        if (t->st.skipped_in_row >= t->cfg.max_nonfinite) {
            st = tandem_fail(TANDEM_E_INVALID,
                             "training: %" PRId64 " non-finite steps in a row (loss %g, gradient "
                             "norm %g at step %" PRId64 "); limit max_nonfinite = %d — lower lr or "
                             "check the data", t->st.skipped_in_row, res.loss, res.grad_norm,
                             res.step, t->cfg.max_nonfinite);
            break;
        }
        const int64_t done = t->st.step;
        if (S.steps_run == 0) {
            S.loss_first = res.loss;
            S.l1_first = res.l1;
        }
        S.steps_run++;
        S.loss_last = res.loss;
        S.l1_last = res.l1;
        t->window[wn++ % CV_WINDOW] = step_ms;
        const double cv = window_cv(t->window, (int)(wn < CV_WINDOW ? wn : CV_WINDOW));
        double busy = step_ms > 0 ? 100.0 * busy_ms / step_ms : 0;
        if (busy > 100.0) busy = 100.0; /* event and host clocks differ slightly */
        const double samples = (double)d->batch * d->micro_batches;
        if (S.steps_run > 2) { /* past warm-up */
            sum_step += step_ms;
            sum_wait += wait;
            sum_busy += busy;
            sum_samples += samples;
            n_meas++;
        }
        tandem_pipeline_stats ps;
        tandem_pipeline_get_stats(t->pipe, &ps);

        int validated = 0;
        double vl1 = 0, vbce = 0;
        if (t->vpipe && t->cfg.val_every > 0 && (done % t->cfg.val_every == 0 || done == max_steps)) {
            if ((st = validate(t, done, &vl1, &vbce)) != TANDEM_OK) break;
            validated = 1;
            if (S.val_l1_first < 0) S.val_l1_first = vl1;
            S.val_l1_last = vl1;
        }
        if (done % t->cfg.log_every == 0 || done == max_steps || validated || res.skipped) {
            tandem_metrics_begin(t->metrics, done);
            tandem_metrics_set(t->metrics, "loss", res.loss);
            tandem_metrics_set(t->metrics, "l1", res.l1);
            tandem_metrics_set(t->metrics, "stop_bce", res.stop_bce);
            tandem_metrics_set(t->metrics, "lr", res.lr);
            tandem_metrics_set(t->metrics, "grad_norm", res.grad_norm);
            tandem_metrics_set(t->metrics, "step_ms", step_ms);
            tandem_metrics_set(t->metrics, "data_wait_ms", wait);
            tandem_metrics_set(t->metrics, "model_busy_pct", busy);
            tandem_metrics_set(t->metrics, "data_busy_pct", ps.data_busy_pct);
            tandem_metrics_set(t->metrics, "samples_per_s", samples / (step_ms * 1e-3));
            tandem_metrics_set(t->metrics, "x_realtime", audio_s / (step_ms * 1e-3));
            tandem_metrics_set(t->metrics, "step_cv", cv);
            tandem_metrics_set_int(t->metrics, "skipped", res.skipped);
            if (validated) {
                tandem_metrics_set(t->metrics, "val_l1", vl1);
                tandem_metrics_set(t->metrics, "val_stop_bce", vbce);
            }
            add_nvml(t, "model", t->model_dev);
            if (t->data_dev != t->model_dev) add_nvml(t, "data", t->data_dev);
            if ((st = tandem_metrics_end(t->metrics)) != TANDEM_OK) break;
            /* the figure's points are the logged ones */
            tandem_figures_add_loss(t->fig, done, res.loss);
            if (validated) tandem_figures_add_val(t->fig, done, vl1);
        }
        if (!t->opt.quiet) {
            tandem_progress_fields pf;
            memset(&pf, 0, sizeof pf);
            pf.step = done;
            pf.total = max_steps;
            pf.loss = res.loss;
            pf.samples_per_s = samples / (step_ms * 1e-3);
            pf.x_realtime = audio_s / (step_ms * 1e-3);
            pf.data_wait_ms = wait;
            pf.model_busy_pct = busy;
            pf.data_busy_pct = ps.data_busy_pct;
            double el = ms_since(run_t0) * 1e-3;
            pf.eta_s = S.steps_run > 0 ? el / (double)S.steps_run * (double)(max_steps - done) : -1;
            tandem_progress_update(&t->progress, &pf);
        }
        saved_at_end = 0;
        if (t->cfg.checkpoint_every > 0 && done % t->cfg.checkpoint_every == 0) {
            if ((st = save_checkpoint(t)) != TANDEM_OK) break;
            saved_at_end = 1;
        }
    }
    if (!t->opt.quiet) tandem_progress_finish(&t->progress);
    if (st == TANDEM_OK && !saved_at_end && S.steps_run > 0) st = save_checkpoint(t);
    char why[1024] = "";
    if (st != TANDEM_OK) {
        snprintf(why, sizeof why, "%s", tandem_last_error());
        tandem_pipeline_abort(t->pipe, st, why);
        if (t->vpipe) tandem_pipeline_abort(t->vpipe, st, why);
    }
    tandem_status ps = tandem_pipeline_stop(t->pipe);
    t->started = 0;
    if (t->vpipe) {
        tandem_pipeline_stop(t->vpipe);
        t->vstarted = 0;
    }
    if (st == TANDEM_OK && ps != TANDEM_OK) st = ps;
    tandem_pipeline_stats pst;
    tandem_pipeline_get_stats(t->pipe, &pst);
    S.last_step = t->st.step;
    S.skipped = t->st.skipped;
    S.stopped_by_request = t->stop != 0;
    S.busy_from_events = t->use_events;
    S.steps_measured = n_meas;
    if (n_meas > 0) {
        S.samples_per_s = sum_samples / (sum_step * 1e-3);
        S.data_wait_pct = 100.0 * sum_wait / sum_step;
        S.model_busy_pct = sum_busy / (double)n_meas;
    }
    S.data_busy_pct = pst.data_busy_pct;
    S.step_cv = window_cv(t->window, (int)(wn < CV_WINDOW ? wn : CV_WINDOW));
    snprintf(S.checkpoint, sizeof S.checkpoint, "%s", tandem_checkpoint_last_path(t->ckpt));
    if (sum) *sum = S;
    if (st != TANDEM_OK && why[0]) return tandem_fail(st, "%s", why);
    return st;
}
