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
 *   * spectral variation: the generated mel's mean absolute frame-to-frame change (over the 80
 *     bands) divided by the true mel's — a drone is near 0, speech near 1;
 *   * identification (over a set, tandem_speak_identify): the true mel nearest to the generated
 *     one by DTW-aligned L1 among the set's is its own — a drone, or a copy of another
 *     sentence, is not identified.
 * Summary: the fraction stopped within ±20 %, the median length ratio, the mean DTW-aligned L1,
 * the text-dependence ratio = mean teacher-forced L1 with the wrong texts / mean with the
 * right texts (about 1: the output ignores the text; the measured good models reach 1.5–1.7),
 * the mean spectral variation and the fraction identified.
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
    double spec_var;    /* spectral variation: generated / true mean frame-to-frame change */
    int nearest;        /* tandem_speak_identify: index of the nearest true mel; -1 = not run */
} tandem_speak_utt;

typedef struct tandem_speak_summary {
    int n, within;          /* utterances, of which stopped within ±20 % */
    double within_frac;     /* within / n */
    double median_ratio;    /* median of G / N */
    double dtw_l1;          /* mean DTW-aligned L1 */
    double text_dependence; /* mean tf_l1_other / mean tf_l1 */
    double spec_var;        /* mean spectral variation */
    int identified;         /* utterances whose nearest true mel is their own */
    double ident_frac;      /* identified / n (0 when identification was not run) */
} tandem_speak_summary;

/* Scratch floats tandem_speak_eval_utt needs for a model of max_frames F. */
size_t tandem_speak_eval_scratch_floats(int max_frames);

/* The DTW row scratch inside scratch (tandem_speak_eval_scratch_floats(max_frames) floats), for
 * tandem_speak_identify between calls of tandem_speak_eval_utt. */
double *tandem_speak_eval_dtw_row(float *scratch, int max_frames);

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

/* Mean over frames 1..frames-1 and the bands of |mel[t] − mel[t−1]| (0 for fewer than 2). */
double tandem_speak_flux(const float *mel, int frames, int bands);

/* Identification over a set of n: gen [n, stride] and truth [n, stride] mels (row i at i *
 * stride floats, gen_frames[i] and true_frames[i] rows of 80), u[i].nearest = the j whose true
 * mel has the least DTW-aligned L1 to generated mel i (ties: the lower j). row: DTW scratch of
 * 4 * (max true frames + 1) doubles. O(n² · G · N · 80): meant for tens of utterances. */
void tandem_speak_identify(const float *gen, const float *truth, size_t stride, int n,
                           const int *true_frames, double *row, tandem_speak_utt *u);

/* An utterance's true log-mel from its audio file (the host recipe, as training's features):
 * mel [max_frames, 80] (rows >= *frames zeroed), audio scratch max_frames * hop floats. */
tandem_status tandem_speak_eval_true_mel(const char *wav, int max_frames, float *audio, float *mel,
                                         int *frames);

#endif
