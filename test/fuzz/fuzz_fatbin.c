/* fuzz_fatbin.c — the fatbin parser (platform/cuda/fatbin.h) on arbitrary bytes: container header,
 * image headers and the ELF symbol tables of the SASS images.
 *
 * Checks beyond "no crash, no leak": a failure is TANDEM_E_FORMAT with a message; a parsed
 * summary stays within its fixed arrays, every image payload lies inside the input, every
 * entry name is a non-empty NUL-terminated string; the arch string is NUL-terminated at any
 * buffer size. */
#include <string.h>

#include "platform/cuda/fatbin.h"
#include "test/fuzz/fuzz_common.h"

static void check_summary(const tandem_fatbin_summary *s, size_t len) {
    FUZZ_ASSERT(s->image_count >= 0 && s->image_count <= TANDEM_FATBIN_MAX_IMAGES);
    FUZZ_ASSERT(s->entry_count >= 0 && s->entry_count <= TANDEM_FATBIN_MAX_ENTRIES);
    for (int i = 0; i < s->image_count; i++) {
        const tandem_fatbin_image *im = &s->images[i];
        FUZZ_ASSERT(im->kind == TANDEM_FATBIN_PTX || im->kind == TANDEM_FATBIN_SASS);
        FUZZ_ASSERT(im->offset <= len && im->size <= len - im->offset);
    }
    for (int e = 0; e < s->entry_count; e++) {
        size_t n = strnlen(s->entries[e], TANDEM_FATBIN_NAME_MAX);
        FUZZ_ASSERT(n > 0 && n < TANDEM_FATBIN_NAME_MAX);
    }
    if (s->entry_count > 0) {
        int sass = 0;
        for (int i = 0; i < s->image_count; i++) sass |= s->images[i].kind == TANDEM_FATBIN_SASS;
        FUZZ_ASSERT(sass); /* entries come from a SASS image */
    }
    static const size_t caps[] = {1, 2, 7, 13, 64, 1024};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        char buf[1024 + 8];
        memset(buf, 'x', sizeof buf);
        tandem_fatbin_arch_string(s, buf, caps[c]);
        FUZZ_ASSERT(memchr(buf, 0, caps[c]) != NULL);
        FUZZ_ASSERT(buf[caps[c]] == 'x'); /* nothing written past cap */
    }
    static const int ccs[][2] = {{7, 5}, {8, 0}, {8, 6}, {8, 9}, {9, 0}, {10, 0}, {12, 0}};
    for (size_t c = 0; c < sizeof ccs / sizeof ccs[0]; c++) {
        int r = tandem_fatbin_runs_on(s, ccs[c][0], ccs[c][1]);
        FUZZ_ASSERT(r == 0 || r == 1);
        if (s->image_count == 0) FUZZ_ASSERT(r == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static tandem_fatbin_summary summary; /* 25 KB: not on the fuzzer's stack */
    fuzz_init();
    memset(&summary, 0xA5, sizeof summary); /* garbage in, so a field left unset shows */
    fuzz_clear_error();
    tandem_status st = tandem_fatbin_parse(data, size, &summary);
    fuzz_check_status_in(st, "tandem_fatbin_parse", TANDEM_E_FORMAT, -1);
    if (st == TANDEM_OK) {
        check_summary(&summary, size);
        if (size == 0) FUZZ_ASSERT(summary.image_count == 0);
    }
    return 0;
}
