/* test_dp.c — data-parallel training on the host over MPI (runtime/run/dp.h, issue 15), run
 * under `mpirun -np 2` by test/mpi/run_dp.sh (make test: check_dp_2_ranks):
 *   match   2 ranks, batch 2, grad_accum 2 each (global batch 8) against one device with batch
 *           2, grad_accum 4 (the same 8 utterances per step, the same micro-batch order): the
 *           losses of 10 steps within 1e-5 relative, and bit-identical on both ranks; again with
 *           4 KiB gradient buckets (several, all-reduced while the backward runs: step 1's launch
 *           list shows it) and with bf16 on the wire (within BF16_TOL)
 *   resume  5 steps, then a resume on the same world size to 10: the last 5 losses equal those
 *           of the uninterrupted 2-rank run exactly; a resume on 1 rank is refused naming both
 *           world sizes; rank 0 alone wrote the run directory
 *   stop    a stop request on rank 1 alone stops every rank at the same step
 *   nonfinite  NaN gradients on rank 1 alone: every rank skips the same steps and stops with
 *           the same error (the skip is decided on the all-reduced gradient)
 * `test_dp kill`: both ranks train; rank 1 kills itself (SIGKILL, as an OOM killer would) at
 * step 3; run_dp.sh checks that mpirun ends the job with an error naming it, in bounded time.
 * Rank 0 writes the corpus and tells rank 1 where (MPI_Bcast): MPI is this test's own too. */
#include <math.h>
#include <mpi.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "tandem.h"
#include "runtime/core/config.h"
#include "runtime/core/dev.h"
#include "test/fixtures.h"
#include "test/tiny_corpus.h"
#include "tools/env_options.h"

#define STEPS 10
#define TOL 1e-5
#define BF16_TOL 1e-3

static int rank, world;
static tandem_backend backend = TANDEM_BACKEND_HOST; /* `test_dp cuda`: the stand-in driver and NCCL */
static char root[256];
static uint64_t seed;

static void config(tandem_config *cfg, const char *out, int grad_accum) {
    char data[512], dir[512];
    snprintf(data, sizeof data, "%s/data", root);
    snprintf(dir, sizeof dir, "%s/%s", root, out);
    tiny_corpus_train_config(cfg, data, dir, 10); /* test/tiny_corpus.h; what differs below */
    static const char *const kv[][2] = {{"checkpoint_every", "5"}, {"keep", "4"}, {"shuffle", "true"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) CHECK(tandem_config_set(cfg, kv[i][0], kv[i][1]));
    char v[32];
    snprintf(v, sizeof v, "%d", grad_accum);
    CHECK(tandem_config_set(cfg, "grad_accum", v));
    snprintf(v, sizeof v, "%llu", (unsigned long long)(seed % 1000000));
    CHECK(tandem_config_set(cfg, "seed", v));
}

typedef struct step_log {
    int n, kill_at, stop_at;
    tandem_trainer *t; /* for stop_at */
    double loss[64];
} step_log;

static void on_step(void *ctx, const tandem_step_metrics *m) {
    step_log *l = ctx;
    if (l->n < 64) l->loss[l->n] = m->loss;
    l->n++;
    if (l->kill_at > 0 && m->step == l->kill_at) raise(SIGKILL);
    if (l->stop_at > 0 && m->step == l->stop_at) tandem_trainer_request_stop(l->t);
}

static void on_step_rec(void *ctx, const tandem_step_metrics *m);
static int64_t nan_from = -1, nan_count; /* the trainer's non-finite test hook, this rank only */

static tandem_status train(const tandem_config *cfg, int ranks, const char *resume, int64_t run_steps, step_log *log) {
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = backend;
    o.world_size = ranks;
    o.rank = ranks > 1 ? rank : 0;
    o.local_rank = o.rank, o.local_world_size = ranks; /* one machine: cuda ranks take GPUs 2k, 2k+1 */
    o.resume_dir = resume;
    o.run_steps = run_steps;
    o.on_step = on_step_rec;
    o.on_step_user = log;
    o.nonfinite_from = nan_from, o.nonfinite_count = nan_count;
    tandem_trainer_summary sum;
    return tandem_test_train_run(cfg, &o, &sum);
}

/* Both ranks' losses, the same bits (what rank 1 saw is sent to rank 0). */
static void check_ranks_agree(const step_log *l) {
    double other[64];
    if (rank == 1) MPI_Send(l->loss, 64, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
    if (rank != 0) return;
    MPI_Recv(other, 64, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < l->n; i++)
        if (memcmp(&other[i], &l->loss[i], sizeof(double)) != 0)
            fail_msg("step %d: rank 1 loss %.9g, rank 0 %.9g; expected the same bits", i + 1, other[i], l->loss[i]);
}

/* The run's "data-parallel: N buckets of ..." info lines (tandem_dp_plan), counted. */
static struct {
    int lines, buckets;
    long long grads;
    char dtype[8];
} plan_log;

static void log_hook(void *user, tandem_log_level level, const char *msg) {
    (void)user;
    fprintf(stderr, "tandem: %s\n", msg);
    const char *p = strstr(msg, "data-parallel: ");
    if (!p || !strstr(msg, " buckets of ")) return;
    plan_log.lines++;
    const char *g = strstr(p, "largest ");
    if (sscanf(p, "data-parallel: %d buckets of", &plan_log.buckets) != 1 || !g ||
        sscanf(strchr(g, ';') ? strchr(g, ';') + 1 : "", " %lld gradients", &plan_log.grads) != 1 ||
        sscanf(strstr(p, " MB, ") + 5, "%7[a-z0-9]", plan_log.dtype) != 1)
        fail_msg("unreadable plan line: \"%s\"", msg);
}

/* The launch list of the first step (dev.h's recorder, rank 0): the gradient buckets are the
 * all-reduces on a stream other than the model stream's (whose first all-reduce is the stop
 * vote, 4 bytes); the step ends with the losses' all-reduce on the model stream. Overlap, as
 * the launch order shows it: the model stream queues GEMMs (the backward) after the first
 * bucket's all-reduce was queued. */
static tandem_rec_entry rec_entries[1 << 16];
static tandem_dev_recorder rec = {rec_entries, 1 << 16, 0};

static void on_step_rec(void *ctx, const tandem_step_metrics *m) {
    if (m->step == 1) tandem_dev_record(NULL); /* the first step is enough */
    on_step(ctx, m);
}

static void check_overlap(int expect_buckets, long long grads, int esize) {
    const int64_t n = rec.n < rec.cap ? rec.n : rec.cap;
    const tandem_stream *ms = NULL;
    int64_t first = -1, losses = -1, gemms_after = 0, buckets = 0;
    double bytes = 0;
    for (int64_t i = 0; i < n && losses < 0; i++) {
        const tandem_rec_entry *e = &rec_entries[i];
        if (e->kind == TANDEM_REC_ALL_REDUCE && !ms) { /* the stop vote */
            ms = e->stream;
            continue;
        }
        if (!ms) continue;
        if (e->kind == TANDEM_REC_ALL_REDUCE && e->stream != ms) {
            if (first < 0) first = i;
            buckets++;
            bytes += e->cost.bytes_read;
        } else if (e->kind == TANDEM_REC_ALL_REDUCE) {
            losses = i;
        } else if (e->kind == TANDEM_REC_GEMM && e->stream == ms && first >= 0) {
            gemms_after++;
        }
    }
    if (first < 0 || losses < 0) fail_msg("no gradient bucket or no losses all-reduce recorded (%lld entries)", (long long)n);
    printf("[ dp%s ] step 1: %lld bucket all-reduce(s) on the communication stream, %.0f bytes (%lld gradients x %d); "
           "%lld backward GEMMs queued on the model stream after the first bucket\n",
           backend == TANDEM_BACKEND_CUDA ? " cuda" : "", (long long)buckets, bytes, grads, esize,
           (long long)gemms_after);
    if (expect_buckets > 1 && gemms_after == 0)
        fail_msg("every bucket was queued after the backward's last GEMM: no overlap");
    if (esize == 2) assert_int_equal(buckets, expect_buckets); /* bf16: one all-reduce per bucket */
    else assert_true(buckets >= expect_buckets);              /* f32: one per contiguous range */
    if (bytes != (double)grads * esize) fail_msg("buckets sum to %.0f bytes; expected %lld", bytes, grads * esize);
}

/* 2 ranks against one device with the same global batch: losses within tol relative, both ranks
 * the same bits. bucket_mb / dtype: the dp_bucket_mb and dp_grad_dtype of the 2-rank run (NULL:
 * the defaults); with a bucket size, rank 0 also records step 1 and checks the buckets. */
static int eager; /* the 2-rank run with cuda_graphs false */

static void match(const char *bucket_mb, const char *dtype, double tol) {
    step_log ref = {0}, dp = {0};
    tandem_config cfg;
    if (rank == 0) { /* one device, the same global batch: batch 2 x grad_accum 4 */
        config(&cfg, "single", 2 * world);
        CHECK(train(&cfg, 1, NULL, 0, &ref));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    config(&cfg, "dp", 2);
    if (bucket_mb) CHECK(tandem_config_set(&cfg, "dp_bucket_mb", bucket_mb));
    if (dtype) CHECK(tandem_config_set(&cfg, "dp_grad_dtype", dtype));
    if (eager) CHECK(tandem_config_set(&cfg, "cuda_graphs", "false"));
    memset(&plan_log, 0, sizeof plan_log);
    tandem_log_set_hook(log_hook, NULL);
    if (bucket_mb && rank == 0) tandem_dev_record(&rec);
    CHECK(train(&cfg, world, NULL, 0, &dp));
    tandem_dev_record(NULL);
    tandem_log_set_hook(NULL, NULL);
    assert_int_equal(plan_log.lines, 1); /* said once */
    assert_string_equal(plan_log.dtype, dtype ? dtype : "f32");
    assert_int_equal(dp.n, STEPS);
    check_ranks_agree(&dp);
    if (rank == 0) {
        assert_int_equal(ref.n, STEPS);
        double worst = 0;
        for (int i = 0; i < STEPS; i++) {
            const double rel = fabs(dp.loss[i] - ref.loss[i]) / fabs(ref.loss[i]);
            if (rel > worst) worst = rel;
            if (!(rel <= tol))
                fail_msg("step %d: %d ranks loss %.9g, one device %.9g (rel %.3g); expected within %g", i + 1,
                         world, dp.loss[i], ref.loss[i], rel, tol);
        }
        printf("[ dp%s ] %d ranks vs one device with the same global batch (%d bucket(s), %s%s): %d steps, worst "
               "relative loss difference %.3g (limit %g); loss %.6g -> %.6g\n",
               backend == TANDEM_BACKEND_CUDA ? " cuda" : "", world, plan_log.buckets, plan_log.dtype,
               eager ? ", eager" : "", STEPS, worst,
               tol, dp.loss[0], dp.loss[STEPS - 1]);
        if (bucket_mb) check_overlap(plan_log.buckets, plan_log.grads, dtype && !strcmp(dtype, "bf16") ? 2 : 4);
        /* rank 0 alone wrote the run directory (no second metrics stream, no rank-1 files) */
        char p[600];
        snprintf(p, sizeof p, "%s/dp/metrics.jsonl", root);
        size_t len = 0;
        char *txt = tandem_test_read_file_ok(p, &len);
        int lines = 0;
        for (size_t k = 0; k < len; k++) lines += txt[k] == '\n';
        free(txt);
        assert_int_equal(lines, STEPS);
    }
}

/* After a match, passed or failed (a teardown runs either way): the run directories removed for
 * the next one, and every rank past the same barrier, so a check failing on rank 0 alone does
 * not leave rank 1 waiting in the next test's collectives. */
static int match_done(void **state) {
    (void)state;
    tandem_dev_record(NULL);
    tandem_log_set_hook(NULL, NULL);
    eager = 0;
    char p[600];
    if (rank == 0) {
        snprintf(p, sizeof p, "%s/dp", root);
        tandem_test_rmtree(p);
        snprintf(p, sizeof p, "%s/single", root);
        tandem_test_rmtree(p);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return 0;
}

/* The defaults: 25 MB buckets, one for this model. */
static void test_match_single_device(void **state) {
    (void)state;
    match(NULL, NULL, TOL);
}

/* Buckets of 4 KiB (0.004 MiB): the tiny model's gradients in several, all-reduced while the
 * backward runs; the same result (f32 sums of the same numbers in the same order per element). */
static void test_match_buckets(void **state) {
    (void)state;
    match("0.004", NULL, TOL);
}

/* bf16 on the wire: each rank's gradient rounded to bf16 (8-bit mantissa, relative error <=
 * 2^-9 per element), summed, rounded again; training proceeds and the ranks agree bit for bit.
 * BF16_TOL: the worst relative loss difference over 10 steps, measured over 37 seeds (host and
 * cuda), has a long tail: median ~1e-5, worst 1.6e-4 (f32 buckets: 3e-8 .. 1e-7). AdamW divides
 * each gradient by its running RMS, so an element whose gradient is near zero (where bf16's
 * 2^-9 relative rounding is largest against the other rank's term) can still move by ~lr, and
 * those moves add up over steps. 1e-3 is 6x the worst seen and 3 % of the loss's own fall over
 * the 10 steps (5.50 -> 5.33): worse than f32, as expected, while training proceeds. */
static void test_match_bf16(void **state) {
    (void)state;
    match("0.004", "bf16", BF16_TOL);
}

/* CUDA without graphs: the communication stream runs beside the model stream, ordered by the
 * two events alone, under the stand-in driver's race check (asynchronous streams, random
 * delays): a bucket read before its last write, or the update reading a gradient before its
 * bucket is back, is an error there. */
static void test_match_buckets_eager(void **state) {
    (void)state;
    eager = 1;
    match("0.004", "bf16", BF16_TOL);
}

static void test_resume_same_world(void **state) {
    (void)state;
    step_log full = {0}, a = {0}, b = {0};
    tandem_config cfg;
    config(&cfg, "full", 2);
    CHECK(train(&cfg, world, NULL, 0, &full));
    MPI_Barrier(MPI_COMM_WORLD);
    config(&cfg, "split", 2);
    CHECK(train(&cfg, world, NULL, 5, &a));
    MPI_Barrier(MPI_COMM_WORLD); /* rank 0's checkpoint of step 5 is written */
    CHECK(train(&cfg, world, cfg.out, 0, &b));
    assert_int_equal(a.n, 5);
    assert_int_equal(b.n, 5);
    tandem_test_expect_resumed_losses(full.loss, a.loss, b.loss, 5);
    if (rank == 0) printf("[ dp ] resume at step 5 on %d ranks: steps 6..10 bit-identical\n", world);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) { /* another world size: refused, naming both */
        step_log c = {0};
        tandem_status st = train(&cfg, 1, cfg.out, 0, &c);
        assert_int_equal(st, TANDEM_E_INVALID);
        char want[64];
        snprintf(want, sizeof want, "trained on %d ranks, now 1", world);
        if (!strstr(tandem_last_error(), want) || !strstr(tandem_last_error(), "--force-resume"))
            fail_msg("resume on 1 rank of a %d-rank run: \"%s\"; expected it refused naming both and "
                     "--force-resume", world, tandem_last_error());
        assert_int_equal(c.n, 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A stop request on rank 1 alone (at step 3, as Ctrl-C on one process would): every rank stops
 * at the next step boundary, the same step, and rank 0 writes the last checkpoint there. */
static void test_stop_one_rank(void **state) {
    (void)state;
    tandem_config cfg;
    config(&cfg, "stop", 2);
    CHECK(tandem_config_set(&cfg, "checkpoint_every", "0"));
    step_log l = {0};
    if (rank == 1) l.stop_at = 3;
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = backend;
    o.world_size = world, o.rank = rank;
    o.on_step = on_step, o.on_step_user = &l;
    CHECK(tandem_trainer_create(&cfg, &o, &l.t));
    tandem_trainer_summary sum;
    CHECK(tandem_trainer_run(l.t, &sum));
    tandem_trainer_destroy(l.t);
    assert_int_equal(l.n, 3);
    assert_int_equal(sum.last_step, 3);
    assert_int_equal(sum.stopped_by_request, 1);
    check_ranks_agree(&l);
    if (rank == 0) {
        char p[600];
        snprintf(p, sizeof p, "%s/stop/ckpt-00000003.safetensors", root);
        struct stat sb;
        if (stat(p, &sb) != 0) fail_msg("%s: missing; expected rank 0's checkpoint of the stop step", p);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Non-finite gradients on rank 1 alone (from step 3 on): the all-reduced gradient is
 * non-finite on every rank, so every rank skips the same steps and ends at max_nonfinite with
 * the same error and the same steps reported: the ranks never disagree about a step. */
static void test_nonfinite_one_rank(void **state) {
    (void)state;
    tandem_config cfg;
    config(&cfg, "nan", 2);
    CHECK(tandem_config_set(&cfg, "max_nonfinite", "3"));
    step_log l = {0};
    if (rank == 1) nan_from = 2, nan_count = 100;
    tandem_status st = train(&cfg, world, NULL, 0, &l);
    nan_from = -1, nan_count = 0;
    assert_int_equal(st, TANDEM_E_INVALID);
    if (!strstr(tandem_last_error(), "non-finite steps in a row"))
        fail_msg("rank %d: \"%s\"; expected the max_nonfinite error", rank, tandem_last_error());
    assert_int_equal(l.n, 5); /* 2 good steps, 3 skipped */
    check_ranks_agree(&l);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Rank 1 dies at step 3 of a long run; mpirun must end rank 0 (run_dp.sh checks how). */
static int run_kill(void) {
    tandem_config cfg;
    config(&cfg, "kill", 2);
    CHECK(tandem_config_set(&cfg, "max_steps", "100000"));
    CHECK(tandem_config_set(&cfg, "checkpoint_every", "0"));
    step_log l = {0};
    l.kill_at = rank == 1 ? 3 : 0;
    tandem_status st = train(&cfg, world, NULL, 0, &l);
    fprintf(stderr, "test_dp kill: rank %d: training ended (%s); expected mpirun to end it\n", rank,
            st == TANDEM_OK ? "ok" : tandem_last_error());
    return 1;
}

int main(int argc, char **argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    seed = tandem_test_seed("test_dp");
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD); /* one run, one seed */
    if (world < 2) {
        fprintf(stderr, "test_dp: %d rank; expected >= 2 (run under mpirun -np 2: test/mpi/run_dp.sh)\n", world);
        MPI_Finalize();
        return 1;
    }
    int rc = 0;
    if (rank == 0) rc = tandem_test_mkdtemp(root, sizeof root, "test_dp");
    MPI_Bcast(root, sizeof root, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc != 0) return 1;
    char p[300];
    snprintf(p, sizeof p, "%s/cache", root);
    setenv("XDG_CACHE_HOME", p, 1);
    if (cli_env_apply(NULL, 0) != TANDEM_OK) return 2;
    if (rank == 0) {
        tandem_rng r = {seed};
        snprintf(p, sizeof p, "%s/data", root);
        tiny_corpus_write(p, 9, 32, &r);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 1 && !strcmp(argv[1], "kill")) return run_kill();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_match_single_device, match_done),
        cmocka_unit_test_teardown(test_match_buckets, match_done),
        cmocka_unit_test_teardown(test_match_bf16, match_done),
        cmocka_unit_test(test_resume_same_world),
        cmocka_unit_test(test_nonfinite_one_rank),
        cmocka_unit_test(test_stop_one_rank),
    };
    const struct CMUnitTest cuda_tests[] = {
        cmocka_unit_test_teardown(test_match_buckets, match_done),
        cmocka_unit_test_teardown(test_match_bf16, match_done),
        cmocka_unit_test_teardown(test_match_buckets_eager, match_done),
    };
    /* cuda: each rank one stand-in CUDA data device and one model device (of the stand-in's 4:
       local rank k takes 2k and 2k+1), NCCL (the stand-in libnccl.so.2) across the processes, the
       id from rank 0 through MPI; emulated kernels are slow, so the match alone */
    const int cuda = argc > 1 && !strcmp(argv[1], "cuda");
    if (cuda) backend = TANDEM_BACKEND_CUDA;
    char name[40];
    snprintf(name, sizeof name, "test_dp%s rank %d", cuda ? " cuda" : "", rank);
    rc = cuda ? cmocka_run_group_tests_name(name, cuda_tests, NULL, NULL)
              : cmocka_run_group_tests_name(name, tests, NULL, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && rc == 0) tandem_test_rmtree(root);
    MPI_Finalize();
    return rc;
}
