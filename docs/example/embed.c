/* embed.c — the smallest program that embeds Tandem: it includes only <tandem.h>, links only
 * libtandem.a plus the libraries tandem.pc names, and runs a GEMM and a kernel on the host
 * backend (build: mk/50-example.mk, `make example`).
 *
 *   C = A @ B          A [M, K], B [K, N], C [M, N]
 *   s = row_sum(C)     s [M]
 *
 * Both results are checked against plain loops here; exit status 0 when they agree.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <tandem.h>

enum { M = 37, K = 50, N = 23 };

/* Print the runtime's message for a failed call and leave. */
#define CHECK(call)                                                                       \
    do {                                                                                  \
        tandem_status st_ = (call);                                                       \
        if (st_ != TANDEM_OK) {                                                           \
            fprintf(stderr, "embed: %s failed: %s: %s\n", #call, tandem_status_name(st_), \
                    tandem_last_error());                                                 \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

int main(void) {
    static float a[M * K], b[K * N], c[M * N], s[M];
    for (int i = 0; i < M * K; i++) a[i] = (float)((i * 7) % 13 - 6) / 8.0f;
    for (int i = 0; i < K * N; i++) b[i] = (float)((i * 5) % 11 - 5) / 4.0f;

    /* One host device, one stream, one pool holding the four tensors. */
    tandem_device *dev;
    tandem_stream *stream;
    tandem_pool *pool;
    CHECK(tandem_device_open(TANDEM_BACKEND_HOST, 0, &dev));
    CHECK(tandem_stream_create(dev, &stream));
    CHECK(tandem_pool_create(dev, "example", 0, &pool));

    const int64_t shape_a[2] = {M, K}, shape_b[2] = {K, N}, shape_c[2] = {M, N}, shape_s[1] = {M};
    tandem_tensor *ta, *tb, *tc, *ts;
    CHECK(tandem_pool_declare(pool, "A", TANDEM_F32, 2, shape_a, TANDEM_PERSISTENT, 0, 0, &ta));
    CHECK(tandem_pool_declare(pool, "B", TANDEM_F32, 2, shape_b, TANDEM_PERSISTENT, 0, 0, &tb));
    CHECK(tandem_pool_declare(pool, "C", TANDEM_F32, 2, shape_c, TANDEM_PERSISTENT, 0, 0, &tc));
    CHECK(tandem_pool_declare(pool, "s", TANDEM_F32, 1, shape_s, TANDEM_PERSISTENT, 0, 0, &ts));
    tandem_gemm_shape gs = {0, 0, M, N, K, 1};
    CHECK(tandem_gemm_prepare(dev, &gs)); /* before commit: shapes are fixed */
    CHECK(tandem_pool_commit(pool));      /* the one arena allocation */

    CHECK(tandem_tensor_upload(stream, ta, a, sizeof a));
    CHECK(tandem_tensor_upload(stream, tb, b, sizeof b));
    CHECK(tandem_gemm(stream, 0, 0, 1.0f, ta, tb, 0.0f, tc));
    CHECK(tandem_op_row_sum(stream, tc, ts));
    CHECK(tandem_tensor_download(stream, c, tc, sizeof c));
    CHECK(tandem_tensor_download(stream, s, ts, sizeof s));
    CHECK(tandem_stream_sync(stream));

    /* The same arithmetic in plain loops (double), then the largest relative difference. */
    double worst = 0.0;
    for (int i = 0; i < M; i++) {
        double row = 0.0;
        for (int j = 0; j < N; j++) {
            double v = 0.0;
            for (int p = 0; p < K; p++) v += (double)a[i * K + p] * b[p * N + j];
            row += v;
            worst = fmax(worst, fabs(c[i * N + j] - v) / (1.0 + fabs(v)));
        }
        worst = fmax(worst, fabs(s[i] - row) / (1.0 + fabs(row)));
    }

    tandem_pool_stats st;
    tandem_pool_get_stats(pool, &st);
    printf("embed: Tandem %s, host device, arena %zu bytes for %d tensors\n",
           TANDEM_VERSION_STRING, st.arena_bytes, st.tensor_count);
    printf("embed: C[%d,%d] = A[%d,%d] @ B[%d,%d], s[%d] = row_sum(C); largest relative "
           "difference from plain loops %.2g\n", M, N, M, K, K, N, M, worst);

    tandem_pool_destroy(pool);
    tandem_stream_destroy(stream);
    tandem_device_close(dev);
    if (!(worst < 1e-5)) {
        fprintf(stderr, "embed: results differ from the reference loops\n");
        return 1;
    }
    printf("embed: ok\n");
    return 0;
}
