/* fatbin.c — reads the container nvcc -fatbin writes, without the CUDA toolkit.
 *
 * Layout (little-endian), as nvcc 12-13 write it:
 *   container header (16 B): u32 magic 0xBA55ED50, u16 version 1, u16 header size,
 *                            u64 size of the image records that follow
 *   image record: header then payload
 *     +0  u16 kind (1 PTX, 2 ELF/SASS)      +2  u16 (0x0101)
 *     +4  u32 header size (64 ELF, 80 PTX)  +8  u64 payload size
 *     +16 u32 compressed size               +20 u32 (options offset)
 *     +24 u16 minor, u16 major (ELF ABI / PTX ISA version)
 *     +28 u32 arch (80 = sm_80 or compute_80)
 *     +32 u32 name offset, u32 name length  +40 u64 flags (0x2000 / 0x8000: compressed)
 *     +48 u64 (0)                           +56 u64 decompressed size
 * Several containers may follow one another (a linked .nv_fatbin section); zero padding after
 * the last one is accepted. For the first uncompressed SASS image the ELF64 section headers
 * and .symtab are walked to list the kernel entry points (global STT_FUNC symbols).
 * Every read is bounds-checked; malformed input is TANDEM_E_FORMAT naming the offset.
 */
#include "platform/cuda/fatbin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "platform/os/settings.h"

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_HEADER_MIN 16u
#define RECORD_HEADER_MIN 64u
#define FLAG_COMPRESSED (0x2000ull | 0x8000ull)

/* ELF64 constants (elf.h is not assumed: the parser is plain C over bytes). */
#define ELF_SHDR_SIZE 64u
#define ELF_SYM_SIZE 24u
#define SHT_SYMTAB 2u
#define STT_FUNC 2u
#define STB_GLOBAL 1u

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32); }

/* [off, off + n) lies inside [0, len): written so that nothing overflows. */
static int in_bounds(uint64_t off, uint64_t n, uint64_t len) { return n <= len && off <= len - n; }

/* Lists global function symbols of the ELF at elf[0, len); `base` is its offset in the fatbin
 * (for messages). */
static tandem_status parse_elf_entries(const unsigned char *elf, uint64_t len, size_t base,
                                       tandem_fatbin_summary *out) {
    if (len < 64 || memcmp(elf, "\x7f" "ELF", 4) != 0)
        return tandem_fail(TANDEM_E_FORMAT,
                           "fatbin: SASS image at offset %zu is not an ELF file (no ELF magic)", base);
    if (elf[4] != 2 || elf[5] != 1)
        return tandem_fail(TANDEM_E_FORMAT,
                           "fatbin: SASS ELF at offset %zu is not 64-bit little-endian (class %u, data %u)",
                           base, elf[4], elf[5]);
    uint64_t shoff = rd64(elf + 0x28);
    uint32_t shentsize = rd16(elf + 0x3a), shnum = rd16(elf + 0x3c);
    if (shentsize < ELF_SHDR_SIZE || !in_bounds(shoff, (uint64_t)shentsize * shnum, len))
        return tandem_fail(TANDEM_E_FORMAT,
                           "fatbin: SASS ELF at offset %zu: section headers (offset %llu, %u x %u B) "
                           "outside its %llu bytes",
                           base, (unsigned long long)shoff, shnum, shentsize, (unsigned long long)len);
    for (uint32_t i = 0; i < shnum; i++) {
        const unsigned char *sh = elf + shoff + (uint64_t)i * shentsize;
        if (rd32(sh + 4) != SHT_SYMTAB) continue;
        uint64_t sym_off = rd64(sh + 0x18), sym_size = rd64(sh + 0x20), sym_ent = rd64(sh + 0x38);
        uint32_t link = rd32(sh + 0x28);
        if (sym_ent < ELF_SYM_SIZE || !in_bounds(sym_off, sym_size, len) || link >= shnum)
            return tandem_fail(TANDEM_E_FORMAT,
                               "fatbin: SASS ELF at offset %zu: .symtab (section %u) out of bounds "
                               "or malformed (offset %llu, size %llu, entsize %llu, link %u)",
                               base, i, (unsigned long long)sym_off, (unsigned long long)sym_size,
                               (unsigned long long)sym_ent, link);
        const unsigned char *strsh = elf + shoff + (uint64_t)link * shentsize;
        uint64_t str_off = rd64(strsh + 0x18), str_size = rd64(strsh + 0x20);
        if (!in_bounds(str_off, str_size, len))
            return tandem_fail(TANDEM_E_FORMAT,
                               "fatbin: SASS ELF at offset %zu: string table (section %u) outside the ELF",
                               base, link);
        const char *strtab = (const char *)elf + str_off;
        for (uint64_t s = 0; s + sym_ent <= sym_size; s += sym_ent) {
            const unsigned char *sym = elf + sym_off + s;
            uint32_t name = rd32(sym);
            unsigned info = sym[4];
            uint16_t shndx = rd16(sym + 6);
            if ((info & 0xf) != STT_FUNC || (info >> 4) != STB_GLOBAL || shndx == 0) continue;
            size_t sym_at = base + (size_t)(sym_off + s);
            if (name >= str_size)
                return tandem_fail(TANDEM_E_FORMAT,
                                   "fatbin: symbol at offset %zu: name offset %u beyond the string "
                                   "table (%llu bytes)",
                                   sym_at, name, (unsigned long long)str_size);
            const char *nm = strtab + name;
            size_t n = strnlen(nm, (size_t)(str_size - name));
            if (n == str_size - name)
                return tandem_fail(TANDEM_E_FORMAT,
                                   "fatbin: symbol at offset %zu: name not NUL-terminated", sym_at);
            if (n == 0) continue;
            if (n >= TANDEM_FATBIN_NAME_MAX)
                return tandem_fail(TANDEM_E_FORMAT,
                                   "fatbin: symbol at offset %zu: name of %zu bytes, longer than %d",
                                   sym_at, n, TANDEM_FATBIN_NAME_MAX - 1);
            if (out->entry_count >= TANDEM_FATBIN_MAX_ENTRIES)
                return tandem_fail(TANDEM_E_FORMAT,
                                   "fatbin: SASS ELF at offset %zu defines more than %d entry points",
                                   base, TANDEM_FATBIN_MAX_ENTRIES);
            memcpy(out->entries[out->entry_count], nm, n + 1);
            out->entry_count++;
        }
        return TANDEM_OK; /* one symbol table per ELF */
    }
    return tandem_fail(TANDEM_E_FORMAT, "fatbin: SASS ELF at offset %zu has no .symtab", base);
}

/* Section header i of a checked ELF (parse_elf_entries ran on it), or NULL. */
static const unsigned char *elf_section(const unsigned char *elf, uint64_t len, uint32_t i) {
    uint64_t shoff = rd64(elf + 0x28);
    uint32_t shentsize = rd16(elf + 0x3a), shnum = rd16(elf + 0x3c);
    if (i >= shnum || shentsize < ELF_SHDR_SIZE || !in_bounds(shoff, (uint64_t)shentsize * shnum, len)) return NULL;
    return elf + shoff + (uint64_t)i * shentsize;
}

/* Name of section header sh ("" when out of bounds). */
static const char *elf_section_name(const unsigned char *elf, uint64_t len, const unsigned char *sh) {
    const unsigned char *strsh = elf_section(elf, len, rd16(elf + 0x3e));
    if (!strsh) return "";
    uint64_t str_off = rd64(strsh + 0x18), str_size = rd64(strsh + 0x20), name = rd32(sh);
    if (!in_bounds(str_off, str_size, len) || name >= str_size) return "";
    const char *nm = (const char *)elf + str_off + name;
    return strnlen(nm, (size_t)(str_size - name)) < str_size - name ? nm : "";
}

/* The first section whose name is prefix + suffix, or NULL. */
static const unsigned char *elf_find(const unsigned char *elf, uint64_t len, const char *prefix,
                                     const char *suffix) {
    uint32_t shnum = rd16(elf + 0x3c);
    size_t pl = strlen(prefix);
    for (uint32_t i = 0; i < shnum; i++) {
        const unsigned char *sh = elf_section(elf, len, i);
        if (!sh) return NULL;
        const char *nm = elf_section_name(elf, len, sh);
        if (strncmp(nm, prefix, pl) == 0 && strcmp(nm + pl, suffix) == 0) return sh;
    }
    return NULL;
}

/* "Cuda compilation tools, release 13.0, V13.0.88" in .note.nv.tkinfo -> 13000; 0 if absent. */
static int elf_toolkit(const unsigned char *elf, uint64_t len) {
    const unsigned char *sh = elf_find(elf, len, ".note.nv.tkinfo", "");
    if (!sh) return 0;
    uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20);
    if (!in_bounds(off, size, len)) return 0;
    static const char key[] = "compilation tools, release ";
    const size_t kl = sizeof key - 1;
    for (uint64_t i = 0; i + kl + 4 <= size; i++) {
        const char *p = (const char *)elf + off + i;
        if (memcmp(p, key, kl) != 0) continue;
        int major = 0, minor = 0, n = 0;
        const char *v = p + kl, *end = (const char *)elf + off + size;
        while (v < end && *v >= '0' && *v <= '9' && n < 3) major = major * 10 + (*v++ - '0'), n++;
        if (n == 0 || v >= end || *v++ != '.') return 0;
        for (n = 0; v < end && *v >= '0' && *v <= '9' && n < 2; n++) minor = minor * 10 + (*v++ - '0');
        return n ? major * 1000 + minor * 10 : 0;
    }
    return 0;
}

/* One container at d[off, len); *next receives the offset after it. */
static tandem_status parse_container(const unsigned char *d, size_t len, size_t off, size_t *next,
                                     int *elf_done, tandem_fatbin_summary *out) {
    if (!in_bounds(off, FATBIN_HEADER_MIN, len))
        return tandem_fail(TANDEM_E_FORMAT,
                           "fatbin: %zu bytes at offset %zu, shorter than the 16-byte container header",
                           len - off, off);
    uint32_t magic = rd32(d + off);
    if (magic != FATBIN_MAGIC)
        return tandem_fail(TANDEM_E_FORMAT,
                           "fatbin: bad magic 0x%08x at offset %zu (expected 0x%08x: not a fatbin "
                           "written by nvcc -fatbin)",
                           magic, off, FATBIN_MAGIC);
    uint16_t version = rd16(d + off + 4), hsize = rd16(d + off + 6);
    uint64_t body = rd64(d + off + 8);
    if (version != 1)
        return tandem_fail(TANDEM_E_FORMAT, "fatbin: container version %u at offset %zu (expected 1)",
                           version, off + 4);
    if (hsize < FATBIN_HEADER_MIN || !in_bounds(off, hsize, len))
        return tandem_fail(TANDEM_E_FORMAT,
                           "fatbin: container header size %u at offset %zu (expected >= 16 and "
                           "within the %zu bytes)",
                           hsize, off + 6, len);
    size_t start = off + hsize;
    if (!in_bounds(start, body, len))
        return tandem_fail(TANDEM_E_FORMAT,
                           "fatbin: truncated: container at offset %zu declares %llu bytes of images, "
                           "only %zu present",
                           off, (unsigned long long)body, len - start);
    size_t end = start + (size_t)body, r = start;
    while (r < end) {
        if (!in_bounds(r, RECORD_HEADER_MIN, end))
            return tandem_fail(TANDEM_E_FORMAT,
                               "fatbin: image header at offset %zu cut short (%zu bytes left in the "
                               "container, header needs %u)",
                               r, end - r, RECORD_HEADER_MIN);
        const unsigned char *h = d + r;
        uint16_t kind = rd16(h);
        uint32_t rh = rd32(h + 4);
        uint64_t psize = rd64(h + 8);
        uint32_t arch = rd32(h + 28);
        uint64_t flags = rd64(h + 40);
        if (rh < RECORD_HEADER_MIN || !in_bounds(r, rh, end))
            return tandem_fail(TANDEM_E_FORMAT,
                               "fatbin: image header at offset %zu: header size %u (expected >= %u "
                               "and inside the container)",
                               r, rh, RECORD_HEADER_MIN);
        size_t payload = r + rh;
        if (!in_bounds(payload, psize, end))
            return tandem_fail(TANDEM_E_FORMAT,
                               "fatbin: image at offset %zu: payload of %llu bytes overruns the "
                               "container (ends at %zu)",
                               r, (unsigned long long)psize, end);
        if (kind == TANDEM_FATBIN_PTX || kind == TANDEM_FATBIN_SASS) {
            if (arch == 0 || arch > 10000)
                return tandem_fail(TANDEM_E_FORMAT,
                                   "fatbin: image at offset %zu: architecture %u (expected e.g. 80)",
                                   r, arch);
            if (out->image_count >= TANDEM_FATBIN_MAX_IMAGES)
                return tandem_fail(TANDEM_E_FORMAT,
                                   "fatbin: more than %d images (at offset %zu)",
                                   TANDEM_FATBIN_MAX_IMAGES, r);
            tandem_fatbin_image *im = &out->images[out->image_count++];
            im->kind = (tandem_fatbin_kind)kind;
            im->arch = (int)arch;
            im->offset = payload;
            im->size = (size_t)psize;
            im->compressed = (flags & FLAG_COMPRESSED) != 0;
            im->version_minor = rd16(h + 24);
            im->version_major = rd16(h + 26);
            if (kind == TANDEM_FATBIN_SASS && !im->compressed && !*elf_done) {
                TANDEM_TRY(parse_elf_entries(d + payload, psize, payload, out));
                out->toolkit_version = elf_toolkit(d + payload, psize);
                *elf_done = 1;
            }
        }
        /* other kinds (e.g. LTO IR) are skipped: the runtime cannot load them */
        r = payload + (size_t)psize;
    }
    *next = end;
    return TANDEM_OK;
}

tandem_status tandem_fatbin_parse(const void *data, size_t len, tandem_fatbin_summary *out) {
    memset(out, 0, sizeof *out);
    if (len == 0) return TANDEM_OK;
    if (!data) return tandem_fail(TANDEM_E_INVALID, "fatbin: NULL data with length %zu", len);
    const unsigned char *d = data;
    size_t off = 0;
    int elf_done = 0;
    tandem_status st = TANDEM_OK;
    while (off < len) {
        st = parse_container(d, len, off, &off, &elf_done, out);
        if (st != TANDEM_OK) break;
        /* zero padding after the last container (section alignment) ends the fatbin */
        size_t z = off;
        while (z < len && d[z] == 0) z++;
        if (z == len) break;
    }
    if (st != TANDEM_OK) memset(out, 0, sizeof *out);
    return st;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* Sorted distinct architectures of one kind. */
static int archs_of(const tandem_fatbin_summary *s, tandem_fatbin_kind kind, int *arch) {
    int n = 0;
    for (int i = 0; i < s->image_count; i++) {
        if (s->images[i].kind != kind) continue;
        int dup = 0;
        for (int j = 0; j < n; j++) dup |= arch[j] == s->images[i].arch;
        if (!dup) arch[n++] = s->images[i].arch;
    }
    qsort(arch, (size_t)n, sizeof *arch, cmp_int);
    return n;
}

void tandem_fatbin_arch_string(const tandem_fatbin_summary *s, char *buf, size_t cap) {
    if (cap == 0) return;
    buf[0] = '\0';
    size_t used = 0;
    int arch[TANDEM_FATBIN_MAX_IMAGES];
    static const struct { tandem_fatbin_kind kind; const char *prefix; } kinds[] = {
        {TANDEM_FATBIN_SASS, "sm_"}, {TANDEM_FATBIN_PTX, "compute_"}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        int n = archs_of(s, kinds[k].kind, arch);
        for (int i = 0; i < n && used < cap; i++) {
            int w = snprintf(buf + used, cap - used, "%s%s%d", used ? " " : "", kinds[k].prefix, arch[i]);
            if (w < 0) break;
            used += (size_t)w;
        }
    }
    if (used == 0) snprintf(buf, cap, "none");
}

int tandem_fatbin_runs_on(const tandem_fatbin_summary *s, int cc_major, int cc_minor) {
    int cc = cc_major * 10 + cc_minor;
    for (int i = 0; i < s->image_count; i++) {
        const tandem_fatbin_image *im = &s->images[i];
        /* SASS is binary-compatible within a major version, upward in minor; PTX JITs
         * on any device of the same or a later compute capability. */
        if (im->kind == TANDEM_FATBIN_SASS && im->arch / 10 == cc_major && im->arch % 10 <= cc_minor)
            return 1;
        if (im->kind == TANDEM_FATBIN_PTX && im->arch <= cc) return 1;
    }
    return 0;
}

int tandem_fatbin_ptx_isa_cuda(int major, int minor) {
    if (major == 7) return 11000 + minor * 10;
    if (major == 8) return 12000 + (minor <= 5 ? minor : minor + 1) * 10; /* no ISA came with 12.6 */
    if (major == 9) return 13000 + minor * 10;
    return 0;
}

int tandem_fatbin_driver_floor(const tandem_fatbin_summary *s) {
    int floor = s->toolkit_version / 1000 * 1000;
    for (int i = 0; i < s->image_count; i++) {
        const tandem_fatbin_image *im = &s->images[i];
        if (im->kind != TANDEM_FATBIN_PTX) continue;
        int v = tandem_fatbin_ptx_isa_cuda(im->version_major, im->version_minor);
        if (v > floor) floor = v;
    }
    return floor;
}

const tandem_fatbin_image *tandem_fatbin_sass_for(const tandem_fatbin_summary *s, int cc_major, int cc_minor) {
    const tandem_fatbin_image *best = NULL;
    for (int i = 0; i < s->image_count; i++) {
        const tandem_fatbin_image *im = &s->images[i];
        if (im->kind == TANDEM_FATBIN_SASS && !im->compressed && im->arch / 10 == cc_major &&
            im->arch % 10 <= cc_minor && (!best || im->arch > best->arch))
            best = im;
    }
    return best;
}

#define EIFMT_NVAL 1
#define EIFMT_BVAL 2
#define EIFMT_HVAL 3
#define EIFMT_SVAL 4
#define EIATTR_MAX_THREADS 0x05
#define EIATTR_REGCOUNT 0x2f

/* Index in .symtab of the symbol called name, or -1. */
static int64_t elf_symbol_index(const unsigned char *elf, uint64_t len, const char *name) {
    const unsigned char *sh = elf_find(elf, len, ".symtab", "");
    if (!sh) return -1;
    const unsigned char *strsh = elf_section(elf, len, rd32(sh + 0x28));
    uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20), ent = rd64(sh + 0x38);
    if (!strsh || ent < ELF_SYM_SIZE || !in_bounds(off, size, len)) return -1;
    uint64_t str_off = rd64(strsh + 0x18), str_size = rd64(strsh + 0x20);
    if (!in_bounds(str_off, str_size, len)) return -1;
    size_t nl = strlen(name);
    for (uint64_t s = 0; s + ent <= size; s += ent) {
        uint32_t nm = rd32(elf + off + s);
        if (nm < str_size && str_size - nm > nl && memcmp(elf + str_off + nm, name, nl + 1) == 0)
            return (int64_t)(s / ent);
    }
    return -1;
}

/* EIATTR_REGCOUNT {symbol, registers} of the cubin-wide .nv.info for symbol sym, 0 if absent. */
static int info_regcount(const unsigned char *elf, uint64_t len, int64_t sym) {
    const unsigned char *sh = elf_find(elf, len, ".nv.info", "");
    if (!sh || sym < 0) return 0;
    uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20);
    if (!in_bounds(off, size, len)) return 0;
    const unsigned char *p = elf + off;
    for (uint64_t i = 0; i + 4 <= size;) {
        if (p[i] != EIFMT_SVAL) {
            i += 4;
            continue;
        }
        uint32_t n = rd16(p + i + 2);
        if (!in_bounds(i + 4, n, size)) return 0;
        if (p[i + 1] == EIATTR_REGCOUNT && n >= 8 && rd32(p + i + 4) == (uint64_t)sym) return (int)rd32(p + i + 8);
        i += 4 + n;
    }
    return 0;
}

/* EIATTR_MAX_THREADS (x, y, z) of a .nv.info.<name> section: the product, 0 if absent.
 * Entries: u8 format, u8 attribute, then u16 (NVAL: padding, BVAL/HVAL: the value) or, for
 * SVAL, a u16 size and that many bytes. */
static unsigned info_max_threads(const unsigned char *p, uint64_t size) {
    for (uint64_t i = 0; i + 2 <= size;) {
        unsigned fmt = p[i], attr = p[i + 1];
        if (fmt == EIFMT_NVAL || fmt == EIFMT_BVAL || fmt == EIFMT_HVAL) {
            i += 4; /* format, attribute, 16 bits (a value, or zero padding for NVAL) */
        } else if (fmt == EIFMT_SVAL && i + 4 <= size) {
            uint32_t n = rd16(p + i + 2);
            if (!in_bounds(i + 4, n, size)) return 0;
            if (attr == EIATTR_MAX_THREADS && n >= 12)
                return rd32(p + i + 4) * rd32(p + i + 8) * rd32(p + i + 12);
            i += 4 + n;
        } else {
            return 0;
        }
    }
    return 0;
}

tandem_status tandem_fatbin_kernel_attrs_of(const void *data, size_t len, const tandem_fatbin_image *img,
                                            const char *name, tandem_fatbin_kernel_attrs *out) {
    memset(out, 0, sizeof *out);
    if (!img || img->kind != TANDEM_FATBIN_SASS || img->compressed || !in_bounds(img->offset, img->size, len))
        return tandem_fail(TANDEM_E_INVALID, "fatbin: kernel %s: not an uncompressed SASS image", name);
    const unsigned char *elf = (const unsigned char *)data + img->offset;
    uint64_t n = img->size;
    if (n < 64 || memcmp(elf, "\x7f" "ELF", 4) != 0)
        return tandem_fail(TANDEM_E_FORMAT, "fatbin: SASS image at offset %zu is not an ELF file", img->offset);
    const unsigned char *text = elf_find(elf, n, ".text.", name);
    if (!text)
        return tandem_fail(TANDEM_E_INVALID, "fatbin: the sm_%d image has no code for kernel %s", img->arch,
                           name);
    /* EIATTR_REGCOUNT; older cubins (and sm_8x here) also keep it in .text.<name>'s sh_info */
    out->registers = info_regcount(elf, n, elf_symbol_index(elf, n, name));
    if (!out->registers) out->registers = (int)(rd32(text + 0x2c) >> 24);
    const unsigned char *shared = elf_find(elf, n, ".nv.shared.", name);
    if (shared) out->static_shared = (unsigned)rd64(shared + 0x20);
    const unsigned char *info = elf_find(elf, n, ".nv.info.", name);
    if (info) {
        uint64_t off = rd64(info + 0x18), size = rd64(info + 0x20);
        if (!in_bounds(off, size, n))
            return tandem_fail(TANDEM_E_FORMAT, "fatbin: sm_%d .nv.info.%s outside its ELF", img->arch, name);
        out->max_threads = info_max_threads(elf + off, size);
    }
    return TANDEM_OK;
}

tandem_status tandem_fatbin_load(const void **data, size_t *len, void **owned) {
    *owned = NULL;
    char opt[TANDEM_RUNTIME_PATH_MAX];
    const char *path = tandem_settings_path(TANDEM_SETTING_FATBIN, opt);
    if (path[0]) {
        char *buf = NULL;
        size_t n = 0;
        tandem_status st = tandem_file_read_all(path, &buf, &n);
        if (st != TANDEM_OK) {
            char why[256]; /* the message is rewritten below: copy it first */
            snprintf(why, sizeof why, "%s", tandem_last_error());
            return tandem_fail(st, "fatbin %s (runtime option fatbin; TANDEM_FATBIN in the CLI): %s",
                               path, why);
        }
        *data = buf;
        *len = n;
        *owned = buf;
        return TANDEM_OK;
    }
    *data = tandem_fatbin_embedded;
    *len = (size_t)tandem_fatbin_embedded_size;
    return TANDEM_OK;
}
