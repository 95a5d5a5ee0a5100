/* fc_cublaslt.c — the stand-in libcublasLt.so.13: handles, descriptors, layouts, preferences,
 * a heuristic that returns one algorithm, and cublasLtMatmul computed by a naive reference in
 * double with the documented column-major semantics:
 *
 *   D[b] = epilogue(alpha * op(A[b]) op(B[b]) + beta * C[b] (+ bias))     b < BATCH_COUNT
 *   element (i, j) of a layout = base + b * STRIDED_BATCH_OFFSET + j * LD + i   (elements)
 *   op(A) is m x k: A is stored m x k (rows x cols) for OP_N, k x m for OP_T; likewise B.
 *
 * Supported (anything else: CUBLAS_STATUS_NOT_SUPPORTED and one "fakecuda: error:" line):
 * compute CUBLAS_COMPUTE_32F or CUBLAS_COMPUTE_32F_FAST_TF32 (f32 A and B only; each A and B
 * element rounded to TF32, 10-bit mantissa, before its product, as the tensor cores do), scale
 * type CUDA_R_32F, pointer mode host, OP_N / OP_T,
 * column order; A and B both CUDA_R_32F (C, D CUDA_R_32F) or both CUDA_R_16BF (C, D 16BF or
 * 32F); epilogues DEFAULT, BIAS, GELU, GELU_BIAS, GELU_AUX, GELU_AUX_BIAS, DGELU, DGELU_BGRAD,
 * BGRADA, BGRADB (bias of D's type, length m, batch stride BIAS_BATCH_STRIDE; bias gradients
 * of D's type, length m, or n for BGRADB; the aux matrix of D's type, m x n with leading
 * dimension EPILOGUE_AUX_LD and batch stride EPILOGUE_AUX_BATCH_STRIDE). GELU is the tanh form
 * 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), the one cuBLASLt's GELU epilogue computes.
 * C is not read when beta == 0. The documented rules each check enforces are named at the
 * check (check_epilogue, check_aux, the aux part of cublasLtMatmul).
 *
 * Alignment: the heuristic's algorithm assumes the preference's MIN_ALIGNMENT_{A,B,C,D}_BYTES
 * (default 256, as documented), and cublasLtMatmul with a less aligned operand (or batch stride)
 * returns CUBLAS_STATUS_NOT_SUPPORTED, as the real library may (or fault) for an algorithm
 * whose vector loads need the alignment it was promised.
 *
 * Built twice, as libcublasLt.so.13 (reports version 13.0.0) and libcublasLt.so.12 (12.9.0),
 * told apart by the file it was loaded from. TANDEM_FAKECUDA_LT_CREATE_FAIL=<text>:
 * cublasLtCreate of a library whose file name contains <text> returns
 * CUBLAS_STATUS_NOT_INITIALIZED (as when the library cannot initialise on this machine), with
 * no error line: an environment failure, not a misuse.
 *
 * Device pointers and streams are checked against libcuda.so.1's state through the
 * tandem_fakecuda_* bridge, under its lock, in the caller's current context. The heuristic
 * reports a workspace (the result is staged in it, see lt_queue) and cublasLtMatmul queues the
 * product on the stream (tandem_fakecuda_submit), declaring what it reads and writes to the
 * hazard detector. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test/fakecuda/fakecuda.h"
#include "kernels/ktypes.h"

#define LT_ALGO_MAGIC 0x54616e64656d4c74ull /* "TandemLt" */

typedef enum { LT_HANDLE = 1, LT_DESC, LT_LAYOUT, LT_PREF } lt_kind;

typedef struct lt_obj {
    lt_kind kind;
    int alive;
} lt_obj;

typedef struct lt_desc {
    lt_obj h;
    int32_t compute, scale, pointer_mode, transa, transb, transc, bias_type;
    uint32_t epilogue;
    const void *bias;
    int64_t bias_stride;
    const void *aux;            /* EPILOGUE_AUX_POINTER */
    int64_t aux_ld, aux_stride; /* EPILOGUE_AUX_LD (0: unset), _BATCH_STRIDE */
    int32_t aux_type;           /* EPILOGUE_AUX_DATA_TYPE, -1: D's */
} lt_desc;

typedef struct lt_layout {
    lt_obj h;
    uint32_t type;
    int32_t order, batch;
    uint64_t rows, cols;
    int64_t ld, stride;
} lt_layout;

typedef struct lt_pref {
    lt_obj h;
    uint32_t search_mode;
    uint64_t max_workspace;
    uint32_t min_align[4]; /* MIN_ALIGNMENT_{A,B,C,D}_BYTES, default 256 */
    uint32_t reduction_mask; /* REDUCTION_SCHEME_MASK, default all (the stand-in never splits K) */
} lt_pref;

/* An algorithm is free to assume what the preference promised: the one the heuristic returns
 * requires each of A, B, C, D (and, batched, each item: base + b * stride) aligned to the
 * preference's MIN_ALIGNMENT_*_BYTES, as real kernels with wide vector loads do. algo.data[1]
 * holds the four requirements, 16 bits each. */
#define LT_ALGO_ALIGN(data, i) ((uint32_t)((data)[1] >> (16 * (i))) & 0xffffu)

/* Every object ever created (freed at unload), so a stale handle is reported. */
static lt_obj **objs;
static size_t obj_count, obj_cap;

static void *lt_new(lt_kind kind, size_t size) {
    lt_obj *o = calloc(1, size);
    if (!o) return NULL;
    o->kind = kind;
    o->alive = 1;
    tandem_fakecuda_lock();
    if (obj_count == obj_cap) {
        size_t cap = obj_cap ? obj_cap * 2 : 64;
        lt_obj **n = realloc(objs, cap * sizeof *n);
        if (!n) abort(); /* test-only: host out of memory is fatal */
        objs = n;
        obj_cap = cap;
    }
    objs[obj_count++] = o;
    tandem_fakecuda_unlock();
    return o;
}

__attribute__((destructor)) static void lt_unload(void) {
    for (size_t i = 0; i < obj_count; i++) free(objs[i]);
    free(objs);
    objs = NULL;
    obj_count = obj_cap = 0;
}

static const char *kind_name(lt_kind k) {
    switch (k) {
    case LT_HANDLE: return "handle";
    case LT_DESC: return "matmul descriptor";
    case LT_LAYOUT: return "matrix layout";
    case LT_PREF: return "preference";
    }
    return "?";
}

/* The live object of that kind at p, or NULL after reporting. Lock held. */
static void *lt_get(const char *call, const void *p, lt_kind kind) {
    for (size_t i = obj_count; i-- > 0;) {
        if ((const void *)objs[i] != p) continue;
        if (objs[i]->kind == kind && objs[i]->alive) return objs[i];
        tandem_fakecuda_report(call, "%s %p %s", kind_name(kind), p,
                               objs[i]->kind != kind ? "is another kind of object" : "was destroyed");
        return NULL;
    }
    tandem_fakecuda_report(call, "%p is not a %s%s", p, kind_name(kind),
                           p ? "" : " (NULL)");
    return NULL;
}

static cublasStatus_t lt_destroy(const char *call, void *p, lt_kind kind) {
    tandem_fakecuda_lock();
    lt_obj *o = lt_get(call, p, kind);
    if (o) o->alive = 0;
    tandem_fakecuda_unlock();
    return o ? CUBLAS_STATUS_SUCCESS
             : (kind == LT_HANDLE ? CUBLAS_STATUS_NOT_INITIALIZED : CUBLAS_STATUS_INVALID_VALUE);
}

/* Copy an attribute value whose size must match exactly, as cuBLASLt requires. */
static int set_exact(const char *call, int attr, void *dst, size_t want, const void *buf,
                     size_t size) {
    if (!buf || size != want) {
        tandem_fakecuda_report(call, "attribute %d takes %zu bytes, got %zu%s", attr, want, size,
                               buf ? "" : " (NULL buffer)");
        return -1;
    }
    memcpy(dst, buf, want);
    return 0;
}

/* ---------------------------------------------------------------- handles, descriptors ---- */

/* The file this copy was loaded from ("" if unknown). */
static const char *lt_file(void) {
    Dl_info info;
    if (dladdr((void *)lt_file, &info) && info.dli_fname) return info.dli_fname;
    return "";
}

FC_EXPORT size_t cublasLtGetVersion(void) { return strstr(lt_file(), "libcublasLt.so.12") ? 120900 : 130000; }

FC_EXPORT cublasStatus_t cublasLtCreate(cublasLtHandle_t *out) {
    if (!out) {
        tandem_fakecuda_report("cublasLtCreate", "handle is NULL");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    const char *fail = getenv("TANDEM_FAKECUDA_LT_CREATE_FAIL");
    if (fail && fail[0] && strstr(lt_file(), fail)) return CUBLAS_STATUS_NOT_INITIALIZED;
    lt_obj *o = lt_new(LT_HANDLE, sizeof *o);
    if (!o) return CUBLAS_STATUS_ALLOC_FAILED;
    *out = (cublasLtHandle_t)(void *)o;
    return CUBLAS_STATUS_SUCCESS;
}

FC_EXPORT cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
    return lt_destroy("cublasLtDestroy", h, LT_HANDLE);
}

FC_EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *out,
                                                  cublasComputeType_t compute,
                                                  cudaDataType_t scale) {
    if (!out) {
        tandem_fakecuda_report("cublasLtMatmulDescCreate", "matmulDesc is NULL");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    lt_desc *d = lt_new(LT_DESC, sizeof *d);
    if (!d) return CUBLAS_STATUS_ALLOC_FAILED;
    d->compute = (int32_t)compute;
    d->scale = (int32_t)scale;
    d->pointer_mode = CUBLASLT_POINTER_MODE_HOST;
    d->transa = d->transb = d->transc = CUBLAS_OP_N;
    d->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    d->bias_type = -1; /* unset: D's type */
    d->aux_type = -1;
    *out = (cublasLtMatmulDesc_t)(void *)d;
    return CUBLAS_STATUS_SUCCESS;
}

FC_EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
    return lt_destroy("cublasLtMatmulDescDestroy", d, LT_DESC);
}

FC_EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t h,
                                                        cublasLtMatmulDescAttributes_t attr,
                                                        const void *buf, size_t size) {
    const char *call = "cublasLtMatmulDescSetAttribute";
    tandem_fakecuda_lock();
    lt_desc *d = lt_get(call, h, LT_DESC);
    int bad = !d;
    if (d) {
        switch (attr) {
        case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: bad = set_exact(call, attr, &d->compute, 4, buf, size); break;
        case CUBLASLT_MATMUL_DESC_SCALE_TYPE: bad = set_exact(call, attr, &d->scale, 4, buf, size); break;
        case CUBLASLT_MATMUL_DESC_POINTER_MODE: bad = set_exact(call, attr, &d->pointer_mode, 4, buf, size); break;
        case CUBLASLT_MATMUL_DESC_TRANSA: bad = set_exact(call, attr, &d->transa, 4, buf, size); break;
        case CUBLASLT_MATMUL_DESC_TRANSB: bad = set_exact(call, attr, &d->transb, 4, buf, size); break;
        case CUBLASLT_MATMUL_DESC_TRANSC: bad = set_exact(call, attr, &d->transc, 4, buf, size); break;
        case CUBLASLT_MATMUL_DESC_EPILOGUE: bad = set_exact(call, attr, &d->epilogue, 4, buf, size); break;
        case CUBLASLT_MATMUL_DESC_BIAS_POINTER: bad = set_exact(call, attr, (void *)&d->bias, sizeof(void *), buf, size); break;
        case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: bad = set_exact(call, attr, &d->bias_stride, 8, buf, size); break;
        case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: bad = set_exact(call, attr, &d->bias_type, 4, buf, size); break;
        case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: bad = set_exact(call, attr, (void *)&d->aux, sizeof(void *), buf, size); break;
        case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: bad = set_exact(call, attr, &d->aux_ld, 8, buf, size); break;
        case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE: bad = set_exact(call, attr, &d->aux_stride, 8, buf, size); break;
        case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE: bad = set_exact(call, attr, &d->aux_type, 4, buf, size); break;
        default:
            tandem_fakecuda_report(call, "attribute %d is not modelled by the stand-in", (int)attr);
            tandem_fakecuda_unlock();
            return CUBLAS_STATUS_NOT_SUPPORTED;
        }
    }
    tandem_fakecuda_unlock();
    return bad ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_SUCCESS;
}

FC_EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *out, cudaDataType type,
                                                    uint64_t rows, uint64_t cols, int64_t ld) {
    if (!out) {
        tandem_fakecuda_report("cublasLtMatrixLayoutCreate", "matLayout is NULL");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    lt_layout *l = lt_new(LT_LAYOUT, sizeof *l);
    if (!l) return CUBLAS_STATUS_ALLOC_FAILED;
    l->type = (uint32_t)type;
    l->order = CUBLASLT_ORDER_COL;
    l->rows = rows;
    l->cols = cols;
    l->ld = ld;
    l->batch = 1;
    l->stride = 0;
    *out = (cublasLtMatrixLayout_t)(void *)l;
    return CUBLAS_STATUS_SUCCESS;
}

FC_EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
    return lt_destroy("cublasLtMatrixLayoutDestroy", l, LT_LAYOUT);
}

FC_EXPORT cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t h,
                                                          cublasLtMatrixLayoutAttribute_t attr,
                                                          const void *buf, size_t size) {
    const char *call = "cublasLtMatrixLayoutSetAttribute";
    tandem_fakecuda_lock();
    lt_layout *l = lt_get(call, h, LT_LAYOUT);
    int bad = !l;
    if (l) {
        switch (attr) {
        case CUBLASLT_MATRIX_LAYOUT_TYPE: bad = set_exact(call, attr, &l->type, 4, buf, size); break;
        case CUBLASLT_MATRIX_LAYOUT_ORDER: bad = set_exact(call, attr, &l->order, 4, buf, size); break;
        case CUBLASLT_MATRIX_LAYOUT_ROWS: bad = set_exact(call, attr, &l->rows, 8, buf, size); break;
        case CUBLASLT_MATRIX_LAYOUT_COLS: bad = set_exact(call, attr, &l->cols, 8, buf, size); break;
        case CUBLASLT_MATRIX_LAYOUT_LD: bad = set_exact(call, attr, &l->ld, 8, buf, size); break;
        case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: bad = set_exact(call, attr, &l->batch, 4, buf, size); break;
        case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: bad = set_exact(call, attr, &l->stride, 8, buf, size); break;
        default:
            tandem_fakecuda_report(call, "attribute %d is not modelled by the stand-in", (int)attr);
            tandem_fakecuda_unlock();
            return CUBLAS_STATUS_NOT_SUPPORTED;
        }
    }
    tandem_fakecuda_unlock();
    return bad ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_SUCCESS;
}

FC_EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *out) {
    if (!out) {
        tandem_fakecuda_report("cublasLtMatmulPreferenceCreate", "pref is NULL");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    lt_pref *p = lt_new(LT_PREF, sizeof *p);
    if (p)
        for (int i = 0; i < 4; i++) p->min_align[i] = 256;
    if (p) p->reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
    if (!p) return CUBLAS_STATUS_ALLOC_FAILED;
    *out = (cublasLtMatmulPreference_t)(void *)p;
    return CUBLAS_STATUS_SUCCESS;
}

FC_EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
    return lt_destroy("cublasLtMatmulPreferenceDestroy", p, LT_PREF);
}

FC_EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t h, cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
    size_t size) {
    const char *call = "cublasLtMatmulPreferenceSetAttribute";
    tandem_fakecuda_lock();
    lt_pref *p = lt_get(call, h, LT_PREF);
    int bad = !p;
    if (p) {
        switch (attr) {
        case CUBLASLT_MATMUL_PREF_SEARCH_MODE: bad = set_exact(call, attr, &p->search_mode, 4, buf, size); break;
        case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: bad = set_exact(call, attr, &p->max_workspace, 8, buf, size); break;
        case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK:
            bad = set_exact(call, attr, &p->reduction_mask, 4, buf, size);
            if (!bad && (p->reduction_mask & ~(uint32_t)CUBLASLT_REDUCTION_SCHEME_MASK)) {
                tandem_fakecuda_report(call, "reduction scheme mask %#x has bits outside 0x7", p->reduction_mask);
                bad = 1;
            }
            break;
        case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
        case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
        case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
        case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: {
            uint32_t *v = &p->min_align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES];
            bad = set_exact(call, attr, v, 4, buf, size);
            if (!bad && (*v == 0 || (*v & (*v - 1)) || *v > 65536)) {
                tandem_fakecuda_report(call, "attribute %d: alignment %u is not a power of two up to 64 KiB",
                                       (int)attr, *v);
                bad = 1;
            }
            break;
        }
        default:
            tandem_fakecuda_report(call, "attribute %d is not modelled by the stand-in", (int)attr);
            tandem_fakecuda_unlock();
            return CUBLAS_STATUS_NOT_SUPPORTED;
        }
    }
    tandem_fakecuda_unlock();
    return bad ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------- the problem ------------- */

typedef struct lt_problem {
    const lt_desc *d;
    const lt_layout *a, *b, *c, *dd;
    int64_t m, n, k, batch;
    int has_bias, gelu;
    int aux_out, dgelu; /* GELU_AUX*: v into aux; DGELU*: v * gelu'(aux) (aux_in) */
    int bgrad;          /* bias gradient out: 1 rows of D (DGELU_BGRAD, BGRADA), 2 columns (BGRADB) */
    int bgrad_a;        /* BGRADA / BGRADB: sum of op(A) / op(B) over k, else of D over its columns */
    int tf32; /* CUBLAS_COMPUTE_32F_FAST_TF32: A and B rounded to TF32 before the products */
    uint32_t bias_type;
} lt_problem;

static size_t type_size(uint32_t t) { return t == CUDA_R_32F ? 4 : 2; }
static const char *type_name(uint32_t t) {
    switch (t) {
    case CUDA_R_32F: return "CUDA_R_32F";
    case CUDA_R_16BF: return "CUDA_R_16BF";
    case CUDA_R_16F: return "CUDA_R_16F";
    case CUDA_R_64F: return "CUDA_R_64F";
    case CUDA_R_32I: return "CUDA_R_32I";
    }
    return "an unknown type";
}

/* The epilogue's kind into p; 1 (reported) for one the stand-in does not model (the ReLU
 * family: its aux is a bit mask). The meanings are cublasLtEpilogue_t's documented ones. */
static int check_epilogue(const char *call, lt_problem *p) {
    switch (p->d->epilogue) {
    case CUBLASLT_EPILOGUE_DEFAULT: return 0;
    case CUBLASLT_EPILOGUE_BIAS: p->has_bias = 1; return 0;
    case CUBLASLT_EPILOGUE_GELU: p->gelu = 1; return 0;
    case CUBLASLT_EPILOGUE_GELU_BIAS: p->has_bias = 1, p->gelu = 1; return 0;
    case CUBLASLT_EPILOGUE_GELU_AUX: p->gelu = 1, p->aux_out = 1; return 0;
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: p->has_bias = 1, p->gelu = 1, p->aux_out = 1; return 0;
    case CUBLASLT_EPILOGUE_DGELU: p->dgelu = 1; return 0;
    case CUBLASLT_EPILOGUE_DGELU_BGRAD: p->dgelu = 1, p->bgrad = 1; return 0;
    case CUBLASLT_EPILOGUE_BGRADA: p->bgrad = 1, p->bgrad_a = 1; return 0;
    case CUBLASLT_EPILOGUE_BGRADB: p->bgrad = 2, p->bgrad_a = 1; return 0;
    }
    tandem_fakecuda_report(call, "epilogue %u not supported (DEFAULT, BIAS, GELU, GELU_BIAS, GELU_AUX, GELU_AUX_BIAS, "
                           "DGELU, DGELU_BGRAD, BGRADA, BGRADB)", p->d->epilogue);
    return 1;
}

/* The aux matrix's descriptor attributes for an epilogue that has one (cublasLtMatmulDescAttributes_t):
 * EPILOGUE_AUX_POINTER "Requires setting the CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD attribute";
 * EPILOGUE_AUX_LD for GELU: "Must be divisible by 8 and be no less than the number of rows in the
 * output matrix"; EPILOGUE_AUX_BATCH_STRIDE for GELU: "Must be divisible by 8";
 * EPILOGUE_AUX_DATA_TYPE: outside FP8 kernels "the data type should be left unset or set to the
 * default value of -1", and "If set for an unsupported matrix data, scale, and compute type
 * combination, calling cublasLtMatmul() will return CUBLAS_INVALID_VALUE". */
static cublasStatus_t check_aux(const char *call, const lt_problem *p) {
    const lt_desc *d = p->d;
    if (!p->aux_out && !p->dgelu) return CUBLAS_STATUS_SUCCESS;
    if (d->aux_ld <= 0 || d->aux_ld % 8 != 0 || (uint64_t)d->aux_ld < p->dd->rows) {
        tandem_fakecuda_report(call, "epilogue %u: EPILOGUE_AUX_LD %lld; it must be set, divisible by 8 and at least "
                               "D's rows (%llu)", d->epilogue, (long long)d->aux_ld, (unsigned long long)p->dd->rows);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (p->batch > 1 && (d->aux_stride < 0 || d->aux_stride % 8 != 0)) {
        tandem_fakecuda_report(call, "epilogue %u: EPILOGUE_AUX_BATCH_STRIDE %lld; it must be divisible by 8",
                               d->epilogue, (long long)d->aux_stride);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (d->aux_type != -1) {
        tandem_fakecuda_report(call, "EPILOGUE_AUX_DATA_TYPE %s: outside FP8 kernels it stays unset (-1: D's type)",
                               type_name((uint32_t)d->aux_type));
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* Validate the combination; reports and returns NOT_SUPPORTED (a combination the stand-in,
 * like a given cuBLASLt build, does not implement) or INVALID_VALUE (inconsistent shapes). */
static cublasStatus_t check_problem(const char *call, lt_problem *p) {
    const lt_desc *d = p->d;
    const lt_layout *L[4] = {p->a, p->b, p->c, p->dd};
    static const char *nm[4] = {"A", "B", "C", "D"};
    if (d->compute != CUBLAS_COMPUTE_32F && d->compute != CUBLAS_COMPUTE_32F_FAST_TF32) {
        tandem_fakecuda_report(call, "compute type %d not supported (CUBLAS_COMPUTE_32F, "
                               "CUBLAS_COMPUTE_32F_FAST_TF32)", d->compute);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    p->tf32 = d->compute == CUBLAS_COMPUTE_32F_FAST_TF32;
    if (d->scale != CUDA_R_32F) {
        tandem_fakecuda_report(call, "scale type %s not supported (only CUDA_R_32F)", type_name((uint32_t)d->scale));
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (d->pointer_mode != CUBLASLT_POINTER_MODE_HOST) {
        tandem_fakecuda_report(call, "pointer mode %d not supported (only host alpha/beta)", d->pointer_mode);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if ((d->transa != CUBLAS_OP_N && d->transa != CUBLAS_OP_T) ||
        (d->transb != CUBLAS_OP_N && d->transb != CUBLAS_OP_T) || d->transc != CUBLAS_OP_N) {
        tandem_fakecuda_report(call, "transa %d / transb %d / transc %d: only OP_N and OP_T (C: OP_N)",
                               d->transa, d->transb, d->transc);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (check_epilogue(call, p)) return CUBLAS_STATUS_NOT_SUPPORTED;
    for (int i = 0; i < 4; i++) {
        if (L[i]->order != CUBLASLT_ORDER_COL) {
            tandem_fakecuda_report(call, "%s: order %d not supported (only CUBLASLT_ORDER_COL)", nm[i], L[i]->order);
            return CUBLAS_STATUS_NOT_SUPPORTED;
        }
        if (L[i]->type != CUDA_R_32F && L[i]->type != CUDA_R_16BF) {
            tandem_fakecuda_report(call, "%s: type %s not supported", nm[i], type_name(L[i]->type));
            return CUBLAS_STATUS_NOT_SUPPORTED;
        }
    }
    if (p->a->type != p->b->type || p->c->type != p->dd->type ||
        (p->a->type == CUDA_R_32F && p->c->type != CUDA_R_32F)) {
        tandem_fakecuda_report(call,
                               "types A %s, B %s, C %s, D %s not supported (A = B; C = D; f32 "
                               "inputs need f32 outputs)",
                               type_name(p->a->type), type_name(p->b->type), type_name(p->c->type),
                               type_name(p->dd->type));
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (p->tf32 && (p->a->type != CUDA_R_32F || p->b->type != CUDA_R_32F)) {
        /* cuBLAS's table of compute types: FAST_TF32 takes CUDA_R_32F A and B only */
        tandem_fakecuda_report(call, "CUBLAS_COMPUTE_32F_FAST_TF32 with A %s, B %s: it takes "
                               "CUDA_R_32F A and B only", type_name(p->a->type), type_name(p->b->type));
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    p->bias_type = d->bias_type < 0 ? p->dd->type : (uint32_t)d->bias_type;
    /* BIAS_DATA_TYPE: "If unset (or set to the default value of -1), the bias vector elements are
     * the same type as the elements of the output matrix (Dtype)", the exceptions being IMMA
     * (int8) and FP8 kernels, which the stand-in does not model: any other type is refused */
    if ((p->has_bias || p->bgrad) && p->bias_type != p->dd->type) {
        tandem_fakecuda_report(call, "bias type %s with D %s: outside IMMA and FP8 kernels the bias (or bias "
                               "gradient) is D's type (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE)",
                               type_name(p->bias_type), type_name(p->dd->type));
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    p->m = (int64_t)p->dd->rows;
    p->n = (int64_t)p->dd->cols;
    p->k = (int64_t)(d->transa == CUBLAS_OP_N ? p->a->cols : p->a->rows);
    uint64_t am = d->transa == CUBLAS_OP_N ? p->a->rows : p->a->cols;
    uint64_t bk = d->transb == CUBLAS_OP_N ? p->b->rows : p->b->cols;
    uint64_t bn = d->transb == CUBLAS_OP_N ? p->b->cols : p->b->rows;
    if (am != p->dd->rows || bk != (uint64_t)p->k || bn != p->dd->cols ||
        p->c->rows != p->dd->rows || p->c->cols != p->dd->cols) {
        tandem_fakecuda_report(call,
                               "shapes disagree: op(A) %llux%lld, op(B) %llux%llu, C %llux%llu, D "
                               "%llux%llu (want m x k, k x n, m x n, m x n)",
                               (unsigned long long)am, (long long)p->k, (unsigned long long)bk,
                               (unsigned long long)bn, (unsigned long long)p->c->rows,
                               (unsigned long long)p->c->cols, (unsigned long long)p->dd->rows,
                               (unsigned long long)p->dd->cols);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (p->m <= 0 || p->n <= 0 || p->k <= 0 || p->m > INT32_MAX || p->n > INT32_MAX || p->k > INT32_MAX) {
        tandem_fakecuda_report(call, "m %lld, n %lld, k %lld: each must be in [1, 2^31)",
                               (long long)p->m, (long long)p->n, (long long)p->k);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    for (int i = 0; i < 4; i++) {
        if (L[i]->ld < (int64_t)L[i]->rows || L[i]->ld < 1) {
            tandem_fakecuda_report(call, "%s: leading dimension %lld < rows %llu", nm[i],
                                   (long long)L[i]->ld, (unsigned long long)L[i]->rows);
            return CUBLAS_STATUS_INVALID_VALUE;
        }
        if (L[i]->batch != p->dd->batch || L[i]->batch < 1 || L[i]->stride < 0) {
            tandem_fakecuda_report(call, "%s: batch count %d (D: %d) and stride %lld: counts must "
                                   "agree and be >= 1, strides >= 0",
                                   nm[i], L[i]->batch, p->dd->batch, (long long)L[i]->stride);
            return CUBLAS_STATUS_INVALID_VALUE;
        }
    }
    if (p->c != p->dd && (p->c->ld != p->dd->ld || p->c->stride != p->dd->stride)) {
        /* cuBLASLt requires C and D to have the same layout when they may alias; the project
         * always passes one layout for both, so a difference is a bug worth flagging. */
        tandem_fakecuda_report(call, "C and D layouts differ (ld %lld vs %lld, stride %lld vs %lld)",
                               (long long)p->c->ld, (long long)p->dd->ld, (long long)p->c->stride,
                               (long long)p->dd->stride);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    p->batch = p->dd->batch;
    return check_aux(call, p);
}

static int get_problem(const char *call, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t A,
                       cublasLtMatrixLayout_t B, cublasLtMatrixLayout_t C,
                       cublasLtMatrixLayout_t D, lt_problem *p) {
    memset(p, 0, sizeof *p);
    if (!(p->d = lt_get(call, desc, LT_DESC))) return -1;
    if (!(p->a = lt_get(call, A, LT_LAYOUT))) return -1;
    if (!(p->b = lt_get(call, B, LT_LAYOUT))) return -1;
    if (!(p->c = lt_get(call, C, LT_LAYOUT))) return -1;
    if (!(p->dd = lt_get(call, D, LT_LAYOUT))) return -1;
    return 0;
}

static size_t lt_stage_bytes(const lt_problem *p);

/* TANDEM_FAKECUDA_LT_NO_ALGO_EPILOGUE: the heuristic rejects problems with an epilogue, as a
 * cuBLASLt build without those kernels (or a GPU it has none for) answers: "1" every epilogue,
 * or one by name (BIAS, GELU_AUX_BIAS, DGELU, BGRADB); NOT_SUPPORTED, or INVALID_VALUE with the
 * suffix ":invalid" (as some cuBLASLt versions answer). Returns the status, SUCCESS when none. */
static cublasStatus_t lt_no_algo(const lt_problem *p) {
    static const struct { const char *name; uint32_t epi; } names[] = {
        {"BIAS", CUBLASLT_EPILOGUE_BIAS}, {"GELU_AUX_BIAS", CUBLASLT_EPILOGUE_GELU_AUX_BIAS},
        {"DGELU", CUBLASLT_EPILOGUE_DGELU}, {"BGRADB", CUBLASLT_EPILOGUE_BGRADB}};
    const char *e = getenv("TANDEM_FAKECUDA_LT_NO_ALGO_EPILOGUE");
    if (!e || !e[0] || p->d->epilogue == CUBLASLT_EPILOGUE_DEFAULT) return CUBLAS_STATUS_SUCCESS;
    const char *colon = strchr(e, ':');
    const size_t len = colon ? (size_t)(colon - e) : strlen(e);
    int hit = len == 1 && e[0] == '1';
    for (size_t i = 0; !hit && i < sizeof names / sizeof names[0]; i++)
        hit = strlen(names[i].name) == len && !strncmp(e, names[i].name, len) && p->d->epilogue == names[i].epi;
    if (!hit) return CUBLAS_STATUS_SUCCESS;
    return colon && !strcmp(colon, ":invalid") ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_NOT_SUPPORTED;
}

FC_EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t A,
    cublasLtMatrixLayout_t B, cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D,
    cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t results[],
    int *returned) {
    const char *call = "cublasLtMatmulAlgoGetHeuristic";
    tandem_fakecuda_lock();
    lt_problem p;
    cublasStatus_t st = CUBLAS_STATUS_INVALID_VALUE;
    if (returned) *returned = 0;
    if (!lt_get(call, handle, LT_HANDLE)) {
        st = CUBLAS_STATUS_NOT_INITIALIZED;
    } else if (get_problem(call, desc, A, B, C, D, &p) || !lt_get(call, pref, LT_PREF)) {
        st = CUBLAS_STATUS_INVALID_VALUE;
    } else if (requested < 1 || !results || !returned) {
        tandem_fakecuda_report(call, "requestedAlgoCount %d (>= 1), results %p, returnAlgoCount %p",
                               requested, (void *)results, (void *)returned);
    } else if ((st = check_problem(call, &p)) == CUBLAS_STATUS_SUCCESS && lt_no_algo(&p) != CUBLAS_STATUS_SUCCESS) {
        st = lt_no_algo(&p); /* what cuBLASLt answers when it has no algorithm */
    } else if (st == CUBLAS_STATUS_SUCCESS) {
        const lt_pref *pr = lt_get(call, pref, LT_PREF);
        memset(&results[0], 0, sizeof results[0]);
        results[0].algo.data[0] = LT_ALGO_MAGIC;
        /* Like split-K algorithms on a GPU, ours stages the result in the workspace (up to
         * what the preference allows), so a workspace shared by two streams is a hazard. */
        size_t ws = lt_stage_bytes(&p);
        if (pr && ws > pr->max_workspace) ws = (size_t)pr->max_workspace;
        results[0].algo.data[2] = ws; /* data[1]: the alignment tiers */
        results[0].workspaceSize = ws;
        for (int i = 0; i < 4; i++)
            results[0].algo.data[1] |= (uint64_t)(pr->min_align[i] > 0xffffu ? 0xffffu : pr->min_align[i]) << (16 * i);
        /* EPILOGUE_AUX_POINTER: "Routines that don't dereference this pointer, like
         * cublasLtMatmulAlgoGetHeuristic() depend on its value to determine expected pointer
         * alignment": the algorithm assumes the aux pointer's alignment then (NULL: 256) */
        const uint64_t av = (uint64_t)(uintptr_t)p.d->aux | 256u;
        results[0].algo.data[3] = av & (~av + 1);
        results[0].state = CUBLAS_STATUS_SUCCESS;
        results[0].wavesCount = 1.0f;
        *returned = 1;
    }
    tandem_fakecuda_unlock();
    return st;
}

/* ---------------------------------------------------------------- matmul ------------------ */

static size_t extent(const lt_layout *l);
/* Bytes of D the algorithm stages through the workspace: all of D. */
static size_t lt_stage_bytes(const lt_problem *p) { return extent(p->dd); }

static double load(const void *base, uint32_t type, int64_t idx) {
    if (type == CUDA_R_32F) return ((const float *)base)[idx];
    return tandem_bf16_to_f32(((const tandem_bf16 *)base)[idx]);
}

/* An f32 input as the tensor cores see it under CUBLAS_COMPUTE_32F_FAST_TF32: the mantissa
 * rounded to 10 bits (to nearest, ties away from zero, as cvt.rna.tf32.f32); inf and NaN kept. */
static double tf32_round(double v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & ~0x1fffu;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void store(void *base, uint32_t type, int64_t idx, double v) {
    if (type == CUDA_R_32F)
        ((float *)base)[idx] = (float)v;
    else
        ((tandem_bf16 *)base)[idx] = tandem_f32_to_bf16((float)v);
}

/* Bytes a layout's matrices span from its base pointer. */
static size_t extent(const lt_layout *l) {
    int64_t last = (int64_t)(l->batch - 1) * l->stride + (int64_t)(l->cols - 1) * l->ld +
                   (int64_t)l->rows;
    return (size_t)last * type_size(l->type);
}

static int ranges_overlap(const void *a, size_t an, const void *b, size_t bn) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + bn && y < x + an;
}

static double gelu(double x) {
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
/* d gelu / dx of the tanh form, what DGELU multiplies by. */
static double gelu_grad(double x) {
    const double k0 = 0.7978845608028654, k1 = 0.044715, t = tanh(k0 * (x + k1 * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k0 * (1.0 + 3.0 * k1 * x * x);
}

/* Elements of the aux matrix and the bias (gradient) vector the problem touches. */
static size_t aux_elems(const lt_problem *p) {
    return (size_t)((p->batch - 1) * p->d->aux_stride + (p->n - 1) * p->d->aux_ld + p->m);
}
static size_t bias_elems(const lt_problem *p) {
    return (size_t)((p->batch - 1) * p->d->bias_stride + (p->bgrad == 2 ? p->n : p->m));
}

/* BGRADA / BGRADB: item b's bias gradient, the sum over k of op(A)'s rows / op(B)'s columns. */
static void bgrad_operand(const lt_problem *p, int64_t b, const void *A, const void *B) {
    const lt_desc *d = p->d;
    const int64_t len = p->bgrad == 2 ? p->n : p->m;
    for (int64_t x = 0; x < len; x++) {
        double s = 0.0;
        for (int64_t q = 0; q < p->k; q++) {
            if (p->bgrad == 1) /* op(A)(x, q) */
                s += load(A, p->a->type, b * p->a->stride + (d->transa == CUBLAS_OP_N ? x + q * p->a->ld : q + x * p->a->ld));
            else /* op(B)(q, x) */
                s += load(B, p->b->type, b * p->b->stride + (d->transb == CUBLAS_OP_N ? q + x * p->b->ld : x + q * p->b->ld));
        }
        store((void *)d->bias, p->bias_type, b * d->bias_stride + x, s);
    }
}

/* Element (i, j) of item b after alpha AB + beta C (+ bias): the activation's epilogue, with
 * the aux matrix written (GELU_AUX*) or read (DGELU*). */
static double epilogue_elem(const lt_problem *p, int64_t b, int64_t i, int64_t j, double v) {
    const lt_desc *d = p->d;
    const int64_t x = b * d->aux_stride + i + j * d->aux_ld;
    if (p->aux_out) store((void *)d->aux, p->dd->type, x, v);
    if (p->gelu) v = gelu(v);
    if (p->dgelu) v *= gelu_grad(load(d->aux, p->dd->type, x));
    return v;
}

static void compute(const lt_problem *p, double alpha, double beta, const void *A, const void *B,
                    const void *C, void *D) {
    const lt_desc *d = p->d;
    double *row_sum = calloc((size_t)p->m + 1, sizeof *row_sum); /* DGELU_BGRAD's, per item */
    if (!row_sum) abort(); /* test-only */
    for (int64_t b = 0; b < p->batch; b++) {
        for (int64_t i = 0; i < p->m; i++) row_sum[i] = 0.0;
        int64_t oa = b * p->a->stride, ob = b * p->b->stride;
        int64_t oc = b * p->c->stride, od = b * p->dd->stride;
        for (int64_t j = 0; j < p->n; j++) {
            for (int64_t i = 0; i < p->m; i++) {
                double acc = 0.0;
                for (int64_t q = 0; q < p->k; q++) {
                    /* op(A)(i, q) and op(B)(q, j) in column-major storage. */
                    int64_t ia = d->transa == CUBLAS_OP_N ? i + q * p->a->ld : q + i * p->a->ld;
                    int64_t ib = d->transb == CUBLAS_OP_N ? q + j * p->b->ld : j + q * p->b->ld;
                    double x = load(A, p->a->type, oa + ia), y = load(B, p->b->type, ob + ib);
                    if (p->tf32) x = tf32_round(x), y = tf32_round(y);
                    acc += x * y;
                }
                double v = alpha * acc;
                if (beta != 0.0) v += beta * load(C, p->c->type, oc + i + j * p->c->ld);
                if (p->has_bias) v += load(d->bias, p->bias_type, b * d->bias_stride + i);
                v = epilogue_elem(p, b, i, j, v);
                store(D, p->dd->type, od + i + j * p->dd->ld, v);
                if (p->bgrad == 1 && !p->bgrad_a) row_sum[i] += v; /* DGELU_BGRAD: of the output */
            }
        }
        if (p->bgrad_a) bgrad_operand(p, b, A, B);
        if (p->bgrad == 1 && !p->bgrad_a)
            for (int64_t i = 0; i < p->m; i++) store((void *)d->bias, p->bias_type, b * d->bias_stride + i, row_sum[i]);
    }
    free(row_sum);
}

/* A matmul queued on its stream runs in two steps, as a split-K kernel pair would: the product
 * is computed (from A, B, C, bias as they are when the stream reaches it) and its first
 * ws_used bytes are written to the workspace; the second step copies them from the workspace
 * into D (the rest straight from the result). Another stream writing the workspace in between
 * corrupts D, and the hazard detector reports it. */
typedef struct lt_finish {
    void *D;
    const void *ws;
    size_t nd, ws_used;
    unsigned char staged[]; /* [nd] the result in D's layout */
} lt_finish;

typedef struct lt_job {
    lt_desc d;
    lt_layout a, b, c, dd;
    lt_problem p;
    double alpha, beta;
    const void *A, *B, *C;
    void *ws;
    lt_finish *fin;
} lt_job;

static void lt_run_compute(void *arg) {
    lt_job *j = arg;
    memcpy(j->fin->staged, j->fin->D, j->fin->nd); /* elements outside the layout stay */
    compute(&j->p, j->alpha, j->beta, j->A, j->B, j->C, j->fin->staged);
    if (j->fin->ws_used) memcpy(j->ws, j->fin->staged, j->fin->ws_used);
}

static void lt_run_finish(void *arg) {
    lt_finish *f = arg;
    memcpy(f->D, f->staged, f->nd);
    if (f->ws_used) memcpy(f->D, f->ws, f->ws_used);
}

static void lt_queue(const lt_problem *p, double alpha, double beta, const void *A, const void *B,
                     const void *C, void *D, void *ws, size_t ws_used, CUstream stream) {
    size_t nd = extent(p->dd);
    lt_job *j = calloc(1, sizeof *j);
    lt_finish *f = malloc(sizeof *f + nd);
    if (!j || !f) abort(); /* test-only */
    j->d = *p->d;
    j->a = *p->a;
    j->b = *p->b;
    j->c = *p->c;
    j->dd = *p->dd;
    j->p = *p;
    j->p.d = &j->d;
    j->p.a = &j->a;
    j->p.b = &j->b;
    j->p.c = &j->c;
    j->p.dd = &j->dd;
    j->alpha = alpha;
    j->beta = beta;
    j->A = A;
    j->B = B;
    j->C = C;
    j->ws = ws;
    j->fin = f;
    f->D = D;
    f->ws = ws;
    f->nd = nd;
    f->ws_used = ws_used;
    fc_access acc[8];
    int n = 0;
    acc[n++] = (fc_access){(uintptr_t)A, extent(p->a), 0, "A"};
    acc[n++] = (fc_access){(uintptr_t)B, extent(p->b), 0, "B"};
    if (C && beta != 0.0) acc[n++] = (fc_access){(uintptr_t)C, extent(p->c), 0, "C"};
    if (p->has_bias)
        acc[n++] = (fc_access){(uintptr_t)p->d->bias,
                               (size_t)((p->batch - 1) * p->d->bias_stride + p->m) *
                                   type_size(p->bias_type),
                               0, "bias"};
    if (p->bgrad)
        acc[n++] = (fc_access){(uintptr_t)p->d->bias, bias_elems(p) * type_size(p->bias_type), 1, "bias gradient"};
    if (p->aux_out || p->dgelu)
        acc[n++] = (fc_access){(uintptr_t)p->d->aux, aux_elems(p) * type_size(p->dd->type), p->aux_out, "aux"};
    if (ws_used) acc[n++] = (fc_access){(uintptr_t)ws, ws_used, 1, "workspace"};
    tandem_fakecuda_submit(stream, "cublasLtMatmul (product into the workspace)", lt_run_compute,
                           j, acc, n);
    n = 0;
    if (ws_used) acc[n++] = (fc_access){(uintptr_t)ws, ws_used, 0, "workspace"};
    acc[n++] = (fc_access){(uintptr_t)D, nd, 1, "D"};
    tandem_fakecuda_submit(stream, "cublasLtMatmul (workspace into D)", lt_run_finish, f, acc, n);
}

/* Alignment of layout l's matrices from base p: the pointer's, and each batch item's. */
static uint64_t align_of(const void *p, const lt_layout *l) {
    uint64_t v = (uint64_t)(uintptr_t)p;
    if (l->batch > 1) v |= (uint64_t)l->stride * type_size(l->type);
    return v ? v & (~v + 1) : (uint64_t)1 << 20;
}

static cublasStatus_t check_alignment(const char *call, const cublasLtMatmulAlgo_t *algo, const lt_problem *p,
                                      const void *A, const void *B, const void *C, const void *D) {
    const void *ptr[4] = {A, B, C, D};
    const lt_layout *l[4] = {p->a, p->b, p->c, p->dd};
    static const char nm[4] = {'A', 'B', 'C', 'D'};
    for (int i = 0; i < 4; i++) {
        if (i == 2 && !C) continue;
        uint64_t have = align_of(ptr[i], l[i]), need = LT_ALGO_ALIGN(algo->data, i);
        if (have < need) {
            tandem_fakecuda_report(call, "%c at %p%s is %llu-byte aligned; the algorithm was chosen for "
                                   "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_%c_BYTES = %llu (default 256)",
                                   nm[i], ptr[i], l[i]->batch > 1 ? " (with its batch stride)" : "",
                                   (unsigned long long)have, nm[i], (unsigned long long)need);
            return CUBLAS_STATUS_NOT_SUPPORTED;
        }
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* The epilogue's pointers at the call. BIAS_POINTER: an "Output vector" for DGELU_BGRAD, BGRADA
 * (length D's rows) and BGRADB (D's columns); EPILOGUE_AUX_POINTER: the "Output of GELU input
 * matrix" for GELU_AUX*, its "Input" for DGELU*: NULL or outside device memory is
 * INVALID_VALUE; an aux pointer less aligned than the one the heuristic saw is NOT_SUPPORTED
 * (the algorithm may assume it, as for A-D). Lock held. */
static cublasStatus_t check_epilogue_pointers(const char *call, const lt_problem *p, const cublasLtMatmulAlgo_t *algo) {
    const lt_desc *d = p->d;
    /* The epilogue kernels load and store the bias (gradient) vector 16 bytes at a time, and no
     * preference attribute tells the heuristic otherwise: a less aligned bias (or batch stride)
     * faults with "misaligned address" on a GPU (PyTorch falls back to an unfused GEMM for it). */
    const uint64_t bv = (uint64_t)(uintptr_t)d->bias |
                        (p->batch > 1 ? (uint64_t)d->bias_stride * type_size(p->bias_type) : 0u);
    if ((p->has_bias || p->bgrad) && d->bias && (bv & 15u)) {
        tandem_fakecuda_report(call, "bias%s at %p (batch stride %lld elements) is not 16-byte aligned; cuBLASLt's "
                               "epilogue kernels access it in 16-byte vectors (a GPU faults: misaligned address)",
                               p->bgrad ? " gradient" : "", d->bias, (long long)d->bias_stride);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (p->bgrad && (!d->bias || tandem_fakecuda_check_device_range(call, "bias gradient", d->bias,
                                                                     bias_elems(p) * type_size(p->bias_type)))) {
        if (!d->bias) tandem_fakecuda_report(call, "epilogue %u writes a bias gradient: BIAS_POINTER is NULL", d->epilogue);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (!p->aux_out && !p->dgelu) return CUBLAS_STATUS_SUCCESS;
    if (!d->aux || tandem_fakecuda_check_device_range(call, "aux", d->aux, aux_elems(p) * type_size(p->dd->type))) {
        if (!d->aux) tandem_fakecuda_report(call, "epilogue %u: EPILOGUE_AUX_POINTER is NULL", d->epilogue);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    const uint64_t v = (uint64_t)(uintptr_t)d->aux | (p->batch > 1 ? (uint64_t)d->aux_stride * type_size(p->dd->type) : 0u);
    const uint64_t have = v & (~v + 1), need = algo ? algo->data[3] : 1;
    if (have < need) {
        tandem_fakecuda_report(call, "aux at %p is %llu-byte aligned; the algorithm was chosen with an aux pointer "
                               "%llu-byte aligned (cublasLtMatmulAlgoGetHeuristic reads its value)", d->aux,
                               (unsigned long long)have, (unsigned long long)need);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* Matmuls queued (under the driver's lock), for the cost model's test. */
static uint64_t lt_matmuls;
FC_EXPORT uint64_t tandem_fakecublaslt_matmuls(void) {
    tandem_fakecuda_lock();
    const uint64_t n = lt_matmuls;
    tandem_fakecuda_unlock();
    return n;
}

FC_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                        const void *alpha, const void *A,
                                        cublasLtMatrixLayout_t Adesc, const void *B,
                                        cublasLtMatrixLayout_t Bdesc, const void *beta,
                                        const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                                        cublasLtMatrixLayout_t Ddesc,
                                        const cublasLtMatmulAlgo_t *algo, void *workspace,
                                        size_t workspace_bytes, CUstream stream) {
    const char *call = "cublasLtMatmul";
    tandem_fakecuda_lock();
    lt_problem p;
    cublasStatus_t st = CUBLAS_STATUS_INVALID_VALUE;
    if (!lt_get(call, handle, LT_HANDLE)) {
        st = CUBLAS_STATUS_NOT_INITIALIZED;
        goto out;
    }
    if (get_problem(call, desc, Adesc, Bdesc, Cdesc, Ddesc, &p)) goto out;
    if ((st = check_problem(call, &p)) != CUBLAS_STATUS_SUCCESS) goto out;
    st = CUBLAS_STATUS_INVALID_VALUE;
    if (algo && algo->data[0] != LT_ALGO_MAGIC) {
        tandem_fakecuda_report(call, "algo was not returned by cublasLtMatmulAlgoGetHeuristic");
        goto out;
    }
    if (algo && (st = check_alignment(call, algo, &p, A, B, C, D)) != CUBLAS_STATUS_SUCCESS) goto out;
    st = CUBLAS_STATUS_INVALID_VALUE;
    if (!alpha || !beta || tandem_fakecuda_is_device_memory(alpha) ||
        tandem_fakecuda_is_device_memory(beta)) {
        tandem_fakecuda_report(call, "alpha %p / beta %p must be host pointers (pointer mode host)",
                               alpha, beta);
        goto out;
    }
    if (tandem_fakecuda_check_stream(call, stream)) {
        st = CUBLAS_STATUS_EXECUTION_FAILED;
        goto out;
    }
    float fa, fb;
    memcpy(&fa, alpha, 4);
    memcpy(&fb, beta, 4);
    size_t na = extent(p.a), nb = extent(p.b), nc = extent(p.c), nd = extent(p.dd);
    if (tandem_fakecuda_check_device_range(call, "A", A, na) ||
        tandem_fakecuda_check_device_range(call, "B", B, nb) ||
        tandem_fakecuda_check_device_range(call, "D", D, nd) ||
        ((C || fb != 0.0f) && tandem_fakecuda_check_device_range(call, "C", C, nc)))
        goto out;
    if (p.has_bias &&
        tandem_fakecuda_check_device_range(call, "bias", p.d->bias,
                                           (size_t)((p.batch - 1) * p.d->bias_stride + p.m) *
                                               type_size(p.bias_type)))
        goto out;
    if ((st = check_epilogue_pointers(call, &p, algo)) != CUBLAS_STATUS_SUCCESS) goto out;
    st = CUBLAS_STATUS_INVALID_VALUE;
    if (ranges_overlap(D, nd, A, na) || ranges_overlap(D, nd, B, nb)) {
        tandem_fakecuda_report(call, "D overlaps %s", ranges_overlap(D, nd, A, na) ? "A" : "B");
        goto out;
    }
    if (C && C != D && ranges_overlap(D, nd, C, nc)) {
        tandem_fakecuda_report(call, "C and D overlap without being the same matrix");
        goto out;
    }
    if (workspace_bytes &&
        tandem_fakecuda_check_device_range(call, "workspace", workspace, workspace_bytes))
        goto out;
    size_t ws_used = algo ? (size_t)algo->data[2] : 0;
    if (ws_used > workspace_bytes || (ws_used && !workspace)) {
        tandem_fakecuda_report(call, "the algorithm needs a workspace of %zu bytes, got %zu at %p",
                               ws_used, workspace_bytes, workspace);
        goto out;
    }
    lt_queue(&p, fa, fb, A, B, C, D, workspace, ws_used, stream);
    tandem_fakecuda_count_matmul(stream, p.tf32);
    lt_matmuls++;
    st = CUBLAS_STATUS_SUCCESS;
out:
    tandem_fakecuda_unlock();
    return st;
}
