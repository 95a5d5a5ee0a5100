/* corpus_text.h — the demo corpus's sentence generator (the project's own word lists and
 * templates). English and Persian sentences with numbers, dates, ordinals, decimals, negative
 * numbers and punctuation so that every rule of the text frontend is exercised; Persian ones
 * use Persian or ASCII digits and sometimes Arabic letter variants (ي ك) that the frontend
 * must unify. Deterministic: the same (seed, index, lang) always gives the same sentence. */
#ifndef TANDEM_TOOLS_CORPUS_TEXT_H
#define TANDEM_TOOLS_CORPUS_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "tandem.h" /* tandem_lang */

/* Longest sentence the generator writes, in bytes, NUL included. */
#define CORPUS_TEXT_MAX 512

/* Sentence number `index` of a corpus with `seed`, in `lang`, into out (UTF-8, never holds
 * '|' or a line break). */
void corpus_text_sentence(uint64_t seed, uint64_t index, tandem_lang lang, char out[CORPUS_TEXT_MAX]);

#endif
