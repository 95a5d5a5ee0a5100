/* test_model_grad.c — the whole model, shrunk (d 16, L 1, heads 2, r 2, max_text 8,
 * max_frames 8, B 2, two accumulated micro-batches), on the host backend against this file's
 * own double-precision forward of the same architecture (written from DESIGN.md §7, not from
 * the runtime's code):
 *
 *   1. the host float loss (l1, stop BCE) matches the double reference: relative error <= 1e-5;
 *   2. every parameter tensor's gradient from the host backward (f32, summed over the two
 *      micro-batches by tandem_train_grads) matches central finite differences of the double
 *      reference, (L(p + h) - L(p - h)) / 2h with h = 1e-6, in every element:
 *      normalised error ||g - g_fd|| / ||g_fd|| <= 1e-5 per tensor.
 *
 * Why these numbers. h = 1e-6 on parameters of order 0.5: truncation ~h^2 * L''' ~ 1e-12,
 * rounding ~1e-16 / h = 1e-10 — the FD is exact to ~1e-9 relative. The f32 backward runs
 * through ~40 ops with O(1) values and sums of up to ~1300 terms; each rounds at 2^-24 ~ 6e-8,
 * and the kernels accumulate row statistics and reductions in double, so the analytic gradient
 * sits ~1e-7..1e-6 from the truth (observed worst ~8e-7). 1e-5 leaves a 10x margin while a wrong
 * term anywhere (missing scale, wrong index, wrong mask) moves some tensor's error to >= 1e-2
 * (dropping the mel head's contribution to d(ln_f) gives 0.34). The masked L1 has kinks at pred == target: the targets are placed >= 0.5 away from
 * the reference predictions, so no perturbation of 1e-6 crosses one. Parameters are random
 * (not the initialisation) so LayerNorm gains, biases and attention all carry signal.
 * Symbol-embedding rows no token uses have zero gradient exactly (checked) and are skipped by
 * the finite differences. Seed printed; replay with TANDEM_TEST_SEED.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/layers.h" /* tandem_k_dropout_keep: the mask the reference applies */
#include "kernels/mel.h"    /* tandem_mel_silence: the padding value */
#include "runtime/model/model.h"
#include "tandem.h"
#include "test/fixtures.h"
#include "runtime/model/train_step.h"

#define TOL_LOSS 1e-5
#define TOL_GRAD 1e-5
#define FD_H 1e-6

enum { B = 2, D = 16, L = 1, H = 2, R = 2, TT = 8, F = 8, A = 2, NM = 80 };
enum { TM = F / R, T = TT + TM, DH = D / H, FF = 4 * D, G = R * NM };

/* ---- one micro-batch on the host ---------------------------------------------------------- */
typedef struct host_batch {
    int32_t tokens[B * TT];
    int32_t text_len[B], frame_len[B];
    float mels[B * F * NM];
    float mask[B * F];
    float stop[B * F];
} host_batch;

/* ---- double reference ----------------------------------------------------------------------- */

/* The regularisers under test: prenet dropout with probability drop_p (mask of optimizer step
 * 0, micro-batch a, seed drop_seed, as tandem_train_grads draws it), ... */
static double drop_p;
static uint64_t drop_seed;
/* and the guided-attention loss (docs/TRAINING.md) of weight ga_w, width ga_sigma on the first
 * ga_heads heads, written here from its formula */
static double ga_w, ga_sigma;
static int ga_heads;

typedef struct ref_params {
    const double *sym, *pos, *pw, *pb;
    const double *ln1g, *ln1b, *qkvw, *qkvb, *ow, *ob, *ln2g, *ln2b, *fcw, *fcb, *pjw, *pjb;
    const double *lnfg, *lnfb, *melw, *melb, *stw, *stb;
} ref_params;

static double gelu_d(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* y = LN(x) per row of n, biased variance, eps 1e-5 */
static void layernorm_d(const double *x, const double *g, const double *b, double *y, int rows, int n) {
    for (int r = 0; r < rows; r++) {
        const double *xr = x + (size_t)r * n;
        double mean = 0, var = 0;
        for (int c = 0; c < n; c++) mean += xr[c];
        mean /= n;
        for (int c = 0; c < n; c++) var += (xr[c] - mean) * (xr[c] - mean);
        var /= n;
        double rs = 1.0 / sqrt(var + 1e-5);
        for (int c = 0; c < n; c++) y[(size_t)r * n + c] = (xr[c] - mean) * rs * g[c] + b[c];
    }
}

/* y [rows, out] = x [rows, in] W^T + b, W [out, in] */
static void linear_d(const double *x, const double *w, const double *b, double *y, int rows, int in,
                     int out) {
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < out; o++) {
            double s = b[o];
            for (int i = 0; i < in; i++) s += x[(size_t)r * in + i] * w[(size_t)o * in + i];
            y[(size_t)r * out + o] = s;
        }
}

/* The loss of one micro-batch: l1 + bce (returned separately). */
/* The guided-attention loss of query i (a mel position) with probabilities prob [T] over the
 * keys: 1 - sum_{t < Tt_b} prob[t] G[j, t]; Tt_b = text_len, N_b = real mel positions. */
static double ga_row(const double *prob, int i, int text_len, int n_mel) {
    const int j = i - TT;
    double acc = 0;
    for (int t = 0; t < text_len; t++) {
        double x = (double)t / text_len - (j + 0.5) / n_mel;
        acc += prob[t] * exp(-x * x / (2 * ga_sigma * ga_sigma));
    }
    return 1.0 - acc;
}

static void ref_forward(const ref_params *p, const host_batch *hb, int a, double *l1_out,
                        double *bce_out, double *ga_out, double *pred_out /* [B, F, 80] or NULL */) {
    static double x[B * T * D], h[B * T * D], qkv[B * T * 3 * D], att[B * T * D], tmp[B * T * D];
    static double f[B * T * FF], hf[B * T * D], pre[B * TM * D], grp[B * TM * G];
    static double mel[B * TM * G], stp[B * TM * R];
    /* prenet input: group j = frames of group j - 1, zeros for j = 0 */
    for (int b = 0; b < B; b++)
        for (int j = 0; j < TM; j++)
            for (int k = 0; k < G; k++)
                grp[((size_t)b * TM + j) * G + k] =
                    j == 0 ? 0.0 : hb->mels[((size_t)b * F + (j - 1) * R) * NM + k];
    linear_d(grp, p->pw, p->pb, pre, B * TM, G, D);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < D; c++) {
                const int64_t pi = ((int64_t)b * TM + (t - TT)) * D + c; /* prenet element */
                double e = t < TT ? p->sym[(size_t)hb->tokens[b * TT + t] * D + c] : gelu_d(pre[pi]);
                if (t >= TT && drop_p > 0)
                    e = tandem_k_dropout_keep(drop_seed, 0, a, pi, (float)drop_p) ? e / (1.0 - drop_p) : 0.0;
                x[((size_t)b * T + t) * D + c] = e + p->pos[(size_t)t * D + c];
            }
    /* one block (L = 1) */
    layernorm_d(x, p->ln1g, p->ln1b, h, B * T, D);
    linear_d(h, p->qkvw, p->qkvb, qkv, B * T, D, 3 * D);
    double ga = 0;
    int nq = 0; /* real mel queries of the micro-batch */
    for (int b = 0; b < B; b++)
        for (int j = 0; j < TM; j++) nq += j * R < hb->frame_len[b];
    for (int b = 0; b < B; b++) {
        int key_ok[T], n_mel = 0;
        for (int j = 0; j < T; j++)
            key_ok[j] = j < TT ? j < hb->text_len[b] : (j - TT) * R < hb->frame_len[b];
        for (int j = TT; j < T; j++) n_mel += key_ok[j];
        for (int hh = 0; hh < H; hh++)
            for (int i = 0; i < T; i++) {
                double s[T], mx = -INFINITY, z = 0;
                const double *q = qkv + ((size_t)b * T + i) * 3 * D + hh * DH;
                for (int j = 0; j <= i; j++) {
                    if (!key_ok[j]) continue;
                    const double *k = qkv + ((size_t)b * T + j) * 3 * D + D + hh * DH;
                    double dot = 0;
                    for (int e = 0; e < DH; e++) dot += q[e] * k[e];
                    s[j] = dot / sqrt((double)DH);
                    if (s[j] > mx) mx = s[j];
                }
                for (int j = 0; j <= i; j++)
                    if (key_ok[j]) z += exp(s[j] - mx);
                if (hh < ga_heads && i >= TT && key_ok[i]) {
                    double prob[T];
                    for (int j = 0; j < T; j++) prob[j] = j <= i && key_ok[j] ? exp(s[j] - mx) / z : 0;
                    ga += ga_row(prob, i, hb->text_len[b], n_mel) / ((double)nq * ga_heads * L);
                }
                for (int e = 0; e < DH; e++) {
                    double o = 0;
                    for (int j = 0; j <= i; j++) {
                        if (!key_ok[j]) continue;
                        o += exp(s[j] - mx) / z * qkv[((size_t)b * T + j) * 3 * D + 2 * D + hh * DH + e];
                    }
                    att[((size_t)b * T + i) * D + hh * DH + e] = o;
                }
            }
    }
    linear_d(att, p->ow, p->ob, tmp, B * T, D, D);
    for (int i = 0; i < B * T * D; i++) x[i] += tmp[i];
    layernorm_d(x, p->ln2g, p->ln2b, h, B * T, D);
    linear_d(h, p->fcw, p->fcb, f, B * T, D, FF);
    for (int i = 0; i < B * T * FF; i++) f[i] = gelu_d(f[i]);
    linear_d(f, p->pjw, p->pjb, tmp, B * T, FF, D);
    for (int i = 0; i < B * T * D; i++) x[i] += tmp[i];
    layernorm_d(x, p->lnfg, p->lnfb, hf, B * T, D);
    /* heads at the mel positions */
    for (int b = 0; b < B; b++) {
        const double *rows = hf + ((size_t)b * T + TT) * D;
        linear_d(rows, p->melw, p->melb, mel + (size_t)b * TM * G, TM, D, G);
        linear_d(rows, p->stw, p->stb, stp + (size_t)b * TM * R, TM, D, R);
    }
    /* mel position j, output o = frame j*R + o/80, band o%80: [B, TM, G] is [B, F, 80] */
    double l1 = 0, bce = 0;
    long real = 0;
    for (int b = 0; b < B; b++) {
        real += hb->frame_len[b];
        for (int fr = 0; fr < F; fr++) {
            for (int c = 0; c < NM; c++) {
                double pv = mel[((size_t)b * F + fr) * NM + c];
                if (pred_out) pred_out[((size_t)b * F + fr) * NM + c] = pv;
                if (fr < hb->frame_len[b]) l1 += fabs(pv - hb->mels[((size_t)b * F + fr) * NM + c]);
            }
            double z = stp[(size_t)b * F + fr], t = hb->stop[b * F + fr];
            bce += fmax(z, 0) - z * t + log1p(exp(-fabs(z)));
        }
    }
    *l1_out = real ? l1 / (80.0 * (double)real) : 0.0;
    *bce_out = bce / (double)(B * F);
    *ga_out = ga;
}

/* Mean over the micro-batches of l1 + stop_weight * bce + ga_w * ga (stop_weight 1). */
static double ref_loss(const ref_params *p, const host_batch *hb, double *l1m, double *bcem,
                       double *gam) {
    double sl = 0, sb = 0, sg = 0;
    for (int a = 0; a < A; a++) {
        double l1, bce, ga;
        ref_forward(p, &hb[a], a, &l1, &bce, &ga, NULL);
        sl += l1;
        sb += bce;
        sg += ga;
    }
    if (l1m) *l1m = sl / A;
    if (bcem) *bcem = sb / A;
    if (gam) *gam = sg / A;
    return (sl + sb + ga_w * sg) / A;
}

/* ---- the test ------------------------------------------------------------------------------- */

static const double *view(const tandem_model *m, const double *flat, const char *name) {
    int i = tandem_model_find_param(m, name);
    if (i < 0) fail_msg("no parameter '%s' in the model's table", name);
    return flat + m->param[i].offset;
}

static void bind(const tandem_model *m, const double *flat, ref_params *p) {
    p->sym = view(m, flat, "sym_emb.weight");
    p->pos = view(m, flat, "pos_emb.weight");
    p->pw = view(m, flat, "prenet.weight");
    p->pb = view(m, flat, "prenet.bias");
    p->ln1g = view(m, flat, "layers.0.ln1.weight");
    p->ln1b = view(m, flat, "layers.0.ln1.bias");
    p->qkvw = view(m, flat, "layers.0.attn.qkv.weight");
    p->qkvb = view(m, flat, "layers.0.attn.qkv.bias");
    p->ow = view(m, flat, "layers.0.attn.out.weight");
    p->ob = view(m, flat, "layers.0.attn.out.bias");
    p->ln2g = view(m, flat, "layers.0.ln2.weight");
    p->ln2b = view(m, flat, "layers.0.ln2.bias");
    p->fcw = view(m, flat, "layers.0.mlp.fc.weight");
    p->fcb = view(m, flat, "layers.0.mlp.fc.bias");
    p->pjw = view(m, flat, "layers.0.mlp.proj.weight");
    p->pjb = view(m, flat, "layers.0.mlp.proj.bias");
    p->lnfg = view(m, flat, "ln_f.weight");
    p->lnfb = view(m, flat, "ln_f.bias");
    p->melw = view(m, flat, "mel_head.weight");
    p->melb = view(m, flat, "mel_head.bias");
    p->stw = view(m, flat, "stop_head.weight");
    p->stb = view(m, flat, "stop_head.bias");
}

static void make_batch(tandem_rng *r, int vocab, host_batch *hb) {
    memset(hb, 0, sizeof *hb);
    for (int b = 0; b < B; b++) {
        hb->text_len[b] = (int)tandem_rng_int(r, 3, TT);
        hb->frame_len[b] = (int)tandem_rng_int(r, 1, F);
        for (int t = 0; t < TT; t++)
            hb->tokens[b * TT + t] = t < hb->text_len[b] ? (int)tandem_rng_int(r, 1, vocab - 1) : 0;
        for (int fr = 0; fr < F; fr++) {
            hb->mask[b * F + fr] = fr < hb->frame_len[b];
            hb->stop[b * F + fr] = fr >= hb->frame_len[b] - 1;
        }
    }
}

static void check_model_gradients(void) {
    uint64_t seed = tandem_test_seed("test_model_grad");
    tandem_rng rng = {seed};
    drop_seed = tandem_rng_next(&rng);
    printf("prenet_dropout %g, ga_weight %g, ga_sigma %g, ga_heads %d\n", drop_p, ga_w, ga_sigma,
           ga_heads);

    tandem_device *dev = NULL;
    CHECK(tandem_device_open(TANDEM_BACKEND_HOST, 0, &dev));
    tandem_stream *s = NULL;
    CHECK(tandem_stream_create(dev, &s));
    tandem_pool *pool = NULL;
    CHECK(tandem_pool_create(dev, "model", 0, &pool));

    tandem_model_dims dm;
    memset(&dm, 0, sizeof dm);
    dm.batch = B;
    dm.d = D;
    dm.layers = L;
    dm.heads = H;
    dm.head_dim = DH;
    dm.ff = FF;
    dm.r = R;
    dm.n_mels = NM;
    dm.group = G;
    dm.text_len = TT;
    dm.frames = F;
    dm.mel_len = TM;
    dm.seq = T;
    dm.vocab = 40; /* small: fewer embedding rows to difference */
    dm.micro_batches = A;
    tandem_model m;
    CHECK(tandem_model_declare(&m, dev, pool, &dm));

    tandem_tensor *tok[A], *mel[A], *msk[A], *stp[A];
    for (int a = 0; a < A; a++) {
        char nm[32];
        int64_t s2[2] = {B, TT}, s3[3] = {B, F, NM}, sf[2] = {B, F};
        snprintf(nm, sizeof nm, "tokens%d", a);
        CHECK(tandem_pool_declare(pool, nm, TANDEM_I32, 2, s2, TANDEM_PERSISTENT, 0, 0, &tok[a]));
        snprintf(nm, sizeof nm, "mels%d", a);
        CHECK(tandem_pool_declare(pool, nm, TANDEM_F32, 3, s3, TANDEM_PERSISTENT, 0, 0, &mel[a]));
        snprintf(nm, sizeof nm, "mask%d", a);
        CHECK(tandem_pool_declare(pool, nm, TANDEM_F32, 2, sf, TANDEM_PERSISTENT, 0, 0, &msk[a]));
        snprintf(nm, sizeof nm, "stop%d", a);
        CHECK(tandem_pool_declare(pool, nm, TANDEM_F32, 2, sf, TANDEM_PERSISTENT, 0, 0, &stp[a]));
    }
    CHECK(tandem_pool_commit(pool));
    CHECK(tandem_model_init_params(&m, s, seed));

    /* random parameters: gains 1 +- 0.3, everything else +- 0.5 (alignment gaps stay 0) */
    const int64_t P = m.n_flat;
    float *pf = calloc((size_t)P, sizeof(float));
    double *pd = calloc((size_t)P, sizeof(double));
    assert_non_null(pf);
    assert_non_null(pd);
    for (int i = 0; i < m.n_params; i++) {
        const tandem_model_param *pp = &m.param[i];
        int gain = pp->init == TANDEM_PARAM_ONES;
        for (int64_t j = 0; j < pp->numel; j++)
            pf[pp->offset + j] = gain ? tandem_rng_uniform(&rng, 0.7f, 1.3f)
                                      : tandem_rng_uniform(&rng, -0.5f, 0.5f);
    }
    for (int64_t i = 0; i < P; i++) pd[i] = pf[i];
    CHECK(tandem_tensor_upload(s, m.params, pf, (size_t)P * sizeof(float)));
    ref_params rp;
    bind(&m, pd, &rp);

    /* batches; mel targets >= 0.5 away from the reference prediction (no L1 kink nearby).
     * The targets are also the (teacher-forced) input: the prediction of group j depends on
     * the targets of the groups before it, so they are placed group by group, each against the
     * prediction from the final targets of the groups before. */
    host_batch hb[A];
    tandem_model_batch mb[A];
    static double pred[B * F * NM];
    double closest = INFINITY; /* min |prediction - target| over real frames, checked below */
    for (int a = 0; a < A; a++) {
        make_batch(&rng, dm.vocab, &hb[a]);
        double l1, bce, ga;
        for (int j = 0; j < TM; j++) {
            ref_forward(&rp, &hb[a], a, &l1, &bce, &ga, pred);
            for (int i = 0; i < B * F * NM; i++) {
                int fr = (i / NM) % F, b = i / (NM * F);
                if (fr / R != j) continue;
                float off = tandem_rng_uniform(&rng, 0.5f, 1.5f);
                hb[a].mels[i] = fr < hb[a].frame_len[b]
                                    ? (float)pred[i] + (tandem_rng_next(&rng) & 1 ? off : -off)
                                    : tandem_mel_silence(); /* padding as the data device writes it */
            }
        }
        ref_forward(&rp, &hb[a], a, &l1, &bce, &ga, pred);
        for (int i = 0; i < B * F * NM; i++) {
            int fr = (i / NM) % F, b = i / (NM * F);
            if (fr < hb[a].frame_len[b]) closest = fmin(closest, fabs(pred[i] - hb[a].mels[i]));
        }
        CHECK(tandem_tensor_upload(s, tok[a], hb[a].tokens, sizeof hb[a].tokens));
        CHECK(tandem_tensor_upload(s, mel[a], hb[a].mels, sizeof hb[a].mels));
        CHECK(tandem_tensor_upload(s, msk[a], hb[a].mask, sizeof hb[a].mask));
        CHECK(tandem_tensor_upload(s, stp[a], hb[a].stop, sizeof hb[a].stop));
        mb[a].tokens = tok[a];
        mb[a].mels = mel[a];
        mb[a].frame_mask = msk[a];
        mb[a].stop_targets = stp[a];
        mb[a].host_text_lengths = hb[a].text_len;
        mb[a].host_frame_lengths = hb[a].frame_len;
    }
    printf("closest target to its prediction: %.3f (placed >= 0.5 away)\n", closest);
    assert_true(closest >= 0.49);

    tandem_optim opt;
    memset(&opt, 0, sizeof opt);
    opt.stop_weight = 1.0f;
    opt.prenet_dropout = (float)drop_p;
    opt.seed = drop_seed;
    opt.ga_weight = (float)ga_w;
    opt.ga_sigma = (float)ga_sigma;
    opt.ga_heads = ga_heads;
    tandem_step_result res;
    CHECK(tandem_train_grads(&m, s, &opt, mb, &res));
    float *gf = calloc((size_t)P, sizeof(float));
    assert_non_null(gf);
    CHECK(tandem_tensor_download(s, gf, m.grads, (size_t)P * sizeof(float)));

    /* 1. loss */
    double l1_ref, bce_ref, ga_ref;
    double loss_ref = ref_loss(&rp, hb, &l1_ref, &bce_ref, &ga_ref);
    double e_l1 = fabs(res.l1 - l1_ref) / fabs(l1_ref);
    double e_bce = fabs(res.stop_bce - bce_ref) / fabs(bce_ref);
    double e_ga = ga_heads > 0 ? fabs(res.ga - ga_ref) / fabs(ga_ref) : fabs(res.ga);
    printf("loss: host %.9g (l1 %.9g, bce %.9g, ga %.9g), reference %.9g (l1 %.9g, bce %.9g, ga "
           "%.9g); rel. error l1 %.2e, bce %.2e, ga %.2e (limit %.0e)\n", res.loss, res.l1,
           res.stop_bce, res.ga, loss_ref, l1_ref, bce_ref, ga_ref, e_l1, e_bce, e_ga, TOL_LOSS);
    assert_true(e_l1 <= TOL_LOSS);
    assert_true(e_bce <= TOL_LOSS);
    assert_true(e_ga <= TOL_LOSS);
    assert_true(fabs(res.loss - loss_ref) <= TOL_LOSS * fabs(loss_ref));

    /* 2. gradients, every tensor, every element (unused embedding rows: exactly zero) */
    int used[64] = {0};
    for (int a = 0; a < A; a++)
        for (int i = 0; i < B * TT; i++) used[hb[a].tokens[i]] = 1;
    double worst = 0;
    const char *worst_name = "";
    for (int i = 0; i < m.n_params; i++) {
        const tandem_model_param *pp = &m.param[i];
        int is_sym = strcmp(pp->name, "sym_emb.weight") == 0;
        double num = 0, den = 0;
        for (int64_t j = 0; j < pp->numel; j++) {
            int64_t k = pp->offset + j;
            if (is_sym && !used[j / D]) {
                if (gf[k] != 0.0f)
                    fail_msg("sym_emb row %d is unused but has gradient %g", (int)(j / D), gf[k]);
                continue;
            }
            double keep = pd[k];
            pd[k] = keep + FD_H;
            double lp = ref_loss(&rp, hb, NULL, NULL, NULL);
            pd[k] = keep - FD_H;
            double lm = ref_loss(&rp, hb, NULL, NULL, NULL);
            pd[k] = keep;
            double g = (lp - lm) / (2 * FD_H);
            num += (gf[k] - g) * (gf[k] - g);
            den += g * g;
        }
        double err = den > 0 ? sqrt(num / den) : sqrt(num);
        printf("  %-26s %6lld elements  |g| %.3e  normalised error %.2e\n", pp->name,
               (long long)pp->numel, sqrt(den), err);
        if (err > worst) worst = err, worst_name = pp->name;
        if (!(err <= TOL_GRAD)) fail_msg("gradient of %s: normalised error %.3e > %.0e", pp->name, err, TOL_GRAD);
    }
    printf("worst normalised gradient error %.2e (%s), limit %.0e\n", worst, worst_name, TOL_GRAD);

    free(pf);
    free(pd);
    free(gf);
    tandem_model_free(&m);
    tandem_pool_destroy(pool);
    tandem_stream_destroy(s);
    tandem_device_close(dev);
}

static void set_regularisers(double p, double w, double sigma, int heads) {
    drop_p = p, ga_w = w, ga_sigma = sigma, ga_heads = heads;
}

/* The model without its regularisers (prenet_dropout 0, ga_weight 0). */
static void test_model_gradients(void **state) {
    (void)state;
    set_regularisers(0.0, 0.0, 0.2, 0);
    check_model_gradients();
}

/* The same with prenet dropout 0.5: the mask and the inverted scaling in forward and backward. */
static void test_model_gradients_dropout(void **state) {
    (void)state;
    set_regularisers(0.5, 0.0, 0.2, 0);
    check_model_gradients();
}

/* The guided-attention loss (the defaults: weight 1, sigma 0.2, head 0), its gradient entering
 * the attention backward before the softmax backward. */
static void test_model_gradients_ga(void **state) {
    (void)state;
    set_regularisers(0.0, 1.0, 0.2, 1);
    check_model_gradients();
}

/* Everything on, both heads under the loss, a larger weight and width. */
static void test_model_gradients_all(void **state) {
    (void)state;
    set_regularisers(0.5, 3.0, 0.35, 2);
    check_model_gradients();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_gradients),
        cmocka_unit_test(test_model_gradients_dropout),
        cmocka_unit_test(test_model_gradients_ga),
        cmocka_unit_test(test_model_gradients_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
