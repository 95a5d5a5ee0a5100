/* model_fwd.c — the forward pass of one micro-batch and its loss (see model.h). Every op is a
 * registered kernel (runtime/core/launch.h) or a GEMM of the device's GEMM op on shapes resolved by
 * tandem_model_declare. N = B * T rows of the sequence, Np = B * Tm rows of the mel part.
 * bf16 mode: a GEMM-only activation's producer writes f32 into the stage (fwd32) and
 * publish() casts it into the bf16 tensor (model.h, "Precision"); in fp32 mode the producer
 * writes the tensor itself and publish() does nothing. */
#include <string.h>

#include "runtime/core/launch.h"
#include "platform/os/log.h"
#include "runtime/model/model.h"

#define ADDR(t) tandem_tensor_addr(t)
#define F32(addr) ((float *)(uintptr_t)(addr))
#define CF32(t) ((const float *)(uintptr_t)tandem_tensor_addr(t))
#define MF32(t) ((float *)(uintptr_t)tandem_tensor_addr(t))
#define PARAM(m, idx) F32(tandem_model_param_addr((m), (idx)))

static tandem_status gemm(tandem_stream *s, const tandem_gemm_desc *g, float alpha, tandem_dptr a,
                          tandem_dptr b, float beta, tandem_dptr c) {
    return s->dev->ops->gemm(s, g, alpha, a, b, beta, c);
}

/* Where an f32 producer writes the GEMM-only activation t. */
static tandem_dptr stage(const tandem_model *m, const tandem_tensor *t) {
    return m->dims.bf16 ? ADDR(m->fwd32) : ADDR(t);
}

/* bf16 mode: t = bf16(stage). */
static tandem_status publish(const tandem_model *m, tandem_stream *s, tandem_tensor *t) {
    if (!m->dims.bf16) return TANDEM_OK;
    return tandem_model_cast_bf16(s, ADDR(m->fwd32), ADDR(t), tandem_tensor_numel(t));
}

static tandem_status bias_add(tandem_stream *s, tandem_tensor *y, const float *bias, int64_t rows,
                              int64_t cols) {
    tandem_k_bias_add_args a;
    memset(&a, 0, sizeof a);
    a.y = MF32(y);
    a.b = bias;
    a.rows = (int)rows;
    a.d = (int)cols;
    return TANDEM_LAUNCH(s, bias_add, &a);
}

static tandem_status layernorm(tandem_stream *s, const tandem_tensor *x, const float *gamma,
                               const float *beta, tandem_dptr y, tandem_tensor *mean,
                               tandem_tensor *rstd, int64_t rows, int d) {
    tandem_k_layernorm_fwd_args a;
    memset(&a, 0, sizeof a);
    a.x = CF32(x);
    a.gamma = gamma;
    a.beta = beta;
    a.y = F32(y);
    a.mean = MF32(mean);
    a.rstd = MF32(rstd);
    a.rows = (int)rows;
    a.d = d;
    a.eps = TANDEM_LAYERNORM_EPS;
    return TANDEM_LAUNCH(s, layernorm_fwd, &a);
}

static tandem_status gelu(tandem_stream *s, const tandem_tensor *x, tandem_dptr y) {
    tandem_k_gelu_fwd_args a;
    memset(&a, 0, sizeof a);
    a.x = CF32(x);
    a.y = F32(y);
    a.n = tandem_tensor_numel(x);
    return TANDEM_LAUNCH(s, gelu_fwd, &a);
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
    const tandem_dptr lens = ADDR(m->lengths) + (tandem_dptr)slot * 2 * row; /* [2, B] */
    tandem_dptr tl = b->text_lengths ? ADDR(b->text_lengths) : lens;
    tandem_dptr fl = b->frame_lengths ? ADDR(b->frame_lengths) : lens + row;
    int32_t *h = m->host_len + (size_t)slot * 2 * B; /* [2, B] */
    if (!b->text_lengths) {
        memcpy(h, b->host_text_lengths, row);
        TANDEM_TRY(s->dev->ops->copy_h2d(s, tl, h, row));
    }
    if (!b->frame_lengths) {
        memcpy(h + B, b->host_frame_lengths, row);
        TANDEM_TRY(s->dev->ops->copy_h2d(s, fl, h + B, row));
    }
    tandem_k_batch_prep_args a;
    memset(&a, 0, sizeof a);
    a.text_lengths = (const int32_t *)(uintptr_t)tl;
    a.frame_lengths = (const int32_t *)(uintptr_t)fl;
    a.frame_mask = CF32(b->frame_mask);
    a.key_mask = (uint8_t *)(uintptr_t)ADDR(m->key_mask);
    a.l1_weight = MF32(m->l1_weight);
    a.batch = d->batch;
    a.text_len = d->text_len;
    a.mel_len = d->mel_len;
    a.r = d->r;
    a.frames = d->frames;
    a.channels = d->n_mels;
    return TANDEM_LAUNCH(s, batch_prep, &a);
}

static tandem_status attention_f32(tandem_model *m, tandem_stream *s, tandem_model_layer *ly);

/* One pre-LN block: x → x_mid = x + Attn(LN1(x)) → out = x_mid + MLP(LN2(x_mid)). */
static tandem_status block_fwd(tandem_model *m, tandem_stream *s, int l, tandem_tensor *out) {
    const tandem_model_dims *d = &m->dims;
    const tandem_model_layer_params *lp = &m->lp[l];
    tandem_model_layer *ly = &m->layer[l];
    const int64_t N = (int64_t)d->batch * d->seq, D = d->d;
    const size_t xbytes = (size_t)N * (size_t)D * sizeof(float);

    /* h1 [N, d] = LN1(x) */
    TANDEM_TRY(layernorm(s, ly->x, PARAM(m, lp->ln1_g), PARAM(m, lp->ln1_b), stage(m, ly->h1),
                         ly->mean1, ly->rstd1, N, d->d));
    TANDEM_TRY(publish(m, s, ly->h1));
    /* qkv [N, 3d] = h1 Wqkv^T + bqkv */
    tandem_gemm_desc g = tandem_model_desc_linear(d, N, D, 3 * D);
    TANDEM_TRY(gemm(s, &g, 1.0f, ADDR(ly->h1), tandem_model_weight_addr(m, lp->qkv_w), 0.0f,
                    ADDR(m->qkv)));
    TANDEM_TRY(bias_add(s, m->qkv, PARAM(m, lp->qkv_b), N, 3 * D));
    /* att [N, d] = heads merged of softmax_causal(Q K^T / sqrt(dh), key_mask) V */
    if (d->bf16) TANDEM_TRY(tandem_model_attention_fwd_bf16(m, s, l));
    else TANDEM_TRY(attention_f32(m, s, ly));
    /* x_mid [N, d] = x + att Wo^T + bo */
    TANDEM_TRY(s->dev->ops->copy_d2d(s, ADDR(ly->x_mid), ADDR(ly->x), xbytes));
    g = tandem_model_desc_linear(d, N, D, D);
    TANDEM_TRY(gemm(s, &g, 1.0f, ADDR(ly->att), tandem_model_weight_addr(m, lp->out_w), 1.0f,
                    ADDR(ly->x_mid)));
    TANDEM_TRY(bias_add(s, ly->x_mid, PARAM(m, lp->out_b), N, D));
    /* h2 [N, d] = LN2(x_mid);  f [N, 4d] = h2 Wfc^T + bfc;  g = GELU(f) */
    TANDEM_TRY(layernorm(s, ly->x_mid, PARAM(m, lp->ln2_g), PARAM(m, lp->ln2_b), stage(m, ly->h2),
                         ly->mean2, ly->rstd2, N, d->d));
    TANDEM_TRY(publish(m, s, ly->h2));
    g = tandem_model_desc_linear(d, N, D, d->ff);
    TANDEM_TRY(gemm(s, &g, 1.0f, ADDR(ly->h2), tandem_model_weight_addr(m, lp->fc_w), 0.0f,
                    ADDR(ly->f)));
    TANDEM_TRY(bias_add(s, ly->f, PARAM(m, lp->fc_b), N, d->ff));
    TANDEM_TRY(gelu(s, ly->f, stage(m, ly->g)));
    TANDEM_TRY(publish(m, s, ly->g));
    /* out [N, d] = x_mid + g Wproj^T + bproj */
    TANDEM_TRY(s->dev->ops->copy_d2d(s, ADDR(out), ADDR(ly->x_mid), xbytes));
    g = tandem_model_desc_linear(d, N, d->ff, D);
    TANDEM_TRY(gemm(s, &g, 1.0f, ADDR(ly->g), tandem_model_weight_addr(m, lp->proj_w), 1.0f,
                    ADDR(out)));
    return bias_add(s, out, PARAM(m, lp->proj_b), N, D);
}

/* fp32 attention: runtime/model/attention.c on the block's tensors. */
static tandem_status attention_f32(tandem_model *m, tandem_stream *s, tandem_model_layer *ly) {
    tandem_attention_fwd_io io;
    memset(&io, 0, sizeof io);
    io.qkv = ADDR(m->qkv);
    io.key_mask = ADDR(m->key_mask);
    io.q = ADDR(ly->q);
    io.k = ADDR(ly->k);
    io.v = ADDR(ly->v);
    io.p = ADDR(ly->p);
    io.o = ADDR(m->o);
    io.y = ADDR(ly->att);
    return tandem_attention_fwd(s, &m->attn, &io);
}

tandem_status tandem_model_forward(tandem_model *m, tandem_stream *s, const tandem_model_batch *b,
                                   int slot) {
    if (!m || !s) return tandem_fail(TANDEM_E_INVALID, "model forward: NULL argument");
    if (slot < 0 || slot > m->dims.micro_batches)
        return tandem_fail(TANDEM_E_INVALID, "model forward: slot %d; expected 0..%d", slot,
                           m->dims.micro_batches);
    TANDEM_TRY(tandem_model_check_batch(m, b));
    const tandem_model_dims *d = &m->dims;
    const int64_t Np = (int64_t)d->batch * d->mel_len, N = (int64_t)d->batch * d->seq;

    TANDEM_TRY(batch_prep(m, s, b, slot));
    if (d->bf16 && m->wcopy_stale) TANDEM_TRY(tandem_model_cast_weights(m, s));

    /* groups [B, Tm, r*80]: group j = frames of group j - 1 (zeros for j = 0) */
    tandem_k_prenet_input_args pin;
    memset(&pin, 0, sizeof pin);
    pin.mels = CF32(b->mels);
    pin.groups = F32(stage(m, m->groups));
    pin.batch = d->batch;
    pin.mel_len = d->mel_len;
    pin.r = d->r;
    pin.n_mels = d->n_mels;
    TANDEM_TRY(TANDEM_LAUNCH(s, prenet_input, &pin));
    TANDEM_TRY(publish(m, s, m->groups));

    /* pre [Np, d] = groups Wp^T + bp;  pre_act = GELU(pre) (f32: it feeds the embedding) */
    tandem_gemm_desc g = tandem_model_desc_linear(d, Np, d->group, d->d);
    TANDEM_TRY(gemm(s, &g, 1.0f, ADDR(m->groups), tandem_model_weight_addr(m, m->top.prenet_w),
                    0.0f, ADDR(m->pre)));
    TANDEM_TRY(bias_add(s, m->pre, PARAM(m, m->top.prenet_b), Np, d->d));
    TANDEM_TRY(gelu(s, m->pre, ADDR(m->pre_act)));

    /* x0 [B, T, d] = [sym_emb[tokens]; pre_act] + pos_emb */
    tandem_k_seq_embed_fwd_args emb;
    memset(&emb, 0, sizeof emb);
    emb.tokens = (const int32_t *)(uintptr_t)ADDR(b->tokens);
    emb.sym_emb = PARAM(m, m->top.sym_emb);
    emb.prenet_out = CF32(m->pre_act);
    emb.pos_emb = PARAM(m, m->top.pos_emb);
    emb.x = MF32(m->layer[0].x);
    emb.batch = d->batch;
    emb.text_len = d->text_len;
    emb.mel_len = d->mel_len;
    emb.vocab = d->vocab;
    emb.d = d->d;
    TANDEM_TRY(TANDEM_LAUNCH(s, seq_embed_fwd, &emb));

    for (int l = 0; l < d->layers; l++)
        TANDEM_TRY(block_fwd(m, s, l, l + 1 < d->layers ? m->layer[l + 1].x : m->x_out));

    /* hf [N, d] = LN_f(x_out) */
    TANDEM_TRY(layernorm(s, m->x_out, PARAM(m, m->top.lnf_g), PARAM(m, m->top.lnf_b),
                         stage(m, m->hf), m->meanf, m->rstdf, N, d->d));
    TANDEM_TRY(publish(m, s, m->hf));
    /* heads on the mel rows hf[b, Tt:T, :]: mel_out [B, Tm, r*80], stop_out [B, Tm, r] */
    const size_t hsz = tandem_dtype_size(tandem_tensor_dtype(m->hf));
    const tandem_dptr hf_mel = ADDR(m->hf) + (tandem_dptr)d->text_len * d->d * hsz;
    g = tandem_model_desc_head(d, d->group);
    TANDEM_TRY(gemm(s, &g, 1.0f, hf_mel, tandem_model_weight_addr(m, m->top.mel_w), 0.0f,
                    ADDR(m->mel_out)));
    TANDEM_TRY(bias_add(s, m->mel_out, PARAM(m, m->top.mel_b), Np, d->group));
    g = tandem_model_desc_head(d, d->r);
    TANDEM_TRY(gemm(s, &g, 1.0f, hf_mel, tandem_model_weight_addr(m, m->top.stop_w), 0.0f,
                    ADDR(m->stop_out)));
    return bias_add(s, m->stop_out, PARAM(m, m->top.stop_b), Np, d->r);
}

tandem_status tandem_model_loss(tandem_model *m, tandem_stream *s, const tandem_model_batch *b,
                                int slot, float stop_weight, float grad_scale) {
    if (!m || !s || !b) return tandem_fail(TANDEM_E_INVALID, "model loss: NULL argument");
    if (slot < 0 || slot > m->dims.micro_batches)
        return tandem_fail(TANDEM_E_INVALID, "model loss: slot %d; expected 0..%d", slot,
                           m->dims.micro_batches);
    const tandem_model_dims *d = &m->dims;
    /* The L1 is a mean over real frames x 80 bands: its normaliser is folded into l1_weight
     * on the device (batch_prep). The BCE is a mean over every frame (padded frames are taught
     * to stay "stopped"): a constant of the shapes. */
    const float bce_norm = (float)(1.0 / ((double)d->batch * d->frames));
    const tandem_dptr out = ADDR(m->losses) + (tandem_dptr)slot * 2 * sizeof(float);

    tandem_k_l1_masked_fwd_args l1;
    memset(&l1, 0, sizeof l1);
    l1.pred = CF32(m->mel_out);
    l1.target = CF32(b->mels);
    l1.mask = CF32(m->l1_weight);
    l1.partials = MF32(m->loss_partials);
    l1.batch = d->batch;
    l1.frames = d->frames;
    l1.channels = d->n_mels;
    TANDEM_TRY(TANDEM_LAUNCH(s, l1_masked_fwd, &l1));
    tandem_k_reduce_sum_args red;
    memset(&red, 0, sizeof red);
    red.partials = CF32(m->loss_partials);
    red.out = F32(out);
    red.n = tandem_k_train_partials((int64_t)d->batch * d->frames * d->n_mels);
    red.scale = 1.0f;
    TANDEM_TRY(TANDEM_LAUNCH(s, reduce_sum, &red));

    tandem_k_bce_stop_fwd_args bce;
    memset(&bce, 0, sizeof bce);
    bce.logits = CF32(m->stop_out);
    bce.target = CF32(b->stop_targets);
    bce.weight = CF32(m->stop_weight);
    bce.partials = MF32(m->loss_partials);
    bce.batch = d->batch;
    bce.frames = d->frames;
    TANDEM_TRY(TANDEM_LAUNCH(s, bce_stop_fwd, &bce));
    red.out = F32(out + sizeof(float));
    red.n = tandem_k_train_partials((int64_t)d->batch * d->frames);
    red.scale = bce_norm;
    TANDEM_TRY(TANDEM_LAUNCH(s, reduce_sum, &red));

    if (grad_scale == 0.0f) return TANDEM_OK;
    tandem_k_l1_masked_bwd_args l1b;
    memset(&l1b, 0, sizeof l1b);
    l1b.pred = CF32(m->mel_out);
    l1b.target = CF32(b->mels);
    l1b.mask = CF32(m->l1_weight);
    l1b.dpred = MF32(m->dmel);
    l1b.batch = d->batch;
    l1b.frames = d->frames;
    l1b.channels = d->n_mels;
    l1b.scale = grad_scale;
    TANDEM_TRY(TANDEM_LAUNCH(s, l1_masked_bwd, &l1b));
    tandem_k_bce_stop_bwd_args bb;
    memset(&bb, 0, sizeof bb);
    bb.logits = CF32(m->stop_out);
    bb.target = CF32(b->stop_targets);
    bb.weight = CF32(m->stop_weight);
    bb.dlogits = MF32(m->dstop);
    bb.batch = d->batch;
    bb.frames = d->frames;
    bb.scale = grad_scale * stop_weight * bce_norm;
    return TANDEM_LAUNCH(s, bce_stop_bwd, &bb);
}
