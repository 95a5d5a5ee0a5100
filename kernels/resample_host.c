/* resample_host.c — geometry, host twin and cost of the resampling kernel (kernels/resample.h).
 * The twin computes what the kernel computes (the same 8 float lanes per output sample, summed in
 * the same order) over rows split into chunks of output samples; inside a row the window is
 * taken 8 lanes at a time as a GCC vector (built for x86-64-v3 as well and chosen when the CPU
 * has it: lane-wise, no contraction, so the bits are the same either way). */
#include <string.h>

#include "kernels/host_parallel.h"
#include "kernels/registry.h"

enum { RS_MAX_BLOCKS = 1024, RS_CHUNK = 2048 };
typedef float rs_v8 __attribute__((vector_size(32)));
_Static_assert(TANDEM_RS_LANES == 8, "rs_v8 holds the kernel's lanes");
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define RS_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define RS_CLONES
#endif

void tandem_k_resample_geom(const tandem_k_resample_args *a, tandem_launch_dims *d) {
    *d = tandem_dims_1d(a->out_stride, TANDEM_K_RESAMPLE_THREADS);
    if (d->grid[0] > RS_MAX_BLOCKS) d->grid[0] = RS_MAX_BLOCKS; /* grid-stride covers the rest */
    d->grid[1] = (unsigned)(a->batch > 0 ? a->batch : 1);
}

/* y[n0, n1) of a resampled row: the interior as vectors, the edges through the shared scalar. */
RS_CLONES static void rs_span(const tandem_k_resample_args *a, int c, const float *x, int64_t len, float *y,
                              int64_t n0, int64_t n1) {
    const int64_t up = a->classes.up[c], down = a->classes.down[c], K = a->classes.taps[c];
    const float *table = a->taps + a->classes.off[c];
    for (int64_t n = n0; n < n1; n++) {
        const int64_t t = n * down, i0 = t / up - K / 2 + 1;
        if (i0 < 0 || i0 + K > len) {
            y[n] = tandem_k_rs_sample(a, c, x, len, n);
            continue;
        }
        const float *h = table + (t % up) * K, *xs = x + i0;
        rs_v8 acc = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int64_t k = 0; k < K; k += TANDEM_RS_LANES) {
            rs_v8 hv, xv;
            memcpy(&hv, h + k, sizeof hv);
            memcpy(&xv, xs + k, sizeof xv);
            acc += hv * xv;
        }
        float s = 0.0f;
        for (int j = 0; j < TANDEM_RS_LANES; j++) s += acc[j];
        y[n] = s;
    }
}

static void rs_range(void *ctx, int64_t begin, int64_t end) {
    const tandem_k_resample_args *a = ctx;
    const int64_t chunks = (a->out_stride + RS_CHUNK - 1) / RS_CHUNK;
    for (int64_t i = begin; i < end; i++) {
        const int b = (int)(i / chunks);
        const int64_t n0 = (i % chunks) * RS_CHUNK, n1 = n0 + RS_CHUNK < a->out_stride ? n0 + RS_CHUNK : a->out_stride;
        int c = 0;
        int64_t len = 0;
        const int64_t n_out = tandem_k_rs_row(a, b, &c, &len);
        const float *x = a->in + (int64_t)b * a->in_stride;
        float *y = a->out + (int64_t)b * a->out_stride;
        const int64_t real = n1 < n_out ? n1 : n_out;
        if (c == TANDEM_K_RS_COPY && real > n0) memcpy(y + n0, x + n0, sizeof(float) * (size_t)(real - n0));
        else if (real > n0) rs_span(a, c, x, len, y, n0, real);
        for (int64_t n = real > n0 ? real : n0; n < n1; n++) y[n] = 0.0f;
        if (n0 == 0) a->out_len[b] = (int32_t)n_out;
    }
}

void tandem_k_resample_host(const tandem_k_resample_args *a) {
    if (a->batch < 1 || a->out_stride < 1) return;
    const int64_t chunks = (a->out_stride + RS_CHUNK - 1) / RS_CHUNK;
    tandem_host_parallel_for((int64_t)a->batch * chunks, 1, rs_range, (void *)a);
}

/* Every output slot counted at the widest class's taps (the rows' classes are device data). */
void tandem_k_resample_cost(const tandem_k_resample_args *a, tandem_kernel_cost *c) {
    int64_t K = 0;
    for (int i = 0; i < a->classes.n && i < TANDEM_RS_MAX_CLASSES; i++)
        if (a->classes.taps[i] > K) K = a->classes.taps[i];
    const double out = (double)a->batch * (double)a->out_stride;
    tandem_kcost(c, 2.0 * (double)K * out,
                 4.0 * ((double)a->batch * (double)a->in_stride + (double)a->n_taps + 2.0 * a->batch),
                 4.0 * (out + a->batch));
}
