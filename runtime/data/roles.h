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
/* Data-parallel (world size > 1): tandem_roles_open for this process, local rank local_rank of
 * local_world ranks on its machine (0: unknown), so ranks sharing a machine never share a GPU
 * (docs/SCALING.md, "Each rank's GPUs"). Automatic roles on n CUDA devices: n >= 2 * local_world
 * → data 2k, model 2k+1; else n >= local_world (unknown: n > k) → GPU k in both roles; else
 * TANDEM_E_DEVICE naming the GPUs and the local ranks. Explicit data_gpu / model_gpu are used as
 * given (logged), and without CUDA devices (or on the host backend) it is tandem_roles_open. */
tandem_status tandem_roles_open_rank(tandem_backend backend, int data_gpu, int model_gpu, int local_rank,
                                     int local_world, tandem_device **data, tandem_device **model, char *desc,
                                     size_t cap);
/* With the config's force_staged: say in the description tandem_roles_open wrote that the ring
 * copies are staged even though the devices could copy peer to peer. */
void tandem_roles_note_force_staged(char *desc, size_t cap);
/* Close what tandem_roles_open opened (a device in both roles once); NULLs are ignored. */
void tandem_roles_close(tandem_device *data, tandem_device *model);

#endif
