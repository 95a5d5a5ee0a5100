/* tandem_plot.h — the two figures of a training run, after the fact (part of tandem.h), drawn
 * by the code the trainer draws them with at its checkpoints:
 *   <out>/loss.png  train loss (and its terms) above, validation L1 below, against step, from
 *                   <run>/metrics.jsonl (the
 *                   same points, decimation and drawing as the trainer's);
 *   <out>/mel.png   with a checkpoint and a dataset: the target log-mel of one utterance (its
 *                   audio through the feature recipe) above the checkpoint's teacher-forced
 *                   prediction (one forward with the target frames as input).
 * Files are replaced atomically.
 *
 * Owns nothing after it returns; allocates while it runs (the figures' buffers, the model of
 * the checkpoint as tandem_synth_open builds it). Any thread; calls are independent. Order and
 * errors: the checkpoint is opened first (a bad one fails before anything is written: the
 * errors of tandem_synth_open), then loss.png (a metrics file that cannot be read:
 * TANDEM_E_IO; one without a logged step: TANDEM_E_INVALID), then mel.png (no metadata.csv:
 * TANDEM_E_IO; no such utterance or audio shorter than one hop: TANDEM_E_INVALID; the
 * decoder's and the device's errors, named with the utterance). *out says what was written,
 * also on failure.
 */
/* tandem.h first, outside the guard (see tandem_text.h). */
#include "tandem.h"

#ifndef TANDEM_PLOT_H
#define TANDEM_PLOT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tandem_plot_options {
    const char *out_dir;    /* where the PNGs go; NULL (default): the run directory */
    const char *checkpoint; /* NULL (default): loss.png only; else also mel.png (needs data_dir) */
    const char *data_dir;   /* an LJSpeech-layout dataset: metadata.csv (id|text|normalized) and
                               wavs/<id>.wav */
    const char *utterance;  /* the id to draw; NULL (default): the first row of metadata.csv */
    tandem_backend backend; /* device of the teacher-forced forward; default AUTO */
} tandem_plot_options;

/* The defaults above. */
void tandem_plot_options_init(tandem_plot_options *o);

typedef struct tandem_plot_result {
    int loss_written;       /* <out>/loss.png was written */
    int train_points;       /* points drawn per series (after decimation) */
    int val_points;
    int64_t stride;         /* logged steps per drawn point (1 until the history halved) */
    int metrics_lines;      /* lines of metrics.jsonl that gave a point */
    int metrics_bad_lines;  /* unreadable lines skipped */
    int mel_written;        /* <out>/mel.png was written */
    char utterance[512];    /* the utterance drawn */
    int mel_frames;         /* its frames */
} tandem_plot_result;

/* Draw loss.png (and mel.png with a checkpoint) of the run in run_dir. o NULL: the defaults. */
tandem_status tandem_plot_run(const char *run_dir, const tandem_plot_options *o,
                              tandem_plot_result *out);

#ifdef __cplusplus
}
#endif
#endif /* TANDEM_PLOT_H */
