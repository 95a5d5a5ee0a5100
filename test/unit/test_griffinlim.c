/* test_griffinlim.c — the STFT pair against a direct DFT in double and as a perfect
 * reconstruction, the mel inversion against a known non-negative spectrum, and Griffin-Lim
 * end to end: a synthetic harmonic signal → its log-mel → Griffin-Lim → the log-mel of the
 * result must be close to the input (spectral convergence threshold below). */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>

#include <cmocka.h>

#include "runtime/audio/griffinlim.h"
#include "runtime/audio/mel.h"
#include "test/testutil.h"

static tandem_rng rng;
static const double PI = 3.14159265358979323846;

/* numpy "reflect" written out independently: mirror without repeating the edge sample. */
static int64_t reflect_ref(int64_t j, int64_t len) {
    while (j < 0 || j >= len) {
        if (j < 0) j = -j;
        if (j >= len) j = 2 * (len - 1) - j;
    }
    return j;
}

static void test_stft_matches_dft(void **state) {
    (void)state;
    int frames = (int)tandem_rng_int(&rng, 3, 12);
    int64_t len = (int64_t)frames * TANDEM_MEL_HOP;
    float *x = malloc(sizeof(float) * (size_t)len);
    for (int64_t i = 0; i < len; i++) x[i] = tandem_rng_uniform(&rng, -1, 1);
    float *re = malloc(sizeof(float) * (size_t)frames * TANDEM_MEL_N_BINS);
    float *im = malloc(sizeof(float) * (size_t)frames * TANDEM_MEL_N_BINS);
    tandem_griffinlim *g = NULL;
    assert_int_equal(tandem_griffinlim_create(frames, &g), TANDEM_OK);
    assert_int_equal(tandem_griffinlim_stft(g, x, frames, re, im), TANDEM_OK);
    double worst = 0;
    const int check_frames[] = {0, frames / 2, frames - 1};
    for (int c = 0; c < 3; c++) {
        int t = check_frames[c];
        for (int k = 0; k < TANDEM_MEL_N_BINS; k += (int)tandem_rng_int(&rng, 1, 40)) {
            double sr = 0, si = 0;
            for (int n = 0; n < TANDEM_MEL_N_FFT; n++) {
                double w = 0.5 - 0.5 * cos(2 * PI * n / (double)TANDEM_MEL_N_FFT);
                double v = w * x[reflect_ref((int64_t)t * TANDEM_MEL_HOP + n - TANDEM_MEL_PAD, len)];
                sr += v * cos(2 * PI * k * n / (double)TANDEM_MEL_N_FFT);
                si -= v * sin(2 * PI * k * n / (double)TANDEM_MEL_N_FFT);
            }
            double e = fmax(fabs(sr - re[t * TANDEM_MEL_N_BINS + k]), fabs(si - im[t * TANDEM_MEL_N_BINS + k]));
            if (e > worst) worst = e;
        }
    }
    print_message("STFT vs direct DFT: max abs error %.3g (values up to ~30)\n", worst);
    assert_true(worst < 1e-4);
    /* perfect reconstruction with the true phases */
    float *y = malloc(sizeof(float) * (size_t)len);
    assert_int_equal(tandem_griffinlim_istft(g, re, im, frames, y), TANDEM_OK);
    double err = 0;
    for (int64_t i = 0; i < len; i++) err = fmax(err, fabs(y[i] - x[i]));
    print_message("ISTFT(STFT(x)) - x: max abs error %.3g\n", err);
    assert_true(err < 1e-5);
    assert_int_equal(tandem_griffinlim_stft(g, x, frames + 1, re, im), TANDEM_E_INVALID);
    tandem_griffinlim_free(g);
    free(x), free(y), free(re), free(im);
}

static void test_mel_inversion(void **state) {
    (void)state;
    enum { T = 8 };
    double *fb = malloc(sizeof(double) * TANDEM_MEL_N_MELS * TANDEM_MEL_N_BINS);
    tandem_mel_filterbank_f64(fb);
    float *s0 = calloc(T * TANDEM_MEL_N_BINS, sizeof(float)), *s = malloc(sizeof(float) * T * TANDEM_MEL_N_BINS);
    float *logmel = malloc(sizeof(float) * T * TANDEM_MEL_N_MELS);
    for (int t = 0; t < T; t++) {
        /* a smooth positive spectrum with peaks, zero above 8 kHz (bin 372) */
        double f0 = tandem_rng_uniform(&rng, 100, 300);
        for (int k = 0; k < 372; k++) {
            double hz = k * (double)TANDEM_MEL_SAMPLE_RATE / TANDEM_MEL_N_FFT;
            double v = 0.05;
            for (int h = 1; h * f0 < TANDEM_MEL_FMAX; h++) v += 3.0 / h * exp(-pow((hz - h * f0) / 60.0, 2));
            s0[t * TANDEM_MEL_N_BINS + k] = (float)v;
        }
        for (int m = 0; m < TANDEM_MEL_N_MELS; m++) {
            double acc = 0;
            for (int k = 0; k < TANDEM_MEL_N_BINS; k++)
                acc += fb[m * TANDEM_MEL_N_BINS + k] * s0[t * TANDEM_MEL_N_BINS + k];
            logmel[t * TANDEM_MEL_N_MELS + m] = (float)log(acc);
        }
    }
    tandem_griffinlim *g = NULL;
    assert_int_equal(tandem_griffinlim_create(T, &g), TANDEM_OK);
    assert_int_equal(tandem_griffinlim_mel_to_linear(g, logmel, T, s), TANDEM_OK);
    double num = 0, den = 0;
    for (int t = 0; t < T; t++)
        for (int m = 0; m < TANDEM_MEL_N_MELS; m++) {
            double acc = 0;
            for (int k = 0; k < TANDEM_MEL_N_BINS; k++) {
                assert_true(s[t * TANDEM_MEL_N_BINS + k] >= 0.0f);
                acc += fb[m * TANDEM_MEL_N_BINS + k] * s[t * TANDEM_MEL_N_BINS + k];
            }
            double want = exp(logmel[t * TANDEM_MEL_N_MELS + m]);
            num += (acc - want) * (acc - want);
            den += want * want;
        }
    double rel = sqrt(num / den);
    print_message("mel inversion: ||fb S - mel|| / ||mel|| = %.2e\n", rel);
    /* 80 equations, ~372 unknowns: the projection can match the mel almost exactly */
    assert_true(rel < 0.02);
    logmel[5] = NAN;
    assert_int_equal(tandem_griffinlim_mel_to_linear(g, logmel, T, s), TANDEM_E_INVALID);
    tandem_griffinlim_free(g);
    free(fb), free(s0), free(s), free(logmel);
}

/* Spectral convergence of two log-mels on the linear mel scale. */
static double spectral_convergence(const float *a, const float *b, int n) {
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        double x = exp(a[i]), y = exp(b[i]);
        num += (x - y) * (x - y);
        den += x * x;
    }
    return sqrt(num / den);
}

static void test_griffinlim_round_trip(void **state) {
    (void)state;
    const int64_t len = 26460; /* 1.2 s */
    float *x = malloc(sizeof(float) * len);
    double f0 = tandem_rng_uniform(&rng, 110, 240), phase = 0;
    for (int64_t i = 0; i < len; i++) {
        double t = (double)i / (double)TANDEM_MEL_SAMPLE_RATE;
        double f = f0 * (1.0 + 0.03 * sin(2 * PI * 5.0 * t)); /* vibrato */
        phase += 2 * PI * f / (double)TANDEM_MEL_SAMPLE_RATE;
        double env = 0.5 * (1 - cos(2 * PI * fmin(t / 1.2, 1.0)));
        double v = 0;
        for (int h = 1; h <= 12 && h * f < TANDEM_MEL_FMAX; h++) v += 0.3 / h * sin(h * phase);
        x[i] = (float)(env * v);
    }
    int frames = (int)tandem_mel_frame_count(len), got = 0;
    tandem_mel_host *mh = NULL;
    assert_int_equal(tandem_mel_host_create(&mh), TANDEM_OK);
    float *mel_in = malloc(sizeof(float) * frames * TANDEM_MEL_N_MELS);
    float *mel_out = malloc(sizeof(float) * frames * TANDEM_MEL_N_MELS);
    assert_int_equal(tandem_mel_host_compute(mh, x, len, mel_in, frames, &got), TANDEM_OK);
    assert_int_equal(got, frames);

    tandem_griffinlim *g = NULL;
    assert_int_equal(tandem_griffinlim_create(frames, &g), TANDEM_OK);
    float *y = malloc(sizeof(float) * (size_t)frames * TANDEM_MEL_HOP);
    double sc[2];
    const int iters[2] = {1, TANDEM_GL_DEFAULT_ITERS};
    for (int r = 0; r < 2; r++) {
        uint64_t allocs = tandem_alloc_count();
        assert_int_equal(tandem_griffinlim_synthesize(g, mel_in, frames, iters[r], 1234, y), TANDEM_OK);
        assert_int_equal(tandem_alloc_count(), allocs);
        for (int64_t i = 0; i < (int64_t)frames * TANDEM_MEL_HOP; i++) assert_true(isfinite(y[i]));
        assert_int_equal(tandem_mel_host_compute(mh, y, (int64_t)frames * TANDEM_MEL_HOP, mel_out, frames, &got),
                         TANDEM_OK);
        sc[r] = spectral_convergence(mel_in, mel_out, frames * TANDEM_MEL_N_MELS);
        double mae = 0;
        int n = 0;
        for (int i = 0; i < frames * TANDEM_MEL_N_MELS; i++)
            if (mel_in[i] > -6.0f) { /* bands with energy (the floor is ln 1e-5 = -11.5) */
                mae += fabs(mel_in[i] - mel_out[i]);
                n++;
            }
        print_message("Griffin-Lim %2d iterations: mel spectral convergence %.4f, mean |dlog-mel| %.3f over %d "
                      "active bins\n", iters[r], sc[r], mae / n, n);
    }
    /* Threshold: the mel inversion alone is near exact (test above), so what remains is
     * Griffin-Lim's phase inconsistency; 32 fast-GL iterations on this harmonic signal measured
     * 0.047-0.085 over eight seeds (f0 110-240 Hz), one iteration ~0.3. 0.2 leaves margin for
     * other seeds while still failing for a broken STFT pair or phase update. */
    assert_true(sc[1] < 0.2);
    assert_true(sc[1] < sc[0]);
    assert_int_equal(tandem_griffinlim_synthesize(g, mel_in, frames, 0, 1, y), TANDEM_E_INVALID);
    tandem_griffinlim_free(g);
    tandem_mel_host_free(mh);
    free(x), free(y), free(mel_in), free(mel_out);
}

int main(void) {
    rng.s = tandem_test_seed("test_griffinlim");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stft_matches_dft),
        cmocka_unit_test(test_mel_inversion),
        cmocka_unit_test(test_griffinlim_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
