/* corpus_text.c — template sentences for the demo corpus (see corpus_text.h). */
#include "tools/corpus_text.h"

#include <stdio.h>
#include <string.h>

typedef struct gen {
    uint64_t s;
    char *out;
    size_t len;
} gen;

static uint64_t next(gen *g) { /* splitmix64 */
    uint64_t z = (g->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int pick(gen *g, int n) { return (int)(next(g) % (uint64_t)n); }
static int64_t range(gen *g, int64_t lo, int64_t hi) { return lo + (int64_t)(next(g) % (uint64_t)(hi - lo + 1)); }
#define PICK(g, arr) (arr)[pick((g), (int)(sizeof(arr) / sizeof((arr)[0])))]

static void put(gen *g, const char *s) {
    size_t n = strlen(s);
    if (g->len + n >= CORPUS_TEXT_MAX) n = CORPUS_TEXT_MAX - 1 - g->len;
    memcpy(g->out + g->len, s, n);
    g->len += n;
    g->out[g->len] = 0;
}

/* ---- English ---- */

static const char *const en_names[] = {"Alice", "Omid", "Maria", "John", "Leila", "Peter", "Sara", "David", "Nora", "Kian"};
static const char *const en_nouns[][2] = {
    {"book", "books"}, {"tree", "trees"},     {"river", "rivers"},   {"letter", "letters"}, {"apple", "apples"},
    {"train", "trains"}, {"window", "windows"}, {"garden", "gardens"}, {"bird", "birds"},     {"song", "songs"}};
static const char *const en_adjs[] = {"quiet", "bright", "old", "small", "green", "heavy", "gentle", "distant", "careful", "sudden"};
static const char *const en_verbs[] = {"found", "painted", "counted", "carried", "opened", "watched", "bought", "wrote"};
static const char *const en_months[] = {"January", "February", "March", "April", "May", "June", "July",
                                        "August", "September", "October", "November", "December"};
static const char *const en_places[] = {"the station", "the library", "the old market", "the harbor", "the village", "the museum"};

static void en_int(gen *g, int64_t lo, int64_t hi) {
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)range(g, lo, hi));
    put(g, b);
}
/* 1,234,567 style */
static void en_big(gen *g) {
    long long v = range(g, 1000, 999999999);
    char d[32], b[48];
    int n = snprintf(d, sizeof d, "%lld", v), o = 0;
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0) b[o++] = ',';
        b[o++] = d[i];
    }
    b[o] = 0;
    put(g, b);
}
static void en_dec(gen *g) {
    char b[32];
    snprintf(b, sizeof b, "%lld.%0*lld", (long long)range(g, 0, 99), 2, (long long)range(g, 1, 99));
    put(g, b);
}
static void en_ord(gen *g, int64_t hi) {
    long long v = range(g, 1, hi);
    const char *suf = "th";
    if (v % 100 < 11 || v % 100 > 13) suf = v % 10 == 1 ? "st" : v % 10 == 2 ? "nd" : v % 10 == 3 ? "rd" : "th";
    char b[32];
    snprintf(b, sizeof b, "%lld%s", v, suf);
    put(g, b);
}

static void english(gen *g) {
    int t = pick(g, 10);
    int ni = pick(g, 10);
    switch (t) {
    case 0:
        put(g, PICK(g, en_names)); put(g, " "); put(g, PICK(g, en_verbs)); put(g, " ");
        en_int(g, 2, 99); put(g, " "); put(g, PICK(g, en_adjs)); put(g, " "); put(g, en_nouns[ni][1]);
        put(g, " at "); put(g, PICK(g, en_places)); put(g, ".");
        break;
    case 1:
        put(g, "On "); put(g, PICK(g, en_months)); put(g, " "); en_ord(g, 31); put(g, ", ");
        en_int(g, 1890, 2030); put(g, ", the "); put(g, en_nouns[ni][0]); put(g, " was ");
        put(g, PICK(g, en_adjs)); put(g, ".");
        break;
    case 2:
        put(g, "Did you know that "); en_dec(g); put(g, "% of the "); put(g, en_nouns[ni][1]);
        put(g, " were "); put(g, PICK(g, en_adjs)); put(g, "?");
        break;
    case 3:
        put(g, "The temperature fell to -"); en_int(g, 1, 40); put(g, " degrees; nobody at ");
        put(g, PICK(g, en_places)); put(g, " expected it!");
        break;
    case 4:
        put(g, "It cost "); en_big(g); put(g, " dollars, and "); put(g, PICK(g, en_names));
        put(g, " paid "); en_int(g, 0, 1000); put(g, " of them.");
        break;
    case 5:
        put(g, PICK(g, en_names)); put(g, " is the "); en_ord(g, 120); put(g, " person in line: ");
        put(g, PICK(g, en_adjs)); put(g, ", "); put(g, PICK(g, en_adjs)); put(g, ", and ");
        put(g, PICK(g, en_adjs)); put(g, ".");
        break;
    case 6:
        put(g, "We waited "); en_int(g, 2, 59); put(g, " minutes, then "); en_int(g, 1, 30);
        put(g, " more - the "); put(g, en_nouns[ni][0]); put(g, " was late again.");
        break;
    case 7:
        put(g, "Is it true that "); put(g, PICK(g, en_names)); put(g, "'s "); put(g, en_nouns[ni][0]);
        put(g, " weighs "); en_dec(g); put(g, " kilograms?");
        break;
    case 8:
        put(g, "Chapter "); en_int(g, 1, 40); put(g, ": the "); put(g, PICK(g, en_adjs)); put(g, " ");
        put(g, en_nouns[ni][0]); put(g, " and the "); put(g, PICK(g, en_months)); put(g, " rain.");
        break;
    default:
        put(g, "In "); en_int(g, 1890, 2030); put(g, ", "); put(g, PICK(g, en_names)); put(g, " wrote ");
        en_big(g); put(g, " words about "); put(g, en_nouns[ni][1]); put(g, ".");
        break;
    }
}

/* ---- Persian ---- */

static const char *const fa_names[] = {"مریم", "علی", "سارا", "رضا", "نرگس", "امید", "لیلا", "کیان"};
static const char *const fa_nouns[] = {"کتاب", "درخت", "نامه", "سیب", "قطار", "پنجره", "باغ", "پرنده", "گل", "قلم"};
static const char *const fa_adjs[] = {"بزرگ", "کوچک", "زیبا", "قدیمی", "تازه", "سبز", "آرام", "سنگین"};
static const char *const fa_places[] = {"تهران", "شیراز", "اصفهان", "تبریز", "بازار", "کتابخانه", "مدرسه", "ایستگاه"};
static const char *const fa_months[] = {"فروردین", "اردیبهشت", "خرداد", "تیر", "مرداد", "شهریور",
                                        "مهر", "آبان", "آذر", "دی", "بهمن", "اسفند"};

/* Digits in Persian (۰-۹) or ASCII, decided per sentence. */
static void fa_digits(gen *g, const char *ascii, int persian) {
    for (const char *p = ascii; *p; p++) {
        if (persian && *p >= '0' && *p <= '9') {
            char b[3] = {(char)0xDB, (char)(0xB0 + (*p - '0')), 0}; /* U+06F0 + d */
            put(g, b);
        } else if (persian && *p == '.') {
            put(g, "٫");
        } else if (persian && *p == ',') {
            put(g, "٬");
        } else {
            char b[2] = {*p, 0};
            put(g, b);
        }
    }
}
static void fa_int(gen *g, int persian, int64_t lo, int64_t hi) {
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)range(g, lo, hi));
    fa_digits(g, b, persian);
}
static void fa_big(gen *g, int persian) {
    long long v = range(g, 1000, 9999999);
    char d[32], b[48];
    int n = snprintf(d, sizeof d, "%lld", v), o = 0;
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0) b[o++] = ',';
        b[o++] = d[i];
    }
    b[o] = 0;
    fa_digits(g, b, persian);
}
static void fa_dec(gen *g, int persian) {
    char b[32];
    snprintf(b, sizeof b, "%lld.%lld", (long long)range(g, 0, 99), (long long)range(g, 1, 9));
    fa_digits(g, b, persian);
}

static void persian(gen *g) {
    int t = pick(g, 10);
    int pd = pick(g, 4) != 0; /* mostly Persian digits, sometimes ASCII */
    switch (t) {
    case 0:
        put(g, PICK(g, fa_names)); put(g, " "); fa_int(g, pd, 2, 99); put(g, " "); put(g, PICK(g, fa_nouns));
        put(g, " "); put(g, PICK(g, fa_adjs)); put(g, " در "); put(g, PICK(g, fa_places)); put(g, " دید.");
        break;
    case 1:
        put(g, "آیا "); fa_int(g, pd, 2, 30); put(g, " "); put(g, PICK(g, fa_nouns)); put(g, " برای ");
        put(g, PICK(g, fa_names)); put(g, " کافی است؟");
        break;
    case 2:
        put(g, "ما می‌خواهیم "); fa_int(g, pd, 2, 20); put(g, " "); put(g, PICK(g, fa_nouns));
        put(g, " بخریم، اما قیمت آن "); fa_big(g, pd); put(g, " تومان است.");
        break;
    case 3:
        put(g, "دمای هوا در "); put(g, PICK(g, fa_places)); put(g, " به -"); fa_int(g, pd, 1, 30);
        put(g, " درجه رسید؛ همه تعجب کردند.");
        break;
    case 4:
        put(g, PICK(g, fa_names)); put(g, " در روز "); fa_int(g, pd, 1, 31); put(g, " ");
        put(g, PICK(g, fa_months)); put(g, " سال "); fa_int(g, pd, 1300, 1405); put(g, " به ");
        put(g, PICK(g, fa_places)); put(g, " رفت.");
        break;
    case 5:
        put(g, "این "); put(g, PICK(g, fa_nouns)); put(g, " "); put(g, PICK(g, fa_adjs));
        put(g, " است و "); fa_dec(g, pd); put(g, " کیلو وزن دارد.");
        break;
    case 6:
        put(g, "کتاب‌های "); put(g, PICK(g, fa_names)); put(g, " روی میز است و "); fa_int(g, pd, 2, 12);
        put(g, " نامه هم آنجاست.");
        break;
    case 7:
        put(g, PICK(g, fa_names)); put(g, " نفر "); fa_int(g, pd, 1, 40); put(g, "م در صف بود!");
        break;
    case 8:
        fa_int(g, pd, 1, 99); put(g, "٪ از دانشجویان در "); put(g, PICK(g, fa_places));
        put(g, " زندگی می‌کنند.");
        break;
    default:
        put(g, "سال "); fa_int(g, pd, 1300, 1405); put(g, " برای "); put(g, PICK(g, fa_names));
        put(g, " سال خوبی بود.");
        break;
    }
    if (pick(g, 4) == 0) { /* Arabic letter variants the frontend must unify: ی→ي, ک→ك */
        char *s = g->out;
        for (size_t i = 0; i + 1 < g->len; i++) {
            unsigned char a = (unsigned char)s[i], b = (unsigned char)s[i + 1];
            if (a == 0xDB && b == 0x8C) { s[i] = (char)0xD9; s[i + 1] = (char)0x8A; i++; }      /* U+06CC→U+064A */
            else if (a == 0xDA && b == 0xA9) { s[i] = (char)0xD9; s[i + 1] = (char)0x83; i++; } /* U+06A9→U+0643 */
        }
    }
}

void corpus_text_sentence(uint64_t seed, uint64_t index, tandem_lang lang, char out[CORPUS_TEXT_MAX]) {
    gen g = {seed * 0x100000001b3ull ^ (index + 1) * 0x9e3779b97f4a7c15ull, out, 0};
    next(&g);
    out[0] = 0;
    if (lang == TANDEM_LANG_FA)
        persian(&g);
    else
        english(&g);
}
