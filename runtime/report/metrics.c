/* metrics.c — metrics.jsonl lines (see metrics.h). */
#include "runtime/report/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/os/log.h"
#include "platform/os/os.h"

#define METRICS_MAX_FIELDS 64

struct tandem_metrics {
    int fd;
    char path[512];
    char line[TANDEM_METRICS_LINE_MAX];
    size_t len;
    int overflow;       /* the line outgrew the buffer */
    char first_bad[64]; /* the first field that did not fit, or the repeated one */
    int dup;
    int nfields;
    size_t field_at[METRICS_MAX_FIELDS]; /* offsets of the names, for the duplicate check */
    int64_t step;                         /* of the line being built */
};

tandem_status tandem_metrics_open(const char *path, int append, tandem_metrics **out) {
    if (!path || !out) return tandem_fail(TANDEM_E_INVALID, "tandem_metrics_open: NULL argument");
    *out = NULL;
    tandem_metrics *m = tandem_calloc(1, sizeof *m);
    if (!m) return tandem_fail(TANDEM_E_NOMEM, "metrics: out of memory");
    snprintf(m->path, sizeof m->path, "%s", path);
    /* non-blocking open, then a regular file only: a FIFO or device named metrics.jsonl is
     * refused instead of blocking or being written to */
    m->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK | (append ? 0 : O_TRUNC), 0644);
    struct stat sb;
    const char *why = m->fd < 0 ? strerror(errno)
                      : fstat(m->fd, &sb) != 0 ? strerror(errno)
                      : !S_ISREG(sb.st_mode) ? "not a regular file (remove it or choose another --out)"
                      : fcntl(m->fd, F_SETFL, O_APPEND) != 0 ? strerror(errno) : NULL;
    if (why) {
        tandem_status st = tandem_fail(TANDEM_E_IO, "open metrics file %s: %s", path, why);
        if (m->fd >= 0) close(m->fd);
        tandem_free(m);
        return st;
    }
    *out = m;
    return TANDEM_OK;
}

void tandem_metrics_close(tandem_metrics *m) {
    if (!m) return;
    if (m->fd >= 0) close(m->fd);
    tandem_free(m);
}

/* The step of a line "{"step":N,...": N, or -1 when the line does not start so. */
static int64_t line_step(const char *s, size_t n) {
    static const char head[] = "{\"step\":";
    const size_t hl = sizeof head - 1;
    if (n <= hl || memcmp(s, head, hl) != 0) return -1;
    int64_t v = 0;
    size_t i = hl;
    for (; i < n && s[i] >= '0' && s[i] <= '9' && v < INT64_MAX / 10; i++) v = v * 10 + (s[i] - '0');
    return i > hl ? v : -1;
}

tandem_status tandem_metrics_cut_after(const char *path, int64_t step, int64_t *dropped) {
    *dropped = 0;
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return errno == ENOENT ? TANDEM_OK : tandem_fail(TANDEM_E_IO, "metrics %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return tandem_fail(TANDEM_E_IO, "metrics %s: not a regular file", path);
    }
    char buf[TANDEM_METRICS_LINE_MAX + 1];
    off_t at = 0, cut = -1; /* at: the start of the line in buf[0] */
    size_t have = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - have);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            close(fd);
            return tandem_fail(TANDEM_E_IO, "metrics %s: read: %s", path, strerror(errno));
        }
        have += (size_t)n;
        char *nl;
        while ((nl = memchr(buf, '\n', have)) != NULL) {
            const size_t len = (size_t)(nl - buf) + 1;
            if (cut < 0 && line_step(buf, len) > step) cut = at;
            if (cut >= 0) ++*dropped;
            at += (off_t)len;
            memmove(buf, nl + 1, have - len);
            have -= len;
        }
        if (n == 0 || have == sizeof buf) break; /* end, or a line longer than any we write */
    }
    if (cut < 0 && have > 0) cut = at; /* a partial last line (a write cut short) */
    tandem_status st = TANDEM_OK;
    if (cut >= 0 && ftruncate(fd, cut) != 0)
        st = tandem_fail(TANDEM_E_IO, "metrics %s: truncate to %lld bytes: %s", path, (long long)cut, strerror(errno));
    close(fd);
    return st;
}

static void put(tandem_metrics *m, const char *s, size_t n) {
    if (m->overflow) return;
    if (n > sizeof m->line - 3 - m->len) { /* keep room for "}\n" */
        m->overflow = 1;
        return;
    }
    memcpy(m->line + m->len, s, n);
    m->len += n;
}

static void put_name(tandem_metrics *m, const char *name) {
    size_t at = m->len;
    put(m, ",\"", 2);
    size_t name_at = m->len;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
        char esc[8];
        if (*c == '"' || *c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*c;
            put(m, esc, 2);
        } else if (*c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *c);
            put(m, esc, 6);
        } else {
            put(m, (const char *)c, 1);
        }
    }
    size_t name_len = m->len - name_at;
    put(m, "\":", 2);
    if (m->overflow) {
        if (!m->first_bad[0]) snprintf(m->first_bad, sizeof m->first_bad, "%s", name);
        m->len = at;
        return;
    }
    for (int i = 0; i < m->nfields; i++) {
        size_t o = m->field_at[i];
        if (memcmp(m->line + o, m->line + name_at, name_len) == 0 && m->line[o + name_len] == '"' &&
            !m->dup) {
            m->dup = 1;
            snprintf(m->first_bad, sizeof m->first_bad, "%s", name);
        }
    }
    if (m->nfields < METRICS_MAX_FIELDS) m->field_at[m->nfields++] = name_at;
}

void tandem_metrics_begin(tandem_metrics *m, int64_t step) {
    m->len = 0;
    m->overflow = m->dup = 0;
    m->first_bad[0] = '\0';
    m->nfields = 0;
    m->step = step;
    char buf[48];
    int n = snprintf(buf, sizeof buf, "{\"step\":%" PRId64, step);
    put(m, buf, (size_t)n);
    m->field_at[m->nfields++] = 2; /* "step" */
}

/* A finite value as a metrics line writes it (9 significant digits). */
static int number_text(char *buf, size_t cap, double value) { return snprintf(buf, cap, "%.9g", value); }

double tandem_metrics_as_written(double value) {
    if (!isfinite(value)) return value;
    char buf[40];
    number_text(buf, sizeof buf, value);
    return strtod(buf, NULL);
}

void tandem_metrics_set(tandem_metrics *m, const char *name, double value) {
    put_name(m, name);
    if (m->overflow) return;
    char buf[40];
    int n = isfinite(value) ? number_text(buf, sizeof buf, value) : snprintf(buf, sizeof buf, "null");
    size_t before = m->len;
    put(m, buf, (size_t)n);
    if (m->overflow && !m->first_bad[0]) {
        snprintf(m->first_bad, sizeof m->first_bad, "%s", name);
        m->len = before;
    }
}

void tandem_metrics_set_int(tandem_metrics *m, const char *name, int64_t value) {
    put_name(m, name);
    if (m->overflow) return;
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%" PRId64, value);
    put(m, buf, (size_t)n);
    if (m->overflow && !m->first_bad[0]) snprintf(m->first_bad, sizeof m->first_bad, "%s", name);
}

tandem_status tandem_metrics_end(tandem_metrics *m) {
    if (m->overflow)
        return tandem_fail(TANDEM_E_INVALID, "metrics %s: line longer than %d bytes at field \"%s\"; not written",
                           m->path, TANDEM_METRICS_LINE_MAX, m->first_bad);
    if (m->dup)
        return tandem_fail(TANDEM_E_INVALID, "metrics %s: field \"%s\" set twice in one line; not written",
                           m->path, m->first_bad);
    memcpy(m->line + m->len, "}\n", 2);
    const size_t n = m->len + 2;
    /* one write() of the whole line: a reader (or a crash) sees it whole or not at all; a short
     * write (a full disk, a file-size limit) is cut back so no partial line stays */
    struct stat sb;
    const off_t before = fstat(m->fd, &sb) == 0 ? sb.st_size : -1;
    ssize_t w;
    do w = write(m->fd, m->line, n);
    while (w < 0 && errno == EINTR);
    if (w == (ssize_t)n) return TANDEM_OK;
    const int e = w < 0 ? errno : ENOSPC;
    int cut = w > 0 && before >= 0 && ftruncate(m->fd, before) == 0;
    return tandem_fail(TANDEM_E_IO, "metrics %s: writing the line of step %lld failed: %s (%zd of %zu bytes "
                       "written%s); free space or raise the file-size limit, then resume", m->path,
                       (long long)m->step, strerror(e), w < 0 ? (ssize_t)0 : w, n,
                       w > 0 ? (cut ? ", removed again" : ", could not be removed") : "");
}

/* ---- the last line, for `tandem monitor` (tandem_train.h) ------------------------------------- */

tandem_status tandem_metrics_last_line(const char *run_dir, char *buf, size_t cap) {
    if (!run_dir || !buf || cap < 2) return tandem_fail(TANDEM_E_INVALID, "metrics last line: bad argument");
    buf[0] = '\0';
    char path[2048];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run_dir);
    int fd = -1;
    uint64_t size = 0;
    TANDEM_TRY(tandem_file_open_input(path, 0, NULL, &fd, &size)); /* never blocks: regular files only */
    char tail[TANDEM_METRICS_LINE_MAX + 1];
    const uint64_t want = size < TANDEM_METRICS_LINE_MAX ? size : TANDEM_METRICS_LINE_MAX;
    ssize_t got = want ? pread(fd, tail, (size_t)want, (off_t)(size - want)) : 0;
    close(fd);
    if (got < 0) return tandem_fail(TANDEM_E_IO, "%s: read failed", path);
    size_t n = (size_t)got;
    while (n > 0 && tail[n - 1] != '\n') n--; /* a line still being written: not yet */
    while (n > 0 && tail[n - 1] == '\n') n--;
    if (n == 0) return TANDEM_OK;
    tail[n] = '\0';
    const char *start = strrchr(tail, '\n');
    if (!start && want < size) return TANDEM_OK; /* longer than any metrics line: not one */
    start = start ? start + 1 : tail;
    snprintf(buf, cap, "%s", start);
    return TANDEM_OK;
}
