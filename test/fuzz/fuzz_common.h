/* fuzz_common.h — shared by the fuzz targets (test/fuzz/fuzz_<name>.c): the parser contract
 * every target asserts, a silent log hook, and a per-process scratch file for parsers that
 * only read paths.
 *
 * The contract (DESIGN.md §9.4): a parser given any bytes returns TANDEM_OK, or a valid
 * tandem_status with a non-empty tandem_last_error() set by that call; it never crashes and
 * never leaks (ASan/LSan in `make fuzz` and SANITIZE= builds). A broken invariant calls
 * fuzz_fail(), which prints what broke and aborts, so libFuzzer saves the input and the
 * replay driver (replay_main.c) reports the corpus file and mutation. */
#ifndef TANDEM_FUZZ_COMMON_H
#define TANDEM_FUZZ_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform/os/log.h"
#include "tandem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline void fuzz_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static inline void fuzz_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz: contract broken: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    abort();
}

#define FUZZ_ASSERT(cond)                                                                    \
    do {                                                                                     \
        if (!(cond)) fuzz_fail("%s:%d: %s", __FILE__, __LINE__, #cond);                      \
    } while (0)

static inline void fuzz_log_sink(void *user, tandem_log_level level, const char *msg) {
    /* Touch the message so a bad format argument still reaches the sanitizers. */
    volatile size_t n = strlen(msg);
    (void)user;
    (void)level;
    (void)n;
}

/* Once per process: library log lines go nowhere (messages are still formatted). */
static inline void fuzz_init(void) {
    static int done;
    if (done) return;
    done = 1;
    tandem_log_set_hook(fuzz_log_sink, NULL);
    tandem_log_set_level(TANDEM_LOG_INFO);
}

/* Clear the thread's error message, so a failure must set its own. */
static inline void fuzz_clear_error(void) {
    tandem_fail(TANDEM_OK, "%s", "");
}

/* The failure half of the contract: st is OK, or a real error code with a message. */
static inline void fuzz_check_status(tandem_status st, const char *call) {
    if (st == TANDEM_OK) return;
    if ((int)st < (int)TANDEM_E_INVALID || (int)st > (int)TANDEM_E_INTERNAL)
        fuzz_fail("%s returned status %d, not a tandem_status", call, (int)st);
    const char *msg = tandem_last_error();
    if (!msg || !msg[0]) fuzz_fail("%s failed with %s but left no message", call, tandem_status_name(st));
}

/* The same, and st must be one of the codes the parser documents (TANDEM_OK always allowed;
 * list ends with -1). NOMEM is always allowed: running out of memory is not the input's fault. */
static inline void fuzz_check_status_in(tandem_status st, const char *call, ...) {
    fuzz_check_status(st, call);
    if (st == TANDEM_OK || st == TANDEM_E_NOMEM) return;
    va_list ap;
    va_start(ap, call);
    for (int c = va_arg(ap, int); c >= 0; c = va_arg(ap, int)) {
        if ((tandem_status)c == st) {
            va_end(ap);
            return;
        }
    }
    va_end(ap);
    fuzz_fail("%s returned %s, which it does not document (message: %s)", call, tandem_status_name(st),
              tandem_last_error());
}

/* ---- scratch file ---- */

static char fuzz_tmp_path_[512];

static inline void fuzz_tmp_cleanup(void) {
    if (fuzz_tmp_path_[0]) unlink(fuzz_tmp_path_);
}

/* Path of this process's scratch file for `tag` (one tag per target), removed at exit. */
static inline const char *fuzz_tmp_path(const char *tag) {
    if (!fuzz_tmp_path_[0]) {
        /* memory-backed when possible: a fuzzer rewrites this file thousands of times a second */
        const char *dir = getenv("TMPDIR");
        if (!dir || !dir[0]) dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(fuzz_tmp_path_, sizeof fuzz_tmp_path_, "%s/tandem-fuzz-%s-%ld", dir, tag, (long)getpid());
        atexit(fuzz_tmp_cleanup);
    }
    return fuzz_tmp_path_;
}

/* Replace the scratch file with data; a failure here is the harness's, not the parser's. */
static inline const char *fuzz_write_tmp(const char *tag, const void *data, size_t size) {
    const char *path = fuzz_tmp_path(tag);
    unlink(path); /* a new file, not a truncated one: ext4 flushes a file truncated and rewritten */
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        fprintf(stderr, "fuzz: cannot write scratch file %s\n", path);
        abort();
    }
    return path;
}

#endif
