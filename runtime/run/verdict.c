/* verdict.c — input-bound / launch-/host-bound / device-bound from the steps' figures
 * (tandem_train.h; the rules are docs/TRAINING.md "Verdicts"). */
#include "runtime/run/verdict.h"

#include <stdio.h>
#include <string.h>

const char *tandem_bound_name(tandem_bound b) {
    switch (b) {
    case TANDEM_BOUND_INPUT: return "input-bound";
    case TANDEM_BOUND_LAUNCH: return "launch-/host-bound";
    case TANDEM_BOUND_DEVICE: return "device-bound";
    default: return "unknown";
    }
}

/* Median of the last min(n, TANDEM_VERDICT_WINDOW) values of x (insertion sort of a copy). */
static double median(const double *x, int n) {
    double v[TANDEM_VERDICT_WINDOW];
    const int m = n < TANDEM_VERDICT_WINDOW ? n : TANDEM_VERDICT_WINDOW;
    for (int i = 0; i < m; i++) {
        double y = x[n - m + i];
        int j = i;
        for (; j > 0 && v[j - 1] > y; j--) v[j] = v[j - 1];
        v[j] = y;
    }
    return m == 0 ? 0 : m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

static void input_advice(const tandem_verdict_context *c, tandem_verdict *v) {
    if (v->data_busy_pct >= 80.0)
        snprintf(v->advice, sizeof v->advice, "the data device is saturated (busy %.0f %%): lower its work per "
                 "batch (batch_size %d, max_frames) or give the data role a faster GPU", v->data_busy_pct, c->batch_size);
    else if (c->step_cv > 0.25 && c->ring_slots < 16)
        snprintf(v->advice, sizeof v->advice, "ring depth: steps vary (cv %.2f) and the ring holds %.1f of %d "
                 "slots on average; raise prefetch_buffer_size to %d", c->step_cv, c->ring_occupancy, c->ring_slots,
                 c->ring_slots * 2 > 16 ? 16 : c->ring_slots * 2);
    else if (c->num_workers > 0)
        snprintf(v->advice, sizeof v->advice, "loader threads: the data device is busy only %.0f %%, so the "
                 "loaders feed it too slowly; raise num_workers (now %d) or 0 = one per CPU core",
                 v->data_busy_pct, c->num_workers);
    else
        snprintf(v->advice, sizeof v->advice, "loader threads: already one per CPU core and the data device is "
                 "busy only %.0f %%: decoding is CPU-bound; pre-decode the audio or use more cores", v->data_busy_pct);
}

void tandem_verdict_compute(const double *step_ms, const double *data_wait_ms, const double *data_wait_device_ms,
                            const double *busy_pct, const double *occupied_pct, int n,
                            const tandem_verdict_context *ctx, tandem_verdict *v) {
    memset(v, 0, sizeof *v);
    v->steps = n < TANDEM_VERDICT_WINDOW ? n : TANDEM_VERDICT_WINDOW;
    /* the data side's busy time counts batches still running when it is read: may pass 100 */
    v->data_busy_pct = ctx->data_busy_pct > 100.0 ? 100.0 : ctx->data_busy_pct;
    if (n <= 0) {
        snprintf(v->why, sizeof v->why, "no step measured yet");
        return;
    }
    v->step_ms = median(step_ms, n);
    v->data_wait_ms = median(data_wait_ms, n);
    v->data_wait_device_ms = median(data_wait_device_ms, n);
    v->model_busy_pct = median(busy_pct, n);
    v->model_occupied_pct = median(occupied_pct, n);
    v->wait_pct = v->step_ms > 0 ? 100.0 * v->data_wait_ms / v->step_ms : 0;
    if (v->wait_pct > TANDEM_VERDICT_INPUT_WAIT_PCT) {
        v->bound = TANDEM_BOUND_INPUT;
        int k = snprintf(v->why, sizeof v->why, "median data wait %.2f ms is %.1f %% of the median step %.1f ms "
                         "(> %.0f %%)", v->data_wait_ms, v->wait_pct, v->step_ms, TANDEM_VERDICT_INPUT_WAIT_PCT);
        if (ctx->cuda && k > 0 && (size_t)k < sizeof v->why)
            snprintf(v->why + k, sizeof v->why - (size_t)k, "; %.2f ms of it the model stream stalled on the copies",
                     v->data_wait_device_ms);
        input_advice(ctx, v);
    } else if (ctx->cuda && v->model_busy_pct < TANDEM_VERDICT_LAUNCH_BUSY_PCT) {
        v->bound = TANDEM_BOUND_LAUNCH;
        snprintf(v->why, sizeof v->why, "median model busy %.0f %% of the step (< %.0f %%) while the step's work "
                 "regions span %.0f %%: the device waits for the host to launch its kernels", v->model_busy_pct,
                 TANDEM_VERDICT_LAUNCH_BUSY_PCT, v->model_occupied_pct);
        if (ctx->graphs)
            snprintf(v->advice, sizeof v->advice, "the step is already one CUDA graph launch: raise batch_size (now "
                     "%d) so each step does more device work per host round trip", ctx->batch_size);
        else
            snprintf(v->advice, sizeof v->advice, "CUDA graphs: the step runs eagerly (cuda_graphs: false, or "
                     "grad_accum above prefetch_buffer_size); capture it (one launch instead of hundreds), or raise "
                     "batch_size (now %d) so each launch does more work", ctx->batch_size);
    } else {
        v->bound = TANDEM_BOUND_DEVICE;
        snprintf(v->why, sizeof v->why, "data wait %.1f %% of the step (<= %.0f %%), model busy %.0f %%: the model "
                 "device's own work sets the pace", v->wait_pct, TANDEM_VERDICT_INPUT_WAIT_PCT, v->model_busy_pct);
        if (ctx->cuda && !ctx->bf16)
            snprintf(v->advice, sizeof v->advice, "precision: bf16 halves the model device's memory traffic "
                     "(precision: bf16)");
        else
            snprintf(v->advice, sizeof v->advice, "the model device is the limit: a faster model GPU, or a smaller "
                     "batch_size (now %d) if memory, not speed, is the concern", ctx->batch_size);
    }
}

void tandem_verdict_window_push(tandem_verdict_window *w, const tandem_step_metrics *m) {
    const int i = (int)(w->n++ % TANDEM_VERDICT_WINDOW);
    w->step[i] = m->step_ms;
    w->wait[i] = m->data_wait_ms;
    w->wait_dev[i] = m->data_wait_device_ms;
    w->busy[i] = m->model_busy_pct;
    w->occupied[i] = m->model_occupied_pct;
}

void tandem_verdict_window_compute(const tandem_verdict_window *w, const tandem_verdict_context *ctx,
                                   tandem_verdict *out) {
    /* the medians do not depend on the ring's order */
    const int n = (int)(w->n < TANDEM_VERDICT_WINDOW ? w->n : TANDEM_VERDICT_WINDOW);
    tandem_verdict_compute(w->step, w->wait, w->wait_dev, w->busy, w->occupied, n, ctx, out);
}
