/* test_capacity.c — the capacity report (runtime/run/capacity.h) of `tandem pipeline`:
 *   - its arithmetic on statistics the test sets: ms per utterance per core from the loader's
 *     stage totals, the data device's share, capacity = min(CPU, device), headroom against a
 *     measured model, the advice chosen by where the time goes (CPU with libsamplerate, device);
 *   - a real data run on a small corpus (48 kHz and 11025 Hz files) where the data side is made
 *     the limit on purpose (a measured model consuming 10^7 samples/s): the report, ready before
 *     any training step, says the data side is the limit and what to do; the same run against a
 *     model consuming 1 sample/s says the data side keeps up; and with no measured step, the
 *     model's figure is the step cost model's, labelled modelled.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <sndfile.h>

#include "runtime/core/config.h"
#include "runtime/run/capacity.h"
#include "test/fixtures.h"
#include "tandem.h"

static void stats(tandem_pipeline_stats *s, double cpu_resample_ms, double dev_busy_ms) {
    memset(s, 0, sizeof *s);
    s->batches = s->consumed = 10;
    s->wall_ms = 2000;
    s->audio_seconds = 10 * 4 * 2.5; /* 40 utterances of 2.5 s */
    s->data_busy_ms = dev_busy_ms;
    s->stages[TANDEM_STAGE_READ] = (tandem_stage_stat){40, 40, 0, 0};
    s->stages[TANDEM_STAGE_DECODE] = (tandem_stage_stat){40, 120, 0, 0};
    s->stages[TANDEM_STAGE_RESAMPLE] = (tandem_stage_stat){40, cpu_resample_ms, 0, 0};
    s->stages[TANDEM_STAGE_DEVICE_RESAMPLE] = (tandem_stage_stat){10, dev_busy_ms / 2, 0, 0};
}

static void test_arithmetic(void **state) {
    (void)state;
    tandem_pipeline_stats s;
    char text[2048];
    /* CPU: (40 + 120 + 640) ms / 40 files = 20 ms; device 40 ms / 40 utterances = 1 ms */
    stats(&s, 640, 40);
    tandem_capacity c;
    tandem_capacity_from_stats(&s, 4, 1, 0, &c);
    assert_true(fabs(c.cpu_ms_per_utt - 20.0) < 1e-9);
    assert_true(fabs(c.dev_ms_per_utt - 1.0) < 1e-9);
    assert_true(fabs(c.cpu_utt_s - 50.0) < 1e-9); /* one loader thread */
    assert_true(fabs(c.dev_utt_s - 1000.0) < 1e-9);
    assert_true(fabs(c.utt_s - 50.0) < 1e-9);
    assert_true(fabs(c.utt_seconds - 2.5) < 1e-9);
    assert_true(fabs(c.measured_utt_s - 20.0) < 1e-9); /* 40 utterances in 2 s */
    assert_true(fabs(c.cpu_resample_pct - 80.0) < 1e-9);
    tandem_capacity_model(&c, NULL, 100.0);
    assert_true(fabs(tandem_capacity_headroom(&c) - 0.5) < 1e-9);
    tandem_capacity_format(&c, text, sizeof text);
    printf("%s", text);
    assert_non_null(strstr(text, "headroom: 0.50x: the data side is the limit"));
    assert_non_null(strstr(text, "the CPU side (read + decode + CPU resample) is the limit"));
    assert_non_null(strstr(text, "80 % of it is libsamplerate"));
    assert_non_null(strstr(text, "model: 100 samples/s (measured)"));
    /* the device the limit: 400 ms busy over 40 utterances = 10 ms each, half of it resampling */
    stats(&s, 0, 400);
    tandem_capacity_from_stats(&s, 4, 64, 0, &c);
    assert_true(fabs(c.utt_s - 100.0) < 1e-9 && c.cpu_utt_s > c.dev_utt_s);
    tandem_capacity_model(&c, NULL, 1000.0);
    tandem_capacity_format(&c, text, sizeof text);
    printf("%s", text);
    assert_non_null(strstr(text, "advice: the data device is the limit (10.0 ms per utterance, 50 % of it resampling)"));
    /* keeping up: no advice */
    tandem_capacity_model(&c, NULL, 50.0);
    tandem_capacity_format(&c, text, sizeof text);
    assert_non_null(strstr(text, "headroom: 2.00x: the data side keeps up"));
    assert_null(strstr(text, "advice"));
}

static char dir[256];

static void write_corpus(void) {
    assert_int_equal(tandem_test_mkdtemp(dir, sizeof dir, "test_capacity"), 0);
    tandem_test_corpus w;
    tandem_test_corpus_open(&w, dir);
    static float x[48000];
    for (int i = 0; i < 8; i++) {
        const int rate = i % 2 ? 11025 : 48000, n = rate / 2 + 1000 * i;
        for (int k = 0; k < n; k++) x[k] = (float)(0.3 * sin(2 * M_PI * (200.0 + 50 * i) * k / rate));
        char id[8];
        snprintf(id, sizeof id, "c%d", i);
        tandem_test_corpus_add(&w, id, "a short line", x, n, rate, 1, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    }
    tandem_test_corpus_close(&w);
}

static void data_run(double model_samples_s, tandem_data_run_report *r) {
    tandem_config cfg;
    tandem_config_init(&cfg);
    cfg.batch_size = 4;
    cfg.max_frames = 128;
    cfg.num_workers = 2;
    assert_int_equal(tandem_config_check(&cfg), TANDEM_OK);
    tandem_data_run_options o;
    tandem_data_run_options_init(&o);
    o.data_dir = dir;
    o.steps = 6;
    o.backend = TANDEM_BACKEND_HOST;
    o.model_samples_per_s = model_samples_s;
    if (tandem_data_run(&cfg, &o, r) != TANDEM_OK) fail_msg("data run: %s", tandem_last_error());
    printf("model %g samples/s:\n%s", model_samples_s, r->capacity);
}

static void test_data_side_limit_on_purpose(void **state) {
    (void)state;
    write_corpus();
    tandem_data_run_report r;
    data_run(1e7, &r);
    assert_true(r.data_limited);
    assert_true(r.headroom > 0 && r.headroom < 1.0);
    assert_true(r.capacity_utt_s > 0);
    assert_non_null(strstr(r.capacity, "the data side is the limit"));
    assert_non_null(strstr(r.capacity, "advice: "));
    assert_non_null(strstr(r.capacity, "(measured)"));
    data_run(1.0, &r);
    assert_false(r.data_limited);
    assert_non_null(strstr(r.capacity, "the data side keeps up"));
    data_run(0.0, &r); /* no measured step: the cost model's, labelled */
    assert_non_null(strstr(r.capacity, "modelled on an h100"));
    assert_true(r.model_samples_s > 0);
    assert_int_equal(tandem_test_rmtree(dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arithmetic),
        cmocka_unit_test(test_data_side_limit_on_purpose),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
