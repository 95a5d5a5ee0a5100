/* fuzz_text.c — the text frontend on arbitrary bytes: strict UTF-8 (utf8.h), the normaliser
 * (text_norm.h) and the symbol table (symbols.h).
 *
 * Checks beyond "no crash, no leak": validate and decode agree on where the first invalid
 * sequence is, and encode inverts decode; the normaliser fails exactly on invalid UTF-8, at
 * the same offset, and otherwise yields valid code points with whitespace collapsed and
 * trimmed (docs/FORMATS.md, cleanup); the symbol encoder either frames and round-trips every
 * character or names one the table lacks; the UTF-8 convenience entry agrees with the code
 * point output. */
#include <string.h>

#include "test/fuzz/fuzz_common.h"
#include "platform/os/os.h"
#include "runtime/text/symbols.h"
#include "runtime/text/text_norm.h"
#include "runtime/core/utf8.h"

/* Inputs longer than this are cut: the frontend is linear, long inputs only slow the fuzzer. */
#define MAX_INPUT 8192

static void check_utf8(const uint8_t *s, size_t n, int *valid, size_t *bad) {
    size_t vbad = (size_t)-1;
    int vok = tandem_utf8_validate((const char *)s, n, &vbad);
    size_t pos = 0;
    while (pos < n) {
        uint32_t cp = 0;
        int k = tandem_utf8_decode(s + pos, n - pos, &cp);
        if (k == 0) break;
        FUZZ_ASSERT(k >= 1 && k <= 4 && (size_t)k <= n - pos);
        FUZZ_ASSERT(cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF));
        char enc[4];
        int m = tandem_utf8_encode(cp, enc);
        FUZZ_ASSERT(m == k && memcmp(enc, s + pos, (size_t)k) == 0); /* shortest form only */
        pos += (size_t)k;
    }
    FUZZ_ASSERT(vok == (pos == n));
    if (!vok) FUZZ_ASSERT(vbad == pos);
    *valid = vok;
    *bad = pos;
}

static void check_symbols(const tandem_text_norm *norm) {
    size_t cap = norm->out_len + TANDEM_SYMBOLS_FRAMING;
    uint16_t *ids = tandem_malloc(cap * sizeof *ids);
    if (!ids) return;
    size_t count = 0, bad = (size_t)-1;
    fuzz_clear_error();
    tandem_status st = tandem_symbols_encode(norm->out, norm->out_len, norm->lang, ids, cap, &count, &bad);
    fuzz_check_status_in(st, "tandem_symbols_encode", TANDEM_E_INVALID, -1);
    if (st == TANDEM_OK) {
        FUZZ_ASSERT(count == cap);
        FUZZ_ASSERT(ids[0] == tandem_symbols_lang_id(norm->lang));
        FUZZ_ASSERT(ids[1] == TANDEM_SYM_BOS && ids[count - 1] == TANDEM_SYM_EOS);
        for (size_t i = 0; i < norm->out_len; i++) {
            FUZZ_ASSERT(ids[i + 2] >= TANDEM_SYM_FIRST_CHAR && ids[i + 2] < tandem_symbols_count());
            FUZZ_ASSERT(tandem_symbols_cp(ids[i + 2]) == norm->out[i]);
        }
    } else if (st == TANDEM_E_INVALID) {
        FUZZ_ASSERT(bad < norm->out_len);
        FUZZ_ASSERT(tandem_symbols_id(norm->out[bad]) < 0);
        for (size_t i = 0; i < bad; i++) FUZZ_ASSERT(tandem_symbols_id(norm->out[i]) >= 0);
    }
    tandem_free(ids);
}

/* The cps as UTF-8 (NUL-terminated, tandem_free it), for comparing with the string entry. */
static char *cps_to_utf8(const uint32_t *cps, size_t n) {
    char *s = tandem_malloc(n * 4 + 1);
    if (!s) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int k = tandem_utf8_encode(cps[i], s + o);
        FUZZ_ASSERT(k > 0);
        o += (size_t)k;
    }
    s[o] = 0;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_init();
    if (size > MAX_INPUT) size = MAX_INPUT;
    int valid;
    size_t bad_at;
    check_utf8(data, size, &valid, &bad_at);

    tandem_text_norm norm;
    tandem_text_norm_init(&norm);
    fuzz_clear_error();
    tandem_status st = tandem_text_normalize(&norm, (const char *)data, size);
    fuzz_check_status_in(st, "tandem_text_normalize", TANDEM_E_INVALID, -1);
    if (!valid) {
        FUZZ_ASSERT(st == TANDEM_E_INVALID || st == TANDEM_E_NOMEM);
        if (st == TANDEM_E_INVALID) FUZZ_ASSERT(norm.bad_offset == bad_at);
    } else {
        FUZZ_ASSERT(st == TANDEM_OK || st == TANDEM_E_NOMEM);
    }
    char *ref = NULL;
    if (st == TANDEM_OK) {
        FUZZ_ASSERT(norm.lang == TANDEM_LANG_EN || norm.lang == TANDEM_LANG_FA);
        FUZZ_ASSERT(norm.out_len == 0 || norm.out != NULL);
        for (size_t i = 0; i < norm.out_len; i++) {
            uint32_t c = norm.out[i];
            FUZZ_ASSERT(c != 0 && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF));
            if (c == ' ') FUZZ_ASSERT(i > 0 && i + 1 < norm.out_len && norm.out[i + 1] != ' ');
        }
        check_symbols(&norm);
        ref = cps_to_utf8(norm.out, norm.out_len);
    }

    char *out = NULL;
    tandem_lang lang = TANDEM_LANG_COUNT;
    fuzz_clear_error();
    tandem_status st2 = tandem_text_normalize_utf8((const char *)data, size, &out, &lang);
    fuzz_check_status_in(st2, "tandem_text_normalize_utf8", TANDEM_E_INVALID, -1);
    if (st == TANDEM_OK && st2 == TANDEM_OK) {
        FUZZ_ASSERT(lang == norm.lang);
        if (ref) FUZZ_ASSERT(strcmp(out, ref) == 0);
    } else if (st2 == TANDEM_OK) {
        FUZZ_ASSERT(st == TANDEM_E_NOMEM);
    }
    if (st2 == TANDEM_OK) {
        size_t vb;
        FUZZ_ASSERT(out != NULL && tandem_utf8_validate(out, strlen(out), &vb));
    }
    tandem_free(out);
    tandem_free(ref);
    tandem_text_norm_free(&norm);
    return 0;
}
