/* cuda_blaslt.c — GEMM on the cuda backend: cuBLASLt when it can be loaded, else the fatbin's
 * own gemm_f32 / gemm_bf16 kernels.
 *
 * Types (tandem_gemm_desc): A and B both f32, or both bf16 (CUDA_R_16BF layouts with
 * CUBLAS_COMPUTE_32F: f32 accumulation); C f32, or bf16 with bf16 A and B. f32 A and B with
 * desc.tf32 use CUBLAS_COMPUTE_32F_FAST_TF32. Epilogues (platform/device.h): BIAS, GELU_AUX_BIAS
 * and DGELU are cuBLASLt's CUBLASLT_EPILOGUE_BIAS, _GELU_AUX_BIAS and _DGELU with the bias and
 * the aux matrix of D's type (the documented defaults of BIAS_DATA_TYPE and
 * EPILOGUE_AUX_DATA_TYPE, never set), the aux leading dimension our n (= D's rows) and its batch
 * stride stride_c; their pointers are set per call. The types, tf32 and the epilogue are part
 * of a plan's key. An epilogue cuBLASLt cannot take — one it documents no support for
 * (EPILOGUE_AUX_LD must be a multiple of 8) or one its heuristic rejects (no algorithm,
 * NOT_SUPPORTED or INVALID_VALUE) — runs split: the same product as a plain cuBLASLt GEMM, then
 * the project's epilogue kernels (kernels/gemm_epi.h: bias, GELU with its aux, dGELU, the bias
 * gradient's column sums; cuda_gemm_epi.c), never the fatbin's CUDA-core GEMM. Only a product
 * cuBLASLt has no algorithm for even without an epilogue, or a device without cuBLASLt, runs on
 * the fatbin GEMM. Each such plan is a fallback: a warning names it when it is made, and
 * tandem_cuda_gemm_fallbacks lists them by shape (the trainer's start-up report, `tandem
 * diagnose --config`; the config's strict_gemm makes any an error).
 *
 * The API is row-major (tandem.h): C[m,n] = alpha op(A) op(B) + beta C. cuBLASLt is
 * column-major, and a row-major [r, c] matrix is the column-major [c, r] matrix with the same
 * leading dimension, so the product is computed as C^T = op(B)^T op(A)^T: B's buffer becomes
 * cuBLASLt's "A" and A's buffer its "B", m and n swap, the transpose flags stay with their
 * buffers. Shapes are fixed, so descriptors, layouts and the heuristic's algorithm are made
 * once per shape in gemm_prepare and kept in the device's fixed-capacity plan table.
 *
 * Alignment: the heuristic may return an algorithm that assumes each operand is aligned to the
 * preference's MIN_ALIGNMENT_{A,B,C,D}_BYTES (documented default 256) and fails or faults
 * otherwise. Views into pooled tensors are not always 256-aligned (the head weight gradient
 * runs one GEMM per item at offsets of i * mel_len * out elements; batched strides need not be
 * multiples of 64 elements), so each plan holds one algorithm per alignment tier (256 bytes,
 * 16 bytes, the element size), chosen with those preferences set explicitly, and every call
 * takes the first tier that its real pointers and batch strides satisfy.
 *
 * cuBLASLt is loaded once per process: $TANDEM_CUBLASLT (a path, or "none" to disable it),
 * else libcublasLt.so.13, else libcublasLt.so.12. A library counts only when it also creates a
 * handle (cublasLtCreate, then destroyed): one that loads but cannot initialise (a cuBLASLt
 * newer than the driver, a broken install) falls through to the next, and then to the fatbin's
 * GEMM kernels, with one warning saying why. A device whose own cublasLtCreate fails later
 * uses the fatbin GEMM too (warning), rather than failing to open.
 * Owns: the cuBLASLt library handle and function table (process-wide, immutable after load);
 * per device the plan table and the cuBLASLt handle; per stream a workspace
 * (tandem_cuda_gemm_stream_init, freed with the stream).
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "platform/cuda/cuda_internal.h"
#include "platform/os/log.h"
#include "platform/os/settings.h"

/* ---- loading ---- */

static struct {
#define TANDEM_LT_FIELD(name) tandem_pfn_##name name;
    TANDEM_CUBLASLT_CALLS(TANDEM_LT_FIELD)
#undef TANDEM_LT_FIELD
} lt;
static pthread_once_t lt_once = PTHREAD_ONCE_INIT;
static int lt_ok;
static char lt_info[512]; /* version and library when found, else why not */

static const char *lt_status_name(cublasStatus_t s);

/* 1: loaded and creates a handle; 0: not found (or lacks a call); -1: loads but cublasLtCreate
 * fails. why: the version and path, or what went wrong. */
static int lt_try(const char *path, char *why, size_t cap) {
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, cap, "%s", e ? e : path);
        return 0;
    }
#define TANDEM_LT_SYM(name)                                                               \
    {                                                                                     \
        void *p_ = dlsym(h, #name);                                                       \
        if (!p_) {                                                                        \
            snprintf(why, cap, "%s lacks %s", path, #name);                               \
            dlclose(h);                                                                   \
            return 0;                                                                     \
        }                                                                                 \
        memcpy(&lt.name, &p_, sizeof p_);                                                 \
    }
    TANDEM_CUBLASLT_CALLS(TANDEM_LT_SYM)
#undef TANDEM_LT_SYM
    size_t v = lt.cublasLtGetVersion();
    cublasLtHandle_t probe = NULL;
    cublasStatus_t s = lt.cublasLtCreate(&probe);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(why, cap, "cuBLASLt %zu.%zu.%zu (%s) loads but cublasLtCreate failed: %s (%d)", v / 10000,
                 v / 100 % 100, v % 100, path, lt_status_name(s), (int)s);
        /* Left mapped, never used: a failed create keeps allocations the library's globals still
         * point to (NVIDIA's does, e.g. without a GPU); unmapping would leak them. */
        return -1;
    }
    lt.cublasLtDestroy(probe);
    snprintf(why, cap, "cuBLASLt %zu.%zu.%zu (%s)", v / 10000, v / 100 % 100, v % 100, path);
    return 1;
}

static void lt_load(void) {
    char opt[TANDEM_RUNTIME_PATH_MAX];
    const char *path = tandem_settings_path(TANDEM_SETTING_CUBLASLT, opt);
    if (!strcasecmp(path, "none") || !strcmp(path, "0") || !strcasecmp(path, "off")) {
        snprintf(lt_info, sizeof lt_info, "disabled by runtime option cublaslt \"%s\" (TANDEM_CUBLASLT in the CLI)", path);
        return;
    }
    if (path[0]) {
        int r = lt_try(path, lt_info, sizeof lt_info);
        lt_ok = r > 0;
        if (r < 0) tandem_logf(TANDEM_LOG_WARN, "%s: using the fatbin's GEMM kernels instead", lt_info);
        return;
    }
    char why13[240], why12[240];
    int r13 = lt_try("libcublasLt.so.13", why13, sizeof why13);
    if ((lt_ok = r13 > 0)) {
        snprintf(lt_info, sizeof lt_info, "%s", why13);
        return;
    }
    int r12 = lt_try("libcublasLt.so.12", why12, sizeof why12);
    if ((lt_ok = r12 > 0)) {
        snprintf(lt_info, sizeof lt_info, "%s", why12);
        if (r13 < 0) tandem_logf(TANDEM_LOG_WARN, "%s: using %s instead", why13, why12);
        return;
    }
    snprintf(lt_info, sizeof lt_info, "%s; %s", why13, why12);
    if (r13 < 0 || r12 < 0) tandem_logf(TANDEM_LOG_WARN, "%s: using the fatbin's GEMM kernels instead", lt_info);
}

int tandem_cuda_have_cublaslt(char *why, size_t cap) {
    pthread_once(&lt_once, lt_load);
    if (why && cap) snprintf(why, cap, "%s", lt_info);
    return lt_ok;
}

static const char *lt_status_name(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "unknown cublasStatus_t";
}

static const char *const epi_text[TANDEM_GEMM_EPI_COUNT] = {"", " + bias", " + bias, gelu (aux out)",
                                                          " * gelu'(aux)", ", bias gradient of A out"};

/* "[2 x] 64x32 @ 32x16 (trans_a 0, trans_b 1)" */
static void shape_text(const tandem_gemm_desc *g, char *buf, size_t cap) {
    snprintf(buf, cap, "%sbatch %lld: [%lld x %lld]%s @ [%lld x %lld]%s -> [%lld x %lld]%s",
             g->a_type == TANDEM_BF16 ? "bf16 " : g->tf32 ? "tf32 " : "", (long long)g->batch,
             (long long)(g->trans_a ? g->k : g->m), (long long)(g->trans_a ? g->m : g->k), g->trans_a ? "^T" : "",
             (long long)(g->trans_b ? g->n : g->k), (long long)(g->trans_b ? g->k : g->n), g->trans_b ? "^T" : "",
             (long long)g->m, (long long)g->n, epi_text[g->epilogue < TANDEM_GEMM_EPI_COUNT ? g->epilogue : 0]);
}

#define LT_TRY(call, args, g)                                                             \
    do {                                                                                  \
        cublasStatus_t lt_s_ = lt.call args;                                              \
        if (lt_s_ != CUBLAS_STATUS_SUCCESS) {                                             \
            char shp_[160];                                                               \
            shape_text(g, shp_, sizeof shp_);                                             \
            return tandem_fail(TANDEM_E_DEVICE, "%s failed: %s (%d) [GEMM %s]", #call,    \
                               lt_status_name(lt_s_), (int)lt_s_, shp_);                  \
        }                                                                                 \
    } while (0)

/* ---- plans ---- */

#define LT_TIERS 3
static const uint32_t lt_tier_align[LT_TIERS] = {256, 16, 0}; /* 0: the element size */

struct tandem_cuda_gemm_plan {
    tandem_gemm_desc key;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc; /* cuBLASLt's A (our B), B (our A), C = D */
    cublasLtMatmulAlgo_t algo[LT_TIERS];
    int have[LT_TIERS];                /* the heuristic found one for this tier */
    /* an epilogue plan's product alone (the split path; also for a call whose bias vector is
     * less than 16-byte aligned) */
    cublasLtMatmulDesc_t plain_op;
    cublasLtMatmulAlgo_t plain_algo[LT_TIERS];
    int plain_have[LT_TIERS];
    int mode;                          /* LT_FUSED, LT_SPLIT or LT_FATBIN */
    char why[96];                      /* why not LT_FUSED */
};
enum { LT_FUSED = 0, LT_SPLIT = 1, LT_FATBIN = 2 };

static uint32_t elem_bytes(tandem_dtype t) { return t == TANDEM_BF16 ? 2u : 4u; }

/* What tier t promises for cuBLASLt's A (our B), B (our A), C and D. */
static void tier_prefs(const tandem_gemm_desc *g, int t, uint32_t al[4]) {
    uint32_t T = lt_tier_align[t];
    al[0] = T ? T : elem_bytes(g->b_type);
    al[1] = T ? T : elem_bytes(g->a_type);
    al[2] = al[3] = T ? T : elem_bytes(g->c_type); /* D's also the aux matrix's */
}

/* Alignment of operand p (capped at 256): the address and, batched, every item's address. */
static uint32_t operand_align(tandem_dptr p, int64_t stride, tandem_dtype t, int64_t batch) {
    uint64_t v = p | (batch > 1 ? (uint64_t)stride * elem_bytes(t) : 0u) | 256u;
    return (uint32_t)(v & (~v + 1));
}

static int same_shape(const tandem_gemm_desc *x, const tandem_gemm_desc *y) {
    if (x->trans_a != y->trans_a || x->trans_b != y->trans_b || x->m != y->m || x->n != y->n || x->k != y->k ||
        x->batch != y->batch || x->a_type != y->a_type || x->b_type != y->b_type || x->c_type != y->c_type ||
        x->epilogue != y->epilogue || x->tf32 != y->tf32)
        return 0;
    return x->batch == 1 ||
           (x->stride_a == y->stride_a && x->stride_b == y->stride_b && x->stride_c == y->stride_c);
}

static tandem_cuda_gemm_plan *find_plan(tandem_cuda_dev *d, const tandem_gemm_desc *g) {
    for (int i = 0; i < d->gemm_count; i++)
        if (same_shape(&d->gemm_plans[i].key, g)) return &d->gemm_plans[i];
    return NULL;
}

static void plan_destroy(tandem_cuda_gemm_plan *p) {
    if (p->la) lt.cublasLtMatrixLayoutDestroy(p->la);
    if (p->lb) lt.cublasLtMatrixLayoutDestroy(p->lb);
    if (p->lc) lt.cublasLtMatrixLayoutDestroy(p->lc);
    if (p->op) lt.cublasLtMatmulDescDestroy(p->op);
    if (p->plain_op) lt.cublasLtMatmulDescDestroy(p->plain_op);
    memset(p, 0, sizeof *p);
}

static tandem_status make_layout(cublasLtMatrixLayout_t *l, tandem_dtype type, int64_t rows, int64_t cols,
                                 int64_t batch, int64_t stride, const tandem_gemm_desc *g) {
    /* column-major rows x cols, leading dimension rows */
    cudaDataType ct = type == TANDEM_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    LT_TRY(cublasLtMatrixLayoutCreate, (l, ct, (uint64_t)rows, (uint64_t)cols, rows), g);
    if (batch > 1) {
        int32_t count = (int32_t)batch;
        LT_TRY(cublasLtMatrixLayoutSetAttribute, (*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), g);
        LT_TRY(cublasLtMatrixLayoutSetAttribute,
               (*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride), g);
    }
    return TANDEM_OK;
}

/* The heuristic's best algorithm for plan p's descriptor op (p->op, or p->plain_op: epi 0) with
 * alignment preferences al (A, B, C, D). An epilogue's NOT_SUPPORTED or INVALID_VALUE is no
 * algorithm (*have 0, the status's name into p->why), not an error. */
static tandem_status lt_heuristic(tandem_cuda_dev *d, const tandem_gemm_desc *g, tandem_cuda_gemm_plan *p,
                                  cublasLtMatmulDesc_t op, int epi, const uint32_t al[4], cublasLtMatmulAlgo_t *algo,
                                  int *have) {
    if (epi && tandem_gemm_epi_has_aux(g->epilogue)) {
        /* the heuristic reads the aux pointer's value for its alignment (documented under
         * EPILOGUE_AUX_POINTER): a stand-in address with D's alignment for this tier; each call
         * sets the real one, which the tier choice holds to the same alignment */
        const void *aux = (const void *)(uintptr_t)al[3];
        LT_TRY(cublasLtMatmulDescSetAttribute, (op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux), g);
    }
    cublasLtMatmulPreference_t pref = NULL;
    LT_TRY(cublasLtMatmulPreferenceCreate, (&pref), g);
    uint64_t ws = TANDEM_CUDA_LT_WORKSPACE;
    cublasStatus_t s = lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                               &ws, sizeof ws);
    /* split-K partials reduced by a separate pass over a workspace (a fixed order by
     * construction), not in place, whose order cuBLASLt documents only as "sequential"; no
     * step-time difference measured on an H100 (base b32 bf16 43.9 ms before and after) */
    const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE |
                             CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes,
                                                    sizeof schemes);
    for (int i = 0; i < 4 && s == CUBLAS_STATUS_SUCCESS; i++)
        s = lt.cublasLtMatmulPreferenceSetAttribute(
            pref, (cublasLtMatmulPreferenceAttributes_t)(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES + i), &al[i],
            sizeof al[i]);
    cublasLtMatmulHeuristicResult_t res;
    memset(&res, 0, sizeof res);
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = lt.cublasLtMatmulAlgoGetHeuristic((cublasLtHandle_t)d->lt, op, p->la, p->lb, p->lc, p->lc, pref, 1,
                                              &res, &found);
    lt.cublasLtMatmulPreferenceDestroy(pref);
    if (epi && (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE)) {
        snprintf(p->why, sizeof p->why, "the heuristic answers %s for the epilogue", lt_status_name(s));
        *have = 0;
        return TANDEM_OK;
    }
    if (s != CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_NOT_SUPPORTED) {
        char shp[160];
        shape_text(g, shp, sizeof shp);
        return tandem_fail(TANDEM_E_DEVICE,
                           "cublasLtMatmulAlgoGetHeuristic failed: %s (%d) [GEMM %s, device %d, alignment %u/%u/%u "
                           "bytes]",
                           lt_status_name(s), (int)s, shp, d->ordinal, al[0], al[1], al[2]);
    }
    *have = s == CUBLAS_STATUS_SUCCESS && found >= 1 && res.state == CUBLAS_STATUS_SUCCESS;
    if (*have) *algo = res.algo;
    return TANDEM_OK;
}

/* The epilogue into plan p's descriptor. Our C's columns are cuBLASLt's D rows: a bias [n] of
 * D's type, added after alpha and beta; the aux matrix laid out as D (leading dimension n, batch
 * stride stride_c), of D's type. The pointers are set per call. */
static tandem_status lt_epilogue(const tandem_gemm_desc *g, tandem_cuda_gemm_plan *p) {
    /* BGRAD: the sum over k of our A = cuBLASLt's B, length our m = its D's columns: BGRADB */
    static const uint32_t lt_epi[TANDEM_GEMM_EPI_COUNT] = {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_BIAS,
                                                           CUBLASLT_EPILOGUE_GELU_AUX_BIAS, CUBLASLT_EPILOGUE_DGELU,
                                                           CUBLASLT_EPILOGUE_BGRADB};
    if (g->epilogue == TANDEM_GEMM_EPI_NONE) return TANDEM_OK;
    LT_TRY(cublasLtMatmulDescSetAttribute,
           (p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &lt_epi[g->epilogue], sizeof lt_epi[g->epilogue]), g);
    if (!tandem_gemm_epi_has_aux(g->epilogue)) return TANDEM_OK;
    const int64_t ld = g->n, stride = g->stride_c;
    LT_TRY(cublasLtMatmulDescSetAttribute, (p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld), g);
    if (g->batch > 1)
        LT_TRY(cublasLtMatmulDescSetAttribute,
               (p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &stride, sizeof stride), g);
    return TANDEM_OK;
}

/* cuBLASLt documents EPILOGUE_AUX_LD and _BATCH_STRIDE as multiples of 8 elements. */
static int lt_takes_epilogue(const tandem_gemm_desc *g) {
    return !tandem_gemm_epi_has_aux(g->epilogue) || (g->n % 8 == 0 && (g->batch == 1 || g->stride_c % 8 == 0));
}

/* Plan p's algorithms for descriptor op (epi: with g's epilogue) per alignment tier; returns
 * whether any tier has one. */
static tandem_status lt_tiers(tandem_cuda_dev *d, const tandem_gemm_desc *g, tandem_cuda_gemm_plan *p,
                              cublasLtMatmulDesc_t op, int epi, cublasLtMatmulAlgo_t *algo, int *have, int *any) {
    *any = 0;
    for (int t = 0; t < LT_TIERS; t++) {
        uint32_t al[4];
        tier_prefs(g, t, al);
        /* a batch stride the tier's alignment does not divide: no pointer can satisfy it */
        if (g->batch > 1 && (operand_align(0, g->stride_b, g->b_type, 2) < al[0] ||
                             operand_align(0, g->stride_a, g->a_type, 2) < al[1] ||
                             operand_align(0, g->stride_c, g->c_type, 2) < al[2]))
            continue;
        TANDEM_TRY(lt_heuristic(d, g, p, op, epi, al, &algo[t], &have[t]));
        *any |= have[t];
    }
    return TANDEM_OK;
}

/* A matmul descriptor with g's compute type and transposes (no epilogue). */
static tandem_status lt_desc(const tandem_gemm_desc *g, cublasLtMatmulDesc_t *op) {
    /* TF32 (tensor cores) for f32 operands when asked; bf16 operands always accumulate in f32 */
    const cublasComputeType_t ct = g->tf32 && g->a_type == TANDEM_F32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    LT_TRY(cublasLtMatmulDescCreate, (op, ct, CUDA_R_32F), g);
    int32_t ta = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N; /* cuBLASLt's A is our B */
    int32_t tb = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    LT_TRY(cublasLtMatmulDescSetAttribute, (*op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), g);
    LT_TRY(cublasLtMatmulDescSetAttribute, (*op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), g);
    return TANDEM_OK;
}

/* The fused plan when cuBLASLt takes the epilogue; else the split one (the product alone, then
 * the epilogue kernels); else, with no algorithm even for the product, the fatbin GEMM. */
static tandem_status lt_plan(tandem_cuda_dev *d, const tandem_gemm_desc *g, tandem_cuda_gemm_plan *p) {
    const int epi = g->epilogue != TANDEM_GEMM_EPI_NONE;
    TANDEM_TRY(lt_desc(g, &p->op));
    if (epi && lt_takes_epilogue(g)) TANDEM_TRY(lt_epilogue(g, p));
    /* our B stored row-major [k, n] (or [n, k] transposed) = column-major [n, k] (or [k, n]) */
    TANDEM_TRY(make_layout(&p->la, g->b_type, g->trans_b ? g->k : g->n, g->trans_b ? g->n : g->k, g->batch,
                           g->stride_b, g));
    TANDEM_TRY(make_layout(&p->lb, g->a_type, g->trans_a ? g->m : g->k, g->trans_a ? g->k : g->m, g->batch,
                           g->stride_a, g));
    TANDEM_TRY(make_layout(&p->lc, g->c_type, g->n, g->m, g->batch, g->stride_c, g));
    int fused = 0, plain = 0;
    if (!epi || lt_takes_epilogue(g)) TANDEM_TRY(lt_tiers(d, g, p, p->op, epi, p->algo, p->have, &fused));
    else snprintf(p->why, sizeof p->why, "cuBLASLt's aux leading dimension must be a multiple of 8");
    if (epi) {
        TANDEM_TRY(lt_desc(g, &p->plain_op));
        TANDEM_TRY(lt_tiers(d, g, p, p->plain_op, 0, p->plain_algo, p->plain_have, &plain));
    }
    p->mode = fused ? LT_FUSED : plain ? LT_SPLIT : LT_FATBIN;
    if (p->mode == LT_FUSED) return TANDEM_OK;
    char shp[160];
    shape_text(g, shp, sizeof shp);
    if (!p->why[0]) snprintf(p->why, sizeof p->why, "the heuristic has no algorithm");
    if (g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX || g->batch > INT_MAX)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "cuBLASLt cannot run GEMM %s on device %d (%s) and the %s takes "
                           "dimensions up to %d", shp, d->ordinal, p->why,
                           p->mode == LT_SPLIT ? "epilogue kernel" : "fatbin GEMM", INT_MAX);
    tandem_logf(TANDEM_LOG_WARN, "GEMM %s on device %d: %s; it runs as %s", shp, d->ordinal, p->why,
                p->mode == LT_SPLIT ? "a cuBLASLt GEMM + Tandem's epilogue kernel"
                                    : "the fatbin's CUDA-core GEMM kernel (no tensor-core library path)");
    return TANDEM_OK;
}

tandem_status tandem_cuda_gemm_init(tandem_cuda_dev *d) {
    tandem_mutex_init(&d->gemm_lock);
    d->gemm_plans = tandem_calloc(TANDEM_CUDA_GEMM_CACHE, sizeof *d->gemm_plans);
    if (!d->gemm_plans) {
        tandem_mutex_destroy(&d->gemm_lock);
        return tandem_fail(TANDEM_E_NOMEM, "cuda device %d: no memory for the GEMM plan table", d->ordinal);
    }
    if (!tandem_cuda_have_cublaslt(NULL, 0)) return TANDEM_OK; /* the fatbin kernel it is */
    cublasLtHandle_t h = NULL;
    cublasStatus_t s = lt.cublasLtCreate(&h);
    if (s != CUBLAS_STATUS_SUCCESS) {
        tandem_logf(TANDEM_LOG_WARN, "cuda device %d: cublasLtCreate failed: %s (%d) (%s): this device uses the "
                    "fatbin's GEMM kernels", d->ordinal, lt_status_name(s), (int)s, lt_info);
        return TANDEM_OK;
    }
    d->lt = h; /* the workspaces are per stream (made with each stream) */
    return TANDEM_OK;
}

/* Each stream gets its own workspace (made with the stream, before any pool is committed):
 * a matmul may use it until it completes, so streams sharing one would corrupt each other's
 * results. */
tandem_status tandem_cuda_gemm_stream_init(tandem_cuda_dev *d, tandem_cuda_stream_impl *si) {
    CUresult r = tandem_cu.cuMemAlloc(&si->lt_workspace, TANDEM_CUDA_LT_WORKSPACE);
    if (r != CUDA_SUCCESS) {
        si->lt_workspace = 0;
        return tandem_cuda_fail("cuMemAlloc", r, "device %d, cuBLASLt workspace of %zu MiB for a stream", d->ordinal,
                                TANDEM_CUDA_LT_WORKSPACE >> 20);
    }
    tandem_alloc_note();
    return TANDEM_OK;
}

void tandem_cuda_gemm_free(tandem_cuda_dev *d) {
    if (d->gemm_plans) {
        for (int i = 0; i < d->gemm_count; i++) plan_destroy(&d->gemm_plans[i]);
        tandem_free(d->gemm_plans);
        d->gemm_plans = NULL;
        tandem_mutex_destroy(&d->gemm_lock);
    }
    d->gemm_count = 0;
    if (d->lt) lt.cublasLtDestroy((cublasLtHandle_t)d->lt);
    d->lt = NULL;
}

tandem_status tandem_cuda_gemm_prepare(tandem_device *dev, const tandem_gemm_desc *g) {
    tandem_cuda_dev *d = tandem_cuda_impl(dev);
    char shp[160];
    shape_text(g, shp, sizeof shp);
    if (g->m < 1 || g->n < 1 || g->k < 1 || g->batch < 1)
        return tandem_fail(TANDEM_E_INVALID, "cuda GEMM %s: every dimension must be >= 1", shp);
    if (g->a_type != g->b_type || (g->a_type != TANDEM_F32 && g->a_type != TANDEM_BF16) ||
        (g->c_type != TANDEM_F32 && (g->c_type != TANDEM_BF16 || g->a_type != TANDEM_BF16)))
        return tandem_fail(TANDEM_E_UNSUPPORTED,
                           "cuda GEMM %s: types A %s, B %s, C %s; expected A and B both f32 or both "
                           "bf16, and C f32 (or bf16 with bf16 A and B)", shp, tandem_dtype_name(g->a_type),
                           tandem_dtype_name(g->b_type), tandem_dtype_name(g->c_type));
    const int fatbin = !d->lt;
    if (fatbin && (g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX || g->batch > INT_MAX))
        return tandem_fail(TANDEM_E_UNSUPPORTED, "cuda GEMM %s: the fatbin GEMM takes dimensions up to %d", shp,
                           INT_MAX);
    if (d->lt && g->batch > INT32_MAX)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "cuda GEMM %s: cuBLASLt batches up to %d", shp, INT32_MAX);
    TANDEM_TRY(tandem_cuda_make_current(d));
    tandem_status st = TANDEM_OK;
    tandem_mutex_lock(&d->gemm_lock);
    if (!find_plan(d, g)) {
        if (d->gemm_count >= TANDEM_CUDA_GEMM_CACHE) {
            st = tandem_fail(TANDEM_E_STATE, "cuda device %d: GEMM %s would be distinct shape %d; the plan table "
                                             "holds %d",
                             d->ordinal, shp, d->gemm_count + 1, TANDEM_CUDA_GEMM_CACHE);
        } else {
            tandem_cuda_gemm_plan *p = &d->gemm_plans[d->gemm_count];
            memset(p, 0, sizeof *p);
            p->key = *g;
            p->mode = fatbin ? LT_FATBIN : LT_FUSED;
            if (fatbin) snprintf(p->why, sizeof p->why, "no cuBLASLt on this device");
            if (!fatbin) st = lt_plan(d, g, p);
            if (st == TANDEM_OK)
                d->gemm_count++;
            else
                plan_destroy(p);
        }
    }
    tandem_mutex_unlock(&d->gemm_lock);
    return st;
}

/* cublasLtMatmul with an epilogue's pointers: the call's bias and aux pointers into plan p's
 * descriptor, then the enqueue (the caller holds the device's GEMM lock: the descriptor is
 * shared, so two streams cannot swap pointers between the set and the enqueue). */
static tandem_status lt_matmul(tandem_cuda_dev *d, const tandem_cuda_stream_impl *si, const tandem_cuda_gemm_plan *p,
                               int t, const tandem_gemm_desc *g, float alpha, tandem_dptr a, tandem_dptr b,
                               float beta, tandem_dptr c) {
    const void *bias = (const void *)(uintptr_t)g->bias, *aux = (const void *)(uintptr_t)g->aux;
    if (tandem_gemm_epi_bias_ptr(g->epilogue))
        LT_TRY(cublasLtMatmulDescSetAttribute, (p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), g);
    if (tandem_gemm_epi_has_aux(g->epilogue))
        LT_TRY(cublasLtMatmulDescSetAttribute, (p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux), g);
    LT_TRY(cublasLtMatmul,
           ((cublasLtHandle_t)d->lt, p->op, &alpha, (const void *)(uintptr_t)b, p->la, (const void *)(uintptr_t)a,
            p->lb, &beta, (const void *)(uintptr_t)(g->c_src ? g->c_src : c), p->lc, (void *)(uintptr_t)c,
            p->lc, &p->algo[t],
            (void *)(uintptr_t)si->lt_workspace, si->lt_workspace ? TANDEM_CUDA_LT_WORKSPACE : 0, si->cs),
           g);
    return TANDEM_OK;
}

/* The first alignment tier plan p has an algorithm for that these pointers satisfy (cuBLASLt's
 * A is our b, its B our a; the aux matrix is held to D's), else LT_TIERS. have: what they have. */
static int lt_tier(const int *tiers, const tandem_gemm_desc *g, tandem_dptr a, tandem_dptr b, tandem_dptr c,
                   uint32_t have[4]) {
    have[0] = operand_align(b, g->stride_b, g->b_type, g->batch);
    have[1] = operand_align(a, g->stride_a, g->a_type, g->batch);
    have[2] = have[3] = operand_align(c, g->stride_c, g->c_type, g->batch);
    if (g->c_src) { /* cuBLASLt's C (read) apart from D: held to the same tier */
        const uint32_t x = operand_align(g->c_src, g->stride_c, g->c_type, g->batch);
        if (x < have[2]) have[2] = x;
    }
    if (tandem_gemm_epi_has_aux(g->epilogue)) {
        const uint32_t x = operand_align(g->aux, g->stride_c, g->c_type, g->batch);
        if (x < have[3]) have[3] = x;
    }
    for (int t = 0; t < LT_TIERS; t++) {
        uint32_t al[4];
        tier_prefs(g, t, al);
        if (tiers[t] && have[0] >= al[0] && have[1] >= al[1] && have[2] >= al[2] && have[3] >= al[3]) return t;
    }
    return LT_TIERS;
}

/* plain: plan p's product alone (g without its epilogue), else p's fused plan. */
static tandem_status lt_gemm(tandem_cuda_dev *d, tandem_stream *s, const tandem_cuda_gemm_plan *p,
                             const tandem_gemm_desc *gin, int plain, float alpha, tandem_dptr a, tandem_dptr b,
                             float beta, tandem_dptr c) {
    const tandem_cuda_stream_impl *si = s->impl;
    tandem_gemm_desc g0 = *gin;
    if (plain) g0.epilogue = TANDEM_GEMM_EPI_NONE;
    const tandem_gemm_desc *g = &g0;
    const cublasLtMatmulDesc_t op = plain ? p->plain_op : p->op;
    const cublasLtMatmulAlgo_t *algo = plain ? p->plain_algo : p->algo;
    uint32_t have[4];
    const int t = lt_tier(plain ? p->plain_have : p->have, g, a, b, c, have);
    if (t == LT_TIERS) {
        char shp[160];
        shape_text(g, shp, sizeof shp);
        return tandem_fail(TANDEM_E_INVALID,
                           "cuda GEMM %s on device %d: A %#llx, B %#llx, C %#llx are %u/%u/%u-byte aligned "
                           "(aux %u; with their batch strides); cuBLASLt has no algorithm for that (element "
                           "alignment at least)",
                           shp, d->ordinal, (unsigned long long)a, (unsigned long long)b, (unsigned long long)c,
                           have[1], have[0], have[2], have[3]);
    }
    if (g->epilogue == TANDEM_GEMM_EPI_NONE) {
        LT_TRY(cublasLtMatmul,
               ((cublasLtHandle_t)d->lt, op, &alpha, (const void *)(uintptr_t)b, p->la,
                (const void *)(uintptr_t)a, p->lb, &beta, (const void *)(uintptr_t)(g->c_src ? g->c_src : c), p->lc,
                (void *)(uintptr_t)c,
                p->lc, &algo[t], (void *)(uintptr_t)si->lt_workspace, si->lt_workspace ? TANDEM_CUDA_LT_WORKSPACE : 0,
                si->cs),
               g);
        return TANDEM_OK;
    }
    tandem_mutex_lock(&d->gemm_lock);
    tandem_status st = lt_matmul(d, si, p, t, g, alpha, a, b, beta, c);
    tandem_mutex_unlock(&d->gemm_lock);
    return st;
}

/* The fatbin's GEMM: f32 or bf16 operands; C, the bias and aux of C's type. */
static tandem_status fatbin_gemm(tandem_stream *s, const tandem_gemm_desc *g, float alpha, tandem_dptr a,
                                 tandem_dptr b, float beta, tandem_dptr c) {
    static const int kepi[TANDEM_GEMM_EPI_COUNT] = {TANDEM_K_GEMM_EPI_NONE, TANDEM_K_GEMM_EPI_NONE,
                                                    TANDEM_K_GEMM_EPI_GELU_AUX, TANDEM_K_GEMM_EPI_DGELU,
                                                    TANDEM_K_GEMM_EPI_NONE};
    const int bgrad = tandem_gemm_epi_bias_out(g->epilogue); /* the bias pointer is its output */
    const int bf16_c = g->c_type == TANDEM_BF16;
    tandem_k_gemm_bf16_args x; /* the superset; gemm_f32's fields are its leading ones */
    memset(&x, 0, sizeof x);
    x.a = (const tandem_bf16 *)(uintptr_t)a;
    x.b = (const tandem_bf16 *)(uintptr_t)b;
    x.m = (int)g->m, x.n = (int)g->n, x.k = (int)g->k, x.batch = (int)g->batch;
    x.trans_a = g->trans_a, x.trans_b = g->trans_b;
    x.stride_a = g->stride_a, x.stride_b = g->stride_b, x.stride_c = g->stride_c;
    x.alpha = alpha, x.beta = beta;
    x.epi = kepi[g->epilogue];
    if (bf16_c) {
        x.c16 = (tandem_bf16 *)(uintptr_t)c;
        x.bias16 = (const tandem_bf16 *)(uintptr_t)g->bias;
        x.aux16 = (tandem_bf16 *)(uintptr_t)g->aux;
    } else {
        x.c = (float *)(uintptr_t)c;
        x.bias = bgrad ? NULL : (const float *)(uintptr_t)g->bias;
        x.bgrad = bgrad ? (float *)(uintptr_t)g->bias : NULL;
        x.aux = (float *)(uintptr_t)g->aux;
        x.c_src = (const float *)(uintptr_t)g->c_src;
    }
    tandem_launch_dims dims;
    if (g->a_type == TANDEM_BF16) {
        tandem_kernel_table[TANDEM_KID_gemm_bf16].geom(&x, &dims);
        return tandem_cuda_launch(s, TANDEM_KID_gemm_bf16, &dims, &x, sizeof x);
    }
    tandem_k_gemm_f32_args f;
    memset(&f, 0, sizeof f);
    f.a = (const float *)(uintptr_t)a, f.b = (const float *)(uintptr_t)b, f.c = x.c;
    f.m = x.m, f.n = x.n, f.k = x.k, f.batch = x.batch, f.trans_a = x.trans_a, f.trans_b = x.trans_b;
    f.stride_a = x.stride_a, f.stride_b = x.stride_b, f.stride_c = x.stride_c;
    f.alpha = alpha, f.beta = beta, f.bias = x.bias, f.epi = x.epi, f.aux = x.aux, f.c_src = x.c_src;
    f.bgrad = x.bgrad;
    tandem_kernel_table[TANDEM_KID_gemm_f32].geom(&f, &dims);
    return tandem_cuda_launch(s, TANDEM_KID_gemm_f32, &dims, &f, sizeof f);
}

/* cuBLASLt's epilogue kernels access the bias (gradient) vector 16 bytes at a time, and no
 * preference attribute tells its heuristic otherwise (a less aligned bias faults with "misaligned
 * address" on a GPU): such a call runs split (the product alone, then the epilogue kernel, which
 * takes any alignment). The model's biases are 256-byte aligned (runtime/model/model.c,
 * PARAM_ALIGN); a view into a tensor may not be. */
static int lt_bias_aligned(const tandem_gemm_desc *g) {
    return !tandem_gemm_epi_bias_ptr(g->epilogue) || (g->bias & 15u) == 0;
}

tandem_status tandem_cuda_gemm(tandem_stream *s, const tandem_gemm_desc *g, float alpha, tandem_dptr a,
                               tandem_dptr b, float beta, tandem_dptr c) {
    tandem_cuda_dev *d = tandem_cuda_impl(s->dev);
    tandem_mutex_lock(&d->gemm_lock);
    const tandem_cuda_gemm_plan *p = find_plan(d, g);
    tandem_mutex_unlock(&d->gemm_lock); /* plans are never moved or removed while the device is open */
    if (!p) {
        char shp[160];
        shape_text(g, shp, sizeof shp);
        return tandem_fail(TANDEM_E_STATE,
                           "cuda device %d: GEMM %s was not prepared (call tandem_gemm_prepare for every "
                           "shape before commit)",
                           d->ordinal, shp);
    }
    TANDEM_TRY(tandem_cuda_make_current(d));
    if (p->mode == LT_FUSED && lt_bias_aligned(g)) return lt_gemm(d, s, p, g, 0, alpha, a, b, beta, c);
    if (p->mode == LT_FATBIN || !p->plain_op) return fatbin_gemm(s, g, alpha, a, b, beta, c);
    TANDEM_TRY(lt_gemm(d, s, p, g, 1, alpha, a, b, beta, c));
    return tandem_cuda_gemm_epi_pass(s, g, a, c);
}

int tandem_cuda_gemm_fallbacks(tandem_device *dev, char *buf, size_t cap) {
    tandem_cuda_dev *d = tandem_cuda_impl(dev);
    int n = 0;
    size_t len = 0;
    if (buf && cap) buf[0] = 0;
    tandem_mutex_lock(&d->gemm_lock);
    for (int i = 0; i < d->gemm_count; i++) {
        const tandem_cuda_gemm_plan *p = &d->gemm_plans[i];
        if (p->mode == LT_FUSED) continue;
        n++;
        char shp[160];
        shape_text(&p->key, shp, sizeof shp);
        if (buf && len < cap)
            len += (size_t)snprintf(buf + len, cap - len, "GEMM %s: %s (%s)\n", shp,
                                    p->mode == LT_SPLIT ? "cuBLASLt GEMM + epilogue kernel" : "fatbin CUDA-core GEMM",
                                    p->why);
    }
    tandem_mutex_unlock(&d->gemm_lock);
    return n;
}
