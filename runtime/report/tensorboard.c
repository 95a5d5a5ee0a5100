/* tensorboard.c — TensorBoard event files: CRC-32C, TFRecord framing and the few Event protobuf
 * messages the trainer writes, encoded by hand (see tensorboard.h). */
#include "runtime/report/tensorboard.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "platform/os/log.h"
#include "platform/os/os.h"

struct tandem_tb {
    int fd;
    off_t whole; /* the end of the last whole record: a failed write is cut back to it */
    unsigned char *blob; /* [blob_max] a PNG or WAV file read back */
    size_t blob_max;
    char path[PATH_MAX];
};

/* ---- CRC-32C ------------------------------------------------------------------------------------ */

uint32_t tandem_crc32c(uint32_t crc, const void *data, size_t n) {
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) { /* bitwise: records are small next to the step, no table needed */
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
    }
    return ~crc;
}

uint32_t tandem_tb_mask_crc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

/* ---- protobuf encoding ---------------------------------------------------------------------------- */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct pb {
    unsigned char *b;
    size_t len, cap;
    int overflow;
} pb;

static void pb_raw(pb *o, const void *d, size_t n) {
    if (o->len + n > o->cap) {
        o->overflow = 1;
        return;
    }
    memcpy(o->b + o->len, d, n);
    o->len += n;
}

static size_t varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void pb_varint(pb *o, uint64_t v) {
    unsigned char t[10];
    size_t n = 0;
    while (v >= 0x80) {
        t[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (unsigned char)v;
    pb_raw(o, t, n);
}

static void pb_key(pb *o, int field, int wt) { pb_varint(o, (uint64_t)field << 3 | (uint64_t)wt); }

static void pb_double(pb *o, int field, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    unsigned char t[8];
    for (int i = 0; i < 8; i++) t[i] = (unsigned char)(u >> (8 * i));
    pb_key(o, field, WT_I64);
    pb_raw(o, t, 8);
}

static void pb_float(pb *o, int field, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    unsigned char t[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16), (unsigned char)(u >> 24)};
    pb_key(o, field, WT_I32);
    pb_raw(o, t, 4);
}

static void pb_int(pb *o, int field, int64_t v) {
    pb_key(o, field, WT_VARINT);
    pb_varint(o, (uint64_t)v); /* negative int64: ten bytes, two's complement, as protobuf does */
}

static void pb_bytes(pb *o, int field, const void *d, size_t n) {
    pb_key(o, field, WT_LEN);
    pb_varint(o, n);
    pb_raw(o, d, n);
}

/* A length-delimited field whose body (len bytes) follows: its key and length only. */
static void pb_open(pb *o, int field, size_t len) {
    pb_key(o, field, WT_LEN);
    pb_varint(o, len);
}

static double wall_time(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Event fields 1 and 2. */
static void event_head(pb *o, int64_t step) {
    pb_double(o, 1, wall_time());
    pb_int(o, 2, step);
}

/* ---- records --------------------------------------------------------------------------------------- */

static tandem_status write_all(tandem_tb *tb, const void *d, size_t n) {
    const char *p = d;
    while (n > 0) {
        ssize_t w = write(tb->fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return tandem_fail(TANDEM_E_IO, "tensorboard: write %s: %s", tb->path, w < 0 ? strerror(errno) : "no progress");
        p += w;
        n -= (size_t)w;
    }
    return TANDEM_OK;
}

/* One TFRecord: data = head (+ tail when not NULL). */
static tandem_status record(tandem_tb *tb, const unsigned char *head, size_t hn, const void *tail, size_t tn) {
    const uint64_t len = hn + tn;
    unsigned char h[12], f[4];
    for (int i = 0; i < 8; i++) h[i] = (unsigned char)(len >> (8 * i));
    uint32_t c = tandem_tb_mask_crc(tandem_crc32c(0, h, 8));
    for (int i = 0; i < 4; i++) h[8 + i] = (unsigned char)(c >> (8 * i));
    c = tandem_crc32c(0, head, hn);
    if (tn) c = tandem_crc32c(c, tail, tn);
    c = tandem_tb_mask_crc(c);
    for (int i = 0; i < 4; i++) f[i] = (unsigned char)(c >> (8 * i));
    tandem_status st = write_all(tb, h, sizeof h);
    if (st == TANDEM_OK) st = write_all(tb, head, hn);
    if (st == TANDEM_OK && tn) st = write_all(tb, tail, tn);
    if (st == TANDEM_OK) st = write_all(tb, f, sizeof f);
    if (st == TANDEM_OK) {
        tb->whole += (off_t)(sizeof h + len + sizeof f);
        return TANDEM_OK;
    }
    char why[512]; /* readers stop at a partial record: keep only whole ones */
    snprintf(why, sizeof why, "%s", tandem_last_error());
    if (ftruncate(tb->fd, tb->whole) == 0)
        return tandem_fail(st, "%s; the file is cut back to its last whole record (%lld bytes)", why, (long long)tb->whole);
    return tandem_fail(st, "%s; cutting it back to its last whole record (%lld bytes) failed too: %s", why,
                       (long long)tb->whole, strerror(errno));
}

tandem_status tandem_tb_scalars(tandem_tb *tb, int64_t step, const char *const *tags, const double *values, int n) {
    if (!tb || n < 0 || n > TANDEM_TB_MAX_SCALARS)
        return tandem_fail(TANDEM_E_INVALID, "tensorboard: %d scalars, expected 0..%d", n, TANDEM_TB_MAX_SCALARS);
    unsigned char sbuf[TANDEM_TB_MAX_SCALARS * (TANDEM_TB_TAG_MAX + 16)], ebuf[sizeof sbuf + 64];
    pb sum = {sbuf, 0, sizeof sbuf, 0};
    for (int i = 0; i < n; i++) {
        const size_t tl = strnlen(tags[i], TANDEM_TB_TAG_MAX);
        pb_open(&sum, 1, 1 + varint_len(tl) + tl + 5); /* Value: tag, simple_value */
        pb_bytes(&sum, 1, tags[i], tl);
        pb_float(&sum, 2, (float)values[i]);
    }
    pb ev = {ebuf, 0, sizeof ebuf, 0};
    event_head(&ev, step);
    pb_open(&ev, 5, sum.len);
    pb_raw(&ev, sbuf, sum.len);
    if (ev.overflow || sum.overflow) return tandem_fail(TANDEM_E_INVALID, "tensorboard: scalar event too large");
    return record(tb, ebuf, ev.len, NULL, 0);
}

/* ---- images and audio ------------------------------------------------------------------------------ */

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}
static uint32_t le16(const unsigned char *p) { return (uint32_t)p[1] << 8 | p[0]; }

/* Summary.Image fields 1-3 from the PNG's IHDR. */
static int png_fields(pb *o, const unsigned char *b, size_t n) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (n < 33 || memcmp(b, sig, 8) || memcmp(b + 12, "IHDR", 4)) return 0;
    static const int space[7] = {1, 0, 3, 0, 2, 0, 4}; /* PNG colour type → channels (grey, RGB, grey+A, RGBA) */
    const int ct = b[25] < 7 ? space[b[25]] : 0;
    pb_int(o, 1, be32(b + 20));
    pb_int(o, 2, be32(b + 16));
    pb_int(o, 3, ct ? ct : 3);
    return 1;
}

/* Summary.Audio fields 1-3 and 5 from a RIFF/WAVE header. */
static int wav_fields(pb *o, const unsigned char *b, size_t n) {
    if (n < 12 || memcmp(b, "RIFF", 4) || memcmp(b + 8, "WAVE", 4)) return 0;
    uint32_t rate = 0, channels = 0, align = 0;
    for (size_t at = 12; at + 8 <= n;) {
        const uint32_t sz = le32(b + at + 4);
        if (!memcmp(b + at, "fmt ", 4) && sz >= 16 && at + 8 + 16 <= n) {
            channels = le16(b + at + 10);
            rate = le32(b + at + 12);
            align = le16(b + at + 20);
        } else if (!memcmp(b + at, "data", 4)) {
            if (!rate || !channels || !align) return 0;
            const uint64_t bytes = sz <= n - at - 8 ? sz : n - at - 8;
            pb_float(o, 1, (float)rate);
            pb_int(o, 2, channels);
            pb_int(o, 3, (int64_t)(bytes / align));
            pb_bytes(o, 5, "audio/wav", 9);
            return 1;
        }
        at += 8 + (size_t)sz + (sz & 1);
    }
    return 0;
}

/* path into tb->blob (no allocation); *n its size. */
static tandem_status read_blob(tandem_tb *tb, const char *path, size_t *n) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return tandem_fail(TANDEM_E_IO, "tensorboard: open %s: %s", path, strerror(errno));
    struct stat sb;
    tandem_status st = TANDEM_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > tb->blob_max)
        st = tandem_fail(TANDEM_E_INVALID, "tensorboard: %s is not a regular file of at most %zu bytes", path,
                         tb->blob_max);
    size_t got = 0;
    while (st == TANDEM_OK && got < (size_t)sb.st_size) {
        ssize_t r = read(fd, tb->blob + got, (size_t)sb.st_size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) st = tandem_fail(TANDEM_E_IO, "tensorboard: read %s: %s", path, r < 0 ? strerror(errno) : "short");
        else got += (size_t)r;
    }
    close(fd);
    *n = got;
    return st;
}

tandem_status tandem_tb_file(tandem_tb *tb, int64_t step, const char *tag, const char *path, int kind) {
    if (!tb || !tag || !path || (kind != 'i' && kind != 'a'))
        return tandem_fail(TANDEM_E_INVALID, "tandem_tb_file: bad argument");
    size_t n = 0;
    TANDEM_TRY(read_blob(tb, path, &n));
    unsigned char f0[128], val[TANDEM_TB_TAG_MAX + 160], ev[sizeof val + 64];
    pb inner = {f0, 0, sizeof f0, 0};
    if (!(kind == 'i' ? png_fields(&inner, tb->blob, n) : wav_fields(&inner, tb->blob, n)))
        return tandem_fail(TANDEM_E_INVALID, "tensorboard: %s is not a %s file", path, kind == 'i' ? "PNG" : "WAV");
    pb_open(&inner, 4, n); /* the encoded file, last so that it can follow the built head */
    const size_t inner_len = inner.len + n;
    const size_t tl = strnlen(tag, TANDEM_TB_TAG_MAX);
    const size_t value_len = 1 + varint_len(tl) + tl + 1 + varint_len(inner_len) + inner_len;
    pb v = {val, 0, sizeof val, 0};
    pb_open(&v, 1, value_len); /* Summary.value */
    pb_bytes(&v, 1, tag, tl);
    pb_open(&v, kind == 'i' ? 4 : 6, inner_len);
    pb_raw(&v, f0, inner.len);
    pb e = {ev, 0, sizeof ev, 0};
    event_head(&e, step);
    pb_open(&e, 5, v.len + n);
    pb_raw(&e, val, v.len);
    if (inner.overflow || v.overflow || e.overflow) return tandem_fail(TANDEM_E_INVALID, "tensorboard: tag too long");
    return record(tb, ev, e.len, tb->blob, n);
}

/* ---- open / close ------------------------------------------------------------------------------------ */

static tandem_status create_file(tandem_tb *tb, const char *dir) {
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0]) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    for (size_t i = 0; host[i]; i++)
        if (host[i] == '/') host[i] = '_';
    const long long now = (long long)time(NULL);
    for (int k = 0; k < 100; k++) {
        int w = k ? snprintf(tb->path, sizeof tb->path, "%s/" TANDEM_TB_PREFIX "%010lld.%s.%d", dir, now, host, k)
                  : snprintf(tb->path, sizeof tb->path, "%s/" TANDEM_TB_PREFIX "%010lld.%s", dir, now, host);
        if (w < 0 || (size_t)w >= sizeof tb->path)
            return tandem_fail(TANDEM_E_INVALID, "tensorboard: event file name in %s too long", dir);
        tb->fd = open(tb->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
        if (tb->fd >= 0) return TANDEM_OK;
        if (errno != EEXIST) break;
    }
    return tandem_fail(TANDEM_E_IO, "tensorboard: create %s: %s", tb->path, strerror(errno));
}

static tandem_status first_records(tandem_tb *tb, int64_t resumed_step) {
    unsigned char b[96];
    pb o = {b, 0, sizeof b, 0};
    event_head(&o, 0);
    pb_bytes(&o, 3, TANDEM_TB_FILE_VERSION, strlen(TANDEM_TB_FILE_VERSION));
    TANDEM_TRY(record(tb, b, o.len, NULL, 0));
    if (resumed_step <= 0) return TANDEM_OK;
    pb r = {b, 0, sizeof b, 0};
    event_head(&r, resumed_step + 1);
    pb_open(&r, 7, 2); /* SessionLog { status: START } */
    pb_int(&r, 1, 1);
    return record(tb, b, r.len, NULL, 0);
}

tandem_status tandem_tb_open(const char *dir, int64_t resumed_step, size_t blob_max, tandem_tb **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_tb_open: NULL argument");
    *out = NULL;
    tandem_tb *tb = tandem_calloc(1, sizeof *tb);
    if (!tb) return tandem_fail(TANDEM_E_NOMEM, "tensorboard: out of memory");
    tb->fd = -1;
    tb->blob_max = blob_max;
    tb->blob = tandem_malloc(blob_max ? blob_max : 1);
    tandem_status st = tb->blob ? create_file(tb, dir) : tandem_fail(TANDEM_E_NOMEM, "tensorboard: out of memory "
                                                                     "(%zu bytes)", blob_max);
    if (st == TANDEM_OK) st = first_records(tb, resumed_step);
    if (st != TANDEM_OK) {
        tandem_tb_close(tb, tb->fd >= 0);
        return st;
    }
    *out = tb;
    return TANDEM_OK;
}

const char *tandem_tb_path(const tandem_tb *tb) { return tb ? tb->path : ""; }

void tandem_tb_close(tandem_tb *tb, int discard) {
    if (!tb) return;
    if (tb->fd >= 0) close(tb->fd);
    if (discard && tb->fd >= 0) unlink(tb->path);
    tandem_free(tb->blob);
    tandem_free(tb);
}
