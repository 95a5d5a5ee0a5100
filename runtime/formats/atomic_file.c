/* atomic_file.c — streaming atomic file replacement (see atomic_file.h). */
#include "runtime/formats/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "platform/os/log.h"
#include "platform/os/os.h"

static atomic_uint atomic_file_seq;

static void atomic_reset(tandem_atomic_file *f) {
    f->fd = -1;
    f->path[0] = f->tmp[0] = f->dir[0] = '\0';
}

tandem_status tandem_atomic_open(tandem_atomic_file *f, const char *path) {
    atomic_reset(f);
    if (!path || !path[0]) return tandem_fail(TANDEM_E_INVALID, "atomic write: empty path");
    size_t len = strlen(path);
    if (len >= sizeof f->path)
        return tandem_fail(TANDEM_E_INVALID, "atomic write %s: path longer than %zu bytes", path,
                           sizeof f->path - 1);
    memcpy(f->path, path, len + 1);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!base[0])
        return tandem_fail(TANDEM_E_INVALID, "atomic write %s: path names a directory, expected a file",
                           path);
    if (!slash) {
        snprintf(f->dir, sizeof f->dir, ".");
    } else {
        size_t dlen = slash == path ? 1 : (size_t)(slash - path); /* "/x" → "/" */
        memcpy(f->dir, path, dlen);
        f->dir[dlen] = '\0';
    }
    TANDEM_TRY(tandem_file_check_output(path, "atomic write"));
    for (int attempt = 0; attempt < 64; attempt++) {
        unsigned seq = atomic_fetch_add(&atomic_file_seq, 1);
        int n = snprintf(f->tmp, sizeof f->tmp, "%s/.%s.tmp.%ld.%u", f->dir, base, (long)getpid(), seq);
        if (n < 0 || (size_t)n >= sizeof f->tmp)
            return tandem_fail(TANDEM_E_INVALID, "atomic write %s: temp path too long", path);
        int fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            f->fd = fd;
            return TANDEM_OK;
        }
        if (errno != EEXIST)
            return tandem_fail(TANDEM_E_IO, "atomic write %s: create temp file %s: %s", path, f->tmp,
                               strerror(errno));
    }
    return tandem_fail(TANDEM_E_IO, "atomic write %s: no free temp name in %s", path, f->dir);
}

tandem_status tandem_atomic_write(tandem_atomic_file *f, const void *data, size_t len) {
    if (f->fd < 0) return tandem_fail(TANDEM_E_STATE, "atomic write %s: file is not open", f->path);
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(f->fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return tandem_fail(TANDEM_E_IO, "atomic write %s: write %s: %s", f->path, f->tmp,
                               strerror(errno));
        }
        p += w;
        len -= (size_t)w;
    }
    return TANDEM_OK;
}

void tandem_atomic_abort(tandem_atomic_file *f) {
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
    }
    if (f->tmp[0]) unlink(f->tmp);
    f->tmp[0] = '\0';
}

tandem_status tandem_atomic_commit(tandem_atomic_file *f) {
    if (f->fd < 0) return tandem_fail(TANDEM_E_STATE, "atomic write %s: file is not open", f->path);
    tandem_status st = TANDEM_OK;
    if (fsync(f->fd) != 0)
        st = tandem_fail(TANDEM_E_IO, "atomic write %s: fsync %s: %s", f->path, f->tmp, strerror(errno));
    /* close can report a deferred write error (NFS, quota) */
    if (close(f->fd) != 0 && st == TANDEM_OK)
        st = tandem_fail(TANDEM_E_IO, "atomic write %s: close %s: %s", f->path, f->tmp, strerror(errno));
    f->fd = -1;
    /* again just before the rename: something may have appeared there while we wrote */
    if (st == TANDEM_OK) st = tandem_file_check_output(f->path, "atomic write");
    if (st == TANDEM_OK && rename(f->tmp, f->path) != 0)
        st = tandem_fail(TANDEM_E_IO, "atomic write %s: rename %s over it: %s", f->path, f->tmp,
                         strerror(errno));
    if (st != TANDEM_OK) {
        tandem_atomic_abort(f);
        return st;
    }
    f->tmp[0] = '\0';
    /* make the rename itself durable */
    int dfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return tandem_fail(TANDEM_E_IO, "atomic write %s: open directory %s: %s", f->path, f->dir,
                           strerror(errno));
    int rc = fsync(dfd);
    int e = errno;
    close(dfd);
    /* some file systems cannot fsync a directory (EINVAL): the rename is as durable as they make it */
    if (rc != 0 && e != EINVAL)
        return tandem_fail(TANDEM_E_IO, "atomic write %s: fsync directory %s: %s", f->path, f->dir,
                           strerror(e));
    return TANDEM_OK;
}

int tandem_atomic_is_temp_of(const char *name, const char *base) {
    size_t bl = strlen(base);
    return name[0] == '.' && strncmp(name + 1, base, bl) == 0 && strncmp(name + 1 + bl, ".tmp.", 5) == 0;
}
