/* roles.h — which devices take the data and the model role (DESIGN.md §3), for the trainer and
 * the data-side run alike.
 *
 * Automatic (both ordinals -1, or the host backend): two CUDA devices → data 0, model 1; one →
 * both roles on it (the same handle); none (or backend HOST) → two host devices. Explicit CUDA
 * ordinals (the config's data_gpu / model_gpu): the given ones, the other role taking the other
 * device when there are two, else the same one; they are ignored with a warning when there is no
 * CUDA device (an error when the backend is CUDA).
 * Owns nothing: the caller closes the devices with tandem_roles_close. Any thread; opening a
 * device allocates. */
#ifndef TANDEM_RUNTIME_ROLES_H
#define TANDEM_RUNTIME_ROLES_H

#include <stddef.h>

#include "tandem.h"

/* Open the two roles' devices; desc (cap bytes) receives the choice in words. On failure both
 * are NULL and nothing is open. */
tandem_status tandem_roles_open(tandem_backend backend, int data_gpu, int model_gpu,
                                tandem_device **data, tandem_device **model, char *desc, size_t cap);
/* With the config's force_staged: say in the description tandem_roles_open wrote that the ring
 * copies are staged even though the devices could copy peer to peer. */
void tandem_roles_note_force_staged(char *desc, size_t cap);
/* Close what tandem_roles_open opened (a device in both roles once); NULLs are ignored. */
void tandem_roles_close(tandem_device *data, tandem_device *model);

#endif
