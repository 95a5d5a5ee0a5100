/* validation.c — the held-out set's pipeline and loss (see validation.h). */
#include "runtime/run/validation.h"

#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "runtime/core/dev.h"
#include "runtime/run/dataset.h"

tandem_status tandem_validation_index(tandem_validation *v, const tandem_config *cfg, const char *cache_dir) {
    memset(v, 0, sizeof *v);
    const int heldout = cfg->val_fraction > 0 && !cfg->val_data[0];
    if ((!cfg->val_data[0] && !heldout) || cfg->val_every <= 0) return TANDEM_OK;
    if (heldout) TANDEM_TRY(tandem_run_open_heldout(cfg, cache_dir, &v->vix));
    else TANDEM_TRY(tandem_run_open_index(cfg, cfg->val_data, cache_dir, &v->vix));
    v->have_index = 1;
    if (heldout && v->vix.n_train)
        tandem_logf(TANDEM_LOG_INFO, "validation: %u of train_data's utterances held out (val_fraction %g, seed "
                    "%lld; first '%s'), not trained on", v->vix.n_train, cfg->val_fraction, (long long)cfg->seed,
                    v->vix.strings + v->vix.utts[v->vix.train[0]].id);
    if (v->vix.n_train == 0) return TANDEM_OK;
    const uint32_t B = (uint32_t)cfg->batch_size, want = (uint32_t)cfg->val_batches * B;
    if (v->vix.n_train > want) v->vix.n_train = want;
    uint32_t g = v->vix.n_train, b = B; /* gcd(n, B) */
    while (b) {
        uint32_t r = g % b;
        g = b;
        b = r;
    }
    v->batches = v->vix.n_train == want ? cfg->val_batches : (int)(v->vix.n_train / g);
    v->vcfg = *cfg;
    v->vcfg.shuffle = 0; /* validation visits the held-out set in order */
    v->vcfg.prefetch_buffer_size = 2;
    if (heldout) { /* the pipeline reads the held-out share's wavs from train_data */
        snprintf(v->vcfg.val_data, sizeof v->vcfg.val_data, "%s", cfg->train_data);
        v->vcfg.val_fraction = 0;
    }
    return TANDEM_OK;
}

tandem_status tandem_validation_declare(tandem_validation *v, tandem_device *data_dev,
                                        tandem_device *model_dev, tandem_stream *s) {
    if (v->batches == 0) return TANDEM_OK;
    TANDEM_TRY(tandem_pool_create(data_dev, "val_data", 0, &v->data_pool));
    TANDEM_TRY(tandem_pool_create(model_dev, "val_model", 0, &v->model_pool));
    tandem_pipeline_options po;
    tandem_pipeline_options_init(&po);
    po.cfg = &v->vcfg;
    po.ix = &v->vix;
    po.data_dir = v->vcfg.val_data;
    po.data_dev = data_dev;
    po.model_dev = model_dev;
    po.data_pool = v->data_pool;
    po.model_pool = v->model_pool;
    po.consumer_stream = s;
    po.force_staged = v->vcfg.force_staged;
    TANDEM_TRY(tandem_pipeline_create(&po, &v->pipe)); /* start position {0, 0} */
    return tandem_val_speak_create(&v->speak, &v->vix, v->vcfg.val_data, model_dev, &v->vcfg);
}

tandem_status tandem_validation_commit(tandem_validation *v) {
    if (!v->pipe) return TANDEM_OK;
    TANDEM_TRY(tandem_pool_commit(v->data_pool));
    return tandem_pool_commit(v->model_pool);
}

tandem_status tandem_validation_start(tandem_validation *v) {
    if (!v->pipe) return TANDEM_OK;
    TANDEM_TRY(tandem_pipeline_start(v->pipe));
    v->started = 1;
    return TANDEM_OK;
}

/* The mel figure's utterance: row 0 of the validation's first batch (the fixed subset's first
 * utterance), target from the slot and teacher-forced prediction from the forward just run
 * (eval synchronised the stream; the slot is still held). */
static tandem_status take_mel(tandem_validation *v, const tandem_model *m, tandem_stream *s,
                              const tandem_batch_view *bv, tandem_figures *fig, int64_t step) {
    const size_t bytes = (size_t)m->dims.frames * TANDEM_FIGURES_N_MELS * sizeof(float);
    TANDEM_TRY(tandem_dev_download(s, tandem_figures_mel_target(fig), bv->t->mels, 0, bytes));
    TANDEM_TRY(tandem_dev_download(s, tandem_figures_mel_pred(fig), m->mel_out, 0, bytes));
    TANDEM_TRY(tandem_dev_download(s, &v->fig_len, bv->t->frame_lengths, 0, sizeof v->fig_len));
    TANDEM_TRY(tandem_stream_sync(s));
    if (v->fig_len < 1 || v->fig_len > m->dims.frames)
        return tandem_fail(TANDEM_E_INTERNAL, "validation batch: frame length %d of row 0, expected "
                           "1..%d", (int)v->fig_len, m->dims.frames);
    return tandem_figures_set_mel(fig, v->fig_len, step);
}

tandem_status tandem_validation_run(tandem_validation *v, tandem_model *m, tandem_stream *s,
                                    const tandem_optim *o, tandem_figures *fig, int64_t step,
                                    double *l1, double *stop_bce) {
    double sl = 0, sb = 0, wait = 0;
    for (int i = 0; i < v->batches; i++) {
        tandem_batch_view bv;
        tandem_model_batch mb;
        TANDEM_TRY(tandem_run_acquire(v->pipe, &bv, &mb, &wait, NULL));
        double a, b;
        TANDEM_TRY(tandem_train_eval(m, s, o, &mb, &a, &b));
        if (i == 0 && fig) TANDEM_TRY(take_mel(v, m, s, &bv, fig, step));
        TANDEM_TRY(tandem_pipeline_release(v->pipe, bv.slot));
        sl += a;
        sb += b;
    }
    *l1 = sl / v->batches;
    *stop_bce = sb / v->batches;
    /* the mel figure's utterance is the subset's first: its free-running panel */
    int gen = 0;
    TANDEM_TRY(tandem_val_speak_run(&v->speak, s, m->params, step,
                                    fig ? tandem_figures_mel_gen(fig) : NULL, &gen));
    return fig && v->speak.syn ? tandem_figures_set_gen(fig, gen) : TANDEM_OK;
}

void tandem_validation_stop(tandem_validation *v, tandem_status st, const char *why) {
    if (!v->pipe || !v->started) return;
    if (st != TANDEM_OK) tandem_pipeline_abort(v->pipe, st, why);
    tandem_pipeline_stop(v->pipe);
    v->started = 0;
}

void tandem_validation_free(tandem_validation *v) {
    tandem_val_speak_free(&v->speak);
    if (v->pipe) {
        if (v->started) tandem_pipeline_stop(v->pipe);
        tandem_pipeline_destroy(v->pipe);
    }
    if (v->data_pool) tandem_pool_destroy(v->data_pool);
    if (v->model_pool) tandem_pool_destroy(v->model_pool);
    if (v->have_index || v->vix.utts) tandem_text_index_free(&v->vix);
    memset(v, 0, sizeof *v);
}
