/* train_embed.c — an appliance that trains: it includes only <tandem.h>, links only libtandem.a
 * plus the libraries tandem.pc names (build: mk/50-example.mk, `make example`), and
 *
 *   1. writes a tiny corpus into a temporary directory: a few WAVs of synthetic tones (written
 *      by hand below, 16-bit PCM at 22050 Hz) and metadata.csv in the LJSpeech layout;
 *   2. trains the tiny model (configs/tiny.yaml's preset, batch 2) for a few steps on the host
 *      backend, printing each step from the per-step callback;
 *   3. inspects the checkpoint the run wrote;
 *   4. synthesizes a sentence from it and writes the waveform.
 *
 * It prints the loss before and after training and the synthesized length; the exit status is 0
 * when everything succeeded and the loss went down. docs/API.md walks through it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkdtemp, nftw, M_PI */
#endif
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <tandem.h>

enum { UTTERANCES = 6, RATE = TANDEM_FEATURE_SAMPLE_RATE, STEPS = 5 };

/* Print the runtime's message for a failed call and leave main. */
#define CHECK(call)                                                                              \
    do {                                                                                         \
        tandem_status st_ = (call);                                                              \
        if (st_ != TANDEM_OK) {                                                                  \
            fprintf(stderr, "train_embed: %s failed: %s: %s\n", #call, tandem_status_name(st_), \
                    tandem_last_error());                                                        \
            goto out;                                                                            \
        }                                                                                        \
    } while (0)

/* ---- the corpus ----------------------------------------------------------------------------- */

static void put_u32(FILE *f, uint32_t v) {
    const unsigned char b[4] = {v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24};
    fwrite(b, 1, 4, f);
}
static void put_u16(FILE *f, uint16_t v) {
    const unsigned char b[2] = {v & 0xff, v >> 8};
    fwrite(b, 1, 2, f);
}

/* A mono 16-bit PCM WAV of n samples: a tone at hz with a slow vibrato. */
static int write_wav(const char *path, int n, double hz) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fwrite("RIFF", 1, 4, f);
    put_u32(f, 36 + 2 * (uint32_t)n);
    fwrite("WAVEfmt ", 1, 8, f);
    put_u32(f, 16);       /* fmt chunk size */
    put_u16(f, 1);        /* PCM */
    put_u16(f, 1);        /* mono */
    put_u32(f, RATE);
    put_u32(f, RATE * 2); /* bytes per second */
    put_u16(f, 2);        /* block align */
    put_u16(f, 16);       /* bits per sample */
    fwrite("data", 1, 4, f);
    put_u32(f, 2 * (uint32_t)n);
    for (int i = 0; i < n; i++) {
        const double t = (double)i / RATE;
        const double x = 0.4 * sin(2 * M_PI * hz * t + 3 * sin(2 * M_PI * 5 * t));
        put_u16(f, (uint16_t)(int16_t)lrint(x * 32767));
    }
    return fclose(f) == 0 ? 0 : -1;
}

static const char *const sentences[UTTERANCES] = {"a cat sat", "the dog ran home", "red sun",
                                                  "blue sea and sky", "one tall tree", "we go in time"};

/* dir/metadata.csv and dir/wavs/u<i>.wav, 0.3 to 0.8 s each. */
static int write_corpus(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/wavs", dir);
    if (mkdir(path, 0755) != 0) return -1;
    snprintf(path, sizeof path, "%s/metadata.csv", dir);
    FILE *meta = fopen(path, "w");
    if (!meta) return -1;
    for (int i = 0; i < UTTERANCES; i++) {
        snprintf(path, sizeof path, "%s/wavs/u%d.wav", dir, i);
        if (write_wav(path, RATE * (3 + i) / 10, 180.0 + 70.0 * i) != 0) {
            fclose(meta);
            return -1;
        }
        fprintf(meta, "u%d|%s|%s\n", i, sentences[i], sentences[i]);
    }
    return fclose(meta) == 0 ? 0 : -1;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* ---- training ------------------------------------------------------------------------------- */

/* The per-step callback: runs on the thread that called tandem_trainer_run, after each step. */
static void on_step(void *user, const tandem_step_metrics *m) {
    (void)user;
    printf("  step %lld/%lld  loss %.4f  l1 %.4f  %.1f samples/s  model busy %.0f %%\n", (long long)m->step,
           (long long)m->total_steps, m->loss, m->l1, m->samples_per_s, m->model_busy_pct);
}

/* ---- synthesis ------------------------------------------------------------------------------ */

/* Opens the checkpoint, synthesizes `text` into the handle's own buffers (valid until the next run
 * or close), writes the waveform next to it and returns the log-mel's frames and the samples. A
 * few Griffin-Lim iterations are enough to show the path; listening quality wants the default. */
static tandem_status synthesize(const char *checkpoint, const char *text, const char *wav, long *frames,
                                long *samples, int *stopped) {
    tandem_synth_options o;
    tandem_synth_options_init(&o);
    o.backend = TANDEM_BACKEND_HOST;
    o.gl_iters = 4;
    tandem_synth *s = NULL;
    tandem_status st = tandem_synth_open(checkpoint, &o, &s);
    if (st != TANDEM_OK) return st; /* s is NULL: nothing to close */
    tandem_synth_result r;
    st = tandem_synth_run(s, text, TANDEM_LANG_AUTO, NULL, &r);
    if (st == TANDEM_OK) st = tandem_wav_write_pcm16(wav, r.audio, r.samples, r.sample_rate);
    *frames = r.frames;
    *samples = (long)r.samples;
    *stopped = r.stop == TANDEM_SYNTH_STOP_HEAD;
    tandem_synth_close(s);
    return st;
}

int main(void) {
    int rc = 1;
    tandem_config *cfg = NULL;
    tandem_trainer *trainer = NULL;
    tandem_ckpt *ckpt = NULL;
    char root[512], data[600], out[600], cache[600];
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/tandem_train_embed.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(root)) return 1;
    snprintf(data, sizeof data, "%s/corpus", root);
    snprintf(out, sizeof out, "%s/run", root);
    snprintf(cache, sizeof cache, "%s/cache", root);
    if (mkdir(data, 0755) != 0 || write_corpus(data) != 0) {
        fprintf(stderr, "train_embed: cannot write the corpus in %s\n", data);
        goto out;
    }

    /* The config: the tiny preset, small batches, a short warm-up, no checkpoints until the end. */
    CHECK(tandem_config_create(&cfg));
    static const char *const keys[][2] = {
        {"model_size", "tiny"}, {"batch_size", "2"}, {"num_workers", "1"}, {"max_steps", "5"},
        {"warmup_steps", "1"}, {"lr", "0.001"}, {"log_every", "1"}, {"checkpoint_every", "0"}, {"keep", "1"},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) CHECK(tandem_config_set(cfg, keys[i][0], keys[i][1]));
    CHECK(tandem_config_set(cfg, "train_data", data));
    CHECK(tandem_config_set(cfg, "out", out));
    CHECK(tandem_config_check(cfg));

    tandem_trainer_options opt;
    tandem_trainer_options_init(&opt);
    opt.backend = TANDEM_BACKEND_HOST; /* the same program runs on GPUs with TANDEM_BACKEND_AUTO */
    opt.on_step = on_step;
    opt.cache_dir = cache; /* the text cache stays in the temporary directory */
    CHECK(tandem_trainer_create(cfg, &opt, &trainer));
    printf("training the tiny model for %d steps on %d utterances\n", STEPS, UTTERANCES);
    tandem_trainer_summary sum;
    CHECK(tandem_trainer_run(trainer, &sum));
    printf("loss before %.4f, after %.4f (%lld steps)\n", sum.loss_first, sum.loss_last, (long long)sum.steps_run);

    CHECK(tandem_ckpt_open_latest(out, &ckpt));
    printf("checkpoint: step %lld, format %s, %d tensors\n", (long long)tandem_ckpt_step(ckpt),
           tandem_ckpt_format_version(ckpt), tandem_ckpt_tensor_count(ckpt));

    long frames = 0, samples = 0;
    int stopped = 0;
    char wav[700];
    snprintf(wav, sizeof wav, "%s/synth.wav", out);
    CHECK(synthesize(tandem_ckpt_path(ckpt), sentences[1], wav, &frames, &samples, &stopped));
    printf("synthesized \"%s\": %ld mel frames, %ld samples (%.2f s; %s)\n", sentences[1], frames, samples,
           (double)samples / RATE, stopped ? "the stop head fired" : "frame limit: a 5-step model has not learned to stop");
    if (frames < 1 || samples != frames * (long)TANDEM_FEATURE_HOP) {
        fprintf(stderr, "train_embed: synthesized %ld frames and %ld samples; expected >= 1 frame, one hop of samples each\n",
                frames, samples);
        goto out;
    }
    rc = sum.loss_last < sum.loss_first ? 0 : 1;
    if (rc) fprintf(stderr, "train_embed: the loss did not go down\n");
out:
    tandem_ckpt_close(ckpt);
    tandem_trainer_destroy(trainer);
    tandem_config_destroy(cfg);
    nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}
