/* gemm_kernel.cu — the fatbin's own GEMMs (f32, and bf16 inputs with f32 accumulation), used on
 * cuda when cuBLASLt is absent.
 *
 * Row-major semantics of gemm_kernel.h: C[b] = epilogue(alpha * op(A[b]) @ op(B[b]) + beta * C[b]
 * (+ bias[j])).
 * Each block computes a GEMM_BM x GEMM_BN tile of C with 16 x 16 threads, each thread a
 * 4 x 4 register tile whose rows/columns are 16 apart (so a warp's shared-memory reads are
 * broadcasts or consecutive, and its stores to C are consecutive). K is walked in slices of
 * GEMM_BK staged through shared memory; out-of-range elements are staged as zeros, so any
 * m, n, k works. beta == 0 never reads C (BLAS convention: C may hold garbage, even NaN).
 * Geometry (kernels/gemm_kernel_host.c): block (16, 16), grid (n tiles, m tiles, batch), the
 * last two capped at the hardware's 65535; the kernel loops over the rest.
 */
#include "kernels/dialect.h"

#include "kernels/gemm_kernel.h"
#include "kernels/layers.h" /* tandem_gelu_tanh and its derivative: the GELU epilogues */

#define GEMM_BM 64      /* rows of C per block */
#define GEMM_BN 64      /* columns of C per block */
#define GEMM_BK 16      /* K slice staged in shared memory */
#define GEMM_TX TANDEM_K_GEMM_THREADS_XY /* threads along N (blockDim.x) */
#define GEMM_TY TANDEM_K_GEMM_THREADS_XY /* threads along M (blockDim.y) */
#define GEMM_RM (GEMM_BM / GEMM_TY) /* rows per thread */
#define GEMM_RN (GEMM_BN / GEMM_TX) /* columns per thread */
#define GEMM_THREADS (GEMM_TX * GEMM_TY)

/* One body for both element types (ELEM and its widening TO_F32 are #defined around each
 * instance below): the tiles hold f32, so only the staging loads differ. */
#define GEMM_TILED_BODY                                                                   \
    /* a_tile[kk][mm] = op(A)[m0 + mm][k0 + kk], b_tile[kk][nn] = op(B)[k0 + kk][n0 + nn].        \
     * The +1 column staggers banks for the transposing stores of a non-transposed A. */          \
    __shared__ float a_tile[GEMM_BK][GEMM_BM + 1];                                                \
    __shared__ float b_tile[GEMM_BK][GEMM_BN + 1];                                                \
                                                                                                  \
    const int tx = (int)threadIdx.x, ty = (int)threadIdx.y;                                       \
    const int tid = ty * GEMM_TX + tx;                                                            \
    const int64_t lda = a.trans_a ? a.m : a.k; /* row length of A as stored */                    \
    const int64_t ldb = a.trans_b ? a.k : a.n; /* row length of B as stored */                    \
    const int64_t n0 = (int64_t)blockIdx.x * GEMM_BN;                                             \
                                                                                                  \
    for (int64_t bz = blockIdx.z; bz < a.batch; bz += gridDim.z) {                                \
        const ELEM *A = a.a + bz * a.stride_a; /* [m, k] or [k, m] */                             \
        const ELEM *B = a.b + bz * a.stride_b; /* [k, n] or [n, k] */                             \
                                                                                                  \
        for (int64_t m0 = (int64_t)blockIdx.y * GEMM_BM; m0 < a.m;                                \
             m0 += (int64_t)gridDim.y * GEMM_BM) {                                                \
            float acc[GEMM_RM][GEMM_RN], rs[GEMM_RM]; /* rs: BGRAD's row sums of op(A) */         \
            const int sums = a.bgrad && blockIdx.x == 0 && tx == 0;                               \
            for (int i = 0; i < GEMM_RM; i++) {                                                   \
                rs[i] = 0.0f;                                                                     \
                for (int j = 0; j < GEMM_RN; j++) acc[i][j] = 0.0f;                               \
            }                                                                                     \
                                                                                                  \
            for (int64_t k0 = 0; k0 < a.k; k0 += GEMM_BK) {                                       \
                /* Stage the A slice; consecutive threads read consecutive addresses of A. */     \
                for (int t = tid; t < GEMM_BM * GEMM_BK; t += GEMM_THREADS) {                     \
                    int mm, kk;                                                                   \
                    if (a.trans_a) {                                                              \
                        kk = t / GEMM_BM;                                                         \
                        mm = t % GEMM_BM;                                                         \
                    } else {                                                                      \
                        mm = t / GEMM_BK;                                                         \
                        kk = t % GEMM_BK;                                                         \
                    }                                                                             \
                    int64_t gm = m0 + mm, gk = k0 + kk;                                           \
                    float v = 0.0f;                                                               \
                    if (gm < a.m && gk < a.k) v = TO_F32(a.trans_a ? A[gk * lda + gm] : A[gm * lda + gk]);\
                    a_tile[kk][mm] = v;                                                           \
                }                                                                                 \
                /* Stage the B slice, likewise. */                                                \
                for (int t = tid; t < GEMM_BK * GEMM_BN; t += GEMM_THREADS) {                     \
                    int nn, kk;                                                                   \
                    if (a.trans_b) {                                                              \
                        nn = t / GEMM_BK;                                                         \
                        kk = t % GEMM_BK;                                                         \
                    } else {                                                                      \
                        kk = t / GEMM_BN;                                                         \
                        nn = t % GEMM_BN;                                                         \
                    }                                                                             \
                    int64_t gn = n0 + nn, gk = k0 + kk;                                           \
                    float v = 0.0f;                                                               \
                    if (gn < a.n && gk < a.k) v = TO_F32(a.trans_b ? B[gn * ldb + gk] : B[gk * ldb + gn]);\
                    b_tile[kk][nn] = v;                                                           \
                }                                                                                 \
                __syncthreads();                                                                  \
                if (sums)                                                                         \
                    for (int kk = 0; kk < GEMM_BK; kk++)                                          \
                        for (int i = 0; i < GEMM_RM; i++) rs[i] += a_tile[kk][ty + GEMM_TY * i];  \
                                                                                                  \
                for (int kk = 0; kk < GEMM_BK; kk++) {                                            \
                    float ar[GEMM_RM], br[GEMM_RN];                                               \
                    for (int i = 0; i < GEMM_RM; i++) ar[i] = a_tile[kk][ty + GEMM_TY * i];       \
                    for (int j = 0; j < GEMM_RN; j++) br[j] = b_tile[kk][tx + GEMM_TX * j];       \
                    for (int i = 0; i < GEMM_RM; i++)                                             \
                        for (int j = 0; j < GEMM_RN; j++) acc[i][j] += ar[i] * br[j];             \
                }                                                                                 \
                /* The next slice overwrites the tiles: everyone must be done reading. */         \
                __syncthreads();                                                                  \
            }                                                                                     \
                                                                                                  \
            for (int i = 0; i < GEMM_RM; i++) {                                                   \
                int64_t gm = m0 + ty + GEMM_TY * i;                                               \
                if (gm >= a.m) continue;                                                          \
                if (sums) a.bgrad[bz * a.m + gm] = rs[i];                                         \
                for (int j = 0; j < GEMM_RN; j++) {                                               \
                    int64_t gn = n0 + tx + GEMM_TX * j;                                           \
                    if (gn >= a.n) continue;                                                      \
                    const int64_t ci = bz * a.stride_c + gm * a.n + gn; /* C's and aux's */       \
                    float v = a.alpha * acc[i][j];                                                \
                    if (a.beta != 0.0f) v += a.beta * LOAD_C(ci);                                 \
                    v = ADD_BIAS(v, gn);                                                          \
                    if (a.epi == TANDEM_K_GEMM_EPI_GELU_AUX) {                                    \
                        STORE_AUX(ci, v);                                                         \
                        v = tandem_gelu_tanh(v);                                                  \
                    } else if (a.epi == TANDEM_K_GEMM_EPI_DGELU) {                                \
                        v *= tandem_gelu_tanh_grad(LOAD_AUX(ci));                                 \
                    }                                                                             \
                    STORE_C(ci, v);                                                               \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }

/* gemm_f32: C, bias and aux f32. */
#define ELEM float
#define TO_F32(x) (x)
#define LOAD_C(i) (a.c_src ? a.c_src[i] : a.c[i])
#define STORE_C(i, v) a.c[i] = (v)
#define ADD_BIAS(v, j) (a.bias ? (v) + a.bias[j] : (v))
#define LOAD_AUX(i) a.aux[i]
#define STORE_AUX(i, v) a.aux[i] = (v)
KERNEL LAUNCH_BOUNDS(GEMM_THREADS) tandem_k_gemm_f32(tandem_k_gemm_f32_args a) { GEMM_TILED_BODY }
#undef ELEM
#undef TO_F32
#undef LOAD_C
#undef STORE_C
#undef ADD_BIAS
#undef LOAD_AUX
#undef STORE_AUX

/* gemm_bf16: C, bias and aux of C's type (f32 or bf16), chosen per launch. */
#define ELEM tandem_bf16
#define TO_F32(x) tandem_bf16_to_f32(x)
#define LOAD_C(i) (a.c_src ? a.c_src[i] : a.c ? a.c[i] : tandem_bf16_to_f32(a.c16[i]))
#define STORE_C(i, v) tandem_k_store2(a.c, a.c16, i, v)
#define ADD_BIAS(v, j) (a.bias ? (v) + a.bias[j] : a.bias16 ? (v) + tandem_bf16_to_f32(a.bias16[j]) : (v))
#define LOAD_AUX(i) (a.aux ? a.aux[i] : tandem_bf16_to_f32(a.aux16[i]))
#define STORE_AUX(i, v) tandem_k_store2(a.aux, a.aux16, i, v)
KERNEL LAUNCH_BOUNDS(GEMM_THREADS) tandem_k_gemm_bf16(tandem_k_gemm_bf16_args a) { GEMM_TILED_BODY }
#undef ELEM
#undef TO_F32
#undef LOAD_C
#undef STORE_C
#undef ADD_BIAS
#undef LOAD_AUX
#undef STORE_AUX
#undef GEMM_TILED_BODY

/* The kernel sources (kernels/<group>.cu) share one translation unit in the fatbin
 * build: keep these names local. */
#undef GEMM_BM
#undef GEMM_BN
#undef GEMM_BK
#undef GEMM_TX
#undef GEMM_TY
#undef GEMM_RM
#undef GEMM_RN
#undef GEMM_THREADS
