/* speak_eval.h — free-running evaluation: does the model speak its text and stop by itself?
 * Used by `make bench-speak` (bench/speak_bench.c) on a checkpoint, and defined here once so
 * that every figure it prints has one meaning (docs/TRAINING.md, "Free-running evaluation").
 *
 * Per utterance (its text and its true log-mel [N, 80] from its audio):
 *   * free-running generation (tandem_synth_generate, KV cache) up to the model's max_frames:
 *     the generated length G and whether the stop head fired;
 *   * stopped within ±20 %: the stop fired and |G − N| <= 0.2 N;
 *   * length ratio G / N;
 *   * DTW-aligned L1: the mean |generated − true| over the 80 bands along the cheapest
 *     monotone alignment of the G generated and N true frames (steps (1,0), (0,1), (1,1)),
 *     divided by the alignment's length — the generated mel's distance from the truth,
 *     whatever its timing;
 *   * teacher-forced L1 with the right text, and with another utterance's text (the caller's
 *     pairing; summaries use the next utterance's, cyclically) on the same true mel.
 * Summary: the fraction stopped within ±20 %, the median length ratio, the mean DTW-aligned L1,
 * and the text-dependence ratio = mean teacher-forced L1 with the wrong texts / mean with the
 * right texts (about 1: the output ignores the text; the measured good models reach 1.5–1.7).
 *
 * Owns nothing between calls; tandem_speak_eval_utt uses the caller's scratch. Host work plus
 * the synth handle's device work; one thread per handle. */
#ifndef TANDEM_RUNTIME_RUN_SPEAK_EVAL_H
#define TANDEM_RUNTIME_RUN_SPEAK_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/run/synth.h"
#include "tandem.h"

/* Stopped "within" when |generated − true| <= this fraction of the true length. */
#define TANDEM_SPEAK_LENGTH_TOLERANCE 0.2

typedef struct tandem_speak_utt {
    int true_frames;    /* N */
    int gen_frames;     /* G */
    int stopped;        /* 1: the stop head fired (else the frame limit ended it) */
    int stop_frame;     /* the frame it fired at, -1 if not */
    int within;         /* stopped and |G − N| <= 0.2 N */
    double ratio;       /* G / N */
    double dtw_l1;      /* DTW-aligned L1 against the true mel */
    double tf_l1;       /* teacher-forced L1 with the right text */
    double tf_l1_other; /* teacher-forced L1 with the other text */
} tandem_speak_utt;

typedef struct tandem_speak_summary {
    int n, within;          /* utterances, of which stopped within ±20 % */
    double within_frac;     /* within / n */
    double median_ratio;    /* median of G / N */
    double dtw_l1;          /* mean DTW-aligned L1 */
    double text_dependence; /* mean tf_l1_other / mean tf_l1 */
} tandem_speak_summary;

/* Scratch floats tandem_speak_eval_utt needs for a model of max_frames F. */
size_t tandem_speak_eval_scratch_floats(int max_frames);

/* Evaluate one utterance: its token ids [count] (framed, tandem_synth_encode's), other ids
 * [other_count] (another utterance's, for the text-dependence ratio; NULL: tf_l1_other = 0),
 * truth [frames, 80] (frames <= the model's max_frames). scratch:
 * tandem_speak_eval_scratch_floats(max_frames) floats. gen: NULL, or [max_frames, 80] that
 * receives the generated mel (out->gen_frames rows). */
tandem_status tandem_speak_eval_utt(tandem_synth *s, const int32_t *ids, int count,
                                    const int32_t *other, int other_count, const float *truth,
                                    int frames, float *scratch, float *gen, tandem_speak_utt *out);

/* The summary of n evaluated utterances (n >= 1). */
void tandem_speak_eval_summarize(const tandem_speak_utt *u, int n, tandem_speak_summary *out);

/* The DTW-aligned L1 of a [G, bands] against b [N, bands]; row scratch: 4 * (N + 1) doubles. */
double tandem_speak_dtw_l1(const float *a, int G, const float *b, int N, int bands, double *row);

/* An utterance's true log-mel from its audio file (the host recipe, as training's features):
 * mel [max_frames, 80] (rows >= *frames zeroed), audio scratch max_frames * hop floats. */
tandem_status tandem_speak_eval_true_mel(const char *wav, int max_frames, float *audio, float *mel,
                                         int *frames);

#endif
