/* capacity.c — the data side's capacity against the model's consumption (see capacity.h). */
#include "runtime/run/capacity.h"

#include <stdio.h>
#include <string.h>

#include "platform/os/os.h"
#include "platform/os/strbuf.h"

static void finish(tandem_capacity *c) {
    const int par = c->threads < c->cores ? c->threads : c->cores;
    c->cpu_utt_s = c->cpu_ms_per_utt > 0 ? 1000.0 * (par > 0 ? par : 1) / c->cpu_ms_per_utt : 0;
    c->utt_s = c->cpu_utt_s;
    if (c->dev_ms_per_utt > 0) {
        c->dev_utt_s = 1000.0 / c->dev_ms_per_utt;
        if (c->dev_utt_s < c->utt_s) c->utt_s = c->dev_utt_s;
    }
}

static void init(tandem_capacity *c, int threads) {
    memset(c, 0, sizeof *c);
    c->cores = tandem_cpu_count();
    if (c->cores < 1) c->cores = 1;
    c->threads = threads > 0 ? threads : c->cores;
    c->dev_ms_per_utt = c->dev_utt_s = c->measured_utt_s = -1;
}

void tandem_capacity_from_stats(const tandem_pipeline_stats *s, int batch, int threads, int host_device,
                                tandem_capacity *c) {
    init(c, threads);
    c->host_device = host_device;
    const tandem_stage_stat *st = s->stages;
    const double files = (double)st[TANDEM_STAGE_DECODE].count;
    const double cpu = st[TANDEM_STAGE_READ].total_ms + st[TANDEM_STAGE_DECODE].total_ms +
                       st[TANDEM_STAGE_RESAMPLE].total_ms;
    const double utts = (double)s->batches * batch;
    if (files > 0) c->cpu_ms_per_utt = cpu / files;
    if (cpu > 0) c->cpu_resample_pct = 100.0 * st[TANDEM_STAGE_RESAMPLE].total_ms / cpu;
    if (utts > 0 && s->data_busy_ms > 0) {
        c->dev_ms_per_utt = s->data_busy_ms / utts;
        c->dev_resample_pct = 100.0 * st[TANDEM_STAGE_DEVICE_RESAMPLE].total_ms / s->data_busy_ms;
    }
    if (utts > 0) c->utt_seconds = s->audio_seconds / utts;
    if (s->wall_ms > 0) c->measured_utt_s = (double)s->consumed * batch * 1000.0 / s->wall_ms;
    finish(c);
}

void tandem_capacity_from_cpu(double cpu_ms, double cpu_resample_ms, int files, double seconds, int threads,
                              tandem_capacity *c) {
    init(c, threads);
    if (files > 0) {
        c->cpu_ms_per_utt = cpu_ms / files;
        c->utt_seconds = seconds / files;
    }
    if (cpu_ms > 0) c->cpu_resample_pct = 100.0 * cpu_resample_ms / cpu_ms;
    finish(c);
}

void tandem_capacity_model(tandem_capacity *c, const tandem_config *cfg, double measured_samples_s) {
    if (measured_samples_s > 0) {
        c->model_samples_s = measured_samples_s;
        snprintf(c->model_source, sizeof c->model_source, "measured");
        return;
    }
    tandem_cost_estimate e;
    if (!cfg || tandem_cost_estimate_step(cfg, NULL, &e) != TANDEM_OK) {
        c->model_samples_s = 0;
        snprintf(c->model_source, sizeof c->model_source, "unknown (the step cost model could not price this config)");
        return;
    }
    c->model_samples_s = e.samples_per_s;
    snprintf(c->model_source, sizeof c->model_source,
             "modelled on an %s by the step cost model (%.2f ms per step of %d), not measured", e.gpu, e.graph_ms,
             cfg->batch_size * cfg->grad_accum);
}

double tandem_capacity_headroom(const tandem_capacity *c) {
    return c->model_samples_s > 0 ? c->utt_s / c->model_samples_s : 0;
}

/* What to change when the data side is the limit, by where its time goes. */
static void advise(const tandem_capacity *c, tandem_strbuf *b) {
    const int cpu_bound = c->dev_utt_s < 0 || c->cpu_utt_s <= c->dev_utt_s;
    const double need = c->model_samples_s / (c->utt_s > 0 ? c->utt_s : 1);
    if (cpu_bound) {
        const int cores_needed = (int)(c->cores * need + 0.999);
        tandem_strbuf_printf(b, "  advice: the CPU side (read + decode%s) is the limit: about %d cores would keep up "
                              "(%d now; num_workers %d loader threads)", c->cpu_resample_pct > 1 ? " + CPU resample" : "",
                              cores_needed, c->cores, c->threads);
        if (c->threads < c->cores) tandem_strbuf_printf(b, "; raise num_workers to %d (0 = one per core)", c->cores);
        if (c->cpu_resample_pct > 20)
            tandem_strbuf_printf(b, "; %.0f %% of it is libsamplerate on rates the data device does not resample: "
                                  "convert the corpus to 22050 Hz or one of 48000/44100/32000/24000/16000/8000 Hz once "
                                  "(e.g. sox in.wav -r 22050 out.wav)", c->cpu_resample_pct);
        tandem_strbuf_printf(b, "\n");
    } else {
        tandem_strbuf_printf(b, "  advice: the data device is the limit (%.1f ms per utterance, %.0f %% of it resampling)"
                              ": %s%s\n", c->dev_ms_per_utt, c->dev_resample_pct,
                              c->host_device ? "give the data role a GPU (data_gpu), or more cores" : "a faster data GPU",
                              c->dev_resample_pct > 20 ? "; or resample the corpus to 22050 Hz once (e.g. sox in.wav -r "
                              "22050 out.wav), which removes the resampling kernel" : "");
    }
}

size_t tandem_capacity_format(const tandem_capacity *c, char *buf, size_t cap) {
    tandem_strbuf b = {buf, cap, 0};
    if (buf && cap) buf[0] = 0;
    const double per_core = c->cpu_ms_per_utt > 0 ? 1000.0 / c->cpu_ms_per_utt : 0;
    tandem_strbuf_printf(&b, "  CPU: %.2f ms per utterance on one core (read + decode + CPU resample) = %.0f "
                          "utterances/s, %.0f audio-s/s per core; %.0f utterances/s, %.0f audio-s/s on %d loader "
                          "threads over %d cores\n", c->cpu_ms_per_utt, per_core, per_core * c->utt_seconds,
                          c->cpu_utt_s, c->cpu_utt_s * c->utt_seconds, c->threads, c->cores);
    if (c->dev_utt_s >= 0)
        tandem_strbuf_printf(&b, "  data device: %.2f ms per utterance (%.0f %% resampling) = %.0f utterances/s, "
                              "%.0f audio-s/s%s\n", c->dev_ms_per_utt, c->dev_resample_pct, c->dev_utt_s,
                              c->dev_utt_s * c->utt_seconds, c->host_device ? " (a host device: on the same cores)" : "");
    else
        tandem_strbuf_printf(&b, "  data device: not measured here (`tandem pipeline` measures it)\n");
    tandem_strbuf_printf(&b, "  data side: %.0f utterances/s, %.0f audio-s/s (%.2f s per utterance)", c->utt_s,
                          c->utt_s * c->utt_seconds, c->utt_seconds);
    if (c->measured_utt_s >= 0) tandem_strbuf_printf(&b, "; this run delivered %.0f utterances/s", c->measured_utt_s);
    tandem_strbuf_printf(&b, "\n");
    if (c->model_samples_s <= 0) {
        tandem_strbuf_printf(&b, "  model: %s\n", c->model_source);
        return b.len;
    }
    const double h = tandem_capacity_headroom(c);
    tandem_strbuf_printf(&b, "  model: %.0f samples/s (%s)\n", c->model_samples_s, c->model_source);
    tandem_strbuf_printf(&b, "  headroom: %.2fx: %s\n", h,
                          h >= 1.0 ? "the data side keeps up" : "the data side is the limit: the model would wait");
    if (h < 1.0) advise(c, &b);
    return b.len;
}
