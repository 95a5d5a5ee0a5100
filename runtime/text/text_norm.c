/* text_norm.c — the normaliser (see text_norm.h; rules documented in docs/FORMATS.md). */
#include "runtime/text/text_norm.h"

#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/core/utf8.h"

#define CH_DROP 0xFFFFFFFFu /* map result: remove the character */
#define ZWNJ 0x200Cu

/* Code points pass 1 leaves for pass 2 to interpret next to digits. */
#define AR_DECIMAL_SEP 0x066Bu   /* ٫ */
#define AR_THOUSANDS_SEP 0x066Cu /* ٬ */

const char *tandem_lang_name(tandem_lang lang) {
    return lang == TANDEM_LANG_FA ? "fa" : "en";
}

void tandem_text_norm_init(tandem_text_norm *n) { memset(n, 0, sizeof *n); }

void tandem_text_norm_free(tandem_text_norm *n) {
    if (!n) return;
    tandem_free(n->buf_[0]);
    tandem_free(n->buf_[1]);
    memset(n, 0, sizeof *n);
}

/* ---- growable code-point output ---- */

typedef struct cpb {
    uint32_t **buf;
    size_t *cap;
    size_t len;
    int oom;
} cpb;

static int cpb_reserve(cpb *b, size_t extra) {
    if (b->len + extra <= *b->cap) return 1;
    size_t cap = *b->cap ? *b->cap : 256;
    while (cap < b->len + extra) cap *= 2;
    uint32_t *p = tandem_realloc(*b->buf, cap * sizeof *p);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    *b->buf = p;
    *b->cap = cap;
    return 1;
}

static void cpb_push(cpb *b, uint32_t c) {
    if (b->len < *b->cap || cpb_reserve(b, 1)) (*b->buf)[b->len++] = c;
}

/* Append a UTF-8 literal from this file's word tables (known valid). */
static void cpb_puts(cpb *b, const char *s) {
    const uint8_t *p = (const uint8_t *)s;
    size_t n = strlen(s);
    while (n) {
        uint32_t c;
        int k = tandem_utf8_decode(p, n, &c);
        if (k == 0) return; /* unreachable for the literals below */
        cpb_push(b, c);
        p += k;
        n -= (size_t)k;
    }
}

/* ---- character classes ---- */

static int digit_value(uint32_t c) {
    if (c >= '0' && c <= '9') return (int)(c - '0');
    if (c >= 0x06F0 && c <= 0x06F9) return (int)(c - 0x06F0); /* Persian ۰-۹ */
    if (c >= 0x0660 && c <= 0x0669) return (int)(c - 0x0660); /* Arabic-Indic ٠-٩ */
    return -1;
}

static int is_arabic_letter(uint32_t c) {
    return (c >= 0x0620 && c <= 0x064A) || (c >= 0x066E && c <= 0x06D3) || c == 0x06D5 ||
           (c >= 0x06FA && c <= 0x06FF);
}

static int is_latin_letter(uint32_t c) { return c >= 'a' && c <= 'z'; }

static int is_punct(uint32_t c) {
    return c == '.' || c == ',' || c == '?' || c == '!' || c == ';' || c == ':' || c == '\'' ||
           c == '-';
}

/* Fold a Latin-1 letter (U+00C0..U+00FF) to lowercase ASCII; writes up to 2 letters. */
static int fold_latin1(uint32_t c, uint32_t out[2]) {
    /* Index c - 0xC0; '\0' = not a letter; two-letter results handled below. */
    static const char map[64] = "aaaaaaaceeeeiiiidnooooo\0ouuuuyts"
                                "aaaaaaaceeeeiiiidnooooo\0ouuuuyty";
    if (c < 0xC0 || c > 0xFF) return 0;
    if (c == 0xC6 || c == 0xE6) { out[0] = 'a'; out[1] = 'e'; return 2; }   /* æ */
    if (c == 0xDF) { out[0] = 's'; out[1] = 's'; return 2; }                /* ß */
    if (c == 0xDE || c == 0xFE) { out[0] = 't'; out[1] = 'h'; return 2; }   /* þ */
    char m = map[c - 0xC0];
    if (!m) return 0; /* × ÷ */
    out[0] = (uint32_t)m;
    return 1;
}

/* Pass-1 map of one code point: the replacement, ' ' for a separator, or CH_DROP. */
static uint32_t map_char(uint32_t c) {
    if (c < 0x80) {
        if (c >= 'A' && c <= 'Z') return c + 32;
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) return c;
        if (is_punct(c) || c == '&' || c == '%') return c;
        return ' '; /* controls, whitespace, quotes, brackets, other symbols separate words */
    }
    switch (c) {
    /* spaces and separators */
    case 0x00A0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
    case 0x0085:
        return ' ';
    /* invisible formatting: zero width space/joiner, bidi marks and isolates, BOM */
    case 0x200B: case 0x200D: case 0x200E: case 0x200F: case 0x2060: case 0xFEFF: case 0x00AD:
        return CH_DROP;
    case ZWNJ:
        return ZWNJ;
    /* quotes, brackets */
    case 0x00AB: case 0x00BB: case 0x201C: case 0x201D: case 0x201E: case 0x201F: case 0x2039:
    case 0x203A: case 0x00BF: case 0x00A1: case 0x2033:
        return ' ';
    case 0x2018: case 0x2019: case 0x201B: case 0x2032:
        return '\'';
    case 0x2010: case 0x2011: case 0x2013: case 0x2212:
        return '-';
    case 0x2012: case 0x2014: case 0x2015:
        return ',';
    case 0x2026:
        return '.';
    /* Persian / Arabic punctuation → Latin counterparts (one symbol each in the table) */
    case 0x060C: return ',';
    case 0x061B: return ';';
    case 0x061F: return '?';
    case 0x06D4: return '.';
    case 0x066A: return '%';
    case AR_DECIMAL_SEP: case AR_THOUSANDS_SEP:
        return c;
    /* letter unification */
    case 0x064A: case 0x0649: case 0x06D2: return 0x06CC;           /* ي ى ے → ی */
    case 0x0643: case 0x06AA: return 0x06A9;                        /* ك ڪ → ک */
    case 0x0629: case 0x06C0: case 0x06C1: case 0x06BE: case 0x06D5:
        return 0x0647;                                              /* ة ۀ ہ ھ ە → ه */
    case 0x0623: case 0x0625: case 0x0671: return 0x0627;           /* أ إ ٱ → ا */
    case 0x0624: return 0x0648;                                     /* ؤ → و */
    case 0x0640: return CH_DROP;                                    /* tatweel */
    default:
        break;
    }
    if (c >= 0x2000 && c <= 0x200A) return ' ';
    if ((c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069)) return CH_DROP;
    /* the short vowels, tanvin, shadda and sukun (U+064B..U+0652) are kept: they say how a word
     * is read; hamza above/below, other marks, superscript alef and Quranic annotations are not */
    if ((c >= 0x0653 && c <= 0x065F) || c == 0x0670 || (c >= 0x06D6 && c <= 0x06ED))
        return CH_DROP;
    if (c >= 0x00C0 && c <= 0x00FF) {
        uint32_t f[2];
        int k = fold_latin1(c, f);
        if (k == 1) return f[0];
        /* two-letter folds are expanded by the caller */
    }
    return c;
}

/* ---- number words ---- */

static const char *const en_ones[20] = {
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen"};
static const char *const en_tens[10] = {"", "", "twenty", "thirty", "forty", "fifty", "sixty",
                                        "seventy", "eighty", "ninety"};
static const char *const en_scales[5] = {"", "thousand", "million", "billion", "trillion"};

static const char *const fa_ones[10] = {"صفر", "یک", "دو", "سه", "چهار",
                                        "پنج", "شش", "هفت", "هشت", "نه"};
static const char *const fa_teens[10] = {"ده", "یازده", "دوازده", "سیزده", "چهارده",
                                         "پانزده", "شانزده", "هفده", "هجده", "نوزده"};
static const char *const fa_tens[10] = {"", "", "بیست", "سی", "چهل",
                                        "پنجاه", "شصت", "هفتاد", "هشتاد", "نود"};
static const char *const fa_hundreds[10] = {"", "صد", "دویست", "سیصد", "چهارصد",
                                            "پانصد", "ششصد", "هفتصد", "هشتصد", "نهصد"};
static const char *const fa_scales[5] = {"", "هزار", "میلیون", "میلیارد", "تریلیون"};

#define MAX_CARDINAL_DIGITS 15 /* up to 999 trillion; longer runs are read digit by digit */

static void en_below_1000(cpb *b, unsigned n) {
    int first = 1;
    if (n >= 100) {
        cpb_puts(b, en_ones[n / 100]);
        cpb_puts(b, " hundred");
        n %= 100;
        first = 0;
        if (n == 0) return;
    }
    if (!first) cpb_push(b, ' ');
    if (n < 20) {
        cpb_puts(b, en_ones[n]);
    } else {
        cpb_puts(b, en_tens[n / 10]);
        if (n % 10) {
            cpb_push(b, ' ');
            cpb_puts(b, en_ones[n % 10]);
        }
    }
}

static void en_cardinal(cpb *b, uint64_t n) {
    if (n == 0) {
        cpb_puts(b, "zero");
        return;
    }
    unsigned groups[5] = {0};
    for (int s = 0; s < 5; s++, n /= 1000) groups[s] = (unsigned)(n % 1000);
    int first = 1;
    for (int s = 4; s >= 0; s--) {
        if (!groups[s]) continue;
        if (!first) cpb_push(b, ' ');
        en_below_1000(b, groups[s]);
        if (s) {
            cpb_push(b, ' ');
            cpb_puts(b, en_scales[s]);
        }
        first = 0;
    }
}

/* Turn the last word of an English cardinal (b->buf[start..len)) into its ordinal. */
static void en_ordinalize(cpb *b, size_t start) {
    static const char *const irregular[][2] = {
        {"one", "first"}, {"two", "second"}, {"three", "third"}, {"five", "fifth"},
        {"eight", "eighth"}, {"nine", "ninth"}, {"twelve", "twelfth"}};
    if (b->oom) return;
    size_t w = b->len;
    while (w > start && (*b->buf)[w - 1] != ' ') w--;
    char word[16];
    size_t wl = b->len - w;
    if (wl >= sizeof word) return;
    for (size_t i = 0; i < wl; i++) word[i] = (char)(*b->buf)[w + i];
    word[wl] = 0;
    for (size_t i = 0; i < sizeof irregular / sizeof irregular[0]; i++) {
        if (strcmp(word, irregular[i][0]) == 0) {
            b->len = w;
            cpb_puts(b, irregular[i][1]);
            return;
        }
    }
    if (word[wl - 1] == 'y') { /* twenty → twentieth */
        b->len--;
        cpb_puts(b, "ieth");
    } else {
        cpb_puts(b, "th");
    }
}

static void fa_below_1000(cpb *b, unsigned n) {
    int first = 1;
    if (n >= 100) {
        cpb_puts(b, fa_hundreds[n / 100]);
        n %= 100;
        first = 0;
        if (n == 0) return;
    }
    if (!first) cpb_puts(b, " و ");
    if (n < 10) {
        cpb_puts(b, fa_ones[n]);
    } else if (n < 20) {
        cpb_puts(b, fa_teens[n - 10]);
    } else {
        cpb_puts(b, fa_tens[n / 10]);
        if (n % 10) {
            cpb_puts(b, " و ");
            cpb_puts(b, fa_ones[n % 10]);
        }
    }
}

static void fa_cardinal(cpb *b, uint64_t n) {
    if (n == 0) {
        cpb_puts(b, fa_ones[0]);
        return;
    }
    unsigned groups[5] = {0};
    for (int s = 0; s < 5; s++, n /= 1000) groups[s] = (unsigned)(n % 1000);
    int first = 1;
    for (int s = 4; s >= 0; s--) {
        if (!groups[s]) continue;
        if (!first) cpb_puts(b, " و ");
        if (s == 1 && groups[s] == 1) {
            cpb_puts(b, fa_scales[1]); /* 1000 is "هزار", not "یک هزار" */
        } else {
            fa_below_1000(b, groups[s]);
            if (s) {
                cpb_push(b, ' ');
                cpb_puts(b, fa_scales[s]);
            }
        }
        first = 0;
    }
}

/* Persian ordinal: سه → سوم, a word ending in ی (سی) → سی‌ام, otherwise + م. */
static void fa_ordinalize(cpb *b, size_t start) {
    if (b->oom || b->len == start) return;
    uint32_t *buf = *b->buf;
    size_t w = b->len;
    while (w > start && buf[w - 1] != ' ') w--;
    if (b->len - w == 2 && buf[w] == 0x0633 && buf[w + 1] == 0x0647) { /* سه */
        b->len = w;
        cpb_puts(b, "سوم");
    } else if (buf[b->len - 1] == 0x06CC) {
        cpb_push(b, ZWNJ);
        cpb_puts(b, "ام");
    } else {
        cpb_puts(b, "م");
    }
}

static void digit_word(cpb *b, int d, tandem_lang lang) {
    cpb_puts(b, lang == TANDEM_LANG_FA ? fa_ones[d] : en_ones[d]);
}

/* A number found by pass 2: digits[0..nd) integer part, frac[0..nf) fraction. */
typedef struct number {
    uint8_t digits[64];
    size_t nd;
    uint8_t frac[64];
    size_t nf;
    int negative, ordinal, persian_digits, grouped;
} number;

static void emit_number(cpb *b, const number *num, tandem_lang lang) {
    if (num->negative) cpb_puts(b, lang == TANDEM_LANG_FA ? "منفی " : "minus ");
    size_t start = b->len;
    int digitwise = num->nd > MAX_CARDINAL_DIGITS || (num->nd > 1 && num->digits[0] == 0 && !num->grouped);
    if (digitwise) { /* "007", serial numbers: read each digit */
        for (size_t i = 0; i < num->nd; i++) {
            if (i) cpb_push(b, ' ');
            digit_word(b, num->digits[i], lang);
        }
    } else {
        uint64_t v = 0;
        for (size_t i = 0; i < num->nd; i++) v = v * 10 + num->digits[i];
        if (lang == TANDEM_LANG_FA)
            fa_cardinal(b, v);
        else
            en_cardinal(b, v);
    }
    if (num->ordinal) {
        if (lang == TANDEM_LANG_FA)
            fa_ordinalize(b, start);
        else
            en_ordinalize(b, start);
    }
    if (num->nf) {
        cpb_puts(b, lang == TANDEM_LANG_FA ? " ممیز" : " point");
        for (size_t i = 0; i < num->nf; i++) {
            cpb_push(b, ' ');
            digit_word(b, num->frac[i], lang);
        }
    }
}

/* Parse a number at in[i] (a digit). Returns the index after it. */
static size_t parse_number(const uint32_t *in, size_t n, size_t i, number *num) {
    memset(num, 0, sizeof *num);
    size_t j = i;
    /* A run longer than the array continues as the next number: split, never dropped. */
    while (j < n && digit_value(in[j]) >= 0 && num->nd < sizeof num->digits) {
        num->digits[num->nd++] = (uint8_t)digit_value(in[j]);
        if (in[j] > 0x7F) num->persian_digits = 1;
        j++;
    }
    /* thousands groups "1,000,000": a first run of 1-3 digits, then separator + exactly 3 */
    if (num->nd <= 3) {
        while (num->nd + 3 <= MAX_CARDINAL_DIGITS) {
            if (j + 3 < n && (in[j] == ',' || in[j] == AR_THOUSANDS_SEP) &&
                digit_value(in[j + 1]) >= 0 && digit_value(in[j + 2]) >= 0 &&
                digit_value(in[j + 3]) >= 0 && (j + 4 >= n || digit_value(in[j + 4]) < 0)) {
                for (int k = 1; k <= 3; k++) {
                    num->digits[num->nd++] = (uint8_t)digit_value(in[j + k]);
                    if (in[j + k] > 0x7F) num->persian_digits = 1;
                }
                num->grouped = 1;
                j += 4;
            } else {
                break;
            }
        }
    }
    /* decimals "3.14" / "۳٫۱۴" */
    if (j + 1 < n && (in[j] == '.' || in[j] == AR_DECIMAL_SEP) && digit_value(in[j + 1]) >= 0) {
        j++;
        while (j < n && digit_value(in[j]) >= 0 && num->nf < sizeof num->frac) {
            num->frac[num->nf++] = (uint8_t)digit_value(in[j]);
            if (in[j] > 0x7F) num->persian_digits = 1;
            j++;
        }
        return j;
    }
    /* ordinal suffixes: 1st 2nd 3rd 4th (already lowercased), Persian ۲م */
    if (j + 1 < n && (j + 2 >= n || !is_latin_letter(in[j + 2]))) {
        uint32_t a = in[j], c = in[j + 1];
        if ((a == 's' && c == 't') || (a == 'n' && c == 'd') || (a == 'r' && c == 'd') ||
            (a == 't' && c == 'h')) {
            num->ordinal = 1;
            return j + 2;
        }
    }
    if (j < n && in[j] == 0x0645 && (j + 1 >= n || !is_arabic_letter(in[j + 1]))) {
        num->ordinal = 1;
        return j + 1;
    }
    return j;
}

/* ---- the three passes ---- */

/* Pass 1: decode + map text into buf_[0]; the letters per script pick the language. */
static tandem_status pass_decode(tandem_text_norm *n, const char *text, size_t len, size_t *out_len,
                                 tandem_lang *out_lang) {
    cpb a = {&n->buf_[0], &n->cap_[0], 0, 0};
    if (!cpb_reserve(&a, len + 1)) return tandem_fail(TANDEM_E_NOMEM, "text: out of memory");
    const uint8_t *p = (const uint8_t *)text;
    size_t n_ar = 0, n_lat = 0, n_fa_digits = 0;
    for (size_t i = 0; i < len;) {
        uint32_t c;
        int k;
        if (p[i] < 0x80) {
            c = p[i];
            k = 1;
        } else {
            k = tandem_utf8_decode(p + i, len - i, &c);
            if (k == 0) {
                n->bad_offset = i;
                return tandem_fail(TANDEM_E_INVALID, "invalid UTF-8 at byte %zu", i);
            }
        }
        i += (size_t)k;
        uint32_t m = map_char(c);
        if (m == CH_DROP) continue;
        if (m >= 0xC0 && m <= 0xFF) { /* two-letter Latin-1 folds */
            uint32_t f[2];
            if (fold_latin1(m, f) == 2) {
                if (!cpb_reserve(&a, 2)) break;
                a.buf[0][a.len++] = f[0];
                a.buf[0][a.len++] = f[1];
                n_lat++;
                continue;
            }
        }
        /* a.len <= decoded chars + folds; reserve keeps it simple */
        cpb_push(&a, m);
        if (is_latin_letter(m)) n_lat++;
        else if (is_arabic_letter(m)) n_ar++;
        else if (m >= 0x0660 && digit_value(m) >= 0) n_fa_digits++;
    }
    if (a.oom) return tandem_fail(TANDEM_E_NOMEM, "text: out of memory");
    *out_lang = (n_ar > n_lat || (n_ar == 0 && n_lat == 0 && n_fa_digits > 0))
                    ? TANDEM_LANG_FA : TANDEM_LANG_EN;
    *out_len = a.len;
    return TANDEM_OK;
}

/* Pass 2: buf_[0][0..nin) → buf_[1], numbers and & % as words; separated by spaces so pass 3
 * can tidy up. */
static tandem_status pass_words(tandem_text_norm *n, size_t nin, tandem_lang lang, size_t *out_len) {
    const uint32_t *in = n->buf_[0];
    cpb b = {&n->buf_[1], &n->cap_[1], 0, 0};
    for (size_t i = 0; i < nin && !b.oom;) {
        uint32_t c = in[i];
        int neg = 0;
        if (c == '-' && i + 1 < nin && digit_value(in[i + 1]) >= 0 &&
            (i == 0 || in[i - 1] == ' ' || (is_punct(in[i - 1]) && in[i - 1] != '-'))) {
            neg = 1;
            i++;
            c = in[i];
        }
        if (digit_value(c) >= 0) {
            number num;
            i = parse_number(in, nin, i, &num);
            num.negative = neg;
            tandem_lang nl = num.persian_digits ? TANDEM_LANG_FA : lang;
            cpb_push(&b, ' ');
            emit_number(&b, &num, nl);
            cpb_push(&b, ' ');
            continue;
        }
        if (c == '&' || c == '%') {
            cpb_push(&b, ' ');
            if (c == '&')
                cpb_puts(&b, lang == TANDEM_LANG_FA ? "و" : "and");
            else
                cpb_puts(&b, lang == TANDEM_LANG_FA ? "درصد" : "percent");
            cpb_push(&b, ' ');
            i++;
            continue;
        }
        if (c == AR_DECIMAL_SEP || c == AR_THOUSANDS_SEP) c = ','; /* not inside a number */
        cpb_push(&b, c);
        i++;
    }
    if (b.oom) return tandem_fail(TANDEM_E_NOMEM, "text: out of memory");
    *out_len = b.len;
    return TANDEM_OK;
}

#define IS_WORDCH(x) ((x) != ' ' && !is_punct(x) && (x) != ZWNJ)

/* Pass 3: buf_[1][0..nin) → buf_[0], whitespace, punctuation and ZWNJ tidied. */
static tandem_status pass_tidy(tandem_text_norm *n, size_t nin, size_t *out_len) {
    const uint32_t *in = n->buf_[1];
    cpb o = {&n->buf_[0], &n->cap_[0], 0, 0};
    /* "a,b" → "a, b": at most one inserted space per consumed separator */
    if (!cpb_reserve(&o, 2 * nin + 1)) return tandem_fail(TANDEM_E_NOMEM, "text: out of memory");
    uint32_t *out = n->buf_[0];
    size_t ol = 0;
    int pending_space = 0;
    for (size_t i = 0; i < nin; i++) {
        uint32_t c = in[i];
        if (c == ' ') {
            pending_space = ol > 0;
            continue;
        }
        if (c == '\'' || c == '-') {
            int inside = i > 0 && i + 1 < nin && IS_WORDCH(in[i - 1]) && IS_WORDCH(in[i + 1]);
            if (inside) { /* don't, well-known */
                out[ol++] = c;
                continue;
            }
            if (c == '\'') { /* a quote mark */
                pending_space = ol > 0;
                continue;
            }
            c = ','; /* a free-standing dash is a pause */
        }
        if (is_punct(c)) {
            while (ol > 0 && out[ol - 1] == ZWNJ) ol--;
            if (ol == 0 || is_punct(out[ol - 1])) continue; /* leading or repeated */
            out[ol++] = c;
            pending_space = 1;
            continue;
        }
        if (c == ZWNJ) { /* only between two letters of a word */
            if (ol == 0 || pending_space || !IS_WORDCH(out[ol - 1])) continue;
            if (i + 1 >= nin || !IS_WORDCH(in[i + 1])) continue;
            out[ol++] = c;
            continue;
        }
        if (pending_space && ol > 0) out[ol++] = ' ';
        pending_space = 0;
        out[ol++] = c;
    }
    *out_len = ol;
    return TANDEM_OK;
}

#undef IS_WORDCH

tandem_status tandem_text_normalize(tandem_text_norm *n, const char *text, size_t len) {
    n->out = NULL;
    n->out_len = 0;
    n->lang = TANDEM_LANG_EN;
    n->bad_offset = 0;
    tandem_lang lang = TANDEM_LANG_EN;
    size_t n1 = 0, n2 = 0, n3 = 0;
    TANDEM_TRY(pass_decode(n, text, len, &n1, &lang));
    TANDEM_TRY(pass_words(n, n1, lang, &n2));
    TANDEM_TRY(pass_tidy(n, n2, &n3));
    n->out = n->buf_[0];
    n->out_len = n3;
    n->lang = lang;
    return TANDEM_OK;
}

/* Bytes of n's output as UTF-8 (no NUL). */
static size_t utf8_bytes(const tandem_text_norm *n) {
    char tmp[4];
    size_t k = 0;
    for (size_t i = 0; i < n->out_len; i++) k += (size_t)tandem_utf8_encode(n->out[i], tmp);
    return k;
}

/* n's output as UTF-8 into s (room for utf8_bytes(n) + 1), NUL-terminated. */
static void utf8_write(const tandem_text_norm *n, char *s) {
    size_t k = 0;
    for (size_t i = 0; i < n->out_len; i++) k += (size_t)tandem_utf8_encode(n->out[i], s + k);
    s[k] = 0;
}

tandem_status tandem_text_normalize_utf8(const char *text, size_t len, char **out, tandem_lang *lang) {
    tandem_text_norm n;
    tandem_text_norm_init(&n);
    tandem_status st = tandem_text_normalize(&n, text, len);
    if (st != TANDEM_OK) {
        tandem_text_norm_free(&n);
        return st;
    }
    char *s = tandem_malloc(n.out_len * 4 + 1);
    if (!s) {
        tandem_text_norm_free(&n);
        return tandem_fail(TANDEM_E_NOMEM, "text: out of memory");
    }
    utf8_write(&n, s);
    *out = s;
    if (lang) *lang = n.lang;
    tandem_text_norm_free(&n);
    return TANDEM_OK;
}

tandem_status tandem_text_normalize_into(const char *text, size_t len, char *out, size_t cap,
                                         size_t *needed, tandem_lang *lang) {
    if (needed) *needed = 0;
    if (!text && len > 0) return tandem_fail(TANDEM_E_INVALID, "text normalize: text is NULL");
    if (out && cap > 0) out[0] = 0;
    tandem_text_norm n;
    tandem_text_norm_init(&n);
    tandem_status st = tandem_text_normalize(&n, text ? text : "", len);
    const size_t bytes = st == TANDEM_OK ? utf8_bytes(&n) : 0;
    if (st == TANDEM_OK && needed) *needed = bytes;
    if (st == TANDEM_OK && lang) *lang = n.lang;
    if (st == TANDEM_OK && (!out || cap <= bytes))
        st = tandem_fail(TANDEM_E_INVALID, "text normalize: the result needs %zu bytes and its NUL; "
                         "the buffer holds %zu", bytes, out ? cap : 0);
    if (st == TANDEM_OK) utf8_write(&n, out);
    tandem_text_norm_free(&n);
    return st;
}
