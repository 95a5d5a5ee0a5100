/* train_host.c — launch geometry and host implementations of the loss, gradient-norm and
 * optimizer kernels (train.cu; semantics in train.h).
 *
 * The host implementations follow the kernels' semantics and their per-element float
 * arithmetic (the same expressions, shared through train.h where they are more than one
 * operation); sums run sequentially in double over the same chunks the kernels use, so the
 * host backend is deterministic and at least as accurate as the device's float tree.
 *
 * Threads: the function over a range of elements (or of chunks, for the partial sums) is the
 * reference; each kernel's host implementation splits that range over the host device's
 * threads (platform/host/host_pool.h). A partial sum is one chunk summed in order by one thread, so
 * the partials, and everything after them, are bit-identical for any thread count.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>

#include "kernels/host_parallel.h"
#include "kernels/registry.h"

/* Loops over runtime lengths compile to vector code: GCC's -O2 cost model ("very cheap")
 * vectorises only loops that need no scalar epilogue. Vectorising changes no result here:
 * float reductions keep their order (no -ffast-math), element-wise loops do the same
 * operation per element. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

/* Elements per range of the host parallel loops, at least. */
enum { HOST_GRAIN = 16384 };
/* Chunks (partial sums) per range, at least: TANDEM_K_TRAIN_CHUNK elements each. */
#define CHUNK_GRAIN ((HOST_GRAIN + TANDEM_K_TRAIN_CHUNK - 1) / TANDEM_K_TRAIN_CHUNK)

/* Elements [begin, end) of chunk k of n. */
static void chunk_bounds(int64_t k, int64_t n, int64_t *begin, int64_t *end) {
    *begin = k * TANDEM_K_TRAIN_CHUNK;
    *end = (k + 1) * TANDEM_K_TRAIN_CHUNK < n ? (k + 1) * TANDEM_K_TRAIN_CHUNK : n;
}

/* The element-wise kernels: 256 threads per block, at most 4096 blocks (more would only queue
 * on any current GPU); the grid-stride loops cover the rest. */
enum { TRAIN_THREADS = TANDEM_K_TRAIN_THREADS, TRAIN_MAX_BLOCKS = 4096 };

static void elementwise_dims(int64_t n, tandem_launch_dims *d) {
    *d = tandem_dims_1d(n, TRAIN_THREADS);
    if (d->grid[0] > TRAIN_MAX_BLOCKS) d->grid[0] = TRAIN_MAX_BLOCKS;
}

/* One block of TANDEM_K_TRAIN_THREADS per chunk, i.e. per partial sum. */
static void partial_dims(int64_t n, tandem_launch_dims *d) {
    *d = tandem_dims_1d(tandem_k_train_partials(n), 1);
    d->block[0] = TANDEM_K_TRAIN_THREADS;
}

/* ---- l1_masked_fwd ---- */
void tandem_k_l1_masked_fwd_geom(const tandem_k_l1_masked_fwd_args *a, tandem_launch_dims *d) {
    partial_dims((int64_t)a->batch * a->frames * a->channels, d);
}
static void l1_masked_fwd_chunks(void *ctx, int64_t k0, int64_t k1) {
    const tandem_k_l1_masked_fwd_args *a = ctx;
    const int64_t n = (int64_t)a->batch * a->frames * a->channels;
    for (int64_t k = k0; k < k1; k++) {
        double s = 0.0;
        int64_t begin, end;
        chunk_bounds(k, n, &begin, &end);
        for (int64_t i = begin; i < end; i++) {
            float w = a->mask[i / a->channels];
            if (w != 0.0f) s += w * fabsf(a->pred[i] - a->target[i]);
        }
        a->partials[k] = (float)s;
    }
}
void tandem_k_l1_masked_fwd_host(const tandem_k_l1_masked_fwd_args *a) {
    const int64_t n = (int64_t)a->batch * a->frames * a->channels;
    tandem_host_parallel_for(tandem_k_train_partials(n), CHUNK_GRAIN, l1_masked_fwd_chunks, (void *)a);
}

/* ---- l1_masked_bwd ---- */
void tandem_k_l1_masked_bwd_geom(const tandem_k_l1_masked_bwd_args *a, tandem_launch_dims *d) {
    elementwise_dims((int64_t)a->batch * a->frames * a->channels, d);
}
static void l1_masked_bwd_range(void *ctx, int64_t i0, int64_t i1) {
    const tandem_k_l1_masked_bwd_args *a = ctx;
    for (int64_t i = i0; i < i1; i++) {
        float w = a->mask[i / a->channels], diff = a->pred[i] - a->target[i], g = 0.0f;
        if (w != 0.0f && diff != 0.0f) g = diff > 0.0f ? a->scale * w : -(a->scale * w);
        a->dpred[i] = g;
    }
}
void tandem_k_l1_masked_bwd_host(const tandem_k_l1_masked_bwd_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->frames * a->channels, HOST_GRAIN,
                             l1_masked_bwd_range, (void *)a);
}

/* ---- bce_stop_fwd ---- */
void tandem_k_bce_stop_fwd_geom(const tandem_k_bce_stop_fwd_args *a, tandem_launch_dims *d) {
    partial_dims((int64_t)a->batch * a->frames, d);
}
static void bce_stop_fwd_chunks(void *ctx, int64_t k0, int64_t k1) {
    const tandem_k_bce_stop_fwd_args *a = ctx;
    const int64_t n = (int64_t)a->batch * a->frames;
    for (int64_t k = k0; k < k1; k++) {
        double s = 0.0;
        int64_t begin, end;
        chunk_bounds(k, n, &begin, &end);
        for (int64_t i = begin; i < end; i++) {
            float w = a->weight[i];
            if (w != 0.0f) s += w * tandem_k_train_bce(a->logits[i], a->target[i]);
        }
        a->partials[k] = (float)s;
    }
}
void tandem_k_bce_stop_fwd_host(const tandem_k_bce_stop_fwd_args *a) {
    const int64_t n = (int64_t)a->batch * a->frames;
    tandem_host_parallel_for(tandem_k_train_partials(n), CHUNK_GRAIN, bce_stop_fwd_chunks, (void *)a);
}

/* ---- bce_stop_bwd ---- */
void tandem_k_bce_stop_bwd_geom(const tandem_k_bce_stop_bwd_args *a, tandem_launch_dims *d) {
    elementwise_dims((int64_t)a->batch * a->frames, d);
}
static void bce_stop_bwd_range(void *ctx, int64_t i0, int64_t i1) {
    const tandem_k_bce_stop_bwd_args *a = ctx;
    for (int64_t i = i0; i < i1; i++) {
        float w = a->weight[i], g = 0.0f;
        if (w != 0.0f) g = a->scale * (tandem_k_train_sigmoid(a->logits[i]) - a->target[i]) * w;
        a->dlogits[i] = g;
    }
}
void tandem_k_bce_stop_bwd_host(const tandem_k_bce_stop_bwd_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->frames, HOST_GRAIN, bce_stop_bwd_range, (void *)a);
}

/* ---- sum_squares ---- */
void tandem_k_sum_squares_geom(const tandem_k_sum_squares_args *a, tandem_launch_dims *d) {
    partial_dims(a->n, d);
}
static void sum_squares_chunks(void *ctx, int64_t k0, int64_t k1) {
    const tandem_k_sum_squares_args *a = ctx;
    for (int64_t k = k0; k < k1; k++) {
        double s[4] = {0.0, 0.0, 0.0, 0.0}; /* 4 lanes in a fixed order: vector code */
        int64_t begin, end;
        chunk_bounds(k, a->n, &begin, &end);
        int64_t i = begin;
        for (; i + 4 <= end; i += 4)
            for (int l = 0; l < 4; l++) {
                const float x = a->x[i + l];
                s[l] += x * x; /* the square in float, as the kernel does */
            }
        for (; i < end; i++) {
            const float x = a->x[i];
            s[(i - begin) & 3] += x * x;
        }
        a->partials[k] = (float)((s[0] + s[1]) + (s[2] + s[3]));
    }
}
void tandem_k_sum_squares_host(const tandem_k_sum_squares_args *a) {
    tandem_host_parallel_for(tandem_k_train_partials(a->n), CHUNK_GRAIN, sum_squares_chunks, (void *)a);
}

/* ---- reduce_sum ---- */
void tandem_k_reduce_sum_geom(const tandem_k_reduce_sum_args *a, tandem_launch_dims *d) {
    (void)a;
    *d = tandem_dims_1d(1, TANDEM_K_TRAIN_THREADS); /* one block, whatever n */
}
void tandem_k_reduce_sum_host(const tandem_k_reduce_sum_args *a) {
    double s = 0.0;
    for (int64_t i = 0; i < a->n; i++) s += a->partials[i];
    /* Rounded to float before scaling, as the kernel holds the sum in float: a sum beyond
     * FLT_MAX is Inf here too, so the non-finite flag agrees with the device. */
    float out = (float)s * a->scale;
    a->out[0] = out;
    if (a->nonfinite) a->nonfinite[0] = tandem_k_train_finite(out) ? 0 : 1;
}

/* ---- nonfinite_check ---- */
void tandem_k_nonfinite_check_geom(const tandem_k_nonfinite_check_args *a, tandem_launch_dims *d) {
    elementwise_dims(a->n, d);
}
typedef struct nonfinite_job {
    const tandem_k_nonfinite_check_args *a;
    atomic_int found; /* set by any range; the flag is written once, by the caller */
} nonfinite_job;
static void nonfinite_check_range(void *ctx, int64_t i0, int64_t i1) {
    nonfinite_job *j = ctx;
    for (int64_t i = i0; i < i1; i++)
        if (!tandem_k_train_finite(j->a->x[i])) {
            atomic_store(&j->found, 1);
            return;
        }
}
void tandem_k_nonfinite_check_host(const tandem_k_nonfinite_check_args *a) {
    nonfinite_job j = {a, 0};
    tandem_host_parallel_for(a->n, HOST_GRAIN, nonfinite_check_range, &j);
    if (atomic_load(&j.found)) a->flag[0] = 1;
}

/* ---- adamw ---- */
void tandem_k_adamw_geom(const tandem_k_adamw_args *a, tandem_launch_dims *d) {
    elementwise_dims(a->n, d);
}
typedef struct adamw_job {
    const tandem_k_adamw_args *a;
    float clip, lr, bias1, bias2;
} adamw_job;
static void adamw_range(void *ctx, int64_t i0, int64_t i1) {
    const adamw_job *j = ctx;
    const tandem_k_adamw_args *a = j->a;
    const float clip = j->clip;
    const float lr = j->lr, bias1 = j->bias1, bias2 = j->bias2;
    const int decay = a->weight_decay > 0.0f;
    const float keep = 1.0f - lr * a->weight_decay;
    const float one_m_b1 = 1.0f - a->beta1, one_m_b2 = 1.0f - a->beta2;
    /* restrict locals, no branch in the loop: it vectorises (the Makefile compiles this file
     * with -fno-math-errno, without which sqrtf's errno store keeps it scalar) */
    float *restrict param = a->param, *restrict mo = a->m, *restrict vo = a->v;
    const float *restrict grad = a->grad;
    const float beta1 = a->beta1, beta2 = a->beta2, eps = a->eps;
    const float scale = decay ? keep : 1.0f; /* p * 1.0f == p */
    for (int64_t i = i0; i < i1; i++) {
        float g = clip * grad[i];
        float p = param[i] * scale;
        float m = beta1 * mo[i] + one_m_b1 * g;
        float v = beta2 * vo[i] + one_m_b2 * (g * g);
        p -= lr * (m / bias1) / (sqrtf(v / bias2) + eps);
        mo[i] = m;
        vo[i] = v;
        param[i] = p;
    }
}
void tandem_k_adamw_host(const tandem_k_adamw_args *a) {
    if (a->skip && a->skip[0] != 0) return;
    float clip = 1.0f;
    if (a->norm_sq) {
        if (!tandem_k_train_finite(a->norm_sq[0])) return;
        clip = tandem_k_train_clip_factor(a->norm_sq[0], a->max_norm);
    }
    adamw_job j = {a, clip, a->sched ? a->sched[0] : a->lr, a->sched ? a->sched[1] : a->bias1,
                   a->sched ? a->sched[2] : a->bias2};
    tandem_host_parallel_for(a->n, HOST_GRAIN, adamw_range, &j);
}

/* ---- train_schedule ---- */
void tandem_k_train_schedule_geom(const tandem_k_train_schedule_args *a, tandem_launch_dims *d) {
    (void)a;
    *d = tandem_dims_1d(1, TANDEM_K_TRAIN_SCHEDULE_THREADS);
}
void tandem_k_train_schedule_host(const tandem_k_train_schedule_args *a) { tandem_k_train_schedule_apply(a); }
/* Reads norm_sq, skip and the counters, writes the counters and three floats; ~10 double ops
 * (the cosine and the two powers counted as one each). */
void tandem_k_train_schedule_cost(const tandem_k_train_schedule_args *a, tandem_kernel_cost *c) {
    (void)a;
    c->flops = 10.0;
    c->bytes_read = sizeof(float) + sizeof(int) + TANDEM_K_TRAIN_CTRS * sizeof(int);
    c->bytes_written = TANDEM_K_TRAIN_CTRS * sizeof(int) + 3 * sizeof(float);
}

/* ---- costs (registry.h) -------------------------------------------------------------------- */

void tandem_k_l1_masked_fwd_cost(const tandem_k_l1_masked_fwd_args *a, tandem_kernel_cost *c) {
    const double f = (double)a->batch * a->frames, n = f * a->channels;
    tandem_kcost(c, 4.0 * n, 8.0 * n + 4.0 * f,
                 4.0 * (double)tandem_k_train_partials((int64_t)n));
}
void tandem_k_l1_masked_bwd_cost(const tandem_k_l1_masked_bwd_args *a, tandem_kernel_cost *c) {
    const double f = (double)a->batch * a->frames, n = f * a->channels;
    tandem_kcost(c, 3.0 * n, 8.0 * n + 4.0 * f, 4.0 * n);
}
void tandem_k_bce_stop_fwd_cost(const tandem_k_bce_stop_fwd_args *a, tandem_kernel_cost *c) {
    const double n = (double)a->batch * a->frames;
    tandem_kcost(c, 20.0 * n, 12.0 * n, 4.0 * (double)tandem_k_train_partials((int64_t)n));
}
void tandem_k_bce_stop_bwd_cost(const tandem_k_bce_stop_bwd_args *a, tandem_kernel_cost *c) {
    const double n = (double)a->batch * a->frames;
    tandem_kcost(c, 16.0 * n, 12.0 * n, 4.0 * n);
}
void tandem_k_sum_squares_cost(const tandem_k_sum_squares_args *a, tandem_kernel_cost *c) {
    tandem_kcost(c, 2.0 * (double)a->n, 4.0 * (double)a->n,
                 4.0 * (double)tandem_k_train_partials(a->n));
}
void tandem_k_reduce_sum_cost(const tandem_k_reduce_sum_args *a, tandem_kernel_cost *c) {
    tandem_kcost(c, (double)a->n + 1.0, 4.0 * (double)a->n, a->nonfinite ? 8.0 : 4.0);
}
void tandem_k_nonfinite_check_cost(const tandem_k_nonfinite_check_args *a, tandem_kernel_cost *c) {
    tandem_kcost(c, (double)a->n, 4.0 * (double)a->n, 4.0);
}
void tandem_k_adamw_cost(const tandem_k_adamw_args *a, tandem_kernel_cost *c) {
    /* param, grad, m, v read; param, m, v written; ~16 flops (clip scale, moments, sqrt, divide,
     * decay) per element; the norm and skip flag once */
    const double n = (double)a->n;
    tandem_kcost(c, 16.0 * n, 16.0 * n + 8.0, 12.0 * n);
}
