/* figures.c — a training run's loss curve and mel comparison (see figures.h). */
#include "runtime/report/figures.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/report/plot.h"

/* One series: stored point j is offered point j * stride (the invariant decimation keeps). */
typedef struct hist {
    float *step, *value; /* [cap] */
    int n, cap;
    int64_t stride;
    int64_t seen;      /* points offered (after a rewind: n * stride) */
    int64_t last_step; /* step of the last point offered; valid when any */
    int any;
} hist;

struct tandem_figures {
    hist train, val;
    hist term[TANDEM_FIGURES_TERMS]; /* l1, stop_bce, ga */
    int max_frames;
    float *target, *pred; /* [max_frames, 80] */
    float *gen;           /* [max_frames, 80] the free-running generation of the same text */
    int mel_frames, gen_frames;
    int64_t mel_step;
    tandem_plot *plot;
};

static void hist_rewind(hist *h, int64_t step) {
    if (!h->any || h->last_step < step) return;
    int n = 0;
    while (n < h->n && (double)h->step[n] < (double)step) n++;
    h->n = n;
    h->seen = (int64_t)n * h->stride;
    h->last_step = step - 1;
}

static void hist_add(hist *h, int64_t step, double v) {
    hist_rewind(h, step);
    h->any = 1;
    h->last_step = step;
    const int64_t i = h->seen++;
    if (i % h->stride != 0) return;
    if (h->n == h->cap) { /* full: keep every other point, double the stride */
        int k = 0;
        for (int j = 0; j < h->n; j += 2, k++) {
            h->step[k] = h->step[j];
            h->value[k] = h->value[j];
        }
        h->n = k;
        h->stride *= 2;
        if (i % h->stride != 0) return; /* cannot happen with an even capacity */
    }
    h->step[h->n] = (float)step;
    h->value[h->n] = isfinite(v) ? (float)v : NAN;
    h->n++;
}

static tandem_status hist_init(hist *h, int cap) {
    memset(h, 0, sizeof *h);
    h->cap = cap;
    h->stride = 1;
    h->step = tandem_malloc((size_t)cap * sizeof(float));
    h->value = tandem_malloc((size_t)cap * sizeof(float));
    return h->step && h->value ? TANDEM_OK : tandem_fail(TANDEM_E_NOMEM, "figures: out of memory for "
                                                                           "a %d-point history", cap);
}

tandem_status tandem_figures_create(int history_cap, int max_frames, tandem_figures **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_figures_create: NULL argument");
    *out = NULL;
    if (history_cap < 2 || history_cap > (1 << 24) || history_cap % 2)
        return tandem_fail(TANDEM_E_INVALID, "figures: history capacity %d, expected an even number "
                           "in 2..%d", history_cap, 1 << 24);
    if (max_frames < 0 || max_frames > 8192)
        return tandem_fail(TANDEM_E_INVALID, "figures: max_frames %d, expected 0..8192", max_frames);
    tandem_figures *f = tandem_calloc(1, sizeof *f);
    if (!f) return tandem_fail(TANDEM_E_NOMEM, "figures: out of memory");
    f->max_frames = max_frames;
    f->mel_step = -1;
    tandem_status st = hist_init(&f->train, history_cap);
    if (st == TANDEM_OK) st = hist_init(&f->val, history_cap);
    for (int k = 0; k < TANDEM_FIGURES_TERMS && st == TANDEM_OK; k++) st = hist_init(&f->term[k], history_cap);
    int w = TANDEM_FIGURES_LOSS_W, h = TANDEM_FIGURES_LOSS_H;
    if (st == TANDEM_OK && max_frames > 0) {
        const size_t bytes = (size_t)max_frames * TANDEM_FIGURES_N_MELS * sizeof(float);
        f->target = tandem_malloc(bytes);
        f->pred = tandem_malloc(bytes);
        f->gen = tandem_malloc(bytes);
        if (!f->target || !f->pred || !f->gen)
            st = tandem_fail(TANDEM_E_NOMEM, "figures: out of memory");
        /* the widest mel image: 2 px per frame up to 1024 frames, 1 px beyond */
        const int probe[2] = {max_frames < 1024 ? max_frames : 1024, max_frames};
        for (int k = 0; k < 2; k++) {
            int mw = 0, mh = 0;
            tandem_plot_mel_size_n(probe[k], TANDEM_FIGURES_N_MELS, 3, &mw, &mh);
            if (mw > w) w = mw;
            if (mh > h) h = mh;
        }
    }
    if (st == TANDEM_OK) st = tandem_plot_create(w, h, &f->plot);
    if (st != TANDEM_OK) {
        tandem_figures_free(f);
        return st;
    }
    *out = f;
    return TANDEM_OK;
}

void tandem_figures_free(tandem_figures *f) {
    if (!f) return;
    tandem_free(f->train.step);
    tandem_free(f->train.value);
    tandem_free(f->val.step);
    tandem_free(f->val.value);
    for (int k = 0; k < TANDEM_FIGURES_TERMS; k++) {
        tandem_free(f->term[k].step);
        tandem_free(f->term[k].value);
    }
    tandem_free(f->target);
    tandem_free(f->pred);
    tandem_free(f->gen);
    tandem_plot_free(f->plot);
    tandem_free(f);
}

void tandem_figures_add_loss(tandem_figures *f, int64_t step, double loss) { hist_add(&f->train, step, loss); }
void tandem_figures_add_val(tandem_figures *f, int64_t step, double val_l1) { hist_add(&f->val, step, val_l1); }

void tandem_figures_add_terms(tandem_figures *f, int64_t step, double l1, double stop_bce, double ga) {
    const double v[TANDEM_FIGURES_TERMS] = {l1, stop_bce, ga};
    for (int k = 0; k < TANDEM_FIGURES_TERMS; k++) hist_add(&f->term[k], step, v[k]);
}

void tandem_figures_rewind(tandem_figures *f, int64_t step) {
    hist_rewind(&f->train, step);
    hist_rewind(&f->val, step);
    for (int k = 0; k < TANDEM_FIGURES_TERMS; k++) hist_rewind(&f->term[k], step);
}

static void series_of(const hist *h, tandem_figures_series *s) {
    if (!s) return;
    s->step = h->step;
    s->value = h->value;
    s->n = h->n;
    s->stride = h->stride;
}

void tandem_figures_history(const tandem_figures *f, tandem_figures_series *train,
                            tandem_figures_series *val) {
    series_of(&f->train, train);
    series_of(&f->val, val);
}

void tandem_figures_terms(const tandem_figures *f, tandem_figures_series term[TANDEM_FIGURES_TERMS]) {
    for (int k = 0; k < TANDEM_FIGURES_TERMS; k++) series_of(&f->term[k], &term[k]);
}

/* ---- metrics.jsonl ---- */

/* The value after "key": in a line: 1 with *v (NaN for null), 0 when absent or not a number. */
static int field(const char *line, const char *key, double *v) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p) return 0;
    p += strlen(pat);
    while (*p == ' ') p++;
    if (!strncmp(p, "null", 4)) {
        *v = NAN;
        return 1;
    }
    char *end = NULL;
    *v = strtod(p, &end);
    return end != p;
}

tandem_status tandem_figures_load_metrics(tandem_figures *f, const char *path, int *lines, int *bad) {
    if (!f || !path) return tandem_fail(TANDEM_E_INVALID, "tandem_figures_load_metrics: NULL argument");
    int n_ok = 0, n_bad = 0;
    /* non-blocking open + regular-file check: a FIFO at the path would block fopen for ever */
    int fd = -1;
    TANDEM_TRY(tandem_file_open_input(path, 0, NULL, &fd, NULL));
    FILE *fp = fdopen(fd, "r");
    if (!fp) {
        close(fd);
        return tandem_fail(TANDEM_E_IO, "metrics %s: cannot open for reading", path);
    }
    char line[2 * 4096 + 2];
    while (fgets(line, sizeof line, fp)) {
        const size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') { /* longer than any line we write */
            int c;
            while ((c = fgetc(fp)) != EOF && c != '\n') {}
            n_bad++;
            continue;
        }
        double step, v;
        if (!field(line, "step", &step) || !isfinite(step) || step < 0 || step > 9e15) {
            if (strspn(line, " \t\r\n") != len) n_bad++; /* blank lines are not errors */
            continue;
        }
        int used = 0;
        if (field(line, "loss", &v)) {
            tandem_figures_add_loss(f, (int64_t)step, v);
            used = 1;
        }
        double l1, bce = NAN, ga = NAN;
        if (field(line, "l1", &l1)) {
            field(line, "stop_bce", &bce);
            field(line, "ga", &ga);
            tandem_figures_add_terms(f, (int64_t)step, l1, bce, ga);
        }
        if (field(line, "val_l1", &v)) {
            tandem_figures_add_val(f, (int64_t)step, v);
            used = 1;
        }
        n_ok += used;
    }
    const int err = ferror(fp);
    fclose(fp);
    if (err) return tandem_fail(TANDEM_E_IO, "metrics %s: read error", path);
    if (lines) *lines = n_ok;
    if (bad) *bad = n_bad;
    return TANDEM_OK;
}

/* ---- mel ---- */

float *tandem_figures_mel_target(tandem_figures *f) { return f->target; }
float *tandem_figures_mel_pred(tandem_figures *f) { return f->pred; }
int tandem_figures_max_frames(const tandem_figures *f) { return f->max_frames; }

tandem_status tandem_figures_set_mel(tandem_figures *f, int frames, int64_t step) {
    if (frames < 1 || frames > f->max_frames)
        return tandem_fail(TANDEM_E_INVALID, "figures: mel of %d frames, expected 1..%d (max_frames)",
                           frames, f->max_frames);
    f->mel_frames = frames;
    f->mel_step = step;
    f->gen_frames = 0; /* a new utterance: a free-running panel only when set again */
    return TANDEM_OK;
}

float *tandem_figures_mel_gen(tandem_figures *f) { return f->gen; }

tandem_status tandem_figures_set_gen(tandem_figures *f, int frames) {
    if (frames < 0 || frames > f->max_frames)
        return tandem_fail(TANDEM_E_INVALID, "figures: free-running mel of %d frames, expected "
                           "0..%d (max_frames)", frames, f->max_frames);
    f->gen_frames = frames;
    return TANDEM_OK;
}

int tandem_figures_mel_frames(const tandem_figures *f, int64_t *step) {
    if (step) *step = f->mel_step;
    return f->mel_frames;
}

/* ---- output ---- */

static tandem_status join(char *buf, size_t cap, const char *dir, const char *name) {
    const int n = snprintf(buf, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap)
        return tandem_fail(TANDEM_E_INVALID, "figures: directory path too long (%zu bytes): %.80s...",
                           strlen(dir), dir);
    return TANDEM_OK;
}

tandem_status tandem_figures_write_loss(tandem_figures *f, const char *dir) {
    if (!f || !dir) return tandem_fail(TANDEM_E_INVALID, "tandem_figures_write_loss: NULL argument");
    char path[PATH_MAX];
    TANDEM_TRY(join(path, sizeof path, dir, TANDEM_FIGURES_LOSS_FILE));
    static const char *const names[TANDEM_FIGURES_TERMS] = {"l1", "stop bce", "ga"};
    tandem_plot_series term[TANDEM_FIGURES_TERMS];
    for (int k = 0; k < TANDEM_FIGURES_TERMS; k++)
        term[k] = (tandem_plot_series){f->term[k].step, f->term[k].value, f->term[k].n, names[k]};
    return tandem_plot_loss_terms(f->plot, path, TANDEM_FIGURES_LOSS_W, TANDEM_FIGURES_LOSS_H, f->train.step,
                                  f->train.value, f->train.n, f->val.step, f->val.value, f->val.n, term,
                                  TANDEM_FIGURES_TERMS);
}

tandem_status tandem_figures_write_mel(tandem_figures *f, const char *dir) {
    if (!f || !dir) return tandem_fail(TANDEM_E_INVALID, "tandem_figures_write_mel: NULL argument");
    if (f->mel_frames < 1)
        return tandem_fail(TANDEM_E_INVALID, "figures: no mel to draw yet (set_mel not called)");
    char path[PATH_MAX];
    TANDEM_TRY(join(path, sizeof path, dir, TANDEM_FIGURES_MEL_FILE));
    return tandem_plot_mel_gen(f->plot, path, f->target, f->pred, f->mel_frames,
                               f->gen_frames > 0 ? f->gen : NULL, f->gen_frames,
                               TANDEM_FIGURES_N_MELS);
}
