/* plan.h — the memory plan of a training run without a device, as numbers (the text is the
 * public tandem_plan_report, tandem_train.h). Allocates while planning, frees before returning. */
#ifndef TANDEM_RUNTIME_RUN_PLAN_H
#define TANDEM_RUNTIME_RUN_PLAN_H

#include <stddef.h>

#include "runtime/core/config.h"
#include "tandem.h"

/* bytes[0] = the data arena, bytes[1] = the model arena (ring + model) that a run of cfg commits
 * on backend's alignment (HOST, else CUDA). TANDEM_E_BUDGET (bytes still set) when an arena
 * exceeds data_gpu_memory / model_gpu_memory; other failures leave bytes 0. */
tandem_status tandem_plan_arena_bytes(const tandem_config *cfg, tandem_backend backend, size_t bytes[2]);

#endif
