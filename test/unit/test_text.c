/* test_text.c — UTF-8, normaliser and symbol table. Golden strings below were written by hand
 * from the rules in docs/FORMATS.md; the random tests read the number words back with an
 * independent parser and compare values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "platform/os/os.h"
#include "runtime/text/symbols.h"
#include "test/testutil.h"
#include "runtime/text/text_norm.h"
#include "runtime/core/utf8.h"

static char *norm(const char *in, tandem_lang *lang) {
    char *out = NULL;
    tandem_lang l;
    tandem_status st = tandem_text_normalize_utf8(in, strlen(in), &out, &l);
    if (st != TANDEM_OK) fail_msg("normalising '%s': %s", in, tandem_last_error());
    if (lang) *lang = l;
    return out;
}

static void expect(const char *in, const char *want, tandem_lang want_lang) {
    tandem_lang l;
    char *got = norm(in, &l);
    if (strcmp(got, want) != 0) fail_msg("normalise '%s'\n  got  '%s'\n  want '%s'", in, got, want);
    if (l != want_lang) fail_msg("'%s': language %s, want %s", in, tandem_lang_name(l), tandem_lang_name(want_lang));
    tandem_free(got);
}
#define EN(in, want) expect(in, want, TANDEM_LANG_EN)
#define FA(in, want) expect(in, want, TANDEM_LANG_FA)

/* ---- UTF-8 ---- */

static void test_utf8_invalid(void **state) {
    (void)state;
    struct { const char *s; size_t n, off; } bad[] = {
        {"ab\xC0\xAF" "cd", 6, 2},          /* overlong '/' */
        {"\xE0\x80\xAF", 3, 0},             /* overlong, 3 bytes */
        {"x\xF0\x80\x80\xAF", 5, 1},        /* overlong, 4 bytes */
        {"\xED\xA0\x80", 3, 0},             /* surrogate U+D800 */
        {"ok\xED\xBF\xBF", 5, 2},           /* surrogate U+DFFF */
        {"\xF4\x90\x80\x80", 4, 0},         /* U+110000 */
        {"\xF5\x80\x80\x80", 4, 0},         /* lead byte beyond range */
        {"abc\xE2\x82", 5, 3},              /* truncated at the end */
        {"abc\xE2\x82z", 6, 3},             /* truncated in the middle */
        {"\x80", 1, 0},                     /* stray continuation */
        {"a\xFF", 2, 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t off = 99;
        assert_int_equal(tandem_utf8_validate(bad[i].s, bad[i].n, &off), 0);
        assert_int_equal(off, bad[i].off);
        /* the normaliser reports the same offset */
        tandem_text_norm n;
        tandem_text_norm_init(&n);
        assert_int_equal(tandem_text_normalize(&n, bad[i].s, bad[i].n), TANDEM_E_INVALID);
        assert_int_equal(n.bad_offset, bad[i].off);
        assert_non_null(strstr(tandem_last_error(), "invalid UTF-8"));
        tandem_text_norm_free(&n);
    }
    size_t off;
    assert_int_equal(tandem_utf8_validate("h\xC3\xA9llo \xF0\x9F\x98\x80 \xDB\xB1", 14, &off), 1);
}

static void test_utf8_roundtrip(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("utf8 roundtrip")};
    for (int i = 0; i < 100000; i++) {
        uint32_t cp = (uint32_t)tandem_rng_int(&r, 0, 0x10FFFF);
        char b[4];
        int k = tandem_utf8_encode(cp, b);
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            assert_int_equal(k, 0);
            continue;
        }
        /* expected length from the ranges of RFC 3629 */
        int want = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        assert_int_equal(k, want);
        uint32_t back = 0;
        assert_int_equal(tandem_utf8_decode((const uint8_t *)b, (size_t)k, &back), k);
        assert_int_equal(back, cp);
        if (k > 1) assert_int_equal(tandem_utf8_decode((const uint8_t *)b, (size_t)k - 1, &back), 0);
    }
    char b[4];
    assert_int_equal(tandem_utf8_encode(0x110000, b), 0);
}

/* ---- English ---- */

static void test_english_numbers(void **state) {
    (void)state;
    EN("0", "zero");
    EN("13", "thirteen");
    EN("100", "one hundred");
    EN("1001", "one thousand one");
    EN("1000000000000", "one trillion");
    EN("1,000", "one thousand");
    EN("12,345,678", "twelve million three hundred forty five thousand six hundred seventy eight");
    EN("-5 degrees", "minus five degrees");
    EN("it was -12.5", "it was minus twelve point five");
    EN("3.14", "three point one four");
    EN("0.05", "zero point zero five");
    EN("1st", "first");
    EN("2nd 3rd 4th", "second third fourth");
    EN("the 21st", "the twenty first");
    EN("12th and 20th", "twelfth and twentieth");
    EN("101st 1000th", "one hundred first one thousandth");
    EN("007", "zero zero seven");
    EN("5-3", "five, three");
    EN("1, 2, 3", "one, two, three");
    EN("A 100% & more", "a one hundred percent and more");
    EN("mp3", "mp three");
}

static void test_english_text(void **state) {
    (void)state;
    EN("  Hello,   World!!  ", "hello, world!");
    EN("Wait... what?!", "wait. what?");
    EN("Don't stop; it's well-known.", "don't stop; it's well-known.");
    EN("\"Quoted\" (words) [here]", "quoted words here");
    EN("one - two", "one, two");
    EN("'single' quotes", "single quotes");
    EN("Caf\xC3\xA9 na\xC3\xAFve Stra\xC3\x9F" "e", "cafe naive strasse");
    EN("tab\tand\nnewline\r\nend", "tab and newline end");
    EN("no\xC2\xA0" "break", "no break");
    EN(", leading comma", "leading comma");
    EN("", "");
    EN("...", "");
}

/* ---- Persian ---- */

static void test_persian(void **state) {
    (void)state;
    FA("\xD9\x83\xD8\xAA\xD8\xA7\xD8\xA8", "کتاب");                 /* Arabic kaf */
    FA("علي و مصطفى", "علی و مصطفی");                              /* Arabic yeh, alef maksura */
    FA("مدرسـه", "مدرسه");                                          /* tatweel */
    FA("مَدْرِسَه", "مَدْرِسَه");                                   /* short vowels and sukun kept */
    FA("مُؤْمِن\xD9\x95", "مُوْمِن");                                 /* hamza below dropped, ؤ → و */
    FA("مدرسة", "مدرسه");                                           /* teh marbuta */
    FA("أحمد و إسلام", "احمد و اسلام");                             /* hamza on alef */
    FA("آب", "آب");                                                 /* alef madda kept */
    FA("می‌خواهم", "می‌خواهم");                                      /* ZWNJ kept */
    FA("می ‌خواهم", "می خواهم");                                    /* ZWNJ next to a space dropped */
    FA("کتاب‌‌ها", "کتاب‌ها");                                       /* doubled ZWNJ collapsed */
    FA("سلام، خوبی؟ بله؛ ممنون.", "سلام, خوبی? بله; ممنون.");       /* Persian punctuation */
    FA("۰", "صفر");
    FA("۱۳", "سیزده");
    FA("۱۰۰", "صد");
    FA("۱۰۰۱", "هزار و یک");
    FA("۱۲۳", "صد و بیست و سه");
    FA("٤٥", "چهل و پنج");                                          /* Arabic-Indic digits */
    FA("سال 1400", "سال هزار و چهارصد");                             /* ASCII digits in Persian */
    FA("۲۰۰۰", "دو هزار");
    FA("۱" "۰۰۰۰۰۰" "۰۰۰۰۰۰", "یک تریلیون");             /* 10^12 */
    FA("۱٬۰۰۰٬۰۰۰ تومان", "یک میلیون تومان");
    FA("۳٫۵ کیلو", "سه ممیز پنج کیلو");
    FA("منهای -۷ درجه", "منهای منفی هفت درجه");
    FA("روز ۲۱م", "روز بیست و یکم");
    FA("نفر ۳م", "نفر سوم");
    FA("۳۰م", "سی‌ام");
    FA("۵۰٪", "پنجاه درصد");
}

static void test_mixed_script(void **state) {
    (void)state;
    FA("کتاب خوب book", "کتاب خوب book");  /* 7 Arabic-script letters vs 4 Latin */
    EN("hello world سلام", "hello world سلام");
    EN("I read ۳ books", "i read سه books"); /* Persian digits are read in Persian */
    EN("12", "twelve");                      /* no letters, ASCII digits: en */
    FA("۱۲", "دوازده");                      /* no letters, Persian digits: fa */
}

/* ---- independent readers of number words ---- */

static int word_index(const char *w, const char *const *list, int n) {
    for (int i = 0; i < n; i++)
        if (list[i] && !strcmp(w, list[i])) return i;
    return -1;
}

/* English: "one hundred twenty three thousand ..." → value; *ok = 0 on an unknown word. */
static uint64_t read_en(const char *s, int *ok) {
    static const char *const small[] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                                        "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen",
                                        "sixteen", "seventeen", "eighteen", "nineteen"};
    static const char *const tens[] = {NULL, NULL, "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"};
    uint64_t total = 0, cur = 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", s);
    *ok = 1;
    for (char *w = strtok(buf, " "); w; w = strtok(NULL, " ")) {
        int k;
        if ((k = word_index(w, small, 20)) >= 0) cur += (uint64_t)k;
        else if ((k = word_index(w, tens, 10)) >= 0) cur += 10u * (uint64_t)k;
        else if (!strcmp(w, "hundred")) cur *= 100;
        else if (!strcmp(w, "thousand")) total += cur * 1000ull, cur = 0;
        else if (!strcmp(w, "million")) total += cur * 1000000ull, cur = 0;
        else if (!strcmp(w, "billion")) total += cur * 1000000000ull, cur = 0;
        else if (!strcmp(w, "trillion")) total += cur * 1000000000000ull, cur = 0;
        else *ok = 0;
    }
    return total + cur;
}

static uint64_t read_fa(const char *s, int *ok) {
    static const char *const ones[] = {"صفر", "یک", "دو", "سه", "چهار", "پنج", "شش", "هفت", "هشت", "نه"};
    static const char *const teens[] = {"ده", "یازده", "دوازده", "سیزده", "چهارده", "پانزده", "شانزده", "هفده", "هجده", "نوزده"};
    static const char *const tens[] = {NULL, NULL, "بیست", "سی", "چهل", "پنجاه", "شصت", "هفتاد", "هشتاد", "نود"};
    static const char *const hundreds[] = {NULL, "صد", "دویست", "سیصد", "چهارصد", "پانصد", "ششصد", "هفتصد", "هشتصد", "نهصد"};
    uint64_t total = 0, cur = 0;
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", s);
    *ok = 1;
    for (char *w = strtok(buf, " "); w; w = strtok(NULL, " ")) {
        int k;
        uint64_t scale = 0;
        if (!strcmp(w, "و")) continue;
        if ((k = word_index(w, ones, 10)) >= 0) cur += (uint64_t)k;
        else if ((k = word_index(w, teens, 10)) >= 0) cur += 10u + (uint64_t)k;
        else if ((k = word_index(w, tens, 10)) >= 0) cur += 10u * (uint64_t)k;
        else if ((k = word_index(w, hundreds, 10)) >= 0) cur += 100u * (uint64_t)k;
        else if (!strcmp(w, "هزار")) scale = 1000ull;
        else if (!strcmp(w, "میلیون")) scale = 1000000ull;
        else if (!strcmp(w, "میلیارد")) scale = 1000000000ull;
        else if (!strcmp(w, "تریلیون")) scale = 1000000000000ull;
        else *ok = 0;
        if (scale) {
            total += (cur ? cur : 1) * scale;
            cur = 0;
        }
    }
    return total + cur;
}

static void test_random_numbers(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("random numbers")};
    for (int i = 0; i < 3000; i++) {
        int digits = (int)tandem_rng_int(&r, 1, 15);
        uint64_t v = tandem_rng_next(&r) % 10;
        for (int d = 1; d < digits; d++) v = v * 10 + tandem_rng_next(&r) % 10;
        char ascii[32], text[128];
        snprintf(ascii, sizeof ascii, "%llu", (unsigned long long)v);
        int commas = (int)tandem_rng_int(&r, 0, 1);
        if (commas) { /* "12,345" */
            char g[48];
            size_t n = strlen(ascii), o = 0;
            for (size_t k = 0; k < n; k++) {
                if (k && (n - k) % 3 == 0) g[o++] = ',';
                g[o++] = ascii[k];
            }
            g[o] = 0;
            snprintf(text, sizeof text, "%s", g);
        } else {
            snprintf(text, sizeof text, "%s", ascii);
        }
        int ok;
        char *w = norm(text, NULL);
        uint64_t back = read_en(w, &ok);
        if (!ok || back != v) fail_msg("'%s' → '%s' reads back as %llu", text, w, (unsigned long long)back);
        tandem_free(w);

        /* the same value in Persian digits */
        char fa[256];
        size_t o = 0;
        for (const char *p = ascii; *p; p++) {
            fa[o++] = (char)0xDB;
            fa[o++] = (char)(0xB0 + (*p - '0'));
        }
        fa[o] = 0;
        tandem_lang l;
        w = norm(fa, &l);
        assert_int_equal(l, TANDEM_LANG_FA);
        back = read_fa(w, &ok);
        if (!ok || back != v) fail_msg("'%s' → '%s' reads back as %llu", fa, w, (unsigned long long)back);
        tandem_free(w);
    }
}

/* ---- sentences ---- */

static void expect_split(const char *text, int want_n, const char *const *want) {
    tandem_text_span sp[8];
    int n = -1;
    assert_int_equal(tandem_text_split_sentences(text, strlen(text), sp, 8, &n), TANDEM_OK);
    if (n != want_n) fail_msg("'%s': %d sentences, want %d", text, n, want_n);
    for (int k = 0; k < n; k++)
        if (sp[k].length != strlen(want[k]) || memcmp(text + sp[k].offset, want[k], sp[k].length) != 0)
            fail_msg("'%s': sentence %d is '%.*s', want '%s'", text, k, (int)sp[k].length, text + sp[k].offset,
                     want[k]);
}

static void test_sentences(void **state) {
    (void)state;
    const char *a[] = {"Hello there.", "How are you?!", "Fine;", "thanks"};
    expect_split("  Hello there. How are you?!  Fine; thanks  ", 4, a);
    const char *b[] = {"Version 3.5 is out...", "e.g.x stays."};
    expect_split("Version 3.5 is out... e.g.x stays.", 2, b); /* marks inside a word do not cut */
    const char *c[] = {"سلام؟", "خوبم."};
    expect_split("سلام؟ خوبم.", 2, c);
    const char *d[] = {"one"};
    expect_split(" . ! one", 1, d); /* pieces without a letter are dropped */
    expect_split("   ", 0, NULL);
    tandem_text_span sp[2];
    int n = 0;
    assert_int_equal(tandem_text_split_sentences("a. b. c.", 8, sp, 2, &n), TANDEM_E_INVALID);
    assert_int_equal(n, 2);
    assert_int_equal(tandem_text_split_sentences(NULL, 0, sp, 2, &n), TANDEM_E_INVALID);
}

/* ---- symbols ---- */

static void test_symbols(void **state) {
    (void)state;
    int n = tandem_symbols_count();
    assert_true(n > TANDEM_SYM_FIRST_CHAR + 26 + 30);
    assert_int_equal(TANDEM_SYM_PAD, 0);
    for (int id = TANDEM_SYM_FIRST_CHAR; id < n; id++) {
        uint32_t cp = tandem_symbols_cp(id);
        assert_true(cp != 0);
        assert_int_equal(tandem_symbols_id(cp), id); /* the direct tables agree with the list */
    }
    for (uint32_t cp = 0; cp < 0x2100; cp++) { /* nothing else maps to an id */
        int id = tandem_symbols_id(cp);
        if (id >= 0) assert_int_equal(tandem_symbols_cp(id), cp);
    }
    /* every character the normaliser can output for plain text is in the table */
    tandem_text_norm nm;
    tandem_text_norm_init(&nm);
    const char *s = "Hello, World! It's 42; well-known: yes? کتاب‌های آبی ژاله ئ ء ۱۲";
    assert_int_equal(tandem_text_normalize(&nm, s, strlen(s)), TANDEM_OK);
    uint16_t ids[512];
    size_t count = 0, bad = 0;
    assert_int_equal(tandem_symbols_encode(nm.out, nm.out_len, nm.lang, ids, 512, &count, &bad), TANDEM_OK);
    assert_int_equal(count, nm.out_len + 3);
    assert_int_equal(ids[0], TANDEM_SYM_LANG_EN);
    assert_int_equal(ids[1], TANDEM_SYM_BOS);
    assert_int_equal(ids[count - 1], TANDEM_SYM_EOS);
    for (size_t i = 0; i < nm.out_len; i++) assert_int_equal(tandem_symbols_cp(ids[i + 2]), nm.out[i]);
    /* unknown characters survive normalisation and are rejected here, with their position */
    const char *u = "snow \xE2\x98\x83 man";
    assert_int_equal(tandem_text_normalize(&nm, u, strlen(u)), TANDEM_OK);
    assert_int_equal(tandem_symbols_encode(nm.out, nm.out_len, nm.lang, ids, 512, &count, &bad), TANDEM_E_INVALID);
    assert_int_equal(bad, 5);
    assert_non_null(strstr(tandem_last_error(), "U+2603"));
    tandem_text_norm_free(&nm);

    char *json = NULL;
    size_t len = 0;
    assert_int_equal(tandem_symbols_to_json(&json, &len), TANDEM_OK);
    assert_int_equal(strlen(json), len);
    char version[32];
    snprintf(version, sizeof version, "\"version\":%d,", TANDEM_SYMBOLS_VERSION);
    assert_non_null(strstr(json, version));
    assert_non_null(strstr(json, "\"<pad>\",\"<bos>\",\"<eos>\",\"<en>\",\"<fa>\",\" \""));
    assert_non_null(strstr(json, "\"\\u200c\""));
    int items = 0; /* count the JSON strings of the array (a symbol may be "," itself) */
    for (const char *p = strstr(json, "\"symbols\":[") + 11; *p && *p != ']'; p++) {
        if (*p != '"') continue;
        for (p++; *p != '"'; p++)
            if (*p == '\\') p++;
        items++;
    }
    assert_int_equal(items, n);
    tandem_free(json);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8_invalid),    cmocka_unit_test(test_utf8_roundtrip),
        cmocka_unit_test(test_english_numbers), cmocka_unit_test(test_english_text),
        cmocka_unit_test(test_persian),         cmocka_unit_test(test_mixed_script),
        cmocka_unit_test(test_random_numbers),  cmocka_unit_test(test_sentences),
        cmocka_unit_test(test_symbols),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
