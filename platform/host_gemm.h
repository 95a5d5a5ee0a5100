/* host_gemm.h — the host backend's f32 GEMM (row-major, tandem.h semantics).
 *
 * tandem_host_gemm uses CBLAS (OpenBLAS) when built with TANDEM_HAVE_CBLAS (HOST_BLAS=openblas),
 * else the built-in cache-blocked GEMM, which is always compiled and exported as
 * tandem_host_gemm_blocked so tests cover it in every build. Neither allocates (the blocked
 * one packs into a fixed buffer on the stack), so both may run after a pool is committed.
 * C must not overlap A or B. beta == 0 never reads C (it may hold anything, even NaN).
 */
#ifndef TANDEM_PLATFORM_HOST_GEMM_H
#define TANDEM_PLATFORM_HOST_GEMM_H

#include "device.h"

/* For b < d->batch: C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b], where
 * A[b] = a + b * d->stride_a is [m, k] ([k, m] when trans_a), B[b] is [k, n] ([n, k] when
 * trans_b) and C[b] is [m, n]; all dense row-major. TANDEM_E_INVALID on a bad descriptor. */
tandem_status tandem_host_gemm(const tandem_gemm_desc *d, float alpha, const float *a,
                               const float *b, float beta, float *c);

/* The built-in cache-blocked GEMM, same contract. */
tandem_status tandem_host_gemm_blocked(const tandem_gemm_desc *d, float alpha, const float *a,
                                       const float *b, float beta, float *c);

/* Which implementation tandem_host_gemm uses: "cblas" or "blocked". */
const char *tandem_host_gemm_impl(void);

#endif
