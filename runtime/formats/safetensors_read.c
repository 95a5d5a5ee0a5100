/* safetensors_read.c — the safetensors reader (see safetensors.h): the whole file read into
 * memory the reader owns (never mapped), a strict JSON parser
 * for the header's subset (objects, strings, non-negative integers, arrays of them), then the
 * layout checks. Every error is TANDEM_E_FORMAT naming the file, the header byte and the field. */
#include "runtime/formats/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/core/utf8.h"

struct tandem_st_file {
    void *owned;          /* the file's bytes (tandem_st_open); NULL for open_memory */
    const uint8_t *bytes; /* whole file */
    size_t len;
    tandem_st_info *t;    /* [count] */
    int count, cap;
    tandem_st_meta *meta; /* [meta_count] */
    int meta_count, meta_cap;
    char *strings;        /* unescaped names, keys and values */
    size_t str_len, str_cap;
    char label[256];
};

/* ---- parser ---- */

typedef struct parser {
    tandem_st_file *f;
    const char *s; /* header text */
    size_t n, pos;
    const char *tensor; /* name of the tensor being parsed, for messages */
    const char *field;
} parser;

static tandem_status perr(parser *p, const char *fmt, ...) TANDEM_PRINTF(2, 3);
static tandem_status perr(parser *p, const char *fmt, ...) {
    char what[256], where[320] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (p->tensor && p->field)
        snprintf(where, sizeof where, " (tensor \"%.200s\", field %s)", p->tensor, p->field);
    else if (p->tensor)
        snprintf(where, sizeof where, " (tensor \"%.200s\")", p->tensor);
    else if (p->field)
        snprintf(where, sizeof where, " (%s)", p->field);
    return tandem_fail(TANDEM_E_FORMAT, "%s: safetensors header byte %zu%s: %s", p->f->label, p->pos,
                       where, what);
}

static void skip_ws(parser *p) {
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

/* What is at pos, for messages. */
static const char *found(parser *p, char *buf, size_t cap) {
    if (p->pos >= p->n) return "the end of the header";
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c >= 0x20 && c < 0x7f) snprintf(buf, cap, "'%c'", c);
    else snprintf(buf, cap, "byte 0x%02x", c);
    return buf;
}

static tandem_status expect(parser *p, char c) {
    skip_ws(p);
    if (p->pos < p->n && p->s[p->pos] == c) {
        p->pos++;
        return TANDEM_OK;
    }
    char fb[16];
    return perr(p, "expected '%c', found %s", c, found(p, fb, sizeof fb));
}

/* After a member: ',' (returns 1 in *more) or the closing char (0). */
static tandem_status next_or_close(parser *p, char close, int *more) {
    skip_ws(p);
    if (p->pos < p->n && p->s[p->pos] == ',') {
        p->pos++;
        *more = 1;
        return TANDEM_OK;
    }
    if (p->pos < p->n && p->s[p->pos] == close) {
        p->pos++;
        *more = 0;
        return TANDEM_OK;
    }
    char fb[16];
    return perr(p, "expected ',' or '%c', found %s", close, found(p, fb, sizeof fb));
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static tandem_status read_u16hex(parser *p, uint32_t *v) {
    if (p->n - p->pos < 4) return perr(p, "truncated \\u escape");
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p->s[p->pos + (size_t)i]);
        if (h < 0) return perr(p, "\\u escape needs 4 hex digits");
        r = r * 16 + (uint32_t)h;
    }
    p->pos += 4;
    *v = r;
    return TANDEM_OK;
}

/* A JSON string, unescaped into f->strings (NUL-terminated). Raw bytes must be valid UTF-8
 * without control characters; \u0000 is rejected (names and values are C strings). */
static tandem_status parse_string(parser *p, const char **out, size_t *out_len) {
    skip_ws(p);
    char fb[16];
    if (p->pos >= p->n || p->s[p->pos] != '"')
        return perr(p, "expected a string, found %s", found(p, fb, sizeof fb));
    p->pos++;
    tandem_st_file *f = p->f;
    char *dst = f->strings + f->str_len;
    size_t k = 0;
    for (;;) {
        if (p->pos >= p->n) return perr(p, "unterminated string");
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) return perr(p, "control character 0x%02x inside a string (must be escaped)", c);
        if (c == '\\') {
            p->pos++;
            if (p->pos >= p->n) return perr(p, "unterminated escape");
            char e = p->s[p->pos++];
            uint32_t cp = 0;
            switch (e) {
            case '"': cp = '"'; break;
            case '\\': cp = '\\'; break;
            case '/': cp = '/'; break;
            case 'b': cp = '\b'; break;
            case 'f': cp = '\f'; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            case 'u': {
                TANDEM_TRY(read_u16hex(p, &cp));
                if (cp >= 0xDC00 && cp <= 0xDFFF) return perr(p, "lone low surrogate \\u%04X", (unsigned)cp);
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    uint32_t lo = 0;
                    if (p->n - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
                        return perr(p, "high surrogate \\u%04X without a low surrogate", (unsigned)cp);
                    p->pos += 2;
                    TANDEM_TRY(read_u16hex(p, &lo));
                    if (lo < 0xDC00 || lo > 0xDFFF)
                        return perr(p, "high surrogate followed by \\u%04X, expected DC00..DFFF", (unsigned)lo);
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                if (cp == 0) return perr(p, "\\u0000 inside a string is not supported");
                break;
            }
            default:
                p->pos--;
                return perr(p, "invalid escape '\\%c'", e >= 0x20 && e < 0x7f ? e : '?');
            }
            char enc[4];
            int m = tandem_utf8_encode(cp, enc);
            memcpy(dst + k, enc, (size_t)m); /* an escape is >= 2 raw bytes for <= 4 output bytes,
                                                 6 raw for 3, 12 raw for 4: never longer than raw */
            k += (size_t)m;
            continue;
        }
        uint32_t cp;
        int m = tandem_utf8_decode((const uint8_t *)p->s + p->pos, p->n - p->pos, &cp);
        if (m == 0) return perr(p, "invalid UTF-8 inside a string");
        memcpy(dst + k, p->s + p->pos, (size_t)m);
        k += (size_t)m;
        p->pos += (size_t)m;
    }
    dst[k] = '\0';
    f->str_len += k + 1;
    *out = dst;
    if (out_len) *out_len = k;
    return TANDEM_OK;
}

/* A non-negative JSON integer (no sign, fraction or exponent; no leading zeros). */
static tandem_status parse_uint(parser *p, uint64_t max, uint64_t *v) {
    skip_ws(p);
    char fb[16];
    if (p->pos >= p->n || p->s[p->pos] < '0' || p->s[p->pos] > '9') {
        if (p->pos < p->n && p->s[p->pos] == '-') return perr(p, "negative number, expected an integer >= 0");
        return perr(p, "expected an integer, found %s", found(p, fb, sizeof fb));
    }
    if (p->s[p->pos] == '0' && p->pos + 1 < p->n && p->s[p->pos + 1] >= '0' && p->s[p->pos + 1] <= '9')
        return perr(p, "number with a leading zero");
    uint64_t r = 0;
    while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        uint64_t d = (uint64_t)(p->s[p->pos] - '0');
        if (r > (max - d) / 10) return perr(p, "integer larger than %llu", (unsigned long long)max);
        r = r * 10 + d;
        p->pos++;
    }
    if (p->pos < p->n && (p->s[p->pos] == '.' || p->s[p->pos] == 'e' || p->s[p->pos] == 'E'))
        return perr(p, "expected an integer, found a fraction or exponent");
    *v = r;
    return TANDEM_OK;
}

/* [u, u, ...] with at most max_n entries. */
static tandem_status parse_uint_array(parser *p, uint64_t *vals, int max_n, int *n_out, uint64_t max) {
    TANDEM_TRY(expect(p, '['));
    int n = 0;
    skip_ws(p);
    if (p->pos < p->n && p->s[p->pos] == ']') {
        p->pos++;
        *n_out = 0;
        return TANDEM_OK;
    }
    for (int more = 1; more;) {
        if (n == max_n) return perr(p, "more than %d entries", max_n);
        TANDEM_TRY(parse_uint(p, max, &vals[n++]));
        TANDEM_TRY(next_or_close(p, ']', &more));
    }
    *n_out = n;
    return TANDEM_OK;
}

static tandem_status parse_tensor(parser *p, const char *name) {
    tandem_st_file *f = p->f;
    if (f->count == f->cap) return perr(p, "too many tensors"); /* cannot happen: cap bounds the header */
    tandem_st_info *t = &f->t[f->count];
    memset(t, 0, sizeof *t);
    t->name = name;
    p->tensor = name;
    int have_dtype = 0, have_shape = 0, have_off = 0;
    TANDEM_TRY(expect(p, '{'));
    skip_ws(p);
    if (p->pos < p->n && p->s[p->pos] == '}') return perr(p, "empty tensor entry, expected dtype, shape and data_offsets");
    for (int more = 1; more;) {
        const char *key;
        size_t klen;
        p->field = NULL;
        size_t key_pos = p->pos;
        TANDEM_TRY(parse_string(p, &key, &klen));
        p->f->str_len -= klen + 1; /* field names are not kept */
        TANDEM_TRY(expect(p, ':'));
        if (strcmp(key, "dtype") == 0) {
            p->field = "dtype";
            if (have_dtype++) return perr(p, "field given twice");
            const char *v;
            size_t vlen;
            size_t vpos = p->pos;
            TANDEM_TRY(parse_string(p, &v, &vlen));
            if (!tandem_st_dtype_parse(v, vlen, &t->dtype)) {
                p->pos = vpos;
                return perr(p, "dtype \"%.32s\" is not one of F32, BF16, F16, I32, U8", v);
            }
            p->f->str_len -= vlen + 1;
        } else if (strcmp(key, "shape") == 0) {
            p->field = "shape";
            if (have_shape++) return perr(p, "field given twice");
            uint64_t dims[TANDEM_MAX_DIMS];
            TANDEM_TRY(parse_uint_array(p, dims, TANDEM_MAX_DIMS, &t->ndim, (uint64_t)INT64_MAX));
            for (int d = 0; d < t->ndim; d++) t->shape[d] = (int64_t)dims[d];
        } else if (strcmp(key, "data_offsets") == 0) {
            p->field = "data_offsets";
            if (have_off++) return perr(p, "field given twice");
            uint64_t o[2];
            int n = 0;
            TANDEM_TRY(parse_uint_array(p, o, 2, &n, UINT64_MAX));
            if (n != 2) return perr(p, "expected [begin, end], found %d numbers", n);
            t->begin = o[0];
            t->end = o[1];
        } else {
            p->pos = key_pos;
            return perr(p, "unknown field \"%.64s\", expected dtype, shape or data_offsets", key);
        }
        TANDEM_TRY(next_or_close(p, '}', &more));
    }
    p->field = !have_dtype ? "dtype" : !have_shape ? "shape" : !have_off ? "data_offsets" : NULL;
    if (p->field) return perr(p, "missing field");
    p->tensor = NULL;
    f->count++;
    return TANDEM_OK;
}

static tandem_status parse_metadata(parser *p) {
    tandem_st_file *f = p->f;
    p->field = "__metadata__";
    TANDEM_TRY(expect(p, '{'));
    skip_ws(p);
    if (p->pos < p->n && p->s[p->pos] == '}') {
        p->pos++;
        p->field = NULL;
        return TANDEM_OK;
    }
    for (int more = 1; more;) {
        if (f->meta_count == f->meta_cap) return perr(p, "too many metadata entries");
        tandem_st_meta *m = &f->meta[f->meta_count];
        skip_ws(p);
        if (p->pos < p->n && p->s[p->pos] != '"') {
            char fb[16];
            return perr(p, "expected a string key, found %s", found(p, fb, sizeof fb));
        }
        TANDEM_TRY(parse_string(p, &m->key, NULL));
        TANDEM_TRY(expect(p, ':'));
        skip_ws(p);
        if (p->pos < p->n && p->s[p->pos] != '"') {
            char fb[16];
            return perr(p, "metadata \"%.64s\": values must be strings, found %s", m->key, found(p, fb, sizeof fb));
        }
        TANDEM_TRY(parse_string(p, &m->value, NULL));
        f->meta_count++;
        TANDEM_TRY(next_or_close(p, '}', &more));
    }
    p->field = NULL;
    return TANDEM_OK;
}

static tandem_status parse_header(parser *p) {
    int have_meta = 0;
    /* the format: the header begins with '{' itself (no leading space) */
    if (p->n == 0 || p->s[0] != '{') {
        char fb[16];
        return perr(p, "the header must begin with '{', found %s", found(p, fb, sizeof fb));
    }
    TANDEM_TRY(expect(p, '{'));
    skip_ws(p);
    if (p->pos < p->n && p->s[p->pos] == '}') {
        p->pos++;
    } else {
        for (int more = 1; more;) {
            const char *key;
            size_t klen = 0, key_pos;
            skip_ws(p);
            key_pos = p->pos;
            TANDEM_TRY(parse_string(p, &key, &klen));
            if (klen == 0) {
                p->pos = key_pos;
                return perr(p, "a tensor with an empty name (names must be non-empty)");
            }
            TANDEM_TRY(expect(p, ':'));
            if (strcmp(key, "__metadata__") == 0) {
                if (have_meta++) return perr(p, "__metadata__ given twice");
                TANDEM_TRY(parse_metadata(p));
            } else {
                TANDEM_TRY(parse_tensor(p, key));
            }
            TANDEM_TRY(next_or_close(p, '}', &more));
        }
    }
    /* the padding: spaces (0x20) only, as the format says */
    while (p->pos < p->n && p->s[p->pos] == ' ') p->pos++;
    if (p->pos != p->n) {
        char fb[16];
        return perr(p, "unexpected %s after the header object (only space padding may follow)",
                    found(p, fb, sizeof fb));
    }
    return TANDEM_OK;
}

/* ---- layout checks ---- */

static const tandem_st_file *sort_file; /* qsort has no context argument; guarded by the lock */
static tandem_mutex sort_lock = {PTHREAD_MUTEX_INITIALIZER};

static int by_offset(const void *a, const void *b) {
    const tandem_st_info *x = &sort_file->t[*(const int *)a], *y = &sort_file->t[*(const int *)b];
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}
static int by_name(const void *a, const void *b) {
    return strcmp(sort_file->t[*(const int *)a].name, sort_file->t[*(const int *)b].name);
}
static int by_key(const void *a, const void *b) {
    return strcmp(sort_file->meta[*(const int *)a].key, sort_file->meta[*(const int *)b].key);
}

static size_t st_elem_size(tandem_dtype dt) {
    switch (dt) {
    case TANDEM_F32: case TANDEM_I32: return 4;
    case TANDEM_BF16: case TANDEM_F16: return 2;
    case TANDEM_U8: return 1;
    }
    return 0;
}

static tandem_status check_layout(tandem_st_file *f, const uint8_t *data, uint64_t data_len) {
    for (int i = 0; i < f->count; i++) {
        tandem_st_info *t = &f->t[i];
        uint64_t need = st_elem_size(t->dtype);
        int overflow = 0;
        for (int d = 0; d < t->ndim; d++) {
            uint64_t dim = (uint64_t)t->shape[d];
            if (dim && need > UINT64_MAX / dim) overflow = 1;
            else need *= dim;
        }
        if (overflow)
            return tandem_fail(TANDEM_E_FORMAT, "%s: tensor \"%s\" field shape: element count overflows", f->label, t->name);
        if (t->end < t->begin)
            return tandem_fail(TANDEM_E_FORMAT, "%s: tensor \"%s\" field data_offsets: [%llu, %llu] ends before "
                               "it begins", f->label, t->name, (unsigned long long)t->begin, (unsigned long long)t->end);
        if (t->end - t->begin != need)
            return tandem_fail(TANDEM_E_FORMAT, "%s: tensor \"%s\" field data_offsets: [%llu, %llu] spans %llu bytes, "
                               "but dtype %s x shape needs %llu", f->label, t->name, (unsigned long long)t->begin,
                               (unsigned long long)t->end, (unsigned long long)(t->end - t->begin),
                               tandem_st_dtype_name(t->dtype), (unsigned long long)need);
        if (t->end > data_len)
            return tandem_fail(TANDEM_E_FORMAT, "%s: tensor \"%s\" field data_offsets: [%llu, %llu] is out of range: "
                               "the data section has %llu bytes (truncated file?)", f->label, t->name,
                               (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)data_len);
        t->data = data + t->begin;
        t->bytes = (size_t)need;
    }
    int n = f->count > f->meta_count ? f->count : f->meta_count;
    int *idx = tandem_malloc(sizeof(int) * (size_t)(n + 1));
    if (!idx) return tandem_fail(TANDEM_E_NOMEM, "%s: out of memory for the tensor index", f->label);
    tandem_status st = TANDEM_OK;
    tandem_mutex_lock(&sort_lock);
    sort_file = f;
    for (int i = 0; i < f->count; i++) idx[i] = i;
    qsort(idx, (size_t)f->count, sizeof *idx, by_name);
    for (int i = 1; i < f->count && st == TANDEM_OK; i++)
        if (strcmp(f->t[idx[i]].name, f->t[idx[i - 1]].name) == 0)
            st = tandem_fail(TANDEM_E_FORMAT, "%s: tensor \"%s\" appears twice in the header", f->label,
                             f->t[idx[i]].name);
    for (int i = 0; i < f->meta_count; i++) idx[i] = i;
    qsort(idx, (size_t)f->meta_count, sizeof *idx, by_key);
    for (int i = 1; i < f->meta_count && st == TANDEM_OK; i++)
        if (strcmp(f->meta[idx[i]].key, f->meta[idx[i - 1]].key) == 0)
            st = tandem_fail(TANDEM_E_FORMAT, "%s: __metadata__ key \"%s\" appears twice", f->label,
                             f->meta[idx[i]].key);
    for (int i = 0; i < f->count; i++) idx[i] = i;
    qsort(idx, (size_t)f->count, sizeof *idx, by_offset);
    sort_file = NULL;
    tandem_mutex_unlock(&sort_lock);
    uint64_t at = 0;
    const char *prev = NULL;
    for (int i = 0; i < f->count && st == TANDEM_OK; i++) {
        const tandem_st_info *t = &f->t[idx[i]];
        if (t->begin < at)
            st = tandem_fail(TANDEM_E_FORMAT, "%s: tensor \"%s\" field data_offsets: [%llu, %llu] overlaps tensor "
                             "\"%s\" (which ends at %llu)", f->label, t->name, (unsigned long long)t->begin,
                             (unsigned long long)t->end, prev, (unsigned long long)at);
        else if (t->begin > at)
            st = tandem_fail(TANDEM_E_FORMAT, "%s: tensor \"%s\" field data_offsets: begins at %llu, but %s ends at "
                             "%llu: tensors must be contiguous", f->label, t->name, (unsigned long long)t->begin,
                             prev ? prev : "the data section start", (unsigned long long)at);
        at = t->end;
        prev = t->name;
    }
    tandem_free(idx);
    if (st == TANDEM_OK && at != data_len)
        st = tandem_fail(TANDEM_E_FORMAT, "%s: the data section has %llu bytes but its tensors end at %llu: %llu "
                         "bytes follow the last tensor", f->label, (unsigned long long)data_len,
                         (unsigned long long)at, (unsigned long long)(data_len - at));
    return st;
}

/* ---- open / close ---- */

static tandem_status parse_file(tandem_st_file *f) {
    if (f->len < 8)
        return tandem_fail(TANDEM_E_FORMAT, "%s: file is %zu bytes, shorter than the 8-byte header length "
                           "(truncated?)", f->label, f->len);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | f->bytes[i];
    if (hlen > f->len - 8)
        return tandem_fail(TANDEM_E_FORMAT, "%s: header length field says %llu bytes but only %zu follow it "
                           "(truncated or not a safetensors file)", f->label, (unsigned long long)hlen, f->len - 8);
    if (hlen > TANDEM_ST_MAX_HEADER)
        return tandem_fail(TANDEM_E_FORMAT, "%s: header length %llu exceeds the %u-byte limit", f->label,
                           (unsigned long long)hlen, TANDEM_ST_MAX_HEADER);
    if (hlen < 2)
        return tandem_fail(TANDEM_E_FORMAT, "%s: header length %llu, expected a JSON object", f->label,
                           (unsigned long long)hlen);
    /* Bounds that no header of hlen bytes can exceed: a tensor entry takes >= 48 bytes, a
     * metadata entry >= 6, and unescaping never grows a string. */
    f->cap = (int)(hlen / 40 + 2);
    f->meta_cap = (int)(hlen / 5 + 2);
    f->str_cap = (size_t)hlen + 1;
    f->t = tandem_calloc((size_t)f->cap, sizeof *f->t);
    f->meta = tandem_calloc((size_t)f->meta_cap, sizeof *f->meta);
    f->strings = tandem_malloc(f->str_cap);
    if (!f->t || !f->meta || !f->strings)
        return tandem_fail(TANDEM_E_NOMEM, "%s: out of memory for a %llu-byte header", f->label,
                           (unsigned long long)hlen);
    parser p = {f, (const char *)f->bytes + 8, (size_t)hlen, 0, NULL, NULL};
    TANDEM_TRY(parse_header(&p));
    return check_layout(f, f->bytes + 8 + hlen, f->len - 8 - hlen);
}

tandem_status tandem_st_open_memory(const void *data, size_t len, const char *label, tandem_st_file **out) {
    if (out) *out = NULL;
    if (!out || (!data && len)) return tandem_fail(TANDEM_E_INVALID, "tandem_st_open_memory: NULL argument");
    const uint16_t probe = 1;
    if (*(const uint8_t *)&probe != 1)
        return tandem_fail(TANDEM_E_UNSUPPORTED, "safetensors reader: big-endian hosts are not supported");
    tandem_st_file *f = tandem_calloc(1, sizeof *f);
    if (!f) return tandem_fail(TANDEM_E_NOMEM, "safetensors reader: out of memory");
    snprintf(f->label, sizeof f->label, "%s", label ? label : "(memory)");
    f->bytes = data;
    f->len = len;
    tandem_status st = parse_file(f);
    if (st != TANDEM_OK) {
        tandem_st_close(f);
        return st;
    }
    *out = f;
    return TANDEM_OK;
}

void (*tandem_st_test_before_read)(const char *path) = NULL;

/* Did the file change between two fstat calls? (size, modification time, inode) */
static int same_file(const struct stat *a, const struct stat *b) {
    return a->st_size == b->st_size && a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Read path whole into a new buffer. Never mapped: a mapping faults (SIGBUS) when the file is
 * truncated while it is in use — a checkpoint being resumed while someone rewrites it in place,
 * or a copy still in progress. Bounded reads of exactly the size fstat gave, then fstat again: a
 * file that shrank, grew or was rewritten while read is refused (TANDEM_E_IO naming it), which a
 * resume treats like any unusable checkpoint (it takes an older one). */
static tandem_status read_owned(const char *path, uint8_t **data, size_t *len) {
    *data = NULL;
    *len = 0;
    int fd = -1;
    uint64_t size = 0;
    /* a FIFO or device is refused before anything could block on it */
    TANDEM_TRY(tandem_file_open_input(path, 0, NULL, &fd, &size));
    struct stat before, after;
    memset(&after, 0, sizeof after);
    tandem_status st = TANDEM_OK;
    uint8_t *buf = NULL;
    if (fstat(fd, &before) != 0) st = tandem_fail(TANDEM_E_IO, "fstat %s: %s", path, strerror(errno));
    else if (size > SIZE_MAX - 1) st = tandem_fail(TANDEM_E_NOMEM, "read %s: %llu bytes do not fit in memory", path,
                                                   (unsigned long long)size);
    else if (!(buf = tandem_malloc((size_t)size + 1)))
        st = tandem_fail(TANDEM_E_NOMEM, "read %s: cannot allocate %llu bytes for the file", path,
                         (unsigned long long)size);
    if (st == TANDEM_OK && tandem_st_test_before_read) tandem_st_test_before_read(path);
    if (st == TANDEM_OK) st = tandem_file_read_exact(fd, path, buf, (size_t)size);
    if (st == TANDEM_OK) {
        uint8_t extra;
        const ssize_t r = pread(fd, &extra, 1, (off_t)size); /* one byte more: did it grow? */
        const int stat_ok = fstat(fd, &after) == 0;
        if (r != 0 || !stat_ok || !same_file(&before, &after))
            st = tandem_fail(TANDEM_E_IO, "read %s: the file changed while read (%llu bytes when opened, %llu "
                             "after): another process is writing it; read it again when that is done", path,
                             (unsigned long long)size, (unsigned long long)after.st_size);
    }
    close(fd);
    if (st != TANDEM_OK) {
        tandem_free(buf);
        return st;
    }
    *data = buf;
    *len = (size_t)size;
    return TANDEM_OK;
}

tandem_status tandem_st_open(const char *path, tandem_st_file **out) {
    if (out) *out = NULL;
    if (!path || !out) return tandem_fail(TANDEM_E_INVALID, "tandem_st_open: NULL argument");
    uint8_t *data = NULL;
    size_t len = 0;
    TANDEM_TRY(read_owned(path, &data, &len));
    tandem_st_file *f = NULL;
    tandem_status st = tandem_st_open_memory(data, len, path, &f);
    if (st != TANDEM_OK) {
        tandem_free(data);
        return st;
    }
    f->owned = data;
    *out = f;
    return TANDEM_OK;
}

void tandem_st_close(tandem_st_file *f) {
    if (!f) return;
    tandem_free(f->owned);
    tandem_free(f->t);
    tandem_free(f->meta);
    tandem_free(f->strings);
    tandem_free(f);
}

int tandem_st_count(const tandem_st_file *f) { return f->count; }
const tandem_st_info *tandem_st_get(const tandem_st_file *f, int i) {
    return i >= 0 && i < f->count ? &f->t[i] : NULL;
}
const tandem_st_info *tandem_st_find(const tandem_st_file *f, const char *name) {
    for (int i = 0; i < f->count; i++)
        if (strcmp(f->t[i].name, name) == 0) return &f->t[i];
    return NULL;
}
int tandem_st_meta_count(const tandem_st_file *f) { return f->meta_count; }
const tandem_st_meta *tandem_st_meta_get(const tandem_st_file *f, int i) {
    return i >= 0 && i < f->meta_count ? &f->meta[i] : NULL;
}
const char *tandem_st_meta_find(const tandem_st_file *f, const char *key) {
    for (int i = 0; i < f->meta_count; i++)
        if (strcmp(f->meta[i].key, key) == 0) return f->meta[i].value;
    return NULL;
}

static void shape_str(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

tandem_status tandem_st_read_tensor(const tandem_st_file *f, const char *name, tandem_dtype dtype,
                                    int ndim, const int64_t *shape, void *dst, size_t bytes) {
    const tandem_st_info *t = tandem_st_find(f, name);
    char want[160], have[160];
    shape_str(want, sizeof want, ndim, shape);
    if (!t)
        return tandem_fail(TANDEM_E_FORMAT, "%s: no tensor \"%s\" (expected %s %s)", f->label, name,
                           tandem_st_dtype_name(dtype) ? tandem_st_dtype_name(dtype) : "?", want);
    int same = t->dtype == dtype && t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
    if (!same) {
        shape_str(have, sizeof have, t->ndim, t->shape);
        return tandem_fail(TANDEM_E_FORMAT, "%s: tensor \"%s\" is %s %s, expected %s %s", f->label, name,
                           tandem_st_dtype_name(t->dtype), have,
                           tandem_st_dtype_name(dtype) ? tandem_st_dtype_name(dtype) : "?", want);
    }
    if (bytes != t->bytes)
        return tandem_fail(TANDEM_E_INVALID, "%s: tensor \"%s\" has %zu bytes, the destination %zu", f->label,
                           name, t->bytes, bytes);
    if (bytes) memcpy(dst, t->data, bytes);
    return TANDEM_OK;
}
