/* os_file.c — whole-file read, atomic replace (temp + fsync + rename + fsync dir), exists,
 * mkdir -p. The atomic write uses only stack buffers: checkpoints are written during training,
 * after the plan is committed, when the runtime must not allocate. */
#include "platform/os/os.h"
#include "platform/os/os_file_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/os/log.h"

const char *tandem_file_type_name(unsigned mode) {
    switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO (named pipe)";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
    default: return "not a regular file";
    }
}

tandem_status tandem_file_check_output(const char *path, const char *what) {
    struct stat st;
    if (!path || lstat(path, &st) != 0) return TANDEM_OK; /* nothing there (or the open will say why) */
    if (S_ISREG(st.st_mode)) return TANDEM_OK;
    if (S_ISLNK(st.st_mode))
        return tandem_fail(TANDEM_E_IO, "%s %s: the path is a symbolic link; outputs are replaced whole and "
                           "never written through a link: name the link's target itself, or remove the link",
                           what, path);
    return tandem_fail(TANDEM_E_IO, "%s %s: the path is %s, not a regular file; an output only replaces a "
                       "regular file: choose another path", what, path, tandem_file_type_name(st.st_mode));
}

/* EMFILE / ENFILE as a system limit with its fix, after "<what>: ". */
static tandem_status fd_limit(int e, const char *what) {
    struct rlimit rl;
    const unsigned long long cur = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (unsigned long long)rl.rlim_cur : 0;
    if (e == ENFILE)
        return tandem_fail(TANDEM_E_IO, "%s: %s: the system's table of open files is full (a system limit, not a "
                           "problem of the file): close other programs' files or raise fs.file-max", what,
                           strerror(e));
    return tandem_fail(TANDEM_E_IO, "%s: %s: this process has all %llu files it may open (a system limit, not a "
                       "problem of the file): raise it (ulimit -n 65536 before the command, LimitNOFILE= for a "
                       "service) or lower num_workers", what, strerror(e), cur);
}

tandem_status tandem_file_fds_check(void) {
    int f = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (f >= 0) {
        close(f);
        return TANDEM_OK;
    }
    return errno == EMFILE || errno == ENFILE ? fd_limit(errno, "opening a file") : TANDEM_OK;
}

tandem_status tandem_file_open_input(const char *path, uint64_t max_bytes, const char *raise_hint, int *fd,
                                     uint64_t *size) {
    if (!path || !fd) return tandem_fail(TANDEM_E_INVALID, "tandem_file_open_input: NULL argument");
    *fd = -1;
    if (size) *size = 0;
    /* O_NONBLOCK: opening a FIFO without a writer would block for ever; the type is checked
     * on the descriptor itself, so nothing can swap the file between the check and the read */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (f < 0 && (errno == EMFILE || errno == ENFILE)) {
        char what[4200];
        snprintf(what, sizeof what, "open %s", path);
        return fd_limit(errno, what);
    }
    if (f < 0) return tandem_fail(TANDEM_E_IO, "open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0) {
        int e = errno;
        close(f);
        return tandem_fail(TANDEM_E_IO, "fstat %s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return tandem_fail(TANDEM_E_IO, "read %s: the path is %s, expected a regular file (Tandem does not "
                           "read pipes or devices, which may never end)", path, tandem_file_type_name(st.st_mode));
    }
    if (max_bytes && (uint64_t)st.st_size > max_bytes) {
        close(f);
        return tandem_fail(TANDEM_E_BUDGET, "read %s: %llu bytes, more than the limit of %llu bytes%s%s", path,
                           (unsigned long long)st.st_size, (unsigned long long)max_bytes,
                           raise_hint ? "; " : "", raise_hint ? raise_hint : "");
    }
    int fl = fcntl(f, F_GETFL);
    if (fl < 0 || fcntl(f, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(f);
        return tandem_fail(TANDEM_E_IO, "fcntl %s: %s", path, strerror(e));
    }
    *fd = f;
    if (size) *size = (uint64_t)st.st_size;
    return TANDEM_OK;
}

tandem_status tandem_file_read_limited(const char *path, uint64_t max_bytes, const char *raise_hint,
                                       char **data, size_t *len) {
    if (!path || !data) return tandem_fail(TANDEM_E_INVALID, "tandem_file_read_all: NULL argument");
    *data = NULL;
    if (len) *len = 0;
    int fd = -1;
    uint64_t size = 0;
    TANDEM_TRY(tandem_file_open_input(path, max_bytes, raise_hint, &fd, &size));
    /* st_size is a hint only: /proc files report 0 and files may grow while read. */
    size_t cap = size > 0 ? (size_t)size + 1 : 4096;
    size_t n = 0;
    char *buf = tandem_malloc(cap);
    if (!buf) {
        close(fd);
        return tandem_fail(TANDEM_E_NOMEM, "read %s: cannot allocate %zu bytes", path, cap);
    }
    for (;;) {
        if (max_bytes && n > max_bytes) {
            tandem_free(buf);
            close(fd);
            return tandem_fail(TANDEM_E_BUDGET, "read %s: grew past the limit of %llu bytes while read%s%s", path,
                               (unsigned long long)max_bytes, raise_hint ? "; " : "", raise_hint ? raise_hint : "");
        }
        if (n + 1 >= cap) {
            size_t ncap = cap * 2;
            char *nb = tandem_realloc(buf, ncap);
            if (!nb) {
                tandem_free(buf);
                close(fd);
                return tandem_fail(TANDEM_E_NOMEM, "read %s: cannot allocate %zu bytes", path, ncap);
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r == 0) break;
        if (r < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            tandem_free(buf);
            close(fd);
            return tandem_fail(TANDEM_E_IO, "read %s: %s", path, strerror(e));
        }
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *data = buf;
    if (len) *len = n;
    return TANDEM_OK;
}

tandem_status tandem_file_read_exact(int fd, const char *path, void *buf, size_t bytes) {
    for (size_t got = 0; got < bytes;) {
        const size_t want = bytes - got < TANDEM_FILE_READ_CHUNK ? bytes - got : TANDEM_FILE_READ_CHUNK;
        const ssize_t r = pread(fd, (char *)buf + got, want, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return tandem_fail(TANDEM_E_IO, "read %s: %s", path, strerror(errno));
        if (r == 0)
            return tandem_fail(TANDEM_E_IO, "read %s: the file ended after %zu of its %zu bytes: it was truncated "
                               "while read (is another process writing it?)", path, got, bytes);
        got += (size_t)r;
    }
    return TANDEM_OK;
}

tandem_status tandem_file_read_all(const char *path, char **data, size_t *len) {
    return tandem_file_read_limited(path, TANDEM_FILE_READ_MAX, NULL, data, len);
}

int tandem_file_exists(const char *path) {
    struct stat st;
    return path && stat(path, &st) == 0;
}

tandem_status tandem_mkdir_p(const char *path) {
    if (!path || !path[0]) return tandem_fail(TANDEM_E_INVALID, "mkdir_p: empty path");
    char buf[PATH_MAX];
    size_t len = strlen(path);
    if (len >= sizeof buf)
        return tandem_fail(TANDEM_E_INVALID, "mkdir_p %s: path longer than %d bytes", path, PATH_MAX - 1);
    memcpy(buf, path, len + 1);
    /* Create each prefix that ends before a '/', then the whole path. */
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        if (buf[i - 1] == '/') continue; /* "a//b" */
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0777) != 0) {
            int e = errno;
            struct stat st;
            if (e != EEXIST)
                return tandem_fail(TANDEM_E_IO, "mkdir_p %s: mkdir %s: %s", path, buf, strerror(e));
            if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
                return tandem_fail(TANDEM_E_IO, "mkdir_p %s: %s exists and is not a directory", path, buf);
        }
        buf[i] = saved;
    }
    return TANDEM_OK;
}

/* ---- atomic write ------------------------------------------------------------------------ */

static atomic_uint temp_seq;

static tandem_status write_all(int fd, const char *path, const char *tmp, const void *data,
                               size_t len) {
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return tandem_fail(TANDEM_E_IO, "write_atomic %s: write %s: %s", path, tmp, strerror(errno));
        }
        p += w;
        len -= (size_t)w;
    }
    return TANDEM_OK;
}

/* Split path into its directory ("." when none) and base name. */
static tandem_status split_path(const char *path, char *dir, size_t dcap, const char **base) {
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dcap, ".");
        *base = path;
    } else {
        size_t dlen = slash == path ? 1 : (size_t)(slash - path); /* "/x" → "/" */
        if (dlen >= dcap)
            return tandem_fail(TANDEM_E_INVALID, "write_atomic %s: path longer than %zu bytes", path, dcap - 1);
        memcpy(dir, path, dlen);
        dir[dlen] = '\0';
        *base = slash + 1;
    }
    if (!(*base)[0])
        return tandem_fail(TANDEM_E_INVALID, "write_atomic %s: path names a directory, expected a file", path);
    return TANDEM_OK;
}

/* Create a fresh temp next to path: "<dir>/.<base>.tmp.<pid>.<seq>" with O_EXCL, so two
 * writers (threads or processes) never share one, and a stale temp left by a crash is skipped. */
static int open_temp(const char *dir, const char *base, char *tmp, size_t cap, int *err) {
    for (int attempt = 0; attempt < 64; attempt++) {
        unsigned seq = atomic_fetch_add(&temp_seq, 1);
        int n = snprintf(tmp, cap, "%s/.%s.tmp.%ld.%u", dir, base, (long)getpid(), seq);
        if (n < 0 || (size_t)n >= cap) {
            *err = ENAMETOOLONG;
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) return fd;
        if (errno != EEXIST) {
            *err = errno;
            return -1;
        }
    }
    *err = EEXIST;
    return -1;
}

tandem_status tandem_file_write_atomic_until(const char *path, const void *data, size_t len,
                                             int stop_stage) {
    if (!path || (!data && len))
        return tandem_fail(TANDEM_E_INVALID, "tandem_file_write_atomic: NULL argument");
    char dir[PATH_MAX], tmp[PATH_MAX];
    const char *base = path;
    TANDEM_TRY(split_path(path, dir, sizeof dir, &base));
    TANDEM_TRY(tandem_file_check_output(path, "write_atomic"));

    int err = 0;
    int fd = open_temp(dir, base, tmp, sizeof tmp, &err);
    if (fd < 0)
        return tandem_fail(TANDEM_E_IO, "write_atomic %s: create temp file in %s: open: %s", path, dir,
                           strerror(err));
    if (stop_stage == TANDEM_FILE_STAGE_TEMP_OPEN) {
        close(fd);
        return TANDEM_OK;
    }

    tandem_status st;
    if (stop_stage == TANDEM_FILE_STAGE_TEMP_PARTIAL) {
        st = write_all(fd, path, tmp, data, len / 2);
        close(fd);
        return st;
    }
    st = write_all(fd, path, tmp, data, len);
    if (st == TANDEM_OK && fsync(fd) != 0)
        st = tandem_fail(TANDEM_E_IO, "write_atomic %s: fsync %s: %s", path, tmp, strerror(errno));
    /* close can report a deferred write error (NFS, quota). */
    if (close(fd) != 0 && st == TANDEM_OK)
        st = tandem_fail(TANDEM_E_IO, "write_atomic %s: close %s: %s", path, tmp, strerror(errno));
    if (st != TANDEM_OK) {
        unlink(tmp);
        return st;
    }
    if (stop_stage == TANDEM_FILE_STAGE_TEMP_SYNCED) return TANDEM_OK;

    /* again just before the rename: something may have appeared there while we wrote */
    st = tandem_file_check_output(path, "write_atomic");
    if (st != TANDEM_OK) {
        unlink(tmp);
        return st;
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return tandem_fail(TANDEM_E_IO, "write_atomic %s: rename %s over it: %s", path, tmp, strerror(e));
    }
    if (stop_stage == TANDEM_FILE_STAGE_RENAMED) return TANDEM_OK;

    /* Make the rename itself durable. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return tandem_fail(TANDEM_E_IO, "write_atomic %s: open directory %s: %s", path, dir, strerror(errno));
    int rc = fsync(dfd);
    int e = errno;
    close(dfd);
    /* Some file systems cannot fsync a directory (EINVAL); the rename is then as durable as
     * that file system makes it. */
    if (rc != 0 && e != EINVAL)
        return tandem_fail(TANDEM_E_IO, "write_atomic %s: fsync directory %s: %s", path, dir, strerror(e));
    return TANDEM_OK;
}

tandem_status tandem_file_write_atomic(const char *path, const void *data, size_t len) {
    return tandem_file_write_atomic_until(path, data, len, TANDEM_FILE_STAGE_ALL);
}
