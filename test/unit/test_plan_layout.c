/* test_plan_layout.c — pinned host staging is planned like the arenas (runtime/core/staging.h,
 * runtime/data/plan_layout.h):
 *   - for two configs, with copies staged and with peer copies, the pinned blocks the pipeline
 *     (loader + ring staging) and the model allocate — counted at the devices' backend table,
 *     so nothing the runtime sizes by itself escapes — are the plan's blocks, byte for byte;
 *   - the plan's report (the pinned section of `tandem plan`) lists every block and buffer with
 *     its shape, bytes and offset, and the totals with and without peer access;
 *   - the plan's own rules: buffers aligned and disjoint inside their block, block bytes the
 *     aligned end, errors that name the block and buffer.
 * Devices: two host devices; with TANDEM_TEST_BACKEND=cuda the pipeline's cuda roles (a GPU, or
 * the stand-in driver, which reports every misuse as a "fakecuda: error" line). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sndfile.h>

#include "platform/device.h"
#include "platform/os/os.h"
#include "runtime/core/config.h"
#include "runtime/core/pool_internal.h"
#include "runtime/core/staging.h"
#include "runtime/data/pipeline.h"
#include "runtime/data/plan_layout.h"
#include "runtime/data/text_index.h"
#include "runtime/model/model.h"
#include "runtime/text/symbols.h"
#include "test/testutil.h"

static tandem_backend backend = TANDEM_BACKEND_HOST; /* TANDEM_TEST_BACKEND=cuda: TANDEM_BACKEND_CUDA */

/* Two configs that differ in every size the staging depends on. */
typedef struct shape {
    int batch, frames, text, slots, accum;
} shape;
static const shape shapes[2] = {{3, 32, 16, 2, 1}, {5, 48, 24, 4, 3}};

static void make_config(const shape *s, tandem_config *cfg) {
    tandem_config_init(cfg);
    cfg->batch_size = s->batch;
    cfg->max_frames = s->frames;
    cfg->max_text = s->text;
    cfg->prefetch_buffer_size = s->slots;
    cfg->grad_accum = s->accum;
    cfg->num_workers = 1;
    cfg->d_model = 32;
    cfg->layers = 1;
    cfg->heads = 2;
    assert_int_equal(tandem_config_check(cfg), TANDEM_OK);
}

/* ---- pinned allocations, counted at the backend table ---- */

#define MAX_PINNED 16
static const tandem_backend_ops *real_ops;
static tandem_backend_ops counting_ops;
static struct {
    const tandem_device *dev;
    size_t bytes;
} pinned[MAX_PINNED];
static int n_pinned;

static tandem_status count_alloc_pinned(tandem_device *dev, size_t bytes, void **out) {
    tandem_status st = real_ops->host_alloc_pinned(dev, bytes, out);
    if (st == TANDEM_OK && n_pinned < MAX_PINNED) pinned[n_pinned].dev = dev, pinned[n_pinned++].bytes = bytes;
    return st;
}

/* The real answer, for the devices as the backend knows them (the host backend compares tables). */
static int count_can_access_peer(const tandem_device *dst, const tandem_device *src) {
    tandem_device d = *dst, s = *src;
    d.ops = s.ops = real_ops;
    return real_ops->can_access_peer(&d, &s);
}

static void counting_on(tandem_device *a, tandem_device *b) {
    real_ops = a->ops;
    counting_ops = *real_ops;
    counting_ops.host_alloc_pinned = count_alloc_pinned;
    counting_ops.can_access_peer = count_can_access_peer;
    a->ops = b->ops = &counting_ops;
    n_pinned = 0;
}

static void counting_off(tandem_device *a, tandem_device *b) { a->ops = b->ops = real_ops; }

/* The pinned bytes counted on dev, sorted ascending into out; returns how many. */
static int counted_on(const tandem_device *dev, size_t *out) {
    int n = 0;
    for (int i = 0; i < n_pinned; i++)
        if (pinned[i].dev == dev) {
            int k = n++;
            while (k > 0 && out[k - 1] > pinned[i].bytes) out[k] = out[k - 1], k--;
            out[k] = pinned[i].bytes;
        }
    return n;
}

/* The plan's blocks that are allocated on `device` (peer: the ring staging is not), sorted;
 * device NULL: on either (one device in both roles: a single GPU, or the stand-in with one). */
static int planned_on(const tandem_staging_plan *p, const char *device, int peer, size_t *out) {
    int n = 0;
    for (int i = 0; i < p->n_blocks; i++) {
        const tandem_staging_block *b = &p->block[i];
        if ((device && strcmp(b->device, device) != 0) || (peer && b->when == TANDEM_STAGING_NO_PEER)) continue;
        int k = n++;
        while (k > 0 && out[k - 1] > b->bytes) out[k] = out[k - 1], k--;
        out[k] = b->bytes;
    }
    return n;
}

/* ---- a corpus the index can open (the pipeline needs one; nothing is decoded) ---- */

enum { N_UTTS = 4 };

static void write_corpus(char *dir, size_t cap) {
    snprintf(dir, cap, "/tmp/tandem_test_plan_layout_XXXXXX");
    assert_non_null(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/wavs", dir);
    assert_int_equal(tandem_mkdir_p(path), TANDEM_OK);
    snprintf(path, sizeof path, "%s/metadata.csv", dir);
    FILE *meta = fopen(path, "w");
    assert_non_null(meta);
    static float buf[2 * TANDEM_MEL_HOP];
    for (int k = 0; k < 2 * TANDEM_MEL_HOP; k++) buf[k] = (float)(0.3 * sin(0.05 * k));
    for (int i = 0; i < N_UTTS; i++) {
        snprintf(path, sizeof path, "%s/wavs/u%d.wav", dir, i);
        SF_INFO info = {.samplerate = TANDEM_MEL_SAMPLE_RATE, .channels = 1,
                        .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
        SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
        assert_non_null(sf);
        assert_int_equal(sf_writef_float(sf, buf, 2 * TANDEM_MEL_HOP), 2 * TANDEM_MEL_HOP);
        sf_close(sf);
        fprintf(meta, "u%d|a cat|a cat\n", i);
    }
    fclose(meta);
}

static void remove_corpus(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Create the pipeline (and the model, on the model device) for cfg with counting on, and
 * compare what was pinned with the plan. */
static void check_allocations(const tandem_config *cfg, const char *dir, int force_staged) {
    tandem_text_index_config ic;
    tandem_text_index_config_default(&ic);
    ic.data_dir = dir;
    ic.max_text = cfg->max_text;
    ic.max_samples = (int64_t)cfg->max_frames * TANDEM_MEL_HOP;
    ic.num_workers = 1;
    ic.use_cache = 0;
    tandem_text_index ix;
    assert_int_equal(tandem_text_index_open(&ic, &ix), TANDEM_OK);
    assert_int_equal(ix.n_train, N_UTTS);

    tandem_device *data = NULL, *model = NULL;
    char desc[256];
    if (tandem_pipeline_open_devices(backend, &data, &model, desc, sizeof desc) != TANDEM_OK)
        fail_msg("open devices: %s", tandem_last_error());
    tandem_pool *data_pool = NULL, *model_pool = NULL;
    assert_int_equal(tandem_pool_create(data, "data", 0, &data_pool), TANDEM_OK);
    assert_int_equal(tandem_pool_create(model, "model", 0, &model_pool), TANDEM_OK);
    tandem_pipeline_options o;
    tandem_pipeline_options_init(&o);
    o.cfg = cfg;
    o.ix = &ix;
    o.data_dir = dir;
    o.data_dev = data;
    o.model_dev = model;
    o.data_pool = data_pool;
    o.model_pool = model_pool;
    o.force_staged = force_staged;

    counting_on(data, model);
    tandem_pipeline *pipe = NULL;
    tandem_status st = tandem_pipeline_create(&o, &pipe);
    tandem_model_dims dims;
    tandem_model m;
    memset(&m, 0, sizeof m);
    if (st == TANDEM_OK) st = tandem_model_dims_from_config(cfg, tandem_symbols_count(), &dims);
    if (st == TANDEM_OK) st = tandem_model_declare(&m, model, model_pool, &dims);
    counting_off(data, model);
    if (st != TANDEM_OK) fail_msg("create: %s", tandem_last_error());

    /* the plan, declared on its own from the same config, as `tandem plan` does */
    tandem_layout plan;
    assert_int_equal(tandem_layout_declare(cfg, NULL, NULL, &plan), TANDEM_OK);
    assert_int_equal(tandem_model_staging_declare(&dims, &plan.staging), TANDEM_OK);
    const int peer = tandem_pipeline_peer(pipe);
    if (force_staged) assert_int_equal(peer, 0);
    if (!force_staged && backend == TANDEM_BACKEND_HOST) assert_int_equal(peer, 1); /* host devices are peers */

    size_t got[MAX_PINNED], want[MAX_PINNED], sum = 0;
    const int n_data = counted_on(data, got), n_want = planned_on(&plan.staging, data == model ? NULL : "data device", peer, want);
    printf("config B=%d F=%d T=%d slots %d accum %d, %s: %d data-device blocks pinned\n", cfg->batch_size,
           cfg->max_frames, cfg->max_text, cfg->prefetch_buffer_size, cfg->grad_accum,
           peer ? "peer copies" : "staged copies", n_data);
    assert_int_equal(n_data, n_want);
    for (int i = 0; i < n_data; i++) assert_int_equal(got[i], want[i]), sum += got[i];
    const int n_model = counted_on(model, got);
    if (data == model) { /* one device in both roles: every block on it */
        assert_int_equal(n_model, n_data);
        assert_int_equal(sum, tandem_staging_total(&plan.staging, peer));
    } else {
        assert_int_equal(n_model, planned_on(&plan.staging, "model device", peer, want));
        for (int i = 0; i < n_model; i++) assert_int_equal(got[i], want[i]), sum += got[i];
        assert_int_equal(sum, tandem_staging_total(&plan.staging, peer));
    }
    assert_int_equal(m.pinned_bytes, plan.staging.block[tandem_staging_find(&plan.staging, "model")].bytes);

    tandem_layout_release(&plan);
    tandem_model_free(&m);
    tandem_pipeline_destroy(pipe);
    tandem_pool_destroy(data_pool);
    tandem_pool_destroy(model_pool);
    tandem_pipeline_close_devices(data, model);
    tandem_text_index_free(&ix);
}

static void test_allocated_equals_planned(void **state) {
    (void)state;
    char dir[256];
    write_corpus(dir, sizeof dir);
    for (int c = 0; c < 2; c++) {
        tandem_config cfg;
        make_config(&shapes[c], &cfg);
        check_allocations(&cfg, dir, 1);
        check_allocations(&cfg, dir, 0);
    }
    remove_corpus(dir);
}

/* ---- the report ---- */

static void test_report_lists_the_plan(void **state) {
    (void)state;
    for (int c = 0; c < 2; c++) {
        tandem_config cfg;
        make_config(&shapes[c], &cfg);
        tandem_layout l;
        assert_int_equal(tandem_layout_declare(&cfg, NULL, NULL, &l), TANDEM_OK);
        tandem_model_dims dims;
        assert_int_equal(tandem_model_dims_from_config(&cfg, tandem_symbols_count(), &dims), TANDEM_OK);
        assert_int_equal(tandem_model_staging_declare(&dims, &l.staging), TANDEM_OK);
        const tandem_staging_plan *p = &l.staging;
        /* loader.0, loader.1, ring, model: 4 + 4 + 4 per slot + 4 buffers */
        assert_int_equal(p->n_blocks, TANDEM_LAYOUT_STAGING + 2);
        assert_int_equal(p->n_bufs, TANDEM_LAYOUT_STAGING * TANDEM_STAGED_BUFS +
                                        cfg.prefetch_buffer_size * TANDEM_RING_STAGED_BUFS + 4);

        static char rep[16384];
        const size_t len = tandem_layout_pinned_report(&l, rep, sizeof rep);
        assert_true(len > 0 && len < sizeof rep);
        assert_int_equal(strlen(rep), len);
        printf("%s", c == 0 ? rep : "");
        char want[160], h[32], sh[96];
        for (int i = 0; i < p->n_blocks; i++) {
            const tandem_staging_block *b = &p->block[i];
            snprintf(want, sizeof want, "  %-16s %-13s %12s  ", b->name, b->device, tandem_bytes_text(b->bytes, h, sizeof h));
            if (!strstr(rep, want)) fail_msg("the report lacks block line '%s'", want);
            for (int j = b->first; j < b->first + b->count; j++) {
                const tandem_staging_buf *x = &p->buf[j];
                snprintf(want, sizeof want, "    %-28s %-4s %-20s %12s  @ %zu\n", x->name, tandem_dtype_name(x->dtype),
                         tandem_shape_text(x->ndim, x->shape, sh, sizeof sh), tandem_bytes_text(x->bytes, h, sizeof h),
                         x->offset);
                if (!strstr(rep, want)) fail_msg("the report lacks buffer line '%s'", want);
            }
        }
        /* totals in bytes: everything, and without the ring staging (peer access) */
        const int ring = tandem_staging_find(p, TANDEM_LAYOUT_RING_STAGING);
        assert_true(ring >= 0);
        size_t all = 0;
        for (int i = 0; i < p->n_blocks; i++) all += p->block[i].bytes;
        snprintf(want, sizeof want, "(%zu bytes)", all);
        assert_non_null(strstr(rep, want));
        snprintf(want, sizeof want, "(%zu bytes) when the devices have peer access", all - p->block[ring].bytes);
        assert_non_null(strstr(rep, want));
        tandem_layout_release(&l);
    }
}

/* ---- the plan's rules ---- */

static void test_staging_rules(void **state) {
    (void)state;
    tandem_rng r = {tandem_test_seed("test_plan_layout rules")};
    static const tandem_dtype dts[3] = {TANDEM_F32, TANDEM_I32, TANDEM_BF16};
    for (int round = 0; round < 20; round++) {
        tandem_staging_plan p;
        tandem_staging_init(&p);
        const int nb = (int)tandem_rng_int(&r, 1, TANDEM_STAGING_MAX_BLOCKS);
        for (int b = 0; b < nb; b++) {
            char name[16];
            snprintf(name, sizeof name, "b%d", b);
            int idx = -1;
            assert_int_equal(tandem_staging_begin(&p, name, "data device", TANDEM_STAGING_ALWAYS, "test", &idx), TANDEM_OK);
            assert_int_equal(idx, b);
            const int nx = (int)tandem_rng_int(&r, 1, TANDEM_STAGING_MAX_BUFS / TANDEM_STAGING_MAX_BLOCKS);
            for (int x = 0; x < nx; x++) {
                const int nd = (int)tandem_rng_int(&r, 1, 3);
                const int64_t d0 = tandem_rng_int(&r, 1, 9), d1 = tandem_rng_int(&r, 1, 70), d2 = tandem_rng_int(&r, 1, 5);
                snprintf(name, sizeof name, "x%d", x);
                assert_int_equal(tandem_staging_add(&p, name, dts[x % 3], nd, d0, d1, d2), TANDEM_OK);
            }
        }
        size_t total = 0;
        for (int b = 0; b < p.n_blocks; b++) {
            const tandem_staging_block *k = &p.block[b];
            size_t end = 0;
            for (int j = k->first; j < k->first + k->count; j++) {
                const tandem_staging_buf *x = &p.buf[j];
                int64_t numel = 1;
                for (int d = 0; d < x->ndim; d++) numel *= x->shape[d];
                assert_int_equal(x->bytes, (size_t)numel * tandem_dtype_size(x->dtype));
                assert_int_equal(x->offset % TANDEM_STAGING_ALIGN, 0);
                assert_true(x->offset >= end); /* after the previous one: disjoint */
                end = x->offset + x->bytes;
            }
            assert_true(k->bytes >= end && k->bytes < end + TANDEM_STAGING_ALIGN);
            assert_int_equal(k->bytes % TANDEM_STAGING_ALIGN, 0);
            assert_int_equal(tandem_staging_find(&p, k->name), b);
            total += k->bytes;
        }
        assert_int_equal(tandem_staging_total(&p, 0), total);
        assert_int_equal(tandem_staging_total(&p, 1), total); /* no peer-only block */
    }

    tandem_staging_plan p;
    tandem_staging_init(&p);
    assert_int_equal(tandem_staging_add(&p, "early", TANDEM_F32, 1, 4, 0, 0), TANDEM_E_STATE);
    assert_non_null(strstr(tandem_last_error(), "'early' added before any block"));
    assert_int_equal(tandem_staging_begin(&p, "blk", "data device", TANDEM_STAGING_NO_PEER, "test", NULL), TANDEM_OK);
    assert_int_equal(tandem_staging_begin(&p, "blk", "data device", TANDEM_STAGING_ALWAYS, "test", NULL), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "block 'blk' declared twice"));
    assert_int_equal(tandem_staging_add(&p, "zero", TANDEM_F32, 2, 4, 0, 0), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "block 'blk', buffer 'zero': dimension 1 is 0"));
    assert_int_equal(tandem_staging_add(&p, "huge", TANDEM_F32, 3, INT64_MAX, INT64_MAX, 2), TANDEM_E_INVALID);
    assert_int_equal(tandem_staging_add(&p, "ok", TANDEM_U8, 1, 1, 0, 0), TANDEM_OK);
    assert_int_equal(p.block[0].bytes, TANDEM_STAGING_ALIGN);
    assert_int_equal(tandem_staging_total(&p, 1), 0); /* peer-only */
    for (int i = p.n_bufs; i < TANDEM_STAGING_MAX_BUFS; i++)
        assert_int_equal(tandem_staging_add(&p, "fill", TANDEM_F32, 1, 1, 0, 0), TANDEM_OK);
    assert_int_equal(tandem_staging_add(&p, "over", TANDEM_F32, 1, 1, 0, 0), TANDEM_E_INVALID);
    assert_non_null(strstr(tandem_last_error(), "TANDEM_STAGING_MAX_BUFS"));
    assert_int_equal(tandem_staging_find(&p, "missing"), -1);
}

int main(void) {
    setenv("TANDEM_HOST_DEVICES", "2", 1);
    const char *be = getenv("TANDEM_TEST_BACKEND");
    if (be && strcmp(be, "cuda") == 0) backend = TANDEM_BACKEND_CUDA;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allocated_equals_planned),
        cmocka_unit_test(test_report_lists_the_plan),
        cmocka_unit_test(test_staging_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
