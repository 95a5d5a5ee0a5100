/* rendezvous.h — a small TCP rendezvous that hands rank 0's bytes (the NCCL unique id) to the
 * other ranks of a job launched torchrun style, on MASTER_ADDR:MASTER_PORT (docs/SCALING.md,
 * "The rendezvous"). Used when there is no MPI to broadcast the id (runtime/run/dp.c).
 *
 * Rank 0 listens on the endpoint (bound to the address given, SO_REUSEADDR) and waits for the
 * world - 1 other ranks; each connects (retrying until the deadline: rank 0 may start later),
 * says who it is — magic "TNDMRDZV", protocol version, world size, rank, id length — and, once
 * every rank has arrived, all of them receive the bytes at once (a barrier: no rank goes on to
 * join NCCL while another is missing). Misconfigured ranks (another world size, a rank twice, a
 * rank out of range, another version or id length) fail the rendezvous on rank 0 and on the
 * ranks connected so far, each with a message naming the endpoint and what was expected and
 * found. A stranger on the port (garbage, a short message, a silent connection) is dropped with
 * a warning and the rendezvous goes on. On timeout rank 0 names the ranks that never arrived
 * (and tells those that did); a peer says rank 0 was not reachable, or did not answer.
 *
 * Every socket is non-blocking and every wait is a poll bounded by the deadline (name
 * resolution excepted: getaddrinfo runs once, under the system resolver's own timeouts).
 * Owns nothing between calls. Threads: any; calls on different endpoints may run at once (the
 * unit test runs 3 ranks on 3 threads). Allocates: rank 0's connection table, freed before
 * the call returns (it runs before any plan is committed). Logs through platform/os/log.h. */
#ifndef TANDEM_PLATFORM_RENDEZVOUS_H
#define TANDEM_PLATFORM_RENDEZVOUS_H

#include <stddef.h>

#include "tandem.h"

#define TANDEM_RDZV_MAX_BYTES 4096 /* the longest payload (an NCCL id is 128 bytes) */
#define TANDEM_RDZV_VERSION 1u

typedef struct tandem_rdzv_options {
    const char *endpoint; /* "HOST:PORT", "[IPv6]:PORT" */
    int world, rank;      /* world >= 2, 0 <= rank < world */
    int timeout_ms;       /* > 0: the whole rendezvous, from this call on */
    int hello_ms;         /* rank 0: how long a connection may take to say who it is before it is
                             dropped as a stranger; <= 0: 5000 (bounded by timeout_ms) */
    const volatile int *cancel; /* NULL, or a flag: non-zero stops the rendezvous (checked at
                                   least every 50 ms; TANDEM_E_STATE "stopped by request") */
} tandem_rdzv_options;

/* Rank 0: send bytes[n] to every other rank; other ranks: receive them into bytes[n] (the same n
 * everywhere, 1..TANDEM_RDZV_MAX_BYTES). TANDEM_E_INVALID: a bad endpoint or options, or ranks
 * that disagree; TANDEM_E_IO: the network (address in use, name not resolving, timeouts); each
 * message names the endpoint. */
tandem_status tandem_rendezvous(const tandem_rdzv_options *o, void *bytes, size_t n);

#endif
