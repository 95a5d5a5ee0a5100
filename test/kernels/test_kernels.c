/* test_kernels.c — every kernel in the registry, emulated (test/emu) against its host
 * implementation on random inputs, then the fatbin's entry points against the registry.
 *
 * Per kernel and per size of its case spec (test/kernels/cases_<group>.c): buffers twice
 * (malloc for the host implementation, guarded emulator memory for the kernel), identical
 * random inputs, outputs poisoned (NaN for f32/bf16, different patterns per copy for i32),
 * then every OUT/INOUT buffer must satisfy ||a-b||^2 / ||b||^2 <= tol (b = host), with no NaN
 * on either side and no output element left unwritten. Each kernel is one cmocka test. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "test/emu/emu.h"
#include "platform/cuda/fatbin.h"
#include "test/kernels/kcase.h"
#include "test/fixtures.h"
#include "kernels/registry.h"

static const tandem_kcase_spec *const specs[TANDEM_KERNEL_COUNT] = {
#define KT_SPEC(name, group) &tandem_kcase_##name,
    TANDEM_KERNEL_LIST(KT_SPEC)
#undef KT_SPEC
};

static uint64_t seed;
static int kernel_ids[TANDEM_KERNEL_COUNT];
static int emulated_ok[TANDEM_KERNEL_COUNT];

/* i32 outputs cannot hold NaN: each copy gets its own poison, so an element neither side
 * wrote differs between them, and one both left alone is recognised. */
#define POISON_HOST_I32 0x7F7F7F7F
#define POISON_EMU_I32 ((int32_t)0xFEFEFEFE)

static double element(const void *p, tandem_dtype dt, int64_t i) {
    switch (dt) {
    case TANDEM_F32: return ((const float *)p)[i];
    case TANDEM_BF16: return tandem_bf16_to_f32(((const tandem_bf16 *)p)[i]);
    case TANDEM_U8: return ((const uint8_t *)p)[i];
    default: return ((const int32_t *)p)[i];
    }
}

static void poison(void *p, const tandem_kcase_buf *b, int32_t i32_pattern) {
    if (b->dtype == TANDEM_I32)
        for (int64_t i = 0; i < b->count; i++) ((int32_t *)p)[i] = i32_pattern;
    else
        memset(p, 0xFF, (size_t)b->count * tandem_kcase_dtype_bytes(b->dtype)); /* NaN in f32 and bf16 */
}

/* Compare one output buffer; on failure write why into msg and return nonzero. */
static int compare(const tandem_kcase_buf *b, const void *emu, const void *host, double tol,
                   char *msg, size_t cap) {
    double err = 0, norm = 0, worst = -1;
    int64_t worst_i = -1;
    for (int64_t i = 0; i < b->count; i++) {
        double e = element(emu, b->dtype, i), h = element(host, b->dtype, i);
        if (b->dtype == TANDEM_I32 && b->role == TANDEM_KB_OUT &&
            ((const int32_t *)emu)[i] == POISON_EMU_I32 && ((const int32_t *)host)[i] == POISON_HOST_I32) {
            snprintf(msg, cap, "%s[%lld] written by neither the kernel nor the host implementation",
                     b->name, (long long)i);
            return 1;
        }
        if (isnan(e) || isnan(h)) {
            snprintf(msg, cap, "%s[%lld] is NaN (emulated %g, host %g)%s", b->name, (long long)i, e, h,
                     b->role == TANDEM_KB_OUT ? ": an output element left unwritten, or a NaN computed" : "");
            return 1;
        }
        double d = (e - h) * (e - h);
        err += d;
        norm += h * h;
        if (d > worst) worst = d, worst_i = i;
    }
    double ratio = norm > 0 ? err / norm : err;
    if (!(ratio <= tol)) {
        snprintf(msg, cap, "%s: normalised error %.3g > tolerance %.3g (largest difference at [%lld]: "
                 "emulated %.9g, host %.9g)",
                 b->name, ratio, tol, (long long)worst_i, element(emu, b->dtype, worst_i),
                 element(host, b->dtype, worst_i));
        return 1;
    }
    return 0;
}

/* The registry's cost function on this launch (kernels/registry.h): finite, non-negative, some
 * bytes moved, and no more than every buffer of the case read and written once (a minimum
 * traffic cannot exceed that). 0 when sane, else msg says why. */
static int check_cost(const tandem_kernel_info *k, const tandem_kcase *c, const void *args, char *msg,
                      size_t cap) {
    tandem_kernel_cost kc;
    memset(&kc, 0xff, sizeof kc); /* NaN: a field the function forgot stays visible */
    k->cost(args, &kc);
    double all = 0.0;
    for (int j = 0; j < c->nbufs; j++)
        all += (double)c->bufs[j].count * (double)tandem_kcase_dtype_bytes(c->bufs[j].dtype);
    const double moved = kc.bytes_read + kc.bytes_written;
    if (!(kc.flops >= 0.0 && kc.bytes_read >= 0.0 && kc.bytes_written >= 0.0 && moved > 0.0 &&
          moved <= 2.0 * all + 64.0)) {
        snprintf(msg, cap, "cost function: flops %g, bytes read %g, written %g; expected non-negative, "
                 "some bytes, at most %g (every buffer read and written once)", kc.flops, kc.bytes_read,
                 kc.bytes_written, 2.0 * all + 64.0);
        return 1;
    }
    return 0;
}

/* One size of one kernel; 0 on success, else msg says why. */
static int run_case(int id, const tandem_kcase *c, tandem_rng *rng, char *msg, size_t cap) {
    const tandem_kernel_info *k = &tandem_kernel_table[id];
    void *hb[TANDEM_KCASE_MAX_BUFS] = {0}, *eb[TANDEM_KCASE_MAX_BUFS] = {0};
    void *hargs = calloc(1, k->args_size), *eargs = calloc(1, k->args_size);
    int bad = 0;
    if (c->nbufs < 1 || c->nbufs > TANDEM_KCASE_MAX_BUFS) {
        snprintf(msg, cap, "case declares %d buffers (1..%d)", c->nbufs, TANDEM_KCASE_MAX_BUFS);
        bad = 1;
    }
    for (int j = 0; !bad && j < c->nbufs; j++) {
        const tandem_kcase_buf *b = &c->bufs[j];
        size_t bytes = (size_t)b->count * tandem_kcase_dtype_bytes(b->dtype);
        if (b->count < 0 || !tandem_kcase_dtype_bytes(b->dtype)) {
            snprintf(msg, cap, "buffer %s: count %lld of dtype %d", b->name, (long long)b->count, (int)b->dtype);
            bad = 1;
            break;
        }
        hb[j] = malloc(bytes ? bytes : 1);
        eb[j] = tandem_emu_buf_alloc(bytes);
        if (b->role == TANDEM_KB_OUT) {
            poison(hb[j], b, POISON_HOST_I32);
            poison(eb[j], b, POISON_EMU_I32);
        } else {
            tandem_kcase_fill_random(hb[j], b, rng);
            memcpy(eb[j], hb[j], bytes);
        }
    }
    if (!bad) {
        specs[id]->bind(c, hb, hargs);
        specs[id]->bind(c, eb, eargs);
        bad = check_cost(k, c, hargs, msg, cap);
    }
    if (!bad) {
        k->host(hargs);
        tandem_launch_dims d;
        k->geom(eargs, &d);
        if (tandem_emu_launch(id, &d, eargs, k->args_size) != 0) {
            snprintf(msg, cap, "emulated launch (grid %u,%u,%u block %u,%u,%u shmem %u): %s", d.grid[0],
                     d.grid[1], d.grid[2], d.block[0], d.block[1], d.block[2], d.shmem,
                     tandem_emu_last_error());
            bad = 1;
        }
    }
    for (int j = 0; !bad && j < c->nbufs; j++)
        if (c->bufs[j].role != TANDEM_KB_IN)
            bad = compare(&c->bufs[j], eb[j], hb[j], c->tol, msg, cap);
    for (int j = 0; j < c->nbufs && j < TANDEM_KCASE_MAX_BUFS; j++) {
        free(hb[j]);
        if (eb[j]) tandem_emu_buf_free(eb[j]);
    }
    free(hargs);
    free(eargs);
    return bad;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_kernel(void **state) {
    int id = *(const int *)*state;
    const tandem_kernel_info *k = &tandem_kernel_table[id];
    const tandem_kcase_spec *spec = specs[id];
    /* A per-kernel stream from the printed seed: one kernel's cases don't shift another's. */
    tandem_rng rng = {seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(id + 1))};
    char sizes[2048] = "", msg[1024];
    double t0 = now_ms();
    assert_true(spec->nsizes > 0);
    for (int s = 0; s < spec->nsizes; s++) {
        tandem_kcase c;
        memset(&c, 0, sizeof c);
        spec->make(s, &rng, &c);
        if (run_case(id, &c, &rng, msg, sizeof msg)) fail_msg("%s (%s): %s", k->name, c.desc, msg);
        size_t used = strlen(sizes);
        snprintf(sizes + used, sizeof sizes - used, "%s%s", used ? "; " : "", c.desc);
    }
    emulated_ok[id] = 1;
    printf("emulated: %s ok (%d sizes, %.0f ms: %s)\n", k->name, spec->nsizes, now_ms() - t0, sizes);
}

/* The fatbin's kernel entry points must be exactly the registry's, all emulated above. */
static void test_fatbin_coverage(void **state) {
    (void)state;
    const char *path = TANDEM_TEST_BUILD_DIR "/tandem.fatbin";
    size_t len = 0;
    unsigned char *data = tandem_test_read_file(path, &len);
    if (!data) fail_msg("cannot open %s (build it with make first)", path);
    static tandem_fatbin_summary s;
    tandem_status st = tandem_fatbin_parse(data, len, &s);
    free(data);
    if (st != TANDEM_OK) fail_msg("%s: %s", path, tandem_last_error());
    if (s.image_count == 0) {
        printf("fatbin: %s is empty (host-only build): fatbin entry-set check skipped; %d registered "
               "kernels emulated\n", path, TANDEM_KERNEL_COUNT);
        skip();
    }
    printf("fatbin: %d entry points in %d images; registry: %d kernels\n", s.entry_count,
           s.image_count, TANDEM_KERNEL_COUNT);
    int bad = 0;
    for (int e = 0; e < s.entry_count; e++) {
        int id = tandem_kernel_find(s.entries[e]);
        if (id < 0 || strcmp(tandem_kernel_table[id].entry, s.entries[e]) != 0) {
            printf("fatbin entry %s is not in the registry, so it is not emulated\n", s.entries[e]);
            bad = 1;
        } else if (!emulated_ok[id]) {
            printf("fatbin entry %s did not pass emulation\n", s.entries[e]);
            bad = 1;
        }
    }
    for (int i = 0; i < TANDEM_KERNEL_COUNT; i++) {
        int found = 0;
        for (int e = 0; e < s.entry_count && !found; e++)
            found = strcmp(s.entries[e], tandem_kernel_table[i].entry) == 0;
        if (!found) {
            printf("registered kernel %s is not in the fatbin\n", tandem_kernel_table[i].entry);
            bad = 1;
        }
    }
    if (bad || s.entry_count != TANDEM_KERNEL_COUNT)
        fail_msg("fatbin entry set (%d) differs from the registry (%d); see above", s.entry_count,
                 TANDEM_KERNEL_COUNT);
    printf("fatbin: all %d entry points emulated\n", s.entry_count);
}

int main(void) {
    seed = tandem_test_seed("test_kernels");
    struct CMUnitTest tests[TANDEM_KERNEL_COUNT + 1];
    for (int i = 0; i < TANDEM_KERNEL_COUNT; i++) {
        kernel_ids[i] = i;
        tests[i].name = tandem_kernel_table[i].name;
        tests[i].test_func = test_kernel;
        tests[i].setup_func = NULL;
        tests[i].teardown_func = NULL;
        tests[i].initial_state = &kernel_ids[i];
    }
    tests[TANDEM_KERNEL_COUNT].name = "fatbin_entries_all_emulated";
    tests[TANDEM_KERNEL_COUNT].test_func = test_fatbin_coverage;
    tests[TANDEM_KERNEL_COUNT].setup_func = NULL;
    tests[TANDEM_KERNEL_COUNT].teardown_func = NULL;
    tests[TANDEM_KERNEL_COUNT].initial_state = NULL;
    return cmocka_run_group_tests_name("kernels", tests, NULL, NULL);
}
