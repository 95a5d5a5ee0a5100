/* validate.c — a training setup checked before training (tandem_validate, tandem_validate.h):
 * config rules across keys, the dataset's index and an audio probe, the memory plan against the
 * budgets and the devices, the devices themselves (fatbin, driver floor, bf16). Every problem is
 * a finding with what was found and what to change; the call itself fails only on bad
 * arguments or memory. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/audio/audio.h"
#include "runtime/audio/resample.h"
#include "runtime/run/capacity.h"
#include "runtime/core/config.h"
#include "runtime/data/text_index.h"
#include "runtime/run/index_summary.h"
#include "runtime/run/plan.h"
#include "runtime/run/run_buckets.h"
#include "tandem.h"

#define FRAME_S ((double)TANDEM_MEL_HOP / TANDEM_AUDIO_RATE) /* seconds per mel frame */

void tandem_validate_options_init(tandem_validate_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->backend = TANDEM_BACKEND_AUTO;
    o->probe_files = 16;
}

/* One finding: area, what (printf-style), then the fix as the last argument's text. */
static void add(tandem_validate_report *r, tandem_finding_level lv, const char *area, const char *fix,
                const char *fmt, ...) TANDEM_PRINTF(5, 6);
static void add(tandem_validate_report *r, tandem_finding_level lv, const char *area, const char *fix,
                const char *fmt, ...) {
    if (lv == TANDEM_FINDING_ERROR) r->errors++;
    else if (lv == TANDEM_FINDING_WARN) r->warnings++;
    else r->infos++;
    if (r->n == TANDEM_VALIDATE_MAX_FINDINGS) return;
    tandem_finding *f = &r->f[r->n++];
    f->level = lv;
    snprintf(f->area, sizeof f->area, "%s", area);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->what, sizeof f->what, fmt, ap);
    va_end(ap);
    snprintf(f->fix, sizeof f->fix, "%s", fix ? fix : "");
}

/* ---- config ---------------------------------------------------------------------------------- */

static void check_config(const tandem_config *c, tandem_validate_report *r) {
    char fix[320];
    if (!c->train_data[0])
        add(r, TANDEM_FINDING_ERROR, "config", "give --train-data DIR or train_data in the config",
            "no training data: train_data is empty");
    if (!c->val_data[0] && !(c->val_fraction > 0))
        add(r, TANDEM_FINDING_WARN, "config", "set val_data (or --val-data DIR) to a held-out directory, or "
            "val_fraction (e.g. 0.05) to hold out a share of train_data",
            "no validation set: val_l1, mel.png and the free-running evaluation are off");
    else if (c->epochs > 0)
        ; /* the run's length comes from the dataset: data_findings checks warm-up and cadence */
    else if (c->val_every == 0 || c->val_every > c->max_steps)
        add(r, TANDEM_FINDING_WARN, "config", "set val_every below max_steps",
            "%s is set but val_every %lld never comes within max_steps %lld",
            c->val_data[0] ? "val_data" : "val_fraction", (long long)c->val_every, (long long)c->max_steps);
    if (c->epochs <= 0 && c->warmup_steps >= c->max_steps) {
        snprintf(fix, sizeof fix, "set warmup_steps below max_steps (e.g. %lld)", (long long)(c->max_steps / 20));
        add(r, TANDEM_FINDING_WARN, "config", fix, "warmup_steps %lld >= max_steps %lld: the run never reaches the "
            "peak learning rate", (long long)c->warmup_steps, (long long)c->max_steps);
    }
    if (c->prefetch_buffer_size < 3)
        add(r, TANDEM_FINDING_INFO, "config", "prefetch_buffer_size 3 or more absorbs uneven batches",
            "a ring of %d slots leaves the model device little slack when a batch is slow to load",
            c->prefetch_buffer_size);
    if (c->checkpoint_every == 0)
        add(r, TANDEM_FINDING_INFO, "config", "", "checkpoint_every 0: checkpoints only at the end and on a stop");
}

/* ---- dataset ----------------------------------------------------------------------------------- */

/* Decode a spread of up to n utterances: readable, rate, duration against max_frames. */
static void probe_audio(const tandem_text_index *ix, const tandem_config *c, int n, tandem_validate_report *r) {
    if (n <= 0 || ix->count == 0) return;
    const int64_t cap = (int64_t)TANDEM_AUDIO_RATE * 120; /* two minutes: longer is no utterance */
    const int64_t cap_native = tandem_resample_in_samples(cap); /* the same at up to 48 kHz */
    float *buf = tandem_malloc((size_t)cap_native * sizeof *buf);
    tandem_audio_decoder *d = NULL;
    if (!buf || tandem_audio_decoder_create(&d) != TANDEM_OK) {
        add(r, TANDEM_FINDING_WARN, "audio", "", "audio not probed: out of memory for the decoder");
        tandem_free(buf);
        return;
    }
    const uint32_t step = ix->count > (uint32_t)n ? ix->count / (uint32_t)n : 1;
    for (uint32_t i = 0; i < ix->count && r->probed < n; i += step) {
        const tandem_utt *u = &ix->utts[i];
        char path[TANDEM_CONFIG_PATH_MAX + 512];
        snprintf(path, sizeof path, "%s/%s", c->train_data, tandem_utt_audio(ix, u));
        int64_t got = 0;
        tandem_audio_info info;
        memset(&info, 0, sizeof info);
        r->probed++;
        int rate = TANDEM_AUDIO_RATE;
        const uint64_t t0 = tandem_now_ns();
        /* as a loader thread decodes: the data device resamples its rates, libsamplerate the rest */
        const tandem_status st = tandem_audio_decode_native(d, path, buf, cap_native, cap, &got, &rate, &info);
        r->probe_cpu_ms += (double)(tandem_now_ns() - t0) * 1e-6;
        r->probe_resample_ms += (double)tandem_audio_decoder_resample_ns(d) * 1e-6;
        if (st == TANDEM_OK) r->probe_seconds += (double)got / rate;
        if (st != TANDEM_OK) {
            r->probe_failed++;
            char fix[320];
            snprintf(fix, sizeof fix, "replace the file or remove line %u of metadata.csv", u->line);
            add(r, TANDEM_FINDING_ERROR, "audio", fix, "%s", tandem_last_error());
            continue;
        }
        if (info.sample_rate != TANDEM_AUDIO_RATE) r->probe_resampled++;
    }
    if (r->probe_resampled)
        add(r, TANDEM_FINDING_INFO, "audio", "resample the corpus to 22050 Hz once to save the loader threads' CPU",
            "%d of %d probed files are not at 22050 Hz: they are resampled on every load", r->probe_resampled,
            r->probed);
    add(r, TANDEM_FINDING_INFO, "audio", "", "%d audio files probed (decoded whole), %d failed", r->probed,
        r->probe_failed);
    tandem_audio_decoder_free(d);
    tandem_free(buf);
}

/* epochs → steps: what train will run, against warm-up and the validation cadence (check_config
 * does the same for max_steps). */
static void run_length_findings(const tandem_config *c, int64_t steps, tandem_validate_report *r) {
    char fix[320];
    if (c->warmup_steps >= steps) {
        snprintf(fix, sizeof fix, "set warmup_steps below %lld (e.g. %lld) or raise epochs", (long long)steps,
                 (long long)(steps / 20));
        add(r, TANDEM_FINDING_WARN, "config", fix, "warmup_steps %lld >= the %lld steps epochs %lld gives: the run "
            "never reaches the peak learning rate", (long long)c->warmup_steps, (long long)steps, (long long)c->epochs);
    }
    if ((c->val_data[0] || c->val_fraction > 0) && (c->val_every == 0 || c->val_every > steps))
        add(r, TANDEM_FINDING_WARN, "config", "set val_every below the run's steps", "val_every %lld never comes "
            "within the %lld steps epochs %lld gives: no validation, no ckpt-best", (long long)c->val_every,
            (long long)steps, (long long)c->epochs);
}

/* Findings from the index summary: rows left out, audio too long / short / unreadable. */
static void data_findings(const tandem_config *c, const tandem_trainer_startup *s, tandem_validate_report *r) {
    char fix[320];
    add(r, TANDEM_FINDING_INFO, "data", "", "%s: %u rows, %u utterances, %u usable for training; text cache %s",
        c->train_data, s->rows, s->utterances, s->n_train, s->cache_hit ? "hit" : "built now");
    for (int k = 0; k < TANDEM_TRAINER_SKIP_REASONS; k++)
        if (s->skipped[k])
            add(r, TANDEM_FINDING_WARN, "data", "the log lines of `tandem prep --data DIR` name each row",
                "%u rows (metadata lines or listed files) left out: %s", s->skipped[k], tandem_data_skip_reason_name(k));
    if (s->too_long) {
        const int need = (int)(s->longest_s / FRAME_S) + 1, rr = c->reduction;
        snprintf(fix, sizeof fix, "raise max_frames to %d (holds the longest, %.2f s) or trim those files",
                 (need + rr - 1) / rr * rr, s->longest_s);
        add(r, TANDEM_FINDING_WARN, "data", fix, "%u utterances are longer than max_frames %d (%.2f s) and are "
            "skipped", s->too_long, c->max_frames, s->max_s_allowed);
    }
    if (s->too_short)
        add(r, TANDEM_FINDING_WARN, "data", "remove or replace them", "%u audio files are shorter than one hop",
            s->too_short);
    if (s->unreadable)
        add(r, TANDEM_FINDING_ERROR, "data", "`tandem prep --data DIR` logs each one; fix or remove them",
            "%u audio files have unreadable headers and are skipped", s->unreadable);
    if (s->n_train == 0)
        add(r, TANDEM_FINDING_ERROR, "data", "see the rows left out above", "no usable utterance for training");
    else if (s->n_train < (uint32_t)c->batch_size)
        add(r, TANDEM_FINDING_WARN, "data", "lower batch_size or add data", "%u usable utterances, fewer than one "
            "batch of %d: each batch repeats utterances", s->n_train, c->batch_size);
    else {
        const int64_t from_epochs = tandem_config_epoch_steps(c, s->n_train);
        const int64_t steps = from_epochs > 0 ? from_epochs : c->max_steps;
        add(r, TANDEM_FINDING_INFO, "data", "", "one epoch = %.1f optimizer steps (batch_size %d x grad_accum %d); "
            "the run: %lld steps = %.1f epochs%s", (double)s->n_train / (c->batch_size * c->grad_accum),
            c->batch_size, c->grad_accum, (long long)steps,
            (double)steps * c->batch_size * c->grad_accum / s->n_train,
            from_epochs > 0 ? " (from epochs)" : "");
        if (from_epochs > 0) run_length_findings(c, from_epochs, r);
    }
}

/* The index without the duration filter (which fails when it leaves nothing: validate wants the
 * counts and the longest file instead); duration_filter below counts what the filter would drop. */
static tandem_status open_unfiltered(const tandem_config *c, const char *dir, const char *cache_dir,
                                     tandem_text_index *ix) {
    tandem_text_index_config icfg;
    tandem_text_index_config_default(&icfg);
    icfg.data_dir = dir;
    icfg.max_text = c->max_text;
    icfg.seed = (uint64_t)c->seed;
    icfg.cache_dir = cache_dir;
    icfg.layout = (tandem_data_layout)c->dataset_layout; /* as the trainer reads it (dataset.c) */
    icfg.vctk_mic = c->vctk_mic;
    icfg.text_input = (tandem_text_input)c->text_input;
    return tandem_text_index_open(&icfg, ix);
}

/* What the training run's duration filter (max_frames) leaves out of ix, as the index counts it. */
static void duration_filter(const tandem_text_index *ix, const tandem_config *c, tandem_trainer_startup *s) {
    const int64_t max_samples = (int64_t)c->max_frames * TANDEM_MEL_HOP;
    s->too_long = s->too_short = s->unreadable = 0;
    for (uint32_t i = 0; i < ix->count; i++) {
        const uint32_t n = ix->utts[i].n_samples;
        if (n == 0) s->unreadable++;
        else if (n > max_samples) s->too_long++;
        else if (n < TANDEM_INDEX_MIN_SAMPLES) s->too_short++;
    }
    s->n_train = ix->count - s->too_long - s->too_short - s->unreadable;
}

/* Length bucketing's classes, chosen as the trainer chooses them (run_buckets.h). */
static void buckets_finding(const tandem_config *c, const tandem_validate_options *o, tandem_validate_report *r) {
    if (c->buckets <= 1) return;
    char line[320];
    if (tandem_run_buckets_of_data(c, o->cache_dir, line, sizeof line) == TANDEM_OK)
        add(r, TANDEM_FINDING_INFO, "data", "", "length bucketing: %s", line);
    else
        add(r, TANDEM_FINDING_WARN, "data", "see the data findings above", "length bucketing: classes unknown: %s",
            tandem_last_error());
}

static void check_data(const tandem_config *c, const tandem_validate_options *o, tandem_validate_report *r) {
    const char *dirs[2] = {c->train_data, c->val_data};
    for (int which = 0; which < 2; which++) {
        if (!dirs[which][0]) continue;
        tandem_text_index ix;
        memset(&ix, 0, sizeof ix);
        if (open_unfiltered(c, dirs[which], o->cache_dir, &ix) != TANDEM_OK) {
            add(r, TANDEM_FINDING_ERROR, "data", "point it at a dataset directory: metadata.csv + wavs/, or a VCTK or LibriTTS tree "
                "(docs/FORMATS.md)",
                "%s data: %s", which ? "validation" : "training", tandem_last_error());
            tandem_text_index_free(&ix);
            continue;
        }
        if (which == 0) {
            tandem_index_summary(&ix, c, &r->data);
            duration_filter(&ix, c, &r->data);
            r->data_indexed = 1;
            data_findings(c, &r->data, r);
            probe_audio(&ix, c, o->probe_files, r);
            buckets_finding(c, o, r);
        } else {
            add(r, TANDEM_FINDING_INFO, "data", "", "%s: %u usable validation utterances", dirs[1], ix.n_train);
        }
        tandem_text_index_free(&ix);
    }
}

/* ---- plan and devices ---------------------------------------------------------------------- */

static void check_plan(const tandem_config *c, tandem_backend backend, size_t bytes[2], tandem_validate_report *r) {
    const tandem_status st = tandem_plan_arena_bytes(c, backend, bytes);
    r->data_arena_mib = (double)bytes[0] / (1 << 20);
    r->model_arena_mib = (double)bytes[1] / (1 << 20);
    if (st == TANDEM_E_BUDGET)
        add(r, TANDEM_FINDING_ERROR, "plan", "raise data_gpu_memory / model_gpu_memory (MiB, 0 = by plan) or "
            "lower batch_size, max_frames or the model size", "%s", tandem_last_error());
    else if (st != TANDEM_OK)
        add(r, TANDEM_FINDING_ERROR, "plan", "change the model keys the message names", "%s", tandem_last_error());
    else
        add(r, TANDEM_FINDING_INFO, "plan", "", "arenas: data %.1f MiB, model %.1f MiB (ring of %d slots, the "
            "model, its optimizer state and activations)", r->data_arena_mib, r->model_arena_mib,
            c->prefetch_buffer_size);
}

/* One CUDA device in a role: present, fatbin code, opens, memory for its arena(s), bf16. */
static void check_device(const tandem_system_report *s, int ord, const char *role, size_t need,
                         const tandem_config *c, tandem_validate_report *r) {
    char fix[320];
    if (ord >= s->cuda_count) {
        snprintf(fix, sizeof fix, "set %s_gpu to an ordinal below %d (`tandem diagnose` lists them)", role,
                 s->cuda_count);
        add(r, TANDEM_FINDING_ERROR, "device", fix, "%s device: CUDA ordinal %d, but the driver reports %d devices",
            role, ord, s->cuda_count);
        return;
    }
    if (ord >= s->cuda_listed) return;
    const tandem_system_cuda_device *d = &s->cuda[ord];
    const tandem_device_info *in = &d->info;
    if (d->query_status == TANDEM_OK && s->fatbin_images > 0 && !d->fatbin_runs) {
        add(r, TANDEM_FINDING_ERROR, "device", "rebuild the fatbin with this architecture (CUDA_ARCHS in "
            "toolchain.mk)", "%s device cuda %d (%s, compute capability %d.%d): the fatbin has no code for it "
            "(it holds %s)", role, ord, in->name, in->cc_major, in->cc_minor, s->fatbin_archs);
        return;
    }
    if (d->query_status != TANDEM_OK || d->open_status != TANDEM_OK) {
        add(r, TANDEM_FINDING_ERROR, "device", "`tandem diagnose` shows the details", "%s device cuda %d: %s", role,
            ord, d->query_status != TANDEM_OK ? d->query_error : d->open_error);
        return;
    }
    if (c->precision == TANDEM_PRECISION_BF16 && !in->supports_bf16)
        add(r, TANDEM_FINDING_ERROR, "device", "set precision fp32", "%s device cuda %d (%s) has no bf16 support",
            role, ord, in->name);
    const double need_mib = (double)need / (1 << 20), have_mib = (double)in->total_memory / (1 << 20);
    if (need_mib > have_mib)
        add(r, TANDEM_FINDING_ERROR, "device", "lower batch_size, max_frames or the model size (`tandem plan` "
            "shows the largest tensors)", "%s device cuda %d (%s): the plan needs %.0f MiB, it has %.0f MiB",
            role, ord, in->name, need_mib, have_mib);
    else
        add(r, need_mib > 0.9 * have_mib ? TANDEM_FINDING_WARN : TANDEM_FINDING_INFO, "device",
            need_mib > 0.9 * have_mib ? "leave headroom: lower batch_size or max_frames" : "",
            "%s device cuda %d (%s, cc %d.%d): the plan needs %.1f of %.0f MiB", role, ord, in->name,
            in->cc_major, in->cc_minor, need_mib, have_mib);
}

/* Two host devices: both arenas live in this machine's RAM (only planned here, never allocated). */
static int check_host_ram(const size_t bytes[2], tandem_validate_report *r) {
    const size_t ram = tandem_ram_bytes(), need = bytes[0] + bytes[1];
    if (!ram || need <= ram) return 0;
    add(r, TANDEM_FINDING_ERROR, "plan", "lower batch_size, max_frames or the model size, or train on a CUDA "
            "device", "backend host: the plan needs %.1f MiB of host memory (data %.1f + model %.1f MiB), more "
            "than this machine's %.1f MiB of physical RAM", (double)need / (1 << 20), (double)bytes[0] / (1 << 20),
            (double)bytes[1] / (1 << 20), (double)ram / (1 << 20));
    return 1;
}

/* 1 when the plan is larger than this machine's RAM on two host devices. */
static int check_devices(const tandem_config *c, const tandem_validate_options *o, const size_t bytes[2],
                         tandem_validate_report *r) {
    static const char bf16_fix[] = "set precision fp32 (MyXTTS: mixed_precision false), or train on a CUDA device";
    if (o->backend == TANDEM_BACKEND_HOST) {
        add(r, TANDEM_FINDING_INFO, "device", "", "backend host: two host devices, no CUDA checks");
        if (c->precision == TANDEM_PRECISION_BF16)
            add(r, TANDEM_FINDING_ERROR, "device", bf16_fix, "precision bf16 needs a CUDA model device; the host "
                "backend trains in fp32");
        return check_host_ram(bytes, r);
    }
    tandem_system_report *s = tandem_malloc(sizeof *s);
    if (!s || tandem_system_query(s) != TANDEM_OK) {
        add(r, TANDEM_FINDING_WARN, "device", "", "devices not checked: %s", s ? tandem_last_error() : "out of memory");
        tandem_free(s);
        return 0;
    }
    const int ncuda = s->driver_status == TANDEM_OK ? s->cuda_count : 0;
    if (s->driver_status != TANDEM_OK && s->driver_status != TANDEM_E_NODRIVER)
        add(r, TANDEM_FINDING_ERROR, "device", "`tandem diagnose` shows why; fix the driver or use --backend host",
            "the CUDA driver is present but failing: %s", s->driver_message);
    else if (ncuda == 0)
        add(r, o->backend == TANDEM_BACKEND_CUDA ? TANDEM_FINDING_ERROR : TANDEM_FINDING_INFO, "device",
            o->backend == TANDEM_BACKEND_CUDA ? "run where a GPU is, or use --backend host" : "",
            "no CUDA device: training would run on two host devices");
    else if (s->fatbin_images == 0)
        add(r, TANDEM_FINDING_ERROR, "device", "build with nvcc (CUDA_HOME) so the fatbin has kernels",
            "this is a host-only build: the fatbin is empty, CUDA devices cannot run");
    else if (s->driver_version < s->driver_floor)
        add(r, TANDEM_FINDING_ERROR, "device", "update the NVIDIA driver", "the driver is CUDA %d.%d; the fatbin "
            "needs CUDA %d.%d (%s or newer)", s->driver_version / 1000, s->driver_version % 1000 / 10,
            s->driver_floor / 1000, s->driver_floor % 1000 / 10, s->driver_branch);
    if (ncuda == 0 && c->precision == TANDEM_PRECISION_BF16)
        add(r, TANDEM_FINDING_ERROR, "device", bf16_fix, "precision bf16 needs a CUDA model device; the host "
            "backend trains in fp32");
    if (ncuda > 0 && s->fatbin_images > 0) {
        const int dg = c->data_gpu >= 0 ? c->data_gpu : 0;
        const int mg = c->model_gpu >= 0 ? c->model_gpu : (ncuda > 1 && dg == 0 ? 1 : 0);
        if (dg == mg) check_device(s, dg, "data+model", bytes[0] + bytes[1], c, r);
        else {
            check_device(s, dg, "data", bytes[0], c, r);
            check_device(s, mg, "model", bytes[1], c, r);
        }
    }
    tandem_free(s);
    return ncuda == 0 && check_host_ram(bytes, r); /* auto backend without a GPU: two host devices */
}

/* The data side's CPU capacity from the probe's decode times against the modelled step. */
static void check_capacity(const tandem_config *cfg, tandem_validate_report *r, double samples_s, const char *gpu) {
    const int ok = r->probed - r->probe_failed;
    if (ok <= 0 || r->probe_cpu_ms <= 0) return;
    tandem_capacity c;
    tandem_capacity_from_cpu(r->probe_cpu_ms, r->probe_resample_ms, ok, r->probe_seconds, cfg->num_workers, &c);
    const double h = c.cpu_utt_s / samples_s, per_core = 1000.0 / c.cpu_ms_per_utt;
    char fix[320] = "";
    if (h < 1.0)
        snprintf(fix, sizeof fix, "about %d cores would keep up; %s", (int)(c.cores / h + 0.999),
                 c.cpu_resample_pct > 20 ? "convert the corpus once to 22050 Hz or a rate the data device resamples "
                 "(48000/44100/32000/24000/16000/8000 Hz)" : "more loader threads (num_workers) on more cores");
    add(r, h < 1.0 ? TANDEM_FINDING_WARN : TANDEM_FINDING_INFO, "speed", fix,
        "data side (CPU, from %d probed files): %.2f ms per utterance on one core = %.0f utterances/s, %.0f audio-s/s "
        "per core; %.0f utterances/s on %d loader threads over %d cores against the model's %.0f samples/s "
        "(modelled on an %s): headroom %.2fx%s (the data device: `tandem pipeline` measures it)", ok, c.cpu_ms_per_utt,
        per_core, per_core * c.utt_seconds, c.cpu_utt_s, c.threads, c.cores, samples_s, gpu, h,
        h < 1.0 ? ", the data side is the limit" : "");
}

/* Expected throughput from the step cost model (tandem_cost.h): one step recorded on a dry
 * device and priced on an H100's published peaks — a model, not a measurement. */
static void check_speed(const tandem_config *cfg, int gpus_here, tandem_validate_report *r) {
    tandem_cost_estimate e;
    if (tandem_cost_estimate_step(cfg, NULL, &e) != TANDEM_OK) {
        add(r, TANDEM_FINDING_WARN, "speed", "run `tandem cost --config ...` to see why",
            "expected throughput: the step cost model could not price this config: %s", tandem_last_error());
        return;
    }
    char label[96]; /* no GPU here: the figure is what one would do, not what this machine does */
    if (gpus_here) snprintf(label, sizeof label, "modelled on an %s, not measured", e.gpu);
    else snprintf(label, sizeof label, "if you had an %s: no GPU here; modelled, not measured", e.gpu);
    add(r, TANDEM_FINDING_INFO, "speed", "`tandem cost --config ... --gpu h100|h200|a100|rtx4090|l4` for details",
        "expected throughput (%s): %.2f ms per step in a CUDA graph, %.2f ms eager, %lld launches, floor %.2f ms; "
        "about %.0f samples/s", label, e.graph_ms, e.eager_ms, (long long)e.launches, e.floor_ms, e.samples_per_s);
    check_capacity(cfg, r, e.samples_per_s, e.gpu);
}

tandem_status tandem_validate(const tandem_config *cfg, const tandem_validate_options *o,
                              tandem_validate_report *r) {
    if (!cfg || !r) return tandem_fail(TANDEM_E_INVALID, "tandem_validate: NULL argument");
    tandem_validate_options def;
    tandem_validate_options_init(&def);
    if (!o) o = &def;
    memset(r, 0, sizeof *r);
    check_config(cfg, r);
    if (cfg->train_data[0]) check_data(cfg, o, r);
    size_t bytes[2] = {0, 0};
    check_plan(cfg, o->backend, bytes, r);
    int gpus = 0;
    if (check_devices(cfg, o, bytes, r)) /* pricing would initialise every parameter: minutes for nothing */
        add(r, TANDEM_FINDING_INFO, "speed", "", "expected throughput not modelled: the plan does not fit this machine");
    else {
        if (o->backend == TANDEM_BACKEND_HOST || tandem_device_count(TANDEM_BACKEND_CUDA, &gpus) != TANDEM_OK) gpus = 0;
        check_speed(cfg, gpus, r);
    }
    return TANDEM_OK;
}
