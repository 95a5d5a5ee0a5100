/* launch.h — kernel launches: TANDEM_LAUNCH (the compile-time-typed form of tandem_launch,
 * runtime/core/dev.h) and the typed launchers of the basic kernels (kernels/basic.h), the one
 * place each of their argument structs is filled. The model's launchers are in
 * runtime/model/launchers.h, the feature kernels' in runtime/audio/mel_device.c.
 *
 * A typed launcher takes device pointers (tandem_tensor_f32 and friends, dev.h) and sizes, and
 * queues the kernel on s; shapes are in the comments. It checks nothing the caller has not:
 * the ops of tandem.h check their tensors first. Owns nothing; allocates nothing.
 */
#ifndef TANDEM_RUNTIME_LAUNCH_H
#define TANDEM_RUNTIME_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "runtime/core/dev.h"

/* TANDEM_LAUNCH(s, fill_f32, &args) checks at compile time that args is a
 * tandem_k_fill_f32_args (a mismatched pointer does not convert silently). */
#define TANDEM_LAUNCH(s, name, args_ptr)                                                  \
    tandem_launch((s), TANDEM_KID_##name,                                                 \
                  (const tandem_k_##name##_args *)(1 ? (args_ptr) : (tandem_k_##name##_args *)0), \
                  sizeof(tandem_k_##name##_args))

/* Declares `var`, the kernel's argument struct, zeroed padding included: the stand-in driver
 * reads every word of it (test/fakecuda), and a stale stack value must not look like a pointer. */
#define TANDEM_KARGS(name, var)                                                           \
    tandem_k_##name##_args var;                                                           \
    memset(&var, 0, sizeof var)

/* out [n] = value */
tandem_status tandem_fill_f32(tandem_stream *s, float *out, int64_t n, float value);
/* x [n] *= alpha */
tandem_status tandem_scale_f32(tandem_stream *s, float *x, int64_t n, float alpha);
/* y [n] += alpha * x [n]; y16 (or NULL): bf16 of the new y too (a GEMM operand, no cast after) */
tandem_status tandem_axpy_f32(tandem_stream *s, float alpha, const float *x, float *y,
                              tandem_bf16 *y16, int64_t n);
/* out [n] = bf16(in [n]), round to nearest even */
tandem_status tandem_cast_f32_bf16(tandem_stream *s, const float *in, tandem_bf16 *out, int64_t n);
/* out [n] = f32(in [n]) */
tandem_status tandem_cast_bf16_f32(tandem_stream *s, const tandem_bf16 *in, float *out, int64_t n);
/* out [rows] = sum over c of x [rows, cols] */
tandem_status tandem_row_sum_f32(tandem_stream *s, const float *x, float *out, int rows, int cols);

#endif
