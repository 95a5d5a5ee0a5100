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

#define DEV_F32(t) ((float *)(uintptr_t)tandem_tensor_addr(t))
#define DEV_I32(t) ((int32_t *)(uintptr_t)tandem_tensor_addr(t))

tandem_status tandem_mel_batch(tandem_mel_plan *p, tandem_stream *s) {
    if (!p || !s || !p->audio) return tandem_fail(TANDEM_E_INVALID, "mel batch: plan or stream is NULL");
    if (!p->uploaded)
        return tandem_fail(TANDEM_E_STATE, "mel batch: filterbank not uploaded (tandem_mel_upload_constants)");

    tandem_k_mel_stft_args sa;
    memset(&sa, 0, sizeof sa);
    sa.audio = DEV_F32(p->audio);
    sa.lengths = DEV_I32(p->lengths);
    sa.mag = DEV_F32(p->mag);
    sa.max_samples = p->max_samples;
    sa.batch = p->batch;
    sa.max_frames = p->max_frames;
    TANDEM_TRY(TANDEM_LAUNCH(s, mel_stft, &sa));

    /* mel_lin [rows, 80]: each band over its nonzero bins of mag [rows, 513] */
    tandem_k_mel_project_args pa;
    memset(&pa, 0, sizeof pa);
    pa.mag = DEV_F32(p->mag);
    pa.weights = DEV_F32(p->filterbank);
    pa.lengths = DEV_I32(p->lengths);
    pa.mel = DEV_F32(p->mel_lin);
    pa.max_samples = p->max_samples;
    pa.batch = p->batch;
    pa.max_frames = p->max_frames;
    pa.bands = p->bands;
    TANDEM_TRY(TANDEM_LAUNCH(s, mel_project, &pa));

    tandem_k_mel_log_args la;
    memset(&la, 0, sizeof la);
    la.mel = DEV_F32(p->mel_lin);
    la.lengths = DEV_I32(p->lengths);
    la.out = DEV_F32(p->mel);
    la.max_samples = p->max_samples;
    la.batch = p->batch;
    la.max_frames = p->max_frames;
    TANDEM_TRY(TANDEM_LAUNCH(s, mel_log, &la));

    tandem_k_mel_targets_args ta;
    memset(&ta, 0, sizeof ta);
    ta.lengths = DEV_I32(p->lengths);
    ta.frames = DEV_I32(p->frames);
    ta.mask = DEV_F32(p->mask);
    ta.stop = DEV_F32(p->stop);
    ta.max_samples = p->max_samples;
    ta.batch = p->batch;
    ta.max_frames = p->max_frames;
    TANDEM_TRY(TANDEM_LAUNCH(s, mel_targets, &ta));
    return TANDEM_OK;
}
