/* layers.h — argument structs of the transformer's layer kernels (issue 5): LayerNorm, GELU,
 * bias add and its gradient, the input sequence embedding and the teacher-forcing prenet input.
 * Device kernels: kernels/layers.cu; launch geometry and host implementations:
 * kernels/layers_host.c. GEMMs are not here: they go through the GEMM op.
 *
 * All f32. Shapes: N rows of width d (N = B * T for the transformer's activations); the
 * sequence is T = Tt text positions followed by Tm mel positions (each predicting r frames).
 *
 * Determinism: every kernel here produces bit-identical results run to run, on the host and on
 * a GPU (no atomics; every sum is taken in an order fixed by the shapes alone).
 *
 * Note for the model: the mel head GEMM's output [B, Tm, r*80] has exactly the memory layout
 * of [B, F, 80] with F = Tm * r (group j's r frames are frames j*r .. j*r+r-1, 80 floats each,
 * contiguous), so it is compared with the target mels without any reshuffling kernel; likewise
 * the stop head's [B, Tm, r] is [B, F].
 */
#ifndef TANDEM_KERNELS_LAYERS_H
#define TANDEM_KERNELS_LAYERS_H

#include <math.h>

#include "kernels/ktypes.h"

/* Threads per block (layers_host.c launches exactly these; layers.cu declares them as launch
 * bounds): element-wise kernels, LayerNorm (a multiple of 32), col_sum_acc's COLS x SLICES. */
#define TANDEM_K_LAYERS_THREADS 256
#define TANDEM_K_LN_THREADS 128
/* layernorm_bwd_params: one warp per block, one column per thread: d / 32 blocks (16 for d = 512,
 * where 256-thread blocks gave 2 of an H100's 132 SMs the whole 2 MB of partials). */
#define TANDEM_K_LN_PARAMS_THREADS 32
#define TANDEM_K_CS_COLS 32
#define TANDEM_K_CS_SLICES 32

/* ---- LayerNorm ------------------------------------------------------------------------
 * y = (x - mean) * rstd * gamma + beta per row, mean and rstd = 1/sqrt(var + eps) saved for
 * the backward (var is the biased variance, as in PyTorch; the model uses eps = 1e-5).
 * One block per row. */
#define TANDEM_LAYERNORM_EPS 1e-5f

typedef struct tandem_k_layernorm_fwd_args {
    const float *x;     /* [N, d] */
    const float *gamma; /* [d] */
    const float *beta;  /* [d] */
    float *y;           /* [N, d]; may not alias x; NULL: only y16 */
    tandem_bf16 *y16;   /* [N, d] bf16(y), the next GEMM's operand; NULL: none */
    float *mean;        /* [N] */
    float *rstd;        /* [N] */
    int rows, d;        /* N, d */
    float eps;
} tandem_k_layernorm_fwd_args;

/* LayerNorm backward in two launches:
 *   layernorm_bwd:        dx = dL/dx (overwritten, or added to) and, per block b, partial sums
 *                         over the rows that block handled: scratch[b, 0, :] = sum dy * xhat,
 *                         scratch[b, 1, :] = sum dy, scratch[b, 2, :] = sum dx as written
 *                         (overwritten);
 *   layernorm_bwd_params: dgamma += sum_b scratch[b, 0, :], dbeta += sum_b scratch[b, 1, :],
 *                         and (dbias not NULL) dbias += sum_b scratch[b, 2, :], b in
 *                         increasing order. The third sum is the column sum of the residual
 *                         gradient the LN wrote: the bias gradient of the linear layer whose
 *                         output that stream is (the model's attention-out and MLP-proj
 *                         biases), so no column-sum pass reads the stream again.
 * Block b handles rows b, b + nb, b + 2 nb, ... with nb = tandem_layernorm_bwd_blocks(N) on
 * every backend, so both the partials and their sum are fixed by the shape: deterministic on
 * the GPU as well, with no atomics. The caller provides the scratch:
 * tandem_layernorm_bwd_scratch_floats(N, d) floats (at most 3 * 512 * d). It is per-step
 * scratch: only read by the following layernorm_bwd_params. */
#define TANDEM_LAYERNORM_BWD_MAX_BLOCKS 512

TANDEM_HD int tandem_layernorm_bwd_blocks(int rows) {
    return rows < 1 ? 1 : (rows < TANDEM_LAYERNORM_BWD_MAX_BLOCKS ? rows : TANDEM_LAYERNORM_BWD_MAX_BLOCKS);
}
TANDEM_HD int64_t tandem_layernorm_bwd_scratch_floats(int rows, int d) {
    return (int64_t)tandem_layernorm_bwd_blocks(rows) * 3 * (int64_t)d;
}

typedef struct tandem_k_layernorm_bwd_args {
    const float *dy;    /* [N, d], or NULL: dy16 */
    const float *x;     /* [N, d] */
    const float *mean;  /* [N] from layernorm_fwd */
    const float *rstd;  /* [N] from layernorm_fwd */
    const float *gamma; /* [d] */
    float *dx;          /* [N, d], overwritten; may not alias dy or x */
    tandem_bf16 *dx16;  /* [N, d] bf16(dx) too (the next linear backward's dy operand), or NULL */
    int accumulate;     /* 1: dx += the gradient (a residual stream's: no add pass after), 0: dx = it */
    float *scratch;     /* [nb, 3, d], overwritten: tandem_layernorm_bwd_scratch_floats(N, d) */
    int rows, d;        /* N, d; the device kernel keeps 3*d floats in dynamic shared memory (opted in
                           above 48 KiB: runtime/core/config.c bounds d_model by it) */
    const tandem_bf16 *dy16; /* [N, d] bf16 when dy is NULL (a bf16 model's dx GEMM output; last,
                                so positional initialisers of the fields above stay valid) */
} tandem_k_layernorm_bwd_args;

typedef struct tandem_k_layernorm_bwd_params_args {
    const float *scratch; /* [nb, 3, d] from layernorm_bwd with the same rows and d */
    float *dgamma;        /* [d], accumulated (+=) */
    float *dbeta;         /* [d], accumulated (+=) */
    float *dbias;         /* [d], accumulated (+=): the column sum of dx; NULL: not wanted */
    int rows, d;          /* N, d of the layernorm_bwd launch (N fixes nb) */
} tandem_k_layernorm_bwd_params_args;

/* ---- GELU, tanh approximation (the one cuBLASLt's GELU epilogue computes) --------------
 * gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
typedef struct tandem_k_gelu_fwd_args {
    const float *x; /* [n] */
    float *y;       /* [n]; may alias x (element-wise); NULL: only y16 */
    tandem_bf16 *y16; /* [n] bf16(y), the next GEMM's operand; NULL: none */
    int64_t n;
} tandem_k_gelu_fwd_args;

/* One definition of the formula and its derivative for the kernel (the gradient test checks
 * it against its own double-precision GELU; the host implementation computes the same forms
 * with its own exp, layers_host.c). Computed through s = 1 / (1 + exp(-2u)) = 0.5 (1 + tanh u)
 * and 1 - tanh^2 u = 4 s (1 - s): the same function, but 1 + tanh u cancels in float for
 * x < -3 (relative error 1e-5 at x = -4.7, 100 % at -5.5), where s does not. Past |x| = 20
 * the derivative is exactly 1 or 0; the guard keeps 0 * inf (x^3 overflowing) out. */
#define TANDEM_GELU_K0 0.7978845608028654f /* sqrt(2/pi) */
#define TANDEM_GELU_K1 0.044715f

TANDEM_HD float tandem_gelu_tanh(float x) {
    float u = TANDEM_GELU_K0 * (x + TANDEM_GELU_K1 * x * x * x);
    return x / (1.0f + expf(-2.0f * u));
}
TANDEM_HD float tandem_gelu_tanh_grad(float x) {
    if (fabsf(x) > 20.0f) return x > 0.0f ? 1.0f : 0.0f;
    float x2 = x * x;
    float s = 1.0f / (1.0f + expf(-2.0f * (TANDEM_GELU_K0 * x * (1.0f + TANDEM_GELU_K1 * x2))));
    return s + 2.0f * x * s * (1.0f - s) * TANDEM_GELU_K0 * (1.0f + 3.0f * TANDEM_GELU_K1 * x2);
}

/* dx = dy * gelu'(x) */
typedef struct tandem_k_gelu_bwd_args {
    const float *dy; /* [n] */
    const float *x;  /* [n], the forward's input */
    float *dx;       /* [n], overwritten; may alias dy (element-wise) */
    tandem_bf16 *dx16; /* [n] bf16(dx) too (the dx/dW GEMMs' operand; dx feeds the bias sum); or NULL */
    int64_t n;
} tandem_k_gelu_bwd_args;

/* ---- bias ------------------------------------------------------------------------------ */
/* y[r, c] += b[c] */
typedef struct tandem_k_bias_add_args {
    float *y;       /* [N, d] */
    const float *b; /* [d] */
    int rows, d;
} tandem_k_bias_add_args;

/* db[c] += sum_r dy[r, c]: the bias gradient. Each column's sum is taken by a fixed tree
 * (strided row slices, then the slices in order), no atomics: deterministic. */
typedef struct tandem_k_col_sum_acc_args {
    const float *dy; /* [N, d] */
    float *db;       /* [d], accumulated (+=) */
    int rows, d;
} tandem_k_col_sum_acc_args;

/* ---- the last block's mel rows ------------------------------------------------------------
 * dst [B, T, d] = 0 on the text rows (t < Tt), src [B, Tm, d] on the mel rows: the gradients of
 * the last block's mel-row part (runtime/model/model_bwd.c) laid over the whole sequence for
 * its attention and LN1 backward. Blocks of TANDEM_K_PAD_THREADS columns x one row (blockIdx.y, looping
 * past the grid's 65535): one division per row, none per element. */
#define TANDEM_K_PAD_THREADS 128
typedef struct tandem_k_mel_rows_pad_args {
    const float *src; /* [B, Tm, d] */
    float *dst;       /* [B, T, d], T = Tt + Tm; overwritten */
    int batch, text_len, mel_len, d;
} tandem_k_mel_rows_pad_args;

/* The inverse gather: dst [B, Tm, d] = src[b, Tt + j, :], f32 (src, dst) or bf16 (src16, dst16;
 * exactly one pair set). The model's last block runs past its attention on the mel rows only (the
 * text rows' outputs reach no loss): its residual input and attention output, taken once.
 * Geometry as mel_rows_pad's, over the B * Tm rows. */
typedef struct tandem_k_mel_rows_take_args {
    const float *src;          /* [B, T, d] or NULL */
    float *dst;                /* [B, Tm, d] or NULL */
    const tandem_bf16 *src16;  /* [B, T, d] or NULL */
    tandem_bf16 *dst16;        /* [B, Tm, d] or NULL */
    int batch, text_len, mel_len, d;
} tandem_k_mel_rows_take_args;

/* ---- input sequence --------------------------------------------------------------------
 * x[b, t, :]      = sym_emb[tokens[b, t], :] + pos_emb[t, :]             t < Tt
 * x[b, Tt + j, :] = prenet_out[b, j, :]      + pos_emb[Tt + j, :]        j < Tm
 * Token ids must lie in [0, V): the data device produces them from the symbol table (the host
 * implementation asserts it; the kernel cannot report an error). */
typedef struct tandem_k_seq_embed_fwd_args {
    const int32_t *tokens;    /* [B, Tt] */
    const float *sym_emb;     /* [V, d] */
    const float *prenet_out;  /* [B, Tm, d] */
    const float *pos_emb;     /* [Tt + Tm, d] */
    float *x;                 /* [B, Tt + Tm, d] */
    int batch, text_len, mel_len, vocab, d; /* B, Tt, Tm, V, d */
} tandem_k_seq_embed_fwd_args;

/* From dx [B, T, d]:
 *   d_sym_emb[v, :]     += sum over (b, t < Tt) with tokens[b, t] == v of dx[b, t, :]
 *   d_pos_emb[t, :]     += sum over b of dx[b, t, :]
 *   d_prenet_out[b, j, :] = dx[b, Tt + j, :]   (overwritten)
 * Determinism: on the device one block per symbol v lists the (b, t) with tokens == v in order
 * (chunk by chunk) and each of its threads adds those rows of its column in that order; one
 * thread per (t, column) sums b in order — nothing depends on thread timing. The host adds the
 * rows in (b, t) order directly into the gradients: also deterministic, a different float
 * rounding than the device's (same as any host-vs-device pair). */
typedef struct tandem_k_seq_embed_bwd_args {
    const float *dx;          /* [B, Tt + Tm, d] */
    const int32_t *tokens;    /* [B, Tt] */
    float *d_sym_emb;         /* [V, d], accumulated (+=) */
    float *d_pos_emb;         /* [Tt + Tm, d], accumulated (+=) */
    float *d_prenet_out;      /* [B, Tm, d], overwritten */
    int batch, text_len, mel_len, vocab, d; /* B, Tt, Tm, V, d */
} tandem_k_seq_embed_bwd_args;

/* ---- prenet input: teacher forcing shift -----------------------------------------------
 * groups[b, j, :] = the r frames of group j - 1, i.e. mels[b, (j-1)*r .. j*r-1, :] flattened
 * (r * n_mels floats), and zeros for j = 0. F = Tm * r. Input data: no backward. */
typedef struct tandem_k_prenet_input_args {
    const float *mels; /* [B, F, n_mels] */
    float *groups;     /* [B, Tm, r * n_mels]; NULL: only groups16 */
    tandem_bf16 *groups16; /* [B, Tm, r * n_mels] bf16(groups), the prenet's operand, or NULL */
    int batch, mel_len, r, n_mels; /* B, Tm, r, n_mels (80) */
} tandem_k_prenet_input_args;

/* ---- prenet dropout (DESIGN.md §7) ------------------------------------------------------
 * x[i] = x[i] * scale where element i is kept, 0 where dropped (in place); the same call with
 * the same counter applies the same mask to the gradient in the backward. Element i of
 * micro-batch `micro` of optimizer step `step` is dropped when u < p, u = the top 24 bits of
 * tandem_k_dropout_hash(seed, step, micro, i) / 2^24: counter-based, so the mask depends on
 * nothing but these four numbers — not on the backend, the thread count or how a range is
 * split — and a resumed run draws the masks the straight run drew. scale = 1 / (1 - p)
 * (inverted dropout: the expected output equals the input, so synthesis runs without it). */
typedef struct tandem_k_prenet_dropout_args {
    float *x;                 /* [n], in place */
    int64_t n;
    float p;                  /* drop probability, 0 <= p < 1 */
    float scale;              /* 1 / (1 - p), rounded once on the host */
    uint64_t seed;            /* the run's seed */
    int64_t step;             /* optimizer step (0-based, checkpointed) */
    int64_t micro;            /* micro-batch within the step */
    const int *step_at;       /* [1] or NULL: the step is step_at[0] (the device's step counter,
                                 kernels/train.h), so a captured step (CUDA graph) draws each
                                 step's own mask; `step` is then ignored */
} tandem_k_prenet_dropout_args;

/* SplitMix64's finaliser: a bijective 64-bit mix. */
TANDEM_HD uint64_t tandem_k_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* The counter hash of element i: the four counters folded one after another through the mix;
 * the first three folds are the call's (dropout_base), so a loop takes them once. */
TANDEM_HD uint64_t tandem_k_dropout_base(uint64_t seed, int64_t step, int64_t micro) {
    uint64_t h = tandem_k_mix64(seed ^ 0x9e3779b97f4a7c15ull);
    h = tandem_k_mix64(h ^ (uint64_t)step);
    return tandem_k_mix64(h ^ (uint64_t)micro);
}
TANDEM_HD uint64_t tandem_k_dropout_hash(uint64_t seed, int64_t step, int64_t micro, int64_t i) {
    return tandem_k_mix64(tandem_k_dropout_base(seed, step, micro) ^ (uint64_t)i);
}
/* 1 when element i is kept, from its call's base. */
TANDEM_HD int tandem_k_dropout_keep_at(uint64_t base, int64_t i, float p) {
    const float u = (float)(tandem_k_mix64(base ^ (uint64_t)i) >> 40) * (1.0f / 16777216.0f);
    return u >= p;
}
TANDEM_HD int tandem_k_dropout_keep(uint64_t seed, int64_t step, int64_t micro, int64_t i, float p) {
    return tandem_k_dropout_keep_at(tandem_k_dropout_base(seed, step, micro), i, p);
}

#endif
