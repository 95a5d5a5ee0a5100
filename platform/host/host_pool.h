/* host_pool.h — the host backend's worker pool: a fixed set of threads per host device that
 * runs the parallel loops of the kernels' host implementations and of the host GEMM.
 *
 * A pool is created with its device (threads = the runtime option host_threads or the CPUs
 * this process may use) and allocates nothing afterwards. The host backend *enters* the device's pool
 * around each launch and GEMM; inside, tandem_host_parallel_for splits an index range over
 * the pool. Called with no pool entered (tests calling a host implementation directly, the
 * kernel emulator's reference runs) the same loop runs on the calling thread alone.
 *
 * Determinism: the loop body gets contiguous ranges [begin, end) and must compute each index
 * with arithmetic that does not depend on the range boundaries (each output written by exactly
 * one index). Then the results are bit-identical for every thread count — what the trainer's
 * bit-identical resume needs. Reductions therefore parallelise over their fixed chunks, never
 * over a per-thread split.
 * Owns: its threads and its dispatch state; the calling thread's "entered pool" (thread-local).
 */
#ifndef TANDEM_PLATFORM_HOST_POOL_H
#define TANDEM_PLATFORM_HOST_POOL_H

#include <stdint.h>

#include "kernels/host_parallel.h"
#include "tandem.h"

typedef struct tandem_host_pool tandem_host_pool;


/* threads >= 1 (the calling thread counts as one: threads - 1 workers are started). */
tandem_status tandem_host_pool_create(int threads, const char *name, tandem_host_pool **out);
void tandem_host_pool_destroy(tandem_host_pool *p); /* NULL is a no-op */
int tandem_host_pool_threads(const tandem_host_pool *p);

/* Tests: fine = 1 makes this pool split every loop of n >= 2 into as many ranges as it splits
 * any loop into, ignoring the grain, so range boundaries fall everywhere. Default 0. */
void tandem_host_pool_set_fine(tandem_host_pool *p, int fine);

/* Threads a host device's pool gets: the runtime option host_threads (1..TANDEM_MAX_HOST_THREADS)
 * when set, else the number of CPUs this process may run on (at most TANDEM_MAX_HOST_THREADS). */
int tandem_host_pool_default_threads(void);

/* Threads of a host device's pool; 0 for a device of another backend (host_device.c). */
int tandem_host_device_threads(const tandem_device *dev);

/* Make p the calling thread's pool for parallel loops (NULL: none); returns the one entered
 * before, to be restored with tandem_host_pool_leave. */
tandem_host_pool *tandem_host_pool_enter(tandem_host_pool *p);
void tandem_host_pool_leave(tandem_host_pool *previous);

/* tandem_host_parallel_for and tandem_host_parallel_threads: kernels/host_parallel.h. */

#endif
