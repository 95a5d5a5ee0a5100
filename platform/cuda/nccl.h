/* nccl.h — NCCL for the cuda backend's collectives (platform/device.h, tandem_coll): loading
 * libnccl.so.2 at run time with dlopen, resolving the calls of platform/cuda/nccl_api.h with
 * dlsym, checking the library's version, and the cuda implementation of the coll_* entries of
 * the backend table. NCCL is optional: without it a cuda device works, only collectives fail
 * (TANDEM_E_NODRIVER naming the library and why).
 *
 * Owns (process-wide, immutable after the one-time load): the library handle, the resolved
 * entry points, the version and the load message. Each tandem_coll owns one ncclComm_t.
 * Threads: the load is once per process (thread-safe); a tandem_coll is used by one thread at
 * a time (NCCL's rule for a communicator). Allocates: at load and at coll open only. */
#ifndef TANDEM_PLATFORM_CUDA_NCCL_H
#define TANDEM_PLATFORM_CUDA_NCCL_H

#include "platform/device.h"

/* Load NCCL once per process: lib (NULL or "": "libnccl.so.2") is used by the first call only;
 * later calls return the first outcome. TANDEM_E_NODRIVER when the library cannot be opened,
 * TANDEM_E_DEVICE when an entry point is missing or the version is older than 2.13 (the
 * message names what was found and what is needed). */
tandem_status tandem_nccl_load(const char *lib);
/* After a successful load: the library's NCCL_VERSION_CODE (22809 for 2.28.9), else 0. */
int tandem_nccl_version(void);
/* One line for people: "libnccl.so.2: NCCL 2.28.9", or why NCCL is not available ("" before any
 * load was tried). */
const char *tandem_nccl_describe(void);

/* The cuda backend's coll_* entries (platform/cuda/cuda_device.c puts them in its table). */
tandem_status tandem_cuda_coll_unique_id(tandem_device *dev, tandem_coll_id *out);
tandem_status tandem_cuda_coll_open(tandem_device *dev, const tandem_coll_id *id, int nranks,
                                    int rank, tandem_coll **out);
tandem_status tandem_cuda_coll_open_local(tandem_device *const *devs, int n, tandem_coll **out);
void tandem_cuda_coll_close(tandem_coll *c);
void tandem_cuda_coll_abort(tandem_coll *c);
tandem_status tandem_cuda_coll_group(int begin);
tandem_status tandem_cuda_coll_all_reduce_sum(tandem_coll *c, tandem_stream *s, tandem_dptr send,
                                              tandem_dptr recv, size_t count, tandem_dtype type);
tandem_status tandem_cuda_coll_broadcast(tandem_coll *c, tandem_stream *s, tandem_dptr send,
                                         tandem_dptr recv, size_t count, tandem_dtype type, int root);
tandem_status tandem_cuda_coll_check(tandem_coll *c);

#endif
