/* cases_mel.c — kernel-test cases for the log-mel kernels (kernels/mel.h).
 *
 * Shapes: a single one-frame item whose lengths (random in [-100, max_samples + 300]) are
 * often below 384 (repeated reflection), 0 (no frames), negative or past max_samples (both
 * clamped); small batches; a batch whose max_samples exceeds max_frames * 256 (frame counts
 * clamped to max_frames); a larger batch that spans several grid-stride trips for mel_frames;
 * and a random shape.
 *
 * Tolerances (normalised squared error, kcase.h):
 *   mel_frames, mel_targets: 1e-12 — copies and one multiplication per element: exact.
 *   mel_magnitude, mel_log: 1e-10 — one sqrtf / logf per element; nvcc may contract the
 *     squares into FMAs and its logf may differ from libm's by an ulp.
 */
#include <stdio.h>

#include "kcase.h"

typedef struct mel_shape {
    int batch, max_frames;
    int64_t max_samples;
} mel_shape;

static const mel_shape shapes[] = {
    {1, 1, 300}, {3, 4, 1100}, {5, 13, 3500}, {5, 210, 210 * 256 + 100}, {0, 0, 0},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static mel_shape pick_shape(int idx, tandem_rng *rng) {
    mel_shape s = shapes[idx];
    if (s.batch == 0) { /* random */
        s.batch = (int)tandem_rng_int(rng, 1, 7);
        s.max_frames = (int)tandem_rng_int(rng, 1, 37);
        s.max_samples = tandem_rng_int(rng, 1, (int64_t)(s.max_frames + 2) * 256);
    }
    return s;
}

static void set_buf(tandem_kcase *c, int j, const char *name, tandem_dtype dt, int64_t count,
                    tandem_kb_role role, float lo, float hi) {
    tandem_kcase_buf *b = &c->bufs[j];
    b->name = name;
    b->dtype = dt;
    b->count = count;
    b->role = role;
    b->lo = lo;
    b->hi = hi;
    c->nbufs = j + 1;
}

static void shape_to_case(const mel_shape *s, tandem_kcase *c) {
    c->i[0] = s->batch;
    c->i[1] = s->max_frames;
    c->i[2] = s->max_samples;
    snprintf(c->desc, sizeof c->desc, "batch=%d max_frames=%d max_samples=%lld", s->batch,
             s->max_frames, (long long)s->max_samples);
}

static void set_lengths(tandem_kcase *c, int j, const mel_shape *s) {
    set_buf(c, j, "lengths", TANDEM_I32, s->batch, TANDEM_KB_IN, -100.0f,
            (float)(s->max_samples + 300));
}

/* ---- mel_frames: audio [B, S], lengths [B], window [1024] → frames [B, F, 1024] ---- */
static void frames_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    mel_shape s = pick_shape(idx, rng);
    shape_to_case(&s, c);
    set_buf(c, 0, "audio", TANDEM_F32, (int64_t)s.batch * s.max_samples, TANDEM_KB_IN, -1.0f, 1.0f);
    set_lengths(c, 1, &s);
    set_buf(c, 2, "window", TANDEM_F32, TANDEM_K_MEL_N_FFT, TANDEM_KB_IN, 0.0f, 1.0f);
    set_buf(c, 3, "frames", TANDEM_F32, (int64_t)s.batch * s.max_frames * TANDEM_K_MEL_N_FFT,
            TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-12;
}
static void frames_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_mel_frames_args *a = (tandem_k_mel_frames_args *)args;
    a->audio = (const float *)bufs[0];
    a->lengths = (const int32_t *)bufs[1];
    a->window = (const float *)bufs[2];
    a->frames = (float *)bufs[3];
    a->batch = (int)c->i[0];
    a->max_frames = (int)c->i[1];
    a->max_samples = c->i[2];
}
const tandem_kcase_spec tandem_kcase_mel_frames = {N_SHAPES, frames_make, frames_bind};

/* ---- mel_magnitude: spec [rows, 1026] → mag [rows, 513] ---- */
static const int64_t magnitude_rows[] = {1, 3, 37, 300, -1};
static void magnitude_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    int64_t rows = magnitude_rows[idx] > 0 ? magnitude_rows[idx] : tandem_rng_int(rng, 2, 500);
    c->i[0] = rows;
    set_buf(c, 0, "spec", TANDEM_F32, rows * 2 * TANDEM_K_MEL_N_BINS, TANDEM_KB_IN, -10.0f, 10.0f);
    set_buf(c, 1, "mag", TANDEM_F32, rows * TANDEM_K_MEL_N_BINS, TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-10;
    snprintf(c->desc, sizeof c->desc, "rows=%lld", (long long)rows);
}
static void magnitude_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_mel_magnitude_args *a = (tandem_k_mel_magnitude_args *)args;
    a->spec = (const float *)bufs[0];
    a->mag = (float *)bufs[1];
    a->rows = c->i[0];
}
const tandem_kcase_spec tandem_kcase_mel_magnitude = {
    (int)(sizeof magnitude_rows / sizeof magnitude_rows[0]), magnitude_make, magnitude_bind};

/* ---- mel_log: mel [B * F, 80], lengths [B] → out [B, F, 80] ---- */
static void log_make(int idx, tandem_rng *rng, tandem_kcase *c) {
    mel_shape s = pick_shape(idx, rng);
    shape_to_case(&s, c);
    int64_t n = (int64_t)s.batch * s.max_frames * TANDEM_K_MEL_N_MELS;
    /* negative and tiny values exercise the 1e-5 floor */
    set_buf(c, 0, "mel", TANDEM_F32, n, TANDEM_KB_IN, -0.5f, 3.0f);
    set_lengths(c, 1, &s);
    set_buf(c, 2, "out", TANDEM_F32, n, TANDEM_KB_OUT, 0, 0);
    c->tol = 1e-10;
}
static void log_bind(const tandem_kcase *c, void *const *bufs, void *args) {
    tandem_k_mel_log_args *a = (tandem_k_mel_log_args *)args;
    a->mel = (const float *)bufs[0];
    a->lengths = (const int32_t *)bufs[1];
    a->out = (float *)bufs[2];
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
    set_buf(c, 1, "frames", TANDEM_I32, s.batch, TANDEM_KB_OUT, 0, 0);
    set_buf(c, 2, "mask", TANDEM_F32, (int64_t)s.batch * s.max_frames, TANDEM_KB_OUT, 0, 0);
    set_buf(c, 3, "stop", TANDEM_F32, (int64_t)s.batch * s.max_frames, TANDEM_KB_OUT, 0, 0);
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
