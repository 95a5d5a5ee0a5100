/* model_bwd.c — the backward pass of one micro-batch (see model.h): from the loss gradients
 * dmel, dstop (tandem_model_loss) back to every parameter. Parameter gradients are accumulated
 * (+=) so micro-batches add up; activation gradients are overwritten. N = B * T, Np = B * Tm.
 *
 * Linear layers (W [out, in]): y = x W^T + b  ⇒  dx = dy W,  dW += dy^T x,  db += colsum(dy).
 * bf16 mode (model.h, "Precision"): dy's bf16 copy in the operand scratch gbf feeds the two
 * GEMMs: written by dy's producer itself where it can (GELU's backward, the residual's axpy, the
 * attention's qkv merge: "staged"), else cast there first; x is the saved bf16 activation and W
 * the bf16 weight copy; dx and dW are f32. */
#include <string.h>

#include "platform/os/log.h"
#include "runtime/model/launchers.h"
#include "runtime/model/model.h"

#define F32(t) tandem_tensor_f32(t)
#define VIEW(t) tandem_view_of(t)

/* dy [n] as a GEMM operand: itself (f32 in fp32 mode; a bf16 dy is its own operand), or in bf16
 * mode its bf16 copy in gbf (cast there unless its producer already wrote it: staged). */
static tandem_status operand(tandem_model *m, tandem_stream *s, const tandem_tensor *dy, int64_t n,
                             int staged, tandem_view *out) {
    if (tandem_tensor_dtype(dy) == TANDEM_BF16) {
        *out = VIEW(dy);
        return TANDEM_OK;
    }
    if (m->dims.bf16 && staged) {
        *out = VIEW(m->gbf);
        return TANDEM_OK;
    }
    return tandem_seam_operand(s, m->dims.bf16, dy, m->gbf, n, out);
}

/* Where a producer of a linear layer's dy also writes its bf16 operand: gbf (bf16), or NULL. */
static tandem_bf16 *staged16(const tandem_model *m) {
    return m->dims.bf16 ? tandem_tensor_bf16(m->gbf) : NULL;
}

/* dW [out, in] += dy^T x over rows, and (b a parameter) db [out] += colsum(dy): the GEMM's
 * BGRAD epilogue writes colsum(dy) into the scratch cs_partial (it writes, the gradients
 * accumulate), added by a one-chunk col_sum_acc; no pass re-reads dy for it. b < 0
 * (NO_BIAS_GRAD): none here (the LayerNorm backward that wrote dy summed it). */
#define NO_BIAS_GRAD (-1)
static tandem_status weight_grad(tandem_model *m, tandem_stream *s, int w, int b, int64_t rows, int64_t in,
                                 int64_t out, tandem_view dyo, tandem_view x) {
    const tandem_model_dims *d = &m->dims;
    if (b < 0) {
        const tandem_gemm_desc g = tandem_model_desc_linear_dw(d, rows, in, out);
        return tandem_dev_gemm(s, &g, 1.0f, dyo, x, 1.0f, tandem_model_grad_view(m, w));
    }
    const tandem_gemm_desc g = tandem_model_desc_linear_dw_bgrad(d, rows, in, out);
    TANDEM_TRY(tandem_dev_gemm_epi(s, &g, 1.0f, dyo, x, 1.0f, tandem_model_grad_view(m, w), VIEW(m->cs_partial)));
    return tandem_col_sum_acc(s, F32(m->cs_partial), tandem_model_grad_f32(m, b), 1, (int)out);
}

/* A linear layer's weight and bias gradients from dy [rows, out] and its input x [rows, in]:
 * dW [out, in] += dy^T x,  db [out] += colsum(dy);  and (dx not NULL) dx [rows, in] = dy W, in
 * dx's type (bf16: a LayerNorm backward's dy, tandem_model_desc_ln_dx).
 * staged: dy's producer wrote its bf16 operand into gbf (bf16 mode). */
static tandem_status linear_bwd(tandem_model *m, tandem_stream *s, int w, int b, int64_t rows,
                                int64_t in, int64_t out, const tandem_tensor *dy, int staged,
                                const tandem_tensor *x, tandem_tensor *dx) {
    const tandem_model_dims *d = &m->dims;
    tandem_view dyo;
    TANDEM_TRY(operand(m, s, dy, rows * out, staged, &dyo));
    TANDEM_TRY(weight_grad(m, s, w, b, rows, in, out, dyo, VIEW(x)));
    if (!dx) return TANDEM_OK;
    const tandem_gemm_desc g = (tandem_tensor_dtype(dx) == TANDEM_BF16 ? tandem_model_desc_ln_dx
                                                                        : tandem_model_desc_linear_dx)(d, rows, in, out);
    return tandem_dev_gemm(s, &g, 1.0f, dyo, tandem_model_weight(m, w), 0.0f, VIEW(dx));
}

/* dff [rows, 4d] = (res [rows, d] Wproj) GELU'(f): the proj's dx GEMM with the DGELU epilogue
 * (aux: the forward's f), after linear_bwd used res's operand for the proj's dW. */
static tandem_status mlp_dgelu(tandem_model *m, tandem_stream *s, const tandem_model_layer *ly,
                               const tandem_tensor *res, int64_t rows) {
    const tandem_model_dims *d = &m->dims;
    tandem_view dyo;
    TANDEM_TRY(operand(m, s, res, rows * d->d, 1, &dyo));
    const tandem_gemm_desc g = tandem_model_desc_mlp_proj_dx(d, rows, d->ff, d->d);
    return tandem_dev_gemm_aux(s, &g, 1.0f, dyo, tandem_model_weight(m, m->lp[ly - m->layer].proj_w), 0.0f,
                               VIEW(m->dff), NULL, VIEW(ly->f));
}

/* dx [rows, d] (accumulate: dx +)= LN backward of dy [rows, d] (f32 or bf16) at x (mean, rstd [rows]); dgamma, dbeta
 * += their parts. dx16 (or NULL): bf16(dx) too, for a linear backward that takes dx as its dy.
 * bias (a parameter, or NO_BIAS_GRAD): += colsum(dx as written), the bias gradient of the
 * linear layer that produced the residual stream dx is the gradient of, summed on the way. */
static tandem_status layernorm_bwd(tandem_model *m, tandem_stream *s, const tandem_tensor *dy,
                                   const tandem_tensor *x, const tandem_tensor *mean,
                                   const tandem_tensor *rstd, int g, int b, tandem_tensor *dx,
                                   tandem_bf16 *dx16, int accumulate, int bias, int64_t rows) {
    const int N = (int)rows, D = m->dims.d;
    float *scratch = F32(m->ln_scratch);
    const int b16 = tandem_tensor_dtype(dy) == TANDEM_BF16;
    TANDEM_TRY(tandem_layernorm_bwd(s, b16 ? NULL : F32(dy), b16 ? tandem_tensor_bf16(dy) : NULL,
                                    F32(x), F32(mean), F32(rstd), tandem_model_param_f32(m, g), F32(dx), dx16,
                                    accumulate, scratch, N, D));
    return tandem_layernorm_bwd_params(s, scratch, tandem_model_grad_f32(m, g), tandem_model_grad_f32(m, b),
                                       bias >= 0 ? tandem_model_grad_f32(m, bias) : NULL, N, D);
}

/* dqkv [B, T, 3d] from da = d att [B, T, d] (runtime/model/attention.c, the model's precision). */
static tandem_status attention_bwd(tandem_model *m, tandem_stream *s, tandem_model_layer *ly) {
    const tandem_model_dims *d = &m->dims;
    /* the guided-attention gradient: weight x grad_scale, over heads and layers (ga_fwd's scale) */
    const tandem_ga_dims ga = {d->batch, d->heads, m->ga.heads, d->text_len, d->mel_len, m->ga.sigma,
                               (float)((double)m->ga.grad_scale / ((double)m->ga.heads * d->layers))};
    tandem_attention_bwd_io io;
    memset(&io, 0, sizeof io);
    if (m->ga.heads > 0 && m->ga.grad_scale != 0.0f) io.ga = &ga;
    io.key_mask = m->key_mask;
    io.dy = m->da;
    /* fused: what the forward kept */
    io.qkv_op = ly->qkv, io.y = ly->att, io.lse = ly->lse;
    io.ga_sum = ly->ga_sum ? tandem_tensor_f32(ly->ga_sum) : NULL;
    io.q = ly->q, io.k = ly->k, io.v = ly->v, io.p = ly->p;
    io.d_o = m->d_o, io.dp = m->dp, io.dq = m->dq, io.dk = m->dk, io.dv = m->dv;
    io.dqkv = m->dqkv;
    io.operand = m->gbf; /* bf16 mode only (NULL in fp32) */
    /* bf16: the qkv merge (materialised) or the tensor-core backward writes the QKV
     * projection's dy operand instead (gbf, after its last use as dS): no f32 dqkv */
    if (tandem_model_dqkv_bf16(m)) io.dqkv_op = m->gbf, io.dqkv = NULL;
    return tandem_attention_bwd(s, &m->attn, &io);
}


/* Where a dx GEMM writes a LayerNorm backward's dy: bf16 mode, da16 (half the bytes written and
 * read); else the f32 scratch a itself. */
static tandem_tensor *ln_dy(const tandem_model *m, tandem_tensor *a) {
    return m->da16 ? m->da16 : a;
}

/* Block l backward. On entry dres = dL/d(block output), and in bf16 mode gbf = bf16(dres)
 * (block l + 1's residual add, or the final LN's backward, wrote it); on exit dres = dL/d(block
 * input). */
static tandem_status block_bwd(tandem_model *m, tandem_stream *s, int l) {
    const tandem_model_dims *d = &m->dims;
    const tandem_model_layer_params *lp = &m->lp[l];
    tandem_model_layer *ly = &m->layer[l];
    const int64_t N = (int64_t)d->batch * d->seq, D = d->d, Nr = tandem_model_mlp_rows(d, l);
    /* the last block's part past its attention has the mel rows only: its residual gradient and
     * scratch are dres_mel, da_mel, laid over the whole sequence (zero text rows) after it */
    const int mel = Nr < N;
    tandem_tensor *res = mel ? m->dres_mel : m->dres, *a = mel ? m->da_mel : m->da;

    /* MLP: out = x_mid + GELU(f) Wproj^T + bproj,  f = h2 Wfc^T + bfc,  h2 = LN2(x_mid)
     * dff [Nr, 4d] = df = (res Wproj) GELU'(f): the proj's dx GEMM with the DGELU epilogue, in
     * the model's precision (bf16 mode: the fc backward's operand itself);  a [Nr, d] = dh2;
     * res += d x_mid through LN2 (accumulated by the LN backward) */
    /* the proj's bias gradient colsum(res) was summed by the LN backward that wrote res */
    TANDEM_TRY(linear_bwd(m, s, lp->proj_w, NO_BIAS_GRAD, Nr, d->ff, D, res, 1, ly->g, NULL));
    TANDEM_TRY(mlp_dgelu(m, s, ly, res, Nr));
    TANDEM_TRY(linear_bwd(m, s, lp->fc_w, lp->fc_b, Nr, D, d->ff, m->dff, 1, ly->h2, ln_dy(m, a)));
    /* the residual: res += d x_mid through LN2, accumulated by the LN backward itself, which
     * writes the bf16 copy the next linear backward takes as dy, and sums it for bo */
    TANDEM_TRY(layernorm_bwd(m, s, ln_dy(m, a), ly->x_mid, ly->mean2, ly->rstd2, lp->ln2_g, lp->ln2_b, res,
                             staged16(m), 1, lp->out_b, Nr));

    /* Attention: x_mid = x + att Wo^T + bo,  att = MHA(qkv),  qkv = h1 Wqkv^T + bqkv
     * a [Nr, d] = d att;  dqkv [N, 3d];  da = dh1;  dres = d x through LN1 (db) */
    TANDEM_TRY(linear_bwd(m, s, lp->out_w, NO_BIAS_GRAD, Nr, D, D, res, 1, mel ? ly->att_mel : ly->att, a));
    if (mel) { /* d att and dres over the whole sequence: zero on the text rows */
        TANDEM_TRY(tandem_mel_rows_pad(s, F32(a), F32(m->da), d->batch, d->text_len, d->mel_len, (int)D));
        TANDEM_TRY(tandem_mel_rows_pad(s, F32(res), F32(m->dres), d->batch, d->text_len, d->mel_len, (int)D));
    }
    TANDEM_TRY(attention_bwd(m, s, ly));
    const int dqkv16 = tandem_model_dqkv_bf16(m); /* dy: the bf16 gbf itself (its own operand) */
    TANDEM_TRY(linear_bwd(m, s, lp->qkv_w, lp->qkv_b, N, D, 3 * D, dqkv16 ? m->gbf : m->dqkv, dqkv16,
                          ly->h1, ln_dy(m, m->da)));
    /* block 0's dres feeds the embedding: f32 only; block l - 1's proj bias gradient is its sum */
    return layernorm_bwd(m, s, ln_dy(m, m->da), ly->x, ly->mean1, ly->rstd1, lp->ln1_g, lp->ln1_b, m->dres,
                         l > 0 ? staged16(m) : NULL, 1, l > 0 ? m->lp[l - 1].proj_b : NO_BIAS_GRAD, N);
}

/* Heads: mel_out = hf Wmel^T + bmel, stop_out = hf Wstop^T + bstop on the final LN's Np mel
 * rows. Per head: dW += dy^T hf and db (the GEMM's BGRAD epilogue), dhf (+)= dy W (the stop
 * head adds to the mel head's). */
static tandem_status heads_bwd(tandem_model *m, tandem_stream *s) {
    const tandem_model_dims *d = &m->dims;
    const int64_t Np = (int64_t)d->batch * d->mel_len, D = d->d;
    const int head_w[2] = {m->top.mel_w, m->top.stop_w}, head_b[2] = {m->top.mel_b, m->top.stop_b};
    const int64_t head_out[2] = {d->group, d->r};
    const tandem_tensor *head_dy[2] = {m->dmel, m->dstop};
    for (int h = 0; h < 2; h++) {
        const int64_t out = head_out[h];
        tandem_view dyo;
        TANDEM_TRY(operand(m, s, head_dy[h], Np * out, 0, &dyo));
        TANDEM_TRY(weight_grad(m, s, head_w[h], head_b[h], Np, D, out, dyo, VIEW(m->hf)));
        const tandem_gemm_desc g = tandem_model_desc_linear_dx(d, Np, D, out);
        TANDEM_TRY(tandem_dev_gemm(s, &g, 1.0f, dyo, tandem_model_weight(m, head_w[h]), h ? 1.0f : 0.0f,
                                   VIEW(m->dhf)));
    }
    return TANDEM_OK;
}

/* Stage k's gradients are final: tell the hook (data-parallel starts their all-reduce). */
static tandem_status stage_final(tandem_model *m, tandem_stream *s, int k) {
    if (!m->grads_final) return TANDEM_OK;
    return tandem_model_grad_stage(m, k, m->grads_final, m->grads_final_ctx, s);
}

tandem_status tandem_model_backward(tandem_model *m, tandem_stream *s,
                                    const tandem_model_batch *b) {
    if (!m || !s) return tandem_fail(TANDEM_E_INVALID, "model backward: NULL argument");
    if (m->dims.forward_only)
        return tandem_fail(TANDEM_E_STATE, "model backward: the model was declared forward_only");
    TANDEM_TRY(tandem_model_use_frames(m, b ? b->frames : 0)); /* the batch's shape class */
    TANDEM_TRY(tandem_model_check_batch(m, b));
    const tandem_model_dims *d = &m->dims;
    const int64_t Np = (int64_t)d->batch * d->mel_len, D = d->d;

    TANDEM_TRY(heads_bwd(m, s));
    /* Final LN (mel rows): dres_mel = LN_f backward (the first write of the residual gradient),
     * and its bf16 operand for the last block's first linear backward */
    TANDEM_TRY(layernorm_bwd(m, s, m->dhf, m->x_out, m->meanf, m->rstdf, m->top.lnf_g, m->top.lnf_b,
                             m->dres_mel, staged16(m), 0, m->lp[d->layers - 1].proj_b, Np));
    TANDEM_TRY(stage_final(m, s, 0));
    for (int l = d->layers - 1; l >= 0; l--) {
        TANDEM_TRY(block_bwd(m, s, l));
        TANDEM_TRY(stage_final(m, s, d->layers - l));
    }

    /* Embedding: d_sym_emb, d_pos_emb +=; dpre [B, Tm, d] = dres at the mel rows */
    const tandem_seq_dims sd = {d->batch, d->text_len, d->mel_len, d->vocab, d->d};
    TANDEM_TRY(tandem_seq_embed_bwd(s, F32(m->dres), tandem_tensor_i32(b->tokens),
                                    tandem_model_grad_f32(m, m->top.sym_emb),
                                    tandem_model_grad_f32(m, m->top.pos_emb), F32(m->dpre), &sd));
    /* Prenet: pre_act = dropout(GELU(pre)), pre = groups Wp^T + bp (groups are data: no dx);
     * the dropout's backward is the same mask and scale, from the same counters */
    if (m->drop.p > 0.0f)
        TANDEM_TRY(tandem_prenet_dropout(s, F32(m->dpre), Np * D, m->drop.p, m->drop.seed,
                                         m->drop.step, m->drop.step_at, m->drop.micro));
    TANDEM_TRY(tandem_gelu_bwd(s, F32(m->dpre), F32(m->pre), F32(m->dpre), staged16(m), Np * D));
    TANDEM_TRY(linear_bwd(m, s, m->top.prenet_w, m->top.prenet_b, Np, d->group, D, m->dpre, 1, m->groups,
                          NULL));
    return stage_final(m, s, d->layers + 1);
}
