/* resample.c — filter design, rate classes and the device plan of resampling (see resample.h). */
#include "runtime/audio/resample.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/core/dev.h"
#include "runtime/core/launch.h"
#include "platform/os/log.h"
#include "platform/os/os.h"

static const int rs_rates[TANDEM_RS_CLASSES] = {48000, 44100, 32000, 24000, 16000, 8000};

enum { RS_LOW_TAPS = 64 };        /* window length in samples of the lower rate */
#define RS_BETA 10.061            /* Kaiser beta for 100 dB: 0.1102 (100 - 8.7) */
#define RS_CUTOFF 1.0             /* of the lower Nyquist: passband 0.90, stopband 1.10 */

int tandem_resample_class(int rate) {
    for (int i = 0; i < TANDEM_RS_CLASSES; i++)
        if (rs_rates[i] == rate) return i;
    return -1;
}

int tandem_resample_class_rate(int i) { return i >= 0 && i < TANDEM_RS_CLASSES ? rs_rates[i] : 0; }

static int gcd(int a, int b) {
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

tandem_status tandem_resample_design(int rate, tandem_rs_design *d) {
    if (!d || rate < 1 || rate > 768000)
        return tandem_fail(TANDEM_E_INVALID, "resample design: rate %d Hz (expected 1..768000)", rate);
    const int g = gcd(TANDEM_RS_OUT_RATE, rate);
    d->rate = rate;
    d->up = TANDEM_RS_OUT_RATE / g;
    d->down = rate / g;
    /* input samples per lower-rate sample: > 1 when decimating */
    const double span = d->down > d->up ? (double)d->down / d->up : 1.0;
    const int half = (int)ceil(RS_LOW_TAPS / 2 * span);
    d->taps = (2 * half + TANDEM_RS_LANES - 1) / TANDEM_RS_LANES * TANDEM_RS_LANES;
    d->cutoff = RS_CUTOFF * 0.5 / span;
    d->beta = RS_BETA;
    return TANDEM_OK;
}

/* The modified Bessel function I0 by its power series (converges fast for the betas used). */
static double bessel_i0(double x) {
    double sum = 1.0, term = 1.0, q = x * x / 4.0;
    for (int k = 1; k < 64 && term > 1e-17 * sum; k++) {
        term *= q / ((double)k * k);
        sum += term;
    }
    return sum;
}

void tandem_resample_build_taps(const tandem_rs_design *d, float *taps) {
    const double pi = 3.14159265358979323846, hw = d->taps / 2.0, fc2 = 2.0 * d->cutoff;
    const double i0b = bessel_i0(d->beta);
    double h[4096]; /* one phase: taps <= 2 * 64 * 768000 / 22050 rounded up < 4096 */
    for (int p = 0; p < d->up; p++) {
        double sum = 0.0;
        for (int k = 0; k < d->taps; k++) {
            /* the distance from output time (i0 + p / up) to input sample i0 + k, i0 = floor - hw + 1 */
            const double t = (double)p / d->up + hw - 1.0 - k, u = t / hw;
            const double w = u * u < 1.0 ? bessel_i0(d->beta * sqrt(1.0 - u * u)) / i0b : 0.0;
            const double s = t == 0.0 ? 1.0 : sin(pi * fc2 * t) / (pi * fc2 * t);
            h[k] = fc2 * s * w;
            sum += h[k];
        }
        for (int k = 0; k < d->taps; k++) taps[(int64_t)p * d->taps + k] = (float)(h[k] / sum);
    }
}

int64_t tandem_resample_in_samples(int64_t out_samples) {
    return ((out_samples + 1) * TANDEM_RS_MAX_IN_RATE + TANDEM_RS_OUT_RATE - 1) / TANDEM_RS_OUT_RATE;
}

static tandem_status declare(tandem_pool *pool, const char *prefix, const char *name, tandem_dtype dt, int ndim,
                             int64_t d0, int64_t d1, tandem_tensor **out) {
    char full[128];
    snprintf(full, sizeof full, "%s.%s", prefix, name);
    int64_t shape[2] = {d0, d1};
    return tandem_pool_declare(pool, full, dt, ndim, shape, TANDEM_PERSISTENT, 0, 0, out);
}

tandem_status tandem_resample_plan_declare(tandem_pool *pool, const char *prefix, int batch, int64_t out_samples,
                                           tandem_resample_plan *p) {
    if (!pool || !p || batch < 1 || out_samples < 1)
        return tandem_fail(TANDEM_E_INVALID, "resample plan: bad arguments (batch %d, %lld samples; expected >= 1)",
                           batch, (long long)out_samples);
    if (!prefix) prefix = "resample";
    memset(p, 0, sizeof *p);
    p->batch = batch;
    p->in_stride = tandem_resample_in_samples(out_samples);
    tandem_k_rs_classes *k = &p->classes;
    k->n = TANDEM_RS_CLASSES;
    for (int i = 0; i < TANDEM_RS_CLASSES; i++) {
        tandem_rs_design d;
        TANDEM_TRY(tandem_resample_design(rs_rates[i], &d));
        k->up[i] = d.up;
        k->down[i] = d.down;
        k->taps[i] = d.taps;
        k->off[i] = (int32_t)p->n_taps;
        p->n_taps += (int64_t)d.up * d.taps;
    }
    TANDEM_TRY(declare(pool, prefix, "in", TANDEM_F32, 2, batch, p->in_stride, &p->in));
    TANDEM_TRY(declare(pool, prefix, "in_len", TANDEM_I32, 1, batch, 0, &p->in_len));
    TANDEM_TRY(declare(pool, prefix, "cls", TANDEM_I32, 1, batch, 0, &p->cls));
    return declare(pool, prefix, "taps", TANDEM_F32, 1, p->n_taps, 0, &p->taps);
}

tandem_status tandem_resample_plan_prepare(tandem_resample_plan *p) {
    if (!p || !p->taps) return tandem_fail(TANDEM_E_INVALID, "resample plan prepare: plan not declared");
    if (p->host_taps || p->uploaded) return TANDEM_OK;
    p->host_taps = (float *)tandem_malloc(sizeof(float) * (size_t)p->n_taps);
    if (!p->host_taps) return tandem_fail(TANDEM_E_NOMEM, "resample plan: host copy of %lld taps", (long long)p->n_taps);
    for (int i = 0; i < p->classes.n; i++) {
        tandem_rs_design d;
        TANDEM_TRY(tandem_resample_design(rs_rates[i], &d));
        tandem_resample_build_taps(&d, p->host_taps + p->classes.off[i]);
    }
    return TANDEM_OK;
}

tandem_status tandem_resample_upload(tandem_resample_plan *p, tandem_stream *s) {
    if (!p || !s) return tandem_fail(TANDEM_E_INVALID, "resample taps upload: NULL argument");
    if (!p->host_taps)
        return tandem_fail(TANDEM_E_STATE, "resample taps: %s", p->uploaded ? "already uploaded"
                           : "plan not prepared (tandem_resample_plan_prepare before commit)");
    TANDEM_TRY(tandem_tensor_upload(s, p->taps, p->host_taps, sizeof(float) * (size_t)p->n_taps));
    TANDEM_TRY(tandem_stream_sync(s)); /* the copy may be in flight on cuda: wait before freeing its source */
    tandem_free(p->host_taps);
    p->host_taps = NULL;
    p->uploaded = 1;
    return TANDEM_OK;
}

void tandem_resample_plan_release(tandem_resample_plan *p) {
    if (!p) return;
    tandem_free(p->host_taps);
    p->host_taps = NULL;
}

tandem_status tandem_resample_batch(tandem_resample_plan *p, tandem_stream *s, int64_t in_stride,
                                    tandem_tensor *out, tandem_tensor *out_len, int64_t out_stride) {
    if (!p || !s || !out || !out_len || !p->in)
        return tandem_fail(TANDEM_E_INVALID, "resample batch: plan, stream or outputs NULL");
    if (!p->uploaded) return tandem_fail(TANDEM_E_STATE, "resample batch: taps not uploaded (tandem_resample_upload)");
    if (in_stride < 1 || in_stride > p->in_stride || out_stride < 1 ||
        out_stride * p->batch > tandem_tensor_numel(out) || tandem_tensor_numel(out_len) < p->batch)
        return tandem_fail(TANDEM_E_INVALID, "resample batch: rows of %lld in / %lld out samples do not fit the "
                           "plan (%lld in) or the outputs (%lld samples for %d rows)", (long long)in_stride,
                           (long long)out_stride, (long long)p->in_stride, (long long)tandem_tensor_numel(out),
                           p->batch);
    TANDEM_KARGS(resample, a);
    a.in = tandem_tensor_f32(p->in), a.in_len = tandem_tensor_i32(p->in_len), a.cls = tandem_tensor_i32(p->cls);
    a.taps = tandem_tensor_f32(p->taps), a.out = tandem_tensor_f32(out), a.out_len = tandem_tensor_i32(out_len);
    a.in_stride = in_stride, a.out_stride = out_stride, a.n_taps = p->n_taps, a.batch = p->batch;
    a.classes = p->classes;
    return TANDEM_LAUNCH(s, resample, &a);
}
