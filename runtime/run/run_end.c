/* run_end.c — a run's endings after failures (see run_end.h). */
#include "runtime/run/run_end.h"

#include <inttypes.h>
#include <stdio.h>

#include "platform/os/log.h"

/* A device or invariant failure: the model's state is unknown. */
static int fatal(tandem_status st) { return st == TANDEM_E_DEVICE || st == TANDEM_E_INTERNAL; }

tandem_status tandem_run_end_aux(tandem_status st, const char *what, int64_t step) {
    if (st == TANDEM_OK || fatal(st)) return st;
    tandem_logf(TANDEM_LOG_WARN, "step %" PRId64 ": %s failed: %s; the run goes on", step, what, tandem_last_error());
    return TANDEM_OK;
}

tandem_status tandem_run_end_validation(tandem_validation *v, tandem_status st, int64_t step) {
    if (st == TANDEM_OK || fatal(st)) return st;
    char why[1024];
    snprintf(why, sizeof why, "%s", tandem_last_error());
    tandem_logf(TANDEM_LOG_WARN, "step %" PRId64 ": validation failed: %s; no further validation in this run "
                "(training goes on; a resume validates again)", step, why);
    tandem_validation_stop(v, st, why);
    v->failed = 1;
    return TANDEM_OK;
}

const char *tandem_run_end_unsaved(tandem_status st, int nonfinite, int updating) {
    if (nonfinite) return "the run ended on non-finite steps; the newest checkpoint holds the last finite state";
    if (fatal(st)) return "after a device error the model's state on the device is unknown";
    if (updating) return "the failure came inside an optimizer update, which may be half applied";
    return NULL;
}

tandem_status tandem_run_end_failed(tandem_status st, const char *unsaved, int64_t step,
                                    tandem_status (*save)(void *user), void *user,
                                    const char *(*path)(void *user)) {
    char why[1024];
    snprintf(why, sizeof why, "%s", tandem_last_error());
    if (unsaved) return tandem_fail(st, "%s; no final checkpoint: %s", why, unsaved);
    if (save(user) != TANDEM_OK)
        return tandem_fail(st, "%s; no final checkpoint: writing the checkpoint of step %" PRId64 " failed too: %s",
                           why, step, tandem_last_error());
    tandem_logf(TANDEM_LOG_WARN, "the run failed at step %" PRId64 "; checkpoint of that step written first: %s",
                step, path(user));
    return tandem_fail(st, "%s; checkpoint of step %" PRId64 " written first: %s (--resume continues from it)", why,
                       step, path(user));
}
