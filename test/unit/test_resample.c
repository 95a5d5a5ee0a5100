/* test_resample.c — the quality of the device resampler (runtime/audio/resample.h run through
 * the kernel's host twin, kernels/resample.h), measured against a float64 reference: the
 * analytic signal evaluated at the output times. Every covered rate, three yardsticks:
 *   passband ripple: 20 tones up to 0.90 of the lower Nyquist; each tone's gain is the
 *     least-squares amplitude of the output at the tone's frequency; max |gain in dB|;
 *   stopband: decimating rates, 16 tones from 1.10 of the output Nyquist to 0.98 of the input's
 *     (whatever reaches the output is alias, folded into the passband); interpolating rates, the
 *     image of 16 passband tones (at rate - f, folded at 22050 Hz); the worst level relative to
 *     the tone, in dB;
 *   sweep SNR: a linear chirp from 50 Hz to 0.90 of the lower Nyquist against the chirp
 *     evaluated at the output times.
 * Each is measured on the output interior (the window entirely inside the signal). The same
 * yardsticks are applied to libsamplerate's SRC_SINC_MEDIUM_QUALITY (the CPU path the device
 * replaces) and printed beside: it attenuates aliases and images more (-106..-128 dB against
 * -98..-101), but its passband droops 2.1 dB by 0.90 of the lower Nyquist, which caps its chirp
 * SNR near 36 dB against 106..110 here. Each test also builds what a mistake would build and requires the
 * yardstick to catch it: the sinc without its window, the cutoff at 0.85 or 1.10 of the lower
 * Nyquist instead of 1.00, and the input read one sample late (an off-by-one phase).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <samplerate.h>

#include "runtime/audio/mel.h"
#include "runtime/audio/resample.h"
#include "tandem.h"
#include "test/fixtures.h"

#define RIPPLE_DB 0.001  /* max |passband gain| */
#define STOP_DB (-96.0)  /* worst alias or image */
#define SNR_DB 96.0      /* chirp */
#define PI 3.14159265358979323846

typedef enum { GOOD, NO_WINDOW, CUTOFF_LOW, CUTOFF_HIGH, LATE, SRC } variant;
static const char *const vname[] = {"design", "no window", "cutoff 0.85", "cutoff 1.10", "one sample late",
                                    "libsamplerate medium"};

typedef struct run {
    int rate;
    int64_t n_in, n_out, lo, hi; /* output interior [lo, hi): the design's window inside the signal */
    float *x, *y;
} run;

static void run_init(run *r, int rate) {
    r->rate = rate;
    r->n_in = rate / 2; /* half a second */
    r->n_out = (int64_t)llround(r->n_in * 22050.0 / rate);
    r->x = malloc(sizeof(float) * (size_t)r->n_in);
    r->y = malloc(sizeof(float) * (size_t)r->n_out);
    assert_true(r->x && r->y);
    tandem_rs_design d;
    assert_int_equal(tandem_resample_design(rate, &d), TANDEM_OK);
    r->lo = (int64_t)ceil((d.taps / 2 + 2) * (double)d.up / d.down);
    r->hi = r->n_out - r->lo;
}

static void run_free(run *r) {
    free(r->x);
    free(r->y);
}

/* y = x resampled by the variant (the design, a broken design, or libsamplerate). */
static void resample(run *r, variant v) {
    if (v == SRC) {
        SRC_DATA sd = {.data_in = r->x, .data_out = r->y, .input_frames = (long)r->n_in,
                       .output_frames = (long)r->n_out, .src_ratio = 22050.0 / r->rate};
        memset(r->y, 0, sizeof(float) * (size_t)r->n_out);
        assert_int_equal(src_simple(&sd, SRC_SINC_MEDIUM_QUALITY, 1), 0);
        /* src_simple stops short of the flush: the interior ends where its output does */
        if (r->hi > sd.output_frames_gen - r->lo) r->hi = sd.output_frames_gen - r->lo;
        return;
    }
    tandem_rs_design d;
    assert_int_equal(tandem_resample_design(r->rate, &d), TANDEM_OK);
    if (v == NO_WINDOW) d.beta = 0.0;
    if (v == CUTOFF_LOW) d.cutoff *= 0.85;
    if (v == CUTOFF_HIGH) d.cutoff *= 1.10;
    float *taps = malloc(sizeof(float) * (size_t)d.up * d.taps);
    assert_non_null(taps);
    tandem_resample_build_taps(&d, taps);
    int32_t in_len = (int32_t)(v == LATE ? r->n_in - 1 : r->n_in), cls = 0, out_len = 0;
    tandem_k_resample_args a = {.in = v == LATE ? r->x + 1 : r->x, .in_len = &in_len, .cls = &cls, .taps = taps,
                                .out = r->y, .out_len = &out_len, .in_stride = r->n_in, .out_stride = r->n_out,
                                .n_taps = (int64_t)d.up * d.taps, .batch = 1};
    a.classes.n = 1, a.classes.up[0] = d.up, a.classes.down[0] = d.down, a.classes.taps[0] = d.taps;
    tandem_k_resample_host(&a);
    if (v != LATE) assert_int_equal(out_len, r->n_out);
    free(taps);
}

static void tone(run *r, double f) {
    for (int64_t j = 0; j < r->n_in; j++) r->x[j] = (float)(0.5 * sin(2 * PI * f * j / r->rate + 0.3));
}

/* Least-squares amplitude of y's interior at frequency f (Hz at 22050); sub: subtract that
 * sinusoid from y as well (so a second fit is not the first tone's leakage). */
static double fit(run *r, double f, int sub) {
    double ss = 0, cc = 0, sc = 0, ys = 0, yc = 0;
    for (int64_t n = r->lo; n < r->hi; n++) {
        const double s = sin(2 * PI * f * n / 22050.0), c = cos(2 * PI * f * n / 22050.0), y = r->y[n];
        ss += s * s, cc += c * c, sc += s * c, ys += y * s, yc += y * c;
    }
    const double det = ss * cc - sc * sc, a = (ys * cc - yc * sc) / det, b = (yc * ss - ys * sc) / det;
    for (int64_t n = r->lo; sub && n < r->hi; n++)
        r->y[n] -= (float)(a * sin(2 * PI * f * n / 22050.0) + b * cos(2 * PI * f * n / 22050.0));
    return sqrt(a * a + b * b);
}
static double amplitude(run *r, double f) { return fit(r, f, 0); }

static double nyq_low(int rate) { return 0.5 * (rate < 22050 ? rate : 22050); }

/* max |gain| in dB over 20 passband tones */
static double ripple_db(int rate, variant v) {
    run r;
    run_init(&r, rate);
    double worst = 0;
    for (int k = 1; k <= 20; k++) {
        const double f = 0.90 * nyq_low(rate) * k / 20.0;
        tone(&r, f);
        resample(&r, v);
        const double g = fabs(20 * log10(amplitude(&r, f) / 0.5));
        if (g > worst) worst = g;
    }
    run_free(&r);
    return worst;
}

/* The worst alias (decimating: tones above the output Nyquist, measured as the output's rms)
 * or image (interpolating: passband tones, measured at rate - f), in dB of the tone. */
static double stopband_db(int rate, variant v) {
    run r;
    run_init(&r, rate);
    double worst = -400;
    for (int k = 0; k < 16; k++) {
        double level;
        if (rate > 22050) {
            /* 24 kHz: everything above 11025 Hz is below 12127 Hz and folds above the passband */
            if (1.10 * 11025.0 >= 0.98 * rate / 2) break;
            const double f = 1.10 * 11025.0 + (0.98 * rate / 2 - 1.10 * 11025.0) * k / 15.0;
            tone(&r, f);
            resample(&r, v);
            double e = 0;
            for (int64_t n = r.lo; n < r.hi; n++) e += (double)r.y[n] * r.y[n];
            level = 10 * log10(e / (r.hi - r.lo) / (0.5 * 0.5 / 2) + 1e-40);
        } else {
            const double f = 0.90 * nyq_low(rate) * (k + 1) / 16.0;
            tone(&r, f);
            resample(&r, v);
            fit(&r, f, 1);
            level = 20 * log10(amplitude(&r, rate - f) / 0.5 + 1e-20);
        }
        if (level > worst) worst = level;
    }
    run_free(&r);
    return worst;
}

/* SNR of a linear chirp 50 Hz → 0.90 of the lower Nyquist against its float64 value at the
 * output times. */
static double sweep_snr_db(int rate, variant v) {
    run r;
    run_init(&r, rate);
    const double f0 = 50.0, f1 = 0.90 * nyq_low(rate), T = 0.5;
#define CHIRP(t) (0.5 * sin(2 * PI * ((f0) * (t) + ((f1) - (f0)) / (2 * T) * (t) * (t))))
    for (int64_t j = 0; j < r.n_in; j++) r.x[j] = (float)CHIRP((double)j / rate);
    resample(&r, v);
    double sig = 0, err = 0;
    for (int64_t n = r.lo; n < r.hi; n++) {
        const double ref = CHIRP((double)n / 22050.0);
        sig += ref * ref;
        err += (r.y[n] - ref) * (r.y[n] - ref);
    }
#undef CHIRP
    run_free(&r);
    return 10 * log10(sig / (err + 1e-300));
}

typedef double (*yardstick)(int rate, variant v);

/* The design meets `limit` (below it when upper, else above) on every rate, libsamplerate's figure
 * printed beside it, and every listed mistake misses it on at least one rate. */
static void check(const char *what, yardstick fn, double limit, int upper, const variant *bad, int n_bad) {
    int caught[8] = {0};
    for (int i = 0; i < TANDEM_RS_CLASSES; i++) {
        const int rate = tandem_resample_class_rate(i);
        const double ours = fn(rate, GOOD), theirs = fn(rate, SRC);
        printf("%s at %5d Hz: %9.4f (%s %g), %s %9.4f\n", what, rate, ours, upper ? "limit <=" : "limit >=",
               limit, vname[SRC], theirs);
        assert_true(upper ? ours <= limit : ours >= limit);
        for (int b = 0; b < n_bad; b++) {
            const double m = fn(rate, bad[b]);
            if (upper ? m > limit : m < limit) caught[b] = 1;
        }
    }
    for (int b = 0; b < n_bad; b++) {
        printf("%s: %s %s\n", what, vname[bad[b]], caught[b] ? "caught" : "NOT caught");
        assert_true(caught[b]);
    }
}

static void test_passband_ripple(void **state) {
    (void)state;
    const variant bad[] = {NO_WINDOW, CUTOFF_LOW};
    check("passband ripple dB", ripple_db, RIPPLE_DB, 1, bad, 2);
}

static void test_stopband(void **state) {
    (void)state;
    const variant bad[] = {NO_WINDOW, CUTOFF_HIGH};
    check("stopband dB", stopband_db, STOP_DB, 1, bad, 2);
}

static void test_sweep_snr(void **state) {
    (void)state;
    const variant bad[] = {NO_WINDOW, CUTOFF_LOW, CUTOFF_HIGH, LATE};
    check("sweep SNR dB", sweep_snr_db, SNR_DB, 0, bad, 4);
}

/* Five tones inside the lower rate's passband at random phases, as test_audio's tones. */
static double tones_at(double t, double nyq, const double *phase) {
    static const double where[5] = {0.05, 0.2, 0.45, 0.7, 0.95};
    double s = 0.0;
    for (int i = 0; i < 5; i++) s += 0.15 * sin(2 * PI * 0.85 * nyq * where[i] * t + phase[i]);
    return s;
}

/* The features through the device path: for every covered rate the resampled tones and the
 * tones sampled at 22050 Hz in float64, within test_audio's bounds for the CPU resampler: max
 * |error| 1e-4 of full scale in the interior, log-mel (host recipe, which test_mel checks
 * against a float64 reference) within 1e-2 on frames whose window lies in the interior. */
static void test_features_every_rate(void **state) {
    (void)state;
    tandem_rng rng = {12345};
    tandem_mel_host *m = NULL;
    assert_int_equal(tandem_mel_host_create(&m), TANDEM_OK);
    for (int i = 0; i < TANDEM_RS_CLASSES; i++) {
        const int rate = tandem_resample_class_rate(i);
        double phase[5];
        for (int k = 0; k < 5; k++) phase[k] = tandem_rng_uniform(&rng, 0.0f, 6.28f);
        run r;
        run_init(&r, rate);
        for (int64_t j = 0; j < r.n_in; j++) r.x[j] = (float)tones_at((double)j / rate, nyq_low(rate), phase);
        resample(&r, GOOD);
        float *ref = malloc(sizeof(float) * (size_t)r.n_out);
        assert_non_null(ref);
        for (int64_t n = 0; n < r.n_out; n++) ref[n] = (float)tones_at(n / 22050.0, nyq_low(rate), phase);
        double worst = 0, worst_mel = 0;
        for (int64_t n = r.lo; n < r.hi; n++) worst = fmax(worst, fabs((double)r.y[n] - ref[n]));
        const int max_frames = (int)(r.n_out / TANDEM_MEL_HOP);
        float *my = malloc(sizeof(float) * (size_t)max_frames * TANDEM_MEL_N_MELS);
        float *mr = malloc(sizeof(float) * (size_t)max_frames * TANDEM_MEL_N_MELS);
        assert_true(my && mr);
        int fy = 0, fr = 0, checked = 0;
        assert_int_equal(tandem_mel_host_compute(m, r.y, r.n_out, my, max_frames, &fy), TANDEM_OK);
        assert_int_equal(tandem_mel_host_compute(m, ref, r.n_out, mr, max_frames, &fr), TANDEM_OK);
        assert_int_equal(fy, fr);
        for (int t = 0; t < fy; t++) {
            const int64_t first = (int64_t)t * TANDEM_MEL_HOP - TANDEM_MEL_PAD, last = first + TANDEM_MEL_N_FFT - 1;
            if (first < r.lo || last >= r.hi) continue;
            checked++;
            for (int b = 0; b < TANDEM_MEL_N_MELS; b++)
                worst_mel = fmax(worst_mel, fabs((double)my[t * TANDEM_MEL_N_MELS + b] - mr[t * TANDEM_MEL_N_MELS + b]));
        }
        printf("features at %5d Hz: interior max |error| %.2e, log-mel max |diff| %.2e over %d frames\n", rate, worst,
               worst_mel, checked);
        assert_true(checked > 20);
        assert_true(worst <= 1e-4);
        assert_true(worst_mel <= 1e-2);
        free(my);
        free(mr);
        free(ref);
        run_free(&r);
    }
    tandem_mel_host_free(m);
}

/* Lengths follow the decoder's rule, round(n * 22050 / rate), for every class. */
static void test_lengths(void **state) {
    (void)state;
    tandem_k_rs_classes k = {.n = TANDEM_RS_CLASSES};
    for (int i = 0; i < TANDEM_RS_CLASSES; i++) {
        tandem_rs_design d;
        tandem_resample_design(tandem_resample_class_rate(i), &d);
        k.up[i] = d.up, k.down[i] = d.down;
        for (int64_t n = 1; n < 300000; n += 997)
            assert_int_equal(tandem_k_rs_out_len(&k, i, n, INT64_MAX),
                             llround((double)n * 22050 / tandem_resample_class_rate(i)));
    }
    assert_int_equal(tandem_resample_class(22050), -1);
    assert_int_equal(tandem_resample_class(11025), -1);
    assert_int_equal(tandem_resample_class(32000), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lengths),
        cmocka_unit_test(test_passband_ripple),
        cmocka_unit_test(test_stopband),
        cmocka_unit_test(test_sweep_snr),
        cmocka_unit_test(test_features_every_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
