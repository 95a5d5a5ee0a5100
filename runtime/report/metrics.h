/* metrics.h — what the training loop reports each logged step:
 *   * metrics.jsonl: one JSON object per line ({"step":N,"loss":0.5,...}), numbers set by name,
 *     NaN/Inf written as null, the line built in a fixed buffer and flushed per line;
 *   * the terminal line: on a TTY one carriage-return line rewritten in place (step/total, loss,
 *     samples/s, x real time, data wait, busy %, ETA); otherwise a plain line every N steps.
 * Owns: the open metrics file and its line buffer (both made at open, before the pool commit;
 * nothing allocated afterwards). Not thread-safe: one writer thread. */
#ifndef TANDEM_RUNTIME_METRICS_H
#define TANDEM_RUNTIME_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "tandem.h"

#define TANDEM_METRICS_LINE_MAX 4096

typedef struct tandem_metrics tandem_metrics;

/* Open path for appending (append = 1, e.g. on resume) or truncate it (append = 0). */
tandem_status tandem_metrics_open(const char *path, int append, tandem_metrics **out);
void tandem_metrics_close(tandem_metrics *m);

/* Start a line: {"step":step */
void tandem_metrics_begin(tandem_metrics *m, int64_t step);
/* Add "name":value (%.9g; NaN and +-Inf as null). name is JSON-escaped. */
void tandem_metrics_set(tandem_metrics *m, const char *name, double value);
/* Add an integer field exactly. */
void tandem_metrics_set_int(tandem_metrics *m, const char *name, int64_t value);
/* Close the object, write the line and fflush. A line that outgrew TANDEM_METRICS_LINE_MAX
 * is not written (TANDEM_E_INVALID naming the field that did not fit); nor is one with a
 * field name given twice. */
tandem_status tandem_metrics_end(tandem_metrics *m);

/* ---- terminal progress ---- */

typedef struct tandem_progress_fields {
    int64_t step, total;
    double loss;
    double samples_per_s;
    double x_realtime;     /* seconds of audio trained per wall second */
    double data_wait_ms;   /* per step */
    double model_busy_pct, data_busy_pct;
    double eta_s;          /* < 0: unknown */
} tandem_progress_fields;

typedef struct tandem_progress {
    FILE *out;
    int tty;          /* rewrite one line with '\r' */
    int plain_every;  /* non-TTY: one line every N steps (and at the last step) */
    int open_line;    /* a '\r' line is on screen */
} tandem_progress;

/* isatty(fileno(out)) picks the mode; force_plain = 1 always uses plain lines. */
void tandem_progress_init(tandem_progress *p, FILE *out, int plain_every, int force_plain);
/* "step 120/2000  loss 0.8123  41.2 samples/s  12.5x RT  wait 0.3 ms  busy 97/64%  ETA 3m12s"
 * into buf (NUL-terminated, truncated to cap). Returns the length written. */
size_t tandem_progress_format(const tandem_progress_fields *v, char *buf, size_t cap);
/* Show the fields: on a TTY rewrite the line; otherwise print a line when step is a multiple
 * of plain_every or the last step. */
void tandem_progress_update(tandem_progress *p, const tandem_progress_fields *v);
/* Print a message on its own line without garbling the progress line. */
void tandem_progress_message(tandem_progress *p, const char *msg);
/* End the TTY line with a newline (no-op otherwise). */
void tandem_progress_finish(tandem_progress *p);

#endif
