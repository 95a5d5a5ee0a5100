/* cases_mel.c — kernel-test cases for the log-mel kernels (kernels/mel.h).
 *
 * Shapes (the STFT, a block per frame, uses smaller ones for the emulator's sake): a single
 * one-frame item whose lengths (random in [-100, max_samples + 300]) are
 * often below 384 (repeated reflection), 0 (no frames), negative or past max_samples (both
 * clamped); small batches; a batch whose max_samples exceeds max_frames * 256 (frame counts
 * clamped to max_frames); a larger batch that spans several grid-stride trips of the element-wise kernels;
 * and a random shape.
 *
 * Tolerances (normalised squared error, kcase.h):
 *   mel_stft: 1e-12 — host and kernel run the same double FFT; nvcc's double cos/sin and FMA
 *     contraction move results by ~1e-16 relative, far below the float rounding of the output.
 *   mel_project: 1e-12 — both sides sum in double (in different orders: ~1e-16 relative)
 *     and round to float. Band tables: the recipe's (tandem_mel_bands) for the first size,
 *     random ones for the others (empty bands, one-bin bands, a band ending at bin 512, overlaps).
 *   mel_targets: 1e-12 — exact.
 *   mel_log: 1e-10 — one logf per element; CUDA's logf may differ from libm's by an ulp.
 */
#include <stdio.h>

#include "test/kernels/kcase.h"
#include "runtime/audio/mel.h" /* runtime/audio/mel.h: tandem_mel_bands */

typedef struct mel_shape {
    int batch, max_frames;
    int64_t max_samples;
} mel_shape;

static const mel_shape shapes[] = {
    {1, 1, 300}, {3, 4, 1100}, {5, 13, 3500}, {5, 210, 210 * TANDEM_MEL_HOP + 100}, {0, 0, 0},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static mel_shape pick_shape(int idx, tandem_rng *rng) {
    mel_shape s = shapes[idx];
    if (s.batch == 0) { /* random */
        s.batch = (int)tandem_rng_int(rng, 1, 7);
        s.max_frames = (int)tandem_rng_int(rng, 1, 37);
        s.max_samples = tandem_rng_int(rng, 1, (int64_t)(s.max_frames + 2) * TANDEM_MEL_HOP);
    }
    return s;
}

static void shape_to_case(const mel_shape *s, tandem_kcase *c) {
    c->i[0] = s->batch;
    c->i[1] = s->max_frames;
    c->i[2] = s->max_samples;
    snprintf(c->desc, sizeof c->desc, "batch=%d max_frames=%d max_samples=%lld", s->batch,
             s->max_frames, (long long)s->max_samples);
}

static void set_lengths(tandem_kcase *c, int j, const mel_shape *s) {
    tandem_kcase_set_buf(c, j, "lengths", TANDEM_I32, s->batch, TANDEM_KB_IN, -100.0f,
            (float)(s->max_samples + 300));
}

/* ---- mel_stft: audio [B, S], lengths [B] → mag [B * F, 513] ---- */
/* Block-per-frame with 9 barriers per frame: shapes kept small for the emulator. */
static const mel_shape stft_shapes[] = {{1, 1, 300}, {3, 4, 1100}, {5, 13, 3500}, {2, 45, 45 * TANDEM_MEL_HOP + 50}, {0, 0, 0}};
static void stft_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    mel_shape s = stft_shapes[idx];
    if (s.batch == 0) s = pick_shape(N_SHAPES - 1, rng);
    shape_to_case(&s, c);
    tandem_kcase_set_buf(c, 0, "audio", TANDEM_F32, (int64_t)s.batch * s.max_samples, TANDEM_KB_IN, -1.0f, 1.0f);
    set_lengths(c, 1, &s);
    tandem_kcase_set_buf(c, 2, "mag", TANDEM_F32, (int64_t)s.batch * s.max_frames * TANDEM_MEL_N_BINS, TANDEM_KB_OUT, 0, 0);
    /* the same double FFT on both sides; only the float rounding of the result may differ */
    c->tol = 1e-12;
}
static void stft_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_mel_stft_args *a = (tandem_k_mel_stft_args *)args;
    a->audio = (const float *)bufs[0];
    a->lengths = (const int32_t *)bufs[1];
    a->mag = (float *)bufs[2];
    a->batch = (int)c->i[0];
    a->max_frames = (int)c->i[1];
    a->max_samples = c->i[2];
}
const tandem_kcase_spec tandem_kcase_mel_stft = {(int)(sizeof stft_shapes / sizeof stft_shapes[0]), stft_make,
                                                 stft_bind};

/* ---- mel_project: mag [B * F, 513], weights, lengths [B] → mel [B * F, 80] ---- */
/* The band table of a case: the recipe's for seed 0, else random from the seed (bind() runs
 * once per copy, so the table is rebuilt from the seed rather than kept). Returns the weights. */
static int project_bands(uint64_t seed, tandem_k_mel_bands *bands) {
    if (seed == 0) return tandem_mel_bands(bands, NULL);
    tandem_rng r = {seed};
    int total = 0;
    for (int m = 0; m < TANDEM_MEL_N_MELS; m++) {
        int lo = (int)tandem_rng_int(&r, 0, TANDEM_MEL_N_BINS - 1);
        int len = (int)tandem_rng_int(&r, 0, 40);
        if (m == 0) len = 0;                                           /* empty band */
        if (m == 1) len = 1;                                           /* one bin */
        if (m == TANDEM_MEL_N_MELS - 1) lo = TANDEM_MEL_N_BINS - 7; /* up to the last bin */
        if (len > TANDEM_MEL_N_BINS - lo) len = TANDEM_MEL_N_BINS - lo;
        bands->lo[m] = lo;
        bands->len[m] = len;
        bands->off[m] = total;
        total += len;
    }
    return total;
}
static void project_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    mel_shape s = pick_shape(idx, rng);
    shape_to_case(&s, c);
    c->i[3] = idx == 0 ? 0 : (int64_t)(tandem_rng_next(rng) >> 1) | 1; /* band table seed */
    tandem_k_mel_bands bands;
    int n_weights = project_bands((uint64_t)c->i[3], &bands);
    int64_t rows = (int64_t)s.batch * s.max_frames;
    tandem_kcase_set_buf(c, 0, "mag", TANDEM_F32, rows * TANDEM_MEL_N_BINS, TANDEM_KB_IN, 0.0f, 2.0f);
    tandem_kcase_set_buf(c, 1, "weights", TANDEM_F32, n_weights, TANDEM_KB_IN, 0.0f, 0.05f);
    set_lengths(c, 2, &s);
    tandem_kcase_set_buf(c, 3, "mel", TANDEM_F32, rows * TANDEM_MEL_N_MELS, TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-12;
}
static void project_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_mel_project_args *a = (tandem_k_mel_project_args *)args;
    a->mag = (const float *)bufs[0];
    a->weights = (const float *)bufs[1];
    a->lengths = (const int32_t *)bufs[2];
    a->mel = (float *)bufs[3];
    a->batch = (int)c->i[0];
    a->max_frames = (int)c->i[1];
    a->max_samples = c->i[2];
    project_bands((uint64_t)c->i[3], &a->bands);
}
const tandem_kcase_spec tandem_kcase_mel_project = {N_SHAPES, project_make, project_bind};

/* ---- mel_log: mel [B * F, 80], lengths [B] → out [B, F, 80] ---- */
static void log_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    mel_shape s = pick_shape(idx, rng);
    shape_to_case(&s, c);
    int64_t n = (int64_t)s.batch * s.max_frames * TANDEM_MEL_N_MELS;
    /* negative and tiny values exercise the 1e-5 floor */
    tandem_kcase_set_buf(c, 0, "mel", TANDEM_F32, n, TANDEM_KB_IN, -0.5f, 3.0f);
    set_lengths(c, 1, &s);
    tandem_kcase_set_buf(c, 2, "out", TANDEM_F32, n, TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-10;
}
static void log_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_mel_log_args *a = (tandem_k_mel_log_args *)args;
    a->mel = (const float *)bufs[0];
    a->lengths = (const int32_t *)bufs[1];
    a->out = (float *)bufs[2];
    a->pad = tandem_mel_silence();
    a->batch = (int)c->i[0];
    a->max_frames = (int)c->i[1];
    a->max_samples = c->i[2];
}
const tandem_kcase_spec tandem_kcase_mel_log = {N_SHAPES, log_make, log_bind};

/* ---- mel_targets: lengths [B] → frames [B], mask [B, F], stop [B, F] ---- */
static void targets_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    mel_shape s = pick_shape(idx, rng);
    shape_to_case(&s, c);
    set_lengths(c, 0, &s);
    tandem_kcase_set_buf(c, 1, "frames", TANDEM_I32, s.batch, TANDEM_KB_OUT, 0, 0);
    tandem_kcase_set_buf(c, 2, "mask", TANDEM_F32, (int64_t)s.batch * s.max_frames, TANDEM_KB_OUT, 0, 0);
    tandem_kcase_set_buf(c, 3, "stop", TANDEM_F32, (int64_t)s.batch * s.max_frames, TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-12;
}
static void targets_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_mel_targets_args *a = (tandem_k_mel_targets_args *)args;
    a->lengths = (const int32_t *)bufs[0];
    a->frames = (int32_t *)bufs[1];
    a->mask = (float *)bufs[2];
    a->stop = (float *)bufs[3];
    a->batch = (int)c->i[0];
    a->max_frames = (int)c->i[1];
    a->max_samples = c->i[2];
}
const tandem_kcase_spec tandem_kcase_mel_targets = {N_SHAPES, targets_make, targets_bind};
