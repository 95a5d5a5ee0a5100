/* batch_prep.cu — key mask and L1 weights of a micro-batch from its lengths (batch_prep.h).
 * One grid-stride loop over the B * (Tt + Tm) mask bytes followed by the B * F weights; every
 * thread computes the total frame count itself (B additions), so no block has to publish it
 * and no atomics are needed. Launch geometry: kernels/batch_prep_host.c. */
#include "kernels/dialect.h"

#include "kernels/batch_prep.h"

KERNEL LAUNCH_BOUNDS(TANDEM_K_BATCH_PREP_THREADS) tandem_k_batch_prep(tandem_k_batch_prep_args a) {
    const int64_t seq = (int64_t)a.text_len + a.mel_len;
    const int64_t n_mask = (int64_t)a.batch * seq, n = n_mask + (int64_t)a.batch * a.frames;
    const int64_t stride = (int64_t)gridDim.x * (int64_t)blockDim.x;
    const float inv = tandem_k_batch_prep_inv(a.frame_lengths, a.batch, a.frames, a.channels);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        if (i < n_mask) {
            const int b = (int)(i / seq), t = (int)(i % seq);
            int real;
            if (t < a.text_len) real = t < tandem_k_batch_prep_clamp(a.text_lengths[b], a.text_len);
            else real = (int64_t)(t - a.text_len) * a.r <
                        tandem_k_batch_prep_clamp(a.frame_lengths[b], a.frames);
            a.key_mask[i] = (uint8_t)real;
        } else {
            const int64_t j = i - n_mask;
            const float m = a.frame_mask[j];
            a.l1_weight[j] = m != 0.0f ? m * inv : 0.0f;
        }
    }
}
