/* test_metrics.c — metrics.jsonl lines (fields by name, exact round trip of the numbers,
 * NaN/Inf as null, escaping, one flushed line per step, append vs truncate, over-long lines
 * and repeated fields refused without writing). The progress line moved to tools/
 * (test_progress.c). */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/report/metrics.h"
#include "test/fixtures.h"

static tandem_rng rng;
static char scratch[256];

static int setup(void **state) {
    (void)state;
    return tandem_test_mkdtemp(scratch, sizeof scratch, "test_metrics");
}
static int teardown(void **state) {
    (void)state;
    return tandem_test_rmtree(scratch);
}

static int read_lines(const char *path, char lines[][1024], int max) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int n = 0;
    while (n < max && fgets(lines[n], 1024, f)) n++;
    fclose(f);
    return n;
}

/* The raw text of field `name` in a JSON line (value up to ',' or '}'). */
static int field(const char *line, const char *name, char *val, size_t cap) {
    char key[128];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *p = strstr(line, key);
    if (!p) return 0;
    p += strlen(key);
    size_t n = strcspn(p, ",}");
    if (n >= cap) n = cap - 1;
    memcpy(val, p, n);
    val[n] = 0;
    return 1;
}

static void test_jsonl(void **state) {
    (void)state;
    char path[400];
    snprintf(path, sizeof path, "%s/metrics.jsonl", scratch);
    tandem_metrics *m = NULL;
    assert_int_equal(tandem_metrics_open(path, 0, &m), TANDEM_OK);
    float loss[5];
    uint64_t allocs = tandem_alloc_count();
    for (int s = 0; s < 5; s++) {
        loss[s] = tandem_rng_uniform(&rng, 0.0f, 3.0f) * powf(10.0f, (float)tandem_rng_int(&rng, -8, 8));
        tandem_metrics_begin(m, s * 10);
        tandem_metrics_set(m, "loss", loss[s]);
        tandem_metrics_set(m, "lr", 1e-3);
        tandem_metrics_set(m, "nan", NAN);
        tandem_metrics_set(m, "inf", -INFINITY);
        tandem_metrics_set_int(m, "big", 9007199254740993LL);
        tandem_metrics_set(m, "we\"ird\\name", 1.5);
        assert_int_equal(tandem_metrics_end(m), TANDEM_OK);
        /* flushed per line: visible before close */
        char lines[8][1024];
        assert_int_equal(read_lines(path, lines, 8), s + 1);
    }
    assert_int_equal(tandem_alloc_count(), allocs);
    /* a repeated field: refused, nothing written */
    tandem_metrics_begin(m, 99);
    tandem_metrics_set(m, "loss", 1);
    tandem_metrics_set(m, "loss", 2);
    assert_int_equal(tandem_metrics_end(m), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "loss"));
    /* an over-long line: refused, nothing written, the field named */
    tandem_metrics_begin(m, 100);
    char name[64];
    for (int i = 0; i < 400; i++) {
        snprintf(name, sizeof name, "field_number_%d", i);
        tandem_metrics_set(m, name, i);
    }
    assert_int_equal(tandem_metrics_end(m), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "field_number_"));
    tandem_metrics_close(m);

    char lines[16][1024];
    int n = read_lines(path, lines, 16);
    assert_int_equal(n, 5);
    for (int s = 0; s < 5; s++) {
        char v[64];
        assert_int_equal(lines[s][0], '{');
        assert_non_null(strstr(lines[s], "}\n"));
        assert_true(field(lines[s], "step", v, sizeof v));
        assert_int_equal(atoi(v), s * 10);
        assert_true(field(lines[s], "loss", v, sizeof v));
        assert_true((float)strtod(v, NULL) == loss[s]); /* %.9g round-trips a float */
        assert_true(field(lines[s], "nan", v, sizeof v));
        assert_string_equal(v, "null");
        assert_true(field(lines[s], "inf", v, sizeof v));
        assert_string_equal(v, "null");
        assert_true(field(lines[s], "big", v, sizeof v));
        assert_string_equal(v, "9007199254740993");
        assert_non_null(strstr(lines[s], "\"we\\\"ird\\\\name\":1.5"));
    }
    /* append keeps the old lines; truncate drops them */
    assert_int_equal(tandem_metrics_open(path, 1, &m), TANDEM_OK);
    tandem_metrics_begin(m, 50);
    assert_int_equal(tandem_metrics_end(m), TANDEM_OK);
    tandem_metrics_close(m);
    assert_int_equal(read_lines(path, lines, 16), 6);
    assert_string_equal(lines[5], "{\"step\":50}\n");
    assert_int_equal(tandem_metrics_open(path, 0, &m), TANDEM_OK);
    tandem_metrics_close(m);
    assert_int_equal(read_lines(path, lines, 16), 0);
    char bad[400];
    snprintf(bad, sizeof bad, "%s/no/such/dir/m.jsonl", scratch);
    assert_int_equal(tandem_metrics_open(bad, 0, &m), TANDEM_E_IO);
}

int main(void) {
    rng.s = tandem_test_seed("test_metrics");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jsonl),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
