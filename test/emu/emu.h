/* emu.h — the kernel emulator's API (test-only; never part of libtandem.a).
 *
 * Runs kernels compiled from kernels/NAME.cu with -DTANDEM_EMU on the CPU with CUDA semantics.
 * Emulated device memory comes from tandem_emu_buf_alloc: each buffer has guard zones, and
 * every launch checks that no thread touched memory outside the buffers it could reach.
 */
#ifndef TANDEM_TEST_EMU_H
#define TANDEM_TEST_EMU_H

#include <stddef.h>

#include "kernels/ktypes.h"

/* A guarded buffer; contents start poisoned (0xFF bytes: NaN as f32, -1 as i32). */
void *tandem_emu_buf_alloc(size_t bytes);
void tandem_emu_buf_free(void *p);
/* Size of the buffer that contains p (0 if p lies in none) and its base. */
size_t tandem_emu_buf_find(const void *p, void **base);

/* Launch registered kernel `kernel_id` (kernels/registry.h). Returns 0 on success; otherwise
 * nonzero and tandem_emu_last_error() names the kernel, block and thread and what went wrong
 * (out-of-bounds access, divergent barrier, bad shuffle mask, shared memory overrun, limits). */
int tandem_emu_launch(int kernel_id, const tandem_launch_dims *d, const void *args, size_t args_size);
/* Same, by fatbin entry name ("tandem_k_fill_f32"), with cuLaunchKernel-style parameters. */
int tandem_emu_launch_by_name(const char *entry, const tandem_launch_dims *d, void **params);
const char *tandem_emu_last_error(void);

/* Worker OS threads running blocks concurrently (default 1; TANDEM_EMU_THREADS overrides). */
void tandem_emu_set_threads(int n);

#endif
