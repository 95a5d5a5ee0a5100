/* run_dir.c — the run directory's lock, emptiness rule and temp sweep (see run_dir.h). */
#include "runtime/run/run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/formats/atomic_file.h"
#include "runtime/formats/checkpoint.h"

int tandem_run_pid_alive(long pid) {
    if (pid <= 0) return 0;
    return kill((pid_t)pid, 0) == 0 || errno != ESRCH;
}

/* dir/name, or "" when it does not fit. */
static const char *join(char *buf, size_t cap, const char *dir, const char *name) {
    if (snprintf(buf, cap, "%s/%s", dir, name) >= (int)cap) buf[0] = '\0';
    return buf;
}

/* The outputs a run writes into its directory (besides the lock). */
static int is_run_file(const char *name) {
    return tandem_checkpoint_parse_name(name) >= 0 || !strcmp(name, TANDEM_CKPT_BEST_NAME) ||
           !strcmp(name, "metrics.jsonl") || !strcmp(name, "loss.png") || !strcmp(name, "mel.png") ||
           !strncmp(name, "events.out.tfevents.", 20);
}

/* ".<run file>.tmp.<pid>.<n>" → pid; 0 when name is not such a temp file. */
static long temp_pid(const char *name) {
    if (name[0] != '.') return 0;
    const char *t = strstr(name, ".tmp.");
    if (!t || t == name + 1 || (size_t)(t - name) > NAME_MAX) return 0;
    char base[NAME_MAX + 1];
    memcpy(base, name + 1, (size_t)(t - name - 1));
    base[t - name - 1] = '\0';
    if (!is_run_file(base) || !tandem_atomic_is_temp_of(name, base)) return 0;
    char *end = NULL;
    long pid = strtol(t + 5, &end, 10);
    return end && *end == '.' ? pid : 0;
}

/* The lock of path (open as fd) is held elsewhere: name its holder, then close fd. */
static tandem_status in_use(int fd, const char *out, const char *path) {
    char who[32] = "";
    ssize_t n = pread(fd, who, sizeof who - 1, 0);
    who[n > 0 ? n : 0] = '\0';
    who[strcspn(who, "\n")] = '\0';
    close(fd);
    return tandem_fail(TANDEM_E_STATE, "run directory %s is in use by another training run (pid %s, lock "
                       "%s); wait for it to end or choose another --out", out, who[0] ? who : "unknown", path);
}

tandem_status tandem_run_dir_check_free(const char *dir) {
    char path[PATH_MAX];
    if (!dir || snprintf(path, sizeof path, "%s/" TANDEM_RUN_LOCK_NAME, dir) >= (int)sizeof path) return TANDEM_OK;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return TANDEM_OK; /* never locked here */
    struct stat sb;
    /* a shared lock for a moment: refused only while a run holds its exclusive one */
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK)
        return in_use(fd, dir, path);
    close(fd);
    return TANDEM_OK;
}

static tandem_status take_lock(tandem_run_dir *rd, const char *out) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/" TANDEM_RUN_LOCK_NAME, out) >= (int)sizeof path)
        return tandem_fail(TANDEM_E_INVALID, "run directory %s: path too long", out);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd < 0) return tandem_fail(TANDEM_E_IO, "run directory %s: open lock file %s: %s", out, path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return tandem_fail(TANDEM_E_IO, "run directory %s: lock file %s is not a regular file; remove it", out, path);
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int e = errno;
        if (e == EWOULDBLOCK) return in_use(fd, out, path);
        close(fd);
        return tandem_fail(TANDEM_E_IO, "run directory %s: lock %s: %s", out, path, strerror(e));
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n)
        tandem_logf(TANDEM_LOG_WARN, "run directory %s: could not record the pid in %s: %s", out, path, strerror(errno));
    rd->fd = fd;
    return TANDEM_OK;
}

typedef struct dir_scan {
    int run_files, other_files;
    char first[NAME_MAX + 1];
} dir_scan;

/* Sweep dead temps; count what a fresh run would mix with. */
static tandem_status scan(const char *out, dir_scan *s) {
    DIR *d = opendir(out);
    if (!d) return tandem_fail(TANDEM_E_IO, "run directory %s: %s", out, strerror(errno));
    memset(s, 0, sizeof *s);
    for (struct dirent *e; (e = readdir(d));) {
        const char *n = e->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, TANDEM_RUN_LOCK_NAME)) continue;
        long pid = temp_pid(n);
        if (pid > 0) {
            char p[PATH_MAX];
            if (!tandem_run_pid_alive(pid) && snprintf(p, sizeof p, "%s/%s", out, n) < (int)sizeof p &&
                unlink(p) == 0)
                tandem_logf(TANDEM_LOG_INFO, "run directory: removed %s, a temp file left by an interrupted "
                            "write (process %ld is gone)", p, pid);
            continue;
        }
        struct stat sb;
        char p[PATH_MAX];
        if (!strcmp(n, "metrics.jsonl") && snprintf(p, sizeof p, "%s/%s", out, n) < (int)sizeof p &&
            stat(p, &sb) == 0 && sb.st_size == 0)
            continue; /* an empty log (a create that failed later) holds nothing to lose */
        if (is_run_file(n)) s->run_files++;
        else s->other_files++;
        if (!s->first[0]) snprintf(s->first, sizeof s->first, "%s", n);
    }
    closedir(d);
    return TANDEM_OK;
}

/* <out>/<prefix>-<n> made, for the first free n, into dst. */
static tandem_status fresh_subdir(const char *out, const char *prefix, char *dst, size_t cap) {
    for (int n = 1;; n++) {
        if (snprintf(dst, cap, "%s/%s-%d", out, prefix, n) >= (int)cap)
            return tandem_fail(TANDEM_E_INVALID, "run directory %s: path too long", out);
        if (mkdir(dst, 0755) == 0) return TANDEM_OK;
        if (errno != EEXIST) return tandem_fail(TANDEM_E_IO, "run directory: mkdir %s: %s", dst, strerror(errno));
    }
}

/* new_run: the previous run's files into <out>/previous-<n>/. */
static tandem_status move_aside(const char *out) {
    char dst[PATH_MAX];
    TANDEM_TRY(fresh_subdir(out, "previous", dst, sizeof dst));
    DIR *d = opendir(out);
    if (!d) return tandem_fail(TANDEM_E_IO, "run directory %s: %s", out, strerror(errno));
    tandem_status st = TANDEM_OK;
    for (struct dirent *e; st == TANDEM_OK && (e = readdir(d));) {
        if (!is_run_file(e->d_name)) continue;
        char a[PATH_MAX], b[PATH_MAX];
        if (snprintf(a, sizeof a, "%s/%s", out, e->d_name) >= (int)sizeof a ||
            snprintf(b, sizeof b, "%s/%s", dst, e->d_name) >= (int)sizeof b || rename(a, b) != 0)
            st = tandem_fail(TANDEM_E_IO, "run directory: move %s into %s: %s", a, dst, strerror(errno));
    }
    closedir(d);
    if (st == TANDEM_OK) tandem_logf(TANDEM_LOG_INFO, "new run in %s: the previous run's files are in %s", out, dst);
    return st;
}

static int same_dir(const char *a, const char *b) {
    struct stat x, y;
    return b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* The first checkpoint of out newer than step into name (""), and how many there are. */
static int newer_checkpoints(const char *out, int64_t step, char *name, size_t cap) {
    DIR *d = opendir(out);
    int n = 0;
    name[0] = '\0';
    for (struct dirent *e; d && (e = readdir(d));)
        if (tandem_checkpoint_parse_name(e->d_name) > step && n++ == 0) snprintf(name, cap, "%s", e->d_name);
    if (d) closedir(d);
    return n;
}

tandem_status tandem_run_dir_set_aside(tandem_run_dir *rd, const char *resume_dir, int64_t step) {
    char name[NAME_MAX + 1], dst[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
    if (rd->fd < 0 || !same_dir(rd->out, resume_dir) || newer_checkpoints(rd->out, step, name, sizeof name) == 0)
        return TANDEM_OK;
    TANDEM_TRY(fresh_subdir(rd->out, "skipped", dst, sizeof dst));
    for (; newer_checkpoints(rd->out, step, name, sizeof name) > 0;) {
        if (!join(a, sizeof a, rd->out, name)[0] || !join(b, sizeof b, dst, name)[0] || rename(a, b) != 0)
            return tandem_fail(TANDEM_E_IO, "resume: move %s into %s: %s", a, dst, strerror(errno));
        tandem_logf(TANDEM_LOG_WARN, "resume: %s is newer than the checkpoint of step %lld resumed and was not "
                    "usable: moved to %s so this run never overwrites it", a, (long long)step, b);
    }
    return TANDEM_OK;
}

static tandem_status check_contents(const char *out, const char *resume_dir, int new_run) {
    dir_scan s;
    TANDEM_TRY(scan(out, &s));
    if (same_dir(out, resume_dir) || s.run_files + s.other_files == 0) return TANDEM_OK;
    if (!new_run)
        return tandem_fail(TANDEM_E_INVALID, "run directory %s is not empty (%d file%s of a run, %d other, e.g. "
                           "'%s'): continue that run with --resume %s, choose an empty --out, or pass --new-run "
                           "to start a new run there (the previous run's files move to %s/previous-<n>/)",
                           out, s.run_files, s.run_files == 1 ? "" : "s", s.other_files, s.first, out, out);
    return s.run_files ? move_aside(out) : TANDEM_OK;
}

tandem_status tandem_run_dir_open(tandem_run_dir *rd, const char *out, const char *resume_dir, int new_run) {
    rd->fd = -1;
    if (!out || !out[0]) return tandem_fail(TANDEM_E_INVALID, "config: key 'out': expected a run directory");
    if (strlen(out) + 32 >= sizeof rd->out)
        return tandem_fail(TANDEM_E_INVALID, "run directory %.64s...: path too long", out);
    struct stat sb;
    rd->created = stat(out, &sb) != 0;
    memcpy(rd->out, out, strlen(out) + 1);
    TANDEM_TRY(tandem_mkdir_p(out));
    TANDEM_TRY(take_lock(rd, out));
    tandem_status st = check_contents(out, resume_dir, new_run);
    if (st != TANDEM_OK) tandem_run_dir_close(rd);
    return st;
}

/* A fresh run that trained nothing: step 0's validation samples, and samples/ if nothing else is in it. */
static void discard_samples(const tandem_run_dir *rd) {
    char dir[PATH_MAX], p[PATH_MAX];
    DIR *d = opendir(join(dir, sizeof dir, rd->out, "samples"));
    for (struct dirent *e; d && (e = readdir(d));)
        if (!strncmp(e->d_name, "step-00000000-", 14) && join(p, sizeof p, dir, e->d_name)[0]) unlink(p);
    if (d) closedir(d);
    rmdir(dir);
}

void tandem_run_dir_discard(tandem_run_dir *rd) {
    if (rd->fd < 0) return;
    char p[PATH_MAX];
    struct stat sb;
    if (stat(join(p, sizeof p, rd->out, "metrics.jsonl"), &sb) == 0 && S_ISREG(sb.st_mode) &&
        (sb.st_size == 0 || rd->unstarted))
        unlink(p);
    if (rd->unstarted) discard_samples(rd);
    if (!rd->created) return;
    unlink(join(p, sizeof p, rd->out, TANDEM_RUN_LOCK_NAME));
    rmdir(join(p, sizeof p, rd->out, "samples")); /* only when empty, like the directory */
    if (rmdir(rd->out) == 0)
        tandem_logf(TANDEM_LOG_INFO, "run directory %s removed: the run did not start", rd->out);
}

void tandem_run_dir_close(tandem_run_dir *rd) {
    if (rd->fd >= 0) close(rd->fd); /* closing drops the flock */
    rd->fd = -1;
}
