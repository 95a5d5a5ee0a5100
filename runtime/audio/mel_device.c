/* mel_device.c — the log-mel recipe as kernels on a stream (see mel_device.h). */
#include "runtime/audio/mel_device.h"

#include <stdio.h>
#include <string.h>

#include "runtime/core/launch.h"
#include "platform/os/log.h"
#include "runtime/audio/mel.h"
#include "platform/os/os.h"

static tandem_status declare(tandem_pool *pool, const char *prefix, const char *name,
                             tandem_dtype dt, int ndim, int64_t d0, int64_t d1, int64_t d2,
                             tandem_lifetime life, int first, int last, tandem_tensor **out) {
    char full[128];
    snprintf(full, sizeof full, "%s.%s", prefix, name);
    int64_t shape[3] = {d0, d1, d2};
    return tandem_pool_declare(pool, full, dt, ndim, shape, life, first, last, out);
}

tandem_status tandem_mel_plan_declare(tandem_pool *pool, tandem_device *dev, const char *prefix,
                                      int batch, int max_frames, int64_t max_samples,
                                      int first_op, tandem_mel_plan *p) {
    if (!pool || !p || batch < 1 || max_frames < 1 || max_samples < 1 || first_op < 0)
        return tandem_fail(TANDEM_E_INVALID,
                           "mel plan: bad arguments (batch %d, max_frames %d, max_samples %lld; "
                           "expected all >= 1)", batch, max_frames, (long long)max_samples);
    if (!prefix) prefix = "mel";
    memset(p, 0, sizeof *p);
    p->batch = batch;
    p->max_frames = max_frames;
    p->max_samples = max_samples;
    const int64_t rows = (int64_t)batch * max_frames;
    const tandem_lifetime P = TANDEM_PERSISTENT, S = TANDEM_PER_STEP;
    const int o = first_op;
    TANDEM_TRY(declare(pool, prefix, "audio", TANDEM_F32, 2, batch, max_samples, 0, P, 0, 0, &p->audio));
    TANDEM_TRY(declare(pool, prefix, "lengths", TANDEM_I32, 1, batch, 0, 0, P, 0, 0, &p->lengths));
    TANDEM_TRY(declare(pool, prefix, "mel", TANDEM_F32, 3, batch, max_frames, TANDEM_MEL_N_MELS, P, 0, 0, &p->mel));
    TANDEM_TRY(declare(pool, prefix, "frames", TANDEM_I32, 1, batch, 0, 0, P, 0, 0, &p->frames));
    TANDEM_TRY(declare(pool, prefix, "mask", TANDEM_F32, 2, batch, max_frames, 0, P, 0, 0, &p->mask));
    TANDEM_TRY(declare(pool, prefix, "stop", TANDEM_F32, 2, batch, max_frames, 0, P, 0, 0, &p->stop));
    p->n_weights = tandem_mel_bands(&p->bands, NULL);
    TANDEM_TRY(declare(pool, prefix, "filterbank", TANDEM_F32, 1, p->n_weights, 0, 0, P, 0, 0, &p->filterbank));
    /* ops: 0 STFT, 1 band projection, 2 log, 3 targets */
    TANDEM_TRY(declare(pool, prefix, "mag", TANDEM_F32, 2, rows, TANDEM_MEL_N_BINS, 0, S, o, o + 1, &p->mag));
    TANDEM_TRY(declare(pool, prefix, "mel_lin", TANDEM_F32, 2, rows, TANDEM_MEL_N_MELS, 0, S, o + 1, o + 2,
                       &p->mel_lin));

    return dev ? tandem_mel_plan_prepare(p, dev) : TANDEM_OK;
}

tandem_status tandem_mel_plan_prepare(tandem_mel_plan *p, tandem_device *dev) {
    if (!p || !dev || !p->audio) return tandem_fail(TANDEM_E_INVALID, "mel plan prepare: NULL argument or plan not declared");
    tandem_device_info info;
    TANDEM_TRY(tandem_device_get_info(dev, &info));
    /* the host kernels' FFT: FFTW plans (and allocates) here, before the pool is committed */
    if (info.backend == TANDEM_BACKEND_HOST && tandem_mel_fft_prepare() != 0)
        tandem_logf(TANDEM_LOG_WARN, "log-mel: FFTW could not plan a 1024-point r2c transform; using the built-in FFT");
    if (p->host_consts || p->uploaded) return TANDEM_OK;
    p->host_consts = (float *)tandem_malloc(sizeof(float) * (size_t)p->n_weights);
    if (!p->host_consts) return tandem_fail(TANDEM_E_NOMEM, "mel plan: host copy of the filterbank (%d weights)", p->n_weights);
    tandem_mel_bands(NULL, p->host_consts);
    return TANDEM_OK;
}

tandem_status tandem_mel_upload_constants(tandem_mel_plan *p, tandem_stream *s) {
    if (!p || !s) return tandem_fail(TANDEM_E_INVALID, "mel filterbank upload: NULL argument");
    if (!p->host_consts)
        return tandem_fail(TANDEM_E_STATE, "mel filterbank: %s", p->uploaded ? "already uploaded"
                           : "plan not prepared (tandem_mel_plan_prepare before commit)");
    TANDEM_TRY(tandem_tensor_upload(s, p->filterbank, p->host_consts, sizeof(float) * (size_t)p->n_weights));
    /* the copy may still be in flight on cuda: wait before freeing its source */
    TANDEM_TRY(tandem_stream_sync(s));
    tandem_free(p->host_consts);
    p->host_consts = NULL;
    p->uploaded = 1;
    return TANDEM_OK;
}

void tandem_mel_plan_release(tandem_mel_plan *p) {
    if (!p) return;
    tandem_free(p->host_consts);
    p->host_consts = NULL;
}

/* ---- the feature kernels' typed launchers (kernels/mel.h) ------------------------------------
 * Each takes the batch geometry: B items of at most max_samples samples, F = max_frames. */
typedef struct mel_geom {
    int64_t max_samples;
    int batch, max_frames;
} mel_geom;

/* The geometry every feature kernel takes, in its own argument struct. */
#define MEL_GEOM(a, g)                                                                    \
    ((a).max_samples = (g)->max_samples, (a).batch = (g)->batch, (a).max_frames = (g)->max_frames)

/* mag [B * F, 513] = |STFT| of audio [B, max_samples] (item b's first lengths[b] samples) */
static tandem_status mel_stft(tandem_stream *s, const float *audio, const int32_t *lengths,
                              float *mag, const mel_geom *g) {
    TANDEM_KARGS(mel_stft, a);
    a.audio = audio, a.lengths = lengths, a.mag = mag;
    MEL_GEOM(a, g);
    return TANDEM_LAUNCH(s, mel_stft, &a);
}

/* mel [B * F, 80]: each band's packed weights over its nonzero bins of mag [B * F, 513] */
static tandem_status mel_project(tandem_stream *s, const float *mag, const float *weights,
                                 const tandem_k_mel_bands *bands, const int32_t *lengths,
                                 float *mel, const mel_geom *g) {
    TANDEM_KARGS(mel_project, a);
    a.mag = mag, a.weights = weights, a.lengths = lengths, a.mel = mel, a.bands = *bands;
    MEL_GEOM(a, g);
    return TANDEM_LAUNCH(s, mel_project, &a);
}

/* out [B, F, 80] = ln(max(mel [B * F, 80], 1e-5)) on real frames, silence ln(1e-5) past them */
static tandem_status mel_log(tandem_stream *s, const float *mel, const int32_t *lengths,
                             float *out, const mel_geom *g) {
    TANDEM_KARGS(mel_log, a);
    a.mel = mel, a.lengths = lengths, a.out = out, a.pad = tandem_mel_silence();
    MEL_GEOM(a, g);
    return TANDEM_LAUNCH(s, mel_log, &a);
}

/* frames [B] real frame counts, mask [B, F] 1 on them, stop [B, F] 1 from the last one on */
static tandem_status mel_targets(tandem_stream *s, const int32_t *lengths, int32_t *frames,
                                 float *mask, float *stop, const mel_geom *g) {
    TANDEM_KARGS(mel_targets, a);
    a.lengths = lengths, a.frames = frames, a.mask = mask, a.stop = stop;
    MEL_GEOM(a, g);
    return TANDEM_LAUNCH(s, mel_targets, &a);
}

#define F32(t) tandem_tensor_f32(t)

tandem_status tandem_mel_batch(tandem_mel_plan *p, tandem_stream *s) {
    return tandem_mel_batch_frames(p, s, 0);
}

tandem_status tandem_mel_batch_frames(tandem_mel_plan *p, tandem_stream *s, int frames) {
    if (!p || !s || !p->audio) return tandem_fail(TANDEM_E_INVALID, "mel batch: plan or stream is NULL");
    if (!p->uploaded)
        return tandem_fail(TANDEM_E_STATE, "mel batch: filterbank not uploaded (tandem_mel_upload_constants)");
    if (frames < 0 || frames > p->max_frames)
        return tandem_fail(TANDEM_E_INVALID, "mel batch: %d frames; expected 1..%d (the plan's max_frames)", frames,
                           p->max_frames);
    /* a smaller shape class: rows of frames * hop samples in, [B, frames, 80] out, packed */
    const mel_geom g = frames == 0 ? (mel_geom){p->max_samples, p->batch, p->max_frames}
                                   : (mel_geom){(int64_t)frames * TANDEM_MEL_HOP, p->batch, frames};
    const int32_t *lengths = tandem_tensor_i32(p->lengths);
    TANDEM_TRY(mel_stft(s, F32(p->audio), lengths, F32(p->mag), &g));
    TANDEM_TRY(mel_project(s, F32(p->mag), F32(p->filterbank), &p->bands, lengths,
                           F32(p->mel_lin), &g));
    TANDEM_TRY(mel_log(s, F32(p->mel_lin), lengths, F32(p->mel), &g));
    return mel_targets(s, lengths, tandem_tensor_i32(p->frames), F32(p->mask), F32(p->stop), &g);
}
