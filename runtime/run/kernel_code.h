/* kernel_code.h — what the compiled code of each fatbin kernel looks like, for the step cost model
 * (cost.h): per architecture and kernel, its registers, static shared memory and stack (which set
 * how many of its warps an SM holds) and the instruction mix of its innermost loops, its steady
 * state. Read from the build's fatbin with cuobjdump at build time (tools/sass_table.sh) into
 * build/gen/kernel_code_table.c; a build without cuobjdump takes the committed
 * runtime/run/kernel_code.tsv, generated the same way (`make kernel-code-table` refreshes it). */
#ifndef TANDEM_RUNTIME_RUN_KERNEL_CODE_H
#define TANDEM_RUNTIME_RUN_KERNEL_CODE_H

typedef struct tandem_kernel_code {
    int arch;            /* 80, 89, 90 (sm_XX) */
    const char *kernel;  /* the registry's name, "softmax_causal_fwd" */
    int regs;            /* registers per thread */
    int shared;          /* static shared memory per block, bytes (sm_90: with its 1 KB reserve) */
    int stack;           /* bytes per thread */
    int instrs;          /* SASS instructions of the whole kernel, NOPs left out */
    /* One pass of the innermost loops (the whole kernel when it has none), per warp: */
    int loop_instrs;     /* instructions issued */
    int loops;           /* innermost loops found */
    int ldg_bytes;       /* global memory loaded per lane */
    int stg_bytes;       /* global memory stored per lane */
    int lds, sts, ldsm;  /* shared-memory loads, stores, ldmatrix */
    double hmma_flops;   /* tensor-core (mma.sync) FLOPs */
    int ffma;            /* f32 fused multiply-adds */
    int fadd_fmul;       /* f32 adds and multiplies */
    int mufu;            /* special-function instructions (exp, rcp, ...) */
    int bar;             /* block barriers */
} tandem_kernel_code;

/* The built table's row for kernel on sm_<arch>; NULL when the table has none (a kernel added
 * since runtime/run/kernel_code.tsv was generated, on a build without cuobjdump). */
const tandem_kernel_code *tandem_kernel_code_find(int arch, const char *kernel);
/* Where the built table came from: "the fatbin (cuobjdump)" or "runtime/run/kernel_code.tsv". */
const char *tandem_kernel_code_source(void);

#endif
