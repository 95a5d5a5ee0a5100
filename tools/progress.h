/* progress.h — the live progress line of `tandem train`, drawn from the trainer's per-step
 * callback (tandem_step_metrics, tandem_train.h): on a terminal one carriage-return line
 * rewritten in place (step/total, loss, samples/s, x real time, data wait, busy % per device, ETA,
 * verdict);
 * otherwise a plain line every N steps and at the last step. One thread (the training loop's). */
#ifndef TANDEM_TOOLS_PROGRESS_H
#define TANDEM_TOOLS_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

#include "tandem.h"

typedef struct cli_progress {
    FILE *out;
    int tty;          /* rewrite one line with '\r' */
    int plain_every;  /* non-TTY: one line every N steps (and at the last step) */
    int open_line;    /* a '\r' line is on screen */
    int write_errno;  /* the first failed write's errno (EPIPE: the reader went away), else 0 */
} cli_progress;

/* isatty(fileno(out)) picks the mode; force_plain = 1 always uses plain lines. */
void cli_progress_init(cli_progress *p, FILE *out, int plain_every, int force_plain);
/* "step 120/2000  loss 0.8123  41.2 samples/s  12.5x RT  wait 0.3 ms  model 97 % · data 64 %  ETA
 * 3m12s  [device-bound]" into buf (NUL-terminated, truncated to cap): each device named by its
 * role, "(GPU 95 %)" after it when NVML reports its utilisation, the live verdict in brackets.
 * Returns the length written. */
size_t cli_progress_format(const tandem_step_metrics *m, char *buf, size_t cap);
/* "verdict: input-bound over 40 steps: <why>" and "recommendation: <advice>" lines. */
void cli_print_verdict(FILE *f, const tandem_verdict *v);
/* Show a step: on a TTY rewrite the line; otherwise print a line when the step is a multiple of
 * plain_every or the last one. */
void cli_progress_update(cli_progress *p, const tandem_step_metrics *m);
/* A tandem_step_fn: user is a cli_progress. */
void cli_progress_on_step(void *user, const tandem_step_metrics *m);
/* Print a message on its own line without garbling the progress line. */
void cli_progress_message(cli_progress *p, const char *msg);
/* End the TTY line with a newline (no-op otherwise). */
void cli_progress_finish(cli_progress *p);

#endif
