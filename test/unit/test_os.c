/* test_os.c — OS services: atomic file replace (including a crash between temp and rename),
 * file errors, threads with mutex/condvar, timed waits, the monotonic clock, the log hook,
 * the per-thread error message and the allocation counter. */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "platform/os/os_file_internal.h"
#include "test/fixtures.h"

static tandem_rng rng;
static char scratch[256];

static int setup_scratch(void **state) {
    (void)state;
    return tandem_test_mkdtemp(scratch, sizeof scratch, "test_os");
}
static int teardown_scratch(void **state) {
    (void)state;
    return tandem_test_rmtree(scratch);
}

static void expect_file(const char *path, const void *want, size_t n) {
    char *got = NULL;
    size_t len = 0;
    assert_int_equal(tandem_file_read_all(path, &got, &len), TANDEM_OK);
    assert_int_equal(len, n);
    assert_memory_equal(got, want, n);
    assert_int_equal(got[len], '\0');
    tandem_free(got);
}

/* Names in the scratch dir that look like our temp files. */
static int count_temps(void) {
    DIR *d = opendir(scratch);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(d);
    return n;
}

static void remove_temps(void) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -f '%s'/.*.tmp.*", scratch);
    assert_int_equal(system(cmd), 0);
}

static void test_atomic_write_replaces(void **state) {
    (void)state;
    char path[320];
    snprintf(path, sizeof path, "%s/replace.bin", scratch);
    for (int round = 0; round < 4; round++) {
        size_t n = (size_t)tandem_rng_int(&rng, 0, 200000);
        unsigned char *buf = malloc(n + 1);
        tandem_rng_fill_bytes(&rng, buf, n);
        assert_int_equal(tandem_file_write_atomic(path, buf, n), TANDEM_OK);
        expect_file(path, buf, n);
        free(buf);
    }
    assert_int_equal(count_temps(), 0);
}

/* A child runs the atomic write up to `stage` and _exits, as a crash there would leave it. */
static void crash_at(const char *path, const void *data, size_t n, int stage) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        tandem_status st = tandem_file_write_atomic_until(path, data, n, stage);
        _exit(st == TANDEM_OK ? 0 : 1);
    }
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
}

static void test_atomic_write_crash_keeps_old(void **state) {
    (void)state;
    char path[320];
    snprintf(path, sizeof path, "%s/ckpt.bin", scratch);
    size_t n_old = 4096 + (size_t)tandem_rng_int(&rng, 0, 4096);
    size_t n_new = 4096 + (size_t)tandem_rng_int(&rng, 0, 4096);
    unsigned char *old_data = malloc(n_old), *new_data = malloc(n_new);
    tandem_rng_fill_bytes(&rng, old_data, n_old);
    tandem_rng_fill_bytes(&rng, new_data, n_new);
    assert_int_equal(tandem_file_write_atomic(path, old_data, n_old), TANDEM_OK);

    const int stages[] = {TANDEM_FILE_STAGE_TEMP_OPEN, TANDEM_FILE_STAGE_TEMP_PARTIAL,
                          TANDEM_FILE_STAGE_TEMP_SYNCED};
    for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++) {
        crash_at(path, new_data, n_new, stages[i]);
        expect_file(path, old_data, n_old); /* the old file is intact and readable */
        assert_int_equal(count_temps(), (int)i + 1); /* the crash left its temp behind */
    }
    /* A later writer is not confused by the stale temps. */
    assert_int_equal(tandem_file_write_atomic(path, new_data, n_new), TANDEM_OK);
    expect_file(path, new_data, n_new);
    remove_temps();

    /* A crash after the rename leaves the whole new file. */
    crash_at(path, old_data, n_old, TANDEM_FILE_STAGE_RENAMED);
    expect_file(path, old_data, n_old);
    assert_int_equal(count_temps(), 0);
    free(old_data);
    free(new_data);
}

static void test_atomic_write_missing_dir(void **state) {
    (void)state;
    char path[320];
    snprintf(path, sizeof path, "%s/no_such_dir/file.bin", scratch);
    assert_int_equal(tandem_file_write_atomic(path, "x", 1), TANDEM_E_IO);
    assert_non_null(strstr(tandem_last_error(), path));
    assert_non_null(strstr(tandem_last_error(), "open"));
    assert_false(tandem_file_exists(path));
}

static void test_read_missing_names_path(void **state) {
    (void)state;
    char path[320];
    snprintf(path, sizeof path, "%s/absent-%llu.txt", scratch, (unsigned long long)tandem_rng_next(&rng));
    char *data = (char *)1;
    size_t len = 7;
    assert_int_equal(tandem_file_read_all(path, &data, &len), TANDEM_E_IO);
    assert_null(data);
    assert_int_equal(len, 0);
    assert_non_null(strstr(tandem_last_error(), path));
    assert_false(tandem_file_exists(path));
}

/* Out of file descriptors (EMFILE): an input's open says it is the process's limit, names the
 * file and `ulimit -n`; tandem_file_fds_check says the same, and OK once one is free. In a child. */
static void test_fd_limit_named(void **state) {
    (void)state;
    char path[320];
    snprintf(path, sizeof path, "%s/fd-%llu.txt", scratch, (unsigned long long)tandem_rng_next(&rng));
    CHECK(tandem_file_write_atomic(path, "x", 1));
    const int pid = tandem_test_fork(64);
    assert_true(pid >= 0);
    if (pid == 0) {
        int last = -1;
        for (int f; (f = open("/dev/null", O_RDONLY)) >= 0;) last = f;
        int fd = -1, ok = 1;
        ok &= tandem_file_open_input(path, 0, NULL, &fd, NULL) == TANDEM_E_IO;
        printf("child: %s\n", tandem_last_error());
        ok &= strstr(tandem_last_error(), path) && strstr(tandem_last_error(), "ulimit -n") &&
              strstr(tandem_last_error(), "system limit");
        ok &= tandem_file_fds_check() == TANDEM_E_IO && strstr(tandem_last_error(), "ulimit -n");
        close(last);
        ok &= tandem_file_fds_check() == TANDEM_OK;
        fflush(stdout);
        _exit(ok ? 0 : 1);
    }
    assert_int_equal(tandem_test_child_exit(pid), 0);
}

static void test_read_proc_file(void **state) {
    (void)state;
    /* /proc files report size 0; the reader must not trust st_size. */
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(tandem_file_read_all("/proc/self/status", &data, &len), TANDEM_OK);
    assert_true(len > 0);
    assert_int_equal(strlen(data), len);
    assert_non_null(strstr(data, "Name:"));
    tandem_free(data);
}

static void test_mkdir_p(void **state) {
    (void)state;
    char path[320], file[360];
    snprintf(path, sizeof path, "%s/a/b//c/d", scratch);
    assert_int_equal(tandem_mkdir_p(path), TANDEM_OK);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(tandem_mkdir_p(path), TANDEM_OK); /* existing: fine */
    snprintf(file, sizeof file, "%s/plain", path);
    assert_int_equal(tandem_file_write_atomic(file, "abc", 3), TANDEM_OK);
    assert_true(tandem_file_exists(file));
    snprintf(file, sizeof file, "%s/plain/sub", path);
    assert_int_equal(tandem_mkdir_p(file), TANDEM_E_IO);
    assert_non_null(strstr(tandem_last_error(), "not a directory"));
}

/* ---- threads ---------------------------------------------------------------------------- */

#define QCAP 8
typedef struct {
    tandem_mutex m;
    tandem_cond not_empty, not_full;
    uint64_t q[QCAP];
    int head, count, n_items;
    uint64_t seed;
    uint64_t consumed_sum, consumed_xor;
    int consumed;
} pc_state;

static void *producer(void *arg) {
    pc_state *s = arg;
    tandem_rng r = {s->seed};
    for (int i = 0; i < s->n_items; i++) {
        uint64_t v = tandem_rng_next(&r);
        tandem_mutex_lock(&s->m);
        while (s->count == QCAP) tandem_cond_wait(&s->not_full, &s->m);
        s->q[(s->head + s->count) % QCAP] = v;
        s->count++;
        tandem_cond_signal(&s->not_empty);
        tandem_mutex_unlock(&s->m);
    }
    return NULL;
}

static void *consumer(void *arg) {
    pc_state *s = arg;
    for (int i = 0; i < s->n_items; i++) {
        tandem_mutex_lock(&s->m);
        while (s->count == 0) tandem_cond_wait(&s->not_empty, &s->m);
        uint64_t v = s->q[s->head];
        s->head = (s->head + 1) % QCAP;
        s->count--;
        tandem_cond_signal(&s->not_full);
        tandem_mutex_unlock(&s->m);
        s->consumed_sum += v;
        s->consumed_xor ^= v * (uint64_t)(i + 1); /* order-sensitive */
        s->consumed++;
    }
    return NULL;
}

static void test_producer_consumer(void **state) {
    (void)state;
    pc_state s;
    memset(&s, 0, sizeof s);
    tandem_mutex_init(&s.m);
    tandem_cond_init(&s.not_empty);
    tandem_cond_init(&s.not_full);
    s.n_items = 20000;
    s.seed = tandem_rng_next(&rng);
    tandem_thread tp, tc;
    assert_int_equal(tandem_thread_start(&tc, consumer, &s, "test-consumer"), TANDEM_OK);
    assert_int_equal(tandem_thread_start(&tp, producer, &s, "a-very-long-producer-thread-name"), TANDEM_OK);
    tandem_thread_join(&tp);
    tandem_thread_join(&tc);

    tandem_rng r = {s.seed};
    uint64_t sum = 0, x = 0;
    for (int i = 0; i < s.n_items; i++) {
        uint64_t v = tandem_rng_next(&r);
        sum += v;
        x ^= v * (uint64_t)(i + 1);
    }
    assert_int_equal(s.consumed, s.n_items);
    assert_true(s.consumed_sum == sum);
    assert_true(s.consumed_xor == x);
    tandem_cond_destroy(&s.not_empty);
    tandem_cond_destroy(&s.not_full);
    tandem_mutex_destroy(&s.m);
}

static void test_timed_wait_times_out(void **state) {
    (void)state;
    tandem_mutex m;
    tandem_cond c;
    tandem_mutex_init(&m);
    tandem_cond_init(&c);
    const uint64_t timeout = 30 * 1000000ull;
    tandem_mutex_lock(&m);
    uint64_t t0 = tandem_now_ns();
    int timed_out = 0;
    /* Spurious wake-ups return 0; keep waiting until the deadline has passed. */
    while (!timed_out && tandem_now_ns() - t0 < timeout) {
        uint64_t left = timeout - (tandem_now_ns() - t0);
        timed_out = tandem_cond_timedwait_ns(&c, &m, left);
    }
    uint64_t dt = tandem_now_ns() - t0;
    tandem_mutex_unlock(&m);
    assert_true(timed_out);
    assert_true(dt >= timeout);
    assert_true(dt < 5000 * 1000000ull);
    tandem_cond_destroy(&c);
    tandem_mutex_destroy(&m);
}

static void test_clock_monotonic(void **state) {
    (void)state;
    uint64_t prev = tandem_now_ns();
    for (int i = 0; i < 100000; i++) {
        uint64_t t = tandem_now_ns();
        assert_true(t >= prev);
        prev = t;
    }
    uint64_t t0 = tandem_now_ns();
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
    uint64_t dt = tandem_now_ns() - t0;
    assert_true(dt >= 20 * 1000000ull);
    assert_true(dt < 5000 * 1000000ull);
    assert_true(tandem_cpu_count() >= 1);
}

/* ---- logging and errors --------------------------------------------------------------------- */

typedef struct {
    int calls;
    tandem_log_level level;
    char msg[2048];
} captured;

static void capture_hook(void *user, tandem_log_level level, const char *msg) {
    captured *c = user;
    c->calls++;
    c->level = level;
    snprintf(c->msg, sizeof c->msg, "%s", msg);
}

static void test_log_hook(void **state) {
    (void)state;
    captured cap = {0};
    int token = (int)tandem_rng_int(&rng, 0, 1000000);
    tandem_log_set_hook(capture_hook, &cap);
    tandem_logf(TANDEM_LOG_WARN, "disk %d is %s", token, "slow");
    assert_int_equal(cap.calls, 1);
    assert_int_equal(cap.level, TANDEM_LOG_WARN);
    char want[64];
    snprintf(want, sizeof want, "disk %d is slow", token);
    assert_string_equal(cap.msg, want);

    /* Default level INFO: DEBUG lines are dropped, and so is tandem_fail's echo. */
    tandem_logf(TANDEM_LOG_DEBUG, "hidden");
    tandem_fail(TANDEM_E_IO, "quiet failure");
    assert_int_equal(cap.calls, 1);
    tandem_log_set_level(TANDEM_LOG_DEBUG);
    tandem_fail(TANDEM_E_FORMAT, "bad header in %s", "x.bin");
    assert_int_equal(cap.calls, 2);
    assert_int_equal(cap.level, TANDEM_LOG_DEBUG);
    assert_non_null(strstr(cap.msg, "bad header in x.bin"));
    assert_non_null(strstr(cap.msg, "TANDEM_E_FORMAT"));
    tandem_log_set_level(TANDEM_LOG_ERROR);
    tandem_logf(TANDEM_LOG_WARN, "dropped");
    assert_int_equal(cap.calls, 2);
    tandem_log_set_level(TANDEM_LOG_INFO);

    /* Long lines are cut and marked. */
    char longarg[3000];
    memset(longarg, 'z', sizeof longarg - 1);
    longarg[sizeof longarg - 1] = '\0';
    tandem_logf(TANDEM_LOG_ERROR, "%s", longarg);
    assert_int_equal(cap.calls, 3);
    size_t l = strlen(cap.msg);
    assert_true(l > 100 && l < sizeof longarg);
    assert_string_equal(cap.msg + l - 3, "...");

    /* NULL restores the default hook: "tandem: <level>: msg" on stderr. */
    tandem_log_set_hook(NULL, NULL);
    char errpath[320];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", scratch);
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(errpath, "w");
    assert_non_null(f);
    dup2(fileno(f), 2);
    tandem_logf(TANDEM_LOG_INFO, "restored %d", token);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(f);
    assert_int_equal(cap.calls, 3);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(tandem_file_read_all(errpath, &text, &len), TANDEM_OK);
    snprintf(want, sizeof want, "tandem: info: restored %d\n", token);
    assert_string_equal(text, want);
    tandem_free(text);
}

static void *thread_error(void *arg) {
    char *out = arg;
    snprintf(out, 64, "[%s]", tandem_last_error()); /* a fresh thread has no error */
    tandem_fail(TANDEM_E_DEVICE, "thread failure %d", 2);
    strncat(out, tandem_last_error(), 63 - strlen(out));
    return NULL;
}

static void test_last_error_per_thread(void **state) {
    (void)state;
    assert_int_equal(tandem_fail(TANDEM_E_INVALID, "main failure %d", 1), TANDEM_E_INVALID);
    char out[64] = {0};
    tandem_thread t;
    assert_int_equal(tandem_thread_start(&t, thread_error, out, "err"), TANDEM_OK);
    tandem_thread_join(&t);
    assert_string_equal(out, "[]thread failure 2");
    assert_string_equal(tandem_last_error(), "main failure 1");

    /* Adding context with the previous message as an argument works (no overlap). */
    tandem_fail(TANDEM_E_IO, "loading cache: %s", tandem_last_error());
    assert_string_equal(tandem_last_error(), "loading cache: main failure 1");
    assert_string_equal(tandem_status_name(TANDEM_E_BUDGET), "TANDEM_E_BUDGET");
    assert_string_equal(tandem_status_name(TANDEM_OK), "TANDEM_OK");
}

static void test_alloc_counter(void **state) {
    (void)state;
    uint64_t c0 = tandem_alloc_count();
    void *a = tandem_malloc(10);
    assert_true(tandem_alloc_count() == c0 + 1);
    void *b = tandem_calloc(3, 8);
    assert_memory_equal(b, (char[24]){0}, 24);
    char *s = tandem_strdup("tandem");
    void *al = tandem_aligned_alloc(4096, 100);
    assert_true(((uintptr_t)al & 4095) == 0);
    a = tandem_realloc(a, 1000);
    tandem_alloc_note();
    assert_true(tandem_alloc_count() == c0 + 6);
    assert_string_equal(s, "tandem");
    tandem_free(a);
    tandem_free(b);
    tandem_free(s);
    tandem_aligned_free(al);
    assert_true(tandem_alloc_count() == c0 + 6); /* frees do not count */
}

int main(void) {
    rng.s = tandem_test_seed("test_os");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_atomic_write_replaces),
        cmocka_unit_test(test_atomic_write_crash_keeps_old),
        cmocka_unit_test(test_atomic_write_missing_dir),
        cmocka_unit_test(test_read_missing_names_path),
        cmocka_unit_test(test_read_proc_file),
        cmocka_unit_test(test_fd_limit_named),
        cmocka_unit_test(test_mkdir_p),
        cmocka_unit_test(test_producer_consumer),
        cmocka_unit_test(test_timed_wait_times_out),
        cmocka_unit_test(test_clock_monotonic),
        cmocka_unit_test(test_log_hook),
        cmocka_unit_test(test_last_error_per_thread),
        cmocka_unit_test(test_alloc_counter),
    };
    return cmocka_run_group_tests(tests, setup_scratch, teardown_scratch);
}
