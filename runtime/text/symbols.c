/* symbols.c — the fixed, versioned symbol table (see symbols.h). */
#include "runtime/text/symbols.h"

#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/core/utf8.h"

/* Character ids in order from TANDEM_SYM_FIRST_CHAR. Appending keeps old ids; any other change
 * must bump TANDEM_SYMBOLS_VERSION. */
static const uint32_t chars[] = {
    ' ', '.', ',', '?', '!', ';', ':', '\'', '-',
    'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'q', 'r',
    's', 't', 'u', 'v', 'w', 'x', 'y', 'z',
    0x0627, /* ا */ 0x0622, /* آ */ 0x0621, /* ء */ 0x0626, /* ئ */ 0x0628, /* ب */
    0x067E, /* پ */ 0x062A, /* ت */ 0x062B, /* ث */ 0x062C, /* ج */ 0x0686, /* چ */
    0x062D, /* ح */ 0x062E, /* خ */ 0x062F, /* د */ 0x0630, /* ذ */ 0x0631, /* ر */
    0x0632, /* ز */ 0x0698, /* ژ */ 0x0633, /* س */ 0x0634, /* ش */ 0x0635, /* ص */
    0x0636, /* ض */ 0x0637, /* ط */ 0x0638, /* ظ */ 0x0639, /* ع */ 0x063A, /* غ */
    0x0641, /* ف */ 0x0642, /* ق */ 0x06A9, /* ک */ 0x06AF, /* گ */ 0x0644, /* ل */
    0x0645, /* م */ 0x0646, /* ن */ 0x0648, /* و */ 0x0647, /* ه */ 0x06CC, /* ی */
    0x200C, /* ZWNJ */
    /* IPA (text_input: phonemes; espeak-ng's output besides the ASCII letters above), sorted */
    0x00E6, 0x00E7, 0x00F0, 0x00F8, 0x0127, 0x014B, 0x0153, 0x0250,
    0x0251, 0x0252, 0x0253, 0x0254, 0x0255, 0x0256, 0x0257, 0x0258,
    0x0259, 0x025A, 0x025B, 0x025C, 0x025D, 0x025E, 0x025F, 0x0260,
    0x0261, 0x0262, 0x0263, 0x0264, 0x0265, 0x0266, 0x0267, 0x0268,
    0x026A, 0x026B, 0x026C, 0x026D, 0x026E, 0x026F, 0x0270, 0x0271,
    0x0272, 0x0273, 0x0274, 0x0275, 0x0276, 0x0278, 0x0279, 0x027A,
    0x027B, 0x027D, 0x027E, 0x0280, 0x0281, 0x0282, 0x0283, 0x0288,
    0x0289, 0x028A, 0x028B, 0x028C, 0x028D, 0x028E, 0x028F, 0x0290,
    0x0291, 0x0292, 0x0294, 0x0295, 0x0299, 0x029C, 0x029D, 0x029F,
    0x02B0, 0x02B2, 0x02B7, 0x02C8, 0x02CC, 0x02D0, 0x02D1, 0x02DE,
    0x02E0, 0x02E4, 0x0303, 0x0329, 0x032A, 0x03B2, 0x03B8, 0x03C7,
    0x1D7B, 0x1D7F, 0x203F, 0x207F,
    /* Persian short-vowel marks: tanvin -an -un -in, fatha, damma, kasra, shadda, sukun */
    0x064B, 0x064C, 0x064D, 0x064E, 0x064F, 0x0650, 0x0651, 0x0652,
};
#define ZWNJ_JSON_CP 0x200Cu /* invisible: written escaped */
#define NCHARS (int)(sizeof chars / sizeof chars[0])
#define ZWNJ_ID 75   /* the last of the character ids before the IPA block */
#define IPA_FIRST 76 /* ids of the sorted IPA block: IPA_FIRST .. IPA_LAST */
#define IPA_LAST 167
#define MARKS_FIRST 168 /* U+064B..U+0652, in order (the Arabic block's direct table) */
static const char *const special[TANDEM_SYM_FIRST_CHAR] = {"<pad>", "<bos>", "<eos>", "<en>", "<fa>"};

int tandem_symbols_count(void) { return TANDEM_SYM_FIRST_CHAR + NCHARS; }

int tandem_symbols_id(uint32_t cp) {
    /* Direct tables for the hot ranges (ASCII, the Arabic block); must agree with chars[]
     * (test_text checks every id round-trips). */
    static const int8_t ascii[128] = {
        [' '] = 5, ['.'] = 6, [','] = 7, ['?'] = 8, ['!'] = 9, [';'] = 10, [':'] = 11,
        ['\''] = 12, ['-'] = 13,
        ['a'] = 14, ['b'] = 15, ['c'] = 16, ['d'] = 17, ['e'] = 18, ['f'] = 19, ['g'] = 20,
        ['h'] = 21, ['i'] = 22, ['j'] = 23, ['k'] = 24, ['l'] = 25, ['m'] = 26, ['n'] = 27,
        ['o'] = 28, ['p'] = 29, ['q'] = 30, ['r'] = 31, ['s'] = 32, ['t'] = 33, ['u'] = 34,
        ['v'] = 35, ['w'] = 36, ['x'] = 37, ['y'] = 38, ['z'] = 39,
    };
    static const uint8_t arabic[256] = { /* U+0600 + index */
        [0x27] = 40, [0x22] = 41, [0x21] = 42, [0x26] = 43, [0x28] = 44, [0x7E] = 45, [0x2A] = 46,
        [0x2B] = 47, [0x2C] = 48, [0x86] = 49, [0x2D] = 50, [0x2E] = 51, [0x2F] = 52, [0x31] = 54,
        [0x32] = 55, [0x98] = 56, [0x33] = 57, [0x34] = 58, [0x35] = 59, [0x36] = 60, [0x37] = 61,
        [0x38] = 62, [0x39] = 63, [0x3A] = 64, [0x41] = 65, [0x42] = 66, [0xA9] = 67, [0xAF] = 68,
        [0x44] = 69, [0x45] = 70, [0x46] = 71, [0x48] = 72, [0xCC] = 74, [0x30] = 53, [0x47] = 73,
        [0x4B] = MARKS_FIRST, [0x4C] = MARKS_FIRST + 1, [0x4D] = MARKS_FIRST + 2, [0x4E] = MARKS_FIRST + 3,
        [0x4F] = MARKS_FIRST + 4, [0x50] = MARKS_FIRST + 5, [0x51] = MARKS_FIRST + 6, [0x52] = MARKS_FIRST + 7,
    };
    if (cp < 128) return ascii[cp] ? ascii[cp] : -1;
    if (cp >= 0x0600 && cp <= 0x06FF) return arabic[cp - 0x0600] ? arabic[cp - 0x0600] : -1;
    if (cp == 0x200C) return ZWNJ_ID;
    int lo = IPA_FIRST, hi = IPA_LAST; /* binary search of the IPA block */
    while (lo <= hi) {
        const int mid = (lo + hi) / 2;
        const uint32_t c = chars[mid - TANDEM_SYM_FIRST_CHAR];
        if (c == cp) return mid;
        if (c < cp) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

uint32_t tandem_symbols_cp(int id) {
    if (id < TANDEM_SYM_FIRST_CHAR || id >= TANDEM_SYM_FIRST_CHAR + NCHARS) return 0;
    return chars[id - TANDEM_SYM_FIRST_CHAR];
}

int tandem_symbols_lang_id(tandem_lang lang) {
    return lang == TANDEM_LANG_FA ? TANDEM_SYM_LANG_FA : TANDEM_SYM_LANG_EN;
}

tandem_status tandem_symbols_encode(const uint32_t *cps, size_t n, tandem_lang lang, uint16_t *ids,
                                    size_t cap, size_t *count, size_t *bad_index) {
    if (cap < n + TANDEM_SYMBOLS_FRAMING)
        return tandem_fail(TANDEM_E_INVALID, "symbols: output holds %zu ids, %zu needed", cap,
                           n + TANDEM_SYMBOLS_FRAMING);
    ids[0] = (uint16_t)tandem_symbols_lang_id(lang);
    ids[1] = TANDEM_SYM_BOS;
    for (size_t i = 0; i < n; i++) {
        int id = tandem_symbols_id(cps[i]);
        if (id < 0) {
            if (bad_index) *bad_index = i;
            char u[5] = {0};
            if (!tandem_utf8_encode(cps[i], u)) u[0] = '?';
            return tandem_fail(TANDEM_E_INVALID, "character '%s' (U+%04X) is not in the symbol table", u,
                               (unsigned)cps[i]);
        }
        ids[i + 2] = (uint16_t)id;
    }
    ids[n + 2] = TANDEM_SYM_EOS;
    *count = n + TANDEM_SYMBOLS_FRAMING;
    return TANDEM_OK;
}

tandem_status tandem_symbols_to_json(char **json, size_t *len) {
    size_t cap = 256 + (size_t)tandem_symbols_count() * 16;
    char *s = tandem_malloc(cap);
    if (!s) return tandem_fail(TANDEM_E_NOMEM, "symbols: out of memory");
    int k = snprintf(s, cap,
                     "{\"version\":%d,\"pad\":%d,\"bos\":%d,\"eos\":%d,\"langs\":{\"en\":%d,\"fa\":%d},"
                     "\"symbols\":[",
                     TANDEM_SYMBOLS_VERSION, TANDEM_SYM_PAD, TANDEM_SYM_BOS, TANDEM_SYM_EOS,
                     TANDEM_SYM_LANG_EN, TANDEM_SYM_LANG_FA);
    size_t o = (size_t)k;
    for (int id = 0; id < tandem_symbols_count(); id++) {
        if (id) s[o++] = ',';
        if (id < TANDEM_SYM_FIRST_CHAR) {
            o += (size_t)snprintf(s + o, cap - o, "\"%s\"", special[id]);
            continue;
        }
        uint32_t cp = chars[id - TANDEM_SYM_FIRST_CHAR];
        if (cp == '"' || cp == '\\')
            o += (size_t)snprintf(s + o, cap - o, "\"\\%c\"", (char)cp);
        else if (cp < 0x20 || cp == ZWNJ_JSON_CP)
            o += (size_t)snprintf(s + o, cap - o, "\"\\u%04x\"", (unsigned)cp);
        else {
            s[o++] = '"';
            o += (size_t)tandem_utf8_encode(cp, s + o);
            s[o++] = '"';
        }
    }
    o += (size_t)snprintf(s + o, cap - o, "]}");
    *json = s;
    if (len) *len = o;
    return TANDEM_OK;
}

tandem_status tandem_speakers_to_json(const char *const *names, uint32_t n, char **json) {
    size_t cap = 3;
    for (uint32_t k = 0; k < n; k++) cap += 2 * strlen(names[k]) + 3;
    char *s = tandem_malloc(cap), *o = s;
    if (!s) return tandem_fail(TANDEM_E_NOMEM, "speakers: out of memory");
    *o++ = '[';
    for (uint32_t k = 0; k < n; k++) {
        if (k) *o++ = ',';
        *o++ = '"';
        for (const char *p = names[k]; *p; p++) {
            if (*p == '"' || *p == '\\') *o++ = '\\';
            *o++ = *p;
        }
        *o++ = '"';
    }
    *o++ = ']';
    *o = 0;
    *json = s;
    return TANDEM_OK;
}

tandem_status tandem_speakers_from_json(const char *json, char **names, uint32_t *n) {
    *names = NULL;
    *n = 0;
    size_t len = strlen(json);
    char *b = tandem_malloc(len + 1), *o = b;
    if (!b) return tandem_fail(TANDEM_E_NOMEM, "speakers: out of memory");
    const char *p = json;
    uint32_t count = 0;
    if (*p++ != '[') goto bad;
    while (*p == '"') {
        for (p++; *p && *p != '"'; p++) {
            if (*p == '\\' && (p[1] == '"' || p[1] == '\\')) p++;
            else if (*p == '\\' || (unsigned char)*p < 0x20) goto bad;
            *o++ = *p;
        }
        if (*p++ != '"' || o == b || o[-1] == 0) goto bad; /* unterminated or empty name */
        *o++ = 0;
        count++;
        if (*p == ',' && p[1] == '"') p++;
    }
    if (*p != ']' || p[1] != 0) goto bad;
    *names = b;
    *n = count;
    return TANDEM_OK;
bad:
    tandem_free(b);
    return tandem_fail(TANDEM_E_FORMAT, "speakers: malformed speaker table at byte %zu of '%.60s'; expected "
                       "[\"name\",...] as tandem train writes it", (size_t)(p - json), json);
}
