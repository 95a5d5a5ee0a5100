/* launchers.h — the typed launchers of the model's kernels (kernels/layers.h, train.h,
 * attention.h, batch_prep.h): one C function per kernel, the one place its argument struct is
 * filled, so the passes (model_fwd.c, model_bwd.c, attention.c, train_step.c) read as maths.
 *
 * Arguments are device pointers (tandem_tensor_f32 and friends, runtime/core/dev.h) with their
 * shapes in the comments, then the sizes; each launcher queues its kernel on s and returns the
 * launch's status. Semantics (aliasing, accumulation) are the kernel's, restated in one line.
 * Owns nothing; allocates nothing; called by whoever drives s.
 */
#ifndef TANDEM_RUNTIME_MODEL_LAUNCHERS_H
#define TANDEM_RUNTIME_MODEL_LAUNCHERS_H

#include <stdint.h>

#include "runtime/core/launch.h"

/* ---- layers --------------------------------------------------------------------------------- */

/* y [rows, d] = LN(x [rows, d]) * gamma [d] + beta [d]; mean, rstd [rows] saved (eps
 * TANDEM_LAYERNORM_EPS). y may not alias x. Here and below, an output y16 (or NULL) receives
 * bf16(y) for a bf16 GEMM operand, with y NULL when the f32 is not wanted. */
tandem_status tandem_layernorm_fwd(tandem_stream *s, const float *x, const float *gamma,
                                   const float *beta, float *y, tandem_bf16 *y16, float *mean,
                                   float *rstd, int rows, int d);
/* dx [rows, d] = (accumulate: dx +) LN backward of dy [rows, d] (f32, or dy16 bf16 when dy is
 * NULL) at x [rows, d] (mean, rstd [rows], gamma [d]); scratch
 * [tandem_layernorm_bwd_scratch_floats(rows, d)] receives the parameter partials. */
tandem_status tandem_layernorm_bwd(tandem_stream *s, const float *dy, const tandem_bf16 *dy16,
                                   const float *x, const float *mean, const float *rstd,
                                   const float *gamma, float *dx, tandem_bf16 *dx16, int accumulate,
                                   float *scratch, int rows, int d);
/* dgamma, dbeta [d] (and dbias [d] unless NULL: colsum of the dx written) += the partials in
 * scratch of the layernorm_bwd with the same rows, d. */
tandem_status tandem_layernorm_bwd_params(tandem_stream *s, const float *scratch, float *dgamma,
                                          float *dbeta, float *dbias, int rows, int d);
/* y [n] = GELU(x [n]) (tanh form); y may alias x. */
tandem_status tandem_gelu_fwd(tandem_stream *s, const float *x, float *y, tandem_bf16 *y16,
                              int64_t n);
/* dx [n] = dy [n] * GELU'(x [n]); dx may alias dy. */
/* x [n] *= keep(seed, step, micro, i) / (1 - p), in place (kernels/layers.h): the prenet
 * dropout's forward and, with the same counters, its backward. 0 <= p < 1. step_at (or NULL):
 * the device's step counter [1], read instead of step when the launch runs. */
tandem_status tandem_prenet_dropout(tandem_stream *s, float *x, int64_t n, float p, uint64_t seed,
                                    int64_t step, const int *step_at, int64_t micro);
tandem_status tandem_gelu_bwd(tandem_stream *s, const float *dy, const float *x, float *dx,
                              tandem_bf16 *dx16, int64_t n);
/* y [rows, d] += b [d] */
tandem_status tandem_bias_add(tandem_stream *s, float *y, const float *b, int rows, int d);
/* db [d] += sum over rows of dy [rows, d] (fixed order) */
tandem_status tandem_col_sum_acc(tandem_stream *s, const float *dy, float *db, int rows, int d);
/* dst [B, Tt + Tm, d] = 0 on text rows, src [B, Tm, d] on mel rows (kernels/layers.h) */
tandem_status tandem_mel_rows_pad(tandem_stream *s, const float *src, float *dst, int batch,
                                  int text_len, int mel_len, int d);
/* dst [B, Tm, d] = the mel rows of src [B, Tt + Tm, d], f32 (src, dst) or bf16 (src16, dst16). */
tandem_status tandem_mel_rows_take(tandem_stream *s, const float *src, float *dst, const tandem_bf16 *src16,
                                   tandem_bf16 *dst16, int batch, int text_len, int mel_len, int d);
/* The sizes of the input sequence: B items of Tt text tokens then Tm mel positions. */
typedef struct tandem_seq_dims {
    int batch, text_len, mel_len, vocab, d; /* B, Tt, Tm, V, d */
} tandem_seq_dims;

/* x [B, Tt + Tm, d] = [sym_emb [V, d] at tokens [B, Tt]; prenet_out [B, Tm, d]] + pos_emb
 * [Tt + Tm, d] */
tandem_status tandem_seq_embed_fwd(tandem_stream *s, const int32_t *tokens, const float *sym_emb,
                                   const float *prenet_out, const float *pos_emb, float *x,
                                   const tandem_seq_dims *sd);
/* From dx [B, Tt + Tm, d]: d_sym_emb [V, d] +=, d_pos_emb [Tt + Tm, d] +=, d_prenet_out
 * [B, Tm, d] = (overwritten). */
tandem_status tandem_seq_embed_bwd(tandem_stream *s, const float *dx, const int32_t *tokens,
                                   float *d_sym_emb, float *d_pos_emb, float *d_prenet_out,
                                   const tandem_seq_dims *sd);
/* groups [B, Tm, r * n_mels]: group j = frames of group j - 1 of mels [B, Tm * r, n_mels],
 * zeros for j = 0 (teacher forcing). */
tandem_status tandem_prenet_input(tandem_stream *s, const float *mels, float *groups,
                                  tandem_bf16 *groups16, int batch, int mel_len, int r, int n_mels);

/* ---- batch preparation ---------------------------------------------------------------------- */

/* The sizes of a micro-batch's masks: B items, Tt text positions, Tm mel positions of r frames,
 * F = Tm * r frames of `channels` bands. */
typedef struct tandem_batch_dims {
    int batch, text_len, mel_len, r, frames, channels;
} tandem_batch_dims;

/* key_mask [B, Tt + Tm] u8 and l1_weight [B, F] from text_lengths, frame_lengths [B] and
 * frame_mask [B, F] (kernels/batch_prep.h). */
tandem_status tandem_batch_prep(tandem_stream *s, const int32_t *text_lengths,
                                const int32_t *frame_lengths, const float *frame_mask,
                                uint8_t *key_mask, float *l1_weight, const tandem_batch_dims *bd);

/* ---- losses, norm, optimizer -----------------------------------------------------------------
 * Partial sums: tandem_k_train_partials(n) floats for n input elements, then reduce_sum. */

/* partials = chunk sums of |pred - target| * mask [B, F] over pred, target [B, F, channels] */
tandem_status tandem_l1_masked_fwd(tandem_stream *s, const float *pred, const float *target,
                                   const float *mask, float *partials, int batch, int frames,
                                   int channels);
/* dpred [B, F, channels] = scale * sign(pred - target) * mask (overwritten) */
tandem_status tandem_l1_masked_bwd(tandem_stream *s, const float *pred, const float *target,
                                   const float *mask, float *dpred, int batch, int frames,
                                   int channels, float scale);
/* partials = chunk sums of weight * BCE-with-logits(logits, target), all [B, F] */
tandem_status tandem_bce_stop_fwd(tandem_stream *s, const float *logits, const float *target,
                                  const float *weight, float *partials, int batch, int frames);
/* dlogits [B, F] = scale * (sigmoid(logits) - target) * weight (overwritten) */
tandem_status tandem_bce_stop_bwd(tandem_stream *s, const float *logits, const float *target,
                                  const float *weight, float *dlogits, int batch, int frames,
                                  float scale);
/* partials = chunk sums of x [n]^2 */
tandem_status tandem_sum_squares(tandem_stream *s, const float *x, float *partials, int64_t n);
/* out [1] = scale * sum of partials [n] in a fixed order; nonfinite [1] (or NULL) = 1 when out
 * is NaN or ±Inf, else 0. */
tandem_status tandem_reduce_sum(tandem_stream *s, const float *partials, float *out, int *nonfinite,
                                int64_t n, float scale);
/* flag [1] = 1 when any of x [n] is NaN or ±Inf (left as it is otherwise) */
tandem_status tandem_nonfinite_check(tandem_stream *s, const float *x, int *flag, int64_t n);

/* AdamW's scalars for one span (kernels/train.h). */
typedef struct tandem_adamw_hyper {
    float lr, beta1, beta2, eps, weight_decay;
    float bias1, bias2; /* 1 - beta1^t, 1 - beta2^t */
    float max_norm;     /* clip the global norm to this; <= 0: no clipping */
    const float *sched; /* [3] device lr, bias1, bias2 (train_schedule) or NULL: the fields */
} tandem_adamw_hyper;

/* One AdamW step on param, m, v [n] from grad [n], clipped by norm_sq [1], skipped when
 * skip [1] != 0 (either pointer may be NULL). */
tandem_status tandem_adamw(tandem_stream *s, float *param, const float *grad, float *m, float *v,
                           const float *norm_sq, const int *skip, int64_t n,
                           const tandem_adamw_hyper *h);

/* The learning-rate schedule of one step (kernels/train.h, tandem_k_train_lr). */
typedef struct tandem_schedule_hyper {
    double lr, min_lr_ratio;
    int64_t warmup_steps, max_steps;
    float beta1, beta2;
} tandem_schedule_hyper;

/* sched [3] = lr, bias1, bias2 of the step ctr [4] holds; then ctr advanced, skip-aware
 * (skip [1], norm_sq [1]). One thread. */
tandem_status tandem_train_schedule(tandem_stream *s, const float *norm_sq, const int *skip, int *ctr,
                                    float *sched, const tandem_schedule_hyper *h);

/* ---- attention -------------------------------------------------------------------------------
 * Heads layout [B, H, T, dh]; the model width d = H * dh. */

typedef struct tandem_heads_dims {
    int batch, seq, heads, head_dim; /* B, T, H, dh */
} tandem_heads_dims;

/* q, k, v [B, H, T, dh] = the three column blocks of qkv [B, T, 3d], split by head */
tandem_status tandem_qkv_split(tandem_stream *s, const float *qkv, float *q, float *k, float *v,
                               tandem_bf16 *q16, tandem_bf16 *k16, tandem_bf16 *v16,
                               const tandem_heads_dims *hd);
/* dqkv [B, T, 3d] = dq, dk, dv [B, H, T, dh] merged back (the backward of qkv_split) */
tandem_status tandem_qkv_merge_grad(tandem_stream *s, const float *dq, const float *dk,
                                    const float *dv, float *dqkv, tandem_bf16 *dqkv16,
                                    const tandem_heads_dims *hd);
/* y [B, T, d] = o [B, H, T, dh] with the heads side by side */
tandem_status tandem_heads_merge(tandem_stream *s, const float *o, float *y, tandem_bf16 *y16,
                                 const tandem_heads_dims *hd);
/* d_o [B, H, T, dh] = dy [B, T, d] split by head (the backward of heads_merge) */
tandem_status tandem_heads_split_grad(tandem_stream *s, const float *dy, float *d_o,
                                      tandem_bf16 *d_o16, const tandem_heads_dims *hd);
/* p [B, H, nq, T] = softmax over the keys j <= i with key_mask [B, T] != 0 of scores
 * [B, H, nq, T], for the query rows i = q0 .. q0 + nq - 1 of each head (all: 0, T; p may alias
 * scores; bf16 = 1: p written as bf16, never aliasing them) */
tandem_status tandem_softmax_causal_fwd(tandem_stream *s, const float *scores,
                                        const uint8_t *key_mask, void *p, int bf16,
                                        const tandem_heads_dims *hd, int q0, int nq);
/* ds [B, H, T, T] = softmax backward of dp at p; bf16 = 0: p, ds f32 (ds may alias dp);
 * bf16 = 1: p read and ds written as bf16 */
tandem_status tandem_softmax_causal_bwd(tandem_stream *s, const float *dp, const void *p,
                                        void *ds, int bf16, const tandem_heads_dims *hd);

/* ---- guided-attention loss (kernels/attention.h: formula) ---- */
typedef struct tandem_ga_dims {
    int batch, heads, ga_heads, text_len, mel_len; /* B, H, heads under the loss, Tt, Tm */
    float sigma, scale;
} tandem_ga_dims;
/* rows [B, ga_heads, Tm] = scale / Nq * (1 - sum_t p G) per real mel query, from the
 * probabilities p [B, H, T, T] of one layer (f32, or bf16 = 1: the bf16 model's kept p) */
tandem_status tandem_ga_fwd(tandem_stream *s, const void *p, int bf16, const uint8_t *key_mask, float *rows,
                            const tandem_ga_dims *g);
/* dp [B, H, T, T] += -scale / Nq * G on the real mel queries' text keys (before softmax bwd) */
tandem_status tandem_ga_bwd(tandem_stream *s, float *dp, const uint8_t *key_mask,
                            const tandem_ga_dims *g);

/* ---- fused causal attention (kernels/attention.h: layouts, semantics) ----
 * Element c of head h at position t of item b: q, o, dy, dq at (b * q_rows + t - q0) * ld + h *
 * hs + c (o, dy, dq: hs = dh); k, v, dk, dv at (b * T + t) * ld + h * hs + c. */
typedef struct tandem_attn_layout {
    int q0, q_rows; /* the query positions computed (training: 0, T) */
    int ld_q, hs_q; /* q (in the backward also k and v: hs = dh) */
    int ld_k, hs_k; /* k, v (forward) */
    int ld_o;       /* o and dy */
    int ld_g;       /* dq, dk, dv (backward) */
    int bf16;       /* q, k, v and o are bf16 (else f32) */
} tandem_attn_layout;
/* 1 when the tensor-core kernels (kernels/attention_tc.h: bf16, whole sequence, head size a
 * multiple of 16 up to 64) run a fused attention pass of this shape; else the f32-arithmetic
 * attn_fused_* do. */
int tandem_attn_tc_serves(const tandem_heads_dims *hd, const tandem_attn_layout *lay);
/* o = softmax_causal(q k^T / sqrt(dh), key_mask) v per head, lse [B, H, q_rows]; with ga
 * (not NULL): ga_sum, ga_rows [B, ga_heads, Tm] (ga_rows as tandem_ga_fwd writes them). */
tandem_status tandem_attn_fused_fwd(tandem_stream *s, const void *q, const void *k, const void *v,
                                    const uint8_t *key_mask, void *o, float *lse, float *ga_sum,
                                    float *ga_rows, const tandem_heads_dims *hd,
                                    const tandem_attn_layout *lay, const tandem_ga_dims *ga);
/* dq, dk, dv (written) from dy and the forward's o, lse (and ga_sum with ga: the
 * guided-attention gradient with weight ga->scale enters dP before the softmax backward). */
typedef struct tandem_attn_fused_bwd_io {
    const void *q, *k, *v, *o;
    const uint8_t *key_mask;
    const float *dy, *lse, *ga_sum;
    float *dq, *dk, *dv;
    tandem_bf16 *dq16, *dk16, *dv16; /* their bf16 copies (tensor-core kernels only), or NULL */
} tandem_attn_fused_bwd_io;
tandem_status tandem_attn_fused_bwd(tandem_stream *s, const tandem_attn_fused_bwd_io *io,
                                    const tandem_heads_dims *hd, const tandem_attn_layout *lay,
                                    const tandem_ga_dims *ga);

/* ---- the bf16 seams (model.h, "Precision") ---------------------------------------------------
 * In bf16 mode a kernel whose output only feeds GEMMs writes the bf16 tensor itself (its bf16
 * output); one without (the cached synthesis step's) writes an f32 stage that a cast publishes;
 * an f32 gradient that is a GEMM operand is written alongside, or cast, into a bf16 scratch. In
 * fp32 mode each is the f32 tensor itself and no cast runs. */

/* The output pair (y, y16) through which a kernel with a bf16 output writes the GEMM operand
 * t itself: t as f32 (fp32 mode), or t as bf16 with no f32 (bf16 mode): no stage, no cast. */
float *tandem_seam_f32(int bf16, tandem_tensor *t);
tandem_bf16 *tandem_seam_bf16(int bf16, tandem_tensor *t);
/* Where an f32 kernel writes the GEMM operand t: t (fp32), or stage from element off (bf16). */
float *tandem_seam_out(int bf16, tandem_tensor *t, const tandem_tensor *stage, int64_t off);
/* bf16: t [n] = bf16(from [n]) (from is what tandem_seam_out gave); fp32: nothing. */
tandem_status tandem_seam_publish(tandem_stream *s, int bf16, const float *from, tandem_tensor *t,
                                  int64_t n);
/* The f32 gradient g [n] as a GEMM operand *out: g (fp32), or scratch = bf16(g) (bf16). */
tandem_status tandem_seam_operand(tandem_stream *s, int bf16, const tandem_tensor *g,
                                  tandem_tensor *scratch, int64_t n, tandem_view *out);

#endif
