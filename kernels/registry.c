/* registry.c — the kernel table, expanded from TANDEM_KERNEL_LIST. */
#include "kernels/registry.h"

#include <string.h>

#define TANDEM_KWRAP(name, group)                                                         \
    static void geom_##name(const void *a, tandem_launch_dims *d) {                       \
        tandem_k_##name##_geom((const tandem_k_##name##_args *)a, d);                     \
    }                                                                                     \
    static void host_##name(const void *a) { tandem_k_##name##_host((const tandem_k_##name##_args *)a); } \
    static void cost_##name(const void *a, tandem_kernel_cost *c) {                       \
        memset(c, 0, sizeof *c);                                                          \
        tandem_k_##name##_cost((const tandem_k_##name##_args *)a, c);                     \
    }
TANDEM_KERNEL_LIST(TANDEM_KWRAP)
#undef TANDEM_KWRAP

const tandem_kernel_info tandem_kernel_table[TANDEM_KERNEL_COUNT] = {
#define TANDEM_KROW(name, group)                                                          \
    {#name, "tandem_k_" #name, #group, sizeof(tandem_k_##name##_args), geom_##name, host_##name,  \
     cost_##name},
    TANDEM_KERNEL_LIST(TANDEM_KROW)
#undef TANDEM_KROW
};

int tandem_kernel_find(const char *name) {
    if (!name) return -1;
    if (strncmp(name, "tandem_k_", 9) == 0) name += 9;
    for (int i = 0; i < TANDEM_KERNEL_COUNT; i++)
        if (strcmp(tandem_kernel_table[i].name, name) == 0) return i;
    return -1;
}
