/* test_dp_rdzv.c — data-parallel CUDA ranks launched torchrun style, WITHOUT MPI: each rank a
 * process that takes WORLD_SIZE / RANK / LOCAL_RANK / LOCAL_WORLD_SIZE / MASTER_ADDR /
 * MASTER_PORT from its environment through tools/launch_env.c (as `tandem train` does), and
 * rank 0's NCCL id reaches the others through the rendezvous (platform/os/rendezvous.h). Run by
 * test/mpi/run_dp_rdzv.sh (make test: check_dp_rdzv) on the stand-in driver and stand-in NCCL:
 *   test_dp_rdzv corpus ROOT           the tiny corpus in ROOT/data (seed: TANDEM_TEST_SEED)
 *   test_dp_rdzv ref ROOT              one process, one data and one model device, batch 2 x
 *                                      grad_accum 4: the losses of 10 steps to ROOT/ref.txt
 *   test_dp_rdzv rank ROOT TIMEOUT_MS [OUT]  one rank of the job (run directory ROOT/OUT,
 *                                      default dp), batch 2 x grad_accum 2 (the same
 *                                      global batch): its losses to ROOT/rank<r>.txt, the
 *                                      devices it got to ROOT/devices<r>.txt; on failure the
 *                                      error on stderr and status 1
 * The script compares the files (within 1e-5 of ref, the ranks bit-identical). No MPI here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tandem.h"
#include "test/fixtures.h"
#include "test/tiny_corpus.h"
#include "tools/launch_env.h"

#define STEPS 10

typedef struct step_log {
    int n;
    double loss[STEPS];
} step_log;

static void on_step(void *ctx, const tandem_step_metrics *m) {
    step_log *l = ctx;
    if (l->n < STEPS) l->loss[l->n] = m->loss;
    l->n++;
}

static void config(tandem_config *cfg, const char *root, const char *out, int grad_accum, uint64_t seed) {
    char data[600], dir[600], v[32];
    snprintf(data, sizeof data, "%s/data", root);
    snprintf(dir, sizeof dir, "%s/%s", root, out);
    tiny_corpus_train_config(cfg, data, dir, STEPS);
    CHECK(tandem_config_set(cfg, "shuffle", "true"));
    snprintf(v, sizeof v, "%d", grad_accum);
    CHECK(tandem_config_set(cfg, "grad_accum", v));
    snprintf(v, sizeof v, "%llu", (unsigned long long)(seed % 1000000));
    CHECK(tandem_config_set(cfg, "seed", v));
}

static int write_losses(const char *path, const step_log *l) {
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    for (int i = 0; i < l->n && i < STEPS; i++) fprintf(f, "%.17g\n", l->loss[i]);
    return fclose(f) != 0;
}

/* One rank of the job, its ranks from the environment as the CLI reads them. */
static int run_rank(const char *root, int timeout_ms, const char *out, uint64_t seed) {
    cli_launch launch;
    char err[256], path[700];
    if (cli_launch_read(&launch, err, sizeof err) != 0) {
        fprintf(stderr, "test_dp_rdzv: %s\n", err);
        return 2;
    }
    tandem_config cfg;
    config(&cfg, root, out, 2, seed);
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = TANDEM_BACKEND_CUDA;
    o.world_size = launch.world, o.rank = launch.rank;
    o.local_rank = launch.local_rank, o.local_world_size = launch.local_world;
    o.rendezvous = launch.rendezvous[0] ? launch.rendezvous : NULL;
    o.rendezvous_timeout_ms = timeout_ms;
    step_log l = {0};
    o.on_step = on_step, o.on_step_user = &l;
    tandem_trainer *t = NULL;
    tandem_status st = tandem_trainer_create(&cfg, &o, &t);
    if (st == TANDEM_OK) {
        tandem_trainer_startup r;
        if (tandem_trainer_startup_report(t, &r) == TANDEM_OK) {
            snprintf(path, sizeof path, "%s/devices%d.txt", root, launch.rank);
            FILE *f = fopen(path, "w");
            if (f) fprintf(f, "%s\n", r.devices), fclose(f);
        }
        tandem_trainer_summary sum;
        st = tandem_trainer_run(t, &sum);
    }
    if (st != TANDEM_OK) fprintf(stderr, "test_dp_rdzv: rank %d: %s\n", launch.rank, tandem_last_error());
    tandem_trainer_destroy(t);
    if (st != TANDEM_OK) return 1;
    snprintf(path, sizeof path, "%s/rank%d.txt", root, launch.rank);
    printf("test_dp_rdzv: rank %d of %d (%s): %d steps\n", launch.rank, launch.world, launch.launcher, l.n);
    return write_losses(path, &l);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_dp_rdzv corpus|ref|rank ROOT [TIMEOUT_MS [OUT]]\n");
        return 2;
    }
    const char *root = argv[2];
    const uint64_t seed = tandem_test_seed("test_dp_rdzv");
    char p[700];
    snprintf(p, sizeof p, "%s/cache", root);
    setenv("XDG_CACHE_HOME", p, 1);
    if (!strcmp(argv[1], "corpus")) {
        tandem_rng r = {seed};
        snprintf(p, sizeof p, "%s/data", root);
        tiny_corpus_write(p, 9, 32, &r);
        return 0;
    }
    if (!strcmp(argv[1], "rank")) return run_rank(root, argc > 3 ? atoi(argv[3]) : 60000, argc > 4 ? argv[4] : "dp", seed);
    if (strcmp(argv[1], "ref") != 0) return 2;
    tandem_config cfg;
    config(&cfg, root, "single", 4, seed);
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = TANDEM_BACKEND_CUDA;
    step_log l = {0};
    o.on_step = on_step, o.on_step_user = &l;
    tandem_trainer_summary sum;
    if (tandem_test_train_run(&cfg, &o, &sum) != TANDEM_OK) {
        fprintf(stderr, "test_dp_rdzv: one device: %s\n", tandem_last_error());
        return 1;
    }
    snprintf(p, sizeof p, "%s/ref.txt", root);
    return write_losses(p, &l);
}
