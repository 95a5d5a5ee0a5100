/* cases_train.c — kernel-test cases for the loss, gradient-norm and optimizer kernels
 * (kernels/train.h).
 *
 * Shapes: a single element; sizes off the 256-thread block and just past one 4096-element
 * chunk; the tiny model's tensors (B 8, max_frames 512, 80 bands; its largest weight, 256 x
 * 1024); the base model's (B 32, max_frames 800) or a tensor large enough that the element-wise
 * kernels hit the 4096-block grid cap and take a second grid-stride trip; a random shape.
 *
 * Inputs the uniform fill cannot make are planted by bind() into both copies alike (it runs
 * after the fill, on each copy's buffers, from the same parameters): prefix frame masks and
 * stop targets from per-item lengths (what mel_targets writes), exact pred == target ties (the
 * sign(0) = 0 case), huge logits (the overflow-free BCE), zero weights, and NaN/Inf values
 * for nonfinite_check.
 *
 * Tolerances (normalised squared error, kcase.h):
 *   partial sums (l1_masked_fwd, bce_stop_fwd, sum_squares) and reduce_sum: 1e-10 — the kernel
 *     adds in a float tree, the host in double; the expected error is ~1e-14 (all terms but
 *     reduce_sum's are positive, and its inputs lie in [-0.5, 1] so sums stay far from 0),
 *     while one dropped or doubled term of a chunk of 4096 gives > 1e-8.
 *   element-wise (l1/bce backward, adamw, the flags): 1e-12, i.e. exact in practice — host
 *     and kernel evaluate the same float expressions (nvcc may contract into FMAs on a GPU,
 *     which the emulator does not).
 */
#include <math.h>
#include <stdio.h>

#include "test/kernels/kcase.h"

/* Frames of item b for planted masks: a deterministic function of the case's seed, so both
 * copies get the same; 0..frames inclusive (empty and full items both occur). */
static int planted_length(uint64_t seed, int b, int frames) {
    tandem_rng r = {seed + 0x1234567ull * (uint64_t)(b + 1)};
    int64_t len = tandem_rng_int(&r, 0, frames);
    if (b == 0) len = frames; /* the longest item fills the batch, as a real batch has one */
    return (int)len;
}

/* ---- masked L1: c->i = {B, F, C, planted mask?, mask seed} ---- */
static const int l1_shapes[][3] = {
    {1, 1, 1}, {2, 7, 3}, {3, 19, 80}, {8, 512, 80}, {32, 800, 80}, {-1, 0, 0},
};
#define N_L1 ((int)(sizeof l1_shapes / sizeof l1_shapes[0]))

static int64_t l1_shape(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t B = l1_shapes[idx][0], F = l1_shapes[idx][1], C = l1_shapes[idx][2];
    if (B < 0) {
        B = tandem_rng_int(rng, 1, 6);
        F = tandem_rng_int(rng, 1, 300);
        C = tandem_rng_int(rng, 1, 100);
    }
    c->i[0] = B;
    c->i[1] = F;
    c->i[2] = C;
    c->i[3] = idx % 2 == 1 || B >= 8; /* odd sizes and the real shapes: 0/1 prefix masks */
    c->i[4] = (int64_t)(tandem_rng_next(rng) >> 1);
    snprintf(c->desc, sizeof c->desc, "B=%lld F=%lld C=%lld %s", (long long)B, (long long)F,
             (long long)C, c->i[3] ? "prefix mask" : "random weights");
    tandem_kcase_set_buf(c, 0, "pred", TANDEM_F32, B * F * C, TANDEM_KB_IN, -2.0f, 2.0f);
    tandem_kcase_set_buf(c, 1, "target", TANDEM_F32, B * F * C, TANDEM_KB_IN, -2.0f, 2.0f);
    tandem_kcase_set_buf(c, 2, "mask", TANDEM_F32, B * F, TANDEM_KB_IN, 0.0f, 1.0f);
    return B * F * C;
}

/* Plants the prefix mask (or zeroes a few random weights) and exact ties pred == target. */
static void l1_plant(const tandem_kcase *c, void *const *bufs) {
    int B = (int)c->i[0], F = (int)c->i[1], C = (int)c->i[2];
    const float *target = (const float *)bufs[1];
    float *pred = (float *)bufs[0], *mask = (float *)bufs[2];
    for (int b = 0; b < B; b++) {
        int len = planted_length((uint64_t)c->i[4], b, F);
        for (int f = 0; f < F; f++) {
            float *w = &mask[(int64_t)b * F + f];
            if (c->i[3]) *w = f < len ? 1.0f : 0.0f;
            else if ((b * 31 + f) % 5 == 0) *w = 0.0f;
        }
    }
    for (int64_t i = 0; i < (int64_t)B * F * C; i += 7) pred[i] = target[i];
}

static void l1_fwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = l1_shape(idx, rng, c);
    tandem_kcase_set_buf(c, 3, "partials", TANDEM_F32, tandem_k_train_partials(n), TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-10;
}
static void l1_fwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    l1_plant(c, bufs);
    tandem_k_l1_masked_fwd_args *a = (tandem_k_l1_masked_fwd_args *)args;
    a->pred = (const float *)bufs[0];
    a->target = (const float *)bufs[1];
    a->mask = (const float *)bufs[2];
    a->partials = (float *)bufs[3];
    a->batch = (int)c->i[0];
    a->frames = (int)c->i[1];
    a->channels = (int)c->i[2];
}
const tandem_kcase_spec tandem_kcase_l1_masked_fwd = {N_L1, l1_fwd_make, l1_fwd_bind};

static void l1_bwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = l1_shape(idx, rng, c);
    tandem_kcase_set_buf(c, 3, "dpred", TANDEM_F32, n, TANDEM_KB_OUT, 0, 0);
    c->f[0] = tandem_rng_uniform(rng, 0.5f, 2.0f) / (float)n; /* upstream / count */
    c->tol = 1e-12;
}
static void l1_bwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    l1_plant(c, bufs);
    tandem_k_l1_masked_bwd_args *a = (tandem_k_l1_masked_bwd_args *)args;
    a->pred = (const float *)bufs[0];
    a->target = (const float *)bufs[1];
    a->mask = (const float *)bufs[2];
    a->dpred = (float *)bufs[3];
    a->batch = (int)c->i[0];
    a->frames = (int)c->i[1];
    a->channels = (int)c->i[2];
    a->scale = c->f[0];
}
const tandem_kcase_spec tandem_kcase_l1_masked_bwd = {N_L1, l1_bwd_make, l1_bwd_bind};

/* ---- stop BCE: c->i = {B, F, planted targets?, seed} ----
 * (B, F): one frame; odd; exactly one chunk (8 x 512, the tiny model); two chunks; the base
 * model (32 x 800); random. */
static const int bce_shapes[][2] = {{1, 1}, {3, 37}, {8, 512}, {5, 1000}, {32, 800}, {-1, 0}};
#define N_BCE ((int)(sizeof bce_shapes / sizeof bce_shapes[0]))

static int64_t bce_shape(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t B = bce_shapes[idx][0], F = bce_shapes[idx][1];
    if (B < 0) {
        B = tandem_rng_int(rng, 1, 40);
        F = tandem_rng_int(rng, 1, 1000);
    }
    c->i[0] = B;
    c->i[1] = F;
    c->i[2] = idx != 1; /* one case keeps soft random targets and random weights */
    c->i[3] = (int64_t)(tandem_rng_next(rng) >> 1);
    snprintf(c->desc, sizeof c->desc, "B=%lld F=%lld %s", (long long)B, (long long)F,
             c->i[2] ? "stop targets" : "soft targets");
    tandem_kcase_set_buf(c, 0, "logits", TANDEM_F32, B * F, TANDEM_KB_IN, -12.0f, 12.0f);
    tandem_kcase_set_buf(c, 1, "target", TANDEM_F32, B * F, TANDEM_KB_IN, 0.0f, 1.0f);
    tandem_kcase_set_buf(c, 2, "weight", TANDEM_F32, B * F, TANDEM_KB_IN, 0.0f, 1.0f);
    return B * F;
}

/* Stop targets (1 from the last real frame on) with weight 1 everywhere but a few zeros, and
 * huge logits of both signs on every 13th frame. */
static void bce_plant(const tandem_kcase *c, void *const *bufs) {
    int B = (int)c->i[0], F = (int)c->i[1];
    float *logits = (float *)bufs[0], *target = (float *)bufs[1], *weight = (float *)bufs[2];
    for (int b = 0; b < B; b++) {
        int len = planted_length((uint64_t)c->i[3], b, F);
        for (int f = 0; f < F; f++) {
            int64_t i = (int64_t)b * F + f;
            if (c->i[2]) {
                target[i] = f >= len - 1 ? 1.0f : 0.0f;
                weight[i] = (b + f) % 11 == 3 ? 0.0f : 1.0f;
            }
            if (i % 13 == 5) logits[i] = i % 2 ? 95.0f : -95.0f;
        }
    }
}

static void bce_fwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = bce_shape(idx, rng, c);
    tandem_kcase_set_buf(c, 3, "partials", TANDEM_F32, tandem_k_train_partials(n), TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-10;
}
static void bce_fwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    bce_plant(c, bufs);
    tandem_k_bce_stop_fwd_args *a = (tandem_k_bce_stop_fwd_args *)args;
    a->logits = (const float *)bufs[0];
    a->target = (const float *)bufs[1];
    a->weight = (const float *)bufs[2];
    a->partials = (float *)bufs[3];
    a->batch = (int)c->i[0];
    a->frames = (int)c->i[1];
}
const tandem_kcase_spec tandem_kcase_bce_stop_fwd = {N_BCE, bce_fwd_make, bce_fwd_bind};

static void bce_bwd_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = bce_shape(idx, rng, c);
    tandem_kcase_set_buf(c, 3, "dlogits", TANDEM_F32, n, TANDEM_KB_OUT, 0, 0);
    c->f[0] = tandem_rng_uniform(rng, 0.5f, 2.0f) / (float)n;
    c->tol = 1e-12;
}
static void bce_bwd_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    bce_plant(c, bufs);
    tandem_k_bce_stop_bwd_args *a = (tandem_k_bce_stop_bwd_args *)args;
    a->logits = (const float *)bufs[0];
    a->target = (const float *)bufs[1];
    a->weight = (const float *)bufs[2];
    a->dlogits = (float *)bufs[3];
    a->batch = (int)c->i[0];
    a->frames = (int)c->i[1];
    a->scale = c->f[0];
}
const tandem_kcase_spec tandem_kcase_bce_stop_bwd = {N_BCE, bce_bwd_make, bce_bwd_bind};

/* ---- sum_squares: x [n] → partials ----
 * One element; under one block; one chunk exactly and one past it; the tiny model's largest
 * weight plus a ragged tail; a million elements; random. */
static const int64_t ss_sizes[] = {1, 255, 4096, 4097, 256 * 1024 + 17, 1000003, -1};
#define N_SS ((int)(sizeof ss_sizes / sizeof ss_sizes[0]))

static void ss_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = ss_sizes[idx] > 0 ? ss_sizes[idx] : tandem_rng_int(rng, 2, 50000);
    c->i[0] = n;
    tandem_kcase_set_buf(c, 0, "x", TANDEM_F32, n, TANDEM_KB_IN, -3.0f, 3.0f);
    tandem_kcase_set_buf(c, 1, "partials", TANDEM_F32, tandem_k_train_partials(n), TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-10;
    snprintf(c->desc, sizeof c->desc, "n=%lld", (long long)n);
}
static void ss_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_sum_squares_args *a = (tandem_k_sum_squares_args *)args;
    a->x = (const float *)bufs[0];
    a->partials = (float *)bufs[1];
    a->n = c->i[0];
}
const tandem_kcase_spec tandem_kcase_sum_squares = {N_SS, ss_make, ss_bind};

/* ---- reduce_sum: partials [n] → out [1], nonfinite [1] ----
 * n: one; a partial warp; just past a block; the base model's norm (6000 partials); many
 * trips per thread; random. The flag starts at 7 (neither 0 nor 1): with the flag pointer
 * given both sides must write 0, without it (every other size) both must leave the 7. */
static const int64_t rs_sizes[] = {1, 31, 257, 6000, 100003, -1};
#define N_RS ((int)(sizeof rs_sizes / sizeof rs_sizes[0]))

static void rs_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = rs_sizes[idx] > 0 ? rs_sizes[idx] : tandem_rng_int(rng, 2, 20000);
    c->i[0] = n;
    c->i[1] = idx % 2 == 0; /* flag pointer given */
    c->f[0] = idx == 0 ? 1.0f : tandem_rng_uniform(rng, 1e-4f, 2.0f);
    tandem_kcase_set_buf(c, 0, "partials", TANDEM_F32, n, TANDEM_KB_IN, -0.5f, 1.0f);
    tandem_kcase_set_buf(c, 1, "out", TANDEM_F32, 1, TANDEM_KB_OUT, 0, 0);
    tandem_kcase_set_buf(c, 2, "nonfinite", TANDEM_I32, 1, TANDEM_KB_INOUT, 7.0f, 7.0f);
    c->tol = 1e-10;
    snprintf(c->desc, sizeof c->desc, "n=%lld scale=%g%s", (long long)n, c->f[0],
             c->i[1] ? " flag" : "");
}
static void rs_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_reduce_sum_args *a = (tandem_k_reduce_sum_args *)args;
    a->partials = (const float *)bufs[0];
    a->out = (float *)bufs[1];
    a->nonfinite = c->i[1] ? (int *)bufs[2] : NULL;
    a->n = c->i[0];
    a->scale = c->f[0];
}
const tandem_kcase_spec tandem_kcase_reduce_sum = {N_RS, rs_make, rs_bind};

/* ---- nonfinite_check: x [n] → flag [1] (in/out) ----
 * c->i = {n, where to plant (-1: nowhere), what (0 NaN, 1 +Inf, 2 -Inf), initial flag}.
 * Clean data leaves 0 (and a set flag stays set); a bad value in the first, a middle (past the
 * first block), or the very last element, including one past the grid cap, sets it. */
static const int64_t nf_cases[][4] = {
    {1, -1, 0, 0},         {1, 0, 0, 0},           {1000, 999, 1, 0},         {1000, -1, 0, 1},
    {300000, 123457, 2, 0}, {4096 * 256 + 12345, 4096 * 256 + 12344, 0, 0}, {-1, 0, 0, 0},
};
#define N_NF ((int)(sizeof nf_cases / sizeof nf_cases[0]))

static void nf_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = nf_cases[idx][0], at = nf_cases[idx][1], what = nf_cases[idx][2],
            flag0 = nf_cases[idx][3];
    if (n < 0) {
        n = tandem_rng_int(rng, 2, 100000);
        at = tandem_rng_int(rng, -1, n - 1);
        what = tandem_rng_int(rng, 0, 2);
    }
    c->i[0] = n;
    c->i[1] = at;
    c->i[2] = what;
    /* Large finite values (FLT_MAX range) must not count as non-finite. */
    tandem_kcase_set_buf(c, 0, "x", TANDEM_F32, n, TANDEM_KB_IN, -1.5e38f, 1.5e38f);
    tandem_kcase_set_buf(c, 1, "flag", TANDEM_I32, 1, TANDEM_KB_INOUT, (float)flag0, (float)flag0);
    c->tol = 1e-12;
    static const char *const names[] = {"NaN", "+Inf", "-Inf"};
    if (at < 0)
        snprintf(c->desc, sizeof c->desc, "n=%lld clean flag=%lld", (long long)n, (long long)flag0);
    else
        snprintf(c->desc, sizeof c->desc, "n=%lld %s at %lld", (long long)n, names[what], (long long)at);
}
static void nf_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    float *x = (float *)bufs[0];
    if (c->i[1] >= 0) x[c->i[1]] = c->i[2] == 0 ? NAN : c->i[2] == 1 ? INFINITY : -INFINITY;
    tandem_k_nonfinite_check_args *a = (tandem_k_nonfinite_check_args *)args;
    a->x = x;
    a->flag = (int *)bufs[1];
    a->n = c->i[0];
}
const tandem_kcase_spec tandem_kcase_nonfinite_check = {N_NF, nf_make, nf_bind};

/* ---- adamw: param, grad, m, v [n], norm_sq [1], skip [1] ----
 * Per size a different regime (c->i[1]): 0 plain with decay, 1 clipped without decay, 2 no
 * norm pointer and no clipping, 3 skipped (nothing may change), 4 clipped with decay, 5 norm
 * below max_norm. Step t (bias corrections) is random in 1..2000. */
static const int64_t adamw_sizes[] = {1, 257, 100003, 256 * 1024 + 5, 4096 * 256 + 12345, -1};
#define N_ADAMW ((int)(sizeof adamw_sizes / sizeof adamw_sizes[0]))

static void adamw_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t n = adamw_sizes[idx] > 0 ? adamw_sizes[idx] : tandem_rng_int(rng, 2, 50000);
    int regime = idx;
    int t = (int)tandem_rng_int(rng, 1, 2000);
    float beta1 = 0.9f, beta2 = 0.999f;
    float max_norm = regime == 2 ? 0.0f : 1.0f;
    /* norm_sq: clipped regimes well above max_norm^2, regime 5 below it. */
    float ns_lo = regime == 5 ? 0.01f : 4.0f, ns_hi = regime == 5 ? 0.9f : 400.0f;
    c->i[0] = n;
    c->i[1] = regime;
    c->f[0] = tandem_rng_uniform(rng, 1e-4f, 1e-2f); /* lr */
    c->f[1] = beta1;
    c->f[2] = beta2;
    c->f[3] = 1e-8f;
    c->f[4] = regime == 0 || regime == 4 ? 0.01f : 0.0f; /* weight decay */
    c->f[5] = (float)(1.0 - pow(beta1, t));
    c->f[6] = (float)(1.0 - pow(beta2, t));
    c->f[7] = max_norm;
    tandem_kcase_set_buf(c, 0, "param", TANDEM_F32, n, TANDEM_KB_INOUT, -1.0f, 1.0f);
    tandem_kcase_set_buf(c, 1, "grad", TANDEM_F32, n, TANDEM_KB_IN, -0.05f, 0.05f);
    tandem_kcase_set_buf(c, 2, "m", TANDEM_F32, n, TANDEM_KB_INOUT, -0.01f, 0.01f);
    tandem_kcase_set_buf(c, 3, "v", TANDEM_F32, n, TANDEM_KB_INOUT, 0.0f, 1e-4f);
    tandem_kcase_set_buf(c, 4, "norm_sq", TANDEM_F32, 1, TANDEM_KB_IN, ns_lo, ns_hi);
    tandem_kcase_set_buf(c, 5, "skip", TANDEM_I32, 1, TANDEM_KB_IN, regime == 3 ? 1.0f : 0.0f,
            regime == 3 ? 1.0f : 0.0f);
    /* sched [3]: lr, bias1, bias2 read from the device (train_schedule's output) in the odd
       regimes; the fields then hold wrong values that must not be used */
    tandem_kcase_set_buf(c, 6, "sched", TANDEM_F32, 3, TANDEM_KB_IN, 0.05f, 0.5f);
    c->tol = 1e-12;
    static const char *const names[] = {"decay", "clipped", "no norm", "skipped", "clipped+decay",
                                        "under max_norm"};
    snprintf(c->desc, sizeof c->desc, "n=%lld t=%d %s", (long long)n, t, names[regime]);
}
static void adamw_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_adamw_args *a = (tandem_k_adamw_args *)args;
    a->param = (float *)bufs[0];
    a->grad = (const float *)bufs[1];
    a->m = (float *)bufs[2];
    a->v = (float *)bufs[3];
    a->norm_sq = c->i[1] == 2 ? NULL : (const float *)bufs[4];
    a->skip = (const int *)bufs[5];
    a->n = c->i[0];
    a->lr = c->f[0];
    a->beta1 = c->f[1];
    a->beta2 = c->f[2];
    a->eps = c->f[3];
    a->weight_decay = c->f[4];
    a->bias1 = c->f[5];
    a->bias2 = c->f[6];
    a->max_norm = c->f[7];
    if (c->i[1] & 1) {
        a->sched = (const float *)bufs[6];
        a->lr = a->bias1 = a->bias2 = NAN;
    }
}
const tandem_kcase_spec tandem_kcase_adamw = {N_ADAMW, adamw_make, adamw_bind};

/* ---- train_schedule: norm_sq [1], skip [1], ctr [4] (in/out) → sched [3] ----
 * c->i = {regime: 0 applied, 1 skipped by the flag, 2 skipped by a non-finite norm, 3 in
 * warm-up, 4 past max_steps}. Counters random (step >= updates + skipped), schedule random. */
#define N_SCHED 5
static void sched_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    c->i[0] = idx;
    c->i[1] = tandem_rng_int(rng, 10, 1000);              /* warmup */
    c->i[2] = c->i[1] + tandem_rng_int(rng, 1, 100000);   /* max_steps */
    int64_t step = idx == 3 ? tandem_rng_int(rng, 0, c->i[1] - 1)
                 : idx == 4 ? c->i[2] + tandem_rng_int(rng, 0, 50)
                            : tandem_rng_int(rng, c->i[1], c->i[2]);
    c->i[3] = step;
    c->i[4] = tandem_rng_int(rng, 0, step);               /* updates */
    c->i[5] = tandem_rng_int(rng, 0, 5);                  /* in a row */
    c->f[0] = tandem_rng_uniform(rng, 1e-4f, 1e-2f);      /* lr */
    c->f[1] = tandem_rng_uniform(rng, 0.0f, 0.5f);        /* min_lr_ratio */
    tandem_kcase_set_buf(c, 0, "norm_sq", TANDEM_F32, 1, TANDEM_KB_IN, 0.0f, 100.0f);
    tandem_kcase_set_buf(c, 1, "skip", TANDEM_I32, 1, TANDEM_KB_IN, idx == 1, idx == 1);
    tandem_kcase_set_buf(c, 2, "ctr", TANDEM_I32, TANDEM_K_TRAIN_CTRS, TANDEM_KB_INOUT, 0.0f, 0.0f);
    tandem_kcase_set_buf(c, 3, "sched", TANDEM_F32, 3, TANDEM_KB_OUT, 0.0f, 0.0f);
    c->tol = 0.0; /* integers and the same double formulas: exact (a GPU's cos may differ in the
                     last bit of a double, which float rounding hides) */
    static const char *const names[] = {"applied", "skip flag", "NaN norm", "warm-up", "past max"};
    snprintf(c->desc, sizeof c->desc, "step=%lld %s", (long long)step, names[idx]);
}
static void sched_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_train_schedule_args *a = (tandem_k_train_schedule_args *)args;
    float *ns = (float *)bufs[0];
    if (c->i[0] == 2) ns[0] = NAN;
    int *ctr = (int *)bufs[2];
    ctr[TANDEM_K_TRAIN_CTR_STEP] = (int)c->i[3];
    ctr[TANDEM_K_TRAIN_CTR_UPDATES] = (int)c->i[4];
    ctr[TANDEM_K_TRAIN_CTR_SKIPPED] = (int)(c->i[3] - c->i[4]);
    ctr[TANDEM_K_TRAIN_CTR_IN_ROW] = (int)c->i[5];
    a->norm_sq = ns;
    a->skip = (const int *)bufs[1];
    a->ctr = ctr;
    a->sched = (float *)bufs[3];
    a->lr = c->f[0];
    a->min_lr_ratio = c->f[1];
    a->warmup_steps = c->i[1];
    a->max_steps = c->i[2];
    a->beta1 = 0.9f;
    a->beta2 = 0.999f;
}
const tandem_kcase_spec tandem_kcase_train_schedule = {N_SCHED, sched_make, sched_bind};
