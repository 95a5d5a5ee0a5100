/* emu_internal.h — emulator entry points for test code and the stand-in driver that are not
 * part of emu.h: launching kernels that are not in the registry (the emulator's own planted
 * test kernels), the kernel trampoline table, and the shared-memory limit. Test-only. */
#ifndef TANDEM_TEST_EMU_INTERNAL_H
#define TANDEM_TEST_EMU_INTERNAL_H

#include <stddef.h>

#include "test/emu/emu.h"

/* Calls the kernel with its argument struct: `kernel(*(const args_type *)args)`. */
typedef void (*tandem_emu_tramp)(const void *args);

/* One emulated kernel: fatbin entry name, trampoline, sizeof its argument struct. */
typedef struct tandem_emu_kernel {
    const char *entry; /* "tandem_k_fill_f32" */
    tandem_emu_tramp tramp;
    size_t args_size;
} tandem_emu_kernel;

/* Every registered kernel, indexed by tandem_kernel_id (expanded from TANDEM_KERNEL_LIST). */
extern const tandem_emu_kernel tandem_emu_kernels[];
extern const int tandem_emu_kernel_count;
/* Index into tandem_emu_kernels by entry name ("tandem_k_fill_f32"); -1 if unknown. */
int tandem_emu_kernel_lookup(const char *entry);

/* Launch any kernel through its trampoline; `name` is used in error messages. Same checks
 * and return convention as tandem_emu_launch. */
int tandem_emu_launch_fn(const char *name, tandem_emu_tramp tramp, const tandem_launch_dims *d,
                         const void *args);

/* Largest dynamic shared memory a launch may request (default 48 KiB, like CUDA without
 * cudaFuncAttributeMaxDynamicSharedMemorySize); at most 227 KiB. */
void tandem_emu_set_shmem_limit(unsigned bytes);

/* Fiber stack size of one emulated CUDA thread, in bytes (informational). */
size_t tandem_emu_stack_size(void);

#endif
