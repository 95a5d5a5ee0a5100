/* test_audio.c — the audio decoder (runtime/audio/audio.h).
 *
 * Files are written by the test with libsndfile into a temporary directory from samples the
 * test chose, so the expected decoded values are known exactly:
 *   16-bit PCM → q / 32768, 24-bit PCM → v / 2^23, float → as written, stereo → (L + R) / 2,
 *   for WAV and FLAC at 22050 Hz (bit-exact: every such value is a float).
 * Other rates (16000, 44100, 48000 Hz) hold a sum of sines below 6.5 kHz written as float;
 * the decoder's output must match the same sum sampled directly at 22050 Hz within the
 * resampler's error: in the interior (the first and last 64 samples excluded, where the sinc
 * filter sees the signal's edges) max |error| <= 1e-4 of full scale (SRC_SINC_MEDIUM_QUALITY is
 * specified at 97 dB SNR, i.e. ~1.4e-5; measured <= 1e-6 on these in-band tones), and the
 * log-mel of the two signals (host path, which test_mel checks against a float64 reference)
 * within 1e-2 on frames whose windows lie in that interior (measured <= 1.5e-3, in the bands
 * above the tones where only window leakage near the 1e-5 floor lands). The decoded count is
 * exactly round(frames * 22050 / rate), as probe reports.
 * Broken inputs — random bytes, a corrupt header, WAV and FLAC cut mid-data, an empty file, a
 * header without frames, a missing file — must give TANDEM_E_FORMAT (TANDEM_E_IO for the
 * missing file) with the file's name in the message, and never crash (also run under ASan).
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sndfile.h>

#include "runtime/audio/audio.h"
#include "runtime/audio/mel.h"
#include "tandem.h"
#include "test/fixtures.h"

static char dir[256];
static tandem_rng rng;

static void path_of(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", dir, name); }

static int setup(void **state) {
    (void)state;
    rng.s = tandem_test_seed("test_audio");
    return tandem_test_mkdtemp(dir, sizeof dir, "test_audio");
}

static int teardown(void **state) {
    (void)state;
    return tandem_test_rmtree(dir);
}

/* Decode path into a buffer of cap samples; returns the samples (caller frees). */
static float *decode_ok(const char *path, int64_t cap, int64_t *n, tandem_audio_info *info) {
    float *out = (float *)malloc(sizeof(float) * (size_t)(cap > 0 ? cap : 1));
    tandem_status st = tandem_audio_load(path, out, cap, n, info);
    if (st != TANDEM_OK) fail_msg("decode %s: %s: %s", path, tandem_status_name(st), tandem_last_error());
    return out;
}

static void expect_exact(const char *what, const float *got, int64_t n_got, const float *want, int64_t n_want) {
    if (n_got != n_want) fail_msg("%s: %lld samples, expected %lld", what, (long long)n_got, (long long)n_want);
    for (int64_t i = 0; i < n_want; i++)
        if (got[i] != want[i])
            fail_msg("%s: sample %lld is %.9g, expected %.9g", what, (long long)i, (double)got[i], (double)want[i]);
}

/* ---- 22050 Hz: exact ---- */

static void check_pcm16(const char *name, int major) {
    char path[320];
    path_of(path, sizeof path, name);
    const int n = TANDEM_AUDIO_RATE + 321;
    short *q = (short *)malloc(sizeof(short) * n);
    float *want = (float *)malloc(sizeof(float) * n);
    for (int i = 0; i < n; i++) {
        double v = 0.6 * sin(2.0 * M_PI * 440.0 * i / (double)TANDEM_AUDIO_RATE) + tandem_rng_uniform(&rng, -0.3f, 0.3f);
        q[i] = (short)lrint(v * 32767.0);
        want[i] = (float)(q[i] / 32768.0);
    }
    q[7] = -32768; /* full negative scale → exactly -1 */
    want[7] = -1.0f;
    SNDFILE *f = tandem_test_sf_create(path, major | SF_FORMAT_PCM_16, TANDEM_AUDIO_RATE, 1);
    assert_int_equal(sf_write_short(f, q, n), n);
    sf_close(f);

    tandem_audio_info info;
    assert_int_equal(tandem_audio_probe(path, &info), TANDEM_OK);
    assert_int_equal(info.frames, n);
    assert_int_equal(info.sample_rate, TANDEM_AUDIO_RATE);
    assert_int_equal(info.samples_22050, n);
    int64_t got_n = 0;
    float *got = decode_ok(path, n, &got_n, &info); /* exactly enough room */
    expect_exact(name, got, got_n, want, n);
    free(got);
    free(q);
    free(want);
}

static void test_wav16(void **state) {
    (void)state;
    check_pcm16("pcm16.wav", SF_FORMAT_WAV);
}

static void test_flac16(void **state) {
    (void)state;
    check_pcm16("pcm16.flac", SF_FORMAT_FLAC);
}

static void test_wav24(void **state) {
    (void)state;
    char path[320];
    path_of(path, sizeof path, "pcm24.wav");
    const int n = 5000;
    int *v = (int *)malloc(sizeof(int) * n);
    float *want = (float *)malloc(sizeof(float) * n);
    for (int i = 0; i < n; i++) {
        int s24 = (int)tandem_rng_int(&rng, -8388608, 8388607);
        v[i] = (int)((unsigned)s24 << 8); /* sf_write_int takes 32-bit; PCM_24 keeps the top 24 */
        want[i] = (float)(s24 / 8388608.0);
    }
    SNDFILE *f = tandem_test_sf_create(path, SF_FORMAT_WAV | SF_FORMAT_PCM_24, TANDEM_AUDIO_RATE, 1);
    assert_int_equal(sf_write_int(f, v, n), n);
    sf_close(f);
    int64_t got_n = 0;
    float *got = decode_ok(path, n + 10, &got_n, NULL);
    expect_exact("pcm24.wav", got, got_n, want, n);
    free(got);
    free(v);
    free(want);
}

static void test_float_wav(void **state) {
    (void)state;
    char path[320];
    path_of(path, sizeof path, "float.wav");
    const int n = 4000;
    float *x = (float *)malloc(sizeof(float) * n);
    for (int i = 0; i < n; i++) x[i] = tandem_rng_uniform(&rng, -1.5f, 1.5f); /* past full scale: kept */
    SNDFILE *f = tandem_test_sf_create(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, TANDEM_AUDIO_RATE, 1);
    assert_int_equal(sf_write_float(f, x, n), n);
    sf_close(f);
    int64_t got_n = 0;
    float *got = decode_ok(path, n, &got_n, NULL);
    expect_exact("float.wav", got, got_n, x, n);
    free(got);
    free(x);
}

static void test_stereo_downmix(void **state) {
    (void)state;
    char path[320];
    path_of(path, sizeof path, "stereo.wav");
    const int n = 3000;
    short *q = (short *)malloc(sizeof(short) * 2 * n);
    float *want = (float *)malloc(sizeof(float) * n);
    for (int i = 0; i < n; i++) {
        q[2 * i] = (short)tandem_rng_int(&rng, -32768, 32767);
        q[2 * i + 1] = (short)tandem_rng_int(&rng, -32768, 32767);
        want[i] = (float)((q[2 * i] / 32768.0 + q[2 * i + 1] / 32768.0) / 2.0);
    }
    SNDFILE *f = tandem_test_sf_create(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, TANDEM_AUDIO_RATE, 2);
    assert_int_equal(sf_writef_short(f, q, n), n);
    sf_close(f);
    int64_t got_n = 0;
    tandem_audio_info info;
    float *got = decode_ok(path, n, &got_n, &info);
    assert_int_equal(info.channels, 2);
    expect_exact("stereo.wav (mean of channels)", got, got_n, want, n);
    free(got);
    free(q);
    free(want);
}

/* ---- other rates: within resampling error ---- */

static const double tone_hz[] = {220.0, 1234.5, 3000.0, 4567.0, 6500.0};
static double tone_phase[5];

static double tones(double t) {
    double s = 0.0;
    for (int i = 0; i < 5; i++) s += 0.15 * sin(2.0 * M_PI * tone_hz[i] * t + tone_phase[i]);
    return s;
}

static void check_rate(int rate) {
    char name[64], path[320];
    snprintf(name, sizeof name, "tones_%d.wav", rate);
    path_of(path, sizeof path, name);
    for (int i = 0; i < 5; i++) tone_phase[i] = tandem_rng_uniform(&rng, 0.0f, 6.28f);
    const int n_in = (int)(1.25 * rate) + 17;
    float *x = (float *)malloc(sizeof(float) * n_in);
    for (int i = 0; i < n_in; i++) x[i] = (float)tones((double)i / rate);
    SNDFILE *f = tandem_test_sf_create(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, rate, 1);
    assert_int_equal(sf_write_float(f, x, n_in), n_in);
    sf_close(f);

    int64_t want_n = llround((double)n_in * (double)TANDEM_AUDIO_RATE / rate);
    int64_t n = 0;
    tandem_audio_info info;
    float *y = decode_ok(path, want_n + 100, &n, &info);
    assert_int_equal(info.sample_rate, rate);
    assert_int_equal(info.samples_22050, want_n);
    if (n != want_n) fail_msg("%s: %lld samples after resampling, expected round(%d * 22050 / %d) = %lld", name,
                              (long long)n, n_in, rate, (long long)want_n);
    float *ref = (float *)malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) ref[i] = (float)tones((double)i / (double)TANDEM_AUDIO_RATE);

    const int edge = 64;
    double worst = 0.0;
    for (int64_t i = edge; i < n - edge; i++) {
        double d = fabs((double)y[i] - ref[i]);
        if (d > worst) worst = d;
    }
    /* log-mel on frames whose 1024-sample window lies in the interior */
    tandem_mel_host *m = NULL;
    assert_int_equal(tandem_mel_host_create(&m), TANDEM_OK);
    int max_frames = (int)(n / TANDEM_MEL_HOP);
    float *my = (float *)malloc(sizeof(float) * (size_t)max_frames * TANDEM_MEL_N_MELS);
    float *mr = (float *)malloc(sizeof(float) * (size_t)max_frames * TANDEM_MEL_N_MELS);
    int fy = 0, fr = 0;
    assert_int_equal(tandem_mel_host_compute(m, y, n, my, max_frames, &fy), TANDEM_OK);
    assert_int_equal(tandem_mel_host_compute(m, ref, n, mr, max_frames, &fr), TANDEM_OK);
    assert_int_equal(fy, fr);
    double worst_mel = 0.0;
    int frames_checked = 0;
    for (int t = 0; t < fy; t++) {
        int64_t first = (int64_t)t * TANDEM_MEL_HOP - TANDEM_MEL_PAD, last = first + TANDEM_MEL_N_FFT - 1;
        if (first < edge || last >= n - edge) continue;
        frames_checked++;
        for (int b = 0; b < TANDEM_MEL_N_MELS; b++) {
            double d = fabs((double)my[t * TANDEM_MEL_N_MELS + b] - mr[t * TANDEM_MEL_N_MELS + b]);
            if (d > worst_mel) worst_mel = d;
        }
    }
    printf("  %5d Hz → 22050 Hz: %lld samples, interior max |error| %.2e, log-mel max |diff| %.2e over %d frames\n",
           rate, (long long)n, worst, worst_mel, frames_checked);
    assert_true(frames_checked > 50);
    if (worst > 1e-4) fail_msg("%s: resampled signal off by %g (bound 1e-4)", name, worst);
    if (worst_mel > 1e-2) fail_msg("%s: log-mel off by %g (bound 1e-2)", name, worst_mel);
    tandem_mel_host_free(m);
    free(my);
    free(mr);
    free(ref);
    free(y);
    free(x);
}

static void test_resample_16000(void **state) {
    (void)state;
    check_rate(16000);
}
static void test_resample_44100(void **state) {
    (void)state;
    check_rate(44100);
}
static void test_resample_48000(void **state) {
    (void)state;
    check_rate(48000);
}

/* ---- limits ---- */

static void test_too_long(void **state) {
    (void)state;
    char path[320];
    path_of(path, sizeof path, "pcm16.wav"); /* 22371 samples, from test_wav16 */
    float *out = (float *)malloc(sizeof(float) * 22050);
    int64_t n = 123;
    assert_int_equal(tandem_audio_load(path, out, 22050, &n, NULL), TANDEM_E_BUDGET);
    assert_int_equal(n, 0);
    assert_non_null(strstr(tandem_last_error(), "too long"));
    assert_non_null(strstr(tandem_last_error(), path));
    path_of(path, sizeof path, "tones_48000.wav"); /* resampled: ~27583 samples */
    assert_int_equal(tandem_audio_load(path, out, 22050, &n, NULL), TANDEM_E_BUDGET);
    free(out);
}

/* ---- broken files ---- */

static void expect_error(const char *path, tandem_status want) {
    float *out = (float *)malloc(sizeof(float) * 100000); /* room for every source file */
    int64_t n = 77;
    tandem_status st = tandem_audio_load(path, out, 100000, &n, NULL);
    free(out);
    const char *msg = tandem_last_error();
    printf("  %-40s → %s: %s\n", strrchr(path, '/') + 1, tandem_status_name(st), msg);
    if (st != want) fail_msg("%s: %s, expected %s", path, tandem_status_name(st), tandem_status_name(want));
    assert_int_equal(n, 0);
    if (!strstr(msg, path)) fail_msg("%s: the message does not name the file: %s", path, msg);
}

static void test_broken_files(void **state) {
    (void)state;
    char src[320], path[320];
    size_t len = 0;

    path_of(path, sizeof path, "random_bytes.wav");
    unsigned char junk[5000];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)tandem_rng_next(&rng);
    tandem_test_write_file(path, junk, sizeof junk);
    expect_error(path, TANDEM_E_FORMAT);

    path_of(path, sizeof path, "empty.wav");
    tandem_test_write_file(path, "", 0);
    expect_error(path, TANDEM_E_FORMAT);

    path_of(src, sizeof src, "pcm16.wav");
    unsigned char *wav = tandem_test_read_file_ok(src, &len);
    path_of(path, sizeof path, "truncated_data.wav");
    tandem_test_write_file(path, wav, len / 2);
    expect_error(path, TANDEM_E_FORMAT);
    path_of(path, sizeof path, "header_only.wav");
    tandem_test_write_file(path, wav, 44);
    expect_error(path, TANDEM_E_FORMAT);
    path_of(path, sizeof path, "truncated_header.wav");
    tandem_test_write_file(path, wav, 30);
    expect_error(path, TANDEM_E_FORMAT);
    path_of(path, sizeof path, "corrupt_fmt.wav");
    wav[20] ^= 0x5a; /* the fmt chunk's format tag */
    wav[22] = 0;     /* zero channels */
    tandem_test_write_file(path, wav, len);
    expect_error(path, TANDEM_E_FORMAT);
    free(wav);

    path_of(src, sizeof src, "pcm16.flac");
    unsigned char *flac = tandem_test_read_file_ok(src, &len);
    path_of(path, sizeof path, "truncated.flac");
    tandem_test_write_file(path, flac, len / 2);
    expect_error(path, TANDEM_E_FORMAT);
    /* damaged audio frames at several places: the FLAC decoder loses sync (which libsndfile
     * only logs) or comes up short; both must be errors, not silently shorter audio */
    for (int k = 1; k <= 5; k++) {
        unsigned char *bad = (unsigned char *)malloc(len);
        memcpy(bad, flac, len);
        size_t at = len * (size_t)k / 7, span = 40 * (size_t)k;
        for (size_t i = at; i < at + span && i < len; i++) bad[i] ^= 0xa5;
        char name[64];
        snprintf(name, sizeof name, "corrupt_frames_%d.flac", k);
        path_of(path, sizeof path, name);
        tandem_test_write_file(path, bad, len);
        expect_error(path, TANDEM_E_FORMAT);
        free(bad);
    }
    free(flac);

    path_of(path, sizeof path, "does_not_exist.wav");
    expect_error(path, TANDEM_E_IO);
    tandem_audio_info info;
    assert_int_equal(tandem_audio_probe(path, &info), TANDEM_E_IO);
    path_of(path, sizeof path, "empty.wav");
    assert_int_equal(tandem_audio_probe(path, &info), TANDEM_E_FORMAT);
}

/* ---- threads: opens are serialised, decoders are per thread ---- */

typedef struct worker {
    const char *path;
    const float *want;
    int64_t n;
    int failures;
} worker;

static void *decode_worker(void *arg) {
    worker *w = (worker *)arg;
    tandem_audio_decoder *d = NULL;
    if (tandem_audio_decoder_create(&d) != TANDEM_OK) {
        w->failures++;
        return NULL;
    }
    float *out = (float *)malloc(sizeof(float) * (size_t)(w->n + 100));
    for (int rep = 0; rep < 20; rep++) {
        int64_t n = 0;
        if (tandem_audio_decode(d, w->path, out, w->n + 100, &n, NULL) != TANDEM_OK || n != w->n ||
            memcmp(out, w->want, sizeof(float) * (size_t)n) != 0)
            w->failures++;
    }
    free(out);
    tandem_audio_decoder_free(d);
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    char a[320], b[320];
    path_of(a, sizeof a, "pcm16.flac");
    path_of(b, sizeof b, "tones_44100.wav");
    int64_t na = 0, nb = 0;
    float *wa = decode_ok(a, 40000, &na, NULL);
    float *wb = decode_ok(b, 40000, &nb, NULL);
    worker w[4] = {{a, wa, na, 0}, {b, wb, nb, 0}, {a, wa, na, 0}, {b, wb, nb, 0}};
    pthread_t th[4];
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&th[i], NULL, decode_worker, &w[i]), 0);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++) assert_int_equal(w[i].failures, 0);
    free(wa);
    free(wb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wav16),          cmocka_unit_test(test_flac16),
        cmocka_unit_test(test_wav24),          cmocka_unit_test(test_float_wav),
        cmocka_unit_test(test_stereo_downmix), cmocka_unit_test(test_resample_16000),
        cmocka_unit_test(test_resample_44100), cmocka_unit_test(test_resample_48000),
        cmocka_unit_test(test_too_long),       cmocka_unit_test(test_broken_files),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
