/* utf8.h — strict UTF-8 decoding and encoding (RFC 3629).
 * Owns nothing; pure functions. Overlong forms, surrogates (U+D800..DFFF), code points above
 * U+10FFFF, stray continuation bytes and truncated sequences are all invalid. */
#ifndef TANDEM_UTF8_H
#define TANDEM_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decode the code point starting at s[0] (n bytes available). Returns the number of bytes
 * used (1..4) and sets *cp, or 0 when the bytes at s are not a valid UTF-8 sequence. */
int tandem_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);

/* 1 if s[0..n) is entirely valid UTF-8; otherwise 0 and *bad_offset = byte offset of the first
 * byte of the first invalid sequence. */
int tandem_utf8_validate(const char *s, size_t n, size_t *bad_offset);

/* Encode cp into out (up to 4 bytes). Returns the byte count, or 0 for a surrogate or a value
 * above U+10FFFF. */
int tandem_utf8_encode(uint32_t cp, char out[4]);

#endif
