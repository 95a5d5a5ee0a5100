/* test_checkpoint.c — checkpoint files: the last K kept, the newest valid one chosen, a
 * truncated / corrupt / mislabelled newest one skipped with a warning through the log hook,
 * a save killed part-way (forked child) leaving the previous state intact and its temp file
 * cleaned up later, a failing fetch leaving nothing behind, newer files from another run left
 * alone, metadata round trip, and no allocation during save. */
#include <dirent.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/formats/checkpoint.h"
#include "platform/os/log.h"
#include "platform/os/os.h"
#include "test/fixtures.h"

static tandem_rng rng;
static char scratch[256];
static int dir_seq;

static int setup(void **state) {
    (void)state;
    return tandem_test_mkdtemp(scratch, sizeof scratch, "test_ckpt");
}
static int teardown(void **state) {
    (void)state;
    return tandem_test_rmtree(scratch);
}

/* ---- a small "model" ---- */
enum { NW = 300, NB = 17 };
static float weights[NW], moments[NW];
static int32_t counts[NB];

static void fill_state(float seed) {
    for (int i = 0; i < NW; i++) {
        weights[i] = seed + tandem_rng_uniform(&rng, -1, 1);
        moments[i] = tandem_rng_uniform(&rng, 0, 1);
    }
    for (int i = 0; i < NB; i++) counts[i] = (int32_t)tandem_rng_int(&rng, -1000, 1000);
}

static tandem_status fetch_moments(void *ctx, void *user, void *dst, size_t offset, size_t bytes) {
    (void)ctx;
    memcpy(dst, (const char *)user + offset, bytes);
    return TANDEM_OK;
}

static void tensors(tandem_st_tensor t[3]) {
    t[0] = (tandem_st_tensor){"w", TANDEM_F32, 2, {20, 15}, weights, NULL};
    t[1] = (tandem_st_tensor){"adam.m.w", TANDEM_F32, 2, {20, 15}, NULL, moments};
    t[2] = (tandem_st_tensor){"counts", TANDEM_I32, 1, {NB}, counts, NULL};
}

static void new_dir(char *dir, size_t cap) { snprintf(dir, cap, "%s/run%d/ckpt", scratch, dir_seq++); }

static int count_files(const char *dir, const char *needle) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, needle)) n++;
    closedir(d);
    return n;
}

static void ckpt_path(const char *dir, int64_t step, char *p, size_t cap) {
    assert_int_equal(tandem_checkpoint_path(dir, step, p, cap), TANDEM_OK);
}

static tandem_checkpoint *make(const char *dir, int keep) {
    tandem_st_tensor t[3];
    tensors(t);
    tandem_checkpoint *c = NULL;
    assert_int_equal(tandem_checkpoint_create(dir, keep, t, 3, 4096, &c), TANDEM_OK);
    return c;
}

static void save(tandem_checkpoint *c, int64_t step) {
    tandem_st_meta meta[] = {
        {TANDEM_CKPT_KEY_CONFIG, "model:\n  size: tiny\ntrain:\n  lr: 0.001\n"},
        {TANDEM_CKPT_KEY_RNG, "1234567890123"},
        {TANDEM_CKPT_KEY_SAMPLER_EPOCH, "3"},
        {TANDEM_CKPT_KEY_SAMPLER_POSITION, "17"},
        {TANDEM_CKPT_KEY_SYMBOLS, "[\"<pad>\",\"<bos>\",\"a\"]"},
    };
    uint64_t allocs = tandem_alloc_count();
    assert_int_equal(tandem_checkpoint_save(c, step, meta, 5, fetch_moments, NULL), TANDEM_OK);
    assert_int_equal(tandem_alloc_count(), allocs);
}

/* issue 10, class 6: a checkpoint holding NaN (a diverged run) is written, but rotation keeps the
 * newest good one: with keep 1, saving a NaN step 20 after a good step 10 leaves both; the next
 * good save (30) lets both older ones go. Moments (fetched) and weights (data pointer) both count. */
static void test_rotation_keeps_newest_good(void **state) {
    (void)state;
    char dir[300], p10[400], p20[400], p25[400], p30[400];
    snprintf(dir, sizeof dir, "%s/rot_%d", scratch, dir_seq++);
    ckpt_path(dir, 10, p10, sizeof p10);
    ckpt_path(dir, 20, p20, sizeof p20);
    ckpt_path(dir, 25, p25, sizeof p25);
    ckpt_path(dir, 30, p30, sizeof p30);
    tandem_checkpoint *c = make(dir, 1);
    fill_state(1.0f);
    save(c, 10);
    moments[7] = NAN; /* fetched tensor */
    tandem_test_log_capture(TANDEM_LOG_WARN);
    save(c, 20);
    assert_non_null(strstr(tandem_test_log_text(), "non-finite"));
    assert_non_null(strstr(tandem_test_log_text(), "adam.m.w"));
    tandem_test_log_stop();
    assert_true(access(p10, F_OK) == 0); /* the newest good one survives keep = 1 */
    assert_true(access(p20, F_OK) == 0);
    moments[7] = 0.5f;
    weights[3] = INFINITY; /* data-pointer tensor */
    save(c, 25);
    assert_true(access(p10, F_OK) == 0);
    assert_false(access(p20, F_OK) == 0); /* a bad one is rotated like any other */
    assert_true(access(p25, F_OK) == 0);
    weights[3] = 1.0f;
    save(c, 30);
    assert_false(access(p10, F_OK) == 0);
    assert_false(access(p25, F_OK) == 0);
    assert_true(access(p30, F_OK) == 0);
    tandem_checkpoint_free(c);
    printf("rotation (keep 1): the good step 10 outlived the NaN steps 20 and 25, went with the good step 30\n");
}

static void test_names(void **state) {
    (void)state;
    char p[256];
    ckpt_path("/x", 120, p, sizeof p);
    assert_string_equal(p, "/x/ckpt-00000120.safetensors");
    assert_int_equal(tandem_checkpoint_parse_name("ckpt-00000120.safetensors"), 120);
    assert_int_equal(tandem_checkpoint_parse_name("ckpt-7.safetensors"), 7);
    assert_int_equal(tandem_checkpoint_parse_name("ckpt-.safetensors"), -1);
    assert_int_equal(tandem_checkpoint_parse_name("ckpt-12a.safetensors"), -1);
    assert_int_equal(tandem_checkpoint_parse_name("ckpt-12.safetensors.tmp.1.2"), -1);
    assert_int_equal(tandem_checkpoint_parse_name(".ckpt-12.safetensors"), -1);
    assert_int_equal(tandem_checkpoint_path("/x", -1, p, sizeof p), TANDEM_E_INVALID);
}

static void test_keep_last_k_and_contents(void **state) {
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    int keep = (int)tandem_rng_int(&rng, 1, 4);
    tandem_checkpoint *c = make(dir, keep);
    for (int64_t step = 10; step <= 80; step += 10) {
        fill_state((float)step);
        save(c, step);
        int expect = (int)(step / 10) < keep ? (int)(step / 10) : keep;
        assert_int_equal(count_files(dir, ".safetensors"), expect);
        assert_int_equal(count_files(dir, ".tmp."), 0);
    }
    for (int64_t step = 10; step <= 80; step += 10) {
        char p[400];
        ckpt_path(dir, step, p, sizeof p);
        assert_int_equal(access(p, F_OK) == 0, step > 80 - 10 * keep);
    }
    char latest[400];
    int64_t step = -1;
    int found = 0;
    assert_int_equal(tandem_checkpoint_find_latest(dir, latest, sizeof latest, &step, &found), TANDEM_OK);
    assert_int_equal(found, 1);
    assert_int_equal(step, 80);
    assert_string_equal(latest, tandem_checkpoint_last_path(c));
    tandem_st_file *f = NULL;
    assert_int_equal(tandem_checkpoint_open(latest, 80, &f), TANDEM_OK);
    assert_string_equal(tandem_st_meta_find(f, TANDEM_CKPT_KEY_STEP), "80");
    assert_string_equal(tandem_st_meta_find(f, TANDEM_CKPT_KEY_FORMAT_VERSION), TANDEM_CKPT_FORMAT_VERSION);
    assert_string_equal(tandem_st_meta_find(f, TANDEM_CKPT_KEY_CONFIG), "model:\n  size: tiny\ntrain:\n  lr: 0.001\n");
    assert_string_equal(tandem_st_meta_find(f, TANDEM_CKPT_KEY_SAMPLER_POSITION), "17");
    float w[NW], m[NW];
    int32_t cn[NB];
    const int64_t shape[2] = {20, 15}, cshape[1] = {NB};
    assert_int_equal(tandem_st_read_tensor(f, "w", TANDEM_F32, 2, shape, w, sizeof w), TANDEM_OK);
    assert_int_equal(tandem_st_read_tensor(f, "adam.m.w", TANDEM_F32, 2, shape, m, sizeof m), TANDEM_OK);
    assert_int_equal(tandem_st_read_tensor(f, "counts", TANDEM_I32, 1, cshape, cn, sizeof cn), TANDEM_OK);
    assert_memory_equal(w, weights, sizeof w);
    assert_memory_equal(m, moments, sizeof m);
    assert_memory_equal(cn, counts, sizeof cn);
    tandem_st_close(f);
    assert_int_equal(tandem_checkpoint_open(latest, 79, &f), TANDEM_E_FORMAT); /* step must match */
    /* reserved keys are refused */
    tandem_st_meta bad = {TANDEM_CKPT_KEY_STEP, "5"};
    assert_int_equal(tandem_checkpoint_save(c, 90, &bad, 1, fetch_moments, NULL), TANDEM_E_INVALID);
    tandem_checkpoint_free(c);
}

static void corrupt_and_expect(const char *dir, int64_t newest, void (*damage)(const char *path), int64_t want,
                               const char *what) {
    char p[400];
    ckpt_path(dir, newest, p, sizeof p);
    damage(p);
    tandem_test_log_capture(TANDEM_LOG_WARN);
    char latest[400];
    int64_t step = -1;
    int found = 0;
    assert_int_equal(tandem_checkpoint_find_latest(dir, latest, sizeof latest, &step, &found), TANDEM_OK);
    tandem_test_log_stop();
    print_message("%s: chose step %lld; warning: %s", what, (long long)step, tandem_test_log_text());
    assert_int_equal(found, 1);
    assert_int_equal(step, want);
    assert_non_null(strstr(tandem_test_log_text(), p));
    assert_non_null(strstr(tandem_test_log_text(), "skipped"));
}

static void truncate_tail(const char *p) {
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(truncate(p, sb.st_size - 1 - (off_t)tandem_rng_int(&rng, 0, 200)), 0);
}
static void truncate_header(const char *p) { assert_int_equal(truncate(p, 20), 0); }
static void flip_json(const char *p) {
    FILE *f = fopen(p, "r+b");
    assert_non_null(f);
    fseek(f, 8, SEEK_SET);
    fputc('[', f); /* the header no longer starts with '{' */
    fclose(f);
}
static void zero_file(const char *p) { assert_int_equal(truncate(p, 0), 0); }

static void test_newest_valid_chosen(void **state) {
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    tandem_checkpoint *c = make(dir, 10);
    for (int64_t s = 1; s <= 6; s++) {
        fill_state((float)s);
        save(c, s * 100);
    }
    tandem_checkpoint_free(c);
    corrupt_and_expect(dir, 600, truncate_tail, 500, "truncated data");
    corrupt_and_expect(dir, 500, truncate_header, 400, "truncated header");
    corrupt_and_expect(dir, 400, flip_json, 300, "corrupt JSON");
    corrupt_and_expect(dir, 300, zero_file, 200, "empty file");
    /* a file whose metadata step disagrees with its name */
    char p200[400], p250[400];
    ckpt_path(dir, 200, p200, sizeof p200);
    ckpt_path(dir, 250, p250, sizeof p250);
    char cmd[900];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", p200, p250);
    assert_int_equal(system(cmd), 0);
    tandem_test_log_capture(TANDEM_LOG_WARN);
    char latest[400];
    int64_t step = -1;
    int found = 0;
    assert_int_equal(tandem_checkpoint_find_latest(dir, latest, sizeof latest, &step, &found), TANDEM_OK);
    tandem_test_log_stop();
    assert_int_equal(step, 200);
    assert_non_null(strstr(tandem_test_log_text(), "expected 250"));
    /* no checkpoint at all; a missing directory */
    char empty[300];
    new_dir(empty, sizeof empty);
    assert_int_equal(tandem_mkdir_p(empty), TANDEM_OK);
    assert_int_equal(tandem_checkpoint_find_latest(empty, latest, sizeof latest, &step, &found), TANDEM_OK);
    assert_int_equal(found, 0);
    strcat(empty, "/missing");
    assert_int_equal(tandem_checkpoint_find_latest(empty, latest, sizeof latest, &step, &found), TANDEM_E_IO);
}

/* A save killed between writing the data and the rename (a fetch callback that exits the
 * forked child half-way) must leave the previous checkpoints and no new file. */
static tandem_status dying_fetch(void *ctx, void *user, void *dst, size_t offset, size_t bytes) {
    (void)ctx, (void)user, (void)dst, (void)offset, (void)bytes;
    _exit(0);
}
static tandem_status failing_fetch(void *ctx, void *user, void *dst, size_t offset, size_t bytes) {
    (void)ctx, (void)user, (void)dst, (void)offset, (void)bytes;
    return tandem_fail(TANDEM_E_DEVICE, "device lost");
}

static void test_atomicity(void **state) {
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    tandem_checkpoint *c = make(dir, 2);
    fill_state(1.0f);
    save(c, 10);
    save(c, 20);
    char p20[400], p30[400];
    ckpt_path(dir, 20, p20, sizeof p20);
    ckpt_path(dir, 30, p30, sizeof p30);
    struct stat before;
    assert_int_equal(stat(p20, &before), 0);

    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        tandem_checkpoint_save(c, 30, NULL, 0, dying_fetch, NULL);
        _exit(3); /* not reached */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_false(access(p30, F_OK) == 0);          /* no half checkpoint under the real name */
    assert_int_equal(count_files(dir, ".tmp."), 1); /* the crash left its temp file */
    assert_int_equal(count_files(dir, ".safetensors"), 3);
    char latest[400];
    int64_t step = -1;
    int found = 0;
    assert_int_equal(tandem_checkpoint_find_latest(dir, latest, sizeof latest, &step, &found), TANDEM_OK);
    assert_int_equal(step, 20);
    struct stat after;
    assert_int_equal(stat(p20, &after), 0);
    assert_int_equal(after.st_size, before.st_size);

    /* a fetch error: nothing new, no temp left by this process */
    assert_int_equal(tandem_checkpoint_save(c, 30, NULL, 0, failing_fetch, NULL), TANDEM_E_DEVICE);
    assert_non_null(strstr(tandem_last_error(), "device lost"));
    assert_non_null(strstr(tandem_last_error(), "adam.m.w"));
    assert_false(access(p30, F_OK) == 0);
    assert_int_equal(count_files(dir, ".tmp."), 1);
    tandem_checkpoint_free(c);

    /* the next run's create removes the stale temp file */
    c = make(dir, 2);
    assert_int_equal(count_files(dir, ".tmp."), 0);
    save(c, 30);
    assert_int_equal(count_files(dir, ".safetensors"), 2);
    tandem_checkpoint_free(c);
}

/* Files with a higher step than the one saved (an older run resumed from an earlier
 * checkpoint) are not counted for keep and not deleted. */
static void test_newer_files_left_alone(void **state) {
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    tandem_checkpoint *c = make(dir, 1);
    fill_state(2.0f);
    save(c, 1000);
    save(c, 100);
    char p1000[400], p100[400];
    ckpt_path(dir, 1000, p1000, sizeof p1000);
    ckpt_path(dir, 100, p100, sizeof p100);
    assert_true(access(p1000, F_OK) == 0);
    assert_true(access(p100, F_OK) == 0);
    save(c, 200);
    assert_false(access(p100, F_OK) == 0);
    assert_true(access(p1000, F_OK) == 0);
    tandem_checkpoint_free(c);
    tandem_checkpoint *bad = NULL;
    tandem_st_tensor t[3];
    tensors(t);
    assert_int_equal(tandem_checkpoint_create(dir, 0, t, 3, 0, &bad), TANDEM_E_INVALID);
}

int main(void) {
    rng.s = tandem_test_seed("test_checkpoint");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_keep_last_k_and_contents),
        cmocka_unit_test(test_newest_valid_chosen),
        cmocka_unit_test(test_atomicity),
        cmocka_unit_test(test_newer_files_left_alone),
        cmocka_unit_test(test_rotation_keeps_newest_good),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
