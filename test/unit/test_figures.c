/* test_figures.c — runtime/report/figures.h, the figure state shared by the trainer and `tandem plot`:
 *   * decimation: N random points offered to a history of capacity C keep exactly the points
 *     whose index is a multiple of s = the smallest power of two with ceil(N / s) <= C
 *     (computed here from N and C alone), with their values;
 *   * rewind: a metrics file whose run was resumed from step R (lines R+1.. repeated with new
 *     values) gives the same history as the trainer's path (the lines up to the resume
 *     point, rewind(R + 1), then the resumed points); without decimation that is steps
 *     1..end with the resumed values;
 *   * metrics.jsonl parsing: null → NaN, a validation-only line, blank, malformed and over-long
 *     lines (counted as bad), a missing file (TANDEM_E_IO);
 *   * both PNGs written, decoded with libpng at their sizes, with no runtime allocation after
 *     create; the mel figure refused before set_mel and for too many frames.
 * Seed printed; replay with TANDEM_TEST_SEED. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "runtime/report/figures.h"
#include "runtime/report/plot.h"
#include "test/fixtures.h"

static tandem_rng rng;
static char scratch[256];

static int setup(void **state) {
    (void)state;
    return tandem_test_mkdtemp(scratch, sizeof scratch, "test_figures");
}
static int teardown(void **state) {
    (void)state;
    return tandem_test_rmtree(scratch);
}

static void test_decimation(void **state) {
    (void)state;
    static const int caps[] = {2, 8, 64};
    static float values[5000];
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        const int C = caps[c];
        for (int trial = 0; trial < 4; trial++) {
            const int N = (int)tandem_rng_int(&rng, 1, 5000);
            tandem_figures *f = NULL;
            assert_int_equal(tandem_figures_create(C, 0, &f), TANDEM_OK);
            const int64_t first = tandem_rng_int(&rng, 0, 100), every = tandem_rng_int(&rng, 1, 10);
            for (int i = 0; i < N; i++) {
                values[i] = tandem_rng_uniform(&rng, 0.1f, 5.0f);
                tandem_figures_add_loss(f, first + i * every, values[i]);
            }
            int64_t s = 1;
            while ((N + s - 1) / s > C) s *= 2;
            const int want_n = (int)((N + s - 1) / s);
            tandem_figures_series tr, va;
            tandem_figures_history(f, &tr, &va);
            printf("capacity %d, %d points: stride %lld (expected %lld), %d kept (expected %d)\n", C, N,
                   (long long)tr.stride, (long long)s, tr.n, want_n);
            assert_int_equal(tr.stride, s);
            assert_int_equal(tr.n, want_n);
            assert_int_equal(va.n, 0);
            for (int k = 0; k < tr.n; k++) {
                assert_true(tr.step[k] == (float)(first + k * s * every));
                assert_true(tr.value[k] == values[k * s]);
            }
            tandem_figures_free(f);
        }
    }
}

/* Lines {"step":i,"loss":v} for steps [a, b] with values base + step / 1024 (floats: the printed values parse back exactly). */
static void append_lines(FILE *f, int a, int b, double base) {
    for (int i = a; i <= b; i++) fprintf(f, "{\"step\":%d,\"loss\":%.9g,\"lr\":0.001}\n", i, base + i / 1024.0);
}

static void same_history(const tandem_figures *a, const tandem_figures *b) {
    tandem_figures_series ta, tb;
    tandem_figures_history(a, &ta, NULL);
    tandem_figures_history(b, &tb, NULL);
    assert_int_equal(ta.n, tb.n);
    assert_int_equal(ta.stride, tb.stride);
    assert_memory_equal(ta.step, tb.step, (size_t)ta.n * sizeof(float));
    assert_memory_equal(ta.value, tb.value, (size_t)ta.n * sizeof(float));
}

static void test_rewind(void **state) {
    (void)state;
    char path[400], cut[400];
    snprintf(path, sizeof path, "%s/resumed.jsonl", scratch);
    snprintf(cut, sizeof cut, "%s/cut.jsonl", scratch);
    static const int caps[] = {4096, 16};
    for (int c = 0; c < 2; c++) {
        const int R = (int)tandem_rng_int(&rng, 10, 40), end = R + (int)tandem_rng_int(&rng, 20, 60);
        const int killed_at = R + (int)tandem_rng_int(&rng, 1, 15); /* logged past the checkpoint */
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        append_lines(f, 1, killed_at, 1.0);
        append_lines(f, R + 1, end, 2.0); /* the resumed run's values differ */
        fclose(f);
        f = fopen(cut, "w");
        assert_non_null(f);
        append_lines(f, 1, killed_at, 1.0);
        fclose(f);
        /* `tandem plot`: the whole file */
        tandem_figures *a = NULL, *b = NULL;
        assert_int_equal(tandem_figures_create(caps[c], 0, &a), TANDEM_OK);
        int lines = 0, bad = 0;
        assert_int_equal(tandem_figures_load_metrics(a, path, &lines, &bad), TANDEM_OK);
        assert_int_equal(lines, killed_at + end - R);
        assert_int_equal(bad, 0);
        /* the trainer: the file as the first run left it, rewind(R + 1), the resumed points */
        assert_int_equal(tandem_figures_create(caps[c], 0, &b), TANDEM_OK);
        assert_int_equal(tandem_figures_load_metrics(b, cut, &lines, &bad), TANDEM_OK);
        tandem_figures_rewind(b, R + 1);
        for (int i = R + 1; i <= end; i++) tandem_figures_add_loss(b, i, 2.0 + i / 1024.0);
        same_history(a, b);
        tandem_figures_series tr;
        tandem_figures_history(a, &tr, NULL);
        printf("resume at %d (first run logged to %d, resumed to %d), capacity %d: %d points, stride %lld\n",
               R, killed_at, end, caps[c], tr.n, (long long)tr.stride);
        if (tr.stride == 1) { /* every step once, the resumed values after R */
            assert_int_equal(tr.n, end);
            for (int k = 0; k < tr.n; k++) {
                const int step = k + 1;
                assert_true(tr.step[k] == (float)step);
                assert_true(tr.value[k] == (float)((step <= R ? 1.0 : 2.0) + step / 1024.0));
            }
        } else {
            assert_true(tr.n <= caps[c]);
            for (int k = 1; k < tr.n; k++) assert_true(tr.step[k] > tr.step[k - 1]); /* in order */
            assert_true(tr.step[tr.n - 1] <= (float)end);
        }
        /* a rewind past the last point changes nothing */
        tandem_figures_rewind(b, end + 1);
        same_history(a, b);
        tandem_figures_free(a);
        tandem_figures_free(b);
    }
}

static void test_parse(void **state) {
    (void)state;
    char path[400];
    snprintf(path, sizeof path, "%s/m.jsonl", scratch);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"step\":0,\"val_l1\":3.5,\"val_stop_bce\":0.7}\n"
          "{\"step\":1,\"loss\":4.25,\"l1\":4,\"stop_bce\":0.5,\"ga\":0.25,\"step_ms\":12.5}\n"
          "\n"
          "not json at all\n"
          "{\"loss\":1}\n"
          "{\"step\":2,\"loss\":null,\"skipped\":1}\n",
          f);
    fputc('{', f);
    for (int i = 0; i < 10000; i++) fputc(' ', f); /* longer than any line the metrics write */
    fputs("\"step\":9,\"loss\":1}\n", f);
    fputs("{\"step\":3,\"loss\":4.0,\"val_l1\":3.25}\n", f);
    fclose(f);
    tandem_figures *fig = NULL;
    assert_int_equal(tandem_figures_create(64, 0, &fig), TANDEM_OK);
    int lines = 0, bad = 0;
    assert_int_equal(tandem_figures_load_metrics(fig, path, &lines, &bad), TANDEM_OK);
    assert_int_equal(lines, 4);
    assert_int_equal(bad, 3); /* the text, the line without step, the over-long line */
    tandem_figures_series tr, va;
    tandem_figures_history(fig, &tr, &va);
    assert_int_equal(tr.n, 3);
    assert_true(tr.step[0] == 1 && tr.value[0] == 4.25f);
    assert_true(tr.step[1] == 2 && isnan(tr.value[1]));
    assert_true(tr.step[2] == 3 && tr.value[2] == 4.0f);
    assert_int_equal(va.n, 2);
    assert_true(va.step[0] == 0 && va.value[0] == 3.5f);
    assert_true(va.step[1] == 3 && va.value[1] == 3.25f);
    /* the loss's terms, from the lines that have l1 (not val_l1's or val_stop_bce's) */
    tandem_figures_series term[TANDEM_FIGURES_TERMS];
    tandem_figures_terms(fig, term);
    const float want[TANDEM_FIGURES_TERMS] = {4.0f, 0.5f, 0.25f};
    for (int k = 0; k < TANDEM_FIGURES_TERMS; k++) {
        assert_int_equal(term[k].n, 1);
        assert_true(term[k].step[0] == 1 && term[k].value[0] == want[k]);
    }
    snprintf(path, sizeof path, "%s/missing.jsonl", scratch);
    assert_int_equal(tandem_figures_load_metrics(fig, path, &lines, &bad), TANDEM_E_IO);
    printf("missing file: %s\n", tandem_last_error());
    assert_non_null(strstr(tandem_last_error(), "missing.jsonl"));
    tandem_figures_free(fig);
    assert_int_equal(tandem_figures_create(3, 0, &fig), TANDEM_E_INVALID); /* odd capacity */
    assert_null(fig);
}

static void test_write(void **state) {
    (void)state;
    const int F = 1200; /* past 1024 frames: 1 px per frame */
    tandem_figures *fig = NULL;
    assert_int_equal(tandem_figures_create(16, F, &fig), TANDEM_OK);
    assert_int_equal(tandem_figures_max_frames(fig), F);
    const uint64_t allocs = tandem_alloc_count();
    assert_int_equal(tandem_figures_write_mel(fig, scratch), TANDEM_E_INVALID); /* no mel yet */
    for (int i = 1; i <= 100; i++) { /* decimates twice over */
        tandem_figures_add_loss(fig, i * 10, 3.0 * exp(-i / 30.0) + tandem_rng_uniform(&rng, 0, 0.05f));
        if (i % 10 == 0) tandem_figures_add_val(fig, i * 10, 2.5 * exp(-i / 40.0));
    }
    float *tg = tandem_figures_mel_target(fig), *pr = tandem_figures_mel_pred(fig);
    for (int frames = 1; frames <= F; frames += F - 1) {
        for (int i = 0; i < frames * 80; i++) {
            tg[i] = tandem_rng_uniform(&rng, -11.5f, 2.0f);
            pr[i] = tg[i] + tandem_rng_uniform(&rng, -1.0f, 1.0f);
        }
        assert_int_equal(tandem_figures_set_mel(fig, frames, 7), TANDEM_OK);
        assert_int_equal(tandem_figures_write_loss(fig, scratch), TANDEM_OK);
        assert_int_equal(tandem_figures_write_mel(fig, scratch), TANDEM_OK);
        assert_int_equal(tandem_alloc_count(), allocs);
        int64_t step = 0;
        assert_int_equal(tandem_figures_mel_frames(fig, &step), frames);
        assert_int_equal(step, 7);
        char path[400];
        int w, h, mw, mh;
        snprintf(path, sizeof path, "%s/%s", scratch, TANDEM_FIGURES_LOSS_FILE);
        unsigned char *img = tandem_test_read_png(path, &w, &h);
        assert_int_equal(w, TANDEM_FIGURES_LOSS_W);
        assert_int_equal(h, TANDEM_FIGURES_LOSS_H);
        free(img);
        snprintf(path, sizeof path, "%s/%s", scratch, TANDEM_FIGURES_MEL_FILE);
        img = tandem_test_read_png(path, &w, &h);
        tandem_plot_mel_size(frames, 80, &mw, &mh);
        printf("mel of %d frames: %d x %d pixels\n", frames, w, h);
        assert_int_equal(w, mw);
        assert_int_equal(h, mh);
        free(img);
    }
    assert_int_equal(tandem_figures_set_mel(fig, F + 1, 0), TANDEM_E_INVALID);
    tandem_figures_free(fig);
}

/* A FIFO where metrics.jsonl should be is refused at once, never opened blocking. */
typedef struct fifo_call {
    const char *path;
    tandem_status st;
} fifo_call;
static void load_fifo_call(void *arg) {
    fifo_call *c = arg;
    tandem_figures *f = NULL;
    c->st = tandem_figures_create(16, 16, &f);
    int lines = 0, bad = 0;
    if (c->st == TANDEM_OK) c->st = tandem_figures_load_metrics(f, c->path, &lines, &bad);
    tandem_figures_free(f);
}
static void test_metrics_fifo(void **state) {
    (void)state;
    char dir[256], path[320];
    assert_int_equal(tandem_test_mkdtemp(dir, sizeof dir, "figures_fifo"), 0);
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    fifo_call c = {path, TANDEM_OK};
    double ms = 0;
    if (!tandem_test_finishes_within(load_fifo_call, &c, 5000, &ms))
        fail_msg("loading metrics from a FIFO did not return within 5 s");
    assert_int_not_equal(c.st, TANDEM_OK);
    tandem_test_rmtree(dir);
}

int main(void) {
    rng.s = tandem_test_seed("test_figures");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decimation),
        cmocka_unit_test(test_rewind),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_write),
        cmocka_unit_test(test_metrics_fifo),
    };
    return cmocka_run_group_tests_name("figures", tests, setup, teardown);
}
