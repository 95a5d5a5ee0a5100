/* fc_access.c — stand-in driver: what each registry kernel reads and writes, for the hazard
 * detector (fc_hazard.c). One function per kernel of kernels/registry.h (the X-macro below
 * declares them all, so a kernel added to the registry does not compile here until it says
 * what it touches), computed from its argument struct and the shapes its header documents.
 * Extents are exact where the header gives them: a range declared too large would report a
 * hazard between two streams that touch neighbouring tensors of one pool allocation. A buffer
 * that is read and updated (+=) is declared both read and written. */
#include <stdint.h>

#include "test/fakecuda/fakecuda.h"
#include "kernels/registry.h"

#define R(ptr, bytes) fc_acc_add(L, (ptr), (size_t)(bytes), 0, #ptr)
#define W(ptr, bytes) fc_acc_add(L, (ptr), (size_t)(bytes), 1, #ptr)
#define RW(ptr, bytes) (R(ptr, bytes), W(ptr, bytes))
#define F4 ((size_t)4)

void fc_acc_add(fc_acc_list *L, const void *p, size_t bytes, int write, const char *what) {
    if (!p || bytes == 0 || L->n >= FC_MAX_ACCESS) return;
    const char *dot = what;
    for (const char *c = what; *c; c++)
        if (*c == '>' || *c == '.') dot = c + 1; /* "a->out" -> "out" */
    L->a[L->n++] = (fc_access){(uintptr_t)p, bytes, write, dot};
}

#define ACC(name)                                                                         \
    static void acc_##name(const tandem_k_##name##_args *a, fc_acc_list *L)

/* ---- basic ---- */
ACC(fill_f32) { W(a->out, a->n * F4); }
ACC(scale_f32) { RW(a->x, a->n * F4); }
ACC(axpy_f32) { R(a->x, a->n * F4); RW(a->y, a->n * F4); W(a->y16, a->n * 2); }
ACC(cast_f32_bf16) { R(a->in, a->n * F4); W(a->out, a->n * 2); }
ACC(cast_bf16_f32) { R(a->in, a->n * 2); W(a->out, a->n * F4); }
ACC(row_sum_f32) { R(a->x, (size_t)a->rows * a->cols * F4); W(a->out, a->rows * F4); }

/* ---- gemm: dense row-major items, stride between batch items ---- */
static size_t gemm_elems(int batch, int64_t stride, int64_t rows, int64_t cols) {
    return (size_t)((int64_t)(batch - 1) * stride + rows * cols);
}
ACC(gemm_f32) {
    R(a->a, gemm_elems(a->batch, a->stride_a, a->m, a->k) * F4);
    R(a->b, gemm_elems(a->batch, a->stride_b, a->k, a->n) * F4);
    size_t c = gemm_elems(a->batch, a->stride_c, a->m, a->n) * F4;
    if (a->beta != 0.0f) R(a->c_src ? a->c_src : a->c, c);
    if (a->bias) R(a->bias, (size_t)a->n * F4);
    if (a->epi == TANDEM_K_GEMM_EPI_GELU_AUX) W(a->aux, c);
    if (a->epi == TANDEM_K_GEMM_EPI_DGELU) R(a->aux, c);
    W(a->c, c);
    W(a->bgrad, (size_t)a->batch * a->m * F4);
}
/* C, the bias and aux in C's type: f32 (c, bias, aux) or bf16 (c16, bias16, aux16) */
ACC(gemm_bf16) {
    R(a->a, gemm_elems(a->batch, a->stride_a, a->m, a->k) * 2);
    R(a->b, gemm_elems(a->batch, a->stride_b, a->k, a->n) * 2);
    const size_t ce = a->c16 ? 2 : F4, c = gemm_elems(a->batch, a->stride_c, a->m, a->n) * ce;
    const void *cp = a->c16 ? (const void *)a->c16 : (const void *)a->c;
    const void *bias = a->bias16 ? (const void *)a->bias16 : (const void *)a->bias;
    const void *aux = a->aux16 ? (const void *)a->aux16 : (const void *)a->aux;
    if (a->beta != 0.0f) R(a->c_src ? (const void *)a->c_src : cp, c);
    if (bias) R(bias, (size_t)a->n * ce);
    if (a->epi == TANDEM_K_GEMM_EPI_GELU_AUX) W(aux, c);
    if (a->epi == TANDEM_K_GEMM_EPI_DGELU) R(aux, c);
    W(cp, c);
    W(a->bgrad, (size_t)a->batch * a->m * F4);
}

/* ---- mel ---- */
ACC(mel_stft) {
    R(a->audio, (size_t)a->batch * a->max_samples * F4);
    R(a->lengths, a->batch * F4);
    W(a->mag, (size_t)a->batch * a->max_frames * TANDEM_MEL_N_BINS * F4);
}
ACC(mel_project) {
    size_t nw = 0;
    for (int m = 0; m < TANDEM_MEL_N_MELS; m++) {
        size_t end = (size_t)a->bands.off[m] + (size_t)a->bands.len[m];
        if (end > nw) nw = end;
    }
    R(a->mag, (size_t)a->batch * a->max_frames * TANDEM_MEL_N_BINS * F4);
    R(a->weights, nw * F4);
    R(a->lengths, a->batch * F4);
    W(a->mel, (size_t)a->batch * a->max_frames * TANDEM_MEL_N_MELS * F4);
}
ACC(mel_log) {
    R(a->mel, (size_t)a->batch * a->max_frames * TANDEM_MEL_N_MELS * F4);
    R(a->lengths, a->batch * F4);
    W(a->out, (size_t)a->batch * a->max_frames * TANDEM_MEL_N_MELS * F4);
}
ACC(mel_targets) {
    R(a->lengths, a->batch * F4);
    W(a->frames, a->batch * F4);
    W(a->mask, (size_t)a->batch * a->max_frames * F4);
    W(a->stop, (size_t)a->batch * a->max_frames * F4);
}

/* ---- resample ---- */
ACC(resample) {
    R(a->in, (size_t)a->batch * a->in_stride * F4);
    R(a->in_len, a->batch * F4);
    R(a->cls, a->batch * F4);
    R(a->taps, (size_t)a->n_taps * F4);
    W(a->out, (size_t)a->batch * a->out_stride * F4);
    W(a->out_len, a->batch * F4);
}

/* ---- layers ---- */
ACC(layernorm_fwd) {
    size_t nd = (size_t)a->rows * a->d * F4;
    R(a->x, nd); R(a->gamma, a->d * F4); R(a->beta, a->d * F4);
    W(a->y, nd); W(a->y16, nd / 2); W(a->mean, a->rows * F4); W(a->rstd, a->rows * F4);
}
ACC(layernorm_bwd) {
    size_t nd = (size_t)a->rows * a->d * F4;
    R(a->dy, nd); R(a->dy16, nd / 2); R(a->x, nd); R(a->mean, a->rows * F4); R(a->rstd, a->rows * F4);
    R(a->gamma, a->d * F4);
    if (a->accumulate) R(a->dx, nd);
    W(a->dx, nd); W(a->dx16, nd / 2);
    W(a->scratch, (size_t)tandem_layernorm_bwd_scratch_floats(a->rows, a->d) * F4);
}
ACC(layernorm_bwd_params) {
    R(a->scratch, (size_t)tandem_layernorm_bwd_scratch_floats(a->rows, a->d) * F4);
    RW(a->dbias, (size_t)a->d * F4);
    RW(a->dgamma, a->d * F4);
    RW(a->dbeta, a->d * F4);
}
ACC(mel_rows_pad) {
    R(a->src, (size_t)a->batch * a->mel_len * a->d * F4);
    W(a->dst, (size_t)a->batch * (a->text_len + a->mel_len) * a->d * F4);
}
ACC(mel_rows_take) {
    const size_t es = a->dst ? F4 : 2, d = (size_t)a->d;
    R(a->dst ? (const void *)a->src : (const void *)a->src16, (size_t)a->batch * (a->text_len + a->mel_len) * d * es);
    W(a->dst ? (void *)a->dst : (void *)a->dst16, (size_t)a->batch * a->mel_len * d * es);
}
ACC(prenet_dropout) { RW(a->x, (size_t)a->n * F4); R(a->step_at, sizeof(int)); }
ACC(gemm_epi_apply) {
    const size_t ce = a->c16 ? 2 : F4, c = gemm_elems(a->batch, a->stride_c, a->m, a->n) * ce;
    const void *cp = a->c16 ? (const void *)a->c16 : (const void *)a->c;
    const void *bias = a->bias16 ? (const void *)a->bias16 : (const void *)a->bias;
    const void *aux = a->aux16 ? (const void *)a->aux16 : (const void *)a->aux;
    RW(cp, c);
    if (bias) R(bias, (size_t)a->n * ce);
    if (a->epi == TANDEM_K_GEMM_EPI_GELU_AUX) W(aux, c);
    if (a->epi == TANDEM_K_GEMM_EPI_DGELU) R(aux, c);
}
ACC(gemm_epi_bgrad) {
    R(a->a ? (const void *)a->a : (const void *)a->a16, (size_t)a->rows * a->cols * (a->a ? F4 : 2));
    W(a->out, (size_t)a->cols * F4);
}
ACC(gelu_fwd) { R(a->x, a->n * F4); W(a->y, a->n * F4); W(a->y16, a->n * 2); }
ACC(gelu_bwd) {
    R(a->dy, a->n * F4); R(a->x, a->n * F4); W(a->dx, a->n * F4); W(a->dx16, a->n * 2);
}
ACC(bias_add) { RW(a->y, (size_t)a->rows * a->d * F4); R(a->b, a->d * F4); }
ACC(col_sum_acc) { R(a->dy, (size_t)a->rows * a->d * F4); RW(a->db, a->d * F4); }
ACC(seq_embed_fwd) {
    size_t t = (size_t)a->text_len + (size_t)a->mel_len;
    R(a->tokens, (size_t)a->batch * a->text_len * 4);
    R(a->sym_emb, (size_t)a->vocab * a->d * F4);
    R(a->prenet_out, (size_t)a->batch * a->mel_len * a->d * F4);
    R(a->pos_emb, t * a->d * F4);
    W(a->x, (size_t)a->batch * t * a->d * F4);
}
ACC(seq_embed_bwd) {
    size_t t = (size_t)a->text_len + (size_t)a->mel_len;
    R(a->dx, (size_t)a->batch * t * a->d * F4);
    R(a->tokens, (size_t)a->batch * a->text_len * 4);
    RW(a->d_sym_emb, (size_t)a->vocab * a->d * F4);
    RW(a->d_pos_emb, t * a->d * F4);
    W(a->d_prenet_out, (size_t)a->batch * a->mel_len * a->d * F4);
}
ACC(prenet_input) {
    size_t n = (size_t)a->batch * a->mel_len * a->r * a->n_mels * F4;
    R(a->mels, n);
    W(a->groups, n);
    W(a->groups16, n / 2);
}

/* ---- train ---- */
ACC(l1_masked_fwd) {
    int64_t n = (int64_t)a->batch * a->frames * a->channels;
    R(a->pred, n * F4); R(a->target, n * F4); R(a->mask, (size_t)a->batch * a->frames * F4);
    W(a->partials, (size_t)tandem_k_train_partials(n) * F4);
}
ACC(l1_masked_bwd) {
    size_t n = (size_t)a->batch * a->frames * a->channels * F4;
    R(a->pred, n); R(a->target, n); R(a->mask, (size_t)a->batch * a->frames * F4);
    W(a->dpred, n);
}
ACC(bce_stop_fwd) {
    int64_t n = (int64_t)a->batch * a->frames;
    R(a->logits, n * F4); R(a->target, n * F4); R(a->weight, n * F4);
    W(a->partials, (size_t)tandem_k_train_partials(n) * F4);
}
ACC(bce_stop_bwd) {
    size_t n = (size_t)a->batch * a->frames * F4;
    R(a->logits, n); R(a->target, n); R(a->weight, n);
    W(a->dlogits, n);
}
ACC(sum_squares) {
    R(a->x, a->n * F4);
    W(a->partials, (size_t)tandem_k_train_partials(a->n) * F4);
}
ACC(reduce_sum) { R(a->partials, a->n * F4); W(a->out, F4); W(a->nonfinite, sizeof(int)); }
ACC(nonfinite_check) { R(a->x, a->n * F4); RW(a->flag, sizeof(int)); }
ACC(adamw) {
    size_t n = (size_t)a->n * F4;
    RW(a->param, n); R(a->grad, n); RW(a->m, n); RW(a->v, n);
    R(a->norm_sq, F4); R(a->skip, sizeof(int)); R(a->sched, 3 * F4);
}
ACC(train_schedule) {
    R(a->norm_sq, F4); R(a->skip, sizeof(int));
    RW(a->ctr, TANDEM_K_TRAIN_CTRS * sizeof(int)); W(a->sched, 3 * F4);
}

/* ---- attention ---- */
ACC(qkv_split) {
    size_t n = (size_t)a->batch * a->seq * a->heads * a->head_dim * F4;
    R(a->qkv, 3 * n); W(a->q, n); W(a->k, n); W(a->v, n);
    W(a->q16, n / 2); W(a->k16, n / 2); W(a->v16, n / 2);
}
ACC(qkv_merge_grad) {
    size_t n = (size_t)a->batch * a->seq * a->heads * a->head_dim * F4;
    R(a->dq, n); R(a->dk, n); R(a->dv, n); W(a->dqkv, 3 * n); W(a->dqkv16, 3 * n / 2);
}
ACC(heads_merge) {
    size_t n = (size_t)a->batch * a->seq * a->heads * a->head_dim * F4;
    R(a->o, n); W(a->y, n); W(a->y16, n / 2);
}
ACC(heads_split_grad) {
    size_t n = (size_t)a->batch * a->seq * a->heads * a->head_dim * F4;
    R(a->dy, n); W(a->d_o, n); W(a->d_o16, n / 2);
}
ACC(softmax_causal_fwd) {
    size_t n = (size_t)a->batch * a->heads * a->nq * a->seq;
    R(a->s, n * F4); R(a->key_mask, (size_t)a->batch * a->seq); W(a->p, n * (a->bf16 ? 2 : F4));
}
ACC(softmax_causal_bwd) {
    size_t n = (size_t)a->batch * a->heads * a->seq * a->seq, e = a->bf16 ? 2 : F4;
    R(a->dp, n * F4); R(a->p, n * e); W(a->ds, n * e);
}
/* Guided attention: the probabilities / their gradient of every head (the first ga_heads are
 * touched; the tensor is one range), the key mask, the per-row losses [B, ga_heads, Tm]. */
ACC(ga_fwd) {
    size_t T = (size_t)a->text_len + (size_t)a->mel_len;
    R(a->p, (size_t)a->batch * a->heads * T * T * (a->bf16 ? 2 : F4)); R(a->key_mask, (size_t)a->batch * T);
    W(a->rows, (size_t)a->batch * a->ga_heads * a->mel_len * F4);
}
ACC(ga_bwd) {
    size_t T = (size_t)a->text_len + (size_t)a->mel_len;
    RW(a->dp, (size_t)a->batch * a->heads * T * T * F4); R(a->key_mask, (size_t)a->batch * T);
}

/* Fused attention: strided views (attention.h's layouts) declared from their first to their
 * last element; q, k, v may be column blocks of one tensor (reads may overlap). */
static size_t fa_span(int batch, int rows, int ld, int heads, int hs, int dh) {
    if (batch <= 0 || rows <= 0) return 0;
    return (size_t)(((int64_t)batch * rows - 1) * ld + (int64_t)(heads - 1) * hs + dh);
}
ACC(attn_fused_fwd) {
    const size_t es = a->bf16 ? 2 : F4, tm = (size_t)(a->seq - a->text_len);
    const size_t nq = fa_span(a->batch, a->q_rows, a->ld_q, a->heads, a->hs_q, a->head_dim);
    const size_t nk = fa_span(a->batch, a->seq, a->ld_k, a->heads, a->hs_k, a->head_dim);
    R(a->q, nq * es); R(a->k, nk * es); R(a->v, nk * es);
    R(a->key_mask, (size_t)a->batch * a->seq);
    W(a->o, fa_span(a->batch, a->q_rows, a->ld_o, a->heads, a->head_dim, a->head_dim) * es);
    W(a->lse, (size_t)a->batch * a->heads * a->q_rows * F4);
    if (a->ga_heads > 0) {
        W(a->ga_sum, (size_t)a->batch * a->ga_heads * tm * F4);
        W(a->ga_rows, (size_t)a->batch * a->ga_heads * tm * F4);
    }
}
ACC(attn_fused_bwd) {
    const size_t es = a->bf16 ? 2 : F4, tm = (size_t)(a->seq - a->text_len);
    const size_t nq = fa_span(a->batch, a->seq, a->ld_q, a->heads, a->head_dim, a->head_dim);
    const size_t no = fa_span(a->batch, a->seq, a->ld_o, a->heads, a->head_dim, a->head_dim);
    const size_t ng = fa_span(a->batch, a->seq, a->ld_g, a->heads, a->head_dim, a->head_dim);
    R(a->q, nq * es); R(a->k, nq * es); R(a->v, nq * es);
    R(a->key_mask, (size_t)a->batch * a->seq);
    R(a->o, no * es); R(a->dy, no * F4);
    R(a->lse, (size_t)a->batch * a->heads * a->seq * F4);
    if (a->ga_heads > 0) R(a->ga_sum, (size_t)a->batch * a->ga_heads * tm * F4);
    W(a->dq, ng * F4); W(a->dk, ng * F4); W(a->dv, ng * F4);
}

/* ---- attention_tc: the fused kernels' operands (bf16), and the optional bf16 gradient copies ---- */
ACC(attn_tc_fwd) { acc_attn_fused_fwd(a, L); }
ACC(attn_tc_bwd) {
    const tandem_k_attn_fused_bwd_args *f = &a->f;
    const size_t ng = fa_span(f->batch, f->seq, f->ld_g, f->heads, f->head_dim, f->head_dim);
    acc_attn_fused_bwd(f, L);
    W(a->dq16, ng * 2); W(a->dk16, ng * 2); W(a->dv16, ng * 2);
}

/* ---- batch_prep ---- */
ACC(batch_prep) {
    R(a->text_lengths, a->batch * F4);
    R(a->frame_lengths, a->batch * F4);
    R(a->frame_mask, (size_t)a->batch * a->frames * F4);
    W(a->key_mask, (size_t)a->batch * ((size_t)a->text_len + a->mel_len));
    W(a->l1_weight, (size_t)a->batch * a->frames * F4);
}

void fc_kernel_accesses(int kernel_id, const void *args, fc_acc_list *L) {
    L->n = 0;
    switch (kernel_id) {
#define FC_ACC_CASE(name, group)                                                          \
    case TANDEM_KID_##name: acc_##name((const tandem_k_##name##_args *)args, L); break;
        TANDEM_KERNEL_LIST(FC_ACC_CASE)
#undef FC_ACC_CASE
    default: break;
    }
}
