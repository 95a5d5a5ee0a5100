/* batch_prep.h — argument struct of the per-micro-batch input preparation kernel
 * (kernels/batch_prep.cu; host implementation and launch geometry: kernels/batch_prep_host.c).
 *
 * Why a kernel: the attention key mask and the masked-L1 normaliser depend on the batch's
 * lengths, which live on the model device (ring slot tensors). Building them on the host would
 * need a device→host read per micro-batch, which stalls the model stream; this kernel builds
 * them where the lengths are, queued behind the slot's "filled" wait.
 *
 *   key_mask[b, t]  = t <  Tt: t < text_lengths[b]                  (token positions)
 *                     t >= Tt: (t - Tt) * r < frame_lengths[b]       (mel position t - Tt holds a
 *                                                                      real frame)
 *   l1_weight[b, f] = frame_mask[b, f] * inv where frame_mask[b, f] != 0, else 0,
 *                     inv = 1 / (channels * sum_b frame_lengths[b])  (computed in double,
 *                     rounded once to float; 0 when no frame is real)
 * Lengths are clamped to [0, Tt] and [0, F] (a corrupt slot cannot index out of range).
 * The masked L1 kernels take l1_weight as their mask, so the L1 reduces with scale 1 and no
 * host count: the loss normaliser is a device value.
 */
#ifndef TANDEM_KERNELS_BATCH_PREP_H
#define TANDEM_KERNELS_BATCH_PREP_H

#include "kernels/ktypes.h"

/* Threads per block (batch_prep_host.c; batch_prep.cu's launch bounds). */
#define TANDEM_K_BATCH_PREP_THREADS 256

typedef struct tandem_k_batch_prep_args {
    const int32_t *text_lengths;  /* [B] tokens incl. language, BOS, EOS */
    const int32_t *frame_lengths; /* [B] real frames */
    const float *frame_mask;      /* [B, F] 1 real frame, 0 padding */
    uint8_t *key_mask;            /* [B, Tt + Tm] */
    float *l1_weight;             /* [B, F] */
    int batch, text_len, mel_len, r, frames, channels; /* B, Tt, Tm, r, F = Tm * r, 80 */
} tandem_k_batch_prep_args;

/* Clamp a length into [0, hi]. */
TANDEM_HD int tandem_k_batch_prep_clamp(int32_t v, int hi) {
    return v < 0 ? 0 : (v > hi ? hi : (int)v);
}

/* The L1 weight of a real frame: 1 / (channels * total real frames), 0 when there are none. */
TANDEM_HD float tandem_k_batch_prep_inv(const int32_t *frame_lengths, int batch, int frames,
                                        int channels) {
    int64_t total = 0;
    for (int b = 0; b < batch; b++) total += tandem_k_batch_prep_clamp(frame_lengths[b], frames);
    return total > 0 ? (float)(1.0 / ((double)total * (double)channels)) : 0.0f;
}

#endif
