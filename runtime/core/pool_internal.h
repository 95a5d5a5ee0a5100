/* pool_internal.h — what the runtime and the tools see of the tensor pool beyond tandem.h.
 *
 * Planning-only pools: `tandem plan` must print every arena's plan without opening a device
 * (there may be none on the machine that checks a config). A planning-only pool knows only
 * the target backend — which fixes the alignment (256 B on devices, 64 B on the host) — and
 * the budget. Declare, plan, report and stats work as on a real pool; commit returns
 * TANDEM_E_STATE, and its tensors never get an address.
 */
#ifndef TANDEM_RUNTIME_POOL_INTERNAL_H
#define TANDEM_RUNTIME_POOL_INTERNAL_H

#include <stddef.h>

#include "tandem.h"

/* Alignment of every tensor in an arena on this backend (AUTO is planned as a device). */
size_t tandem_pool_backend_alignment(tandem_backend backend);

/* A pool for planning only; see above. budget_bytes = 0: unlimited. */
tandem_status tandem_pool_create_offline(const char *name, tandem_backend backend,
                                         size_t budget_bytes, tandem_pool **out);

/* The device the tensor's pool lives on (NULL for a planning-only pool). */
tandem_device *tandem_tensor_device(const tandem_tensor *t);

/* Report text shared by the pool and the pinned staging plan (runtime/core/staging.h); both
 * write into buf and return it. */
const char *tandem_shape_text(int ndim, const int64_t *shape, char *buf, size_t cap); /* "[8, 512, 80]" */
const char *tandem_bytes_text(size_t bytes, char *buf, size_t cap);                  /* "1.25 MiB", "32 B" */

#endif
