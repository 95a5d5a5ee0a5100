/* os.h — OS services the runtime uses: counted allocation, threads, locks, clock, files.
 * Owns nothing global except the allocation counter. */
#ifndef TANDEM_PLATFORM_OS_H
#define TANDEM_PLATFORM_OS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "tandem.h"

/* ---- counted allocation: every heap allocation made by runtime code goes through these,
 * so tandem_alloc_count() can prove that nothing is allocated after commit. ---- */
void *tandem_malloc(size_t bytes);
void *tandem_calloc(size_t n, size_t size);
void *tandem_realloc(void *p, size_t bytes);
void tandem_free(void *p);
void *tandem_aligned_alloc(size_t alignment, size_t bytes); /* free with tandem_aligned_free */
void tandem_aligned_free(void *p);
char *tandem_strdup(const char *s);
/* Count an allocation made elsewhere (driver memory, pinned memory). */
void tandem_alloc_note(void);

/* ---- threads ---- */
typedef struct tandem_thread { pthread_t handle; } tandem_thread;
typedef void *(*tandem_thread_fn)(void *arg);
tandem_status tandem_thread_start(tandem_thread *t, tandem_thread_fn fn, void *arg, const char *name);
void *tandem_thread_join(tandem_thread *t);

typedef struct tandem_mutex { pthread_mutex_t m; } tandem_mutex;
typedef struct tandem_cond { pthread_cond_t c; } tandem_cond;
void tandem_mutex_init(tandem_mutex *m);
void tandem_mutex_destroy(tandem_mutex *m);
void tandem_mutex_lock(tandem_mutex *m);
void tandem_mutex_unlock(tandem_mutex *m);
void tandem_cond_init(tandem_cond *c);   /* uses the monotonic clock for timed waits */
void tandem_cond_destroy(tandem_cond *c);
void tandem_cond_wait(tandem_cond *c, tandem_mutex *m);
/* Returns 0 when signalled (or spuriously woken), 1 on timeout. */
int tandem_cond_timedwait_ns(tandem_cond *c, tandem_mutex *m, uint64_t timeout_ns);
void tandem_cond_signal(tandem_cond *c);
void tandem_cond_broadcast(tandem_cond *c);

/* ---- clock ---- */
uint64_t tandem_now_ns(void); /* monotonic */
int tandem_cpu_count(void);
size_t tandem_ram_bytes(void); /* physical RAM (sysconf); 0 when unknown */

/* ---- files ---- */
/* Read a whole regular file into a new buffer (NUL-terminated, not counted in *len); at most
 * TANDEM_FILE_READ_MAX bytes (see tandem_file_read_limited for other limits). */
#define TANDEM_FILE_READ_MAX ((uint64_t)4 << 30)
tandem_status tandem_file_read_all(const char *path, char **data, size_t *len);
/* Write atomically: temp file in the same directory, fsync, rename over path, fsync the
 * directory. A crash at any point leaves either the old file or the new one, never a mix. */
tandem_status tandem_file_write_atomic(const char *path, const void *data, size_t len);
int tandem_file_exists(const char *path);

/* ---- file types: what Tandem reads and replaces (docs/RELIABILITY.md, "Inputs and outputs") ---- */
/* "a FIFO", "a character device", "a directory", ... for messages. */
const char *tandem_file_type_name(unsigned mode);
/* May path be replaced by an output? OK when nothing is there or a regular file is;
 * TANDEM_E_IO naming path and what is there for a FIFO, socket, device, directory or a
 * symbolic link (an output never goes through a link: the rename would replace the link
 * itself, and writing to its target would write where the user did not name). Only the last
 * component counts: directories on the way may be links. what names the writer in the
 * message ("checkpoint", "write_atomic"). Allocates nothing. */
tandem_status tandem_file_check_output(const char *path, const char *what);
/* Open path for reading without ever blocking on the open itself (O_NONBLOCK, then fstat):
 * a FIFO, socket, device or directory is refused (TANDEM_E_IO naming path and its type);
 * a regular file larger than max_bytes (0 = no limit) is refused with TANDEM_E_BUDGET naming
 * the size, the limit and raise_hint (how to raise it, may be NULL). On success *fd is open
 * in blocking mode and *size holds the file's size. Allocates nothing. */
tandem_status tandem_file_open_input(const char *path, uint64_t max_bytes, const char *raise_hint, int *fd,
                                     uint64_t *size);
/* TANDEM_OK while this process can still open a file; else TANDEM_E_IO saying the open-files
 * limit is reached (EMFILE: `ulimit -n`, ENFILE: the system's table) and how to raise it: a
 * failed open of a dataset file is then the system's limit, not the file's fault. Opens and
 * closes /dev/null; allocates nothing. */
tandem_status tandem_file_fds_check(void);
/* tandem_file_read_all for a regular file of at most max_bytes (the same rules as
 * tandem_file_open_input; a file that grows past the limit while read is refused too). */
tandem_status tandem_file_read_limited(const char *path, uint64_t max_bytes, const char *raise_hint,
                                       char **data, size_t *len);
/* Read bytes [0, bytes) of the regular file open on fd (path names it in messages) into buf, in
 * bounded pread calls (at most TANDEM_FILE_READ_CHUNK each, EINTR retried). A file that ends
 * before `bytes` (truncated while read) is TANDEM_E_IO naming path and how much was there.
 * Allocates nothing. */
#define TANDEM_FILE_READ_CHUNK ((size_t)64 << 20)
tandem_status tandem_file_read_exact(int fd, const char *path, void *buf, size_t bytes);
/* mkdir -p */
tandem_status tandem_mkdir_p(const char *path);

#endif
