/* plan.c — the memory plan of a training run without a device (tandem_plan_report,
 * runtime/tandem_train.h): planning-only pools (runtime/core/pool_internal.h) that know the
 * target backend's alignment but own no memory, the arenas' tensors declared exactly as a run
 * declares them (runtime/data/plan_layout.h for the feature path, the ring and the pinned
 * staging; runtime/model/model.h for the model; runtime/run/synth.h for the free-running
 * evaluation's own arena on the model device, made when validation runs), then each pool's
 * report; with `buckets` > 1 the shape classes training would choose (run_buckets.h). */
#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/strbuf.h"
#include "runtime/core/config.h"
#include "runtime/core/pool_internal.h"
#include "runtime/data/plan_layout.h"
#include "runtime/model/model.h"
#include "runtime/run/dataset.h"
#include "runtime/run/plan.h"
#include "runtime/run/run_buckets.h"
#include "runtime/run/synth.h"
#include "runtime/text/symbols.h"
#include "tandem.h"

void tandem_plan_options_init(tandem_plan_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->backend = TANDEM_BACKEND_CUDA;
    o->speakers = -1;
}

/* The speaker rows a run of cfg allocates: want >= 0 as given, else the train_data index's speaker
 * count (the text cache makes it one read after the first). why: how it was found. */
static int plan_speakers(const tandem_config *cfg, int want, char *why, size_t cap) {
    if (want >= 0) {
        snprintf(why, cap, "as given");
        return want;
    }
    if (!cfg->train_data[0]) {
        snprintf(why, cap, "no train_data: none counted");
        return 0;
    }
    tandem_text_index ix;
    if (tandem_run_open_index(cfg, cfg->train_data, NULL, &ix) != TANDEM_OK) {
        snprintf(why, cap, "train_data not indexed, none counted: %.200s", tandem_last_error());
        return 0;
    }
    const int n = (int)ix.n_speakers;
    snprintf(why, cap, "from train_data %.200s", cfg->train_data);
    tandem_text_index_free(&ix);
    return n;
}

enum { PLAN_POOLS = 3 };

typedef struct plan_parts {
    tandem_pool *pool[PLAN_POOLS]; /* data, model, evaluation (NULL without validation) */
    tandem_layout layout;
    tandem_model model;
    tandem_synth *eval; /* the evaluation arena's declarations (val_speak.h) */
    int speakers;       /* speaker embedding rows */
    char speakers_why[320];
} plan_parts;

/* Both arenas declared: the data device's feature path, the model device's ring and model. */
static tandem_status declare(const tandem_config *cfg, tandem_backend backend, plan_parts *p) {
    TANDEM_TRY(tandem_pool_create_offline("data", backend, (size_t)cfg->data_gpu_memory << 20, &p->pool[0]));
    TANDEM_TRY(tandem_pool_create_offline("model", backend, (size_t)cfg->model_gpu_memory << 20, &p->pool[1]));
    TANDEM_TRY(tandem_layout_declare(cfg, p->pool[0], p->pool[1], &p->layout));
    /* the model joins its arena: parameters, optimizer state, activations at cfg.precision */
    tandem_model_dims dims;
    TANDEM_TRY(tandem_model_dims_from_config(cfg, tandem_symbols_count(), &dims));
    dims.vocab += p->speakers; /* speaker rows follow the symbols' (as the trainer's build) */
    TANDEM_TRY(tandem_model_declare_plan(&p->model, backend, p->pool[1], &dims));
    TANDEM_TRY(tandem_model_staging_declare(&dims, &p->layout.staging)); /* its pinned block */
    /* validation's free-running evaluation: a B = 1 forward-only model with a key/value cache
     * in a pool of its own on the model device (validation.c, val_speak.h) */
    if ((!cfg->val_data[0] && !(cfg->val_fraction > 0)) || cfg->val_every <= 0) return TANDEM_OK;
    TANDEM_TRY(tandem_pool_create_offline("synth", backend, 0, &p->pool[2]));
    return tandem_synth_declare_plan(cfg, backend, p->pool[2], (uint32_t)p->speakers, &p->eval);
}

static void release(plan_parts *p) {
    tandem_synth_close(p->eval);
    tandem_model_free(&p->model);
    tandem_layout_release(&p->layout);
    for (int i = 0; i < PLAN_POOLS; i++) tandem_pool_destroy(p->pool[i]);
}

static void heading(tandem_strbuf *o, const tandem_config *cfg, tandem_backend backend, const char *name,
                    const plan_parts *p) {
    static const char *const sizes[] = {"tiny", "base", "custom"};
    tandem_strbuf_printf(o,
        "plan for %s: model_size %s (d_model %d, layers %d, heads %d, r %d), batch %d,\n"
        "  max_text %d, max_frames %d, ring of %d slots, %s; target %s (alignment %zu B)\n\n",
        name, sizes[cfg->model_size], cfg->d_model, cfg->layers, cfg->heads, cfg->reduction, cfg->batch_size,
        cfg->max_text, cfg->max_frames, cfg->prefetch_buffer_size,
        cfg->precision == TANDEM_PRECISION_BF16 ? "bf16" : "fp32",
        backend == TANDEM_BACKEND_HOST ? "host devices" : "CUDA devices", tandem_pool_backend_alignment(backend));
    tandem_strbuf_printf(o, "embedding sym_emb.weight [%d, %d]: %d symbols + %d speaker rows (%s)\n\n",
                         tandem_symbols_count() + p->speakers, cfg->d_model, tandem_symbols_count(), p->speakers,
                         p->speakers_why);
}

/* Plan every arena (an arena over budget is reported, not fatal: its error joins *errors) and
 * write every report. Returns TANDEM_E_BUDGET when an arena does not fit. */
static tandem_status report(const tandem_config *cfg, plan_parts *p, tandem_strbuf *o) {
    static const char *const roles[PLAN_POOLS] = {
        "data device", "model device", "model device, free-running evaluation at validation"};
    char errors[PLAN_POOLS][1024];
    tandem_status st = TANDEM_OK;
    for (int i = 0; i < PLAN_POOLS; i++) {
        errors[i][0] = 0;
        if (p->pool[i] && tandem_pool_plan(p->pool[i]) != TANDEM_OK) {
            snprintf(errors[i], sizeof errors[i], "%s", tandem_last_error());
            st = TANDEM_E_BUDGET;
        }
    }
    size_t total = 0;
    for (int i = 0; i < PLAN_POOLS && p->pool[i]; i++) {
        char rep[4096];
        tandem_pool_report(p->pool[i], rep, sizeof rep);
        tandem_strbuf_printf(o, "[%s] %s\n", roles[i], rep);
        tandem_pool_stats s;
        tandem_pool_get_stats(p->pool[i], &s);
        total += s.arena_bytes;
    }
    char pinned[16384]; /* every staging block and buffer: about 8 KiB for a 16-slot ring */
    tandem_layout_pinned_report(&p->layout, pinned, sizeof pinned);
    tandem_strbuf_printf(o, "%s\n", pinned);
    tandem_strbuf_printf(o, "one GPU in both roles needs %s arenas on it: %.2f MiB\n",
                         p->pool[2] ? "the three" : "both", (double)total / (1 << 20));
    tandem_strbuf_printf(o, "(the model arena holds the ring and the model: parameters, optimizer state, %s "
                         "activations)\n", cfg->precision == TANDEM_PRECISION_BF16 ? "bf16/f32" : "f32");
    if (st == TANDEM_OK) return TANDEM_OK;
    char all[PLAN_POOLS * 1024 + PLAN_POOLS] = "";
    for (int i = 0; i < PLAN_POOLS; i++)
        if (errors[i][0]) snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s",
                                   all[0] ? "\n" : "", errors[i]);
    return tandem_fail(st, "%s", all);
}

/* Length bucketing's classes as training chooses them (run_buckets.h: the training set's
 * lengths from its file headers) with their real-frame share. A plan never fails for them: a
 * dataset that does not open is named instead. */
static void buckets_line(const tandem_config *cfg, tandem_strbuf *o) {
    if (cfg->buckets <= 1) return;
    if (!cfg->train_data[0]) {
        tandem_strbuf_printf(o, "length bucketing: buckets %d; the classes come from the training set's lengths "
                             "(set train_data to see them)\n", cfg->buckets);
        return;
    }
    char line[320];
    if (tandem_run_buckets_of_data(cfg, NULL, line, sizeof line) == TANDEM_OK)
        tandem_strbuf_printf(o, "length bucketing: %s\n", line);
    else
        tandem_strbuf_printf(o, "length bucketing: buckets %d; classes unknown, train data '%s': %s\n", cfg->buckets,
                             cfg->train_data, tandem_last_error());
}

/* Several model devices (model_devices, replicas.h): which data device feeds which model device
 * and what each listed GPU holds — a data arena per replica it feeds, the model arenas of its
 * replica. An automatic data device is known only at start (the lowest GPU not listed). */
static void replicas_lines(const tandem_config *cfg, tandem_backend backend, const plan_parts *p, tandem_strbuf *o) {
    int model[TANDEM_CONFIG_MAX_DEVICES], data[TANDEM_CONFIG_MAX_DEVICES];
    const int nm = tandem_config_device_list(cfg->model_devices, model, TANDEM_CONFIG_MAX_DEVICES);
    const int nd = tandem_config_device_list(cfg->data_devices, data, TANDEM_CONFIG_MAX_DEVICES);
    if (nm <= 1) return;
    if (backend == TANDEM_BACKEND_HOST) {
        tandem_strbuf_printf(o, "\nmodel_devices lists %d devices: refused on host devices (one rank per process "
                             "under mpirun instead, docs/SCALING.md)\n", nm);
        return;
    }
    size_t arena[PLAN_POOLS] = {0};
    for (int i = 0; i < PLAN_POOLS; i++) {
        tandem_pool_stats s;
        if (p->pool[i]) tandem_pool_get_stats(p->pool[i], &s), arena[i] = s.arena_bytes;
    }
    const double mib = 1.0 / (1 << 20), model_mib = (double)(arena[1] + arena[2]) * mib;
    tandem_strbuf_printf(o, "\n%d model devices in one process, data-parallel (global batch %d x %d x %d):\n", nm, nm,
                         cfg->grad_accum, cfg->batch_size);
    for (int i = 0; i < nm; i++) {
        if (nd > 0)
            tandem_strbuf_printf(o, "  replica %d: model CUDA %d (%.2f MiB) fed by data CUDA %d (%.2f MiB)\n", i,
                                 model[i], model_mib, data[i % nd], (double)arena[0] * mib);
        else
            tandem_strbuf_printf(o, "  replica %d: model CUDA %d (%.2f MiB) fed by the data device chosen at start "
                                 "(%.2f MiB)\n", i, model[i], model_mib, (double)arena[0] * mib);
    }
    for (int k = 0; k < nd; k++) { /* a data device's arenas: one per replica it feeds, plus a model's */
        int feeds = 0, also_model = 0;
        for (int i = 0; i < nm; i++) feeds += data[i % nd] == data[k], also_model |= model[i] == data[k];
        tandem_strbuf_printf(o, "  CUDA %d holds %d data arena%s%s: %.2f MiB\n", data[k], feeds, feeds == 1 ? "" : "s",
                             also_model ? " and a model's" : "",
                             ((double)arena[0] * feeds + (also_model ? model_mib / mib : 0)) * mib);
    }
    if (nd == 0)
        tandem_strbuf_printf(o, "  data device: the lowest GPU not among model_devices, or each replica's own "
                             "model device when all are listed (%d data arenas in all)\n", nm);
}

tandem_status tandem_plan_report(const tandem_config *cfg, const tandem_plan_options *o, char *buf,
                                 size_t cap, size_t *len) {
    if (len) *len = 0;
    if (buf && cap) buf[0] = 0;
    if (!cfg || (!buf && cap)) return tandem_fail(TANDEM_E_INVALID, "tandem_plan_report: NULL argument");
    tandem_plan_options def;
    tandem_plan_options_init(&def);
    if (!o) o = &def;
    const tandem_backend backend = o->backend == TANDEM_BACKEND_HOST ? TANDEM_BACKEND_HOST : TANDEM_BACKEND_CUDA;
    plan_parts p;
    memset(&p, 0, sizeof p);
    p.speakers = plan_speakers(cfg, o->speakers, p.speakers_why, sizeof p.speakers_why);
    tandem_status st = declare(cfg, backend, &p);
    tandem_strbuf text = {buf, cap, 0};
    if (st == TANDEM_OK) {
        heading(&text, cfg, backend, o->config_name ? o->config_name : "config", &p);
        buckets_line(cfg, &text); /* before the arenas: an over-budget message stays the last error */
        st = report(cfg, &p, &text);
        replicas_lines(cfg, backend, &p, &text);
        if (len) *len = text.len;
    }
    release(&p);
    return st;
}

tandem_status tandem_plan_arena_bytes(const tandem_config *cfg, tandem_backend backend, size_t bytes[2]) {
    bytes[0] = bytes[1] = 0;
    plan_parts p;
    memset(&p, 0, sizeof p);
    p.speakers = plan_speakers(cfg, -1, p.speakers_why, sizeof p.speakers_why);
    tandem_status st = declare(cfg, backend == TANDEM_BACKEND_HOST ? TANDEM_BACKEND_HOST : TANDEM_BACKEND_CUDA, &p);
    for (int i = 0; st == TANDEM_OK && i < 2; i++) {
        tandem_status pst = tandem_pool_plan(p.pool[i]); /* over budget: its message, the size still known */
        tandem_pool_stats s;
        tandem_pool_get_stats(p.pool[i], &s);
        bytes[i] = s.arena_bytes;
        if (pst != TANDEM_OK) st = pst;
    }
    release(&p);
    return st;
}
