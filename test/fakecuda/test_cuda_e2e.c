/* test_cuda_e2e.c — one workload, two backends: two host devices, then two CUDA devices through
 * the real cuda backend (platform/cuda/cuda_*.c) on the stand-in driver, and every output compared.
 *
 * The workload: a pool planned and committed on each device with GEMM shapes prepared before
 * commit; random tensors uploaded; fill / scale / axpy / cast f32->bf16->f32 / row_sum and four
 * GEMMs (plain with beta, trans_a, batched trans_b) on device 0 by one thread, which then moves a
 * tensor to device 1 (peer copy when the devices have peer access, else staged through host
 * memory by download + upload) and records an event; a second thread waits on that event from
 * device 1's stream, scales the tensor and runs a GEMM on it; everything is downloaded.
 *
 * Each run is its own process (this binary re-executed with --run), because the backend loads
 * the driver and cuBLASLt once per process. CUDA variants: with the stand-in cuBLASLt; with
 * TANDEM_CUBLASLT pointing at a missing file (GEMMs then run the fatbin's own GEMM kernel in
 * the emulator); with TANDEM_FAKECUDA_NO_PEER=1 (staged copy). A CUDA run fails if the stand-in
 * printed any "fakecuda: error:" line.
 *
 * Tolerances: fill, scale, axpy and the casts round once per element in both backends, so they
 * must match bit for bit. row_sum (the kernel reduces in a shuffle tree, the host
 * sequentially) and the GEMMs (host: OpenBLAS in f32; stand-in cuBLASLt: double, rounded once;
 * fatbin kernel: f32 in its own order) differ by accumulation order only: normalised error
 * ||a-b||^2/||b||^2 <= 1e-10. */
#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform/device.h"
#include "tandem.h"
#include "test/testutil.h"

#define DRIVER TANDEM_FAKECUDA_DIR "/libcuda.so.1"
#define CUBLASLT TANDEM_FAKECUDA_DIR "/libcublasLt.so.13"

/* Shapes: none a multiple of a block size. */
enum { R = 37, CC = 131, M = 45, K = 70, N = 33, BT = 3, BM = 20, BK = 24, BN = 17, N2 = 19 };

/* Every output, in the order the child writes them. exact: must match bit for bit. */
typedef struct {
    const char *name;
    int64_t count;
    int exact;
} out_spec;
static const out_spec outs[] = {
    {"z = fill 0.25", R * CC, 1},           {"x *= 1.5", R * CC, 1},
    {"y += 0.75 x", R * CC, 1},             {"back = f32(bf16(y))", R * CC, 1},
    {"rs = row_sum(x)", R, 0},              {"c = a b + 0.5 c", M * N, 0},
    {"ct = 2 at^T b", M * N, 0},            {"c3 = a3 b3^T", BT * BM * BN, 0},
    {"recv = 2 y (device 1)", R * CC, 1},   {"out2 = recv w (device 1)", R * N2, 0},
};
#define NOUT (int)(sizeof outs / sizeof outs[0])

/* ------------------------------------------------------------------ the workload (child) --- */

typedef struct {
    tandem_device *d0, *d1;
    tandem_stream *s0, *s1;
    tandem_event *ev;
    tandem_tensor *x, *y, *z, *h, *back, *rs, *a, *b, *c, *at, *ct, *a3, *b3, *c3;
    tandem_tensor *recv, *w, *out2;
    float *host_y;   /* staging when there is no peer access */
    float *res[NOUT];
    int peer;
    pthread_mutex_t m;
    pthread_cond_t cv;
    int posted;
    tandem_status st0, st1;
    char err0[512], err1[512];
} work;

#define TRY(expr)                                                                         \
    do {                                                                                  \
        tandem_status st_ = (expr);                                                       \
        if (st_ != TANDEM_OK) {                                                           \
            fprintf(stderr, "e2e: %s failed: %s: %s\n", #expr, tandem_status_name(st_),   \
                    tandem_last_error());                                                 \
            return st_;                                                                   \
        }                                                                                 \
    } while (0)

static tandem_status decl(tandem_pool *p, const char *name, tandem_dtype dt, int nd, int64_t d0,
                          int64_t d1, int64_t d2, tandem_tensor **out) {
    int64_t shape[3] = {d0, d1, d2};
    return tandem_pool_declare(p, name, dt, nd, shape, TANDEM_PERSISTENT, 0, 0, out);
}

static tandem_status upload_rand(tandem_rng *r, tandem_stream *s, tandem_tensor *t) {
    int64_t n = tandem_tensor_numel(t);
    float *buf = malloc((size_t)n * 4);
    tandem_rng_fill(r, buf, n, -1, 1);
    tandem_status st = tandem_tensor_upload(s, t, buf, (size_t)n * 4);
    /* The copy may be asynchronous: keep the buffer alive until the stream is done. */
    if (st == TANDEM_OK) st = tandem_stream_sync(s);
    free(buf);
    return st;
}

/* Device 0's part (thread A). */
static tandem_status part0(work *w) {
    tandem_stream *s = w->s0;
    TRY(tandem_op_fill(s, w->z, 0.25f));
    TRY(tandem_op_scale(s, w->x, 1.5f));
    TRY(tandem_op_axpy(s, 0.75f, w->x, w->y));
    TRY(tandem_op_cast(s, w->y, w->h));
    TRY(tandem_op_cast(s, w->h, w->back));
    TRY(tandem_op_row_sum(s, w->x, w->rs));
    TRY(tandem_gemm(s, 0, 0, 1.0f, w->a, w->b, 0.5f, w->c));
    TRY(tandem_gemm(s, 1, 0, 2.0f, w->at, w->b, 0.0f, w->ct));
    TRY(tandem_gemm(s, 0, 1, 1.0f, w->a3, w->b3, 0.0f, w->c3));
    if (w->peer) {
        TRY(tandem_tensor_copy(s, w->recv, w->y));
    } else {
        TRY(tandem_tensor_download(s, w->host_y, w->y, R * CC * 4));
        TRY(tandem_stream_sync(s));
    }
    TRY(tandem_event_record(w->ev, s));
    return TANDEM_OK;
}

static void *thread0(void *arg) {
    work *w = arg;
    w->st0 = part0(w);
    if (w->st0) snprintf(w->err0, sizeof w->err0, "%s", tandem_last_error());
    pthread_mutex_lock(&w->m);
    w->posted = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->m);
    return NULL;
}

/* Device 1's part (thread B): starts once thread A has recorded the event. */
static tandem_status part1(work *w) {
    pthread_mutex_lock(&w->m);
    while (!w->posted) pthread_cond_wait(&w->cv, &w->m);
    pthread_mutex_unlock(&w->m);
    if (w->st0 != TANDEM_OK) return TANDEM_E_STATE;
    tandem_stream *s = w->s1;
    TRY(tandem_stream_wait_event(s, w->ev));
    if (!w->peer) TRY(tandem_tensor_upload(s, w->recv, w->host_y, R * CC * 4));
    TRY(tandem_op_scale(s, w->recv, 2.0f));
    TRY(tandem_gemm(s, 0, 0, 1.0f, w->recv, w->w, 0.0f, w->out2));
    TRY(tandem_stream_sync(s));
    return TANDEM_OK;
}

static void *thread1(void *arg) {
    work *w = arg;
    w->st1 = part1(w);
    if (w->st1) snprintf(w->err1, sizeof w->err1, "%s", tandem_last_error());
    return NULL;
}

static tandem_status prepare(tandem_device *d, int ta, int tb, int64_t m, int64_t n, int64_t k,
                             int64_t batch) {
    tandem_gemm_shape g = {ta, tb, m, n, k, batch};
    return tandem_gemm_prepare(d, &g);
}

static int run_peer; /* whether the run had peer access (checked against the expectation) */

static tandem_status run_workload(tandem_backend be, uint64_t seed, const char *out_path) {
    work w;
    memset(&w, 0, sizeof w);
    pthread_mutex_init(&w.m, NULL);
    pthread_cond_init(&w.cv, NULL);
    tandem_rng rng = {seed};
    TRY(tandem_device_open(be, 0, &w.d0));
    TRY(tandem_device_open(be, 1, &w.d1));
    w.peer = tandem_device_can_access_peer(w.d1, w.d0);
    run_peer = w.peer;
    printf("e2e: %s devices, peer access 1 <- 0: %s\n", be == TANDEM_BACKEND_CUDA ? "cuda" : "host",
           w.peer ? "yes" : "no (staged copy)");
    tandem_pool *p0, *p1;
    TRY(tandem_pool_create(w.d0, "e2e0", 0, &p0));
    TRY(tandem_pool_create(w.d1, "e2e1", 0, &p1));
    TRY(decl(p0, "x", TANDEM_F32, 2, R, CC, 0, &w.x));          // [R, CC]
    TRY(decl(p0, "y", TANDEM_F32, 2, R, CC, 0, &w.y));          // [R, CC]
    TRY(decl(p0, "z", TANDEM_F32, 2, R, CC, 0, &w.z));          // [R, CC]
    TRY(decl(p0, "h", TANDEM_BF16, 2, R, CC, 0, &w.h));         // [R, CC] bf16
    TRY(decl(p0, "back", TANDEM_F32, 2, R, CC, 0, &w.back));    // [R, CC]
    TRY(decl(p0, "rs", TANDEM_F32, 1, R, 0, 0, &w.rs));         // [R]
    TRY(decl(p0, "a", TANDEM_F32, 2, M, K, 0, &w.a));           // [M, K]
    TRY(decl(p0, "b", TANDEM_F32, 2, K, N, 0, &w.b));           // [K, N]
    TRY(decl(p0, "c", TANDEM_F32, 2, M, N, 0, &w.c));           // [M, N]
    TRY(decl(p0, "at", TANDEM_F32, 2, K, M, 0, &w.at));         // [K, M]
    TRY(decl(p0, "ct", TANDEM_F32, 2, M, N, 0, &w.ct));         // [M, N]
    TRY(decl(p0, "a3", TANDEM_F32, 3, BT, BM, BK, &w.a3));      // [BT, BM, BK]
    TRY(decl(p0, "b3", TANDEM_F32, 3, BT, BN, BK, &w.b3));      // [BT, BN, BK]
    TRY(decl(p0, "c3", TANDEM_F32, 3, BT, BM, BN, &w.c3));      // [BT, BM, BN]
    TRY(decl(p1, "recv", TANDEM_F32, 2, R, CC, 0, &w.recv));    // [R, CC]
    TRY(decl(p1, "w", TANDEM_F32, 2, CC, N2, 0, &w.w));         // [CC, N2]
    TRY(decl(p1, "out2", TANDEM_F32, 2, R, N2, 0, &w.out2));    // [R, N2]
    TRY(prepare(w.d0, 0, 0, M, N, K, 1));
    TRY(prepare(w.d0, 1, 0, M, N, K, 1));
    TRY(prepare(w.d0, 0, 1, BM, BN, BK, BT));
    TRY(prepare(w.d1, 0, 0, R, N2, CC, 1));
    TRY(tandem_pool_commit(p0));
    TRY(tandem_pool_commit(p1));
    TRY(tandem_stream_create(w.d0, &w.s0));
    TRY(tandem_stream_create(w.d1, &w.s1));
    TRY(tandem_event_create(w.d0, &w.ev));
    tandem_tensor *inputs0[] = {w.x, w.y, w.a, w.b, w.c, w.at, w.a3, w.b3};
    for (size_t i = 0; i < sizeof inputs0 / sizeof inputs0[0]; i++) TRY(upload_rand(&rng, w.s0, inputs0[i]));
    TRY(upload_rand(&rng, w.s1, w.w));
    w.host_y = malloc(R * CC * 4);

    pthread_t ta, tb;
    pthread_create(&tb, NULL, thread1, &w);
    pthread_create(&ta, NULL, thread0, &w);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    if (w.st0 || w.st1) {
        fprintf(stderr, "e2e: device 0 part: %s; device 1 part: %s\n", w.st0 ? w.err0 : "ok",
                w.st1 ? w.err1 : "ok");
        return w.st0 ? w.st0 : w.st1;
    }

    const tandem_tensor *res_t[NOUT] = {w.z, w.x, w.y, w.back, w.rs, w.c, w.ct, w.c3, w.recv, w.out2};
    FILE *f = fopen(out_path, "wb");
    if (!f) return TANDEM_E_IO;
    for (int i = 0; i < NOUT; i++) {
        const tandem_tensor *t = res_t[i];
        tandem_stream *s = (t == w.recv || t == w.out2) ? w.s1 : w.s0;
        size_t bytes = (size_t)outs[i].count * 4;
        float *buf = malloc(bytes);
        if (tandem_tensor_bytes(t) != bytes) return TANDEM_E_INTERNAL;
        TRY(tandem_tensor_download(s, buf, t, bytes));
        TRY(tandem_stream_sync(s));
        fwrite(buf, 1, bytes, f);
        free(buf);
    }
    fclose(f);
    free(w.host_y);
    tandem_event_destroy(w.ev);
    tandem_stream_destroy(w.s0);
    tandem_stream_destroy(w.s1);
    tandem_pool_destroy(p0);
    tandem_pool_destroy(p1);
    tandem_device_close(w.d0);
    tandem_device_close(w.d1);
    return TANDEM_OK;
}

/* Child entry: --run host|cuda <seed> <out file> <expect cublaslt 0/1> <expect peer 0/1> */
static int child_main(char **argv) {
    int cuda = strcmp(argv[2], "cuda") == 0;
    uint64_t seed = strtoull(argv[3], NULL, 0);
    tandem_status st = run_workload(cuda ? TANDEM_BACKEND_CUDA : TANDEM_BACKEND_HOST, seed, argv[4]);
    if (st != TANDEM_OK) return 2;
    if (!cuda) return 0;
    if (run_peer != atoi(argv[6])) {
        fprintf(stderr, "e2e: peer access %d, expected %d\n", run_peer, atoi(argv[6]));
        return 6;
    }
    char why[256];
    int have = tandem_cuda_have_cublaslt(why, sizeof why);
    printf("e2e: cuBLASLt: %s\n", why);
    if (have != atoi(argv[5])) {
        fprintf(stderr, "e2e: cuBLASLt %s, expected %s\n", have ? "used" : "absent",
                atoi(argv[5]) ? "used" : "absent");
        return 3;
    }
    /* The stand-in counts its error lines; the backend must not have provoked any. */
    void *h = dlopen(DRIVER, RTLD_NOW | RTLD_NOLOAD);
    int (*count)(void) = h ? (int (*)(void))dlsym(h, "tandem_fakecuda_error_count") : NULL;
    if (!count) {
        fprintf(stderr, "e2e: the backend did not load the stand-in driver %s\n", DRIVER);
        return 4;
    }
    if (count() != 0) {
        fprintf(stderr, "e2e: the stand-in reported %d error(s)\n", count());
        return 5;
    }
    return 0;
}

/* ------------------------------------------------------------------ the tests (parent) ----- */

static uint64_t seed;
static char self[4096];

/* Run one variant in a child process; its output is echoed and scanned. Returns the floats. */
static float *run_variant(const char *backend, const char *tag, const char *cublaslt_env,
                          int no_peer, int expect_lt) {
    char out[256], log[256], seed_s[32], lt_s[4], peer_s[4];
    snprintf(out, sizeof out, "%s/test/e2e_%s_%d.bin", TANDEM_TEST_BUILD_DIR, tag, (int)getpid());
    snprintf(log, sizeof log, "%s/test/e2e_%s_%d.log", TANDEM_TEST_BUILD_DIR, tag, (int)getpid());
    snprintf(seed_s, sizeof seed_s, "%llu", (unsigned long long)seed);
    snprintf(lt_s, sizeof lt_s, "%d", expect_lt);
    snprintf(peer_s, sizeof peer_s, "%d", !no_peer);
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) _exit(120);
        dup2(fd, 1);
        dup2(fd, 2);
        setenv("TANDEM_CUDA_DRIVER", DRIVER, 1);
        if (cublaslt_env) setenv("TANDEM_CUBLASLT", cublaslt_env, 1);
        if (no_peer) setenv("TANDEM_FAKECUDA_NO_PEER", "1", 1);
        else unsetenv("TANDEM_FAKECUDA_NO_PEER");
        unsetenv("TANDEM_FAKECUDA_DEVICES");
        unsetenv("TANDEM_FAKECUDA_ARCH");
        char *args[] = {self, "--run", (char *)backend, seed_s, out, lt_s, peer_s, NULL};
        execv(self, args);
        _exit(121);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    FILE *lf = fopen(log, "r");
    int stand_in_errors = 0;
    if (lf) {
        char line[1024];
        printf("---- %s run (%s):\n", tag, backend);
        while (fgets(line, sizeof line, lf)) {
            fputs(line, stdout);
            stand_in_errors += strncmp(line, "fakecuda: error:", 16) == 0;
        }
        fclose(lf);
        remove(log);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("%s run exited with %s %d", tag, WIFEXITED(status) ? "code" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    assert_int_equal(stand_in_errors, 0);
    int64_t total = 0;
    for (int i = 0; i < NOUT; i++) total += outs[i].count;
    float *v = malloc((size_t)total * 4);
    FILE *f = fopen(out, "rb");
    assert_non_null(f);
    assert_int_equal(fread(v, 4, (size_t)total, f), (size_t)total);
    fclose(f);
    remove(out);
    return v;
}

static float *host_result;

static void compare(const char *tag, const float *got) {
    const float *ref = host_result, *g = got;
    for (int i = 0; i < NOUT; i++) {
        double err = 0, norm = 0;
        int64_t differ = 0;
        for (int64_t j = 0; j < outs[i].count; j++) {
            if (isnan(g[j]) || isnan(ref[j])) fail_msg("%s: %s[%lld] is NaN", tag, outs[i].name, (long long)j);
            double d = (double)g[j] - ref[j];
            err += d * d;
            norm += (double)ref[j] * ref[j];
            differ += memcmp(&g[j], &ref[j], 4) != 0;
        }
        double nerr = norm > 0 ? err / norm : err;
        printf("%s: %-26s %6lld elements, %lld not bit-identical, normalised error %.3g\n", tag,
               outs[i].name, (long long)outs[i].count, (long long)differ, nerr);
        if (outs[i].exact) assert_int_equal(differ, 0);
        else assert_true(nerr <= 1e-10);
        ref += outs[i].count;
        g += outs[i].count;
    }
}

static int group_setup(void **state) {
    (void)state;
    seed = tandem_test_seed("test_cuda_e2e");
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return -1;
    self[n] = 0;
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    free(host_result);
    return 0;
}

static void test_host(void **state) {
    (void)state;
    host_result = run_variant("host", "host", NULL, 0, 0);
}

static int have_fatbin(void) {
    int cuda = 0;
    FILE *f = fopen(TANDEM_FATBIN_FILE, "rb");
    if (f) {
        cuda = fgetc(f) != EOF;
        fclose(f);
    }
    if (!cuda) printf("host-only build (empty fatbin): CUDA variants skipped\n");
    return cuda;
}

static void test_cuda_cublaslt(void **state) {
    (void)state;
    if (!host_result) fail_msg("the host run failed");
    if (!have_fatbin()) skip();
    float *v = run_variant("cuda", "cuda_lt", CUBLASLT, 0, 1);
    compare("cuda+cuBLASLt", v);
    free(v);
}

static void test_cuda_fatbin_gemm(void **state) {
    (void)state;
    if (!host_result) fail_msg("the host run failed");
    if (!have_fatbin()) skip();
    float *v = run_variant("cuda", "cuda_nolt", TANDEM_FAKECUDA_DIR "/missing/libcublasLt.so.13", 0, 0);
    compare("cuda, fatbin GEMM", v);
    free(v);
}

static void test_cuda_no_peer(void **state) {
    (void)state;
    if (!host_result) fail_msg("the host run failed");
    if (!have_fatbin()) skip();
    float *v = run_variant("cuda", "cuda_nopeer", CUBLASLT, 1, 1);
    compare("cuda, no peer", v);
    free(v);
}

int main(int argc, char **argv) {
    if (argc == 7 && strcmp(argv[1], "--run") == 0) return child_main(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host),
        cmocka_unit_test(test_cuda_cublaslt),
        cmocka_unit_test(test_cuda_fatbin_gemm),
        cmocka_unit_test(test_cuda_no_peer),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
