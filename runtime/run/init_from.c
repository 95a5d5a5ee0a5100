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
#include "runtime/run/ckpt_check.h"
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
    TANDEM_TRY(tandem_checkpoint_open(from, -1, out));
    tandem_status st = tandem_ckpt_check_values(*out, path, 1); /* NaN/Inf parameters: a NaN model */
    if (st != TANDEM_OK) {
        tandem_st_close(*out);
        *out = NULL;
    }
    return st;
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
    char *spk_names; /* the speaker table's names, NUL-separated (tandem_speakers_from_json) */
    uint32_t n_spk;
} sym_table;

/* The embedding's rows of one side: symbols (names from its symbols JSON), then speakers. */
static tandem_status read_table(const char *sym_json, const char *spk_json, sym_table *t, const char *path) {
    t->n = symbol_names(sym_json, t->name, t->len, MAX_SYMS);
    if (t->n < 0)
        return tandem_fail(TANDEM_E_FORMAT, "%s: malformed symbols metadata; expected {\"symbols\":[...]} as tandem "
                           "train writes it", path);
    return spk_json ? tandem_speakers_from_json(spk_json, &t->spk_names, &t->n_spk) : TANDEM_OK;
}

/* Row of their table holding our row i's symbol or speaker, -1 when they have none. */
static int64_t their_row(const sym_table *o, const sym_table *t, int64_t i, const char **our_spk) {
    if (i < o->n) {
        for (int j = 0; j < t->n; j++)
            if (t->len[j] == o->len[i] && !memcmp(t->name[j], o->name[i], o->len[i])) return j;
        return -1;
    }
    const char *want = o->spk_names;
    for (int64_t k = o->n; k < i; k++) want += strlen(want) + 1;
    *our_spk = want;
    const char *q = t->spk_names;
    for (uint32_t j = 0; j < t->n_spk; j++, q += strlen(q) + 1)
        if (!strcmp(q, want)) return t->n + (int64_t)j;
    return -1;
}

/* [b, e) appended to the ranges that keep their initialisation (adjacent ones merged). */
static void fresh_add(tandem_init_fresh *k, int64_t b, int64_t e) {
    if (k->n && k->span[2 * k->n - 1] == b) {
        k->span[2 * k->n - 1] = e;
        return;
    }
    k->span[2 * k->n] = b;
    k->span[2 * k->n + 1] = e;
    k->n++;
}

/* "name" appended to a report list while it has room. */
static void list_add(char *b, size_t cap, size_t *fl, const char *name, size_t len) {
    if (*fl + len + 8 < cap) *fl += (size_t)snprintf(b + *fl, cap - *fl, "%s\"%.*s\"", *fl ? " " : "", (int)len, name);
}

/* Our rows filled from theirs by name into buf (our initialisation kept where they have none). */
static void copy_rows(const tandem_st_info *x, const tandem_model_param *p, const sym_table *o, const sym_table *t,
                      float *buf, int counts[4], char fresh[2][256], tandem_init_fresh *kept) {
    const size_t row = (size_t)p->shape[1] * sizeof(float);
    size_t fl[2] = {0, 0};
    for (int64_t i = 0; i < (int64_t)o->n + o->n_spk; i++) {
        const char *spk = NULL;
        const int64_t j = their_row(o, t, i, &spk);
        if (j >= 0 && j < x->shape[0]) {
            memcpy(buf + (size_t)i * (size_t)p->shape[1], (const char *)x->data + (size_t)j * row, row);
            counts[spk ? 2 : 0]++;
        } else {
            counts[spk ? 3 : 1]++;
            fresh_add(kept, p->offset + i * p->shape[1], p->offset + (i + 1) * p->shape[1]);
            list_add(fresh[spk != NULL], sizeof fresh[0], &fl[spk != NULL], spk ? spk : o->name[i],
                     spk ? strlen(spk) : o->len[i]);
        }
    }
}

/* sym_emb rows by symbol and speaker NAME: ours[i] <- theirs[j] where the names agree, the rest as
 * initialised (new symbols, new speakers; reported). */
static tandem_status remap_with(const tandem_st_info *x, const tandem_st_file *f, const tandem_model_param *p,
                                const tandem_model *m, tandem_stream *s, float *buf, const char *path,
                                const char *our_syms, const char *our_spk, sym_table *o, sym_table *t,
                                tandem_init_fresh *kept) {
    TANDEM_TRY(read_table(our_syms, our_spk, o, "this build"));
    TANDEM_TRY(read_table(tandem_st_meta_find(f, TANDEM_CKPT_KEY_SYMBOLS), tandem_st_meta_find(f, TANDEM_CKPT_KEY_SPEAKERS),
                          t, path));
    if (o->n + (int64_t)o->n_spk != p->shape[0] || t->n + (int64_t)t->n_spk > x->shape[0])
        return tandem_fail(TANDEM_E_FORMAT, "%s: " SYM_EMB " has %" PRId64 " rows but its metadata names %d symbols "
                           "and %u speakers; expected a row per symbol and speaker", path, x->shape[0], t->n,
                           t->n_spk);
    const size_t row = (size_t)p->shape[1] * sizeof(float);
    TANDEM_TRY(tandem_dev_download(s, buf, m->params, (size_t)p->offset * sizeof(float), row * (size_t)p->shape[0]));
    TANDEM_TRY(tandem_stream_sync(s));
    int c[4] = {0}; /* symbols copied, new; speakers copied, new */
    char fresh[2][256] = {"", ""};
    copy_rows(x, p, o, t, buf, c, fresh, kept);
    TANDEM_TRY(tandem_dev_upload(s, m->params, (size_t)p->offset * sizeof(float), buf, row * (size_t)p->shape[0]));
    TANDEM_TRY(tandem_stream_sync(s));
    tandem_logf(TANDEM_LOG_WARN, "init-from %s: " SYM_EMB " [%" PRId64 ", %" PRId64 "] here, [%" PRId64 ", %" PRId64
                "] there: %d rows copied by symbol name, %d new symbol%s initialised%s%s; speakers: %d rows copied by "
                "name (of %u there), %d new speaker%s initialised%s%s", path, p->shape[0], p->shape[1], x->shape[0],
                x->shape[1], c[0], c[1], c[1] == 1 ? "" : "s", c[1] ? ": " : "", fresh[0], c[2], t->n_spk, c[3],
                c[3] == 1 ? "" : "s", c[3] ? ": " : "", fresh[1]);
    return TANDEM_OK;
}

static tandem_status remap_rows(const tandem_st_info *x, const tandem_st_file *f, const tandem_model_param *p,
                                const tandem_model *m, tandem_stream *s, float *buf, const char *path,
                                const char *our_syms, const char *our_spk, tandem_init_fresh *kept) {
    sym_table *t = tandem_calloc(2, sizeof *t);
    tandem_status st = t ? remap_with(x, f, p, m, s, buf, path, our_syms, our_spk, &t[0], &t[1], kept)
                         : tandem_fail(TANDEM_E_NOMEM, "init-from: out of memory");
    if (t) {
        tandem_free(t[0].spk_names);
        tandem_free(t[1].spk_names);
    }
    tandem_free(t);
    return st;
}

/* Both tables the same, names and order: the embedding is copied whole. */
static int same_tables(const tandem_st_file *f, const char *our_syms, const char *our_spk) {
    const char *ts = tandem_st_meta_find(f, TANDEM_CKPT_KEY_SYMBOLS), *tk = tandem_st_meta_find(f, TANDEM_CKPT_KEY_SPEAKERS);
    if (!ts || strcmp(ts, our_syms)) return !ts && !our_spk && !tk; /* no metadata: by shape, as before */
    return (!tk && !our_spk) || (tk && our_spk && !strcmp(tk, our_spk));
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
                                float *buf, const tandem_model_param *p, const char *const ours[2], int *whole,
                                tandem_init_fresh *kept) {
    *whole = 0;
    const tandem_st_info *x = tandem_st_find(f, p->name);
    if (!x) {
        fresh_add(kept, p->offset, p->offset + p->numel);
        tandem_logf(TANDEM_LOG_WARN, "init-from %s: no tensor %s; it keeps its initialisation", path, p->name);
        return TANDEM_OK;
    }
    char a[64], b[64];
    shape_text(a, sizeof a, p->ndim, p->shape);
    shape_text(b, sizeof b, x->ndim, x->shape);
    const char *syms = tandem_st_meta_find(f, TANDEM_CKPT_KEY_SYMBOLS);
    const int emb = !strcmp(p->name, SYM_EMB);
    if (x->dtype == TANDEM_F32 && same_shape(x, p) && (!emb || same_tables(f, ours[0], ours[1]))) {
        TANDEM_TRY(tandem_st_read_tensor(f, p->name, TANDEM_F32, p->ndim, p->shape, buf, x->bytes));
        TANDEM_TRY(tandem_dev_upload(s, m->params, (size_t)p->offset * sizeof(float), buf, x->bytes));
        TANDEM_TRY(tandem_stream_sync(s));
        *whole = 1;
    } else if (x->dtype == TANDEM_F32 && emb && x->ndim == 2 && x->shape[1] == p->shape[1] && syms) {
        TANDEM_TRY(remap_rows(x, f, p, m, s, buf, path, ours[0], ours[1], kept));
    } else {
        fresh_add(kept, p->offset, p->offset + p->numel);
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
                                     tandem_stream *s, float *buf, const char *speakers_json,
                                     tandem_init_fresh *kept) {
    int whole = 0, n_whole = 0;
    int64_t rows = 0; /* at most a range per parameter and one per embedding row */
    for (int i = 0; i < m->n_params; i++) rows += m->param[i].ndim == 2 ? m->param[i].shape[0] : 0;
    kept->n = 0;
    kept->span = tandem_calloc((size_t)(m->n_params + rows) * 2 + 2, sizeof *kept->span);
    if (!kept->span) return tandem_fail(TANDEM_E_NOMEM, "init-from: out of memory");
    char *syms = NULL;
    TANDEM_TRY(tandem_symbols_to_json(&syms, NULL));
    const char *ours[2] = {syms, speakers_json};
    tandem_status st = TANDEM_OK;
    for (int i = 0; st == TANDEM_OK && i < m->n_params; i++) {
        st = load_param(f, path, m, s, buf, &m->param[i], ours, &whole, kept);
        n_whole += whole;
    }
    tandem_free(syms);
    TANDEM_TRY(st);
    report_unused(f, path, m);
    tandem_logf(TANDEM_LOG_INFO, "init-from %s: %d of %d parameters copied whole (parameters only: the AdamW "
                "moments, step and sampler start afresh)", path, n_whole, m->n_params);
    return TANDEM_OK;
}
