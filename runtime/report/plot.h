/* plot.h — PNG figures written at each checkpoint (libpng):
 *   * the loss curve: two panels on one step axis, "train loss" (and its terms) above and
 *     "validation L1" below, each with its own y axis (the two are different quantities: their gap is no bug),
 *     tick marks and labels drawn with a built-in 5x7 bitmap font, "step" under the x axis;
 *   * the mel comparison: target and predicted log-mel [T, n_mels] stacked (target on top,
 *     low bands at the bottom of each panel), one colour scale taken from the target, drawn as
 *     a bar at the right with its ln-mel values.
 * Owns: an RGB canvas and a fixed arena that libpng and zlib allocate from (through
 * png_create_write_struct_2), both made at create, so writing a PNG after the pool commit
 * allocates nothing on the heap. Files are replaced atomically (runtime/formats/atomic_file.h). */
#ifndef TANDEM_RUNTIME_PLOT_H
#define TANDEM_RUNTIME_PLOT_H

#include <stdint.h>

#include "tandem.h"

typedef struct tandem_plot tandem_plot;

/* A canvas of up to max_width x max_height pixels (each 16..8192). */
tandem_status tandem_plot_create(int max_width, int max_height, tandem_plot **out);
void tandem_plot_free(tandem_plot *p);

/* Loss curve of width x height pixels (<= the canvas; >= 160 x 120). Series are (step, value)
 * pairs in step order; non-finite values are skipped (the line breaks there). Either series
 * may be empty (n = 0). */
tandem_status tandem_plot_loss(tandem_plot *p, const char *path, int width, int height,
                               const float *train_step, const float *train_loss, int n_train,
                               const float *val_step, const float *val_l1, int n_val);

/* A named (step, value) series: the train loss's terms, drawn thin in the train panel. */
typedef struct tandem_plot_series {
    const float *step, *value;
    int n;
    const char *name; /* in the panel's title line */
} tandem_plot_series;
/* tandem_plot_loss with terms[0..n_terms) (at most 4) under the train loss; a term whose finite
 * values are all 0 (ga when off) is left out. */
tandem_status tandem_plot_loss_terms(tandem_plot *p, const char *path, int width, int height,
                                     const float *train_step, const float *train_loss, int n_train,
                                     const float *val_step, const float *val_l1, int n_val,
                                     const tandem_plot_series *terms, int n_terms);

/* Where the loss curve's panels lie (pixels): plot areas {x0, y0, x1, y1}, y0 the top row;
 * scale: the font's pixel size. The same for any data: the layout depends on the size only. */
typedef struct tandem_plot_loss_layout {
    int train[4], val[4];
    int scale;
} tandem_plot_loss_layout;
void tandem_plot_loss_layout_of(int width, int height, tandem_plot_loss_layout *out);

/* The colour scale's width at the right of the mel image (pixels). */
#define TANDEM_PLOT_MEL_BAR_W 64

/* Pixel size of the mel comparison for frames x n_mels (2 px per band; 2 px per frame up to
 * 1024 frames, 1 px beyond; then the colour scale, TANDEM_PLOT_MEL_BAR_W). */
void tandem_plot_mel_size(int frames, int n_mels, int *width, int *height);
/* The same with `panels` stacked panels (2: target, pred; 3: also the free-running one). */
void tandem_plot_mel_size_n(int frames, int n_mels, int panels, int *width, int *height);
/* target, pred: [frames, n_mels] row-major. The image must fit the canvas. */
tandem_status tandem_plot_mel(tandem_plot *p, const char *path, const float *target, const float *pred,
                              int frames, int n_mels);
/* A third panel below, labelled "generated": gen [gen_frames, n_mels], the free-running
 * generation of the same text (gen NULL: the two-panel figure above). The width is that of the longer of the two lengths;
 * one colour scale, the target's. */
tandem_status tandem_plot_mel_gen(tandem_plot *p, const char *path, const float *target,
                                  const float *pred, int frames, const float *gen, int gen_frames,
                                  int n_mels);

/* The colour map (value in [0, 1] → RGB), exposed for tests. */
void tandem_plot_colormap(float v, uint8_t rgb[3]);

#endif
