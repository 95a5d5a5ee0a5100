/* fixtures.h — the helpers unit tests share (test/fixtures.c, linked into every cmocka test
 * binary by mk/10-test.mk): status checks, temporary directories, log capture, audio and
 * corpus writers, file and PNG readers, the backend a test runs on. The seeded RNG and the
 * seed itself stay in test/testutil.h (header-only, also used by the emulator and fuzz code).
 * Failures end the current cmocka test (fail_msg; outside a test, as in test/fuzz/gen_corpus.c,
 * the process exits) unless a function says it returns an error. Threads: the log capture may
 * be fed from any thread; everything else from the test's thread. Allocations are plain libc
 * ones, never counted by tandem_alloc_count. Tests name themselves test_<module> after the
 * runtime module they cover (docs/TESTING.md, "Fixtures and one test per module"). */
#ifndef TANDEM_TEST_FIXTURES_H
#define TANDEM_TEST_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>
#include <sndfile.h>

#include "tandem.h"
#include "test/testutil.h"

/* A call that must succeed: otherwise the test fails with the expression, status and message. */
#define CHECK(expr)                                                                       \
    do {                                                                                  \
        tandem_status st_ = (expr);                                                       \
        if (st_ != TANDEM_OK) fail_msg("%s: %s: %s", #expr, tandem_status_name(st_),      \
                                       tandem_last_error());                              \
    } while (0)

/* ---- training runs ---- */

/* Creates a trainer from cfg and o, runs it into *sum and destroys it. Returns the first
 * failure's status with its message kept as tandem_last_error() (destroy may log). */
tandem_status tandem_test_train_run(const tandem_config *cfg, const tandem_trainer_options *o,
                                    tandem_trainer_summary *sum);
/* A run interrupted after n steps and resumed for n more against the uninterrupted one: before[i]
 * and after[i] must have the bits of full[i] and full[n + i] (fails the test naming the step). */
void tandem_test_expect_resumed_losses(const double *full, const double *before, const double *after, int n);

/* ---- temporary directories ---- */

/* Makes a new directory "$TMPDIR/tandem_<what>.XXXXXX" ($TMPDIR unset or empty: /tmp) and
 * writes its path to dir. Returns 0, or -1 (cmocka's setup convention) when it cannot. */
int tandem_test_mkdtemp(char *dir, size_t cap, const char *what);
/* Removes dir and everything below it (no shell). Returns 0, or -1 when something stayed. */
int tandem_test_rmtree(const char *dir);

/* ---- log capture (tandem_log_set_hook) ---- */

/* Sends every log line at max_level or more severe (TANDEM_LOG_DEBUG: all that pass the
 * library's own level) to a 64 KiB buffer, one line each, emptied first; lines beyond it are
 * dropped. tandem_test_log_stop restores the default hook. */
void tandem_test_log_capture(tandem_log_level max_level);
void tandem_test_log_stop(void);
void tandem_test_log_clear(void);
/* What was captured since the last capture/clear (valid until the next log line). */
const char *tandem_test_log_text(void);

/* ---- audio files (libsndfile) ---- */

/* Opens path for writing in libsndfile's format (e.g. SF_FORMAT_WAV | SF_FORMAT_PCM_16). */
SNDFILE *tandem_test_sf_create(const char *path, int format, int rate, int channels);
/* Writes frames frames of x ([frames, channels] interleaved floats) to path. Integer formats
 * get libsndfile's conversion: lrint(x * (2^(bits-1) - 1)), clipped. */
void tandem_test_write_audio(const char *path, const float *x, int64_t frames, int rate,
                             int channels, int format);

/* ---- corpora as the text index reads them: <dir>/metadata.csv and <dir>/wavs/<id>.wav ---- */

typedef struct tandem_test_corpus {
    char dir[512];
    FILE *meta;
    int count;       /* rows written */
    char path[600];  /* the last tandem_test_corpus_path */
} tandem_test_corpus;

/* Creates dir/wavs (dir itself too when missing) and starts dir/metadata.csv. */
void tandem_test_corpus_open(tandem_test_corpus *c, const char *dir);
/* wavs/<id>.wav from x (see tandem_test_write_audio) and the row "<id>|<text>|<text>". */
void tandem_test_corpus_add(tandem_test_corpus *c, const char *id, const char *text, const float *x,
                            int64_t frames, int rate, int channels, int format);
/* For a file the test writes itself: the path of wavs/<id>.wav (in c->path, valid until the
 * next call), then the row. */
const char *tandem_test_corpus_path(tandem_test_corpus *c, const char *id);
void tandem_test_corpus_row(tandem_test_corpus *c, const char *id, const char *text);
void tandem_test_corpus_close(tandem_test_corpus *c);

/* ---- plain files ---- */

/* Writes len bytes of data to path (replacing it); fails the test when it cannot. */
void tandem_test_write_file(const char *path, const void *data, size_t len);

/* The whole file in a new malloc'd buffer with a NUL after its bytes (*len, may be NULL, does
 * not count it); NULL when it cannot be opened or read. */
void *tandem_test_read_file(const char *path, size_t *len);
/* The same, failing the test when path cannot be read. */
void *tandem_test_read_file_ok(const char *path, size_t *len);
/* Runs the shell command `cmd` with stdout discarded and stderr into errfile, then reads that
 * file into err (NUL-terminated, at most cap - 1 bytes). Returns the exit code (-1: no normal
 * exit). For tests of the `tandem` command line. */
int tandem_test_run_stderr(const char *cmd, const char *errfile, char *err, size_t cap);
/* An RGB PNG through libpng's simplified reader (signature, CRCs and zlib checked): a new
 * malloc'd [h, w, 3] buffer; fails the test with libpng's message on a bad file. */
unsigned char *tandem_test_read_png(const char *path, int *w, int *h);
/* Descriptors this process holds (entries of /proc/self/fd, its own directory handle included):
 * compared before and after, a leaked socket or file shows. */
int tandem_test_open_fds(void);

/* ---- numbers ---- */

/* n floats (at least one) set to NaN, so an output element nobody wrote shows. */
float *tandem_test_falloc_nan(int64_t n);
/* ||got - ref|| / ||ref|| over n elements (the absolute norm when ref is all zero); infinite
 * when got holds a NaN. */
double tandem_test_rel_err(const float *got, const double *ref, int64_t n);

/* ---- deadlines ---- */

/* Runs fn(arg) on a new thread and waits up to ms milliseconds for it to return: 1 when it did,
 * 0 when it is still running (then the thread is left behind, detached, so a test can fail
 * instead of hanging). *took_ms (may be NULL) receives the time waited. */
int tandem_test_finishes_within(void (*fn)(void *), void *arg, int64_t ms, double *took_ms);

/* ---- children ---- */

/* fork() after flushing stdio; in the child the soft limit of open files is lowered to at most
 * nofile (0: left alone). Returns fork's pid (0 in the child). */
int tandem_test_fork(long nofile);
/* Waits for the child pid: its exit status, or -1 when it did not exit normally. */
int tandem_test_child_exit(int pid);

/* ---- devices ---- */

/* TANDEM_BACKEND_CUDA when TANDEM_TEST_BACKEND=cuda (the <test>@cuda variants, see
 * test/run_on_cuda.sh), else TANDEM_BACKEND_HOST. */
tandem_backend tandem_test_backend(void);

#endif
