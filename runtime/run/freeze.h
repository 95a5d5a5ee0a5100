/* freeze.h — `--freeze GROUPS`: parameter groups that a run does not train.
 *
 * GROUPS is a comma-separated list of: embeddings (sym_emb, pos_emb), prenet, blocks.N or
 * blocks.A-B (transformer blocks, the parameters layers.<i>.*), final_norm (ln_f), heads (mel_head,
 * stop_head), or any other text, taken as a parameter-name prefix (e.g. layers.2.attn). Each must
 * name at least one parameter. The result is the frozen [begin, end) element ranges of the flat
 * tensors (sorted, adjacent ones merged) for tandem_optim.frozen (train_step.h): their gradients
 * are zeroed before the norm and AdamW skips them — no update, no moment change.
 * Allocates the ranges (create time). One thread. */
#ifndef TANDEM_RUNTIME_RUN_FREEZE_H
#define TANDEM_RUNTIME_RUN_FREEZE_H

#include <stdint.h>

#include "runtime/model/model.h"
#include "tandem.h"

/* The ranges of spec over m's parameters into *spans (2 * *n int64_t, tandem_free them; NULL and
 * 0 for an empty spec); an info line names the frozen parameters' count and size. A group that
 * names nothing is TANDEM_E_INVALID naming it and the groups. */
tandem_status tandem_freeze_spans(const tandem_model *m, const char *spec, int64_t **spans, int *n);

/* The ranges keep[0..n_keep) (pairs, any order; sorted in place) taken out of *spans (replaced by
 * a new allocation): what --init-from did not fill is trained even inside a frozen group, with an
 * info line naming how many values. */
tandem_status tandem_freeze_release(const char *spec, int64_t *keep, int n_keep, int64_t **spans, int *n);

/* Ranges as text "a-b,a-b" (checkpoint metadata freeze_trained, so a resume trains them too), and
 * back: release_text parses text (TANDEM_E_FORMAT naming it when malformed or past n_flat) and
 * releases its ranges as tandem_freeze_release does. */
tandem_status tandem_freeze_ranges_text(const int64_t *r, int n, char **out);
tandem_status tandem_freeze_release_text(const char *spec, const char *text, int64_t n_flat, int64_t **spans,
                                         int *n);

#endif
