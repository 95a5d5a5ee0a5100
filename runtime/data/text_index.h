/* text_index.h — the dataset index: metadata.csv parsed, validated and run through the text
 * frontend on worker threads (DESIGN.md §6).
 *
 * Layout: one contiguous blob that is byte-for-byte the text cache file (docs/FORMATS.md,
 * "text cache"): a 128-byte header, then an array of fixed-size records, one arena of token
 * ids and one arena of NUL-terminated strings (ids, audio paths). The index points into the
 * blob whether it was built in memory or read from the cache, so a cache hit costs one read
 * and a checksum. The blob is always heap memory the index owns, never a mapping of the cache
 * file: a file truncated or rewritten while the index is in use cannot fault it. Owns: the
 * blob and the train/val split arrays. */
#ifndef TANDEM_TEXT_INDEX_H
#define TANDEM_TEXT_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/mel.h"
#include "tandem.h"
#include "runtime/text/phonemes.h"
#include "runtime/text/text_norm.h"

/* Shortest usable audio: one hop, so that an utterance has at least one mel frame. */
#define TANDEM_INDEX_MIN_SAMPLES TANDEM_MEL_HOP
/* Skipped rows logged one by one per reason (and rows with unreadable audio); the rest are
 * summarised in one line with their counts. */
#define TANDEM_INDEX_WARN_ROWS 10
/* Largest metadata.csv read: the index's string and token offsets are 32-bit. */
#define TANDEM_INDEX_MAX_METADATA_BYTES ((uint64_t)4 << 30)

typedef enum tandem_text_column {
    TANDEM_TEXT_COLUMN_NORMALIZED = 0, /* third column (LJSpeech's normalized transcript) */
    TANDEM_TEXT_COLUMN_RAW = 1,        /* second column */
} tandem_text_column;

/* Why a metadata row was skipped. Order is part of the cache format (counts are stored). */
/* Where a dataset's transcripts and speakers come from (docs/FORMATS.md, "dataset layouts"). */
typedef enum tandem_data_layout {
    TANDEM_LAYOUT_AUTO = 0,     /* the generic header line `id|speaker|text` → generic, else LJSpeech */
    TANDEM_LAYOUT_LJSPEECH = 1, /* metadata.csv id|text[|normalized], one speaker */
    TANDEM_LAYOUT_GENERIC = 2,  /* metadata.csv id|speaker|text (header line optional) */
    TANDEM_LAYOUT_VCTK = 3,     /* txt/<spk>/<id>.txt + wav48.../<spk>/ (runtime/data/layout.h) */
    TANDEM_LAYOUT_LIBRITTS = 4, /* [<split>/]<spk>/<chapter>/<id>.normalized.txt + <id>.wav */
} tandem_data_layout;
#define TANDEM_LAYOUT_LAST TANDEM_LAYOUT_LIBRITTS

/* Most speakers in one dataset: speaker tokens follow the symbols in the uint16 token space. */
#define TANDEM_INDEX_MAX_SPEAKERS 4096
#define TANDEM_INDEX_MAX_SPEAKER_BYTES 64

typedef enum tandem_skip_reason {
    TANDEM_SKIP_COLUMNS = 0,    /* not 2 or 3 '|'-separated fields */
    TANDEM_SKIP_BAD_ID,         /* empty, '/', '\', "..", control characters, too long, bad UTF-8 */
    TANDEM_SKIP_DUPLICATE_ID,   /* id seen on an earlier line (the first one is kept) */
    TANDEM_SKIP_NO_AUDIO,       /* none of wavs/<id>.wav .flac .ogg exists */
    TANDEM_SKIP_EMPTY_TEXT,     /* nothing left after normalisation */
    TANDEM_SKIP_BAD_UTF8,       /* text column is not valid UTF-8 */
    TANDEM_SKIP_UNKNOWN_SYMBOL, /* a character the symbol table does not have */
    TANDEM_SKIP_TOO_LONG,       /* more than max_text tokens */
    TANDEM_SKIP_BAD_SPEAKER,    /* generic layout: empty, too long, control characters, bad UTF-8 */
    TANDEM_SKIP_NO_TEXT,        /* directory layouts: audio without a transcript file */
    TANDEM_SKIP_BAD_TEXT_FILE,  /* directory layouts: the transcript is not a regular file, too large
                                   or unreadable */
    TANDEM_SKIP_COUNT
} tandem_skip_reason;

/* Short description ("wrong column count", "bad id", ...). */
const char *tandem_skip_reason_name(tandem_skip_reason r);

/* One usable utterance (24 bytes; part of the cache format). */
typedef struct tandem_utt {
    uint32_t id;        /* offset of the id in strings */
    uint32_t audio;     /* offset of the audio path (relative to the data dir) in strings */
    uint32_t tok;       /* offset of the first token in tokens */
    uint16_t n_tok;     /* tokens, framing included: [<lang>, BOS, chars..., EOS], or with
                           speakers [<lang>, <spk>, BOS, chars..., EOS] where
                           <spk> = tandem_symbols_count() + speaker id */
    uint8_t lang;       /* tandem_lang */
    uint8_t reserved;   /* 0 */
    uint32_t line;      /* 1-based line in metadata.csv; directory layouts: 1-based position in
                           the sorted listing (runtime/data/layout.h) */
    uint32_t n_samples; /* audio length at 22050 Hz read from the file's header when the
                           index is built (check_audio); 0 = not scanned (check_audio off) or
                           the header could not be read */
} tandem_utt;

typedef struct tandem_text_index_config {
    const char *data_dir;      /* holds metadata.csv and wavs/ (required) */
    tandem_text_column column; /* default normalized (2-column rows always use column 2) */
    int max_text;              /* max tokens per utterance, framing included (default 128) */
    int num_workers;           /* frontend threads; <= 0 → CPU count */
    int check_audio;           /* 1 (default): require wavs/<id>.{wav,flac,ogg} */
    double val_fraction;       /* share of utterances held out (seeded); 0 = none */
    uint64_t seed;             /* for the val split */
    const char *const *val_ids; /* explicit val ids (overrides val_fraction) */
    size_t n_val_ids;
    int64_t max_samples;       /* > 0 (with check_audio): utterances longer than this, shorter
                                  than TANDEM_INDEX_MIN_SAMPLES or with an unreadable header are
                                  left out of train and val and counted (0 = no filter) */
    int use_cache;             /* 1 (default): read/write the persistent text cache */
    const char *cache_dir;     /* NULL → the runtime option cache_dir (tandem.h); none: in memory */
    tandem_data_layout layout; /* default AUTO */
    int vctk_mic;              /* VCTK 0.92: 1 (default) or 2, the <id>_mic<M> files read */
    tandem_text_input text_input; /* the tokens: characters (default) or espeak-ng phonemes */
} tandem_text_index_config;

void tandem_text_index_config_default(tandem_text_index_config *cfg);

typedef struct tandem_text_index {
    const tandem_utt *utts; /* [count] in metadata order */
    uint32_t count;
    const uint16_t *tokens; /* [n_tokens] */
    uint64_t n_tokens;
    const char *strings;
    uint64_t strings_bytes;
    uint32_t lines;                          /* non-empty data lines read */
    uint32_t skipped[TANDEM_SKIP_COUNT];
    uint32_t lang_count[TANDEM_LANG_COUNT];
    uint32_t max_tok;                        /* longest n_tok */
    /* speaker table: names in id order (sorted bytewise), NUL-terminated and consecutive at
     * the start of strings; 0 speakers = a single-speaker dataset (no <spk> token) */
    uint32_t n_speakers;
    uint32_t layout;                         /* tandem_data_layout as detected (never AUTO) */
    uint32_t *train, n_train;                /* indices into utts */
    uint32_t *val, n_val;
    /* left out of train/val by the duration filter (max_samples), counted at each split */
    uint32_t audio_too_long, audio_too_short, audio_unreadable;
    uint64_t key;                            /* cache key of this build */
    int cache_hit;                           /* 1: loaded from the cache file */
    char cache_path[1024];                   /* "" when the cache is off or unavailable */
    /* private */
    void *blob_;
    size_t blob_bytes_;
} tandem_text_index;

static inline const char *tandem_utt_id(const tandem_text_index *ix, const tandem_utt *u) {
    return ix->strings + u->id;
}
static inline const char *tandem_utt_audio(const tandem_text_index *ix, const tandem_utt *u) {
    return ix->strings + u->audio;
}
/* Speaker names in id order into names[0..n_speakers) (pointers into the index's strings). */
void tandem_text_index_speakers(const tandem_text_index *ix, const char **names);
/* 1 when a and b have the same speaker table (the same names in the same order). */
int tandem_text_index_same_speakers(const tandem_text_index *a, const tandem_text_index *b);
static inline const uint16_t *tandem_utt_tokens(const tandem_text_index *ix, const tandem_utt *u) {
    return ix->tokens + u->tok;
}

/* Build, or load from the persistent cache when valid (text_cache.c), and split. The rows come
 * from metadata.csv (LJSpeech, generic) or a directory layout's listing (VCTK, LibriTTS); AUTO
 * takes metadata.csv when it exists, else the directory layout tandem_layout_detect finds. Rows that
 * cannot be used are counted; the first TANDEM_INDEX_WARN_ROWS of each reason are logged as
 * "<path>:<line>: <reason>" (on a build), the rest in one summary line; fails only
 * when no utterance is left or on I/O errors. */
tandem_status tandem_text_index_open(const tandem_text_index_config *cfg, tandem_text_index *ix);
void tandem_text_index_free(tandem_text_index *ix);

/* ---- used by text_cache.c ---- */

/* Parse and normalise metadata bytes (meta_path names them in messages) into a new heap blob in
 * the cache layout; the header's key, counts and checksums are left for the caller to seal. */
tandem_status tandem_text_index_build_blob(const tandem_text_index_config *cfg, const char *meta_path,
                                           const char *meta, size_t meta_len, void **blob,
                                           size_t *blob_bytes);
/* The same from a directory layout's listing (runtime/data/layout.h); where names the dataset. */
struct tandem_layout_listing;
tandem_status tandem_text_index_build_blob_listing(const tandem_text_index_config *cfg, const char *where,
                                                   const struct tandem_layout_listing *l, void **blob,
                                                   size_t *blob_bytes);
/* Point ix at a validated heap blob; takes ownership (tandem_free on free). */
void tandem_text_index_attach(tandem_text_index *ix, void *blob, size_t blob_bytes);
/* Fill train/val from cfg (val_ids or seeded val_fraction). */
tandem_status tandem_text_index_split(const tandem_text_index_config *cfg, tandem_text_index *ix);

#endif
