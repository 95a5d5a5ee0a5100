/* strbuf.h — appending formatted text to a caller's fixed buffer (reports, config dumps).
 * Never allocates; len counts what the text needs even past cap, so callers can report the
 * size they would have needed, and the buffer stays NUL-terminated whenever cap > 0. */
#ifndef TANDEM_PLATFORM_STRBUF_H
#define TANDEM_PLATFORM_STRBUF_H

#include <stddef.h>

#include "platform/os/log.h" /* TANDEM_PRINTF */

typedef struct tandem_strbuf {
    char *buf;
    size_t cap, len;
} tandem_strbuf;

void tandem_strbuf_printf(tandem_strbuf *o, const char *fmt, ...) TANDEM_PRINTF(2, 3);

#endif
