/* metrics.c — metrics.jsonl lines (see metrics.h). */
#include "runtime/report/metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"

#define METRICS_MAX_FIELDS 64

struct tandem_metrics {
    FILE *f;
    char path[512];
    char line[TANDEM_METRICS_LINE_MAX];
    size_t len;
    int overflow;       /* the line outgrew the buffer */
    char first_bad[64]; /* the first field that did not fit, or the repeated one */
    int dup;
    int nfields;
    size_t field_at[METRICS_MAX_FIELDS]; /* offsets of the names, for the duplicate check */
    char iobuf[TANDEM_METRICS_LINE_MAX + 64];
};

tandem_status tandem_metrics_open(const char *path, int append, tandem_metrics **out) {
    if (!path || !out) return tandem_fail(TANDEM_E_INVALID, "tandem_metrics_open: NULL argument");
    *out = NULL;
    tandem_metrics *m = tandem_calloc(1, sizeof *m);
    if (!m) return tandem_fail(TANDEM_E_NOMEM, "metrics: out of memory");
    snprintf(m->path, sizeof m->path, "%s", path);
    m->f = fopen(path, append ? "ab" : "wb");
    if (!m->f) {
        int e = errno;
        tandem_free(m);
        return tandem_fail(TANDEM_E_IO, "open metrics file %s: %s", path, strerror(e));
    }
    /* a buffer of our own, so the first write does not make stdio allocate one */
    setvbuf(m->f, m->iobuf, _IOFBF, sizeof m->iobuf);
    *out = m;
    return TANDEM_OK;
}

void tandem_metrics_close(tandem_metrics *m) {
    if (!m) return;
    if (m->f) fclose(m->f);
    tandem_free(m);
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
    char buf[48];
    int n = snprintf(buf, sizeof buf, "{\"step\":%" PRId64, step);
    put(m, buf, (size_t)n);
    m->field_at[m->nfields++] = 2; /* "step" */
}

void tandem_metrics_set(tandem_metrics *m, const char *name, double value) {
    put_name(m, name);
    if (m->overflow) return;
    char buf[40];
    int n = isfinite(value) ? snprintf(buf, sizeof buf, "%.9g", value) : snprintf(buf, sizeof buf, "null");
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
    size_t n = m->len + 2;
    if (fwrite(m->line, 1, n, m->f) != n || fflush(m->f) != 0)
        return tandem_fail(TANDEM_E_IO, "metrics %s: write: %s", m->path, strerror(errno));
    return TANDEM_OK;
}
