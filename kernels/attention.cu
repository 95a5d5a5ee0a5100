/* attention.cu — attention kernels (argument structs and semantics: attention.h): head layout
 * transforms (grid-stride element-wise loops) and the causal masked softmax forward/backward
 * (one warp per score row, warp-shuffle reductions, no shared memory or block barriers).
 * Launch geometry and host implementations: attention_host.c.
 */
#include "kernels/dialect.h"

#include "kernels/attention.h"

/* Identity of a column of a [B, T, w] row-major tensor whose rows are heads-interleaved:
 * element idx of [B, T, groups * H * dh] lives at [group][b, h, t, e] of per-head tensors. */
DEVICE_FN void attn_k_locate(int64_t idx, int groups, int seq, int heads, int head_dim,
                             int *group, int64_t *head_off) {
    int d = heads * head_dim;
    int64_t width = (int64_t)groups * d;
    int c = (int)(idx % width);
    int64_t bt = idx / width;
    int t = (int)(bt % seq);
    int64_t b = bt / seq;
    int cc = c % d;
    int h = cc / head_dim;
    int e = cc % head_dim;
    *group = c / d;
    *head_off = ((b * heads + h) * seq + t) * head_dim + e;
}

DEVICE_FN int64_t attn_k_first(void) {
    return (int64_t)blockIdx.x * (int64_t)blockDim.x + (int64_t)threadIdx.x;
}
DEVICE_FN int64_t attn_k_stride(void) { return (int64_t)gridDim.x * (int64_t)blockDim.x; }

/* Loops run over the [B, T, *] index so the wide, interleaved side is read or written
 * contiguously; the per-head side is contiguous in runs of dh. */
KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_THREADS) tandem_k_qkv_split(tandem_k_qkv_split_args a) {
    int64_t n = (int64_t)a.batch * a.seq * 3 * a.heads * a.head_dim;
    for (int64_t i = attn_k_first(); i < n; i += attn_k_stride()) {
        int g;
        int64_t o;
        attn_k_locate(i, 3, a.seq, a.heads, a.head_dim, &g, &o);
        float *dst = g == 0 ? a.q : (g == 1 ? a.k : a.v);
        tandem_bf16 *dst16 = g == 0 ? a.q16 : (g == 1 ? a.k16 : a.v16);
        tandem_k_store2(dst, dst16, o, a.qkv[i]);
    }
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_THREADS) tandem_k_qkv_merge_grad(tandem_k_qkv_merge_grad_args a) {
    int64_t n = (int64_t)a.batch * a.seq * 3 * a.heads * a.head_dim;
    for (int64_t i = attn_k_first(); i < n; i += attn_k_stride()) {
        int g;
        int64_t o;
        attn_k_locate(i, 3, a.seq, a.heads, a.head_dim, &g, &o);
        const float *src = g == 0 ? a.dq : (g == 1 ? a.dk : a.dv);
        tandem_k_store2(a.dqkv, a.dqkv16, i, src[o]);
    }
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_THREADS) tandem_k_heads_merge(tandem_k_heads_merge_args a) {
    int64_t n = (int64_t)a.batch * a.seq * a.heads * a.head_dim;
    for (int64_t i = attn_k_first(); i < n; i += attn_k_stride()) {
        int g;
        int64_t o;
        attn_k_locate(i, 1, a.seq, a.heads, a.head_dim, &g, &o);
        tandem_k_store2(a.y, a.y16, i, a.o[o]);
    }
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_THREADS) tandem_k_heads_split_grad(tandem_k_heads_split_grad_args a) {
    int64_t n = (int64_t)a.batch * a.seq * a.heads * a.head_dim;
    for (int64_t i = attn_k_first(); i < n; i += attn_k_stride()) {
        int g;
        int64_t o;
        attn_k_locate(i, 1, a.seq, a.heads, a.head_dim, &g, &o);
        tandem_k_store2(a.d_o, a.d_o16, o, a.dy[i]);
    }
}

/* Butterfly reductions: every lane ends with the result, so no broadcast is needed. */
DEVICE_FN float attn_k_warp_max(float v) {
    for (int off = TANDEM_WARP_SIZE / 2; off > 0; off /= 2)
        v = fmaxf(v, __shfl_xor_sync(TANDEM_FULL_MASK, v, off));
    return v;
}
DEVICE_FN float attn_k_warp_sum(float v) {
    for (int off = TANDEM_WARP_SIZE / 2; off > 0; off /= 2)
        v += __shfl_xor_sync(TANDEM_FULL_MASK, v, off);
    return v;
}

/* The score row of this warp (warp w of block x handles row x * warps_per_block + w); -1 when
 * past the last row. Whole warps leave together, and there are no block barriers. */
DEVICE_FN int64_t attn_k_warp_row(int64_t rows) {
    int64_t row = (int64_t)blockIdx.x * (int64_t)(blockDim.x / TANDEM_WARP_SIZE) +
                  (int64_t)(threadIdx.x / TANDEM_WARP_SIZE);
    return row < rows ? row : -1;
}

/* Lane l handles keys l, l + 32, ...: consecutive lanes read consecutive scores. Query i only
 * reads keys 0..i (the causal half); keys past i are written as 0. */
KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_ROWS_PER_BLOCK * 32) tandem_k_softmax_causal_fwd(tandem_k_softmax_causal_fwd_args a) {
    const int T = a.seq;
    int64_t row = attn_k_warp_row((int64_t)a.batch * a.heads * a.nq);
    if (row < 0) return;
    const int lane = (int)(threadIdx.x % TANDEM_WARP_SIZE);
    const int i = a.q0 + (int)(row % a.nq);
    const int64_t b = row / ((int64_t)a.nq * a.heads);
    const float *s = a.s + row * T;                /* [T] */
    const int64_t at = row * T;                    /* p of the row: f32 or bf16 */
    const uint8_t *mask = a.key_mask + b * T;      /* [T] */

    float m = -3.402823466e+38f; /* -FLT_MAX: below any finite score */
    int any = 0;
    for (int j = lane; j <= i; j += TANDEM_WARP_SIZE)
        if (mask[j]) {
            m = fmaxf(m, s[j]);
            any = 1;
        }
    m = attn_k_warp_max(m);
    any = __any_sync(TANDEM_FULL_MASK, any);

    float sum = 0.0f;
    for (int j = lane; j <= i; j += TANDEM_WARP_SIZE)
        if (mask[j]) sum += expf(s[j] - m);
    sum = attn_k_warp_sum(sum);
    /* No allowed key: the row is all zeros (sum is 0 and m meaningless). */
    const float inv = any ? 1.0f / sum : 0.0f;

    for (int j = lane; j < T; j += TANDEM_WARP_SIZE) {
        float v = 0.0f;
        if (j <= i && mask[j]) v = expf(s[j] - m) * inv;
        tandem_k_attn_store(a.p, at + j, a.bf16, v);
    }
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_ROWS_PER_BLOCK * 32) tandem_k_softmax_causal_bwd(tandem_k_softmax_causal_bwd_args a) {
    const int T = a.seq;
    int64_t row = attn_k_warp_row((int64_t)a.batch * a.heads * T);
    if (row < 0) return;
    const int lane = (int)(threadIdx.x % TANDEM_WARP_SIZE);
    const int i = (int)(row % T);
    const float *dp = a.dp + row * T; /* [T] */
    const int64_t at = row * T;       /* p and ds of the row: f32 or bf16 */

    float r = 0.0f;
    for (int j = lane; j <= i; j += TANDEM_WARP_SIZE) r += tandem_k_attn_load(a.p, at + j, a.bf16) * dp[j];
    r = attn_k_warp_sum(r);

    for (int j = lane; j < T; j += TANDEM_WARP_SIZE)
        tandem_k_attn_store(a.ds, at + j, a.bf16,
                            j <= i ? tandem_k_attn_load(a.p, at + j, a.bf16) * (dp[j] - r) : 0.0f);
}

/* ---- guided-attention loss (attention.h): one thread per (b, h < ga_heads, j) row ----
 * Nq (the batch's real mel positions) is counted by the block together, a slice of the mask per
 * thread and the counts summed from shared memory (integers: exact in any order); each thread
 * counting the whole mask itself made ga_fwd and ga_bwd 0.22 ms each per layer on an H100. */
DEVICE_FN int ga_k_queries(const uint8_t *key_mask, int batch, int text_len, int mel_len, int *cnt) {
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x, T = text_len + mel_len;
    int c = 0;
    for (int64_t x = tid; x < (int64_t)batch * mel_len; x += nt)
        c += key_mask[(x / mel_len) * T + text_len + x % mel_len] != 0;
    cnt[tid] = c;
    __syncthreads();
    int total = 0;
    for (int k = 0; k < nt; k++) total += cnt[k];
    return total;
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_THREADS) tandem_k_ga_fwd(tandem_k_ga_fwd_args a) {
    __shared__ int cnt[TANDEM_K_ATTN_THREADS];
    const int64_t n = (int64_t)a.batch * a.ga_heads * a.mel_len;
    const int nq = ga_k_queries(a.key_mask, a.batch, a.text_len, a.mel_len, cnt);
    for (int64_t row = attn_k_first(); row < n; row += attn_k_stride())
        a.rows[row] = tandem_k_ga_fwd_row(&a, row, nq);
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_THREADS) tandem_k_ga_bwd(tandem_k_ga_bwd_args a) {
    __shared__ int cnt[TANDEM_K_ATTN_THREADS];
    const int64_t n = (int64_t)a.batch * a.ga_heads * a.mel_len;
    const int nq = ga_k_queries(a.key_mask, a.batch, a.text_len, a.mel_len, cnt);
    for (int64_t row = attn_k_first(); row < n; row += attn_k_stride()) tandem_k_ga_bwd_row(&a, row, nq);
}

/* ---- fused causal attention (attention.h) ---------------------------------------------------
 * Forward: block (query tile of FA_BQ rows, b * H + h); 4 warps of FA_BQ / 4 rows each. Key
 * tiles of FA_BK keys (lane = key) are staged in shared memory up to the tile's last query
 * (causal: later tiles are skipped); per row an online softmax (running max m, sum l, output
 * accumulator rescaled by exp(m_old - m_new)), the guided-attention sum rescaled alike.
 * Column c of a head belongs to lane c % 32 (at most FA_MAX_DH / 32 columns per lane). */
#define FA_BQ TANDEM_K_ATTN_FA_BQ
#define FA_BK TANDEM_K_ATTN_FA_BK
#define FA_RW (TANDEM_K_ATTN_FA_BQ / 4)              /* rows per warp */
#define FA_CPL (TANDEM_K_ATTN_FA_MAX_DH / TANDEM_WARP_SIZE) /* columns per lane */
#define FA_NEG_MAX (-3.402823466e+38f)

/* The item's guided-attention counts (tt, nm) and the batch's Nq, once per block. */
DEVICE_FN void fa_k_ga_counts(const uint8_t *key_mask, int b, int batch, int text_len, int seq,
                              int ga_heads, int *tt, int *nm, int *nq) {
    *tt = *nm = *nq = 0;
    if (ga_heads <= 0) return;
    tandem_k_ga_counts(key_mask, b, text_len, seq - text_len, tt, nm);
    *nq = tandem_k_ga_queries(key_mask, batch, text_len, seq - text_len);
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_FA_THREADS) tandem_k_attn_fused_fwd(tandem_k_attn_fused_fwd_args a) {
    DYNAMIC_SHARED(float, sm);
    __shared__ int ga_s[3]; /* tt, nm, nq */
    const int dh = a.head_dim, ldk = dh + 1, T = a.seq;
    float *qs = sm;              /* [FA_BQ][dh] */
    float *ks = qs + FA_BQ * dh; /* [FA_BK][dh + 1] */
    float *vs = ks + FA_BK * ldk; /* [FA_BK][dh] */
    const int b = (int)blockIdx.y / a.heads, h = (int)blockIdx.y % a.heads;
    const int r0 = (int)blockIdx.x * FA_BQ;
    const int tid = (int)threadIdx.x, lane = tid % TANDEM_WARP_SIZE, warp = tid / TANDEM_WARP_SIZE;
    const uint8_t *mask = a.key_mask + (int64_t)b * T;
    for (int x = tid; x < FA_BQ * dh; x += (int)blockDim.x) {
        const int r = x / dh, c = x % dh;
        qs[x] = r0 + r < a.q_rows
                    ? tandem_k_attn_load(a.q, tandem_k_attn_at(b, a.q_rows, r0 + r, a.ld_q, h, a.hs_q) + c, a.bf16)
                    : 0.0f;
    }
    if (tid == 0) fa_k_ga_counts(a.key_mask, b, a.batch, a.text_len, T, a.ga_heads, &ga_s[0], &ga_s[1], &ga_s[2]);
    __syncthreads();
    float m[FA_RW], l[FA_RW], gs[FA_RW], gc[FA_RW], acc[FA_RW][FA_CPL];
    int any[FA_RW];
    for (int k = 0; k < FA_RW; k++) {
        const int i = a.q0 + r0 + warp * FA_RW + k;
        m[k] = FA_NEG_MAX, l[k] = 0.0f, gs[k] = 0.0f, any[k] = 0;
        gc[k] = tandem_k_attn_ga_coef(h, i, a.ga_heads, a.text_len, ga_s[0], ga_s[1], ga_s[2], a.ga_scale);
        for (int cc = 0; cc < FA_CPL; cc++) acc[k][cc] = 0.0f;
    }
    int last = a.q0 + r0 + FA_BQ - 1; /* the tile's last query */
    if (last > a.q0 + a.q_rows - 1) last = a.q0 + a.q_rows - 1;
    for (int t0 = 0; t0 <= last; t0 += FA_BK) {
        for (int x = tid; x < FA_BK * dh; x += (int)blockDim.x) {
            const int t = x / dh, c = x % dh;
            const int64_t at = tandem_k_attn_at(b, T, t0 + t, a.ld_k, h, a.hs_k) + c;
            ks[t * ldk + c] = t0 + t < T ? tandem_k_attn_load(a.k, at, a.bf16) : 0.0f;
            vs[t * dh + c] = t0 + t < T ? tandem_k_attn_load(a.v, at, a.bf16) : 0.0f;
        }
        __syncthreads();
        const int t = t0 + lane;
        for (int k = 0; k < FA_RW; k++) {
            const int r = warp * FA_RW + k, i = a.q0 + r0 + r;
            const int ok = r0 + r < a.q_rows && t <= i && t < T && mask[t] != 0;
            float s = 0.0f;
            for (int c = 0; c < dh; c++) s += qs[r * dh + c] * ks[lane * ldk + c];
            s *= a.qk_scale;
            if (!__any_sync(TANDEM_FULL_MASK, ok)) continue; /* warp-uniform */
            const float tmax = attn_k_warp_max(ok ? s : FA_NEG_MAX);
            const float mn = any[k] ? fmaxf(m[k], tmax) : tmax;
            const float alpha = any[k] ? expf(m[k] - mn) : 0.0f;
            const float p = ok ? expf(s - mn) : 0.0f;
            l[k] = l[k] * alpha + attn_k_warp_sum(p);
            if (gc[k] != 0.0f) {
                const float g = ok && t < ga_s[0]
                                    ? p * tandem_k_ga_g(t, i - a.text_len, ga_s[0], ga_s[1], a.ga_sigma)
                                    : 0.0f;
                gs[k] = gs[k] * alpha + attn_k_warp_sum(g);
            }
            for (int cc = 0; cc < FA_CPL; cc++) acc[k][cc] *= alpha;
            for (int kk = 0; kk < FA_BK; kk++) {
                const float pk = __shfl_sync(TANDEM_FULL_MASK, p, kk);
                if (pk == 0.0f) continue; /* warp-uniform; a masked key's v may be anything */
                for (int cc = 0; cc < FA_CPL; cc++) {
                    const int c = lane + cc * TANDEM_WARP_SIZE;
                    if (c < dh) acc[k][cc] += pk * vs[kk * dh + c];
                }
            }
            m[k] = mn, any[k] = 1;
        }
        __syncthreads();
    }
    const int tm = T - a.text_len;
    for (int k = 0; k < FA_RW; k++) {
        const int r = r0 + warp * FA_RW + k, i = a.q0 + r;
        if (r >= a.q_rows) continue;
        const float inv = any[k] ? 1.0f / l[k] : 0.0f;
        const int64_t at = tandem_k_attn_at(b, a.q_rows, r, a.ld_o, h, dh);
        for (int cc = 0; cc < FA_CPL; cc++) {
            const int c = lane + cc * TANDEM_WARP_SIZE;
            if (c < dh) tandem_k_attn_store(a.o, at + c, a.bf16, acc[k][cc] * inv);
        }
        if (lane != 0) continue;
        a.lse[((int64_t)b * a.heads + h) * a.q_rows + r] = any[k] ? m[k] + logf(l[k]) : 0.0f;
        if (h < a.ga_heads && i >= a.text_len) {
            const int64_t gi = ((int64_t)b * a.ga_heads + h) * tm + (i - a.text_len);
            const float sum = gc[k] != 0.0f ? gs[k] * inv : 0.0f;
            a.ga_sum[gi] = sum;
            a.ga_rows[gi] = gc[k] != 0.0f ? (float)((1.0 - (double)sum) * ((double)a.ga_scale / (double)ga_s[2]))
                                          : 0.0f;
        }
    }
}

/* Backward: blocks [0, nqb) of x (nqb = ceil(seq / FA_BQ)) compute dq of a query tile (lane =
 * key of each key tile, the warp's rows as in the forward); blocks from nqb compute dk, dv of
 * a key tile of FA_BK keys (warp w owns keys w * 8 .. w * 8 + 7; lane = query row of each tile
 * of 32 queries). Both recompute P from the forward's lse and D = rowsum(dO o O) - c ga_sum
 * themselves, so one launch has no dependency between its blocks and no atomics. */
DEVICE_FN float fa_k_delta(const tandem_k_attn_fused_bwd_args *a, int b, int h, int i, float gc,
                           int lane) {
    const int64_t at = tandem_k_attn_at(b, a->seq, i, a->ld_o, h, a->head_dim);
    float part = 0.0f;
    for (int c = lane; c < a->head_dim; c += TANDEM_WARP_SIZE)
        part += a->dy[at + c] * tandem_k_attn_load(a->o, at + c, a->bf16);
    float d = attn_k_warp_sum(part);
    if (gc != 0.0f)
        d -= gc * a->ga_sum[((int64_t)b * a->ga_heads + h) * (a->seq - a->text_len) + i - a->text_len];
    return d;
}

/* dP of (query i, key t) from dO . V (dov) plus the guided-attention term. */
DEVICE_FN float fa_k_dp(const tandem_k_attn_fused_bwd_args *a, float dov, int i, int t, float gc,
                        const int *ga) {
    if (gc != 0.0f && t < ga[0]) dov -= gc * tandem_k_ga_g(t, i - a->text_len, ga[0], ga[1], a->ga_sigma);
    return dov;
}

DEVICE_FN void fa_k_bwd_dq(const tandem_k_attn_fused_bwd_args *a, float *sm, const int *ga, int b,
                           int h, int r0) {
    const int dh = a->head_dim, ldk = dh + 1, T = a->seq;
    const int tid = (int)threadIdx.x, lane = tid % TANDEM_WARP_SIZE, warp = tid / TANDEM_WARP_SIZE;
    float *qs = sm, *dos = qs + FA_BQ * dh, *ks = dos + FA_BQ * dh, *vs = ks + FA_BK * ldk;
    const uint8_t *mask = a->key_mask + (int64_t)b * T;
    for (int x = tid; x < FA_BQ * dh; x += (int)blockDim.x) {
        const int r = x / dh, c = x % dh, ok = r0 + r < T;
        qs[x] = ok ? tandem_k_attn_load(a->q, tandem_k_attn_at(b, T, r0 + r, a->ld_q, h, dh) + c, a->bf16) : 0.0f;
        dos[x] = ok ? a->dy[tandem_k_attn_at(b, T, r0 + r, a->ld_o, h, dh) + c] : 0.0f;
    }
    float dd[FA_RW], lse[FA_RW], gc[FA_RW], acc[FA_RW][FA_CPL];
    for (int k = 0; k < FA_RW; k++) {
        const int i = r0 + warp * FA_RW + k;
        gc[k] = tandem_k_attn_ga_coef(h, i, a->ga_heads, a->text_len, ga[0], ga[1], ga[2], a->ga_scale);
        dd[k] = i < T ? fa_k_delta(a, b, h, i, gc[k], lane) : 0.0f;
        lse[k] = i < T ? a->lse[((int64_t)b * a->heads + h) * T + i] : 0.0f;
        for (int cc = 0; cc < FA_CPL; cc++) acc[k][cc] = 0.0f;
    }
    const int last = r0 + FA_BQ - 1 < T - 1 ? r0 + FA_BQ - 1 : T - 1;
    for (int t0 = 0; t0 <= last; t0 += FA_BK) {
        __syncthreads(); /* the previous tile is consumed (and qs, dos are loaded) */
        for (int x = tid; x < FA_BK * dh; x += (int)blockDim.x) {
            const int t = x / dh, c = x % dh, ok = t0 + t < T;
            const int64_t at = tandem_k_attn_at(b, T, t0 + t, a->ld_q, h, dh) + c;
            ks[t * ldk + c] = ok ? tandem_k_attn_load(a->k, at, a->bf16) : 0.0f;
            vs[t * ldk + c] = ok ? tandem_k_attn_load(a->v, at, a->bf16) : 0.0f;
        }
        __syncthreads();
        const int t = t0 + lane;
        for (int k = 0; k < FA_RW; k++) {
            const int r = warp * FA_RW + k, i = r0 + r;
            const int ok = i < T && t <= i && t < T && mask[t] != 0;
            if (!__any_sync(TANDEM_FULL_MASK, ok)) continue; /* warp-uniform */
            float s = 0.0f, dov = 0.0f;
            for (int c = 0; c < dh; c++) {
                s += qs[r * dh + c] * ks[lane * ldk + c];
                dov += dos[r * dh + c] * vs[lane * ldk + c];
            }
            const float p = ok ? expf(s * a->qk_scale - lse[k]) : 0.0f;
            const float ds = ok ? p * (fa_k_dp(a, dov, i, t, gc[k], ga) - dd[k]) : 0.0f;
            for (int kk = 0; kk < FA_BK; kk++) {
                const float dk = __shfl_sync(TANDEM_FULL_MASK, ds, kk);
                if (dk == 0.0f) continue; /* warp-uniform, as in the forward */
                for (int cc = 0; cc < FA_CPL; cc++) {
                    const int c = lane + cc * TANDEM_WARP_SIZE;
                    if (c < dh) acc[k][cc] += dk * ks[kk * ldk + c];
                }
            }
        }
    }
    for (int k = 0; k < FA_RW; k++) {
        const int i = r0 + warp * FA_RW + k;
        if (i >= T) continue;
        const int64_t at = tandem_k_attn_at(b, T, i, a->ld_g, h, dh);
        for (int cc = 0; cc < FA_CPL; cc++) {
            const int c = lane + cc * TANDEM_WARP_SIZE;
            if (c < dh) a->dq[at + c] = acc[k][cc] * a->qk_scale;
        }
    }
}

#define FA_KW (TANDEM_K_ATTN_FA_BK / 4) /* keys per warp in a dk/dv block */

DEVICE_FN void fa_k_bwd_dkdv(const tandem_k_attn_fused_bwd_args *a, float *sm, const int *ga,
                             int b, int h, int t0) {
    const int dh = a->head_dim, ldq = dh + 1, T = a->seq, W = TANDEM_WARP_SIZE;
    const int tid = (int)threadIdx.x, lane = tid % W, warp = tid / W;
    float *ks = sm, *vs = ks + FA_BK * dh, *qs = vs + FA_BK * dh, *dos = qs + W * ldq;
    float *dls = dos + W * ldq; /* [W][2]: D, lse of the query tile's rows */
    const uint8_t *mask = a->key_mask + (int64_t)b * T;
    for (int x = tid; x < FA_BK * dh; x += (int)blockDim.x) {
        const int t = x / dh, c = x % dh, ok = t0 + t < T;
        const int64_t at = tandem_k_attn_at(b, T, t0 + t, a->ld_q, h, dh) + c;
        ks[x] = ok ? tandem_k_attn_load(a->k, at, a->bf16) : 0.0f;
        vs[x] = ok ? tandem_k_attn_load(a->v, at, a->bf16) : 0.0f;
    }
    float dk[FA_KW][FA_CPL], dv[FA_KW][FA_CPL];
    for (int kk = 0; kk < FA_KW; kk++)
        for (int cc = 0; cc < FA_CPL; cc++) dk[kk][cc] = dv[kk][cc] = 0.0f;
    for (int i0 = t0; i0 < T; i0 += W) {
        __syncthreads(); /* the previous query tile is consumed (and ks, vs are loaded) */
        for (int x = tid; x < W * dh; x += (int)blockDim.x) {
            const int r = x / dh, c = x % dh, ok = i0 + r < T;
            qs[r * ldq + c] = ok ? tandem_k_attn_load(a->q, tandem_k_attn_at(b, T, i0 + r, a->ld_q, h, dh) + c, a->bf16) : 0.0f;
            dos[r * ldq + c] = ok ? a->dy[tandem_k_attn_at(b, T, i0 + r, a->ld_o, h, dh) + c] : 0.0f;
        }
        for (int r = warp; r < W; r += (int)blockDim.x / W) {
            const int i = i0 + r;
            const float gc = tandem_k_attn_ga_coef(h, i, a->ga_heads, a->text_len, ga[0], ga[1], ga[2], a->ga_scale);
            const float d = i < T ? fa_k_delta(a, b, h, i, gc, lane) : 0.0f;
            if (lane == 0) {
                dls[2 * r] = d;
                dls[2 * r + 1] = i < T ? a->lse[((int64_t)b * a->heads + h) * T + i] : 0.0f;
            }
        }
        __syncthreads();
        const int i = i0 + lane;
        const float gc = tandem_k_attn_ga_coef(h, i, a->ga_heads, a->text_len, ga[0], ga[1], ga[2], a->ga_scale);
        for (int kk = 0; kk < FA_KW; kk++) {
            const int tl = warp * FA_KW + kk, t = t0 + tl;
            const int ok = i < T && t <= i && t < T && mask[t < T ? t : 0] != 0;
            if (!__any_sync(TANDEM_FULL_MASK, ok)) continue; /* warp-uniform */
            float s = 0.0f, dov = 0.0f;
            for (int c = 0; c < dh; c++) {
                s += qs[lane * ldq + c] * ks[tl * dh + c];
                dov += dos[lane * ldq + c] * vs[tl * dh + c];
            }
            const float p = ok ? expf(s * a->qk_scale - dls[2 * lane + 1]) : 0.0f;
            const float ds = ok ? p * (fa_k_dp(a, dov, i, t, gc, ga) - dls[2 * lane]) : 0.0f;
            for (int ii = 0; ii < W; ii++) {
                const float pi = __shfl_sync(TANDEM_FULL_MASK, p, ii);
                const float di = __shfl_sync(TANDEM_FULL_MASK, ds, ii);
                for (int cc = 0; cc < FA_CPL; cc++) {
                    const int c = lane + cc * W;
                    if (c < dh) {
                        dv[kk][cc] += pi * dos[ii * ldq + c];
                        dk[kk][cc] += di * qs[ii * ldq + c];
                    }
                }
            }
        }
    }
    for (int kk = 0; kk < FA_KW; kk++) {
        const int t = t0 + warp * FA_KW + kk;
        if (t >= T) continue;
        const int64_t at = tandem_k_attn_at(b, T, t, a->ld_g, h, dh);
        for (int cc = 0; cc < FA_CPL; cc++) {
            const int c = lane + cc * W;
            if (c < dh) {
                a->dk[at + c] = dk[kk][cc] * a->qk_scale;
                a->dv[at + c] = dv[kk][cc];
            }
        }
    }
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_ATTN_FA_THREADS) tandem_k_attn_fused_bwd(tandem_k_attn_fused_bwd_args a) {
    DYNAMIC_SHARED(float, sm);
    __shared__ int ga_s[3]; /* tt, nm, nq */
    const int b = (int)blockIdx.y / a.heads, h = (int)blockIdx.y % a.heads;
    const int nqb = (a.seq + FA_BQ - 1) / FA_BQ, x = (int)blockIdx.x;
    if (threadIdx.x == 0)
        fa_k_ga_counts(a.key_mask, b, a.batch, a.text_len, a.seq, a.ga_heads, &ga_s[0], &ga_s[1], &ga_s[2]);
    __syncthreads();
    if (x < nqb)
        fa_k_bwd_dq(&a, sm, ga_s, b, h, x * FA_BQ);
    else
        fa_k_bwd_dkdv(&a, sm, ga_s, b, h, (x - nqb) * FA_BK);
}
