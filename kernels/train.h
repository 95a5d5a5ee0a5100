/* train.h — argument structs of the loss, gradient-norm and optimizer kernels (kernels/train.cu;
 * host implementations and launch geometry: kernels/train_host.c).
 *
 *   l1_masked_fwd / _bwd   masked L1 between the mel head output and the target mels
 *   bce_stop_fwd  / _bwd   stop-token BCE-with-logits, weighted per frame
 *   sum_squares            partial sums of x^2 (global gradient norm)
 *   reduce_sum             partials → one scalar, fixed order, optional non-finite flag
 *   nonfinite_check        ORs "x has a NaN/Inf" into an int flag
 *   adamw                  one AdamW step with clipping and skip read from device scalars
 *   train_schedule         the step's learning rate and bias corrections from the device's
 *                          step counters, then the counters advanced (skip-aware)
 *
 * Partial sums. The loss and norm kernels do not use atomics: element i of a flat input of n
 * elements belongs to chunk i / TANDEM_K_TRAIN_CHUNK, one block sums one chunk in a fixed tree
 * and writes partials[chunk]; tandem_k_train_partials(n) is the number of partials (at least
 * one: n = 0 writes a single 0). reduce_sum then adds the partials in one block, again in a
 * fixed order, so the loss and the norm are deterministic on every backend (the host sums each
 * chunk in double, also deterministic, so the host backend can resume bit-identically).
 *
 * Masks and weights are float [B, F] (what the data device's mel_targets writes: 1 for a real
 * frame, 0 for padding) and act as per-frame weights; a frame with weight 0 is excluded by
 * selection, not multiplication, so a NaN or Inf the model produced on a padded frame does not
 * reach the loss or the gradient.
 *
 * One training step's loss, norm and update (the recommended flow):
 *   l1_masked_fwd → reduce_sum(scale = 1 / (80 * real frames))          = l1    [1]
 *   bce_stop_fwd  → reduce_sum(scale = 1 / sum of stop weights)          = bce   [1]
 *   l1_masked_bwd(scale = g / (80 * real frames)), bce_stop_bwd(scale = g / sum of weights),
 *     g = the loss weight divided by the number of accumulated micro-batches
 *   ... backward through the model, gradients summed over micro-batches ...
 *   sum_squares over every gradient tensor, each into its own slice of one partials buffer
 *   → reduce_sum(scale = 1, nonfinite = skip flag)                      = norm_sq [1]
 *     (a NaN or Inf anywhere in the gradients reaches the sum of squares, and so does a norm
 *     that overflows float, so this one exact write replaces clearing and OR-ing a flag)
 *   adamw on every parameter tensor with norm_sq, max_norm and the skip flag; the host reads
 *     the flag back (asynchronously) to count skipped steps.
 * The counts (80 * real frames, the sum of stop weights) come from the batch lengths on the
 * host, so no device→host read sits inside a step.
 */
#ifndef TANDEM_KERNELS_TRAIN_H
#define TANDEM_KERNELS_TRAIN_H

#include <math.h>

#include "kernels/ktypes.h"

/* Elements per partial sum, and threads per block of the partial-sum kernels and reduce_sum
 * (a multiple of 32; each thread takes CHUNK / THREADS elements of its chunk). */
#define TANDEM_K_TRAIN_CHUNK 4096
#define TANDEM_K_TRAIN_THREADS 256

/* Number of partial sums the partial-sum kernels write for n input elements. */
TANDEM_HD int64_t tandem_k_train_partials(int64_t n) {
    return n > 0 ? (n + TANDEM_K_TRAIN_CHUNK - 1) / TANDEM_K_TRAIN_CHUNK : 1;
}

/* 1 when x is neither NaN nor ±Inf (exponent bits not all ones); a bit test, so it holds under
 * fast-math flags too. */
TANDEM_HD int tandem_k_train_finite(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return (u & 0x7f800000u) != 0x7f800000u;
}

/* One BCE-with-logits term max(x, 0) - x t + log1p(exp(-|x|)): exp never overflows, and
 * log1p keeps the small tail accurate for large |x|. */
TANDEM_HD float tandem_k_train_bce(float x, float t) {
    return fmaxf(x, 0.0f) - x * t + log1pf(expf(-fabsf(x)));
}

/* sigmoid(x) through exp of a non-positive argument only. */
TANDEM_HD float tandem_k_train_sigmoid(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

/* partials[k] = sum over elements i of chunk k with mask[i / channels] != 0 of
 *               mask[i / channels] * |pred[i] - target[i]|,   i < batch * frames * channels.
 * pred is the mel head output [B, Tm, r * 80] viewed as frames [B, F = Tm * r, 80]. */
typedef struct tandem_k_l1_masked_fwd_args {
    const float *pred;   /* [batch, frames, channels] */
    const float *target; /* [batch, frames, channels] */
    const float *mask;   /* [batch, frames] frame weights (1 real, 0 padding) */
    float *partials;     /* [tandem_k_train_partials(batch * frames * channels)] */
    int batch, frames, channels; /* channels = 80 mel bands */
} tandem_k_l1_masked_fwd_args;

/* dpred[i] = scale * sign(pred[i] - target[i]) * mask[i / channels] where the mask is nonzero,
 * else 0; sign(0) = 0. scale = upstream gradient / count (count = channels * real frames).
 * Overwrites dpred (the mel head output feeds only the loss). */
typedef struct tandem_k_l1_masked_bwd_args {
    const float *pred;   /* [batch, frames, channels] */
    const float *target; /* [batch, frames, channels] */
    const float *mask;   /* [batch, frames] */
    float *dpred;        /* [batch, frames, channels] */
    int batch, frames, channels;
    float scale;
} tandem_k_l1_masked_bwd_args;

/* partials[k] = sum over elements i of chunk k with weight[i] != 0 of
 *               weight[i] * (max(x, 0) - x * t + log1p(exp(-|x|))),  x = logits[i], t = target[i]
 * (BCE with logits, written so no exp overflows). Which frames count is the caller's choice
 * through weight; the model uses weight 1 on every frame, real and padded: the target is 1 from
 * the last real frame on (mel_targets), so the padded frames teach the head to stay "stopped". */
typedef struct tandem_k_bce_stop_fwd_args {
    const float *logits; /* [batch, frames]: the stop head [B, Tm, r] viewed as frames */
    const float *target; /* [batch, frames] in [0, 1] */
    const float *weight; /* [batch, frames] */
    float *partials;     /* [tandem_k_train_partials(batch * frames)] */
    int batch, frames;
} tandem_k_bce_stop_fwd_args;

/* dlogits[i] = scale * (sigmoid(x) - t) * weight[i] where weight[i] != 0, else 0. Overwrites. */
typedef struct tandem_k_bce_stop_bwd_args {
    const float *logits; /* [batch, frames] */
    const float *target; /* [batch, frames] */
    const float *weight; /* [batch, frames] */
    float *dlogits;      /* [batch, frames] */
    int batch, frames;
    float scale;
} tandem_k_bce_stop_bwd_args;

/* partials[k] = sum of x[i]^2 over chunk k. The caller may point partials into a slice of a
 * larger buffer, so several tensors feed one reduce_sum. */
typedef struct tandem_k_sum_squares_args {
    const float *x;  /* [n] */
    float *partials; /* [tandem_k_train_partials(n)] */
    int64_t n;
} tandem_k_sum_squares_args;

/* out[0] = scale * sum_i partials[i], in a fixed order (one block). When nonfinite is not NULL,
 * nonfinite[0] = 1 if out[0] is NaN or ±Inf, else 0 (always written). */
typedef struct tandem_k_reduce_sum_args {
    const float *partials; /* [n] */
    float *out;            /* [1] */
    int *nonfinite;        /* [1] or NULL */
    int64_t n;
    float scale;
} tandem_k_reduce_sum_args;

/* flag[0] = 1 if any x[i] is NaN or ±Inf; otherwise flag[0] is left as it is, so one flag
 * collects several tensors (the caller zeroes it first). */
typedef struct tandem_k_nonfinite_check_args {
    const float *x; /* [n] */
    int *flag;      /* [1] */
    int64_t n;
} tandem_k_nonfinite_check_args;

/* One AdamW step (decoupled weight decay, as torch.optim.AdamW), element-wise:
 *   if skip[0] != 0 or norm_sq[0] is not finite: nothing changes (the "skip and count" rule);
 *   c = max_norm / sqrt(norm_sq[0]) if max_norm > 0 and sqrt(norm_sq[0]) > max_norm, else 1
 *   g = c * grad
 *   param *= 1 - lr * weight_decay                   (only when weight_decay > 0)
 *   m = beta1 * m + (1 - beta1) * g
 *   v = beta2 * v + (1 - beta2) * g * g
 *   param -= lr * (m / bias1) / (sqrt(v / bias2) + eps)
 * bias1 = 1 - beta1^t and bias2 = 1 - beta2^t for step t >= 1 (computed on the host). The clip
 * factor comes from the device scalar norm_sq (reduce_sum's output), so no device→host read
 * sits between the backward pass and the update. norm_sq and skip may be NULL (no clipping, no
 * skip). The caller passes weight_decay = 0 for norms, biases and embeddings. */
typedef struct tandem_k_adamw_args {
    float *param;         /* [n] */
    const float *grad;    /* [n] */
    float *m;             /* [n] first moment */
    float *v;             /* [n] second moment */
    const float *norm_sq; /* [1] squared global gradient norm, or NULL */
    const int *skip;      /* [1] nonzero: skip this step, or NULL */
    int64_t n;
    float lr, beta1, beta2, eps, weight_decay;
    float bias1, bias2;   /* 1 - beta1^t, 1 - beta2^t */
    float max_norm;       /* <= 0: no clipping */
    const float *sched;   /* [3] or NULL: lr, bias1, bias2 read from here (train_schedule's
                             output) instead of the three fields above, so a captured step
                             (CUDA graph) needs no per-step argument */
} tandem_k_adamw_args;

/* The learning rate of optimizer step `step` (0-based): linear warm-up over `warmup` steps to
 * lr, then a half cosine from lr to lr * min_lr_ratio at max_steps (held there after). In
 * double, on the host (tandem_optim_lr) and on the device (train_schedule) alike. */
TANDEM_HD double tandem_k_train_lr(double lr, double min_lr_ratio, int64_t warmup, int64_t max_steps,
                                   int64_t step) {
    if (step < 0) step = 0;
    if (warmup > 0 && step < warmup) return lr * (double)(step + 1) / (double)warmup;
    const double lo = lr * min_lr_ratio;
    const int64_t span = max_steps - warmup;
    if (span <= 0) return lr;
    double t = (double)(step - warmup) / (double)span;
    if (t > 1.0) t = 1.0;
    return lo + 0.5 * (lr - lo) * (1.0 + cos(3.14159265358979323846 * t));
}

/* Counters of the device-resident training state (int32, so a step counter wraps only past
 * 2^31 steps; the host checks that bound when it writes them). */
#define TANDEM_K_TRAIN_CTR_STEP 0    /* optimizer steps taken (applied or skipped) */
#define TANDEM_K_TRAIN_CTR_UPDATES 1 /* applied: AdamW's t - 1 */
#define TANDEM_K_TRAIN_CTR_SKIPPED 2 /* skipped for non-finite values, in total */
#define TANDEM_K_TRAIN_CTR_IN_ROW 3  /* skipped in a row */
#define TANDEM_K_TRAIN_CTRS 4
#define TANDEM_K_TRAIN_SCHEDULE_THREADS 32 /* one warp; thread 0 works */

/* One thread, once per optimizer step, after the gradient norm and the non-finite check and
 * before adamw:
 *   t = ctr[UPDATES] + 1, s = ctr[STEP]
 *   sched = {lr(s), 1 - beta1^t, 1 - beta2^t}   (float of the double formulas, as the host did)
 *   skipped = skip[0] != 0 or norm_sq[0] is not finite   (adamw's own rule)
 *   ctr[STEP]++; skipped: ctr[SKIPPED]++, ctr[IN_ROW]++; else ctr[UPDATES]++, ctr[IN_ROW] = 0
 * So the skip decision, the update counter and the learning rate never leave the device during
 * a step: the host reads the counters back when it logs. */
typedef struct tandem_k_train_schedule_args {
    const float *norm_sq; /* [1] */
    const int *skip;      /* [1] */
    int *ctr;             /* [TANDEM_K_TRAIN_CTRS] in/out */
    float *sched;         /* [3] out: lr, bias1, bias2 */
    double lr, min_lr_ratio;
    int64_t warmup_steps, max_steps;
    float beta1, beta2;
} tandem_k_train_schedule_args;

/* The body of train_schedule (shared by the kernel and the host implementation). */
TANDEM_HD void tandem_k_train_schedule_apply(const tandem_k_train_schedule_args *a) {
    const int64_t step = a->ctr[TANDEM_K_TRAIN_CTR_STEP];
    const double t = (double)a->ctr[TANDEM_K_TRAIN_CTR_UPDATES] + 1.0;
    a->sched[0] = (float)tandem_k_train_lr(a->lr, a->min_lr_ratio, a->warmup_steps, a->max_steps, step);
    a->sched[1] = (float)(1.0 - pow((double)a->beta1, t));
    a->sched[2] = (float)(1.0 - pow((double)a->beta2, t));
    const int skipped = a->skip[0] != 0 || !tandem_k_train_finite(a->norm_sq[0]);
    a->ctr[TANDEM_K_TRAIN_CTR_STEP]++;
    if (skipped) {
        a->ctr[TANDEM_K_TRAIN_CTR_SKIPPED]++;
        a->ctr[TANDEM_K_TRAIN_CTR_IN_ROW]++;
    } else {
        a->ctr[TANDEM_K_TRAIN_CTR_UPDATES]++;
        a->ctr[TANDEM_K_TRAIN_CTR_IN_ROW] = 0;
    }
}

/* The clip factor adamw applies (shared by the kernel and the host implementation). */
TANDEM_HD float tandem_k_train_clip_factor(float norm_sq, float max_norm) {
    float norm = sqrtf(norm_sq);
    return (max_norm > 0.0f && norm > max_norm) ? max_norm / norm : 1.0f;
}

#endif
