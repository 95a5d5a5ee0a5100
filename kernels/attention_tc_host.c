/* attention_tc_host.c — geometry, costs and host twins of the tensor-core attention kernels
 * (attention_tc.h). The twins are what the emulated kernels are compared with, so they follow the
 * kernels' arithmetic step for step: bf16 operands, one rounding per 16-term product sum (the
 * emulated mma sums in double), the quads' summation order, sub-tiles of 16. They serve the kernel
 * tests only: bf16 training runs on CUDA model devices (the host backend is fp32, attn_fused_*). */
#include <math.h>
#include <string.h>

#include "kernels/attention_tc.h"
#include "kernels/host_parallel.h"

#define TC_NEG (-3.402823466e+38f)
#define TC_D TANDEM_K_ATTN_TC_MAX_DH

static float r16(float v) { return tandem_bf16_to_f32(tandem_f32_to_bf16(v)); }

/* Row i of a bf16 (x) or f32-rounded-to-bf16 (x32) matrix at element off; zero when !ok. */
static void tc_row(float *out, const void *x, const float *x32, int64_t off, int dh, int ok) {
    for (int c = 0; c < dh; c++)
        out[c] = !ok ? 0.0f : x ? tandem_bf16_to_f32(((const tandem_bf16 *)x)[off + c]) : r16(x32[off + c]);
}

/* x . y as the kernels' mma chain computes it: a double sum per 16 columns, rounded to f32. */
static float tc_dot(const float *x, const float *y, int dh) {
    float acc = 0.0f;
    for (int k0 = 0; k0 < dh; k0 += 16) {
        double s = acc;
        for (int c = k0; c < k0 + 16; c++) s += (double)x[c] * (double)y[c];
        acc = (float)s;
    }
    return acc;
}
/* acc[c] = one mma's rounding of acc[c] + sum over the sub-tile's 16 rows of bf16(w[u]) rows[u][c]. */
static void tc_axpy16(float *acc, const float *w, const float rows[16][TC_D], int dh) {
    for (int c = 0; c < dh; c++) {
        double s = acc[c];
        for (int u = 0; u < 16; u++) s += (double)r16(w[u]) * (double)rows[u][c];
        acc[c] = (float)s;
    }
}
/* A sub-tile's 16 values summed as the quads do: per lane t its columns 2t, 2t+1, 2t+8, 2t+9
 * in order, then (lane 0 + lane 1) + (lane 2 + lane 3). */
static float tc_quad_total(const float *v) {
    float part[4];
    for (int t = 0; t < 4; t++) part[t] = ((v[2 * t] + v[2 * t + 1]) + v[2 * t + 8]) + v[2 * t + 9];
    return (part[0] + part[1]) + (part[2] + part[3]);
}

static void tc_ga(const uint8_t *key_mask, int b, int batch, int text_len, int seq, int ga_heads, int *ga) {
    ga[0] = ga[1] = ga[2] = 0;
    if (ga_heads <= 0) return;
    tandem_k_ga_counts(key_mask, b, text_len, seq - text_len, &ga[0], &ga[1]);
    ga[2] = tandem_k_ga_queries(key_mask, batch, text_len, seq - text_len);
}

/* ---- forward ------------------------------------------------------------------------------- */

typedef struct tc_fwd_row {
    float m, l, gs, gc, o[TC_D];
    int any;
} tc_fwd_row;

/* One sub-tile of 16 keys kb .. for query i (tc_fwd_keys in attention_tc.cu). */
static void tc_fwd_keys(const tandem_k_attn_tc_fwd_args *a, tc_fwd_row *r, const float *q, int b,
                        int h, int i, int kb, const int *ga) {
    const int T = a->seq, dh = a->head_dim;
    const uint8_t *mask = a->key_mask + (int64_t)b * T;
    float s[16], p[16], pg[16], v[16][TC_D], kr[TC_D], mx = TC_NEG;
    int ok[16];
    for (int u = 0; u < 16; u++) {
        const int key = kb + u, real = key < T && mask[key] != 0;
        const int64_t at = tandem_k_attn_at(b, T, key, a->ld_k, h, a->hs_k);
        ok[u] = real && key <= i;
        tc_row(kr, a->k, NULL, at, dh, real);
        tc_row(v[u], a->v, NULL, at, dh, real); /* masked keys staged as zero */
        s[u] = ok[u] ? tc_dot(q, kr, dh) * a->qk_scale : 0.0f;
        if (ok[u]) mx = fmaxf(mx, s[u]);
    }
    const int has = mx != TC_NEG;
    const float mn = !has ? r->m : r->any ? fmaxf(r->m, mx) : mx;
    const float alpha = !has ? 1.0f : r->any ? expf(r->m - mn) : 0.0f;
    for (int u = 0; u < 16; u++) {
        p[u] = ok[u] ? expf(s[u] - mn) : 0.0f;
        pg[u] = r->gc != 0.0f && kb + u < ga[0]
                    ? p[u] * tandem_k_ga_g(kb + u, i - a->text_len, ga[0], ga[1], a->ga_sigma)
                    : 0.0f;
    }
    r->l = r->l * alpha + tc_quad_total(p);
    if (r->gc != 0.0f) r->gs = r->gs * alpha + tc_quad_total(pg);
    for (int c = 0; c < dh; c++) r->o[c] *= alpha;
    if (has) r->m = mn, r->any = 1;
    tc_axpy16(r->o, p, (const float(*)[TC_D])v, dh);
}

static void tc_fwd_item(const tandem_k_attn_tc_fwd_args *a, int b, int h, int i) {
    const int T = a->seq, dh = a->head_dim, tm = T - a->text_len;
    int ga[3];
    tc_ga(a->key_mask, b, a->batch, a->text_len, T, a->ga_heads, ga);
    tc_fwd_row r = {TC_NEG, 0.0f, 0.0f, 0.0f, {0}, 0};
    r.gc = tandem_k_attn_ga_coef(h, i, a->ga_heads, a->text_len, ga[0], ga[1], ga[2], a->ga_scale);
    float q[TC_D];
    tc_row(q, a->q, NULL, tandem_k_attn_at(b, T, i, a->ld_q, h, a->hs_q), dh, 1);
    for (int kb = 0; kb <= i; kb += 16) tc_fwd_keys(a, &r, q, b, h, i, kb, ga);
    const float inv = r.any ? 1.0f / r.l : 0.0f;
    const int64_t at = tandem_k_attn_at(b, T, i, a->ld_o, h, dh);
    for (int c = 0; c < dh; c++) tandem_k_attn_store(a->o, at + c, 1, r.o[c] * inv);
    a->lse[((int64_t)b * a->heads + h) * T + i] = r.any ? r.m + logf(r.l) : 0.0f;
    if (h < a->ga_heads && i >= a->text_len) {
        const int64_t gi = ((int64_t)b * a->ga_heads + h) * tm + (i - a->text_len);
        const float sum = r.gc != 0.0f ? r.gs * inv : 0.0f;
        a->ga_sum[gi] = sum;
        a->ga_rows[gi] = r.gc != 0.0f ? (float)((1.0 - (double)sum) * ((double)a->ga_scale / (double)ga[2])) : 0.0f;
    }
}

static void tc_fwd_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_attn_tc_fwd_args *a = ctx;
    for (int64_t r = r0; r < r1; r++)
        tc_fwd_item(a, (int)(r / a->seq / a->heads), (int)(r / a->seq % a->heads), (int)(r % a->seq));
}

void tandem_k_attn_tc_fwd_host(const tandem_k_attn_tc_fwd_args *a) {
    tandem_host_parallel_for((int64_t)a->batch * a->heads * a->seq, 16, tc_fwd_rows, (void *)a);
}

void tandem_k_attn_tc_fwd_geom(const tandem_k_attn_tc_fwd_args *a, tandem_launch_dims *d) {
    *d = tandem_dims_1d(a->seq, TANDEM_K_ATTN_TC_BQ);
    d->block[0] = TANDEM_K_ATTN_TC_THREADS;
    d->grid[1] = (unsigned)(a->batch * a->heads);
    const int dh = a->head_dim;
    d->shmem = (unsigned)(2 * (tandem_k_attn_tc_tile(TANDEM_K_ATTN_TC_BK, dh) +
                               tandem_k_attn_tc_tile(dh, TANDEM_K_ATTN_TC_BK)));
}

/* Sub-tiles of 16 x 16 the kernels visit per (b, h): the causal triangle at 16-row granularity. */
static double tc_subtiles(int seq) {
    const double w = (double)((seq + 15) / 16);
    return w * (w + 1.0) / 2.0;
}

void tandem_k_attn_tc_fwd_cost(const tandem_k_attn_tc_fwd_args *a, tandem_kernel_cost *c) {
    const double bh = (double)a->batch * a->heads, dh = a->head_dim, st = bh * tc_subtiles(a->seq);
    const double ga = (double)a->batch * (a->ga_heads > 0 ? a->ga_heads : 0) * (a->seq - a->text_len);
    c->tensor_flops = st * 2.0 * (2.0 * 16 * 16 * dh); /* S = Q K^T, O += P V */
    c->flops = c->tensor_flops + st * 256.0 * 8.0;     /* scale, mask, max, exp, sums, rescale */
    c->bytes_read = bh * 3.0 * a->seq * dh * 2.0 + (double)a->batch * a->seq;
    c->bytes_written = bh * a->seq * (dh * 2.0 + 4.0) + (a->ga_heads > 0 ? 8.0 * ga : 0.0);
}

/* ---- backward ------------------------------------------------------------------------------ */

typedef struct tc_side { /* one position's operands */
    float q[TC_D], d_o[TC_D], k[TC_D], v[TC_D], lse, dd, gc;
    int ok; /* position < T (and, as a key, not masked) */
} tc_side;

static void tc_load(const tandem_k_attn_tc_bwd_args *A, int b, int h, int i, const int *ga, tc_side *x) {
    const tandem_k_attn_fused_bwd_args *a = &A->f;
    const int T = a->seq, dh = a->head_dim, in = i < T;
    const int64_t at = tandem_k_attn_at(b, T, i, a->ld_q, h, dh), ao = tandem_k_attn_at(b, T, i, a->ld_o, h, dh);
    memset(x, 0, sizeof *x);
    x->ok = in && a->key_mask[(int64_t)b * T + i] != 0;
    tc_row(x->q, a->q, NULL, at, dh, in);
    tc_row(x->d_o, NULL, a->dy, ao, dh, in);
    tc_row(x->k, a->k, NULL, at, dh, in);
    tc_row(x->v, a->v, NULL, at, dh, in);
    x->gc = tandem_k_attn_ga_coef(h, i, a->ga_heads, a->text_len, ga[0], ga[1], ga[2], a->ga_scale);
    x->lse = in ? a->lse[((int64_t)b * a->heads + h) * T + i] : 0.0f;
    x->dd = in ? tandem_k_attn_tc_delta(a, b, h, i, x->gc) : 0.0f;
}

/* dS of query qi against key kt, and the recomputed p (tc_ds). */
static float tc_ds(const tandem_k_attn_fused_bwd_args *a, const tc_side *qi, const tc_side *kt, int i,
                   int t, const int *ga, float *p) {
    const float s = tc_dot(qi->q, kt->k, a->head_dim);
    float dp = tc_dot(qi->d_o, kt->v, a->head_dim);
    *p = expf(s * a->qk_scale - qi->lse);
    if (qi->gc != 0.0f && t < ga[0]) dp -= qi->gc * tandem_k_ga_g(t, i - a->text_len, ga[0], ga[1], a->ga_sigma);
    return *p * (dp - qi->dd);
}

static void tc_write(const tandem_k_attn_fused_bwd_args *a, float *y, tandem_bf16 *y16, const float *acc,
                     float scale, int b, int h, int i) {
    const int64_t at = tandem_k_attn_at(b, a->seq, i, a->ld_g, h, a->head_dim);
    for (int c = 0; c < a->head_dim; c++) tandem_k_store2(y, y16, at + c, acc[c] * scale);
}

/* dq of query i: per 16 keys, dq += dS K (tc_bwd_dq). */
static void tc_bwd_query(const tandem_k_attn_tc_bwd_args *A, int b, int h, int i, const int *ga) {
    const tandem_k_attn_fused_bwd_args *a = &A->f;
    tc_side qi, kt;
    float dq[TC_D] = {0}, ds[16], kz[16][TC_D], p;
    tc_load(A, b, h, i, ga, &qi);
    for (int kb = 0; kb <= i; kb += 16) {
        for (int u = 0; u < 16; u++) {
            tc_load(A, b, h, kb + u, ga, &kt);
            ds[u] = kt.ok && kb + u <= i ? tc_ds(a, &qi, &kt, i, kb + u, ga, &p) : 0.0f;
            for (int c = 0; c < a->head_dim; c++) kz[u][c] = kt.ok ? kt.k[c] : 0.0f; /* staged as zero */
        }
        tc_axpy16(dq, ds, (const float(*)[TC_D])kz, a->head_dim);
    }
    tc_write(a, a->dq, A->dq16, dq, a->qk_scale, b, h, i);
}

/* dk, dv of key t: per 16 queries from t's sub-tile, dv += P^T dO, dk += dS^T Q (tc_bwd_dkdv). */
static void tc_bwd_key(const tandem_k_attn_tc_bwd_args *A, int b, int h, int t, const int *ga) {
    const tandem_k_attn_fused_bwd_args *a = &A->f;
    tc_side kt, qi;
    float dk[TC_D] = {0}, dv[TC_D] = {0}, ds[16], p[16], qz[16][TC_D], oz[16][TC_D];
    tc_load(A, b, h, t, ga, &kt);
    for (int qb = t / 16 * 16; qb < a->seq; qb += 16) {
        for (int u = 0; u < 16; u++) {
            tc_load(A, b, h, qb + u, ga, &qi);
            p[u] = 0.0f;
            ds[u] = kt.ok && qb + u < a->seq && t <= qb + u ? tc_ds(a, &qi, &kt, qb + u, t, ga, &p[u]) : 0.0f;
            memcpy(qz[u], qi.q, sizeof qz[u]);
            memcpy(oz[u], qi.d_o, sizeof oz[u]);
        }
        tc_axpy16(dv, p, (const float(*)[TC_D])oz, a->head_dim);
        tc_axpy16(dk, ds, (const float(*)[TC_D])qz, a->head_dim);
    }
    tc_write(a, a->dk, A->dk16, dk, a->qk_scale, b, h, t);
    tc_write(a, a->dv, A->dv16, dv, 1.0f, b, h, t);
}

static void tc_bwd_rows(void *ctx, int64_t r0, int64_t r1) {
    const tandem_k_attn_tc_bwd_args *A = ctx;
    const int T = A->f.seq, H = A->f.heads;
    for (int64_t r = r0; r < r1; r++) {
        const int b = (int)(r / T / H), h = (int)(r / T % H), i = (int)(r % T);
        int ga[3];
        tc_ga(A->f.key_mask, b, A->f.batch, A->f.text_len, T, A->f.ga_heads, ga);
        tc_bwd_query(A, b, h, i, ga);
        tc_bwd_key(A, b, h, i, ga);
    }
}

void tandem_k_attn_tc_bwd_host(const tandem_k_attn_tc_bwd_args *a) {
    tandem_host_parallel_for((int64_t)a->f.batch * a->f.heads * a->f.seq, 4, tc_bwd_rows, (void *)a);
}

void tandem_k_attn_tc_bwd_geom(const tandem_k_attn_tc_bwd_args *a, tandem_launch_dims *d) {
    const int T = a->f.seq, dh = a->f.head_dim, bq = TANDEM_K_ATTN_TC_BQ, bk = TANDEM_K_ATTN_TC_BK;
    *d = tandem_dims_1d(1, TANDEM_K_ATTN_TC_THREADS);
    d->grid[0] = (unsigned)((T + bq - 1) / bq + (T + bk - 1) / bk);
    d->grid[1] = (unsigned)(a->f.batch * a->f.heads);
    const int dq = 2 * (2 * tandem_k_attn_tc_tile(bk, dh) + tandem_k_attn_tc_tile(dh, bk));
    const int dkdv = 2 * (2 * tandem_k_attn_tc_tile(bq, dh) + 2 * tandem_k_attn_tc_tile(dh, bq)) + 8 * bq;
    d->shmem = (unsigned)(dq > dkdv ? dq : dkdv);
}

void tandem_k_attn_tc_bwd_cost(const tandem_k_attn_tc_bwd_args *a, tandem_kernel_cost *c) {
    const double bh = (double)a->f.batch * a->f.heads, dh = a->f.head_dim, T = a->f.seq;
    const double st = bh * tc_subtiles(a->f.seq);
    const double ga = (double)a->f.batch * (a->f.ga_heads > 0 ? a->f.ga_heads : 0) * (T - a->f.text_len);
    const double w = tandem_k_out_bytes(a->f.dq, a->dq16) + tandem_k_out_bytes(a->f.dk, a->dk16) +
                     tandem_k_out_bytes(a->f.dv, a->dv16);
    c->tensor_flops = st * 7.0 * (2.0 * 16 * 16 * dh); /* S, dP in both block kinds; dQ, dV, dK */
    c->flops = c->tensor_flops + st * 2.0 * 256.0 * 10.0;
    c->bytes_read = bh * T * dh * (4.0 * 2.0 + 4.0) + bh * T * 4.0 + (double)a->f.batch * T + 4.0 * ga;
    c->bytes_written = bh * T * dh * w;
}
