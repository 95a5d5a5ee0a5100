/* gen_corpus.c — writes the binary seed files of the fuzz corpus (`make fuzz-corpus`): text
 * caches built by the real index code, small audio files in each container libsndfile reads,
 * and safetensors files from the real writer. The text seeds (metadata, text, config) and the
 * fatbins are kept by hand in test/fuzz/corpus/.
 *
 *   gen_corpus <corpus dir>   (writes <dir>/text_cache/gen-*, <dir>/audio/gen-*,
 *                              <dir>/safetensors/gen-*)
 *
 * Regenerate after a format change (text cache format, safetensors writer). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/formats/checkpoint.h"
#include "platform/os/os.h"
#include "runtime/formats/safetensors.h"
#include "runtime/data/text_cache.h"
#include "runtime/data/text_index.h"
#include "test/fixtures.h"

static int report_failure(const char *what) {
    fprintf(stderr, "gen_corpus: %s: %s\n", what, tandem_last_error());
    return 1;
}

static int write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, n, f) == n;
    if (f) ok &= fclose(f) == 0;
    if (!ok) fprintf(stderr, "gen_corpus: cannot write %s\n", path);
    return ok ? 0 : 1;
}

/* ---- text cache: index blobs from small metadata, sealed like tandem_text_index_open does ---- */

static int gen_cache(const char *dir, const char *name, const char *meta, int max_text) {
    tandem_text_index_config cfg;
    tandem_text_index_config_default(&cfg);
    cfg.data_dir = "corpus";
    cfg.check_audio = 0;
    cfg.use_cache = 0;
    cfg.num_workers = 1;
    cfg.max_text = max_text;
    void *blob = NULL;
    size_t bytes = 0;
    if (tandem_text_index_build_blob(&cfg, "metadata.csv", meta, strlen(meta), &blob, &bytes) != TANDEM_OK)
        return report_failure("build_blob");
    tandem_text_cache_seal(blob, bytes, tandem_hash64(meta, strlen(meta), 1));
    char path[1024];
    snprintf(path, sizeof path, "%s/text_cache/%s", dir, name);
    int rc = write_bytes(path, blob, bytes);
    tandem_free(blob);
    return rc;
}

/* ---- audio ---- */

static int gen_audio(const char *dir, const char *name, int format, int rate, int channels, int frames) {
    char path[1024];
    snprintf(path, sizeof path, "%s/audio/%s", dir, name);
    float *x = calloc((size_t)frames * (size_t)channels, sizeof *x);
    for (int i = 0; i < frames; i++)
        for (int c = 0; c < channels; c++)
            x[i * channels + c] = 0.5f * sinf(6.2831853f * 440.0f * (float)(c + 1) * (float)i / (float)rate);
    tandem_test_write_audio(path, x, frames, rate, channels, format); /* exits on failure */
    free(x);
    return 0;
}

/* ---- safetensors ---- */

static int gen_st(const char *dir, const char *name, const tandem_st_tensor *t, int n, const tandem_st_meta *meta,
                  int n_meta) {
    tandem_st_writer *w = NULL;
    if (tandem_st_writer_create(t, n, 512, 0, &w) != TANDEM_OK) return report_failure("st_writer_create");
    char path[1024];
    snprintf(path, sizeof path, "%s/safetensors/%s", dir, name);
    tandem_status st = tandem_st_write(w, path, meta, n_meta, NULL, NULL);
    tandem_st_writer_free(w);
    return st == TANDEM_OK ? 0 : report_failure("st_write");
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gen_corpus <corpus dir>\n");
        return 2;
    }
    const char *dir = argv[1];
    int rc = 0;

    rc |= gen_cache(dir, "gen-en.cache",
                    "LJ001-0001|Printing, in 1912.|Printing, in nineteen twelve.\n"
                    "LJ001-0002|in being comparatively modern.|in being comparatively modern.\n"
                    "LJ001-0003|bad|\xff\xfe\n"
                    "LJ001-0002|duplicate|duplicate\n",
                    128);
    rc |= gen_cache(dir, "gen-fa.cache",
                    "fa_0001|\xd8\xb3\xd9\x84\xd8\xa7\xd9\x85 \xdb\xb1\xdb\xb2\xdb\xb3\n"
                    "en_0002|Hello, world!\n"
                    "fa_0003|\xd9\x85\xd9\x86 \xd9\x85\xdb\x8c\xe2\x80\x8c\xd8\xb1\xd9\x88\xd9\x85.\n",
                    32);

    rc |= gen_audio(dir, "gen-pcm16-22050.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 22050, 1, 300);
    rc |= gen_audio(dir, "gen-pcm8-stereo-16000.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_U8, 16000, 2, 200);
    rc |= gen_audio(dir, "gen-float-44100.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 44100, 1, 200);
    rc |= gen_audio(dir, "gen-pcm24-48000.aiff", SF_FORMAT_AIFF | SF_FORMAT_PCM_24, 48000, 1, 200);
    rc |= gen_audio(dir, "gen-pcm16-22050.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 22050, 1, 400);
    rc |= gen_audio(dir, "gen-vorbis-22050.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 22050, 1, 300);

    static const float w[6] = {1.0f, -2.5f, 0.0f, 3.25f, -0.125f, 1e-3f};
    static const uint16_t bf[4] = {0x3f80, 0xbf80, 0x7f80, 0x0000};
    static const uint8_t u8 = 7;
    static const int32_t i32[3] = {-1, 0, 65536};
    tandem_st_tensor ckpt[] = {
        {.name = "encoder.weight", .dtype = TANDEM_F32, .ndim = 2, .shape = {2, 3}, .data = w},
        {.name = "adam.m", .dtype = TANDEM_BF16, .ndim = 1, .shape = {4}, .data = bf},
        {.name = "scalar", .dtype = TANDEM_U8, .ndim = 0, .data = &u8},
        {.name = "empty", .dtype = TANDEM_F16, .ndim = 2, .shape = {0, 5}, .data = w},
        {.name = "steps \"quoted\" \xc3\xa9", .dtype = TANDEM_I32, .ndim = 1, .shape = {3}, .data = i32},
    };
    tandem_st_meta meta[] = {
        {TANDEM_CKPT_KEY_FORMAT_VERSION, TANDEM_CKPT_FORMAT_VERSION},
        {TANDEM_CKPT_KEY_STEP, "7"},
        {TANDEM_CKPT_KEY_CONFIG, "model_size: tiny\nbatch_size: 8\n"},
        {TANDEM_CKPT_KEY_SYMBOLS, "{\"version\":1,\"symbols\":[\"<pad>\",\"\\u200c\"]}"},
    };
    rc |= gen_st(dir, "gen-checkpoint.safetensors", ckpt, 5, meta, 4);
    rc |= gen_st(dir, "gen-plain.safetensors", ckpt, 1, NULL, 0);
    rc |= gen_st(dir, "gen-no-tensors.safetensors", ckpt, 0, meta, 2);
    return rc;
}
