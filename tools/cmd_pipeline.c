/* cmd_pipeline.c — `tandem pipeline`: the data side alone (tandem_data_run, tandem_data.h: index →
 * loader threads → features on the data device → ring on the model device) with a consumer that
 * checks every batch and releases it; prints throughput, data-device busy %, ring occupancy and
 * the per-stage table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tandem.h"
#include "tools/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tandem pipeline --data DIR --steps N [--config FILE] [--backend auto|host|cuda]\n"
            "                       [--poison] [--KEY VALUE ...]\n\n"
            "Runs the data side of training alone: indexes DIR (text cache included), opens the data\n"
            "and model devices (roles: two CUDA devices -> 0 and 1, one -> both roles, none -> two\n"
            "host devices), plans and commits both arenas, then loads, featurises and hands N batches\n"
            "through the ring to a consumer that checks each one (finite values, mask consistent\n"
            "with the lengths, padding) and releases it. Prints batches/s, audio seconds/s (x real\n"
            "time), data-device busy %%, ring occupancy and the time of every stage.\n\n"
            "  --config FILE              run config (default: built-in defaults = the tiny preset)\n"
            "  --backend B                auto (default), host or cuda\n"
            "  --poison                   fill released slots with NaN (catches use after release)\n"
            "  --data-gpu N, --model-gpu N   CUDA ordinals of the roles (config keys, as every key below)\n");
    cli_print_config_flags(f);
}

/* Each stage's line as soon as it is reached (the run itself may take a while). */
static void on_stage(void *user, const tandem_data_run_report *r) {
    (void)user;
    switch (r->stage) {
    case TANDEM_DATA_STAGE_INDEXED:
        printf("index: %u utterances, %u for training (cache %s, %.1f ms); left out: %u too long for %d frames, "
               "%u shorter than one hop, %u unreadable\n",
               r->utterances, r->n_train, r->cache_hit ? "hit" : "miss", r->index_ms, r->too_long, r->max_frames,
               r->too_short, r->unreadable);
        break;
    case TANDEM_DATA_STAGE_DEVICES: printf("devices: %s\n", r->devices); break;
    case TANDEM_DATA_STAGE_PLANNED:
        printf("plan: batch %d x %d frames (%.2f s) x %d mels, %d tokens; data arena %.1f MiB, model arena %.1f MiB "
               "(ring of %d slots); ring copies %s; %d loader threads\n",
               r->batch_size, r->max_frames, r->batch_seconds, r->n_mels, r->max_text, r->data_arena_mib,
               r->model_arena_mib, r->ring_slots, r->peer ? "device to device" : "staged through pinned memory",
               r->loader_threads);
        break;
    default: break;
    }
    fflush(stdout);
}

static void print_run(const tandem_data_run_report *r) {
    const double wall_s = r->wall_s;
    printf("\n%lld batches checked and released (%lld produced) in %.2f s\n", (long long)r->consumed,
           (long long)r->produced, wall_s);
    printf("throughput: %.2f batches/s, %.1f utterances/s, %.1f audio-seconds/s (%.1f x real time)\n",
           r->produced / wall_s, r->produced * (double)r->batch_size / wall_s, r->audio_seconds / wall_s,
           r->audio_seconds / wall_s);
    printf("data device busy: %.1f %% (%.1f ms of device work); ring occupancy: %.2f of %d slots ready on average; "
           "consumer data wait: %.1f ms total\n",
           r->data_busy_pct, r->data_busy_ms, r->mean_ready_slots, r->ring_slots, r->data_wait_ms);
    printf("files: %llu decoded (%llu resampled), %llu failed to decode, %llu too long (skipped and replaced)\n",
           (unsigned long long)r->files_ok, (unsigned long long)r->resampled, (unsigned long long)r->decode_failures,
           (unsigned long long)r->files_too_long);
    printf("sampler: next position epoch %lld, index %lld\n", (long long)r->next_epoch, (long long)r->next_index);
    printf("stages (per file: read, decode, resample; per batch: H2D, features, ring copy):\n%s", r->stages);
    printf("capacity (data side against the model):\n%s", r->capacity);
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
    static cli_overrides ov;
    ov.n = 0;
    for (int i = 1; i < argc; i++) {
        const char *iv = cli_opt_split(argv[i]), *a = argv[i], *v;
        if (!strcmp(a, "--poison")) {
            poison = 1;
        } else if (!strcmp(a, "--data") || !strcmp(a, "--config") || !strcmp(a, "--steps") ||
                   !strcmp(a, "--backend")) {
            if (!(v = cli_opt_value("pipeline", argc, argv, &i, iv))) return 2;
            if (a[2] == 'd') data_dir = v;
            else if (a[2] == 'c') config_path = v;
            else if (a[2] == 's') {
                if (!parse_int(a, v, 1, 100000000L, &steps)) return 2;
            } else if (!cli_parse_backend("pipeline", v, &backend)) return 2;
        } else {
            const int r = cli_config_option("pipeline", argc, argv, &i, iv, &ov);
            if (r < 0) return 2;
            if (r == 0) return cli_unknown_option("pipeline", a);
        }
    }
    if (!data_dir || steps < 0) {
        fprintf(stderr, "tandem pipeline: --data DIR and --steps N are required\n\n");
        usage(stderr);
        return 2;
    }

    tandem_config *cfg = NULL;
    tandem_status st = cli_load_config(&cfg, config_path, ov.n, ov.flag, ov.key, ov.val);
    if (st != TANDEM_OK) return cli_fail("pipeline", st);
    tandem_data_run_options o;
    tandem_data_run_options_init(&o);
    o.data_dir = data_dir;
    o.steps = steps;
    o.backend = backend;
    o.poison_on_release = poison;
    o.on_stage = on_stage;
    tandem_data_run_report r;
    st = tandem_data_run(cfg, &o, &r);
    tandem_config_destroy(cfg);
    if (st != TANDEM_OK) return cli_fail("pipeline", st);
    print_run(&r);
    return 0;
}
