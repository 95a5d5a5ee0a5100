/* cmd_features.c — `tandem features IN [OUT.npy]`: the log-mel features of one audio file,
 * computed exactly as training computes them (decoder → feature kernels + GEMM on a device,
 * runtime/audio/mel_device.h), written as a float32 NumPy array [frames, 80] or summarised. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/audio/audio.h"
#include "tools/cli.h"
#include "runtime/audio/mel.h"
#include "runtime/audio/mel_device.h"
#include "runtime/formats/npy.h"
#include "tandem.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem features IN [OUT.npy] [--backend auto|host|cuda]\n\n"
            "Decodes IN (any format libsndfile reads; resampled to 22050 Hz mono), computes its\n"
            "log-mel features on a device (80 Slaney bands 0-8000 Hz, n_fft 1024, hop 256,\n"
            "ln(max(x, 1e-5))) and writes them to OUT.npy as float32 [frames, 80], or prints a\n"
            "summary without OUT. --backend picks the device (default auto: cuda if present).\n");
}

/* Runs the device path for one signal of n samples into mel [n / 256, 80]. */
static tandem_status device_features(tandem_backend backend, const float *audio, int64_t n, float *mel,
                                     int frames, char *devname, size_t devname_cap) {
    tandem_device *dev = NULL;
    tandem_pool *pool = NULL;
    tandem_stream *s = NULL;
    tandem_mel_plan plan;
    memset(&plan, 0, sizeof plan);
    tandem_status st = tandem_device_open(backend, 0, &dev);
    if (st != TANDEM_OK) return st;
    tandem_device_info info;
    if (tandem_device_get_info(dev, &info) == TANDEM_OK)
        snprintf(devname, devname_cap, "%s (%s)", info.name,
                 info.backend == TANDEM_BACKEND_CUDA ? "cuda" : "host");
    int32_t len32 = (int32_t)n;
    if ((st = tandem_pool_create(dev, "features", 0, &pool)) != TANDEM_OK) goto out;
    if ((st = tandem_mel_plan_declare(pool, dev, "mel", 1, frames, n, 0, &plan)) != TANDEM_OK) goto out;
    if ((st = tandem_pool_commit(pool)) != TANDEM_OK) goto out;
    if ((st = tandem_stream_create(dev, &s)) != TANDEM_OK) goto out;
    if ((st = tandem_mel_upload_constants(&plan, s)) != TANDEM_OK) goto out;
    if ((st = tandem_tensor_upload(s, plan.audio, audio, sizeof(float) * (size_t)n)) != TANDEM_OK) goto out;
    if ((st = tandem_tensor_upload(s, plan.lengths, &len32, sizeof len32)) != TANDEM_OK) goto out;
    if ((st = tandem_mel_batch(&plan, s)) != TANDEM_OK) goto out;
    if ((st = tandem_tensor_download(s, mel, plan.mel, sizeof(float) * (size_t)frames * TANDEM_MEL_N_MELS)) != TANDEM_OK)
        goto out;
    st = tandem_stream_sync(s);
out:
    if (s) tandem_stream_destroy(s);
    tandem_mel_plan_release(&plan);
    if (pool) tandem_pool_destroy(pool);
    tandem_device_close(dev);
    return st;
}

int cli_features(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *in = NULL, *out = NULL;
    tandem_backend backend = TANDEM_BACKEND_AUTO;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
            if (!cli_parse_backend("features", argv[++i], &backend)) return 2;
        } else if (argv[i][0] == '-' && argv[i][1] != 0) {
            fprintf(stderr, "tandem features: unknown option %s\n\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!in) {
            in = argv[i];
        } else if (!out) {
            out = argv[i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!in) {
        usage(stderr);
        return 2;
    }

    tandem_audio_info info;
    if (tandem_audio_probe(in, &info) != TANDEM_OK) {
        fprintf(stderr, "tandem features: %s\n", tandem_last_error());
        return 2;
    }
    /* the resampler's count may differ by a sample; a stream that does not state its length
     * gets room for an hour (the decoder stops with a clear error beyond) */
    int64_t cap = info.samples_22050 >= 0 ? info.samples_22050 + 16 : (int64_t)3600 * TANDEM_FEATURE_SAMPLE_RATE;
    float *audio = (float *)malloc(sizeof(float) * (size_t)cap);
    if (!audio) {
        fprintf(stderr, "tandem features: %s: out of memory for %lld samples\n", in, (long long)cap);
        return 1;
    }
    int64_t n = 0;
    if (tandem_audio_load(in, audio, cap, &n, &info) != TANDEM_OK) {
        fprintf(stderr, "tandem features: %s\n", tandem_last_error());
        free(audio);
        return 2;
    }
    int64_t frames64 = tandem_mel_frame_count(n);
    if (frames64 < 1 || frames64 > INT32_MAX) {
        fprintf(stderr, "tandem features: %s: %lld samples at 22050 Hz %s\n", in, (long long)n,
                frames64 < 1 ? "is shorter than one hop (256): no frames" : "is too long");
        free(audio);
        return 2;
    }
    int frames = (int)frames64;
    float *mel = (float *)malloc(sizeof(float) * (size_t)frames * TANDEM_MEL_N_MELS);
    char devname[160] = "?";
    tandem_status st = mel ? device_features(backend, audio, n, mel, frames, devname, sizeof devname)
                           : TANDEM_E_NOMEM;
    free(audio);
    if (st != TANDEM_OK) {
        fprintf(stderr, "tandem features: %s: %s\n", in, mel ? tandem_last_error() : "out of memory");
        free(mel);
        return 1;
    }

    int rc = 0;
    if (out) {
        const int64_t shape[2] = {frames, TANDEM_MEL_N_MELS};
        if (tandem_npy_write_f32(out, mel, 2, shape) != TANDEM_OK) {
            fprintf(stderr, "tandem features: %s\n", tandem_last_error());
            rc = 1;
        }
        if (rc == 0) printf("%s: [%d, %d] float32 log-mel on %s\n", out, frames, TANDEM_MEL_N_MELS, devname);
    } else {
        double lo = INFINITY, hi = -INFINITY, sum = 0.0;
        for (size_t i = 0; i < (size_t)frames * TANDEM_MEL_N_MELS; i++) {
            double v = mel[i];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            sum += v;
        }
        printf("file      %s\n", in);
        printf("format    %s, %d Hz, %d channel%s, %.3f s\n", info.format, info.sample_rate, info.channels,
               info.channels == 1 ? "" : "s", info.seconds);
        printf("samples   %lld at 22050 Hz%s\n", (long long)n, info.sample_rate != TANDEM_FEATURE_SAMPLE_RATE ? " (resampled)" : "");
        printf("features  [%d, %d] on %s\n", frames, TANDEM_MEL_N_MELS, devname);
        printf("log-mel   min %.4f  max %.4f  mean %.4f\n", lo, hi, sum / ((double)frames * TANDEM_MEL_N_MELS));
    }
    free(mel);
    return rc;
}
