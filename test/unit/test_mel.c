/* test_mel.c — the log-mel recipe against an independent float64 reference.
 *
 * The reference is this file's own: reflect padding by walking back and forth (not the
 * library's modulo formula), its own periodic Hann window, a direct O(N^2) DFT in double and
 * the filterbank librosa produced (test/golden/mel_filterbank_librosa.txt, made once by
 * bench/golden/make_mel_golden.py). Both the host path (tandem_mel_host_compute, own FFT) and
 * the device path (tandem_mel_batch on a host device: kernels + CBLAS GEMMs) must be within
 * 1e-3 absolute of it on every log-mel value, write exact silence (ln 1e-5, tandem_mel_silence) on padded frames, and give
 * floor(len / 256) frames. Inputs: a sine sweep, silence, white noise, signals shorter than
 * n_fft (one of them shorter than the 384-sample pad, so the reflection repeats), one shorter
 * than a hop (no frames), and speech from espeak-ng when it is installed.
 * test_features_cli runs `tandem features` itself on 16-bit WAV and FLAC, 24-bit WAV and
 * stereo float WAV at 22050 Hz (same reference, on the samples the file holds) and on files at
 * 16/44.1/48 kHz (against the 22050 Hz reference of the same sound, within resampling error).
 */
#include <math.h>
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
#include "runtime/audio/mel_device.h"
#include "tandem.h"
#include "test/fixtures.h"

/* the recipe's numbers (kernels/mel.h); the reference below computes the recipe on its own */
#define N_FFT TANDEM_MEL_N_FFT
#define HOP TANDEM_MEL_HOP
#define PAD TANDEM_MEL_PAD
#define N_BINS TANDEM_MEL_N_BINS
#define N_MELS TANDEM_MEL_N_MELS
#define SR TANDEM_MEL_SAMPLE_RATE
#define LOG_FLOOR ((double)TANDEM_MEL_LOG_FLOOR)
#define TOL 1e-3

/* ---- golden filterbank ---- */

static double golden_fb[N_MELS][N_BINS];
static int golden_nonzero;

static int load_golden(void) {
    const char *path = TANDEM_SOURCE_DIR "/test/golden/mel_filterbank_librosa.txt";
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    memset(golden_fb, 0, sizeof golden_fb);
    golden_nonzero = 0;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        int m, k;
        double w;
        if (sscanf(line, "%d %d %lf", &m, &k, &w) != 3 || m < 0 || m >= N_MELS || k < 0 || k >= N_BINS) {
            fprintf(stderr, "%s: bad line: %s", path, line);
            fclose(f);
            return -1;
        }
        golden_fb[m][k] = w;
        golden_nonzero++;
    }
    fclose(f);
    return golden_nonzero > 0 ? 0 : -1;
}

/* ---- float64 reference ---- */

static double cos_table[N_FFT], sin_table[N_FFT];

static void reference_init(void) {
    for (int i = 0; i < N_FFT; i++) {
        cos_table[i] = cos(2.0 * M_PI * i / N_FFT);
        sin_table[i] = sin(2.0 * M_PI * i / N_FFT);
    }
}

/* Reflect by bouncing off both ends until inside [0, len). */
static long ref_reflect(long j, long len) {
    if (len == 1) return 0;
    while (j < 0 || j >= len) {
        if (j < 0) j = -j;
        if (j >= len) j = 2 * (len - 1) - j;
    }
    return j;
}

/* out [T, 80], T = floor(len / 256) */
static int reference_logmel(const float *x, long len, double *out) {
    int frames = (int)(len / HOP);
    double frame[N_FFT], mag[N_BINS];
    for (int t = 0; t < frames; t++) {
        for (int n = 0; n < N_FFT; n++) {
            double w = 0.5 * (1.0 - cos(2.0 * M_PI * n / N_FFT));
            frame[n] = w * x[ref_reflect((long)t * HOP + n - PAD, len)];
        }
        for (int k = 0; k < N_BINS; k++) {
            double re = 0.0, im = 0.0;
            for (int n = 0; n < N_FFT; n++) {
                int idx = (n * k) % N_FFT;
                re += frame[n] * cos_table[idx];
                im -= frame[n] * sin_table[idx];
            }
            mag[k] = sqrt(re * re + im * im + 1e-9);
        }
        for (int m = 0; m < N_MELS; m++) {
            double acc = 0.0;
            for (int k = 0; k < N_BINS; k++) acc += golden_fb[m][k] * mag[k];
            out[(size_t)t * N_MELS + m] = log(acc > LOG_FLOOR ? acc : LOG_FLOOR);
        }
    }
    return frames;
}

/* ---- test signals ---- */

#define N_SIGNALS 8
typedef struct signal {
    const char *name;
    float *x;
    long len;
} signal;
static signal sigs[N_SIGNALS];
static int n_sigs;
static tandem_rng rng;

static signal *add_signal(const char *name, long len) {
    signal *s = &sigs[n_sigs++];
    s->name = name;
    s->len = len;
    s->x = (float *)calloc((size_t)(len > 0 ? len : 1), sizeof(float));
    return s;
}

static int make_signals(void **state) {
    (void)state;
    rng.s = tandem_test_seed("test_mel");
    reference_init();
    if (load_golden() != 0) return -1;
    n_sigs = 0;
    /* linear sweep 50 Hz → 10 kHz over 1.5 s (past fmax: the top bands see it leave) */
    signal *s = add_signal("sine sweep", (long)(1.5 * SR) + 77);
    double f0 = 50.0, f1 = 10000.0, dur = (double)s->len / SR;
    double phase0 = tandem_rng_uniform(&rng, 0.0f, 6.28f);
    for (long i = 0; i < s->len; i++) {
        double t = (double)i / SR;
        s->x[i] = (float)(0.5 * sin(phase0 + 2.0 * M_PI * (f0 * t + 0.5 * (f1 - f0) / dur * t * t)));
    }
    add_signal("silence", SR); /* calloc: zeros */
    s = add_signal("white noise", SR + 13);
    for (long i = 0; i < s->len; i++) s->x[i] = tandem_rng_uniform(&rng, -0.5f, 0.5f);
    s = add_signal("short (700 < n_fft)", 700);
    for (long i = 0; i < s->len; i++) s->x[i] = tandem_rng_uniform(&rng, -0.9f, 0.9f);
    s = add_signal("short (300 < pad: repeated reflection)", 300);
    for (long i = 0; i < s->len; i++) s->x[i] = (float)(0.3 * sin(0.05 * i)) + tandem_rng_uniform(&rng, -0.1f, 0.1f);
    s = add_signal("shorter than a hop (no frames)", 255);
    for (long i = 0; i < s->len; i++) s->x[i] = tandem_rng_uniform(&rng, -0.5f, 0.5f);
    s = add_signal("quiet noise (-80 dBFS)", 4096 + 100);
    for (long i = 0; i < s->len; i++) s->x[i] = tandem_rng_uniform(&rng, -1e-4f, 1e-4f);
    return 0;
}

static int free_signals(void **state) {
    (void)state;
    for (int i = 0; i < n_sigs; i++) free(sigs[i].x);
    n_sigs = 0;
    return 0;
}

/* ---- comparison ---- */

/* got [max_frames, 80] with got_frames frames vs the reference of x. */
static void compare_to_reference(const char *path, const signal *s, const float *got, int got_frames,
                                 int max_frames) {
    int want_frames = (int)(s->len / HOP);
    double *ref = (double *)malloc(sizeof(double) * (size_t)(want_frames > 0 ? want_frames : 1) * N_MELS);
    assert_non_null(ref);
    assert_int_equal(reference_logmel(s->x, s->len, ref), want_frames);
    if (got_frames != want_frames) fail_msg("%s %s: %d frames, expected floor(%ld/256) = %d", path, s->name,
                                            got_frames, s->len, want_frames);
    double worst = 0.0;
    int worst_t = -1, worst_m = -1;
    for (int t = 0; t < want_frames; t++)
        for (int m = 0; m < N_MELS; m++) {
            double d = fabs((double)got[(size_t)t * N_MELS + m] - ref[(size_t)t * N_MELS + m]);
            if (!(d <= worst)) { /* NaN lands here too */
                worst = isnan(d) ? INFINITY : d;
                worst_t = t;
                worst_m = m;
            }
        }
    for (int t = want_frames; t < max_frames; t++)
        for (int m = 0; m < N_MELS; m++)
            if (got[(size_t)t * N_MELS + m] != tandem_mel_silence())
                fail_msg("%s %s: padded frame %d band %d is %g, expected silence ln(1e-5) = %g", path,
                         s->name, t, m, (double)got[(size_t)t * N_MELS + m], (double)tandem_mel_silence());
    printf("  %-7s %-40s frames %4d  max |diff| %.2e%s\n", path, s->name, want_frames, worst,
           worst_t >= 0 ? "" : " (no frames)");
    if (worst > TOL)
        fail_msg("%s %s: log-mel differs from the float64 reference by %g at frame %d band %d "
                 "(got %g, reference %g; tolerance %g)",
                 path, s->name, worst, worst_t, worst_m, (double)got[(size_t)worst_t * N_MELS + worst_m],
                 ref[(size_t)worst_t * N_MELS + worst_m], TOL);
    free(ref);
}

static void run_host_path(const signal *s) {
    tandem_mel_host *m = NULL;
    assert_int_equal(tandem_mel_host_create(&m), TANDEM_OK);
    int max_frames = (int)(s->len / HOP) + 3;
    float *out = (float *)malloc(sizeof(float) * (size_t)max_frames * N_MELS);
    for (int i = 0; i < max_frames * N_MELS; i++) out[i] = NAN; /* padding must be written */
    int frames = -1;
    assert_int_equal(tandem_mel_host_compute(m, s->x, s->len, out, max_frames, &frames), TANDEM_OK);
    compare_to_reference("host", s, out, frames, max_frames);
    free(out);
    tandem_mel_host_free(m);
}

/* All signals in one fixed-shape batch through the kernels + GEMMs on a host device. */
static void run_device_path(const signal *list, int count) {
    int64_t max_samples = 1;
    for (int i = 0; i < count; i++)
        if (list[i].len > max_samples) max_samples = list[i].len;
    max_samples += 37; /* room past the longest item: its padding must not be read as audio */
    int max_frames = (int)(max_samples / HOP) + 2;

    tandem_device *dev = NULL;
    tandem_pool *pool = NULL;
    tandem_stream *s = NULL;
    tandem_mel_plan plan;
    assert_int_equal(tandem_device_open(TANDEM_BACKEND_HOST, 0, &dev), TANDEM_OK);
    assert_int_equal(tandem_pool_create(dev, "mel-test", 0, &pool), TANDEM_OK);
    tandem_status st = tandem_mel_plan_declare(pool, dev, "mel", count, max_frames, max_samples, 0, &plan);
    if (st != TANDEM_OK) fail_msg("declare: %s", tandem_last_error());
    st = tandem_pool_commit(pool);
    if (st != TANDEM_OK) fail_msg("commit: %s", tandem_last_error());
    assert_int_equal(tandem_stream_create(dev, &s), TANDEM_OK);
    assert_int_equal(tandem_mel_upload_constants(&plan, s), TANDEM_OK);

    size_t n_audio = (size_t)count * (size_t)max_samples;
    size_t n_mel = (size_t)count * (size_t)max_frames * N_MELS;
    float *audio = (float *)malloc(sizeof(float) * n_audio);
    int32_t *lengths = (int32_t *)malloc(sizeof(int32_t) * (size_t)count);
    float *mel = (float *)malloc(sizeof(float) * n_mel);
    int32_t *frames = (int32_t *)malloc(sizeof(int32_t) * (size_t)count);
    float *mask = (float *)malloc(sizeof(float) * (size_t)count * max_frames);
    float *stop = (float *)malloc(sizeof(float) * (size_t)count * max_frames);
    for (size_t i = 0; i < n_audio; i++) audio[i] = 1e3f; /* garbage past each length */
    for (int b = 0; b < count; b++) {
        memcpy(audio + (size_t)b * max_samples, list[b].x, sizeof(float) * (size_t)list[b].len);
        lengths[b] = (int32_t)list[b].len;
    }
    for (size_t i = 0; i < n_mel; i++) mel[i] = NAN;
    assert_int_equal(tandem_tensor_upload(s, plan.mel, mel, sizeof(float) * n_mel), TANDEM_OK);
    assert_int_equal(tandem_tensor_upload(s, plan.audio, audio, sizeof(float) * n_audio), TANDEM_OK);
    assert_int_equal(tandem_tensor_upload(s, plan.lengths, lengths, sizeof(int32_t) * (size_t)count), TANDEM_OK);
    st = tandem_mel_batch(&plan, s);
    if (st != TANDEM_OK) fail_msg("tandem_mel_batch: %s", tandem_last_error());
    assert_int_equal(tandem_tensor_download(s, mel, plan.mel, sizeof(float) * n_mel), TANDEM_OK);
    assert_int_equal(tandem_tensor_download(s, frames, plan.frames, sizeof(int32_t) * (size_t)count), TANDEM_OK);
    assert_int_equal(tandem_tensor_download(s, mask, plan.mask, sizeof(float) * (size_t)count * max_frames),
                     TANDEM_OK);
    assert_int_equal(tandem_tensor_download(s, stop, plan.stop, sizeof(float) * (size_t)count * max_frames),
                     TANDEM_OK);
    assert_int_equal(tandem_stream_sync(s), TANDEM_OK);

    for (int b = 0; b < count; b++) {
        int want = (int)(list[b].len / HOP);
        compare_to_reference("device", &list[b], mel + (size_t)b * max_frames * N_MELS, frames[b], max_frames);
        for (int t = 0; t < max_frames; t++) {
            assert_true(mask[(size_t)b * max_frames + t] == (t < want ? 1.0f : 0.0f));
            assert_true(stop[(size_t)b * max_frames + t] == (t >= want - 1 ? 1.0f : 0.0f));
        }
    }
    free(audio);
    free(lengths);
    free(mel);
    free(frames);
    free(mask);
    free(stop);
    tandem_stream_destroy(s);
    tandem_mel_plan_release(&plan);
    tandem_pool_destroy(pool);
    tandem_device_close(dev);
}

/* ---- tests ---- */

static void test_filterbank_matches_librosa(void **state) {
    (void)state;
    static double fb[N_MELS * N_BINS];
    static float fb32[N_MELS * N_BINS];
    tandem_mel_filterbank_f64(fb);
    tandem_mel_filterbank_f32(fb32);
    double worst = 0.0, worst32 = 0.0;
    int nonzero = 0;
    for (int m = 0; m < N_MELS; m++)
        for (int k = 0; k < N_BINS; k++) {
            double g = golden_fb[m][k], v = fb[m * N_BINS + k], v32 = fb32[m * N_BINS + k];
            if (g == 0.0) {
                if (v != 0.0 || v32 != 0.0f)
                    fail_msg("band %d bin %d: %g where librosa has 0", m, k, v);
                continue;
            }
            nonzero++;
            double r = fabs(v - g) / fabs(g), r32 = fabs(v32 - g) / fabs(g);
            if (r > worst) worst = r;
            if (r32 > worst32) worst32 = r32;
            if (r > 1e-6 || r32 > 1e-6)
                fail_msg("band %d bin %d: %.17g (float %.9g), librosa %.17g: relative %g", m, k, v,
                         (double)v32, g, r > r32 ? r : r32);
        }
    assert_int_equal(nonzero, golden_nonzero);
    printf("  filterbank: %d nonzero weights, max relative difference %.2e (double), %.2e (float)\n",
           nonzero, worst, worst32);
}

static void test_mel_scale(void **state) {
    (void)state;
    assert_true(fabs(tandem_mel_hz_to_mel(1000.0) - 15.0) < 1e-12);
    assert_true(fabs(tandem_mel_hz_to_mel(200.0) - 3.0) < 1e-12);
    assert_true(fabs(tandem_mel_hz_to_mel(6400.0) - 42.0) < 1e-12); /* 15 + 27 steps of ln 6.4 / 27 */
    for (int i = 0; i < 100; i++) {
        double hz = tandem_rng_uniform(&rng, 0.0f, 11025.0f);
        assert_true(fabs(tandem_mel_mel_to_hz(tandem_mel_hz_to_mel(hz)) - hz) < 1e-9 * (1.0 + hz));
    }
}

static void test_host_path(void **state) {
    (void)state;
    for (int i = 0; i < n_sigs; i++) run_host_path(&sigs[i]);
}

static void test_device_path(void **state) {
    (void)state;
    run_device_path(sigs, n_sigs);
}

static void test_frame_budget(void **state) {
    (void)state;
    tandem_mel_host *m = NULL;
    assert_int_equal(tandem_mel_host_create(&m), TANDEM_OK);
    float out[4 * N_MELS];
    int frames = -1;
    /* 5 frames of audio, room for 4 */
    assert_int_equal(tandem_mel_host_compute(m, sigs[1].x, 5 * HOP, out, 4, &frames), TANDEM_E_BUDGET);
    assert_non_null(strstr(tandem_last_error(), "max_frames"));
    assert_int_equal(tandem_mel_host_compute(m, sigs[1].x, 5 * HOP - 1, out, 4, &frames), TANDEM_OK);
    assert_int_equal(frames, 4);
    tandem_mel_host_free(m);
}

static void test_speech(void **state) {
    (void)state;
    if (system("command -v espeak-ng >/dev/null 2>&1") != 0) {
        printf("  espeak-ng is not installed: speech case skipped\n");
        skip();
    }
    char dir[200];
    assert_int_equal(tandem_test_mkdtemp(dir, sizeof dir, "test_mel"), 0);
    char wav[256], cmd[512];
    snprintf(wav, sizeof wav, "%s/speech.wav", dir);
    snprintf(cmd, sizeof cmd,
             "espeak-ng -w '%s' 'The quick brown fox jumps over 13 lazy dogs, twice.' >/dev/null 2>&1", wav);
    if (system(cmd) != 0) fail_msg("espeak-ng failed: %s", cmd);
    int64_t cap = 10 * SR, n = 0;
    float *x = (float *)malloc(sizeof(float) * (size_t)cap);
    tandem_audio_info info;
    tandem_status st = tandem_audio_load(wav, x, cap, &n, &info);
    if (st != TANDEM_OK) fail_msg("decode %s: %s", wav, tandem_last_error());
    printf("  speech: %s, %d Hz, %lld samples at 22050 Hz\n", info.format, info.sample_rate, (long long)n);
    signal sp = {"speech (espeak-ng)", x, (long)n};
    run_host_path(&sp);
    signal both[2] = {sp, sigs[2]}; /* with another item so the batch is not uniform */
    run_device_path(both, 2);
    free(x);
    tandem_test_rmtree(dir);
}

/* ---- `tandem features` end to end: file formats through the CLI to .npy ---- */

/* Writes x (mono) as `channels` identical channels in the given libsndfile format. */
static void write_audio(const char *path, const float *x, long len, int rate, int format, int channels) {
    float *inter = (float *)malloc(sizeof(float) * (size_t)len * (size_t)channels);
    for (long i = 0; i < len; i++)
        for (int c = 0; c < channels; c++) inter[i * channels + c] = x[i];
    /* integer formats: libsndfile writes lrint(x * (2^(bits-1) - 1)); readers divide by 2^(bits-1) */
    tandem_test_write_audio(path, inter, len, rate, channels, format);
    free(inter);
}

/* Reads a float32 [T, 80] .npy written by `tandem features`; returns T (or -1). */
static int read_npy(const char *path, float **out) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    unsigned char head[10];
    if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0) { fclose(f); return -1; }
    size_t hlen = (size_t)head[8] | ((size_t)head[9] << 8);
    char dict[1024];
    if (hlen >= sizeof dict || fread(dict, 1, hlen, f) != hlen) { fclose(f); return -1; }
    dict[hlen] = 0;
    int t = -1, m = -1;
    const char *sh = strstr(dict, "'shape': (");
    if (!strstr(dict, "'descr': '<f4'") || !strstr(dict, "'fortran_order': False") || !sh ||
        sscanf(sh, "'shape': (%d, %d)", &t, &m) != 2 || m != N_MELS) { fclose(f); return -1; }
    *out = (float *)malloc(sizeof(float) * (size_t)(t > 0 ? t : 1) * N_MELS);
    size_t n = (size_t)t * N_MELS;
    if (fread(*out, sizeof(float), n, f) != n) { fclose(f); return -1; }
    fclose(f);
    return t;
}

static void run_features_cli(const char *in, const char *npy, float **mel, int *frames) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/tandem' features '%s' '%s' >/dev/null 2>&1", TANDEM_TEST_BUILD_DIR, in, npy);
    if (system(cmd) != 0) fail_msg("failed: %s", cmd);
    *frames = read_npy(npy, mel);
    if (*frames < 0) fail_msg("%s is not a float32 [T, 80] .npy", npy);
}

/* A smooth test signal (harmonics under 8 kHz with a slow sweep), evaluated at any rate, so a
 * file at another rate and the 22050 Hz reference describe the same sound. */
static double smooth_signal(double t) {
    double v = 0.0;
    for (int h = 1; h <= 6; h++) v += 0.1 / h * sin(2.0 * M_PI * h * (220.0 * t + 150.0 * t * t));
    return v;
}

static void test_features_cli(void **state) {
    (void)state;
    char dir[200];
    assert_int_equal(tandem_test_mkdtemp(dir, sizeof dir, "test_features"), 0);
    char in[300], npy[300];
    snprintf(npy, sizeof npy, "%s/out.npy", dir);
    /* 22050 Hz, exact formats: the reference sees exactly the samples the file holds. */
    const signal *sweep = &sigs[0];
    long len = sweep->len;
    float *q = (float *)malloc(sizeof(float) * (size_t)len);
    /* libsndfile's float -> 16-bit: lrintf(x * 32767.0f) in float arithmetic */
    for (long i = 0; i < len; i++) q[i] = (float)lrintf(sweep->x[i] * 32767.0f) / 32768.0f;
    static const struct { const char *name; int format; int channels; int quantised; } cases[] = {
        {"in16.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 1, 1},
        {"in16.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 1, 1},
        {"stereo_float.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 2, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        snprintf(in, sizeof in, "%s/%s", dir, cases[c].name);
        const float *src = cases[c].quantised ? q : sweep->x; /* what the decoder will see */
        write_audio(in, sweep->x, len, SR, cases[c].format, cases[c].channels);
        float *mel = NULL;
        int frames = 0;
        run_features_cli(in, npy, &mel, &frames);
        signal sg = {cases[c].name, (float *)src, len};
        compare_to_reference("cli", &sg, mel, frames, frames);
        free(mel);
        remove(in);
    }
    free(q);
    /* 24-bit WAV written from integers (no float conversion in the writer): the decoder must
     * give exactly s24 / 2^23. */
    {
        float *q24 = (float *)malloc(sizeof(float) * (size_t)len);
        int *s32 = (int *)malloc(sizeof(int) * (size_t)len);
        for (long i = 0; i < len; i++) {
            long s24 = lrint(sweep->x[i] * 8388607.0);
            s32[i] = (int)(s24 * 256); /* libsndfile keeps the top 24 bits of an int sample */
            q24[i] = (float)((double)s24 / 8388608.0);
        }
        snprintf(in, sizeof in, "%s/in24.wav", dir);
        SNDFILE *f24 = tandem_test_sf_create(in, SF_FORMAT_WAV | SF_FORMAT_PCM_24, SR, 1);
        if (sf_writef_int(f24, s32, len) != len) fail_msg("write %s: %s", in, sf_strerror(f24));
        sf_close(f24);
        float *mel = NULL;
        int frames = 0;
        run_features_cli(in, npy, &mel, &frames);
        signal sg = {"in24.wav", q24, len};
        compare_to_reference("cli", &sg, mel, frames, frames);
        free(mel);
        free(q24);
        free(s32);
        remove(in);
    }
    /* Other rates: the same smooth sound at 16/44.1/48 kHz, compared with the 22050 Hz
     * reference of that sound. What remains is resampling error (the sinc converter's passband
     * ripple; the first and last 2 frames, where the converter's edges are, are left out):
     * measured worst 1.5e-4 on the log-mel; bound 2e-3. */
    static const int rates[] = {16000, 44100, 48000};
    double seconds = 1.3;
    long ref_len = (long)(seconds * SR);
    float *ref_x = (float *)malloc(sizeof(float) * (size_t)ref_len);
    for (long i = 0; i < ref_len; i++) ref_x[i] = (float)smooth_signal((double)i / SR);
    int ref_frames = (int)(ref_len / HOP);
    double *ref = (double *)malloc(sizeof(double) * (size_t)ref_frames * N_MELS);
    assert_int_equal(reference_logmel(ref_x, ref_len, ref), ref_frames);
    for (size_t r = 0; r < sizeof rates / sizeof rates[0]; r++) {
        long n = (long)(seconds * rates[r]);
        float *x = (float *)malloc(sizeof(float) * (size_t)n);
        for (long i = 0; i < n; i++) x[i] = (float)smooth_signal((double)i / rates[r]);
        snprintf(in, sizeof in, "%s/in_%d.wav", dir, rates[r]);
        write_audio(in, x, n, rates[r], SF_FORMAT_WAV | SF_FORMAT_FLOAT, 1);
        float *mel = NULL;
        int frames = 0;
        run_features_cli(in, npy, &mel, &frames);
        if (abs(frames - ref_frames) > 1) fail_msg("%d Hz: %d frames, reference %d", rates[r], frames, ref_frames);
        double worst = 0.0;
        int lim = frames < ref_frames ? frames : ref_frames;
        for (int t = 2; t < lim - 2; t++)
            for (int m = 0; m < N_MELS; m++) {
                double d = fabs((double)mel[(size_t)t * N_MELS + m] - ref[(size_t)t * N_MELS + m]);
                if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
            }
        printf("  cli     %-40s frames %4d  max |diff| %.2e (resampled from %d Hz)\n", "smooth harmonics",
               frames, worst, rates[r]);
        if (worst > 2e-3) fail_msg("%d Hz: log-mel differs from the 22050 Hz reference by %g", rates[r], worst);
        free(mel);
        free(x);
        remove(in);
    }
    free(ref);
    free(ref_x);
    /* unreadable input: non-zero exit naming the file */
    snprintf(in, sizeof in, "%s/not_audio.wav", dir);
    static const char not_audio[] = "this is not a wav file";
    tandem_test_write_file(in, not_audio, sizeof not_audio - 1);
    char cmd[1024], outp[300];
    snprintf(outp, sizeof outp, "%s/err.txt", dir);
    snprintf(cmd, sizeof cmd, "'%s/tandem' features '%s' '%s' 2>'%s'", TANDEM_TEST_BUILD_DIR, in, npy, outp);
    assert_int_not_equal(system(cmd), 0);
    char *msg = tandem_test_read_file_ok(outp, NULL);
    if (!strstr(msg, "not_audio.wav")) fail_msg("error message does not name the file: %s", msg);
    free(msg);
    tandem_test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_filterbank_matches_librosa),
        cmocka_unit_test(test_mel_scale),
        cmocka_unit_test(test_host_path),
        cmocka_unit_test(test_device_path),
        cmocka_unit_test(test_frame_budget),
        cmocka_unit_test(test_speech),
        cmocka_unit_test(test_features_cli),
    };
    return cmocka_run_group_tests(tests, make_signals, free_signals);
}
