/* test_index.c — metadata.csv parsing: every bad-row kind reported with its line and reason and
 * skipped, good rows kept and encoded; BOM, CRLF, 2-column rows, column choice, nothing-left,
 * thread-count independence on random metadata, the val split. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform/os/os.h"
#include "runtime/text/symbols.h"
#include "test/fixtures.h"
#include "runtime/data/text_index.h"
#include "runtime/text/text_norm.h"

static char tmpdir[256];
static int setup(void **state) {
    (void)state;
    if (tandem_test_mkdtemp(tmpdir, sizeof tmpdir, "test_index") != 0) return -1;
    char p[512];
    snprintf(p, sizeof p, "%s/wavs", tmpdir);
    tandem_mkdir_p(p);
    tandem_test_log_capture(TANDEM_LOG_DEBUG);
    tandem_log_set_level(TANDEM_LOG_DEBUG);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    tandem_test_log_stop();
    tandem_log_set_level(TANDEM_LOG_INFO);
    tandem_test_rmtree(tmpdir);
    return 0;
}

static void touch(const char *rel) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
    tandem_test_write_file(p, "", 0);
}
static void write_meta(const char *data, size_t len) {
    char p[512];
    snprintf(p, sizeof p, "%s/metadata.csv", tmpdir);
    assert_int_equal(tandem_file_write_atomic(p, data, len), TANDEM_OK);
}
static void cfg_init(tandem_text_index_config *c) {
    tandem_text_index_config_default(c);
    c->data_dir = tmpdir;
    c->use_cache = 0;
    c->num_workers = 2;
}

/* The utterance's tokens decoded back to text (framing checked). */
static void decode(const tandem_text_index *ix, const tandem_utt *u, char *out, size_t cap) {
    const uint16_t *t = tandem_utt_tokens(ix, u);
    assert_true(u->n_tok >= 3);
    assert_int_equal(t[0], tandem_symbols_lang_id((tandem_lang)u->lang));
    assert_int_equal(t[1], TANDEM_SYM_BOS);
    assert_int_equal(t[u->n_tok - 1], TANDEM_SYM_EOS);
    size_t o = 0;
    for (int i = 2; i < u->n_tok - 1; i++) {
        char b[4];
        int k = 0;
        uint32_t cp = tandem_symbols_cp(t[i]);
        /* UTF-8 encode inline: independent of the normaliser's own output path */
        if (cp < 0x80) b[k++] = (char)cp;
        else if (cp < 0x800) { b[k++] = (char)(0xC0 | cp >> 6); b[k++] = (char)(0x80 | (cp & 63)); }
        else { b[k++] = (char)(0xE0 | cp >> 12); b[k++] = (char)(0x80 | ((cp >> 6) & 63)); b[k++] = (char)(0x80 | (cp & 63)); }
        assert_true(o + (size_t)k < cap);
        memcpy(out + o, b, (size_t)k);
        o += (size_t)k;
    }
    out[o] = 0;
}

static const tandem_utt *find(const tandem_text_index *ix, const char *id) {
    for (uint32_t i = 0; i < ix->count; i++)
        if (!strcmp(tandem_utt_id(ix, &ix->utts[i]), id)) return &ix->utts[i];
    return NULL;
}

static void expect_log(const char *path_line_reason) {
    if (!strstr(tandem_test_log_text(), path_line_reason))
        fail_msg("log lacks '%s'; log was:\n%s", path_line_reason, tandem_test_log_text());
}

static void test_bad_rows(void **state) {
    (void)state;
    const char *good[] = {"a1", "a2", "f1", "o1", "a7", "dup", "e1", "u1", "t1", "b1", "n1", "fa1"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "wavs/%s.%s", good[i], !strcmp(good[i], "f1") ? "flac" : !strcmp(good[i], "o1") ? "ogg" : "wav");
        touch(rel);
    }
    char longtext[400];
    memset(longtext, 'a', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = 0;
    char meta[4096];
    int n = snprintf(meta, sizeof meta,
        "\xEF\xBB\xBF" "a1|Hello one.|Hello one.\r\n"    /* 1 good, BOM, CRLF */
        "a2|only|three|four\r\n"                         /* 2 wrong column count (4) */
        "justone\n"                                      /* 3 wrong column count (1) */
        "|empty id|empty id\n"                           /* 4 bad id: empty */
        "../etc|up|up\n"                                 /* 5 bad id: .. */
        "/abs|abs|abs\n"                                 /* 6 bad id: absolute */
        "x/y|sep|sep\n"                                  /* 7 bad id: separator */
        "ct\x01l|ctl|ctl\n"                              /* 8 bad id: control char */
        "a1|Again.|Again.\n"                             /* 9 duplicate of line 1 */
        "nowav|No audio.|No audio.\n"                    /* 10 missing audio */
        "e1|   |   \n"                                   /* 11 empty text */
        "b1|bad \xC3\x28 utf|bad \xC3\x28 utf\n"         /* 12 invalid UTF-8 at byte 8 */
        "u1|snow \xE2\x98\x83|snow \xE2\x98\x83\n"       /* 13 unknown symbol */
        "t1|%s|%s\n"                                     /* 14 too long */
        "\n"                                             /* 15 blank: ignored */
        "f1|Flac 2 only|Flac two only\n"                 /* 16 good (flac) */
        "o1|Ogg|Ogg\n"                                   /* 17 good (ogg) */
        "a7|Raw 1|Normal one\n"                          /* 18 good: column choice */
        "n1|Two columns, 3 words\n"                      /* 19 good: 2 columns */
        "fa1|كتاب ۲|كتاب ۲\n",                           /* 20 good: Persian */
        longtext, longtext);
    write_meta(meta, (size_t)n);
    tandem_text_index_config c;
    cfg_init(&c);
    c.max_text = 64;
    tandem_text_index ix;
    tandem_test_log_clear();
    assert_int_equal(tandem_text_index_open(&c, &ix), TANDEM_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/metadata.csv", tmpdir);
    struct { int line; const char *reason; } want[] = {
        {2, "wrong column count: 4 fields"}, {3, "wrong column count: 1 fields"}, {4, "bad id: empty id"},
        {5, "bad id: id contains '..'"}, {6, "bad id: id is an absolute path"},
        {7, "bad id: id contains a path separator"}, {8, "bad id: id contains a control character"},
        {9, "duplicate id 'a1' (first on line 1)"}, {10, "missing audio"}, {11, "empty text"},
        {12, "invalid UTF-8 in column 3 at byte 19 of the line"}, {13, "unknown symbol '\xE2\x98\x83' (U+2603)"},
        {14, "text too long: 402 tokens"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char s[1100];
        snprintf(s, sizeof s, "%s:%d: %s", path, want[i].line, want[i].reason);
        expect_log(s);
    }
    uint32_t want_counts[TANDEM_SKIP_COUNT] = {[TANDEM_SKIP_COLUMNS] = 2, [TANDEM_SKIP_BAD_ID] = 5,
        [TANDEM_SKIP_DUPLICATE_ID] = 1, [TANDEM_SKIP_NO_AUDIO] = 1, [TANDEM_SKIP_EMPTY_TEXT] = 1,
        [TANDEM_SKIP_BAD_UTF8] = 1, [TANDEM_SKIP_UNKNOWN_SYMBOL] = 1, [TANDEM_SKIP_TOO_LONG] = 1};
    for (int r = 0; r < TANDEM_SKIP_COUNT; r++) assert_int_equal(ix.skipped[r], want_counts[r]);
    assert_int_equal(ix.lines, 19);
    assert_int_equal(ix.count, 6);
    assert_int_equal(ix.n_train, 6);
    assert_int_equal(ix.lang_count[TANDEM_LANG_EN], 5);
    assert_int_equal(ix.lang_count[TANDEM_LANG_FA], 1);
    struct { const char *id, *text, *audio; int line; } keep[] = {
        {"a1", "hello one.", "wavs/a1.wav", 1},       {"f1", "flac two only", "wavs/f1.flac", 16},
        {"o1", "ogg", "wavs/o1.ogg", 17},             {"a7", "normal one", "wavs/a7.wav", 18},
        {"n1", "two columns, three words", "wavs/n1.wav", 19}, {"fa1", "کتاب دو", "wavs/fa1.wav", 20},
    };
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
        const tandem_utt *u = find(&ix, keep[i].id);
        assert_non_null(u);
        char text[256];
        decode(&ix, u, text, sizeof text);
        assert_string_equal(text, keep[i].text);
        assert_string_equal(tandem_utt_audio(&ix, u), keep[i].audio);
        assert_int_equal(u->line, keep[i].line);
        assert_int_equal(u->n_samples, 0);
        assert_true(u == &ix.utts[i]); /* metadata order */
    }
    tandem_text_index_free(&ix);

    /* the raw column */
    c.column = TANDEM_TEXT_COLUMN_RAW;
    tandem_test_log_clear();
    assert_int_equal(tandem_text_index_open(&c, &ix), TANDEM_OK);
    char text[256];
    decode(&ix, find(&ix, "a7"), text, sizeof text);
    assert_string_equal(text, "raw one");
    decode(&ix, find(&ix, "f1"), text, sizeof text);
    assert_string_equal(text, "flac two only");
    tandem_text_index_free(&ix);

    /* without the audio check, "nowav" is usable */
    c.column = TANDEM_TEXT_COLUMN_NORMALIZED;
    c.check_audio = 0;
    assert_int_equal(tandem_text_index_open(&c, &ix), TANDEM_OK);
    assert_int_equal(ix.count, 7);
    assert_string_equal(tandem_utt_audio(&ix, find(&ix, "nowav")), "wavs/nowav.wav");
    tandem_text_index_free(&ix);
}

static void test_nothing_left(void **state) {
    (void)state;
    const char *meta = "|x|x\nmissing|No audio here.|No audio here.\nbad|one|two|three|four\n";
    write_meta(meta, strlen(meta));
    tandem_text_index_config c;
    cfg_init(&c);
    tandem_text_index ix;
    tandem_test_log_clear();
    assert_int_equal(tandem_text_index_open(&c, &ix), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "no usable utterances"));
    assert_non_null(strstr(tandem_last_error(), "missing audio 1"));
    expect_log("metadata.csv:2: missing audio");
    write_meta("", 0);
    assert_int_equal(tandem_text_index_open(&c, &ix), TANDEM_E_INVALID);
    /* no metadata at all: an I/O error naming the file */
    char p[512];
    snprintf(p, sizeof p, "%s/metadata.csv", tmpdir);
    remove(p);
    assert_int_not_equal(tandem_text_index_open(&c, &ix), TANDEM_OK);
    assert_non_null(strstr(tandem_last_error(), "metadata.csv"));
}

/* Random metadata: 1 and 3 workers give byte-identical blobs; the split is seeded. */
static void test_workers_and_split(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("index workers")};
    static const char *const words[] = {"alpha", "Beta,", "gamma.", "12", "3.5", "21st", "کتاب", "می‌روم", "-4", "x"};
    size_t cap = 1 << 20, o = 0;
    char *meta = malloc(cap);
    int n = 3000;
    for (int i = 0; i < n; i++) {
        o += (size_t)snprintf(meta + o, cap - o, "id%05d|", i);
        int nw = (int)tandem_rng_int(&r, 1, 12);
        for (int w = 0; w < nw; w++) o += (size_t)snprintf(meta + o, cap - o, "%s%s", w ? " " : "", words[tandem_rng_int(&r, 0, 9)]);
        o += (size_t)snprintf(meta + o, cap - o, "%s", tandem_rng_int(&r, 0, 1) ? "\r\n" : "\n");
    }
    write_meta(meta, o);
    free(meta);
    tandem_text_index_config c;
    cfg_init(&c);
    c.check_audio = 0;
    c.max_text = 1000;
    tandem_text_index a, b;
    c.num_workers = 1;
    assert_int_equal(tandem_text_index_open(&c, &a), TANDEM_OK);
    c.num_workers = 3;
    assert_int_equal(tandem_text_index_open(&c, &b), TANDEM_OK);
    assert_int_equal(a.count, (uint32_t)n);
    assert_int_equal(a.blob_bytes_, b.blob_bytes_);
    assert_memory_equal(a.blob_, b.blob_, a.blob_bytes_);
    tandem_text_index_free(&b);

    c.val_fraction = 0.1;
    c.seed = 7;
    assert_int_equal(tandem_text_index_open(&c, &b), TANDEM_OK);
    assert_int_equal(b.n_val, 300);
    assert_int_equal(b.n_train + b.n_val, (uint32_t)n);
    uint8_t *seen = calloc((size_t)n, 1);
    for (uint32_t i = 0; i < b.n_train; i++) seen[b.train[i]]++;
    for (uint32_t i = 0; i < b.n_val; i++) seen[b.val[i]]++;
    for (int i = 0; i < n; i++) assert_int_equal(seen[i], 1);
    free(seen);
    tandem_text_index c2;
    assert_int_equal(tandem_text_index_open(&c, &c2), TANDEM_OK); /* same seed → same split */
    assert_memory_equal(b.val, c2.val, b.n_val * sizeof *b.val);
    tandem_text_index_free(&c2);
    tandem_text_index_free(&b);

    const char *ids[] = {"id00003", "id02999", "nope"};
    c.val_ids = ids;
    c.n_val_ids = 3;
    tandem_test_log_clear();
    assert_int_equal(tandem_text_index_open(&c, &b), TANDEM_OK);
    assert_int_equal(b.n_val, 2);
    assert_int_equal(b.val[0], 3);
    assert_int_equal(b.val[1], 2999);
    expect_log("val id 'nope'");
    tandem_text_index_free(&b);
    tandem_text_index_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bad_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_left, setup, teardown),
        cmocka_unit_test_setup_teardown(test_workers_and_split, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
