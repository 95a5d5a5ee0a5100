/* run_end.h — how a training run ends when something fails (docs/RELIABILITY.md, "Endings").
 *
 * Auxiliary outputs (a validation, the best checkpoint, a test sentence's WAV) fail as warnings:
 * the run goes on. Any other failure after trained steps first writes a checkpoint of the last
 * completed step, unless the model's state is not known to be that step's (the run ended on
 * non-finite steps, a device error, a failure inside an optimizer update): then the error says
 * why no checkpoint was written. Either way the run's error is what the run returns. */
#ifndef TANDEM_RUNTIME_RUN_RUN_END_H
#define TANDEM_RUNTIME_RUN_RUN_END_H

#include <stdint.h>

#include "runtime/run/validation.h"
#include "tandem.h"

/* An auxiliary output's status: TANDEM_OK with a warning "step <step>: <what> failed: <error>;
 * the run goes on", unless the device failed under it (TANDEM_E_DEVICE, TANDEM_E_INTERNAL:
 * returned as is). */
tandem_status tandem_run_end_aux(tandem_status st, const char *what, int64_t step);

/* A validation's status: as tandem_run_end_aux, and after a failure the held-out pipeline is
 * stopped and no further validation runs (v->failed). */
tandem_status tandem_run_end_validation(tandem_validation *v, tandem_status st, int64_t step);

/* Why the state after the failure st may not be checkpointed (NULL: it may). nonfinite: the run
 * ended on max_nonfinite non-finite steps; updating: the failure came inside an update. */
const char *tandem_run_end_unsaved(tandem_status st, int nonfinite, int updating);

/* After the failure st of a run that trained steps since its last checkpoint: save(user) when the
 * state allows (unsaved NULL), then the run's error again with what became of the checkpoint
 * appended ("; checkpoint of step N written first: PATH" or "; no final checkpoint: why"). */
tandem_status tandem_run_end_failed(tandem_status st, const char *unsaved, int64_t step,
                                    tandem_status (*save)(void *user), void *user,
                                    const char *(*path)(void *user));

#endif
