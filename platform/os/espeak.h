/* espeak.h — espeak-ng's phonemizer (text → IPA), loaded at run time with
 * dlopen("libespeak-ng.so.1") as the CUDA driver is, so that neither libtandem.a nor a program
 * linking it needs espeak-ng unless it asks for phonemes (docs/TRAINING.md, "Text input").
 *
 * Owns: the process-wide library handle (loaded on first use, never unloaded). espeak-ng keeps
 * global state (the selected voice, its translator), so every call is serialised behind one
 * mutex: safe from any thread, one at a time. Allocates nothing of its own per call. */
#ifndef TANDEM_PLATFORM_ESPEAK_H
#define TANDEM_PLATFORM_ESPEAK_H

#include <stddef.h>

#include "tandem.h"

/* Load and initialise once. TANDEM_E_UNSUPPORTED when the library cannot be loaded or
 * initialised, naming what failed and the Debian package that provides it. */
tandem_status tandem_espeak_load(void);

/* espeak-ng's version string after a successful load ("" before). */
const char *tandem_espeak_version(void);

/* text (UTF-8, NUL-terminated; written to during the call and restored) in voice (an
 * espeak-ng voice name: "en-us", "fa") → IPA phonemes (UTF-8) into out[cap], NUL-terminated,
 * *len bytes without the NUL. Each of . , ? ! ; : in the text is kept after the phonemes of
 * the text before it (and a space before the next).
 * Too small an out → TANDEM_E_INVALID naming the sizes. */
tandem_status tandem_espeak_ipa(const char *voice, char *text, char *out, size_t cap,
                                size_t *len);

#endif
