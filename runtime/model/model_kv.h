/* model_kv.h — inference with a key/value cache: the forward of runtime/model/model.h for one
 * sequence position at a time (B = 1), reusing the keys and values of the earlier positions.
 *
 * The full forward computes every position of [text; mel] per call; generation needs only the
 * newest mel position per step, and causality makes the earlier positions' keys and values
 * final once computed. So: begin() runs the real text positions one by one (x = sym_emb[token]
 * + pos_emb[t]) and stores each layer's k, v rows; step(j) runs mel position j (x =
 * GELU(prenet(group j - 1)) + pos_emb[Tt + j], group -1 = zeros, group j - 1 = the previous
 * step's output) through the blocks, attending to the cached keys 0..Tt + j under the same
 * key mask rule as the full forward (padded text keys masked, every mel key real), and writes
 * the group's r frames and r stop logits. Per block, for the one row: LN1 → qkv (a [1, 3d]
 * GEMM) → k, v rows into the caches → S[h, :] = q_h K_h^T / sqrt(dh) (one GEMM batched
 * over heads into an [H, T] score row block) → the causal softmax kernel on query row Tt + j
 * only (it reads keys <= that position) → O = P V (batched GEMM; [H, 1, dh] is already
 * the merged [1, d]) → out projection + residual → LN2 → MLP + residual. Same kernels and
 * numerics as the full forward, so the outputs agree with it to f32 rounding (test_synth).
 *
 * Precision follows the model (model.h, "Precision"): in bf16 mode the GEMM operands (LN
 * outputs, q, the k/v caches, P rows, merged heads, GELU output, prenet input) are bf16, cast
 * at the seams from one f32 stage; weights come from the model's bf16 copy (refreshed by
 * begin() when stale).
 *
 * Cost per mel step: O(d^2 + T d) GEMM work per layer instead of O(T d^2 + T^2 d), and a
 * softmax over H rows of at most T keys instead of the [H, T, T] block.
 *
 * Owns: its tensors, declared PERSISTENT into the model's pool (caches 2 L [H, T, dh], the
 * [H, T] score rows and one-row activations), and two small host arrays (layer tables,
 * the key mask), all allocated at declare; nothing after commit. Called by the thread that
 * drives the stream. */
#ifndef TANDEM_RUNTIME_MODEL_KV_H
#define TANDEM_RUNTIME_MODEL_KV_H

#include <stdint.h>

#include "runtime/model/model.h"

typedef struct tandem_model_kv {
    tandem_model *m;
    int T, H, dh, ff;
    tandem_tensor **kc, **vc;  /* [layers] of [H, T, dh] op: cached keys, values */
    tandem_tensor *key_mask;   /* [T] u8 */
    tandem_tensor *xa, *xb;    /* [d] f32: the residual stream, in and out of a block */
    tandem_tensor *x_mid;      /* [d] f32 */
    tandem_tensor *h;          /* [d] op: LN1, LN2 or final LN output */
    tandem_tensor *mean, *rstd; /* [1] f32 */
    tandem_tensor *qkv;        /* [3d] f32 */
    tandem_tensor *q;          /* [d] op (bf16 only; fp32 reads qkv) */
    tandem_tensor *scores;     /* [H, T] f32: the current query's scores, then probabilities
                                  (materialised attention only, runtime/model/attention.h) */
    tandem_tensor *prow;       /* [H, T] op (bf16, materialised only; fp32 reads scores) */
    tandem_tensor *lse;        /* [H] f32: the fused kernel's row statistics (fused only) */
    tandem_tensor *o;          /* [d] f32: heads merged ([H, 1, dh]) */
    tandem_tensor *att;        /* [d] op (bf16 only; fp32 reads o) */
    tandem_tensor *f;          /* [4d] f32 */
    tandem_tensor *g;          /* [4d] op */
    tandem_tensor *gin;        /* [r*80] op (bf16 only; fp32 reads mel) */
    tandem_tensor *pre;        /* [d] f32 */
    tandem_tensor *mel;        /* [r*80] f32: the last step's frames */
    tandem_tensor *stop;       /* [r] f32: the last step's stop logits */
    tandem_tensor *stage;      /* [4d + r*80] f32 (bf16 only): producers' output before a cast */
    uint8_t *host_mask;        /* [T] */
    int text_count;            /* real text positions of the current sequence */
    float drop_p;              /* > 0: prenet dropout at inference (Tacotron 2's), mask of
                                  position j from (drop_seed, j); 0 (default): none */
    uint64_t drop_seed;
} tandem_model_kv;

/* After tandem_model_declare (dims.batch must be 1), before the pool is committed: declare the
 * tensors above into pool and resolve the GEMM shapes (after tandem_model_declare_plan, into a
 * planning pool: declarations only). On error free with tandem_model_kv_free. */
tandem_status tandem_model_kv_declare(tandem_model_kv *kv, tandem_model *m, tandem_pool *pool);
void tandem_model_kv_free(tandem_model_kv *kv);

/* A new sequence: ids [Tt] (host; the first count real: <lang>, BOS, text, EOS), caches
 * cleared, the text positions run. Synchronises s first (the key mask's host copy is reused). */
tandem_status tandem_model_kv_begin(tandem_model_kv *kv, tandem_stream *s, const int32_t *ids,
                                    int count);
/* Mel position j (0, 1, ... in order after begin): kv->mel [r*80], kv->stop [r] on the device.
 * Its prenet input is the previous step's kv->mel (zeros for j = 0). Queued on s. */
tandem_status tandem_model_kv_step(tandem_model_kv *kv, tandem_stream *s, int j);

#endif
