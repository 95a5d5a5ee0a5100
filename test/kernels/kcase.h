/* kcase.h — how each registered kernel is exercised by the registry-enumerating test.
 *
 * For every X(name, group) in TANDEM_KERNEL_LIST there must be a
 *     const tandem_kcase_spec tandem_kcase_<name>;
 * (test/kernels/cases_<group>.c), or the kernel test does not link. The test, per size index:
 * make() picks shapes with the rng and declares buffers; the runner allocates every buffer
 * twice (plain host memory for the host implementation, guarded emulator memory for the
 * kernel), fills inputs with identical random values, poisons outputs with NaN, calls bind()
 * to build the argument struct for each copy, runs host impl and emulated kernel, and compares
 * every OUT/INOUT buffer with the normalised error ||a-b||^2/||b||^2 <= tol. NaN never passes;
 * an OUT element left unwritten (still NaN) fails.
 */
#ifndef TANDEM_TEST_KCASE_H
#define TANDEM_TEST_KCASE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/registry.h"
#include "tandem.h"
#include "test/testutil.h"

typedef enum { TANDEM_KB_IN, TANDEM_KB_OUT, TANDEM_KB_INOUT } tandem_kb_role;

#define TANDEM_KCASE_MAX_BUFS 8

typedef struct tandem_kcase_buf {
    const char *name;
    tandem_dtype dtype;   /* F32, BF16, I32, or U8 (inputs only) */
    int64_t count;        /* elements */
    tandem_kb_role role;
    float lo, hi;         /* uniform range of random inputs (IN, INOUT) */
} tandem_kcase_buf;

typedef struct tandem_kcase {
    char desc[128];       /* shape description printed with the result, e.g. "n=1000" */
    int nbufs;
    tandem_kcase_buf bufs[TANDEM_KCASE_MAX_BUFS];
    double tol;           /* normalised error threshold */
    int64_t i[8];         /* shape parameters chosen by make() for bind() */
    float f[8];           /* scalar parameters chosen by make() */
} tandem_kcase;

typedef struct tandem_kcase_spec {
    int nsizes;           /* size variants: include non-multiples of the block size and the largest */
    void (*make)(int size_idx, tandem_rng *rng, tandem_kcase *c);
    /* bufs[j] points at buffer j of this copy; write the args struct into args. */
    void (*bind)(const tandem_kcase *c, void *const *bufs, void *args);
} tandem_kcase_spec;

/* Declare buffer j of a case (buffers are declared in order: nbufs becomes j + 1). */
static inline void tandem_kcase_set_buf(tandem_kcase *c, int j, const char *name, tandem_dtype dt,
                                        int64_t count, tandem_kb_role role, float lo, float hi) {
    tandem_kcase_buf *b = &c->bufs[j];
    b->name = name;
    b->dtype = dt;
    b->count = count;
    b->role = role;
    b->lo = lo;
    b->hi = hi;
    c->nbufs = j + 1;
}

/* Kernels with an f32 and an optional bf16 output (tandem_k_store2): which ones a size
 * writes, by its index: the f32 one (the fp32 model), the bf16 one only (a GEMM operand), both. */
enum { TANDEM_KCASE_OUT_F32, TANDEM_KCASE_OUT_BF16, TANDEM_KCASE_OUT_BOTH };

/* Declares the outputs of `mode` from buffer j on, count elements each; returns the next j. */
static inline int tandem_kcase_out2(tandem_kcase *c, int j, const char *name, const char *name16,
                                    int64_t count, int mode) {
    if (mode != TANDEM_KCASE_OUT_BF16) tandem_kcase_set_buf(c, j++, name, TANDEM_F32, count, TANDEM_KB_OUT, 0, 0);
    if (mode != TANDEM_KCASE_OUT_F32) tandem_kcase_set_buf(c, j++, name16, TANDEM_BF16, count, TANDEM_KB_OUT, 0, 0);
    return j;
}
/* Those outputs' pointers from buffer j on (NULL where the mode has none); returns the next j. */
static inline int tandem_kcase_bind2(void *const *bufs, int j, int mode, float **y, tandem_bf16 **y16) {
    *y = mode != TANDEM_KCASE_OUT_BF16 ? (float *)bufs[j++] : NULL;
    *y16 = mode != TANDEM_KCASE_OUT_F32 ? (tandem_bf16 *)bufs[j++] : NULL;
    return j;
}
/* " bf16" / " +bf16" appended to the case's description for those modes. */
static inline void tandem_kcase_desc2(tandem_kcase *c, int mode) {
    static const char *const tag[] = {"", " bf16", " +bf16"};
    size_t at = strlen(c->desc);
    snprintf(c->desc + at, sizeof c->desc - at, "%s", tag[mode]);
}

/* Bytes per element of a case buffer's dtype; 0 for a dtype cases do not use. */
static inline size_t tandem_kcase_dtype_bytes(tandem_dtype dt) {
    switch (dt) {
    case TANDEM_F32: return 4;
    case TANDEM_BF16: return 2;
    case TANDEM_I32: return 4;
    case TANDEM_U8: return 1; /* masks; inputs only (an unwritten u8 output is not detectable) */
    default: return 0;
    }
}

/* Random inputs for buffer b (p holds b->count elements): floats uniform in [lo, hi), integers
 * uniform over the integers in [lo, hi], drawn in index order. */
static inline void tandem_kcase_fill_random(void *p, const tandem_kcase_buf *b, tandem_rng *rng) {
    const int integral = b->dtype != TANDEM_F32 && b->dtype != TANDEM_BF16;
    const int64_t ilo = integral ? (int64_t)ceilf(b->lo) : 0, ihi = integral ? (int64_t)floorf(b->hi) : 0;
    for (int64_t i = 0; i < b->count; i++) {
        switch (b->dtype) {
        case TANDEM_F32: ((float *)p)[i] = tandem_rng_uniform(rng, b->lo, b->hi); break;
        case TANDEM_BF16: ((tandem_bf16 *)p)[i] = tandem_f32_to_bf16(tandem_rng_uniform(rng, b->lo, b->hi)); break;
        case TANDEM_U8: ((uint8_t *)p)[i] = (uint8_t)tandem_rng_int(rng, ilo, ihi); break;
        default: ((int32_t *)p)[i] = (int32_t)tandem_rng_int(rng, ilo, ihi); break;
        }
    }
}

#define TANDEM_KCASE_DECL(name, group) extern const tandem_kcase_spec tandem_kcase_##name;
TANDEM_KERNEL_LIST(TANDEM_KCASE_DECL)
#undef TANDEM_KCASE_DECL

#endif
