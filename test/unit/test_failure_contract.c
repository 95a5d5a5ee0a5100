/* test_failure_contract.c — the failure contract (docs/ARCHITECTURE.md, runtime/tandem.h): a
 * create / open / init either succeeds or leaves nothing behind: *out is NULL (a caller's struct
 * holds nothing to free), every allocation it made is freed, every file descriptor and mapping
 * it opened is closed.
 *
 * Allocation failures are forced one at a time: this binary interposes malloc & co. (so the
 * libraries' allocations count too, libsamplerate's and libsndfile's included) and fails the
 * n-th allocation of a call, for n = 1, 2, ... until the call gets through without meeting the
 * failure. Under AddressSanitizer, which owns malloc, only the failures that need no injection
 * run (bad arguments, bad files); ASan's leak check covers those. */
#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/audio/audio.h"
#include "runtime/audio/griffinlim.h"
#include "runtime/audio/mel.h"
#include "runtime/data/loader.h"
#include "runtime/data/pipeline.h"
#include "runtime/data/ring.h"
#include "runtime/data/sampler.h"
#include "runtime/data/text_index.h"
#include "runtime/formats/atomic_file.h"
#include "runtime/formats/checkpoint.h"
#include "runtime/formats/safetensors.h"
#include "runtime/report/figures.h"
#include "runtime/report/plot.h"

#define CORPUS TANDEM_SOURCE_DIR "/test/fuzz/corpus/safetensors/"
#define SENTINEL ((void *)&sentinel_target) /* what *out holds before a call */
static int sentinel_target;

/* ---- the interposed allocator: counts a watched region, fails its n-th allocation ---- */

#if defined(__SANITIZE_ADDRESS__)
#define INJECT 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define INJECT 0
#endif
#endif
#ifndef INJECT
#define INJECT 1
#endif

#if INJECT
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

#define LIVE_CAP 65536
static pthread_mutex_t shim_lock = PTHREAD_MUTEX_INITIALIZER;
static int watching;         /* a region is being watched */
static long calls, fail_at;  /* allocations so far in the region; which one fails (0 = none) */
static int failed;           /* the region met its failure */
static void *live_blocks[LIVE_CAP]; /* blocks allocated in the region and not yet freed */
static long n_live;

/* 1 when this allocation is the one to fail. */
static int gate(void) {
    pthread_mutex_lock(&shim_lock);
    int fail = watching && ++calls == fail_at;
    if (fail) failed = 1;
    pthread_mutex_unlock(&shim_lock);
    return fail;
}
static void *note_alloc(void *p) {
    pthread_mutex_lock(&shim_lock);
    if (watching && p && n_live < LIVE_CAP) live_blocks[n_live++] = p;
    pthread_mutex_unlock(&shim_lock);
    return p;
}
static void note_free(void *p) {
    if (!p) return;
    pthread_mutex_lock(&shim_lock);
    for (long i = 0; i < n_live; i++)
        if (live_blocks[i] == p) {
            live_blocks[i] = live_blocks[--n_live];
            break;
        }
    pthread_mutex_unlock(&shim_lock);
}
/* default visibility (the build hides symbols) so libc and the libraries bind to these too */
#define SHIM __attribute__((visibility("default")))
SHIM void *malloc(size_t n) { return gate() ? NULL : note_alloc(__libc_malloc(n)); }
SHIM void *calloc(size_t a, size_t b) { return gate() ? NULL : note_alloc(__libc_calloc(a, b)); }
SHIM void *memalign(size_t a, size_t n) { return gate() ? NULL : note_alloc(__libc_memalign(a, n)); }
SHIM void *aligned_alloc(size_t a, size_t n) { return memalign(a, n); }
SHIM int posix_memalign(void **r, size_t a, size_t n) {
    *r = memalign(a, n);
    return *r ? 0 : 12; /* ENOMEM */
}
SHIM void *realloc(void *p, size_t n) {
    if (gate()) return NULL;
    void *q = __libc_realloc(p, n);
    if (q) {
        note_free(p);
        note_alloc(q);
    }
    return q;
}
SHIM void free(void *p) {
    note_free(p);
    __libc_free(p);
}

static void watch_begin(long nth) {
    pthread_mutex_lock(&shim_lock);
    calls = 0;
    fail_at = nth;
    failed = 0;
    n_live = 0;
    watching = 1;
    pthread_mutex_unlock(&shim_lock);
}
/* Ends the region: whether it met its failure, and how many of its blocks are still live. */
static int watch_end(long *still_live) {
    pthread_mutex_lock(&shim_lock);
    watching = 0;
    *still_live = n_live;
    int f = failed;
    pthread_mutex_unlock(&shim_lock);
    return f;
}
#endif

/* ---- what a process holds besides heap blocks: descriptors and mappings ---- */

static int count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

/* File-backed mappings (a mapped safetensors file); anonymous ones come and go with malloc. */
static int count_maps(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    int n = 0;
    char line[4096];
    unsigned long inode;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%*s %*s %*s %*s %lu", &inode) == 1 && inode != 0) n++;
    fclose(f);
    return n;
}

/* ---- one create under test ---- */

typedef struct subject {
    const char *what;
    /* Calls the create; *held is what the caller got: the object, or for an init into the
     * caller's struct that struct when it holds anything (else NULL). */
    tandem_status (*attempt)(struct subject *s, void **held);
    void (*release)(struct subject *s, void *held); /* destroys a success */
    void *ctx;
} subject;

/* A failed call left nothing: *held is NULL and no block, descriptor or mapping remains. */
static void expect_nothing_left(const subject *s, const char *how, void *held, long live, int fds0, int maps0) {
    if (held) fail_msg("%s failed (%s: %s) but handed back %p; expected NULL", s->what, how, tandem_last_error(), held);
    if (live) fail_msg("%s failed (%s: %s) and left %ld heap blocks allocated", s->what, how, tandem_last_error(), live);
    int fds = count_fds(), maps = count_maps();
    if (fds != fds0) fail_msg("%s failed (%s) and left %d file descriptors open", s->what, how, fds - fds0);
    if (maps != maps0) fail_msg("%s failed (%s) and left %d mappings", s->what, how, maps - maps0);
}

/* Fails each allocation of the create in turn; every failure must leave nothing behind. */
static void check_allocation_failures(subject *s) {
#if INJECT
    void *held = SENTINEL;
    /* warm-up: a first success fills the libraries' one-time caches (stdio, locale, FFTW) */
    assert_int_equal(s->attempt(s, &held), TANDEM_OK);
    s->release(s, held);
    long n = 1, points = 0;
    for (;; n++) {
        int fds0 = count_fds(), maps0 = count_maps();
        long live = 0;
        held = SENTINEL;
        watch_begin(n);
        tandem_status st = s->attempt(s, &held);
        int met = watch_end(&live);
        if (!met) { /* got past its last allocation */
            assert_int_equal(st, TANDEM_OK);
            s->release(s, held);
            break;
        }
        if (st == TANDEM_OK) { /* the failure had a fallback */
            s->release(s, held);
            continue;
        }
        char how[64];
        snprintf(how, sizeof how, "allocation %ld of the call forced to fail", n);
        expect_nothing_left(s, how, held, live, fds0, maps0);
        points++;
    }
    printf("%s: %ld allocations, %ld forced failures each left nothing behind\n", s->what, n - 1, points);
#else
    printf("%s: allocation failures not forced under AddressSanitizer\n", s->what);
#endif
}

/* A call expected to fail without any injection (bad arguments, a bad file). */
static void check_failure(subject *s, const char *how) {
    int fds0 = count_fds(), maps0 = count_maps();
    void *held = SENTINEL;
#if INJECT
    long live = 0;
    watch_begin(0);
    tandem_status st = s->attempt(s, &held);
    watch_end(&live);
#else
    long live = 0;
    tandem_status st = s->attempt(s, &held);
#endif
    if (st == TANDEM_OK) fail_msg("%s succeeded with %s; expected a failure", s->what, how);
    expect_nothing_left(s, how, held, live, fds0, maps0);
}

/* ---- fixtures ---- */

/* NAME_release: the destroy of a successful attempt. */
#define RELEASE(name, destroy)                                                                    \
    static void name##_release(subject *s, void *held) {                                          \
        (void)s;                                                                                  \
        destroy(held);                                                                            \
    }

static char tmp_dir[256];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}
static int setup(void **state) {
    (void)state;
    const char *t = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/tandem_test_contract.XXXXXX", t && t[0] ? t : "/tmp");
    return mkdtemp(tmp_dir) ? 0 : -1;
}
static int teardown(void **state) {
    (void)state;
    return nftw(tmp_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
static int all_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i]) return 0;
    return 1;
}

/* ---- audio decoder, Griffin-Lim, plot, figures ---- */
static tandem_status pipeline_attempt(subject *s, void **held) {
    return tandem_pipeline_create((const tandem_pipeline_options *)s->ctx, (tandem_pipeline **)held);
}
RELEASE(pipeline, tandem_pipeline_destroy)
static void test_pipeline_create_bad_options(void **state) {
    (void)state;
    tandem_pipeline_options o;
    tandem_pipeline_options_init(&o); /* no config, index, devices or pools */
    subject s = {"tandem_pipeline_create", pipeline_attempt, pipeline_release, &o};
    check_failure(&s, "options without config, index, devices or pools");
    s.ctx = NULL;
    check_failure(&s, "NULL options");
}

static tandem_status loader_attempt(subject *s, void **held) {
    return tandem_loader_create((const tandem_loader_config *)s->ctx, (tandem_loader **)held);
}
RELEASE(loader, tandem_loader_destroy)
static void test_loader_create_bad_config(void **state) {
    (void)state;
    tandem_loader_config cfg;
    memset(&cfg, 0, sizeof cfg); /* no index, no devices, batch 0 */
    subject s = {"tandem_loader_create", loader_attempt, loader_release, &cfg};
    check_failure(&s, "an empty configuration");
    s.ctx = NULL;
    check_failure(&s, "a NULL configuration");
}

static tandem_status mel_host_attempt(subject *s, void **held) {
    (void)s;
    return tandem_mel_host_create((tandem_mel_host **)held);
}
RELEASE(mel_host, tandem_mel_host_free)
static void test_mel_host_create(void **state) {
    (void)state;
    subject s = {"tandem_mel_host_create", mel_host_attempt, mel_host_release, NULL};
    check_allocation_failures(&s);
}


static tandem_status decoder_attempt(subject *s, void **held) {
    (void)s;
    return tandem_audio_decoder_create((tandem_audio_decoder **)held);
}
RELEASE(decoder, tandem_audio_decoder_free)
static void test_audio_decoder_create(void **state) {
    (void)state;
    subject s = {"tandem_audio_decoder_create", decoder_attempt, decoder_release, NULL};
    check_allocation_failures(&s);
}

static tandem_status griffinlim_attempt(subject *s, void **held) {
    return tandem_griffinlim_create(*(int *)s->ctx, (tandem_griffinlim **)held);
}
RELEASE(griffinlim, tandem_griffinlim_free)
static void test_griffinlim_create(void **state) {
    (void)state;
    int frames = 16;
    subject s = {"tandem_griffinlim_create", griffinlim_attempt, griffinlim_release, &frames};
    check_allocation_failures(&s);
    frames = 0;
    check_failure(&s, "max_frames 0");
}

static tandem_status plot_attempt(subject *s, void **held) {
    (void)s;
    return tandem_plot_create(64, 48, (tandem_plot **)held);
}
RELEASE(plot, tandem_plot_free)
static tandem_status figures_attempt(subject *s, void **held) {
    (void)s;
    return tandem_figures_create(16, 32, (tandem_figures **)held);
}
RELEASE(figures, tandem_figures_free)
static void test_plot_and_figures_create(void **state) {
    (void)state;
    subject p = {"tandem_plot_create", plot_attempt, plot_release, NULL};
    check_allocation_failures(&p);
    subject f = {"tandem_figures_create", figures_attempt, figures_release, NULL};
    check_allocation_failures(&f);
}

/* ---- safetensors and checkpoints ---- */

static float weights[6];
static const tandem_st_tensor tensors[2] = {{"w", TANDEM_F32, 2, {2, 3}, weights, NULL},
                                            {"b", TANDEM_F32, 1, {6}, weights, NULL}};

static tandem_status writer_attempt(subject *s, void **held) {
    return tandem_st_writer_create(tensors, *(int *)s->ctx, 256, 0, (tandem_st_writer **)held);
}
RELEASE(writer, tandem_st_writer_free)
static void test_st_writer_create(void **state) {
    (void)state;
    int count = 2;
    subject s = {"tandem_st_writer_create", writer_attempt, writer_release, &count};
    check_allocation_failures(&s);
    count = -1;
    check_failure(&s, "count -1");
}

static tandem_status st_open_attempt(subject *s, void **held) {
    return tandem_st_open((const char *)s->ctx, (tandem_st_file **)held);
}
typedef struct bytes {
    const void *data;
    size_t len;
} bytes;

static tandem_status st_open_memory_attempt(subject *s, void **held) {
    const bytes *b = s->ctx;
    return tandem_st_open_memory(b->data, b->len, "memory", (tandem_st_file **)held);
}
static tandem_status ckpt_open_attempt(subject *s, void **held) {
    return tandem_checkpoint_open((const char *)s->ctx, -1, (tandem_st_file **)held);
}
RELEASE(st, tandem_st_close)
static void test_st_open(void **state) {
    (void)state;
    subject s = {"tandem_st_open", st_open_attempt, st_release, CORPUS "gen-checkpoint.safetensors"};
    check_allocation_failures(&s);
    s.ctx = CORPUS "no-such-file.safetensors";
    check_failure(&s, "a missing file");
    s.ctx = NULL;
    check_failure(&s, "a NULL path");
    char truncated[300];
    snprintf(truncated, sizeof truncated, "%s/truncated.safetensors", tmp_dir);
    FILE *f = fopen(truncated, "wb");
    assert_non_null(f);
    fputs("\x40\0\0\0\0\0\0\0{\"w\":", f);
    fclose(f);
    s.ctx = truncated;
    check_failure(&s, "a truncated file");

    bytes b = {"\2\0\0\0\0\0\0\0{}", 10}; /* no tensors, no metadata */
    subject m = {"tandem_st_open_memory", st_open_memory_attempt, st_release, &b};
    check_allocation_failures(&m);
    b.data = NULL;
    check_failure(&m, "NULL data of 10 bytes");
}

static void test_checkpoint_open(void **state) {
    (void)state;
    subject s = {"tandem_checkpoint_open", ckpt_open_attempt, st_release, CORPUS "gen-checkpoint.safetensors"};
    check_allocation_failures(&s);
    s.ctx = CORPUS "gen-plain.safetensors"; /* valid safetensors, no format_version */
    check_failure(&s, "a safetensors file that is not a checkpoint");
}

static tandem_status ckpt_create_attempt(subject *s, void **held) {
    return tandem_checkpoint_create((const char *)s->ctx, 2, tensors, 2, 256, (tandem_checkpoint **)held);
}
RELEASE(ckpt, tandem_checkpoint_free)
static void test_checkpoint_create(void **state) {
    (void)state;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/ckpt", tmp_dir);
    subject s = {"tandem_checkpoint_create", ckpt_create_attempt, ckpt_release, dir};
    check_allocation_failures(&s);
    s.ctx = NULL;
    check_failure(&s, "a NULL directory");
    char file[300];
    snprintf(file, sizeof file, "%s/plain-file", tmp_dir);
    FILE *f = fopen(file, "wb");
    assert_non_null(f);
    fclose(f);
    s.ctx = file;
    check_failure(&s, "a directory path that is a file");
}

static tandem_status atomic_attempt(subject *s, void **held) {
    tandem_atomic_file *f = s->ctx;
    tandem_status st = tandem_atomic_open(f, f->path[0] ? f->path : NULL);
    *held = f->fd >= 0 ? f : NULL;
    return st;
}
RELEASE(atomic, tandem_atomic_abort)
static void test_atomic_open(void **state) {
    (void)state;
    static tandem_atomic_file f;
    snprintf(f.path, sizeof f.path, "%s/no-such-dir/x.bin", tmp_dir);
    subject s = {"tandem_atomic_open", atomic_attempt, atomic_release, &f};
    check_failure(&s, "a missing directory");
    f.path[0] = 0;
    check_failure(&s, "an empty path");
}

/* ---- ring, sampler, text index: inits into the caller's struct ---- */

typedef struct ring_ctx {
    tandem_ring r;
    tandem_device *dev;
    int slots;
} ring_ctx;

static tandem_status ring_attempt(subject *s, void **held) {
    ring_ctx *c = s->ctx;
    memset(&c->r, 0xAB, sizeof c->r); /* whatever the caller's struct held before */
    tandem_status st = tandem_ring_init(&c->r, c->slots, c->dev);
    *held = all_zero(&c->r, sizeof c->r) ? NULL : &c->r;
    return st;
}
RELEASE(ring, tandem_ring_destroy)
static void test_ring_init(void **state) {
    (void)state;
    ring_ctx c = {.slots = 3};
    assert_int_equal(tandem_device_open(TANDEM_BACKEND_HOST, 0, &c.dev), TANDEM_OK);
    subject s = {"tandem_ring_init", ring_attempt, ring_release, &c};
    check_allocation_failures(&s);
    c.slots = 0;
    check_failure(&s, "0 slots");
    tandem_device_close(c.dev);
}

typedef struct sampler_ctx {
    tandem_sampler s;
    const uint32_t *items;
} sampler_ctx;

static tandem_status sampler_attempt(subject *s, void **held) {
    sampler_ctx *c = s->ctx;
    memset(&c->s, 0xAB, sizeof c->s);
    tandem_status st = tandem_sampler_init(&c->s, c->items, 5, 7, 1);
    *held = all_zero(&c->s, sizeof c->s) ? NULL : &c->s;
    return st;
}
RELEASE(sampler, tandem_sampler_free)
static void test_sampler_init(void **state) {
    (void)state;
    static const uint32_t items[5] = {4, 3, 2, 1, 0};
    sampler_ctx c = {.items = items};
    subject s = {"tandem_sampler_init", sampler_attempt, sampler_release, &c};
    check_allocation_failures(&s);
    c.items = NULL;
    check_failure(&s, "no items");
}

static tandem_status index_attempt(subject *s, void **held) {
    tandem_text_index_config cfg;
    tandem_text_index_config_default(&cfg);
    cfg.data_dir = s->ctx;
    cfg.check_audio = 0;
    cfg.use_cache = 0;
    cfg.num_workers = 1;
    cfg.val_fraction = 0.25;
    static tandem_text_index ix;
    tandem_status st = tandem_text_index_open(&cfg, &ix);
    *held = ix.blob_ || ix.train || ix.val ? &ix : NULL;
    return st;
}
RELEASE(index, tandem_text_index_free)
static void test_text_index_open(void **state) {
    (void)state;
    char dir[300], meta[320];
    snprintf(dir, sizeof dir, "%s/data", tmp_dir);
    snprintf(meta, sizeof meta, "%s/metadata.csv", dir);
    assert_int_equal(tandem_mkdir_p(dir), TANDEM_OK);
    FILE *f = fopen(meta, "wb");
    assert_non_null(f);
    fputs("a|Hello there.|Hello there.\nb|It costs 3 dollars.\nc|Two, three|two, three\nd|۱۲ کتاب\n", f);
    fclose(f);
    subject s = {"tandem_text_index_open", index_attempt, index_release, dir};
    check_allocation_failures(&s);
    f = fopen(meta, "wb");
    assert_non_null(f);
    fputs("bad id/|x\n", f); /* no usable row */
    fclose(f);
    check_failure(&s, "a metadata.csv without a usable row");
}

int main(void) {
    tandem_log_set_level(TANDEM_LOG_ERROR); /* the forced failures warn on purpose */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_audio_decoder_create), cmocka_unit_test(test_mel_host_create), cmocka_unit_test(test_loader_create_bad_config), cmocka_unit_test(test_pipeline_create_bad_options), cmocka_unit_test(test_griffinlim_create),
        cmocka_unit_test(test_plot_and_figures_create), cmocka_unit_test(test_st_writer_create),
        cmocka_unit_test(test_st_open), cmocka_unit_test(test_checkpoint_open),
        cmocka_unit_test(test_checkpoint_create), cmocka_unit_test(test_atomic_open),
        cmocka_unit_test(test_ring_init), cmocka_unit_test(test_sampler_init),
        cmocka_unit_test(test_text_index_open),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
