/* host_gemm.h — the host backend's f32 GEMM (row-major, tandem.h semantics).
 *
 * tandem_host_gemm uses CBLAS (OpenBLAS) when built with TANDEM_HAVE_CBLAS (HOST_BLAS=openblas),
 * else the built-in cache-blocked GEMM, which is always compiled and exported as
 * tandem_host_gemm_blocked so tests cover it in every build. Neither allocates (the blocked
 * one packs into a fixed buffer on the stack), so both may run after a pool is committed.
 * C must not overlap A or B. beta == 0 never reads C (it may hold anything, even NaN).
 *
 * Threads: both split their work over the calling thread's entered host pool (host_pool.h):
 * a batch over its items, one product over ranges of C's rows (aligned so that OpenBLAS's
 * kernels compute each row the same way; see host_gemm.c), each element computed by one
 * single-threaded call, so C is bit-identical for every thread count (test_host_threads). OpenBLAS's own threads are therefore not used: the host backend sets them to
 * 1 (tandem_host_blas_set_threads) when it opens a device. This is process-wide, like every
 * OpenBLAS setting (an embedding program that uses OpenBLAS itself sees it too).
 */
#ifndef TANDEM_PLATFORM_HOST_GEMM_H
#define TANDEM_PLATFORM_HOST_GEMM_H

#include "platform/device.h"

/* For b < d->batch: C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b], where
 * A[b] = a + b * d->stride_a is [m, k] ([k, m] when trans_a), B[b] is [k, n] ([n, k] when
 * trans_b) and C[b] is [m, n]; all dense row-major; then d's epilogue (device.h: EPI_BIAS adds
 * d->bias [n] to every row; GELU_AUX_BIAS writes that into d->aux and gelu of it into C; DGELU
 * multiplies C by gelu'(d->aux); aux laid out as C). TANDEM_E_INVALID on a bad descriptor. */
tandem_status tandem_host_gemm(const tandem_gemm_desc *d, float alpha, const float *a,
                               const float *b, float beta, float *c);

/* The built-in cache-blocked GEMM, same contract. */
tandem_status tandem_host_gemm_blocked(const tandem_gemm_desc *d, float alpha, const float *a,
                                       const float *b, float beta, float *c);

/* Which implementation tandem_host_gemm uses: "cblas" or "blocked". */
const char *tandem_host_gemm_impl(void);

/* Sets OpenBLAS's thread count (process-wide) and returns what OpenBLAS then reports;
 * tandem_host_blas_threads reports it. Both return 0 in a build without CBLAS. */
int tandem_host_blas_set_threads(int threads);
int tandem_host_blas_threads(void);

/* OpenBLAS's kernel family for this CPU ("Haswell", "Zen", "SkylakeX", ...; "" without CBLAS),
 * and a one-line hint ("" when none): an OpenBLAS older than the CPU (0.3.21 on AMD Zen 4/5)
 * picks its AVX2 kernels on a CPU with AVX-512; OPENBLAS_CORETYPE=SkylakeX, which OpenBLAS
 * reads when it is loaded, so only from the environment, selects the AVX-512 ones. */
const char *tandem_host_blas_core(void);
const char *tandem_host_blas_hint(void);

#endif
