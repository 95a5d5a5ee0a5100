/* host_parallel.h — the one service the kernels' host implementations need from the host
 * backend: a parallel loop over an index range. Declared here, implemented by the host
 * backend's worker pool (platform/host/host_pool.c), so kernels/ includes only kernels/ and
 * the dependency runs one way (platform → kernels).
 *
 * Determinism: fn gets contiguous ranges [begin, end) and must compute each index with
 * arithmetic that does not depend on the range boundaries (each output written by exactly one
 * index), so results are bit-identical for every thread count. With no pool entered on the
 * calling thread (tests calling a host implementation directly, the emulator's reference runs)
 * the loop runs on the calling thread alone.
 */
#ifndef TANDEM_KERNELS_HOST_PARALLEL_H
#define TANDEM_KERNELS_HOST_PARALLEL_H

#include <stdint.h>

/* The body of a parallel loop: indices [begin, end) of the range given to parallel_for. */
typedef void (*tandem_host_range_fn)(void *ctx, int64_t begin, int64_t end);

/* Runs fn over [0, n) in near-equal contiguous ranges, ceil(n / grain) of them but at most a
 * few per thread, on the entered pool's threads and the calling thread; returns when all are
 * done. Runs fn(ctx, 0, n) on the calling thread when no pool is entered, the pool has one
 * thread, n <= grain, or the pool is busy with another caller's loop. */
void tandem_host_parallel_for(int64_t n, int64_t grain, tandem_host_range_fn fn, void *ctx);

/* Threads of the calling thread's entered pool (1 when none): lets a caller size its ranges. */
int tandem_host_parallel_threads(void);

#endif
