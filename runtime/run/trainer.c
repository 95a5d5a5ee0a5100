/* trainer.c — the training loop (see trainer.h): create, one step, its accounting and logging,
 * run, destroy. Roles, checkpoints, step timing, NVML and validation are their own modules. */
#include "runtime/run/trainer.h"

#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/core/dev.h"
#include "runtime/data/pipeline.h"
#include "runtime/data/roles.h"
#include "runtime/model/model.h"
#include "runtime/model/train_step.h"
#include "runtime/report/metrics.h"
#include "runtime/run/dataset.h"
#include "runtime/run/dp.h"
#include "runtime/run/freeze.h"
#include "runtime/run/index_summary.h"
#include "runtime/run/init_from.h"
#include "runtime/run/nvml_fields.h"
#include "runtime/run/profile_ops.h"
#include "runtime/run/replicas.h"
#include "runtime/run/resume.h"
#include "runtime/run/run_buckets.h"
#include "runtime/run/run_ckpt.h"
#include "runtime/run/run_dir.h"
#include "runtime/run/run_end.h"
#include "runtime/run/run_tb.h"
#include "runtime/run/step_timer.h"
#include "runtime/run/verdict.h"
#include "runtime/run/validation.h"
#include "runtime/text/symbols.h"

struct tandem_trainer {
    tandem_config cfg;
    tandem_trainer_options opt; /* its strings are cleared after create (read there only) */
    tandem_text_index ix;
    int have_ix;
    tandem_device *data_dev, *model_dev;
    char devices[512];
    char model_name[32], data_name[32]; /* "CUDA 1", "host 0": the progress line's names */
    tandem_pool *data_pool, *model_pool;
    tandem_stream *s; /* the model stream: consumer of both pipelines */
    tandem_pipeline *pipe;
    int started;
    tandem_validation val;
    tandem_model model;
    int model_declared;
    tandem_optim optim;
    tandem_train_state st;
    tandem_step_timer timer;
    tandem_profile_ops prof; /* options.profile_ops: per-op device times of step prof_at */
    int64_t prof_at;
    tandem_run_ckpt ck;
    tandem_st_file *resume_file; /* open from create's start to the restore after commit */
    tandem_st_file *init_file;   /* --init-from: likewise, until its parameters are copied */
    char init_path[1100];
    int discard;                 /* create failed: remove what it left in the run directory */
    int64_t *frozen;             /* --freeze: the optimizer's frozen ranges (freeze.h), or NULL */
    tandem_sampler_pos next_pos;
    tandem_metrics *metrics;
    tandem_tb *tb; /* TensorBoard events (run_tb.h); NULL: off */
    tandem_nvml_fields nvml;
    /* figures (figures.h), written at every checkpoint: the loss history of the logged steps
       and the mel of the fixed validation subset's first utterance, taken at each validation */
    tandem_figures *fig;
    tandem_run_dir rd;  /* the run directory's lock, held from create to destroy */
    int updating; /* an optimizer update is being queued: a failure now may leave it half applied */
    int fig_mel; /* 1: a validation set and f32 tensors to take the mel from */
    int util_model, util_data; /* NVML utilisation at the last logged step (-1: none) */
    /* No host sync per step (docs/TRAINING.md, "Graph mode"): on a CUDA model device the
       step's scalars are read back only on the steps that need them (lazy = 1). graph[k]:
       the step whose first micro-batch is in ring slot k, captured once and replayed (the
       slots' tensors differ, so one graph per slot); none (n_graphs 0): eager. */
    int lazy;
    int unread;  /* steps ran since the last read-back */
    /* lazy mode's rows: a read-back step reports the mean step time since the previous one
       (the steps between were only queued); interval_steps counts them, the last row's in
       row_steps (what account adds to the run's totals) */
    uint64_t interval_t0;
    int64_t interval_steps, row_steps;
    tandem_graph **graph; /* [n_graphs * n_combos]: slot k, shape classes key c at k * n_combos + c */
    int n_graphs, n_combos;
    tandem_run_buckets rb; /* length bucketing: shape classes, graph keys, real frames */
    tandem_step_result last; /* the last read-back */
    volatile sig_atomic_t stop;
    /* data-parallel (runtime/run/dp.h): a stop request is a vote (stop_req) the ranks agree on
       at the next step boundary; writer: rank 0 (or alone) writes the run directory */
    tandem_dp dp;
    int64_t dp_steps; /* steps of this run (the sampler position after them) */
    volatile sig_atomic_t stop_req;
    int writer;
    int run_failed; /* the run ended in an error: the data-parallel group is left, not closed */
    /* several model devices in this process (replicas.h): replica 0 owns the group; a replica
       made by it joins the group after every replica is built (join_later) */
    tandem_replicas *group;
    int join_later;
    int data_gpu, model_gpu; /* the roles' CUDA ordinals: the config's, or a replica's own */
};

/* What run accumulates besides the trainer's own state. */
typedef struct run_totals {
    tandem_trainer_summary S;
    double sum_step, sum_wait, sum_wait_dev, sum_busy, sum_occupied, sum_samples; /* past warm-up */
    tandem_verdict_window vw; /* the verdict's steps (past warm-up) */
    int64_t n_meas; /* steps past warm-up */
    double sum_step_meas; /* of those with device measurements (read-back steps on CUDA) */
    int64_t n_dev;
    uint64_t t0; /* after the initial validation: the ETA's clock */
    int saved_at_end;
} run_totals;

void tandem_trainer_options_init(tandem_trainer_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->backend = TANDEM_BACKEND_AUTO;
    o->nonfinite_from = -1;
    o->rendezvous_timeout_ms = TANDEM_RENDEZVOUS_TIMEOUT_MS;
}

void tandem_trainer_stop_replica(tandem_trainer *t) {
    if (t && t->dp.world > 1) t->stop_req = 1;
    else if (t) t->stop = 1;
}

void tandem_trainer_request_stop(tandem_trainer *t) {
    if (t && t->group) tandem_replicas_request_stop(t->group);
    else tandem_trainer_stop_replica(t);
}

const tandem_figures *tandem_trainer_figures(const tandem_trainer *t) { return t ? t->fig : NULL; }

/* ---- create ------------------------------------------------------------------------------------ */

/* The resume checkpoint, the training index and the held-out one (before any device). */
static tandem_status open_data(tandem_trainer *t) {
    TANDEM_TRY(tandem_run_open_index(&t->cfg, t->cfg.train_data, t->opt.cache_dir, &t->ix));
    t->have_ix = 1;
    if (t->ix.n_train == 0)
        return tandem_fail(TANDEM_E_INVALID, "train data '%s': no usable utterance", t->cfg.train_data);
    const int64_t epoch_steps = tandem_config_epoch_steps(&t->cfg, t->ix.n_train);
    if (epoch_steps > 0) { /* before the schedule and the resume checks read max_steps */
        tandem_logf(TANDEM_LOG_INFO, "trainer: epochs %lld over %u usable utterances at %d x %d per step: "
                    "max_steps %lld", (long long)t->cfg.epochs, t->ix.n_train, t->cfg.batch_size,
                    t->cfg.grad_accum, (long long)epoch_steps);
        t->cfg.max_steps = epoch_steps;
    }
    TANDEM_TRY(tandem_run_buckets_open(&t->rb, &t->cfg, &t->ix));
    if (t->opt.resume_dir) { /* after the index: a checkpoint's sampler position is checked against it */
        TANDEM_TRY(tandem_run_ckpt_find(t->opt.resume_dir, &t->cfg, &t->ix, &t->resume_file,
                                        &t->st, &t->next_pos));
        /* the one taken may be older than the one build checked (a sampler position out of range) */
        TANDEM_TRY(tandem_resume_check(t->resume_file, t->opt.resume_dir, &t->cfg, t->opt.force_resume, 1));
        TANDEM_TRY(tandem_dp_check_resume(t->resume_file, t->opt.resume_dir, t->opt.world_size, t->opt.force_resume));
        if (t->writer) TANDEM_TRY(tandem_run_dir_set_aside(&t->rd, t->opt.resume_dir, t->st.step)); /* never overwritten */
    }
    TANDEM_TRY(tandem_validation_index(&t->val, &t->cfg, t->opt.cache_dir));
    if (t->val.have_index && !tandem_text_index_same_speakers(&t->ix, &t->val.vix))
        return tandem_fail(TANDEM_E_INVALID, "val data '%s': its speakers (%u) are not train data '%s''s (%u); "
                           "a held-out set must use the training set's speaker names", t->cfg.val_data,
                           t->val.vix.n_speakers, t->cfg.train_data, t->ix.n_speakers);
    return TANDEM_OK;
}

/* "CUDA 1" / "host 0": how the progress line names a device. */
static void device_name(tandem_device *d, char *buf, size_t cap) {
    tandem_device_info info;
    if (tandem_device_get_info(d, &info) != TANDEM_OK) {
        snprintf(buf, cap, "?");
        return;
    }
    snprintf(buf, cap, "%s %d", info.backend == TANDEM_BACKEND_CUDA ? "CUDA" : "host", info.ordinal);
}

/* Roles, the model stream, both arenas and the pipelines that declare into them. */
static tandem_status open_devices(tandem_trainer *t) {
    if (t->opt.world_size > 1 && !t->join_later) /* launcher ranks sharing a machine take their own GPUs */
        TANDEM_TRY(tandem_roles_open_rank(t->opt.backend, t->data_gpu, t->model_gpu, t->opt.local_rank,
                                          t->opt.local_world_size, &t->data_dev, &t->model_dev, t->devices,
                                          sizeof t->devices));
    else /* one device, or a replica of this process on the ordinals its group chose */
        TANDEM_TRY(tandem_roles_open(t->opt.backend, t->data_gpu, t->model_gpu, &t->data_dev, &t->model_dev,
                                     t->devices, sizeof t->devices));
    if (t->cfg.force_staged) tandem_roles_note_force_staged(t->devices, sizeof t->devices);
    if (t->opt.world_size > 1) { /* data-parallel: say which replica this is */
        const size_t n = strlen(t->devices);
        snprintf(t->devices + n, sizeof t->devices - n, "; data-parallel rank %d of %d", t->opt.rank,
                 t->opt.world_size);
    }
    device_name(t->model_dev, t->model_name, sizeof t->model_name);
    device_name(t->data_dev, t->data_name, sizeof t->data_name);
    TANDEM_TRY(tandem_stream_create(t->model_dev, &t->s));
    TANDEM_TRY(tandem_pool_create(t->data_dev, "data", (size_t)t->cfg.data_gpu_memory << 20, &t->data_pool));
    TANDEM_TRY(tandem_pool_create(t->model_dev, "model", (size_t)t->cfg.model_gpu_memory << 20, &t->model_pool));
    tandem_pipeline_options po;
    tandem_pipeline_options_init(&po);
    po.cfg = &t->cfg;
    po.ix = &t->ix;
    po.data_dir = t->cfg.train_data;
    po.data_dev = t->data_dev;
    po.model_dev = t->model_dev;
    po.data_pool = t->data_pool;
    po.model_pool = t->model_pool;
    po.consumer_stream = t->s;
    po.start_pos = t->next_pos;
    po.force_staged = t->cfg.force_staged;
    tandem_run_buckets_pipeline(&t->rb, &po);
    if (t->opt.world_size > 1 && t->rb.k > 0)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "data-parallel training (%d ranks) with length bucketing (buckets: "
                           "%d classes): the bucket sampler's batches are not sharded by rank yet; set buckets: 0 "
                           "(docs/SCALING.md)", t->opt.world_size, t->rb.k);
    po.shard_world = t->opt.world_size, po.shard_rank = t->opt.rank;
    po.shard_chunk = (int64_t)t->cfg.batch_size * t->cfg.grad_accum; /* one rank's items per step */
    TANDEM_TRY(tandem_pipeline_create(&po, &t->pipe));
    TANDEM_TRY(tandem_dp_declare(&t->dp, &t->opt, t->join_later, t->model_dev, t->model_pool, t->next_pos));
    return tandem_validation_declare(&t->val, t->data_dev, t->model_dev, t->s);
}

/* The figures' buffers (before commit). On resume the loss history continues from the resumed
 * run's metrics.jsonl, cut at the checkpoint's step as `tandem plot` cuts it (figures.h). */
static tandem_status setup_figures(tandem_trainer *t) {
    const tandem_model *m = &t->model;
    t->fig_mel = t->val.pipe != NULL;
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

/* Graph mode (docs/TRAINING.md): on a CUDA model device with cuda_graphs, one graph handle per
 * ring slot, created here before the commit (captured at the first step that starts in that
 * slot). All micro-batches of a step are acquired before its graph runs, so grad_accum must
 * not exceed the ring's slots; otherwise the step runs eagerly. */
static tandem_status create_graphs(tandem_trainer *t, const tandem_model_dims *dims) {
    tandem_device_info info;
    TANDEM_TRY(tandem_device_get_info(t->model_dev, &info));
    t->lazy = info.backend == TANDEM_BACKEND_CUDA;
    if (!t->cfg.cuda_graphs || !tandem_graph_supported(t->model_dev)) return TANDEM_OK;
    int ord[TANDEM_CONFIG_MAX_DEVICES];
    if (tandem_config_device_list(t->cfg.model_devices, ord, TANDEM_CONFIG_MAX_DEVICES) > 1) {
        /* NCCL with several GPUs per process under graph capture can deadlock (docs/SCALING.md) */
        tandem_logf(TANDEM_LOG_WARN, "trainer: several model devices in one process: the step runs eagerly "
                    "(no CUDA graph) until replicas have run captured on real GPUs (docs/SCALING.md)");
        return TANDEM_OK;
    }
    const int slots = t->cfg.prefetch_buffer_size;
    if (dims->micro_batches > slots) {
        tandem_logf(TANDEM_LOG_INFO, "trainer: grad_accum %d > prefetch_buffer_size %d: the step runs "
                    "eagerly (a graph needs all its micro-batches in the ring at once)",
                    dims->micro_batches, slots);
        return TANDEM_OK;
    }
    /* length bucketing: one graph per ring slot and shape classes of the step's micro-batches */
    const int combos = tandem_run_buckets_combos(&t->rb, dims->micro_batches);
    if (combos == 0) {
        tandem_logf(TANDEM_LOG_INFO, "trainer: %d shape classes ^ grad_accum %d graphs per ring slot is over %d: "
                    "the step runs eagerly", t->rb.k, dims->micro_batches, TANDEM_RUN_BUCKETS_MAX_COMBOS);
        return TANDEM_OK;
    }
    t->graph = tandem_calloc((size_t)(slots * combos), sizeof *t->graph);
    if (!t->graph) return tandem_fail(TANDEM_E_NOMEM, "trainer: out of memory");
    t->n_graphs = slots, t->n_combos = combos;
    for (int k = 0; k < slots * combos; k++) TANDEM_TRY(tandem_graph_create(t->model_dev, &t->graph[k]));
    return TANDEM_OK;
}

/* The model into its arena, and what the loop needs around it (all before the commit). */
static tandem_status declare_model(tandem_trainer *t, const tandem_model_dims *dims) {
    t->model_declared = 1; /* a failed declare leaves its part for tandem_model_free */
    TANDEM_TRY(tandem_model_declare(&t->model, t->model_dev, t->model_pool, dims));
    TANDEM_TRY(tandem_step_timer_init(&t->timer, t->model_dev, dims->micro_batches));
    TANDEM_TRY(tandem_profile_ops_init(&t->prof, t->model_dev, t->s, t->opt.profile_ops));
    TANDEM_TRY(create_graphs(t, dims));
    TANDEM_TRY(tandem_dp_plan(&t->dp, &t->model, t->model_pool, t->cfg.dp_bucket_mb, t->cfg.dp_grad_dtype == 1));
    TANDEM_TRY(tandem_run_ckpt_create(&t->ck, &t->model, &t->cfg, &t->ix, t->s, t->resume_file || t->init_file));
    if (t->resume_file) tandem_run_ckpt_resumed(&t->ck, t->resume_file, t->st.step);
    t->ck.world_size = t->opt.world_size > 1 ? t->opt.world_size : 1;
    TANDEM_TRY(tandem_run_ckpt_freeze(&t->ck, t->resume_file, t->opt.freeze));
    TANDEM_TRY(tandem_freeze_spans(&t->model, t->ck.freeze, &t->frozen, &t->optim.n_frozen));
    if (t->ck.freeze_trained) /* a resumed fine-tune: what --init-from did not fill still trains */
        TANDEM_TRY(tandem_freeze_release_text(t->ck.freeze, t->ck.freeze_trained, t->model.n_flat, &t->frozen,
                                              &t->optim.n_frozen));
    t->optim.frozen = t->frozen;
    TANDEM_TRY(setup_figures(t));
    if (!t->writer) { /* data-parallel rank > 0: rank 0 writes the run directory */
        tandem_nvml_fields_open(&t->nvml, t->model_dev);
        return TANDEM_OK;
    }
    char mpath[1100];
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", t->cfg.out);
    if (t->opt.resume_dir) { /* rows past the resumed step were logged after that checkpoint: drop them */
        int64_t dropped = 0;
        TANDEM_TRY(tandem_metrics_cut_after(mpath, t->st.step, &dropped));
        if (dropped)
            tandem_logf(TANDEM_LOG_INFO, "resume: %s: %" PRId64 " line%s past step %" PRId64 " removed (logged "
                        "after the checkpoint; those steps run again)", mpath, dropped, dropped == 1 ? "" : "s",
                        t->st.step);
    }
    TANDEM_TRY(tandem_metrics_open(mpath, t->opt.resume_dir != NULL, &t->metrics));
    TANDEM_TRY(tandem_run_tb_open(&t->cfg, t->resume_file ? t->st.step : 0, &t->tb));
    tandem_nvml_fields_open(&t->nvml, t->model_dev); /* optional: never fails the run */
    return TANDEM_OK;
}

/* Commit every arena, then the parameters: initialised, or restored from the resume checkpoint. */
static tandem_status commit(tandem_trainer *t) {
    TANDEM_TRY(tandem_pool_commit(t->data_pool));
    TANDEM_TRY(tandem_pool_commit(t->model_pool));
    TANDEM_TRY(tandem_validation_commit(&t->val));
    TANDEM_TRY(tandem_model_init_params(&t->model, t->s, (uint64_t)t->cfg.seed));
    if (t->init_file) {
        tandem_init_fresh kept = {NULL, 0};
        tandem_status st = tandem_init_from_apply(t->init_file, t->init_path, &t->model, t->s, t->ck.load_buf,
                                                  t->ck.speakers_json, &kept);
        if (st == TANDEM_OK) st = tandem_freeze_release(t->ck.freeze, kept.span, kept.n, &t->frozen, &t->optim.n_frozen);
        if (st == TANDEM_OK && kept.n) st = tandem_freeze_ranges_text(kept.span, kept.n, &t->ck.freeze_trained);
        tandem_free(kept.span);
        TANDEM_TRY(st);
        t->optim.frozen = t->frozen;
        tandem_st_close(t->init_file);
        t->init_file = NULL;
    }
    if (t->resume_file) {
        TANDEM_TRY(tandem_run_ckpt_restore(&t->ck, t->resume_file));
        tandem_st_close(t->resume_file);
        t->resume_file = NULL;
    }
    TANDEM_TRY(tandem_train_state_put(&t->model, t->s, &t->st)); /* the device's counters */
    return t->join_later ? TANDEM_OK : tandem_dp_open(&t->dp, t->s, &t->model);
}

static tandem_status build(tandem_trainer *t) {
    tandem_model_dims dims;
    TANDEM_TRY(tandem_model_dims_from_config(&t->cfg, tandem_symbols_count(), &dims));
    if (t->opt.resume_dir && t->opt.init_from)
        return tandem_fail(TANDEM_E_INVALID, "--resume %s and --init-from %s: a resume continues a run, --init-from "
                           "starts a new one from a checkpoint's weights; give one of them", t->opt.resume_dir,
                           t->opt.init_from);
    /* An existing run directory is locked first (another run in it is the first thing to report);
       a new one is made only after the resume's checks and --init-from's checkpoint passed, so a
       refused start leaves nothing behind. */
    struct stat sb;
    const int made = stat(t->cfg.out, &sb) != 0 || !t->writer; /* rank > 0: no run directory */
    if (!made) TANDEM_TRY(tandem_run_dir_open(&t->rd, t->cfg.out, t->opt.resume_dir, t->opt.new_run));
    if (t->opt.resume_dir) TANDEM_TRY(tandem_resume_check_dir(t->opt.resume_dir, &t->cfg, t->opt.force_resume));
    if (t->opt.init_from)
        TANDEM_TRY(tandem_init_from_open(t->opt.init_from, &t->init_file, t->init_path, sizeof t->init_path));
    if (made && t->writer) TANDEM_TRY(tandem_run_dir_open(&t->rd, t->cfg.out, t->opt.resume_dir, t->opt.new_run));
    TANDEM_TRY(open_data(t));
    dims.vocab += (int)t->ix.n_speakers; /* speaker tokens follow the symbols (sym_emb rows) */
    tandem_run_buckets_dims(&t->rb, &dims); /* every shape class planned */
    tandem_optim_from_config(&t->cfg, &t->optim); /* after open_data: `epochs` may set max_steps */
    t->optim.dp_world = t->opt.world_size, t->optim.dp_rank = t->opt.rank;
    TANDEM_TRY(open_devices(t));
    TANDEM_TRY(declare_model(t, &dims));
    return commit(t);
}

tandem_status tandem_trainer_create_replica(const tandem_config *cfg, const tandem_trainer_options *o,
                                            int join_later, int data_gpu, int model_gpu, tandem_trainer **out) {
    *out = NULL;
    tandem_trainer *t = tandem_calloc(1, sizeof *t);
    if (!t) return tandem_fail(TANDEM_E_NOMEM, "trainer: out of memory");
    t->cfg = *cfg;
    t->rd.fd = -1;
    t->util_model = t->util_data = -1;
    if (o) t->opt = *o;
    else tandem_trainer_options_init(&t->opt);
    t->writer = t->opt.world_size <= 1 || t->opt.rank == 0;
    t->join_later = join_later;
    t->data_gpu = data_gpu, t->model_gpu = model_gpu;
    tandem_status st = build(t);
    t->opt.resume_dir = t->opt.cache_dir = t->opt.init_from = t->opt.freeze = t->opt.rendezvous = NULL;
    if (st != TANDEM_OK) {
        char why[1024]; /* destroy may set messages of its own */
        snprintf(why, sizeof why, "%s", tandem_last_error());
        t->discard = 1;
        tandem_trainer_destroy(t);
        return tandem_fail(st, "%s", why);
    }
    *out = t;
    return TANDEM_OK;
}

/* model_devices / data_devices: several model devices go to replicas.c; one entry is the
 * single-device path with that ordinal (the list wins over model_gpu / data_gpu). */
tandem_status tandem_trainer_create(const tandem_config *cfg, const tandem_trainer_options *o,
                                    tandem_trainer **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_trainer_create: NULL argument");
    *out = NULL;
    if (!cfg) return tandem_fail(TANDEM_E_INVALID, "tandem_trainer_create: NULL config");
    if (!cfg->train_data[0])
        return tandem_fail(TANDEM_E_INVALID, "config: key 'train_data': expected a dataset directory");
    int model[TANDEM_CONFIG_MAX_DEVICES], data[TANDEM_CONFIG_MAX_DEVICES];
    const int nm = tandem_config_device_list(cfg->model_devices, model, TANDEM_CONFIG_MAX_DEVICES);
    const int nd = tandem_config_device_list(cfg->data_devices, data, TANDEM_CONFIG_MAX_DEVICES);
    if (nm < 0 || nd < 0)
        return tandem_fail(TANDEM_E_INVALID, "config: key '%s': '%s' is not auto or a list of distinct CUDA "
                           "ordinals", nm < 0 ? "model_devices" : "data_devices",
                           nm < 0 ? cfg->model_devices : cfg->data_devices);
    if (nm > 1) return tandem_replicas_create(cfg, o, model, nm, data, nd, out);
    if (nd > 1)
        return tandem_fail(TANDEM_E_INVALID, "config: data_devices lists %d devices for %d model device: one data "
                           "device per model device at most", nd, nm > 0 ? nm : 1);
    return tandem_trainer_create_replica(cfg, o, 0, nd == 1 ? data[0] : cfg->data_gpu,
                                         nm == 1 ? model[0] : cfg->model_gpu, out);
}

void tandem_trainer_set_group(tandem_trainer *t, tandem_replicas *g, const char *desc) {
    t->group = g;
    snprintf(t->devices, sizeof t->devices, "%s", desc);
}

tandem_status tandem_trainer_join_local(tandem_trainer *const *ts, int n) {
    tandem_dp *dps[TANDEM_CONFIG_MAX_DEVICES];
    tandem_stream *ss[TANDEM_CONFIG_MAX_DEVICES];
    tandem_model *ms[TANDEM_CONFIG_MAX_DEVICES];
    for (int i = 0; i < n; i++) dps[i] = &ts[i]->dp, ss[i] = ts[i]->s, ms[i] = &ts[i]->model;
    return tandem_dp_open_local(dps, ss, ms, n);
}

void tandem_trainer_leave_group(tandem_trainer *t) {
    t->run_failed = 1;
    tandem_dp_close(&t->dp, 1);
}

void tandem_trainer_destroy(tandem_trainer *t) {
    if (!t) return;
    if (t->group) tandem_replicas_free(t->group); /* replicas 1..n-1 first: they are fed by t's peers */
    t->group = NULL;
    tandem_dp_close(&t->dp, t->discard || t->run_failed);
    if (t->pipe) {
        if (t->started) tandem_pipeline_stop(t->pipe);
        tandem_pipeline_destroy(t->pipe);
    }
    tandem_validation_free(&t->val);
    if (t->model_declared) tandem_model_free(&t->model);
    tandem_step_timer_free(&t->timer);
    tandem_profile_ops_free(&t->prof);
    for (int k = 0; t->graph && k < t->n_graphs * t->n_combos; k++) tandem_graph_destroy(t->graph[k]);
    tandem_free(t->graph);
    tandem_run_ckpt_free(&t->ck);
    tandem_free(t->frozen);
    if (t->resume_file) tandem_st_close(t->resume_file);
    if (t->init_file) tandem_st_close(t->init_file);
    if (t->metrics) tandem_metrics_close(t->metrics);
    tandem_tb_close(t->tb, t->discard || t->rd.unstarted);
    tandem_figures_free(t->fig);
    if (t->data_pool) tandem_pool_destroy(t->data_pool);
    if (t->model_pool) tandem_pool_destroy(t->model_pool);
    if (t->s) tandem_stream_destroy(t->s);
    tandem_roles_close(t->data_dev, t->model_dev);
    if (t->have_ix) tandem_text_index_free(&t->ix);
    if (t->discard || t->rd.unstarted) tandem_run_dir_discard(&t->rd);
    tandem_run_dir_close(&t->rd);
    tandem_free(t);
}

int tandem_trainer_op_times(const tandem_trainer *t, tandem_op_time *out, int cap, int *ops, double *total_ms,
                            double *span_ms, int *overflow) {
    const tandem_profile_ops *x = t ? &t->prof : NULL;
    const int done = x && x->done;
    if (ops) *ops = done ? x->timed : 0;
    if (total_ms) *total_ms = done ? x->total_ms : 0;
    if (span_ms) *span_ms = done ? x->span_ms : 0;
    if (overflow) *overflow = done ? x->overflow : 0;
    int n = 0;
    for (; done && out && n < cap && n < x->names; n++) out[n] = x->agg[n];
    return n;
}

/* ---- one step ------------------------------------------------------------------------------------ */

static double ms_since(uint64_t t0) { return (double)(tandem_now_ns() - t0) * 1e-6; }

/* The sampler position after the last row of a consumed batch. */
static void advance_pos(tandem_trainer *t, const tandem_batch_view *v) {
    if (t->rb.k) { /* length bucketing: the bucket sampler's (epoch, batch) after this batch */
        t->next_pos = v->next_pos;
        return;
    }
    tandem_sampler_pos p = v->pos[t->model.dims.batch - 1];
    p.index++;
    if (p.index >= (int64_t)t->ix.n_train) {
        p.index = 0;
        p.epoch++;
    }
    t->next_pos = p;
}

/* This step's gradients are overwritten by the non-finite test hook (step_eager). */
static int injects(const tandem_trainer *t) {
    const int64_t k = t->st.step - t->opt.nonfinite_from;
    return t->opt.nonfinite_count > 0 && k >= 0 && k < t->opt.nonfinite_count;
}

/* What micro-batch a queues on the model stream after its slot's wait: forward, loss, backward,
 * then the end of its timer region (the region's start was recorded by the ring's wait). */
static tandem_status micro_work(tandem_trainer *t, const tandem_model_batch *mb, int a) {
    TANDEM_TRY(tandem_step_timer_mark(&t->timer, t->s, a, 0));
    if (a == 0) TANDEM_TRY(tandem_train_begin(&t->model, t->s, &t->st));
    /* data-parallel: the last backward all-reduces its buckets as they fill, unless the test
       hook overwrites this step's gradients after it (then reduce queues them all) */
    if (a == t->model.dims.micro_batches - 1 && !injects(t)) tandem_dp_backward_begin(&t->dp);
    TANDEM_TRY(tandem_train_micro(&t->model, t->s, &t->optim, mb, a));
    return tandem_step_timer_mark(&t->timer, t->s, a, 1);
}

/* The update: norm, check, schedule, AdamW, the scalars' copies into pinned memory. */
static tandem_status update_work(tandem_trainer *t) {
    const int A = t->model.dims.micro_batches;
    TANDEM_TRY(tandem_step_timer_mark(&t->timer, t->s, A, 0));
    TANDEM_TRY(tandem_dp_reduce(&t->dp, t->s, &t->model)); /* data-parallel: sum across ranks first */
    TANDEM_TRY(tandem_train_update(&t->model, t->s, &t->optim, &t->st));
    return tandem_step_timer_mark(&t->timer, t->s, A, 1);
}

/* After a consumed micro-batch: the sampler position, the audio seconds, the slot released
 * (its "free" record queued on the model stream after the work that reads it). v->pos points
 * into the slot's metadata, which the producer rewrites once the slot is released: read first. */
static tandem_status consumed(tandem_trainer *t, const tandem_batch_view *v, double *audio_s) {
    advance_pos(t, v);
    *audio_s += v->audio_seconds;
    tandem_run_buckets_add(&t->rb, v, t->model.dims.batch);
    return tandem_pipeline_release(t->pipe, v->slot);
}

/* Eager: micro-batch by micro-batch (acquire with the timer's events around the stream's wait,
 * queue the work, release), then the update. The test hook's NaN gradients go in before it. */
static tandem_status step_eager(tandem_trainer *t, double *wait, double *audio_s) {
    const int A = t->model.dims.micro_batches;
    for (int a = 0; a < A; a++) {
        if (a > 0 && t->stop) return tandem_fail(TANDEM_E_STATE, "stopped between micro-batches");
        tandem_batch_view v;
        tandem_model_batch mb;
        tandem_event *pre, *start; /* around the stream's wait for the slot (step_timer.h) */
        tandem_step_timer_wait_events(&t->timer, a, &pre, &start);
        TANDEM_TRY(tandem_run_acquire_timed(t->pipe, &v, &mb, wait, &t->stop, pre, start));
        tandem_status st = micro_work(t, &mb, a);
        tandem_status rs = consumed(t, &v, audio_s);
        TANDEM_TRY(st != TANDEM_OK ? st : rs);
    }
    if (injects(t)) TANDEM_TRY(tandem_op_fill(t->s, t->model.grads, NAN));
    t->updating = 1;
    return update_work(t);
}

/* The step's work between begin and end of a capture into g (nothing runs). Every wait for a
 * slot precedes the graph, so micro-batch a > 0 starts its timer region (pre = start, no wait)
 * with record nodes inside the graph. A failure ends the capture all the same. */
static tandem_status capture(tandem_trainer *t, tandem_graph *g, const tandem_model_batch *mb) {
    /* bf16: a forward casts the weights when they changed outside a step (initialisation,
       restore); done now, so the graph holds only the every-step cast of the update */
    if (t->model.wcopy_stale) TANDEM_TRY(tandem_model_cast_weights(&t->model, t->s));
    TANDEM_TRY(tandem_graph_begin(g, t->s));
    tandem_status st = TANDEM_OK;
    for (int a = 0; a < t->model.dims.micro_batches && st == TANDEM_OK; a++) {
        tandem_event *pre, *start;
        tandem_step_timer_wait_events(&t->timer, a, &pre, &start);
        if (a > 0 && pre) st = tandem_event_record(pre, t->s);
        if (a > 0 && start && st == TANDEM_OK) st = tandem_event_record(start, t->s);
        if (st == TANDEM_OK) st = micro_work(t, &mb[a], a);
    }
    if (st == TANDEM_OK) st = update_work(t);
    char why[1024];
    snprintf(why, sizeof why, "%s", tandem_last_error());
    tandem_status es = tandem_graph_end(g, t->s);
    if (st != TANDEM_OK) return tandem_fail(st, "%s", why);
    return es;
}

/* Every micro-batch of a graph step acquired: their waits for "slot filled" queued on the
 * model stream, the first one's timer region starting before the first wait (pre) and after
 * the last (start), so the waits all count as the step's data wait. */
static tandem_status acquire_all(tandem_trainer *t, tandem_batch_view *v, tandem_model_batch *mb, double *wait) {
    const int A = t->model.dims.micro_batches;
    tandem_event *pre0, *start0;
    tandem_step_timer_wait_events(&t->timer, 0, &pre0, &start0);
    for (int a = 0; a < A; a++)
        TANDEM_TRY(tandem_run_acquire_timed(t->pipe, &v[a], &mb[a], wait, &t->stop, a == 0 ? pre0 : NULL,
                                            a == A - 1 ? start0 : NULL));
    for (int a = 1; a < A; a++)
        if (v[a].slot != (v[0].slot + a) % t->n_graphs)
            return tandem_fail(TANDEM_E_STATE, "trainer: micro-batch %d of a step in ring slot %d; expected "
                               "slot %d (the ring hands slots out in order)", a, v[a].slot,
                               (v[0].slot + a) % t->n_graphs);
    return TANDEM_OK;
}

/* Graph mode: every micro-batch acquired, the step's graph for that first slot launched
 * (captured first if it never was), then the slots released (their "slot free" records queued
 * after the graph). The ring's slots are used in order, so a step starting in slot k always
 * reads slots k, k+1, ...: the graph of slot k holds exactly those tensors (one graph per slot).
 * Why the ring's waits and records stay ordinary stream operations at the graph's boundary
 * rather than external event nodes inside it: the host may hand a slot back to the producer only
 * once the "free" record that follows its last reader is queued, and the producer's stream then
 * waits on that record. Queued eagerly after cuGraphLaunch, that is exactly the eager path's
 * order, with no reliance on when a graph's record node counts as "the latest record" for a
 * wait issued on another stream; recording inside a graph captured once would also release the
 * slot at capture time, before anything ran. The cost: two non-blocking driver calls per
 * micro-batch. The step timer's marks inside the step are external record nodes. */
static tandem_status step_graph(tandem_trainer *t, double *wait, double *audio_s) {
    const int A = t->model.dims.micro_batches;
    tandem_batch_view v[TANDEM_CONFIG_MAX_PREFETCH];
    tandem_model_batch mb[TANDEM_CONFIG_MAX_PREFETCH];
    tandem_status st = acquire_all(t, v, mb, wait);
    if (st == TANDEM_E_STATE && t->stop) return st; /* stopped waiting: nothing to release */
    tandem_graph *g = st == TANDEM_OK ? t->graph[v[0].slot * t->n_combos + tandem_run_buckets_combo(&t->rb, v, A)]
                                      : NULL;
    if (st == TANDEM_OK && !g->ready) st = capture(t, g, mb);
    if (st == TANDEM_OK) t->updating = 1, st = tandem_graph_launch(g, t->s);
    if (st == TANDEM_OK) tandem_step_timer_replayed(&t->timer); /* no host time inside regions */
    for (int a = 0; a < A && st == TANDEM_OK; a++) st = consumed(t, &v[a], audio_s);
    return st;
}

/* Whether the step that makes `done` steps needs its scalars on the host: always on a host
 * model device (free: it has run already); on CUDA only when it is logged, validated,
 * checkpointed, profiled, the first or the last of the run, or a test-hook step. */
static int needs_read(const tandem_trainer *t, int64_t done, int64_t end, int first) {
    const tandem_config *c = &t->cfg;
    const int64_t k = done - 1 - t->opt.nonfinite_from;
    return !t->lazy || first || done % c->log_every == 0 || done >= c->max_steps || done >= end ||
           done == t->prof_at || (t->val.pipe && done % c->val_every == 0) ||
           (c->checkpoint_every > 0 && done % c->checkpoint_every == 0) ||
           (t->opt.nonfinite_count > 0 && k >= 0 && k < t->opt.nonfinite_count);
}

/* Read the scalars of the last step the device took (synchronises the model stream). */
static tandem_status read_back(tandem_trainer *t) {
    TANDEM_TRY(tandem_train_collect(&t->model, t->s, &t->optim, &t->st, &t->last));
    t->unread = 0;
    return TANDEM_OK;
}

/* The step's metrics: scalars from the last read-back (a step not read repeats them), device
 * times when read (tm; NULL: not measured, -1). */
static void fill_metrics(tandem_trainer *t, tandem_step_metrics *m, double step_ms, double wait, double audio_s,
                         const tandem_step_times *tm) {
    const tandem_model_dims *d = &t->model.dims;
    const double samples = (double)d->batch * d->micro_batches * (t->dp.world > 1 ? t->dp.world : 1); /* global */
    const tandem_step_result *res = &t->last;
    memset(m, 0, sizeof *m);
    m->step = t->st.step;
    m->total_steps = t->cfg.max_steps;
    m->loss = res->loss;
    m->l1 = res->l1;
    m->stop_bce = res->stop_bce;
    m->ga = res->ga;
    m->lr = tandem_optim_lr(&t->optim, t->st.step - 1);
    m->grad_norm = res->grad_norm;
    m->skipped = t->unread ? 0 : res->skipped;
    m->step_ms = step_ms;
    m->samples_per_s = samples / (step_ms * 1e-3);
    m->x_realtime = audio_s / (step_ms * 1e-3);
    m->real_frames_pct = tandem_run_buckets_step(&t->rb);
    m->frames = t->rb.last_frames;
    m->ring_slots = t->cfg.prefetch_buffer_size;
    m->val_l1 = m->val_stop_bce = m->eta_s = -1;
    m->eval_stop_within = m->eval_len_ratio = m->eval_dtw_l1 = m->eval_text_dep = m->eval_spec_var =
        m->eval_ident = m->eval_ms = -1;
    m->data_wait_ms = tm ? tm->data_wait_ms : wait;
    m->data_wait_device_ms = tm ? tm->data_wait_device_ms : -1;
    m->model_busy_pct = tm ? tm->busy_pct : -1;
    m->model_occupied_pct = tm ? tm->occupied_pct : -1;
    m->model_device_name = t->model_name;
    m->data_device_name = t->data_name;
    m->model_gpu_util_pct = t->util_model;
    m->data_gpu_util_pct = t->util_data;
    m->nvml = t->util_model >= 0 || t->util_data >= 0;
}

/* One optimizer step: its micro-batches and update (one graph launch, or eagerly: a test-hook
 * or profiled step always), then, when this step needs it, the read-back (the step's one
 * synchronisation) and its device times. */
static tandem_status one_step(tandem_trainer *t, tandem_step_metrics *m, int64_t end, int first) {
    const uint64_t t0 = tandem_now_ns();
    double wait = 0, audio_s = 0;
    const tandem_sampler_pos pos0 = t->next_pos;
    const int64_t done = t->st.step + 1;
    const int inject = injects(t);
    const int profiled = done == t->prof_at && t->prof.cap > 0;
    const int read = needs_read(t, done, end, first);
    if (t->interval_steps == 0) t->interval_t0 = t0;
    /* a measured step starts on an idle stream (the timer's anchor, step_timer.h): the steps
     * queued since the last read-back are drained first, their time kept out of this step's
     * device figures (on a real H100 it had counted as idle: busy 18 % for a device-bound step) */
    double drain_ms = 0;
    if (read && t->lazy && t->unread) {
        TANDEM_TRY(tandem_stream_sync(t->s));
        drain_ms = ms_since(t0);
    }
    TANDEM_TRY(tandem_step_timer_begin(&t->timer, t->s));
    if (profiled) TANDEM_TRY(tandem_profile_ops_begin(&t->prof));
    tandem_status st = t->n_graphs && !inject && !profiled ? step_graph(t, &wait, &audio_s)
                                                           : step_eager(t, &wait, &audio_s);
    if (st != TANDEM_OK) {
        t->next_pos = pos0; /* no step: a checkpoint now starts at this step's first batch */
        return st;
    }
    t->updating = 0;
    t->st.step = done; /* the device's counter did the same; the rest is read back */
    t->unread = 1;
    if (t->dp.world > 1) /* the step's boundary in the global stream, not this rank's last item */
        t->next_pos = tandem_dp_step_pos(&t->dp, ++t->dp_steps, (int64_t)t->cfg.batch_size * t->cfg.grad_accum,
                                         t->ix.n_train);
    if (read) TANDEM_TRY(read_back(t));
    double step_ms = ms_since(t0);
    tandem_step_times tm;
    /* the timer's events have completed only after a read-back */
    if (read) TANDEM_TRY(tandem_step_timer_read(&t->timer, step_ms - drain_ms, wait, &tm));
    if (profiled) TANDEM_TRY(tandem_profile_ops_end(&t->prof));
    t->interval_steps++;
    t->row_steps = 0;
    if (read) { /* the row: the mean over the steps since the previous row */
        t->row_steps = t->interval_steps;
        step_ms = ms_since(t->interval_t0) / (double)t->interval_steps;
        t->interval_steps = 0;
    }
    fill_metrics(t, m, step_ms, wait, audio_s, read ? &tm : NULL);
    return TANDEM_OK;
}

/* ---- accounting, logging, the callback ------------------------------------------------------------- */

/* Data-device busy % and ring occupancy, from the pipeline's counters. */
static void pipeline_fields(tandem_trainer *t, tandem_step_metrics *m) {
    tandem_pipeline_stats ps;
    tandem_pipeline_get_stats(t->pipe, &ps);
    m->data_busy_pct = ps.data_busy_pct;
    m->ring_occupancy = ps.mean_ready_slots;
}

/* What the verdict's rules read besides the steps' figures. */
static void verdict_context(const tandem_trainer *t, const tandem_step_metrics *m, tandem_verdict_context *c) {
    memset(c, 0, sizeof *c);
    c->cuda = t->timer.use_events;
    c->num_workers = t->cfg.num_workers;
    c->ring_slots = t->cfg.prefetch_buffer_size;
    c->batch_size = t->cfg.batch_size;
    c->bf16 = t->cfg.precision == TANDEM_PRECISION_BF16;
    c->graphs = t->n_graphs > 0;
    c->data_busy_pct = m->data_busy_pct;
    c->ring_occupancy = m->ring_occupancy;
    c->step_cv = m->step_cv;
}

/* The step into the summary and the step-time window. */
static void account(tandem_trainer *t, run_totals *r, tandem_step_metrics *m) {
    tandem_trainer_summary *S = &r->S;
    if (S->steps_run == 0) {
        S->loss_first = m->loss;
        S->l1_first = m->l1;
    }
    S->steps_run++;
    S->loss_last = m->loss;
    S->l1_last = m->l1;
    /* a row covers row_steps steps (lazy mode: the queued ones since the previous row; 0 for a
     * queued step itself, accounted with the next row) */
    if (t->row_steps > 0 && S->steps_run > 2) /* past warm-up: the first rows carry capture and start-up */
        tandem_step_timer_push(&t->timer, m->step_ms);
    m->step_cv = tandem_step_timer_cv(&t->timer);
    if (S->steps_run > 2) { /* past warm-up */
        r->sum_step += m->step_ms * (double)t->row_steps;
        r->sum_samples += (double)t->model.dims.batch * t->model.dims.micro_batches * (t->dp.world > 1 ? t->dp.world : 1) *
                          (double)t->row_steps;
        r->n_meas++;
        if (m->model_busy_pct >= 0) { /* measured: a read-back step on CUDA, every step on the host */
            r->sum_step_meas += m->step_ms;
            r->sum_wait += m->data_wait_ms;
            r->sum_busy += m->model_busy_pct;
            r->sum_wait_dev += m->data_wait_device_ms;
            r->sum_occupied += m->model_occupied_pct;
            tandem_verdict_window_push(&r->vw, m);
            r->n_dev++;
        }
    }
    pipeline_fields(t, m);
    tandem_verdict_context c;
    verdict_context(t, m, &c);
    tandem_verdict_window_compute(&r->vw, &c, &m->verdict);
}

/* The ETA, then the caller's callback. */
static void notify(tandem_trainer *t, const run_totals *r, tandem_step_metrics *m) {
    if (!t->opt.on_step) return;
    const double el = ms_since(r->t0) * 1e-3;
    const int64_t n = r->S.steps_run;
    m->eta_s = n > 0 ? el / (double)n * (double)(t->cfg.max_steps - m->step) : -1;
    t->opt.on_step(t->opt.on_step_user, m);
}

/* max_nonfinite skipped steps in a row end the run (the step still reaches the callback). */
static tandem_status check_nonfinite(tandem_trainer *t, const run_totals *r, tandem_step_metrics *m) {
    if (t->st.skipped_in_row < t->cfg.max_nonfinite) return TANDEM_OK;
    pipeline_fields(t, m);
    m->step_cv = tandem_step_timer_cv(&t->timer);
    notify(t, r, m);
    return tandem_fail(TANDEM_E_INVALID,
                       "training: %" PRId64 " non-finite steps in a row (loss %g, gradient norm %g at "
                       "step %" PRId64 "); limit max_nonfinite = %d — lower lr or check the data",
                       t->st.skipped_in_row, m->loss, m->grad_norm, m->step - 1, t->cfg.max_nonfinite);
}

/* The free-running evaluation's fields of the validation just run (runtime/run/val_speak.h). */
static void eval_fields(const tandem_trainer *t, tandem_metrics *x) {
    const tandem_val_speak *e = &t->val.speak;
    if (!e->syn) return;
    tandem_metrics_set(x, "eval_stop_within", e->last.within_frac);
    tandem_metrics_set(x, "eval_len_ratio", e->last.median_ratio);
    tandem_metrics_set(x, "eval_dtw_l1", e->last.dtw_l1);
    tandem_metrics_set(x, "eval_text_dep", e->last.text_dependence);
    tandem_metrics_set(x, "eval_spec_var", e->last.spec_var);
    tandem_metrics_set(x, "eval_ident", e->last.ident_frac);
    tandem_metrics_set(x, "eval_ms", e->seconds * 1e3);
}

static void eval_metrics(const tandem_trainer *t, tandem_step_metrics *m) {
    const tandem_val_speak *e = &t->val.speak;
    if (!e->syn) return;
    m->eval_stop_within = e->last.within_frac;
    m->eval_len_ratio = e->last.median_ratio;
    m->eval_dtw_l1 = e->last.dtw_l1;
    m->eval_text_dep = e->last.text_dependence;
    m->eval_spec_var = e->last.spec_var;
    m->eval_ident = e->last.ident_frac;
    m->eval_ms = e->seconds * 1e3;
}

/* A metrics.jsonl line for the step (NVML fields of both devices when present). */
static tandem_status write_metrics(tandem_trainer *t, const tandem_step_metrics *m, int validated) {
    tandem_metrics *x = t->metrics;
    if (!x) return TANDEM_OK; /* data-parallel rank > 0 */
    tandem_metrics_begin(x, m->step);
    tandem_metrics_set(x, "loss", m->loss);
    tandem_metrics_set(x, "l1", m->l1);
    tandem_metrics_set(x, "stop_bce", m->stop_bce);
    tandem_metrics_set(x, "ga", m->ga);
    tandem_metrics_set(x, "lr", m->lr);
    tandem_metrics_set(x, "grad_norm", m->grad_norm);
    tandem_metrics_set(x, "step_ms", m->step_ms);
    tandem_metrics_set(x, "data_wait_ms", m->data_wait_ms);
    tandem_metrics_set(x, "data_wait_device_ms", m->data_wait_device_ms);
    tandem_metrics_set(x, "model_busy_pct", m->model_busy_pct);
    tandem_metrics_set(x, "model_occupied_pct", m->model_occupied_pct);
    tandem_metrics_set(x, "data_busy_pct", m->data_busy_pct);
    tandem_metrics_set(x, "samples_per_s", m->samples_per_s);
    tandem_metrics_set(x, "x_realtime", m->x_realtime);
    tandem_metrics_set(x, "real_frames_pct", m->real_frames_pct);
    tandem_metrics_set(x, "step_cv", m->step_cv);
    tandem_metrics_set_int(x, "skipped", m->skipped);
    if (validated) {
        tandem_metrics_set(x, "val_l1", m->val_l1);
        tandem_metrics_set(x, "val_stop_bce", m->val_stop_bce);
        eval_fields(t, x);
    }
    tandem_nvml_fields_add(&t->nvml, x, "model", t->model_dev);
    if (t->data_dev != t->model_dev) tandem_nvml_fields_add(&t->nvml, x, "data", t->data_dev);
    t->util_model = tandem_nvml_fields_util(&t->nvml, t->model_dev);
    t->util_data = t->data_dev != t->model_dev ? tandem_nvml_fields_util(&t->nvml, t->data_dev) : t->util_model;
    return tandem_metrics_end(x);
}

/* Validation when due (every val_every steps and at the last), then the metrics line when due
 * (every log_every steps, the last, a validated or a skipped one); the figure's points are the
 * logged ones. */
static tandem_status validate_and_log(tandem_trainer *t, run_totals *r, tandem_step_metrics *m) {
    const int64_t done = m->step, max_steps = t->cfg.max_steps;
    int validated = 0;
    if (t->val.pipe && !t->val.failed && (done % t->cfg.val_every == 0 || done == max_steps)) {
        tandem_status vs = tandem_validation_run(&t->val, &t->model, t->s, &t->optim, t->fig_mel ? t->fig : NULL,
                                                 done, &m->val_l1, &m->val_stop_bce);
        TANDEM_TRY(tandem_run_end_validation(&t->val, vs, done)); /* else a warning: validation off */
        validated = vs == TANDEM_OK;
    }
    if (validated) {
        eval_metrics(t, m);
        if (t->writer)
            TANDEM_TRY(tandem_run_end_aux(tandem_run_ckpt_best(&t->ck, &t->st, t->next_pos, m->val_l1),
                                          "the best checkpoint (" TANDEM_CKPT_BEST_NAME ")", done));
        tandem_run_tb_samples(&t->tb, t->val.speak.samples_dir, done, t->val.speak.n_tests);
        if (r->S.val_l1_first < 0) r->S.val_l1_first = m->val_l1;
        r->S.val_l1_last = m->val_l1;
    }
    if (done % t->cfg.log_every == 0 || done == max_steps || validated || m->skipped) {
        tandem_step_metrics line = *m; /* real frames over the line's window, in both files */
        line.real_frames_pct = tandem_run_buckets_window(&t->rb);
        TANDEM_TRY(write_metrics(t, &line, validated));
        tandem_run_tb_step(&t->tb, &line, validated);
        m->logged = 1;
        tandem_figures_add_loss(t->fig, done, tandem_metrics_as_written(m->loss));
        tandem_figures_add_terms(t->fig, done, tandem_metrics_as_written(m->l1),
                                 tandem_metrics_as_written(m->stop_bce), tandem_metrics_as_written(m->ga));
        if (validated) tandem_figures_add_val(t->fig, done, tandem_metrics_as_written(m->val_l1));
    }
    return TANDEM_OK;
}

/* ---- checkpoints ------------------------------------------------------------------------------------ */

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
    if (!t->writer) return TANDEM_OK; /* data-parallel: rank 0 writes */
    TANDEM_TRY(tandem_run_ckpt_save(&t->ck, &t->st, t->next_pos));
    write_figures(t);
    tandem_run_tb_figures(&t->tb, t->cfg.out, t->st.step);
    return TANDEM_OK;
}

/* ---- run ------------------------------------------------------------------------------------------ */

/* Start the pipelines; a fresh run validates the initial parameters too (a metrics line for
 * step 0 with only val_l1 / val_stop_bce): the reference a convergence check compares the end
 * with. */
static tandem_status run_begin(tandem_trainer *t, run_totals *r) {
    TANDEM_TRY(tandem_pipeline_start(t->pipe));
    t->started = 1;
    TANDEM_TRY(tandem_validation_start(&t->val));
    if (t->val.pipe && t->st.step == 0) {
        double vl1 = 0, vbce = 0;
        TANDEM_TRY(tandem_validation_run(&t->val, &t->model, t->s, &t->optim, t->fig_mel ? t->fig : NULL, 0,
                                         &vl1, &vbce));
        r->S.val_l1_first = r->S.val_l1_last = vl1;
        if (t->metrics) { /* data-parallel rank > 0 has none */
            tandem_metrics_begin(t->metrics, 0);
            tandem_metrics_set(t->metrics, "val_l1", vl1);
            tandem_metrics_set(t->metrics, "val_stop_bce", vbce);
            eval_fields(t, t->metrics);
            TANDEM_TRY(tandem_metrics_end(t->metrics));
        }
        tandem_run_tb_initial(&t->tb, vl1, vbce);
        tandem_run_tb_samples(&t->tb, t->val.speak.samples_dir, 0, t->val.speak.n_tests);
        tandem_figures_add_val(t->fig, 0, tandem_metrics_as_written(vl1));
    }
    r->t0 = tandem_now_ns();
    return TANDEM_OK;
}

static tandem_status run_loop(tandem_trainer *t, run_totals *r) {
    const int64_t max_steps = t->cfg.max_steps;
    const int64_t end = t->opt.run_steps > 0 ? t->st.step + t->opt.run_steps : max_steps;
    t->prof_at = end < max_steps ? end : max_steps;
    while (t->st.step < max_steps && t->st.step < end && !t->stop) {
        if (t->dp.world > 1) { /* data-parallel: a stop request on any rank stops every rank here */
            int stop = 0;
            TANDEM_TRY(tandem_dp_agree(&t->dp, t->s, t->stop_req, &stop));
            if (stop) {
                t->stop = 1;
                break;
            }
        }
        tandem_step_metrics m;
        tandem_status st = one_step(t, &m, end, r->S.steps_run == 0);
        if (st == TANDEM_E_STATE && t->stop) break; /* stopped while the ring was empty */
        TANDEM_TRY(st);
        TANDEM_TRY(check_nonfinite(t, r, &m));
        account(t, r, &m);
        TANDEM_TRY(validate_and_log(t, r, &m));
        notify(t, r, &m);
        r->saved_at_end = 0;
        if (t->cfg.checkpoint_every > 0 && m.step % t->cfg.checkpoint_every == 0) {
            TANDEM_TRY(save_checkpoint(t));
            r->saved_at_end = 1;
        }
    }
    return TANDEM_OK;
}

static tandem_status save_final(void *user) {
    tandem_trainer *t = user;
    if (t->unread) TANDEM_TRY(read_back(t)); /* lazy mode: the counters of the steps queued */
    return save_checkpoint(t);
}

static const char *last_path(void *user) { return tandem_checkpoint_last_path(((tandem_trainer *)user)->ck.writer); }

/* The run's verdict and the data path's stage times into the summary. */
static void summary_verdict(const tandem_trainer *t, const tandem_pipeline_stats *pst, const run_totals *r,
                            tandem_trainer_summary *S) {
    tandem_step_metrics m;
    memset(&m, 0, sizeof m);
    m.data_busy_pct = pst->data_busy_pct;
    m.ring_occupancy = pst->mean_ready_slots;
    m.step_cv = tandem_step_timer_cv(&t->timer);
    tandem_verdict_context c;
    verdict_context(t, &m, &c);
    tandem_verdict_window_compute(&r->vw, &c, &S->verdict);
    S->stages = TANDEM_STAGE_COUNT < 8 ? TANDEM_STAGE_COUNT : 8;
    for (int i = 0; i < S->stages; i++) {
        const tandem_stage_stat *x = &pst->stages[i];
        snprintf(S->stage_name[i], sizeof S->stage_name[i], "%s", tandem_stage_name((tandem_stage)i));
        S->stage_count[i] = (double)x->count;
        S->stage_total_ms[i] = x->total_ms;
        S->stage_mean_ms[i] = x->count ? x->total_ms / (double)x->count : 0;
    }
    S->wall_ms = pst->wall_ms;
    S->real_frames_pct = tandem_run_buckets_run(&t->rb);
}

/* The final checkpoint (after a failure too: run_end.h), the pipelines stopped (with the run's error,
 * if any), the summary. */
static tandem_status run_end(tandem_trainer *t, run_totals *r, tandem_status st, tandem_trainer_summary *sum) {
    if (st == TANDEM_OK && t->unread) st = read_back(t); /* stopped on a step not read back */
    if (st == TANDEM_OK && !r->saved_at_end && r->S.steps_run > 0) st = save_checkpoint(t);
    if (st != TANDEM_OK && t->writer && !r->saved_at_end && r->S.steps_run > 0) /* keep the steps trained */
        st = tandem_run_end_failed(st, tandem_run_end_unsaved(st, t->st.skipped_in_row >= t->cfg.max_nonfinite,
                                                              t->updating), t->st.step, save_final, t, last_path);
    t->rd.unstarted = t->st.step == 0; /* nothing trained: leave nothing that blocks a retry */
    char why[1024] = "";
    if (st != TANDEM_OK) {
        t->run_failed = 1;
        snprintf(why, sizeof why, "%s", tandem_last_error());
        tandem_pipeline_abort(t->pipe, st, why);
    }
    tandem_status ps = tandem_pipeline_stop(t->pipe);
    t->started = 0;
    tandem_validation_stop(&t->val, st, why);
    if (st == TANDEM_OK && ps != TANDEM_OK) st = ps;
    tandem_trainer_summary *S = &r->S;
    tandem_pipeline_stats pst;
    tandem_pipeline_get_stats(t->pipe, &pst);
    S->last_step = t->st.step;
    S->skipped = t->st.skipped;
    S->stopped_by_request = t->stop != 0;
    S->busy_from_events = t->timer.use_events;
    S->steps_measured = r->n_meas;
    if (r->n_meas > 0) S->samples_per_s = r->sum_samples / (r->sum_step * 1e-3);
    if (r->n_dev > 0) { /* device measurements: the steps read back */
        S->data_wait_pct = 100.0 * r->sum_wait / r->sum_step_meas;
        S->model_busy_pct = r->sum_busy / (double)r->n_dev;
        S->data_wait_device_pct = 100.0 * r->sum_wait_dev / r->sum_step_meas;
        S->model_occupied_pct = r->sum_occupied / (double)r->n_dev;
    }
    summary_verdict(t, &pst, r, S);
    S->data_busy_pct = pst.data_busy_pct;
    S->step_cv = tandem_step_timer_cv(&t->timer);
    snprintf(S->checkpoint, sizeof S->checkpoint, "%s", tandem_checkpoint_last_path(t->ck.writer));
    if (sum) *sum = *S;
    if (st != TANDEM_OK && why[0]) return tandem_fail(st, "%s", why);
    return st;
}

tandem_status tandem_trainer_run(tandem_trainer *t, tandem_trainer_summary *sum) {
    if (t && t->group) return tandem_replicas_run(t->group, sum);
    return tandem_trainer_run_replica(t, sum);
}

tandem_status tandem_trainer_run_replica(tandem_trainer *t, tandem_trainer_summary *sum) {
    if (sum) memset(sum, 0, sizeof *sum);
    if (!t) return tandem_fail(TANDEM_E_INVALID, "trainer run: NULL");
    run_totals r;
    memset(&r, 0, sizeof r);
    snprintf(r.S.devices, sizeof r.S.devices, "%s", t->devices);
    r.S.first_step = t->st.step;
    r.S.val_l1_first = r.S.val_l1_last = -1;
    tandem_status st = run_begin(t, &r);
    if (st == TANDEM_OK) st = run_loop(t, &r);
    return run_end(t, &r, st, sum);
}

/* ---- start-up report ------------------------------------------------------------------------- */

tandem_status tandem_trainer_startup_report(const tandem_trainer *t, tandem_trainer_startup *r) {
    if (!t || !r) return tandem_fail(TANDEM_E_INVALID, "tandem_trainer_startup_report: NULL argument");
    memset(r, 0, sizeof *r);
    snprintf(r->devices, sizeof r->devices, "%s", t->devices);
    tandem_index_summary(&t->ix, &t->cfg, r);
    r->n_val = t->val.pipe ? t->val.vix.n_train : 0;
    tandem_pool_stats ds, ms;
    tandem_pool_get_stats(t->data_pool, &ds);
    tandem_pool_get_stats(t->model_pool, &ms);
    r->data_arena_mib = (double)ds.arena_bytes / (1 << 20);
    r->model_arena_mib = (double)ms.arena_bytes / (1 << 20);
    r->ring_slots = t->cfg.prefetch_buffer_size;
    r->start_step = t->st.step;
    r->n_buckets = t->rb.k;
    for (int c = 0; c < t->rb.k; c++) r->bucket_frames[c] = (int)t->rb.frames[c];
    r->bucket_real_pct = 100.0 * t->rb.expected;
    r->gemm_fallbacks = tandem_dev_gemm_fallbacks(t->model_dev, r->gemm_fallback_list, sizeof r->gemm_fallback_list);
    return TANDEM_OK;
}
