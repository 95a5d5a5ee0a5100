/* train.cu — loss, gradient-norm and optimizer kernels (arguments and semantics:
 * kernels/train.h; host implementations and geometry: kernels/train_host.c).
 *
 * The partial-sum kernels (l1_masked_fwd, bce_stop_fwd, sum_squares) run one block of
 * TANDEM_K_TRAIN_THREADS threads per chunk of TANDEM_K_TRAIN_CHUNK elements: thread j adds
 * elements j, j + 256, ... of its chunk (coalesced), then the block reduces with warp shuffles
 * and one shared-memory step. Neither order depends on timing, so the sums are bit-identical
 * from run to run. The element-wise kernels use a grid-stride loop.
 */
#include "kernels/dialect.h"

#include "kernels/train.h"

/* Sum of v over a full warp; the total lands in lane 0. */
DEVICE_FN float train_k_warp_sum(float v) {
    for (int offset = TANDEM_WARP_SIZE / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(TANDEM_FULL_MASK, v, offset);
    return v;
}

/* Sum of v over the block (blockDim.x == TANDEM_K_TRAIN_THREADS); valid in thread 0. Every
 * thread of the block must call it (it has a barrier). */
DEVICE_FN float train_k_block_sum(float v, float *warp_totals /* [THREADS / 32] shared */) {
    int lane = (int)threadIdx.x % TANDEM_WARP_SIZE, warp = (int)threadIdx.x / TANDEM_WARP_SIZE;
    v = train_k_warp_sum(v);
    if (lane == 0) warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < TANDEM_K_TRAIN_THREADS / TANDEM_WARP_SIZE ? warp_totals[lane] : 0.0f;
        v = train_k_warp_sum(v);
    }
    return v;
}

DEVICE_FN int64_t train_k_first(void) {
    return (int64_t)blockIdx.x * (int64_t)blockDim.x + (int64_t)threadIdx.x;
}
DEVICE_FN int64_t train_k_stride(void) { return (int64_t)gridDim.x * (int64_t)blockDim.x; }

/* ---- masked L1 ---- */

KERNEL LAUNCH_BOUNDS(TANDEM_K_TRAIN_THREADS) tandem_k_l1_masked_fwd(tandem_k_l1_masked_fwd_args a) {
    __shared__ float warp_totals[TANDEM_K_TRAIN_THREADS / TANDEM_WARP_SIZE];
    const int64_t n = (int64_t)a.batch * a.frames * a.channels;
    const int64_t base = (int64_t)blockIdx.x * TANDEM_K_TRAIN_CHUNK;
    float s = 0.0f;
    for (int j = (int)threadIdx.x; j < TANDEM_K_TRAIN_CHUNK; j += TANDEM_K_TRAIN_THREADS) {
        int64_t i = base + j;
        if (i >= n) break;
        float w = a.mask[i / a.channels];
        if (w != 0.0f) s += w * fabsf(a.pred[i] - a.target[i]);
    }
    s = train_k_block_sum(s, warp_totals);
    if (threadIdx.x == 0) a.partials[blockIdx.x] = s;
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_TRAIN_THREADS) tandem_k_l1_masked_bwd(tandem_k_l1_masked_bwd_args a) {
    const int64_t n = (int64_t)a.batch * a.frames * a.channels, stride = train_k_stride();
    for (int64_t i = train_k_first(); i < n; i += stride) {
        float w = a.mask[i / a.channels], d = a.pred[i] - a.target[i], g = 0.0f;
        if (w != 0.0f && d != 0.0f) g = d > 0.0f ? a.scale * w : -(a.scale * w);
        a.dpred[i] = g;
    }
}

/* ---- stop BCE-with-logits ---- */

KERNEL LAUNCH_BOUNDS(TANDEM_K_TRAIN_THREADS) tandem_k_bce_stop_fwd(tandem_k_bce_stop_fwd_args a) {
    __shared__ float warp_totals[TANDEM_K_TRAIN_THREADS / TANDEM_WARP_SIZE];
    const int64_t n = (int64_t)a.batch * a.frames;
    const int64_t base = (int64_t)blockIdx.x * TANDEM_K_TRAIN_CHUNK;
    float s = 0.0f;
    for (int j = (int)threadIdx.x; j < TANDEM_K_TRAIN_CHUNK; j += TANDEM_K_TRAIN_THREADS) {
        int64_t i = base + j;
        if (i >= n) break;
        float w = a.weight[i];
        if (w != 0.0f) s += w * tandem_k_train_bce(a.logits[i], a.target[i]);
    }
    s = train_k_block_sum(s, warp_totals);
    if (threadIdx.x == 0) a.partials[blockIdx.x] = s;
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_TRAIN_THREADS) tandem_k_bce_stop_bwd(tandem_k_bce_stop_bwd_args a) {
    const int64_t n = (int64_t)a.batch * a.frames, stride = train_k_stride();
    for (int64_t i = train_k_first(); i < n; i += stride) {
        float w = a.weight[i], g = 0.0f;
        if (w != 0.0f) g = a.scale * (tandem_k_train_sigmoid(a.logits[i]) - a.target[i]) * w;
        a.dlogits[i] = g;
    }
}

/* ---- gradient norm ---- */

KERNEL LAUNCH_BOUNDS(TANDEM_K_TRAIN_THREADS) tandem_k_sum_squares(tandem_k_sum_squares_args a) {
    __shared__ float warp_totals[TANDEM_K_TRAIN_THREADS / TANDEM_WARP_SIZE];
    const int64_t base = (int64_t)blockIdx.x * TANDEM_K_TRAIN_CHUNK;
    float s = 0.0f;
    for (int j = (int)threadIdx.x; j < TANDEM_K_TRAIN_CHUNK; j += TANDEM_K_TRAIN_THREADS) {
        int64_t i = base + j;
        if (i >= a.n) break;
        float x = a.x[i];
        s += x * x;
    }
    s = train_k_block_sum(s, warp_totals);
    if (threadIdx.x == 0) a.partials[blockIdx.x] = s;
}

/* One block: thread j adds partials j, j + 256, ... in order, then the block tree. */
KERNEL LAUNCH_BOUNDS(TANDEM_K_TRAIN_THREADS) tandem_k_reduce_sum(tandem_k_reduce_sum_args a) {
    __shared__ float warp_totals[TANDEM_K_TRAIN_THREADS / TANDEM_WARP_SIZE];
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < a.n; i += TANDEM_K_TRAIN_THREADS) s += a.partials[i];
    s = train_k_block_sum(s, warp_totals);
    if (threadIdx.x == 0) {
        float out = s * a.scale;
        a.out[0] = out;
        if (a.nonfinite) a.nonfinite[0] = tandem_k_train_finite(out) ? 0 : 1;
    }
}

/* Each warp votes; lane 0 of a warp that saw a non-finite value stores 1. Several warps may
 * store the same value, which is harmless; nobody stores 0. */
KERNEL LAUNCH_BOUNDS(TANDEM_K_TRAIN_THREADS) tandem_k_nonfinite_check(tandem_k_nonfinite_check_args a) {
    const int64_t stride = train_k_stride();
    int bad = 0;
    for (int64_t i = train_k_first(); i < a.n; i += stride)
        if (!tandem_k_train_finite(a.x[i])) bad = 1;
    if (__any_sync(TANDEM_FULL_MASK, bad) && (int)threadIdx.x % TANDEM_WARP_SIZE == 0) a.flag[0] = 1;
}

/* ---- optimizer ---- */

KERNEL LAUNCH_BOUNDS(TANDEM_K_TRAIN_THREADS) tandem_k_adamw(tandem_k_adamw_args a) {
    if (a.skip && a.skip[0] != 0) return;
    float clip = 1.0f;
    if (a.norm_sq) {
        float norm_sq = a.norm_sq[0];
        if (!tandem_k_train_finite(norm_sq)) return;
        clip = tandem_k_train_clip_factor(norm_sq, a.max_norm);
    }
    const float lr = a.sched ? a.sched[0] : a.lr;
    const float bias1 = a.sched ? a.sched[1] : a.bias1, bias2 = a.sched ? a.sched[2] : a.bias2;
    const int decay = a.weight_decay > 0.0f;
    const float keep = 1.0f - lr * a.weight_decay;
    const float one_m_b1 = 1.0f - a.beta1, one_m_b2 = 1.0f - a.beta2;
    const int64_t stride = train_k_stride();
    for (int64_t i = train_k_first(); i < a.n; i += stride) {
        float g = clip * a.grad[i];
        float p = a.param[i];
        if (decay) p *= keep;
        float m = a.beta1 * a.m[i] + one_m_b1 * g;
        float v = a.beta2 * a.v[i] + one_m_b2 * (g * g);
        p -= lr * (m / bias1) / (sqrtf(v / bias2) + a.eps);
        a.m[i] = m;
        a.v[i] = v;
        a.param[i] = p;
    }
}

/* One thread does it all: a handful of scalars once per step. */
KERNEL LAUNCH_BOUNDS(TANDEM_K_TRAIN_SCHEDULE_THREADS) tandem_k_train_schedule(tandem_k_train_schedule_args a) {
    if (blockIdx.x == 0 && threadIdx.x == 0) tandem_k_train_schedule_apply(&a);
}
