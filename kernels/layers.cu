/* layers.cu — device kernels of the transformer layers (kernels/layers.h): LayerNorm forward
 * and backward (+ its deterministic parameter-gradient sum), GELU, bias add, column sums, the
 * input sequence embedding and the prenet input shift.
 *
 * No atomics anywhere: every reduction has an order fixed by the shapes (warp butterflies,
 * then warp totals in order, then row slices in order), so results are bit-identical run to
 * run on a GPU — required for exact resume. Launch geometry: kernels/layers_host.c.
 * All kernel sources share one translation unit in the fatbin: helpers are prefixed layers_
 * and the macros are undefined at the end.
 */
#include "kernels/dialect.h"

#include "kernels/layers.h"

/* The LayerNorm kernels take any block size that is a multiple of 32 up to 1024
 * (layers_host.c uses 128). col_sum_acc: a block is LAYERS_CS_COLS columns x LAYERS_CS_SLICES row slices. */
#define LAYERS_CS_COLS TANDEM_K_CS_COLS
#define LAYERS_CS_SLICES TANDEM_K_CS_SLICES

DEVICE_FN int64_t layers_first(void) {
    return (int64_t)blockIdx.x * (int64_t)blockDim.x + (int64_t)threadIdx.x;
}
DEVICE_FN int64_t layers_stride(void) { return (int64_t)gridDim.x * (int64_t)blockDim.x; }

/* Butterfly sum over a full warp: every lane ends with the same total. */
DEVICE_FN float layers_warp_sum(float v) {
    for (int offset = TANDEM_WARP_SIZE / 2; offset > 0; offset /= 2)
        v += __shfl_xor_sync(TANDEM_FULL_MASK, v, offset);
    return v;
}

/* Block-wide sums of two values; every thread gets both totals. red: shared [2 * 33]
 * (32 warp totals + the result, per value). Safe to call again straight away: the next call
 * overwrites the warp slots only after this one's readers of them passed the second barrier,
 * and the result slots only after its own first barrier. */
DEVICE_FN void layers_block_sum2(float *v0, float *v1, float *red) {
    int lane = (int)threadIdx.x % TANDEM_WARP_SIZE;
    int warp = (int)threadIdx.x / TANDEM_WARP_SIZE;
    int nwarps = (int)blockDim.x / TANDEM_WARP_SIZE;
    float a = layers_warp_sum(*v0), b = layers_warp_sum(*v1);
    if (lane == 0) {
        red[warp] = a;
        red[33 + warp] = b;
    }
    __syncthreads();
    if (warp == 0) {
        a = layers_warp_sum(lane < nwarps ? red[lane] : 0.0f);
        b = layers_warp_sum(lane < nwarps ? red[33 + lane] : 0.0f);
        if (lane == 0) {
            red[32] = a;
            red[65] = b;
        }
    }
    __syncthreads();
    *v0 = red[32];
    *v1 = red[65];
}

/* ---- LayerNorm forward: one block per row (grid.x = rows) ----
 * Two passes over the row (mean, then the centred variance) rather than E[x^2] - mean^2,
 * which cancels badly when |mean| >> std. The whole block leaves together on an
 * out-of-range row, so no thread skips a barrier. */
KERNEL LAUNCH_BOUNDS(TANDEM_K_LN_THREADS) tandem_k_layernorm_fwd(tandem_k_layernorm_fwd_args a) {
    __shared__ float red[66];
    int row = (int)blockIdx.x;
    if (row >= a.rows) return;
    int tid = (int)threadIdx.x, nt = (int)blockDim.x;
    const float *x = a.x + (int64_t)row * a.d; /* [d] */
    const int64_t at = (int64_t)row * a.d;     /* y, y16 of the row */

    float s = 0.0f, unused = 0.0f;
    for (int c = tid; c < a.d; c += nt) s += x[c];
    layers_block_sum2(&s, &unused, red);
    float mean = s / (float)a.d;

    float q = 0.0f;
    unused = 0.0f;
    for (int c = tid; c < a.d; c += nt) {
        float t = x[c] - mean;
        q += t * t;
    }
    layers_block_sum2(&q, &unused, red);
    float rstd = rsqrtf(q / (float)a.d + a.eps);

    for (int c = tid; c < a.d; c += nt)
        tandem_k_store2(a.y, a.y16, at + c, (x[c] - mean) * rstd * a.gamma[c] + a.beta[c]);
    if (tid == 0) {
        a.mean[row] = mean;
        a.rstd[row] = rstd;
    }
}

/* ---- LayerNorm backward: dx and per-block parameter partials ----
 * With xhat = (x - mean) * rstd and g = gamma * dy:
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
 * Block b takes rows b, b + nb, ...; thread tid owns columns tid, tid + blockDim, ... both for
 * the row's dx and for the block's partials part[2, d] in shared memory, so the partials need
 * no barrier and are summed in row order. */
/* Element i of the LayerNorm backward's dy, f32 or bf16 (pointers, not the argument struct:
 * taking a kernel parameter's address makes nvcc copy it to local memory). */
DEVICE_FN float layers_ln_dy(const float *dy, const tandem_bf16 *dy16, int64_t i) {
    return dy ? dy[i] : tandem_bf16_to_f32(dy16[i]);
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_LN_THREADS) tandem_k_layernorm_bwd(tandem_k_layernorm_bwd_args a) {
    __shared__ float red[66];
    DYNAMIC_SHARED(float, part); /* [3, d]: sum dy * xhat, sum dy, sum dx over this block's rows */
    int nb = tandem_layernorm_bwd_blocks(a.rows);
    int blk = (int)blockIdx.x;
    if (blk >= nb) return;
    int tid = (int)threadIdx.x, nt = (int)blockDim.x, d = a.d;
    for (int c = tid; c < d; c += nt) {
        part[c] = 0.0f;
        part[d + c] = 0.0f;
        part[2 * d + c] = 0.0f;
    }
    for (int row = blk; row < a.rows; row += nb) { /* the same trip count for the whole block */
        const float *x = a.x + (int64_t)row * d;   /* [d] */
        const int64_t at = (int64_t)row * d;       /* dy, dx, dx16 of the row */
        float mean = a.mean[row], rstd = a.rstd[row];
        float s_g = 0.0f, s_gx = 0.0f;
        for (int c = tid; c < d; c += nt) {
            float g = a.gamma[c] * layers_ln_dy(a.dy, a.dy16, at + c);
            s_g += g;
            s_gx += g * (x[c] - mean) * rstd;
        }
        layers_block_sum2(&s_g, &s_gx, red);
        float m_g = s_g / (float)d, m_gx = s_gx / (float)d;
        for (int c = tid; c < d; c += nt) {
            float xhat = (x[c] - mean) * rstd;
            float dyc = layers_ln_dy(a.dy, a.dy16, at + c);
            const float v = rstd * (a.gamma[c] * dyc - m_g - xhat * m_gx);
            const float o = a.accumulate ? a.dx[at + c] + v : v;
            tandem_k_store2(a.dx, a.dx16, at + c, o);
            part[c] += dyc * xhat;
            part[d + c] += dyc;
            part[2 * d + c] += o;
        }
    }
    float *out = a.scratch + (int64_t)blk * 3 * d; /* [3, d] */
    for (int c = tid; c < d; c += nt) {
        out[c] = part[c];
        out[d + c] = part[d + c];
        out[2 * d + c] = part[2 * d + c];
    }
}

/* dgamma, dbeta (and dbias) += the blocks' partials, one thread per column, blocks in order. */
KERNEL LAUNCH_BOUNDS(TANDEM_K_LN_PARAMS_THREADS) tandem_k_layernorm_bwd_params(tandem_k_layernorm_bwd_params_args a) {
    int nb = tandem_layernorm_bwd_blocks(a.rows);
    int64_t stride = layers_stride();
    for (int64_t c = layers_first(); c < a.d; c += stride) {
        float g = 0.0f, b = 0.0f, x = 0.0f;
        for (int k = 0; k < nb; k++) {
            const float *p = a.scratch + (int64_t)k * 3 * a.d; /* [3, d] */
            g += p[c];
            b += p[a.d + c];
            if (a.dbias) x += p[2 * a.d + c]; /* the dx sums are read only when wanted */
        }
        a.dgamma[c] += g;
        a.dbeta[c] += b;
        if (a.dbias) a.dbias[c] += x;
    }
}

/* ---- GELU (tanh approximation; formula in layers.h) ---- */
KERNEL LAUNCH_BOUNDS(TANDEM_K_LAYERS_THREADS) tandem_k_gelu_fwd(tandem_k_gelu_fwd_args a) {
    int64_t stride = layers_stride();
    for (int64_t i = layers_first(); i < a.n; i += stride)
        tandem_k_store2(a.y, a.y16, i, tandem_gelu_tanh(a.x[i]));
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_LAYERS_THREADS) tandem_k_gelu_bwd(tandem_k_gelu_bwd_args a) {
    int64_t stride = layers_stride();
    for (int64_t i = layers_first(); i < a.n; i += stride)
        tandem_k_store2(a.dx, a.dx16, i, a.dy[i] * tandem_gelu_tanh_grad(a.x[i]));
}

/* ---- prenet dropout (counter-based mask; layers.h) ---- */
KERNEL LAUNCH_BOUNDS(TANDEM_K_LAYERS_THREADS) tandem_k_prenet_dropout(tandem_k_prenet_dropout_args a) {
    int64_t stride = layers_stride();
    const int64_t step = a.step_at ? (int64_t)a.step_at[0] : a.step;
    const uint64_t base = tandem_k_dropout_base(a.seed, step, a.micro); /* once per thread */
    for (int64_t i = layers_first(); i < a.n; i += stride)
        a.x[i] = tandem_k_dropout_keep_at(base, i, a.p) ? a.x[i] * a.scale : 0.0f;
}

/* ---- bias ---- */
KERNEL LAUNCH_BOUNDS(TANDEM_K_LAYERS_THREADS) tandem_k_bias_add(tandem_k_bias_add_args a) {
    int64_t n = (int64_t)a.rows * a.d, stride = layers_stride();
    for (int64_t i = layers_first(); i < n; i += stride) a.y[i] += a.b[i % a.d];
}

/* col_sum_acc's column-sum tree over rows r0 .. r1 - 1 of column c
 * (c < d for the threads that count): thread (tx, ty) sums rows r0 + ty, r0 + ty + 32, ... (a
 * warp reads 32 consecutive floats of a row: coalesced), then row 0 of the block adds the 32
 * slices in order; the result is meaningful in row 0. Fixed order, no atomics. */
DEVICE_FN float layers_col_tree(const float *dy, int d, int r0, int r1, int c,
                                float (*slices)[LAYERS_CS_COLS + 1]) {
    int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
    float s = 0.0f;
    if (c < d)
        for (int r = r0 + ty; r < r1; r += LAYERS_CS_SLICES)
            s += dy[(int64_t)r * d + c];
    slices[ty][tx] = s;
    __syncthreads();
    float t = 0.0f;
    if (ty == 0)
        for (int k = 0; k < LAYERS_CS_SLICES; k++) t += slices[k][tx];
    return t;
}

/* Block (LAYERS_CS_COLS, LAYERS_CS_SLICES) per 32 columns, all rows. */
KERNEL LAUNCH_BOUNDS(TANDEM_K_CS_COLS * TANDEM_K_CS_SLICES) tandem_k_col_sum_acc(tandem_k_col_sum_acc_args a) {
    __shared__ float slices[LAYERS_CS_SLICES][LAYERS_CS_COLS + 1]; /* +1: no bank conflicts */
    int c = (int)blockIdx.x * LAYERS_CS_COLS + (int)threadIdx.x;
    float t = layers_col_tree(a.dy, a.d, 0, a.rows, c, slices);
    if (threadIdx.y == 0 && c < a.d) a.db[c] += t;
}

/* ---- the last block's mel rows (layers.h) ---- */
KERNEL LAUNCH_BOUNDS(TANDEM_K_PAD_THREADS) tandem_k_mel_rows_pad(tandem_k_mel_rows_pad_args a) {
    const int T = a.text_len + a.mel_len;
    const int64_t rows = (int64_t)a.batch * T;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
        const int b = (int)(r / T), t = (int)(r - (int64_t)b * T); /* once per row */
        float *dst = a.dst + r * a.d;
        const float *src = a.src + ((int64_t)b * a.mel_len + (t - a.text_len)) * a.d;
        for (int c = (int)(blockIdx.x * blockDim.x + threadIdx.x); c < a.d; c += (int)(gridDim.x * blockDim.x))
            dst[c] = t < a.text_len ? 0.0f : src[c];
    }
}

KERNEL LAUNCH_BOUNDS(TANDEM_K_PAD_THREADS) tandem_k_mel_rows_take(tandem_k_mel_rows_take_args a) {
    const int T = a.text_len + a.mel_len;
    const int64_t rows = (int64_t)a.batch * a.mel_len;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
        const int b = (int)(r / a.mel_len), j = (int)(r - (int64_t)b * a.mel_len); /* once per row */
        const int64_t from = ((int64_t)b * T + a.text_len + j) * a.d, to = r * a.d;
        for (int c = (int)(blockIdx.x * blockDim.x + threadIdx.x); c < a.d; c += (int)(gridDim.x * blockDim.x)) {
            if (a.dst) a.dst[to + c] = a.src[from + c];
            else a.dst16[to + c] = a.src16[from + c];
        }
    }
}

/* ---- input sequence ---- */
KERNEL LAUNCH_BOUNDS(TANDEM_K_LAYERS_THREADS) tandem_k_seq_embed_fwd(tandem_k_seq_embed_fwd_args a) {
    int T = a.text_len + a.mel_len, d = a.d;
    int64_t n = (int64_t)a.batch * T * d, stride = layers_stride();
    for (int64_t i = layers_first(); i < n; i += stride) {
        int c = (int)(i % d);
        int64_t bt = i / d;
        int t = (int)(bt % T), b = (int)(bt / T);
        const float *src; /* [d]: the symbol's embedding or the prenet output row */
        if (t < a.text_len)
            src = a.sym_emb + (int64_t)a.tokens[(int64_t)b * a.text_len + t] * d;
        else
            src = a.prenet_out + ((int64_t)b * a.mel_len + (t - a.text_len)) * d;
        a.x[i] = src[c] + a.pos_emb[(int64_t)t * d + c];
    }
}

/* One grid-stride index space for the three gradients, in this order:
 *   [0, V*d)            one thread per (v, c): scan every (b, t < Tt) in order;
 *   [V*d, V*d + T*d)    one thread per (t, c): sum over b in order;
 *   the rest, B*Tm*d    copy of the mel rows of dx.
 * Neighbouring threads take neighbouring columns, so dx reads are coalesced and a warp's
 * token reads are one broadcast. */
/* Set bits of v (the dialect has no __popc). */
DEVICE_FN int layers_bits(unsigned v) {
    int n = 0;
    for (; v != 0u; v &= v - 1u) n++;
    return n;
}

/* Blocks [0, V * CG), CG = ceil(d / LAYERS_THREADS): symbol v, column group g (one column per
 * thread). Per chunk of LAYERS_THREADS tokens the block lists the dx rows of the chunk's tokens
 * equal to v in order (ballot per warp, warps in order), then each thread adds those rows of its
 * column in that order, eight loads in flight at a time (the adds stay sequential): O(B*Tt)
 * token reads per block and each text row of dx read by CG blocks, instead of a scan of every
 * token by every (v, column) thread; the padding symbol, most of the tokens, bounds the time
 * (1.5 ms of a base step on an H100 before). Blocks from V * CG: the position sums and the
 * prenet copy, grid-stride. */
KERNEL LAUNCH_BOUNDS(TANDEM_K_LAYERS_THREADS) tandem_k_seq_embed_bwd(tandem_k_seq_embed_bwd_args a) {
    __shared__ int64_t rows[TANDEM_K_LAYERS_THREADS]; /* dx row offsets (b * T + t) * d of the matches */
    __shared__ int warp_hits[TANDEM_K_LAYERS_THREADS / TANDEM_WARP_SIZE];
    const int Tt = a.text_len, Tm = a.mel_len, T = Tt + Tm, d = a.d;
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x, lane = tid % TANDEM_WARP_SIZE, warp = tid / TANDEM_WARP_SIZE;
    const int groups = (d + nt - 1) / nt, sym_blocks = a.vocab * groups;
    if ((int)blockIdx.x < sym_blocks) {
        const int v = (int)blockIdx.x / groups, c = ((int)blockIdx.x % groups) * nt + tid, n_tok = a.batch * Tt;
        float s = 0.0f;
        for (int i0 = 0; i0 < n_tok; i0 += nt) { /* uniform bounds: every thread reaches the barriers */
            const int i = i0 + tid;
            const int hit = i < n_tok && a.tokens[i] == v;
            const unsigned m = __ballot_sync(TANDEM_FULL_MASK, hit);
            if (lane == 0) warp_hits[warp] = layers_bits(m);
            __syncthreads();
            int before = 0, total = 0;
            for (int w = 0; w < nt / TANDEM_WARP_SIZE; w++) {
                if (w < warp) before += warp_hits[w];
                total += warp_hits[w];
            }
            if (hit) rows[before + layers_bits(m & ((1u << lane) - 1u))] = ((int64_t)(i / Tt) * T + i % Tt) * d;
            __syncthreads();
            if (c < d) {
                int k = 0;
                for (; k + 8 <= total; k += 8) {
                    float x[8];
                    for (int u = 0; u < 8; u++) x[u] = a.dx[rows[k + u] + c];
                    for (int u = 0; u < 8; u++) s += x[u];
                }
                for (; k < total; k++) s += a.dx[rows[k] + c];
            }
            __syncthreads(); /* rows and warp_hits are reused by the next chunk */
        }
        if (c < d) a.d_sym_emb[(int64_t)v * d + c] += s;
        return;
    }
    const int64_t n_pos = (int64_t)T * d, n = n_pos + (int64_t)a.batch * Tm * d;
    const int64_t stride = (int64_t)(gridDim.x - (unsigned)sym_blocks) * nt;
    for (int64_t i = (int64_t)(blockIdx.x - (unsigned)sym_blocks) * nt + tid; i < n; i += stride) {
        if (i < n_pos) { /* t * d + c */
            float s = 0.0f;
            for (int b = 0; b < a.batch; b++) s += a.dx[(int64_t)b * T * d + i];
            a.d_pos_emb[i] += s;
        } else {
            const int64_t j = i - n_pos; /* (b * Tm + jm) * d + c */
            const int64_t bj = j / d;
            const int b = (int)(bj / Tm), jm = (int)(bj % Tm);
            a.d_prenet_out[j] = a.dx[((int64_t)b * T + Tt + jm) * d + j % d];
        }
    }
}

/* ---- prenet input: groups[b, j] = mels group j - 1 (zeros for j = 0) ----
 * mels [B, F, n_mels] is [B, Tm, r * n_mels] in memory, so this is a shift by one group. */
KERNEL LAUNCH_BOUNDS(TANDEM_K_LAYERS_THREADS) tandem_k_prenet_input(tandem_k_prenet_input_args a) {
    int64_t g = (int64_t)a.r * a.n_mels;
    int64_t n = (int64_t)a.batch * a.mel_len * g, stride = layers_stride();
    for (int64_t i = layers_first(); i < n; i += stride) {
        int j = (int)((i / g) % a.mel_len);
        tandem_k_store2(a.groups, a.groups16, i, j == 0 ? 0.0f : a.mels[i - g]);
    }
}

#undef LAYERS_CS_COLS
#undef LAYERS_CS_SLICES
