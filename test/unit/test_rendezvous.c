/* test_rendezvous.c — the TCP rendezvous of platform/os/rendezvous.h, ranks on threads of this
 * process over loopback, with timeouts of a second or so:
 *   3 ranks, the peers started before rank 0: the id arrives intact on every rank
 *   a rank missing: rank 0's timeout names it, and the rank that came is told the same
 *   another world size, a rank twice, a rank out of range (a raw hello): both sides fail naming it
 *   strangers on the port (garbage, a short message, a silent connection): dropped, the ranks join
 *   no rank 0: the peer's timeout names the endpoint; the port in use; a name that does not
 *   resolve; malformed endpoints; a cancel flag stops rank 0 within a poll; no descriptor left */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform/os/os.h"
#include "platform/os/rendezvous.h"
#include "test/fixtures.h"

#define ID_BYTES 128

typedef struct rank_run {
    tandem_rdzv_options o;
    char ep[64];
    int delay_ms; /* before the call */
    unsigned char id[ID_BYTES];
    tandem_status st;
    char err[1024];
    double took_s;
    pthread_t th;
} rank_run;

static tandem_rng rng;

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* A loopback port that was free a moment ago (bound to 0, read back, closed). */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void *rank_main(void *arg) {
    rank_run *r = arg;
    if (r->delay_ms) sleep_ms(r->delay_ms);
    const uint64_t t0 = tandem_now_ns();
    r->st = tandem_rendezvous(&r->o, r->id, sizeof r->id);
    r->took_s = (double)(tandem_now_ns() - t0) / 1e9;
    snprintf(r->err, sizeof r->err, "%s", r->st == TANDEM_OK ? "" : tandem_last_error());
    return NULL;
}

/* Rank `rank` of world on a thread: tandem_rendezvous after delay_ms (hello_ms, cancel: rank 0's
 * options, 0 / NULL for the defaults). */
static void start_with(rank_run *r, int port, int world, int rank, int timeout_ms, int delay_ms, int hello_ms,
                       const volatile int *cancel) {
    memset(r, 0, sizeof *r);
    r->o.hello_ms = hello_ms, r->o.cancel = cancel;
    snprintf(r->ep, sizeof r->ep, "127.0.0.1:%d", port);
    r->o.endpoint = r->ep, r->o.world = world, r->o.rank = rank, r->o.timeout_ms = timeout_ms;
    r->delay_ms = delay_ms;
    if (rank == 0) tandem_rng_fill_bytes(&rng, r->id, sizeof r->id);
    else memset(r->id, 0xee, sizeof r->id); /* poison: what arrives must replace all of it */
    assert_int_equal(pthread_create(&r->th, NULL, rank_main, r), 0);
}

static void start(rank_run *r, int port, int world, int rank, int timeout_ms, int delay_ms) {
    start_with(r, port, world, rank, timeout_ms, delay_ms, 0, NULL);
}

static void join(rank_run *r) { pthread_join(r->th, NULL); }

static void expect_error(const rank_run *r, tandem_status st, const char *a, const char *b) {
    if (r->st != st || !strstr(r->err, a) || (b && !strstr(r->err, b)))
        fail_msg("rank %d: %s \"%s\"; expected %s naming \"%s\"%s%s%s", r->o.rank, tandem_status_name(r->st), r->err,
                 tandem_status_name(st), a, b ? " and \"" : "", b ? b : "", b ? "\"" : "");
}

static void test_three_ranks_peers_first(void **state) {
    (void)state;
    const int port = free_port();
    rank_run r[3];
    start(&r[1], port, 3, 1, 5000, 0);
    start(&r[2], port, 3, 2, 5000, 0);
    start(&r[0], port, 3, 0, 5000, 400); /* rank 0 later: the peers retry until it listens */
    for (int i = 0; i < 3; i++) join(&r[i]);
    for (int i = 0; i < 3; i++)
        if (r[i].st != TANDEM_OK) fail_msg("rank %d: %s", i, r[i].err);
    assert_memory_equal(r[1].id, r[0].id, ID_BYTES);
    assert_memory_equal(r[2].id, r[0].id, ID_BYTES);
    printf("3 ranks, rank 0 started 400 ms after the others: the %d-byte id on every rank (rank 1 waited %.2f s)\n",
           ID_BYTES, r[1].took_s);
}

static void test_missing_rank_named(void **state) {
    (void)state;
    const int port = free_port();
    rank_run r[2];
    start(&r[0], port, 3, 0, 1000, 0);
    start(&r[1], port, 3, 1, 3000, 0); /* rank 2 never comes */
    join(&r[0]), join(&r[1]);
    expect_error(&r[0], TANDEM_E_IO, "rank 2 never arrived (1 of the 2 other ranks joined)", "127.0.0.1:");
    expect_error(&r[1], TANDEM_E_INVALID, "refused rank 1", "rank 2 never arrived (1 of the 2 other ranks joined)");
    if (r[0].took_s > 2.0 || r[1].took_s > 2.0)
        fail_msg("rank 0 took %.2f s, rank 1 %.2f s; expected rank 0's 1 s timeout to end both", r[0].took_s,
                 r[1].took_s);
    printf("missing rank: %s\n", r[0].err);
}

static void test_wrong_world_size(void **state) {
    (void)state;
    const int port = free_port();
    rank_run r[2];
    start(&r[0], port, 2, 0, 3000, 0);
    start(&r[1], port, 3, 1, 3000, 0);
    join(&r[0]), join(&r[1]);
    expect_error(&r[0], TANDEM_E_INVALID, "says world size 3; rank 0's is 2", NULL);
    expect_error(&r[1], TANDEM_E_INVALID, "refused rank 1", "world size 3");
}

static void test_rank_twice(void **state) {
    (void)state;
    const int port = free_port();
    rank_run r[3];
    start(&r[0], port, 3, 0, 3000, 0);
    start(&r[1], port, 3, 1, 3000, 0);
    start(&r[2], port, 3, 1, 3000, 100);
    for (int i = 0; i < 3; i++) join(&r[i]);
    expect_error(&r[0], TANDEM_E_INVALID, "rank 1 arrived twice", NULL);
    expect_error(&r[1], TANDEM_E_INVALID, "arrived twice", NULL);
    expect_error(&r[2], TANDEM_E_INVALID, "arrived twice", NULL);
}

/* A connection to 127.0.0.1:port (retried while rank 0 starts) that sends len bytes of msg. */
static int raw_send(int port, const void *msg, size_t len) {
    for (int tries = 0; tries < 100; tries++) { /* rank 0 may not listen yet */
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            if (len) assert_int_equal(send(fd, msg, len, MSG_NOSIGNAL), (ssize_t)len);
            return fd;
        }
        close(fd);
        sleep_ms(20);
    }
    fail_msg("could not connect to 127.0.0.1:%d", port);
    return -1;
}

static void hello(unsigned char *h, uint32_t world, uint32_t rank) {
    const uint32_t f[4] = {TANDEM_RDZV_VERSION, world, rank, ID_BYTES};
    memcpy(h, "TNDMRDZV", 8);
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++) h[8 + 4 * i + k] = (unsigned char)(f[i] >> (24 - 8 * k));
}

static void test_rank_out_of_range(void **state) {
    (void)state;
    const int port = free_port();
    rank_run r0;
    start(&r0, port, 3, 0, 3000, 0);
    unsigned char h[24];
    hello(h, 3, 7);
    const int fd = raw_send(port, h, sizeof h);
    join(&r0);
    expect_error(&r0, TANDEM_E_INVALID, "says it is rank 7; expected 1 to 2", NULL);
    unsigned char ans[16 + 1024];
    ssize_t k = recv(fd, ans, sizeof ans, MSG_WAITALL);
    assert_true(k > 16); /* the refusal reached the rank too */
    assert_memory_equal(ans, "TNDMRDZV", 8);
    assert_int_equal(ans[11], 1);
    close(fd);
}

static void test_strangers_ignored(void **state) {
    (void)state;
    const int port = free_port();
    rank_run r[3];
    start_with(&r[0], port, 3, 0, 4000, 0, 300, NULL);
    static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    const int a = raw_send(port, http, sizeof http - 1);     /* garbage */
    const int b = raw_send(port, "TNDM", 4);                 /* short, then closed */
    close(b);
    const int c = raw_send(port, NULL, 0);                   /* silent */
    start(&r[1], port, 3, 1, 4000, 0);
    start(&r[2], port, 3, 2, 4000, 100);
    for (int i = 0; i < 3; i++) join(&r[i]);
    for (int i = 0; i < 3; i++)
        if (r[i].st != TANDEM_OK) fail_msg("rank %d: %s", i, r[i].err);
    assert_memory_equal(r[1].id, r[0].id, ID_BYTES);
    assert_memory_equal(r[2].id, r[0].id, ID_BYTES);
    close(a), close(c);
}

static void test_strangers_logged(void **state) {
    (void)state;
    const int port = free_port();
    tandem_test_log_capture(TANDEM_LOG_WARN);
    rank_run r[2];
    start_with(&r[0], port, 2, 0, 3000, 0, 200, NULL);
    const int a = raw_send(port, "HELLO THERE, I AM NOT A RANK AT ALL", 35);
    const int c = raw_send(port, NULL, 0);
    sleep_ms(500); /* the silent one expires */
    start(&r[1], port, 2, 1, 3000, 0);
    join(&r[0]), join(&r[1]);
    const char *log = tandem_test_log_text();
    if (r[0].st != TANDEM_OK || r[1].st != TANDEM_OK) fail_msg("%s / %s", r[0].err, r[1].err);
    if (!strstr(log, "not a Tandem rank (first bytes 48 45 4c 4c") || !strstr(log, "no complete hello within 0.2 s"))
        fail_msg("log: \"%s\"; expected the garbage and the silent connection dropped, each named", log);
    tandem_test_log_stop();
    close(a), close(c);
}

static void test_no_rank0(void **state) {
    (void)state;
    const int port = free_port();
    rank_run r;
    start(&r, port, 2, 1, 700, 0);
    join(&r);
    char want[80];
    snprintf(want, sizeof want, "rank 0 at 127.0.0.1:%d not reachable after 1 s", port);
    expect_error(&r, TANDEM_E_IO, want, "Connection refused");
    assert_true(r.took_s < 1.5);
}

static void test_port_in_use(void **state) {
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 1), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    rank_run r;
    start(&r, ntohs(a.sin_port), 2, 0, 1000, 0);
    join(&r);
    close(fd);
    expect_error(&r, TANDEM_E_IO, "cannot listen on 127.0.0.1:", "in use");
}

static void test_bad_endpoints(void **state) {
    (void)state;
    static const char *const bad[][2] = {
        {"127.0.0.1", "expected HOST:PORT"},          {"127.0.0.1:0", "expected an integer from 1 to 65535"},
        {"h:99999", "port '99999'"},                  {":29500", "no host"},
        {"::1:29500", "IPv6 address in brackets"},    {"[::1]29500", "expected [IPv6]:PORT"},
        {"a..invalid:29500", "does not resolve"},     {"h:12x", "port '12x'"},
    };
    unsigned char id[8] = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tandem_rdzv_options o = {.endpoint = bad[i][0], .world = 2, .rank = 1, .timeout_ms = 500};
        const tandem_status st = tandem_rendezvous(&o, id, sizeof id);
        if (st == TANDEM_OK || !strstr(tandem_last_error(), bad[i][1]) || !strstr(tandem_last_error(), bad[i][0]))
            fail_msg("endpoint '%s': %s \"%s\"; expected an error naming it and \"%s\"", bad[i][0],
                     tandem_status_name(st), tandem_last_error(), bad[i][1]);
    }
    tandem_rdzv_options o = {.endpoint = "127.0.0.1:1", .world = 2, .rank = 2, .timeout_ms = 500};
    assert_int_equal(tandem_rendezvous(&o, id, sizeof id), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "rank 2 of world size 2"));
}

static void test_cancel(void **state) {
    (void)state;
    static volatile int stop;
    stop = 0;
    rank_run r;
    start_with(&r, free_port(), 2, 0, 30000, 0, 0, &stop);
    sleep_ms(300);
    stop = 1;
    join(&r);
    expect_error(&r, TANDEM_E_STATE, "stopped by request", NULL);
    assert_true(r.took_s < 1.0);
}

static int fds_at_start;

/* Last: every socket of the cases above (rank 0's listener and connections, the peers') closed. */
static void test_no_descriptor_left(void **state) {
    (void)state;
    const int now = tandem_test_open_fds();
    if (now != fds_at_start) fail_msg("%d descriptors open after the cases, %d before", now, fds_at_start);
}

int main(void) {
    rng = (tandem_rng){tandem_test_seed("test_rendezvous")};
    fds_at_start = tandem_test_open_fds();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_ranks_peers_first),
        cmocka_unit_test(test_missing_rank_named),
        cmocka_unit_test(test_wrong_world_size),
        cmocka_unit_test(test_rank_twice),
        cmocka_unit_test(test_rank_out_of_range),
        cmocka_unit_test(test_strangers_ignored),
        cmocka_unit_test(test_strangers_logged),
        cmocka_unit_test(test_no_rank0),
        cmocka_unit_test(test_port_in_use),
        cmocka_unit_test(test_bad_endpoints),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_no_descriptor_left),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
