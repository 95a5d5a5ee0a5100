/* rendezvous_internal.h — what rendezvous.c (endpoint, wire, bounded I/O, peers) and
 * rendezvous_server.c (rank 0) share; nothing else includes it.
 *
 * Wire (big-endian u32 fields after the 8-byte magic "TNDMRDZV"):
 *   hello, peer -> rank 0 (24 bytes): magic, version, world size, rank, payload length
 *   answer, rank 0 -> peer (16 bytes + len): magic, code (0 accepted: len = the payload bytes;
 *   1 refused: len <= TANDEM_RDZV_TEXT_MAX bytes of text saying why), len */
#ifndef TANDEM_PLATFORM_RENDEZVOUS_INTERNAL_H
#define TANDEM_PLATFORM_RENDEZVOUS_INTERNAL_H

#include <netdb.h>
#include <stdint.h>
#include <sys/socket.h>

#include "platform/os/rendezvous.h"

#define TANDEM_RDZV_MAGIC "TNDMRDZV"
#define TANDEM_RDZV_HELLO 24
#define TANDEM_RDZV_REPLY 16
#define TANDEM_RDZV_TEXT_MAX 1024
#define TANDEM_RDZV_ACCEPTED 0u
#define TANDEM_RDZV_REFUSED 1u
#define TANDEM_RDZV_SLICE_MS 50   /* the longest poll: a cancel flag is seen this soon */
#define TANDEM_RDZV_RETRY_MS 100  /* a peer's pause between connection attempts */
#define TANDEM_RDZV_STRANGERS 16  /* connections rank 0 holds beyond the world's while they say hello */

/* "HOST:PORT" / "[IPv6]:PORT" into host and port (a validated decimal 1..65535). */
tandem_status tandem_rdzv_parse(const char *ep, char *host, size_t hcap, char *port, size_t pcap);
/* getaddrinfo (passive: rank 0's bind); *out to freeaddrinfo. */
tandem_status tandem_rdzv_resolve(const char *ep, const char *host, const char *port, int passive,
                                  struct addrinfo **out);
/* "1.2.3.4:5678" / "[::1]:5678" */
void tandem_rdzv_addr_name(const struct sockaddr *sa, socklen_t len, char *buf, size_t cap);
uint32_t tandem_rdzv_get_u32(const unsigned char *p);
/* magic, then k big-endian fields */
void tandem_rdzv_put_header(unsigned char *h, const uint32_t *fields, int k);
/* poll fd (-1: just sleep) for events until deadline (tandem_now_ns), in slices that look at
 * cancel: 1 ready, 0 the deadline passed, -1 cancelled, -2 poll failed. */
int tandem_rdzv_wait(int fd, short events, uint64_t deadline, const volatile int *cancel);
/* send all of buf before deadline (MSG_NOSIGNAL): 0, or -1 with errno (ETIMEDOUT: the deadline passed). */
int tandem_rdzv_send_all(int fd, const void *buf, size_t len, uint64_t deadline);
/* Rank 0's side of tandem_rendezvous (rendezvous_server.c). */
tandem_status tandem_rdzv_serve(const tandem_rdzv_options *o, const struct addrinfo *ai, const void *bytes,
                                size_t n);

#endif
