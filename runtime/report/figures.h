/* figures.h — the two figures of a training run (issue 5, "Output"), one code path for the
 * trainer, which writes them at every checkpoint, and `tandem plot`, which makes them after the
 * fact from metrics.jsonl and a checkpoint:
 *   <dir>/loss.png  TANDEM_FIGURES_LOSS_W x _H: train loss and its terms (upper panel) and
 *                   validation L1 (lower panel) against step
 *                   (tandem_plot_loss), from the history below;
 *   <dir>/mel.png   target above predicted (teacher-forced) log-mel of one utterance
 *                   (tandem_plot_mel), from the mel buffers below; its size is
 *                   tandem_plot_mel_size(frames, 80); when a free-running generation of the
 *                   same text was set (set_gen), a third panel below shows it
 *                   (tandem_plot_mel_gen).
 * Both are replaced atomically (runtime/formats/atomic_file.h); no per-step copies are kept.
 *
 * History: the points of the logged steps, two series (train loss; validation L1), each a
 * fixed-capacity buffer of (step, value) floats. When a series is full it drops every other
 * point (it keeps the 1st, 3rd, 5th, ...) and from then on stores one offered point in 2^k
 * (k halvings so far): the curve always spans the whole run at a uniform stride of logged
 * steps, with at most `capacity` points. Non-finite values (a skipped step's loss) are kept as
 * NaN, so the drawn line breaks there and both code paths decimate alike.
 * Rewind: a point whose step is not after the last one offered means the run was resumed from
 * an earlier checkpoint (metrics.jsonl is appended to); the points at or after that step are
 * dropped first and the stride grid continues from the points kept, the same way in both code
 * paths (the trainer calls tandem_figures_rewind(resume step + 1) after loading the run's
 * metrics.jsonl on resume).
 *
 * Owns: the history buffers, the mel buffers (target, pred, gen [max_frames, 80]) and a plot canvas
 * that fits both figures, all made at create; nothing allocated afterwards (the metrics file is
 * read with stdio, before the trainer's pool commit). Not thread-safe. */
#ifndef TANDEM_RUNTIME_FIGURES_H
#define TANDEM_RUNTIME_FIGURES_H

#include <stdint.h>

#include "kernels/mel.h"
#include "tandem.h"

#define TANDEM_FIGURES_LOSS_FILE "loss.png"
#define TANDEM_FIGURES_MEL_FILE "mel.png"
#define TANDEM_FIGURES_LOSS_W 800
#define TANDEM_FIGURES_LOSS_H 480
#define TANDEM_FIGURES_HISTORY 4096 /* default points per series */
#define TANDEM_FIGURES_N_MELS TANDEM_MEL_N_MELS /* the mel figure shows the recipe's bands */

typedef struct tandem_figures tandem_figures;

/* history_cap: points per series (even, 2..1<<24); max_frames: the longest mel the buffers
 * hold (0: no mel figure). */
tandem_status tandem_figures_create(int history_cap, int max_frames, tandem_figures **out);
void tandem_figures_free(tandem_figures *f);

/* Offer one logged point (see "History", "Rewind"). */
void tandem_figures_add_loss(tandem_figures *f, int64_t step, double loss);
void tandem_figures_add_val(tandem_figures *f, int64_t step, double val_l1);
/* The train loss's terms (metrics.jsonl l1, stop_bce, ga), three more series drawn in the train
 * panel; kept, decimated and rewound like the others. */
#define TANDEM_FIGURES_TERMS 3
void tandem_figures_add_terms(tandem_figures *f, int64_t step, double l1, double stop_bce, double ga);
/* Drop the points at step >= step of each series whose last offered step is >= step. */
void tandem_figures_rewind(tandem_figures *f, int64_t step);

/* Offer the points of a metrics.jsonl (one JSON object per line; "loss" → train series,
 * "l1", "stop_bce", "ga" → its terms, "val_l1" → validation series; null → NaN; lines without "step" or unreadable are skipped
 * and counted in *bad). *lines: lines that gave a point. A missing file: TANDEM_E_IO. */
tandem_status tandem_figures_load_metrics(tandem_figures *f, const char *path, int *lines, int *bad);

/* The stored history, in step order (valid until the next add). stride: offered points per
 * stored point (1 until the first halving). */
typedef struct tandem_figures_series {
    const float *step, *value;
    int n;
    int64_t stride;
} tandem_figures_series;
void tandem_figures_history(const tandem_figures *f, tandem_figures_series *train,
                            tandem_figures_series *val);
void tandem_figures_terms(const tandem_figures *f, tandem_figures_series term[TANDEM_FIGURES_TERMS]);

/* The mel buffers, [max_frames, 80] row-major each: fill them, then set_mel says how many
 * frames are valid and from which step the prediction is (-1: unknown). */
float *tandem_figures_mel_target(tandem_figures *f);
float *tandem_figures_mel_pred(tandem_figures *f);
int tandem_figures_max_frames(const tandem_figures *f);
tandem_status tandem_figures_set_mel(tandem_figures *f, int frames, int64_t step);
/* The free-running panel: fill gen [max_frames, 80], then set_gen(frames) (0: none). set_mel
 * clears it (a new utterance). */
float *tandem_figures_mel_gen(tandem_figures *f);
tandem_status tandem_figures_set_gen(tandem_figures *f, int frames);
/* frames of the mel set last (0: none yet) and its step. */
int tandem_figures_mel_frames(const tandem_figures *f, int64_t *step);

/* Write <dir>/loss.png (empty series draw empty axes) / <dir>/mel.png (needs set_mel:
 * TANDEM_E_INVALID otherwise). */
tandem_status tandem_figures_write_loss(tandem_figures *f, const char *dir);
tandem_status tandem_figures_write_mel(tandem_figures *f, const char *dir);

#endif
