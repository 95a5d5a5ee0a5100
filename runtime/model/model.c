/* model.c — sizes, the parameter table, declaration of every model tensor into the pool, GEMM
 * shape preparation, parameter initialisation (see model.h). The passes are model_fwd.c and
 * model_bwd.c. */
#include "runtime/model/model.h"

#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kernels/attention_tc.h"
#include "kernels/layers.h"
#include "kernels/train.h"
#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/core/launch.h"

#define PARAM_ALIGN 64 /* elements: 256 bytes, the device arena alignment */

/* ---- sizes ---------------------------------------------------------------------------------- */

tandem_status tandem_model_dims_from_config(const tandem_config *cfg, int vocab, tandem_model_dims *out) {
    if (!cfg || !out) return tandem_fail(TANDEM_E_INVALID, "model dims: NULL argument");
    TANDEM_TRY(tandem_config_check(cfg));
    tandem_model_dims d;
    memset(&d, 0, sizeof d);
    d.bf16 = cfg->precision == TANDEM_PRECISION_BF16; /* refused later on a host device */
    d.tf32 = !d.bf16 && cfg->tf32;
    d.strict_gemm = cfg->strict_gemm;
    d.attn_materialised = cfg->attention == 2 ? 1 : cfg->attention == 1 ? 0 : TANDEM_ATTN_AUTO;
    d.batch = cfg->batch_size;
    d.d = cfg->d_model;
    d.layers = cfg->layers;
    d.heads = cfg->heads;
    d.head_dim = cfg->d_model / cfg->heads;
    d.ff = 4 * cfg->d_model;
    d.r = cfg->reduction;
    d.n_mels = cfg->n_mels;
    d.group = cfg->reduction * cfg->n_mels;
    d.text_len = cfg->max_text;
    d.frames = cfg->max_frames;
    d.mel_len = cfg->max_frames / cfg->reduction;
    d.seq = d.text_len + d.mel_len;
    d.vocab = vocab;
    d.micro_batches = cfg->grad_accum;
    *out = d;
    return TANDEM_OK;
}

static tandem_status check_dims(const tandem_model_dims *d) {
    if (d->batch < 1 || d->d < 1 || d->layers < 1 || d->heads < 1 || d->r < 1 ||
        d->n_mels < 1 || d->text_len < 1 || d->frames < 1 || d->vocab < 1 ||
        d->micro_batches < 1)
        return tandem_fail(TANDEM_E_INVALID,
                           "model: bad sizes batch=%d d=%d layers=%d heads=%d r=%d n_mels=%d "
                           "max_text=%d max_frames=%d vocab=%d grad_accum=%d; expected all >= 1",
                           d->batch, d->d, d->layers, d->heads, d->r, d->n_mels, d->text_len,
                           d->frames, d->vocab, d->micro_batches);
    if (d->d % d->heads || d->head_dim != d->d / d->heads || d->ff != 4 * d->d ||
        d->frames % d->r || d->mel_len != d->frames / d->r || d->group != d->r * d->n_mels ||
        d->seq != d->text_len + d->mel_len)
        return tandem_fail(TANDEM_E_INVALID,
                           "model: inconsistent sizes (d %d, heads %d, head_dim %d, ff %d, frames "
                           "%d, r %d, mel_len %d, group %d, seq %d); use "
                           "tandem_model_dims_from_config", d->d, d->heads, d->head_dim, d->ff,
                           d->frames, d->r, d->mel_len, d->group, d->seq);
    if (d->n_classes < 0 || d->n_classes > TANDEM_MODEL_MAX_CLASSES ||
        (d->n_classes > 0 && d->class_frames[d->n_classes - 1] != d->frames))
        return tandem_fail(TANDEM_E_INVALID, "model: %d shape classes, the largest %d frames; expected 0..%d "
                           "classes, the largest = max_frames %d", d->n_classes,
                           d->n_classes > 0 && d->n_classes <= TANDEM_MODEL_MAX_CLASSES
                               ? d->class_frames[d->n_classes - 1] : 0,
                           TANDEM_MODEL_MAX_CLASSES, d->frames);
    for (int c = 0; c < d->n_classes; c++)
        if (d->class_frames[c] < d->r || d->class_frames[c] % d->r || (c && d->class_frames[c] <= d->class_frames[c - 1]))
            return tandem_fail(TANDEM_E_INVALID, "model: shape class %d has %d frames; expected ascending "
                               "multiples of reduction %d", c, d->class_frames[c], d->r);
    /* Row counts are int in the kernels' argument structs. */
    if ((int64_t)d->batch * d->seq * d->ff > INT_MAX ||
        (int64_t)d->batch * d->heads * d->seq * d->seq > INT_MAX)
        return tandem_fail(TANDEM_E_INVALID,
                           "model: batch %d x seq %d is too large (activations over 2^31 "
                           "elements)", d->batch, d->seq);
    return TANDEM_OK;
}

/* ---- phases ---------------------------------------------------------------------------------- */

int tandem_model_phase_in_fwd(const tandem_model *m) { (void)m; return 0; }
int tandem_model_phase_layer_fwd(const tandem_model *m, int l) { (void)m; return 1 + l; }
int tandem_model_phase_out_fwd(const tandem_model *m) { return 1 + m->dims.layers; }
int tandem_model_phase_out_bwd(const tandem_model *m) { return 2 + m->dims.layers; }
int tandem_model_phase_layer_bwd(const tandem_model *m, int l) {
    return 3 + m->dims.layers + (m->dims.layers - 1 - l);
}
int tandem_model_phase_in_bwd(const tandem_model *m) { return 3 + 2 * m->dims.layers; }
int tandem_model_phase_opt(const tandem_model *m) { return 4 + 2 * m->dims.layers; }

/* ---- GEMM descriptors ------------------------------------------------------------------------ */

static tandem_gemm_desc desc(const tandem_model_dims *dm, int ta, int tb, int64_t m, int64_t n,
                             int64_t k) {
    tandem_gemm_desc g;
    memset(&g, 0, sizeof g); /* C f32 */
    g.a_type = g.b_type = dm->bf16 ? TANDEM_BF16 : TANDEM_F32;
    g.tf32 = dm->tf32 && !dm->bf16;
    g.trans_a = ta;
    g.trans_b = tb;
    g.m = m;
    g.n = n;
    g.k = k;
    g.batch = 1;
    return g;
}

tandem_gemm_desc tandem_model_desc_linear(const tandem_model_dims *dm, int64_t rows, int64_t in,
                                          int64_t out) {
    tandem_gemm_desc g = desc(dm, 0, 1, rows, out, in);
    g.epilogue = TANDEM_GEMM_EPI_BIAS; /* + b in the GEMM: no bias pass over y */
    return g;
}
tandem_gemm_desc tandem_model_desc_mlp_fc(const tandem_model_dims *dm, int64_t rows, int64_t in,
                                          int64_t out) {
    tandem_gemm_desc g = tandem_model_desc_linear(dm, rows, in, out);
    g.epilogue = TANDEM_GEMM_EPI_GELU_AUX_BIAS; /* g = GELU(f) and f in one pass, no gelu_fwd */
    g.c_type = dm->bf16 ? TANDEM_BF16 : TANDEM_F32; /* g: a GEMM-only activation */
    return g;
}
int tandem_model_qkv_bf16(const tandem_model_dims *dm) {
    return dm->bf16 && dm->attn_materialised == 0 && tandem_k_attn_tc_ok(dm->head_dim);
}
int tandem_model_dqkv_bf16(const tandem_model *m) {
    return m->dims.bf16 && (!tandem_attention_fused(&m->attn) || tandem_attention_tc(&m->attn));
}
tandem_gemm_desc tandem_model_desc_qkv(const tandem_model_dims *dm, int64_t rows, int64_t in, int64_t out) {
    tandem_gemm_desc g = tandem_model_desc_linear(dm, rows, in, out);
    if (tandem_model_qkv_bf16(dm)) g.c_type = TANDEM_BF16; /* the tensor-core attention's operand */
    return g;
}
tandem_gemm_desc tandem_model_desc_linear_dx(const tandem_model_dims *dm, int64_t rows, int64_t in,
                                             int64_t out) {
    return desc(dm, 0, 0, rows, in, out);
}
tandem_gemm_desc tandem_model_desc_ln_dx(const tandem_model_dims *dm, int64_t rows, int64_t in, int64_t out) {
    tandem_gemm_desc g = desc(dm, 0, 0, rows, in, out);
    g.c_type = dm->bf16 ? TANDEM_BF16 : TANDEM_F32; /* a LayerNorm backward's dy */
    return g;
}
tandem_gemm_desc tandem_model_desc_mlp_proj_dx(const tandem_model_dims *dm, int64_t rows, int64_t in,
                                               int64_t out) {
    tandem_gemm_desc g = desc(dm, 0, 0, rows, in, out);
    g.epilogue = TANDEM_GEMM_EPI_DGELU; /* df = dg GELU'(f) in one pass, no gelu_bwd */
    g.c_type = dm->bf16 ? TANDEM_BF16 : TANDEM_F32; /* df: the fc backward's GEMM operand */
    return g;
}
tandem_gemm_desc tandem_model_desc_linear_dw(const tandem_model_dims *dm, int64_t rows, int64_t in,
                                             int64_t out) {
    return desc(dm, 1, 0, out, in, rows);
}
tandem_gemm_desc tandem_model_desc_linear_dw_bgrad(const tandem_model_dims *dm, int64_t rows, int64_t in,
                                                   int64_t out) {
    tandem_gemm_desc g = tandem_model_desc_linear_dw(dm, rows, in, out);
    g.epilogue = TANDEM_GEMM_EPI_BGRAD; /* colsum(dy) in the same pass: no column-sum kernel re-reads dy */
    return g;
}
/* The forward, weight-gradient and dx GEMMs of one linear layer (rows, in, out): i indexes the
 * block's linear layers as prepare_class_gemms lists them (0 prenet, 1 qkv, 2 attention output,
 * 3 MLP fc, 4 MLP proj, 5 a head). */
static tandem_status prepare_linear(tandem_model *m, int i, int64_t rows, int64_t in, int64_t out) {
    const tandem_model_dims *d = &m->dims;
    tandem_gemm_desc g = (i == 3   ? tandem_model_desc_mlp_fc
                          : i == 1 ? tandem_model_desc_qkv
                                   : tandem_model_desc_linear)(d, rows, in, out);
    TANDEM_TRY(tandem_dev_gemm_prepare(m->dev, &g));
    /* the bias gradients of the attention output (2) and MLP proj (4) come from the LN backward */
    g = (i == 2 || i == 4 ? tandem_model_desc_linear_dw : tandem_model_desc_linear_dw_bgrad)(d, rows, in, out);
    TANDEM_TRY(tandem_dev_gemm_prepare(m->dev, &g));
    if (i == 0) return TANDEM_OK; /* the prenet's input is data: no dx */
    g = (i == 4   ? tandem_model_desc_mlp_proj_dx
         : i == 1 || i == 3 ? tandem_model_desc_ln_dx /* their dx is an LN backward's dy */
                            : tandem_model_desc_linear_dx)(d, rows, in, out);
    return tandem_dev_gemm_prepare(m->dev, &g);
}

/* Every GEMM shape of the current dims.frames (one shape class). */
static tandem_status prepare_class_gemms(tandem_model *m) {
    const tandem_model_dims *d = &m->dims;
    const int64_t N = (int64_t)d->batch * d->seq, Np = (int64_t)d->batch * d->mel_len;
    /* (rows, in, out) of every linear layer; the last block's past its attention: Np rows */
    const int64_t lin[][3] = {
        {Np, d->group, d->d},          /* prenet */
        {N, d->d, 3 * (int64_t)d->d},  /* qkv */
        {N, d->d, d->d},               /* attention output (Np rows in the last block) */
        {N, d->d, d->ff},              /* MLP fc (likewise) */
        {N, d->ff, d->d},              /* MLP proj (likewise) */
        {Np, d->d, d->group},          /* mel head */
        {Np, d->d, d->r},              /* stop head */
    };
    for (int i = 0; i < (int)(sizeof lin / sizeof lin[0]); i++) {
        const int kind = i < 5 ? i : 5; /* the two heads: one kind */
        const int past_attention = i >= 2 && i <= 4; /* N rows in blocks 0..L-2, Np in the last */
        if (past_attention && d->layers > 1) TANDEM_TRY(prepare_linear(m, kind, N, lin[i][1], lin[i][2]));
        TANDEM_TRY(prepare_linear(m, kind, past_attention ? Np : lin[i][0], lin[i][1], lin[i][2]));
    }
    return tandem_attention_prepare(m->dev, &m->attn); /* its three batched shapes, either precision */
}

/* ... of every shape class (length bucketing), the declared shape last, where dims stay. */
static tandem_status prepare_gemms(tandem_model *m) {
    for (int c = 0; c + 1 < m->full.n_classes; c++) {
        TANDEM_TRY(tandem_model_use_frames(m, m->full.class_frames[c]));
        TANDEM_TRY(prepare_class_gemms(m));
    }
    TANDEM_TRY(tandem_model_use_frames(m, 0));
    return prepare_class_gemms(m);
}

tandem_status tandem_model_use_frames(tandem_model *m, int frames) {
    const tandem_model_dims *f = &m->full;
    if (frames == 0) frames = f->frames;
    int ok = frames == f->frames;
    for (int c = 0; c < f->n_classes && !ok; c++) ok = frames == f->class_frames[c];
    if (!ok)
        return tandem_fail(TANDEM_E_INVALID, "model: a batch of %d frames; expected max_frames %d or one of the "
                           "%d shape classes planned at declare", frames, f->frames, f->n_classes);
    m->dims.frames = frames;
    m->dims.mel_len = frames / f->r;
    m->dims.seq = f->text_len + m->dims.mel_len;
    m->attn.seq = m->dims.seq;
    return TANDEM_OK;
}

/* ---- parameter table --------------------------------------------------------------------------- */

/* Adds one entry (or only counts, when m->param is NULL). Returns its index. */
static int add_param(tandem_model *m, const char *name, int ndim, int64_t d0, int64_t d1,
                     tandem_param_init init, float std, int decay) {
    int idx = m->n_params++;
    if (!m->param) return idx;
    tandem_model_param *p = &m->param[idx];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndim = ndim;
    p->shape[0] = d0;
    p->shape[1] = ndim > 1 ? d1 : 0;
    p->numel = ndim > 1 ? d0 * d1 : d0;
    p->init = init;
    p->std = std;
    p->decay = decay;
    return idx;
}

/* The table in checkpoint order. Init: N(0, 0.02) for matrices and embeddings, the residual
 * projections scaled by 1/sqrt(2L) (GPT-2) so the residual stream's variance does not grow with
 * depth; LayerNorm gain 1, every bias 0. */
static void build_table(tandem_model *m) {
    const tandem_model_dims *d = &m->dims;
    const float std = 0.02f, res_std = 0.02f / sqrtf(2.0f * (float)d->layers);
    char nm[TANDEM_MODEL_PARAM_NAME_MAX];
    m->n_params = 0;
    m->top.sym_emb = add_param(m, "sym_emb.weight", 2, d->vocab, d->d, TANDEM_PARAM_NORMAL, std, 0);
    m->top.pos_emb = add_param(m, "pos_emb.weight", 2, d->seq, d->d, TANDEM_PARAM_NORMAL, std, 0);
    m->top.prenet_w = add_param(m, "prenet.weight", 2, d->d, d->group, TANDEM_PARAM_NORMAL, std, 1);
    m->top.prenet_b = add_param(m, "prenet.bias", 1, d->d, 0, TANDEM_PARAM_ZEROS, 0, 0);
    for (int l = 0; l < d->layers; l++) {
        tandem_model_layer_params lp;
#define LP(field, suffix, nd, a, b, init, sd, dec)                                        \
    snprintf(nm, sizeof nm, "layers.%d.%s", l, suffix);                                  \
    lp.field = add_param(m, nm, nd, a, b, init, sd, dec)
        LP(ln1_g, "ln1.weight", 1, d->d, 0, TANDEM_PARAM_ONES, 0, 0);
        LP(ln1_b, "ln1.bias", 1, d->d, 0, TANDEM_PARAM_ZEROS, 0, 0);
        LP(qkv_w, "attn.qkv.weight", 2, 3 * d->d, d->d, TANDEM_PARAM_NORMAL, std, 1);
        LP(qkv_b, "attn.qkv.bias", 1, 3 * d->d, 0, TANDEM_PARAM_ZEROS, 0, 0);
        LP(out_w, "attn.out.weight", 2, d->d, d->d, TANDEM_PARAM_NORMAL, res_std, 1);
        LP(out_b, "attn.out.bias", 1, d->d, 0, TANDEM_PARAM_ZEROS, 0, 0);
        LP(ln2_g, "ln2.weight", 1, d->d, 0, TANDEM_PARAM_ONES, 0, 0);
        LP(ln2_b, "ln2.bias", 1, d->d, 0, TANDEM_PARAM_ZEROS, 0, 0);
        LP(fc_w, "mlp.fc.weight", 2, d->ff, d->d, TANDEM_PARAM_NORMAL, std, 1);
        LP(fc_b, "mlp.fc.bias", 1, d->ff, 0, TANDEM_PARAM_ZEROS, 0, 0);
        LP(proj_w, "mlp.proj.weight", 2, d->d, d->ff, TANDEM_PARAM_NORMAL, res_std, 1);
        LP(proj_b, "mlp.proj.bias", 1, d->d, 0, TANDEM_PARAM_ZEROS, 0, 0);
#undef LP
        if (m->lp) m->lp[l] = lp;
    }
    m->top.lnf_g = add_param(m, "ln_f.weight", 1, d->d, 0, TANDEM_PARAM_ONES, 0, 0);
    m->top.lnf_b = add_param(m, "ln_f.bias", 1, d->d, 0, TANDEM_PARAM_ZEROS, 0, 0);
    m->top.mel_w = add_param(m, "mel_head.weight", 2, d->group, d->d, TANDEM_PARAM_NORMAL, std, 1);
    m->top.mel_b = add_param(m, "mel_head.bias", 1, d->group, 0, TANDEM_PARAM_ZEROS, 0, 0);
    m->top.stop_w = add_param(m, "stop_head.weight", 2, d->r, d->d, TANDEM_PARAM_NORMAL, std, 1);
    m->top.stop_b = add_param(m, "stop_head.bias", 1, d->r, 0, TANDEM_PARAM_ZEROS, 0, 0);
}

tandem_status tandem_model_param_table(const tandem_model_dims *d, tandem_model_param **out, int *n) {
    tandem_model m;
    memset(&m, 0, sizeof m);
    m.dims = *d;
    build_table(&m); /* counts only: m.param is NULL */
    m.param = tandem_calloc((size_t)m.n_params, sizeof *m.param);
    if (!m.param) return tandem_fail(TANDEM_E_NOMEM, "model: out of host memory for %d parameter entries", m.n_params);
    build_table(&m);
    *out = m.param;
    *n = m.n_params;
    return TANDEM_OK;
}

/* Offsets: decayed parameters first (one span for AdamW with decay), then the rest. */
static void assign_offsets(tandem_model *m) {
    int64_t off = 0;
    m->n_real = 0;
    for (int pass = 1; pass >= 0; pass--) {
        for (int i = 0; i < m->n_params; i++) {
            tandem_model_param *p = &m->param[i];
            if (p->decay != pass) continue;
            p->offset = off;
            off += (p->numel + PARAM_ALIGN - 1) / PARAM_ALIGN * PARAM_ALIGN;
            m->n_real += p->numel;
        }
        if (pass == 1) m->decay_end = off;
    }
    m->n_flat = off;
}

int tandem_model_grad_stages(const tandem_model *m) { return m->dims.layers + 2; }

/* The parameters of stage k (tandem_model_grad_stage's order); returns how many. */
static int stage_params(const tandem_model *m, int k, int idx[12]) {
    const tandem_model_top_params *t = &m->top;
    if (k == 0) {
        const int v[6] = {t->mel_w, t->mel_b, t->stop_w, t->stop_b, t->lnf_g, t->lnf_b};
        memcpy(idx, v, sizeof v);
        return 6;
    }
    if (k == m->dims.layers + 1) {
        const int v[4] = {t->sym_emb, t->pos_emb, t->prenet_w, t->prenet_b};
        memcpy(idx, v, sizeof v);
        return 4;
    }
    const tandem_model_layer_params *p = &m->lp[m->dims.layers - k];
    const int v[12] = {p->ln1_g, p->ln1_b, p->qkv_w, p->qkv_b, p->out_w, p->out_b,
                       p->ln2_g, p->ln2_b, p->fc_w, p->fc_b, p->proj_w, p->proj_b};
    memcpy(idx, v, sizeof v);
    return 12;
}

tandem_status tandem_model_grad_stage(const tandem_model *m, int k, tandem_model_grads_final_fn fn, void *ctx,
                                      tandem_stream *s) {
    int idx[12];
    const int n = stage_params(m, k, idx);
    int64_t b[12], e[12]; /* [begin, end) with the alignment gap, sorted by begin */
    for (int i = 0; i < n; i++) {
        const tandem_model_param *p = &m->param[idx[i]];
        int j = i;
        for (; j > 0 && b[j - 1] > p->offset; j--) b[j] = b[j - 1], e[j] = e[j - 1];
        b[j] = p->offset, e[j] = p->offset + (p->numel + PARAM_ALIGN - 1) / PARAM_ALIGN * PARAM_ALIGN;
    }
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && b[j] == e[j - 1]) j++; /* adjacent: one range */
        TANDEM_TRY(fn(ctx, s, b[i], e[j - 1] - b[i]));
        i = j;
    }
    return TANDEM_OK;
}

int tandem_model_find_param(const tandem_model *m, const char *name) {
    for (int i = 0; i < m->n_params; i++)
        if (strcmp(m->param[i].name, name) == 0) return i;
    return -1;
}

float *tandem_model_param_f32(const tandem_model *m, int idx) {
    return tandem_tensor_f32_at(m->params, m->param[idx].offset);
}
float *tandem_model_grad_f32(const tandem_model *m, int idx) {
    return tandem_tensor_f32_at(m->grads, m->param[idx].offset);
}
tandem_view tandem_model_weight(const tandem_model *m, int idx) {
    if (!m->dims.bf16) return tandem_view_at(m->params, m->param[idx].offset);
    assert(m->param[idx].offset + m->param[idx].numel <= m->decay_end); /* a linear weight */
    return tandem_view_at(m->wcopy, m->param[idx].offset);
}
tandem_view tandem_model_param_view(const tandem_model *m, int idx) {
    return tandem_view_at(m->params, m->param[idx].offset);
}
tandem_view tandem_model_param_gemm(const tandem_model *m, int idx) {
    return m->dims.bf16 ? tandem_view_at(m->wcopy, m->param[idx].offset) : tandem_model_param_view(m, idx);
}
tandem_view tandem_model_grad_view(const tandem_model *m, int idx) {
    return tandem_view_at(m->grads, m->param[idx].offset);
}

void tandem_model_params_changed(tandem_model *m) {
    if (m) m->wcopy_stale = 1;
}

tandem_status tandem_model_cast_weights(tandem_model *m, tandem_stream *s) {
    if (!m || !s) return tandem_fail(TANDEM_E_INVALID, "model cast weights: NULL argument");
    if (!m->dims.bf16) return TANDEM_OK;
    TANDEM_TRY(tandem_cast_f32_bf16(s, tandem_tensor_f32(m->params), tandem_tensor_bf16(m->wcopy),
                                    m->n_flat));
    m->wcopy_stale = 0;
    return TANDEM_OK;
}

/* ---- declaration -------------------------------------------------------------------------------- */

typedef struct decl_ctx {
    tandem_pool *pool;
    tandem_lifetime life;
    int first, last;
} decl_ctx;

static tandem_status decl(const decl_ctx *c, tandem_tensor **out, tandem_dtype dt, int nd,
                          int64_t d0, int64_t d1, int64_t d2, int64_t d3, const char *fmt, ...)
    TANDEM_PRINTF(9, 10);

static tandem_status decl(const decl_ctx *c, tandem_tensor **out, tandem_dtype dt, int nd,
                          int64_t d0, int64_t d1, int64_t d2, int64_t d3, const char *fmt, ...) {
    char name[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    const int64_t shape[4] = {d0, d1, d2, d3};
    return tandem_pool_declare(c->pool, name, dt, nd, shape, c->life, c->first, c->last, out);
}

static decl_ctx per_step(tandem_pool *pool, int first, int last) {
    decl_ctx c = {pool, TANDEM_PER_STEP, first, last};
    return c;
}

/* The phases per-step tensors live between, and the dtype of GEMM-only activations. */
typedef struct decl_phases {
    int in_f, out_f, out_b, in_b, opt; /* tandem_model_phase_* */
    int lf0, lf_last, lb0, lb_last;    /* the first and last block's forward and backward */
    tandem_dtype ga; /* GEMM-only activations: bf16 in bf16 mode (model.h, "Precision") */
} decl_phases;

static decl_phases phases_of(const tandem_model *m) {
    const int L = m->dims.layers;
    decl_phases ph;
    ph.in_f = tandem_model_phase_in_fwd(m);
    ph.out_f = tandem_model_phase_out_fwd(m);
    ph.out_b = tandem_model_phase_out_bwd(m);
    ph.in_b = tandem_model_phase_in_bwd(m);
    ph.opt = tandem_model_phase_opt(m);
    ph.lf0 = tandem_model_phase_layer_fwd(m, 0);
    ph.lf_last = tandem_model_phase_layer_fwd(m, L - 1);
    ph.lb0 = tandem_model_phase_layer_bwd(m, 0);
    ph.lb_last = tandem_model_phase_layer_bwd(m, L - 1);
    ph.ga = m->dims.bf16 ? TANDEM_BF16 : TANDEM_F32;
    return ph;
}

/* Parameters, optimizer state, loss and norm slots, host-length slots. */
static tandem_status declare_persistent(tandem_model *m, tandem_pool *pool) {
    const tandem_model_dims *d = &m->dims;
    const int64_t B = d->batch;
    decl_ctx pc = {pool, TANDEM_PERSISTENT, 0, 0};
    TANDEM_TRY(decl(&pc, &m->params, TANDEM_F32, 1, m->n_flat, 0, 0, 0, "model.params"));
    if (d->bf16)
        TANDEM_TRY(decl(&pc, &m->wcopy, TANDEM_BF16, 1, m->n_flat, 0, 0, 0, "model.weights_bf16"));
    if (!d->forward_only) {
        TANDEM_TRY(decl(&pc, &m->grads, TANDEM_F32, 1, m->n_flat, 0, 0, 0, "model.grads"));
        TANDEM_TRY(decl(&pc, &m->adam_m, TANDEM_F32, 1, m->n_flat, 0, 0, 0, "model.adam_m"));
        TANDEM_TRY(decl(&pc, &m->adam_v, TANDEM_F32, 1, m->n_flat, 0, 0, 0, "model.adam_v"));
    }
    TANDEM_TRY(decl(&pc, &m->stop_weight, TANDEM_F32, 2, B, d->frames, 0, 0, "model.stop_weight"));
    TANDEM_TRY(decl(&pc, &m->losses, TANDEM_F32, 2, d->micro_batches + 1, TANDEM_MODEL_LOSSES, 0, 0,
                    "model.losses"));
    TANDEM_TRY(decl(&pc, &m->ga_rows, TANDEM_F32, 3, (int64_t)d->layers * B, d->heads, d->mel_len, 0,
                    "model.ga_rows"));
    TANDEM_TRY(decl(&pc, &m->norm_sq, TANDEM_F32, 1, 1, 0, 0, 0, "model.norm_sq"));
    TANDEM_TRY(decl(&pc, &m->skip, TANDEM_I32, 1, 1, 0, 0, 0, "model.skip"));
    TANDEM_TRY(decl(&pc, &m->train_ctr, TANDEM_I32, 1, TANDEM_K_TRAIN_CTRS, 0, 0, 0, "model.train_ctr"));
    TANDEM_TRY(decl(&pc, &m->sched, TANDEM_F32, 1, 3, 0, 0, 0, "model.sched"));
    return decl(&pc, &m->lengths, TANDEM_I32, 3, d->micro_batches + 1, 2, B, 0, "model.lengths");
}

/* The batch-derived inputs and the prenet. */
static tandem_status declare_inputs(tandem_model *m, tandem_pool *pool, const decl_phases *ph) {
    const tandem_model_dims *d = &m->dims;
    const int64_t B = d->batch, Np = B * d->mel_len;
    /* the key mask lives to the last block backward: the guided-attention gradient reads it */
    decl_ctx c = per_step(pool, ph->in_f, d->forward_only ? ph->lf_last : ph->lb0);
    TANDEM_TRY(decl(&c, &m->key_mask, TANDEM_U8, 2, B, d->seq, 0, 0, "model.key_mask"));
    c = per_step(pool, ph->in_f, ph->out_f);
    TANDEM_TRY(decl(&c, &m->l1_weight, TANDEM_F32, 2, B, d->frames, 0, 0, "model.l1_weight"));
    c = per_step(pool, ph->in_f, ph->in_b);
    TANDEM_TRY(decl(&c, &m->groups, ph->ga, 3, B, d->mel_len, d->group, 0, "model.prenet_in"));
    TANDEM_TRY(decl(&c, &m->pre, TANDEM_F32, 2, Np, d->d, 0, 0, "model.prenet_pre"));
    c = per_step(pool, ph->in_f, ph->in_f);
    return decl(&c, &m->pre_act, TANDEM_F32, 2, Np, d->d, 0, 0, "model.prenet_act");
}

/* Block l's input and what its forward keeps for its backward. */
static tandem_status declare_layer(tandem_model *m, tandem_pool *pool, int l,
                                   const decl_phases *ph) {
    const tandem_model_dims *d = &m->dims;
    const int64_t B = d->batch, T = d->seq, D = d->d, H = d->heads, dh = d->head_dim, N = B * T;
    const tandem_dtype ga = ph->ga;
    tandem_model_layer *ly = &m->layer[l];
    /* the block's input: made by the embedding (l = 0) or the previous block */
    decl_ctx c = per_step(pool, l == 0 ? ph->in_f : tandem_model_phase_layer_fwd(m, l - 1),
                          tandem_model_phase_layer_bwd(m, l));
    TANDEM_TRY(decl(&c, &ly->x, TANDEM_F32, 3, B, T, D, 0, "l%d.x", l));
    c = per_step(pool, tandem_model_phase_layer_fwd(m, l), tandem_model_phase_layer_bwd(m, l));
    TANDEM_TRY(decl(&c, &ly->h1, ga, 3, B, T, D, 0, "l%d.ln1", l));
    TANDEM_TRY(decl(&c, &ly->mean1, TANDEM_F32, 1, N, 0, 0, 0, "l%d.ln1_mean", l));
    TANDEM_TRY(decl(&c, &ly->rstd1, TANDEM_F32, 1, N, 0, 0, 0, "l%d.ln1_rstd", l));
    if (tandem_attention_fused(&m->attn)) {
        /* what the fused backward reads: qkv, the softmax statistics and the GA sums */
        TANDEM_TRY(decl(&c, &ly->qkv, ga, 3, B, T, 3 * D, 0, "l%d.qkv", l));
        TANDEM_TRY(decl(&c, &ly->lse, TANDEM_F32, 3, B, H, T, 0, "l%d.attn_lse", l));
        TANDEM_TRY(decl(&c, &ly->ga_sum, TANDEM_F32, 3, B, H, d->mel_len, 0, "l%d.attn_ga_sum", l));
    } else {
        TANDEM_TRY(decl(&c, &ly->q, ga, 4, B, H, T, dh, "l%d.q", l));
        TANDEM_TRY(decl(&c, &ly->k, ga, 4, B, H, T, dh, "l%d.k", l));
        TANDEM_TRY(decl(&c, &ly->v, ga, 4, B, H, T, dh, "l%d.v", l));
        TANDEM_TRY(decl(&c, &ly->p, ga, 4, B, H, T, T, "l%d.attn_p", l));
    }
    TANDEM_TRY(decl(&c, &ly->att, ga, 3, B, T, D, 0, "l%d.attn_heads", l));
    /* past the attention the last block has the mel rows only (model.h): Tr of them per item */
    const int64_t Tr = tandem_model_mlp_rows(d, l) / B, Nr = B * Tr;
    if (l == d->layers - 1) {
        TANDEM_TRY(decl(&c, &ly->x_mel, TANDEM_F32, 3, B, Tr, D, 0, "l%d.x_mel", l));
        TANDEM_TRY(decl(&c, &ly->att_mel, ga, 3, B, Tr, D, 0, "l%d.attn_heads_mel", l));
    }
    TANDEM_TRY(decl(&c, &ly->x_mid, TANDEM_F32, 3, B, Tr, D, 0, "l%d.x_mid", l));
    TANDEM_TRY(decl(&c, &ly->h2, ga, 3, B, Tr, D, 0, "l%d.ln2", l));
    TANDEM_TRY(decl(&c, &ly->mean2, TANDEM_F32, 1, Nr, 0, 0, 0, "l%d.ln2_mean", l));
    TANDEM_TRY(decl(&c, &ly->rstd2, TANDEM_F32, 1, Nr, 0, 0, 0, "l%d.ln2_rstd", l));
    /* f: the GELU epilogue's aux output, of g's type (cuBLASLt's aux type is D's) */
    TANDEM_TRY(decl(&c, &ly->f, ga, 3, B, Tr, d->ff, 0, "l%d.mlp_fc", l));
    return decl(&c, &ly->g, ga, 3, B, Tr, d->ff, 0, "l%d.mlp_act", l);
}

/* The largest gradient written or cast into the bf16 operand scratch (bf16 mode). */
static int64_t staged_floats(const tandem_model_dims *d) {
    const int64_t N = (int64_t)d->batch * d->seq, Np = (int64_t)d->batch * d->mel_len;
    return N * d->ff > Np * d->group ? N * d->ff : Np * d->group;
}

/* The blocks' shared scratch, the final LN, the heads, the loss and the bf16 forward stage. */
static tandem_status declare_outputs(tandem_model *m, tandem_pool *pool, const decl_phases *ph) {
    const tandem_model_dims *d = &m->dims;
    const int64_t B = d->batch, T = d->seq, D = d->d, H = d->heads, dh = d->head_dim;
    decl_ctx c = per_step(pool, ph->lf_last, ph->out_b);
    const int64_t Tm = d->mel_len, Np = B * Tm; /* the last block's output and the final LN: mel rows */
    TANDEM_TRY(decl(&c, &m->x_out, TANDEM_F32, 3, B, Tm, D, 0, "model.x_out"));
    const int fused = tandem_attention_fused(&m->attn);
    c = per_step(pool, ph->lf0, ph->lf_last);
    /* fused fp32: the QKV projection writes each layer's kept qkv itself */
    /* bf16 with the tensor-core attention: the QKV GEMM writes the kept bf16 qkv itself */
    if (!fused || (d->bf16 && !tandem_model_qkv_bf16(d)))
        TANDEM_TRY(decl(&c, &m->qkv, TANDEM_F32, 3, B, T, 3 * D, 0, "model.qkv"));
    if (!fused) TANDEM_TRY(decl(&c, &m->o, TANDEM_F32, 4, B, H, T, dh, "model.attn_o"));
    c = per_step(pool, ph->out_f, ph->out_b);
    TANDEM_TRY(decl(&c, &m->hf, ph->ga, 3, B, Tm, D, 0, "model.ln_f"));
    TANDEM_TRY(decl(&c, &m->meanf, TANDEM_F32, 1, Np, 0, 0, 0, "model.ln_f_mean"));
    TANDEM_TRY(decl(&c, &m->rstdf, TANDEM_F32, 1, Np, 0, 0, 0, "model.ln_f_rstd"));
    TANDEM_TRY(decl(&c, &m->mel_out, TANDEM_F32, 3, B, d->mel_len, d->group, 0, "model.mel_out"));
    TANDEM_TRY(decl(&c, &m->stop_out, TANDEM_F32, 2, B, d->frames, 0, 0, "model.stop_out"));
    TANDEM_TRY(decl(&c, &m->dmel, TANDEM_F32, 3, B, d->mel_len, d->group, 0, "model.d_mel_out"));
    TANDEM_TRY(decl(&c, &m->dstop, TANDEM_F32, 2, B, d->frames, 0, 0, "model.d_stop_out"));
    int64_t np_l1 = tandem_k_train_partials(B * d->frames * d->n_mels);
    int64_t np_bce = tandem_k_train_partials(B * d->frames);
    c = per_step(pool, ph->out_f, ph->out_f);
    TANDEM_TRY(decl(&c, &m->loss_partials, TANDEM_F32, 1, np_l1 > np_bce ? np_l1 : np_bce, 0, 0, 0,
                    "model.loss_partials"));
    if (!d->bf16 || fused) return TANDEM_OK;
    c = per_step(pool, ph->lf0, ph->lf_last);
    return decl(&c, &m->scores, TANDEM_F32, 4, B, H, T, T, "model.attn_scores_f32");
}

/* The materialised attention backward's per-head scratch (attention.h). */
static tandem_status declare_materialised_bwd(tandem_model *m, decl_ctx *c) {
    const tandem_model_dims *d = &m->dims;
    const int64_t B = d->batch, T = d->seq, H = d->heads, dh = d->head_dim;
    if (!d->bf16) /* bf16: dO is written straight into the operand scratch (gbf) */
        TANDEM_TRY(decl(c, &m->d_o, TANDEM_F32, 4, B, H, T, dh, "model.bwd_o"));
    TANDEM_TRY(decl(c, &m->dq, TANDEM_F32, 4, B, H, T, dh, "model.bwd_q"));
    TANDEM_TRY(decl(c, &m->dk, TANDEM_F32, 4, B, H, T, dh, "model.bwd_k"));
    TANDEM_TRY(decl(c, &m->dv, TANDEM_F32, 4, B, H, T, dh, "model.bwd_v"));
    return decl(c, &m->dp, TANDEM_F32, 4, B, H, T, T, "model.bwd_p");
}

/* Gradients of activations and the backward's scratch (none for a forward-only model). */
static tandem_status declare_backward(tandem_model *m, tandem_pool *pool, const decl_phases *ph) {
    const tandem_model_dims *d = &m->dims;
    const int64_t B = d->batch, T = d->seq, D = d->d, H = d->heads, N = B * T;
    decl_ctx c = per_step(pool, ph->out_b, ph->out_b);
    TANDEM_TRY(decl(&c, &m->dhf, TANDEM_F32, 3, B, d->mel_len, D, 0, "model.d_ln_f"));
    c = per_step(pool, ph->out_b, ph->lb_last); /* the last block's mel-row part */
    TANDEM_TRY(decl(&c, &m->dres_mel, TANDEM_F32, 3, B, d->mel_len, D, 0, "model.d_residual_mel"));
    TANDEM_TRY(decl(&c, &m->da_mel, TANDEM_F32, 3, B, d->mel_len, D, 0, "model.bwd_a_mel"));
    c = per_step(pool, ph->out_b, ph->in_b);
    TANDEM_TRY(decl(&c, &m->dres, TANDEM_F32, 3, B, T, D, 0, "model.d_residual"));
    c = per_step(pool, ph->out_b, ph->lb0);
    TANDEM_TRY(decl(&c, &m->ln_scratch, TANDEM_F32, 1,
                    tandem_layernorm_bwd_scratch_floats((int)N, (int)D), 0, 0, 0,
                    "model.ln_bwd_scratch"));
    c = per_step(pool, ph->lb_last, ph->lb0);
    TANDEM_TRY(decl(&c, &m->da, TANDEM_F32, 3, B, T, D, 0, "model.bwd_a"));
    if (d->bf16) /* the qkv and fc dx GEMMs' outputs, the LayerNorm backwards' dy */
        TANDEM_TRY(decl(&c, &m->da16, TANDEM_BF16, 3, B, T, D, 0, "model.bwd_a_bf16"));
    /* df: the DGELU epilogue's output, the fc backward's GEMM operand (its aux f's type) */
    TANDEM_TRY(decl(&c, &m->dff, ph->ga, 3, B, T, d->ff, 0, "model.bwd_ff"));
    if (!tandem_model_dqkv_bf16(m)) TANDEM_TRY(decl(&c, &m->dqkv, TANDEM_F32, 3, B, T, 3 * D, 0, "model.bwd_qkv"));
    const int fused = tandem_attention_fused(&m->attn);
    if (!fused) TANDEM_TRY(declare_materialised_bwd(m, &c));
    c = per_step(pool, ph->in_b, ph->in_b);
    TANDEM_TRY(decl(&c, &m->dpre, TANDEM_F32, 2, B * d->mel_len, D, 0, 0, "model.d_prenet"));
    c = per_step(pool, ph->out_b, ph->in_b); /* every bias gradient, heads to prenet */
    int64_t widest = d->ff > 3 * D ? d->ff : 3 * D;
    if (d->group > widest) widest = d->group;
    TANDEM_TRY(decl(&c, &m->cs_partial, TANDEM_F32, 1, widest, 0, 0, 0,
                    "model.bias_grad_partials"));
    if (d->bf16) {
        c = per_step(pool, ph->out_b, ph->in_b);
        const int64_t staged = staged_floats(d), scores = fused ? 0 : B * H * T * T;
        int64_t nbf = staged > scores ? staged : scores;
        if (N * d->group > nbf) nbf = N * d->group; /* the heads' padded dy (model_bwd.c) */
        TANDEM_TRY(decl(&c, &m->gbf, TANDEM_BF16, 1, nbf, 0, 0, 0, "model.bf16_grad_operand"));
    }
    c = per_step(pool, ph->opt, ph->opt);
    return decl(&c, &m->norm_partials, TANDEM_F32, 1, tandem_k_train_partials(m->n_flat), 0, 0, 0,
                "model.norm_partials");
}

/* Every tensor, in one fixed order (the plan follows declaration order). */
static tandem_status declare_tensors(tandem_model *m, tandem_pool *pool) {
    const decl_phases ph = phases_of(m);
    TANDEM_TRY(declare_persistent(m, pool));
    TANDEM_TRY(declare_inputs(m, pool, &ph));
    for (int l = 0; l < m->dims.layers; l++) TANDEM_TRY(declare_layer(m, pool, l, &ph));
    TANDEM_TRY(declare_outputs(m, pool, &ph));
    if (m->dims.forward_only) return TANDEM_OK; /* inference: nothing of the backward */
    return declare_backward(m, pool, &ph);
}

tandem_status tandem_model_staging_declare(const tandem_model_dims *d, tandem_staging_plan *p) {
    if (!d || !p) return tandem_fail(TANDEM_E_INVALID, "tandem_model_staging_declare: NULL argument");
    const int64_t slots = d->micro_batches + 1;
    TANDEM_TRY(tandem_staging_begin(p, "model", "model device", TANDEM_STAGING_ALWAYS,
                                    "parameter upload chunks, step results, host lengths", NULL));
    TANDEM_TRY(tandem_staging_add(p, "stage", TANDEM_F32, 1, TANDEM_MODEL_STAGE_FLOATS, 0, 0));
    TANDEM_TRY(tandem_staging_add(p, "losses_norm", TANDEM_F32, 1, TANDEM_MODEL_LOSSES * slots + 1, 0, 0));
    TANDEM_TRY(tandem_staging_add(p, "skip_ctr", TANDEM_I32, 1, 1 + TANDEM_K_TRAIN_CTRS, 0, 0));
    return tandem_staging_add(p, "lengths", TANDEM_I32, 3, slots, 2, d->batch);
}

static tandem_status alloc_pinned(tandem_model *m) {
    tandem_staging_plan sp;
    tandem_staging_init(&sp);
    TANDEM_TRY(tandem_model_staging_declare(&m->dims, &sp));
    TANDEM_TRY(tandem_staging_alloc(m->dev, &sp, 0, &m->pinned));
    m->pinned_bytes = sp.block[0].bytes;
    m->stage = tandem_staging_ptr(&sp, 0, m->pinned, 0);
    m->host_out = tandem_staging_ptr(&sp, 0, m->pinned, 1);
    m->host_skip = tandem_staging_ptr(&sp, 0, m->pinned, 2);
    m->host_len = tandem_staging_ptr(&sp, 0, m->pinned, 3);
    return TANDEM_OK;
}

/* What declare and declare_plan share: checks, the table, the tensors. */
static tandem_status declare_common(tandem_model *m, tandem_backend backend, tandem_pool *pool,
                                    const tandem_model_dims *dims) {
    memset(m, 0, sizeof *m);
    TANDEM_TRY(check_dims(dims));
    if (dims->bf16 && backend != TANDEM_BACKEND_CUDA)
        return tandem_fail(TANDEM_E_UNSUPPORTED,
                           "model: precision bf16 needs a CUDA model device; the host backend "
                           "trains in fp32 (set 'precision: fp32' or --precision fp32)");
    m->dims = *dims;
    /* auto on a GPU: materialised (the tensor cores' GEMMs around materialised scores), also in
     * bf16, until a GPU has measured the tensor-core kernels against it (docs/TRAINING.md,
     * "Attention paths"); on the host the fused kernel (docs/BENCHMARKS-training.md) */
    if (m->dims.attn_materialised == TANDEM_ATTN_AUTO) m->dims.attn_materialised = backend == TANDEM_BACKEND_CUDA;
    dims = &m->dims;
    m->full = *dims;
    m->attn.batch = dims->batch;
    m->attn.seq = dims->seq;
    m->attn.heads = dims->heads;
    m->attn.head_dim = dims->head_dim;
    m->attn.bf16 = dims->bf16;
    m->attn.materialised = dims->attn_materialised;

    build_table(m); /* count */
    m->param = tandem_calloc((size_t)m->n_params, sizeof *m->param);
    m->lp = tandem_calloc((size_t)dims->layers, sizeof *m->lp);
    m->layer = tandem_calloc((size_t)dims->layers, sizeof *m->layer);
    if (!m->param || !m->lp || !m->layer)
        return tandem_fail(TANDEM_E_NOMEM, "model: out of host memory for the parameter table");
    build_table(m);
    assign_offsets(m);
    m->wcopy_stale = 1;
    return declare_tensors(m, pool);
}

/* layernorm_bwd's geometry for d columns (its block's [2, d] partials in shared memory). */
static tandem_launch_dims ln_bwd_dims(const tandem_model_dims *d, int cols) {
    tandem_k_layernorm_bwd_args a;
    memset(&a, 0, sizeof a);
    a.rows = d->batch * d->seq;
    a.d = cols;
    tandem_launch_dims dims;
    tandem_kernel_table[TANDEM_KID_layernorm_bwd].geom(&a, &dims);
    return dims;
}

/* Kernels whose launch depends on d_model must fit the device's per-block limits: checked
 * here, when the plan is made, rather than at the first backward step. */
static tandem_status check_kernel_limits(tandem_device *dev, const tandem_model_dims *d) {
    tandem_launch_dims dims = ln_bwd_dims(d, d->d);
    if (tandem_dev_launch_check(dev, TANDEM_KID_layernorm_bwd, &dims) == TANDEM_OK) return TANDEM_OK;
    char why[384];
    snprintf(why, sizeof why, "%s", tandem_last_error());
    int lo = 1, hi = d->d; /* the widest d_model that fits: lo fits, hi does not */
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        dims = ln_bwd_dims(d, mid);
        *(tandem_dev_launch_check(dev, TANDEM_KID_layernorm_bwd, &dims) == TANDEM_OK ? &lo : &hi) = mid;
    }
    return tandem_fail(TANDEM_E_UNSUPPORTED,
                       "model d_model %d: LayerNorm backward keeps 3 x d_model floats per block in shared "
                       "memory, more than this device allows (%s); d_model at most %d here",
                       d->d, why, lo);
}

/* strict_gemm: every prepared GEMM runs as the library's fused plan, or the run does not start. */
static tandem_status check_strict_gemm(tandem_device *dev) {
    char list[1024];
    const int n = tandem_dev_gemm_fallbacks(dev, list, sizeof list);
    if (n == 0) return TANDEM_OK;
    return tandem_fail(TANDEM_E_UNSUPPORTED, "strict_gemm: %d GEMM shape%s on %s cannot run as cuBLASLt's fused "
                       "plan: %s(set strict_gemm: false to run them on the fallback, slower)", n, n == 1 ? "" : "s",
                       dev->info.name, list);
}

tandem_status tandem_model_declare(tandem_model *m, tandem_device *dev, tandem_pool *pool,
                                   const tandem_model_dims *dims) {
    if (!m || !dev || !pool || !dims)
        return tandem_fail(TANDEM_E_INVALID, "tandem_model_declare: NULL argument");
    if (!dims->forward_only) TANDEM_TRY(check_kernel_limits(dev, dims));
    TANDEM_TRY(declare_common(m, dev->info.backend, pool, dims));
    m->dev = dev;
    TANDEM_TRY(prepare_gemms(m));
    if (dims->strict_gemm) TANDEM_TRY(check_strict_gemm(dev));
    TANDEM_TRY(alloc_pinned(m));
    tandem_logf(TANDEM_LOG_DEBUG,
                "model: %d parameter tensors, %" PRId64 " parameters (%" PRId64
                " decayed), flat %" PRId64 ", %s", m->n_params, m->n_real, m->decay_end, m->n_flat,
                dims->bf16 ? "bf16" : "fp32");
    return TANDEM_OK;
}

tandem_status tandem_model_declare_plan(tandem_model *m, tandem_backend backend, tandem_pool *pool,
                                        const tandem_model_dims *dims) {
    if (!m || !pool || !dims)
        return tandem_fail(TANDEM_E_INVALID, "tandem_model_declare_plan: NULL argument");
    return declare_common(m, backend, pool, dims);
}

void tandem_model_free(tandem_model *m) {
    if (!m) return;
    tandem_staging_free(m->dev, m->pinned);
    tandem_free(m->param);
    tandem_free(m->lp);
    tandem_free(m->layer);
    memset(m, 0, sizeof *m);
}

/* ---- initialisation ------------------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1]: never 0, so the log below is finite. */
static double uniform01(uint64_t *s) { return ((splitmix64(s) >> 11) + 1) * (1.0 / 9007199254740992.0); }

tandem_status tandem_model_init_params(tandem_model *m, tandem_stream *s, uint64_t seed) {
    if (!m || !s) return tandem_fail(TANDEM_E_INVALID, "tandem_model_init_params: NULL argument");
    if (tandem_tensor_addr(m->params) == 0)
        return tandem_fail(TANDEM_E_STATE, "model init: the pool is not committed");
    TANDEM_TRY(tandem_op_fill(s, m->params, 0.0f));
    if (!m->dims.forward_only) {
        TANDEM_TRY(tandem_op_fill(s, m->grads, 0.0f));
        TANDEM_TRY(tandem_op_fill(s, m->adam_m, 0.0f));
        TANDEM_TRY(tandem_op_fill(s, m->adam_v, 0.0f));
    }
    TANDEM_TRY(tandem_op_fill(s, m->stop_weight, 1.0f));
    m->wcopy_stale = 1; /* bf16 mode: the next forward casts (after any checkpoint load) */
    for (int i = 0; i < m->n_params; i++) {
        const tandem_model_param *p = &m->param[i];
        /* Each tensor draws from its own stream: its values do not depend on the layout. */
        uint64_t st = seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(i + 1));
        for (int64_t done = 0; done < p->numel;) {
            int64_t n = p->numel - done;
            if (n > TANDEM_MODEL_STAGE_FLOATS) n = TANDEM_MODEL_STAGE_FLOATS;
            for (int64_t j = 0; j < n; j++) {
                float v = p->init == TANDEM_PARAM_ONES ? 1.0f : 0.0f;
                if (p->init == TANDEM_PARAM_NORMAL) { /* Box-Muller, one value per pair */
                    double u1 = uniform01(&st), u2 = uniform01(&st);
                    v = (float)(p->std * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
                }
                m->stage[j] = v;
            }
            const size_t at = (size_t)(p->offset + done) * sizeof(float);
            TANDEM_TRY(tandem_dev_upload(s, m->params, at, m->stage, (size_t)n * sizeof(float)));
            TANDEM_TRY(tandem_stream_sync(s)); /* the stage is reused by the next chunk */
            done += n;
        }
    }
    return TANDEM_OK;
}

/* ---- batch check ----------------------------------------------------------------------------------- */

static tandem_status check_input(const tandem_model *m, const char *role, const tandem_tensor *t,
                                 tandem_dtype dt, int64_t numel) {
    if (!t) return tandem_fail(TANDEM_E_INVALID, "model batch: tensor %s is NULL", role);
    if (tandem_tensor_dtype(t) != dt || tandem_tensor_numel(t) != numel)
        return tandem_fail(TANDEM_E_INVALID,
                           "model batch: %s '%s' is %s with %" PRId64 " elements; expected %s "
                           "with %" PRId64, role, tandem_tensor_name(t),
                           tandem_dtype_name(tandem_tensor_dtype(t)), tandem_tensor_numel(t),
                           tandem_dtype_name(dt), numel);
    if (tandem_tensor_addr(t) == 0)
        return tandem_fail(TANDEM_E_STATE, "model batch: %s '%s' is not committed", role,
                           tandem_tensor_name(t));
    return TANDEM_OK;
}

tandem_status tandem_model_check_batch(const tandem_model *m, const tandem_model_batch *b) {
    if (!m || !b) return tandem_fail(TANDEM_E_INVALID, "model batch: NULL argument");
    const tandem_model_dims *d = &m->dims;
    /* the tensors are the planned shape (the largest class); the lengths fit the batch's class */
    const int64_t B = d->batch, F = m->full.frames;
    TANDEM_TRY(check_input(m, "tokens", b->tokens, TANDEM_I32, B * d->text_len));
    TANDEM_TRY(check_input(m, "mels", b->mels, TANDEM_F32, B * F * d->n_mels));
    TANDEM_TRY(check_input(m, "frame_mask", b->frame_mask, TANDEM_F32, B * F));
    TANDEM_TRY(check_input(m, "stop_targets", b->stop_targets, TANDEM_F32, B * F));
    if (b->text_lengths) TANDEM_TRY(check_input(m, "text_lengths", b->text_lengths, TANDEM_I32, B));
    else if (!b->host_text_lengths)
        return tandem_fail(TANDEM_E_INVALID, "model batch: no text lengths (device or host)");
    if (b->frame_lengths) TANDEM_TRY(check_input(m, "frame_lengths", b->frame_lengths, TANDEM_I32, B));
    else if (!b->host_frame_lengths)
        return tandem_fail(TANDEM_E_INVALID, "model batch: no frame lengths (device or host)");
    for (int i = 0; i < d->batch; i++) {
        if (!b->text_lengths && (b->host_text_lengths[i] < 1 || b->host_text_lengths[i] > d->text_len))
            return tandem_fail(TANDEM_E_INVALID,
                               "model batch: item %d has text length %d; expected 1..%d", i,
                               (int)b->host_text_lengths[i], d->text_len);
        if (!b->frame_lengths && (b->host_frame_lengths[i] < 0 || b->host_frame_lengths[i] > d->frames))
            return tandem_fail(TANDEM_E_INVALID,
                               "model batch: item %d has %d frames; expected 0..%d", i,
                               (int)b->host_frame_lengths[i], d->frames);
    }
    return TANDEM_OK;
}
