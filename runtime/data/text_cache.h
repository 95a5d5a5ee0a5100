/* text_cache.h — the persistent text cache (format in docs/FORMATS.md, "text cache").
 *
 * One file per dataset directory in the cache directory (the runtime option cache_dir, which
 * the CLI sets to $TANDEM_CACHE_DIR, else $XDG_CACHE_HOME/tandem, else ~/.cache/tandem — never
 * inside the dataset; none set: no persistent cache, the frontend runs in memory). Its header holds a
 * key (hash of the metadata bytes, frontend/symbol/format versions and the index settings)
 * and checksums; a file whose size, magic, versions, key or checksums do not match is rebuilt,
 * never trusted. Written atomically; read whole into memory the index owns (only when its size
 * is what its header's counts give), never mapped, so changes to the file after the read cannot
 * reach the index. Temp files its writes leave behind (a writer killed between creating the
 * temp and the rename) are swept when the cache directory is next used: only names of the
 * cache's own pattern (".text-<16 hex>.cache.tmp.<pid>.<n>"), only when that process is gone
 * and the file is older than TANDEM_TEXT_CACHE_TEMP_AGE_S (the directory may be shared with
 * other hosts or PID namespaces, where a pid means nothing here); a live writer's temp is never
 * touched. Owns nothing between calls. */
#ifndef TANDEM_TEXT_CACHE_H
#define TANDEM_TEXT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "tandem.h"
#include "runtime/data/text_index.h"

#define TANDEM_TEXT_CACHE_MAGIC "TNDMTXT\x1a"
/* A temp file of a dead writer is swept only when not modified for this long: writing a cache
 * takes seconds, so an older one is abandoned even if its pid is another host's. */
#define TANDEM_TEXT_CACHE_TEMP_AGE_S 600
#define TANDEM_TEXT_CACHE_FORMAT 4 /* 2: tandem_utt.n_samples filled from the audio headers;
                                      3: layouts, speaker table; 4: directory layouts (two more
                                      skip reasons: header 152 bytes) */

/* The on-disk header (native byte order; the magic and version reject foreign files). */
typedef struct tandem_text_cache_header {
    char magic[8];
    uint32_t format;           /* TANDEM_TEXT_CACHE_FORMAT */
    uint32_t header_bytes;     /* sizeof(tandem_text_cache_header) = 152 */
    uint64_t key;
    uint32_t frontend_version; /* TANDEM_TEXT_FRONTEND_VERSION */
    uint32_t symbols_version;  /* TANDEM_SYMBOLS_VERSION */
    uint32_t n_utts;
    uint32_t utt_bytes;        /* sizeof(tandem_utt) = 24 */
    uint64_t n_tokens;         /* uint16 ids */
    uint64_t strings_bytes;
    uint64_t payload_bytes;    /* file size - header_bytes */
    uint64_t payload_checksum; /* tandem_hash64 of the payload */
    uint32_t lines;
    uint32_t skipped[TANDEM_SKIP_COUNT];
    uint32_t lang_count[TANDEM_LANG_COUNT];
    uint32_t max_tok;
    uint32_t n_speakers;       /* names first in the string arena, in id order */
    uint32_t layout;           /* tandem_data_layout detected */
    uint32_t reserved;         /* 0 */
    uint64_t header_checksum;  /* tandem_hash64 of the bytes before this field */
} tandem_text_cache_header;

/* Byte offsets of the three payload arrays for given counts (each 8-byte aligned). */
void tandem_text_cache_layout(uint32_t n_utts, uint64_t n_tokens, uint64_t strings_bytes,
                              size_t *utts_off, size_t *tokens_off, size_t *strings_off,
                              size_t *total);

/* A fast 64-bit hash of the project's own design (4 multiply-rotate lanes, final avalanche). */
uint64_t tandem_hash64(const void *data, size_t len, uint64_t seed);

/* The cache directory of the runtime options copied into buf; returns buf, "" when none is set. */
const char *tandem_text_cache_dir(char buf[TANDEM_RUNTIME_PATH_MAX]);

/* Check a mapped/read file against the expected key. Returns TANDEM_OK or TANDEM_E_FORMAT with
 * the reason as the message (size, magic, version, key, checksum). */
tandem_status tandem_text_cache_check(const void *data, size_t bytes, uint64_t key);

/* Fill key, checksums into a blob produced by tandem_text_index_build_blob. */
void tandem_text_cache_seal(void *blob, size_t bytes, uint64_t key);

#endif
