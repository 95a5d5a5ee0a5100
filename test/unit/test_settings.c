/* test_settings.c — the runtime options (tandem_runtime_set_options, platform/os/settings.c):
 * defaults, strings copied into the library's storage, every bad value rejected with the field
 * and its range named and nothing changed, consistent reads while another thread sets them;
 * and the TANDEM_* environment → options mapping the CLI and the tests use
 * (tools/env_options.c), including the cache directory rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "platform/os/os.h"
#include "platform/os/settings.h"
#include "tandem.h"
#include "test/testutil.h"
#include "tools/env_options.h"

static void set_defaults(void) {
    tandem_runtime_options o;
    tandem_runtime_options_init(&o);
    assert_int_equal(tandem_runtime_set_options(&o), TANDEM_OK);
}

static void test_defaults(void **state) {
    (void)state;
    set_defaults();
    tandem_runtime_options o;
    memset(&o, 0x5a, sizeof o);
    tandem_runtime_get_options(&o);
    assert_null(o.cuda_driver);
    assert_null(o.cublaslt);
    assert_null(o.nvml);
    assert_null(o.fatbin);
    assert_null(o.cache_dir);
    assert_int_equal(o.host_devices, 0);
    assert_int_equal(o.host_threads, 0);
    char buf[TANDEM_RUNTIME_PATH_MAX];
    for (int i = 0; i < TANDEM_SETTING_PATH_COUNT; i++)
        assert_string_equal(tandem_settings_path((tandem_setting_path)i, buf), "");
}

/* The strings are copied: changing the caller's buffers afterwards changes nothing. */
static void test_strings_copied(void **state) {
    (void)state;
    char a[5][64];
    for (int i = 0; i < 5; i++) snprintf(a[i], sizeof a[i], "/opt/lib-%d.so", i);
    tandem_runtime_options o;
    tandem_runtime_options_init(&o);
    o.cuda_driver = a[0];
    o.cublaslt = a[1];
    o.nvml = a[2];
    o.fatbin = a[3];
    o.cache_dir = a[4];
    o.host_devices = 5;
    o.host_threads = 7;
    assert_int_equal(tandem_runtime_set_options(&o), TANDEM_OK);
    for (int i = 0; i < 5; i++) memset(a[i], 'x', 8);
    tandem_runtime_options got;
    tandem_runtime_get_options(&got);
    const char *want[5] = {"/opt/lib-0.so", "/opt/lib-1.so", "/opt/lib-2.so", "/opt/lib-3.so", "/opt/lib-4.so"};
    assert_string_equal(got.cuda_driver, want[0]);
    assert_string_equal(got.cublaslt, want[1]);
    assert_string_equal(got.nvml, want[2]);
    assert_string_equal(got.fatbin, want[3]);
    assert_string_equal(got.cache_dir, want[4]);
    assert_int_equal(got.host_devices, 5);
    assert_int_equal(got.host_threads, 7);
    char buf[TANDEM_RUNTIME_PATH_MAX];
    assert_string_equal(tandem_settings_path(TANDEM_SETTING_FATBIN, buf), want[3]);
    assert_int_equal(tandem_settings_host_devices(), 5);
    assert_int_equal(tandem_settings_host_threads(), 7);
    /* set(get()) keeps them; "" is the same as unset */
    got.nvml = "";
    assert_int_equal(tandem_runtime_set_options(&got), TANDEM_OK);
    tandem_runtime_get_options(&got);
    assert_string_equal(got.cuda_driver, want[0]);
    assert_null(got.nvml);
    set_defaults();
}

/* A rejected call names the field and the accepted range, and leaves the options as they were. */
static void expect_rejected(const tandem_runtime_options *bad, const char *field, const char *range) {
    tandem_runtime_options before, after;
    tandem_runtime_get_options(&before);
    char before_fatbin[64];
    snprintf(before_fatbin, sizeof before_fatbin, "%s", before.fatbin ? before.fatbin : "");
    assert_int_equal(tandem_runtime_set_options(bad), TANDEM_E_INVALID);
    if (!strstr(tandem_last_error(), field) || !strstr(tandem_last_error(), range))
        fail_msg("message \"%s\" does not name %s and %s", tandem_last_error(), field, range);
    tandem_runtime_get_options(&after);
    assert_string_equal(after.fatbin ? after.fatbin : "", before_fatbin);
    assert_int_equal(after.host_devices, before.host_devices);
    assert_int_equal(after.host_threads, before.host_threads);
}

static void test_bad_values(void **state) {
    (void)state;
    tandem_runtime_options good;
    tandem_runtime_options_init(&good);
    good.fatbin = "/kept.fatbin";
    good.host_devices = 3;
    good.host_threads = 2;
    assert_int_equal(tandem_runtime_set_options(&good), TANDEM_OK);

    char range[64];
    static char longest[TANDEM_RUNTIME_PATH_MAX + 1];
    memset(longest, 'a', TANDEM_RUNTIME_PATH_MAX);
    longest[TANDEM_RUNTIME_PATH_MAX] = '\0'; /* one byte more than fits */
    snprintf(range, sizeof range, "at most %d bytes", TANDEM_RUNTIME_PATH_MAX - 1);
    const char *names[] = {"cuda_driver", "cublaslt", "nvml", "fatbin", "cache_dir"};
    for (int i = 0; i < 5; i++) {
        tandem_runtime_options o = good;
        const char **f[] = {&o.cuda_driver, &o.cublaslt, &o.nvml, &o.fatbin, &o.cache_dir};
        *f[i] = longest;
        expect_rejected(&o, names[i], range);
        longest[TANDEM_RUNTIME_PATH_MAX - 1] = '\0'; /* exactly fits */
        assert_int_equal(tandem_runtime_set_options(&o), TANDEM_OK);
        longest[TANDEM_RUNTIME_PATH_MAX - 1] = 'a';
        assert_int_equal(tandem_runtime_set_options(&good), TANDEM_OK);
    }

    snprintf(range, sizeof range, "expected 1 to %d", TANDEM_MAX_HOST_DEVICES);
    const int bad_devices[] = {TANDEM_HOST_DEVICES_NONE - 1, TANDEM_MAX_HOST_DEVICES + 1, -1000, 1 << 30};
    for (size_t i = 0; i < sizeof bad_devices / sizeof bad_devices[0]; i++) {
        tandem_runtime_options o = good;
        o.host_devices = bad_devices[i];
        expect_rejected(&o, "host_devices", range);
    }
    snprintf(range, sizeof range, "expected 1 to %d", TANDEM_MAX_HOST_THREADS);
    const int bad_threads[] = {-1, TANDEM_MAX_HOST_THREADS + 1, 1 << 30};
    for (size_t i = 0; i < sizeof bad_threads / sizeof bad_threads[0]; i++) {
        tandem_runtime_options o = good;
        o.host_threads = bad_threads[i];
        expect_rejected(&o, "host_threads", range);
    }
    expect_rejected(NULL, "options", "NULL");

    const int ok_devices[] = {TANDEM_HOST_DEVICES_NONE, 0, 1, TANDEM_MAX_HOST_DEVICES};
    for (size_t i = 0; i < sizeof ok_devices / sizeof ok_devices[0]; i++) {
        tandem_runtime_options o = good;
        o.host_devices = ok_devices[i];
        assert_int_equal(tandem_runtime_set_options(&o), TANDEM_OK);
    }
    int count = -1;
    assert_int_equal(tandem_device_count(TANDEM_BACKEND_HOST, &count), TANDEM_OK);
    assert_int_equal(count, TANDEM_MAX_HOST_DEVICES);
    set_defaults();
}

/* Readers on other threads see one whole value or the other, never a mix. */
typedef struct {
    const char *a, *b;
    volatile int stop;
    int torn;
    uint64_t reads;
} race;

static void *reader_main(void *arg) {
    race *r = arg;
    char buf[TANDEM_RUNTIME_PATH_MAX];
    while (!r->stop) {
        const char *v = tandem_settings_path(TANDEM_SETTING_CACHE_DIR, buf);
        if (strcmp(v, r->a) != 0 && strcmp(v, r->b) != 0) r->torn++;
        r->reads++;
    }
    return NULL;
}

static void test_set_while_reading(void **state) {
    (void)state;
    static char a[3000], b[3000];
    memset(a, 'a', sizeof a - 1);
    memset(b, 'b', sizeof b - 1);
    b[100] = '\0'; /* different lengths too */
    tandem_runtime_options o;
    tandem_runtime_options_init(&o);
    o.cache_dir = a;
    assert_int_equal(tandem_runtime_set_options(&o), TANDEM_OK);
    race r[2];
    tandem_thread t[2];
    for (int i = 0; i < 2; i++) {
        r[i] = (race){a, b, 0, 0, 0};
        assert_int_equal(tandem_thread_start(&t[i], reader_main, &r[i], "reader"), TANDEM_OK);
    }
    /* Keep writing until both readers have overlapped many writes: on a loaded machine a
     * reader thread may not be scheduled during a fixed number of writes (bounded: 30 s). */
    const uint64_t t_end = tandem_now_ns() + 30ull * 1000000000ull;
    tandem_status st = TANDEM_OK;
    for (int k = 0; st == TANDEM_OK; k++) {
        o.cache_dir = k % 2 ? a : b;
        st = tandem_runtime_set_options(&o);
        if (k >= 20000 && ((volatile race *)&r[0])->reads > 1000 && ((volatile race *)&r[1])->reads > 1000) break;
        if ((k & 1023) == 0 && tandem_now_ns() > t_end) break;
    }
    for (int i = 0; i < 2; i++) { /* join both before any assertion can return early */
        r[i].stop = 1;
        tandem_thread_join(&t[i]);
    }
    assert_int_equal(st, TANDEM_OK);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r[i].torn, 0);
        assert_true(r[i].reads > 0);
    }
    set_defaults();
}

/* ---- the environment → options mapping (tools/env_options.c) ---- */

static const char *const env_names[] = {"TANDEM_CUDA_DRIVER", "TANDEM_CUBLASLT", "TANDEM_NVML",
                                        "TANDEM_FATBIN", "TANDEM_HOST_DEVICES", "TANDEM_HOST_THREADS",
                                        "TANDEM_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
#define N_ENV (sizeof env_names / sizeof env_names[0])
static char *saved_env[N_ENV];

static int save_env(void **state) {
    (void)state;
    for (size_t i = 0; i < N_ENV; i++) {
        const char *v = getenv(env_names[i]);
        saved_env[i] = v ? strdup(v) : NULL;
        unsetenv(env_names[i]);
    }
    return 0;
}

static int restore_env(void **state) {
    (void)state;
    for (size_t i = 0; i < N_ENV; i++) {
        if (saved_env[i]) setenv(env_names[i], saved_env[i], 1);
        else unsetenv(env_names[i]);
        free(saved_env[i]);
        saved_env[i] = NULL;
    }
    return cli_env_apply(NULL, 0) == TANDEM_OK ? 0 : -1;
}

/* cli_env_read's cache directory for the environment as it is now (NULL: none). */
static const char *env_cache_dir(char *buf) {
    tandem_runtime_options o;
    assert_int_equal(cli_env_read(&o, buf, NULL, 0), TANDEM_OK);
    return o.cache_dir;
}

static void test_env_cache_dir_rule(void **state) {
    (void)state;
    char buf[TANDEM_RUNTIME_PATH_MAX];
    assert_null(env_cache_dir(buf)); /* nothing set: no persistent cache */
    setenv("HOME", "/home/someone", 1);
    assert_string_equal(env_cache_dir(buf), "/home/someone/.cache/tandem");
    setenv("XDG_CACHE_HOME", "relative/cache", 1); /* the XDG spec ignores relative values */
    assert_string_equal(env_cache_dir(buf), "/home/someone/.cache/tandem");
    setenv("XDG_CACHE_HOME", "/var/cache/me", 1);
    assert_string_equal(env_cache_dir(buf), "/var/cache/me/tandem");
    setenv("TANDEM_CACHE_DIR", "", 1); /* empty = unset */
    assert_string_equal(env_cache_dir(buf), "/var/cache/me/tandem");
    setenv("TANDEM_CACHE_DIR", "/tmp/tc", 1);
    assert_string_equal(env_cache_dir(buf), "/tmp/tc");
    assert_int_equal(cli_env_apply(NULL, 0), TANDEM_OK);
    tandem_runtime_options o;
    tandem_runtime_get_options(&o);
    assert_string_equal(o.cache_dir, "/tmp/tc");
}

static void test_env_values(void **state) {
    (void)state;
    char buf[TANDEM_RUNTIME_PATH_MAX], err[256];
    tandem_runtime_options o;
    setenv("TANDEM_CUDA_DRIVER", "/d/libcuda.so.1", 1);
    setenv("TANDEM_CUBLASLT", "none", 1);
    setenv("TANDEM_NVML", "", 1);
    setenv("TANDEM_FATBIN", "/f/t.fatbin", 1);
    setenv("TANDEM_HOST_DEVICES", "0", 1);
    setenv("TANDEM_HOST_THREADS", "5", 1);
    assert_int_equal(cli_env_read(&o, buf, err, sizeof err), TANDEM_OK);
    assert_string_equal(o.cuda_driver, "/d/libcuda.so.1");
    assert_string_equal(o.cublaslt, "none");
    assert_null(o.nvml);
    assert_string_equal(o.fatbin, "/f/t.fatbin");
    assert_int_equal(o.host_devices, TANDEM_HOST_DEVICES_NONE); /* the variable's 0 is "none" */
    assert_int_equal(o.host_threads, 5);
    setenv("TANDEM_HOST_DEVICES", "", 1);
    assert_int_equal(cli_env_read(&o, buf, err, sizeof err), TANDEM_OK);
    assert_int_equal(o.host_devices, 0); /* the default */

    const struct {
        const char *name, *value, *want;
    } bad[] = {
        {"TANDEM_HOST_DEVICES", "-1", "TANDEM_HOST_DEVICES='-1': expected an integer from 0 to"},
        {"TANDEM_HOST_DEVICES", "65", "TANDEM_HOST_DEVICES='65': expected an integer from 0 to"},
        {"TANDEM_HOST_DEVICES", "2 ", "TANDEM_HOST_DEVICES='2 ': expected an integer from 0 to"},
        {"TANDEM_HOST_THREADS", "0", "TANDEM_HOST_THREADS='0': expected an integer from 1 to"},
        {"TANDEM_HOST_THREADS", "99999999999", "TANDEM_HOST_THREADS='99999999999': expected an integer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *keep = getenv(bad[i].name);
        char saved[64];
        snprintf(saved, sizeof saved, "%s", keep ? keep : "");
        setenv(bad[i].name, bad[i].value, 1);
        assert_int_equal(cli_env_apply(err, sizeof err), TANDEM_E_INVALID);
        if (!strstr(err, bad[i].want)) fail_msg("error \"%s\", want \"%s...\"", err, bad[i].want);
        setenv(bad[i].name, saved, 1);
    }
    static char longest[TANDEM_RUNTIME_PATH_MAX + 1];
    memset(longest, '/', TANDEM_RUNTIME_PATH_MAX);
    setenv("TANDEM_FATBIN", longest, 1);
    assert_int_equal(cli_env_apply(err, sizeof err), TANDEM_E_INVALID);
    assert_non_null(strstr(err, "TANDEM_FATBIN: a path of"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_strings_copied),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_set_while_reading),
        cmocka_unit_test_setup_teardown(test_env_cache_dir_rule, save_env, restore_env),
        cmocka_unit_test_setup_teardown(test_env_values, save_env, restore_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
