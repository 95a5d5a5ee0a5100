/* val_speak.h — free-running evaluation at every validation (docs/TRAINING.md, "Free-running
 * evaluation"): the first TANDEM_VAL_SPEAK_COUNT utterances of validation's fixed subset are
 * generated free-running (KV cache) by a forward-only B = 1 copy of the model on the model
 * device and judged as runtime/run/speak_eval.h says: stop within ±20 % of the true length,
 * median length ratio, DTW-aligned L1, the text-dependence ratio (teacher-forced L1 with the
 * next utterance's text / with its own, cyclically over the subset), spectral variation, and
 * identification among the subset.
 *
 * The copy is a synthesis handle on the model device (tandem_synth_open_device) that receives
 * the training parameters by one device copy per validation; the true mels are computed once,
 * on the host, from the utterances' audio. The config's test_sentences (no recording) are
 * generated too and written as <out>/samples/step-<step>-<k>.wav (Griffin-Lim, 32 iterations);
 * where their stop fired is logged (INFO). The first held-out utterance's generated mel is
 * written as <out>/samples/step-<step>-held.wav at every validation. Everything is made by create, before the trainer's
 * pools are committed; run allocates nothing. One thread: the trainer's. */
#ifndef TANDEM_RUNTIME_RUN_VAL_SPEAK_H
#define TANDEM_RUNTIME_RUN_VAL_SPEAK_H

#include <stdint.h>

#include "runtime/core/config.h"
#include "runtime/data/text_index.h"
#include "runtime/run/speak_eval.h"
#include "runtime/run/synth.h"
#include "tandem.h"

/* Utterances evaluated per validation (fewer when the subset is smaller). */
#define TANDEM_VAL_SPEAK_COUNT 8
/* At most this many test_sentences (config); Griffin-Lim iterations of their WAVs. */
#define TANDEM_VAL_SPEAK_TESTS 8
#define TANDEM_VAL_SPEAK_GL_ITERS 32
/* The first held-out utterance as generated at each validation, under samples/ (step). */
#define TANDEM_VAL_SPEAK_HELD_WAV "step-%08lld-held.wav"

typedef struct tandem_val_speak {
    tandem_synth *syn;     /* NULL: off */
    int n;                 /* utterances evaluated */
    int text_len, frames;  /* max_text, max_frames */
    int32_t *ids;          /* [n, max_text] token ids */
    int *counts;           /* [n] */
    float *truth;          /* [n, max_frames, 80] true log-mels */
    int *true_frames;      /* [n] */
    float *gen;            /* [n, max_frames, 80] generated mels (identification) */
    float *scratch;        /* tandem_speak_eval_scratch_floats(max_frames) */
    tandem_speak_utt u[TANDEM_VAL_SPEAK_COUNT];
    int n_tests;           /* test_sentences */
    int32_t *test_ids;     /* [n_tests, max_text] */
    int test_counts[TANDEM_VAL_SPEAK_TESTS];
    char samples_dir[1100]; /* <out>/samples */
    tandem_speak_summary last; /* of the last run */
    double seconds;        /* wall time of the last run */
} tandem_val_speak;

/* From the held-out index vix (its first n_train utterances: validation's fixed subset) of
 * data_dir, on the model device dev with the run's cfg. e is zeroed first. */
tandem_status tandem_val_speak_create(tandem_val_speak *e, const tandem_text_index *vix,
                                      const char *data_dir, tandem_device *dev,
                                      const tandem_config *cfg);
/* Evaluate the parameters params (the training model's flat f32 [P], last written on s) after
 * `step` steps. gen0: NULL, or [max_frames, 80] for the first utterance's generated mel (the
 * mel figure's utterance), *gen0_frames its rows. */
tandem_status tandem_val_speak_run(tandem_val_speak *e, tandem_stream *s,
                                   const tandem_tensor *params, int64_t step, float *gen0,
                                   int *gen0_frames);
void tandem_val_speak_free(tandem_val_speak *e);

#endif
