/* attention_tc.cu — fused causal attention on tensor cores (attention_tc.h): FlashAttention-2's
 * schedule in the dialect. A warp owns 16 rows (queries; in the dK / dV blocks, keys) and walks
 * the other side in sub-tiles of 16 through shared tiles of 64; each product is a run of
 * tandem_mma_bf16_16816 whose accumulator fragment (16 x 8 f32) turns, rounded to bf16, into the
 * A fragment of the next product (the C and A layouts line up: no shared-memory round trip).
 * Loops over fragments run to the widest head's constant bound (TC_KS, TC_NC) with a guard, so
 * the fragment arrays stay in registers. */
#include "kernels/dialect.h" /* first: it defines what the headers below use */
#include "kernels/attention_tc.h"

#define TC_W TANDEM_WARP_SIZE
#define TC_BQ TANDEM_K_ATTN_TC_BQ
#define TC_BK TANDEM_K_ATTN_TC_BK
#define TC_PAD TANDEM_K_ATTN_TC_PAD
#define TC_KS (TANDEM_K_ATTN_TC_MAX_DH / 16) /* k-steps of 16 across the widest head */
#define TC_NC (TANDEM_K_ATTN_TC_MAX_DH / 8)  /* column chunks of 8 across the widest head */
#define TC_NEG (-3.402823466e+38f)

DEVICE_FN uint32_t tc_pair(const tandem_bf16 *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 16; }
DEVICE_FN uint32_t tc_pack(float lo, float hi) {
    return (uint32_t)tandem_f32_to_bf16(lo) | (uint32_t)tandem_f32_to_bf16(hi) << 16;
}
/* The sum over a quad (the 4 lanes that hold one row of an accumulator fragment). */
DEVICE_FN float tc_quad_sum(float v) {
    v += __shfl_xor_sync(TANDEM_FULL_MASK, v, 1);
    return v + __shfl_xor_sync(TANDEM_FULL_MASK, v, 2);
}
DEVICE_FN float tc_quad_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(TANDEM_FULL_MASK, v, 1));
    return fmaxf(v, __shfl_xor_sync(TANDEM_FULL_MASK, v, 2));
}
/* A fragment of an f32 accumulator pair: columns 0..7 (c0) and 8..15 (c1) of the same 16 rows. */
DEVICE_FN void tc_c_to_a(const float *c0, const float *c1, uint32_t *fa) {
    fa[0] = tc_pack(c0[0], c0[1]), fa[1] = tc_pack(c0[2], c0[3]);
    fa[2] = tc_pack(c1[0], c1[1]), fa[3] = tc_pack(c1[2], c1[3]);
}

/* A fragments [dh / 16][4] of rows r0 .. r0 + 15 of a bf16 matrix (row r at x + r * ld; rows
 * >= n zero), or of an f32 one rounded to bf16 (x32). */
DEVICE_FN void tc_frag_rows(uint32_t fa[][4], const tandem_bf16 *x, const float *x32, int64_t ld,
                            int r0, int n, int dh) {
    const int lane = (int)threadIdx.x % TC_W, g = lane / 4, t = lane % 4;
    for (int kk = 0; kk < TC_KS; kk++)
        if (kk < dh / 16)
            for (int r = 0; r < 4; r++) {
                const int row = r0 + g + (r & 1) * 8, col = kk * 16 + 2 * t + (r >> 1) * 8;
                const int64_t at = (int64_t)row * ld + col;
                fa[kk][r] = row >= n ? 0u : x ? tc_pair(x + at) : tc_pack(x32[at], x32[at + 1]);
            }
}

/* acc[j] (16 x 8, j = 0, 1: columns 8j..) = A B, A the fragments fa [dh/16][4], B[c][n] =
 * rows[n * ld + c] of a shared tile (row n: key or query n of the sub-tile). */
DEVICE_FN void tc_mm_rows(float acc[2][4], uint32_t fa[][4], const tandem_bf16 *rows, int ld, int dh) {
    const int lane = (int)threadIdx.x % TC_W, g = lane / 4, t = lane % 4;
    for (int j = 0; j < 2; j++) {
        for (int x = 0; x < 4; x++) acc[j][x] = 0.0f;
        const tandem_bf16 *r = rows + (j * 8 + g) * ld + 2 * t;
        for (int kk = 0; kk < TC_KS; kk++)
            if (kk < dh / 16) {
                const uint32_t bf[2] = {tc_pair(r + kk * 16), tc_pair(r + kk * 16 + 8)};
                tandem_mma_bf16_16816(acc[j], fa[kk], bf, acc[j]);
            }
    }
}
/* out[nc] (16 x 8 per chunk of 8 columns) += A B, A [16 x 16] one fragment, B[k][c] =
 * cols[c * ld + k] of a transposed shared tile (column c's 16 k values contiguous). */
DEVICE_FN void tc_mm_cols(float out[][4], const uint32_t *fa, const tandem_bf16 *cols, int ld, int dh) {
    const int lane = (int)threadIdx.x % TC_W, g = lane / 4, t = lane % 4;
    for (int nc = 0; nc < TC_NC; nc++)
        if (nc < dh / 8) {
            const tandem_bf16 *c = cols + (nc * 8 + g) * ld + 2 * t;
            const uint32_t bf[2] = {tc_pair(c), tc_pair(c + 8)};
            tandem_mma_bf16_16816(out[nc], fa, bf, out[nc]);
        }
}

/* Rows t0 .. t0 + 63 of an item and head's bf16 x (row r at x + r * ld) into a shared tile as
 * is (rows, [64][dh + pad]) and/or transposed (cols, [dh][64 + pad]); rows past n and masked
 * keys (mask not NULL) as zero (a masked key's value may be anything; p = 0 there must stay 0).
 * x32: an f32 source rounded to bf16 instead. */
DEVICE_FN void tc_stage(const tandem_bf16 *x, const float *x32, int64_t ld, int t0, int n,
                        const uint8_t *mask, int dh, tandem_bf16 *rows, tandem_bf16 *cols) {
    for (int e = (int)threadIdx.x; e < TC_BK * dh; e += (int)blockDim.x) {
        const int r = e / dh, c = e % dh, i = t0 + r;
        const int ok = i < n && (!mask || mask[i] != 0);
        const int64_t at = (int64_t)i * ld + c;
        const tandem_bf16 v = !ok ? (tandem_bf16)0 : x ? x[at] : tandem_f32_to_bf16(x32[at]);
        if (rows) rows[r * (dh + TC_PAD) + c] = v;
        if (cols) cols[c * (TC_BK + TC_PAD) + r] = v;
    }
}

/* The item's guided-attention counts (tt, nm) and the batch's Nq into ga[0..2], counted by the
 * whole block, a slice per thread (integers: exact in any order) — one thread counting the
 * batch's mask alone would hold every block for B * T serial loads. cnt: [3 * blockDim.x]
 * shared. Every thread calls it; it ends with a barrier. */
DEVICE_FN void tc_ga_counts(const uint8_t *key_mask, int b, int batch, int text_len, int seq,
                            int ga_heads, int *ga, int *cnt) {
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x, tm = seq - text_len;
    int nq = 0, tt = 0, nm = 0;
    if (ga_heads > 0) {
        for (int64_t x = tid; x < (int64_t)batch * tm; x += nt)
            nq += key_mask[x / tm * seq + text_len + x % tm] != 0;
        for (int x = tid; x < seq; x += nt) {
            const int real = key_mask[(int64_t)b * seq + x] != 0;
            if (x < text_len) tt += real;
            else nm += real;
        }
    }
    cnt[3 * tid] = tt, cnt[3 * tid + 1] = nm, cnt[3 * tid + 2] = nq;
    __syncthreads();
    if (tid == 0) {
        ga[0] = ga[1] = ga[2] = 0;
        for (int k = 0; k < 3 * nt; k++) ga[k % 3] += cnt[k];
    }
    __syncthreads();
}

/* ---- forward ------------------------------------------------------------------------------- */

typedef struct tc_rows {
    float m[2], l[2], gs[2], gc[2]; /* rows g and g + 8 of the warp */
    int any[2];
} tc_rows;

/* One sub-tile of 16 keys (kb .. kb + 15, at kl in the shared tile) for the warp's rows r0 ..:
 * S, the online softmax (running max, sum, guided-attention sum, output rescaled), O += P V. */
DEVICE_FN void tc_fwd_keys(const tandem_k_attn_tc_fwd_args *a, const tandem_bf16 *ks,
                           const tandem_bf16 *vt, uint32_t qf[][4], float o[][4], tc_rows *st, int kl,
                           int kb, int r0, const uint8_t *mask, const int *ga) {
    const int lane = (int)threadIdx.x % TC_W, g = lane / 4, t = lane % 4, T = a->seq, dh = a->head_dim;
    float s[2][4];
    tc_mm_rows(s, qf, ks + kl * (dh + TC_PAD), dh + TC_PAD, dh);
    for (int x = 0; x < 2; x++) {
        const int i = r0 + g + 8 * x;
        float mx = TC_NEG;
        int ok = 0;
        for (int u = 0; u < 4; u++) { /* u = 2j + e: key kb + 8j + 2t + e */
            const int key = kb + 8 * (u >> 1) + 2 * t + (u & 1);
            const int allowed = i < T && key <= i && key < T && mask[key] != 0;
            s[u >> 1][2 * x + (u & 1)] *= a->qk_scale;
            if (allowed) mx = fmaxf(mx, s[u >> 1][2 * x + (u & 1)]);
            ok |= allowed << u;
        }
        mx = tc_quad_max(mx);
        const int has = mx != TC_NEG;
        const float mn = !has ? st->m[x] : st->any[x] ? fmaxf(st->m[x], mx) : mx;
        const float alpha = !has ? 1.0f : st->any[x] ? expf(st->m[x] - mn) : 0.0f;
        float ps = 0.0f, pg = 0.0f;
        for (int u = 0; u < 4; u++) {
            const int key = kb + 8 * (u >> 1) + 2 * t + (u & 1);
            float *v = &s[u >> 1][2 * x + (u & 1)];
            *v = (ok >> u) & 1 ? expf(*v - mn) : 0.0f;
            ps += *v;
            if (st->gc[x] != 0.0f && key < ga[0])
                pg += *v * tandem_k_ga_g(key, i - a->text_len, ga[0], ga[1], a->ga_sigma);
        }
        ps = tc_quad_sum(ps); /* every lane: a full-warp shuffle, whatever its row needs */
        pg = tc_quad_sum(pg);
        st->l[x] = st->l[x] * alpha + ps;
        if (st->gc[x] != 0.0f) st->gs[x] = st->gs[x] * alpha + pg;
        for (int nc = 0; nc < TC_NC; nc++)
            if (nc < dh / 8) o[nc][2 * x] *= alpha, o[nc][2 * x + 1] *= alpha;
        if (has) st->m[x] = mn, st->any[x] = 1;
    }
    uint32_t pa[4];
    tc_c_to_a(s[0], s[1], pa);
    tc_mm_cols(o, pa, vt + kl, TC_BK + TC_PAD, dh);
}

DEVICE_FN void tc_fwd_write(const tandem_k_attn_tc_fwd_args *a, float o[][4], const tc_rows *st,
                            int b, int h, int r0, const int *ga) {
    const int lane = (int)threadIdx.x % TC_W, g = lane / 4, t = lane % 4, T = a->seq, dh = a->head_dim;
    const int tm = T - a->text_len;
    for (int x = 0; x < 2; x++) {
        const int i = r0 + g + 8 * x;
        if (i >= T) continue;
        const float inv = st->any[x] ? 1.0f / st->l[x] : 0.0f;
        const int64_t at = tandem_k_attn_at(b, T, i, a->ld_o, h, dh);
        for (int nc = 0; nc < TC_NC; nc++)
            if (nc < dh / 8)
                for (int e = 0; e < 2; e++)
                    tandem_k_attn_store(a->o, at + nc * 8 + 2 * t + e, 1, o[nc][2 * x + e] * inv);
        if (t != 0) continue;
        a->lse[((int64_t)b * a->heads + h) * T + i] = st->any[x] ? st->m[x] + logf(st->l[x]) : 0.0f;
        if (h < a->ga_heads && i >= a->text_len) {
            const int64_t gi = ((int64_t)b * a->ga_heads + h) * tm + (i - a->text_len);
            const float sum = st->gc[x] != 0.0f ? st->gs[x] * inv : 0.0f;
            a->ga_sum[gi] = sum;
            a->ga_rows[gi] = st->gc[x] != 0.0f
                                 ? (float)((1.0 - (double)sum) * ((double)a->ga_scale / (double)ga[2]))
                                 : 0.0f;
        }
    }
}

/* Block (64-row query tile x, b * H + h); warp w rows 64 x + 16 w ..; key tiles up to the
 * block's last row (causal), K as is and V transposed in shared memory (the B operands). */
KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_TC_THREADS) tandem_k_attn_tc_fwd(tandem_k_attn_tc_fwd_args a) {
    DYNAMIC_SHARED(tandem_bf16, tc_sm); /* one name per element type across the fatbin's unit */
    __shared__ int ga_s[3];             /* tt, nm, nq */
    __shared__ int cnt[3 * TANDEM_K_ATTN_TC_THREADS];
    const int dh = a.head_dim, T = a.seq, tid = (int)threadIdx.x, lane = tid % TC_W;
    tandem_bf16 *ks = tc_sm, *vt = tc_sm + tandem_k_attn_tc_tile(TC_BK, dh);
    const int b = (int)blockIdx.y / a.heads, h = (int)blockIdx.y % a.heads;
    const int r0 = (int)blockIdx.x * TC_BQ + tid / TC_W * 16;
    const uint8_t *mask = a.key_mask + (int64_t)b * T;
    const tandem_bf16 *q = (const tandem_bf16 *)a.q + tandem_k_attn_at(b, T, 0, a.ld_q, h, a.hs_q);
    const tandem_bf16 *k = (const tandem_bf16 *)a.k + tandem_k_attn_at(b, T, 0, a.ld_k, h, a.hs_k);
    const tandem_bf16 *v = (const tandem_bf16 *)a.v + tandem_k_attn_at(b, T, 0, a.ld_k, h, a.hs_k);
    uint32_t qf[TC_KS][4];
    tc_frag_rows(qf, q, NULL, a.ld_q, r0, T, dh);
    tc_ga_counts(a.key_mask, b, a.batch, a.text_len, T, a.ga_heads, ga_s, cnt);
    tc_rows st;
    for (int x = 0; x < 2; x++) {
        st.m[x] = TC_NEG, st.l[x] = st.gs[x] = 0.0f, st.any[x] = 0;
        st.gc[x] = tandem_k_attn_ga_coef(h, r0 + lane / 4 + 8 * x, a.ga_heads, a.text_len, ga_s[0], ga_s[1],
                                         ga_s[2], a.ga_scale);
    }
    float o[TC_NC][4];
    for (int nc = 0; nc < TC_NC; nc++) o[nc][0] = o[nc][1] = o[nc][2] = o[nc][3] = 0.0f;
    const int last = min((int)blockIdx.x * TC_BQ + TC_BQ - 1, T - 1);
    for (int t0 = 0; t0 <= last; t0 += TC_BK) {
        __syncthreads(); /* the previous tile is consumed */
        tc_stage(k, NULL, a.ld_k, t0, T, mask, dh, ks, NULL);
        tc_stage(v, NULL, a.ld_k, t0, T, mask, dh, NULL, vt);
        __syncthreads();
        for (int kb = t0; kb < t0 + TC_BK && kb <= r0 + 15 && kb < T; kb += 16) /* warp-uniform */
            tc_fwd_keys(&a, ks, vt, qf, o, &st, kb - t0, kb, r0, mask, ga_s);
    }
    tc_fwd_write(&a, o, &st, b, h, r0, ga_s);
}

/* ---- backward ------------------------------------------------------------------------------ */

/* dS of (query i, key t) from P's recomputation: p = exp(s - lse), dS = p (dP - G term - D). */
DEVICE_FN float tc_ds(const tandem_k_attn_fused_bwd_args *a, float s, float dp, int i, int t,
                      int allowed, float lse, float d, float gc, const int *ga, float *p) {
    *p = allowed ? expf(s * a->qk_scale - lse) : 0.0f;
    if (gc != 0.0f && t < ga[0]) dp -= gc * tandem_k_ga_g(t, i - a->text_len, ga[0], ga[1], a->ga_sigma);
    return allowed ? *p * (dp - d) : 0.0f;
}

/* f32 (and bf16, y16 not NULL) outputs of the warp's 16 rows r0 .. (ld_g), scaled. */
DEVICE_FN void tc_bwd_write(const tandem_k_attn_fused_bwd_args *a, float *y, tandem_bf16 *y16,
                            float acc[][4], float scale, int b, int h, int r0) {
    const int lane = (int)threadIdx.x % TC_W, g = lane / 4, t = lane % 4, dh = a->head_dim;
    for (int x = 0; x < 2; x++) {
        const int i = r0 + g + 8 * x;
        if (i >= a->seq) continue;
        const int64_t at = tandem_k_attn_at(b, a->seq, i, a->ld_g, h, dh);
        for (int nc = 0; nc < TC_NC; nc++)
            if (nc < dh / 8)
                for (int e = 0; e < 2; e++)
                    tandem_k_store2(y, y16, at + nc * 8 + 2 * t + e, acc[nc][2 * x + e] * scale);
    }
}

/* dQ of the warp's queries r0 .. r0 + 15: per 16 keys S = Q K^T, dP = dO V^T, dQ += dS K. */
DEVICE_FN void tc_bwd_dq(const tandem_k_attn_tc_bwd_args *A, tandem_bf16 *sm, const int *ga, int b,
                         int h, int blk0) {
    const tandem_k_attn_fused_bwd_args *a = &A->f;
    const int dh = a->head_dim, T = a->seq, lane = (int)threadIdx.x % TC_W, g = lane / 4, t = lane % 4;
    const int r0 = blk0 + (int)threadIdx.x / TC_W * 16, ldr = dh + TC_PAD, ldc = TC_BK + TC_PAD;
    tandem_bf16 *ks = sm, *vs = ks + tandem_k_attn_tc_tile(TC_BK, dh); /* K, V as is; K transposed */
    tandem_bf16 *kt = vs + tandem_k_attn_tc_tile(TC_BK, dh);
    const uint8_t *mask = a->key_mask + (int64_t)b * T;
    const int64_t base = tandem_k_attn_at(b, T, 0, a->ld_q, h, dh), obase = tandem_k_attn_at(b, T, 0, a->ld_o, h, dh);
    uint32_t qf[TC_KS][4], df[TC_KS][4];
    tc_frag_rows(qf, (const tandem_bf16 *)a->q + base, NULL, a->ld_q, r0, T, dh);
    tc_frag_rows(df, NULL, a->dy + obase, a->ld_o, r0, T, dh);
    float gc[2], lse[2], dd[2], dq[TC_NC][4];
    for (int x = 0; x < 2; x++) {
        const int i = r0 + g + 8 * x;
        gc[x] = tandem_k_attn_ga_coef(h, i, a->ga_heads, a->text_len, ga[0], ga[1], ga[2], a->ga_scale);
        lse[x] = i < T ? a->lse[((int64_t)b * a->heads + h) * T + i] : 0.0f;
        dd[x] = i < T ? tandem_k_attn_tc_delta(a, b, h, i, gc[x]) : 0.0f;
    }
    for (int nc = 0; nc < TC_NC; nc++) dq[nc][0] = dq[nc][1] = dq[nc][2] = dq[nc][3] = 0.0f;
    for (int t0 = 0; t0 <= min(blk0 + TC_BQ - 1, T - 1); t0 += TC_BK) {
        __syncthreads(); /* the previous tile is consumed */
        tc_stage((const tandem_bf16 *)a->k + base, NULL, a->ld_q, t0, T, mask, dh, ks, kt);
        tc_stage((const tandem_bf16 *)a->v + base, NULL, a->ld_q, t0, T, mask, dh, vs, NULL);
        __syncthreads();
        for (int kb = t0; kb < t0 + TC_BK && kb <= r0 + 15 && kb < T; kb += 16) { /* warp-uniform */
            float s[2][4], dp[2][4], p;
            tc_mm_rows(s, qf, ks + (kb - t0) * ldr, ldr, dh);
            tc_mm_rows(dp, df, vs + (kb - t0) * ldr, ldr, dh);
            for (int x = 0; x < 2; x++)
                for (int u = 0; u < 4; u++) {
                    const int i = r0 + g + 8 * x, key = kb + 8 * (u >> 1) + 2 * t + (u & 1);
                    const int allowed = i < T && key <= i && key < T && mask[key] != 0;
                    float *e = &s[u >> 1][2 * x + (u & 1)];
                    *e = tc_ds(a, *e, dp[u >> 1][2 * x + (u & 1)], i, key, allowed, lse[x], dd[x], gc[x], ga, &p);
                }
            uint32_t da[4];
            tc_c_to_a(s[0], s[1], da);
            tc_mm_cols(dq, da, kt + (kb - t0), ldc, dh);
        }
    }
    tc_bwd_write(a, a->dq, A->dq16, dq, a->qk_scale, b, h, r0);
}

/* dK, dV of the warp's keys r0 .. r0 + 15: per 16 queries S^T = K Q^T, dP^T = V dO^T,
 * dV += P^T dO, dK += dS^T Q; the query tile's D and lse in shared memory. */
DEVICE_FN void tc_bwd_dkdv(const tandem_k_attn_tc_bwd_args *A, tandem_bf16 *sm, const int *ga,
                           int b, int h, int blk0) {
    const tandem_k_attn_fused_bwd_args *a = &A->f;
    const int dh = a->head_dim, T = a->seq, lane = (int)threadIdx.x % TC_W, g = lane / 4, t = lane % 4;
    const int r0 = blk0 + (int)threadIdx.x / TC_W * 16, ldr = dh + TC_PAD, ldc = TC_BQ + TC_PAD;
    tandem_bf16 *qs = sm, *dos = qs + tandem_k_attn_tc_tile(TC_BQ, dh); /* Q, dO as is; then transposed */
    tandem_bf16 *qt = dos + tandem_k_attn_tc_tile(TC_BQ, dh), *dot = qt + tandem_k_attn_tc_tile(dh, TC_BQ);
    float *dls = (float *)(dot + tandem_k_attn_tc_tile(dh, TC_BQ)); /* [BQ][2]: D, lse */
    const uint8_t *mask = a->key_mask + (int64_t)b * T;
    const int64_t base = tandem_k_attn_at(b, T, 0, a->ld_q, h, dh), obase = tandem_k_attn_at(b, T, 0, a->ld_o, h, dh);
    uint32_t kf[TC_KS][4], vf[TC_KS][4];
    tc_frag_rows(kf, (const tandem_bf16 *)a->k + base, NULL, a->ld_q, r0, T, dh);
    tc_frag_rows(vf, (const tandem_bf16 *)a->v + base, NULL, a->ld_q, r0, T, dh);
    float dk[TC_NC][4], dv[TC_NC][4];
    for (int nc = 0; nc < TC_NC; nc++)
        for (int x = 0; x < 4; x++) dk[nc][x] = dv[nc][x] = 0.0f;
    for (int i0 = blk0; i0 < T; i0 += TC_BQ) {
        __syncthreads(); /* the previous query tile is consumed */
        tc_stage((const tandem_bf16 *)a->q + base, NULL, a->ld_q, i0, T, NULL, dh, qs, qt);
        tc_stage(NULL, a->dy + obase, a->ld_o, i0, T, NULL, dh, dos, dot);
        for (int r = (int)threadIdx.x; r < TC_BQ; r += (int)blockDim.x) {
            const int i = i0 + r;
            const float gci = tandem_k_attn_ga_coef(h, i, a->ga_heads, a->text_len, ga[0], ga[1], ga[2], a->ga_scale);
            dls[2 * r] = i < T ? tandem_k_attn_tc_delta(a, b, h, i, gci) : 0.0f;
            dls[2 * r + 1] = i < T ? a->lse[((int64_t)b * a->heads + h) * T + i] : 0.0f;
        }
        __syncthreads();
        for (int qb = i0; qb < i0 + TC_BQ && qb < T; qb += 16) {
            if (qb + 15 < r0) continue; /* warp-uniform: every query before every key of the warp */
            float s[2][4], dp[2][4], p[2][4];
            tc_mm_rows(s, kf, qs + (qb - i0) * ldr, ldr, dh);
            tc_mm_rows(dp, vf, dos + (qb - i0) * ldr, ldr, dh);
            for (int x = 0; x < 2; x++)
                for (int u = 0; u < 4; u++) {
                    const int key = r0 + g + 8 * x, ql = qb - i0 + 8 * (u >> 1) + 2 * t + (u & 1), i = i0 + ql;
                    const int allowed = i < T && key <= i && key < T && mask[key] != 0;
                    const float gci = tandem_k_attn_ga_coef(h, i, a->ga_heads, a->text_len, ga[0], ga[1], ga[2],
                                                            a->ga_scale);
                    float *e = &s[u >> 1][2 * x + (u & 1)];
                    *e = tc_ds(a, *e, dp[u >> 1][2 * x + (u & 1)], i, key, allowed, dls[2 * ql + 1], dls[2 * ql],
                               gci, ga, &p[u >> 1][2 * x + (u & 1)]);
                }
            uint32_t pa[4], sa[4];
            tc_c_to_a(p[0], p[1], pa);
            tc_c_to_a(s[0], s[1], sa);
            tc_mm_cols(dv, pa, dot + (qb - i0), ldc, dh);
            tc_mm_cols(dk, sa, qt + (qb - i0), ldc, dh);
        }
    }
    tc_bwd_write(a, a->dk, A->dk16, dk, a->qk_scale, b, h, r0);
    tc_bwd_write(a, a->dv, A->dv16, dv, 1.0f, b, h, r0);
}

/* Blocks [0, nqb) of x compute dQ of a 64-query tile, blocks from nqb dK, dV of a 64-key tile:
 * no dependency between blocks, no atomics (deterministic). */
KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_TC_THREADS) tandem_k_attn_tc_bwd(tandem_k_attn_tc_bwd_args a) {
    DYNAMIC_SHARED(tandem_bf16, tc_sm);
    __shared__ int ga_s[3]; /* tt, nm, nq */
    __shared__ int cnt[3 * TANDEM_K_ATTN_TC_THREADS];
    const int b = (int)blockIdx.y / a.f.heads, h = (int)blockIdx.y % a.f.heads;
    const int nqb = (a.f.seq + TC_BQ - 1) / TC_BQ, x = (int)blockIdx.x;
    tc_ga_counts(a.f.key_mask, b, a.f.batch, a.f.text_len, a.f.seq, a.f.ga_heads, ga_s, cnt);
    if (x < nqb)
        tc_bwd_dq(&a, tc_sm, ga_s, b, h, x * TC_BQ);
    else
        tc_bwd_dkdv(&a, tc_sm, ga_s, b, h, (x - nqb) * TC_BK);
}
