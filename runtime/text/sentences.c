/* sentences.c — a long text cut into sentences (tandem_text_split_sentences, tandem_text.h). */
#include <ctype.h>
#include <string.h>

#include "platform/os/log.h"
#include "runtime/core/utf8.h"
#include "tandem.h"

/* 1 when the code point ends a sentence. */
static int sentence_mark(uint32_t cp) {
    return cp == '.' || cp == '!' || cp == '?' || cp == ';' || cp == 0x2026 /* … */ ||
           cp == 0x061F /* ؟ */ || cp == 0x06D4 /* ۔ */;
}

/* Adds text[a..b) trimmed, when it holds a letter or a digit (any non-ASCII counts as one). */
static tandem_status add(const char *text, size_t a, size_t b, tandem_text_span *spans, int cap, int *n) {
    while (a < b && isspace((unsigned char)text[a])) a++;
    while (b > a && isspace((unsigned char)text[b - 1])) b--;
    int word = 0;
    for (size_t i = a; i < b && !word; i++) word = isalnum((unsigned char)text[i]) || (unsigned char)text[i] >= 0x80;
    if (!word) return TANDEM_OK;
    if (*n >= cap)
        return tandem_fail(TANDEM_E_INVALID, "text: more than %d sentences; give the text in parts", cap);
    spans[*n].offset = a;
    spans[*n].length = b - a;
    (*n)++;
    return TANDEM_OK;
}

tandem_status tandem_text_split_sentences(const char *text, size_t len, tandem_text_span *spans,
                                          int cap, int *n) {
    if (!text || !spans || !n || cap < 1)
        return tandem_fail(TANDEM_E_INVALID, "tandem_text_split_sentences: NULL argument or cap < 1");
    *n = 0;
    size_t start = 0, i = 0;
    while (i < len) {
        uint32_t cp = 0;
        int used = tandem_utf8_decode((const uint8_t *)text + i, len - i, &cp);
        if (used <= 0) used = 1, cp = 0xFFFD; /* invalid bytes: the normaliser reports them */
        i += (size_t)used;
        if (!sentence_mark(cp)) continue;
        while (i < len && (text[i] == '.' || text[i] == '!' || text[i] == '?')) i++; /* "?!", "..." */
        if (i < len && !isspace((unsigned char)text[i])) continue; /* "3.5", "e.g.x": inside a word */
        TANDEM_TRY(add(text, start, i, spans, cap, n));
        start = i;
    }
    return add(text, start, len, spans, cap, n);
}
