/* features_bench.c — throughput of Tandem's log-mel features over a set of audio files, for
 * `make bench` (bench/run.sh). Not part of `make test`.
 *
 *   features_bench [--threads T] [--reps R] [--path device|host] FILE...
 *
 * Every file is decoded once up front (runtime/audio/audio.h) and kept in memory: decoding is NOT
 * timed (the Python peers are timed the same way). Then, R times after one untimed warm-up
 * pass, T threads take files from a shared counter and compute their log-mel:
 *
 *   device  the path `tandem features` and the pipeline use (runtime/audio/mel_device.h): upload the
 *           samples to a tensor, tandem_mel_batch (STFT, band projection, log, targets kernels) on a
 *           stream of a host device, download [frames, 80]. Each file has its own plan, sized
 *           to it exactly (batch 1, max_frames = its frames) and committed before timing, as the
 *           pipeline commits its pools once; each thread has its own stream.
 *   host    the host recipe of runtime/audio/mel.h (tandem_mel_host_compute), for comparison.
 *
 * Prints one line per repetition and a RESULT line (median, min, max wall seconds; audio
 * seconds per second = x real time; and the median CPU seconds of the process per pass, whose
 * ratio to the audio is less sensitive to other load on a shared machine). After timing, every file's output is checked against the other
 * path (device vs host recipe): the largest absolute difference is printed, and a difference
 * above 1e-3 fails the run.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/audio/audio.h"
#include "runtime/audio/mel.h"
#include "platform/os/log.h"
#include "runtime/audio/mel_device.h"
#include "platform/os/os.h"
#include "tandem.h"

enum { PATH_DEVICE, PATH_HOST };

typedef struct item {
    const char *path;
    float *audio; /* [n] at 22050 Hz */
    int64_t n;
    int frames;
    float *out; /* [frames, 80] */
    tandem_pool *pool;
    tandem_mel_plan plan;
} item;

typedef struct bench {
    item *items;
    int n_items;
    int path;
    tandem_device *dev;
    tandem_mel_host *host;
    atomic_int next;
    atomic_int failed;
} bench;

typedef struct worker {
    bench *b;
    tandem_stream *stream;
} worker;

static void die(const char *what) {
    fprintf(stderr, "features_bench: %s: %s\n", what, tandem_last_error());
    exit(1);
}

static tandem_status run_device(item *it, tandem_stream *s) {
    int32_t len = (int32_t)it->n;
    TANDEM_TRY(tandem_tensor_upload(s, it->plan.audio, it->audio, sizeof(float) * (size_t)it->n));
    TANDEM_TRY(tandem_tensor_upload(s, it->plan.lengths, &len, sizeof len));
    TANDEM_TRY(tandem_mel_batch(&it->plan, s));
    TANDEM_TRY(tandem_tensor_download(s, it->out, it->plan.mel,
                                      sizeof(float) * (size_t)it->frames * TANDEM_MEL_N_MELS));
    return tandem_stream_sync(s);
}

static void *worker_main(void *arg) {
    worker *w = (worker *)arg;
    bench *b = w->b;
    for (;;) {
        int i = atomic_fetch_add(&b->next, 1);
        if (i >= b->n_items) break;
        item *it = &b->items[i];
        tandem_status st;
        if (b->path == PATH_DEVICE) {
            st = run_device(it, w->stream);
        } else {
            int frames = 0;
            st = tandem_mel_host_compute(b->host, it->audio, it->n, it->out, it->frames, &frames);
        }
        if (st != TANDEM_OK) {
            fprintf(stderr, "features_bench: %s: %s\n", it->path, tandem_last_error());
            atomic_store(&b->failed, 1);
            break;
        }
    }
    return NULL;
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One pass over all files on nthreads threads; returns wall seconds, *cpu = CPU seconds of
 * the whole process during the pass (all threads, OpenBLAS's included). */
static double one_pass(bench *b, worker *workers, int nthreads, double *cpu) {
    tandem_thread th[64];
    atomic_store(&b->next, 0);
    double c0 = cpu_seconds();
    uint64_t t0 = tandem_now_ns();
    for (int t = 0; t < nthreads; t++)
        if (tandem_thread_start(&th[t], worker_main, &workers[t], "bench") != TANDEM_OK) die("thread start");
    for (int t = 0; t < nthreads; t++) tandem_thread_join(&th[t]);
    double s = (double)(tandem_now_ns() - t0) * 1e-9;
    *cpu = cpu_seconds() - c0;
    if (atomic_load(&b->failed)) {
        fprintf(stderr, "features_bench: a file failed; no result\n");
        exit(1);
    }
    return s;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void usage(void) {
    fprintf(stderr, "usage: features_bench [--threads T] [--reps R] [--path device|host] FILE...\n");
    exit(2);
}

int main(int argc, char **argv) {
    int nthreads = 1, reps = 5, first_file = argc;
    bench b;
    memset(&b, 0, sizeof b);
    b.path = PATH_DEVICE;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--path") && i + 1 < argc) {
            const char *p = argv[++i];
            if (!strcmp(p, "device")) b.path = PATH_DEVICE;
            else if (!strcmp(p, "host")) b.path = PATH_HOST;
            else usage();
        } else if (argv[i][0] == '-') usage();
        else {
            first_file = i;
            break;
        }
    }
    if (nthreads < 1 || nthreads > 64 || reps < 1 || reps > 1000 || first_file >= argc) usage();
    b.n_items = argc - first_file;
    b.items = (item *)calloc((size_t)b.n_items, sizeof(item));
    if (!b.items) return 1;

    /* Decode everything (untimed). */
    tandem_audio_decoder *dec = NULL;
    if (tandem_audio_decoder_create(&dec) != TANDEM_OK) die("decoder");
    double audio_s = 0.0;
    for (int i = 0; i < b.n_items; i++) {
        item *it = &b.items[i];
        it->path = argv[first_file + i];
        tandem_audio_info info;
        if (tandem_audio_probe(it->path, &info) != TANDEM_OK) die(it->path);
        int64_t cap = info.samples_22050 + 16;
        it->audio = (float *)malloc(sizeof(float) * (size_t)cap);
        if (!it->audio) return 1;
        if (tandem_audio_decode(dec, it->path, it->audio, cap, &it->n, NULL) != TANDEM_OK) die(it->path);
        it->frames = (int)tandem_mel_frame_count(it->n);
        if (it->frames < 1) {
            fprintf(stderr, "features_bench: %s: shorter than one hop\n", it->path);
            return 1;
        }
        it->out = (float *)malloc(sizeof(float) * (size_t)it->frames * TANDEM_MEL_N_MELS);
        if (!it->out) return 1;
        audio_s += (double)it->n / TANDEM_AUDIO_RATE;
    }
    tandem_audio_decoder_free(dec);

    /* Set up the chosen path (untimed): plans committed, constants uploaded. */
    worker workers[64];
    memset(workers, 0, sizeof workers);
    const char *path_name = b.path == PATH_DEVICE ? "device" : "host";
    char devname[256] = "host recipe (runtime/audio/mel.h)";
    if (b.path == PATH_DEVICE) {
        if (tandem_device_open(TANDEM_BACKEND_HOST, 0, &b.dev) != TANDEM_OK) die("host device");
        tandem_device_info di;
        if (tandem_device_get_info(b.dev, &di) == TANDEM_OK)
            snprintf(devname, sizeof devname, "tandem_mel_batch on host device \"%s\"", di.name);
        tandem_stream *setup = NULL;
        if (tandem_stream_create(b.dev, &setup) != TANDEM_OK) die("stream");
        for (int i = 0; i < b.n_items; i++) {
            item *it = &b.items[i];
            if (tandem_pool_create(b.dev, "bench", 0, &it->pool) != TANDEM_OK) die("pool");
            if (tandem_mel_plan_declare(it->pool, b.dev, "mel", 1, it->frames, it->n, 0, &it->plan) != TANDEM_OK)
                die("mel plan");
            if (tandem_pool_commit(it->pool) != TANDEM_OK) die("pool commit");
            if (tandem_mel_upload_constants(&it->plan, setup) != TANDEM_OK) die("filterbank upload");
        }
        tandem_stream_destroy(setup);
        for (int t = 0; t < nthreads; t++)
            if (tandem_stream_create(b.dev, &workers[t].stream) != TANDEM_OK) die("stream");
    }
    if (tandem_mel_host_create(&b.host) != TANDEM_OK) die("host mel tables");
    for (int t = 0; t < nthreads; t++) workers[t].b = &b;

    printf("features_bench: %d files, %.1f s of audio, path %s (%s), %d thread%s, decoding excluded\n",
           b.n_items, audio_s, path_name, devname, nthreads, nthreads == 1 ? "" : "s");
    double cpu = 0.0;
    double warm = one_pass(&b, workers, nthreads, &cpu);
    printf("  warm-up  %.3f s (not counted)\n", warm);
    double *times = (double *)malloc(sizeof(double) * (size_t)reps);
    double *cpus = (double *)malloc(sizeof(double) * (size_t)reps);
    if (!times || !cpus) return 1;
    for (int r = 0; r < reps; r++) {
        times[r] = one_pass(&b, workers, nthreads, &cpus[r]);
        printf("  rep %-3d  %.3f s  %.1fx real time  (CPU %.3f s)\n", r + 1, times[r], audio_s / times[r], cpus[r]);
    }
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    qsort(cpus, (size_t)reps, sizeof(double), cmp_double);
    double med = reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
    double cpu_med = reps % 2 ? cpus[reps / 2] : 0.5 * (cpus[reps / 2 - 1] + cpus[reps / 2]);

    /* Check the timed outputs against the other path. */
    double maxdiff = 0.0;
    float *ref = NULL;
    size_t ref_cap = 0;
    tandem_stream *check = NULL;
    if (b.path == PATH_HOST) {
        if (tandem_device_open(TANDEM_BACKEND_HOST, 0, &b.dev) != TANDEM_OK) die("host device");
        if (tandem_stream_create(b.dev, &check) != TANDEM_OK) die("stream");
    }
    for (int i = 0; i < b.n_items; i++) {
        item *it = &b.items[i];
        size_t nout = (size_t)it->frames * TANDEM_MEL_N_MELS;
        if (nout > ref_cap) {
            free(ref);
            ref = (float *)malloc(sizeof(float) * nout);
            if (!ref) return 1;
            ref_cap = nout;
        }
        if (b.path == PATH_DEVICE) {
            int frames = 0;
            if (tandem_mel_host_compute(b.host, it->audio, it->n, ref, it->frames, &frames) != TANDEM_OK)
                die("host check");
        } else {
            float *timed = it->out;
            it->out = ref; /* run_device writes into it->out */
            if (tandem_pool_create(b.dev, "check", 0, &it->pool) != TANDEM_OK ||
                tandem_mel_plan_declare(it->pool, b.dev, "mel", 1, it->frames, it->n, 0, &it->plan) != TANDEM_OK ||
                tandem_pool_commit(it->pool) != TANDEM_OK || tandem_mel_upload_constants(&it->plan, check) != TANDEM_OK ||
                run_device(it, check) != TANDEM_OK)
                die("device check");
            it->out = timed;
        }
        for (size_t k = 0; k < nout; k++) {
            double d = fabs((double)ref[k] - (double)it->out[k]);
            if (!(d <= maxdiff)) maxdiff = d; /* NaN propagates */
        }
    }
    printf("  check    max |device - host recipe| over all files = %.3g (limit 1e-3)\n", maxdiff);
    printf("RESULT features path=%s threads=%d files=%d audio_s=%.3f reps=%d median_s=%.4f min_s=%.4f max_s=%.4f "
           "xrt=%.2f xrt_min=%.2f xrt_max=%.2f cpu_median_s=%.4f xrt_per_cpu=%.2f\n",
           path_name, nthreads, b.n_items, audio_s, reps, med, times[0], times[reps - 1], audio_s / med,
           audio_s / times[reps - 1], audio_s / times[0], cpu_med, audio_s / cpu_med);

    if (check) tandem_stream_destroy(check);
    for (int t = 0; t < nthreads; t++)
        if (workers[t].stream) tandem_stream_destroy(workers[t].stream);
    for (int i = 0; i < b.n_items; i++) {
        tandem_mel_plan_release(&b.items[i].plan);
        if (b.items[i].pool) tandem_pool_destroy(b.items[i].pool);
        free(b.items[i].audio);
        free(b.items[i].out);
    }
    tandem_mel_host_free(b.host);
    if (b.dev) tandem_device_close(b.dev);
    free(ref);
    free(times);
    free(cpus);
    free(b.items);
    return maxdiff <= 1e-3 ? 0 : 1;
}
