/* plot.c — loss curve and mel comparison PNGs (see plot.h). Drawing is on an RGB canvas;
 * libpng and zlib allocate from a bump arena reset before each file, so no heap allocation
 * happens after create. */
#include "runtime/report/plot.h"

#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include "runtime/formats/atomic_file.h"
#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/report/plot_font.h"

/* zlib's deflate state at the default window and memLevel is ~270 KiB; libpng's own structs
 * and row buffers are small next to it. 4 MiB leaves ample room. */
#define PLOT_ARENA_BYTES (4u << 20)

struct tandem_plot {
    int max_w, max_h;
    int w, h;       /* current image */
    uint8_t *rgb;   /* [max_h, max_w, 3] */
    uint8_t *arena; /* libpng/zlib allocations */
    size_t arena_used;
    char err[200];  /* libpng's error message */
};

tandem_status tandem_plot_create(int max_width, int max_height, tandem_plot **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_plot_create: NULL argument");
    *out = NULL;
    if (max_width < 16 || max_height < 16 || max_width > 8192 || max_height > 8192)
        return tandem_fail(TANDEM_E_INVALID, "plot canvas %d x %d, expected 16..8192 on each side", max_width,
                           max_height);
    tandem_plot *p = tandem_calloc(1, sizeof *p);
    if (!p) return tandem_fail(TANDEM_E_NOMEM, "plot: out of memory");
    p->max_w = max_width;
    p->max_h = max_height;
    p->rgb = tandem_malloc((size_t)max_width * (size_t)max_height * 3);
    p->arena = tandem_aligned_alloc(64, PLOT_ARENA_BYTES);
    if (!p->rgb || !p->arena) {
        tandem_plot_free(p);
        return tandem_fail(TANDEM_E_NOMEM, "plot: out of memory for a %d x %d canvas", max_width, max_height);
    }
    *out = p;
    return TANDEM_OK;
}

void tandem_plot_free(tandem_plot *p) {
    if (!p) return;
    tandem_free(p->rgb);
    if (p->arena) tandem_aligned_free(p->arena);
    tandem_free(p);
}

/* ---- drawing ---- */

typedef struct rgb_color {
    uint8_t r, g, b;
} rgb_color;

static const rgb_color C_WHITE = {255, 255, 255}, C_AXIS = {40, 40, 40}, C_GRID = {228, 228, 228},
                       C_TRAIN = {31, 100, 190}, C_VAL = {230, 110, 20};

static void px(tandem_plot *p, int x, int y, rgb_color c) {
    if (x < 0 || y < 0 || x >= p->w || y >= p->h) return;
    uint8_t *q = p->rgb + ((size_t)y * p->w + x) * 3;
    q[0] = c.r;
    q[1] = c.g;
    q[2] = c.b;
}

static void fill(tandem_plot *p, int x0, int y0, int x1, int y1, rgb_color c) {
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) px(p, x, y, c);
}

/* Bresenham, thickness t (square brush). */
static void line(tandem_plot *p, int x0, int y0, int x1, int y1, int t, rgb_color c) {
    int dx = x1 > x0 ? x1 - x0 : x0 - x1, sx = x0 < x1 ? 1 : -1;
    int dy = y1 > y0 ? y0 - y1 : y1 - y0, sy = y0 < y1 ? 1 : -1;
    int e = dx + dy;
    for (;;) {
        fill(p, x0 - t / 2, y0 - t / 2, x0 - t / 2 + t, y0 - t / 2 + t, c);
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * e;
        if (e2 >= dy) {
            e += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            e += dx;
            y0 += sy;
        }
    }
}

static const plot_glyph *glyph(char c) {
    for (size_t i = 0; i < sizeof plot_font / sizeof plot_font[0]; i++)
        if (plot_font[i].c == c) return &plot_font[i];
    return NULL;
}

/* Text at (x, y) top-left, scale s; returns the width drawn. Unknown characters are blanks. */
static int text(tandem_plot *p, int x, int y, const char *s, int sc, rgb_color c) {
    int x0 = x;
    for (; *s; s++) {
        const plot_glyph *g = glyph(*s);
        for (int r = 0; g && r < 7; r++)
            for (int col = 0; col < 5; col++)
                if (g->rows[r] & (0x10 >> col)) fill(p, x + col * sc, y + r * sc, x + (col + 1) * sc, y + (r + 1) * sc, c);
        x += 6 * sc;
    }
    return x - x0;
}
static int text_width(const char *s, int sc) { return (int)strlen(s) * 6 * sc - sc; }

/* ---- axes ---- */

/* A "nice" tick step (1, 2 or 5 x 10^k) for about `want` ticks over span. */
static double nice_step(double span, int want) {
    double raw = span / want, mag = pow(10.0, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1.0 : r < 3.5 ? 2.0 : r < 7.5 ? 5.0 : 10.0) * mag;
}

static void tick_label(double v, double step, char *buf, size_t cap) {
    if (fabs(v) < step * 1e-6) v = 0.0;
    int decimals = step >= 1.0 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (decimals > 6 || fabs(v) >= 1e6) snprintf(buf, cap, "%.2g", v);
    else snprintf(buf, cap, "%.*f", decimals, v);
}

typedef struct axes {
    int x0, y0, x1, y1; /* plot area: x0..x1 left to right, y0 top, y1 bottom */
    double xmin, xmax, ymin, ymax;
} axes;

static int ax_x(const axes *a, double v) {
    return a->x0 + (int)lround((v - a->xmin) / (a->xmax - a->xmin) * (a->x1 - a->x0));
}
static int ax_y(const axes *a, double v) {
    return a->y1 - (int)lround((v - a->ymin) / (a->ymax - a->ymin) * (a->y1 - a->y0));
}

static void range(const float *x, int n, double *lo, double *hi) {
    for (int i = 0; i < n; i++)
        if (isfinite(x[i])) {
            if (x[i] < *lo) *lo = x[i];
            if (x[i] > *hi) *hi = x[i];
        }
}

static void series(tandem_plot *p, const axes *a, const float *x, const float *y, int n, int t,
                   rgb_color c, int marks) {
    int have = 0, px0 = 0, py0 = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) {
            have = 0;
            continue;
        }
        int qx = ax_x(a, x[i]), qy = ax_y(a, y[i]);
        if (have) line(p, px0, py0, qx, qy, t, c);
        else if (!marks) fill(p, qx - t / 2, qy - t / 2, qx - t / 2 + t, qy - t / 2 + t, c);
        if (marks) fill(p, qx - 2, qy - 2, qx + 3, qy + 3, c);
        have = 1;
        px0 = qx;
        py0 = qy;
    }
}

/* ---- PNG output through the arena ---- */

static png_voidp arena_malloc(png_structp png, png_alloc_size_t n) {
    tandem_plot *p = png_get_mem_ptr(png);
    size_t at = (p->arena_used + 15) & ~(size_t)15;
    if (n > PLOT_ARENA_BYTES || at > PLOT_ARENA_BYTES - n) return NULL; /* libpng reports it */
    p->arena_used = at + n;
    return p->arena + at;
}
static void arena_free(png_structp png, png_voidp ptr) { (void)png, (void)ptr; } /* reset per file */

static void png_err(png_structp png, png_const_charp msg) {
    tandem_plot *p = png_get_error_ptr(png);
    snprintf(p->err, sizeof p->err, "%s", msg);
    png_longjmp(png, 1);
}
static void png_warn(png_structp png, png_const_charp msg) {
    (void)png;
    tandem_logf(TANDEM_LOG_DEBUG, "libpng: %s", msg);
}
static void png_write_cb(png_structp png, png_bytep data, png_size_t n) {
    tandem_atomic_file *f = png_get_io_ptr(png);
    if (tandem_atomic_write(f, data, n) != TANDEM_OK) png_error(png, "write failed");
}
static void png_flush_cb(png_structp png) { (void)png; }

static tandem_status write_png(tandem_plot *p, const char *path) {
    tandem_atomic_file f;
    TANDEM_TRY(tandem_atomic_open(&f, path));
    p->arena_used = 0;
    p->err[0] = '\0';
    png_structp png = png_create_write_struct_2(PNG_LIBPNG_VER_STRING, p, png_err, png_warn, p, arena_malloc,
                                                arena_free);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        if (png) png_destroy_write_struct(&png, NULL);
        tandem_atomic_abort(&f);
        return tandem_fail(TANDEM_E_NOMEM, "plot %s: libpng setup failed in its %u-byte arena", path,
                           PLOT_ARENA_BYTES);
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        tandem_atomic_abort(&f);
        return tandem_fail(TANDEM_E_IO, "plot %s: libpng: %s", path, p->err[0] ? p->err : "error");
    }
    png_set_write_fn(png, &f, png_write_cb, png_flush_cb);
    png_set_IHDR(png, info, (png_uint_32)p->w, (png_uint_32)p->h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < p->h; y++) png_write_row(png, p->rgb + (size_t)y * p->w * 3);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return tandem_atomic_commit(&f);
}

/* ---- loss curve ---- */

/* Fixed margins (scale sc): a title line above each panel, tick labels under each, "step" below. */
void tandem_plot_loss_layout_of(int width, int height, tandem_plot_loss_layout *l) {
    const int sc = width >= 640 && height >= 400 ? 2 : 1;
    const int title = 4 * sc + 7 * sc + 5 * sc, ticks = 6 * sc + 7 * sc + 5 * sc, xlabel = 7 * sc + 4 * sc;
    const int room = height - 2 * title - 2 * ticks - xlabel, train_h = room * 3 / 5;
    l->scale = sc;
    l->train[0] = l->val[0] = text_width("-0.0000", sc) + 10 * sc; /* y tick labels fit left of the axis */
    l->train[2] = l->val[2] = width - 12 * sc;
    l->train[1] = title;
    l->train[3] = title + train_h;
    l->val[1] = l->train[3] + ticks + title;
    l->val[3] = l->val[1] + room - train_h;
}

static const rgb_color C_TERM[4] = {{40, 150, 60}, {150, 60, 170}, {120, 120, 120}, {200, 170, 0}};

/* A term worth drawing: a finite value other than 0. */
static int drawn(const tandem_plot_series *t) {
    for (int i = 0; i < t->n; i++)
        if (isfinite(t->value[i]) && t->value[i] != 0.0f) return 1;
    return 0;
}

/* Axes of one panel: y range of its series and drawn terms (5 % padding), x range shared. */
static void panel_axes(axes *a, const int box[4], double xmin, double xmax, const float *y, int n,
                       const tandem_plot_series *terms, int n_terms) {
    a->x0 = box[0], a->y0 = box[1], a->x1 = box[2], a->y1 = box[3];
    a->xmin = xmin, a->xmax = xmax;
    a->ymin = INFINITY, a->ymax = -INFINITY;
    range(y, n, &a->ymin, &a->ymax);
    for (int k = 0; k < n_terms; k++)
        if (drawn(&terms[k])) range(terms[k].value, terms[k].n, &a->ymin, &a->ymax);
    if (!(a->ymin <= a->ymax)) a->ymin = 0, a->ymax = 1;
    if (a->ymax - a->ymin < 1e-12) a->ymin -= 0.5, a->ymax += 0.5;
    const double pad = 0.05 * (a->ymax - a->ymin);
    a->ymin -= pad;
    a->ymax += pad;
}

/* Grid, ticks, tick labels and the axis lines of one panel. */
static void panel_frame(tandem_plot *p, const axes *a, int sc) {
    char buf[32];
    const int nx = (a->x1 - a->x0) / (50 * sc), ny = (a->y1 - a->y0) / (20 * sc); /* ticks that fit */
    const double xs = nice_step(a->xmax - a->xmin, nx < 2 ? 2 : nx > 6 ? 6 : nx),
                 ys = nice_step(a->ymax - a->ymin, ny < 2 ? 2 : ny > 4 ? 4 : ny);
    for (double v = ceil(a->ymin / ys) * ys; v <= a->ymax + ys * 1e-9; v += ys) {
        int y = ax_y(a, v);
        line(p, a->x0 + 1, y, a->x1, y, 1, C_GRID);
        line(p, a->x0 - 4 * sc, y, a->x0, y, 1, C_AXIS);
        tick_label(v, ys, buf, sizeof buf);
        text(p, a->x0 - 6 * sc - text_width(buf, sc), y - 3 * sc, buf, sc, C_AXIS);
    }
    for (double v = ceil(a->xmin / xs) * xs; v <= a->xmax + xs * 1e-9; v += xs) {
        int x = ax_x(a, v);
        line(p, x, a->y0, x, a->y1 - 1, 1, C_GRID);
        line(p, x, a->y1, x, a->y1 + 4 * sc, 1, C_AXIS);
        tick_label(v, xs, buf, sizeof buf);
        text(p, x - text_width(buf, sc) / 2, a->y1 + 6 * sc, buf, sc, C_AXIS);
    }
    line(p, a->x0, a->y0, a->x0, a->y1, 1, C_AXIS);
    line(p, a->x0, a->y1, a->x1, a->y1, 1, C_AXIS);
}

/* A swatch of colour c and a name at (x, y); returns the x after it. */
static int legend_item(tandem_plot *p, int x, int y, int sc, const char *name, rgb_color c) {
    fill(p, x, y + 3 * sc, x + 10 * sc, y + 4 * sc + 1, c);
    return x + 13 * sc + text(p, x + 13 * sc, y, name, sc, C_AXIS) + 10 * sc;
}

/* One panel: its title line (the series' swatch and name, then each drawn term's) above the
 * frame; the terms thin, under the series. */
static void panel(tandem_plot *p, const axes *a, int sc, const char *title, const float *x, const float *y, int n,
                  rgb_color c, int marks, const tandem_plot_series *terms, int n_terms) {
    const int ty = a->y0 - 12 * sc;
    int lx = legend_item(p, a->x0, ty, sc, title, c);
    panel_frame(p, a, sc);
    for (int k = 0; k < n_terms && k < 4; k++)
        if (drawn(&terms[k])) {
            lx = legend_item(p, lx, ty, sc, terms[k].name, C_TERM[k]);
            series(p, a, terms[k].step, terms[k].value, terms[k].n, sc, C_TERM[k], 0);
        }
    series(p, a, x, y, n, sc + 1, c, marks);
}

tandem_status tandem_plot_loss(tandem_plot *p, const char *path, int width, int height,
                               const float *train_step, const float *train_loss, int n_train,
                               const float *val_step, const float *val_l1, int n_val) {
    return tandem_plot_loss_terms(p, path, width, height, train_step, train_loss, n_train, val_step, val_l1, n_val,
                                  NULL, 0);
}

static int terms_ok(const tandem_plot_series *t, int n) {
    if (n < 0 || n > 4 || (n && !t)) return 0;
    for (int k = 0; k < n; k++)
        if (t[k].n < 0 || (t[k].n && (!t[k].step || !t[k].value)) || !t[k].name) return 0;
    return 1;
}

tandem_status tandem_plot_loss_terms(tandem_plot *p, const char *path, int width, int height,
                                     const float *train_step, const float *train_loss, int n_train,
                                     const float *val_step, const float *val_l1, int n_val,
                                     const tandem_plot_series *terms, int n_terms) {
    if (!p || !path || n_train < 0 || n_val < 0 || (n_train && (!train_step || !train_loss)) ||
        (n_val && (!val_step || !val_l1)) || !terms_ok(terms, n_terms))
        return tandem_fail(TANDEM_E_INVALID, "tandem_plot_loss: bad arguments");
    if (width < 160 || height < 120 || width > p->max_w || height > p->max_h)
        return tandem_fail(TANDEM_E_INVALID, "plot %s: %d x %d pixels, expected 160 x 120 up to the canvas %d x %d",
                           path, width, height, p->max_w, p->max_h);
    p->w = width;
    p->h = height;
    fill(p, 0, 0, width, height, C_WHITE);
    tandem_plot_loss_layout l;
    tandem_plot_loss_layout_of(width, height, &l);
    const int sc = l.scale;
    double xmin = INFINITY, xmax = -INFINITY; /* one step axis for both panels */
    range(train_step, n_train, &xmin, &xmax);
    range(val_step, n_val, &xmin, &xmax);
    if (!(xmin <= xmax)) xmin = 0, xmax = 1;
    if (xmax - xmin < 1e-9) xmax = xmin + 1;
    axes a;
    panel_axes(&a, l.train, xmin, xmax, train_loss, n_train, terms, n_terms);
    panel(p, &a, sc, "train loss", train_step, train_loss, n_train, C_TRAIN, 0, terms, n_terms);
    panel_axes(&a, l.val, xmin, xmax, val_l1, n_val, NULL, 0);
    panel(p, &a, sc, "validation L1", val_step, val_l1, n_val, C_VAL, 1, NULL, 0);
    text(p, (l.val[0] + l.val[2] - text_width("step", sc)) / 2, height - 9 * sc, "step", sc, C_AXIS);
    return write_png(p, path);
}

/* ---- mel comparison ---- */

void tandem_plot_colormap(float v, uint8_t rgb[3]) {
    /* dark blue → violet → red → orange → pale yellow; stops chosen for this project */
    static const float stops[5][3] = {
        {12, 8, 48}, {84, 24, 120}, {186, 54, 96}, {246, 140, 40}, {252, 246, 170},
    };
    if (!(v > 0.0f)) v = 0.0f; /* NaN too */
    if (v > 1.0f) v = 1.0f;
    float s = v * 4.0f;
    int i = (int)s;
    if (i > 3) i = 3;
    float t = s - (float)i;
    for (int c = 0; c < 3; c++) rgb[c] = (uint8_t)lrintf(stops[i][c] + t * (stops[i + 1][c] - stops[i][c]));
}

enum { MEL_GAP = 6 };

void tandem_plot_mel_size(int frames, int n_mels, int *width, int *height) {
    tandem_plot_mel_size_n(frames, n_mels, 2, width, height);
}

void tandem_plot_mel_size_n(int frames, int n_mels, int panels, int *width, int *height) {
    int fx = frames <= 1024 ? 2 : 1;
    *width = frames * fx + TANDEM_PLOT_MEL_BAR_W;
    *height = panels * 2 * n_mels + (panels - 1) * MEL_GAP;
}

/* One panel of frames x n_mels from row `top`, fx px per frame, colours over [lo, hi]. */
static void mel_panel(tandem_plot *p, const float *m, int frames, int n_mels, int top, int fx,
                      float lo, float hi, const char *label) {
    for (int t = 0; t < frames; t++)
        for (int b = 0; b < n_mels; b++) {
            uint8_t c[3];
            tandem_plot_colormap((m[(size_t)t * n_mels + b] - lo) / (hi - lo), c);
            int y = top + 2 * (n_mels - 1 - b); /* band 0 at the bottom */
            fill(p, t * fx, y, (t + 1) * fx, y + 2, (rgb_color){c[0], c[1], c[2]});
        }
    if (p->w >= 48) text(p, 3, top + 3, label, 1, C_WHITE);
}

/* The colour scale right of the panels from x: a bar lo (bottom) .. hi (top), ticks and their
 * ln-mel values, the title "ln mel" above it. */
static void colour_bar(tandem_plot *p, int x, float lo, float hi) {
    const int y0 = 12, y1 = p->h - 4, bx = x + 6;
    text(p, bx, 2, "ln mel", 1, C_AXIS);
    for (int y = y0; y <= y1; y++) {
        uint8_t c[3];
        tandem_plot_colormap((float)(y1 - y) / (float)(y1 - y0), c);
        fill(p, bx, y, bx + 12, y + 1, (rgb_color){c[0], c[1], c[2]});
    }
    const double step = nice_step(hi - lo, 4);
    char buf[32];
    for (double v = ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
        const int y = y1 - (int)lround((v - lo) / (hi - lo) * (y1 - y0));
        line(p, bx + 12, y, bx + 15, y, 1, C_AXIS);
        tick_label(v, step, buf, sizeof buf);
        text(p, bx + 17, y - 3, buf, 1, C_AXIS);
    }
}

tandem_status tandem_plot_mel(tandem_plot *p, const char *path, const float *target, const float *pred,
                              int frames, int n_mels) {
    return tandem_plot_mel_gen(p, path, target, pred, frames, NULL, 0, n_mels);
}

tandem_status tandem_plot_mel_gen(tandem_plot *p, const char *path, const float *target,
                                  const float *pred, int frames, const float *gen, int gen_frames,
                                  int n_mels) {
    if (!p || !path || !target || !pred || frames < 1 || n_mels < 1 || (gen && gen_frames < 1))
        return tandem_fail(TANDEM_E_INVALID, "tandem_plot_mel: bad arguments (frames %d, n_mels %d)", frames, n_mels);
    const int panels = gen ? 3 : 2, wide = gen && gen_frames > frames ? gen_frames : frames;
    int w, h;
    tandem_plot_mel_size_n(wide, n_mels, panels, &w, &h);
    if (w > p->max_w || h > p->max_h || w < 1)
        return tandem_fail(TANDEM_E_INVALID, "plot %s: %d frames x %d mels need %d x %d pixels, the canvas is %d x %d",
                           path, wide, n_mels, w, h, p->max_w, p->max_h);
    p->w = w;
    p->h = h;
    int fx = (w - TANDEM_PLOT_MEL_BAR_W) / wide;
    float lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < (size_t)frames * n_mels; i++)
        if (isfinite(target[i])) {
            if (target[i] < lo) lo = target[i];
            if (target[i] > hi) hi = target[i];
        }
    if (!(lo < hi)) lo = 0.0f, hi = 1.0f;
    fill(p, 0, 0, w, h, C_WHITE);
    const int step = 2 * n_mels + MEL_GAP;
    mel_panel(p, target, frames, n_mels, 0, fx, lo, hi, "target");
    mel_panel(p, pred, frames, n_mels, step, fx, lo, hi, "pred");
    if (gen) mel_panel(p, gen, gen_frames, n_mels, 2 * step, fx, lo, hi, "generated");
    colour_bar(p, w - TANDEM_PLOT_MEL_BAR_W, lo, hi);
    return write_png(p, path);
}
