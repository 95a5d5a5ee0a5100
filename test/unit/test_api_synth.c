/* test_api_synth.c — the public synthesis, features, files, text, plot and system API
 * (tandem_synth.h, tandem_features.h, tandem_files.h, tandem_text.h, tandem_plot.h,
 * tandem_system.h), called through tandem.h only; the one fixture that reaches inside is the
 * random checkpoint of test/synth_checkpoint.h (a trainer-style file needs the model's table).
 *   * features of a tone from a buffer equal those of a WAV file of the same samples, at 22050 Hz
 *     and at 16 kHz (resampled the same way), into the handle's buffer and a caller's;
 *   * a caller buffer one float too small: TANDEM_E_INVALID naming the size needed, the buffer
 *     untouched;
 *   * synthesis into the handle's buffers and into a caller's give identical mel and audio; the
 *     stop head firing or not is reported; too-small buffers are refused before any work;
 *   * a missing or corrupt checkpoint: the error, and *out NULL;
 *   * text normalisation into a caller buffer, files (mkdir, atomic write, .npy), a run's
 *     figures, and the system report listing the host devices (and the CUDA ones on cuda);
 *   * a FIFO as a run's metrics.jsonl or its dataset's metadata.csv: tandem_plot_run fails at once
 *     naming it (under the deadline helper of test/fixtures.h, so a blocking open fails the test
 *     instead of hanging it).
 * Output buffers are poisoned (NaN bit patterns) before every call.
 * TANDEM_TEST_BACKEND=cuda runs features and synthesis on cuda device 0 (the stand-in driver). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cmocka.h>

#include "tandem.h"
#include "test/fixtures.h"
#include "test/synth_checkpoint.h"

#define RATE 22050
#define N_MELS 80
#define HOP 256

static char g_dir[256];
static uint64_t g_seed;
static tandem_backend g_backend = TANDEM_BACKEND_HOST;

static void poison(void *p, size_t bytes) { memset(p, 0xFF, bytes); } /* all NaN floats */

static int all_poison(const float *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &p[i], sizeof u);
        if (u != 0xFFFFFFFFu) return 0;
    }
    return 1;
}

/* A tone with two harmonics, rounded as the 16-bit WAV writer rounds (round(x * 32767)) and
 * scaled as the decoder reads 16-bit PCM (/ 32768): the samples a WAV of x holds. */
static void tone(float *x, float *q, long n, int rate) {
    for (long i = 0; i < n; i++) {
        const double t = (double)i / rate;
        x[i] = (float)(0.4 * sin(2 * M_PI * 220.0 * t) + 0.2 * sin(2 * M_PI * 660.0 * t));
        q[i] = (float)(lrint((double)x[i] * 32767.0) / 32768.0);
    }
}

static tandem_features *open_features(void) {
    tandem_features_options o;
    tandem_features_options_init(&o);
    o.backend = g_backend;
    tandem_features *f = (tandem_features *)(uintptr_t)1; /* poisoned */
    CHECK(tandem_features_open(&o, &f));
    tandem_device_info info;
    CHECK(tandem_features_get_device(f, &info));
    assert_int_equal(info.backend, g_backend);
    return f;
}

/* ---- features ------------------------------------------------------------------------------ */

static void features_at(tandem_features *f, int rate, double seconds) {
    const long n = (long)(seconds * rate);
    float *x = malloc(sizeof(float) * (size_t)n), *q = malloc(sizeof(float) * (size_t)n);
    tone(x, q, n, rate);
    char wav[300];
    snprintf(wav, sizeof wav, "%s/tone_%d.wav", g_dir, rate);
    CHECK(tandem_wav_write_pcm16(wav, x, n, rate));

    tandem_features_result rf, rb;
    poison(&rf, sizeof rf);
    CHECK(tandem_features_from_file(f, wav, NULL, 0, &rf));
    const int frames = rf.frames;
    const int64_t want_samples = rate == RATE ? n : (int64_t)llround((double)n * RATE / rate);
    assert_int_equal(rf.samples, want_samples);
    assert_int_equal(frames, want_samples / HOP);
    assert_int_equal(rf.n_mels, N_MELS);
    assert_int_equal(rf.sample_rate, rate);
    assert_int_equal(rf.channels, 1);
    assert_non_null(strstr(rf.format, "16 bit"));
    const size_t need = (size_t)frames * N_MELS;
    float *from_file = malloc(sizeof(float) * need);
    memcpy(from_file, rf.mel, sizeof(float) * need); /* the handle's buffer: the next call reuses it */

    /* the same samples from a buffer, into a caller's buffer one float larger than needed */
    float *mine = malloc(sizeof(float) * (need + 1));
    poison(mine, sizeof(float) * (need + 1));
    poison(&rb, sizeof rb);
    CHECK(tandem_features_from_samples(f, q, n, rate, mine, need + 1, &rb));
    assert_ptr_equal(rb.mel, mine);
    assert_int_equal(rb.frames, frames);
    assert_int_equal(rb.samples, rf.samples);
    assert_int_equal(rb.sample_rate, rate);
    assert_string_equal(rb.format, "samples");
    assert_memory_equal(mine, from_file, sizeof(float) * need);
    assert_true(all_poison(mine + need, 1)); /* nothing written past the features */
    for (size_t i = 0; i < need; i++) assert_true(isfinite(mine[i]));

    /* one float too small: refused, naming what is needed, the buffer untouched */
    poison(mine, sizeof(float) * need);
    poison(&rb, sizeof rb);
    assert_int_equal(tandem_features_from_samples(f, q, n, rate, mine, need - 1, &rb), TANDEM_E_INVALID);
    char needed[32];
    snprintf(needed, sizeof needed, "%zu", need);
    printf("  %d Hz, too small: %s\n", rate, tandem_last_error());
    assert_non_null(strstr(tandem_last_error(), needed));
    assert_int_equal(rb.frames, frames);
    assert_null(rb.mel);
    assert_true(all_poison(mine, need));
    poison(&rf, sizeof rf);
    assert_int_equal(tandem_features_from_file(f, wav, mine, need - 1, &rf), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), needed));
    assert_true(all_poison(mine, need));
    printf("  %d Hz: %d frames, file and buffer agree\n", rate, frames);
    free(x);
    free(q);
    free(from_file);
    free(mine);
}

static void test_features(void **state) {
    (void)state;
    tandem_features *f = open_features();
    features_at(f, RATE, 0.7);
    features_at(f, 16000, 0.9);
    /* bad inputs */
    tandem_features_result r;
    float one = 0.0f;
    assert_int_equal(tandem_features_from_samples(f, &one, 1, RATE, NULL, 0, &r), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "shorter than one hop"));
    assert_int_equal(tandem_features_from_samples(f, &one, 1, 10, NULL, 0, &r), TANDEM_E_INVALID);
    char missing[300];
    snprintf(missing, sizeof missing, "%s/none.wav", g_dir);
    assert_int_equal(tandem_features_from_file(f, missing, NULL, 0, &r), TANDEM_E_IO);
    assert_non_null(strstr(tandem_last_error(), missing));
    tandem_features_close(f);
    tandem_features_close(NULL);
}

/* ---- synthesis ------------------------------------------------------------------------------ */

static float *param(model_file *mf, const char *name) {
    for (int i = 0; i < mf->n_params; i++)
        if (!strcmp(mf->param[i].name, name)) return mf->flat + mf->param[i].offset;
    fail_msg("no parameter %s", name);
    return NULL;
}

/* A checkpoint whose stop head always (fire = 1) or never (0) fires; path into path. */
static void checkpoint(int fire, const char *sub, char *path, size_t cap) {
    model_file mf;
    synth_ckpt_make(&mf, g_seed + (uint64_t)fire);
    float *b = param(&mf, "stop_head.bias"), *w = param(&mf, "stop_head.weight");
    for (int k = 0; k < 2; k++) b[k] = fire ? 1e4f : -1e4f;
    memset(w, 0, sizeof(float) * 2 * 16); /* [r, d] = [2, 16] */
    char dir[300];
    snprintf(dir, sizeof dir, "%s/%s", g_dir, sub);
    synth_ckpt_write(&mf, dir, path, cap);
    synth_ckpt_free(&mf);
}

static tandem_synth *open_synth(const char *path, int gl_iters, int max_frames) {
    tandem_synth_options o;
    tandem_synth_options_init(&o);
    assert_int_equal(o.gl_iters, TANDEM_SYNTH_DEFAULT_GL_ITERS);
    o.backend = g_backend;
    o.gl_iters = gl_iters;
    o.max_frames = max_frames;
    o.seed = 7;
    tandem_synth *s = (tandem_synth *)(uintptr_t)1; /* poisoned */
    CHECK(tandem_synth_open(path, &o, &s));
    return s;
}

static void test_synth_buffers(void **state) {
    (void)state;
    char path[600];
    checkpoint(0, "never", path, sizeof path);
    tandem_synth *s = open_synth(path, 3, 11);
    tandem_synth_info info;
    poison(&info, sizeof info);
    CHECK(tandem_synth_get_info(s, &info));
    assert_int_equal(info.d_model, 16);
    assert_int_equal(info.layers, 2);
    assert_int_equal(info.reduction, 2);
    assert_int_equal(info.max_text, 16);
    assert_int_equal(info.max_frames, 16);
    assert_int_equal(info.frame_limit, 11);
    assert_int_equal(info.sample_rate, RATE);
    assert_int_equal(info.n_mels, N_MELS);
    assert_int_equal(info.hop, HOP);
    assert_int_equal(info.mel_floats, 11 * N_MELS);
    assert_int_equal(info.audio_samples, 11 * HOP);
    assert_int_equal(info.device.backend, g_backend);

    tandem_synth_result lib, mine;
    poison(&lib, sizeof lib);
    CHECK(tandem_synth_run(s, "hello", TANDEM_LANG_AUTO, NULL, &lib));
    assert_int_equal(lib.stop, TANDEM_SYNTH_STOP_MAX_FRAMES); /* the stop head never fires */
    assert_int_equal(lib.stop_frame, -1);
    assert_int_equal(lib.frames, 11);
    assert_int_equal(lib.steps, 6);
    assert_int_equal(lib.lang, TANDEM_LANG_EN);
    assert_int_equal(lib.tokens, 5 + TANDEM_SYMBOLS_FRAMING);
    assert_int_equal(lib.samples, 11 * HOP);
    assert_int_equal(lib.sample_rate, RATE);
    assert_non_null(lib.stop_logit);
    float *lib_mel = malloc(sizeof(float) * info.mel_floats), *lib_audio = malloc(sizeof(float) * info.audio_samples);
    memcpy(lib_mel, lib.mel, sizeof(float) * (size_t)lib.frames * N_MELS);
    memcpy(lib_audio, lib.audio, sizeof(float) * (size_t)lib.samples);
    for (int64_t i = 0; i < lib.samples; i++) assert_true(isfinite(lib_audio[i]));

    /* the caller's buffers, exactly the worst case */
    float *mel = malloc(sizeof(float) * info.mel_floats), *audio = malloc(sizeof(float) * info.audio_samples);
    poison(mel, sizeof(float) * info.mel_floats);
    poison(audio, sizeof(float) * info.audio_samples);
    tandem_synth_buffers b = {mel, info.mel_floats, audio, info.audio_samples};
    poison(&mine, sizeof mine);
    CHECK(tandem_synth_run(s, "hello", TANDEM_LANG_AUTO, &b, &mine));
    assert_ptr_equal(mine.mel, mel);
    assert_ptr_equal(mine.audio, audio);
    assert_int_equal(mine.frames, lib.frames);
    assert_int_equal(mine.samples, lib.samples);
    assert_memory_equal(mel, lib_mel, sizeof(float) * (size_t)lib.frames * N_MELS);
    assert_memory_equal(audio, lib_audio, sizeof(float) * (size_t)lib.samples);
    printf("  %d frames, %lld samples: the handle's and the caller's buffers agree\n", mine.frames,
           (long long)mine.samples);

    /* too small: refused before any work, naming the size needed, buffers untouched */
    poison(mel, sizeof(float) * info.mel_floats);
    poison(audio, sizeof(float) * info.audio_samples);
    char needed[32];
    tandem_synth_buffers small = {mel, info.mel_floats - 1, NULL, 0};
    poison(&mine, sizeof mine);
    assert_int_equal(tandem_synth_run(s, "hello", TANDEM_LANG_AUTO, &small, &mine), TANDEM_E_INVALID);
    printf("  too small: %s\n", tandem_last_error());
    snprintf(needed, sizeof needed, "%zu", info.mel_floats);
    assert_non_null(strstr(tandem_last_error(), needed));
    assert_null(mine.mel);
    tandem_synth_buffers small_audio = {NULL, 0, audio, info.audio_samples - 1};
    assert_int_equal(tandem_synth_run(s, "hello", TANDEM_LANG_AUTO, &small_audio, &mine), TANDEM_E_INVALID);
    snprintf(needed, sizeof needed, "%zu", info.audio_samples);
    assert_non_null(strstr(tandem_last_error(), needed));
    assert_true(all_poison(mel, info.mel_floats));
    assert_true(all_poison(audio, info.audio_samples));
    /* text the model cannot say */
    assert_int_equal(tandem_synth_run(s, "\xe4\xbd\xa0", TANDEM_LANG_AUTO, NULL, &mine), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "U+4F60"));
    tandem_synth_close(s);
    free(lib_mel);
    free(lib_audio);
    free(mel);
    free(audio);
}

static void test_synth_stop_and_mel_only(void **state) {
    (void)state;
    char path[600];
    checkpoint(1, "always", path, sizeof path);
    tandem_synth *s = open_synth(path, 0, 0); /* mel only, the trained frame limit */
    tandem_synth_result r;
    poison(&r, sizeof r);
    CHECK(tandem_synth_run(s, "salaam", TANDEM_LANG_FA, NULL, &r));
    assert_int_equal(r.stop, TANDEM_SYNTH_STOP_HEAD);
    assert_int_equal(r.frames, 1); /* the first frame already passes 0.5 */
    assert_int_equal(r.stop_frame, 0);
    assert_int_equal(r.steps, 1);
    assert_int_equal(r.lang, TANDEM_LANG_FA);
    assert_null(r.audio);
    assert_int_equal(r.samples, 0);
    assert_non_null(r.mel);
    for (int i = 0; i < N_MELS; i++) assert_true(isfinite(r.mel[i]));
    tandem_synth_close(s);
    tandem_synth_close(NULL);
}

static void expect_open_failure(const char *path, tandem_status want) {
    tandem_synth *s = (tandem_synth *)(uintptr_t)1; /* poisoned */
    const tandem_status st = tandem_synth_open(path, NULL, &s);
    printf("  %s → %s: %s\n", path, tandem_status_name(st), tandem_last_error());
    assert_int_equal(st, want);
    assert_null(s);
    assert_non_null(strstr(tandem_last_error(), path));
}

static void test_synth_bad_checkpoints(void **state) {
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/none.safetensors", g_dir);
    expect_open_failure(path, TANDEM_E_IO);
    snprintf(path, sizeof path, "%s/corrupt.safetensors", g_dir);
    const char junk[] = "\x20\x00\x00\x00\x00\x00\x00\x00{\"not\": \"a checkpoint\"}";
    CHECK(tandem_files_write_atomic(path, junk, sizeof junk - 1));
    expect_open_failure(path, TANDEM_E_FORMAT);
    tandem_synth_options o;
    tandem_synth_options_init(&o);
    o.gl_iters = -1;
    tandem_synth *s = (tandem_synth *)(uintptr_t)1;
    assert_int_equal(tandem_synth_open(path, &o, &s), TANDEM_E_INVALID);
    assert_null(s);
}

/* ---- text, files, figures, system ------------------------------------------------------------ */

static void test_text(void **state) {
    (void)state;
    const char *in = "Chapter 12: the END!";
    size_t need = 99;
    tandem_lang lang = TANDEM_LANG_FA;
    assert_int_equal(tandem_text_normalize_into(in, strlen(in), NULL, 0, &need, &lang), TANDEM_E_INVALID);
    char needed[32];
    snprintf(needed, sizeof needed, "%zu", need);
    assert_non_null(strstr(tandem_last_error(), needed));
    assert_true(need > 0);
    char *out = malloc(need + 1);
    poison(out, need + 1);
    assert_int_equal(tandem_text_normalize_into(in, strlen(in), out, need, NULL, NULL), TANDEM_E_INVALID);
    assert_int_equal(out[0], 0);
    CHECK(tandem_text_normalize_into(in, strlen(in), out, need + 1, NULL, &lang));
    assert_int_equal(strlen(out), need);
    assert_string_equal(out, "chapter twelve: the end!");
    assert_int_equal(lang, TANDEM_LANG_EN);
    free(out);
    char fa[64];
    CHECK(tandem_text_normalize_into("\xd8\xb3\xd9\x84\xd8\xa7\xd9\x85", 8, fa, sizeof fa, NULL, &lang));
    assert_int_equal(lang, TANDEM_LANG_FA);
    assert_string_equal(tandem_lang_name(TANDEM_LANG_FA), "fa");
    assert_int_equal(tandem_text_normalize_into("a\xff", 2, fa, sizeof fa, NULL, NULL), TANDEM_E_INVALID);
    assert_true(tandem_symbols_count() > 5 + 26);
}

static void test_files(void **state) {
    (void)state;
    char dir[300], path[400];
    snprintf(dir, sizeof dir, "%s/a/b/c", g_dir);
    CHECK(tandem_files_mkdir_p(dir));
    CHECK(tandem_files_mkdir_p(dir)); /* existing: fine */
    struct stat sb;
    assert_int_equal(stat(dir, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    snprintf(path, sizeof path, "%s/x.txt", dir);
    CHECK(tandem_files_write_atomic(path, "one", 3));
    CHECK(tandem_files_write_atomic(path, "two!", 4));
    char buf[8] = {0};
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(buf, 1, sizeof buf, f), 4);
    fclose(f);
    assert_string_equal(buf, "two!");
    snprintf(path, sizeof path, "%s/m.npy", dir);
    const float v[6] = {1, 2, 3, 4, 5, 6};
    const int64_t shape[2] = {2, 3};
    CHECK(tandem_npy_write_f32(path, v, 2, shape));
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal((sb.st_size - 6 * 4) % 64, 0); /* the header padded to 64 bytes, then the data */
    snprintf(path, sizeof path, "%s/no/such/dir/x.txt", g_dir);
    assert_int_equal(tandem_files_write_atomic(path, "x", 1), TANDEM_E_IO);
}

/* Options drawing mel.png from ckpt and the dataset data, the PNGs into data. */
static void plot_options(tandem_plot_options *o, const char *ckpt, const char *data) {
    tandem_plot_options_init(o);
    o->checkpoint = ckpt;
    o->data_dir = data;
    o->backend = g_backend;
    o->out_dir = data;
}

static void test_plot(void **state) {
    (void)state;
    char run[300], data[300], path[400];
    snprintf(run, sizeof run, "%s/run", g_dir);
    snprintf(data, sizeof data, "%s/data/wavs", g_dir);
    CHECK(tandem_files_mkdir_p(run));
    CHECK(tandem_files_mkdir_p(data));
    snprintf(data, sizeof data, "%s/data", g_dir);
    const char metrics[] = "{\"step\":1,\"loss\":3.5}\n{\"step\":2,\"loss\":3.0,\"val_l1\":1.5}\nnot json\n"
                           "{\"step\":3,\"loss\":2.5}\n";
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    CHECK(tandem_files_write_atomic(path, metrics, sizeof metrics - 1));
    tandem_plot_result r;
    poison(&r, sizeof r);
    CHECK(tandem_plot_run(run, NULL, &r)); /* loss.png only */
    assert_true(r.loss_written);
    assert_int_equal(r.train_points, 3);
    assert_int_equal(r.val_points, 1);
    assert_int_equal(r.metrics_bad_lines, 1);
    assert_false(r.mel_written);

    /* with a checkpoint and one utterance of 15 frames */
    char ckpt[600];
    checkpoint(0, "plot", ckpt, sizeof ckpt);
    const char meta[] = "utt1|Hello.|hello.\n";
    snprintf(path, sizeof path, "%s/metadata.csv", data);
    CHECK(tandem_files_write_atomic(path, meta, sizeof meta - 1));
    float x[15 * HOP], q[15 * HOP];
    tone(x, q, 15 * HOP, RATE);
    snprintf(path, sizeof path, "%s/wavs/utt1.wav", data);
    CHECK(tandem_wav_write_pcm16(path, x, 15 * HOP, RATE));
    tandem_plot_options o;
    plot_options(&o, ckpt, data);
    poison(&r, sizeof r);
    CHECK(tandem_plot_run(run, &o, &r));
    assert_true(r.loss_written && r.mel_written);
    assert_string_equal(r.utterance, "utt1");
    assert_int_equal(r.mel_frames, 15);
    snprintf(path, sizeof path, "%s/mel.png", data);
    assert_int_equal(access(path, R_OK), 0);
    /* an unknown utterance: loss.png was written, the mel part fails */
    o.utterance = "nope";
    assert_int_equal(tandem_plot_run(run, &o, &r), TANDEM_E_INVALID);
    assert_true(r.loss_written);
    assert_false(r.mel_written);
    snprintf(path, sizeof path, "%s/none", g_dir);
    assert_int_equal(tandem_plot_run(path, NULL, &r), TANDEM_E_IO);
    assert_false(r.loss_written);
}

/* A FIFO in place of a run's metrics.jsonl or of the dataset's metadata.csv: opening it for
 * reading would block for ever without a writer; tandem_plot_run must fail at once naming it. */
typedef struct plot_call {
    const char *run;
    const tandem_plot_options *o;
    tandem_plot_result r;
    tandem_status st;
    char error[1024];
} plot_call;
static void plot_call_run(void *arg) {
    plot_call *c = arg;
    c->st = tandem_plot_run(c->run, c->o, &c->r);
    snprintf(c->error, sizeof c->error, "%s", c->st == TANDEM_OK ? "" : tandem_last_error());
}
static void expect_plot_fails_fast(plot_call *c, const char *fifo) {
    double ms = 0;
    if (!tandem_test_finishes_within(plot_call_run, c, 5000, &ms))
        fail_msg("tandem_plot_run with a FIFO at %s did not return within 5 s", fifo);
    assert_int_equal(c->st, TANDEM_E_IO);
    if (!strstr(c->error, fifo) || !strstr(c->error, "FIFO"))
        fail_msg("the error does not name the FIFO %s: \"%s\"", fifo, c->error);
    printf("  FIFO %s refused in %.1f ms: %s\n", strrchr(fifo, '/') + 1, ms, c->error);
}
static void test_plot_fifo(void **state) {
    (void)state;
    char run[300], data[300], path[400], ckpt[600];
    snprintf(run, sizeof run, "%s/fifo_run", g_dir);
    snprintf(data, sizeof data, "%s/fifo_data", g_dir);
    CHECK(tandem_files_mkdir_p(run));
    CHECK(tandem_files_mkdir_p(data));
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    assert_int_equal(mkfifo(path, 0600), 0);
    plot_call c = {.run = run};
    expect_plot_fails_fast(&c, path);
    assert_false(c.r.loss_written);

    /* metrics fine, metadata.csv a FIFO: loss.png is drawn, the mel part fails fast */
    unlink(path);
    const char metrics[] = "{\"step\":1,\"loss\":3.5}\n{\"step\":2,\"loss\":3.0}\n";
    CHECK(tandem_files_write_atomic(path, metrics, sizeof metrics - 1));
    checkpoint(0, "plot_fifo", ckpt, sizeof ckpt);
    snprintf(path, sizeof path, "%s/metadata.csv", data);
    assert_int_equal(mkfifo(path, 0600), 0);
    tandem_plot_options o;
    plot_options(&o, ckpt, data);
    c = (plot_call){.run = run, .o = &o};
    expect_plot_fails_fast(&c, path);
    assert_true(c.r.loss_written);
    assert_false(c.r.mel_written);
}

static void test_system(void **state) {
    (void)state;
    static tandem_system_report r;
    poison(&r, sizeof r);
    CHECK(tandem_system_query(&r));
    printf("  host: %s, %d devices, %d threads each, GEMM %s; CUDA driver %s, %d devices; "
           "fatbin %d images; problems %d\n", r.host.name, r.host_devices, r.host_threads, r.host_gemm,
           tandem_status_name(r.driver_status), r.cuda_count, r.fatbin_images, r.problems);
    assert_int_equal(r.host_status, TANDEM_OK);
    assert_true(r.host_devices >= 2); /* the data and model roles on the host backend */
    assert_true(r.host_threads >= 1);
    assert_true(r.host.name[0] != 0);
    assert_int_equal(r.host.backend, TANDEM_BACKEND_HOST);
    assert_true(!strcmp(r.host_gemm, "cblas") || !strcmp(r.host_gemm, "blocked"));
    assert_true(r.kernel_count > 0);
    assert_int_equal(r.fatbin_load_status, TANDEM_OK);
    if (g_backend == TANDEM_BACKEND_CUDA) { /* the stand-in driver: two devices that open */
        assert_int_equal(r.driver_status, TANDEM_OK);
        assert_true(r.cuda_count >= 1);
        assert_int_equal(r.cuda_listed, r.cuda_count);
        for (int i = 0; i < r.cuda_listed; i++) {
            assert_int_equal(r.cuda[i].query_status, TANDEM_OK);
            assert_int_equal(r.cuda[i].open_status, TANDEM_OK);
            assert_true(r.cuda[i].fatbin_runs);
        }
        assert_int_equal(r.kernels_missing, 0);
        assert_false(r.problems);
    } else if (r.driver_status != TANDEM_OK) {
        assert_int_equal(r.cuda_count, 0);
        assert_true(r.driver_message[0] != 0);
    }
    assert_int_equal(tandem_system_query(NULL), TANDEM_E_INVALID);
}

int main(void) {
    g_seed = tandem_test_seed("test_api_synth");
    const char *be = getenv("TANDEM_TEST_BACKEND");
    if (be && !strcmp(be, "cuda")) g_backend = TANDEM_BACKEND_CUDA;
    snprintf(g_dir, sizeof g_dir, "/tmp/tandem_test_api_synth_%d", (int)getpid());
    if (tandem_files_mkdir_p(g_dir) != TANDEM_OK) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_features),        cmocka_unit_test(test_synth_buffers),
        cmocka_unit_test(test_synth_stop_and_mel_only), cmocka_unit_test(test_synth_bad_checkpoints),
        cmocka_unit_test(test_text),            cmocka_unit_test(test_files),
        cmocka_unit_test(test_plot),            cmocka_unit_test(test_plot_fifo),
        cmocka_unit_test(test_system),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (!failed) {
        char rm[300];
        snprintf(rm, sizeof rm, "rm -rf %s", g_dir);
        if (system(rm) != 0) return 1;
    }
    return failed;
}
