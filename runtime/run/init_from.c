/* init_from.c — a new run's parameters from a checkpoint (see init_from.h). */
#include "runtime/run/init_from.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/core/dev.h"
#include "runtime/formats/checkpoint.h"
#include "runtime/run/run_ckpt.h"
#include "runtime/text/symbols.h"

#define SYM_EMB "sym_emb.weight"

tandem_status tandem_init_from_open(const char *from, tandem_st_file **out, char *path, size_t cap) {
    *out = NULL;
    struct stat sb;
    if (stat(from, &sb) != 0)
        return tandem_fail(TANDEM_E_INVALID, "--init-from %s: no such file or directory; expected a checkpoint "
                           "(ckpt-<step>.safetensors) or a run directory", from);
    if (S_ISDIR(sb.st_mode)) return tandem_run_ckpt_peek(from, out, path, cap);
    if ((size_t)snprintf(path, cap, "%s", from) >= cap)
        return tandem_fail(TANDEM_E_INVALID, "--init-from %s: path too long", from);
    return tandem_checkpoint_open(from, -1, out);
}

/* The raw JSON strings of a symbol table's "symbols" array (escapes left as written: both tables
 * come from tandem_symbols_to_json, so equal names are equal texts). Returns the count found
 * (at most cap), -1 when the array is missing or malformed. */
static int symbol_names(const char *json, const char **name, size_t *len, int cap) {
    const char *p = json ? strstr(json, "\"symbols\":[") : NULL;
    if (!p) return -1;
    p += strlen("\"symbols\":[");
    int n = 0;
    while (*p && *p != ']') {
        if (*p != '"') return -1;
        const char *q = ++p;
        while (*q && *q != '"') q += (*q == '\\' && q[1]) ? 2 : 1;
        if (!*q) return -1;
        if (n < cap) {
            name[n] = p;
            len[n] = (size_t)(q - p);
        }
        n++;
        p = q + 1;
        if (*p == ',') p++;
    }
    return *p == ']' && n <= cap ? n : -1;
}

#define MAX_SYMS 4096

typedef struct sym_table {
    const char *name[MAX_SYMS];
    size_t len[MAX_SYMS];
    int n;
} sym_table;

static tandem_status remap_with(const tandem_st_info *x, const char *their_json, const char *our_json,
                                const tandem_model_param *p, const tandem_model *m, tandem_stream *s, float *buf,
                                const char *path, sym_table *o, sym_table *t);

/* sym_emb rows by symbol name: ours[i] ← theirs[j] where the names agree, the rest as initialised. */
static tandem_status remap_rows(const tandem_st_info *x, const char *their_json, const tandem_model_param *p,
                                const tandem_model *m, tandem_stream *s, float *buf, const char *path) {
    sym_table *t = tandem_calloc(2, sizeof *t); /* before the commit: create time */
    char *our_json = NULL;
    tandem_status st = t ? tandem_symbols_to_json(&our_json, NULL) : tandem_fail(TANDEM_E_NOMEM, "init-from: out of memory");
    if (st == TANDEM_OK) st = remap_with(x, their_json, our_json, p, m, s, buf, path, &t[0], &t[1]);
    tandem_free(our_json);
    tandem_free(t);
    return st;
}

static tandem_status remap_with(const tandem_st_info *x, const char *their_json, const char *our_json,
                                const tandem_model_param *p, const tandem_model *m, tandem_stream *s, float *buf,
                                const char *path, sym_table *o, sym_table *t) {
    o->n = symbol_names(our_json, o->name, o->len, MAX_SYMS);
    t->n = symbol_names(their_json, t->name, t->len, MAX_SYMS);
    tandem_status st = TANDEM_OK;
    /* rows past a table's symbols (none today) are not symbols: they keep their initialisation */
    if (o->n < 0 || o->n > p->shape[0] || t->n < 0 || t->n > x->shape[0])
        st = tandem_fail(TANDEM_E_FORMAT, "%s: " SYM_EMB " has %" PRId64 " rows but its symbols metadata names %d "
                         "symbols; expected a row per symbol", path, x->shape[0], t->n);
    const size_t row = (size_t)p->shape[1] * sizeof(float);
    if (st == TANDEM_OK) st = tandem_dev_download(s, buf, m->params, (size_t)p->offset * sizeof(float), row * (size_t)p->shape[0]);
    if (st == TANDEM_OK) st = tandem_stream_sync(s);
    int copied = 0;
    char fresh[256] = "";
    size_t fl = 0;
    for (int i = 0; st == TANDEM_OK && i < o->n; i++) {
        int j = 0;
        while (j < t->n && (t->len[j] != o->len[i] || memcmp(t->name[j], o->name[i], o->len[i])))
            j++;
        if (j < t->n) {
            memcpy(buf + (size_t)i * (size_t)p->shape[1], (const char *)x->data + (size_t)j * row, row);
            copied++;
        } else if (fl + o->len[i] + 8 < sizeof fresh) {
            fl += (size_t)snprintf(fresh + fl, sizeof fresh - fl, "%s\"%.*s\"", fl ? " " : "", (int)o->len[i],
                                   o->name[i]);
        }
    }
    if (st == TANDEM_OK) st = tandem_dev_upload(s, m->params, (size_t)p->offset * sizeof(float), buf, row * (size_t)p->shape[0]);
    if (st == TANDEM_OK) st = tandem_stream_sync(s);
    if (st == TANDEM_OK)
        tandem_logf(TANDEM_LOG_WARN, "init-from %s: " SYM_EMB " [%" PRId64 ", %" PRId64 "] here, [%" PRId64 ", %"
                    PRId64 "] there: %d rows copied by symbol name, %d new symbol%s initialised%s%s", path,
                    p->shape[0], p->shape[1], x->shape[0], x->shape[1], copied, o->n - copied,
                    o->n - copied == 1 ? "" : "s", o->n - copied ? ": " : "", fresh);
    return st;
}

static int same_shape(const tandem_st_info *x, const tandem_model_param *p) {
    if (x->ndim != p->ndim) return 0;
    for (int d = 0; d < p->ndim; d++)
        if (x->shape[d] != p->shape[d]) return 0;
    return 1;
}

static void shape_text(char *b, size_t cap, int ndim, const int64_t *shape) {
    size_t o = (size_t)snprintf(b, cap, "[");
    for (int d = 0; d < ndim && o < cap; d++) o += (size_t)snprintf(b + o, cap - o, "%s%" PRId64, d ? ", " : "", shape[d]);
    if (o < cap) snprintf(b + o, cap - o, "]");
}

/* One parameter: 1 when copied whole. */
static tandem_status load_param(const tandem_st_file *f, const char *path, const tandem_model *m, tandem_stream *s,
                                float *buf, const tandem_model_param *p, int *whole) {
    *whole = 0;
    const tandem_st_info *x = tandem_st_find(f, p->name);
    if (!x) {
        tandem_logf(TANDEM_LOG_WARN, "init-from %s: no tensor %s; it keeps its initialisation", path, p->name);
        return TANDEM_OK;
    }
    char a[64], b[64];
    shape_text(a, sizeof a, p->ndim, p->shape);
    shape_text(b, sizeof b, x->ndim, x->shape);
    const char *syms = tandem_st_meta_find(f, TANDEM_CKPT_KEY_SYMBOLS);
    if (x->dtype == TANDEM_F32 && same_shape(x, p)) {
        TANDEM_TRY(tandem_st_read_tensor(f, p->name, TANDEM_F32, p->ndim, p->shape, buf, x->bytes));
        TANDEM_TRY(tandem_dev_upload(s, m->params, (size_t)p->offset * sizeof(float), buf, x->bytes));
        TANDEM_TRY(tandem_stream_sync(s));
        *whole = 1;
    } else if (x->dtype == TANDEM_F32 && !strcmp(p->name, SYM_EMB) && x->ndim == 2 && x->shape[1] == p->shape[1] &&
               syms) {
        TANDEM_TRY(remap_rows(x, syms, p, m, s, buf, path));
    } else {
        tandem_logf(TANDEM_LOG_WARN, "init-from %s: %s is %s %s there, %s F32 here; it keeps its initialisation",
                    path, p->name, b, tandem_st_dtype_name(x->dtype) ? tandem_st_dtype_name(x->dtype) : "?", a);
    }
    return TANDEM_OK;
}

/* Checkpoint parameters the model has none of (moments and other prefixes aside). */
static void report_unused(const tandem_st_file *f, const char *path, const tandem_model *m) {
    for (int i = 0; i < tandem_st_count(f); i++) {
        const char *n = tandem_st_get(f, i)->name;
        if (!strncmp(n, "adam_m.", 7) || !strncmp(n, "adam_v.", 7)) continue;
        int k = 0;
        while (k < m->n_params && strcmp(m->param[k].name, n)) k++;
        if (k == m->n_params)
            tandem_logf(TANDEM_LOG_WARN, "init-from %s: tensor %s has no parameter of that name here; not used",
                        path, n);
    }
}

tandem_status tandem_init_from_apply(const tandem_st_file *f, const char *path, const tandem_model *m,
                                     tandem_stream *s, float *buf) {
    int whole = 0, n_whole = 0;
    for (int i = 0; i < m->n_params; i++) {
        TANDEM_TRY(load_param(f, path, m, s, buf, &m->param[i], &whole));
        n_whole += whole;
    }
    report_unused(f, path, m);
    tandem_logf(TANDEM_LOG_INFO, "init-from %s: %d of %d parameters copied whole (parameters only: the AdamW "
                "moments, step and sampler start afresh)", path, n_whole, m->n_params);
    return TANDEM_OK;
}
