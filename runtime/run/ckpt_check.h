/* ckpt_check.h — what a checkpoint must hold before a run builds anything from it: the tensors
 * its own config describes (names, F32, shapes) and values a model can continue from. Used by
 * resume's choice of checkpoint (run_ckpt.c) and by --init-from (init_from.c). */
#ifndef TANDEM_RUNTIME_RUN_CKPT_CHECK_H
#define TANDEM_RUNTIME_RUN_CKPT_CHECK_H

#include "runtime/formats/safetensors.h"
#include "tandem.h"

/* Every parameter, adam_m.<name> and adam_v.<name> of the model that f's stored config describes
 * (sym_emb's rows excepted: they count symbols and speakers,
 * whose tables resume checks by name) is in f as F32 of that shape; otherwise
 * TANDEM_E_FORMAT naming the tensor, both shapes and the config's size. So a header that claims
 * a model its tensors do not hold fails before any arena is planned or allocated. */
tandem_status tandem_ckpt_check_shapes(const tandem_st_file *f, const char *path);

/* Every F32 value finite, and every adam_v.* (AdamW second moment, an average of squares) >= 0;
 * params_only: only the tensors that are not adam_m.* / adam_v.*. TANDEM_E_FORMAT naming the
 * tensor, the element and the value otherwise. */
tandem_status tandem_ckpt_check_values(const tandem_st_file *f, const char *path, int params_only);

#endif
