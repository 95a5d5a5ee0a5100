/* log.h — the log hook, and the per-thread error message behind tandem_last_error().
 * Owns: the current hook and level (process-wide), the error message (thread-local). */
#ifndef TANDEM_PLATFORM_LOG_H
#define TANDEM_PLATFORM_LOG_H

#include "tandem.h"

#if defined(__GNUC__)
#define TANDEM_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TANDEM_PRINTF(a, b)
#endif

/* Send one line to the hook (printf-style, no trailing newline needed). */
void tandem_logf(tandem_log_level level, const char *fmt, ...) TANDEM_PRINTF(2, 3);

/* Record a failure for tandem_last_error() on this thread and return st, so that
 * `return tandem_fail(TANDEM_E_IO, "open %s: %s", path, strerror(errno));` reads naturally. */
tandem_status tandem_fail(tandem_status st, const char *fmt, ...) TANDEM_PRINTF(2, 3);

/* Propagate: if the expression fails, return its status (message already set). */
#define TANDEM_TRY(expr)                                                                  \
    do {                                                                                  \
        tandem_status tandem_try_st_ = (expr);                                            \
        if (tandem_try_st_ != TANDEM_OK) return tandem_try_st_;                           \
    } while (0)

#endif
