/* resample.cu — the polyphase windowed-sinc resampler (arguments and semantics:
 * kernels/resample.h; host twin and geometry: kernels/resample_host.c). One thread per output
 * sample, a grid row per batch row (blockIdx.y), output samples taken grid-stride in x. */
#include "kernels/dialect.h"

#include "kernels/resample.h"

KERNEL LAUNCH_BOUNDS(TANDEM_K_RESAMPLE_THREADS) tandem_k_resample(tandem_k_resample_args a) {
    const int b = (int)blockIdx.y;
    int c = 0;
    int64_t len = 0;
    const int64_t n_out = tandem_k_rs_row(&a, b, &c, &len);
    const float *x = a.in + (int64_t)b * a.in_stride;
    float *y = a.out + (int64_t)b * a.out_stride;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; n < a.out_stride; n += stride) {
        float v = 0.0f;
        if (n < n_out) v = c == TANDEM_K_RS_COPY ? x[n] : tandem_k_rs_sample(&a, c, x, len, n);
        y[n] = v;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) a.out_len[b] = (int32_t)n_out;
}
