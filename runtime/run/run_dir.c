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

void (*tandem_run_dir_test_stage)(int stage) = NULL;

static void stage_done(int *stage) {
    if (tandem_run_dir_test_stage) tandem_run_dir_test_stage((*stage)++);
}

/* new_run: the previous run's files into a staging directory, which becomes <out>/previous-<n>/
 * by one rename, so a kill leaves the run whole in out (after roll_back) or whole in previous-<n>. */
static tandem_status move_aside(const char *out) {
    char tmp[PATH_MAX], name[64], dst[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
    int stage = 0;
    snprintf(name, sizeof name, TANDEM_RUN_STAGING_PREFIX "%ld", (long)getpid());
    if (!join(tmp, sizeof tmp, out, name)[0]) return tandem_fail(TANDEM_E_INVALID, "run directory %s: path too long", out);
    if (mkdir(tmp, 0755) != 0) return tandem_fail(TANDEM_E_IO, "run directory: mkdir %s: %s", tmp, strerror(errno));
    stage_done(&stage);
    DIR *d = opendir(out);
    if (!d) return tandem_fail(TANDEM_E_IO, "run directory %s: %s", out, strerror(errno));
    tandem_status st = TANDEM_OK;
    for (struct dirent *e; st == TANDEM_OK && (e = readdir(d));) {
        if (!is_run_file(e->d_name)) continue;
        if (!join(a, sizeof a, out, e->d_name)[0] || !join(b, sizeof b, tmp, e->d_name)[0] || rename(a, b) != 0)
            st = tandem_fail(TANDEM_E_IO, "run directory: move %s into %s: %s", a, tmp, strerror(errno));
        stage_done(&stage);
    }
    closedir(d);
    for (int n = 1; st == TANDEM_OK; n++) { /* under the lock: nobody else makes previous-<n> */
        struct stat sb;
        if (snprintf(dst, sizeof dst, "%s/previous-%d", out, n) >= (int)sizeof dst)
            st = tandem_fail(TANDEM_E_INVALID, "run directory %s: path too long", out);
        else if (lstat(dst, &sb) != 0 && errno == ENOENT) break;
    }
    if (st == TANDEM_OK && rename(tmp, dst) != 0)
        st = tandem_fail(TANDEM_E_IO, "run directory: rename %s to %s: %s", tmp, dst, strerror(errno));
    if (st != TANDEM_OK) return st; /* the next open puts the files back */
    stage_done(&stage);
    tandem_logf(TANDEM_LOG_INFO, "new run in %s: the previous run's files are in %s", out, dst);
    return TANDEM_OK;
}

/* A --new-run cut short (kill -9, a failed rename) left its staging directory: under the lock its
 * files go back into out, so the previous run is whole there again. */
static tandem_status roll_back(const char *out) {
    DIR *d = opendir(out);
    if (!d) return tandem_fail(TANDEM_E_IO, "run directory %s: %s", out, strerror(errno));
    tandem_status st = TANDEM_OK;
    for (struct dirent *e; st == TANDEM_OK && (e = readdir(d));) {
        char dir[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
        if (strncmp(e->d_name, TANDEM_RUN_STAGING_PREFIX, strlen(TANDEM_RUN_STAGING_PREFIX)) ||
            !join(dir, sizeof dir, out, e->d_name)[0])
            continue;
        DIR *s = opendir(dir);
        for (struct dirent *f; s && st == TANDEM_OK && (f = readdir(s));) {
            struct stat sb;
            if (!is_run_file(f->d_name) || !join(a, sizeof a, dir, f->d_name)[0] || !join(b, sizeof b, out, f->d_name)[0])
                continue;
            const int taken = lstat(b, &sb) == 0;
            if (taken || rename(a, b) != 0)
                st = tandem_fail(TANDEM_E_IO, "run directory: put %s back as %s after an interrupted --new-run: %s; "
                                 "move it by hand", a, b, taken ? "the name is taken" : strerror(errno));
        }
        if (s) closedir(s);
        if (st == TANDEM_OK && rmdir(dir) == 0)
            tandem_logf(TANDEM_LOG_WARN, "run directory %s: an interrupted --new-run was undone (the previous "
                        "run's files are back from %s)", out, dir);
    }
    closedir(d);
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
    TANDEM_TRY(roll_back(out));
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
