/* test_atomic_file.c — streaming atomic replacement (runtime/formats/atomic_file.h):
 *   - pieces of random sizes (empty ones and one of several MiB included) land in the target
 *     in order; until commit the target keeps its old bytes and the temp file is the only new
 *     name in the directory, ".<base>.tmp.<pid>.<n>"; after commit no temp name is left;
 *   - abort (also twice, also after a failed open) removes the temp file, the target untouched;
 *     a process that dies before commit leaves the old target and a temp file that
 *     tandem_atomic_is_temp_of recognises;
 *   - bad paths (empty, a directory, a missing directory, longer than PATH_MAX), writes and
 *     commits on a closed file, and a directory at the target (at open, or made before the
 *     commit) give the documented statuses with the path in the message, and leave no temp file;
 *   - a bare file name lands in the working directory; threads writing the same target at once
 *     get distinct temp names and the target ends up as one writer's bytes, whole;
 *   - no heap allocation anywhere (tandem_alloc_count).
 * Seed printed; replay with TANDEM_TEST_SEED. */
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform/os/os.h"
#include "runtime/formats/atomic_file.h"
#include "test/fixtures.h"

static tandem_rng rng;
static char scratch[256];

static int setup(void **state) {
    (void)state;
    rng.s = tandem_test_seed("test_atomic_file");
    return tandem_test_mkdtemp(scratch, sizeof scratch, "test_atomic");
}
static int teardown(void **state) {
    (void)state;
    return tandem_test_rmtree(scratch);
}

/* A fresh empty directory under the scratch directory. */
static void new_dir(char *dir, size_t cap) {
    static int seq;
    snprintf(dir, cap, "%s/d%d", scratch, seq++);
    assert_int_equal(mkdir(dir, 0777), 0);
}

/* Names in dir other than "." and "..", in *names (newline-separated); returns their count. */
static int list_dir(const char *dir, char *names, size_t cap) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    size_t len = 0;
    names[0] = '\0';
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        int k = snprintf(names + len, cap - len, "%s\n", e->d_name);
        if (k > 0 && (size_t)k < cap - len) len += (size_t)k;
        n++;
    }
    closedir(d);
    return n;
}

static void expect_file(const char *path, const void *want, size_t n) {
    size_t len = 0;
    unsigned char *got = tandem_test_read_file_ok(path, &len);
    if (len != n) fail_msg("%s: %zu bytes, expected %zu", path, len, n);
    if (n) assert_memory_equal(got, want, n);
    free(got);
}

/* The temp name's form, from the header's description alone. */
static void expect_temp_name(const tandem_atomic_file *f, const char *dir, const char *base) {
    char want[PATH_MAX];
    snprintf(want, sizeof want, "%s/.%s.tmp.%ld.", dir, base, (long)getpid());
    if (strncmp(f->tmp, want, strlen(want)) != 0) fail_msg("temp file %s, expected %s<n>", f->tmp, want);
    const char *n = f->tmp + strlen(want);
    assert_true(*n != '\0' && strspn(n, "0123456789") == strlen(n));
}

static void test_pieces_then_commit(void **state) {
    (void)state;
    char dir[320], path[400], names[1024];
    for (int round = 0; round < 4; round++) {
        new_dir(dir, sizeof dir);
        snprintf(path, sizeof path, "%s/target.bin", dir);
        const char old[] = "the old contents";
        if (round % 2) tandem_test_write_file(path, old, sizeof old); /* replace, or create */
        /* pieces: sizes from 0 to ~4 MiB, random bytes */
        const int pieces = (int)tandem_rng_int(&rng, 1, 8);
        size_t total = 0, sizes[8];
        for (int k = 0; k < pieces; k++) {
            const int64_t kind = tandem_rng_int(&rng, 0, 3);
            sizes[k] = kind == 0 ? 0 : kind == 3 && round == 2 ? (size_t)tandem_rng_int(&rng, 1 << 20, 4 << 20)
                                                               : (size_t)tandem_rng_int(&rng, 1, 5000);
            total += sizes[k];
        }
        unsigned char *want = malloc(total + 1);
        tandem_rng_fill_bytes(&rng, want, total);
        const uint64_t allocs = tandem_alloc_count();
        tandem_atomic_file f;
        CHECK(tandem_atomic_open(&f, path));
        expect_temp_name(&f, dir, "target.bin");
        size_t at = 0;
        for (int k = 0; k < pieces; k++) {
            CHECK(tandem_atomic_write(&f, want + at, sizes[k]));
            at += sizes[k];
        }
        /* before commit: the old target (or none) and the temp file, nothing else */
        assert_int_equal(list_dir(dir, names, sizeof names), round % 2 ? 2 : 1);
        if (round % 2) expect_file(path, old, sizeof old);
        else assert_false(tandem_file_exists(path));
        const char *slash = strrchr(f.tmp, '/');
        assert_true(tandem_atomic_is_temp_of(slash + 1, "target.bin"));
        CHECK(tandem_atomic_commit(&f));
        assert_int_equal(tandem_alloc_count(), allocs); /* no heap, so outputs can follow a commit */
        expect_file(path, want, total);
        assert_int_equal(list_dir(dir, names, sizeof names), 1);
        assert_string_equal(names, "target.bin\n");
        printf("%d pieces, %zu bytes: replaced atomically\n", pieces, total);
        free(want);
    }
}

static void test_abort(void **state) {
    (void)state;
    char dir[320], path[400], names[1024];
    new_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/keep.txt", dir);
    tandem_test_write_file(path, "old", 3);
    tandem_atomic_file f;
    CHECK(tandem_atomic_open(&f, path));
    CHECK(tandem_atomic_write(&f, "new bytes", 9));
    assert_int_equal(list_dir(dir, names, sizeof names), 2);
    tandem_atomic_abort(&f);
    tandem_atomic_abort(&f); /* twice is harmless */
    assert_int_equal(list_dir(dir, names, sizeof names), 1);
    expect_file(path, "old", 3);
    assert_int_equal(tandem_atomic_write(&f, "x", 1), TANDEM_E_STATE);
    assert_int_equal(tandem_atomic_commit(&f), TANDEM_E_STATE);
    assert_non_null(strstr(tandem_last_error(), "is not open"));
    assert_non_null(strstr(tandem_last_error(), path));
    expect_file(path, "old", 3);
}

/* A child writes half the new contents and dies: the old target stays, the temp is recognised. */
static void test_crash_before_commit(void **state) {
    (void)state;
    char dir[320], path[400], names[1024];
    new_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    tandem_test_write_file(path, "previous", 8);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        tandem_atomic_file f;
        if (tandem_atomic_open(&f, path) != TANDEM_OK || tandem_atomic_write(&f, "half of it", 10) != TANDEM_OK) _exit(3);
        _exit(0); /* no commit, no abort */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    expect_file(path, "previous", 8);
    assert_int_equal(list_dir(dir, names, sizeof names), 2);
    char *temp = strtok(names, "\n");
    if (!strcmp(temp, "model.safetensors")) temp = strtok(NULL, "\n");
    printf("left behind: %s\n", temp);
    assert_true(tandem_atomic_is_temp_of(temp, "model.safetensors"));
    assert_false(tandem_atomic_is_temp_of(temp, "model"));
    assert_false(tandem_atomic_is_temp_of(temp, "model.safetensors.x"));
}

static void test_is_temp_of(void **state) {
    (void)state;
    static const struct { const char *name, *base; int want; } cases[] = {
        {".a.bin.tmp.12.3", "a.bin", 1}, {".a.bin.tmp.", "a.bin", 1},     {".a.bin.tmp", "a.bin", 0},
        {"a.bin.tmp.12.3", "a.bin", 0},  {".a.bin.tmp.1", "a.bi", 0},     {".a.binx.tmp.1", "a.bin", 0},
        {".a.bin", "a.bin", 0},          {"..a.bin.tmp.1", "a.bin", 0},   {".ckpt_000100.safetensors.tmp.9.0",
                                                                           "ckpt_000100.safetensors", 1},
        {".x.tmp.tmp.1", "x.tmp", 1},    {".x.tmp.1", "x.tmp", 0},        {"", "a", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int got = tandem_atomic_is_temp_of(cases[i].name, cases[i].base) != 0;
        if (got != cases[i].want)
            fail_msg("is_temp_of(\"%s\", \"%s\") = %d, expected %d", cases[i].name, cases[i].base, got,
                     cases[i].want);
    }
}

static void expect_refused(const char *path, tandem_status want, const char *what) {
    tandem_atomic_file f;
    assert_int_equal(tandem_atomic_open(&f, path), want);
    assert_int_equal(f.fd, -1);
    if (!strstr(tandem_last_error(), what)) fail_msg("expected '%s' in: %s", what, tandem_last_error());
    tandem_atomic_abort(&f); /* safe after a failed open */
}

static void test_bad_paths(void **state) {
    (void)state;
    char dir[320], path[PATH_MAX + 64], names[1024];
    new_dir(dir, sizeof dir);
    expect_refused("", TANDEM_E_INVALID, "empty path");
    snprintf(path, sizeof path, "%s/", dir);
    expect_refused(path, TANDEM_E_INVALID, "names a directory");
    snprintf(path, sizeof path, "%s/missing/x.bin", dir);
    expect_refused(path, TANDEM_E_IO, path);
    memset(path, 'a', PATH_MAX + 10);
    path[0] = '/';
    path[PATH_MAX + 10] = '\0';
    expect_refused(path, TANDEM_E_INVALID, "atomic write /aaaaaaaa"); /* the message is cut: it names the path */
    /* the target is a non-empty directory: refused at open (an output only replaces a regular
     * file), nothing is left behind */
    snprintf(path, sizeof path, "%s/sub", dir);
    assert_int_equal(mkdir(path, 0777), 0);
    char inner[PATH_MAX];
    snprintf(inner, sizeof inner, "%s/file", path);
    tandem_test_write_file(inner, "x", 1);
    tandem_atomic_file f;
    assert_int_equal(tandem_atomic_open(&f, path), TANDEM_E_IO);
    printf("%s\n", tandem_last_error());
    assert_non_null(strstr(tandem_last_error(), "directory"));
    assert_non_null(strstr(tandem_last_error(), path));
    assert_int_equal(list_dir(dir, names, sizeof names), 1); /* only sub/ */
    expect_file(inner, "x", 1);
    /* the directory appears between open and commit: the commit refuses it, nothing is left */
    char late[PATH_MAX - 16];
    snprintf(late, sizeof late, "%s/late", dir);
    CHECK(tandem_atomic_open(&f, late));
    CHECK(tandem_atomic_write(&f, "abc", 3));
    assert_int_equal(mkdir(late, 0777), 0);
    snprintf(inner, sizeof inner, "%s/file", late);
    tandem_test_write_file(inner, "y", 1);
    assert_int_equal(tandem_atomic_commit(&f), TANDEM_E_IO);
    printf("%s\n", tandem_last_error());
    assert_non_null(strstr(tandem_last_error(), "directory"));
    assert_non_null(strstr(tandem_last_error(), late));
    assert_int_equal(list_dir(dir, names, sizeof names), 2); /* sub/ and late/ */
    expect_file(inner, "y", 1);
}

static void test_bare_name(void **state) {
    (void)state;
    char dir[320], cwd[PATH_MAX], path[400];
    new_dir(dir, sizeof dir);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    tandem_atomic_file f;
    tandem_status st = tandem_atomic_open(&f, "bare.txt");
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", st == TANDEM_OK ? f.tmp : "");
    if (st == TANDEM_OK) st = tandem_atomic_write(&f, "here", 4);
    if (st == TANDEM_OK) st = tandem_atomic_commit(&f);
    assert_int_equal(chdir(cwd), 0);
    CHECK(st);
    printf("temp file for a bare name: %s\n", tmp);
    assert_true(strncmp(tmp, "./.bare.txt.tmp.", 16) == 0); /* in the working directory */
    snprintf(path, sizeof path, "%s/bare.txt", dir);
    expect_file(path, "here", 4);
}

enum { WRITERS = 4, ROUNDS = 40, BYTES = 3000 };

typedef struct writer {
    const char *path;
    unsigned char data[BYTES];
    char tmp[ROUNDS][PATH_MAX];
    tandem_status st;
} writer;

static void *write_many(void *arg) {
    writer *w = arg;
    for (int k = 0; k < ROUNDS && w->st == TANDEM_OK; k++) {
        tandem_atomic_file f;
        w->st = tandem_atomic_open(&f, w->path);
        if (w->st != TANDEM_OK) break;
        snprintf(w->tmp[k], sizeof w->tmp[k], "%s", f.tmp);
        w->st = tandem_atomic_write(&f, w->data, BYTES / 2);
        if (w->st == TANDEM_OK) w->st = tandem_atomic_write(&f, w->data + BYTES / 2, BYTES - BYTES / 2);
        if (w->st == TANDEM_OK) w->st = tandem_atomic_commit(&f);
        else tandem_atomic_abort(&f);
    }
    return NULL;
}

static void test_concurrent_writers(void **state) {
    (void)state;
    char dir[320], path[400], names[1024];
    new_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/shared.bin", dir);
    static writer w[WRITERS];
    pthread_t th[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        w[i].path = path;
        w[i].st = TANDEM_OK;
        tandem_rng_fill_bytes(&rng, w[i].data, BYTES);
        assert_int_equal(pthread_create(&th[i], NULL, write_many, &w[i]), 0);
    }
    for (int i = 0; i < WRITERS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < WRITERS; i++) assert_int_equal(w[i].st, TANDEM_OK);
    /* every temp name distinct (the counter is process-wide and atomic) */
    for (int a = 0; a < WRITERS * ROUNDS; a++)
        for (int b = a + 1; b < WRITERS * ROUNDS; b++)
            if (!strcmp(w[a / ROUNDS].tmp[a % ROUNDS], w[b / ROUNDS].tmp[b % ROUNDS]))
                fail_msg("temp name %s used twice", w[a / ROUNDS].tmp[a % ROUNDS]);
    size_t len = 0;
    unsigned char *got = tandem_test_read_file_ok(path, &len);
    assert_int_equal(len, BYTES);
    int whole = 0;
    for (int i = 0; i < WRITERS; i++) whole |= memcmp(got, w[i].data, BYTES) == 0;
    free(got);
    assert_true(whole); /* one writer's bytes, not a mix */
    assert_int_equal(list_dir(dir, names, sizeof names), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pieces_then_commit), cmocka_unit_test(test_abort),
        cmocka_unit_test(test_crash_before_commit), cmocka_unit_test(test_is_temp_of),
        cmocka_unit_test(test_bad_paths),          cmocka_unit_test(test_bare_name),
        cmocka_unit_test(test_concurrent_writers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
