/* test_synth.c — inference from a checkpoint (runtime/run/synth.h), no training:
 *   * a small random model is written as a trainer-style checkpoint (parameters under their
 *     table names, config YAML and symbol table in the metadata; test/synth_checkpoint.h);
 *   * the first generated groups equal an independent double-precision forward of the same
 *     parameters run autoregressively (group 0 from the zero prenet input);
 *   * stop logic: constant stop logits stop at the first frame above 0.5; a stop bias chosen from
 *     a first run's logits makes generation stop at a later step k exactly;
 *   * WAV (decoded with libsndfile) and .npy (parsed here) outputs, also through `tandem synth`
 *     when the binary is built;
 *   * bad checkpoints and unknown characters give errors naming the problem;
 *   * `tandem plan` counts the arena validation's free-running evaluation opens, byte for byte.
 * TANDEM_TEST_BACKEND=cuda runs synthesis on cuda device 0 (the stand-in driver, or a GPU). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sndfile.h>

#include "runtime/formats/checkpoint.h"
#include "runtime/core/config.h"
#include "platform/device.h"
#include "runtime/model/model.h"
#include "runtime/formats/npy.h"
#include "platform/os/os.h"
#include "runtime/formats/safetensors.h"
#include "runtime/text/symbols.h"
#include "runtime/run/synth.h"
#include "test/synth_checkpoint.h"
#include "tandem_train.h"
#include "test/testutil.h"
#include "runtime/formats/wav.h"

enum { D = 16, L = 2, H = 2, R = 2, TT = 16, F = 16, NM = 80 };
enum { TM = F / R, T = TT + TM, DH = D / H, FF = 4 * D, G = R * NM };

static char g_dir[256];
static uint64_t g_seed;
static tandem_backend g_backend = TANDEM_BACKEND_HOST;

/* ---- a random checkpoint ------------------------------------------------------------------ */

static float *pview(const model_file *mf, const char *name) {
    for (int i = 0; i < mf->n_params; i++)
        if (!strcmp(mf->param[i].name, name)) return mf->flat + mf->param[i].offset;
    fail_msg("no parameter %s", name);
    return NULL;
}

static void set_stop_bias(model_file *mf, const float *b /* [R] */, int zero_weights) {
    float *sb = pview(mf, "stop_head.bias");
    for (int k = 0; k < R; k++) sb[k] = b[k];
    if (zero_weights) memset(pview(mf, "stop_head.weight"), 0, sizeof(float) * R * D);
}

/* Write mf to path through the bare safetensors writer with the given metadata only; skip: a
 * parameter left out (NULL: none). */
static void write_file(const model_file *mf, const char *path, const tandem_st_meta *meta, int nmeta,
                       const char *skip) {
    tandem_st_tensor *ts = calloc((size_t)mf->n_params, sizeof *ts);
    const int n = synth_ckpt_tensors(mf, skip, ts);
    tandem_st_writer *w = NULL;
    assert_int_equal(tandem_st_writer_create(ts, n, 65536, 0, &w), TANDEM_OK);
    assert_int_equal(tandem_st_write(w, path, meta, nmeta, NULL, NULL), TANDEM_OK);
    tandem_st_writer_free(w);
    free(ts);
}

/* A checkpoint as the trainer writes it into <g_dir>/<sub>; its path into path. */
static void write_ckpt(const model_file *mf, const char *sub, char *path, size_t cap) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", g_dir, sub);
    synth_ckpt_write(mf, dir, path, cap);
}

static tandem_synth *open_synth_mode(const char *path, int recompute) {
    tandem_synth_options o;
    tandem_synth_options_init(&o);
    o.backend = g_backend;
    o.recompute = recompute;
    tandem_synth *s = NULL;
    tandem_status st = tandem_synth_open(path, &o, &s);
    if (st != TANDEM_OK) fail_msg("synth open %s: %s", path, tandem_last_error());
    return s;
}

static tandem_synth *open_synth(const char *path) { return open_synth_mode(path, 0); }

/* ---- double reference ------------------------------------------------------------------------ */

static double gelu_d(double x) { return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

static void ln_d(const double *x, const float *g, const float *b, double *y, int rows, int n) {
    for (int r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (int c = 0; c < n; c++) mean += x[r * n + c];
        mean /= n;
        for (int c = 0; c < n; c++) var += (x[r * n + c] - mean) * (x[r * n + c] - mean);
        double rs = 1.0 / sqrt(var / n + 1e-5);
        for (int c = 0; c < n; c++) y[r * n + c] = (x[r * n + c] - mean) * rs * g[c] + b[c];
    }
}

static void lin_d(const double *x, const float *w, const float *b, double *y, int rows, int in, int out) {
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < out; o++) {
            double s = b[o];
            for (int i = 0; i < in; i++) s += x[r * in + i] * (double)w[o * in + i];
            y[r * out + o] = s;
        }
}

/* One forward of the whole sequence: tokens [TT] (count real), groups [TM, G] as the mel
 * input (prenet input of position j = groups[j]); mel [TM, G] and stop [TM, R] out. */
static void ref_forward(const model_file *mf, const int32_t *tok, int count, const double *groups,
                        double *mel, double *stop) {
    static double x[T * D], h[T * D], qkv[T * 3 * D], att[T * D], tmp[T * D], f[T * FF], pre[TM * D];
    char nm[64];
    lin_d(groups, pview(mf, "prenet.weight"), pview(mf, "prenet.bias"), pre, TM, G, D);
    const float *sym = pview(mf, "sym_emb.weight"), *pos = pview(mf, "pos_emb.weight");
    for (int t = 0; t < T; t++)
        for (int c = 0; c < D; c++)
            x[t * D + c] = (t < TT ? sym[tok[t] * D + c] : gelu_d(pre[(t - TT) * D + c])) + pos[t * D + c];
#define P(suffix) (snprintf(nm, sizeof nm, "layers.%d.%s", l, suffix), pview(mf, nm))
    for (int l = 0; l < L; l++) {
        ln_d(x, P("ln1.weight"), P("ln1.bias"), h, T, D);
        lin_d(h, P("attn.qkv.weight"), P("attn.qkv.bias"), qkv, T, D, 3 * D);
        for (int hh = 0; hh < H; hh++)
            for (int i = 0; i < T; i++) {
                double s[T], mx = -INFINITY, z = 0;
                for (int j = 0; j <= i; j++) {
                    s[j] = -INFINITY;
                    if (j < TT && j >= count) continue; /* padded text key */
                    double dot = 0;
                    for (int e = 0; e < DH; e++) dot += qkv[i * 3 * D + hh * DH + e] * qkv[j * 3 * D + D + hh * DH + e];
                    s[j] = dot / sqrt((double)DH);
                    if (s[j] > mx) mx = s[j];
                }
                for (int j = 0; j <= i; j++) z += isinf(s[j]) ? 0 : exp(s[j] - mx);
                for (int e = 0; e < DH; e++) {
                    double o = 0;
                    for (int j = 0; j <= i; j++)
                        if (!isinf(s[j])) o += exp(s[j] - mx) / z * qkv[j * 3 * D + 2 * D + hh * DH + e];
                    att[i * D + hh * DH + e] = o;
                }
            }
        lin_d(att, P("attn.out.weight"), P("attn.out.bias"), tmp, T, D, D);
        for (int i = 0; i < T * D; i++) x[i] += tmp[i];
        ln_d(x, P("ln2.weight"), P("ln2.bias"), h, T, D);
        lin_d(h, P("mlp.fc.weight"), P("mlp.fc.bias"), f, T, D, FF);
        for (int i = 0; i < T * FF; i++) f[i] = gelu_d(f[i]);
        lin_d(f, P("mlp.proj.weight"), P("mlp.proj.bias"), tmp, T, FF, D);
        for (int i = 0; i < T * D; i++) x[i] += tmp[i];
    }
#undef P
    ln_d(x, pview(mf, "ln_f.weight"), pview(mf, "ln_f.bias"), h, T, D);
    lin_d(h + TT * D, pview(mf, "mel_head.weight"), pview(mf, "mel_head.bias"), mel, TM, D, G);
    lin_d(h + TT * D, pview(mf, "stop_head.weight"), pview(mf, "stop_head.bias"), stop, TM, D, R);
}

/* Token ids built here from the symbol table's documented layout: <en> BOS chars EOS. */
static int ref_tokens(const char *text, int32_t *tok) {
    int n = 0;
    tok[n++] = TANDEM_SYM_LANG_EN;
    tok[n++] = TANDEM_SYM_BOS;
    for (const char *p = text; *p; p++) tok[n++] = tandem_symbols_id((uint32_t)(unsigned char)*p);
    tok[n++] = TANDEM_SYM_EOS;
    for (int i = n; i < TT; i++) tok[i] = TANDEM_SYM_PAD;
    return n;
}

/* ---- tests ------------------------------------------------------------------------------------ */

static void test_matches_reference(void **state) {
    (void)state;
    model_file mf;
    synth_ckpt_make(&mf, g_seed);
    const float never[R] = {-1e4f, -1e4f};
    set_stop_bias(&mf, never, 0);
    char path[1200];
    write_ckpt(&mf, "ref", path, sizeof path);
    tandem_synth *s = open_synth(path);
    const char *text = "hi there.";
    tandem_synth_result r;
    assert_int_equal(tandem_synth_generate(s, text, strlen(text), -1, 0, &r), TANDEM_OK);
    assert_int_equal(r.stop, TANDEM_SYNTH_STOP_MAX_FRAMES);
    assert_int_equal(r.frames, F);
    assert_int_equal(r.steps, TM);
    assert_int_equal(r.tokens, (int)strlen(text) + 3);
    assert_int_equal(r.lang, TANDEM_LANG_EN);

    /* the reference, autoregressive in double: group j's input = reference group j - 1 */
    int32_t tok[TT];
    int count = ref_tokens(text, tok);
    static double groups[TM * G], mel[TM * G], stop[TM * R];
    memset(groups, 0, sizeof groups);
    double worst = 0;
    for (int j = 0; j < TM; j++) {
        ref_forward(&mf, tok, count, groups, mel, stop);
        for (int k = 0; k < G; k++) {
            double e = fabs(mel[j * G + k] - r.mel[j * G + k]) / (1.0 + fabs(mel[j * G + k]));
            if (e > worst) worst = e;
            if (j + 1 < TM) groups[(j + 1) * G + k] = mel[j * G + k];
        }
        for (int k = 0; k < R; k++)
            assert_true(fabs(stop[j * R + k] - r.stop_logit[j * R + k]) < 1e-3 * (1 + fabs(stop[j * R + k])));
        if (j == 0) printf("  group 0 (zero prenet input): worst relative error %.2e\n", worst);
    }
    printf("  all %d groups: worst relative error %.2e\n", TM, worst);
    assert_true(worst < 1e-4);

    /* teacher forcing with the reference's own groups as target: the same outputs */
    static float target[F * NM], pred[F * NM];
    for (int i = 0; i < F * NM; i++) target[i] = (float)mel[i];
    assert_int_equal(tandem_synth_teacher_forced(s, text, strlen(text), -1, target, F, pred), TANDEM_OK);
    ref_forward(&mf, tok, count, groups, mel, stop); /* groups already hold shifted targets */
    for (int i = 0; i < F * NM; i++) assert_true(fabs(pred[i] - mel[i]) < 1e-4 * (1 + fabs(mel[i])));
    tandem_synth_close(s);
    free(mf.param);
    free(mf.flat);
}

/* The key/value cache (the default) against the whole forward per step (options.recompute):
 * every frame and stop logit of a free-running generation within 1e-5, for texts of several
 * lengths (the text positions run one by one into the cache, padded text keys masked). */
static void test_kv_matches_recompute(void **state) {
    (void)state;
    model_file mf;
    synth_ckpt_make(&mf, g_seed + 7);
    const float never[R] = {-1e4f, -1e4f};
    set_stop_bias(&mf, never, 0);
    char path[1200];
    write_ckpt(&mf, "kv", path, sizeof path);
    tandem_synth *kv = open_synth_mode(path, 0), *full = open_synth_mode(path, 1);
    const char *texts[] = {"a", "hi there.", "a longer one?"};
    static float mel[F * NM], stop[F];
    for (int t = 0; t < 3; t++) {
        tandem_synth_result a, b;
        const size_t n = strlen(texts[t]);
        assert_int_equal(tandem_synth_generate(full, texts[t], n, -1, 0, &b), TANDEM_OK);
        memcpy(mel, b.mel, sizeof mel);
        memcpy(stop, b.stop_logit, sizeof stop);
        assert_int_equal(tandem_synth_generate(kv, texts[t], n, -1, 0, &a), TANDEM_OK);
        assert_int_equal(a.frames, F);
        assert_int_equal(b.frames, F);
        double worst = 0;
        for (int i = 0; i < F * NM; i++)
            worst = fmax(worst, fabs((double)a.mel[i] - mel[i]) / (1.0 + fabs(mel[i])));
        for (int i = 0; i < F; i++)
            worst = fmax(worst, fabs((double)a.stop_logit[i] - stop[i]) / (1.0 + fabs(stop[i])));
        printf("  \"%s\": kv cache vs recompute, worst relative difference %.2e\n", texts[t],
               worst);
        assert_true(worst < 1e-5);
    }
    tandem_synth_close(kv);
    tandem_synth_close(full);
    free(mf.param);
    free(mf.flat);
}

/* Constant stop logits (weights zero): the first frame above 0.5 ends generation at step 0. */
static void test_stop_constant(void **state) {
    (void)state;
    model_file mf;
    synth_ckpt_make(&mf, g_seed + 1);
    const float cases[2][R] = {{-5.0f, 5.0f}, {5.0f, -5.0f}};
    const int want[2] = {2, 1};
    for (int c = 0; c < 2; c++) {
        set_stop_bias(&mf, cases[c], 1);
        char path[1200], sub[32];
        snprintf(sub, sizeof sub, "const%d", c);
        write_ckpt(&mf, sub, path, sizeof path);
        tandem_synth *s = open_synth(path);
        tandem_synth_result r;
        assert_int_equal(tandem_synth_generate(s, "ok", 2, -1, 0, &r), TANDEM_OK);
        assert_int_equal(r.stop, TANDEM_SYNTH_STOP_HEAD);
        assert_int_equal(r.steps, 1);
        assert_int_equal(r.frames, want[c]);
        assert_int_equal(r.stop_frame, want[c] - 1);
        tandem_synth_close(s);
    }
    free(mf.param);
    free(mf.flat);
}

/* A stop bias chosen from a first run's logits: step k is the first whose frames pass 0.5. */
static void test_stop_at_step(void **state) {
    (void)state;
    for (uint64_t tries = 0; tries < 20; tries++) {
        model_file mf;
        synth_ckpt_make(&mf, g_seed + 100 + tries);
        const float b0[R] = {-20.0f, -20.0f};
        set_stop_bias(&mf, b0, 0);
        char path[1200];
        write_ckpt(&mf, "stopk", path, sizeof path);
        tandem_synth *s = open_synth(path);
        tandem_synth_result r;
        assert_int_equal(tandem_synth_generate(s, "a b", 3, -1, 0, &r), TANDEM_OK);
        assert_int_equal(r.stop, TANDEM_SYNTH_STOP_MAX_FRAMES);
        float lg[F];
        memcpy(lg, r.stop_logit, sizeof lg);
        /* max logit per step; k = the last step that beats every earlier one by a margin */
        double M[TM];
        for (int j = 0; j < TM; j++) M[j] = fmax(lg[j * R], lg[j * R + 1]);
        int k = -1;
        double before = -INFINITY;
        for (int j = 0; j < TM; j++) {
            if (j > 0 && M[j] > before + 0.02) k = j;
            before = fmax(before, M[j]);
        }
        tandem_synth_close(s);
        if (k < 1) {
            free(mf.param);
            free(mf.flat);
            continue;
        }
        double prev = -INFINITY;
        for (int j = 0; j < k; j++) prev = fmax(prev, M[j]);
        const double delta = -(M[k] + prev) / 2;
        int want = -1;
        for (int i = k * R; i < (k + 1) * R && want < 0; i++)
            if (lg[i] + delta > 0) want = i + 1;
        int ambiguous = 0;
        for (int i = 0; i < (k + 1) * R; i++) ambiguous |= fabs(lg[i] + delta) < 1e-3;
        if (ambiguous) {
            free(mf.param);
            free(mf.flat);
            continue;
        }
        const float b1[R] = {(float)(b0[0] + delta), (float)(b0[1] + delta)};
        set_stop_bias(&mf, b1, 0);
        write_ckpt(&mf, "stopk", path, sizeof path);
        s = open_synth(path);
        assert_int_equal(tandem_synth_generate(s, "a b", 3, -1, 0, &r), TANDEM_OK);
        printf("  forced stop at step %d: frames %d (expected %d)\n", k, r.frames, want);
        assert_int_equal(r.stop, TANDEM_SYNTH_STOP_HEAD);
        assert_int_equal(r.steps, k + 1);
        assert_int_equal(r.frames, want);
        assert_int_equal(r.stop_frame, want - 1);
        /* a frame limit before step k ends it first: whole groups, then trimmed */
        assert_int_equal(tandem_synth_generate(s, "a b", 3, -1, k * R - 1, &r), TANDEM_OK);
        assert_int_equal(r.stop, TANDEM_SYNTH_STOP_MAX_FRAMES);
        assert_int_equal(r.stop_frame, -1);
        assert_int_equal(r.steps, k);
        assert_int_equal(r.frames, k * R - 1);
        tandem_synth_close(s);
        free(mf.param);
        free(mf.flat);
        return;
    }
    fail_msg("no model with a usable stop step in 20 tries");
}

/* Parse a .npy written for [frames, 80] float32 and compare the data. */
static void check_npy(const char *path, const float *mel, int frames) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_true(n > 10);
    assert_memory_equal(buf, "\x93NUMPY", 6);
    size_t hl = (size_t)buf[8] | ((size_t)buf[9] << 8);
    assert_int_equal((10 + hl) % 64, 0);
    char header[1024];
    assert_true(hl < sizeof header);
    memcpy(header, buf + 10, hl);
    header[hl] = 0;
    char shape[64];
    snprintf(shape, sizeof shape, "(%d, 80)", frames);
    assert_non_null(strstr(header, "'descr': '<f4'"));
    assert_non_null(strstr(header, "'fortran_order': False"));
    assert_non_null(strstr(header, shape));
    assert_int_equal(n, 10 + hl + (size_t)frames * 80 * 4);
    assert_memory_equal(buf + 10 + hl, mel, (size_t)frames * 80 * 4);
}

static void check_wav(const char *path, int frames) {
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open(path, SFM_READ, &info);
    assert_non_null(sf);
    assert_int_equal(info.samplerate, 22050);
    assert_int_equal(info.channels, 1);
    assert_int_equal(info.format & SF_FORMAT_SUBMASK, SF_FORMAT_PCM_16);
    assert_true(llabs((long long)info.frames - (long long)frames * 256) <= 1024);
    static float x[F * 256 + 4096];
    sf_count_t got = sf_readf_float(sf, x, info.frames);
    sf_close(sf);
    assert_int_equal(got, info.frames);
    double energy = 0;
    for (sf_count_t i = 0; i < got; i++) energy += (double)x[i] * x[i];
    assert_true(energy > 0); /* Griffin-Lim of a non-silent mel is not silence */
}

static void test_outputs(void **state) {
    (void)state;
    model_file mf;
    synth_ckpt_make(&mf, g_seed + 2);
    const float never[R] = {-1e4f, -1e4f};
    set_stop_bias(&mf, never, 0);
    char path[1200];
    write_ckpt(&mf, "out", path, sizeof path);
    /* opened as the command below opens it (--max-frames 11): the same cache capacity, so the
     * same GEMM shapes; a real GPU's cuBLASLt picks its algorithm per shape, and another
     * algorithm rounds differently (an H100 differed in the last bits with the default) */
    tandem_synth_options so;
    tandem_synth_options_init(&so);
    so.backend = g_backend;
    so.max_frames = 11;
    so.gl_iters = 4; /* and its --gl-iters 4 (the arena's Griffin-Lim part) */
    tandem_synth *s = NULL;
    if (tandem_synth_open(path, &so, &s) != TANDEM_OK) fail_msg("synth open %s: %s", path, tandem_last_error());
    tandem_synth_result r;
    assert_int_equal(tandem_synth_generate(s, "hello", 5, -1, 11, &r), TANDEM_OK);
    assert_int_equal(r.frames, 11);
    const float *audio = NULL;
    int64_t samples = 0;
    assert_int_equal(tandem_synth_vocode(s, r.mel, r.frames, 4, 1, &audio, &samples), TANDEM_OK);
    char wav[1300], npy[1300];
    snprintf(wav, sizeof wav, "%s/x.wav", g_dir);
    snprintf(npy, sizeof npy, "%s/x.npy", g_dir);
    assert_int_equal(tandem_wav_write_pcm16(wav, audio, samples, 22050), TANDEM_OK);
    const int64_t shape[2] = {r.frames, 80};
    assert_int_equal(tandem_npy_write_f32(npy, r.mel, 2, shape), TANDEM_OK);
    check_wav(wav, r.frames);
    check_npy(npy, r.mel, r.frames);

    /* the same through the command, when it is built */
    char bin[1300], cmd[4096];
    snprintf(bin, sizeof bin, "%s/tandem", TANDEM_TEST_BUILD_DIR);
    if (access(bin, X_OK) == 0) {
        snprintf(cmd, sizeof cmd, "%s synth --checkpoint %s --text hello --out %s/c.wav --mel-out "
                 "%s/c.npy --max-frames 11 --gl-iters 4 --backend %s > %s/c.log 2>&1", bin, path,
                 g_dir, g_dir, g_backend == TANDEM_BACKEND_CUDA ? "cuda" : "host", g_dir);
        assert_int_equal(system(cmd), 0);
        snprintf(wav, sizeof wav, "%s/c.wav", g_dir);
        snprintf(npy, sizeof npy, "%s/c.npy", g_dir);
        check_wav(wav, 11);
        check_npy(npy, r.mel, 11);
        /* where the stop fired (here: never) and the last frames' stop probabilities */
        char log[1300], text[4096] = {0};
        snprintf(log, sizeof log, "%s/c.log", g_dir);
        FILE *lf = fopen(log, "r");
        assert_non_null(lf);
        const size_t got = fread(text, 1, sizeof text - 1, lf);
        fclose(lf);
        text[got] = 0;
        assert_non_null(strstr(text, "stop: never fired in 11 frames"));
        assert_non_null(strstr(text, "stop probability, frames 3..10: 0.000"));
        /* --kv-cache off (the whole forward per step): the same mel */
        snprintf(cmd, sizeof cmd, "%s synth --checkpoint %s --text hello --out %s/e.wav --mel-out "
                 "%s/c.npy --max-frames 11 --gl-iters 4 --kv-cache off --backend %s > %s/e.log 2>&1",
                 bin, path, g_dir, g_dir, g_backend == TANDEM_BACKEND_CUDA ? "cuda" : "host", g_dir);
        assert_int_equal(system(cmd), 0);
        check_npy(npy, r.mel, 11);
        /* a bad checkpoint: exit code 2 and a message naming the file */
        snprintf(cmd, sizeof cmd, "%s synth --checkpoint %s/x.wav --text hi --out %s/d.wav "
                 "> %s/d.log 2>&1", bin, g_dir, g_dir, g_dir);
        int rc = system(cmd);
        assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    } else {
        printf("  (%s not built: the command line is not checked)\n", bin);
    }
    tandem_synth_close(s);
    free(mf.param);
    free(mf.flat);
}

static void expect_open_error(const char *path, tandem_status want, const char *needle) {
    tandem_synth_options o;
    tandem_synth_options_init(&o);
    o.backend = g_backend;
    tandem_synth *s = NULL;
    tandem_status st = tandem_synth_open(path, &o, &s);
    printf("  %s → %s: %s\n", path, tandem_status_name(st), tandem_last_error());
    assert_int_equal(st, want);
    assert_null(s);
    assert_non_null(strstr(tandem_last_error(), needle));
}

static void test_bad_checkpoints(void **state) {
    (void)state;
    model_file mf;
    synth_ckpt_make(&mf, g_seed + 3);
    char path[1300];
    /* missing file */
    snprintf(path, sizeof path, "%s/none.safetensors", g_dir);
    expect_open_error(path, TANDEM_E_IO, "none.safetensors");
    /* not a safetensors file */
    snprintf(path, sizeof path, "%s/garbage.safetensors", g_dir);
    FILE *f = fopen(path, "wb");
    fputs("this is not a checkpoint at all, just some text bytes", f);
    fclose(f);
    expect_open_error(path, TANDEM_E_FORMAT, "garbage.safetensors");
    /* valid file, no config in the metadata */
    char *sym = NULL;
    size_t sl = 0;
    assert_int_equal(tandem_symbols_to_json(&sym, &sl), TANDEM_OK);
    tandem_st_meta meta[4] = {{TANDEM_CKPT_KEY_FORMAT_VERSION, TANDEM_CKPT_FORMAT_VERSION},
                              {TANDEM_CKPT_KEY_STEP, "3"},
                              {TANDEM_CKPT_KEY_SYMBOLS, sym},
                              {TANDEM_CKPT_KEY_CONFIG, mf.yaml}};
    snprintf(path, sizeof path, "%s/noconfig.safetensors", g_dir);
    write_file(&mf, path, meta, 3, NULL);
    expect_open_error(path, TANDEM_E_FORMAT, "'config'");
    /* a symbol table that differs */
    meta[2].value = "{\"version\":99}";
    snprintf(path, sizeof path, "%s/symbols.safetensors", g_dir);
    write_file(&mf, path, meta, 4, NULL);
    expect_open_error(path, TANDEM_E_FORMAT, "symbol table");
    meta[2].value = sym;
    /* a parameter missing */
    snprintf(path, sizeof path, "%s/missing.safetensors", g_dir);
    write_file(&mf, path, meta, 4, "layers.1.mlp.fc.weight");
    expect_open_error(path, TANDEM_E_FORMAT, "layers.1.mlp.fc.weight");
    /* a config that is not valid YAML for the schema */
    meta[3].value = "d_model: many\n";
    snprintf(path, sizeof path, "%s/badcfg.safetensors", g_dir);
    write_file(&mf, path, meta, 4, NULL);
    expect_open_error(path, TANDEM_E_INVALID, "d_model");
    tandem_free(sym);
    free(mf.param);
    free(mf.flat);
}

static void test_bad_text(void **state) {
    (void)state;
    model_file mf;
    synth_ckpt_make(&mf, g_seed + 4);
    char path[1200];
    write_ckpt(&mf, "text", path, sizeof path);
    tandem_synth *s = open_synth(path);
    tandem_synth_result r;
    const char *bad = "hello \xe4\xbd\xa0 world \xe2\x82\xac\xe4\xbd\xa0"; /* 你 and € */
    assert_int_equal(tandem_synth_generate(s, bad, strlen(bad), -1, 0, &r), TANDEM_E_INVALID);
    printf("  unknown characters: %s\n", tandem_last_error());
    assert_non_null(strstr(tandem_last_error(), "\xe4\xbd\xa0"));
    assert_non_null(strstr(tandem_last_error(), "U+4F60"));
    /* too long for max_text 16 */
    const char *lng = "this sentence is far too long";
    assert_int_equal(tandem_synth_generate(s, lng, strlen(lng), -1, 0, &r), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "max_text"));
    /* invalid UTF-8 */
    assert_int_equal(tandem_synth_generate(s, "ab\xff", 3, -1, 0, &r), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "UTF-8"));
    /* the language tag can be forced */
    int32_t ids[TT];
    int count = 0;
    tandem_lang used;
    assert_int_equal(tandem_synth_encode(s, "ab", 2, TANDEM_LANG_FA, ids, &count, &used), TANDEM_OK);
    assert_int_equal(used, TANDEM_LANG_FA);
    assert_int_equal(ids[0], TANDEM_SYM_LANG_FA);
    assert_int_equal(count, 5);
    tandem_synth_close(s);
    free(mf.param);
    free(mf.flat);
}

/* ---- the plan counts the evaluation arena ------------------------------------------------- */

/* The bytes of pool `name`'s arena in a pool report: "arena 'name' ... arena <x> MiB (<n> bytes)";
 * 0 if absent. */
static size_t arena_bytes(const char *text, const char *name) {
    char head[64];
    snprintf(head, sizeof head, "arena '%s'", name);
    const char *a = strstr(text, head), *b = a ? strstr(a, " bytes)") : NULL;
    if (!b) return 0;
    while (b > a && b[-1] != '(') b--;
    return (size_t)strtoull(b, NULL, 10);
}

/* `tandem plan` with validation on reports the arena validation's free-running evaluation makes
 * (tandem_synth_open_device): the same bytes, per backend. */
static void test_plan_counts_eval_arena(void **state) {
    (void)state;
    static const char yaml[] = "model_size: custom\nd_model: 16\nlayers: 2\nheads: 2\n"
                               "reduction: 2\nmax_text: 16\nmax_frames: 16\nbatch_size: 2\n"
                               "val_data: unused\nval_every: 10\n";
    tandem_config cfg;
    tandem_config_init(&cfg);
    assert_int_equal(tandem_config_load_string(&cfg, yaml, strlen(yaml), "test"), TANDEM_OK);
    tandem_device *dev = NULL;
    assert_int_equal(tandem_device_open(g_backend, 0, &dev), TANDEM_OK);
    tandem_synth *s = NULL;
    assert_int_equal(tandem_synth_open_device(dev, &cfg, 0, 0, &s), TANDEM_OK);
    tandem_pool_stats ps;
    tandem_synth_pool_stats(s, &ps);
    const size_t opened = ps.arena_bytes;
    tandem_synth_close(s);
    tandem_device_close(dev);
    assert_true(opened > 0);
    tandem_plan_options po;
    tandem_plan_options_init(&po);
    po.backend = g_backend;
    static char text[65536];
    assert_int_equal(tandem_plan_report(&cfg, &po, text, sizeof text, NULL), TANDEM_OK);
    print_message("  evaluation arena: %zu bytes opened, %zu planned\n", opened,
                  arena_bytes(text, "synth"));
    assert_int_equal(arena_bytes(text, "synth"), opened);
    assert_non_null(strstr(text, "needs the three arenas"));
    /* no validation, no evaluation arena */
    assert_int_equal(tandem_config_set(&cfg, "val_data", ""), TANDEM_OK);
    assert_int_equal(tandem_plan_report(&cfg, &po, text, sizeof text, NULL), TANDEM_OK);
    assert_int_equal(arena_bytes(text, "synth"), 0);
    assert_non_null(strstr(text, "needs both arenas"));
}

int main(void) {
    g_seed = tandem_test_seed("test_synth");
    const char *be = getenv("TANDEM_TEST_BACKEND");
    if (be && !strcmp(be, "cuda")) g_backend = TANDEM_BACKEND_CUDA;
    snprintf(g_dir, sizeof g_dir, "/tmp/tandem_test_synth_%d", (int)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_reference), cmocka_unit_test(test_kv_matches_recompute),
        cmocka_unit_test(test_stop_constant),
        cmocka_unit_test(test_stop_at_step),      cmocka_unit_test(test_outputs),
        cmocka_unit_test(test_bad_checkpoints),   cmocka_unit_test(test_bad_text),
        cmocka_unit_test(test_plan_counts_eval_arena),
    };
    char mk[300];
    snprintf(mk, sizeof mk, "mkdir -p %s", g_dir);
    if (system(mk) != 0) return 1;
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (!failed) {
        snprintf(mk, sizeof mk, "rm -rf %s", g_dir);
        if (system(mk) != 0) return 1;
    }
    return failed;
}
