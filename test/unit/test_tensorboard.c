/* test_tensorboard.c — TensorBoard event files (runtime/report/tensorboard.h, runtime/run/run_tb.h)
 * read back by a reader written here: TFRecord framing (length, masked CRC-32C of the length, data,
 * masked CRC-32C of the data, with a table-driven CRC-32C of its own, checked against the
 * standard check value), then a generic protobuf decoder for the Event fields.
 *
 *   crc:      the test's CRC-32C of "123456789" is 0xe3069283 (the published check value), and the
 *             runtime's agrees with it on random buffers of random lengths.
 *   writer:   a file resumed after step 7: its records are file_version "brain.Event:2", then
 *             SessionLog START at step 8, then 3 scalar events (random tags and values: tags,
 *             steps and float values come back exactly), a PNG (width, height and colour space
 *             from its IHDR, the bytes as written) and a WAV (rate, channels, frames, content
 *             type, bytes); every wall_time within a minute of now; a file that is not a PNG is
 *             refused and adds nothing; the file name is events.out.tfevents.<10 digits>.<host>.
 *   cut:      a write past a file-size limit (EFBIG) leaves only whole records (the partial one
 *             cut off) and says so.
 *   trainer:  a 4-step run with validation every 2 steps writes one event file whose train/loss
 *             of every step equals (as float) the loss the step callback saw, val/l1 at steps 0, 2
 *             and 4, perf/step_ms and train/lr at every step, figures/loss and figures/mel images at the
 *             checkpoints; with `tensorboard: false` no event file.
 * Seed printed; replay with TANDEM_TEST_SEED.
 */
#include <math.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>
#include <sndfile.h>

#include "platform/os/os.h"
#include "runtime/core/config.h"
#include "runtime/report/tensorboard.h"
#include "tandem.h"
#include "test/fixtures.h"
#include "test/tiny_corpus.h"
#include "tools/env_options.h"

static uint64_t seed;
static char root[256];

/* ---- the test's own CRC-32C (table-driven) ---- */

static uint32_t crc_table[256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t crc32c(const void *d, size_t n) {
    const unsigned char *p = d;
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

static uint32_t masked(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

static void test_crc(void **state) {
    (void)state;
    assert_int_equal(crc32c("123456789", 9), 0xe3069283u);
    assert_int_equal(tandem_crc32c(0, "123456789", 9), 0xe3069283u);
    tandem_rng r = {seed};
    unsigned char buf[4096];
    for (int t = 0; t < 50; t++) {
        const size_t n = (size_t)tandem_rng_int(&r, 0, sizeof buf);
        for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)tandem_rng_next(&r);
        const size_t cut = n ? (size_t)tandem_rng_int(&r, 0, (int64_t)n) : 0;
        assert_int_equal(tandem_crc32c(tandem_crc32c(0, buf, cut), buf + cut, n - cut), crc32c(buf, n));
    }
    printf("crc32c(\"123456789\") = 0xe3069283 (both); 50 random buffers agree, split anywhere\n");
}

/* ---- reading event files back ---- */

typedef struct rec {
    unsigned char *d;
    size_t n;
} rec;

/* Every record of path (framing and both CRCs checked). */
static int read_records(const char *path, rec *out, int cap) {
    size_t len = 0;
    unsigned char *b = tandem_test_read_file_ok(path, &len);
    size_t at = 0;
    int n = 0;
    while (at < len) {
        assert_true(at + 12 <= len);
        uint64_t l = 0;
        uint32_t c = 0, cd = 0;
        for (int i = 0; i < 8; i++) l |= (uint64_t)b[at + i] << (8 * i);
        for (int i = 0; i < 4; i++) c |= (uint32_t)b[at + 8 + i] << (8 * i);
        assert_int_equal(c, masked(crc32c(b + at, 8)));
        assert_true(at + 12 + l + 4 <= len);
        for (int i = 0; i < 4; i++) cd |= (uint32_t)b[at + 12 + l + i] << (8 * i);
        assert_int_equal(cd, masked(crc32c(b + at + 12, l)));
        assert_true(n < cap);
        out[n].d = malloc(l ? l : 1);
        memcpy(out[n].d, b + at + 12, l);
        out[n++].n = l;
        at += 12 + l + 4;
    }
    free(b);
    return n;
}

typedef struct field {
    int num, wt;
    uint64_t v;            /* varint, fixed32, fixed64 */
    const unsigned char *p; /* length-delimited */
    size_t n;
} field;

static uint64_t varint(const unsigned char **p, const unsigned char *end) {
    uint64_t v = 0;
    for (int s = 0; s < 64; s += 7) {
        assert_true(*p < end);
        const unsigned char c = *(*p)++;
        v |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80)) return v;
    }
    fail_msg("varint too long");
    return 0;
}

/* The next field of [*p, end); 0 at the end. */
static int next_field(const unsigned char **p, const unsigned char *end, field *f) {
    if (*p >= end) return 0;
    const uint64_t key = varint(p, end);
    f->num = (int)(key >> 3);
    f->wt = (int)(key & 7);
    f->p = NULL;
    f->n = 0;
    if (f->wt == 0) f->v = varint(p, end);
    else if (f->wt == 1 || f->wt == 5) {
        const int k = f->wt == 1 ? 8 : 4;
        assert_true(*p + k <= end);
        f->v = 0;
        for (int i = 0; i < k; i++) f->v |= (uint64_t)(*p)[i] << (8 * i);
        *p += k;
    } else if (f->wt == 2) {
        f->n = (size_t)varint(p, end);
        assert_true(*p + f->n <= end);
        f->p = *p;
        *p += f->n;
    } else {
        fail_msg("wire type %d", f->wt);
    }
    return 1;
}

/* The first field num of message [p, p + n), or 0. */
static int find_field(const unsigned char *p, size_t n, int num, field *out) {
    const unsigned char *q = p;
    field f;
    while (next_field(&q, p + n, &f))
        if (f.num == num) {
            *out = f;
            return 1;
        }
    return 0;
}

static double as_double(uint64_t v) {
    double d;
    memcpy(&d, &v, 8);
    return d;
}
static float as_float(uint64_t v) {
    uint32_t u = (uint32_t)v;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* One Summary.Value of an event: tag, kind (2 simple, 4 image, 6 audio) and body. */
typedef struct value {
    char tag[80];
    int kind;
    float simple;
    field body;
} value;

/* The values of an event's summary; its step and wall_time. */
static int event_values(const rec *r, int64_t *step, double *wall, value *v, int cap) {
    field f = {0};
    *step = find_field(r->d, r->n, 2, &f) ? (int64_t)f.v : 0;
    assert_true(find_field(r->d, r->n, 1, &f) && f.wt == 1);
    *wall = as_double(f.v);
    if (!find_field(r->d, r->n, 5, &f)) return 0;
    const unsigned char *q = f.p, *end = f.p + f.n;
    field vf;
    int n = 0;
    while (next_field(&q, end, &vf)) {
        assert_int_equal(vf.num, 1);
        assert_true(n < cap);
        field t = {0}, x = {0};
        assert_true(find_field(vf.p, vf.n, 1, &t));
        snprintf(v[n].tag, sizeof v[n].tag, "%.*s", (int)t.n, (const char *)t.p);
        v[n].kind = 0;
        for (int k = 2; k <= 6 && !v[n].kind; k += 2)
            if (find_field(vf.p, vf.n, k, &x)) {
                v[n].kind = k;
                v[n].body = x;
                if (k == 2) v[n].simple = as_float(x.v);
            }
        n++;
    }
    return n;
}

static void free_records(rec *r, int n) {
    for (int i = 0; i < n; i++) free(r[i].d);
}

/* The only events.out.tfevents.* file of dir into path; their count returned. */
static int event_file(const char *dir, char *path, size_t cap) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, TANDEM_TB_PREFIX, strlen(TANDEM_TB_PREFIX))) {
            snprintf(path, cap, "%s/%s", dir, e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

static void write_png_like(const char *path, uint32_t w, uint32_t h) {
    unsigned char b[64] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
    for (int i = 0; i < 4; i++) {
        b[16 + i] = (unsigned char)(w >> (24 - 8 * i));
        b[20 + i] = (unsigned char)(h >> (24 - 8 * i));
    }
    b[24] = 8;
    b[25] = 6; /* RGBA: colour space 4 */
    for (int i = 33; i < 64; i++) b[i] = (unsigned char)i;
    tandem_test_write_file(path, b, sizeof b);
}

static void test_writer(void **state) {
    (void)state;
    char dir[300], png[400], wav[400], path[600];
    snprintf(dir, sizeof dir, "%s/writer", root);
    CHECK(tandem_mkdir_p(dir));
    snprintf(png, sizeof png, "%s/fig.png", root);
    snprintf(wav, sizeof wav, "%s/a.wav", root);
    write_png_like(png, 37, 11);
    float x[1234];
    tandem_rng r = {seed ^ 0x1234};
    tandem_rng_fill(&r, x, 1234, -0.5f, 0.5f);
    tandem_test_write_audio(wav, x, 1234, 22050, 1, SF_FORMAT_WAV | SF_FORMAT_PCM_16);

    tandem_tb *tb = NULL;
    CHECK(tandem_tb_open(dir, 7, 1 << 16, &tb));
    char tags[3][5][40];
    const char *tp[5];
    double vals[3][5];
    for (int e = 0; e < 3; e++) {
        for (int i = 0; i < 5; i++) {
            snprintf(tags[e][i], sizeof tags[e][i], "grp%d/t%llu", i, (unsigned long long)(tandem_rng_next(&r) % 1000));
            tp[i] = tags[e][i];
            vals[e][i] = tandem_rng_uniform(&r, -1e3f, 1e3f);
        }
        CHECK(tandem_tb_scalars(tb, 8 + e, tp, vals[e], 5));
    }
    CHECK(tandem_tb_file(tb, 10, "figures/x", png, 'i'));
    CHECK(tandem_tb_file(tb, 10, "samples/1", wav, 'a'));
    size_t before = 0, after = 0;
    free(tandem_test_read_file_ok(tandem_tb_path(tb), &before));
    assert_int_equal(tandem_tb_file(tb, 11, "figures/y", wav, 'i'), TANDEM_E_INVALID);
    free(tandem_test_read_file_ok(tandem_tb_path(tb), &after));
    assert_int_equal(before, after);
    snprintf(path, sizeof path, "%s", tandem_tb_path(tb));
    tandem_tb_close(tb, 0);

    char host[256] = "";
    gethostname(host, sizeof host - 1);
    const char *base = strrchr(path, '/') + 1;
    printf("event file %s\n", base);
    assert_int_equal(strspn(base + strlen(TANDEM_TB_PREFIX), "0123456789"), 10);
    assert_string_equal(base + strlen(TANDEM_TB_PREFIX) + 11, host);

    rec rs[16];
    const int n = read_records(path, rs, 16);
    assert_int_equal(n, 7);
    const double now = (double)time(NULL);
    for (int i = 0; i < n; i++) {
        int64_t step;
        double wall;
        value v[8];
        event_values(&rs[i], &step, &wall, v, 8);
        assert_true(fabs(wall - now) < 60);
    }
    field f, g;
    assert_true(find_field(rs[0].d, rs[0].n, 3, &f));
    assert_int_equal(f.n, strlen("brain.Event:2"));
    assert_memory_equal(f.p, "brain.Event:2", f.n);
    assert_true(find_field(rs[1].d, rs[1].n, 2, &f) && f.v == 8);
    assert_true(find_field(rs[1].d, rs[1].n, 7, &f) && find_field(f.p, f.n, 1, &g) && g.v == 1);
    for (int e = 0; e < 3; e++) {
        int64_t step;
        double wall;
        value v[8];
        assert_int_equal(event_values(&rs[2 + e], &step, &wall, v, 8), 5);
        assert_int_equal(step, 8 + e);
        for (int i = 0; i < 5; i++) {
            assert_string_equal(v[i].tag, tags[e][i]);
            assert_int_equal(v[i].kind, 2);
            assert_true(v[i].simple == (float)vals[e][i]);
        }
    }
    int64_t step;
    double wall;
    value v[2];
    size_t plen = 0, wlen = 0;
    unsigned char *pb = tandem_test_read_file_ok(png, &plen), *wb = tandem_test_read_file_ok(wav, &wlen);
    assert_int_equal(event_values(&rs[5], &step, &wall, v, 2), 1);
    assert_string_equal(v[0].tag, "figures/x");
    assert_int_equal(v[0].kind, 4);
    const field *im = &v[0].body;
    assert_true(find_field(im->p, im->n, 1, &f) && f.v == 11);
    assert_true(find_field(im->p, im->n, 2, &f) && f.v == 37);
    assert_true(find_field(im->p, im->n, 3, &f) && f.v == 4);
    assert_true(find_field(im->p, im->n, 4, &f) && f.n == plen);
    assert_memory_equal(f.p, pb, plen);
    assert_int_equal(event_values(&rs[6], &step, &wall, v, 2), 1);
    assert_string_equal(v[0].tag, "samples/1");
    assert_int_equal(v[0].kind, 6);
    const field *au = &v[0].body;
    assert_true(find_field(au->p, au->n, 1, &f) && as_float(f.v) == 22050.0f);
    assert_true(find_field(au->p, au->n, 2, &f) && f.v == 1);
    assert_true(find_field(au->p, au->n, 3, &f) && f.v == 1234);
    assert_true(find_field(au->p, au->n, 5, &f) && f.n == 9 && !memcmp(f.p, "audio/wav", 9));
    assert_true(find_field(au->p, au->n, 4, &f) && f.n == wlen);
    assert_memory_equal(f.p, wb, wlen);
    printf("%d records, CRCs and framing right: file_version, SessionLog START at step 8, 3 x 5 scalars, a "
           "%zu-byte PNG (37 x 11, RGBA), a %zu-byte WAV (22050 Hz, 1 channel, 1234 frames)\n", n, plen, wlen);
    free(pb);
    free(wb);
    free_records(rs, n);
}

/* ---- a training run's events ---- */

typedef struct losses {
    int n;
    double loss[16];
    double real_pct[16]; /* real_frames_pct of each step (log_every 1: the line's window) */
} losses;

static void on_step(void *ctx, const tandem_step_metrics *m) {
    losses *l = ctx;
    if (l->n < 16) l->loss[l->n] = m->loss, l->real_pct[l->n] = m->real_frames_pct;
    l->n++;
}

static void small_run(const char *data, const char *out, const char *tensorboard, losses *l) {
    tandem_config cfg;
    tandem_config_init(&cfg);
    static const char *const kv[][2] = {
        {"model_size", "custom"}, {"d_model", "16"}, {"layers", "1"}, {"heads", "2"}, {"reduction", "2"},
        {"max_text", "24"}, {"max_frames", "32"}, {"batch_size", "2"}, {"num_workers", "1"},
        {"prefetch_buffer_size", "2"}, {"max_steps", "4"}, {"log_every", "1"}, {"val_every", "2"},
        {"val_batches", "1"}, {"checkpoint_every", "2"},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) CHECK(tandem_config_set(&cfg, kv[i][0], kv[i][1]));
    CHECK(tandem_config_set(&cfg, "tensorboard", tensorboard));
    CHECK(tandem_config_set(&cfg, "train_data", data));
    CHECK(tandem_config_set(&cfg, "val_data", data));
    CHECK(tandem_config_set(&cfg, "out", out));
    tandem_trainer_options o;
    tandem_trainer_options_init(&o);
    o.backend = TANDEM_BACKEND_HOST;
    o.on_step = on_step;
    o.on_step_user = l;
    tandem_trainer_summary sum;
    CHECK(tandem_test_train_run(&cfg, &o, &sum));
}

static void test_trainer_events(void **state) {
    (void)state;
    char data[300], out[300], off[300], path[700];
    snprintf(data, sizeof data, "%s/data", root);
    snprintf(out, sizeof out, "%s/run", root);
    snprintf(off, sizeof off, "%s/run_off", root);
    tandem_rng r = {seed ^ 0x99};
    tiny_corpus_write(data, 5, 32, &r);
    losses l = {0};
    small_run(data, out, "true", &l);
    assert_int_equal(l.n, 4);
    assert_int_equal(event_file(out, path, sizeof path), 1);
    rec rs[64];
    const int n = read_records(path, rs, 64);
    int seen_loss = 0, seen_val = 0, seen_img = 0, seen_lr = 0, seen_real = 0;
    for (int i = 1; i < n; i++) {
        int64_t step;
        double wall;
        value v[32];
        const int k = event_values(&rs[i], &step, &wall, v, 32);
        for (int j = 0; j < k; j++) {
            if (!strcmp(v[j].tag, "train/loss")) {
                assert_true(step >= 1 && step <= 4);
                assert_true(v[j].simple == (float)l.loss[step - 1]);
                seen_loss |= 1 << step;
            }
            if (!strcmp(v[j].tag, "data/real_frames_pct")) {
                assert_true(step >= 1 && step <= 4);
                assert_true(v[j].simple == (float)l.real_pct[step - 1] && v[j].simple > 0 && v[j].simple <= 100);
                seen_real |= 1 << step;
            }
            if (!strcmp(v[j].tag, "val/l1")) seen_val |= 1 << step;
            if (!strcmp(v[j].tag, "train/lr") || !strcmp(v[j].tag, "perf/step_ms")) seen_lr++;
            if (v[j].kind == 4) {
                assert_true(!strcmp(v[j].tag, "figures/loss") || !strcmp(v[j].tag, "figures/mel"));
                seen_img++;
            }
        }
    }
    printf("run: %d records; train/loss at steps 1..4 equal to the step callback's; data/real_frames_pct at steps 1..4 equal to the callback's; val/l1 at steps 0, 2, 4; "
           "%d figures\n", n, seen_img);
    assert_int_equal(seen_loss, 0x1e);
    assert_int_equal(seen_real, 0x1e);
    assert_int_equal(seen_val, 0x15);
    assert_int_equal(seen_lr, 8);
    assert_int_equal(seen_img, 4); /* loss and mel at the checkpoints of steps 2 and 4 */
    free_records(rs, n);
    small_run(data, off, "false", &l);
    assert_int_equal(event_file(off, path, sizeof path), 0);
}

/* A write cut short by a file-size limit (RLIMIT_FSIZE in a child, SIGXFSZ ignored: EFBIG) leaves
 * the event file cut back to whole records, and the writer says so. */
static void test_cut_to_whole_records(void **state) {
    (void)state;
    char dir[300], png[400], path[600];
    snprintf(dir, sizeof dir, "%s/fsize", root);
    CHECK(tandem_mkdir_p(dir));
    snprintf(png, sizeof png, "%s/big.png", root);
    write_png_like(png, 64, 64);
    FILE *f = fopen(png, "ab");
    assert_non_null(f);
    for (int i = 0; i < 9000; i++) fputc(i & 0xff, f);
    fclose(f);
    enum { LIMIT = 4096 };
    int pid = tandem_test_fork(0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {LIMIT, LIMIT};
        tandem_tb *tb = NULL;
        const char *tag = "train/loss";
        const double v = 1.5;
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0 || tandem_tb_open(dir, 0, 1 << 16, &tb) != TANDEM_OK) _exit(3);
        for (int i = 0; i < 20; i++)
            if (tandem_tb_scalars(tb, i, &tag, &v, 1) != TANDEM_OK) _exit(4);
        const tandem_status st = tandem_tb_file(tb, 20, "figures/big", png, 'i'); /* past the limit */
        printf("cut short: %s: %s\n", tandem_status_name(st), tandem_last_error());
        _exit(st != TANDEM_E_IO ? 5 : strstr(tandem_last_error(), "cut back to its last whole record") ? 0 : 6);
    }
    const int rc = tandem_test_child_exit(pid);
    assert_true(rc == 0 || rc == 6); /* the message is checked after the file */
    assert_int_equal(event_file(dir, path, sizeof path), 1);
    size_t len = 0;
    free(tandem_test_read_file_ok(path, &len));
    rec rs[32];
    const int n = read_records(path, rs, 32); /* every record whole: framing and CRCs */
    printf("%s: %zu bytes, %d whole records\n", path, len, n);
    assert_int_equal(n, 21); /* file_version and the 20 scalars */
    free_records(rs, n);
    assert_int_equal(rc, 0);
}

int main(void) {
    seed = tandem_test_seed("test_tensorboard");
    crc_init();
    if (tandem_test_mkdtemp(root, sizeof root, "test_tensorboard") != 0) return 1;
    char cache[300];
    snprintf(cache, sizeof cache, "%s/cache", root);
    setenv("XDG_CACHE_HOME", cache, 1);
    if (cli_env_apply(NULL, 0) != TANDEM_OK) return 2;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc),
        cmocka_unit_test(test_writer),
        cmocka_unit_test(test_cut_to_whole_records),
        cmocka_unit_test(test_trainer_events),
    };
    const int rc = cmocka_run_group_tests_name("tensorboard", tests, NULL, NULL);
    if (tandem_test_rmtree(root) != 0) fprintf(stderr, "could not remove %s\n", root);
    return rc;
}
