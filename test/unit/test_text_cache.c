/* test_text_cache.c — the persistent text cache: miss then hit, corruption and truncation
 * detected and rebuilt, a changed transcript changes the key, the directory is created, the
 * hash reacts to every single-bit change, no cache directory means no persistent cache, and an
 * index loaded from the cache survives the file being truncated or rewritten under it.
 * TANDEM_CACHE_DIR (applied as the CLI does) points into a temp dir. */
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform/os/os.h"
#include "test/fixtures.h"
#include "runtime/data/text_cache.h"
#include "runtime/data/text_index.h"
#include "tools/env_options.h"

static char tmpdir[256], datadir[300], cachedir[300];

static void write_meta(const char *data) {
    char p[512];
    snprintf(p, sizeof p, "%s/metadata.csv", datadir);
    assert_int_equal(tandem_file_write_atomic(p, data, strlen(data)), TANDEM_OK);
}

static int setup(void **state) {
    (void)state;
    if (tandem_test_mkdtemp(tmpdir, sizeof tmpdir, "test_cache") != 0) return -1;
    snprintf(datadir, sizeof datadir, "%s/data", tmpdir);
    snprintf(cachedir, sizeof cachedir, "%s/cache/nested/dir", tmpdir); /* does not exist yet */
    char p[512];
    snprintf(p, sizeof p, "%s/wavs", datadir);
    tandem_mkdir_p(p);
    for (int i = 1; i <= 40; i++) {
        snprintf(p, sizeof p, "%s/wavs/u%02d.wav", datadir, i);
        tandem_test_write_file(p, "", 0);
    }
    setenv("TANDEM_CACHE_DIR", cachedir, 1);
    if (cli_env_apply(NULL, 0) != TANDEM_OK) return -1;
    tandem_test_log_capture(TANDEM_LOG_DEBUG);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    tandem_test_log_stop();
    tandem_test_rmtree(tmpdir);
    unsetenv("TANDEM_CACHE_DIR");
    return cli_env_apply(NULL, 0) == TANDEM_OK ? 0 : -1;
}

static char meta[16384];
static void make_meta(const char *changed_line_7) {
    size_t o = 0;
    for (int i = 1; i <= 40; i++) {
        if (i == 7 && changed_line_7)
            o += (size_t)snprintf(meta + o, sizeof meta - o, "u%02d|%s|%s\n", i, changed_line_7, changed_line_7);
        else
            o += (size_t)snprintf(meta + o, sizeof meta - o, "u%02d|Sentence %d, about %d birds.|Sentence %d, about %d birds.\n",
                                  i, i, i * 37, i, i * 37);
    }
    o += (size_t)snprintf(meta + o, sizeof meta - o, "../bad|x|x\n"); /* skip counts survive the cache */
    write_meta(meta);
}

static void open_ix(tandem_text_index *ix, int want_hit) {
    tandem_text_index_config c;
    tandem_text_index_config_default(&c);
    c.data_dir = datadir;
    c.num_workers = 2;
    tandem_test_log_clear();
    assert_int_equal(tandem_text_index_open(&c, ix), TANDEM_OK);
    if (ix->cache_hit != want_hit) fail_msg("cache_hit %d, want %d; log:\n%s", ix->cache_hit, want_hit, tandem_test_log_text());
    assert_int_equal(ix->count, 40);
    assert_int_equal(ix->skipped[TANDEM_SKIP_BAD_ID], 1);
    assert_true(strncmp(ix->cache_path, cachedir, strlen(cachedir)) == 0);
}

/* Same content either way: the index read from the cache equals the built one. */
static void assert_same(const tandem_text_index *a, const tandem_text_index *b) {
    assert_int_equal(a->count, b->count);
    assert_int_equal(a->blob_bytes_, b->blob_bytes_);
    assert_memory_equal(a->blob_, b->blob_, a->blob_bytes_);
}

static void flip_byte(const char *path, long at) {
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, at, SEEK_SET);
    int c = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
}

static void test_hit_corrupt_stale(void **state) {
    (void)state;
    make_meta(NULL);
    struct stat sb;
    assert_int_not_equal(stat(cachedir, &sb), 0);
    tandem_text_index a, b;
    open_ix(&a, 0); /* miss: built and written, directory created */
    assert_int_equal(stat(cachedir, &sb), 0);
    assert_int_equal(stat(a.cache_path, &sb), 0);
    assert_int_equal((size_t)sb.st_size, a.blob_bytes_);
    open_ix(&b, 1); /* hit */
    assert_int_equal(b.blob_bytes_, (size_t)sb.st_size); /* read whole into memory the index owns */
    assert_same(&a, &b);
    tandem_text_index_free(&b);

    /* a corrupted payload byte (random position, seeded) → checksum → rebuilt → hit again */
    tandem_rng r = {tandem_test_seed("cache corruption")};
    long at = (long)tandem_rng_int(&r, sizeof(tandem_text_cache_header), (int64_t)sb.st_size - 1);
    flip_byte(a.cache_path, at);
    open_ix(&b, 0);
    assert_non_null(strstr(tandem_test_log_text(), "payload checksum mismatch; rebuilding"));
    assert_same(&a, &b);
    tandem_text_index_free(&b);
    open_ix(&b, 1);
    tandem_text_index_free(&b);

    /* a corrupted header byte */
    flip_byte(a.cache_path, (long)tandem_rng_int(&r, 8, sizeof(tandem_text_cache_header) - 1));
    open_ix(&b, 0);
    assert_non_null(strstr(tandem_test_log_text(), "rebuilding"));
    tandem_text_index_free(&b);

    /* truncated */
    assert_int_equal(truncate(a.cache_path, (off_t)(a.blob_bytes_ - 3)), 0);
    open_ix(&b, 0);
    assert_non_null(strstr(tandem_test_log_text(), "rebuilding"));
    tandem_text_index_free(&b);
    assert_int_equal(truncate(a.cache_path, 10), 0);
    open_ix(&b, 0);
    assert_non_null(strstr(tandem_test_log_text(), "truncated"));
    tandem_text_index_free(&b);
    open_ix(&b, 1);
    tandem_text_index_free(&b);

    /* one transcript changed → new key → miss; its tokens are the new text */
    uint64_t old_key = a.key;
    make_meta("Changed words here.");
    open_ix(&b, 0);
    assert_true(b.key != old_key);
    assert_non_null(strstr(tandem_test_log_text(), "stale: key"));
    assert_true(b.utts[6].n_tok != a.utts[6].n_tok ||
                memcmp(tandem_utt_tokens(&a, &a.utts[6]), tandem_utt_tokens(&b, &b.utts[6]), a.utts[6].n_tok * 2) != 0);
    tandem_text_index_free(&b);
    open_ix(&b, 1);
    tandem_text_index_free(&b);

    /* a setting that changes the result is part of the key */
    tandem_text_index_config c;
    tandem_text_index_config_default(&c);
    c.data_dir = datadir;
    c.column = TANDEM_TEXT_COLUMN_RAW;
    assert_int_equal(tandem_text_index_open(&c, &b), TANDEM_OK);
    assert_int_equal(b.cache_hit, 0);
    tandem_text_index_free(&b);
    tandem_text_index_free(&a);
}

/* No cache directory in the runtime options: the index is built in memory every time, nothing
 * is written, and the log says so at INFO. */
/* Every utterance of ix read through (ids, audio paths, tokens) into a digest. */
static uint64_t walk(const tandem_text_index *ix) {
    uint64_t h = 0;
    for (uint32_t i = 0; i < ix->count; i++) {
        const tandem_utt *u = &ix->utts[i];
        h = tandem_hash64(tandem_utt_id(ix, u), strlen(tandem_utt_id(ix, u)), h);
        h = tandem_hash64(tandem_utt_audio(ix, u), strlen(tandem_utt_audio(ix, u)), h);
        h = tandem_hash64(tandem_utt_tokens(ix, u), sizeof(uint16_t) * u->n_tok, h);
    }
    return h;
}

/* The cache file truncated, then rewritten in place, while an index loaded from it is in use:
 * the index does not change and nothing faults (a mapping of the file would die of SIGBUS). */
static void test_cache_changed_under_index(void **state) {
    (void)state;
    make_meta(NULL);
    tandem_text_index a, b;
    open_ix(&a, 0);
    open_ix(&b, 1);
    const uint64_t want = walk(&a);
    assert_true(walk(&b) == want);
    struct stat sb;
    assert_int_equal(stat(b.cache_path, &sb), 0);
    assert_int_equal(truncate(b.cache_path, 0), 0);
    assert_true(walk(&b) == want);
    /* rewritten in place with other bytes of the same size */
    char *junk = malloc((size_t)sb.st_size);
    memset(junk, 0xA5, (size_t)sb.st_size);
    FILE *f = fopen(b.cache_path, "r+b");
    assert_non_null(f);
    assert_int_equal(fwrite(junk, 1, (size_t)sb.st_size, f), (size_t)sb.st_size);
    fclose(f);
    free(junk);
    assert_true(walk(&b) == want);
    assert_same(&a, &b);
    tandem_text_index_free(&b);
    tandem_text_index_free(&a);
    open_ix(&b, 0); /* the rewritten file is refused and rebuilt */
    assert_true(walk(&b) == want);
    tandem_text_index_free(&b);
}

static void test_no_cache_dir(void **state) {
    (void)state;
    make_meta(NULL);
    tandem_runtime_options o;
    tandem_runtime_get_options(&o);
    assert_string_equal(o.cache_dir, cachedir);
    o.cache_dir = NULL;
    assert_int_equal(tandem_runtime_set_options(&o), TANDEM_OK);
    tandem_text_index_config c;
    tandem_text_index_config_default(&c);
    c.data_dir = datadir;
    for (int run = 0; run < 2; run++) {
        tandem_text_index ix;
        tandem_test_log_clear();
        assert_int_equal(tandem_text_index_open(&c, &ix), TANDEM_OK);
        assert_int_equal(ix.cache_hit, 0);
        assert_string_equal(ix.cache_path, "");
        assert_int_equal(ix.count, 40);
        const char *log = tandem_test_log_text();
        if (!strstr(log, "no cache directory") || !strstr(log, "runs in memory"))
            fail_msg("no INFO line about the in-memory frontend; log:\n%s", log);
        tandem_text_index_free(&ix);
    }
    struct stat sb;
    assert_int_not_equal(stat(cachedir, &sb), 0); /* nothing created */
}

static void test_check_rejects_garbage(void **state) {
    (void)state;
    char junk[4096];
    tandem_rng r = {tandem_test_seed("cache garbage")};
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)tandem_rng_next(&r);
    assert_int_equal(tandem_text_cache_check(junk, sizeof junk, 1), TANDEM_E_FORMAT);
    assert_int_equal(tandem_text_cache_check(junk, 12, 1), TANDEM_E_FORMAT);
    memcpy(junk, TANDEM_TEXT_CACHE_MAGIC, 8); /* right magic, wrong everything else */
    assert_int_equal(tandem_text_cache_check(junk, sizeof junk, 1), TANDEM_E_FORMAT);
}

static void test_hash(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("hash")};
    uint8_t buf[300];
    for (int iter = 0; iter < 200; iter++) {
        size_t n = (size_t)tandem_rng_int(&r, 1, sizeof buf);
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)tandem_rng_next(&r);
        uint64_t h = tandem_hash64(buf, n, 0);
        assert_true(h == tandem_hash64(buf, n, 0));
        assert_true(h != tandem_hash64(buf, n, 1));    /* seed matters */
        assert_true(h != tandem_hash64(buf, n - 1, 0)); /* length matters */
        size_t bit = (size_t)tandem_rng_int(&r, 0, (int64_t)n * 8 - 1);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        uint64_t h2 = tandem_hash64(buf, n, 0);
        assert_true(h != h2);
        /* avalanche: a single flipped input bit changes about half the output bits */
        int diff = __builtin_popcountll(h ^ h2);
        assert_true(diff >= 10 && diff <= 54);
    }
}

/* Temp files of the cache's writes left by a writer that died are removed when the cache
 * directory is next used; a live writer's, a recent one's (whose pid may be another host's) and
 * anything not of the cache's own name pattern are left alone. */
static void make_temp(const char *name, int old, int as_dir) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", cachedir, name);
    if (as_dir) assert_int_equal(mkdir(p, 0755), 0);
    else tandem_test_write_file(p, "partial", 7);
    if (old) {
        struct timespec ts[2] = {{0, UTIME_OMIT}, {time(NULL) - 2 * TANDEM_TEXT_CACHE_TEMP_AGE_S, 0}};
        assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
    }
}

static int temp_exists(const char *name) {
    char p[4096];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", cachedir, name);
    return lstat(p, &sb) == 0;
}

static void test_stale_temps_swept(void **state) {
    (void)state;
    make_meta(NULL);
    tandem_text_index ix;
    open_ix(&ix, 0);
    char base[100];
    snprintf(base, sizeof base, "%s", strrchr(ix.cache_path, '/') + 1); /* text-<16 hex>.cache */
    tandem_text_index_free(&ix);
    fflush(NULL);
    pid_t dead = fork(); /* a pid that is gone */
    assert_true(dead >= 0);
    if (dead == 0) _exit(0);
    assert_int_equal(waitpid(dead, NULL, 0), dead);
    char name[9][200];
    snprintf(name[0], sizeof name[0], ".%s.tmp.%ld.3", base, (long)dead);        /* swept */
    snprintf(name[1], sizeof name[1], ".%s.tmp.%ld.4", base, (long)dead);        /* recent: kept */
    snprintf(name[2], sizeof name[2], ".%s.tmp.%ld.5", base, (long)getpid());    /* live writer */
    snprintf(name[3], sizeof name[3], ".%s.tmp.%ld.5", base, (long)getppid());   /* live writer */
    snprintf(name[4], sizeof name[4], ".text-zzzzzzzzzzzzzzzz.cache.tmp.%ld.1", (long)dead);
    snprintf(name[5], sizeof name[5], ".other.cache.tmp.%ld.1", (long)dead);
    snprintf(name[6], sizeof name[6], ".%s.tmp.%ld.6.x", base, (long)dead);
    snprintf(name[7], sizeof name[7], "%s.tmp.%ld.7", base, (long)dead);
    snprintf(name[8], sizeof name[8], ".%s.tmp.%ld.8", base, (long)dead);        /* a directory */
    for (int i = 0; i < 9; i++) make_temp(name[i], i != 1, i == 8);
    open_ix(&ix, 1);
    tandem_text_index_free(&ix);
    if (temp_exists(name[0])) fail_msg("%s (writer gone) was not swept; log:\n%s", name[0], tandem_test_log_text());
    assert_non_null(strstr(tandem_test_log_text(), name[0]));
    for (int i = 1; i < 9; i++)
        if (!temp_exists(name[i])) fail_msg("%s was removed, but it is not a dead writer's stale temp", name[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hit_corrupt_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_changed_under_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_cache_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_temps_swept, setup, teardown),
        cmocka_unit_test(test_check_rejects_garbage),
        cmocka_unit_test(test_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
