/* verdict.h — the window of recent steps' figures the trainer keeps for its verdict
 * (tandem_verdict, tandem_train.h; the rules: docs/TRAINING.md "Verdicts"). No allocation; one
 * thread (the training loop's). */
#ifndef TANDEM_RUNTIME_RUN_VERDICT_H
#define TANDEM_RUNTIME_RUN_VERDICT_H

#include <stdint.h>

#include "tandem.h"

typedef struct tandem_verdict_window {
    double step[TANDEM_VERDICT_WINDOW], wait[TANDEM_VERDICT_WINDOW], wait_dev[TANDEM_VERDICT_WINDOW];
    double busy[TANDEM_VERDICT_WINDOW], occupied[TANDEM_VERDICT_WINDOW];
    int64_t n; /* pushed; the arrays are rings */
} tandem_verdict_window;

void tandem_verdict_window_push(tandem_verdict_window *w, const tandem_step_metrics *m);
void tandem_verdict_window_compute(const tandem_verdict_window *w, const tandem_verdict_context *ctx,
                                   tandem_verdict *out);

#endif
