/* test_cuda_api.c — platform/cuda/cuda_api.h (the project's own declarations) against the CUDA
 * toolkit's headers, when those are installed ($CUDA_HOME/include or /usr/local/cuda/include;
 * skipped otherwise). The two cannot be included in one translation unit (same names), so the
 * toolkit headers are read as text: for every enum value and flag the project declares, the
 * toolkit's `NAME = expr` (or `#define NAME expr`) is found and evaluated (integer literals,
 * other names, `|`), and must equal the project's value. Struct sizes the project relies on are
 * checked against the sizes the real header documents. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "platform/cuda/cuda_api.h"
#include "test/fixtures.h"

static char *g_text; /* all toolkit headers concatenated */

static int is_ident(int c) { return isalnum(c) || c == '_'; }

/* Start of the expression defining `name`, or NULL. */
static const char *find_definition(const char *name) {
    size_t len = strlen(name);
    for (const char *p = strstr(g_text, name); p; p = strstr(p + 1, name)) {
        if (p > g_text && is_ident((unsigned char)p[-1])) continue;
        if (is_ident((unsigned char)p[len])) continue;
        const char *q = p + len;
        int spaced = *q == ' ' || *q == '\t';
        while (*q == ' ' || *q == '\t') q++;
        if (q[0] == '=' && q[1] != '=') return q + 1;
        /* #define NAME value */
        const char *line = p;
        while (line > g_text && line[-1] != '\n') line--;
        while (*line == ' ' || *line == '\t') line++;
        if (strncmp(line, "#define", 7) == 0 && spaced && p - line < 16) return q;
    }
    return NULL;
}

/* Evaluate `A | B | 0x10 | (C) | 1 << 3` up to ',', '}', newline or a comment. 0 on success. */
static int eval_name(const char *name, long long *out, int depth);
static int eval_term(const char **pe, long long *out, int depth) {
    const char *e = *pe;
    while (*e == ' ' || *e == '\t' || *e == '(') e++;
    if (isdigit((unsigned char)*e) || *e == '-') {
        char *end;
        *out = strtoll(e, &end, 0);
        while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L') end++;
        e = end;
    } else if (is_ident((unsigned char)*e)) {
        char id[128];
        size_t n = 0;
        while (is_ident((unsigned char)*e) && n + 1 < sizeof id) id[n++] = *e++;
        id[n] = '\0';
        if (eval_name(id, out, depth + 1) != 0) return -1;
    } else {
        return -1; /* an operator this evaluator does not know */
    }
    while (*e == ' ' || *e == '\t' || *e == ')') e++;
    if (e[0] == '<' && e[1] == '<') {
        e += 2;
        long long sh;
        if (eval_term(&e, &sh, depth) != 0 || sh < 0 || sh > 62) return -1;
        *out <<= sh;
    }
    *pe = e;
    return 0;
}
static int eval_expr(const char *e, long long *out, int depth) {
    long long v = 0;
    int terms = 0;
    for (;;) {
        while (*e == ' ' || *e == '\t' || *e == '(' || *e == ')') e++;
        if (*e == '\0' || *e == ',' || *e == '}' || *e == '\n' || *e == '\r' || (e[0] == '/' && (e[1] == '*' || e[1] == '/')))
            break;
        if (*e == '|') {
            e++;
            continue;
        }
        long long t;
        if (eval_term(&e, &t, depth) != 0) return -1;
        v |= t;
        terms++;
    }
    if (terms == 0) return -1;
    *out = v;
    return 0;
}

static int eval_name(const char *name, long long *out, int depth) {
    if (depth > 8) return -1;
    const char *e = find_definition(name);
    return e ? eval_expr(e, out, depth) : -1;
}

static int group_setup(void **state) {
    (void)state;
    const char *home = getenv("CUDA_HOME");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/include", home && home[0] ? home : "/usr/local/cuda");
    static const char *files[] = {"cuda.h", "cublasLt.h", "cublas_api.h", "library_types.h"};
    size_t total = 0;
    char *parts[4];
    for (int i = 0; i < 4; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        parts[i] = tandem_test_read_file(path, NULL);
        if (!parts[i]) {
            printf("test_cuda_api: %s not found: the CUDA toolkit headers are absent, comparison skipped\n", path);
            for (int j = 0; j < i; j++) free(parts[j]);
            return 0;
        }
        total += strlen(parts[i]) + 1;
    }
    g_text = malloc(total + 1);
    g_text[0] = '\0';
    for (int i = 0; i < 4; i++) {
        strcat(g_text, parts[i]);
        strcat(g_text, "\n");
        free(parts[i]);
    }
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    free(g_text);
    return 0;
}

#define V(name) {#name, (long long)(name)}
static const struct {
    const char *name;
    long long value;
} values[] = {
    V(CUDA_SUCCESS), V(CUDA_ERROR_INVALID_VALUE), V(CUDA_ERROR_OUT_OF_MEMORY), V(CUDA_ERROR_NOT_INITIALIZED),
    V(CUDA_ERROR_DEINITIALIZED), V(CUDA_ERROR_STUB_LIBRARY), V(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER),
    V(CUDA_ERROR_DEVICE_UNAVAILABLE), V(CUDA_ERROR_NO_DEVICE), V(CUDA_ERROR_INVALID_DEVICE),
    V(CUDA_ERROR_INVALID_IMAGE), V(CUDA_ERROR_INVALID_CONTEXT), V(CUDA_ERROR_NO_BINARY_FOR_GPU),
    V(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED), V(CUDA_ERROR_INVALID_PTX), V(CUDA_ERROR_UNSUPPORTED_PTX_VERSION),
    V(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED), V(CUDA_ERROR_INVALID_HANDLE), V(CUDA_ERROR_NOT_FOUND),
    V(CUDA_ERROR_NOT_READY), V(CUDA_ERROR_ILLEGAL_ADDRESS), V(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES),
    V(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED), V(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED),
    V(CUDA_ERROR_CONTEXT_IS_DESTROYED), V(CUDA_ERROR_LAUNCH_FAILED), V(CUDA_ERROR_NOT_PERMITTED),
    V(CUDA_ERROR_NOT_SUPPORTED), V(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH), V(CUDA_ERROR_UNKNOWN),
    V(CUDA_ERROR_ILLEGAL_STATE), V(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), V(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
    V(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED), V(CUDA_ERROR_STREAM_CAPTURE_UNJOINED),
    V(CUDA_ERROR_STREAM_CAPTURE_ISOLATION),
    V(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT), V(CUDA_ERROR_CAPTURED_EVENT),
    V(CU_STREAM_CAPTURE_MODE_GLOBAL), V(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
    V(CU_STREAM_CAPTURE_MODE_RELAXED), V(CU_STREAM_CAPTURE_STATUS_NONE),
    V(CU_STREAM_CAPTURE_STATUS_ACTIVE), V(CU_STREAM_CAPTURE_STATUS_INVALIDATED),
    V(CU_EVENT_RECORD_EXTERNAL), V(CU_EVENT_WAIT_EXTERNAL),
    V(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK), V(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
    V(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y), V(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z),
    V(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X), V(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
    V(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z), V(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
    V(CU_DEVICE_ATTRIBUTE_WARP_SIZE), V(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
    V(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID), V(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID), V(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
    V(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING), V(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
    V(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR), V(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
    V(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), V(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), V(CU_FUNC_ATTRIBUTE_NUM_REGS),
    V(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
    V(CU_GET_PROC_ADDRESS_DEFAULT), V(CU_GET_PROC_ADDRESS_LEGACY_STREAM),
    V(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), V(CU_GET_PROC_ADDRESS_SUCCESS),
    V(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND), V(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT),
    V(CU_STREAM_DEFAULT), V(CU_STREAM_NON_BLOCKING), V(CU_EVENT_DEFAULT), V(CU_EVENT_BLOCKING_SYNC),
    V(CU_EVENT_DISABLE_TIMING), V(CU_MEMHOSTALLOC_PORTABLE), V(CU_MEMHOSTALLOC_DEVICEMAP),
    V(CU_MEMHOSTALLOC_WRITECOMBINED),
    V(CUBLAS_STATUS_SUCCESS), V(CUBLAS_STATUS_NOT_INITIALIZED), V(CUBLAS_STATUS_ALLOC_FAILED),
    V(CUBLAS_STATUS_INVALID_VALUE), V(CUBLAS_STATUS_ARCH_MISMATCH), V(CUBLAS_STATUS_MAPPING_ERROR),
    V(CUBLAS_STATUS_EXECUTION_FAILED), V(CUBLAS_STATUS_INTERNAL_ERROR), V(CUBLAS_STATUS_NOT_SUPPORTED),
    V(CUBLAS_STATUS_LICENSE_ERROR), V(CUDA_R_32F), V(CUDA_R_64F), V(CUDA_R_16F), V(CUDA_R_32I), V(CUDA_R_16BF),
    V(CUBLAS_COMPUTE_32F), V(CUBLAS_COMPUTE_32F_PEDANTIC), V(CUBLAS_COMPUTE_32F_FAST_16BF),
    V(CUBLAS_COMPUTE_32F_FAST_TF32), V(CUBLAS_OP_N), V(CUBLAS_OP_T), V(CUBLAS_OP_C),
    V(CUBLASLT_POINTER_MODE_HOST), V(CUBLASLT_POINTER_MODE_DEVICE), V(CUBLASLT_ORDER_COL), V(CUBLASLT_ORDER_ROW),
    V(CUBLASLT_MATRIX_LAYOUT_TYPE), V(CUBLASLT_MATRIX_LAYOUT_ORDER), V(CUBLASLT_MATRIX_LAYOUT_ROWS),
    V(CUBLASLT_MATRIX_LAYOUT_COLS), V(CUBLASLT_MATRIX_LAYOUT_LD), V(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT),
    V(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET), V(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE),
    V(CUBLASLT_MATMUL_DESC_SCALE_TYPE), V(CUBLASLT_MATMUL_DESC_POINTER_MODE), V(CUBLASLT_MATMUL_DESC_TRANSA),
    V(CUBLASLT_MATMUL_DESC_TRANSB), V(CUBLASLT_MATMUL_DESC_TRANSC), V(CUBLASLT_MATMUL_DESC_EPILOGUE),
    V(CUBLASLT_MATMUL_DESC_BIAS_POINTER), V(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE),
    V(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER), V(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD),
    V(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE), V(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE),
    V(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE),
    V(CUBLASLT_EPILOGUE_DEFAULT), V(CUBLASLT_EPILOGUE_RELU), V(CUBLASLT_EPILOGUE_BIAS),
    V(CUBLASLT_EPILOGUE_RELU_BIAS), V(CUBLASLT_EPILOGUE_GELU), V(CUBLASLT_EPILOGUE_GELU_AUX),
    V(CUBLASLT_EPILOGUE_GELU_BIAS), V(CUBLASLT_EPILOGUE_GELU_AUX_BIAS), V(CUBLASLT_EPILOGUE_DGELU),
    V(CUBLASLT_EPILOGUE_DGELU_BGRAD), V(CUBLASLT_EPILOGUE_BGRADA), V(CUBLASLT_EPILOGUE_BGRADB),
    V(CUBLASLT_MATMUL_PREF_SEARCH_MODE), V(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES), V(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES),
    V(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES), V(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES),
    V(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES), V(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK),
    V(CUBLASLT_REDUCTION_SCHEME_NONE), V(CUBLASLT_REDUCTION_SCHEME_INPLACE), V(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE),
    V(CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE), V(CUBLASLT_REDUCTION_SCHEME_MASK),
};

static void test_values_match_toolkit(void **state) {
    (void)state;
    if (!g_text) skip();
    int checked = 0;
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        long long real;
        if (eval_name(values[i].name, &real, 0) != 0) fail_msg("%s: no evaluable definition in the toolkit headers", values[i].name);
        if (real != values[i].value)
            fail_msg("%s: cuda_api.h says %lld, the toolkit %lld", values[i].name, values[i].value, real);
        checked++;
    }
    printf("%d values equal to the toolkit's\n", checked);
}

/* The evaluator itself: a value it must reject and one it must compute. */
static void test_evaluator(void **state) {
    (void)state;
    if (!g_text) skip();
    long long v;
    assert_int_not_equal(eval_name("TANDEM_NO_SUCH_NAME_ANYWHERE", &v, 0), 0);
    assert_int_equal(eval_expr("(4 | 0x10 | 128), ", &v, 0), 0);
    assert_int_equal(v, 148);
    assert_int_equal(eval_expr("1 << 3 | 1, ", &v, 0), 0);
    assert_int_equal(v, 9);
    assert_int_not_equal(eval_expr("4 + 1,", &v, 0), 0);
}

/* Layouts the backend passes by value or as arrays (cublasLt.h documents them as uint64_t
 * arrays; the heuristic result holds an algo, a size_t, a status, a float and int[4]). */
static void test_layouts(void **state) {
    (void)state;
    assert_int_equal(sizeof(cublasLtMatmulAlgo_t), 64);
    assert_int_equal(sizeof(cublasLtMatrixLayoutOpaque_t), 64);
    assert_int_equal(sizeof(cublasLtMatmulDescOpaque_t), 256);
    assert_int_equal(sizeof(cublasLtMatmulPreferenceOpaque_t), 64);
    assert_int_equal(offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize), 64);
    assert_int_equal(offsetof(cublasLtMatmulHeuristicResult_t, state), 72);
    assert_int_equal(offsetof(cublasLtMatmulHeuristicResult_t, wavesCount), 76);
    assert_int_equal(sizeof(cublasLtMatmulHeuristicResult_t), 96);
    assert_int_equal(sizeof(CUdeviceptr), 8);
    assert_int_equal(sizeof(CUresult), sizeof(int));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_match_toolkit),
        cmocka_unit_test(test_evaluator),
        cmocka_unit_test(test_layouts),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
