/* cases_batch_prep.c — kernel-test cases for batch_prep (kernels/batch_prep.h).
 *
 * Shapes (B, Tt, Tm, r): degenerate (1, 1, 1, 1), a small odd one, the tiny model's
 * (4, 128, 128, 4), the base model's (16, 200, 400, 2), one past the 1024-block grid cap so
 * threads take a second trip round the grid-stride loop, and one random. Lengths are drawn
 * from [-2, max + 3] so the clamping is exercised; the frame mask from [0, 1].
 *
 * Tolerance 1e-12 (normalised squared error): both sides do the same integer tests and the same
 * one float multiply per weight, i.e. exact in practice. Note: a u8 output cannot be poisoned
 * detectably (kcase.h), so an unwritten key-mask byte is caught by test_batch_prep instead,
 * which runs the kernel through a backend with the mask poisoned and compares it with an
 * independent reference.
 */
#include <stdio.h>

#include "test/kernels/kcase.h"

static const int bp_shapes[][4] = {
    {1, 1, 1, 1}, {3, 12, 12, 2}, {4, 128, 128, 4}, {16, 200, 400, 2}, {300, 100, 300, 3},
    {-1, -1, -1, -1},
};
#define N_BP ((int)(sizeof bp_shapes / sizeof bp_shapes[0]))

static void bp_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t B = bp_shapes[idx][0], Tt = bp_shapes[idx][1], Tm = bp_shapes[idx][2], r = bp_shapes[idx][3];
    if (B < 0) {
        B = tandem_rng_int(rng, 1, 40);
        Tt = tandem_rng_int(rng, 1, 150);
        Tm = tandem_rng_int(rng, 1, 150);
        r = tandem_rng_int(rng, 1, 4);
    }
    const int64_t F = Tm * r;
    c->i[0] = B;
    c->i[1] = Tt;
    c->i[2] = Tm;
    c->i[3] = r;
    tandem_kcase_set_buf(c, 0, "text_lengths", TANDEM_I32, B, TANDEM_KB_IN, -2.0f, (float)(Tt + 3));
    tandem_kcase_set_buf(c, 1, "frame_lengths", TANDEM_I32, B, TANDEM_KB_IN, -2.0f, (float)(F + 3));
    tandem_kcase_set_buf(c, 2, "frame_mask", TANDEM_F32, B * F, TANDEM_KB_IN, 0.0f, 1.0f);
    tandem_kcase_set_buf(c, 3, "key_mask", TANDEM_U8, B * (Tt + Tm), TANDEM_KB_OUT, 0, 0);
    tandem_kcase_set_buf(c, 4, "l1_weight", TANDEM_F32, B * F, TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-12;
    snprintf(c->desc, sizeof c->desc, "B=%lld Tt=%lld Tm=%lld r=%lld", (long long)B, (long long)Tt,
             (long long)Tm, (long long)r);
}

static void bp_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_batch_prep_args *a = (tandem_k_batch_prep_args *)args;
    a->text_lengths = (const int32_t *)bufs[0];
    a->frame_lengths = (const int32_t *)bufs[1];
    a->frame_mask = (const float *)bufs[2];
    a->key_mask = (uint8_t *)bufs[3];
    a->l1_weight = (float *)bufs[4];
    a->batch = (int)c->i[0];
    a->text_len = (int)c->i[1];
    a->mel_len = (int)c->i[2];
    a->r = (int)c->i[3];
    a->frames = (int)(c->i[2] * c->i[3]);
    a->channels = 80;
}
const tandem_kcase_spec tandem_kcase_batch_prep = {N_BP, bp_make, bp_bind};
