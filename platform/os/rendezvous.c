/* rendezvous.c — the TCP rendezvous of rendezvous.h: the endpoint, the wire format, bounded
 * socket I/O and the peers' side; rank 0's side is in rendezvous_server.c. */
#include "platform/os/rendezvous.h"
#include "platform/os/rendezvous_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "platform/os/log.h"
#include "platform/os/os.h"

/* ---- the endpoint ---------------------------------------------------------------------------- */

tandem_status tandem_rdzv_parse(const char *ep, char *host, size_t hcap, char *port, size_t pcap) {
    const char *colon = NULL, *h = ep;
    size_t hl = 0;
    if (!ep || !*ep) return tandem_fail(TANDEM_E_INVALID, "rendezvous: no endpoint; expected HOST:PORT");
    if (ep[0] == '[') { /* [IPv6]:PORT */
        const char *close = strchr(ep, ']');
        if (!close || close[1] != ':')
            return tandem_fail(TANDEM_E_INVALID, "rendezvous endpoint '%s': expected [IPv6]:PORT", ep);
        h = ep + 1, hl = (size_t)(close - h), colon = close + 1;
    } else {
        colon = strrchr(ep, ':');
        if (!colon || strchr(ep, ':') != colon)
            return tandem_fail(TANDEM_E_INVALID, "rendezvous endpoint '%s': expected HOST:PORT (an IPv6 address "
                               "in brackets: [::1]:29500)", ep);
        hl = (size_t)(colon - ep);
    }
    const char *p = colon + 1;
    char *end = NULL;
    errno = 0;
    const long v = strtol(p, &end, 10);
    if (!*p || *end || errno || v < 1 || v > 65535 || *p == '+' || *p == '-')
        return tandem_fail(TANDEM_E_INVALID, "rendezvous endpoint '%s': port '%s'; expected an integer from 1 to "
                           "65535 (MASTER_PORT)", ep, p);
    if (hl == 0 || hl >= hcap)
        return tandem_fail(TANDEM_E_INVALID, "rendezvous endpoint '%s': %s host; expected a name or an address "
                           "(MASTER_ADDR)", ep, hl ? "too long a" : "no");
    memcpy(host, h, hl);
    host[hl] = 0;
    snprintf(port, pcap, "%ld", v);
    return TANDEM_OK;
}

tandem_status tandem_rdzv_resolve(const char *ep, const char *host, const char *port, int passive,
                                  struct addrinfo **out) {
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    const int rc = getaddrinfo(host, port, &hints, out);
    if (rc == 0) return TANDEM_OK;
    *out = NULL;
    return tandem_fail(TANDEM_E_IO, "rendezvous %s: host '%s' does not resolve: %s (MASTER_ADDR: a name or "
                       "address of rank 0's machine)", ep, host, rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
}

void tandem_rdzv_addr_name(const struct sockaddr *sa, socklen_t len, char *buf, size_t cap) {
    char h[NI_MAXHOST], s[NI_MAXSERV];
    if (getnameinfo(sa, len, h, sizeof h, s, sizeof s, NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(buf, cap, "?");
        return;
    }
    snprintf(buf, cap, strchr(h, ':') ? "[%s]:%s" : "%s:%s", h, s);
}

/* ---- the wire: big-endian u32 fields after an 8-byte magic ----------------------------------- */

static void put_u32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

uint32_t tandem_rdzv_get_u32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

void tandem_rdzv_put_header(unsigned char *h, const uint32_t *fields, int k) {
    memcpy(h, TANDEM_RDZV_MAGIC, 8);
    for (int i = 0; i < k; i++) put_u32(h + 8 + 4 * i, fields[i]);
}

/* ---- bounded I/O --------------------------------------------------------------------------- */

int tandem_rdzv_wait(int fd, short events, uint64_t deadline, const volatile int *cancel) {
    for (;;) {
        if (cancel && *cancel) return -1;
        const uint64_t now = tandem_now_ns();
        if (now >= deadline) return 0;
        uint64_t ms = (deadline - now + 999999) / 1000000;
        if (ms > TANDEM_RDZV_SLICE_MS) ms = TANDEM_RDZV_SLICE_MS;
        struct pollfd p = {.fd = fd, .events = events};
        const int rc = poll(fd >= 0 ? &p : NULL, fd >= 0 ? 1 : 0, (int)ms);
        if (rc > 0) return 1;
        if (rc < 0 && errno != EINTR) return -2;
    }
}

int tandem_rdzv_send_all(int fd, const void *buf, size_t len, uint64_t deadline) {
    const unsigned char *p = buf;
    while (len > 0) {
        const ssize_t k = send(fd, p, len, MSG_NOSIGNAL);
        if (k > 0) {
            p += k, len -= (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        if (tandem_rdzv_wait(fd, POLLOUT, deadline, NULL) != 1) return errno = ETIMEDOUT, -1;
    }
    return 0;
}

/* recv exactly len bytes: 1 done, 0 the other side closed first, -1 an error, -2 the deadline
 * passed, -3 cancelled. */
static int recv_all(int fd, void *buf, size_t len, uint64_t deadline, const volatile int *cancel) {
    unsigned char *p = buf;
    while (len > 0) {
        const ssize_t k = recv(fd, p, len, 0);
        if (k > 0) {
            p += k, len -= (size_t)k;
            continue;
        }
        if (k == 0) return 0;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        const int w = tandem_rdzv_wait(fd, POLLIN, deadline, cancel);
        if (w == 0) return -2;
        if (w == -1) return -3;
        if (w < 0) return -1;
    }
    return 1;
}

/* ---- a peer: connect (retrying), say hello, read the answer ---------------------------------- */

/* One non-blocking connect to a, bounded by deadline: the socket, or -1 with why set. */
static int connect_once(const struct addrinfo *a, uint64_t deadline, const volatile int *cancel, int *why) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) return *why = errno, -1;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) return fd;
    int err = errno;
    if (err == EINPROGRESS) {
        const int w = tandem_rdzv_wait(fd, POLLOUT, deadline, cancel);
        socklen_t l = sizeof err;
        if (w == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) == 0 && err == 0) return fd;
        if (w != 1) err = w == -1 ? ECANCELED : ETIMEDOUT;
    }
    close(fd);
    *why = err;
    return -1;
}

/* Connect to rank 0, retrying every 100 ms (it may start later) until the deadline. */
static tandem_status peer_connect(const tandem_rdzv_options *o, const struct addrinfo *ai, uint64_t deadline,
                                  int *fd) {
    int why = 0, tries = 0;
    for (;;) {
        for (const struct addrinfo *a = ai; a; a = a->ai_next) {
            *fd = connect_once(a, deadline, o->cancel, &why);
            if (*fd >= 0) return TANDEM_OK;
        }
        tries++;
        if (why == ECANCELED || (o->cancel && *o->cancel))
            return tandem_fail(TANDEM_E_STATE, "rendezvous %s (rank %d): stopped by request", o->endpoint, o->rank);
        const uint64_t retry = tandem_now_ns() + TANDEM_RDZV_RETRY_MS * 1000000ull;
        if (retry >= deadline) break;
        if (tandem_rdzv_wait(-1, 0, retry, o->cancel) == -1)
            return tandem_fail(TANDEM_E_STATE, "rendezvous %s (rank %d): stopped by request", o->endpoint, o->rank);
    }
    return tandem_fail(TANDEM_E_IO, "rendezvous: rank 0 at %s not reachable after %.0f s (%d attempts, last: %s); "
                       "is rank 0 running, and are MASTER_ADDR / MASTER_PORT those of its machine?", o->endpoint,
                       o->timeout_ms / 1000.0, tries, strerror(why));
}

/* The answer's payload: the bytes (code 0) or rank 0's refusal (code 1). */
static tandem_status peer_answer(const tandem_rdzv_options *o, int fd, uint64_t deadline, void *bytes, size_t n) {
    unsigned char h[TANDEM_RDZV_REPLY];
    char text[TANDEM_RDZV_TEXT_MAX + 1];
    int r = recv_all(fd, h, sizeof h, deadline, o->cancel);
    if (r == 1 && memcmp(h, TANDEM_RDZV_MAGIC, 8) != 0)
        return tandem_fail(TANDEM_E_INVALID, "rendezvous: %s answered with something other than Tandem's rendezvous "
                           "(first bytes %02x %02x %02x %02x); is MASTER_PORT another service's port?",
                           o->endpoint, h[0], h[1], h[2], h[3]);
    const uint32_t code = r == 1 ? tandem_rdzv_get_u32(h + 8) : 0, len = r == 1 ? tandem_rdzv_get_u32(h + 12) : 0;
    if (r == 1 && code == TANDEM_RDZV_REFUSED && len <= TANDEM_RDZV_TEXT_MAX) {
        r = recv_all(fd, text, len, deadline, o->cancel);
        text[r == 1 ? len : 0] = 0;
        return tandem_fail(TANDEM_E_INVALID, "rendezvous: rank 0 at %s refused rank %d: %s", o->endpoint, o->rank,
                           r == 1 ? text : "(its reason was cut off)");
    }
    if (r == 1 && (code != TANDEM_RDZV_ACCEPTED || len != n))
        return tandem_fail(TANDEM_E_INVALID, "rendezvous: rank 0 at %s answered code %u with %u bytes; expected "
                           "code 0 with %zu (another Tandem version?)", o->endpoint, code, len, n);
    if (r == 1) r = recv_all(fd, bytes, n, deadline, o->cancel);
    if (r == 1) return TANDEM_OK;
    if (r == -3)
        return tandem_fail(TANDEM_E_STATE, "rendezvous %s (rank %d): stopped by request", o->endpoint, o->rank);
    if (r == -2)
        return tandem_fail(TANDEM_E_IO, "rendezvous: connected to rank 0 at %s, but no answer within %.0f s: rank 0 "
                           "answers when all %d ranks have arrived, so one has not (rank 0's log names it)",
                           o->endpoint, o->timeout_ms / 1000.0, o->world);
    return tandem_fail(TANDEM_E_IO, "rendezvous: rank 0 at %s closed the connection before answering (%s): it "
                       "failed or stopped; its log says why", o->endpoint, r == 0 ? "end of stream" : strerror(errno));
}

static tandem_status peer_run(const tandem_rdzv_options *o, const struct addrinfo *ai, void *bytes, size_t n) {
    const uint64_t deadline = tandem_now_ns() + (uint64_t)o->timeout_ms * 1000000ull;
    int fd = -1;
    TANDEM_TRY(peer_connect(o, ai, deadline, &fd));
    unsigned char hello[TANDEM_RDZV_HELLO];
    const uint32_t f[4] = {TANDEM_RDZV_VERSION, (uint32_t)o->world, (uint32_t)o->rank, (uint32_t)n};
    tandem_rdzv_put_header(hello, f, 4);
    tandem_status st = TANDEM_OK;
    if (tandem_rdzv_send_all(fd, hello, sizeof hello, deadline) != 0)
        st = tandem_fail(TANDEM_E_IO, "rendezvous: sending rank %d's hello to rank 0 at %s: %s", o->rank,
                         o->endpoint, strerror(errno));
    if (st == TANDEM_OK) st = peer_answer(o, fd, deadline, bytes, n);
    close(fd);
    if (st == TANDEM_OK)
        tandem_logf(TANDEM_LOG_INFO, "rendezvous: rank %d of %d got rank 0's id from %s", o->rank, o->world,
                    o->endpoint);
    return st;
}

tandem_status tandem_rendezvous(const tandem_rdzv_options *o, void *bytes, size_t n) {
    if (!o || !bytes) return tandem_fail(TANDEM_E_INVALID, "tandem_rendezvous: NULL argument");
    if (o->world < 2 || o->rank < 0 || o->rank >= o->world)
        return tandem_fail(TANDEM_E_INVALID, "rendezvous %s: rank %d of world size %d; expected world >= 2 and "
                           "0 <= rank < world", o->endpoint ? o->endpoint : "(none)", o->rank, o->world);
    if (n == 0 || n > TANDEM_RDZV_MAX_BYTES || o->timeout_ms <= 0)
        return tandem_fail(TANDEM_E_INVALID, "rendezvous: %zu bytes with timeout %d ms; expected 1..%d bytes and a "
                           "timeout > 0", n, o->timeout_ms, TANDEM_RDZV_MAX_BYTES);
    char host[256], port[16];
    TANDEM_TRY(tandem_rdzv_parse(o->endpoint, host, sizeof host, port, sizeof port));
    struct addrinfo *ai = NULL;
    TANDEM_TRY(tandem_rdzv_resolve(o->endpoint, host, port, o->rank == 0, &ai));
    const tandem_status st = o->rank == 0 ? tandem_rdzv_serve(o, ai, bytes, n) : peer_run(o, ai, bytes, n);
    freeaddrinfo(ai);
    return st;
}
