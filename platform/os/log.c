/* log.c — the log hook (process-wide), the log level, and the per-thread failure message
 * behind tandem_last_error(). Formatting uses fixed-size stack / thread-local buffers, so
 * logging and failing never allocate (they happen after commit, inside the training loop). */
#include "platform/os/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Longest line handed to the hook; longer ones are cut and end in "...". */
#define TANDEM_LOG_LINE_MAX 1024
#define TANDEM_ERROR_MAX 1024

static void default_hook(void *user, tandem_log_level level, const char *msg);

/* The hook and its user pointer change together, so they sit behind one lock; the hook is
 * called outside the lock so that a hook may itself log or change the hook. */
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static tandem_log_fn hook_fn = default_hook;
static void *hook_user = NULL;
static atomic_int log_level = TANDEM_LOG_INFO;

static _Thread_local char last_error[TANDEM_ERROR_MAX];

static const char *level_name(tandem_log_level level) {
    switch (level) {
    case TANDEM_LOG_ERROR: return "error";
    case TANDEM_LOG_WARN: return "warn";
    case TANDEM_LOG_INFO: return "info";
    case TANDEM_LOG_DEBUG: return "debug";
    }
    return "?";
}

static void default_hook(void *user, tandem_log_level level, const char *msg) {
    (void)user;
    /* One fprintf per line: stdio locks the stream, so lines from threads do not interleave. */
    fprintf(stderr, "tandem: %s: %s\n", level_name(level), msg);
}

void tandem_log_set_hook(tandem_log_fn fn, void *user) {
    pthread_mutex_lock(&hook_lock);
    hook_fn = fn ? fn : default_hook;
    hook_user = fn ? user : NULL;
    pthread_mutex_unlock(&hook_lock);
}

void tandem_log_set_level(tandem_log_level level) {
    atomic_store(&log_level, (int)level);
}

/* Format into buf (cap bytes); a cut line ends in "..." so the reader knows. */
static void format_line(char *buf, size_t cap, const char *fmt, va_list ap) {
    int n = vsnprintf(buf, cap, fmt, ap);
    if (n < 0) {
        snprintf(buf, cap, "(unformattable message: %s)", fmt);
    } else if ((size_t)n >= cap && cap > 4) {
        memcpy(buf + cap - 4, "...", 4);
    }
}

static void emit(tandem_log_level level, const char *msg) {
    tandem_log_fn fn;
    void *user;
    pthread_mutex_lock(&hook_lock);
    fn = hook_fn;
    user = hook_user;
    pthread_mutex_unlock(&hook_lock);
    fn(user, level, msg);
}

static int level_enabled(tandem_log_level level) {
    return (int)level <= atomic_load(&log_level);
}

void tandem_logf(tandem_log_level level, const char *fmt, ...) {
    if (!level_enabled(level)) return;
    char line[TANDEM_LOG_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    format_line(line, sizeof line, fmt, ap);
    va_end(ap);
    emit(level, line);
}

tandem_status tandem_fail(tandem_status st, const char *fmt, ...) {
    /* Format into a temporary first: callers add context with tandem_last_error() as an
     * argument, which must not overlap the destination. */
    char msg[TANDEM_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    format_line(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(last_error, msg, strlen(msg) + 1);
    if (level_enabled(TANDEM_LOG_DEBUG))
        tandem_logf(TANDEM_LOG_DEBUG, "%s: %s", tandem_status_name(st), last_error);
    return st;
}

const char *tandem_last_error(void) {
    return last_error;
}

const char *tandem_status_name(tandem_status st) {
    switch (st) {
    case TANDEM_OK: return "TANDEM_OK";
    case TANDEM_E_INVALID: return "TANDEM_E_INVALID";
    case TANDEM_E_NOMEM: return "TANDEM_E_NOMEM";
    case TANDEM_E_IO: return "TANDEM_E_IO";
    case TANDEM_E_FORMAT: return "TANDEM_E_FORMAT";
    case TANDEM_E_NODRIVER: return "TANDEM_E_NODRIVER";
    case TANDEM_E_DEVICE: return "TANDEM_E_DEVICE";
    case TANDEM_E_UNSUPPORTED: return "TANDEM_E_UNSUPPORTED";
    case TANDEM_E_BUDGET: return "TANDEM_E_BUDGET";
    case TANDEM_E_STATE: return "TANDEM_E_STATE";
    case TANDEM_E_INTERNAL: return "TANDEM_E_INTERNAL";
    }
    return "TANDEM_E_UNKNOWN";
}
