/* phonemes.h — the model's input sequence for a normalised text: its characters, or its
 * phonemes (IPA from espeak-ng in the language's voice: en-us, fa) when the config says
 * text_input: phonemes (docs/TRAINING.md, "Text input").
 *
 * Phonemes are code points of the symbol table's IPA block and ASCII letters, clauses joined
 * by the punctuation that ended them; IPA symbols outside the table are dropped and counted.
 * Owns: per-caller scratch (tandem_phonemes); one per thread. espeak-ng itself is one
 * process-wide instance whose calls are serialised (platform/os/espeak.h). */
#ifndef TANDEM_TEXT_PHONEMES_H
#define TANDEM_TEXT_PHONEMES_H

#include <stddef.h>
#include <stdint.h>

#include "tandem.h"

typedef enum tandem_text_input {
    TANDEM_TEXT_INPUT_CHARS = 0,    /* the normalised characters */
    TANDEM_TEXT_INPUT_PHONEMES = 1, /* espeak-ng's IPA of the normalised text */
} tandem_text_input;

/* "chars" / "phonemes". */
const char *tandem_text_input_name(tandem_text_input t);

typedef struct tandem_phonemes {
    char *utf8;    /* the normalised text as UTF-8 */
    char *ipa;     /* espeak-ng's output */
    uint32_t *cps; /* the result */
    size_t cap;    /* code points each buffer holds */
    size_t dropped; /* IPA code points of the last call the symbol table lacks */
} tandem_phonemes;

void tandem_phonemes_init(tandem_phonemes *p);
void tandem_phonemes_free(tandem_phonemes *p);

/* cps[0..n) (normalised, language lang) → *out[0..*out_n) per input: CHARS returns cps itself;
 * PHONEMES the phonemes in p's scratch (valid until the next call). espeak-ng missing →
 * TANDEM_E_UNSUPPORTED naming the library and the fix. */
tandem_status tandem_phonemes_of(tandem_phonemes *p, tandem_text_input input, const uint32_t *cps,
                                 size_t n, tandem_lang lang, const uint32_t **out, size_t *out_n);

/* Bump when the phoneme rules change (which marks are kept, how clauses are cut): it is part
 * of the text cache key through tandem_phonemes_backend. */
#define TANDEM_PHONEMES_VERSION 1

/* An identifier of the phonemizer for cache keys into buf[cap]: "chars", or "espeak-ng
 * <version>, rules <TANDEM_PHONEMES_VERSION>" (loads espeak-ng; "" when it cannot be loaded).
 * Returns buf; thread-safe (the caller's buffer). */
const char *tandem_phonemes_backend(tandem_text_input input, char *buf, size_t cap);

#endif
