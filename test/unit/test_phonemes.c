/* test_phonemes.c — text_input: phonemes (runtime/text/phonemes.h, platform/os/espeak.h):
 *   * espeak-ng's IPA for English and Persian: not the characters, no Latin-or-Arabic letter
 *     left unconverted in Persian, every output code point in the symbol table, clause
 *     punctuation kept between clauses and at the end, the same text twice the same phonemes;
 *   * four threads phonemizing at once get what one thread gets (espeak-ng's calls serialised);
 *   * chars: the input itself;
 *   * the index built with phonemes: its tokens are the phonemes of each row, framed as
 *     characters are; its cache key differs from the characters' index.
 * Needs libespeak-ng.so.1 (tools/deps.sh installs espeak-ng). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "platform/os/espeak.h"
#include "platform/os/os.h"
#include "runtime/core/utf8.h"
#include "runtime/data/text_index.h"
#include "runtime/text/phonemes.h"
#include "runtime/text/symbols.h"
#include "runtime/text/text_norm.h"
#include "test/fixtures.h"

/* The phonemes of text (normalised first) as code points into out[cap]; returns the count. */
static size_t phonemes(const char *text, uint32_t *out, size_t cap, tandem_lang *lang) {
    tandem_text_norm nm;
    tandem_text_norm_init(&nm);
    tandem_phonemes ph;
    tandem_phonemes_init(&ph);
    assert_int_equal(tandem_text_normalize(&nm, text, strlen(text)), TANDEM_OK);
    const uint32_t *p = NULL;
    size_t n = 0;
    assert_int_equal(tandem_phonemes_of(&ph, TANDEM_TEXT_INPUT_PHONEMES, nm.out, nm.out_len, nm.lang, &p, &n),
                     TANDEM_OK);
    assert_true(n <= cap);
    memcpy(out, p, n * sizeof *out);
    if (lang) *lang = nm.lang;
    assert_int_equal(ph.dropped, 0); /* espeak-ng's symbols for these texts are all in the table */
    tandem_phonemes_free(&ph);
    tandem_text_norm_free(&nm);
    return n;
}

static int count_cp(const uint32_t *s, size_t n, uint32_t cp) {
    int k = 0;
    for (size_t i = 0; i < n; i++) k += s[i] == cp;
    return k;
}

static void print_cps(const char *what, const uint32_t *s, size_t n) {
    char buf[1024];
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < sizeof buf; i++) o += (size_t)tandem_utf8_encode(s[i], buf + o);
    buf[o] = 0;
    printf("  %s → %s\n", what, buf);
}

static void test_english(void **state) {
    (void)state;
    uint32_t a[512], b[512];
    const char *text = "The bright apple, and the November rain.";
    const size_t n = phonemes(text, a, 512, NULL);
    print_cps(text, a, n);
    assert_true(n > 10);
    int non_ascii = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(tandem_symbols_id(a[i]) >= 0);
        non_ascii += a[i] > 0x7F;
    }
    assert_true(non_ascii >= 3);                  /* IPA, not the spelling: ð, ˈ, æ, ... */
    assert_int_equal(count_cp(a, n, 0x2C8) > 0, 1); /* primary stress */
    assert_int_equal(count_cp(a, n, ','), 1);     /* the clause's comma */
    assert_int_equal(a[n - 1], '.');              /* and the sentence's full stop */
    assert_int_equal(count_cp(a, n, 'y'), 0);     /* no letter of "November" survives as spelled */
    assert_int_equal(phonemes(text, b, 512, NULL), n);
    assert_memory_equal(a, b, n * sizeof *a);
    /* a question keeps its mark; different words, different phonemes */
    const size_t m = phonemes("Where is the cat?", b, 512, NULL);
    assert_int_equal(b[m - 1], '?');
    assert_true(m != n || memcmp(a, b, n * sizeof *a) != 0);
}

static void test_persian(void **state) {
    (void)state;
    uint32_t a[512];
    tandem_lang lang;
    const char *text = "این پنجره آرام است، و ما در خانه بودیم.";
    const size_t n = phonemes(text, a, 512, &lang);
    print_cps(text, a, n);
    assert_int_equal(lang, TANDEM_LANG_FA);
    assert_true(n > 10);
    for (size_t i = 0; i < n; i++) {
        assert_true(tandem_symbols_id(a[i]) >= 0);
        assert_false(a[i] >= 0x0600 && a[i] <= 0x06FF); /* no Arabic-script letter left */
        assert_false(a[i] == 0x200C);
    }
    assert_int_equal(count_cp(a, n, ','), 1); /* ، became , and ended a clause */
    assert_int_equal(a[n - 1], '.');
}

typedef struct job {
    const char *text;
    uint32_t out[512];
    size_t n;
} job;

static void *run_job(void *p) {
    job *j = p;
    for (int rep = 0; rep < 20; rep++) j->n = phonemes(j->text, j->out, 512, NULL);
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    static job serial[4], par[4];
    const char *texts[4] = {"one small step for a man.", "سلام بر شما، دوستان.",
                            "we waited nine minutes, then ten more.", "کتاب‌های آبی روی میز است."};
    for (int i = 0; i < 4; i++) {
        serial[i].text = par[i].text = texts[i];
        serial[i].n = phonemes(texts[i], serial[i].out, 512, NULL);
    }
    tandem_thread th[4];
    for (int i = 0; i < 4; i++) assert_int_equal(tandem_thread_start(&th[i], run_job, &par[i], "phonemes"), TANDEM_OK);
    for (int i = 0; i < 4; i++) tandem_thread_join(&th[i]);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(par[i].n, serial[i].n);
        assert_memory_equal(par[i].out, serial[i].out, serial[i].n * sizeof(uint32_t));
    }
}

static void test_chars_is_identity(void **state) {
    (void)state;
    tandem_phonemes ph;
    tandem_phonemes_init(&ph);
    const uint32_t in[3] = {'a', 'b', 'c'};
    const uint32_t *out = NULL;
    size_t n = 0;
    assert_int_equal(tandem_phonemes_of(&ph, TANDEM_TEXT_INPUT_CHARS, in, 3, TANDEM_LANG_EN, &out, &n), TANDEM_OK);
    assert_ptr_equal(out, in);
    assert_int_equal(n, 3);
    char name[96];
    assert_string_equal(tandem_phonemes_backend(TANDEM_TEXT_INPUT_CHARS, name, sizeof name), "chars");
    assert_non_null(strstr(tandem_phonemes_backend(TANDEM_TEXT_INPUT_PHONEMES, name, sizeof name), "espeak-ng "));
    tandem_phonemes_free(&ph);
}

static void test_index(void **state) {
    (void)state;
    char dir[256], p[512], cache[300];
    assert_int_equal(tandem_test_mkdtemp(dir, sizeof dir, "test_phonemes"), 0);
    snprintf(p, sizeof p, "%s/wavs", dir);
    tandem_mkdir_p(p);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    const char *meta = "u1|The cat sat.|the cat sat.\nu2|سلام دوست من.|سلام دوست من.\n";
    snprintf(p, sizeof p, "%s/metadata.csv", dir);
    assert_int_equal(tandem_file_write_atomic(p, meta, strlen(meta)), TANDEM_OK);
    tandem_text_index_config c;
    tandem_text_index_config_default(&c);
    c.data_dir = dir;
    c.check_audio = 0;
    c.cache_dir = cache;
    tandem_text_index chars, ph;
    assert_int_equal(tandem_text_index_open(&c, &chars), TANDEM_OK);
    c.text_input = TANDEM_TEXT_INPUT_PHONEMES;
    assert_int_equal(tandem_text_index_open(&c, &ph), TANDEM_OK);
    assert_int_equal(ph.count, 2);
    assert_true(ph.key != chars.key); /* another cache: phonemes never read as characters */
    const char *texts[2] = {"the cat sat.", "سلام دوست من."};
    for (uint32_t i = 0; i < 2; i++) {
        uint32_t want[512];
        const size_t n = phonemes(texts[i], want, 512, NULL);
        const tandem_utt *u = &ph.utts[i];
        const uint16_t *t = tandem_utt_tokens(&ph, u);
        assert_int_equal(u->n_tok, n + TANDEM_SYMBOLS_FRAMING);
        assert_int_equal(t[0], i == 0 ? TANDEM_SYM_LANG_EN : TANDEM_SYM_LANG_FA);
        assert_int_equal(t[1], TANDEM_SYM_BOS);
        for (size_t k = 0; k < n; k++) assert_int_equal(t[2 + k], tandem_symbols_id(want[k]));
        assert_int_equal(t[n + 2], TANDEM_SYM_EOS);
        assert_true(u->n_tok != chars.utts[i].n_tok ||
                    memcmp(t, tandem_utt_tokens(&chars, &chars.utts[i]), u->n_tok * sizeof *t) != 0);
    }
    tandem_text_index_free(&ph);
    /* the second open is a cache hit with the same tokens */
    assert_int_equal(tandem_text_index_open(&c, &ph), TANDEM_OK);
    assert_int_equal(ph.cache_hit, 1);
    tandem_text_index_free(&ph);
    tandem_text_index_free(&chars);
    tandem_test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_english),
        cmocka_unit_test(test_persian),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_chars_is_identity),
        cmocka_unit_test(test_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
