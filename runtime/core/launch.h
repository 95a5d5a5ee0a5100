/* launch.h — the kernel launcher (internal): registry geometry + the stream's backend.
 *
 * tandem_launch looks the kernel up in the registry (kernels/registry.h), computes its launch
 * geometry from the argument struct, and hands both to the backend of the stream's device
 * (host: runs the host implementation; cuda: cuLaunchKernel of the fatbin entry).
 * Owns nothing.
 */
#ifndef TANDEM_RUNTIME_LAUNCH_H
#define TANDEM_RUNTIME_LAUNCH_H

#include <stddef.h>

#include "platform/device.h"
#include "kernels/registry.h"

/* args points at a tandem_k_<name>_args of exactly args_size bytes. An unknown id or a size
 * that differs from the registry's → TANDEM_E_INVALID naming the kernel. */
tandem_status tandem_launch(tandem_stream *s, tandem_kernel_id id, const void *args,
                            size_t args_size);

/* Typed form: TANDEM_LAUNCH(s, fill_f32, &args) checks at compile time that args is a
 * tandem_k_fill_f32_args (a mismatched pointer does not convert silently). */
#define TANDEM_LAUNCH(s, name, args_ptr)                                                  \
    tandem_launch((s), TANDEM_KID_##name,                                                 \
                  (const tandem_k_##name##_args *)(1 ? (args_ptr) : (tandem_k_##name##_args *)0), \
                  sizeof(tandem_k_##name##_args))

#endif
