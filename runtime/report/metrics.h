/* metrics.h — what the training loop writes each logged step to metrics.jsonl: one JSON object
 * per line ({"step":N,"loss":0.5,...}), numbers set by name, NaN/Inf written as null, the line
 * built in a fixed buffer and written with one write() (whole or, after a short write, cut back:
 * never a partial line). (The terminal progress line is the caller's: the
 * trainer hands every step's numbers to its on_step callback, tandem_train.h; `tandem train`
 * draws it in tools/progress.c.)
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

/* On resume: cut path after the last line of a step <= step (the lines a run logged after the
 * checkpoint it resumes from, and a partial last line), so each step appears once once the
 * resumed run logs them again. *dropped = the lines removed. A missing file is fine. Before
 * the pool commit (no allocation, but it reads the whole file). */
tandem_status tandem_metrics_cut_after(const char *path, int64_t step, int64_t *dropped);

/* Start a line: {"step":step */
void tandem_metrics_begin(tandem_metrics *m, int64_t step);
/* Add "name":value (%.9g; NaN and +-Inf as null). name is JSON-escaped. */
void tandem_metrics_set(tandem_metrics *m, const char *name, double value);
/* value as a line holds it (what reading the file back gives): a figure drawn from it during the
 * run is the one `tandem plot` redraws from the file, to the pixel (a loss summed from floats can
 * sit exactly between two floats, where 9 digits and the double round apart). */
double tandem_metrics_as_written(double value);
/* Add an integer field exactly. */
void tandem_metrics_set_int(tandem_metrics *m, const char *name, int64_t value);
/* Close the object and write the line (one write()). A failed or short write is TANDEM_E_IO
 * naming the file and step, the partial bytes removed again. A line that outgrew TANDEM_METRICS_LINE_MAX
 * is not written (TANDEM_E_INVALID naming the field that did not fit); nor is one with a
 * field name given twice. */
tandem_status tandem_metrics_end(tandem_metrics *m);

#endif
