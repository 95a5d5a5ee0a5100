/* run_buckets.c — length bucketing in a training run (see run_buckets.h). */
#include "runtime/run/run_buckets.h"

#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"

tandem_status tandem_run_buckets_open(tandem_run_buckets *rb, const tandem_config *cfg, const tandem_text_index *ix) {
    memset(rb, 0, sizeof *rb);
    uint32_t k = 0;
    TANDEM_TRY(tandem_buckets_for_index(ix, cfg->buckets, cfg->max_frames, cfg->reduction, NULL, rb->frames, &k,
                                        &rb->expected));
    rb->k = (int)k;
    if (rb->k == 0) return TANDEM_OK;
    char list[128];
    size_t n = 0;
    for (int c = 0; c < rb->k && n < sizeof list; c++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%u", c ? ", " : "", rb->frames[c]);
    tandem_logf(TANDEM_LOG_INFO, "trainer: length bucketing: %d shape classes of [%s] mel frames (from %d asked); "
                "%.1f %% of the planned frames real over the training set", rb->k, list, cfg->buckets,
                100.0 * rb->expected);
    return TANDEM_OK;
}

void tandem_run_buckets_dims(const tandem_run_buckets *rb, tandem_model_dims *dims) {
    dims->n_classes = rb->k;
    for (int c = 0; c < rb->k; c++) dims->class_frames[c] = (int)rb->frames[c];
}

void tandem_run_buckets_pipeline(const tandem_run_buckets *rb, tandem_pipeline_options *po) {
    po->n_buckets = rb->k;
    po->bucket_frames = rb->k ? rb->frames : NULL;
}

int tandem_run_buckets_combos(const tandem_run_buckets *rb, int A) {
    int64_t n = 1;
    for (int a = 0; a < A && rb->k > 1; a++)
        if ((n *= rb->k) > TANDEM_RUN_BUCKETS_MAX_COMBOS) return 0;
    return (int)n;
}

int tandem_run_buckets_combo(const tandem_run_buckets *rb, const tandem_batch_view *v, int A) {
    int key = 0;
    for (int a = A - 1; a >= 0 && rb->k > 1; a--) {
        int c = 0;
        while (c + 1 < rb->k && (uint32_t)v[a].frames != rb->frames[c]) c++;
        key = key * rb->k + c;
    }
    return key;
}

void tandem_run_buckets_add(tandem_run_buckets *rb, const tandem_batch_view *v, int B) {
    rb->real += v->real_frames;
    rb->planned += (int64_t)B * v->frames;
    rb->last_frames = v->frames;
}

static double pct(int64_t real, int64_t planned) { return planned > 0 ? 100.0 * (double)real / (double)planned : 0; }

double tandem_run_buckets_step(tandem_run_buckets *rb) {
    const double p = pct(rb->real, rb->planned);
    rb->win_real += rb->real, rb->win_planned += rb->planned;
    rb->run_real += rb->real, rb->run_planned += rb->planned;
    rb->real = rb->planned = 0;
    return p;
}

double tandem_run_buckets_window(tandem_run_buckets *rb) {
    const double p = pct(rb->win_real, rb->win_planned);
    rb->win_real = rb->win_planned = 0;
    return p;
}

double tandem_run_buckets_run(const tandem_run_buckets *rb) { return pct(rb->run_real, rb->run_planned); }
