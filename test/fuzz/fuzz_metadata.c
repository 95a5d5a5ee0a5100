/* fuzz_metadata.c — metadata.csv bytes through the dataset index (text_index.h), in memory:
 * tandem_text_index_build_blob (rows, ids, duplicates, the frontend on worker threads), then
 * what tandem_text_index_open does with a fresh build: seal, check as a cache would be
 * checked, attach, split. No audio check (no dataset directory exists).
 *
 * Settings vary with the input's length (column, max_text, val_fraction), so the corpus stays
 * plain metadata.csv files. Checks beyond "no crash, no leak": a build fails only with
 * TANDEM_E_INVALID (no usable row) and a message naming the file; a built blob passes the
 * cache reader's checks; every row is used or counted as skipped; every utterance is framed
 * [<lang>, BOS, chars..., EOS] within max_text, with a unique, well-formed id and the audio
 * path wavs/<id>.wav; train and val partition the utterances. */
#include <string.h>

#include "test/fuzz/fuzz_common.h"
#include "platform/os/os.h"
#include "runtime/text/symbols.h"
#include "runtime/data/text_cache.h"
#include "runtime/data/text_index.h"

#define META_PATH "fuzz/metadata.csv"
#define MAX_INPUT 16384
#define MAX_PAIRWISE 400 /* utterances up to which ids are compared pairwise */

static void check_index(const tandem_text_index_config *cfg, const tandem_text_index *ix) {
    FUZZ_ASSERT(ix->count >= 1);
    uint64_t skipped = 0;
    for (int k = 0; k < TANDEM_SKIP_COUNT; k++) skipped += ix->skipped[k];
    FUZZ_ASSERT(skipped + ix->count == ix->lines);
    FUZZ_ASSERT(ix->skipped[TANDEM_SKIP_NO_AUDIO] == 0); /* check_audio is off */
    uint32_t langs = 0, max_tok = 0;
    for (int l = 0; l < TANDEM_LANG_COUNT; l++) langs += ix->lang_count[l];
    FUZZ_ASSERT(langs == ix->count);
    uint64_t tok_end = 0;
    for (uint32_t i = 0; i < ix->count; i++) {
        const tandem_utt *u = &ix->utts[i];
        FUZZ_ASSERT(u->lang < TANDEM_LANG_COUNT && u->reserved == 0 && u->n_samples == 0);
        FUZZ_ASSERT(u->n_tok >= TANDEM_SYMBOLS_FRAMING + 1 && u->n_tok <= cfg->max_text);
        FUZZ_ASSERT(u->tok == tok_end); /* tokens back to back, in metadata order */
        tok_end += u->n_tok;
        FUZZ_ASSERT(tok_end <= ix->n_tokens);
        if (u->n_tok > max_tok) max_tok = u->n_tok;
        const uint16_t *t = tandem_utt_tokens(ix, u);
        FUZZ_ASSERT(t[0] == tandem_symbols_lang_id((tandem_lang)u->lang));
        FUZZ_ASSERT(t[1] == TANDEM_SYM_BOS && t[u->n_tok - 1] == TANDEM_SYM_EOS);
        for (uint32_t k = 2; k + 1 < u->n_tok; k++)
            FUZZ_ASSERT(t[k] >= TANDEM_SYM_FIRST_CHAR && t[k] < tandem_symbols_count());
        FUZZ_ASSERT(u->id < ix->strings_bytes && u->audio < ix->strings_bytes);
        const char *id = tandem_utt_id(ix, u), *audio = tandem_utt_audio(ix, u);
        size_t n = strnlen(id, ix->strings_bytes - u->id);
        FUZZ_ASSERT(n > 0 && n <= 200 && n < ix->strings_bytes - u->id);
        FUZZ_ASSERT(!strchr(id, '|') && !strchr(id, '/') && !strchr(id, '\\') && !strstr(id, ".."));
        for (size_t k = 0; k < n; k++) FUZZ_ASSERT((unsigned char)id[k] >= 0x20 && id[k] != 0x7f);
        FUZZ_ASSERT(strnlen(audio, ix->strings_bytes - u->audio) < ix->strings_bytes - u->audio);
        FUZZ_ASSERT(strncmp(audio, "wavs/", 5) == 0 && strncmp(audio + 5, id, n) == 0 &&
                    strcmp(audio + 5 + n, ".wav") == 0);
        FUZZ_ASSERT(u->line >= 1 && (i == 0 || u->line > ix->utts[i - 1].line));
        if (ix->count <= MAX_PAIRWISE)
            for (uint32_t j = 0; j < i; j++) FUZZ_ASSERT(strcmp(tandem_utt_id(ix, &ix->utts[j]), id) != 0);
    }
    FUZZ_ASSERT(tok_end == ix->n_tokens && max_tok == ix->max_tok);

    FUZZ_ASSERT(ix->n_train >= 1 && ix->n_train + ix->n_val == ix->count);
    uint8_t *seen = tandem_calloc(ix->count, 1);
    if (!seen) return;
    for (uint32_t k = 0; k < ix->n_train; k++) {
        FUZZ_ASSERT(ix->train[k] < ix->count && !seen[ix->train[k]]);
        seen[ix->train[k]] = 1;
    }
    for (uint32_t k = 0; k < ix->n_val; k++) {
        FUZZ_ASSERT(ix->val[k] < ix->count && !seen[ix->val[k]]);
        seen[ix->val[k]] = 1;
    }
    tandem_free(seen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const int max_texts[4] = {128, 4, 24, 65535};
    static const double fractions[4] = {0.0, 0.1, 0.5, 0.95};
    fuzz_init();
    if (size > MAX_INPUT) size = MAX_INPUT;
    tandem_text_index_config cfg;
    tandem_text_index_config_default(&cfg);
    cfg.data_dir = "fuzz";
    cfg.check_audio = 0;
    cfg.use_cache = 0;
    cfg.num_workers = 2; /* a second thread only starts past 128 rows */
    cfg.column = (size & 1) ? TANDEM_TEXT_COLUMN_RAW : TANDEM_TEXT_COLUMN_NORMALIZED;
    cfg.max_text = max_texts[(size >> 1) & 3];
    cfg.val_fraction = fractions[(size >> 3) & 3];
    cfg.seed = size;

    void *blob = NULL;
    size_t bytes = 0;
    fuzz_clear_error();
    tandem_status st = tandem_text_index_build_blob(&cfg, META_PATH, (const char *)data, size, &blob, &bytes);
    fuzz_check_status_in(st, "tandem_text_index_build_blob", TANDEM_E_INVALID, -1);
    if (st != TANDEM_OK) {
        FUZZ_ASSERT(blob == NULL);
        if (st == TANDEM_E_INVALID) FUZZ_ASSERT(strstr(tandem_last_error(), META_PATH) != NULL);
        return 0;
    }
    FUZZ_ASSERT(blob != NULL && bytes >= sizeof(tandem_text_cache_header));

    uint64_t key = tandem_hash64(data, size, 0x6d657461ull);
    tandem_text_cache_seal(blob, bytes, key);
    fuzz_clear_error();
    st = tandem_text_cache_check(blob, bytes, key);
    if (st != TANDEM_OK) fuzz_fail("a freshly built index fails the cache check: %s", tandem_last_error());

    tandem_text_index ix;
    memset(&ix, 0, sizeof ix);
    tandem_text_index_attach(&ix, blob, bytes);
    fuzz_clear_error();
    st = tandem_text_index_split(&cfg, &ix);
    fuzz_check_status_in(st, "tandem_text_index_split", -1); /* val_fraction < 1 always leaves a train row */
    if (st == TANDEM_OK) check_index(&cfg, &ix);
    tandem_text_index_free(&ix);
    return 0;
}
