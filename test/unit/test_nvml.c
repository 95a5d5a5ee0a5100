/* test_nvml.c — platform/cuda/nvml.c through the stand-in NVML and driver
 * ($(BUILD)/test/fakecuda/libnvidia-ml.so.1 + libcuda.so.1, loaded via TANDEM_NVML and
 * TANDEM_CUDA_DRIVER): both CUDA devices sampled and compared with the values the stand-in
 * documents (test/fakecuda/fc_nvml.c) for that CUDA ordinal — the stand-in enumerates NVML
 * devices in the reverse of CUDA's order, so a match by index instead of PCI bus id fails —
 * memory in use following random allocations, bad ordinals, concurrent sampling, no allocation,
 * the stand-in's own strictness. NVML opens once per process, so the other situations run in
 * child processes: no library (TANDEM_NVML=/nonexistent), disabled (none), a GPU without power
 * readings, no CUDA driver. Also compares nvml_api.h's values with an installed nvml.h (skipped
 * when none is found). Skipped when the stand-in has not been built. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>

#include "platform/cuda/cuda_driver.h"
#include "platform/cuda/nvml.h"
#include "platform/cuda/nvml_api.h"
#include "tandem.h"
#include "test/fixtures.h"
#include "tools/env_options.h"

#define FAKE_DIR TANDEM_TEST_BUILD_DIR "/test/fakecuda"
#define FAKE_DRIVER FAKE_DIR "/libcuda.so.1"
#define FAKE_NVML FAKE_DIR "/libnvidia-ml.so.1"
#define ALL_FIELDS                                                                          \
    (TANDEM_NVML_HAVE_UTIL | TANDEM_NVML_HAVE_MEMORY | TANDEM_NVML_HAVE_POWER |              \
     TANDEM_NVML_HAVE_SM_CLOCK | TANDEM_NVML_HAVE_MEM_CLOCK | TANDEM_NVML_HAVE_TEMPERATURE)

extern char **environ;

static tandem_rng rng;
static size_t mem_mb; /* per-device memory given to the stand-in (random) */
static int (*fake_errors)(void);

static int fake_error_count(void) { return fake_errors ? fake_errors() : 0; }

/* What fc_nvml.c documents for CUDA ordinal d, written out independently of it. */
static void expect_values(const tandem_nvml_sample_t *s, int d, uint64_t used, int with_power) {
    assert_int_equal(s->have, with_power ? ALL_FIELDS : (ALL_FIELDS & ~TANDEM_NVML_HAVE_POWER));
    assert_int_equal(s->gpu_util_pct, 60 + 7 * d);
    assert_int_equal(s->mem_util_pct, 25 + 3 * d);
    assert_int_equal(s->mem_total_bytes, (uint64_t)mem_mb << 20);
    assert_int_equal(s->mem_used_bytes, used);
    if (with_power) assert_true(s->power_w > 80.0 + 12.5 * d - 1e-9 && s->power_w < 80.0 + 12.5 * d + 1e-9);
    else assert_true(s->power_w == 0.0);
    assert_int_equal(s->sm_clock_mhz, 2520 - 15 * d);
    assert_int_equal(s->mem_clock_mhz, 10501);
    assert_int_equal(s->temperature_c, 48 + 2 * d);
}

/* ---- the stand-in's strictness, before anything initialised it ---- */

static void test_standin_uninitialised(void **state) {
    (void)state;
    void *h = dlopen(FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    tandem_pfn_nvmlDeviceGetCount_v2 count;
    tandem_pfn_nvmlShutdown shutdown;
    *(void **)&count = dlsym(h, "nvmlDeviceGetCount_v2");
    *(void **)&shutdown = dlsym(h, "nvmlShutdown");
    assert_non_null(count);
    assert_non_null(shutdown);
    void *drv = dlopen(FAKE_DRIVER, RTLD_NOW | RTLD_NOLOAD); /* loaded with the NVML stand-in */
    assert_non_null(drv);
    *(void **)&fake_errors = dlsym(drv, "tandem_fakecuda_error_count");
    assert_non_null(fake_errors);
    int e0 = fake_error_count();
    unsigned n = 99;
    assert_int_equal(count(&n), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(n, 99);
    assert_int_equal(shutdown(), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(fake_error_count(), e0 + 2); /* one "fakecuda: error" line each */
    /* handles stay referenced by the loaded NVML: no dlclose */
}

/* ---- through platform/cuda/nvml.c ---- */

static void test_open_and_describe(void **state) {
    (void)state;
    assert_int_equal(tandem_nvml_open(), TANDEM_OK);
    const char *d = tandem_nvml_describe();
    printf("NVML: %s\n", d);
    assert_non_null(strstr(d, "NVML 13.580.00-standin"));
    assert_non_null(strstr(d, "driver 580.00-standin"));
    assert_non_null(strstr(d, "2 devices"));
    assert_non_null(strstr(d, "2 of 2 CUDA devices matched"));
    assert_int_equal(tandem_nvml_open(), TANDEM_OK); /* once per process, same answer */
}

/* The bus id asked for is the one the driver reports for that ordinal, and the two differ. */
static void test_bus_ids(void **state) {
    (void)state;
    for (int d = 0; d < 2; d++) {
        CUdevice dev;
        int dom = -1, bus = -1, slot = -1;
        assert_int_equal(tandem_cu.cuDeviceGet(&dev, d), CUDA_SUCCESS);
        assert_int_equal(tandem_cu.cuDeviceGetAttribute(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev), CUDA_SUCCESS);
        assert_int_equal(tandem_cu.cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev), CUDA_SUCCESS);
        assert_int_equal(tandem_cu.cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev), CUDA_SUCCESS);
        char want[32];
        snprintf(want, sizeof want, "%08x:%02x:%02x.0", (unsigned)dom, (unsigned)bus, (unsigned)slot);
        const char *got = tandem_nvml_bus_id(d);
        assert_int_equal(strlen(got), strlen(want));
        for (size_t i = 0; want[i]; i++) assert_int_equal(tolower((unsigned char)got[i]), want[i]);
    }
    assert_string_not_equal(tandem_nvml_bus_id(0), tandem_nvml_bus_id(1));
    assert_string_equal(tandem_nvml_bus_id(2), "");
    assert_string_equal(tandem_nvml_bus_id(-1), "");
}

static void test_sample_both_devices(void **state) {
    (void)state;
    for (int d = 0; d < 2; d++) {
        tandem_nvml_sample_t s;
        assert_int_equal(tandem_nvml_sample(d, &s), TANDEM_OK);
        expect_values(&s, d, 0, 1);
    }
}

/* Memory in use follows what is allocated on each device (and only that device). */
static void test_memory_follows_allocations(void **state) {
    (void)state;
    CUcontext ctx[2];
    CUdeviceptr p[2][4];
    uint64_t used[2] = {0, 0};
    for (int d = 0; d < 2; d++) {
        assert_int_equal(tandem_cu.cuDevicePrimaryCtxRetain(&ctx[d], d), CUDA_SUCCESS);
        assert_int_equal(tandem_cu.cuCtxSetCurrent(ctx[d]), CUDA_SUCCESS);
        int k = (int)tandem_rng_int(&rng, 1, 4);
        for (int i = 0; i < 4; i++) {
            p[d][i] = 0;
            if (i >= k) continue;
            size_t bytes = (size_t)tandem_rng_int(&rng, 1, 3 << 20);
            assert_int_equal(tandem_cu.cuMemAlloc(&p[d][i], bytes), CUDA_SUCCESS);
            used[d] += bytes;
        }
    }
    for (int d = 0; d < 2; d++) {
        tandem_nvml_sample_t s;
        assert_int_equal(tandem_nvml_sample(d, &s), TANDEM_OK);
        expect_values(&s, d, used[d], 1);
    }
    for (int d = 0; d < 2; d++) {
        assert_int_equal(tandem_cu.cuCtxSetCurrent(ctx[d]), CUDA_SUCCESS);
        for (int i = 0; i < 4; i++)
            if (p[d][i]) assert_int_equal(tandem_cu.cuMemFree(p[d][i]), CUDA_SUCCESS);
    }
    assert_int_equal(tandem_cu.cuCtxSetCurrent(NULL), CUDA_SUCCESS);
    for (int d = 0; d < 2; d++) assert_int_equal(tandem_cu.cuDevicePrimaryCtxRelease(d), CUDA_SUCCESS);
    for (int d = 0; d < 2; d++) {
        tandem_nvml_sample_t s;
        assert_int_equal(tandem_nvml_sample(d, &s), TANDEM_OK);
        expect_values(&s, d, 0, 1);
    }
}

static void test_bad_ordinal(void **state) {
    (void)state;
    const int bad[] = {-1, 2, (int)tandem_rng_int(&rng, 3, 1000), TANDEM_NVML_MAX_DEVICES};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tandem_nvml_sample_t s;
        s.have = 12345;
        assert_int_equal(tandem_nvml_sample(bad[i], &s), TANDEM_E_INVALID);
        assert_int_equal(s.have, 0);
        char want[64];
        snprintf(want, sizeof want, "CUDA device %d: expected 0..1", bad[i]);
        assert_non_null(strstr(tandem_last_error(), want));
    }
}

#define THREADS 4
#define ROUNDS 200
static void *sampler(void *arg) {
    intptr_t bad = 0;
    for (int i = 0; i < ROUNDS; i++) {
        int d = (int)(((intptr_t)arg + i) & 1);
        tandem_nvml_sample_t s;
        if (tandem_nvml_sample(d, &s) != TANDEM_OK || s.have != ALL_FIELDS || s.gpu_util_pct != 60 + 7 * d ||
            s.temperature_c != 48 + 2 * d)
            bad++;
    }
    return (void *)bad;
}

static void test_concurrent_and_allocation_free(void **state) {
    (void)state;
    uint64_t a0 = tandem_alloc_count();
    pthread_t t[THREADS];
    for (intptr_t i = 0; i < THREADS; i++) assert_int_equal(pthread_create(&t[i], NULL, sampler, (void *)i), 0);
    for (int i = 0; i < THREADS; i++) {
        void *bad = NULL;
        pthread_join(t[i], &bad);
        assert_int_equal((intptr_t)bad, 0);
    }
    assert_int_equal(tandem_alloc_count(), a0);
}

/* Misuse the stand-in must catch (each prints one "fakecuda: error" line, expected here). */
static void test_standin_strict(void **state) {
    (void)state;
    void *h = dlopen(FAKE_NVML, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    tandem_pfn_nvmlDeviceGetTemperature temp;
    tandem_pfn_nvmlDeviceGetClockInfo clock;
    tandem_pfn_nvmlDeviceGetHandleByIndex_v2 by_index;
    tandem_pfn_nvmlDeviceGetHandleByPciBusId_v2 by_bus;
    *(void **)&temp = dlsym(h, "nvmlDeviceGetTemperature");
    *(void **)&clock = dlsym(h, "nvmlDeviceGetClockInfo");
    *(void **)&by_index = dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&by_bus = dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
    int e0 = fake_error_count();
    unsigned v = 7;
    int not_a_device;
    assert_int_equal(temp((nvmlDevice_t)(void *)&not_a_device, NVML_TEMPERATURE_GPU, &v), NVML_ERROR_INVALID_ARGUMENT);
    nvmlDevice_t dev = NULL;
    assert_int_equal(by_index(0, &dev), NVML_SUCCESS);
    assert_int_equal(clock(dev, (nvmlClockType_t)9, &v), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(temp(dev, (nvmlTemperatureSensors_t)1, &v), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(by_index(2, &dev), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(by_bus("not a bus id", &dev), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(v, 7);
    assert_int_equal(fake_error_count(), e0 + 5);
    /* a well-formed id nobody has: an answer, not a misuse */
    assert_int_equal(by_bus("0000abcd:01:00.0", &dev), NVML_ERROR_NOT_FOUND);
    assert_int_equal(fake_error_count(), e0 + 5);
    /* NVML index 0 is the device on the lowest bus: CUDA device 1 (reverse order) */
    assert_int_equal(by_index(0, &dev), NVML_SUCCESS);
    assert_int_equal(temp(dev, NVML_TEMPERATURE_GPU, &v), NVML_SUCCESS);
    assert_int_equal(v, 48 + 2 * 1);
}

/* ---- child processes (NVML opens once per process) ---- */

static int child_main(const char *mode) {
    tandem_status st = tandem_nvml_open();
    const char *why = tandem_last_error();
    printf("child %s: open %s: %s\n", mode, tandem_status_name(st), st == TANDEM_OK ? tandem_nvml_describe() : why);
    tandem_nvml_sample_t s;
    if (strcmp(mode, "absent") == 0) {
        if (st != TANDEM_E_NODRIVER || !strstr(why, "not found") || !strstr(why, "/nonexistent/libnvidia-ml.so.1"))
            return 1;
        if (!strstr(tandem_nvml_describe(), "not found")) return 1;
        if (tandem_nvml_sample(0, &s) != TANDEM_E_UNSUPPORTED || s.have != 0) return 1;
        return strstr(tandem_last_error(), "NVML is not available") ? 0 : 1;
    }
    if (strcmp(mode, "disabled") == 0) {
        if (st != TANDEM_E_UNSUPPORTED || !strstr(why, "TANDEM_NVML=none")) return 1;
        return tandem_nvml_sample(1, &s) == TANDEM_E_UNSUPPORTED ? 0 : 1;
    }
    if (strcmp(mode, "nopower") == 0) {
        if (st != TANDEM_OK) return 1;
        for (int d = 0; d < 2; d++) {
            if (tandem_nvml_sample(d, &s) != TANDEM_OK) return 1;
            if (s.have != (ALL_FIELDS & ~TANDEM_NVML_HAVE_POWER) || s.power_w != 0.0 || s.sm_clock_mhz != 2520 - 15 * d)
                return 1;
        }
        return 0;
    }
    if (strcmp(mode, "nocuda") == 0) {
        if (st != TANDEM_OK || !strstr(tandem_nvml_describe(), "no CUDA driver")) return 1;
        return tandem_nvml_sample(0, &s) == TANDEM_E_INVALID ? 0 : 1;
    }
    return 2;
}

/* Run this binary with `--child mode` and the environment plus `extra` (NAME=value, NULL-ended). */
static int run_child(const char *self, const char *mode, const char *const *extra) {
    char *envp[512];
    size_t n = 0;
    for (const char *const *e = extra; *e; e++) envp[n++] = (char *)*e;
    for (char **e = environ; *e && n < 510; e++) {
        int overridden = 0;
        for (const char *const *x = extra; *x; x++) {
            size_t k = (size_t)(strchr(*x, '=') - *x) + 1;
            overridden |= strncmp(*e, *x, k) == 0;
        }
        if (!overridden) envp[n++] = *e;
    }
    envp[n] = NULL;
    char *argv[] = {(char *)self, (char *)"--child", (char *)mode, NULL};
    pid_t pid;
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, envp) != 0) return -1;
    int ws = 0;
    if (waitpid(pid, &ws, 0) != pid) return -1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

static const char *self_path = "test_nvml";

static void test_child_absent(void **state) {
    (void)state;
    const char *env[] = {"TANDEM_NVML=/nonexistent/libnvidia-ml.so.1", NULL};
    assert_int_equal(run_child(self_path, "absent", env), 0);
}

static void test_child_disabled(void **state) {
    (void)state;
    const char *env[] = {"TANDEM_NVML=none", NULL};
    assert_int_equal(run_child(self_path, "disabled", env), 0);
}

static void test_child_no_power(void **state) {
    (void)state;
    const char *env[] = {"TANDEM_FAKECUDA_NVML_NO_POWER=1", NULL};
    assert_int_equal(run_child(self_path, "nopower", env), 0);
}

static void test_child_no_cuda_driver(void **state) {
    (void)state;
    const char *env[] = {"TANDEM_CUDA_DRIVER=/nonexistent/libcuda.so.1", NULL};
    assert_int_equal(run_child(self_path, "nocuda", env), 0);
}

/* ---- nvml_api.h against an installed nvml.h ---- */

/* The integer that `name` is defined as in text (`name = 12,` or `#define name 12`); 0 if found. */
static int header_value(const char *text, const char *name, long long *v) {
    size_t len = strlen(name);
    for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
        if ((p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) || isalnum((unsigned char)p[len]) ||
            p[len] == '_')
            continue;
        const char *q = p + len;
        while (*q == ' ' || *q == '\t') q++;
        if (*q == '=' && q[1] != '=') q++;
        else if (!(p - 8 >= text && strncmp(p - 8, "#define ", 8) == 0)) continue;
        while (*q == ' ' || *q == '\t' || *q == '(') q++;
        char *end;
        *v = strtoll(q, &end, 0);
        if (end != q) return 0;
    }
    return -1;
}

static void test_values_match_installed_header(void **state) {
    (void)state;
    const char *home = getenv("CUDA_HOME");
    char paths[3][512];
    snprintf(paths[0], sizeof paths[0], "%s/include/nvml.h", home && home[0] ? home : "/usr/local/cuda");
    snprintf(paths[1], sizeof paths[1], "/usr/local/cuda/include/nvml.h");
    snprintf(paths[2], sizeof paths[2], "/usr/include/nvml.h");
    char *text = NULL;
    for (int i = 0; i < 3 && !text; i++) {
        text = tandem_test_read_file(paths[i], NULL);
        if (text) printf("comparing with %s\n", paths[i]);
    }
    if (!text) {
        printf("no nvml.h installed: skipped\n");
        skip();
    }
#define V(name) {#name, (long long)(name)}
    static const struct {
        const char *name;
        long long value;
    } values[] = {
        V(NVML_SUCCESS), V(NVML_ERROR_UNINITIALIZED), V(NVML_ERROR_INVALID_ARGUMENT), V(NVML_ERROR_NOT_SUPPORTED),
        V(NVML_ERROR_NO_PERMISSION), V(NVML_ERROR_ALREADY_INITIALIZED), V(NVML_ERROR_NOT_FOUND),
        V(NVML_ERROR_INSUFFICIENT_SIZE), V(NVML_ERROR_INSUFFICIENT_POWER), V(NVML_ERROR_DRIVER_NOT_LOADED),
        V(NVML_ERROR_TIMEOUT), V(NVML_ERROR_IRQ_ISSUE), V(NVML_ERROR_LIBRARY_NOT_FOUND),
        V(NVML_ERROR_FUNCTION_NOT_FOUND), V(NVML_ERROR_CORRUPTED_INFOROM), V(NVML_ERROR_GPU_IS_LOST),
        V(NVML_ERROR_RESET_REQUIRED), V(NVML_ERROR_OPERATING_SYSTEM), V(NVML_ERROR_LIB_RM_VERSION_MISMATCH),
        V(NVML_ERROR_IN_USE), V(NVML_ERROR_MEMORY), V(NVML_ERROR_NO_DATA), V(NVML_ERROR_UNKNOWN),
        V(NVML_CLOCK_GRAPHICS), V(NVML_CLOCK_SM), V(NVML_CLOCK_MEM), V(NVML_CLOCK_VIDEO), V(NVML_TEMPERATURE_GPU),
        V(NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE), V(NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE),
        V(NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE),
    };
#undef V
    int bad = 0;
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        long long v;
        if (header_value(text, values[i].name, &v) != 0) {
            printf("%s: not found in nvml.h\n", values[i].name);
            bad++;
        } else if (v != values[i].value) {
            printf("%s: nvml.h says %lld, nvml_api.h %lld\n", values[i].name, v, values[i].value);
            bad++;
        }
    }
    free(text);
    assert_int_equal(bad, 0);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--child") == 0) return child_main(argv[2]);
    self_path = argv[0];
    FILE *f = fopen(FAKE_NVML, "rb");
    if (!f) {
        printf("stand-in NVML not built (%s): skipped\n", FAKE_NVML);
        return 0;
    }
    fclose(f);
    rng.s = tandem_test_seed("test_nvml");
    mem_mb = (size_t)tandem_rng_int(&rng, 64, 16384);
    char mem[32];
    snprintf(mem, sizeof mem, "%zu", mem_mb);
    setenv("TANDEM_NVML", FAKE_NVML, 1);
    setenv("TANDEM_CUDA_DRIVER", FAKE_DRIVER, 1);
    if (cli_env_apply(NULL, 0) != TANDEM_OK) return 2;
    setenv("TANDEM_FAKECUDA_DEVICES", "2", 1);
    setenv("TANDEM_FAKECUDA_MEM_MB", mem, 1);
    unsetenv("TANDEM_FAKECUDA_NVML_NO_POWER");
    tandem_log_set_level(TANDEM_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_standin_uninitialised),
        cmocka_unit_test(test_open_and_describe),
        cmocka_unit_test(test_bus_ids),
        cmocka_unit_test(test_sample_both_devices),
        cmocka_unit_test(test_memory_follows_allocations),
        cmocka_unit_test(test_bad_ordinal),
        cmocka_unit_test(test_concurrent_and_allocation_free),
        cmocka_unit_test(test_standin_strict),
        cmocka_unit_test(test_child_absent),
        cmocka_unit_test(test_child_disabled),
        cmocka_unit_test(test_child_no_power),
        cmocka_unit_test(test_child_no_cuda_driver),
        cmocka_unit_test(test_values_match_installed_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
