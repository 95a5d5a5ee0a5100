/* synth.h — inference (`tandem synth`, DESIGN.md §7): a training checkpoint → autoregressive
 * log-mel generation with the stop head → Griffin-Lim → 22050 Hz 16-bit WAV (and the mel as
 * .npy for an external neural vocoder).
 *
 * The checkpoint's metadata carries the run's config (model sizes) and its symbol table; the
 * table must equal this build's (the embedding rows are ids), and the text goes through the same
 * frontend as training (runtime/text/text_norm.h → runtime/text/symbols.h): [<lang>, BOS, chars, EOS].
 *
 * Generation keeps the trained fixed shapes with B = 1 (max_text tokens, max_frames / r mel
 * positions, so the learned positional table fits). By default each step j runs mel position j
 * alone with the keys and values of the earlier positions cached (runtime/model/model_kv.h:
 * the text positions once, then one position per step); with options.recompute it reruns the
 * whole forward over the fixed sequence instead (attention is causal, so the outputs at
 * positions <= j do not depend on the later, still zero, groups) — the reference the cache is
 * tested against. Step j yields r frames and r stop logits; the group is step j + 1's prenet
 * input. It stops at the first frame whose stop probability sigmoid(logit) passes 0.5 (that
 * frame is the last one kept: training's stop target is 1 from the last real frame on), or at
 * max_frames.
 *
 * Owns: the device, its pool (the model of runtime/model/model.h declared with B = 1 and
 * forward_only — parameters and activations, no gradients or optimizer state — plus the
 * key/value cache and the batch tensors), host buffers for the generated mel, the stop logits and the audio, and a
 * Griffin-Lim handle, all made at open; run allocates nothing on the device side (the text
 * normaliser may grow its scratch for a longer text). Not thread-safe per handle. */
#ifndef TANDEM_RUNTIME_SYNTH_H
#define TANDEM_RUNTIME_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/config.h"
#include "runtime/text/text_norm.h"
#include "tandem.h"

/* The public part (options, open, info, run with caller or library buffers, close) is
 * tandem_synth.h; below are the pieces `tandem plot` and the tests use. */

/* Inference beside training (validation's free-running evaluation): a handle on the caller's
 * device (not closed by tandem_synth_close) sized by cfg, with its own stream and pool, all
 * made here (call before training starts: nothing is allocated afterwards). No parameters
 * yet: tandem_synth_copy_params brings the training model's flat f32 parameters [P] (a tensor
 * of the same device; `from` is the stream that last wrote them, synchronised first). */
/* n_speakers: the training set's speaker count (its embedding rows follow the symbols'); with
 * speakers, encoded test sentences carry speaker 0. */
tandem_status tandem_synth_open_device(tandem_device *dev, const tandem_config *cfg, uint32_t n_speakers,
                                       int gl_iters, tandem_synth **out);
tandem_status tandem_synth_copy_params(tandem_synth *s, tandem_stream *from,
                                       const tandem_tensor *params);
/* For `tandem plan`: the tensors tandem_synth_open_device(dev, cfg) declares into its own pool
 * (the forward-only B = 1 model, the key/value cache, the batch), declared into the caller's
 * planning pool (runtime/core/pool_internal.h; not destroyed by tandem_synth_close) for a
 * device of the given backend. The handle only holds the declarations: close it after the
 * pool's report; nothing else may be called on it. */
tandem_status tandem_synth_declare_plan(const tandem_config *cfg, tandem_backend backend,
                                        tandem_pool *pool, uint32_t n_speakers, tandem_synth **out);
/* The statistics of the handle's pool (its arena's bytes: what `tandem plan` must count). */
void tandem_synth_pool_stats(const tandem_synth *s, tandem_pool_stats *out);

/* The run's config as stored in the checkpoint (sizes; batch_size etc. as trained). */
const tandem_config *tandem_synth_config(const tandem_synth *s);

/* Normalise and encode text (UTF-8, len bytes). lang < 0: the frontend's detected language; else
 * a tandem_lang forcing the tag. Characters outside the symbol table → TANDEM_E_INVALID naming
 * them; more tokens than max_text → TANDEM_E_INVALID. ids needs max_text entries. */
tandem_status tandem_synth_encode(tandem_synth *s, const char *text, size_t len, int lang,
                                  int32_t *ids, int *count, tandem_lang *used);

/* Generate the mel from text (len bytes). max_frames <= 0: the trained max_frames; else at
 * most that many frames (at most the trained max_frames). res->mel is the handle's buffer;
 * res->audio stays NULL (tandem_synth_vocode makes it). */
tandem_status tandem_synth_generate(tandem_synth *s, const char *text, size_t len, int lang,
                                    int max_frames, tandem_synth_result *res);

/* Teacher forcing (for the target-vs-predicted figure): one forward with target [frames, 80]
 * (frames <= max_frames) as the input mels; pred [frames, 80] gets the predicted frames. */
tandem_status tandem_synth_teacher_forced(tandem_synth *s, const char *text, size_t len, int lang,
                                          const float *target, int frames, float *pred);

/* The same two from token ids [count] (framed: <lang>, BOS, ..., EOS; count <= max_text), as a
 * text index holds them (validation's free-running evaluation). */
tandem_status tandem_synth_generate_ids(tandem_synth *s, const int32_t *ids, int count,
                                        int max_frames, tandem_synth_result *res);
tandem_status tandem_synth_teacher_forced_ids(tandem_synth *s, const int32_t *ids, int count,
                                              const float *target, int frames, float *pred);

/* mel [frames, 80] → Griffin-Lim (iters) → audio [frames * 256] into the handle's buffer
 * (*audio, valid until the next call). */
tandem_status tandem_synth_vocode(tandem_synth *s, const float *mel, int frames, int iters,
                                  uint64_t seed, const float **audio, int64_t *samples);

#endif
