/* cmd_pipeline.c — `tandem pipeline`: the data side alone (index → loader threads → features
 * on the data device → ring on the model device) with a consumer that checks every batch and
 * releases it; prints throughput, data-device busy %, ring occupancy and the per-stage table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "runtime/core/config.h"
#include "platform/os/os.h"
#include "runtime/data/pipeline.h"
#include "tandem.h"
#include "runtime/data/text_index.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem pipeline --data DIR --steps N [--config FILE] [--batch-size B]\n"
            "                       [--num-workers W] [--prefetch-buffer-size N] [--backend auto|host|cuda]\n"
            "                       [--poison]\n\n"
            "Runs the data side of training alone: indexes DIR (text cache included), opens the data\n"
            "and model devices (roles: two CUDA devices -> 0 and 1, one -> both roles, none -> two\n"
            "host devices), plans and commits both arenas, then loads, featurises and hands N batches\n"
            "through the ring to a consumer that checks each one (finite values, mask consistent\n"
            "with the lengths, padding) and releases it. Prints batches/s, audio seconds/s (x real\n"
            "time), data-device busy %%, ring occupancy and the time of every stage.\n\n"
            "  --config FILE              run config (default: built-in defaults = the tiny preset)\n"
            "  --batch-size B, --num-workers W, --prefetch-buffer-size N   override the config\n"
            "  --backend B                auto (default), host or cuda\n"
            "  --poison                   fill released slots with NaN (catches use after release)\n");
}

typedef struct host_batch {
    float *mels, *mask, *stop;   /* [B, F, 80], [B, F], [B, F] */
    int32_t *frames, *tokens, *text_len; /* [B], [B, T], [B] */
} host_batch;

/* Download the slot on the consumer stream and check it; 0 = ok, else prints why. */
static int check_batch(tandem_stream *s, const tandem_batch_view *v, const tandem_config *c, host_batch *h) {
    const int B = c->batch_size, F = c->max_frames, T = c->max_text, M = c->n_mels;
    const tandem_ring_slot *t = v->t;
    tandem_status st = tandem_tensor_download(s, h->mels, t->mels, tandem_tensor_bytes(t->mels));
    if (st == TANDEM_OK) st = tandem_tensor_download(s, h->mask, t->frame_mask, tandem_tensor_bytes(t->frame_mask));
    if (st == TANDEM_OK) st = tandem_tensor_download(s, h->stop, t->stop_targets, tandem_tensor_bytes(t->stop_targets));
    if (st == TANDEM_OK) st = tandem_tensor_download(s, h->frames, t->frame_lengths, tandem_tensor_bytes(t->frame_lengths));
    if (st == TANDEM_OK) st = tandem_tensor_download(s, h->tokens, t->tokens, tandem_tensor_bytes(t->tokens));
    if (st == TANDEM_OK) st = tandem_tensor_download(s, h->text_len, t->text_lengths, tandem_tensor_bytes(t->text_lengths));
    if (st == TANDEM_OK) st = tandem_stream_sync(s);
    if (st != TANDEM_OK) {
        fprintf(stderr, "tandem pipeline: batch %lld: download: %s\n", (long long)v->seq, tandem_last_error());
        return 1;
    }
    for (int b = 0; b < B; b++) {
        const int n = h->frames[b];
        if (n < 1 || n > F) {
            fprintf(stderr, "tandem pipeline: batch %lld row %d: frame length %d outside [1, %d]\n",
                    (long long)v->seq, b, n, F);
            return 1;
        }
        for (int f = 0; f < F; f++) {
            const float want_mask = f < n ? 1.0f : 0.0f, want_stop = f >= n - 1 ? 1.0f : 0.0f;
            if (h->mask[(size_t)b * F + f] != want_mask || h->stop[(size_t)b * F + f] != want_stop) {
                fprintf(stderr, "tandem pipeline: batch %lld row %d frame %d: mask %g stop %g, expected %g %g "
                        "for %d frames\n", (long long)v->seq, b, f, h->mask[(size_t)b * F + f],
                        h->stop[(size_t)b * F + f], want_mask, want_stop, n);
                return 1;
            }
            for (int m = 0; m < M; m++) {
                float x = h->mels[((size_t)b * F + f) * M + m];
                if (!isfinite(x) || (f >= n && x != 0.0f)) {
                    fprintf(stderr, "tandem pipeline: batch %lld row %d frame %d band %d: %g (%s)\n",
                            (long long)v->seq, b, f, m, x, isfinite(x) ? "padding must be 0" : "not finite");
                    return 1;
                }
            }
        }
        const int tl = h->text_len[b];
        if (tl < 4 || tl > T) {
            fprintf(stderr, "tandem pipeline: batch %lld row %d: text length %d outside [4, %d]\n",
                    (long long)v->seq, b, tl, T);
            return 1;
        }
        for (int i = tl; i < T; i++)
            if (h->tokens[(size_t)b * T + i] != 0) {
                fprintf(stderr, "tandem pipeline: batch %lld row %d: token %d past the text is %d, expected PAD\n",
                        (long long)v->seq, b, i, h->tokens[(size_t)b * T + i]);
                return 1;
            }
    }
    return 0;
}

static int parse_int(const char *opt, const char *v, long lo, long hi, long *out) {
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < lo || x > hi) {
        fprintf(stderr, "tandem pipeline: %s '%s': expected an integer in [%ld, %ld]\n", opt, v, lo, hi);
        return 0;
    }
    *out = x;
    return 1;
}

int cli_pipeline(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *data_dir = NULL, *config_path = NULL;
    long steps = -1;
    int poison = 0;
    tandem_backend backend = TANDEM_BACKEND_AUTO;
    static const struct { const char *flag, *key; } flags[] = {
        {"--batch-size", "batch_size"},
        {"--num-workers", "num_workers"},
        {"--prefetch-buffer-size", "prefetch_buffer_size"},
    };
    const char *over_flag[8], *over_key[8], *over_val[8];
    int n_over = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--poison")) {
            poison = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "tandem pipeline: option '%s' needs a value (see --help)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--data")) data_dir = v;
        else if (!strcmp(a, "--config")) config_path = v;
        else if (!strcmp(a, "--steps")) {
            if (!parse_int(a, v, 1, 100000000L, &steps)) return 2;
        } else if (!strcmp(a, "--backend")) {
            if (!cli_parse_backend("pipeline", v, &backend)) return 2;
        } else {
            int k = 0;
            while (k < 3 && strcmp(a, flags[k].flag)) k++;
            if (k == 3 || n_over == 8) {
                fprintf(stderr, "tandem pipeline: unknown option '%s' (see --help)\n", a);
                return 2;
            }
            over_flag[n_over] = flags[k].flag;
            over_key[n_over] = flags[k].key;
            over_val[n_over++] = v;
        }
    }
    if (!data_dir || steps < 0) {
        fprintf(stderr, "tandem pipeline: --data DIR and --steps N are required\n\n");
        usage(stderr);
        return 2;
    }

    tandem_config cfg;
    tandem_status st = cli_load_config(&cfg, config_path, n_over, over_flag, over_key, over_val);
    if (st != TANDEM_OK) {
        fprintf(stderr, "tandem pipeline: %s\n", tandem_last_error());
        return 2;
    }

    /* index (text cache included) with the duration filter of this config */
    uint64_t t0 = tandem_now_ns();
    tandem_text_index_config icfg;
    tandem_text_index_config_default(&icfg);
    icfg.data_dir = data_dir;
    icfg.max_text = cfg.max_text;
    icfg.max_samples = (int64_t)cfg.max_frames * TANDEM_FEATURE_HOP;
    icfg.seed = (uint64_t)cfg.seed;
    tandem_text_index ix;
    if ((st = tandem_text_index_open(&icfg, &ix)) != TANDEM_OK) {
        fprintf(stderr, "tandem pipeline: %s\n", tandem_last_error());
        return st == TANDEM_E_INVALID || st == TANDEM_E_FORMAT ? 2 : 1;
    }
    printf("index: %u utterances, %u for training (cache %s, %.1f ms); left out: %u too long for %d frames, "
           "%u shorter than one hop, %u unreadable\n",
           ix.count, ix.n_train, ix.cache_hit ? "hit" : "miss", (double)(tandem_now_ns() - t0) * 1e-6,
           ix.audio_too_long, cfg.max_frames, ix.audio_too_short, ix.audio_unreadable);

    int rc = 1;
    tandem_device *data_dev = NULL, *model_dev = NULL;
    tandem_pool *data_pool = NULL, *model_pool = NULL;
    tandem_pipeline *pipe = NULL;
    host_batch h = {0};
    char desc[512];
    if ((st = tandem_pipeline_open_devices(backend, &data_dev, &model_dev, desc, sizeof desc)) != TANDEM_OK) goto fail;
    printf("devices: %s\n", desc);
    if ((st = tandem_pool_create(data_dev, "data", (size_t)cfg.data_gpu_memory << 20, &data_pool)) != TANDEM_OK ||
        (st = tandem_pool_create(model_dev, "model", (size_t)cfg.model_gpu_memory << 20, &model_pool)) != TANDEM_OK)
        goto fail;
    tandem_pipeline_options po;
    tandem_pipeline_options_init(&po);
    po.cfg = &cfg;
    po.ix = &ix;
    po.data_dir = data_dir;
    po.data_dev = data_dev;
    po.model_dev = model_dev;
    po.data_pool = data_pool;
    po.model_pool = model_pool;
    po.poison_on_release = poison;
    if ((st = tandem_pipeline_create(&po, &pipe)) != TANDEM_OK) goto fail;
    if ((st = tandem_pool_commit(data_pool)) != TANDEM_OK || (st = tandem_pool_commit(model_pool)) != TANDEM_OK)
        goto fail;
    tandem_pool_stats ds, ms;
    tandem_pool_get_stats(data_pool, &ds);
    tandem_pool_get_stats(model_pool, &ms);
    const int B = cfg.batch_size, F = cfg.max_frames, T = cfg.max_text, M = cfg.n_mels;
    printf("plan: batch %d x %d frames (%.2f s) x %d mels, %d tokens; data arena %.1f MiB, model arena %.1f MiB "
           "(ring of %d slots); ring copies %s; %d loader threads\n",
           B, F, F * TANDEM_FEATURE_HOP / (double)TANDEM_FEATURE_SAMPLE_RATE, M, T, ds.arena_bytes / 1048576.0, ms.arena_bytes / 1048576.0,
           cfg.prefetch_buffer_size, tandem_pipeline_peer(pipe) ? "device to device" : "staged through pinned memory",
           cfg.num_workers > 0 ? cfg.num_workers : tandem_cpu_count());

    h.mels = malloc(sizeof(float) * (size_t)B * F * M);
    h.mask = malloc(sizeof(float) * (size_t)B * F);
    h.stop = malloc(sizeof(float) * (size_t)B * F);
    h.frames = malloc(sizeof(int32_t) * (size_t)B);
    h.tokens = malloc(sizeof(int32_t) * (size_t)B * T);
    h.text_len = malloc(sizeof(int32_t) * (size_t)B);
    if (!h.mels || !h.mask || !h.stop || !h.frames || !h.tokens || !h.text_len) {
        fprintf(stderr, "tandem pipeline: out of memory\n");
        goto out;
    }

    if ((st = tandem_pipeline_start(pipe)) != TANDEM_OK) goto fail;
    tandem_stream *cs = tandem_pipeline_consumer_stream(pipe);
    int bad = 0;
    for (long i = 0; i < steps; i++) {
        tandem_batch_view v;
        if ((st = tandem_pipeline_acquire(pipe, &v, 120000)) != TANDEM_OK) goto fail;
        bad = check_batch(cs, &v, &cfg, &h);
        if ((st = tandem_pipeline_release(pipe, v.slot)) != TANDEM_OK) goto fail;
        if (bad) break;
    }
    if (bad) tandem_pipeline_abort(pipe, TANDEM_E_INTERNAL, "a batch failed its check");
    st = tandem_pipeline_stop(pipe);
    if (bad) goto out;
    if (st != TANDEM_OK) goto fail;

    tandem_pipeline_stats s;
    tandem_pipeline_get_stats(pipe, &s);
    const double wall_s = s.wall_ms / 1000.0;
    printf("\n%lld batches checked and released (%lld produced) in %.2f s\n", (long long)s.consumed,
           (long long)s.batches, wall_s);
    printf("throughput: %.2f batches/s, %.1f utterances/s, %.1f audio-seconds/s (%.1f x real time)\n",
           s.batches / wall_s, s.batches * (double)B / wall_s, s.audio_seconds / wall_s, s.audio_seconds / wall_s);
    printf("data device busy: %.1f %% (%.1f ms of device work); ring occupancy: %.2f of %d slots ready on average; "
           "consumer data wait: %.1f ms total\n",
           s.data_busy_pct, s.data_busy_ms, s.mean_ready_slots, cfg.prefetch_buffer_size, s.data_wait_ms);
    printf("files: %llu decoded (%llu resampled), %llu failed to decode, %llu too long (skipped and replaced)\n",
           (unsigned long long)s.files_ok, (unsigned long long)s.resampled, (unsigned long long)s.decode_failures,
           (unsigned long long)s.too_long);
    printf("sampler: next position epoch %lld, index %lld\n", (long long)s.next_pos.epoch, (long long)s.next_pos.index);
    char table[2048];
    tandem_stage_times_format(s.stages, s.wall_ms, table, sizeof table);
    printf("stages (per file: read, decode, resample; per batch: H2D, features, ring copy):\n%s", table);
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "tandem pipeline: %s\n", tandem_last_error());
    rc = st == TANDEM_E_INVALID || st == TANDEM_E_BUDGET ? 2 : 1;
out:
    tandem_pipeline_destroy(pipe);
    tandem_pool_destroy(data_pool);
    tandem_pool_destroy(model_pool);
    tandem_pipeline_close_devices(data_dev, model_dev);
    tandem_text_index_free(&ix);
    free(h.mels);
    free(h.mask);
    free(h.stop);
    free(h.frames);
    free(h.tokens);
    free(h.text_len);
    return rc;
}
