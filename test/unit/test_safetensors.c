/* test_safetensors.c — safetensors writer and reader: random round trips checked by an
 * independent minimal parser written here (its own JSON reader), hand-made broken files
 * (truncated, bad JSON, offsets out of range / overlapping / with gaps, wrong dtype size,
 * unknown dtype, duplicate names, trailing bytes) → TANDEM_E_FORMAT naming the file and the
 * field, random byte mutations that must never crash the reader, and a write that allocates
 * nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/formats/checkpoint.h"
#include "runtime/formats/safetensors.h"
#include "test/fixtures.h"

static tandem_rng rng;
static char scratch[256];

static int setup(void **state) {
    (void)state;
    return tandem_test_mkdtemp(scratch, sizeof scratch, "test_st");
}
static int teardown(void **state) {
    (void)state;
    return tandem_test_rmtree(scratch);
}

/* ---- an independent minimal JSON reader (a tree of values; enough for a header) ---- */

enum { J_OBJ, J_ARR, J_STR, J_NUM };
typedef struct jv {
    int type;
    char *str;        /* J_STR: decoded (\uXXXX only for BMP here, enough for the test names) */
    double num;
    int n;            /* children */
    char **keys;      /* J_OBJ */
    struct jv **kids; /* J_OBJ / J_ARR */
} jv;

static const char *jp;
static void jws(void) { while (*jp == ' ' || *jp == '\n' || *jp == '\t' || *jp == '\r') jp++; }
static jv *jparse(void);
static char *jstring(void) {
    assert_int_equal(*jp, '"');
    jp++;
    char *out = malloc(strlen(jp) * 4 + 1), *o = out;
    while (*jp != '"') {
        assert_true(*jp != 0);
        if (*jp == '\\') {
            jp++;
            char c = *jp++;
            if (c == 'n') *o++ = '\n';
            else if (c == 't') *o++ = '\t';
            else if (c == 'r') *o++ = '\r';
            else if (c == 'b') *o++ = '\b';
            else if (c == 'f') *o++ = '\f';
            else if (c == 'u') {
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                    char h = *jp++;
                    v = v * 16 + (unsigned)(h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
                }
                assert_true(v < 0x80); /* the writer only escapes control characters */
                *o++ = (char)v;
            } else *o++ = c;
        } else {
            *o++ = *jp++;
        }
    }
    jp++;
    *o = 0;
    return out;
}
static jv *jparse(void) {
    jws();
    jv *v = calloc(1, sizeof *v);
    if (*jp == '{' || *jp == '[') {
        int obj = *jp == '{';
        v->type = obj ? J_OBJ : J_ARR;
        jp++;
        jws();
        if (*jp == (obj ? '}' : ']')) {
            jp++;
            return v;
        }
        for (;;) {
            v->keys = realloc(v->keys, sizeof(char *) * (size_t)(v->n + 1));
            v->kids = realloc(v->kids, sizeof(jv *) * (size_t)(v->n + 1));
            jws();
            v->keys[v->n] = NULL;
            if (obj) {
                v->keys[v->n] = jstring();
                jws();
                assert_int_equal(*jp, ':');
                jp++;
            }
            v->kids[v->n++] = jparse();
            jws();
            if (*jp == ',') {
                jp++;
                continue;
            }
            assert_int_equal(*jp, obj ? '}' : ']');
            jp++;
            return v;
        }
    }
    if (*jp == '"') {
        v->type = J_STR;
        v->str = jstring();
        return v;
    }
    char *end;
    v->type = J_NUM;
    v->num = strtod(jp, &end);
    assert_true(end != jp);
    jp = end;
    return v;
}
static void jfree(jv *v) {
    for (int i = 0; i < v->n; i++) {
        free(v->keys[i]);
        jfree(v->kids[i]);
    }
    free(v->keys);
    free(v->kids);
    free(v->str);
    free(v);
}
static jv *jget(const jv *o, const char *k) {
    for (int i = 0; i < o->n; i++)
        if (o->keys[i] && strcmp(o->keys[i], k) == 0) return o->kids[i];
    return NULL;
}

/* ---- random tensors ---- */

typedef struct case_tensor {
    char name[64];
    tandem_dtype dt;
    int ndim;
    int64_t shape[TANDEM_MAX_DIMS];
    size_t bytes;
    unsigned char *data;
    int use_fetch;
} case_tensor;

static size_t esize(tandem_dtype dt) {
    return dt == TANDEM_F32 || dt == TANDEM_I32 ? 4 : dt == TANDEM_U8 ? 1 : 2;
}
static const char *dname(tandem_dtype dt) {
    switch (dt) {
    case TANDEM_F32: return "F32";
    case TANDEM_BF16: return "BF16";
    case TANDEM_F16: return "F16";
    case TANDEM_I32: return "I32";
    default: return "U8";
    }
}

static void make_case(case_tensor *t, int i) {
    static const char *odd[] = {"quote\"d", "back\\slash", "new\nline", "tab\tx", "ünï/çødé", "ctl\x01"};
    if (i < 6) snprintf(t->name, sizeof t->name, "%s.%d", odd[i], i);
    else snprintf(t->name, sizeof t->name, "layers.%d.w%lld", i, (long long)tandem_rng_int(&rng, 0, 99));
    static const tandem_dtype dts[] = {TANDEM_F32, TANDEM_BF16, TANDEM_F16, TANDEM_I32, TANDEM_U8};
    t->dt = dts[tandem_rng_int(&rng, 0, 4)];
    t->ndim = (int)tandem_rng_int(&rng, 0, 4);
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++) {
        t->shape[d] = tandem_rng_int(&rng, 0, 9) == 0 ? 0 : tandem_rng_int(&rng, 1, 7);
        n *= (size_t)t->shape[d];
    }
    t->bytes = n * esize(t->dt);
    t->data = malloc(t->bytes + 1);
    for (size_t b = 0; b < t->bytes; b++) t->data[b] = (unsigned char)tandem_rng_next(&rng);
    t->use_fetch = (int)tandem_rng_int(&rng, 0, 1);
}

static int fetch_calls;
static tandem_status fetch_cb(void *ctx, void *user, void *dst, size_t offset, size_t bytes) {
    case_tensor *t = user;
    assert_ptr_equal(ctx, &fetch_calls);
    assert_true(offset + bytes <= t->bytes);
    memcpy(dst, t->data + offset, bytes);
    fetch_calls++;
    return TANDEM_OK;
}

/* Check a file with the independent parser against the cases. */
static void independent_check(const char *path, case_tensor *c, int n, const tandem_st_meta *meta, int nmeta) {
    size_t len;
    unsigned char *buf = tandem_test_read_file_ok(path, &len);
    assert_true(len >= 8);
    unsigned long long hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | buf[i];
    assert_true(8 + hlen <= len);
    assert_int_equal((8 + hlen) % 8, 0);
    char *hdr = malloc(hlen + 1);
    memcpy(hdr, buf + 8, hlen);
    hdr[hlen] = 0;
    assert_int_equal(hdr[0], '{');
    jp = hdr;
    jv *root = jparse();
    jws();
    assert_int_equal(*jp, 0); /* only padding after the object */
    assert_int_equal(root->type, J_OBJ);
    assert_int_equal(root->n, n + (nmeta ? 1 : 0));
    size_t data_len = len - 8 - hlen;
    size_t covered = 0;
    for (int i = 0; i < n; i++) {
        jv *e = jget(root, c[i].name);
        assert_non_null(e);
        assert_string_equal(jget(e, "dtype")->str, dname(c[i].dt));
        jv *sh = jget(e, "shape");
        assert_int_equal(sh->n, c[i].ndim);
        for (int d = 0; d < c[i].ndim; d++) assert_true(sh->kids[d]->num == (double)c[i].shape[d]);
        jv *off = jget(e, "data_offsets");
        assert_int_equal(off->n, 2);
        size_t b = (size_t)off->kids[0]->num, en = (size_t)off->kids[1]->num;
        assert_int_equal(en - b, c[i].bytes);
        assert_true(en <= data_len);
        assert_memory_equal(buf + 8 + hlen + b, c[i].data, c[i].bytes);
        covered += c[i].bytes;
    }
    assert_int_equal(covered, data_len);
    if (nmeta) {
        jv *m = jget(root, "__metadata__");
        assert_non_null(m);
        assert_int_equal(m->n, nmeta);
        for (int i = 0; i < nmeta; i++) assert_string_equal(jget(m, meta[i].key)->str, meta[i].value);
    }
    jfree(root);
    free(hdr);
    free(buf);
}

static void test_round_trip(void **state) {
    (void)state;
    for (int round = 0; round < 20; round++) {
        int n = (int)tandem_rng_int(&rng, 0, 24);
        case_tensor c[24];
        tandem_st_tensor t[24];
        for (int i = 0; i < n; i++) {
            make_case(&c[i], i);
            t[i] = (tandem_st_tensor){c[i].name, c[i].dt, c[i].ndim, {0}, c[i].use_fetch ? NULL : c[i].data, &c[i]};
            memcpy(t[i].shape, c[i].shape, sizeof c[i].shape);
        }
        tandem_st_meta meta[] = {
            {"format_version", "1"},
            {"config", "model:\n  size: tiny   # \"quoted\" \\ back\n\ttab: ü\x02"},
            {"symbols", "[\"<pad>\",\"a\",\"\\u0628\"]"},
        };
        int nmeta = (int)tandem_rng_int(&rng, 0, 3);
        size_t chunk = (size_t)tandem_rng_int(&rng, 0, 13); /* 0 = whole tensors */
        tandem_st_writer *w = NULL;
        assert_int_equal(tandem_st_writer_create(t, n, 512, chunk, &w), TANDEM_OK);
        char path[400];
        snprintf(path, sizeof path, "%s/rt%d.safetensors", scratch, round);
        fetch_calls = 0;
        uint64_t allocs = tandem_alloc_count();
        assert_int_equal(tandem_st_write(w, path, meta, nmeta, fetch_cb, &fetch_calls), TANDEM_OK);
        assert_int_equal(tandem_alloc_count(), allocs); /* writing allocates nothing */
        uint64_t expect_size = 0;
        assert_int_equal(tandem_st_writer_file_size(w, meta, nmeta, &expect_size), TANDEM_OK);
        struct stat sb;
        assert_int_equal(stat(path, &sb), 0);
        assert_int_equal((uint64_t)sb.st_size, expect_size);
        tandem_st_writer_free(w);

        independent_check(path, c, n, meta, nmeta);

        tandem_st_file *f = NULL;
        assert_int_equal(tandem_st_open(path, &f), TANDEM_OK);
        assert_int_equal(tandem_st_count(f), n);
        assert_int_equal(tandem_st_meta_count(f), nmeta);
        for (int i = 0; i < nmeta; i++) assert_string_equal(tandem_st_meta_find(f, meta[i].key), meta[i].value);
        for (int i = 0; i < n; i++) {
            const tandem_st_info *info = tandem_st_get(f, i);
            assert_string_equal(info->name, c[i].name); /* header order = writer order */
            assert_int_equal(info->dtype, c[i].dt);
            assert_int_equal(info->ndim, c[i].ndim);
            assert_int_equal(info->bytes, c[i].bytes);
            assert_memory_equal(info->data, c[i].data, c[i].bytes);
            unsigned char *dst = malloc(c[i].bytes + 1);
            assert_int_equal(tandem_st_read_tensor(f, c[i].name, c[i].dt, c[i].ndim, c[i].shape, dst, c[i].bytes),
                             TANDEM_OK);
            assert_memory_equal(dst, c[i].data, c[i].bytes);
            free(dst);
        }
        if (n > 0) { /* shape / dtype mismatches are named */
            int64_t wrong[TANDEM_MAX_DIMS];
            memcpy(wrong, c[0].shape, sizeof wrong);
            wrong[0] += 1;
            int nd = c[0].ndim ? c[0].ndim : 1;
            char dst[8];
            assert_int_equal(tandem_st_read_tensor(f, c[0].name, c[0].dt, nd, wrong, dst, 0), TANDEM_E_FORMAT);
            assert_non_null(strstr(tandem_last_error(), "expected"));
            assert_int_equal(tandem_st_read_tensor(f, "no such tensor", TANDEM_F32, 0, wrong, dst, 4), TANDEM_E_FORMAT);
        }
        tandem_st_close(f);
        for (int i = 0; i < n; i++) free(c[i].data);
    }
}

static void test_writer_rejects(void **state) {
    (void)state;
    float x[4] = {0};
    tandem_st_tensor t[2] = {{"a", TANDEM_F32, 1, {4}, x, NULL}, {"a", TANDEM_F32, 1, {4}, x, NULL}};
    tandem_st_writer *w = NULL;
    assert_int_equal(tandem_st_writer_create(t, 2, 0, 0, &w), TANDEM_E_INVALID); /* duplicate */
    assert_non_null(strstr(tandem_last_error(), "twice"));
    t[1].name = "__metadata__";
    assert_int_equal(tandem_st_writer_create(t, 2, 0, 0, &w), TANDEM_E_INVALID);
    t[1].name = "b";
    t[1].shape[0] = -1;
    assert_int_equal(tandem_st_writer_create(t, 2, 0, 0, &w), TANDEM_E_INVALID);
    t[1].shape[0] = 4;
    assert_int_equal(tandem_st_writer_create(t, 2, 16, 0, &w), TANDEM_OK);
    char path[400];
    snprintf(path, sizeof path, "%s/rej.safetensors", scratch);
    tandem_st_meta big = {"k", "this value is longer than sixteen bytes"};
    assert_int_equal(tandem_st_write(w, path, &big, 1, NULL, NULL), TANDEM_E_INVALID);
    tandem_st_meta dup[2] = {{"k", "v"}, {"k", "w"}};
    assert_int_equal(tandem_st_write(w, path, dup, 2, NULL, NULL), TANDEM_E_INVALID);
    assert_false(access(path, F_OK) == 0); /* nothing was written */
    tandem_st_writer_free(w);
}

/* ---- broken files ---- */

static unsigned char *make_file(const char *header, const void *data, size_t data_len, size_t *len) {
    size_t h = strlen(header);
    unsigned char *buf = malloc(8 + h + data_len + 1);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((unsigned long long)h >> (8 * i));
    memcpy(buf + 8, header, h);
    if (data_len) memcpy(buf + 8 + h, data, data_len);
    *len = 8 + h + data_len;
    return buf;
}

/* Open the bytes from a real file; expect TANDEM_E_FORMAT with all of `needles` in the message. */
static void expect_bad(const char *header, size_t data_len, const char *n1, const char *n2) {
    unsigned char data[256];
    memset(data, 7, sizeof data);
    size_t len;
    unsigned char *buf = make_file(header, data, data_len, &len);
    char path[400];
    snprintf(path, sizeof path, "%s/bad.safetensors", scratch);
    tandem_test_write_file(path, buf, len);
    tandem_st_file *sf = NULL;
    tandem_status st = tandem_st_open(path, &sf);
    if (st != TANDEM_E_FORMAT) print_message("header %s: status %d, message %s\n", header, st, tandem_last_error());
    assert_int_equal(st, TANDEM_E_FORMAT);
    assert_null(sf);
    const char *msg = tandem_last_error();
    if (!strstr(msg, path) || (n1 && !strstr(msg, n1)) || (n2 && !strstr(msg, n2)))
        print_message("message '%s' lacks '%s' / '%s'\n", msg, n1 ? n1 : "", n2 ? n2 : "");
    assert_non_null(strstr(msg, path));
    if (n1) assert_non_null(strstr(msg, n1));
    if (n2) assert_non_null(strstr(msg, n2));
    free(buf);
}

static void test_broken_files(void **state) {
    (void)state;
    /* a valid one first, so the helpers are known to accept good input */
    {
        size_t len;
        unsigned char d[8] = {0};
        unsigned char *buf = make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}  ", d, 8, &len);
        tandem_st_file *f = NULL;
        assert_int_equal(tandem_st_open_memory(buf, len, "good", &f), TANDEM_OK);
        tandem_st_close(f);
        free(buf);
    }
    const char *ok_a = "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";
    char h[512];
    /* bad JSON */
    snprintf(h, sizeof h, "{%s,}", ok_a);
    expect_bad(h, 8, "expected a string", NULL);
    expect_bad("{\"a\" {\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "expected ':'", NULL);
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "expected ',' or '}'", NULL);
    expect_bad("{\"a:{}}", 8, "unterminated string", NULL);
    expect_bad("{'a':{}}", 8, "expected a string", NULL);
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,],\"data_offsets\":[0,8]}}", 8, "shape", NULL);
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[02],\"data_offsets\":[0,8]}}", 8, "leading zero", NULL);
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", 8, "fraction", NULL);
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "negative", NULL);
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} x", 8, "after the header", NULL);
    expect_bad("{\"a\\q\":{}}", 8, "invalid escape", NULL);
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"extra\":1}}", 8, "unknown field", "extra");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, "missing field", "shape");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "twice", NULL);
    expect_bad("{\"__metadata__\":{\"k\":1}}", 0, "must be strings", NULL);
    /* dtypes and sizes */
    expect_bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, "F64", "dtype");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "needs 8", "\"a\"");
    expect_bad("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "needs 4", "data_offsets");
    /* offsets */
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "out of range", "data_offsets");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "ends before", NULL);
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "overlaps", NULL);
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}", 20, "contiguous", NULL);
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12, "follow the last tensor", NULL);
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16, "appears twice", NULL);
    expect_bad("{\"a\":{\"dtype\":\"U8\",\"shape\":[99999999999,99999999999,99999999999],\"data_offsets\":[0,8]}}", 8,
               "overflows", NULL);

    /* header length field vs file size, truncation */
    {
        size_t len;
        unsigned char d[8] = {0};
        unsigned char *buf = make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", d, 8, &len);
        tandem_st_file *f = NULL;
        for (size_t cut = 0; cut < len; cut++) {
            assert_int_equal(tandem_st_open_memory(buf, cut, "trunc", &f), TANDEM_E_FORMAT);
            assert_non_null(strstr(tandem_last_error(), "trunc"));
        }
        buf[7] = 0x7f; /* a huge header length */
        assert_int_equal(tandem_st_open_memory(buf, len, "huge", &f), TANDEM_E_FORMAT);
        assert_non_null(strstr(tandem_last_error(), "header length"));
        free(buf);
    }
    /* an empty file, through the mmap path */
    char path[400];
    snprintf(path, sizeof path, "%s/empty.safetensors", scratch);
    FILE *f = fopen(path, "wb");
    fclose(f);
    tandem_st_file *sf = NULL;
    assert_int_equal(tandem_st_open(path, &sf), TANDEM_E_FORMAT);
    assert_non_null(strstr(tandem_last_error(), "shorter than"));
}

/* Random byte mutations, insertions of JSON punctuation, and truncations of a valid file:
 * the reader must return OK or FORMAT, never crash (the run under ASan checks that nothing is
 * read outside the buffer), and when it accepts, every tensor lies inside the buffer. */
static void test_mutations(void **state) {
    (void)state;
    case_tensor c[6];
    tandem_st_tensor t[6];
    for (int i = 0; i < 6; i++) {
        make_case(&c[i], i + 6);
        t[i] = (tandem_st_tensor){c[i].name, c[i].dt, c[i].ndim, {0}, c[i].data, NULL};
        memcpy(t[i].shape, c[i].shape, sizeof c[i].shape);
    }
    tandem_st_meta meta[] = {{"step", "42"}, {"config", "a: \"b\"\n"}};
    tandem_st_writer *w = NULL;
    assert_int_equal(tandem_st_writer_create(t, 6, 256, 0, &w), TANDEM_OK);
    char path[400];
    snprintf(path, sizeof path, "%s/fuzz.safetensors", scratch);
    assert_int_equal(tandem_st_write(w, path, meta, 2, NULL, NULL), TANDEM_OK);
    tandem_st_writer_free(w);
    size_t len;
    unsigned char *orig = tandem_test_read_file_ok(path, &len);
    size_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | orig[i];
    static const char punct[] = "{}[]\",:\\0123456789- eu";
    int accepted = 0, rejected = 0;
    for (int iter = 0; iter < 4000; iter++) {
        size_t n = len;
        unsigned char *m = malloc(len + 1);
        memcpy(m, orig, len);
        int muts = (int)tandem_rng_int(&rng, 1, 4);
        for (int k = 0; k < muts; k++) {
            int kind = (int)tandem_rng_int(&rng, 0, 3);
            if (n == 0) break;
            /* mostly the header, where the parser works */
            size_t at = tandem_rng_int(&rng, 0, 9) < 8 ? (size_t)tandem_rng_int(&rng, 0, (int64_t)(8 + hlen - 1))
                                                       : (size_t)tandem_rng_int(&rng, 0, (int64_t)n - 1);
            if (at >= n) continue;
            if (kind == 0) m[at] = (unsigned char)tandem_rng_next(&rng);
            else if (kind == 1) m[at] = (unsigned char)punct[tandem_rng_int(&rng, 0, (int64_t)sizeof punct - 2)];
            else if (kind == 2) m[at] ^= (unsigned char)(1u << tandem_rng_int(&rng, 0, 7));
            else n = at; /* truncate */
        }
        unsigned char *exact = malloc(n ? n : 1); /* exact size so ASan sees any overread */
        memcpy(exact, m, n);
        tandem_st_file *f = NULL;
        tandem_status st = tandem_st_open_memory(exact, n, "mutant", &f);
        assert_true(st == TANDEM_OK || st == TANDEM_E_FORMAT);
        if (st == TANDEM_OK) {
            accepted++;
            for (int i = 0; i < tandem_st_count(f); i++) {
                const tandem_st_info *in = tandem_st_get(f, i);
                assert_true((const unsigned char *)in->data >= exact);
                assert_true((const unsigned char *)in->data + in->bytes <= exact + n);
            }
            tandem_st_close(f);
        } else {
            rejected++;
            assert_null(f);
        }
        free(exact);
        free(m);
    }
    print_message("mutations: %d accepted (harmless changes, e.g. inside data), %d rejected\n", accepted, rejected);
    assert_true(rejected > 1000);
    for (int i = 0; i < 6; i++) free(c[i].data);
    free(orig);
}

/* Pool tensors on a host device through tandem_st_fetch_pool_tensor. */
static void test_pool_fetch(void **state) {
    (void)state;
    tandem_device *dev = NULL;
    assert_int_equal(tandem_device_open(TANDEM_BACKEND_HOST, 0, &dev), TANDEM_OK);
    tandem_pool *pool = NULL;
    assert_int_equal(tandem_pool_create(dev, "st", 0, &pool), TANDEM_OK);
    const int64_t shape[2] = {33, 7};
    tandem_tensor *pt = NULL;
    assert_int_equal(tandem_pool_declare(pool, "w", TANDEM_F32, 2, shape, TANDEM_PERSISTENT, 0, 0, &pt), TANDEM_OK);
    assert_int_equal(tandem_pool_commit(pool), TANDEM_OK);
    tandem_stream *s = NULL;
    assert_int_equal(tandem_stream_create(dev, &s), TANDEM_OK);
    float host[33 * 7];
    for (int i = 0; i < 33 * 7; i++) host[i] = tandem_rng_uniform(&rng, -5, 5);
    assert_int_equal(tandem_tensor_upload(s, pt, host, sizeof host), TANDEM_OK);
    tandem_st_tensor t = {"w", TANDEM_F32, 2, {33, 7}, NULL, pt};
    tandem_st_writer *w = NULL;
    assert_int_equal(tandem_st_writer_create(&t, 1, 0, 0, &w), TANDEM_OK);
    char path[400];
    snprintf(path, sizeof path, "%s/pool.safetensors", scratch);
    assert_int_equal(tandem_st_write(w, path, NULL, 0, tandem_st_fetch_pool_tensor, s), TANDEM_OK);
    tandem_st_writer_free(w);
    /* a chunked writer cannot use it: the whole tensor is downloaded at once */
    assert_int_equal(tandem_st_writer_create(&t, 1, 0, 100, &w), TANDEM_OK);
    assert_int_equal(tandem_st_write(w, path, NULL, 0, tandem_st_fetch_pool_tensor, s), TANDEM_E_INVALID);
    tandem_st_writer_free(w);
    tandem_st_file *f = NULL;
    assert_int_equal(tandem_st_open(path, &f), TANDEM_OK);
    float back[33 * 7];
    assert_int_equal(tandem_st_read_tensor(f, "w", TANDEM_F32, 2, shape, back, sizeof back), TANDEM_OK);
    assert_memory_equal(back, host, sizeof host);
    tandem_st_close(f);
    tandem_stream_destroy(s);
    tandem_pool_destroy(pool);
    tandem_device_close(dev);
}

/* ---- a checkpoint that changes under its reader (issue 10) ---- */

#define CHANGED_N (64 * 1024) /* 256 KiB of data: many pages past the header */

/* A checkpoint of step `step` with one F32 tensor "w" [CHANGED_N] holding values[]. */
static void write_checkpoint(const char *path, int64_t step, const float *values) {
    tandem_st_tensor t = {"w", TANDEM_F32, 1, {CHANGED_N}, values, NULL};
    char step_s[32];
    snprintf(step_s, sizeof step_s, "%lld", (long long)step);
    tandem_st_meta meta[] = {{TANDEM_CKPT_KEY_FORMAT_VERSION, TANDEM_CKPT_FORMAT_VERSION}, {TANDEM_CKPT_KEY_STEP, step_s}};
    tandem_st_writer *w = NULL;
    assert_int_equal(tandem_st_writer_create(&t, 1, 64, 0, &w), TANDEM_OK);
    assert_int_equal(tandem_st_write(w, path, meta, 2, NULL, NULL), TANDEM_OK);
    tandem_st_writer_free(w);
}

static float *changed_values(void) {
    float *v = malloc(CHANGED_N * sizeof *v);
    tandem_rng_fill(&rng, v, CHANGED_N, -4.0f, 4.0f);
    return v;
}

/* In a child: open the checkpoint, change the file (truncate = 1: to 0 bytes; else overwrite
 * every byte in place), then read the tensor: the reader must hand back the bytes it opened.
 * Exit 0 when it does, 1 when it returns other bytes; a fault (SIGBUS from a mapping whose file
 * shrank) ends the child with that signal. */
static void change_after_open_child(const char *path, const float *values, int truncate_it) {
    signal(SIGBUS, SIG_DFL); /* not cmocka's handler: the parent must see the fault */
    signal(SIGSEGV, SIG_DFL);
    tandem_st_file *f = NULL;
    if (tandem_checkpoint_open(path, 7, &f) != TANDEM_OK) _exit(2);
    if (truncate_it) {
        if (truncate(path, 0) != 0) _exit(3);
    } else {
        int fd = open(path, O_WRONLY);
        struct stat sb;
        if (fd < 0 || fstat(fd, &sb) != 0) _exit(3);
        unsigned char *junk = malloc((size_t)sb.st_size);
        memset(junk, 0xA5, (size_t)sb.st_size);
        if (pwrite(fd, junk, (size_t)sb.st_size, 0) != sb.st_size) _exit(3);
        close(fd);
        free(junk);
    }
    float *back = malloc(CHANGED_N * sizeof *back);
    int64_t shape[1] = {CHANGED_N};
    if (tandem_st_read_tensor(f, "w", TANDEM_F32, 1, shape, back, CHANGED_N * sizeof *back) != TANDEM_OK) _exit(4);
    _exit(memcmp(back, values, CHANGED_N * sizeof *back) == 0 ? 0 : 1);
}

/* A checkpoint truncated or rewritten in place after it was opened (a resume racing another
 * process that writes the file, or a copy still in progress) must neither fault nor change the
 * tensors read from it. With the file mapped, the truncation ended in SIGBUS and the rewrite
 * changed the tensor's bytes. */
static void test_changed_after_open(void **state) {
    (void)state;
    float *values = changed_values();
    for (int truncate_it = 1; truncate_it >= 0; truncate_it--) {
        char path[400];
        snprintf(path, sizeof path, "%s/ckpt-after-open-%d.safetensors", scratch, truncate_it);
        write_checkpoint(path, 7, values);
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) change_after_open_child(path, values, truncate_it);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (WIFSIGNALED(status))
            fail_msg("%s: reading a tensor after the file was %s died of signal %d (%s)", path,
                     truncate_it ? "truncated" : "rewritten", WTERMSIG(status), strsignal(WTERMSIG(status)));
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) != 0)
            fail_msg("%s: after the file was %s, the tensor read back %s (child exit %d)", path,
                     truncate_it ? "truncated" : "rewritten",
                     WEXITSTATUS(status) == 1 ? "other bytes than were opened" : "failed", WEXITSTATUS(status));
    }
    free(values);
}

/* What the hook does to the file between the reader's fstat and its read. */
static enum { CHANGE_NONE, CHANGE_SHRINK, CHANGE_GROW, CHANGE_TOUCH } change_mode;
static const char *change_path; /* only this file is changed */

static void change_hook(const char *path) {
    if (!change_path || strcmp(path, change_path) != 0) return;
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    if (change_mode == CHANGE_SHRINK) assert_int_equal(truncate(path, sb.st_size / 2), 0);
    if (change_mode == CHANGE_GROW) assert_int_equal(truncate(path, sb.st_size + 100), 0);
    if (change_mode == CHANGE_TOUCH) { /* same size, same bytes, another mtime: rewritten in place */
        struct timespec ts[2] = {{0, UTIME_OMIT}, {sb.st_mtim.tv_sec - 1000, 0}};
        assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
    }
}

/* A file that shrinks, grows or is rewritten while it is read is refused naming it (never a
 * mix of old and new bytes), the handle stays NULL, and a resume's search takes the older
 * checkpoint instead, naming the one it skipped. */
static void test_changed_while_read(void **state) {
    (void)state;
    float *values = changed_values();
    char path[400];
    snprintf(path, sizeof path, "%s/changing.safetensors", scratch);
    static const struct { int mode; const char *says; } cases[] = {
        {CHANGE_SHRINK, "truncated while read"},
        {CHANGE_GROW, "changed while read"},
        {CHANGE_TOUCH, "changed while read"},
    };
    tandem_st_test_before_read = change_hook;
    change_path = path;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        write_checkpoint(path, 7, values);
        change_mode = cases[k].mode;
        tandem_st_file *f = (tandem_st_file *)path; /* must be set to NULL */
        assert_int_equal(tandem_st_open(path, &f), TANDEM_E_IO);
        assert_null(f);
        assert_non_null(strstr(tandem_last_error(), path));
        if (!strstr(tandem_last_error(), cases[k].says))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", k, tandem_last_error(), cases[k].says);
    }
    /* resume: ckpt of step 6 shrinks while read, step 3 is taken */
    char dir[400], p3[600], p6[600], found_path[600];
    snprintf(dir, sizeof dir, "%s/changing_run", scratch);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(tandem_checkpoint_path(dir, 3, p3, sizeof p3), TANDEM_OK);
    assert_int_equal(tandem_checkpoint_path(dir, 6, p6, sizeof p6), TANDEM_OK);
    write_checkpoint(p3, 3, values);
    write_checkpoint(p6, 6, values);
    change_path = p6;
    change_mode = CHANGE_SHRINK;
    int64_t step = -1;
    int found = 0;
    tandem_test_log_capture(TANDEM_LOG_WARN);
    assert_int_equal(tandem_checkpoint_find_latest(dir, found_path, sizeof found_path, &step, &found), TANDEM_OK);
    assert_true(found);
    assert_int_equal(step, 3);
    assert_non_null(strstr(tandem_test_log_text(), p6));
    assert_non_null(strstr(tandem_test_log_text(), "truncated while read"));
    tandem_test_log_stop();
    tandem_st_test_before_read = NULL;
    change_path = NULL;
    free(values);
}

int main(void) {
    rng.s = tandem_test_seed("test_safetensors");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_writer_rejects),
        cmocka_unit_test(test_broken_files),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_pool_fetch),
        cmocka_unit_test(test_changed_after_open),
        cmocka_unit_test(test_changed_while_read),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
