/* kernel_code.c — the kernel code table (kernel_code.h), generated at build time. */
#include "runtime/run/kernel_code.h"

#include <string.h>

/* rows {arch, "kernel", regs, shared, stack, instrs, loop_instrs, loops, ldg, stg, lds, sts, ldsm,
 * hmma_flops, ffma, fadd_fmul, mufu, bar} and TANDEM_KERNEL_CODE_SOURCE (tools/kernel_code_c.awk) */
#include "kernel_code.inc"

static const tandem_kernel_code table[] = {TANDEM_KERNEL_CODE_ROWS};

const tandem_kernel_code *tandem_kernel_code_find(int arch, const char *kernel) {
    for (size_t i = 0; kernel && i < sizeof table / sizeof table[0]; i++)
        if (table[i].arch == arch && strcmp(table[i].kernel, kernel) == 0) return &table[i];
    return NULL;
}

const char *tandem_kernel_code_source(void) { return TANDEM_KERNEL_CODE_SOURCE; }
