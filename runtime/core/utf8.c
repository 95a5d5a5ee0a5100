/* utf8.c — strict UTF-8 (see utf8.h). */
#include "runtime/core/utf8.h"

int tandem_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    if (n == 0) return 0;
    uint8_t b0 = s[0];
    if (b0 < 0x80) {
        *cp = b0;
        return 1;
    }
    int len;
    uint32_t c, min;
    if (b0 >= 0xC2 && b0 <= 0xDF) { /* C0, C1 would only encode overlongs */
        len = 2; c = b0 & 0x1Fu; min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        len = 3; c = b0 & 0x0Fu; min = 0x800;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        len = 4; c = b0 & 0x07u; min = 0x10000;
    } else {
        return 0; /* continuation byte, C0/C1, F5..FF */
    }
    if ((size_t)len > n) return 0; /* truncated */
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3Fu);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    *cp = c;
    return len;
}

int tandem_utf8_validate(const char *s, size_t n, size_t *bad_offset) {
    const uint8_t *p = (const uint8_t *)s;
    size_t i = 0;
    while (i < n) {
        if (p[i] < 0x80) { /* ASCII fast path */
            i++;
            continue;
        }
        uint32_t cp;
        int k = tandem_utf8_decode(p + i, n - i, &cp);
        if (k == 0) {
            if (bad_offset) *bad_offset = i;
            return 0;
        }
        i += (size_t)k;
    }
    return 1;
}

int tandem_utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp > 0x10FFFF) return 0;
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}
