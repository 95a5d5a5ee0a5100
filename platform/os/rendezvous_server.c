/* rendezvous_server.c — rank 0's side of the rendezvous (rendezvous.h): listen, take the
 * ranks' hellos on non-blocking sockets under one poll loop, answer everyone at once. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "platform/os/rendezvous_internal.h"

typedef struct rconn {
    int fd;
    int rank;     /* -1: still saying hello */
    size_t got;   /* hello bytes so far */
    uint64_t since;
    unsigned char hello[TANDEM_RDZV_HELLO];
    char addr[80];
} rconn;

typedef struct server {
    const tandem_rdzv_options *o;
    int lfd;
    rconn *c;      /* [cap]: hellos in progress and ranks that arrived */
    int nc, cap;
    int *by_rank;  /* [world]: index into c, -1 not arrived */
    int joined;
    size_t n_bytes; /* the payload's length */
    struct pollfd *pfd; /* [cap + 1] */
    uint64_t start, deadline, hello_ns;
    char why[TANDEM_RDZV_TEXT_MAX]; /* a refusal: what rank 0 tells the ranks */
} server;

static tandem_status listen_on(server *s, const struct addrinfo *ai) {
    int err = 0;
    for (const struct addrinfo *a = ai; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        const int one = 1; /* a previous run's connections in TIME_WAIT do not block the port */
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        const int backlog = s->o->world < 1024 ? s->o->world : 1024;
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, backlog) == 0) {
            s->lfd = fd;
            return TANDEM_OK;
        }
        err = errno;
        close(fd);
    }
    const char *hint = err == EADDRINUSE     ? "the port is in use (another job, or a previous rank 0 still "
                                               "running?): choose another MASTER_PORT"
                       : err == EADDRNOTAVAIL ? "not an address of this machine: MASTER_ADDR must name rank 0's "
                                               "machine"
                                             : "";
    return tandem_fail(TANDEM_E_IO, "rendezvous: rank 0 cannot listen on %s: %s%s%s", s->o->endpoint, strerror(err),
                       *hint ? "; " : "", hint);
}

/* Close connection i (a warning says why when why is not NULL) and fill its slot with the last. */
static void drop(server *s, int i, const char *fmt, ...) TANDEM_PRINTF(3, 4);
static void drop(server *s, int i, const char *fmt, ...) {
    if (fmt) {
        char msg[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        tandem_logf(TANDEM_LOG_WARN, "rendezvous on %s: dropped the connection from %s: %s", s->o->endpoint,
                    s->c[i].addr, msg);
    }
    close(s->c[i].fd);
    if (s->c[i].rank >= 0) s->by_rank[s->c[i].rank] = -1, s->joined--;
    s->c[i] = s->c[--s->nc];
    if (i < s->nc && s->c[i].rank >= 0) s->by_rank[s->c[i].rank] = i;
}

static void accept_new(server *s) {
    for (;;) {
        struct sockaddr_storage sa;
        socklen_t len = sizeof sa;
        const int fd = accept4(s->lfd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return; /* EAGAIN: none left; anything else: the next poll tries again */
        char addr[80];
        tandem_rdzv_addr_name((struct sockaddr *)&sa, len, addr, sizeof addr);
        if (s->nc == s->cap) {
            tandem_logf(TANDEM_LOG_WARN, "rendezvous on %s: refused a connection from %s: %d connections already "
                        "open (strangers on the port?)", s->o->endpoint, addr, s->nc);
            close(fd);
            continue;
        }
        rconn *c = &s->c[s->nc++];
        memset(c, 0, sizeof *c);
        c->fd = fd, c->rank = -1, c->since = tandem_now_ns();
        snprintf(c->addr, sizeof c->addr, "%s", addr);
    }
}

/* A complete hello from connection i: 1 a rank joined, 0 a stranger dropped, -1 a rank that
 * does not fit this job (s->why says how; the rendezvous fails). */
static int check_hello(server *s, int i) {
    rconn *c = &s->c[i];
    const unsigned char *h = c->hello;
    const uint32_t ver = tandem_rdzv_get_u32(h + 8), world = tandem_rdzv_get_u32(h + 12);
    const uint32_t rank = tandem_rdzv_get_u32(h + 16), n = tandem_rdzv_get_u32(h + 20);
    const int W = s->o->world;
    if (memcmp(h, TANDEM_RDZV_MAGIC, 8) != 0) {
        drop(s, i, "not a Tandem rank (first bytes %02x %02x %02x %02x, expected \"%s\")", h[0], h[1], h[2], h[3],
             TANDEM_RDZV_MAGIC);
        return 0;
    }
    if (ver != TANDEM_RDZV_VERSION || n != s->n_bytes)
        snprintf(s->why, sizeof s->why, "the rank at %s speaks rendezvous version %u with a %u-byte id; rank 0 "
                 "version %u with %zu bytes: every rank must run the same Tandem build", c->addr, ver, n,
                 TANDEM_RDZV_VERSION, s->n_bytes);
    else if (world != (uint32_t)W)
        snprintf(s->why, sizeof s->why, "the rank at %s (rank %u) says world size %u; rank 0's is %d: every rank "
                 "needs the same WORLD_SIZE", c->addr, rank, world, W);
    else if (rank == 0 || rank >= world)
        snprintf(s->why, sizeof s->why, "the rank at %s says it is rank %u; expected 1 to %d (rank 0 is the one "
                 "listening: RANK=0 given twice?)", c->addr, rank, W - 1);
    else if (s->by_rank[rank] >= 0)
        snprintf(s->why, sizeof s->why, "rank %u arrived twice: from %s and from %s (RANK given twice?)", rank,
                 s->c[s->by_rank[rank]].addr, c->addr);
    else {
        c->rank = (int)rank;
        s->by_rank[rank] = i;
        s->joined++;
        return 1;
    }
    return -1;
}

/* Connection i is readable: more of its hello, or a rank that arrived leaving early. */
static int on_readable(server *s, int i) {
    rconn *c = &s->c[i];
    if (c->rank >= 0) {
        unsigned char b;
        const ssize_t k = recv(c->fd, &b, 1, 0);
        if (k < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
        drop(s, i, "rank %d %s before the id was sent; waiting for it again", c->rank,
             k == 0 ? "left" : k > 0 ? "sent more than its hello" : strerror(errno));
        return 0;
    }
    const ssize_t k = recv(c->fd, c->hello + c->got, sizeof c->hello - c->got, 0);
    if (k < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (k <= 0) {
        drop(s, i, "it closed after %zu of the hello's %d bytes (not a Tandem rank?)", c->got, TANDEM_RDZV_HELLO);
        return 0;
    }
    c->got += (size_t)k;
    return c->got == sizeof c->hello ? check_hello(s, i) : 0;
}

/* Connections that said nothing complete within hello_ns: strangers (a port scan, a health check). */
static void expire_hellos(server *s, uint64_t now) {
    for (int i = s->nc - 1; i >= 0; i--)
        if (s->c[i].rank < 0 && now - s->c[i].since > s->hello_ns)
            drop(s, i, "no complete hello within %.1f s (%zu of %d bytes; not a Tandem rank?)", s->hello_ns / 1e9,
                 s->c[i].got, TANDEM_RDZV_HELLO);
}

/* Send every arrived rank (and, for a refusal, connection also >= 0) the answer; close them all. */
static int answer_all(server *s, uint32_t code, const void *payload, size_t len, int also) {
    unsigned char h[TANDEM_RDZV_REPLY];
    const uint32_t f[2] = {code, (uint32_t)len};
    tandem_rdzv_put_header(h, f, 2);
    const uint64_t now = tandem_now_ns(), until = now + 5000000000ull; /* a few KiB: the socket takes them */
    int failed_rank = -1;
    for (int i = s->nc - 1; i >= 0; i--) {
        rconn *c = &s->c[i];
        if (c->rank < 0 && i != also) continue;
        if ((tandem_rdzv_send_all(c->fd, h, sizeof h, until) != 0 ||
             tandem_rdzv_send_all(c->fd, payload, len, until) != 0) && c->rank >= 0)
            failed_rank = c->rank;
        shutdown(c->fd, SHUT_WR);
    }
    while (s->nc > 0) drop(s, s->nc - 1, NULL);
    return failed_rank;
}

/* "2, 5, 7" — the ranks that have not arrived (the first 16, then how many more). */
static void missing_ranks(const server *s, char *buf, size_t cap) {
    size_t at = 0;
    int listed = 0, more = 0;
    buf[0] = 0;
    for (int r = 1; r < s->o->world; r++) {
        if (s->by_rank[r] >= 0) continue;
        if (listed == 16) {
            more++;
            continue;
        }
        const int k = snprintf(buf + at, cap - at, "%s%d", listed ? ", " : "", r);
        if (k > 0 && (size_t)k < cap - at) at += (size_t)k;
        listed++;
    }
    if (more) snprintf(buf + at, cap - at, " and %d more", more);
}

/* Wait for every rank: 1 all arrived, 0 the deadline passed, -1 a rank that does not fit
 * (s->why), -2 cancelled, -3 poll failed. */
static int wait_ranks(server *s) {
    const tandem_rdzv_options *o = s->o;
    while (s->joined < o->world - 1) {
        if (o->cancel && *o->cancel) return -2;
        const uint64_t now = tandem_now_ns();
        if (now >= s->deadline) return 0;
        expire_hellos(s, now);
        s->pfd[0] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
        for (int i = 0; i < s->nc; i++) s->pfd[i + 1] = (struct pollfd){.fd = s->c[i].fd, .events = POLLIN};
        const uint64_t left_ms = (s->deadline - now) / 1000000 + 1;
        const int rc = poll(s->pfd, (nfds_t)s->nc + 1,
                            left_ms < TANDEM_RDZV_SLICE_MS ? (int)left_ms : TANDEM_RDZV_SLICE_MS);
        if (rc < 0 && errno != EINTR) return -3;
        if (rc <= 0) continue;
        /* from the last: drop() moves the last connection, already looked at, into the slot */
        for (int i = s->nc - 1; i >= 0; i--)
            if (s->pfd[i + 1].revents && on_readable(s, i) < 0) {
                answer_all(s, TANDEM_RDZV_REFUSED, s->why, strlen(s->why), i);
                return -1;
            }
        if (s->pfd[0].revents & POLLIN) accept_new(s);
    }
    return 1;
}

/* After wait_ranks: the id to everyone, or the failure (told to the ranks that arrived). */
static tandem_status conclude(server *s, int got, const void *bytes) {
    const tandem_rdzv_options *o = s->o;
    const double took = (double)(tandem_now_ns() - s->start) / 1e9;
    if (got == 1) {
        const int lost = answer_all(s, TANDEM_RDZV_ACCEPTED, bytes, s->n_bytes, -1);
        if (lost >= 0)
            return tandem_fail(TANDEM_E_IO, "rendezvous on %s (rank 0): rank %d went away before it got the id",
                               o->endpoint, lost);
        tandem_logf(TANDEM_LOG_INFO, "rendezvous on %s: all %d ranks arrived in %.1f s; the id is sent", o->endpoint,
                    o->world, took);
        return TANDEM_OK;
    }
    if (got == -1) return tandem_fail(TANDEM_E_INVALID, "rendezvous on %s (rank 0): %s", o->endpoint, s->why);
    if (got == 0) {
        char missing[200];
        missing_ranks(s, missing, sizeof missing);
        snprintf(s->why, sizeof s->why, "after %.0f s, rank%s %s never arrived (%d of the %d other rank%s joined)",
                 took, o->world - 1 - s->joined == 1 ? "" : "s", missing, s->joined, o->world - 1,
                 o->world == 2 ? "" : "s");
    } else {
        snprintf(s->why, sizeof s->why, "%s", got == -2 ? "stopped by request" : strerror(errno));
    }
    answer_all(s, TANDEM_RDZV_REFUSED, s->why, strlen(s->why), -1);
    if (got == -2) return tandem_fail(TANDEM_E_STATE, "rendezvous on %s (rank 0): stopped by request", o->endpoint);
    return tandem_fail(TANDEM_E_IO, "rendezvous on %s (rank 0): %s%s", o->endpoint, s->why,
                       got == 0 ? "; were they started, with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE?" : "");
}

tandem_status tandem_rdzv_serve(const tandem_rdzv_options *o, const struct addrinfo *ai, const void *bytes,
                                size_t n) {
    server s;
    memset(&s, 0, sizeof s);
    s.o = o, s.lfd = -1, s.n_bytes = n;
    s.start = tandem_now_ns();
    s.deadline = s.start + (uint64_t)o->timeout_ms * 1000000ull;
    s.hello_ns = (uint64_t)(o->hello_ms > 0 ? o->hello_ms : 5000) * 1000000ull;
    s.cap = o->world - 1 + TANDEM_RDZV_STRANGERS;
    s.c = tandem_calloc((size_t)s.cap, sizeof *s.c);
    s.by_rank = tandem_malloc((size_t)o->world * sizeof *s.by_rank);
    s.pfd = tandem_calloc((size_t)s.cap + 1, sizeof *s.pfd);
    tandem_status st = TANDEM_OK;
    if (!s.c || !s.by_rank || !s.pfd)
        st = tandem_fail(TANDEM_E_NOMEM, "rendezvous on %s: tables for %d ranks", o->endpoint, o->world);
    if (st == TANDEM_OK) {
        for (int r = 0; r < o->world; r++) s.by_rank[r] = -1;
        st = listen_on(&s, ai);
    }
    if (st == TANDEM_OK) {
        tandem_logf(TANDEM_LOG_INFO, "rendezvous: rank 0 listens on %s for the %d other rank%s (timeout %.0f s)",
                    o->endpoint, o->world - 1, o->world == 2 ? "" : "s", o->timeout_ms / 1000.0);
        st = conclude(&s, wait_ranks(&s), bytes);
    }
    if (s.lfd >= 0) close(s.lfd);
    tandem_free(s.c);
    tandem_free(s.by_rank);
    tandem_free(s.pfd);
    return st;
}
