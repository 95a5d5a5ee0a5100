/* test_fatbin.c — fatbin parsing: the real build output (architectures, entry points = the
 * kernel registry, PTX/ELF payloads where the parser says), runs_on, a hand-built fatbin
 * (independent of nvcc), and malformed input (every truncation, random byte flips) which must
 * give TANDEM_E_FORMAT or TANDEM_OK and never a crash or an out-of-bounds read (run under ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "platform/cuda/fatbin.h"
#include "platform/os/os.h"
#include "kernels/registry.h"
#include "tandem.h"
#include "test/fixtures.h"
#include "tools/env_options.h"

#define FATBIN_PATH TANDEM_TEST_BUILD_DIR "/tandem.fatbin"

static unsigned char *g_bin;
static size_t g_len;
static tandem_fatbin_summary g_sum; /* large: keep off the stack */

/* Parse a heap copy of exactly n bytes, so that any read past the end is caught by ASan. */
static tandem_status parse_copy(const unsigned char *src, size_t n, tandem_fatbin_summary *out) {
    unsigned char *c = malloc(n ? n : 1);
    assert_non_null(c);
    if (n) memcpy(c, src, n);
    tandem_status st = tandem_fatbin_parse(c, n, out);
    free(c);
    return st;
}

static int group_setup(void **state) {
    (void)state;
    g_bin = tandem_test_read_file(FATBIN_PATH, &g_len);
    if (!g_bin) {
        fprintf(stderr, "cannot read %s (build it first: make test-build)\n", FATBIN_PATH);
        return -1;
    }
    if (g_len == 0) printf("fatbin: %s is empty (host-only build): architecture checks skipped\n", FATBIN_PATH);
    return 0;
}
static int group_teardown(void **state) {
    (void)state;
    free(g_bin);
    return 0;
}

static int has_image(const tandem_fatbin_summary *s, tandem_fatbin_kind kind, int arch) {
    for (int i = 0; i < s->image_count; i++)
        if (s->images[i].kind == kind && s->images[i].arch == arch) return 1;
    return 0;
}

static void test_real_architectures(void **state) {
    (void)state;
    assert_int_equal(parse_copy(g_bin, g_len, &g_sum), TANDEM_OK);
    if (g_len == 0) {
        assert_int_equal(g_sum.image_count, 0);
        skip();
    }
    static const int sass[] = {80, 86, 89, 90};
    for (size_t i = 0; i < sizeof sass / sizeof sass[0]; i++)
        assert_true(has_image(&g_sum, TANDEM_FATBIN_SASS, sass[i]));
    assert_true(has_image(&g_sum, TANDEM_FATBIN_PTX, 90));
    assert_int_equal(g_sum.image_count, 5);
    char arch[256];
    tandem_fatbin_arch_string(&g_sum, arch, sizeof arch);
    assert_string_equal(arch, "sm_80 sm_86 sm_89 sm_90 compute_90");

    /* payloads really are where the parser says: ELF for SASS (e_machine EM_CUDA = 190),
     * PTX text naming its target for PTX */
    for (int i = 0; i < g_sum.image_count; i++) {
        const tandem_fatbin_image *im = &g_sum.images[i];
        assert_true(im->offset + im->size <= g_len);
        assert_false(im->compressed); /* the Makefile passes --no-compress */
        const unsigned char *p = g_bin + im->offset;
        if (im->kind == TANDEM_FATBIN_SASS) {
            assert_memory_equal(p, "\x7f" "ELF", 4);
            assert_int_equal(p[18] | (p[19] << 8), 190);
        } else {
            char want[32];
            snprintf(want, sizeof want, ".target sm_%d", im->arch);
            assert_non_null(memmem(p, im->size, want, strlen(want)));
        }
    }
}

static void test_real_entries_match_registry(void **state) {
    (void)state;
    if (g_len == 0) skip();
    assert_int_equal(parse_copy(g_bin, g_len, &g_sum), TANDEM_OK);
    assert_int_equal(g_sum.entry_count, TANDEM_KERNEL_COUNT);
    for (int k = 0; k < TANDEM_KERNEL_COUNT; k++) {
        int found = 0;
        for (int e = 0; e < g_sum.entry_count; e++)
            found += strcmp(g_sum.entries[e], tandem_kernel_table[k].entry) == 0;
        if (found != 1) fail_msg("kernel %s: found %d times in the fatbin", tandem_kernel_table[k].entry, found);
    }
    /* and the entry names are present as strings in the first SASS payload */
    for (int e = 0; e < g_sum.entry_count; e++)
        assert_non_null(memmem(g_bin, g_len, g_sum.entries[e], strlen(g_sum.entries[e]) + 1));
}

static void test_real_runs_on(void **state) {
    (void)state;
    if (g_len == 0) skip();
    assert_int_equal(parse_copy(g_bin, g_len, &g_sum), TANDEM_OK);
    assert_true(tandem_fatbin_runs_on(&g_sum, 8, 0));
    assert_true(tandem_fatbin_runs_on(&g_sum, 8, 6));
    assert_true(tandem_fatbin_runs_on(&g_sum, 8, 9));
    assert_true(tandem_fatbin_runs_on(&g_sum, 9, 0));
    assert_true(tandem_fatbin_runs_on(&g_sum, 10, 0)); /* PTX JIT */
    assert_true(tandem_fatbin_runs_on(&g_sum, 12, 0));
    assert_false(tandem_fatbin_runs_on(&g_sum, 7, 5));
    assert_false(tandem_fatbin_runs_on(&g_sum, 6, 1));
}

/* Per SASS image and kernel: registers, static shared memory and the launch bounds, which must
 * be the block size of the kernel's own geometry (kernels/<group>_host.c; every kernel's block
 * is fixed); the PTX ISA the image header records is the ".version" its text declares, and the
 * toolkit is the one the cubins' notes name. */
static void test_real_kernel_attrs(void **state) {
    (void)state;
    if (g_len == 0) skip();
    assert_int_equal(parse_copy(g_bin, g_len, &g_sum), TANDEM_OK);
    for (int i = 0; i < g_sum.image_count; i++) {
        const tandem_fatbin_image *im = &g_sum.images[i];
        if (im->kind == TANDEM_FATBIN_PTX) {
            char want[32];
            snprintf(want, sizeof want, ".version %d.%d\n", im->version_major, im->version_minor);
            assert_non_null(memmem(g_bin + im->offset, im->size, want, strlen(want)));
            assert_true(tandem_fatbin_driver_floor(&g_sum) >=
                        tandem_fatbin_ptx_isa_cuda(im->version_major, im->version_minor));
            continue;
        }
        for (int k = 0; k < TANDEM_KERNEL_COUNT; k++) {
            tandem_fatbin_kernel_attrs a;
            assert_int_equal(tandem_fatbin_kernel_attrs_of(g_bin, g_len, im, tandem_kernel_table[k].entry, &a),
                             TANDEM_OK);
            _Alignas(16) static unsigned char args[4096];
            memset(args, 0, sizeof args);
            tandem_launch_dims d;
            tandem_kernel_table[k].geom(args, &d);
            unsigned threads = d.block[0] * d.block[1] * d.block[2];
            if (a.registers < 1 || a.registers > 255 || a.max_threads != threads)
                fail_msg("sm_%d %s: %d registers, launch bounds %u, geometry %u threads", im->arch,
                         tandem_kernel_table[k].name, a.registers, a.max_threads, threads);
        }
        tandem_fatbin_kernel_attrs ln;
        assert_int_equal(tandem_fatbin_kernel_attrs_of(g_bin, g_len, im, "tandem_k_layernorm_bwd", &ln), TANDEM_OK);
        assert_true(ln.static_shared >= 66 * 4); /* its red[66] floats */
        assert_int_equal(tandem_fatbin_kernel_attrs_of(g_bin, g_len, im, "tandem_k_nonexistent", &ln),
                         TANDEM_E_INVALID);
    }
    char want[64];
    snprintf(want, sizeof want, "compilation tools, release %d.%d,", g_sum.toolkit_version / 1000,
             g_sum.toolkit_version % 1000 / 10);
    assert_true(g_sum.toolkit_version >= 12000);
    assert_non_null(memmem(g_bin, g_len, want, strlen(want)));
    assert_int_equal(tandem_fatbin_driver_floor(&g_sum) / 1000, g_sum.toolkit_version / 1000);
}

/* runs_on rules on summaries built by hand. */
static void test_runs_on_rules(void **state) {
    (void)state;
    tandem_fatbin_summary *s = calloc(1, sizeof *s);
    assert_non_null(s);
    s->image_count = 1;
    s->images[0].kind = TANDEM_FATBIN_SASS;
    s->images[0].arch = 86;
    assert_false(tandem_fatbin_runs_on(s, 8, 0)); /* SASS does not run on a lower minor */
    assert_true(tandem_fatbin_runs_on(s, 8, 6));
    assert_true(tandem_fatbin_runs_on(s, 8, 9));
    assert_false(tandem_fatbin_runs_on(s, 9, 0)); /* nor on another major */
    s->images[0].kind = TANDEM_FATBIN_PTX;
    s->images[0].arch = 80;
    assert_false(tandem_fatbin_runs_on(s, 7, 5));
    assert_true(tandem_fatbin_runs_on(s, 8, 0));
    assert_true(tandem_fatbin_runs_on(s, 9, 0));
    s->image_count = 0;
    assert_false(tandem_fatbin_runs_on(s, 9, 0));
    char buf[64];
    tandem_fatbin_arch_string(s, buf, sizeof buf);
    assert_string_equal(buf, "none");
    free(s);
}

/* ---- a fatbin built by hand: one container, a PTX record and a SASS record whose ELF holds
 * a .symtab with global, local and undefined function symbols ---- */
static void put16(unsigned char *p, unsigned v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void put32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void put64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }

/* ELF: header (64) | strtab | symtab (4 syms) | 3 section headers (null, strtab, symtab) */
static size_t build_elf(unsigned char *e) {
    static const char strtab[] = "\0k_alpha\0k_local\0k_undef\0k_beta\0";
    size_t str_off = 64, str_len = sizeof strtab; /* includes the final NUL twice: fine */
    size_t sym_off = 128, nsym = 5, sh_off = sym_off + nsym * 24;
    memset(e, 0, sh_off + 3 * 64);
    memcpy(e, "\x7f" "ELF", 4);
    e[4] = 2; /* ELFCLASS64 */
    e[5] = 1; /* little-endian */
    e[6] = 1;
    put16(e + 18, 190);
    put64(e + 0x28, sh_off);
    put16(e + 0x3a, 64);
    put16(e + 0x3c, 3);
    put16(e + 0x3e, 1);
    memcpy(e + str_off, strtab, str_len);
    /* syms: 0 null; 1 k_alpha GLOBAL FUNC; 2 k_local LOCAL FUNC; 3 k_undef GLOBAL FUNC UND;
     * 4 k_beta GLOBAL FUNC */
    const struct { uint32_t name; unsigned info; unsigned shndx; } syms[5] = {
        {0, 0, 0}, {1, 0x12, 2}, {9, 0x02, 2}, {17, 0x12, 0}, {25, 0x12, 2}};
    for (size_t i = 0; i < nsym; i++) {
        unsigned char *s = e + sym_off + 24 * i;
        put32(s, syms[i].name);
        s[4] = (unsigned char)syms[i].info;
        put16(s + 6, syms[i].shndx);
    }
    unsigned char *sh = e + sh_off;
    put32(sh + 64 + 4, 3); /* SHT_STRTAB */
    put64(sh + 64 + 0x18, str_off);
    put64(sh + 64 + 0x20, str_len);
    put32(sh + 128 + 4, 2); /* SHT_SYMTAB */
    put64(sh + 128 + 0x18, sym_off);
    put64(sh + 128 + 0x20, nsym * 24);
    put32(sh + 128 + 0x28, 1); /* link: strtab */
    put64(sh + 128 + 0x38, 24);
    return sh_off + 3 * 64;
}

static size_t put_record(unsigned char *r, unsigned kind, unsigned arch, const void *payload,
                         size_t n, uint64_t flags) {
    memset(r, 0, 64);
    put16(r, kind);
    put16(r + 2, 0x0101);
    put32(r + 4, 64);
    put64(r + 8, n);
    put32(r + 28, arch);
    put64(r + 40, flags);
    memcpy(r + 64, payload, n);
    return 64 + n;
}

static size_t build_fatbin(unsigned char *b, uint64_t sass_flags) {
    unsigned char elf[1024];
    size_t elf_len = build_elf(elf);
    static const char ptx[] = "//\n.version 8.0\n.target sm_75\n.address_size 64\n";
    size_t r = 16;
    r += put_record(b + r, 1, 75, ptx, sizeof ptx, 0x11);
    r += put_record(b + r, 2, 87, elf, elf_len, sass_flags);
    put32(b, 0xBA55ED50u);
    put16(b + 4, 1);
    put16(b + 6, 16);
    put64(b + 8, r - 16);
    return r;
}

static void test_handmade(void **state) {
    (void)state;
    unsigned char b[4096];
    size_t n = build_fatbin(b, 0x11);
    tandem_fatbin_summary *s = calloc(1, sizeof *s);
    assert_non_null(s);
    assert_int_equal(parse_copy(b, n, s), TANDEM_OK);
    assert_int_equal(s->image_count, 2);
    assert_int_equal(s->images[0].kind, TANDEM_FATBIN_PTX);
    assert_int_equal(s->images[0].arch, 75);
    assert_int_equal(s->images[0].offset, 16 + 64);
    assert_int_equal(s->images[1].kind, TANDEM_FATBIN_SASS);
    assert_int_equal(s->images[1].arch, 87);
    assert_int_equal(s->entry_count, 2); /* local and undefined symbols are not entries */
    assert_string_equal(s->entries[0], "k_alpha");
    assert_string_equal(s->entries[1], "k_beta");
    char arch[64];
    tandem_fatbin_arch_string(s, arch, sizeof arch);
    assert_string_equal(arch, "sm_87 compute_75");
    assert_true(tandem_fatbin_runs_on(s, 7, 5));  /* PTX 75 */
    assert_true(tandem_fatbin_runs_on(s, 8, 9));  /* SASS 87 or PTX */
    assert_false(tandem_fatbin_runs_on(s, 7, 0));

    /* two containers back to back, then zero padding (as in a linked section) */
    unsigned char two[8192];
    memcpy(two, b, n);
    memcpy(two + n, b, n);
    memset(two + 2 * n, 0, 40);
    assert_int_equal(parse_copy(two, 2 * n + 40, s), TANDEM_OK);
    assert_int_equal(s->image_count, 4);
    assert_int_equal(s->entry_count, 2); /* entries of the first SASS image only */
    /* trailing garbage after a container is not padding */
    two[2 * n + 7] = 0x55;
    assert_int_equal(parse_copy(two, 2 * n + 40, s), TANDEM_E_FORMAT);

    /* a compressed SASS image is listed, its entries are not read */
    n = build_fatbin(b, 0x8011);
    assert_int_equal(parse_copy(b, n, s), TANDEM_OK);
    assert_int_equal(s->image_count, 2);
    assert_true(s->images[1].compressed);
    assert_int_equal(s->entry_count, 0);
    free(s);
}

static void test_not_a_fatbin(void **state) {
    (void)state;
    tandem_fatbin_summary *s = calloc(1, sizeof *s);
    assert_non_null(s);
    assert_int_equal(parse_copy(NULL, 0, s), TANDEM_OK);
    assert_int_equal(s->image_count, 0);
    static const unsigned char text[] = "this is not a fatbin, it is plain text.";
    assert_int_equal(parse_copy(text, sizeof text, s), TANDEM_E_FORMAT);
    assert_non_null(strstr(tandem_last_error(), "magic"));
    assert_non_null(strstr(tandem_last_error(), "offset 0"));
    assert_int_equal(parse_copy(text, 5, s), TANDEM_E_FORMAT);
    free(s);
}

/* Cut the input at every byte of every header and at every record boundary: each cut must be
 * reported as a format error with an offset, never read past the end. */
static void check_truncations(const unsigned char *b, size_t n) {
    tandem_fatbin_summary *s = calloc(1, sizeof *s);
    assert_non_null(s);
    size_t r = 16;
    size_t cuts[4096];
    size_t nc = 0;
    for (size_t i = 1; i < 16 + 64 && i < n; i++) cuts[nc++] = i;
    while (r + 64 <= n && nc < 4000) {
        uint32_t h = (uint32_t)b[r + 4] | ((uint32_t)b[r + 5] << 8);
        uint64_t p = 0;
        for (int i = 0; i < 8; i++) p |= (uint64_t)b[r + 8 + i] << (8 * i);
        for (size_t i = 0; i <= h && nc < 4000; i++) cuts[nc++] = r + i; /* inside the header */
        cuts[nc++] = r + h + p / 2; /* inside the payload */
        r += h + p;
    }
    for (size_t i = 0; i < nc; i++) {
        if (cuts[i] == 0 || cuts[i] >= n) continue;
        tandem_status st = parse_copy(b, cuts[i], s);
        if (st != TANDEM_E_FORMAT) fail_msg("cut at %zu of %zu: status %d", cuts[i], n, (int)st);
        assert_non_null(strstr(tandem_last_error(), "offset"));
    }
    free(s);
}

static void test_truncations(void **state) {
    (void)state;
    unsigned char b[4096];
    check_truncations(b, build_fatbin(b, 0x11));
    if (g_len) check_truncations(g_bin, g_len);
}

/* Random byte flips, biased to the headers (container, records, the ELF's header, section
 * headers and symbols): OK or FORMAT, nothing else, and no crash. */
static void fuzz(const unsigned char *orig, size_t n, int rounds, tandem_rng *rng) {
    tandem_fatbin_summary *s = calloc(1, sizeof *s);
    unsigned char *b = malloc(n);
    assert_non_null(s);
    assert_non_null(b);
    int ok = 0, bad = 0;
    for (int it = 0; it < rounds; it++) {
        memcpy(b, orig, n);
        int flips = (int)tandem_rng_int(rng, 1, 6);
        for (int f = 0; f < flips; f++) {
            size_t at = (tandem_rng_next(rng) & 1) ? (size_t)tandem_rng_int(rng, 0, (int64_t)(n < 2048 ? n : 2048) - 1)
                                                   : (size_t)tandem_rng_int(rng, 0, (int64_t)n - 1);
            b[at] = (tandem_rng_next(rng) & 1) ? (unsigned char)tandem_rng_next(rng)
                                               : (unsigned char)(b[at] ^ (1u << tandem_rng_int(rng, 0, 7)));
        }
        size_t len = (tandem_rng_next(rng) % 8 == 0) ? (size_t)tandem_rng_int(rng, 0, (int64_t)n) : n;
        tandem_status st = parse_copy(b, len, s);
        if (st == TANDEM_OK) {
            ok++;
            assert_true(s->image_count <= TANDEM_FATBIN_MAX_IMAGES);
            for (int i = 0; i < s->image_count; i++) assert_true(s->images[i].offset + s->images[i].size <= len);
            for (int e = 0; e < s->entry_count; e++) assert_true(strlen(s->entries[e]) < TANDEM_FATBIN_NAME_MAX);
        } else if (st == TANDEM_E_FORMAT) {
            bad++;
            assert_true(tandem_last_error()[0] != '\0');
        } else {
            fail_msg("round %d: status %d (%s)", it, (int)st, tandem_last_error());
        }
    }
    printf("fuzz %zu bytes: %d parsed, %d rejected\n", n, ok, bad);
    free(b);
    free(s);
}

static void test_fuzz(void **state) {
    (void)state;
    tandem_rng rng = {tandem_test_seed("test_fatbin fuzz")};
    unsigned char b[4096];
    fuzz(b, build_fatbin(b, 0x11), 3000, &rng);
    if (g_len) fuzz(g_bin, g_len, 300, &rng);
}

static void test_load(void **state) {
    (void)state;
    const void *data = NULL;
    size_t len = 0;
    void *owned = NULL;
    unsetenv("TANDEM_FATBIN");
    assert_int_equal(cli_env_apply(NULL, 0), TANDEM_OK);
    assert_int_equal(tandem_fatbin_load(&data, &len, &owned), TANDEM_OK);
    assert_null(owned);
    assert_int_equal(len, g_len); /* the archive embeds the build's fatbin */
    if (len) assert_memory_equal(data, g_bin, len);

    setenv("TANDEM_FATBIN", FATBIN_PATH, 1);
    assert_int_equal(cli_env_apply(NULL, 0), TANDEM_OK);
    assert_int_equal(tandem_fatbin_load(&data, &len, &owned), TANDEM_OK);
    assert_int_equal(len, g_len);
    if (len) assert_memory_equal(data, g_bin, len);
    tandem_free(owned);

    setenv("TANDEM_FATBIN", "/nonexistent/tandem.fatbin", 1);
    assert_int_equal(cli_env_apply(NULL, 0), TANDEM_OK);
    assert_int_not_equal(tandem_fatbin_load(&data, &len, &owned), TANDEM_OK);
    assert_non_null(strstr(tandem_last_error(), "/nonexistent/tandem.fatbin"));
    unsetenv("TANDEM_FATBIN");
    assert_int_equal(cli_env_apply(NULL, 0), TANDEM_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_architectures), cmocka_unit_test(test_real_entries_match_registry),
        cmocka_unit_test(test_real_runs_on),       cmocka_unit_test(test_runs_on_rules),
        cmocka_unit_test(test_handmade),           cmocka_unit_test(test_not_a_fatbin),
        cmocka_unit_test(test_truncations),        cmocka_unit_test(test_fuzz),
        cmocka_unit_test(test_load),               cmocka_unit_test(test_real_kernel_attrs),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
