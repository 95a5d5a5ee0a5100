/* cmd_features.c — `tandem features IN [OUT.npy]`: the log-mel features of one audio file,
 * computed exactly as training computes them (decoder → feature kernels + GEMM on a device),
 * through the public features API (tandem_features.h), written as a float32 NumPy array
 * [frames, 80] or summarised. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tandem.h"
#include "tools/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem features IN [OUT.npy] [--backend auto|host|cuda] [--max-seconds S]\n\n"
            "Decodes IN (any format libsndfile reads; resampled to 22050 Hz mono), computes its\n"
            "log-mel features on a device (80 Slaney bands 0-8000 Hz, n_fft 1024, hop 256,\n"
            "ln(max(x, 1e-5))) and writes them to OUT.npy as float32 [frames, 80], or prints a\n"
            "summary without OUT. --backend picks the device (default auto: cuda if present).\n"
            "--max-seconds refuses longer inputs before decoding them (default %g).\n",
            TANDEM_FEATURES_MAX_SECONDS);
}

/* The summary of r (no OUT). */
static void summarise(const char *in, const tandem_features_result *r, const char *devname) {
    double lo = INFINITY, hi = -INFINITY, sum = 0.0;
    const size_t n = (size_t)r->frames * (size_t)r->n_mels;
    for (size_t i = 0; i < n; i++) {
        double v = r->mel[i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += v;
    }
    printf("file      %s\n", in);
    printf("format    %s, %d Hz, %d channel%s, %.3f s\n", r->format, r->sample_rate, r->channels,
           r->channels == 1 ? "" : "s", r->seconds);
    printf("samples   %lld at 22050 Hz%s\n", (long long)r->samples, r->sample_rate != 22050 ? " (resampled)" : "");
    printf("features  [%d, %d] on %s\n", r->frames, r->n_mels, devname);
    printf("log-mel   min %.4f  max %.4f  mean %.4f\n", lo, hi, sum / (double)n);
}

/* Features of in → out (NULL: the summary); the exit code. */
static int features(tandem_backend backend, double max_seconds, const char *in, const char *out) {
    tandem_features_options o;
    tandem_features_options_init(&o);
    o.backend = backend;
    if (max_seconds > 0) o.max_seconds = max_seconds;
    tandem_status st = out ? tandem_files_check_output(out) : TANDEM_OK;
    if (st == TANDEM_OK) st = tandem_files_check_distinct(&out, 1, &in, 1); /* never OUT = IN */
    if (st == TANDEM_OK && out) st = tandem_files_sweep_temps(out, NULL); /* a killed writer's temps */
    if (st != TANDEM_OK) return cli_fail("features", st);
    tandem_features *f = NULL;
    st = tandem_features_open(&o, &f);
    if (st != TANDEM_OK) return cli_fail("features", st);
    tandem_features_result r;
    st = tandem_features_from_file(f, in, NULL, 0, &r);
    tandem_device_info info;
    char devname[160] = "?";
    if (st == TANDEM_OK && tandem_features_get_device(f, &info) == TANDEM_OK)
        snprintf(devname, sizeof devname, "%s (%s)", info.name,
                 info.backend == TANDEM_BACKEND_CUDA ? "cuda" : "host");
    if (st == TANDEM_OK && out) {
        const int64_t shape[2] = {r.frames, r.n_mels};
        st = tandem_npy_write_f32(out, r.mel, 2, shape);
        if (st == TANDEM_OK) printf("%s: [%d, %d] float32 log-mel on %s\n", out, r.frames, r.n_mels, devname);
    } else if (st == TANDEM_OK) {
        summarise(in, &r, devname);
    }
    tandem_features_close(f);
    return cli_fail("features", st);
}

int cli_features(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *in = NULL, *out = NULL;
    tandem_backend backend = TANDEM_BACKEND_AUTO;
    double max_seconds = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
            if (!cli_parse_backend("features", argv[++i], &backend)) return 2;
        } else if (strcmp(argv[i], "--max-seconds") == 0 && i + 1 < argc) {
            char *end = NULL;
            max_seconds = strtod(argv[++i], &end);
            if (!end || *end || !(max_seconds > 0) || max_seconds > 1e6) {
                fprintf(stderr, "tandem features: --max-seconds %s: expected seconds > 0 and <= 1e6\n", argv[i]);
                return 2;
            }
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

    return features(backend, max_seconds, in, out);
}
