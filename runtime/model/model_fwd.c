/* model_fwd.c — the forward pass of one micro-batch and its loss (see model.h). Every op is a
 * typed launcher (runtime/model/launchers.h) or a GEMM (runtime/core/dev.h) on shapes resolved by
 * tandem_model_declare. N = B * T rows of the sequence, Np = B * Tm rows of the mel part.
 * bf16 mode: a GEMM-only activation's producer (prenet input, LayerNorm, the MLP fc GEMM's GELU
 * epilogue, the attention's layout kernels) writes the bf16 tensor itself, through out32/out16
 * or the GEMM's C type (model.h, "Precision"): no f32 stage and no cast pass; in fp32 mode it
 * writes the f32 tensor. */
#include <string.h>

#include "platform/os/log.h"
#include "runtime/model/launchers.h"
#include "runtime/model/model.h"

#define F32(t) tandem_tensor_f32(t)
#define VIEW(t) tandem_view_of(t)
#define PARAM(idx) tandem_model_param_f32(m, (idx))

/* The pair a producer with a bf16 output writes the GEMM-only activation t through. */
static float *out32(const tandem_model *m, tandem_tensor *t) {
    return tandem_seam_f32(m->dims.bf16, t);
}
static tandem_bf16 *out16(const tandem_model *m, tandem_tensor *t) {
    return tandem_seam_bf16(m->dims.bf16, t);
}

/* y [rows, out] = x [rows, in] W^T + beta y + b: the model's weight w [out, in], bias b [out]. */
static tandem_status linear(tandem_model *m, tandem_stream *s, const tandem_tensor *x, int w, int b,
                            float beta, tandem_tensor *y, int64_t rows, int64_t in, int64_t out) {
    tandem_gemm_desc g = tandem_model_desc_linear(&m->dims, rows, in, out); /* BIAS epilogue */
    return tandem_dev_gemm_epi(s, &g, 1.0f, VIEW(x), tandem_model_weight(m, w), beta, VIEW(y),
                               tandem_model_param_view(m, b));
}

/* y [rows, out] = res [rows, out] + x W^T + b: the residual read by the GEMM itself (beta C from
 * res, no copy of it into y first). */
static tandem_status residual_linear(tandem_model *m, tandem_stream *s, const tandem_tensor *x, int w, int b,
                                     const tandem_tensor *res, tandem_tensor *y, int64_t rows, int64_t in,
                                     int64_t out) {
    tandem_gemm_desc g = tandem_model_desc_linear(&m->dims, rows, in, out); /* BIAS epilogue */
    const tandem_view bias = tandem_model_param_view(m, b);
    return tandem_dev_gemm_from(s, &g, 1.0f, VIEW(x), tandem_model_weight(m, w), 1.0f, VIEW(res), VIEW(y), &bias);
}

/* y [rows, d] = LN(x [rows, d]) with gain g, bias b; its statistics into mean, rstd [rows]. */
static tandem_status layernorm(tandem_model *m, tandem_stream *s, const tandem_tensor *x, int g, int b,
                               tandem_tensor *y, tandem_tensor *mean, tandem_tensor *rstd, int64_t rows) {
    return tandem_layernorm_fwd(s, F32(x), PARAM(g), PARAM(b), out32(m, y), out16(m, y), F32(mean),
                                F32(rstd), (int)rows, m->dims.d);
}

/* Key mask and L1 weights from the batch's lengths, on the device (kernels/batch_prep.h).
 * Key j of item b is real when it is a text token (j < text length) or a mel position whose
 * group holds a real frame. Real queries never see later keys (causal), so masking the padded
 * mel positions only changes the padded queries, which still see the text. Host lengths (no
 * device tensors given) are staged per slot in pinned memory and uploaded asynchronously. */
static tandem_status batch_prep(tandem_model *m, tandem_stream *s, const tandem_model_batch *b,
                                int slot) {
    const tandem_model_dims *d = &m->dims;
    const size_t B = (size_t)d->batch, row = B * sizeof(int32_t);
    const size_t lens = (size_t)slot * 2 * row; /* [2, B] of lengths, in bytes */
    int32_t *h = m->host_len + (size_t)slot * 2 * B; /* [2, B] */
    if (!b->text_lengths) {
        memcpy(h, b->host_text_lengths, row);
        TANDEM_TRY(tandem_dev_upload(s, m->lengths, lens, h, row));
    }
    if (!b->frame_lengths) {
        memcpy(h + B, b->host_frame_lengths, row);
        TANDEM_TRY(tandem_dev_upload(s, m->lengths, lens + row, h + B, row));
    }
    const int64_t at = (int64_t)slot * 2 * d->batch; /* elements */
    const int32_t *tl = b->text_lengths ? tandem_tensor_i32(b->text_lengths)
                                        : tandem_tensor_i32_at(m->lengths, at);
    const int32_t *fl = b->frame_lengths ? tandem_tensor_i32(b->frame_lengths)
                                         : tandem_tensor_i32_at(m->lengths, at + d->batch);
    const tandem_batch_dims bd = {d->batch, d->text_len, d->mel_len, d->r, d->frames, d->n_mels};
    return tandem_batch_prep(s, tl, fl, F32(b->frame_mask), tandem_tensor_u8(m->key_mask),
                             F32(m->l1_weight), &bd);
}

/* Where the QKV projection of layer ly writes (f32): the layer's kept qkv itself when the fused
 * attention reads it in fp32, else the shared scratch. */
static tandem_tensor *qkv_out(const tandem_model *m, const tandem_model_layer *ly) {
    return ly->qkv && (!m->dims.bf16 || tandem_model_qkv_bf16(&m->dims)) ? ly->qkv : m->qkv;
}

/* att [B, T, d] = heads merged of softmax_causal(Q K^T / sqrt(dh), key_mask) V, q, k, v from
 * qkv [B, T, 3d] (runtime/model/attention.c, in the model's precision). */
static tandem_status attention(tandem_model *m, tandem_stream *s, int l) {
    tandem_model_layer *ly = &m->layer[l];
    const tandem_model_dims *d = &m->dims;
    /* layer l's rows [B, ga.heads, Tm] of ga_rows (scale: the mean over heads and layers) */
    const tandem_ga_dims ga = {d->batch, d->heads, m->ga.heads, d->text_len, d->mel_len, m->ga.sigma,
                               (float)(1.0 / ((double)m->ga.heads * d->layers))};
    tandem_attention_fwd_io io;
    memset(&io, 0, sizeof io);
    if (m->ga.heads > 0) {
        io.ga = &ga;
        io.ga_rows = tandem_tensor_f32_at(m->ga_rows, (int64_t)l * d->batch * m->ga.heads * d->mel_len);
    }
    io.qkv = tandem_model_qkv_bf16(d) ? NULL : qkv_out(m, ly); /* NULL: qkv_op written by its GEMM */
    io.key_mask = m->key_mask;
    io.y = ly->att;
    /* fused: qkv kept per layer, the softmax statistics (ga_sum: the layer's [B, ga.heads, Tm]) */
    io.qkv_op = ly->qkv, io.lse = ly->lse;
    io.ga_sum = ly->ga_sum ? tandem_tensor_f32(ly->ga_sum) : NULL;
    /* materialised: per-head q, k, v, P and scratch (bf16: the f32 scores) */
    io.q = ly->q, io.k = ly->k, io.v = ly->v, io.p = ly->p;
    io.o = m->o;
    io.scores = m->scores;
    return tandem_attention_fwd(s, &m->attn, &io);
}

/* The last block's mel rows of its input x and attention output att: x_mel, att_mel [B, Tm, d]
 * (model.h: past its attention it runs on them only). */
static tandem_status take_mel_rows(tandem_model *m, tandem_stream *s, tandem_model_layer *ly) {
    const tandem_model_dims *d = &m->dims;
    const int B = d->batch, Tt = d->text_len, Tm = d->mel_len, D = d->d;
    TANDEM_TRY(tandem_mel_rows_take(s, F32(ly->x), F32(ly->x_mel), NULL, NULL, B, Tt, Tm, D));
    if (!d->bf16) return tandem_mel_rows_take(s, F32(ly->att), F32(ly->att_mel), NULL, NULL, B, Tt, Tm, D);
    return tandem_mel_rows_take(s, NULL, NULL, tandem_tensor_bf16(ly->att), tandem_tensor_bf16(ly->att_mel), B,
                                Tt, Tm, D);
}

/* One pre-LN block: x → x_mid = x + Attn(LN1(x)) → out = x_mid + MLP(LN2(x_mid)); the last
 * block's x_mid and out on the mel rows only (Nr = tandem_model_mlp_rows rows). */
static tandem_status block_fwd(tandem_model *m, tandem_stream *s, int l, tandem_tensor *out) {
    const tandem_model_dims *d = &m->dims;
    const tandem_model_layer_params *lp = &m->lp[l];
    tandem_model_layer *ly = &m->layer[l];
    const int64_t N = (int64_t)d->batch * d->seq, D = d->d, Nr = tandem_model_mlp_rows(d, l);

    /* h1 [N, d] = LN1(x);  qkv [N, 3d] = h1 Wqkv^T + bqkv */
    TANDEM_TRY(layernorm(m, s, ly->x, lp->ln1_g, lp->ln1_b, ly->h1, ly->mean1, ly->rstd1, N));
    const tandem_gemm_desc qkv = tandem_model_desc_qkv(d, N, D, 3 * D); /* bf16 out: no cast */
    TANDEM_TRY(tandem_dev_gemm_epi(s, &qkv, 1.0f, VIEW(ly->h1), tandem_model_weight(m, lp->qkv_w), 0.0f,
                                   VIEW(qkv_out(m, ly)),
                                   tandem_model_qkv_bf16(d) ? tandem_model_param_gemm(m, lp->qkv_b) /* bias: C's type */
                                                            : tandem_model_param_view(m, lp->qkv_b)));
    /* att [N, d] = MHA(qkv);  x_mid [Nr, d] = x + att Wo^T + bo (the last block: mel rows) */
    TANDEM_TRY(attention(m, s, l));
    const int mel = Nr < N;
    if (mel) TANDEM_TRY(take_mel_rows(m, s, ly));
    TANDEM_TRY(residual_linear(m, s, mel ? ly->att_mel : ly->att, lp->out_w, lp->out_b, mel ? ly->x_mel : ly->x,
                               ly->x_mid, Nr, D, D));
    /* h2 [Nr, d] = LN2(x_mid);  f [Nr, 4d] = h2 Wfc^T + bfc;  g [Nr, 4d] = GELU(f): one GEMM with
     * the GELU_AUX_BIAS epilogue writing g and, as its aux output, f (both in g's type) */
    TANDEM_TRY(layernorm(m, s, ly->x_mid, lp->ln2_g, lp->ln2_b, ly->h2, ly->mean2, ly->rstd2, Nr));
    const tandem_gemm_desc fc = tandem_model_desc_mlp_fc(d, Nr, D, d->ff);
    const tandem_view fc_b = tandem_model_param_gemm(m, lp->fc_b);
    TANDEM_TRY(tandem_dev_gemm_aux(s, &fc, 1.0f, VIEW(ly->h2), tandem_model_weight(m, lp->fc_w), 0.0f,
                                   VIEW(ly->g), &fc_b, VIEW(ly->f)));
    /* out [Nr, d] = x_mid + g Wproj^T + bproj */
    return residual_linear(m, s, ly->g, lp->proj_w, lp->proj_b, ly->x_mid, out, Nr, d->ff, D);
}

/* x0 [B, T, d] = [sym_emb[tokens]; dropout(GELU(prenet(groups)))] + pos_emb, the groups
 * [B, Tm, r*80] being the mel frames shifted by one group (teacher forcing). */
static tandem_status embed(tandem_model *m, tandem_stream *s, const tandem_model_batch *b) {
    const tandem_model_dims *d = &m->dims;
    const int64_t Np = (int64_t)d->batch * d->mel_len;
    TANDEM_TRY(tandem_prenet_input(s, F32(b->mels), out32(m, m->groups), out16(m, m->groups),
                                   d->batch, d->mel_len, d->r, d->n_mels));
    /* pre [Np, d] = groups Wp^T + bp;  pre_act = GELU(pre) (f32: it feeds the embedding) */
    TANDEM_TRY(linear(m, s, m->groups, m->top.prenet_w, m->top.prenet_b, 0.0f, m->pre, Np,
                      d->group, d->d));
    TANDEM_TRY(tandem_gelu_fwd(s, F32(m->pre), F32(m->pre_act), NULL, Np * d->d));
    /* training: pre_act = dropout(pre_act), the decoder cannot just copy the previous frames */
    if (m->drop.p > 0.0f)
        TANDEM_TRY(tandem_prenet_dropout(s, F32(m->pre_act), Np * d->d, m->drop.p, m->drop.seed,
                                         m->drop.step, m->drop.step_at, m->drop.micro));
    const tandem_seq_dims sd = {d->batch, d->text_len, d->mel_len, d->vocab, d->d};
    return tandem_seq_embed_fwd(s, tandem_tensor_i32(b->tokens), PARAM(m->top.sym_emb),
                                F32(m->pre_act), PARAM(m->top.pos_emb), F32(m->layer[0].x), &sd);
}

/* A head on the final LN output (the mel rows): y [B*Tm, out] = hf W^T + b. */
static tandem_status head(tandem_model *m, tandem_stream *s, int w, int b, tandem_tensor *y,
                          int64_t out) {
    const tandem_model_dims *d = &m->dims;
    return linear(m, s, m->hf, w, b, 0.0f, y, (int64_t)d->batch * d->mel_len, d->d, out);
}

tandem_status tandem_model_forward(tandem_model *m, tandem_stream *s, const tandem_model_batch *b,
                                   int slot) {
    if (!m || !s) return tandem_fail(TANDEM_E_INVALID, "model forward: NULL argument");
    if (slot < 0 || slot > m->dims.micro_batches)
        return tandem_fail(TANDEM_E_INVALID, "model forward: slot %d; expected 0..%d", slot,
                           m->dims.micro_batches);
    TANDEM_TRY(tandem_model_use_frames(m, b ? b->frames : 0)); /* the batch's shape class */
    TANDEM_TRY(tandem_model_check_batch(m, b));
    const tandem_model_dims *d = &m->dims;

    TANDEM_TRY(batch_prep(m, s, b, slot));
    if (d->bf16 && m->wcopy_stale) TANDEM_TRY(tandem_model_cast_weights(m, s));
    TANDEM_TRY(embed(m, s, b));
    for (int l = 0; l < d->layers; l++)
        TANDEM_TRY(block_fwd(m, s, l, l + 1 < d->layers ? m->layer[l + 1].x : m->x_out));
    /* hf [Np, d] = LN_f(x_out) (the mel rows);  mel_out [B, Tm, r*80], stop_out [B, Tm, r] */
    TANDEM_TRY(layernorm(m, s, m->x_out, m->top.lnf_g, m->top.lnf_b, m->hf, m->meanf, m->rstdf,
                         (int64_t)d->batch * d->mel_len));
    TANDEM_TRY(head(m, s, m->top.mel_w, m->top.mel_b, m->mel_out, d->group));
    return head(m, s, m->top.stop_w, m->top.stop_b, m->stop_out, d->r);
}

/* ga [1] = the sum of the forward's guided-attention rows over the layers (0 when off). */
static tandem_status ga_loss(tandem_model *m, tandem_stream *s, float *ga, float grad_scale) {
    const tandem_model_dims *d = &m->dims;
    m->ga.grad_scale = m->ga.heads > 0 ? grad_scale * m->ga.weight : 0.0f;
    if (m->ga.heads <= 0) return tandem_fill_f32(s, ga, 1, 0.0f);
    const int64_t n = (int64_t)d->layers * d->batch * m->ga.heads * d->mel_len;
    return tandem_reduce_sum(s, F32(m->ga_rows), ga, NULL, n, 1.0f);
}

tandem_status tandem_model_loss(tandem_model *m, tandem_stream *s, const tandem_model_batch *b,
                                int slot, float stop_weight, float grad_scale) {
    if (!m || !s || !b) return tandem_fail(TANDEM_E_INVALID, "model loss: NULL argument");
    if (slot < 0 || slot > m->dims.micro_batches)
        return tandem_fail(TANDEM_E_INVALID, "model loss: slot %d; expected 0..%d", slot,
                           m->dims.micro_batches);
    TANDEM_TRY(tandem_model_use_frames(m, b->frames)); /* the batch's shape class */
    const tandem_model_dims *d = &m->dims;
    const int B = d->batch, F = d->frames, C = d->n_mels;
    /* The L1 is a mean over real frames x 80 bands: its normaliser is folded into l1_weight
     * on the device (batch_prep). The BCE is a mean over every frame (padded frames are taught
     * to stay "stopped"): a constant of the shapes. */
    const float bce_norm = (float)(1.0 / ((double)B * F));
    const int64_t row = TANDEM_MODEL_LOSSES * (int64_t)slot; /* losses[slot] = l1, bce, ga */
    float *l1 = tandem_tensor_f32_at(m->losses, row), *bce = tandem_tensor_f32_at(m->losses, row + 1);
    TANDEM_TRY(ga_loss(m, s, tandem_tensor_f32_at(m->losses, row + 2), grad_scale));
    float *partials = F32(m->loss_partials);

    TANDEM_TRY(tandem_l1_masked_fwd(s, F32(m->mel_out), F32(b->mels), F32(m->l1_weight), partials,
                                    B, F, C));
    TANDEM_TRY(tandem_reduce_sum(s, partials, l1, NULL,
                                 tandem_k_train_partials((int64_t)B * F * C), 1.0f));
    TANDEM_TRY(tandem_bce_stop_fwd(s, F32(m->stop_out), F32(b->stop_targets), F32(m->stop_weight),
                                   partials, B, F));
    TANDEM_TRY(tandem_reduce_sum(s, partials, bce, NULL, tandem_k_train_partials((int64_t)B * F),
                                 bce_norm));
    if (grad_scale == 0.0f) return TANDEM_OK;
    /* dmel [B, F, 80], dstop [B, F]: gradients of grad_scale * (l1 + stop_weight * bce) */
    TANDEM_TRY(tandem_l1_masked_bwd(s, F32(m->mel_out), F32(b->mels), F32(m->l1_weight),
                                    F32(m->dmel), B, F, C, grad_scale));
    return tandem_bce_stop_bwd(s, F32(m->stop_out), F32(b->stop_targets), F32(m->stop_weight),
                               F32(m->dstop), B, F, grad_scale * stop_weight * bce_norm);
}
