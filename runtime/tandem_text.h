/* tandem_text.h — the text frontend as the public API sees it (part of tandem.h): normalise a
 * UTF-8 string the way training and synthesis do (numbers to words, letter unification,
 * punctuation; the rules are in docs/FORMATS.md, "text frontend"), the language tags, and the
 * size of the symbol table the model's embedding rows are indexed by.
 *
 * Owns nothing global; every function may be called from any thread at any time. Only
 * tandem_text_normalize_into allocates (scratch for the code points, freed before it returns).
 */
/* tandem.h first, outside the guard: whichever public header is included first, tandem.h's
 * base types and then every sub-header come in dependency order. */
#include "tandem.h"

#ifndef TANDEM_TEXT_H
#define TANDEM_TEXT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A language tag: the first token of every encoded utterance. */
typedef enum tandem_lang {
    TANDEM_LANG_AUTO = -1, /* where accepted: the frontend's detection (Arabic-script letters in
                              the majority → fa, else en) */
    TANDEM_LANG_EN = 0,
    TANDEM_LANG_FA = 1,
    TANDEM_LANG_COUNT
} tandem_lang;

/* "en" / "fa" (anything else reads "en"). Never NULL; a constant string. */
const char *tandem_lang_name(tandem_lang lang);

/* Version of the symbol table (ids ↔ characters). Checkpoints and text caches record it; a
 * change of ids bumps it. */
#define TANDEM_SYMBOLS_VERSION 2
/* Tokens an encoded utterance adds around its characters: <lang>, BOS ... EOS. A normalised
 * text of n code points is n + TANDEM_SYMBOLS_FRAMING tokens, which must fit the model's
 * max_text. */
#define TANDEM_SYMBOLS_FRAMING 3

/* Number of token ids (the rows of the model's embedding table). */
int tandem_symbols_count(void);

/* Normalise text[0..len) (UTF-8) into out as a NUL-terminated UTF-8 string of at most cap bytes
 * (NUL included). *needed (may be NULL) receives the bytes the result takes without its NUL,
 * also when out is too small; *lang (may be NULL) the detected language.
 * Errors: invalid UTF-8 → TANDEM_E_INVALID naming the byte offset; out NULL or cap <= *needed
 * → TANDEM_E_INVALID saying how many bytes are needed (out is left as "" when cap > 0), so a
 * caller may call once to learn the size; out of memory → TANDEM_E_NOMEM. */
tandem_status tandem_text_normalize_into(const char *text, size_t len, char *out, size_t cap,
                                         size_t *needed, tandem_lang *lang);

/* A sentence of a longer text: text[offset .. offset + length), white space trimmed. */
typedef struct tandem_text_span {
    size_t offset, length;
} tandem_text_span;

/* Cut text[0..len) (UTF-8) into sentences, so that a text longer than a model's max_text is
 * synthesized sentence by sentence: a sentence ends after . ! ? ; … or the Persian ؟ ۔ when
 * white space or the end follows (so "3.5" and "e.g." inside a word stay whole); the marks stay
 * with their sentence; pieces with no letter or digit are dropped. *n receives the count
 * (0 for a blank text). More than cap sentences → TANDEM_E_INVALID naming cap (spans hold the
 * first cap). Allocates nothing. */
tandem_status tandem_text_split_sentences(const char *text, size_t len, tandem_text_span *spans,
                                          int cap, int *n);

#ifdef __cplusplus
}
#endif
#endif /* TANDEM_TEXT_H */
