/* atomic_file.h — a streaming variant of tandem_file_write_atomic (platform/os/os.h) for files
 * written piece by piece (checkpoints, PNGs, .npy): the bytes go to a fresh temp file next to
 * the target ("<dir>/.<base>.tmp.<pid>.<n>", O_EXCL), commit fsyncs it, renames it over the
 * target and fsyncs the directory; abort (or a crash) leaves the old target untouched.
 * Owns nothing global except a temp-name counter. No heap allocation (paths live in the struct),
 * so checkpoints and plots can be written after the pool commit. */
#ifndef TANDEM_RUNTIME_ATOMIC_FILE_H
#define TANDEM_RUNTIME_ATOMIC_FILE_H

#include <limits.h>
#include <stddef.h>

#include "tandem.h"

typedef struct tandem_atomic_file {
    int fd; /* -1 when not open */
    char path[PATH_MAX];
    char tmp[PATH_MAX];
    char dir[PATH_MAX];
} tandem_atomic_file;

/* Create the temp file for path. On failure nothing is left behind and f->fd is -1. */
tandem_status tandem_atomic_open(tandem_atomic_file *f, const char *path);
/* Append bytes to the temp file (retries short writes and EINTR). */
tandem_status tandem_atomic_write(tandem_atomic_file *f, const void *data, size_t len);
/* fsync, close, rename over the target, fsync the directory. On failure the temp is removed. */
tandem_status tandem_atomic_commit(tandem_atomic_file *f);
/* Close and remove the temp file (safe to call on a closed or never-opened struct). */
void tandem_atomic_abort(tandem_atomic_file *f);

/* True when name (a directory entry) is a temp file of tandem_atomic_open for target base name
 * base, i.e. ".<base>.tmp." followed by anything. */
int tandem_atomic_is_temp_of(const char *name, const char *base);

#endif
