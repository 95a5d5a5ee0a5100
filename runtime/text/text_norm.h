/* text_norm.h — the text frontend's normaliser (DESIGN.md §6): UTF-8 in, normalised code
 * points + a language tag out. The full rule list is in docs/FORMATS.md ("text frontend").
 *
 * Pipeline: strict UTF-8 decode → character map (case, accents, Persian letter unification,
 * short-vowel marks kept, tatweel/other marks/bidi marks removed, Persian punctuation ، ؛ ؟ mapped to , ; ?, whitespace
 * variants to space) → numbers to words (English or Persian) → cleanup (whitespace collapsed
 * and trimmed, punctuation attached to the preceding word, runs collapsed, ZWNJ kept only
 * between letters). Characters it does not know are passed through so that the symbol table
 * can reject the utterance (nothing is dropped silently).
 *
 * Owns: per-caller scratch buffers (tandem_text_norm); no global state, thread-safe with one
 * tandem_text_norm per thread. */
#ifndef TANDEM_TEXT_NORM_H
#define TANDEM_TEXT_NORM_H

#include <stddef.h>
#include <stdint.h>

#include "tandem.h"

/* Bump when any normalisation rule changes: it is part of the text cache key. */
#define TANDEM_TEXT_FRONTEND_VERSION 2

/* tandem_lang, tandem_lang_name and the public tandem_text_normalize_into: tandem_text.h. */

typedef struct tandem_text_norm {
    const uint32_t *out; /* normalised code points, valid until the next call */
    size_t out_len;
    tandem_lang lang;    /* Arabic-script letters in the majority → fa, else en */
    size_t bad_offset;   /* byte offset of the first invalid UTF-8 sequence (on failure) */
    /* private scratch */
    uint32_t *buf_[2];
    size_t cap_[2];
} tandem_text_norm;

void tandem_text_norm_init(tandem_text_norm *n);
void tandem_text_norm_free(tandem_text_norm *n);

/* Normalise text[0..len). Invalid UTF-8 → TANDEM_E_INVALID (bad_offset set); out of memory →
 * TANDEM_E_NOMEM. */
tandem_status tandem_text_normalize(tandem_text_norm *n, const char *text, size_t len);

/* Convenience: normalise into a new NUL-terminated UTF-8 string (tandem_free it). */
tandem_status tandem_text_normalize_utf8(const char *text, size_t len, char **out, tandem_lang *lang);

#endif
