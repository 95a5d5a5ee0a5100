/* model_bwd.c — the backward pass of one micro-batch (see model.h): from the loss gradients
 * dmel, dstop (tandem_model_loss) back to every parameter. Parameter gradients are accumulated
 * (+=) so micro-batches add up; activation gradients are overwritten. N = B * T, Np = B * Tm.
 *
 * Linear layers (W [out, in]): y = x W^T + b  ⇒  dx = dy W,  dW += dy^T x,  db += colsum(dy).
 * bf16 mode (model.h, "Precision"): dy is cast into the bf16 operand scratch gbf before the
 * two GEMMs; x is the saved bf16 activation and W the bf16 weight copy; dx and dW are f32. */
#include <string.h>

#include "runtime/core/launch.h"
#include "platform/os/log.h"
#include "runtime/model/model.h"

#define ADDR(t) tandem_tensor_addr(t)
#define F32(addr) ((float *)(uintptr_t)(addr))
#define CF32(t) ((const float *)(uintptr_t)tandem_tensor_addr(t))
#define MF32(t) ((float *)(uintptr_t)tandem_tensor_addr(t))

static tandem_status gemm(tandem_stream *s, const tandem_gemm_desc *g, float alpha, tandem_dptr a,
                          tandem_dptr b, float beta, tandem_dptr c) {
    return s->dev->ops->gemm(s, g, alpha, a, b, beta, c);
}

/* db [cols] += sum over rows of dy [rows, cols] */
static tandem_status col_sum(tandem_stream *s, tandem_dptr dy, tandem_dptr db, int64_t rows,
                             int64_t cols) {
    tandem_k_col_sum_acc_args a;
    memset(&a, 0, sizeof a);
    a.dy = (const float *)(uintptr_t)dy;
    a.db = F32(db);
    a.rows = (int)rows;
    a.d = (int)cols;
    return TANDEM_LAUNCH(s, col_sum_acc, &a);
}

/* dy [n] (f32) as a GEMM operand: itself, or in bf16 mode its bf16 cast in gbf. */
static tandem_status operand(tandem_model *m, tandem_stream *s, tandem_dptr dy, int64_t n,
                             tandem_dptr *out) {
    if (!m->dims.bf16) {
        *out = dy;
        return TANDEM_OK;
    }
    *out = ADDR(m->gbf);
    return tandem_model_cast_bf16(s, dy, *out, n);
}

/* A linear layer's weight and bias gradients and (when dx != 0) its input gradient. */
static tandem_status linear_bwd(tandem_model *m, tandem_stream *s, int w_idx, int b_idx,
                                int64_t rows, int64_t in, int64_t out, tandem_dptr dy,
                                tandem_dptr x, tandem_dptr dx) {
    const tandem_model_dims *d = &m->dims;
    TANDEM_TRY(col_sum(s, dy, tandem_model_grad_addr(m, b_idx), rows, out));
    tandem_dptr dyo;
    TANDEM_TRY(operand(m, s, dy, rows * out, &dyo));
    tandem_gemm_desc g = tandem_model_desc_linear_dw(d, rows, in, out);
    TANDEM_TRY(gemm(s, &g, 1.0f, dyo, x, 1.0f, tandem_model_grad_addr(m, w_idx)));
    if (!dx) return TANDEM_OK;
    g = tandem_model_desc_linear_dx(d, rows, in, out);
    return gemm(s, &g, 1.0f, dyo, tandem_model_weight_addr(m, w_idx), 0.0f, dx);
}

/* dx = LN backward of dy; dgamma, dbeta += their parts. */
static tandem_status layernorm_bwd(tandem_model *m, tandem_stream *s, tandem_dptr dy,
                                   const tandem_tensor *x, const tandem_tensor *mean,
                                   const tandem_tensor *rstd, int g_idx, int b_idx, tandem_dptr dx) {
    const tandem_model_dims *d = &m->dims;
    tandem_k_layernorm_bwd_args a;
    memset(&a, 0, sizeof a);
    a.dy = (const float *)(uintptr_t)dy;
    a.x = CF32(x);
    a.mean = CF32(mean);
    a.rstd = CF32(rstd);
    a.gamma = F32(tandem_model_param_addr(m, g_idx));
    a.dx = F32(dx);
    a.scratch = MF32(m->ln_scratch);
    a.rows = d->batch * d->seq;
    a.d = d->d;
    TANDEM_TRY(TANDEM_LAUNCH(s, layernorm_bwd, &a));
    tandem_k_layernorm_bwd_params_args p;
    memset(&p, 0, sizeof p);
    p.scratch = CF32(m->ln_scratch);
    p.dgamma = F32(tandem_model_grad_addr(m, g_idx));
    p.dbeta = F32(tandem_model_grad_addr(m, b_idx));
    p.rows = a.rows;
    p.d = a.d;
    return TANDEM_LAUNCH(s, layernorm_bwd_params, &p);
}

static tandem_status attention_f32_bwd(tandem_model *m, tandem_stream *s, tandem_model_layer *ly);

/* Block l backward. On entry dres = dL/d(block output); on exit dres = dL/d(block input). */
static tandem_status block_bwd(tandem_model *m, tandem_stream *s, int l) {
    const tandem_model_dims *d = &m->dims;
    const tandem_model_layer_params *lp = &m->lp[l];
    tandem_model_layer *ly = &m->layer[l];
    const int64_t N = (int64_t)d->batch * d->seq, D = d->d;

    /* MLP: out = x_mid + GELU(f) Wproj^T + bproj,  f = h2 Wfc^T + bfc,  h2 = LN2(x_mid) */
    TANDEM_TRY(linear_bwd(m, s, lp->proj_w, lp->proj_b, N, d->ff, D, ADDR(m->dres), ADDR(ly->g),
                          ADDR(m->dff)));                                 /* dff = dg [N, 4d] */
    tandem_k_gelu_bwd_args gb;
    memset(&gb, 0, sizeof gb);
    gb.dy = CF32(m->dff);
    gb.x = CF32(ly->f);
    gb.dx = MF32(m->dff);
    gb.n = N * d->ff;
    TANDEM_TRY(TANDEM_LAUNCH(s, gelu_bwd, &gb));                          /* dff = df */
    TANDEM_TRY(linear_bwd(m, s, lp->fc_w, lp->fc_b, N, D, d->ff, ADDR(m->dff), ADDR(ly->h2),
                          ADDR(m->da)));                                  /* da = dh2 [N, d] */
    TANDEM_TRY(layernorm_bwd(m, s, ADDR(m->da), ly->x_mid, ly->mean2, ly->rstd2, lp->ln2_g,
                             lp->ln2_b, ADDR(m->db)));
    TANDEM_TRY(tandem_op_axpy(s, 1.0f, m->db, m->dres));                  /* dres = d x_mid */

    /* Attention: x_mid = x + att Wo^T + bo,  att = MHA(qkv),  qkv = h1 Wqkv^T + bqkv */
    TANDEM_TRY(linear_bwd(m, s, lp->out_w, lp->out_b, N, D, D, ADDR(m->dres), ADDR(ly->att),
                          ADDR(m->da)));                                  /* da = d att */
    if (d->bf16) TANDEM_TRY(tandem_model_attention_bwd_bf16(m, s, l));
    else TANDEM_TRY(attention_f32_bwd(m, s, ly));                         /* dqkv [N, 3d] */
    TANDEM_TRY(linear_bwd(m, s, lp->qkv_w, lp->qkv_b, N, D, 3 * D, ADDR(m->dqkv), ADDR(ly->h1),
                          ADDR(m->da)));                                  /* da = dh1 */
    TANDEM_TRY(layernorm_bwd(m, s, ADDR(m->da), ly->x, ly->mean1, ly->rstd1, lp->ln1_g, lp->ln1_b,
                             ADDR(m->db)));
    return tandem_op_axpy(s, 1.0f, m->db, m->dres);                       /* dres = d x */
}

/* fp32 attention backward: runtime/model/attention.c on the block's tensors, da → dqkv. */
static tandem_status attention_f32_bwd(tandem_model *m, tandem_stream *s, tandem_model_layer *ly) {
    tandem_attention_bwd_io io;
    memset(&io, 0, sizeof io);
    io.dy = ADDR(m->da);
    io.q = ADDR(ly->q);
    io.k = ADDR(ly->k);
    io.v = ADDR(ly->v);
    io.p = ADDR(ly->p);
    io.d_o = ADDR(m->d_o);
    io.dp = ADDR(m->dp);
    io.dq = ADDR(m->dq);
    io.dk = ADDR(m->dk);
    io.dv = ADDR(m->dv);
    io.dqkv = ADDR(m->dqkv);
    return tandem_attention_bwd(s, &m->attn, &io);
}

tandem_status tandem_model_backward(tandem_model *m, tandem_stream *s, const tandem_model_batch *b) {
    if (!m || !s) return tandem_fail(TANDEM_E_INVALID, "model backward: NULL argument");
    if (m->dims.forward_only)
        return tandem_fail(TANDEM_E_STATE, "model backward: the model was declared forward_only");
    TANDEM_TRY(tandem_model_check_batch(m, b));
    const tandem_model_dims *d = &m->dims;
    const int64_t Np = (int64_t)d->batch * d->mel_len, T = d->seq, D = d->d;
    const size_t fsz = sizeof(float);

    /* Heads: mel_out = hf_mel Wmel^T + bmel, stop_out = hf_mel Wstop^T + bstop on the mel rows
     * hf[b, Tt:T, :]; the text rows get no gradient from them (dhf zero there). Per head:
     * dhf_mel (+)= dy W (the stop head adds to the mel head's), db, then dW += sum over items
     * of dy_b^T [out, Tm] hf_mel_b [Tm, d], items in order (deterministic; one GEMM cannot sum
     * over the batch because the mel rows are strided). */
    TANDEM_TRY(tandem_op_fill(s, m->dhf, 0.0f));
    const tandem_dptr dhf_mel = ADDR(m->dhf) + (tandem_dptr)d->text_len * D * fsz;
    const size_t esz = d->bf16 ? sizeof(tandem_bf16) : fsz; /* GEMM operand elements */
    const int head_w[2] = {m->top.mel_w, m->top.stop_w}, head_b[2] = {m->top.mel_b, m->top.stop_b};
    const int64_t head_out[2] = {d->group, d->r};
    const tandem_dptr head_dy[2] = {ADDR(m->dmel), ADDR(m->dstop)};
    for (int h = 0; h < 2; h++) {
        tandem_dptr dyo;
        TANDEM_TRY(operand(m, s, head_dy[h], Np * head_out[h], &dyo));
        tandem_gemm_desc g = tandem_model_desc_head_dx(d, head_out[h]);
        TANDEM_TRY(gemm(s, &g, 1.0f, dyo, tandem_model_weight_addr(m, head_w[h]), h ? 1.0f : 0.0f,
                        dhf_mel));
        TANDEM_TRY(col_sum(s, head_dy[h], tandem_model_grad_addr(m, head_b[h]), Np, head_out[h]));
        g = tandem_model_desc_linear_dw(d, d->mel_len, D, head_out[h]);
        for (int i = 0; i < d->batch; i++) {
            tandem_dptr dy = dyo + (tandem_dptr)i * d->mel_len * head_out[h] * esz;
            tandem_dptr x = ADDR(m->hf) + ((tandem_dptr)i * T + d->text_len) * D * esz;
            TANDEM_TRY(gemm(s, &g, 1.0f, dy, x, 1.0f, tandem_model_grad_addr(m, head_w[h])));
        }
    }
    /* Final LN: dres = LN_f backward (the first write of the residual gradient) */
    TANDEM_TRY(layernorm_bwd(m, s, ADDR(m->dhf), m->x_out, m->meanf, m->rstdf, m->top.lnf_g,
                             m->top.lnf_b, ADDR(m->dres)));

    for (int l = d->layers - 1; l >= 0; l--) TANDEM_TRY(block_bwd(m, s, l));

    /* Embedding: d_sym_emb, d_pos_emb +=; dpre [B, Tm, d] = dres at the mel rows */
    tandem_k_seq_embed_bwd_args eb;
    memset(&eb, 0, sizeof eb);
    eb.dx = CF32(m->dres);
    eb.tokens = (const int32_t *)(uintptr_t)ADDR(b->tokens);
    eb.d_sym_emb = F32(tandem_model_grad_addr(m, m->top.sym_emb));
    eb.d_pos_emb = F32(tandem_model_grad_addr(m, m->top.pos_emb));
    eb.d_prenet_out = MF32(m->dpre);
    eb.batch = d->batch;
    eb.text_len = d->text_len;
    eb.mel_len = d->mel_len;
    eb.vocab = d->vocab;
    eb.d = d->d;
    TANDEM_TRY(TANDEM_LAUNCH(s, seq_embed_bwd, &eb));
    /* Prenet: pre_act = GELU(pre), pre = groups Wp^T + bp (groups are data: no dx) */
    tandem_k_gelu_bwd_args gb;
    memset(&gb, 0, sizeof gb);
    gb.dy = CF32(m->dpre);
    gb.x = CF32(m->pre);
    gb.dx = MF32(m->dpre);
    gb.n = Np * D;
    TANDEM_TRY(TANDEM_LAUNCH(s, gelu_bwd, &gb));
    return linear_bwd(m, s, m->top.prenet_w, m->top.prenet_b, Np, d->group, D, ADDR(m->dpre),
                      ADDR(m->groups), 0);
}
