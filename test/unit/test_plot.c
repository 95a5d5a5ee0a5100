/* test_plot.c — the PNG figures read back with libpng: sizes, white background, the
 * series drawn where their values put them (a falling train loss starts higher than it ends),
 * tick marks on the axes, mel pixels equal to the colour map of the value the layout puts
 * there (band 0 at the bottom, target above prediction), argument errors, and no heap
 * allocation by the runtime while writing. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/report/plot.h"
#include "test/fixtures.h"

static tandem_rng rng;
static char scratch[256];

static int setup(void **state) {
    (void)state;
    return tandem_test_mkdtemp(scratch, sizeof scratch, "test_plot");
}
static int teardown(void **state) {
    (void)state;
    return tandem_test_rmtree(scratch);
}

static const unsigned char *pix(const unsigned char *b, int w, int x, int y) { return b + ((size_t)y * w + x) * 3; }

static int is_rgb(const unsigned char *p, int r, int g, int b) { return p[0] == r && p[1] == g && p[2] == b; }

static void test_loss_curve(void **state) {
    (void)state;
    tandem_plot *p = NULL;
    assert_int_equal(tandem_plot_create(1024, 768, &p), TANDEM_OK);
    enum { N = 200, NV = 10 };
    float st[N], loss[N], l1[N], zero[N], vst[NV], vl1[NV];
    for (int i = 0; i < N; i++) {
        st[i] = (float)(i * 10);
        loss[i] = 2.0f * expf(-i / 50.0f) + 0.2f + tandem_rng_uniform(&rng, 0, 0.02f);
        l1[i] = 0.8f * loss[i];
        zero[i] = 0.0f;
    }
    loss[77] = NAN; /* skipped */
    for (int i = 0; i < NV; i++) {
        vst[i] = (float)(i * 200 + 100);
        vl1[i] = 1.5f * expf(-i / 4.0f) + 0.3f;
    }
    const int sizes[][2] = {{800, 500}, {320, 200}, {160, 120}};
    for (int k = 0; k < 3; k++) {
        char path[400];
        snprintf(path, sizeof path, "%s/loss%d.png", scratch, k);
        uint64_t allocs = tandem_alloc_count();
        /* terms: l1 drawn, ga all 0 (off) left out */
        const tandem_plot_series terms[2] = {{st, l1, N, "l1"}, {st, zero, N, "ga"}};
        assert_int_equal(tandem_plot_loss_terms(p, path, sizes[k][0], sizes[k][1], st, loss, N, vst, vl1, NV, terms,
                                                2), TANDEM_OK);
        assert_int_equal(tandem_alloc_count(), allocs);
        int w, h;
        unsigned char *img = tandem_test_read_png(path, &w, &h);
        assert_int_equal(w, sizes[k][0]);
        assert_int_equal(h, sizes[k][1]);
        assert_true(is_rgb(pix(img, w, w - 1, h - 1), 255, 255, 255));
        /* two panels on one step axis: train loss above, validation L1 below, apart */
        tandem_plot_loss_layout l;
        tandem_plot_loss_layout_of(w, h, &l);
        const int sc = l.scale, *tb = l.train, *vb = l.val;
        assert_true(tb[1] < tb[3] && tb[3] < vb[1] && vb[1] < vb[3] && vb[3] < h && tb[0] == vb[0]);
        /* each series' colour only inside its panel (its swatch in the title line above aside) */
        int first_x = -1, first_y = -1, last_x = -1, last_y = -1, val_pixels = 0, term_pixels = 0;
        for (int x = 0; x < w; x++)
            for (int y = 0; y < h; y++) {
                const unsigned char *q = pix(img, w, x, y);
                const int in_t = y >= tb[1] - 3 && y <= tb[3] + 3, in_v = y >= vb[1] - 3 && y <= vb[3] + 3;
                const int swatch = x < tb[0] + 10 * sc + 1 && (y < tb[1] || (y < vb[1] && y > tb[3]));
                if (is_rgb(q, 31, 100, 190)) {
                    if (!in_t && !swatch) fail_msg("train colour at (%d,%d), outside its panel", x, y);
                    if (swatch) continue;
                    if (first_x < 0) first_x = x, first_y = y;
                    last_x = x, last_y = y;
                }
                if (is_rgb(q, 40, 150, 60)) { /* the l1 term: in the train panel or its title line */
                    if (!in_t && y >= tb[1]) fail_msg("l1 term colour at (%d,%d), outside the train panel", x, y);
                    term_pixels += y >= tb[1];
                }
                if (is_rgb(q, 120, 120, 120)) fail_msg("the all-zero ga term drawn at (%d,%d)", x, y);
                if (is_rgb(q, 230, 110, 20)) {
                    if (!in_v && !swatch) fail_msg("validation colour at (%d,%d), outside its panel", x, y);
                    val_pixels += !swatch;
                }
            }
        assert_true(first_x >= 0 && val_pixels > 0 && term_pixels > w / 2);
        print_message("%dx%d: train curve from (%d,%d) to (%d,%d), %d val pixels\n", w, h, first_x, first_y, last_x,
                      last_y, val_pixels);
        assert_true(last_x > w / 2);
        assert_true(last_y > (tb[1] + tb[3]) / 2); /* the loss fell: the right end is low in its panel */
        /* labels: a title above each panel, "step" under the lower one, y tick labels left of each */
        const int label_rows[3][2] = {{tb[1] - 12 * sc, tb[1] - 5 * sc}, {vb[1] - 12 * sc, vb[1] - 5 * sc},
                                      {h - 9 * sc, h - 2 * sc}};
        for (int j = 0; j < 3; j++) {
            int dark = 0;
            for (int y = label_rows[j][0]; y < label_rows[j][1]; y++)
                for (int x = 0; x < w; x++) dark += pix(img, w, x, y)[0] < 80 && pix(img, w, x, y)[2] < 80;
            if (dark < 10 * sc) fail_msg("label line %d (rows %d..%d): %d dark pixels", j, label_rows[j][0],
                                         label_rows[j][1], dark);
        }
        for (int j = 0; j < 2; j++) {
            const int *b = j ? vb : tb;
            int dark = 0;
            for (int y = b[1]; y <= b[3]; y++)
                for (int x = 0; x < b[0] - 5 * sc; x++) dark += pix(img, w, x, y)[0] < 80;
            if (dark < 10) fail_msg("panel %d has no y tick labels", j);
        }
        /* x-axis tick marks: dark pixels just below the axis line in several columns */
        int dark_cols = 0;
        for (int x = 0; x < w; x++) {
            int dark = 0;
            for (int y = h / 2; y < h; y++) {
                const unsigned char *q = pix(img, w, x, y);
                if (q[0] < 80 && q[1] < 80 && q[2] < 80) dark++;
            }
            if (dark > 0) dark_cols++;
        }
        assert_true(dark_cols > w / 2); /* the axis line itself plus labels */
        free(img);
    }
    /* empty series still give an image with axes */
    char path[400];
    snprintf(path, sizeof path, "%s/empty.png", scratch);
    assert_int_equal(tandem_plot_loss(p, path, 300, 200, NULL, NULL, 0, NULL, NULL, 0), TANDEM_OK);
    /* errors */
    assert_int_equal(tandem_plot_loss(p, path, 2000, 200, st, loss, N, vst, vl1, NV), TANDEM_E_INVALID);
    assert_int_equal(tandem_plot_loss(p, path, 100, 50, st, loss, N, vst, vl1, NV), TANDEM_E_INVALID);
    snprintf(path, sizeof path, "%s/no/such/dir/x.png", scratch);
    assert_int_equal(tandem_plot_loss(p, path, 300, 200, st, loss, N, vst, vl1, NV), TANDEM_E_IO);
    tandem_plot_free(p);
}

static void test_mel_image(void **state) {
    (void)state;
    enum { T = 173, M = 80 };
    float *target = malloc(sizeof(float) * T * M), *pred = malloc(sizeof(float) * T * M);
    float lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < T * M; i++) {
        target[i] = tandem_rng_uniform(&rng, -11.5f, 2.0f);
        pred[i] = target[i] + tandem_rng_uniform(&rng, -1.0f, 1.0f);
        lo = fminf(lo, target[i]);
        hi = fmaxf(hi, target[i]);
    }
    int w, h;
    tandem_plot_mel_size(T, M, &w, &h);
    tandem_plot *p = NULL;
    assert_int_equal(tandem_plot_create(w, h, &p), TANDEM_OK);
    char path[400];
    snprintf(path, sizeof path, "%s/mel.png", scratch);
    uint64_t allocs = tandem_alloc_count();
    assert_int_equal(tandem_plot_mel(p, path, target, pred, T, M), TANDEM_OK);
    assert_int_equal(tandem_alloc_count(), allocs);
    int rw, rh;
    unsigned char *img = tandem_test_read_png(path, &rw, &rh);
    assert_int_equal(rw, w);
    assert_int_equal(rh, h);
    assert_int_equal(w, 2 * T + TANDEM_PLOT_MEL_BAR_W);
    int panel = (h - 6) / 2; /* two panels of 2 px per band and a gap */
    assert_int_equal(panel, 2 * M);
    int checked = 0;
    for (int k = 0; k < 400; k++) {
        int t = (int)tandem_rng_int(&rng, 0, T - 1), b = (int)tandem_rng_int(&rng, 0, M - 1), which = k & 1;
        int x = 2 * t + 1, y = which * (panel + 6) + 2 * (M - 1 - b) + 1; /* band 0 at the bottom */
        if (x < 40 && y % (panel + 6) < 12) continue;                     /* under the label text */
        float v = (which ? pred : target)[t * M + b];
        unsigned char want[3];
        tandem_plot_colormap((v - lo) / (hi - lo), want);
        assert_memory_equal(pix(img, w, x, y), want, 3);
        checked++;
    }
    assert_true(checked > 300);
    /* the colour scale right of the panels: the map's top at the top, its bottom at the bottom,
     * and ln-mel values (dark text) beside it */
    unsigned char top[3], bottom[3];
    tandem_plot_colormap(1.0f, top);
    tandem_plot_colormap(0.0f, bottom);
    const int bar_x = 2 * T + 6 + 6;
    assert_memory_equal(pix(img, w, bar_x, 12), top, 3);
    assert_memory_equal(pix(img, w, bar_x, h - 4), bottom, 3);
    int dark = 0;
    for (int y = 0; y < h; y++)
        for (int x = bar_x + 6; x < w; x++) dark += pix(img, w, x, y)[0] < 80 && pix(img, w, x, y)[1] < 80;
    print_message("colour scale: %d dark label pixels\n", dark);
    assert_true(dark > 60);
    free(img);
    /* the colour map runs from dark to light */
    unsigned char c0[3], c1[3];
    tandem_plot_colormap(0.0f, c0);
    tandem_plot_colormap(1.0f, c1);
    assert_true(c0[0] + c0[1] + c0[2] < 150 && c1[0] + c1[1] + c1[2] > 600);
    tandem_plot_colormap(NAN, c1);
    assert_memory_equal(c0, c1, 3);
    /* too big for the canvas */
    assert_int_equal(tandem_plot_mel(p, path, target, pred, T + 1, M), TANDEM_E_INVALID);
    tandem_plot_free(p);
    free(target);
    free(pred);
}

int main(void) {
    rng.s = tandem_test_seed("test_plot");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loss_curve),
        cmocka_unit_test(test_mel_image),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
