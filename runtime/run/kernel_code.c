/* kernel_code.c — lookups in the kernel code table (kernel_code.h), which the build generates. */
#include "runtime/run/kernel_code.h"

#include <string.h>

/* build/gen/kernel_code_table.c (tools/kernel_code_c.awk) */
extern const tandem_kernel_code tandem_kernel_code_table[];
extern const int tandem_kernel_code_rows;
extern const char tandem_kernel_code_from[];

const tandem_kernel_code *tandem_kernel_code_find(int arch, const char *kernel) {
    for (int i = 0; kernel && i < tandem_kernel_code_rows; i++)
        if (tandem_kernel_code_table[i].arch == arch && strcmp(tandem_kernel_code_table[i].kernel, kernel) == 0)
            return &tandem_kernel_code_table[i];
    return NULL;
}

const char *tandem_kernel_code_source(void) { return tandem_kernel_code_from; }
