/* checkpoint.c — checkpoint files: naming, atomic save, pruning to the last K, finding the
 * newest valid one (see checkpoint.h). Pruning lists the directory with getdents64 into a
 * stack buffer, because opendir allocates and save() runs after the pool commit. */
#include "runtime/formats/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/formats/atomic_file.h"
#include "platform/os/log.h"
#include "platform/os/os.h"

#define CKPT_PREFIX "ckpt-"
#define CKPT_SUFFIX ".safetensors"

typedef struct ckpt_tensor {
    void *user;
    const void *data;
    size_t bytes;
    int f32;
    const char *name;
} ckpt_tensor;

struct tandem_checkpoint {
    char dir[PATH_MAX];
    char last[PATH_MAX];
    int keep;
    int64_t *top; /* [keep] scratch for pruning */
    tandem_st_writer *w;
    ckpt_tensor *tensors; /* [count] what the finite scan needs of the caller's table */
    char *names;          /* the tensors' names, NUL-separated */
    int count;
    int64_t good;      /* the newest step written (or marked) with finite values only; -1: none */
    int nonfinite;     /* the save in progress met a NaN or Inf in an F32 tensor */
    const char *nonfinite_name;
    tandem_st_fetch_fn user_fetch; /* the save in progress's fetch and its ctx */
    void *user_ctx;
};

int64_t tandem_checkpoint_parse_name(const char *name) {
    size_t pl = strlen(CKPT_PREFIX), sl = strlen(CKPT_SUFFIX), n = strlen(name);
    if (n <= pl + sl || strncmp(name, CKPT_PREFIX, pl) != 0 || strcmp(name + n - sl, CKPT_SUFFIX) != 0)
        return -1;
    size_t digits = n - pl - sl;
    if (digits > 18) return -1;
    int64_t v = 0;
    for (size_t i = pl; i < pl + digits; i++) {
        if (name[i] < '0' || name[i] > '9') return -1;
        v = v * 10 + (name[i] - '0');
    }
    return v;
}

tandem_status tandem_checkpoint_path(const char *dir, int64_t step, char *buf, size_t cap) {
    if (step < 0) return tandem_fail(TANDEM_E_INVALID, "checkpoint step %" PRId64 ", expected >= 0", step);
    int n = snprintf(buf, cap, "%s/" CKPT_PREFIX "%08" PRId64 CKPT_SUFFIX, dir, step);
    if (n < 0 || (size_t)n >= cap)
        return tandem_fail(TANDEM_E_INVALID, "checkpoint path in %s longer than %zu bytes", dir, cap - 1);
    return TANDEM_OK;
}

/* Visit every entry of dir through getdents64 into a stack buffer (no allocation). */
typedef void (*entry_fn)(void *arg, const char *name);
static tandem_status for_each_entry(const char *dir, entry_fn fn, void *arg) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return tandem_fail(TANDEM_E_IO, "open directory %s: %s", dir, strerror(errno));
    _Alignas(8) char buf[8192];
    for (;;) {
        ssize_t n = getdents64(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            return tandem_fail(TANDEM_E_IO, "list directory %s: %s", dir, strerror(e));
        }
        if (n == 0) break;
        for (ssize_t off = 0; off < n;) {
            const struct dirent64 *d = (const struct dirent64 *)(buf + off);
            fn(arg, d->d_name);
            off += d->d_reclen;
        }
    }
    close(fd);
    return TANDEM_OK;
}

/* ---- stale temp files ---- */

typedef struct temp_scan {
    const char *dir;
    int removed;
} temp_scan;

static void remove_stale_temp(void *arg, const char *name) {
    temp_scan *s = arg;
    /* ".ckpt-<step>.safetensors.tmp.<pid>.<n>" (runtime/formats/atomic_file.c's names) */
    if (name[0] != '.' || strncmp(name + 1, CKPT_PREFIX, strlen(CKPT_PREFIX)) != 0) return;
    const char *tmp = strstr(name, CKPT_SUFFIX ".tmp.");
    if (!tmp) return;
    char base[NAME_MAX + 1];
    size_t bl = (size_t)(tmp - (name + 1)) + strlen(CKPT_SUFFIX);
    if (bl > NAME_MAX) return;
    memcpy(base, name + 1, bl);
    base[bl] = '\0';
    if (tandem_checkpoint_parse_name(base) < 0 || !tandem_atomic_is_temp_of(name, base)) return;
    /* the pid in the name: a live process's temp is its in-flight save, never ours to remove */
    const long pid = strtol(tmp + strlen(CKPT_SUFFIX ".tmp."), NULL, 10);
    if (pid > 0 && pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH)) return;
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", s->dir, name) >= (int)sizeof path) return;
    if (unlink(path) == 0) {
        s->removed++;
        tandem_logf(TANDEM_LOG_INFO, "checkpoint: removed %s, a temp file left by an interrupted save", path);
    }
}

/* ---- create / free ---- */

static size_t tensor_bytes(const tandem_st_tensor *t) {
    size_t n = tandem_dtype_size(t->dtype);
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    return n;
}

static tandem_status copy_table(tandem_checkpoint *c, const tandem_st_tensor *t, int count) {
    size_t len = 0;
    for (int i = 0; i < count; i++) len += strlen(t[i].name ? t[i].name : "") + 1;
    c->tensors = tandem_calloc((size_t)(count > 0 ? count : 1), sizeof *c->tensors);
    c->names = tandem_malloc(len + 1);
    if (!c->tensors || !c->names) return TANDEM_E_NOMEM;
    c->count = count;
    char *at = c->names;
    for (int i = 0; i < count; i++) {
        const char *nm = t[i].name ? t[i].name : "";
        const size_t n = strlen(nm) + 1;
        memcpy(at, nm, n);
        c->tensors[i] = (ckpt_tensor){t[i].user, t[i].data, tensor_bytes(&t[i]), t[i].dtype == TANDEM_F32, at};
        at += n;
    }
    return TANDEM_OK;
}

tandem_status tandem_checkpoint_create(const char *dir, int keep, const tandem_st_tensor *tensors,
                                       int count, size_t meta_bytes_max, tandem_checkpoint **out) {
    if (out) *out = NULL;
    if (!dir || !dir[0] || !out) return tandem_fail(TANDEM_E_INVALID, "tandem_checkpoint_create: NULL argument");
    if (keep < 1) return tandem_fail(TANDEM_E_INVALID, "checkpoint keep = %d, expected >= 1", keep);
    if (strlen(dir) + 40 >= PATH_MAX)
        return tandem_fail(TANDEM_E_INVALID, "checkpoint directory %s: path too long", dir);
    TANDEM_TRY(tandem_mkdir_p(dir));
    temp_scan ts = {dir, 0};
    TANDEM_TRY(for_each_entry(dir, remove_stale_temp, &ts));
    tandem_checkpoint *c = tandem_calloc(1, sizeof *c);
    if (!c) return tandem_fail(TANDEM_E_NOMEM, "checkpoint: out of memory");
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    c->keep = keep;
    c->good = -1;
    if (copy_table(c, tensors, count) != TANDEM_OK) {
        tandem_checkpoint_free(c);
        return tandem_fail(TANDEM_E_NOMEM, "checkpoint: out of memory");
    }
    c->top = tandem_calloc((size_t)keep, sizeof *c->top);
    /* format_version and step ride along with the caller's metadata */
    size_t own = sizeof TANDEM_CKPT_KEY_FORMAT_VERSION + sizeof TANDEM_CKPT_FORMAT_VERSION +
                 sizeof TANDEM_CKPT_KEY_STEP + 24;
    tandem_status st = c->top ? tandem_st_writer_create(tensors, count, meta_bytes_max + own, 0, &c->w)
                              : tandem_fail(TANDEM_E_NOMEM, "checkpoint: out of memory");
    if (st != TANDEM_OK) {
        tandem_checkpoint_free(c);
        return st;
    }
    *out = c;
    return TANDEM_OK;
}

void tandem_checkpoint_free(tandem_checkpoint *c) {
    if (!c) return;
    tandem_free(c->tensors);
    tandem_free(c->names);
    tandem_st_writer_free(c->w);
    tandem_free(c->top);
    tandem_free(c);
}

const char *tandem_checkpoint_last_path(const tandem_checkpoint *c) { return c->last; }

void tandem_checkpoint_set_good(tandem_checkpoint *c, int64_t step) {
    if (c) c->good = step;
}

/* ---- finite scan: a checkpoint with NaN or Inf is written (it is the state) but never counted
 * as the newest good one, so rotation cannot delete the last good checkpoint ---- */

static void scan_finite(tandem_checkpoint *c, const ckpt_tensor *t, const void *data, size_t bytes) {
    if (c->nonfinite || !t->f32) return;
    const uint32_t *u = data; /* exponent all ones: NaN or Inf (no float traps, no libm) */
    for (size_t i = 0; i < bytes / 4; i++)
        if ((u[i] & 0x7f800000u) == 0x7f800000u) {
            c->nonfinite = 1;
            c->nonfinite_name = t->name;
            return;
        }
}

static tandem_status scanning_fetch(void *ctx, void *user, void *dst, size_t offset, size_t bytes) {
    tandem_checkpoint *c = ctx;
    TANDEM_TRY(c->user_fetch(c->user_ctx, user, dst, offset, bytes));
    for (int i = 0; i < c->count; i++)
        if (c->tensors[i].user == user && !c->tensors[i].data) {
            scan_finite(c, &c->tensors[i], dst, bytes);
            break;
        }
    return TANDEM_OK;
}

/* ---- pruning ---- */

typedef struct prune_scan {
    tandem_checkpoint *c;
    int64_t limit; /* only steps <= limit take part */
    int n;         /* entries in c->top (the largest steps seen, descending) */
    int64_t cut;   /* delete steps < cut (pass 2) */
    int removed;
} prune_scan;

static void collect_top(void *arg, const char *name) {
    prune_scan *s = arg;
    int64_t step = tandem_checkpoint_parse_name(name);
    if (step < 0 || step > s->limit) return;
    int64_t *top = s->c->top;
    int i = s->n < s->c->keep ? s->n++ : s->c->keep;
    if (i == s->c->keep && step <= top[i - 1]) return; /* not among the largest */
    if (i == s->c->keep) i--;
    while (i > 0 && top[i - 1] < step) {
        top[i] = top[i - 1];
        i--;
    }
    top[i] = step;
}

static void delete_old(void *arg, const char *name) {
    prune_scan *s = arg;
    int64_t step = tandem_checkpoint_parse_name(name);
    if (step < 0 || step >= s->cut || step == s->c->good) return; /* the newest good one stays */
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", s->c->dir, name) >= (int)sizeof path) return;
    if (unlink(path) == 0) s->removed++;
    else tandem_logf(TANDEM_LOG_WARN, "checkpoint: could not delete old checkpoint %s: %s", path, strerror(errno));
}

static tandem_status prune(tandem_checkpoint *c, int64_t newest) {
    prune_scan s = {c, newest, 0, 0, 0};
    TANDEM_TRY(for_each_entry(c->dir, collect_top, &s));
    if (s.n < c->keep) return TANDEM_OK;
    s.cut = c->top[c->keep - 1];
    return for_each_entry(c->dir, delete_old, &s);
}

/* The metadata with format_version and step in front, the file written, the finite scan's result
 * in c->nonfinite. */
static tandem_status write_file(tandem_checkpoint *c, const char *path, int64_t step, const tandem_st_meta *meta,
                                int meta_count, tandem_st_fetch_fn fetch, void *ctx) {
    if (meta_count < 0 || meta_count > TANDEM_CKPT_MAX_META || (meta_count && !meta))
        return tandem_fail(TANDEM_E_INVALID, "checkpoint save: %d metadata entries, expected 0..%d", meta_count,
                           TANDEM_CKPT_MAX_META);
    tandem_st_meta all[TANDEM_CKPT_MAX_META + 2];
    char step_str[24];
    snprintf(step_str, sizeof step_str, "%" PRId64, step);
    all[0] = (tandem_st_meta){TANDEM_CKPT_KEY_FORMAT_VERSION, TANDEM_CKPT_FORMAT_VERSION};
    all[1] = (tandem_st_meta){TANDEM_CKPT_KEY_STEP, step_str};
    for (int i = 0; i < meta_count; i++) {
        if (meta[i].key && (strcmp(meta[i].key, TANDEM_CKPT_KEY_FORMAT_VERSION) == 0 ||
                            strcmp(meta[i].key, TANDEM_CKPT_KEY_STEP) == 0))
            return tandem_fail(TANDEM_E_INVALID, "checkpoint save: metadata key \"%s\" is written by the "
                               "checkpoint itself; leave it out", meta[i].key);
        all[2 + i] = meta[i];
    }
    c->nonfinite = 0;
    c->nonfinite_name = NULL;
    for (int i = 0; i < c->count; i++)
        if (c->tensors[i].data) scan_finite(c, &c->tensors[i], c->tensors[i].data, c->tensors[i].bytes);
    c->user_fetch = fetch;
    c->user_ctx = ctx;
    return tandem_st_write(c->w, path, all, meta_count + 2, fetch ? scanning_fetch : NULL, c);
}

tandem_status tandem_checkpoint_save(tandem_checkpoint *c, int64_t step, const tandem_st_meta *meta,
                                     int meta_count, tandem_st_fetch_fn fetch, void *ctx) {
    if (!c) return tandem_fail(TANDEM_E_INVALID, "tandem_checkpoint_save: NULL checkpoint");
    char path[PATH_MAX];
    TANDEM_TRY(tandem_checkpoint_path(c->dir, step, path, sizeof path));
    TANDEM_TRY(write_file(c, path, step, meta, meta_count, fetch, ctx));
    memcpy(c->last, path, sizeof path);
    if (!c->nonfinite) c->good = step;
    else
        tandem_logf(TANDEM_LOG_WARN, "checkpoint %s holds non-finite values (tensor %s); a resume skips it, and "
                    "rotation keeps the newest good checkpoint (%s step %" PRId64 ")", path,
                    c->nonfinite_name ? c->nonfinite_name : "?", c->good >= 0 ? "at" : "none yet:", c->good);
    /* the new file is durable: a failure to delete old ones is only logged */
    if (prune(c, step) != TANDEM_OK)
        tandem_logf(TANDEM_LOG_WARN, "checkpoint: pruning old checkpoints failed: %s", tandem_last_error());
    return TANDEM_OK;
}

tandem_status tandem_checkpoint_save_best(tandem_checkpoint *c, int64_t step, const tandem_st_meta *meta,
                                          int meta_count, tandem_st_fetch_fn fetch, void *ctx) {
    if (!c) return tandem_fail(TANDEM_E_INVALID, "tandem_checkpoint_save_best: NULL checkpoint");
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/" TANDEM_CKPT_BEST_NAME, c->dir) >= (int)sizeof path)
        return tandem_fail(TANDEM_E_INVALID, "checkpoint directory %s: path too long", c->dir);
    TANDEM_TRY(write_file(c, path, step, meta, meta_count, fetch, ctx));
    if (c->nonfinite)
        tandem_logf(TANDEM_LOG_WARN, "best checkpoint %s holds non-finite values (tensor %s)", path,
                    c->nonfinite_name ? c->nonfinite_name : "?");
    return TANDEM_OK;
}

/* ---- finding the newest valid one ---- */

tandem_status tandem_checkpoint_open(const char *path, int64_t expected_step, tandem_st_file **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_checkpoint_open: out is NULL");
    *out = NULL;
    tandem_st_file *f = NULL;
    TANDEM_TRY(tandem_st_open(path, &f));
    const char *ver = tandem_st_meta_find(f, TANDEM_CKPT_KEY_FORMAT_VERSION);
    const char *st = tandem_st_meta_find(f, TANDEM_CKPT_KEY_STEP);
    tandem_status rc = TANDEM_OK;
    if (!ver || strcmp(ver, TANDEM_CKPT_FORMAT_VERSION) != 0)
        rc = tandem_fail(TANDEM_E_FORMAT, "%s: __metadata__ format_version is %s%s%s, expected \"%s\"", path,
                         ver ? "\"" : "", ver ? ver : "missing", ver ? "\"" : "", TANDEM_CKPT_FORMAT_VERSION);
    else if (!st)
        rc = tandem_fail(TANDEM_E_FORMAT, "%s: __metadata__ has no step", path);
    else if (expected_step >= 0) {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(st, &end, 10);
        if (errno || end == st || *end || v != expected_step)
            rc = tandem_fail(TANDEM_E_FORMAT, "%s: __metadata__ step is \"%.32s\", expected %" PRId64
                             " (the file name's step)", path, st, expected_step);
    }
    if (rc != TANDEM_OK) {
        tandem_st_close(f);
        return rc;
    }
    *out = f;
    return TANDEM_OK;
}

static int desc_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

tandem_status tandem_checkpoint_find_latest(const char *dir, char *path, size_t cap, int64_t *step,
                                            int *found) {
    return tandem_checkpoint_find_usable(dir, NULL, NULL, path, cap, step, found);
}

tandem_status tandem_checkpoint_find_usable(const char *dir, tandem_checkpoint_accept_fn accept, void *ctx,
                                            char *path, size_t cap, int64_t *step, int *found) {
    if (!dir || !path || !step || !found)
        return tandem_fail(TANDEM_E_INVALID, "tandem_checkpoint_find_latest: NULL argument");
    *found = 0;
    *step = -1;
    DIR *d = opendir(dir);
    if (!d) return tandem_fail(TANDEM_E_IO, "open checkpoint directory %s: %s", dir, strerror(errno));
    int64_t *steps = NULL;
    size_t n = 0, ncap = 0;
    tandem_status st = TANDEM_OK;
    for (struct dirent *e; (e = readdir(d));) {
        int64_t s = tandem_checkpoint_parse_name(e->d_name);
        if (s < 0) continue;
        if (n == ncap) {
            size_t nc = ncap ? ncap * 2 : 16;
            int64_t *ns = tandem_realloc(steps, nc * sizeof *ns);
            if (!ns) {
                st = tandem_fail(TANDEM_E_NOMEM, "checkpoint: out of memory listing %s", dir);
                break;
            }
            steps = ns;
            ncap = nc;
        }
        steps[n++] = s;
    }
    closedir(d);
    if (st == TANDEM_OK && n > 0) {
        qsort(steps, n, sizeof *steps, desc_i64);
        for (size_t i = 0; i < n; i++) {
            if (i > 0 && steps[i] == steps[i - 1]) continue; /* "ckpt-5" and "ckpt-00000005" */
            char p[PATH_MAX];
            if ((st = tandem_checkpoint_path(dir, steps[i], p, sizeof p)) != TANDEM_OK) break;
            tandem_st_file *f = NULL;
            if (!tandem_file_exists(p) || tandem_checkpoint_open(p, steps[i], &f) != TANDEM_OK ||
                (accept && accept(ctx, f, p) != TANDEM_OK)) {
                if (tandem_file_exists(p))
                    tandem_logf(TANDEM_LOG_WARN, "checkpoint %s skipped: %s", p, tandem_last_error());
                tandem_st_close(f);
                continue;
            }
            tandem_st_close(f);
            if (strlen(p) >= cap) {
                st = tandem_fail(TANDEM_E_INVALID, "checkpoint path %s longer than %zu bytes", p, cap - 1);
                break;
            }
            memcpy(path, p, strlen(p) + 1);
            *step = steps[i];
            *found = 1;
            break;
        }
    }
    tandem_free(steps);
    return st;
}
