/* fuzz_text_cache.c — the text cache reader (text_cache.h): the bytes of a cache file through
 * tandem_text_cache_check, and when it accepts them, attach + split + a walk over every record
 * (what tandem_text_index_open does on a cache hit).
 *
 * Each input is checked twice: as it is (the header's own key; magic, checksum and version
 * rejections), and re-sealed (checksums recomputed over the mutated bytes), because a mutation
 * almost never survives the checksums and the bounds checks behind them are what keeps a
 * reader safe on a file that was written wrong. Checks beyond "no crash, no leak": failures
 * are TANDEM_E_FORMAT with a message; an accepted file's records, tokens and strings are all
 * in bounds (ASan catches a read outside the buffer); the split partitions the utterances. */
#include <string.h>

#include "test/fuzz/fuzz_common.h"
#include "platform/os/os.h"
#include "runtime/data/text_cache.h"
#include "runtime/data/text_index.h"

#define MAX_INPUT (1u << 20)

static void walk(const tandem_text_index *ix) {
    volatile uint64_t sink = 0;
    for (uint32_t i = 0; i < ix->count; i++) {
        const tandem_utt *u = &ix->utts[i];
        sink += strlen(tandem_utt_id(ix, u)) + strlen(tandem_utt_audio(ix, u));
        const uint16_t *t = tandem_utt_tokens(ix, u);
        for (uint32_t k = 0; k < u->n_tok; k++) sink += t[k];
    }
    (void)sink;
}

static void check_split(const tandem_text_index *ix) {
    FUZZ_ASSERT(ix->n_train >= 1 && ix->n_train + ix->n_val <= ix->count);
    FUZZ_ASSERT(ix->n_train + ix->n_val + ix->audio_too_long + ix->audio_too_short + ix->audio_unreadable ==
                ix->count);
    for (uint32_t k = 0; k < ix->n_train; k++) FUZZ_ASSERT(ix->train[k] < ix->count);
    for (uint32_t k = 0; k < ix->n_val; k++) FUZZ_ASSERT(ix->val[k] < ix->count);
}

/* Check a private copy (attach takes ownership of a tandem_malloc'd blob). */
static void try_blob(const uint8_t *data, size_t size, int reseal) {
    if (size < sizeof(tandem_text_cache_header)) {
        fuzz_clear_error();
        tandem_status st = tandem_text_cache_check(data, size, 0);
        fuzz_check_status_in(st, "tandem_text_cache_check", TANDEM_E_FORMAT, -1);
        FUZZ_ASSERT(st != TANDEM_OK);
        return;
    }
    void *blob = tandem_malloc(size);
    if (!blob) return;
    memcpy(blob, data, size);
    tandem_text_cache_header h;
    memcpy(&h, blob, sizeof h);
    uint64_t key = h.key;
    if (reseal) tandem_text_cache_seal(blob, size, key);
    fuzz_clear_error();
    tandem_status st = tandem_text_cache_check(blob, size, key);
    fuzz_check_status_in(st, "tandem_text_cache_check", TANDEM_E_FORMAT, -1);
    if (st != TANDEM_OK) {
        tandem_free(blob);
        return;
    }
    /* split settings from header bits the checks do not constrain */
    tandem_text_index_config cfg;
    tandem_text_index_config_default(&cfg);
    cfg.data_dir = "fuzz";
    cfg.val_fraction = (h.lines & 3) * 0.3; /* 0, 0.3, 0.6, 0.9 */
    cfg.seed = h.key;
    cfg.check_audio = (h.lines >> 2) & 1;
    cfg.max_samples = ((h.lines >> 3) & 1) ? 22050 : 0;

    tandem_text_index ix;
    memset(&ix, 0, sizeof ix);
    tandem_text_index_attach(&ix, blob, size);
    FUZZ_ASSERT(ix.count == h.n_utts && ix.n_tokens == h.n_tokens && ix.strings_bytes == h.strings_bytes);
    walk(&ix);
    fuzz_clear_error();
    st = tandem_text_index_split(&cfg, &ix);
    fuzz_check_status_in(st, "tandem_text_index_split", TANDEM_E_INVALID, -1);
    if (st == TANDEM_OK) check_split(&ix);
    tandem_text_index_free(&ix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_init();
    if (size > MAX_INPUT) size = MAX_INPUT;
    try_blob(data, size, 0);
    try_blob(data, size, 1);
    return 0;
}
