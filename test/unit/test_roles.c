/* test_roles.c — each data-parallel rank's GPUs by local rank (runtime/data/roles.h,
 * tandem_roles_open_rank; docs/SCALING.md, "Each rank's GPUs"), on the stand-in driver with
 * TANDEM_FAKECUDA_DEVICES = 1 to 4. The driver reads its device count once per process, so each
 * case runs in a child (this binary with --case) that prints the ordinals it got:
 *   4 GPUs, 2 local ranks: disjoint pairs (0,1) and (2,3); 2 GPUs or 3: one each, both roles;
 *   1 GPU for 2 local ranks: an error naming both counts; a local rank past local_world_size:
 *   refused; local_world_size unknown: GPU k; explicit data_gpu / model_gpu: as given, logged;
 *   a single process (tandem_roles_open) is unchanged: data 0, model 1.
 * Skipped on a host-only build (no fatbin for the stand-in to load). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform/device.h"
#include "runtime/data/roles.h"
#include "test/fixtures.h"

#define FAKE_DIR TANDEM_TEST_BUILD_DIR "/test/fakecuda"

static char self[1024];

/* The child: open the roles for (k, L, data_gpu, model_gpu) and print "data model" or "error". */
static int run_case(int k, int L, int dg, int mg, int single) {
    tandem_device *data = NULL, *model = NULL;
    char desc[512];
    tandem_test_log_capture(TANDEM_LOG_INFO);
    const tandem_status st = single ? tandem_roles_open(TANDEM_BACKEND_CUDA, dg, mg, &data, &model, desc, sizeof desc)
                                    : tandem_roles_open_rank(TANDEM_BACKEND_CUDA, dg, mg, k, L, &data, &model, desc,
                                                             sizeof desc);
    if (st != TANDEM_OK) {
        printf("error %s: %s\n", tandem_status_name(st), tandem_last_error());
        return 0;
    }
    printf("%d %d %s | log: %s\n", data->info.ordinal, model->info.ordinal, desc, tandem_test_log_text());
    tandem_roles_close(data, model);
    return 0;
}

/* One case in a child with n stand-in GPUs; its line into out. */
static void roles(int n, int k, int L, int dg, int mg, int single, char *out, size_t cap) {
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "TANDEM_FAKECUDA_DEVICES=%d TANDEM_CUDA_DRIVER='%s/libcuda.so.1' "
             "TANDEM_CUBLASLT='%s/libcublasLt.so.13' '%s' --case %d %d %d %d %d 2>&1", n, FAKE_DIR, FAKE_DIR, self, k,
             L, dg, mg, single);
    fflush(stdout);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    out[0] = 0;
    char line[2048];
    while (fgets(line, sizeof line, f))
        if (!out[0] && (line[0] == 'e' || (line[0] >= '0' && line[0] <= '9'))) snprintf(out, cap, "%s", line);
        else if (!strncmp(line, "fakecuda: error", 15)) fail_msg("the stand-in reported misuse: %s", line);
    assert_int_equal(pclose(f), 0);
    if (!out[0]) fail_msg("%d GPUs, local rank %d of %d: the child printed nothing", n, k, L);
}

static void expect(int n, int k, int L, int dg, int mg, int want_data, int want_model, const char *words) {
    char got[2048];
    roles(n, k, L, dg, mg, 0, got, sizeof got);
    int d = -1, m = -1;
    if (sscanf(got, "%d %d", &d, &m) != 2 || d != want_data || m != want_model || (words && !strstr(got, words)))
        fail_msg("%d GPUs, local rank %d of %d, data_gpu %d, model_gpu %d: \"%s\"; expected data %d, model %d%s%s", n,
                 k, L, dg, mg, got, want_data, want_model, words ? " saying " : "", words ? words : "");
    printf("  %d GPUs, local rank %d of %d: %s", n, k, L, got);
}

static void expect_error(int n, int k, int L, const char *a, const char *b) {
    char got[2048];
    roles(n, k, L, -1, -1, 0, got, sizeof got);
    if (strncmp(got, "error", 5) || !strstr(got, a) || (b && !strstr(got, b)))
        fail_msg("%d GPUs, local rank %d of %d: \"%s\"; expected an error naming \"%s\"%s%s", n, k, L, got, a,
                 b ? " and " : "", b ? b : "");
    printf("  %d GPUs, local rank %d of %d: %s", n, k, L, got);
}

static void test_pairs_when_two_per_rank(void **state) {
    (void)state;
    expect(4, 0, 2, -1, -1, 0, 1, "two of 4 GPUs per local rank");
    expect(4, 1, 2, -1, -1, 2, 3, NULL);
}

static void test_one_each_when_fewer(void **state) {
    (void)state;
    expect(2, 0, 2, -1, -1, 0, 0, "in both roles");
    expect(2, 1, 2, -1, -1, 1, 1, NULL);
    expect(3, 1, 2, -1, -1, 1, 1, NULL); /* 3 < 2 x 2: one each (never 2k, which rank 0's pair would overlap) */
    expect(4, 3, 4, -1, -1, 3, 3, NULL);
    expect(4, 1, 0, -1, -1, 1, 1, "local_world_size unknown");
}

static void test_too_few_gpus(void **state) {
    (void)state;
    expect_error(1, 1, 2, "1 CUDA device on this machine for 2 local ranks", "at most 1 rank per machine");
    expect_error(2, 2, 0, "for at least 3 local ranks", NULL);
    expect_error(4, 2, 2, "local rank 2 of 2", "LOCAL_WORLD_SIZE");
}

static void test_explicit_as_given(void **state) {
    (void)state;
    expect(4, 1, 2, 0, 1, 0, 1, "used as given");
    expect(4, 1, 2, 3, -1, 3, 1, NULL); /* the other role: tandem_roles_open's rule */
}

static void test_single_process_unchanged(void **state) {
    (void)state;
    char got[2048];
    roles(4, 0, 0, -1, -1, 1, got, sizeof got);
    if (strncmp(got, "0 1 two CUDA devices", 20)) fail_msg("one process on 4 GPUs: \"%s\"; expected data 0, model 1", got);
}

int main(int argc, char **argv) {
    if (argc == 7 && !strcmp(argv[1], "--case"))
        return run_case(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
    if (!tandem_test_have_fatbin() || access(FAKE_DIR "/libcuda.so.1", F_OK) != 0) {
        printf("test_roles: skipped: host-only build (no fatbin or stand-in driver in %s)\n", FAKE_DIR);
        return 0;
    }
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 1;
    self[n] = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs_when_two_per_rank),
        cmocka_unit_test(test_one_each_when_fewer),
        cmocka_unit_test(test_too_few_gpus),
        cmocka_unit_test(test_explicit_as_given),
        cmocka_unit_test(test_single_process_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
