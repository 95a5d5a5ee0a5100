/* model_kv.c — one position at a time with cached keys and values (see model_kv.h). */
#include "runtime/model/model_kv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/model/launchers.h"

#define F32(t) tandem_tensor_f32(t)
#define PARAM(idx) tandem_model_param_f32(kv->m, (idx))

/* ---- declaration ------------------------------------------------------------------------------ */

static tandem_status kv_decl(tandem_pool *pool, tandem_tensor **out, tandem_dtype dt, int64_t n0,
                             int64_t n1, int64_t n2, const char *name) {
    const int64_t shape[3] = {n0, n1, n2};
    const int nd = n2 > 0 ? 3 : n1 > 0 ? 2 : 1;
    return tandem_pool_declare(pool, name, dt, nd, shape, TANDEM_PERSISTENT, 0, 0, out);
}

/* The score GEMM S[h, :] = q_h [1, dh] K_h^T and O = P_h [1, T] V_h, batched over heads: only the
 * new query's row of each head ([H, T]), never the whole [H, T, T] block. */
static tandem_gemm_desc kv_desc(const tandem_model_kv *kv, int scores) {
    tandem_gemm_desc g;
    memset(&g, 0, sizeof g);
    g.a_type = g.b_type = kv->m->dims.bf16 ? TANDEM_BF16 : TANDEM_F32;
    g.m = 1;
    g.batch = kv->H;
    const int64_t T = kv->T, dh = kv->dh;
    if (scores) {
        g.trans_b = 1, g.n = T, g.k = dh;
        g.stride_a = dh, g.stride_b = T * dh, g.stride_c = T;
    } else {
        g.n = dh, g.k = T;
        g.stride_a = T, g.stride_b = T * dh, g.stride_c = dh;
    }
    return g;
}

static tandem_status kv_prepare(tandem_model_kv *kv) {
    const tandem_model_dims *d = &kv->m->dims;
    const int64_t lin[][2] = {{d->d, 3 * d->d}, {d->d, d->d}, {d->d, d->ff}, {d->ff, d->d},
                              {d->group, d->d}, {d->d, d->group}, {d->d, d->r}};
    for (size_t i = 0; i < sizeof lin / sizeof lin[0]; i++) {
        /* the MLP fc with its GELU epilogue, as the training forward's (the same GELU: a step
         * here and a whole forward give the same bits where the GEMM does) */
        const tandem_gemm_desc g = (i == 2 ? tandem_model_desc_mlp_fc : tandem_model_desc_linear)(d, 1, lin[i][0],
                                                                                                  lin[i][1]);
        TANDEM_TRY(tandem_dev_gemm_prepare(kv->m->dev, &g));
    }
    if (tandem_attention_fused(&kv->m->attn)) return TANDEM_OK; /* no attention GEMMs */
    tandem_gemm_desc g = kv_desc(kv, 1);
    TANDEM_TRY(tandem_dev_gemm_prepare(kv->m->dev, &g));
    g = kv_desc(kv, 0);
    return tandem_dev_gemm_prepare(kv->m->dev, &g);
}

static tandem_status kv_decl_rows(tandem_model_kv *kv, tandem_pool *pool) {
    const tandem_model_dims *d = &kv->m->dims;
    const tandem_dtype op = d->bf16 ? TANDEM_BF16 : TANDEM_F32;
    TANDEM_TRY(kv_decl(pool, &kv->key_mask, TANDEM_U8, kv->T, 0, 0, "kv.key_mask"));
    TANDEM_TRY(kv_decl(pool, &kv->xa, TANDEM_F32, d->d, 0, 0, "kv.xa"));
    TANDEM_TRY(kv_decl(pool, &kv->xb, TANDEM_F32, d->d, 0, 0, "kv.xb"));
    TANDEM_TRY(kv_decl(pool, &kv->x_mid, TANDEM_F32, d->d, 0, 0, "kv.x_mid"));
    TANDEM_TRY(kv_decl(pool, &kv->h, op, d->d, 0, 0, "kv.h"));
    TANDEM_TRY(kv_decl(pool, &kv->mean, TANDEM_F32, 1, 0, 0, "kv.mean"));
    TANDEM_TRY(kv_decl(pool, &kv->rstd, TANDEM_F32, 1, 0, 0, "kv.rstd"));
    TANDEM_TRY(kv_decl(pool, &kv->qkv, TANDEM_F32, 3 * d->d, 0, 0, "kv.qkv"));
    const int fused = tandem_attention_fused(&kv->m->attn);
    if (fused) TANDEM_TRY(kv_decl(pool, &kv->lse, TANDEM_F32, kv->H, 0, 0, "kv.lse"));
    else TANDEM_TRY(kv_decl(pool, &kv->scores, TANDEM_F32, kv->H, kv->T, 0, "kv.scores"));
    TANDEM_TRY(kv_decl(pool, &kv->o, TANDEM_F32, d->d, 0, 0, "kv.o"));
    TANDEM_TRY(kv_decl(pool, &kv->f, op, d->ff, 0, 0, "kv.f")); /* the GELU epilogue's aux: g's type */
    TANDEM_TRY(kv_decl(pool, &kv->g, op, d->ff, 0, 0, "kv.g"));
    TANDEM_TRY(kv_decl(pool, &kv->pre, TANDEM_F32, d->d, 0, 0, "kv.pre"));
    TANDEM_TRY(kv_decl(pool, &kv->mel, TANDEM_F32, d->group, 0, 0, "kv.mel"));
    TANDEM_TRY(kv_decl(pool, &kv->stop, TANDEM_F32, d->r, 0, 0, "kv.stop"));
    if (!d->bf16) return TANDEM_OK;
    TANDEM_TRY(kv_decl(pool, &kv->q, op, d->d, 0, 0, "kv.q"));
    if (!fused) TANDEM_TRY(kv_decl(pool, &kv->prow, op, kv->H, kv->T, 0, "kv.prow"));
    TANDEM_TRY(kv_decl(pool, &kv->att, op, d->d, 0, 0, "kv.att"));
    TANDEM_TRY(kv_decl(pool, &kv->gin, op, d->group, 0, 0, "kv.gin"));
    return kv_decl(pool, &kv->stage, TANDEM_F32, d->ff + d->group, 0, 0, "kv.stage");
}

tandem_status tandem_model_kv_declare(tandem_model_kv *kv, tandem_model *m, tandem_pool *pool) {
    if (!kv || !m || !pool) return tandem_fail(TANDEM_E_INVALID, "model kv declare: NULL argument");
    memset(kv, 0, sizeof *kv);
    const tandem_model_dims *d = &m->dims;
    if (d->batch != 1)
        return tandem_fail(TANDEM_E_INVALID, "model kv declare: batch %d; the cache serves one "
                           "sequence (declare the model with batch 1)", d->batch);
    kv->m = m;
    kv->T = d->seq, kv->H = d->heads, kv->dh = d->head_dim, kv->ff = d->ff;
    kv->kc = tandem_calloc((size_t)d->layers, sizeof *kv->kc);
    kv->vc = tandem_calloc((size_t)d->layers, sizeof *kv->vc);
    kv->host_mask = tandem_calloc((size_t)kv->T, 1);
    if (!kv->kc || !kv->vc || !kv->host_mask)
        return tandem_fail(TANDEM_E_NOMEM, "model kv declare: out of host memory");
    const tandem_dtype op = d->bf16 ? TANDEM_BF16 : TANDEM_F32;
    for (int l = 0; l < d->layers; l++) {
        char name[64];
        snprintf(name, sizeof name, "kv.layers.%d.k", l);
        TANDEM_TRY(kv_decl(pool, &kv->kc[l], op, kv->H, kv->T, kv->dh, name));
        snprintf(name, sizeof name, "kv.layers.%d.v", l);
        TANDEM_TRY(kv_decl(pool, &kv->vc[l], op, kv->H, kv->T, kv->dh, name));
    }
    TANDEM_TRY(kv_decl_rows(kv, pool));
    return m->dev ? kv_prepare(kv) : TANDEM_OK; /* no device: a planning model (model.h) */
}

void tandem_model_kv_free(tandem_model_kv *kv) {
    if (!kv) return;
    tandem_free(kv->kc);
    tandem_free(kv->vc);
    tandem_free(kv->host_mask);
    memset(kv, 0, sizeof *kv);
}

/* ---- one row -------------------------------------------------------------------------------- */

/* Where an f32 producer writes the GEMM operand t (bf16: the stage from off), and its cast. */
static float *out_of(const tandem_model_kv *kv, tandem_tensor *t, int64_t off) {
    return tandem_seam_out(kv->m->dims.bf16, t, kv->stage, off);
}
static tandem_status publish(const tandem_model_kv *kv, tandem_stream *s, tandem_tensor *t,
                             int64_t off) {
    return tandem_seam_publish(s, kv->m->dims.bf16, out_of(kv, t, off), t, tandem_tensor_numel(t));
}

/* y [1, out] = x [1, in] W^T + beta y + b */
static tandem_status row_linear(const tandem_model_kv *kv, tandem_stream *s, tandem_view x, int w,
                                int b, float beta, tandem_tensor *y, int64_t in, int64_t out) {
    const tandem_gemm_desc g = tandem_model_desc_linear(&kv->m->dims, 1, in, out);
    return tandem_dev_gemm_epi(s, &g, 1.0f, x, tandem_model_weight(kv->m, w), beta,
                               tandem_view_of(y), tandem_model_param_view(kv->m, b)); /* + b */
}

/* kv->h = LN(x) with gain g, bias b (published in bf16 mode). */
static tandem_status row_ln(const tandem_model_kv *kv, tandem_stream *s, const tandem_tensor *x,
                            int g, int b) {
    TANDEM_TRY(tandem_layernorm_fwd(s, F32(x), PARAM(g), PARAM(b), out_of(kv, kv->h, 0), NULL,
                                    F32(kv->mean), F32(kv->rstd), 1, kv->m->dims.d));
    return publish(kv, s, kv->h, 0);
}

/* n floats of the f32 src from element so into the operand tensor dst from element to. */
static tandem_status put(const tandem_model_kv *kv, tandem_stream *s, const tandem_tensor *src,
                         int64_t so, tandem_tensor *dst, int64_t to, int64_t n) {
    if (kv->m->dims.bf16)
        return tandem_cast_f32_bf16(s, tandem_tensor_f32_at(src, so), tandem_tensor_bf16(dst) + to,
                                    n);
    return tandem_dev_copy(s, dst, (size_t)to * sizeof(float), src, (size_t)so * sizeof(float),
                           (size_t)n * sizeof(float));
}

/* The fused kernel on the query row p against the caches [H, T, dh] (kernels/attention.h):
 * the same per-row arithmetic as the whole forward's, so both give the same bits. */
static tandem_status row_attention_fused(const tandem_model_kv *kv, tandem_stream *s, int l, int p,
                                         tandem_view *att) {
    const int T = kv->T, dh = kv->dh, d = kv->m->dims.d, bf = kv->m->dims.bf16;
    const tandem_heads_dims hd = {1, T, kv->H, dh};
    const tandem_attn_layout lay = {p, 1, d, dh, dh, T * dh, d, 0, bf};
    const void *q = bf ? (const void *)tandem_tensor_bf16(kv->q) : (const void *)F32(kv->qkv);
    const void *k = bf ? (const void *)tandem_tensor_bf16(kv->kc[l]) : (const void *)F32(kv->kc[l]);
    const void *v = bf ? (const void *)tandem_tensor_bf16(kv->vc[l]) : (const void *)F32(kv->vc[l]);
    void *o = bf ? (void *)tandem_tensor_bf16(kv->att) : (void *)F32(kv->o);
    TANDEM_TRY(tandem_attn_fused_fwd(s, q, k, v, tandem_tensor_u8(kv->key_mask), o, F32(kv->lse),
                                     NULL, NULL, &hd, &lay, NULL));
    *att = tandem_view_of(bf ? kv->att : kv->o);
    return TANDEM_OK;
}

/* att = softmax_causal(q K^T / sqrt(dh)) V for the row at position p, the row's k, v cached
 * first (kv->qkv holds its q, k, v). Returns the operand the out projection reads. */
static tandem_status row_attention(const tandem_model_kv *kv, tandem_stream *s, int l, int p,
                                   tandem_view *att) {
    const int64_t T = kv->T, dh = kv->dh, d = kv->m->dims.d;
    const int bf = kv->m->dims.bf16;
    for (int h = 0; h < kv->H; h++) {
        TANDEM_TRY(put(kv, s, kv->qkv, d + h * dh, kv->kc[l], (h * T + p) * dh, dh));
        TANDEM_TRY(put(kv, s, kv->qkv, 2 * d + h * dh, kv->vc[l], (h * T + p) * dh, dh));
    }
    if (bf) TANDEM_TRY(put(kv, s, kv->qkv, 0, kv->q, 0, d));
    if (tandem_attention_fused(&kv->m->attn)) return row_attention_fused(kv, s, l, p, att);
    const tandem_view q = tandem_view_of(bf ? kv->q : kv->qkv);
    const tandem_gemm_desc gs = kv_desc(kv, 1), gp = kv_desc(kv, 0);
    const float scale = (float)(1.0 / sqrt((double)dh));
    TANDEM_TRY(tandem_dev_gemm(s, &gs, scale, q, tandem_view_of(kv->kc[l]), 0.0f,
                               tandem_view_of(kv->scores)));
    /* P [H, 1, T]: query row p of each head only */
    const tandem_heads_dims hd = {1, kv->T, kv->H, kv->dh};
    TANDEM_TRY(tandem_softmax_causal_fwd(s, F32(kv->scores), tandem_tensor_u8(kv->key_mask),
                                         F32(kv->scores), 0, &hd, p, 1));
    tandem_view pr = tandem_view_of(kv->scores);
    if (bf) {
        TANDEM_TRY(put(kv, s, kv->scores, 0, kv->prow, 0, kv->H * T));
        pr = tandem_view_of(kv->prow);
    }
    TANDEM_TRY(tandem_dev_gemm(s, &gp, 1.0f, pr, tandem_view_of(kv->vc[l]), 0.0f,
                               tandem_view_of(kv->o)));
    if (bf) TANDEM_TRY(put(kv, s, kv->o, 0, kv->att, 0, d));
    *att = tandem_view_of(bf ? kv->att : kv->o);
    return TANDEM_OK;
}

/* Block l on the row at position p: x → out (model_fwd.c's block_fwd for one row). */
static tandem_status row_block(const tandem_model_kv *kv, tandem_stream *s, int l, int p,
                               const tandem_tensor *x, tandem_tensor *out) {
    const tandem_model_dims *d = &kv->m->dims;
    const tandem_model_layer_params *lp = &kv->m->lp[l];
    const size_t xbytes = (size_t)d->d * sizeof(float);
    tandem_view att;
    TANDEM_TRY(row_ln(kv, s, x, lp->ln1_g, lp->ln1_b));
    TANDEM_TRY(row_linear(kv, s, tandem_view_of(kv->h), lp->qkv_w, lp->qkv_b, 0.0f, kv->qkv, d->d,
                          3 * d->d));
    TANDEM_TRY(row_attention(kv, s, l, p, &att));
    TANDEM_TRY(tandem_dev_copy(s, kv->x_mid, 0, x, 0, xbytes));
    TANDEM_TRY(row_linear(kv, s, att, lp->out_w, lp->out_b, 1.0f, kv->x_mid, d->d, d->d));
    TANDEM_TRY(row_ln(kv, s, kv->x_mid, lp->ln2_g, lp->ln2_b));
    /* g [1, ff] = GELU(h Wfc^T + bfc), f its aux: one GEMM, g in the operand type */
    const tandem_gemm_desc fc = tandem_model_desc_mlp_fc(d, 1, d->d, d->ff);
    const tandem_view fc_b = tandem_model_param_gemm(kv->m, lp->fc_b);
    TANDEM_TRY(tandem_dev_gemm_aux(s, &fc, 1.0f, tandem_view_of(kv->h), tandem_model_weight(kv->m, lp->fc_w), 0.0f,
                                   tandem_view_of(kv->g), &fc_b, tandem_view_of(kv->f)));
    TANDEM_TRY(tandem_dev_copy(s, out, 0, kv->x_mid, 0, xbytes));
    return row_linear(kv, s, tandem_view_of(kv->g), lp->proj_w, lp->proj_b, 1.0f, out, d->ff,
                      d->d);
}

/* The blocks on the row at position p whose embedding is in xa; the last output → *last. */
static tandem_status row_blocks(const tandem_model_kv *kv, tandem_stream *s, int p,
                                tandem_tensor **last) {
    tandem_tensor *x = kv->xa, *y = kv->xb;
    for (int l = 0; l < kv->m->dims.layers; l++) {
        TANDEM_TRY(row_block(kv, s, l, p, x, y));
        tandem_tensor *t = x;
        x = y, y = t;
    }
    *last = x;
    return TANDEM_OK;
}

/* ---- the sequence -------------------------------------------------------------------------- */

/* t = 0 in the operand dtype (bf16 zero is the all-zero bit pattern: f32 zeros over its bytes,
 * and an odd last element cast from a zeroed f32). */
static tandem_status zero_op(const tandem_model_kv *kv, tandem_stream *s, tandem_tensor *t) {
    if (!kv->m->dims.bf16) return tandem_op_fill(s, t, 0.0f);
    const int64_t n = tandem_tensor_numel(t);
    tandem_bf16 *b = tandem_tensor_bf16(t);
    TANDEM_TRY(tandem_fill_f32(s, (float *)(void *)b, n / 2, 0.0f));
    if (!(n & 1)) return TANDEM_OK;
    TANDEM_TRY(tandem_fill_f32(s, F32(kv->mean), 1, 0.0f));
    return tandem_cast_f32_bf16(s, F32(kv->mean), b + n - 1, 1);
}

tandem_status tandem_model_kv_begin(tandem_model_kv *kv, tandem_stream *s, const int32_t *ids,
                                    int count) {
    if (!kv || !kv->m || !s || !ids)
        return tandem_fail(TANDEM_E_INVALID, "model kv begin: NULL argument");
    tandem_model *m = kv->m;
    const tandem_model_dims *d = &m->dims;
    if (count < 1 || count > d->text_len)
        return tandem_fail(TANDEM_E_INVALID, "model kv begin: %d text tokens; expected 1..%d",
                           count, d->text_len);
    TANDEM_TRY(tandem_stream_sync(s)); /* the last upload of host_mask has been read */
    for (int t = 0; t < kv->T; t++) kv->host_mask[t] = (uint8_t)(t < count || t >= d->text_len);
    TANDEM_TRY(tandem_dev_upload(s, kv->key_mask, 0, kv->host_mask, (size_t)kv->T));
    if (d->bf16 && m->wcopy_stale) TANDEM_TRY(tandem_model_cast_weights(m, s));
    /* Keys and values past the current position are read by the GEMMs or loaded into the
     * fused kernel's tiles (weighted by P = 0): zeros, never stale non-finite values. */
    for (int l = 0; l < d->layers; l++) {
        TANDEM_TRY(zero_op(kv, s, kv->kc[l]));
        TANDEM_TRY(zero_op(kv, s, kv->vc[l]));
    }
    if (kv->scores) TANDEM_TRY(tandem_op_fill(s, kv->scores, 0.0f));
    const int sym = m->top.sym_emb;
    const float *pos = PARAM(m->top.pos_emb);
    const size_t row = (size_t)d->d * sizeof(float);
    for (int t = 0; t < count; t++) {
        if (ids[t] < 0 || ids[t] >= d->vocab)
            return tandem_fail(TANDEM_E_INVALID, "model kv begin: token %d at %d; expected "
                               "0..%d", ids[t], t, d->vocab - 1);
        /* x = sym_emb[id] + pos_emb[t] */
        const size_t at = ((size_t)m->param[sym].offset + (size_t)ids[t] * d->d) * sizeof(float);
        TANDEM_TRY(tandem_dev_copy(s, kv->xa, 0, m->params, at, row));
        TANDEM_TRY(tandem_bias_add(s, F32(kv->xa), pos + (size_t)t * d->d, 1, d->d));
        tandem_tensor *last;
        TANDEM_TRY(row_blocks(kv, s, t, &last));
    }
    kv->text_count = count;
    return TANDEM_OK;
}

tandem_status tandem_model_kv_step(tandem_model_kv *kv, tandem_stream *s, int j) {
    if (!kv || !kv->m || !s) return tandem_fail(TANDEM_E_INVALID, "model kv step: NULL argument");
    const tandem_model *m = kv->m;
    const tandem_model_dims *d = &m->dims;
    if (j < 0 || j >= d->mel_len)
        return tandem_fail(TANDEM_E_INVALID, "model kv step: mel position %d; expected 0..%d", j,
                           d->mel_len - 1);
    const int p = d->text_len + j;
    /* prenet input: group j - 1 (the last step's frames), zeros for j = 0 */
    if (j == 0) TANDEM_TRY(tandem_op_fill(s, kv->mel, 0.0f));
    if (d->bf16) TANDEM_TRY(put(kv, s, kv->mel, 0, kv->gin, 0, d->group));
    const tandem_view gin = tandem_view_of(d->bf16 ? kv->gin : kv->mel);
    /* xa = GELU(gin Wp^T + bp) + pos_emb[p] */
    TANDEM_TRY(row_linear(kv, s, gin, m->top.prenet_w, m->top.prenet_b, 0.0f, kv->pre, d->group,
                          d->d));
    TANDEM_TRY(tandem_gelu_fwd(s, F32(kv->pre), F32(kv->xa), NULL, d->d));
    if (kv->drop_p > 0.0f) /* the training distribution of the prenet's output, kept at inference */
        TANDEM_TRY(tandem_prenet_dropout(s, F32(kv->xa), d->d, kv->drop_p, kv->drop_seed, j, NULL, 0));
    TANDEM_TRY(tandem_bias_add(s, F32(kv->xa), PARAM(m->top.pos_emb) + (size_t)p * d->d, 1, d->d));
    tandem_tensor *last;
    TANDEM_TRY(row_blocks(kv, s, p, &last));
    /* final LN, then the heads: mel [r*80], stop [r] */
    TANDEM_TRY(row_ln(kv, s, last, m->top.lnf_g, m->top.lnf_b));
    TANDEM_TRY(row_linear(kv, s, tandem_view_of(kv->h), m->top.mel_w, m->top.mel_b, 0.0f, kv->mel,
                          d->d, d->group));
    return row_linear(kv, s, tandem_view_of(kv->h), m->top.stop_w, m->top.stop_b, 0.0f, kv->stop,
                      d->d, d->r);
}
