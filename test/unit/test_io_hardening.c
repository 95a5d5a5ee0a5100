/* test_io_hardening.c — inputs and outputs against careless or hostile paths (issue 10,
 * docs/RELIABILITY.md "Inputs and outputs"); all nodes are made inside a temp dir:
 *   - outputs (class 1): every writer (write_atomic, the streaming atomic file, .npy, WAV,
 *     checkpoint, PNG plot, the public check) refuses a FIFO, a character device, a directory and a symbolic link at the
 *     target with a message naming it, and leaves the node (and a link's target) as it was;
 *   - inputs (class 2): a FIFO as whole-file read, config, metadata.csv, audio, checkpoint and
 *     features input, and as the newest entry of a run directory that resume searches, fails
 *     fast (under a deadline) naming the file; an endless character device
 *     is refused (in a child with a 512 MiB address-space limit, so a regression cannot eat the
 *     machine); a config over its size limit is refused naming the limit; a WAV whose header
 *     claims hours (87 Hz) is refused by features before allocating, naming --max-seconds;
 *   - numbers (class 8): finite but huge float samples are an error naming the file
 *     (features and the decoder the loader uses);
 *   - parsers (class 9): the safetensors reader rejects an empty tensor name, a duplicate one, a
 *     header that does not begin with '{' and padding other than spaces;
 *   - messages (class 10): a metadata.csv with many bad rows logs the first
 *     TANDEM_INDEX_WARN_ROWS and one summary line with the count; libsndfile's "SF_INFO struct
 *     incomplete" never reaches the user, our message names the file. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sndfile.h>

#include "platform/os/os.h"
#include "runtime/audio/audio.h"
#include "runtime/core/config.h"
#include "runtime/data/text_index.h"
#include "runtime/formats/atomic_file.h"
#include "runtime/formats/checkpoint.h"
#include "runtime/formats/safetensors.h"
#include "runtime/report/plot.h"
#include "tandem.h"
#include "test/fixtures.h"

static char dir[256];

static int setup(void **state) {
    (void)state;
    assert_int_equal(tandem_test_mkdtemp(dir, sizeof dir, "test_io_hardening"), 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    assert_int_equal(tandem_test_rmtree(dir), 0);
    return 0;
}

static void path_in(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", dir, name); }

/* A FIFO at dir/name (the path in buf). */
static void make_fifo(char *buf, size_t cap, const char *name) {
    path_in(buf, cap, name);
    assert_int_equal(mkfifo(buf, 0600), 0);
}

/* A character device like /dev/null (1, 3) at dir/name; 0 when this process may not make one. */
static int make_null_node(char *buf, size_t cap, const char *name) {
    path_in(buf, cap, name);
    return mknod(buf, S_IFCHR | 0600, makedev(1, 3)) == 0;
}

/* A data directory dir/name (path in data) and the path of its metadata.csv (in meta). */
static void make_data_dir(char *data, size_t dcap, char *meta, size_t mcap, const char *name) {
    path_in(data, dcap, name);
    assert_int_equal(mkdir(data, 0700), 0);
    snprintf(meta, mcap, "%s/metadata.csv", data);
}

static void expect_fail_naming(tandem_status got, tandem_status want, const char *path, const char *what) {
    if (got != want)
        fail_msg("%s: status %s, expected %s (%s)", path, tandem_status_name(got), tandem_status_name(want),
                 tandem_last_error());
    const char *msg = tandem_last_error();
    if (!strstr(msg, path) || (what && !strstr(msg, what)))
        fail_msg("%s: the message does not name the path and \"%s\": %s", path, what ? what : "", msg);
}

/* ---- class 1: outputs ---------------------------------------------------------------------- */

/* Every writer at path fails with TANDEM_E_IO naming it and what; path's node is left as it was. */
static void expect_writers_refuse(const char *path, const char *what) {
    struct stat before, after;
    assert_int_equal(lstat(path, &before), 0);
    static const char bytes[] = "not yours";
    expect_fail_naming(tandem_file_write_atomic(path, bytes, sizeof bytes), TANDEM_E_IO, path, what);
    expect_fail_naming(tandem_files_write_atomic(path, bytes, sizeof bytes), TANDEM_E_IO, path, what);
    expect_fail_naming(tandem_files_check_output(path), TANDEM_E_IO, path, what);
    tandem_atomic_file f;
    expect_fail_naming(tandem_atomic_open(&f, path), TANDEM_E_IO, path, what);
    tandem_atomic_abort(&f);
    const float x[4] = {0.1f, -0.2f, 0.3f, 0.0f};
    const int64_t shape[1] = {4};
    expect_fail_naming(tandem_npy_write_f32(path, x, 1, shape), TANDEM_E_IO, path, what);
    expect_fail_naming(tandem_wav_write_pcm16(path, x, 4, 22050), TANDEM_E_IO, path, what);
    /* a checkpoint */
    tandem_st_tensor t = {.name = "w", .dtype = TANDEM_F32, .ndim = 1, .shape = {4}, .data = x};
    tandem_st_writer *w = NULL;
    CHECK(tandem_st_writer_create(&t, 1, 0, 0, &w));
    expect_fail_naming(tandem_st_write(w, path, NULL, 0, NULL, NULL), TANDEM_E_IO, path, what);
    tandem_st_writer_free(w);
    /* a PNG plot */
    tandem_plot *plot = NULL;
    CHECK(tandem_plot_create(160, 120, &plot));
    const float step[2] = {1, 2}, loss[2] = {1.0f, 0.5f};
    expect_fail_naming(tandem_plot_loss(plot, path, 160, 120, step, loss, 2, NULL, NULL, 0), TANDEM_E_IO, path,
                       what);
    tandem_plot_free(plot);
    assert_int_equal(lstat(path, &after), 0);
    assert_int_equal(before.st_mode, after.st_mode);
    assert_int_equal(before.st_ino, after.st_ino);
}

static void test_outputs_never_replace_what_is_not_theirs(void **state) {
    (void)state;
    char p[512];
    make_fifo(p, sizeof p, "out.fifo");
    expect_writers_refuse(p, "FIFO");
    if (make_null_node(p, sizeof p, "out.null")) expect_writers_refuse(p, "character device");
    else printf("note: mknod not permitted here; the character-device case is not run\n");
    path_in(p, sizeof p, "out.dir");
    assert_int_equal(mkdir(p, 0700), 0);
    expect_writers_refuse(p, "directory");
    /* a link to a regular file: refused, and neither the link nor its target changes */
    char target[512];
    path_in(target, sizeof target, "target.wav");
    tandem_test_write_file(target, "old", 3);
    path_in(p, sizeof p, "out.link");
    assert_int_equal(symlink(target, p), 0);
    expect_writers_refuse(p, "symbolic link");
    size_t len = 0;
    char *kept = tandem_test_read_file_ok(target, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(kept, "old", 3);
    free(kept);
    /* a regular file is still replaced (and a link on the way in the directory part is fine) */
    char via[512], through[600];
    path_in(via, sizeof via, "dirlink");
    assert_int_equal(symlink(dir, via), 0);
    snprintf(through, sizeof through, "%s/target.wav", via);
    CHECK(tandem_file_write_atomic(through, "new", 3));
    kept = tandem_test_read_file_ok(target, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(kept, "new", 3);
    free(kept);
}

/* ---- class 2: inputs ----------------------------------------------------------------------- */

typedef struct input_call {
    int what;
    char path[512];
    tandem_status st;
    char msg[1024];
} input_call;

enum { IN_READ_ALL, IN_CONFIG, IN_INDEX, IN_AUDIO_PROBE, IN_AUDIO_DECODE, IN_CHECKPOINT, IN_FEATURES, IN_COUNT };
static const char *const input_names[IN_COUNT] = {"read_all", "config", "metadata", "audio probe",
                                                  "audio decode", "checkpoint", "features"};

static void input_main(void *arg) {
    input_call *c = arg;
    switch (c->what) {
    case IN_READ_ALL: {
        char *d = NULL;
        c->st = tandem_file_read_all(c->path, &d, NULL);
        tandem_free(d);
        break;
    }
    case IN_CONFIG: {
        tandem_config cfg;
        tandem_config_init(&cfg);
        c->st = tandem_config_load(&cfg, c->path);
        break;
    }
    case IN_INDEX: { /* c->path: a data dir whose metadata.csv is the node */
        tandem_text_index_config ic;
        tandem_text_index_config_default(&ic);
        ic.data_dir = c->path;
        ic.use_cache = 0;
        tandem_text_index ix;
        c->st = tandem_text_index_open(&ic, &ix);
        if (c->st == TANDEM_OK) tandem_text_index_free(&ix);
        break;
    }
    case IN_AUDIO_PROBE: {
        tandem_audio_info info;
        c->st = tandem_audio_probe(c->path, &info);
        break;
    }
    case IN_AUDIO_DECODE: {
        float buf[1024];
        int64_t n = 0;
        c->st = tandem_audio_load(c->path, buf, 1024, &n, NULL);
        break;
    }
    case IN_CHECKPOINT: {
        tandem_st_file *f = NULL;
        c->st = tandem_st_open(c->path, &f);
        tandem_st_close(f);
        break;
    }
    case IN_FEATURES: {
        tandem_features_options o;
        tandem_features_options_init(&o);
        o.backend = TANDEM_BACKEND_HOST;
        tandem_features *f = NULL;
        c->st = tandem_features_open(&o, &f);
        tandem_features_result r;
        if (c->st == TANDEM_OK) c->st = tandem_features_from_file(f, c->path, NULL, 0, &r);
        tandem_features_close(f);
        break;
    }
    }
    snprintf(c->msg, sizeof c->msg, "%s", tandem_last_error());
}

/* tandem_files_check_distinct: an output that is an input (the same spelling, another one, a hard
 * link) or another output (also when neither exists yet) is TANDEM_E_INVALID naming both paths;
 * NULL entries and missing inputs are skipped; bad arrays are refused. */
static void test_outputs_distinct_from_inputs(void **state) {
    (void)state;
    char in[300], again[300], hard[300], out[300], out2[300];
    path_in(in, sizeof in, "in.wav");
    snprintf(again, sizeof again, "%s/./in.wav", dir);
    path_in(hard, sizeof hard, "hard.wav");
    path_in(out, sizeof out, "new.npy");
    snprintf(out2, sizeof out2, "%s//new.npy", dir);
    CHECK(tandem_file_write_atomic(in, "x", 1));
    assert_int_equal(link(in, hard), 0);
    const char *ins[3] = {NULL, in, "/nonexistent/x"};
    const char *o1[2] = {again, NULL}, *o2[1] = {hard}, *o3[2] = {out, out2}, *ok[2] = {out, NULL};
    expect_fail_naming(tandem_files_check_distinct(o1, 2, ins, 3), TANDEM_E_INVALID, again, in);
    expect_fail_naming(tandem_files_check_distinct(o2, 1, ins, 3), TANDEM_E_INVALID, hard, in);
    expect_fail_naming(tandem_files_check_distinct(o3, 2, ins, 3), TANDEM_E_INVALID, out2, out);
    CHECK(tandem_files_check_distinct(ok, 2, ins, 3));
    CHECK(tandem_files_check_distinct(NULL, 0, NULL, 0));
    assert_int_equal(tandem_files_check_distinct(NULL, 1, ins, 3), TANDEM_E_INVALID);
    assert_int_equal(tandem_files_check_distinct(ok, -1, ins, 3), TANDEM_E_INVALID);
}

/* Every reader given path (data_dir for the index) fails within 5 s with want, naming the node. */
static void expect_readers_refuse(const char *path, const char *data_dir, const char *what) {
    static input_call calls[2 * IN_COUNT]; /* static: a reader that hangs keeps its argument */
    static int next;
    for (int k = 0; k < IN_COUNT; k++) {
        input_call *c = &calls[next++ % (2 * IN_COUNT)];
        memset(c, 0, sizeof *c);
        c->what = k;
        snprintf(c->path, sizeof c->path, "%s", k == IN_INDEX ? data_dir : path);
        double ms = 0;
        if (!tandem_test_finishes_within(input_main, c, 5000, &ms))
            fail_msg("%s of %s (%s) still blocked after %.0f ms", input_names[k], path, what, ms);
        if (c->st == TANDEM_OK) fail_msg("%s of %s (%s) succeeded", input_names[k], path, what);
        if (!strstr(c->msg, path) || !strstr(c->msg, what))
            fail_msg("%s of %s: the message does not name the file and \"%s\": %s", input_names[k], path,
                     what, c->msg);
        printf("%-12s %s: %s (%.1f ms)\n", input_names[k], what, c->msg, ms);
    }
}

static void test_inputs_that_never_open_fail_fast(void **state) {
    (void)state;
    char data[512], meta[600];
    make_data_dir(data, sizeof data, meta, sizeof meta, "data");
    assert_int_equal(mkfifo(meta, 0600), 0);
    expect_readers_refuse(meta, data, "FIFO");
    /* a device: an endless input (read here only through the type check) */
    assert_int_equal(unlink(meta), 0);
    if (mknod(meta, S_IFCHR | 0600, makedev(1, 5)) == 0) expect_readers_refuse(meta, data, "character device");
    else printf("note: mknod not permitted here; the device case runs in test_endless_input_refused only\n");
}

/* A FIFO named like the newest checkpoint of a run directory: resume's search skips it (naming
 * it) instead of blocking on it. */
typedef struct find_call {
    char dir[512], path[1024];
    int64_t step;
    int found;
    tandem_status st;
} find_call;

static void find_main(void *arg) {
    find_call *c = arg;
    c->st = tandem_checkpoint_find_latest(c->dir, c->path, sizeof c->path, &c->step, &c->found);
}

static void test_resume_entry_fifo_skipped(void **state) {
    (void)state;
    static find_call c; /* static: a search that hangs keeps its argument */
    memset(&c, 0, sizeof c);
    path_in(c.dir, sizeof c.dir, "run");
    assert_int_equal(mkdir(c.dir, 0700), 0);
    char fifo[1024];
    CHECK(tandem_checkpoint_path(c.dir, 10, fifo, sizeof fifo));
    assert_int_equal(mkfifo(fifo, 0600), 0);
    tandem_test_log_capture(TANDEM_LOG_WARN);
    double ms = 0;
    const int done = tandem_test_finishes_within(find_main, &c, 5000, &ms);
    tandem_test_log_stop();
    if (!done) fail_msg("the checkpoint search still blocks on %s after %.0f ms", fifo, ms);
    CHECK(c.st);
    assert_int_equal(c.found, 0);
    const char *log = tandem_test_log_text();
    if (!strstr(log, fifo) || !strstr(log, "FIFO")) fail_msg("the skip does not name the FIFO: %s", log);
}

/* In a child with a 512 MiB address-space limit: a regression reads /dev/zero until the limit
 * (NOMEM), never until the OOM killer. Exit 0: refused as a character device. */
static void test_endless_input_refused(void **state) {
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = {(rlim_t)512 << 20, (rlim_t)512 << 20};
        setrlimit(RLIMIT_AS, &rl);
        alarm(20);
        char *d = NULL;
        tandem_status st = tandem_file_read_all("/dev/zero", &d, NULL);
        tandem_config cfg;
        tandem_config_init(&cfg);
        tandem_status st2 = tandem_config_load(&cfg, "/dev/zero");
        const int ok = st == TANDEM_E_IO && st2 == TANDEM_E_IO && strstr(tandem_last_error(), "/dev/zero") &&
                       strstr(tandem_last_error(), "character device");
        if (!ok) fprintf(stderr, "endless input: %s / %s: %s\n", tandem_status_name(st),
                         tandem_status_name(st2), tandem_last_error());
        _exit(ok ? 0 : 1);
    }
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
}

static void test_whole_file_limits(void **state) {
    (void)state;
    char p[512];
    path_in(p, sizeof p, "big.yaml");
    const size_t n = (size_t)TANDEM_CONFIG_MAX_BYTES + 1;
    char *text = malloc(n);
    memset(text, '#', n); /* a comment: valid YAML, only too large */
    tandem_test_write_file(p, text, n);
    free(text);
    tandem_config cfg;
    tandem_config_init(&cfg);
    expect_fail_naming(tandem_config_load(&cfg, p), TANDEM_E_BUDGET, p, "1048576");
    assert_non_null(strstr(tandem_last_error(), "at most 1 MiB"));
    /* the general limit, with the hint passed through */
    char *d = NULL;
    tandem_test_write_file(p, "0123456789", 10);
    expect_fail_naming(tandem_file_read_limited(p, 9, "raise it with --x", &d, NULL), TANDEM_E_BUDGET, p,
                       "raise it with --x");
    CHECK(tandem_file_read_limited(p, 10, NULL, &d, NULL));
    tandem_free(d);
}

/* A features handle on the host backend; max_seconds 0: the default limit. */
static tandem_features *host_features(double max_seconds) {
    tandem_features_options o;
    tandem_features_options_init(&o);
    o.backend = TANDEM_BACKEND_HOST;
    if (max_seconds > 0) o.max_seconds = max_seconds;
    tandem_features *f = NULL;
    CHECK(tandem_features_open(&o, &f));
    return f;
}

/* A PCM16 WAV at 87 Hz: 200,000 frames (400 kB) are 38 minutes, 50.7 M samples at 22050 Hz. */
static void test_huge_claim_refused_before_allocating(void **state) {
    (void)state;
    char p[512];
    path_in(p, sizeof p, "long.wav");
    const int64_t frames = 200000;
    float *x = calloc((size_t)frames, sizeof *x);
    tandem_test_write_audio(p, x, frames, 87, 1, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    free(x);
    tandem_features *f = host_features(0);
    tandem_features_result r;
    const uint64_t allocs = tandem_alloc_count();
    expect_fail_naming(tandem_features_from_file(f, p, NULL, 0, &r), TANDEM_E_BUDGET, p, "--max-seconds");
    assert_non_null(strstr(tandem_last_error(), "600"));
    /* the probe (libsndfile) allocates inside its open; Tandem itself nothing for the samples */
    assert_int_equal(tandem_alloc_count(), allocs);
    tandem_features_close(f);
    /* raised above the file's length, it is taken */
    f = host_features(3600);
    CHECK(tandem_features_from_file(f, p, NULL, 0, &r));
    tandem_features_close(f);
}

/* ---- class 8: numbers ---------------------------------------------------------------------- */

static void test_huge_samples_are_an_error(void **state) {
    (void)state;
    char p[512];
    path_in(p, sizeof p, "huge.wav");
    enum { N = 4096 };
    static float x[N];
    for (int i = 0; i < N; i++) x[i] = (float)(1e30 * sin(0.05 * i)); /* finite, overflows a power */
    tandem_test_write_audio(p, x, N, 22050, 1, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
    tandem_features *f = host_features(0);
    tandem_features_result r;
    expect_fail_naming(tandem_features_from_file(f, p, NULL, 0, &r), TANDEM_E_FORMAT, p, "full scale");
    /* the samples API refuses them as arguments */
    assert_int_equal(tandem_features_from_samples(f, x, N, 22050, NULL, 0, &r), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "full scale"));
    tandem_features_close(f);
    /* the decoder the loader uses: an error naming the file, so the loader skips it */
    float buf[N];
    int64_t n = 0;
    expect_fail_naming(tandem_audio_load(p, buf, N, &n, NULL), TANDEM_E_FORMAT, p, "full scale");
    /* loud but sane float audio (4 x full scale) is still taken */
    for (int i = 0; i < N; i++) x[i] = (float)(4.0 * sin(0.05 * i));
    tandem_test_write_audio(p, x, N, 22050, 1, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
    CHECK(tandem_audio_load(p, buf, N, &n, NULL));
    assert_int_equal(n, N);
}

/* ---- class 9: safetensors contract --------------------------------------------------------- */

/* header (JSON text) + data bytes, as a safetensors file in memory. */
static tandem_status st_parse(const char *header, size_t data_bytes) {
    const size_t h = strlen(header);
    uint8_t *buf = calloc(1, 8 + h + data_bytes + 1);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)h >> (8 * i));
    memcpy(buf + 8, header, h);
    tandem_st_file *f = NULL;
    tandem_status st = tandem_st_open_memory(buf, 8 + h + data_bytes, "crafted", &f);
    tandem_st_close(f);
    free(buf);
    return st;
}

static void expect_st_rejects(const char *header, size_t data_bytes, const char *why) {
    tandem_status st = st_parse(header, data_bytes);
    if (st != TANDEM_E_FORMAT)
        fail_msg("header %s: %s, expected FORMAT (%s)", header, tandem_status_name(st), why);
    if (!strstr(tandem_last_error(), why)) fail_msg("header %s: message %s lacks \"%s\"", header, tandem_last_error(), why);
}

static void test_safetensors_contract(void **state) {
    (void)state;
    const char *ok = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    assert_int_equal(st_parse(ok, 4), TANDEM_OK);
    expect_st_rejects("{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "empty name");
    expect_st_rejects("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                      "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "appears twice");
    expect_st_rejects(" {\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "must begin with '{'");
    expect_st_rejects("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}\n", 4, "space padding");
    expect_st_rejects("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}\t ", 4, "space padding");
    assert_int_equal(st_parse("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}   ", 4), TANDEM_OK);
}

/* ---- class 10: floods and foreign messages ------------------------------------------------- */

static int count_lines_with(const char *log, const char *s) {
    int n = 0;
    for (const char *p = log; (p = strstr(p, s)) != NULL; p += strlen(s)) n++;
    return n;
}

static void test_bad_rows_summarised(void **state) {
    (void)state;
    char data[512], meta[600];
    make_data_dir(data, sizeof data, meta, sizeof meta, "flood");
    FILE *f = fopen(meta, "w");
    assert_non_null(f);
    const int bad = 3 * TANDEM_INDEX_WARN_ROWS + 7;
    fprintf(f, "good|hello|hello\n");
    for (int i = 0; i < bad; i++) fprintf(f, "bad%d|a|b|c|d\n", i); /* wrong column count */
    fclose(f);
    tandem_text_index_config ic;
    tandem_text_index_config_default(&ic);
    ic.data_dir = data;
    ic.check_audio = 0;
    ic.use_cache = 0;
    tandem_text_index ix;
    tandem_test_log_capture(TANDEM_LOG_WARN);
    CHECK(tandem_text_index_open(&ic, &ix));
    tandem_test_log_stop();
    const char *log = tandem_test_log_text();
    printf("%s", log);
    assert_int_equal(count_lines_with(log, "wrong column count: 5 fields"), TANDEM_INDEX_WARN_ROWS);
    char want[256];
    snprintf(want, sizeof want, "%d more skipped rows not listed", bad - TANDEM_INDEX_WARN_ROWS);
    assert_non_null(strstr(log, want));
    snprintf(want, sizeof want, "%d rows skipped in all: wrong column count %d", bad, bad);
    assert_non_null(strstr(log, want));
    assert_int_equal(ix.skipped[TANDEM_SKIP_COLUMNS], (uint32_t)bad);
    tandem_text_index_free(&ix);
}

/* libsndfile's "Internal error : SF_INFO struct incomplete." (a WAV header with rate 0) and
 * "Format not recognised." come out as our messages naming the file. */
static void test_foreign_messages_are_ours(void **state) {
    (void)state;
    char p[512];
    path_in(p, sizeof p, "rate0.wav");
    uint8_t wav[44 + 64] = {0};
    memcpy(wav, "RIFF", 4);
    const uint32_t riff = 36 + 64, fmt_len = 16, data_len = 64;
    memcpy(wav + 4, &riff, 4);
    memcpy(wav + 8, "WAVEfmt ", 8);
    memcpy(wav + 16, &fmt_len, 4);
    const uint16_t pcm = 1, ch = 1, align = 2, bits = 16;
    const uint32_t rate = 0, byte_rate = 0;
    memcpy(wav + 20, &pcm, 2);
    memcpy(wav + 22, &ch, 2);
    memcpy(wav + 24, &rate, 4);
    memcpy(wav + 28, &byte_rate, 4);
    memcpy(wav + 32, &align, 2);
    memcpy(wav + 34, &bits, 2);
    memcpy(wav + 36, "data", 4);
    memcpy(wav + 40, &data_len, 4);
    tandem_test_write_file(p, wav, sizeof wav);
    tandem_audio_info info;
    expect_fail_naming(tandem_audio_probe(p, &info), TANDEM_E_FORMAT, p, "sample rate");
    assert_null(strstr(tandem_last_error(), "SF_INFO"));
    assert_null(strstr(tandem_last_error(), "Internal error"));
    path_in(p, sizeof p, "text.wav");
    tandem_test_write_file(p, "hello, not audio\n", 17);
    expect_fail_naming(tandem_audio_probe(p, &info), TANDEM_E_FORMAT, p, "not an audio format");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_outputs_never_replace_what_is_not_theirs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outputs_distinct_from_inputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inputs_that_never_open_fail_fast, setup, teardown),
        cmocka_unit_test(test_endless_input_refused),
        cmocka_unit_test_setup_teardown(test_resume_entry_fifo_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_whole_file_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_huge_claim_refused_before_allocating, setup, teardown),
        cmocka_unit_test_setup_teardown(test_huge_samples_are_an_error, setup, teardown),
        cmocka_unit_test(test_safetensors_contract),
        cmocka_unit_test_setup_teardown(test_bad_rows_summarised, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_messages_are_ours, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
