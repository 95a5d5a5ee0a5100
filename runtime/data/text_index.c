/* text_index.c — metadata.csv → validated, normalised, encoded utterances (see text_index.h). */
#include "runtime/data/text_index.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/audio/audio.h"
#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/text/symbols.h"
#include "runtime/data/layout.h"
#include "runtime/data/text_cache.h"
#include "runtime/core/utf8.h"

#define MAX_ID_BYTES 200 /* ids become file names: wavs/<id>.flac must fit NAME_MAX */
#define CHUNK_ROWS 128   /* rows a worker claims at a time */
/* Rows of one kind of warning logged one by one; the rest are summarised in one line with the
 * count (a million bad rows must not print a million lines). */
#define WARN_ROWS TANDEM_INDEX_WARN_ROWS

static const char *const reason_names[TANDEM_SKIP_COUNT] = {
    "wrong column count", "bad id",         "duplicate id",   "missing audio",
    "empty text",         "invalid UTF-8",  "unknown symbol", "text too long",
    "bad speaker",        "missing text",   "unreadable text file",
};

const char *tandem_skip_reason_name(tandem_skip_reason r) {
    return (unsigned)r < TANDEM_SKIP_COUNT ? reason_names[r] : "?";
}

void tandem_text_index_config_default(tandem_text_index_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->column = TANDEM_TEXT_COLUMN_NORMALIZED;
    cfg->max_text = 128;
    cfg->num_workers = 0;
    cfg->check_audio = 1;
    cfg->use_cache = 1;
    cfg->layout = TANDEM_LAYOUT_AUTO;
    cfg->vctk_mic = 1;
}

/* One metadata row while building. */
typedef struct row {
    const char *id, *text, *spk_name; /* spk_name: generic and directory layouts only */
    const char *audio_rel;              /* directory layouts: the audio path found (relative) */
    const char *src, *note;             /* directory layouts: the transcript's path, a skip's note */
    uint32_t id_len, text_len, spk_len;
    int32_t spk;        /* speaker id, -1 = none (single speaker) */
    uint32_t line;
    uint8_t skip;       /* reason + 1, 0 = usable */
    uint8_t lang;
    uint8_t audio_ext;  /* index into audio_exts */
    uint8_t worker;     /* whose token vector holds the tokens */
    uint8_t col;        /* 1-based column the text came from */
    uint32_t tok;       /* offset in that vector */
    uint32_t n_tok;
    uint32_t detail;    /* reason detail: field count, byte offset, code point, token count */
    uint32_t detail2;   /* first line of a duplicate, position of an unknown character */
    uint32_t n_samples; /* audio length at 22050 Hz from the header; 0 = unreadable */
} row;

/* Audio is found by id whatever its container (anything libsndfile reads); first match wins. */
#define audio_exts tandem_audio_exts

/* ---- id checks ---- */

static int id_ok(const char *id, size_t n, const char **why) {
    if (n == 0) return *why = "empty id", 0;
    if (n > MAX_ID_BYTES) return *why = "id longer than 200 bytes", 0;
    if (id[0] == '/') return *why = "id is an absolute path", 0;
    if (memmem(id, n, "..", 2)) return *why = "id contains '..'", 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)id[i];
        if (c == '/' || c == '\\') return *why = "id contains a path separator", 0;
        if (c < 0x20 || c == 0x7F) return *why = "id contains a control character", 0;
    }
    size_t bad;
    if (!tandem_utf8_validate(id, n, &bad)) return *why = "id is not valid UTF-8", 0;
    return 1;
}

/* ---- duplicate ids: open addressing on the id hash ---- */

static tandem_status find_duplicates(row *rows, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    uint32_t *slot = tandem_malloc(cap * sizeof *slot); /* row index + 1, 0 = empty */
    if (!slot) return tandem_fail(TANDEM_E_NOMEM, "index: out of memory (%zu ids)", n);
    memset(slot, 0, cap * sizeof *slot);
    for (size_t i = 0; i < n; i++) {
        row *r = &rows[i];
        if (r->skip) continue;
        size_t h = (size_t)tandem_hash64(r->id, r->id_len, 0) & (cap - 1);
        for (;;) {
            if (!slot[h]) {
                slot[h] = (uint32_t)i + 1;
                break;
            }
            row *o = &rows[slot[h] - 1];
            if (o->id_len == r->id_len && memcmp(o->id, r->id, r->id_len) == 0) {
                r->skip = TANDEM_SKIP_DUPLICATE_ID + 1;
                r->detail2 = o->line;
                break;
            }
            h = (h + 1) & (cap - 1);
        }
    }
    tandem_free(slot);
    return TANDEM_OK;
}

/* ---- the parallel part: audio check, normalise, encode ---- */

typedef struct tokvec {
    uint16_t *v;
    size_t len, cap;
} tokvec;

typedef struct shared {
    const tandem_text_index_config *cfg;
    const char *meta_path;
    row *rows;
    size_t n_rows;
    atomic_size_t next;
    tokvec *vecs;        /* [num_workers] */
    tandem_status status; /* first hard failure (out of memory) */
    atomic_int failed;
    atomic_uint audio_warnings; /* unreadable or unmeasured audio headers seen (the first WARN_ROWS logged) */
} shared;

typedef struct worker_arg {
    shared *sh;
    int index;
    tandem_status st;
    char err[256];
} worker_arg;

static int audio_lookup(const char *dir, const row *r, uint8_t *ext) {
    char path[4096];
    for (uint8_t e = 0; e < TANDEM_AUDIO_EXT_COUNT; e++) {
        int k = snprintf(path, sizeof path, "%s/wavs/%.*s.%s", dir, (int)r->id_len, r->id, audio_exts[e]);
        if (k > 0 && (size_t)k < sizeof path && tandem_file_exists(path)) {
            *ext = e;
            return 1;
        }
    }
    return 0;
}

/* Control characters in file names (a hostile tree) shown as '?', never sent to a terminal. */
static void printable(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7F) *s = '?';
}

/* Where a row is, for messages: "<metadata.csv>:<line>", or a directory layout's "<dir>/<transcript>". */
static void row_where(const char *meta_path, const char *dir, const row *r, char *buf, size_t cap) {
    if (r->src) snprintf(buf, cap, "%s/%s", dir, r->src);
    else snprintf(buf, cap, "%s:%u", meta_path, r->line);
    printable(buf);
}

/* Duration from the file's header (read once here and cached with the index, so the loader
 * can skip utterances that do not fit without opening them). An unreadable header leaves 0:
 * the row stays in the index (the text is fine) and the split leaves it out of training. */
static tandem_status probe_duration(shared *sh, const char *meta_path, const char *dir, row *r) {
    char path[4096], at[4300];
    int k = r->audio_rel ? snprintf(path, sizeof path, "%s/%s", dir, r->audio_rel)
                         : snprintf(path, sizeof path, "%s/wavs/%.*s.%s", dir, (int)r->id_len, r->id,
                                    audio_exts[r->audio_ext]);
    if (k < 0 || (size_t)k >= sizeof path) return TANDEM_OK;
    row_where(meta_path, dir, r, at, sizeof at);
    tandem_audio_info info;
    tandem_status st = tandem_audio_probe(path, &info);
    if (st != TANDEM_OK) TANDEM_TRY(tandem_file_fds_check()); /* out of descriptors: the system's limit */
    if ((st != TANDEM_OK || info.samples_22050 < 0) && atomic_fetch_add(&sh->audio_warnings, 1) >= WARN_ROWS)
        return TANDEM_OK; /* counted; the summary after the build says how many */
    if (st != TANDEM_OK) {
        tandem_logf(TANDEM_LOG_WARN, "%s: audio unreadable, not used for training: %s", at, tandem_last_error());
        return TANDEM_OK;
    }
    if (info.samples_22050 < 0) {
        tandem_logf(TANDEM_LOG_WARN,
                    "%s: %s does not state its length (a streamed file), not used for training; "
                    "rewrite it with a length (e.g. as WAV or FLAC with a header)", at, path);
        return TANDEM_OK;
    }
    r->n_samples = info.samples_22050 > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)info.samples_22050;
    return TANDEM_OK;
}

static tandem_status process_row(shared *sh, row *r, tandem_text_norm *norm, tandem_phonemes *ph,
                                 tokvec *tv, uint16_t *ids, size_t ids_cap) {
    const tandem_text_index_config *cfg = sh->cfg;
    if (cfg->check_audio && !r->audio_rel && !audio_lookup(cfg->data_dir, r, &r->audio_ext)) {
        r->skip = TANDEM_SKIP_NO_AUDIO + 1;
        return TANDEM_OK;
    }
    tandem_status st = tandem_text_normalize(norm, r->text, r->text_len);
    if (st == TANDEM_E_INVALID) {
        r->skip = TANDEM_SKIP_BAD_UTF8 + 1;
        r->detail = (uint32_t)norm->bad_offset;
        return TANDEM_OK;
    }
    if (st != TANDEM_OK) return st;
    if (norm->out_len == 0) {
        r->skip = TANDEM_SKIP_EMPTY_TEXT + 1;
        return TANDEM_OK;
    }
    size_t count = 0;
    /* unknown characters are reported before length: they are data errors the user fixes */
    for (size_t i = 0; i < norm->out_len; i++) {
        if (tandem_symbols_id(norm->out[i]) < 0) {
            r->skip = TANDEM_SKIP_UNKNOWN_SYMBOL + 1;
            r->detail = norm->out[i];
            r->detail2 = (uint32_t)i;
            return TANDEM_OK;
        }
    }
    const uint32_t *in = NULL;
    size_t n_in = 0;
    TANDEM_TRY(tandem_phonemes_of(ph, sh->cfg->text_input, norm->out, norm->out_len, norm->lang, &in, &n_in));
    if (n_in == 0) {
        r->skip = TANDEM_SKIP_EMPTY_TEXT + 1;
        return TANDEM_OK;
    }
    size_t need = n_in + TANDEM_SYMBOLS_FRAMING + (r->spk >= 0);
    if (need > ids_cap) { /* ids_cap = max_text */
        r->skip = TANDEM_SKIP_TOO_LONG + 1;
        r->detail = (uint32_t)need;
        return TANDEM_OK;
    }
    TANDEM_TRY(tandem_symbols_encode(in, n_in, norm->lang, ids, ids_cap, &count, NULL));
    if (r->spk >= 0) { /* [<lang>, <spk>, BOS, ...]: the speaker token right after the language tag */
        memmove(ids + 2, ids + 1, (count - 1) * sizeof *ids);
        ids[1] = (uint16_t)(tandem_symbols_count() + r->spk);
        count++;
    }
    if (tv->len + count > tv->cap) {
        size_t cap = tv->cap ? tv->cap * 2 : 1 << 16;
        while (cap < tv->len + count) cap *= 2;
        uint16_t *p = tandem_realloc(tv->v, cap * sizeof *p);
        if (!p) return tandem_fail(TANDEM_E_NOMEM, "index: out of memory for tokens");
        tv->v = p;
        tv->cap = cap;
    }
    memcpy(tv->v + tv->len, ids, count * sizeof *ids);
    r->tok = (uint32_t)tv->len;
    r->n_tok = (uint32_t)count;
    r->lang = (uint8_t)norm->lang;
    tv->len += count;
    return cfg->check_audio ? probe_duration(sh, sh->meta_path, cfg->data_dir, r) : TANDEM_OK;
}

static void *worker_main(void *p) {
    worker_arg *wa = p;
    shared *sh = wa->sh;
    tandem_text_norm norm;
    tandem_text_norm_init(&norm);
    tandem_phonemes ph;
    tandem_phonemes_init(&ph);
    size_t ids_cap = (size_t)sh->cfg->max_text;
    uint16_t *ids = tandem_malloc(ids_cap * sizeof *ids);
    wa->st = ids ? TANDEM_OK : tandem_fail(TANDEM_E_NOMEM, "index: out of memory");
    while (wa->st == TANDEM_OK && !atomic_load(&sh->failed)) {
        size_t start = atomic_fetch_add(&sh->next, CHUNK_ROWS);
        if (start >= sh->n_rows) break;
        size_t end = start + CHUNK_ROWS < sh->n_rows ? start + CHUNK_ROWS : sh->n_rows;
        for (size_t i = start; i < end && wa->st == TANDEM_OK; i++) {
            row *r = &sh->rows[i];
            if (r->skip) continue;
            r->worker = (uint8_t)wa->index;
            wa->st = process_row(sh, r, &norm, &ph, &sh->vecs[wa->index], ids, ids_cap);
        }
    }
    if (wa->st != TANDEM_OK) {
        snprintf(wa->err, sizeof wa->err, "%s", tandem_last_error());
        atomic_store(&sh->failed, 1);
    }
    tandem_free(ids);
    tandem_text_norm_free(&norm);
    tandem_phonemes_free(&ph);
    return NULL;
}

/* ---- parsing ---- */

/* A generic-layout speaker name: 1..64 bytes of UTF-8 without control characters. */
static int speaker_ok(const char *s, size_t n) {
    size_t bad;
    if (n == 0 || n > TANDEM_INDEX_MAX_SPEAKER_BYTES) return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7F) return 0;
    return tandem_utf8_validate(s, n, &bad);
}

/* Splits one line at '|' into f/fl (at most 4 kept); returns the field count. */
static size_t split_fields(const char *s, size_t ll, const char **f, size_t *fl) {
    size_t nf = 0;
    const char *q = s, *end = s + ll;
    for (;;) {
        const char *bar = memchr(q, '|', (size_t)(end - q));
        if (nf < 4) {
            f[nf] = q;
            fl[nf] = bar ? (size_t)(bar - q) : (size_t)(end - q);
        }
        nf++;
        if (!bar) return nf;
        q = bar + 1;
    }
}

/* Fills r from one line's fields: LJSpeech id|text[|normalized] or generic id|speaker|text. */
static void parse_line(const tandem_text_index_config *cfg, int generic, const char *s, size_t ll, row *r) {
    const char *f[4];
    size_t fl[4], nf = split_fields(s, ll, f, fl);
    r->spk = -1;
    if (generic ? nf != 3 : (nf != 2 && nf != 3)) {
        r->skip = TANDEM_SKIP_COLUMNS + 1;
        r->detail = (uint32_t)nf;
        r->col = (uint8_t)generic; /* which column count the report expects */
        return;
    }
    const char *why;
    if (!id_ok(f[0], fl[0], &why)) {
        r->skip = TANDEM_SKIP_BAD_ID + 1;
        r->id = why; /* message kept for the report */
        return;
    }
    r->id = f[0];
    r->id_len = (uint32_t)fl[0];
    if (generic && !speaker_ok(f[1], fl[1])) {
        r->skip = TANDEM_SKIP_BAD_SPEAKER + 1;
        r->detail = (uint32_t)fl[1];
        return;
    }
    if (generic) r->spk_name = f[1], r->spk_len = (uint32_t)fl[1];
    int col = generic || (nf == 3 && cfg->column == TANDEM_TEXT_COLUMN_NORMALIZED) ? 2 : 1;
    r->text = f[col];
    r->text_len = (uint32_t)fl[col];
    r->col = (uint8_t)(col + 1);
    r->detail2 = (uint32_t)(f[col] - s); /* column start, for UTF-8 offsets in the report */
}

/* The generic layout's header line (optional when the layout is forced; it selects it on AUTO). */
#define GENERIC_HEADER "id|speaker|text"

/* Split meta into rows; lines are LF- or CRLF-terminated, a UTF-8 BOM is skipped, empty lines are
 * ignored. Column checks and id checks happen here (serially: they are cheap). *layout: the
 * layout detected (cfg->layout, or on AUTO generic when the first line is the generic header). */
static tandem_status parse_rows(const tandem_text_index_config *cfg, const char *meta, size_t len,
                                row **out_rows, size_t *out_n, uint32_t *layout) {
    size_t pos = 0;
    if (len >= 3 && memcmp(meta, "\xEF\xBB\xBF", 3) == 0) pos = 3;
    size_t n_lines = 1;
    for (const char *p = meta + pos; (p = memchr(p, '\n', (size_t)(meta + len - p))); p++) n_lines++;
    row *rows = tandem_calloc(n_lines, sizeof *rows);
    if (!rows) return tandem_fail(TANDEM_E_NOMEM, "index: out of memory (%zu lines)", n_lines);
    size_t n = 0;
    uint32_t line = 0;
    int generic = cfg->layout == TANDEM_LAYOUT_GENERIC;
    while (pos < len) {
        line++;
        const char *s = meta + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - s) : len - pos;
        pos += ll + (nl ? 1 : 0);
        if (ll && s[ll - 1] == '\r') ll--;
        if (ll == 0) continue;
        if (n == 0 && ll == strlen(GENERIC_HEADER) && memcmp(s, GENERIC_HEADER, ll) == 0 &&
            cfg->layout != TANDEM_LAYOUT_LJSPEECH) {
            generic = 1; /* the header names the columns; it is not a row */
            continue;
        }
        row *r = &rows[n++];
        r->line = line;
        parse_line(cfg, generic, s, ll, r);
    }
    *layout = generic ? TANDEM_LAYOUT_GENERIC : TANDEM_LAYOUT_LJSPEECH;
    *out_rows = rows;
    *out_n = n;
    return TANDEM_OK;
}

/* ---- the speaker table: distinct names sorted bytewise, ids in that order ---- */

static int cmp_name(const void *a, const void *b) {
    const row *x = *(row *const *)a, *y = *(row *const *)b;
    size_t n = x->spk_len < y->spk_len ? x->spk_len : y->spk_len;
    int c = memcmp(x->spk_name, y->spk_name, n);
    return c ? c : (x->spk_len > y->spk_len) - (x->spk_len < y->spk_len);
}

/* Assigns r->spk to every usable row with a speaker name; *n_spk = distinct names, (*names)[k] a
 * row naming speaker k (new array, the caller frees it). The names are taken from the rows, so
 * the table depends only on the metadata bytes (part of the cache key). */
static tandem_status speaker_table(const char *meta_path, row *rows, size_t n, uint32_t *n_spk,
                                   const row ***names) {
    row **by = tandem_malloc((n ? n : 1) * sizeof *by);
    if (!by) return tandem_fail(TANDEM_E_NOMEM, "index: out of memory (%zu rows)", n);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!rows[i].skip && rows[i].spk_name) by[m++] = &rows[i];
    qsort(by, m, sizeof *by, cmp_name);
    int32_t id = -1;
    for (size_t i = 0; i < m; i++) {
        if (i == 0 || cmp_name(&by[i - 1], &by[i]) != 0) by[++id] = by[i]; /* id <= i: in place */
        by[i]->spk = id;
    }
    *names = (const row **)by;
    *n_spk = (uint32_t)(id + 1);
    if (*n_spk > TANDEM_INDEX_MAX_SPEAKERS)
        return tandem_fail(TANDEM_E_INVALID, "%s: %u speakers, at most %d are supported; merge or split the "
                           "dataset", meta_path, *n_spk, TANDEM_INDEX_MAX_SPEAKERS);
    return TANDEM_OK;
}

/* The message of a skipped row after its location "at: " (the first of each reason are logged). */
static void report_row(const char *at, const row *r, int max_text) {
    tandem_skip_reason why = (tandem_skip_reason)(r->skip - 1);
    char u[5] = {0}, note[1024];
    const char *name = reason_names[why];
    snprintf(note, sizeof note, "%s", r->note ? r->note : "?");
    printable(note);
    switch (why) {
    case TANDEM_SKIP_COLUMNS:
        tandem_logf(TANDEM_LOG_WARN, "%s: %s: %u fields, expected %s", at, name, r->detail,
                    r->col ? "3 (id|speaker|text)" : "2 or 3 (id|text|normalized)");
        break;
    case TANDEM_SKIP_BAD_ID:
        tandem_logf(TANDEM_LOG_WARN, "%s: %s: %s", at, name, r->id);
        break;
    case TANDEM_SKIP_DUPLICATE_ID:
        if (r->src) tandem_logf(TANDEM_LOG_WARN, "%s: %s '%.*s' (first at position %u of the listing)", at, name,
                                (int)r->id_len, r->id, r->detail2);
        else tandem_logf(TANDEM_LOG_WARN, "%s: %s '%.*s' (first on line %u)", at, name, (int)r->id_len, r->id,
                         r->detail2);
        break;
    case TANDEM_SKIP_NO_AUDIO:
        if (r->note) tandem_logf(TANDEM_LOG_WARN, "%s: %s: %s", at, name, note);
        else tandem_logf(TANDEM_LOG_WARN, "%s: %s: no wavs/%.*s.{wav,flac,ogg,opus,mp3,aiff,au,caf,w64}", at, name,
                         (int)r->id_len, r->id);
        break;
    case TANDEM_SKIP_NO_TEXT:
    case TANDEM_SKIP_BAD_TEXT_FILE:
        tandem_logf(TANDEM_LOG_WARN, "%s: %s: %s", at, name, note);
        break;
    case TANDEM_SKIP_EMPTY_TEXT:
        tandem_logf(TANDEM_LOG_WARN, "%s: %s for id '%.*s'", at, name, (int)r->id_len, r->id);
        break;
    case TANDEM_SKIP_BAD_UTF8:
        if (r->src) tandem_logf(TANDEM_LOG_WARN, "%s: %s at byte %u of the file", at, name, r->detail + 1);
        else tandem_logf(TANDEM_LOG_WARN, "%s: %s in column %u at byte %u of the line", at, name, r->col,
                         r->detail + r->detail2 + 1);
        break;
    case TANDEM_SKIP_UNKNOWN_SYMBOL:
        if (!tandem_utf8_encode(r->detail, u)) u[0] = '?';
        tandem_logf(TANDEM_LOG_WARN, "%s: %s '%s' (U+%04X) at character %u of the normalised text", at, name, u,
                    r->detail, r->detail2 + 1);
        break;
    case TANDEM_SKIP_BAD_SPEAKER:
        tandem_logf(TANDEM_LOG_WARN, "%s: %s: %u bytes, expected a name of 1..%d bytes of UTF-8 without control "
                    "characters", at, name, r->detail, TANDEM_INDEX_MAX_SPEAKER_BYTES);
        break;
    case TANDEM_SKIP_TOO_LONG:
        tandem_logf(TANDEM_LOG_WARN, "%s: %s: %u tokens (framing included), max_text is %d", at, name, r->detail,
                    max_text);
        break;
    default:
        break;
    }
}

/* Worker threads for n_rows rows: the configured count (0 = one per CPU), within [1, 64], and no
 * more than there are chunks of rows to hand out. */
static int worker_count(const tandem_text_index_config *cfg, size_t n_rows) {
    int nw = cfg->num_workers > 0 ? cfg->num_workers : tandem_cpu_count();
    if (nw < 1) nw = 1;
    if (nw > 64) nw = 64;
    if ((size_t)nw > n_rows / CHUNK_ROWS + 1) nw = (int)(n_rows / CHUNK_ROWS + 1);
    return nw;
}

/* Check audio, normalise and encode every row on nw threads (the calling thread is worker 0).
 * Tokens land in sh->vecs[worker] (allocated by the caller, freed by it even on failure). */
static tandem_status encode_rows(shared *sh, int nw) {
    tandem_status st = TANDEM_OK;
    worker_arg *wa = tandem_calloc((size_t)nw, sizeof *wa);
    tandem_thread *th = tandem_calloc((size_t)nw, sizeof *th);
    if (!wa || !th) {
        st = tandem_fail(TANDEM_E_NOMEM, "index: out of memory");
        goto done;
    }
    int started = 0;
    for (int w = 0; w < nw; w++) {
        wa[w].sh = sh;
        wa[w].index = w;
    }
    for (int w = 1; w < nw; w++) {
        st = tandem_thread_start(&th[w], worker_main, &wa[w], "tandem-text");
        if (st != TANDEM_OK) break;
        started = w;
    }
    worker_main(&wa[0]);
    for (int w = 1; w <= started; w++) tandem_thread_join(&th[w]);
    for (int w = 0; w < nw && st == TANDEM_OK; w++)
        if (wa[w].st != TANDEM_OK) st = tandem_fail(wa[w].st, "%s", wa[w].err);
done:
    tandem_free(wa);
    tandem_free(th);
    return st;
}

/* What the gathered index will hold, counted in metadata order before it is laid out. */
typedef struct totals {
    uint32_t n_utts, n_speakers, layout;
    const row **speakers; /* [n_speakers] a row naming each speaker */
    uint64_t n_tokens, strings_bytes;
    uint32_t skipped[TANDEM_SKIP_COUNT];
} totals;

/* "wrong column count 3, bad id 1" from per-reason counts into buf. */
static void reason_counts(const uint32_t *skipped, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = 0;
    for (int k = 0; k < TANDEM_SKIP_COUNT; k++)
        if (skipped[k] && o < cap)
            o += (size_t)snprintf(buf + o, cap - o, "%s%s %u", o ? ", " : "", reason_names[k], skipped[k]);
}

/* Counts the usable rows and their sizes; reports the first WARN_ROWS skipped rows of each
 * reason (in metadata order) one by one and the rest in one summary line. */
static void count_rows(const char *meta_path, const char *dir, const row *rows, size_t n_rows, int max_text,
                       totals *t) {
    memset(t->skipped, 0, sizeof t->skipped);
    t->n_utts = 0;
    t->n_tokens = t->strings_bytes = 0;
    for (uint32_t k = 0; k < t->n_speakers; k++) t->strings_bytes += t->speakers[k]->spk_len + 1;
    uint32_t bad = 0, unlisted = 0;
    for (size_t i = 0; i < n_rows; i++) {
        const row *r = &rows[i];
        if (r->skip) {
            bad++;
            if (++t->skipped[r->skip - 1] <= WARN_ROWS) {
                char at[4300];
                row_where(meta_path, dir, r, at, sizeof at);
                report_row(at, r, max_text);
            } else {
                unlisted++;
            }
            continue;
        }
        t->n_utts++;
        t->n_tokens += r->n_tok;
        /* id\0 wavs/<id>.<ext>\0, or id\0 <audio path>\0 */
        t->strings_bytes += r->id_len + 1 + (r->audio_rel ? strlen(r->audio_rel) + 1
                                                          : 5 + r->id_len + 1 + strlen(audio_exts[r->audio_ext]) + 1);
    }
    if (unlisted) {
        char counts[512];
        reason_counts(t->skipped, counts, sizeof counts);
        tandem_logf(TANDEM_LOG_WARN, "%s: %u more skipped rows not listed (the first %d of each reason are "
                    "above); %u rows skipped in all: %s", meta_path, unlisted, WARN_ROWS, bad, counts);
    }
}

/* The index would be empty or too large for its 32-bit offsets: say why, with the skip counts. */
static tandem_status check_totals(const char *meta_path, size_t n_rows, const totals *t) {
    if (t->n_utts == 0) {
        char counts[512];
        reason_counts(t->skipped, counts, sizeof counts);
        const int o = counts[0] != 0;
        return tandem_fail(TANDEM_E_INVALID, "%s: no usable utterances in %zu rows%s%s%s", meta_path, n_rows,
                           o ? " (skipped: " : "", o ? counts : "", o ? ")" : "");
    }
    if (t->n_tokens > UINT32_MAX || t->strings_bytes > UINT32_MAX)
        return tandem_fail(TANDEM_E_INVALID, "%s: too large for the index (%llu tokens, %llu string bytes)",
                           meta_path, (unsigned long long)t->n_tokens, (unsigned long long)t->strings_bytes);
    return TANDEM_OK;
}

/* Copies the usable rows' records, tokens and strings into the blob's sections. */
static void fill_records(const row *rows, size_t n_rows, const tokvec *vecs, const totals *t,
                         tandem_text_cache_header *h, tandem_utt *utts, uint16_t *toks, char *strs) {
    uint32_t u = 0, tk = 0, so = 0;
    for (uint32_t k = 0; k < t->n_speakers; k++) { /* the speaker table first, in id order */
        memcpy(strs + so, t->speakers[k]->spk_name, t->speakers[k]->spk_len);
        so += t->speakers[k]->spk_len + 1;
    }
    for (size_t i = 0; i < n_rows; i++) {
        const row *r = &rows[i];
        if (r->skip) continue;
        tandem_utt *x = &utts[u++];
        x->line = r->line;
        x->n_samples = r->n_samples;
        x->lang = r->lang;
        x->tok = tk;
        x->n_tok = (uint16_t)r->n_tok;
        memcpy(toks + tk, vecs[r->worker].v + r->tok, r->n_tok * sizeof *toks);
        tk += r->n_tok;
        x->id = so;
        memcpy(strs + so, r->id, r->id_len);
        so += r->id_len + 1;
        x->audio = so;
        if (r->audio_rel) so += (uint32_t)sprintf(strs + so, "%s", r->audio_rel) + 1;
        else so += (uint32_t)sprintf(strs + so, "wavs/%.*s.%s", (int)r->id_len, r->id, audio_exts[r->audio_ext]) + 1;
        if (r->n_tok > h->max_tok) h->max_tok = r->n_tok;
        h->lang_count[r->lang]++;
    }
}

/* Lays the usable rows out as a text-cache blob (header, records, tokens, strings). */
static tandem_status gather_blob(const row *rows, size_t n_rows, const tokvec *vecs, const totals *t,
                                 void **blob, size_t *blob_bytes) {
    size_t utts_off, tokens_off, strings_off, total;
    tandem_text_cache_layout(t->n_utts, t->n_tokens, t->strings_bytes, &utts_off, &tokens_off, &strings_off,
                             &total);
    char *b = tandem_calloc(1, total);
    if (!b) return tandem_fail(TANDEM_E_NOMEM, "index: out of memory (%zu bytes)", total);
    tandem_text_cache_header *h = (tandem_text_cache_header *)b;
    fill_records(rows, n_rows, vecs, t, h, (tandem_utt *)(b + utts_off), (uint16_t *)(b + tokens_off),
                 b + strings_off);
    memcpy(h->magic, TANDEM_TEXT_CACHE_MAGIC, 8);
    h->format = TANDEM_TEXT_CACHE_FORMAT;
    h->header_bytes = sizeof *h;
    h->frontend_version = TANDEM_TEXT_FRONTEND_VERSION;
    h->symbols_version = TANDEM_SYMBOLS_VERSION;
    h->n_utts = t->n_utts;
    h->utt_bytes = sizeof(tandem_utt);
    h->n_tokens = t->n_tokens;
    h->strings_bytes = t->strings_bytes;
    h->payload_bytes = total - sizeof *h;
    h->lines = (uint32_t)n_rows;
    h->n_speakers = t->n_speakers;
    h->layout = t->layout;
    memcpy(h->skipped, t->skipped, sizeof t->skipped);
    *blob = b;
    *blob_bytes = total;
    return TANDEM_OK;
}

/* The rows (taken: freed here) checked, encoded and laid out; meta_path names the source. */
static tandem_status build_rows(const tandem_text_index_config *cfg, const char *meta_path, row *rows, size_t n_rows,
                                totals *t, void **blob, size_t *blob_bytes) {
    tandem_status st = find_duplicates(rows, n_rows);
    if (st == TANDEM_OK) st = speaker_table(meta_path, rows, n_rows, &t->n_speakers, &t->speakers);
    if (st != TANDEM_OK) {
        tandem_free(t->speakers);
        tandem_free(rows);
        return st;
    }
    int nw = worker_count(cfg, n_rows);
    shared sh = {.cfg = cfg, .meta_path = meta_path, .rows = rows, .n_rows = n_rows};
    atomic_init(&sh.next, 0);
    atomic_init(&sh.failed, 0);
    atomic_init(&sh.audio_warnings, 0);
    sh.vecs = tandem_calloc((size_t)nw, sizeof *sh.vecs);
    st = sh.vecs ? encode_rows(&sh, nw) : tandem_fail(TANDEM_E_NOMEM, "index: out of memory");
    const unsigned aw = atomic_load(&sh.audio_warnings);
    if (aw > WARN_ROWS)
        tandem_logf(TANDEM_LOG_WARN, "%s: %u more rows with unreadable or unmeasured audio not listed (the "
                    "first %d are above); %u in all, none used for training", meta_path, aw - WARN_ROWS,
                    WARN_ROWS, aw);
    if (st == TANDEM_OK) {
        count_rows(meta_path, cfg->data_dir, rows, n_rows, cfg->max_text, t); /* reports skipped rows */
        st = check_totals(meta_path, n_rows, t);
    }
    if (st == TANDEM_OK) st = gather_blob(rows, n_rows, sh.vecs, t, blob, blob_bytes);
    if (sh.vecs)
        for (int w = 0; w < nw; w++) tandem_free(sh.vecs[w].v);
    tandem_free(sh.vecs);
    tandem_free(t->speakers);
    tandem_free(rows);
    return st;
}

static tandem_status check_max_text(const tandem_text_index_config *cfg) {
    if (cfg->max_text < TANDEM_SYMBOLS_FRAMING + 1 || cfg->max_text > 65535)
        return tandem_fail(TANDEM_E_INVALID, "index: max_text %d out of range [%d, 65535]", cfg->max_text,
                           TANDEM_SYMBOLS_FRAMING + 1);
    return TANDEM_OK;
}

tandem_status tandem_text_index_build_blob(const tandem_text_index_config *cfg, const char *meta_path,
                                           const char *meta, size_t meta_len, void **blob,
                                           size_t *blob_bytes) {
    TANDEM_TRY(check_max_text(cfg));
    row *rows = NULL;
    size_t n_rows = 0;
    totals t = {0};
    TANDEM_TRY(parse_rows(cfg, meta, meta_len, &rows, &n_rows, &t.layout));
    return build_rows(cfg, meta_path, rows, n_rows, &t, blob, blob_bytes);
}

/* A listing item as a row: the id and speaker checked as metadata's are. */
static void item_row(const tandem_layout_listing *l, const tandem_layout_item *it, uint32_t line, row *r) {
    const char *a = l->arena, *why;
    r->line = line;
    r->spk = -1;
    r->src = a + it->src;
    r->note = it->note ? a + it->note : NULL;
    r->audio_rel = it->audio ? a + it->audio : NULL;
    r->skip = it->skip;
    if (!id_ok(a + it->id, it->id_len, &why)) {
        r->skip = TANDEM_SKIP_BAD_ID + 1;
        r->id = why;
        return;
    }
    r->id = a + it->id;
    r->id_len = it->id_len;
    if (!r->skip && !speaker_ok(a + it->spk, it->spk_len)) {
        r->skip = TANDEM_SKIP_BAD_SPEAKER + 1;
        r->detail = it->spk_len;
        return;
    }
    r->spk_name = a + it->spk;
    r->spk_len = it->spk_len;
    r->text = a + it->text;
    r->text_len = it->text_len;
    r->col = 1;
}

tandem_status tandem_text_index_build_blob_listing(const tandem_text_index_config *cfg, const char *where,
                                                   const tandem_layout_listing *l, void **blob,
                                                   size_t *blob_bytes) {
    TANDEM_TRY(check_max_text(cfg));
    row *rows = tandem_calloc(l->n ? l->n : 1, sizeof *rows);
    if (!rows) return tandem_fail(TANDEM_E_NOMEM, "index: out of memory (%zu files)", l->n);
    for (size_t i = 0; i < l->n; i++) item_row(l, &l->items[i], (uint32_t)(i + 1), &rows[i]);
    totals t = {0};
    t.layout = l->layout;
    return build_rows(cfg, where, rows, l->n, &t, blob, blob_bytes);
}

void tandem_text_index_attach(tandem_text_index *ix, void *blob, size_t blob_bytes) {
    const tandem_text_cache_header *h = blob;
    size_t utts_off, tokens_off, strings_off, total;
    tandem_text_cache_layout(h->n_utts, h->n_tokens, h->strings_bytes, &utts_off, &tokens_off, &strings_off,
                             &total);
    ix->blob_ = blob;
    ix->blob_bytes_ = blob_bytes;
    ix->utts = (const tandem_utt *)((const char *)blob + utts_off);
    ix->count = h->n_utts;
    ix->tokens = (const uint16_t *)((const char *)blob + tokens_off);
    ix->n_tokens = h->n_tokens;
    ix->strings = (const char *)blob + strings_off;
    ix->strings_bytes = h->strings_bytes;
    ix->lines = h->lines;
    memcpy(ix->skipped, h->skipped, sizeof ix->skipped);
    memcpy(ix->lang_count, h->lang_count, sizeof ix->lang_count);
    ix->max_tok = h->max_tok;
    ix->n_speakers = h->n_speakers;
    ix->layout = h->layout;
    ix->key = h->key;
}

int tandem_text_index_same_speakers(const tandem_text_index *a, const tandem_text_index *b) {
    if (a->n_speakers != b->n_speakers) return 0;
    size_t n = 0; /* the names are the arenas' first bytes */
    for (uint32_t k = 0; k < a->n_speakers; k++) n += strlen(a->strings + n) + 1;
    return n <= b->strings_bytes && memcmp(a->strings, b->strings, n) == 0;
}

void tandem_text_index_speakers(const tandem_text_index *ix, const char **names) {
    const char *p = ix->strings;
    for (uint32_t k = 0; k < ix->n_speakers; k++, p += strlen(p) + 1) names[k] = p;
}

static uint64_t split_rng(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Marks the val ids named in cfg->val_ids (is_val[i] = 1); unknown ids are warned about. */
static uint32_t mark_val_ids(const tandem_text_index_config *cfg, const tandem_text_index *ix, uint8_t *is_val) {
    uint32_t n = ix->count, n_val = 0;
    for (size_t k = 0; k < cfg->n_val_ids; k++) {
        uint32_t i = 0;
        for (; i < n; i++)
            if (strcmp(tandem_utt_id(ix, &ix->utts[i]), cfg->val_ids[k]) == 0) break;
        if (i == n) {
            tandem_logf(TANDEM_LOG_WARN, "index: val id '%s' is not among the usable utterances", cfg->val_ids[k]);
            continue;
        }
        if (!is_val[i]) n_val++;
        is_val[i] = 1;
    }
    return n_val;
}

/* Marks round(val_fraction * n) seeded random utterances as val (at least one, never all). */
static tandem_status mark_val_fraction(const tandem_text_index_config *cfg, uint32_t n, uint8_t *is_val,
                                       uint32_t *n_val) {
    if (cfg->val_fraction >= 1)
        return tandem_fail(TANDEM_E_INVALID, "index: val_fraction %g must be in [0, 1)", cfg->val_fraction);
    uint32_t want = (uint32_t)(cfg->val_fraction * n + 0.5);
    if (want == 0 && n > 1) want = 1;
    if (want >= n) want = n - 1; /* keep at least one training utterance */
    /* partial Fisher-Yates over indices: the first `want` picks are the val set */
    uint32_t *perm = tandem_malloc((size_t)n * sizeof *perm);
    if (!perm) return tandem_fail(TANDEM_E_NOMEM, "index: out of memory");
    for (uint32_t i = 0; i < n; i++) perm[i] = i;
    uint64_t s = cfg->seed;
    for (uint32_t i = 0; i < want; i++) {
        uint32_t j = i + (uint32_t)(split_rng(&s) % (n - i));
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        is_val[perm[i]] = 1;
    }
    *n_val = want;
    tandem_free(perm);
    return TANDEM_OK;
}

/* Duration filter: an utterance without a length, too long or too short is left out of both
 * sets (is_val[i] = 2) and counted in ix->audio_*. Counts what each set keeps. */
static void filter_durations(const tandem_text_index_config *cfg, tandem_text_index *ix, uint8_t *is_val,
                             uint32_t *n_train_usable, uint32_t *n_val_usable) {
    ix->audio_too_long = ix->audio_too_short = ix->audio_unreadable = 0;
    *n_train_usable = *n_val_usable = 0;
    for (uint32_t i = 0; i < ix->count; i++) {
        uint32_t ns = ix->utts[i].n_samples;
        if (cfg->check_audio && cfg->max_samples > 0) {
            if (ns == 0) {
                ix->audio_unreadable++;
                is_val[i] = 2; /* left out of both sets */
                continue;
            }
            if ((int64_t)ns > cfg->max_samples) {
                ix->audio_too_long++;
                is_val[i] = 2;
                continue;
            }
            if (ns < TANDEM_INDEX_MIN_SAMPLES) {
                ix->audio_too_short++;
                is_val[i] = 2;
                continue;
            }
        }
        if (is_val[i]) (*n_val_usable)++;
        else (*n_train_usable)++;
    }
}

/* Replaces ix->train / ix->val with the utterances is_val marks 0 / 1 (in index order). */
static tandem_status fill_split(tandem_text_index *ix, const uint8_t *is_val, uint32_t n_train, uint32_t n_val) {
    tandem_free(ix->train);
    tandem_free(ix->val);
    ix->train = tandem_malloc((size_t)n_train * sizeof *ix->train);
    ix->val = tandem_malloc((size_t)(n_val ? n_val : 1) * sizeof *ix->val);
    if (!ix->train || !ix->val) return tandem_fail(TANDEM_E_NOMEM, "index: out of memory");
    ix->n_train = ix->n_val = 0;
    for (uint32_t i = 0; i < ix->count; i++) {
        if (is_val[i] == 1)
            ix->val[ix->n_val++] = i;
        else if (is_val[i] == 0)
            ix->train[ix->n_train++] = i;
    }
    return TANDEM_OK;
}

/* The split proper on the is_val scratch (owned and freed by the caller). */
static tandem_status split_marked(const tandem_text_index_config *cfg, tandem_text_index *ix, uint8_t *is_val) {
    uint32_t n = ix->count, n_val = 0;
    if (cfg->n_val_ids)
        n_val = mark_val_ids(cfg, ix, is_val);
    else if (cfg->val_fraction > 0)
        TANDEM_TRY(mark_val_fraction(cfg, n, is_val, &n_val));
    if (n_val == n)
        return tandem_fail(TANDEM_E_INVALID, "index: every utterance is in the val set; nothing to train on");
    /* duration filter: the split is made first, so the val set does not depend on max_samples */
    uint32_t n_train_usable = 0, n_val_usable = 0;
    filter_durations(cfg, ix, is_val, &n_train_usable, &n_val_usable);
    if (n_train_usable == 0)
        return tandem_fail(TANDEM_E_INVALID,
                           "index: no training utterance left after the duration filter (%u too long for %lld "
                           "samples, %u shorter than %d samples, %u unreadable, %u in the val set)",
                           ix->audio_too_long, (long long)cfg->max_samples, ix->audio_too_short,
                           TANDEM_INDEX_MIN_SAMPLES, ix->audio_unreadable, n_val_usable);
    return fill_split(ix, is_val, n_train_usable, n_val_usable);
}

tandem_status tandem_text_index_split(const tandem_text_index_config *cfg, tandem_text_index *ix) {
    uint32_t n = ix->count;
    /* a cache file can claim zero records (a build never writes one); nothing to split */
    if (n == 0) return tandem_fail(TANDEM_E_INVALID, "index: no utterances to split into train and val");
    uint8_t *is_val = tandem_calloc(n, 1);
    if (!is_val) return tandem_fail(TANDEM_E_NOMEM, "index: out of memory");
    tandem_status st = split_marked(cfg, ix, is_val);
    tandem_free(is_val);
    return st;
}

void tandem_text_index_free(tandem_text_index *ix) {
    if (!ix) return;
    tandem_free(ix->blob_);
    tandem_free(ix->train);
    tandem_free(ix->val);
    memset(ix, 0, sizeof *ix);
}
