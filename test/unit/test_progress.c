/* test_progress.c — the progress line of `tandem train` (tools/progress.c, compiled in here: the
 * tools are not part of libtandem.a), drawn from the trainer's per-step metrics: the format
 * (step/total, loss, rates, busy %, ETA in s / m / h, truncation), plain lines every N steps and
 * at the last step on a file, a carriage-return line cleared to its end on a pseudo-terminal, a
 * message on its own line, and force_plain overriding the terminal. */
#include <pty.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tandem.h"
#include "tools/progress.c"

static tandem_step_metrics fields(int64_t step, int64_t total) {
    tandem_step_metrics v;
    memset(&v, 0, sizeof v);
    v.step = step;
    v.total_steps = total;
    v.loss = 0.8123;
    v.samples_per_s = 41.25;
    v.x_realtime = 12.5;
    v.data_wait_ms = 0.31;
    v.model_busy_pct = 97.2;
    v.data_busy_pct = 64.0;
    v.eta_s = 192.0;
    return v;
}

static void test_progress_format(void **state) {
    (void)state;
    char buf[256];
    tandem_step_metrics v = fields(120, 2000);
    cli_progress_format(&v, buf, sizeof buf);
    print_message("progress: %s\n", buf);
    assert_non_null(strstr(buf, "step 120/2000"));
    assert_non_null(strstr(buf, "loss 0.8123"));
    assert_non_null(strstr(buf, "41.2 samples/s"));
    assert_non_null(strstr(buf, "12.5x RT"));
    assert_non_null(strstr(buf, "wait 0.3 ms"));
    assert_non_null(strstr(buf, "model 97 % \xc2\xb7 data 64 %"));
    assert_non_null(strstr(buf, "ETA 3m12s"));
    v.eta_s = 3 * 3600 + 5 * 60;
    cli_progress_format(&v, buf, sizeof buf);
    assert_non_null(strstr(buf, "ETA 3h05m"));
    v.eta_s = -1;
    cli_progress_format(&v, buf, sizeof buf);
    assert_non_null(strstr(buf, "ETA ?"));
    char tiny[10];
    assert_int_equal(cli_progress_format(&v, tiny, sizeof tiny), 9);
    assert_int_equal(strlen(tiny), 9);
}

static void test_progress_plain(void **state) {
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    cli_progress p;
    cli_progress_init(&p, f, 25, 0);
    assert_int_equal(p.tty, 0);
    for (int s = 1; s <= 110; s++) {
        tandem_step_metrics v = fields(s, 110);
        cli_progress_on_step(&p, &v); /* as the trainer calls it */
    }
    cli_progress_message(&p, "checkpoint written");
    cli_progress_finish(&p);
    rewind(f);
    char line[512];
    int n = 0;
    const int want[] = {25, 50, 75, 100, 110};
    while (fgets(line, sizeof line, f)) {
        assert_null(strchr(line, '\r'));
        if (n < 5) {
            char expect[32];
            snprintf(expect, sizeof expect, "step %d/110 ", want[n]);
            assert_non_null(strstr(line, expect));
        } else {
            assert_string_equal(line, "checkpoint written\n");
        }
        n++;
    }
    assert_int_equal(n, 6);
    fclose(f);
}

static void test_progress_tty(void **state) {
    (void)state;
    int master, slave;
    if (openpty(&master, &slave, NULL, NULL, NULL) != 0) {
        print_message("no pseudo-terminal here; skipped\n");
        skip();
    }
    FILE *out = fdopen(slave, "w");
    assert_non_null(out);
    cli_progress p;
    cli_progress_init(&p, out, 25, 0);
    assert_int_equal(p.tty, 1);
    for (int s = 1; s <= 3; s++) {
        tandem_step_metrics v = fields(s, 3);
        cli_progress_update(&p, &v);
    }
    cli_progress_message(&p, "note");
    cli_progress_finish(&p);
    fclose(out);
    char buf[4096];
    size_t got = 0;
    for (ssize_t n; got < sizeof buf - 1 && (n = read(master, buf + got, sizeof buf - 1 - got)) > 0;)
        got += (size_t)n; /* ends with EIO once the slave side is closed and drained */
    assert_true(got > 0);
    buf[got] = 0;
    close(master);
    /* every update is a carriage-return line, cleared to its end; the message gets its own line */
    assert_non_null(strstr(buf, "\rstep 1/3 "));
    assert_non_null(strstr(buf, "\rstep 2/3 "));
    assert_non_null(strstr(buf, "\rstep 3/3 "));
    assert_non_null(strstr(buf, "\033[K"));
    assert_non_null(strstr(buf, "note"));
    /* force_plain overrides the terminal */
    assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
    out = fdopen(slave, "w");
    cli_progress_init(&p, out, 25, 1);
    assert_int_equal(p.tty, 0);
    fclose(out);
    close(master);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_progress_format),
        cmocka_unit_test(test_progress_plain),
        cmocka_unit_test(test_progress_tty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
