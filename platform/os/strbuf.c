/* strbuf.c — see strbuf.h. */
#include "platform/os/strbuf.h"

#include <stdarg.h>
#include <stdio.h>

void tandem_strbuf_printf(tandem_strbuf *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) o->len += (size_t)n;
}
