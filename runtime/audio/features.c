/* features.c — the public log-mel API of tandem_features.h: decode or resample to 22050 Hz
 * (runtime/audio/audio.h), then the device path of runtime/audio/mel_device.h on a pool made for
 * the one signal. */
#include "tandem.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/audio/audio.h"
#include "runtime/audio/mel.h"
#include "runtime/audio/mel_device.h"

/* The resampler's count of a file may differ from the header's by a sample. */
#define DECODE_SLACK 16

struct tandem_features {
    tandem_device *dev;
    tandem_stream *s;
    tandem_audio_decoder *dec;
    float *audio; /* [audio_cap] 22050 Hz samples of the current input */
    size_t audio_cap;
    float *mel;   /* [mel_cap] the handle's output buffer */
    size_t mel_cap;
    double max_seconds; /* longest input taken (tandem_features_options.max_seconds) */
};

void tandem_features_options_init(tandem_features_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->backend = TANDEM_BACKEND_AUTO;
    o->max_seconds = TANDEM_FEATURES_MAX_SECONDS;
}

tandem_status tandem_features_open(const tandem_features_options *o, tandem_features **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_features_open: out is NULL");
    *out = NULL;
    tandem_features_options d;
    tandem_features_options_init(&d);
    if (!o) o = &d;
    if (!(o->max_seconds > 0.0) || o->max_seconds > 1e6)
        return tandem_fail(TANDEM_E_INVALID, "features: max_seconds %g, expected > 0 and <= 1e6 seconds",
                           o->max_seconds);
    tandem_features *f = tandem_calloc(1, sizeof *f);
    if (!f) return tandem_fail(TANDEM_E_NOMEM, "features: out of memory");
    f->max_seconds = o->max_seconds;
    tandem_status st = tandem_device_open(o->backend, o->ordinal, &f->dev);
    if (st == TANDEM_OK) st = tandem_stream_create(f->dev, &f->s);
    if (st == TANDEM_OK) st = tandem_audio_decoder_create(&f->dec);
    if (st != TANDEM_OK) {
        tandem_features_close(f);
        return st;
    }
    *out = f;
    return TANDEM_OK;
}

void tandem_features_close(tandem_features *f) {
    if (!f) return;
    if (f->s) tandem_stream_destroy(f->s);
    tandem_device_close(f->dev);
    tandem_audio_decoder_free(f->dec);
    tandem_free(f->audio);
    tandem_free(f->mel);
    tandem_free(f);
}

tandem_status tandem_features_get_device(const tandem_features *f, tandem_device_info *out) {
    if (!f) return tandem_fail(TANDEM_E_INVALID, "tandem_features_get_device: NULL handle");
    return tandem_device_get_info(f->dev, out);
}

/* Grow *buf to hold n elements of size bytes each (contents not kept). */
static tandem_status reserve(void **buf, size_t *cap, size_t n, size_t size, const char *what) {
    if (n <= *cap) return TANDEM_OK;
    tandem_free(*buf);
    *cap = 0;
    *buf = tandem_malloc(n * size);
    if (!*buf) return tandem_fail(TANDEM_E_NOMEM, "features: out of memory for %zu %s", n, what);
    *cap = n;
    return TANDEM_OK;
}

/* The device path for one signal of n samples → mel [frames, 80] (frames = n / 256). */
static tandem_status device_mel(tandem_features *f, const float *audio, int64_t n, float *mel, int frames) {
    tandem_pool *pool = NULL;
    tandem_mel_plan plan;
    memset(&plan, 0, sizeof plan);
    const int32_t len32 = (int32_t)n;
    const size_t mel_bytes = sizeof(float) * (size_t)frames * TANDEM_MEL_N_MELS;
    tandem_status st = tandem_pool_create(f->dev, "features", 0, &pool);
    if (st == TANDEM_OK) st = tandem_mel_plan_declare(pool, f->dev, "mel", 1, frames, n, 0, &plan);
    if (st == TANDEM_OK) st = tandem_pool_commit(pool);
    if (st == TANDEM_OK) st = tandem_mel_upload_constants(&plan, f->s);
    if (st == TANDEM_OK) st = tandem_tensor_upload(f->s, plan.audio, audio, sizeof(float) * (size_t)n);
    if (st == TANDEM_OK) st = tandem_tensor_upload(f->s, plan.lengths, &len32, sizeof len32);
    if (st == TANDEM_OK) st = tandem_mel_batch(&plan, f->s);
    if (st == TANDEM_OK) st = tandem_tensor_download(f->s, mel, plan.mel, mel_bytes);
    if (st == TANDEM_OK) st = tandem_stream_sync(f->s);
    tandem_mel_plan_release(&plan);
    if (pool) tandem_pool_destroy(pool);
    return st;
}

/* Frames of n samples, the output buffer and the features into out. */
static tandem_status compute(tandem_features *f, const char *what, const float *audio, int64_t n,
                             float *mel, size_t capacity, tandem_features_result *out) {
    const int64_t frames = tandem_mel_frame_count(n);
    if (frames < 1 || frames > INT32_MAX)
        return tandem_fail(TANDEM_E_INVALID, "%s: %lld samples at 22050 Hz %s", what,
                           (long long)n, frames < 1 ? "is shorter than one hop (256): no frames"
                                                    : "is too long");
    out->frames = (int)frames;
    const size_t need = (size_t)frames * TANDEM_MEL_N_MELS;
    if (mel && capacity < need)
        return tandem_fail(TANDEM_E_INVALID, "%s: the mel buffer holds %zu floats; %lld "
                           "frames x %d bands need %zu", what, capacity, (long long)frames,
                           TANDEM_MEL_N_MELS, need);
    if (!mel) {
        TANDEM_TRY(reserve((void **)&f->mel, &f->mel_cap, need, sizeof(float), "mel values"));
        mel = f->mel;
    }
    TANDEM_TRY(device_mel(f, audio, n, mel, (int)frames));
    /* the decoder bounds the samples; this is the last line against an overflow anywhere */
    for (size_t i = 0; i < need; i++)
        if (!isfinite(mel[i]))
            return tandem_fail(TANDEM_E_FORMAT, "%s: log-mel value %zu (frame %zu, band %zu) is %g: the "
                               "features are not finite (input samples out of range?)", what, i,
                               i / TANDEM_MEL_N_MELS, i % TANDEM_MEL_N_MELS, (double)mel[i]);
    out->mel = mel;
    return TANDEM_OK;
}

static void result_init(tandem_features_result *out) {
    memset(out, 0, sizeof *out);
    out->n_mels = TANDEM_MEL_N_MELS;
}

tandem_status tandem_features_from_file(tandem_features *f, const char *path, float *mel,
                                        size_t capacity, tandem_features_result *out) {
    if (!f || !path || !out) return tandem_fail(TANDEM_E_INVALID, "tandem_features_from_file: NULL argument");
    result_init(out);
    tandem_audio_info info;
    TANDEM_TRY(tandem_audio_probe(path, &info));
    /* the header's claim is checked before anything is allocated for it: a forged header
     * claiming hours must not cost hours of memory */
    const int64_t limit = (int64_t)(f->max_seconds * TANDEM_AUDIO_RATE);
    if (info.samples_22050 > limit)
        return tandem_fail(TANDEM_E_BUDGET, "features %s: %.1f s of audio by its header, more than the limit of "
                           "%g s; raise it with --max-seconds (tandem_features_options.max_seconds)",
                           path, info.seconds, f->max_seconds);
    /* a stream whose header does not state its length gets room for the limit (the decoder
     * stops with a clear error beyond) */
    const int64_t cap = info.samples_22050 >= 0 ? info.samples_22050 + DECODE_SLACK : limit;
    TANDEM_TRY(reserve((void **)&f->audio, &f->audio_cap, (size_t)cap, sizeof(float), "audio samples"));
    int64_t n = 0;
    TANDEM_TRY(tandem_audio_decode(f->dec, path, f->audio, cap, &n, &info));
    out->samples = n;
    out->sample_rate = info.sample_rate;
    out->channels = info.channels;
    out->seconds = info.seconds;
    snprintf(out->format, sizeof out->format, "%s", info.format);
    return compute(f, path, f->audio, n, mel, capacity, out);
}

tandem_status tandem_features_from_samples(tandem_features *f, const float *samples, int64_t n,
                                           int sample_rate, float *mel, size_t capacity,
                                           tandem_features_result *out) {
    if (!f || !samples || !out)
        return tandem_fail(TANDEM_E_INVALID, "tandem_features_from_samples: NULL argument");
    result_init(out);
    out->sample_rate = sample_rate;
    out->channels = 1;
    out->seconds = sample_rate > 0 ? (double)n / sample_rate : 0.0;
    snprintf(out->format, sizeof out->format, "samples");
    const int64_t expect = tandem_audio_resampled_count(n, sample_rate);
    if (n < 1 || expect < 0)
        return tandem_fail(TANDEM_E_INVALID, "features (samples): %lld samples at %d Hz; expected "
                           "at least one sample at a rate the decoder takes (87..768000 Hz)",
                           (long long)n, sample_rate);
    TANDEM_TRY(reserve((void **)&f->audio, &f->audio_cap, (size_t)expect, sizeof(float), "audio samples"));
    int64_t got = 0;
    TANDEM_TRY(tandem_audio_resample(f->dec, samples, n, sample_rate, f->audio, expect, &got));
    out->samples = got;
    return compute(f, "features of samples", f->audio, got, mel, capacity, out);
}
