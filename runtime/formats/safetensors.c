/* safetensors.c — the safetensors writer and the dtype names (see safetensors.h). The header is
 * built in a buffer sized at create; data is streamed through runtime/formats/atomic_file.h. */
#include "runtime/formats/safetensors.h"

#include <string.h>

#include "runtime/formats/atomic_file.h"
#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/core/utf8.h"

struct tandem_st_writer {
    int count;
    tandem_st_tensor *t;  /* [count], names point into names */
    char *names;
    uint64_t *bytes;      /* [count] data bytes of each tensor */
    char *hdr;            /* header JSON + padding */
    size_t hdr_cap;
    size_t meta_max;
    void *chunk;          /* fetch buffer */
    size_t chunk_bytes;
};

/* ---- dtypes ---- */

static const struct {
    tandem_dtype dt;
    const char *name;
    size_t size;
} st_dtypes[] = {
    {TANDEM_F32, "F32", 4}, {TANDEM_BF16, "BF16", 2}, {TANDEM_F16, "F16", 2},
    {TANDEM_I32, "I32", 4}, {TANDEM_U8, "U8", 1},
};
enum { ST_NDTYPES = sizeof st_dtypes / sizeof st_dtypes[0] };

const char *tandem_st_dtype_name(tandem_dtype dt) {
    for (int i = 0; i < ST_NDTYPES; i++)
        if (st_dtypes[i].dt == dt) return st_dtypes[i].name;
    return NULL;
}

int tandem_st_dtype_parse(const char *s, size_t len, tandem_dtype *dt) {
    for (int i = 0; i < ST_NDTYPES; i++)
        if (strlen(st_dtypes[i].name) == len && memcmp(st_dtypes[i].name, s, len) == 0) {
            *dt = st_dtypes[i].dt;
            return 1;
        }
    return 0;
}

static size_t st_dtype_size(tandem_dtype dt) {
    for (int i = 0; i < ST_NDTYPES; i++)
        if (st_dtypes[i].dt == dt) return st_dtypes[i].size;
    return 0;
}

static int host_is_little_endian(void) {
    const uint16_t probe = 1;
    return *(const uint8_t *)&probe == 1;
}

/* ---- bounded string builder (no allocation) ---- */

typedef struct sbuf {
    char *p;
    size_t len, cap;
    int overflow;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->overflow || n > b->cap - b->len) {
        b->overflow = 1;
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}
static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }
static void sb_u64(sbuf *b, uint64_t v) {
    char tmp[24];
    int i = (int)sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    sb_put(b, tmp + i, sizeof tmp - (size_t)i);
}
/* A JSON string literal: quotes, backslashes and control characters escaped; other bytes
 * (UTF-8, validated by the caller) as they are. At most 6 bytes per input byte + 2. */
static void sb_json_string(sbuf *b, const char *s) {
    static const char hex[] = "0123456789abcdef";
    sb_put(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        char esc[6];
        switch (*c) {
        case '"': sb_put(b, "\\\"", 2); break;
        case '\\': sb_put(b, "\\\\", 2); break;
        case '\n': sb_put(b, "\\n", 2); break;
        case '\r': sb_put(b, "\\r", 2); break;
        case '\t': sb_put(b, "\\t", 2); break;
        case '\b': sb_put(b, "\\b", 2); break;
        case '\f': sb_put(b, "\\f", 2); break;
        default:
            if (*c < 0x20) {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[*c >> 4];
                esc[5] = hex[*c & 15];
                sb_put(b, esc, 6);
            } else {
                sb_put(b, (const char *)c, 1);
            }
        }
    }
    sb_put(b, "\"", 1);
}

/* ---- writer ---- */

static int valid_utf8(const char *s) {
    size_t bad;
    return tandem_utf8_validate(s, strlen(s), &bad);
}

static tandem_status check_tensor(const tandem_st_tensor *t, int i, uint64_t *bytes) {
    if (!t->name || !t->name[0])
        return tandem_fail(TANDEM_E_INVALID, "safetensors writer: tensor %d has no name", i);
    if (strcmp(t->name, "__metadata__") == 0)
        return tandem_fail(TANDEM_E_INVALID, "safetensors writer: tensor %d is named \"__metadata__\", "
                           "a name the format reserves", i);
    if (!valid_utf8(t->name))
        return tandem_fail(TANDEM_E_INVALID, "safetensors writer: tensor %d's name is not valid UTF-8", i);
    size_t es = st_dtype_size(t->dtype);
    if (!es)
        return tandem_fail(TANDEM_E_INVALID, "safetensors writer: tensor \"%s\": dtype %d, expected F32, "
                           "BF16, F16, I32 or U8", t->name, (int)t->dtype);
    if (t->ndim < 0 || t->ndim > TANDEM_MAX_DIMS)
        return tandem_fail(TANDEM_E_INVALID, "safetensors writer: tensor \"%s\": ndim %d, expected 0..%d",
                           t->name, t->ndim, TANDEM_MAX_DIMS);
    uint64_t n = es;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0)
            return tandem_fail(TANDEM_E_INVALID, "safetensors writer: tensor \"%s\": dimension %d is %lld, "
                               "expected >= 0", t->name, d, (long long)t->shape[d]);
        if (t->shape[d] && n > UINT64_MAX / 2 / (uint64_t)t->shape[d])
            return tandem_fail(TANDEM_E_INVALID, "safetensors writer: tensor \"%s\": size overflows", t->name);
        n *= (uint64_t)t->shape[d];
    }
    *bytes = n;
    return TANDEM_OK;
}

tandem_status tandem_st_writer_create(const tandem_st_tensor *tensors, int count,
                                      size_t meta_bytes_max, size_t chunk_bytes,
                                      tandem_st_writer **out) {
    if (out) *out = NULL;
    if (!out || count < 0 || (count > 0 && !tensors))
        return tandem_fail(TANDEM_E_INVALID, "tandem_st_writer_create: bad arguments");
    if (!host_is_little_endian())
        return tandem_fail(TANDEM_E_UNSUPPORTED, "safetensors writer: big-endian hosts are not supported");
    if (meta_bytes_max > (SIZE_MAX / 64))
        return tandem_fail(TANDEM_E_INVALID, "safetensors writer: meta_bytes_max %zu too large", meta_bytes_max);
    tandem_st_writer *w = tandem_calloc(1, sizeof *w);
    if (!w) return tandem_fail(TANDEM_E_NOMEM, "safetensors writer: out of memory");
    w->count = count;
    w->meta_max = meta_bytes_max;
    size_t names_len = 0, hdr = 64 + 12 * meta_bytes_max; /* {"__metadata__":{...}} + escapes */
    size_t largest_fetch = 0;
    tandem_status st = TANDEM_OK;
    w->t = tandem_calloc((size_t)count + 1, sizeof *w->t);
    w->bytes = tandem_calloc((size_t)count + 1, sizeof *w->bytes);
    if (!w->t || !w->bytes) {
        st = tandem_fail(TANDEM_E_NOMEM, "safetensors writer: out of memory for %d tensors", count);
        goto fail;
    }
    for (int i = 0; i < count; i++) {
        if ((st = check_tensor(&tensors[i], i, &w->bytes[i])) != TANDEM_OK) goto fail;
        for (int j = 0; j < i; j++)
            if (strcmp(tensors[i].name, tensors[j].name) == 0) {
                st = tandem_fail(TANDEM_E_INVALID, "safetensors writer: tensor name \"%s\" appears twice "
                                 "(entries %d and %d)", tensors[i].name, j, i);
                goto fail;
            }
        size_t nl = strlen(tensors[i].name);
        names_len += nl + 1;
        /* "name":{"dtype":"BF16","shape":[d,...],"data_offsets":[b,e]}, */
        hdr += 6 * nl + 2 + 64 + 21 * (size_t)TANDEM_MAX_DIMS + 2 * 21;
        if (!tensors[i].data && w->bytes[i] > largest_fetch) largest_fetch = (size_t)w->bytes[i];
    }
    w->names = tandem_malloc(names_len + 1);
    w->hdr_cap = hdr + 8;
    w->hdr = tandem_malloc(w->hdr_cap);
    w->chunk_bytes = chunk_bytes ? chunk_bytes : largest_fetch;
    if (w->chunk_bytes) w->chunk = tandem_aligned_alloc(64, (w->chunk_bytes + 63) / 64 * 64);
    if (!w->names || !w->hdr || (w->chunk_bytes && !w->chunk)) {
        st = tandem_fail(TANDEM_E_NOMEM, "safetensors writer: out of memory (header %zu bytes, chunk %zu)",
                         w->hdr_cap, w->chunk_bytes);
        goto fail;
    }
    char *np = w->names;
    for (int i = 0; i < count; i++) {
        w->t[i] = tensors[i];
        size_t nl = strlen(tensors[i].name);
        memcpy(np, tensors[i].name, nl + 1);
        w->t[i].name = np;
        np += nl + 1;
    }
    *out = w;
    return TANDEM_OK;
fail:
    tandem_st_writer_free(w);
    return st;
}

void tandem_st_writer_free(tandem_st_writer *w) {
    if (!w) return;
    tandem_free(w->t);
    tandem_free(w->bytes);
    tandem_free(w->names);
    tandem_free(w->hdr);
    if (w->chunk) tandem_aligned_free(w->chunk);
    tandem_free(w);
}

/* Header JSON into w->hdr, padded with spaces so 8 + *len is a multiple of 8. */
static tandem_status build_header(tandem_st_writer *w, const tandem_st_meta *meta, int meta_count,
                                  size_t *len, uint64_t *data_bytes) {
    if (meta_count < 0 || (meta_count > 0 && !meta))
        return tandem_fail(TANDEM_E_INVALID, "safetensors writer: bad metadata arguments");
    size_t raw = 0;
    for (int i = 0; i < meta_count; i++) {
        if (!meta[i].key || !meta[i].value)
            return tandem_fail(TANDEM_E_INVALID, "safetensors writer: metadata entry %d has a NULL key or value", i);
        if (!valid_utf8(meta[i].key) || !valid_utf8(meta[i].value))
            return tandem_fail(TANDEM_E_INVALID, "safetensors writer: metadata \"%.64s\" is not valid UTF-8",
                               meta[i].key);
        for (int j = 0; j < i; j++)
            if (strcmp(meta[i].key, meta[j].key) == 0)
                return tandem_fail(TANDEM_E_INVALID, "safetensors writer: metadata key \"%s\" appears twice",
                                   meta[i].key);
        raw += strlen(meta[i].key) + strlen(meta[i].value) + 1;
    }
    if (raw > w->meta_max)
        return tandem_fail(TANDEM_E_INVALID, "safetensors writer: %zu bytes of metadata, the writer was "
                           "created for at most %zu", raw, w->meta_max);
    sbuf b = {w->hdr, 0, w->hdr_cap - 8, 0};
    sb_str(&b, "{");
    if (meta_count > 0) {
        sb_str(&b, "\"__metadata__\":{");
        for (int i = 0; i < meta_count; i++) {
            if (i) sb_str(&b, ",");
            sb_json_string(&b, meta[i].key);
            sb_str(&b, ":");
            sb_json_string(&b, meta[i].value);
        }
        sb_str(&b, "}");
    }
    uint64_t off = 0;
    for (int i = 0; i < w->count; i++) {
        const tandem_st_tensor *t = &w->t[i];
        if (i || meta_count > 0) sb_str(&b, ",");
        sb_json_string(&b, t->name);
        sb_str(&b, ":{\"dtype\":\"");
        sb_str(&b, tandem_st_dtype_name(t->dtype));
        sb_str(&b, "\",\"shape\":[");
        for (int d = 0; d < t->ndim; d++) {
            if (d) sb_str(&b, ",");
            sb_u64(&b, (uint64_t)t->shape[d]);
        }
        sb_str(&b, "],\"data_offsets\":[");
        sb_u64(&b, off);
        sb_str(&b, ",");
        off += w->bytes[i];
        sb_u64(&b, off);
        sb_str(&b, "]}");
    }
    sb_str(&b, "}");
    b.cap = w->hdr_cap;
    while (!b.overflow && (b.len + 8) % 8) sb_put(&b, " ", 1);
    if (b.overflow) /* cannot happen with the bounds used at create; kept as a guard */
        return tandem_fail(TANDEM_E_INTERNAL, "safetensors writer: header exceeds its %zu-byte buffer", w->hdr_cap);
    *len = b.len;
    *data_bytes = off;
    return TANDEM_OK;
}

tandem_status tandem_st_writer_file_size(tandem_st_writer *w, const tandem_st_meta *meta,
                                         int meta_count, uint64_t *bytes) {
    size_t hlen = 0;
    uint64_t data = 0;
    TANDEM_TRY(build_header(w, meta, meta_count, &hlen, &data));
    *bytes = 8 + (uint64_t)hlen + data;
    return TANDEM_OK;
}

tandem_status tandem_st_write(tandem_st_writer *w, const char *path, const tandem_st_meta *meta,
                              int meta_count, tandem_st_fetch_fn fetch, void *ctx) {
    if (!w || !path) return tandem_fail(TANDEM_E_INVALID, "tandem_st_write: NULL argument");
    for (int i = 0; i < w->count; i++)
        if (!w->t[i].data && w->bytes[i] && !fetch)
            return tandem_fail(TANDEM_E_INVALID, "safetensors write %s: tensor \"%s\" has no data pointer "
                               "and no fetch callback was given", path, w->t[i].name);
    size_t hlen = 0;
    uint64_t data_bytes = 0;
    TANDEM_TRY(build_header(w, meta, meta_count, &hlen, &data_bytes));
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)((uint64_t)hlen >> (8 * i));

    tandem_atomic_file f;
    TANDEM_TRY(tandem_atomic_open(&f, path));
    tandem_status st = tandem_atomic_write(&f, le, 8);
    if (st == TANDEM_OK) st = tandem_atomic_write(&f, w->hdr, hlen);
    for (int i = 0; i < w->count && st == TANDEM_OK; i++) {
        const tandem_st_tensor *t = &w->t[i];
        size_t total = (size_t)w->bytes[i];
        if (t->data) {
            st = tandem_atomic_write(&f, t->data, total);
            continue;
        }
        for (size_t off = 0; off < total && st == TANDEM_OK; off += w->chunk_bytes) {
            size_t n = total - off < w->chunk_bytes ? total - off : w->chunk_bytes;
            st = fetch(ctx, t->user, w->chunk, off, n);
            if (st != TANDEM_OK) { /* keep the callback's message, add where it happened */
                st = tandem_fail(st, "safetensors write %s: fetching tensor \"%s\" bytes [%zu, %zu): %s", path,
                                 t->name, off, off + n, tandem_last_error());
                break;
            }
            st = tandem_atomic_write(&f, w->chunk, n);
        }
    }
    if (st != TANDEM_OK) {
        tandem_atomic_abort(&f);
        return st;
    }
    return tandem_atomic_commit(&f);
}

tandem_status tandem_st_fetch_pool_tensor(void *ctx, void *user, void *dst, size_t offset, size_t bytes) {
    tandem_stream *s = ctx;
    const tandem_tensor *t = user;
    if (!s || !t) return tandem_fail(TANDEM_E_INVALID, "tandem_st_fetch_pool_tensor: NULL stream or tensor");
    if (offset != 0 || bytes != tandem_tensor_bytes(t))
        return tandem_fail(TANDEM_E_INVALID, "tandem_st_fetch_pool_tensor: tensor '%s' asked for bytes "
                           "[%zu, %zu) of %zu; create the writer with chunk_bytes = 0",
                           tandem_tensor_name(t), offset, offset + bytes, tandem_tensor_bytes(t));
    TANDEM_TRY(tandem_tensor_download(s, dst, t, bytes));
    return tandem_stream_sync(s);
}
