/* emu_kernels.c — the registered kernels as the emulator sees them: one trampoline per
 * TANDEM_KERNEL_LIST entry that calls tandem_k_<name> with its argument struct by value. */
#include <string.h>

#include "test/emu/emu_rt.h"
#include "kernels/registry.h"

/* The kernels themselves: kernels/<group>.cu compiled as C with -DTANDEM_EMU. */
#define EMU_KDECL(name, group) void tandem_k_##name(tandem_k_##name##_args a);
TANDEM_KERNEL_LIST(EMU_KDECL)
#undef EMU_KDECL

/* memcpy: the caller's bytes need not be aligned for the struct (cuLaunchKernel params). */
#define EMU_TRAMP(name, group)                                                            \
    static void tramp_##name(const void *args) {                                          \
        tandem_k_##name##_args a;                                                         \
        memcpy(&a, args, sizeof a);                                                       \
        tandem_k_##name(a);                                                               \
    }
TANDEM_KERNEL_LIST(EMU_TRAMP)
#undef EMU_TRAMP

const tandem_emu_kernel tandem_emu_kernels[TANDEM_KERNEL_COUNT] = {
#define EMU_ROW(name, group) {"tandem_k_" #name, tramp_##name, sizeof(tandem_k_##name##_args)},
    TANDEM_KERNEL_LIST(EMU_ROW)
#undef EMU_ROW
};
const int tandem_emu_kernel_count = TANDEM_KERNEL_COUNT;

int tandem_emu_kernel_lookup(const char *entry) {
    if (!entry) return -1;
    for (int i = 0; i < TANDEM_KERNEL_COUNT; i++)
        if (strcmp(tandem_emu_kernels[i].entry, entry) == 0) return i;
    return -1;
}

/* ---- launching registered kernels ---- */

int tandem_emu_launch(int kernel_id, const tandem_launch_dims *d, const void *args, size_t args_size) {
    if (kernel_id < 0 || kernel_id >= tandem_emu_kernel_count)
        return tandem_emu_launch_error("launch: kernel id %d is not in the registry (0..%d)", kernel_id,
                            tandem_emu_kernel_count - 1);
    const tandem_emu_kernel *k = &tandem_emu_kernels[kernel_id];
    if (!args || args_size != k->args_size)
        return tandem_emu_launch_error("kernel %s: argument struct of %zu bytes%s, expected %zu", k->entry,
                            args_size, args ? "" : " at NULL", k->args_size);
    return tandem_emu_launch_fn(k->entry, k->tramp, d, args);
}

int tandem_emu_launch_by_name(const char *entry, const tandem_launch_dims *d, void **params) {
    int id = tandem_emu_kernel_lookup(entry);
    if (id < 0) return tandem_emu_launch_error("launch: no emulated kernel named '%s'", entry ? entry : "(null)");
    const tandem_emu_kernel *k = &tandem_emu_kernels[id];
    if (!params || !params[0])
        return tandem_emu_launch_error("kernel %s: launch: the kernel takes one parameter (its %zu-byte "
                            "argument struct) but params%s is NULL",
                            k->entry, k->args_size, params ? "[0]" : "");
    return tandem_emu_launch_fn(k->entry, k->tramp, d, params[0]);
}
