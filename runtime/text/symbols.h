/* symbols.h — the symbol table: normalised code points ↔ token ids (DESIGN.md §6, §7).
 *
 * Ids: 0 PAD, 1 BOS, 2 EOS, 3 <en>, 4 <fa>, then space, the punctuation . , ? ! ; : ' -,
 * the English letters a-z, the Persian letters and ZWNJ, then a block of IPA symbols (the
 * phonemes of text_input: phonemes, runtime/text/phonemes.h, besides the ASCII letters). The table is fixed at compile time
 * and versioned: a change of ids bumps TANDEM_SYMBOLS_VERSION (part of the text cache key, and
 * saved with checkpoints through tandem_symbols_to_json). Owns: the constant table only. */
#ifndef TANDEM_SYMBOLS_H
#define TANDEM_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "tandem.h"
#include "runtime/text/text_norm.h"

/* TANDEM_SYMBOLS_VERSION, TANDEM_SYMBOLS_FRAMING and tandem_symbols_count: tandem_text.h. */
enum {
    TANDEM_SYM_PAD = 0,
    TANDEM_SYM_BOS = 1,
    TANDEM_SYM_EOS = 2,
    TANDEM_SYM_LANG_EN = 3,
    TANDEM_SYM_LANG_FA = 4,
    TANDEM_SYM_FIRST_CHAR = 5,
};

/* Id of a normalised code point, or -1 if it has none. */
int tandem_symbols_id(uint32_t cp);
/* The code point of a character id, or 0 for the special ids and out-of-range ids. */
uint32_t tandem_symbols_cp(int id);
/* Token id of a language tag. */
int tandem_symbols_lang_id(tandem_lang lang);

/* Encode cps[0..n) as [<lang>, BOS, chars..., EOS] into ids (cap >= n + 3). An unknown code
 * point → TANDEM_E_INVALID with *bad_index = its position in cps and the message naming it. */
tandem_status tandem_symbols_encode(const uint32_t *cps, size_t n, tandem_lang lang, uint16_t *ids,
                                    size_t cap, size_t *count, size_t *bad_index);

/* The table as JSON (new NUL-terminated string, tandem_free it):
 * {"version":1,"pad":0,"bos":1,"eos":2,"langs":{"en":3,"fa":4},"symbols":["<pad>",...]}
 * where symbols[i] is the text of id i (special ids as "<pad>", "<bos>", ...). */
tandem_status tandem_symbols_to_json(char **json, size_t *len);

/* A dataset's speaker table as JSON, as checkpoints store it (key "speakers"): ["name0",...] in
 * speaker-id order; '"' and '\\' escaped (names hold no control characters). New string, tandem_free. */
tandem_status tandem_speakers_to_json(const char *const *names, uint32_t n, char **json);
/* Parses tandem_speakers_to_json's output into *names: a new buffer (tandem_free) of *n
 * NUL-terminated names in id order. Anything else → TANDEM_E_FORMAT naming the byte. */
tandem_status tandem_speakers_from_json(const char *json, char **names, uint32_t *n);

#endif
