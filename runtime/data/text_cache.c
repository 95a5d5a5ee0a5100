/* text_cache.c — persistent, content-keyed cache of the text index (see text_cache.h). */
#include "runtime/data/text_cache.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "platform/os/settings.h"
#include "runtime/data/layout.h"
#include "runtime/text/symbols.h"

_Static_assert(sizeof(tandem_text_cache_header) == 152, "cache header is 152 bytes");
_Static_assert(sizeof(tandem_utt) == 24, "cache record is 24 bytes");

/* ---- hash: four independent multiply-rotate lanes over 32-byte stripes (so the CPU overlaps
 * them), then the tail in 8- and 1-byte steps, then an avalanche so every input bit reaches every
 * output bit. Not cryptographic: it detects corruption and content changes. ---- */

#define K1 0x9E3779B185EBCA87ull
#define K2 0xC2B2AE3D27D4EB4Full
#define K3 0x165667B19E3779F9ull
#define K4 0x85EBCA77C2B2AE63ull

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static inline uint64_t lane(uint64_t acc, uint64_t w) { return rotl64(acc + w * K2, 31) * K1; }

uint64_t tandem_hash64(const void *data, size_t len, uint64_t seed) {
    const uint8_t *p = data, *end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t a = seed + K1 + K2, b = seed + K2, c = seed, d = seed - K1;
        const uint8_t *stop = end - 32;
        do {
            a = lane(a, load64(p));
            b = lane(b, load64(p + 8));
            c = lane(c, load64(p + 16));
            d = lane(d, load64(p + 24));
            p += 32;
        } while (p <= stop);
        h = rotl64(a, 1) + rotl64(b, 7) + rotl64(c, 12) + rotl64(d, 18);
        h = (h ^ lane(0, a)) * K1 + K4;
        h = (h ^ lane(0, b)) * K1 + K4;
        h = (h ^ lane(0, c)) * K1 + K4;
        h = (h ^ lane(0, d)) * K1 + K4;
    } else {
        h = seed + K3;
    }
    h += (uint64_t)len;
    for (; p + 8 <= end; p += 8) h = rotl64(h ^ lane(0, load64(p)), 27) * K1 + K4;
    for (; p < end; p++) h = rotl64(h ^ (*p * K3), 11) * K1;
    h ^= h >> 33;
    h *= K2;
    h ^= h >> 29;
    h *= K3;
    h ^= h >> 32;
    return h;
}

void tandem_text_cache_layout(uint32_t n_utts, uint64_t n_tokens, uint64_t strings_bytes,
                              size_t *utts_off, size_t *tokens_off, size_t *strings_off,
                              size_t *total) {
#define ALIGN8(x) (((x) + 7) & ~(size_t)7)
    *utts_off = sizeof(tandem_text_cache_header);
    *tokens_off = ALIGN8(*utts_off + (size_t)n_utts * sizeof(tandem_utt));
    *strings_off = ALIGN8(*tokens_off + (size_t)n_tokens * sizeof(uint16_t));
    *total = ALIGN8(*strings_off + (size_t)strings_bytes);
#undef ALIGN8
}

const char *tandem_text_cache_dir(char buf[TANDEM_RUNTIME_PATH_MAX]) {
    return tandem_settings_path(TANDEM_SETTING_CACHE_DIR, buf);
}

/* ix->cache_path for the dataset at real_dir; left "" when there is no cache directory (the
 * frontend then runs in memory) or it cannot be made. */
/* The pid in a temp name of the cache's own writes, ".text-<16 hex>.cache.tmp.<pid>.<n>" (what
 * tandem_file_write_atomic makes of "text-<16 hex>.cache"); 0 for any other name. */
static long cache_temp_pid(const char *name) {
    static const char pre[] = ".text-", mid[] = ".cache.tmp.";
    if (strncmp(name, pre, sizeof pre - 1) != 0) return 0;
    const char *p = name + sizeof pre - 1;
    for (int i = 0; i < 16; i++, p++)
        if (!isxdigit((unsigned char)*p) || isupper((unsigned char)*p)) return 0;
    if (strncmp(p, mid, sizeof mid - 1) != 0) return 0;
    p += sizeof mid - 1;
    long pid = 0;
    for (; isdigit((unsigned char)*p) && pid < 1000000000L; p++) pid = pid * 10 + (*p - '0');
    if (*p++ != '.' || !isdigit((unsigned char)*p)) return 0;
    while (isdigit((unsigned char)*p)) p++;
    return *p ? 0 : pid;
}

/* Remove the cache's own temp files left by writers that died (text_cache.h). */
static void sweep_temps(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    const time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d));) {
        const long pid = cache_temp_pid(e->d_name);
        char p[PATH_MAX];
        struct stat sb;
        if (pid <= 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH)) continue; /* not ours, or alive */
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p || lstat(p, &sb) != 0 ||
            !S_ISREG(sb.st_mode) || now - sb.st_mtime < TANDEM_TEXT_CACHE_TEMP_AGE_S)
            continue;
        if (unlink(p) == 0)
            tandem_logf(TANDEM_LOG_INFO, "text cache: removed %s, a temp file left by an interrupted write "
                        "(process %ld is gone)", p, pid);
    }
    closedir(d);
}

static void cache_path_for(const tandem_text_index_config *cfg, const char *real_dir, tandem_text_index *ix) {
    char dir[TANDEM_RUNTIME_PATH_MAX];
    if (cfg->cache_dir) snprintf(dir, sizeof dir, "%s", cfg->cache_dir);
    else tandem_text_cache_dir(dir);
    if (!dir[0]) {
        tandem_logf(TANDEM_LOG_INFO, "text cache: no cache directory (runtime option cache_dir; "
                                     "TANDEM_CACHE_DIR in the CLI): the text frontend runs in memory");
        return;
    }
    if (tandem_mkdir_p(dir) != TANDEM_OK) {
        tandem_logf(TANDEM_LOG_WARN, "text cache disabled: %s", tandem_last_error());
        return;
    }
    sweep_temps(dir);
    int k = snprintf(ix->cache_path, sizeof ix->cache_path, "%s/text-%016llx.cache", dir,
                     (unsigned long long)tandem_hash64(real_dir, strlen(real_dir), 0));
    if (k < 0 || (size_t)k >= sizeof ix->cache_path) ix->cache_path[0] = 0;
}

void tandem_text_cache_seal(void *blob, size_t bytes, uint64_t key) {
    tandem_text_cache_header *h = blob;
    h->key = key;
    h->payload_bytes = bytes - sizeof *h;
    h->payload_checksum = tandem_hash64((const char *)blob + sizeof *h, bytes - sizeof *h, key);
    h->header_checksum = tandem_hash64(h, offsetof(tandem_text_cache_header, header_checksum), 0);
}

tandem_status tandem_text_cache_check(const void *data, size_t bytes, uint64_t key) {
    const tandem_text_cache_header *h = data;
    if (bytes < sizeof *h)
        return tandem_fail(TANDEM_E_FORMAT, "truncated: %zu bytes, the header alone is %zu", bytes, sizeof *h);
    if (memcmp(h->magic, TANDEM_TEXT_CACHE_MAGIC, 8) != 0) return tandem_fail(TANDEM_E_FORMAT, "bad magic");
    if (h->header_checksum != tandem_hash64(h, offsetof(tandem_text_cache_header, header_checksum), 0))
        return tandem_fail(TANDEM_E_FORMAT, "header checksum mismatch");
    if (h->format != TANDEM_TEXT_CACHE_FORMAT || h->header_bytes != sizeof *h ||
        h->utt_bytes != sizeof(tandem_utt))
        return tandem_fail(TANDEM_E_FORMAT, "format %u (header %u B, record %u B), expected %d (%zu B, %zu B)",
                           h->format, h->header_bytes, h->utt_bytes, TANDEM_TEXT_CACHE_FORMAT, sizeof *h,
                           sizeof(tandem_utt));
    if (h->frontend_version != TANDEM_TEXT_FRONTEND_VERSION || h->symbols_version != TANDEM_SYMBOLS_VERSION)
        return tandem_fail(TANDEM_E_FORMAT, "stale: frontend v%u symbols v%u, this build has v%d v%d",
                           h->frontend_version, h->symbols_version, TANDEM_TEXT_FRONTEND_VERSION,
                           TANDEM_SYMBOLS_VERSION);
    if (h->key != key)
        return tandem_fail(TANDEM_E_FORMAT, "stale: key %016llx, metadata/settings now give %016llx",
                           (unsigned long long)h->key, (unsigned long long)key);
    if (h->n_tokens > UINT32_MAX || h->strings_bytes > UINT32_MAX)
        return tandem_fail(TANDEM_E_FORMAT, "counts out of range");
    size_t uo, to, so, total;
    tandem_text_cache_layout(h->n_utts, h->n_tokens, h->strings_bytes, &uo, &to, &so, &total);
    if (total != bytes || h->payload_bytes != bytes - sizeof *h)
        return tandem_fail(TANDEM_E_FORMAT, "size %zu bytes, the header's counts give %zu", bytes, total);
    if (h->payload_checksum != tandem_hash64((const char *)data + sizeof *h, bytes - sizeof *h, key))
        return tandem_fail(TANDEM_E_FORMAT, "payload checksum mismatch");
    /* the checksum proves the writer's bytes; these bounds keep a reader safe regardless */
    const tandem_utt *u = (const tandem_utt *)((const char *)data + uo);
    const char *strs = (const char *)data + so;
    if (h->strings_bytes == 0 || strs[h->strings_bytes - 1] != 0)
        return tandem_fail(TANDEM_E_FORMAT, "string arena not terminated");
    if (h->n_speakers > TANDEM_INDEX_MAX_SPEAKERS || h->layout > TANDEM_LAYOUT_LAST)
        return tandem_fail(TANDEM_E_FORMAT, "speaker count or layout out of range");
    uint64_t at = 0; /* the speaker names must lie inside the arena */
    for (uint32_t k = 0; k < h->n_speakers; k++, at++)
        if (at >= h->strings_bytes || (at += strnlen(strs + at, h->strings_bytes - at)) >= h->strings_bytes)
            return tandem_fail(TANDEM_E_FORMAT, "speaker table out of bounds");
    const uint32_t vocab = (uint32_t)tandem_symbols_count() + h->n_speakers;
    for (uint64_t k = 0; k < h->n_tokens; k++)
        if (((const uint16_t *)((const char *)data + to))[k] >= vocab)
            return tandem_fail(TANDEM_E_FORMAT, "token %llu out of range", (unsigned long long)k);
    for (uint32_t i = 0; i < h->n_utts; i++) {
        if (u[i].id >= h->strings_bytes || u[i].audio >= h->strings_bytes ||
            (uint64_t)u[i].tok + u[i].n_tok > h->n_tokens || u[i].lang >= TANDEM_LANG_COUNT)
            return tandem_fail(TANDEM_E_FORMAT, "record %u out of bounds", i);
    }
    return TANDEM_OK;
}

/* Read the cache file into memory the index owns (a mapping would fault with SIGBUS when the file
 * is truncated or rewritten under a running index). Only the bytes the header's counts give
 * are read: a file of another size is stale or foreign, not read at all. TANDEM_E_IO when it
 * does not exist (*absent = 1), is not a regular file or cannot be read. */
static tandem_status read_cache(const char *path, void **data, size_t *bytes, int *absent) {
    *absent = 0;
    *data = NULL;
    int fd = -1;
    uint64_t size = 0;
    if (tandem_file_open_input(path, 0, NULL, &fd, &size) != TANDEM_OK) {
        *absent = access(path, F_OK) != 0 && errno == ENOENT;
        return TANDEM_E_IO; /* the message is open_input's */
    }
    tandem_text_cache_header h;
    tandem_status st = TANDEM_OK;
    size_t uo, to, so, total = 0;
    if (size < sizeof h || pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
        st = tandem_fail(TANDEM_E_FORMAT, "truncated: %llu bytes", (unsigned long long)size);
    } else {
        tandem_text_cache_layout(h.n_utts, h.n_tokens, h.strings_bytes, &uo, &to, &so, &total);
        if (h.n_tokens > UINT32_MAX || h.strings_bytes > UINT32_MAX || total != size)
            st = tandem_fail(TANDEM_E_FORMAT, "size %llu bytes, the header's counts give %zu",
                             (unsigned long long)size, total);
    }
    char *buf = st == TANDEM_OK ? tandem_malloc(total) : NULL;
    if (st == TANDEM_OK && !buf) st = tandem_fail(TANDEM_E_NOMEM, "text cache %s: %zu bytes", path, total);
    if (st == TANDEM_OK) st = tandem_file_read_exact(fd, path, buf, total);
    close(fd);
    if (st != TANDEM_OK) {
        tandem_free(buf);
        return st;
    }
    *data = buf;
    *bytes = total;
    return TANDEM_OK;
}

/* Everything the result depends on besides the metadata bytes. */
typedef struct key_settings {
    uint32_t format, frontend, symbols, column, max_text, check_audio, layout, vctk_mic, text_input;
    char phonemizer[64]; /* "chars" or "espeak-ng <version>": another espeak-ng is another cache */
    int64_t wavs_mtime_s, wavs_mtime_ns; /* audio added or removed changes the directory's mtime */
} key_settings;

/* content: the hash of metadata.csv's bytes or of a directory layout's listing; wavs: 1 for
 * metadata.csv (use_wavs: the wavs/ folder's mtime joins the key; a listing names every audio file). */
static uint64_t compute_key(const tandem_text_index_config *cfg, uint64_t content, int use_wavs,
                            const char *real_dir) {
    key_settings ks;
    memset(&ks, 0, sizeof ks);
    ks.format = TANDEM_TEXT_CACHE_FORMAT;
    ks.frontend = TANDEM_TEXT_FRONTEND_VERSION;
    ks.symbols = TANDEM_SYMBOLS_VERSION;
    ks.column = (uint32_t)cfg->column;
    ks.max_text = (uint32_t)cfg->max_text;
    ks.check_audio = cfg->check_audio ? 1 : 0;
    ks.layout = (uint32_t)cfg->layout; /* speakers are in the metadata bytes hashed below */
    ks.vctk_mic = (uint32_t)cfg->vctk_mic;
    ks.text_input = (uint32_t)cfg->text_input;
    tandem_phonemes_backend(cfg->text_input, ks.phonemizer, sizeof ks.phonemizer);
    if (cfg->check_audio && use_wavs) {
        char wavs[PATH_MAX + 8];
        struct stat sb;
        snprintf(wavs, sizeof wavs, "%s/wavs", real_dir);
        if (stat(wavs, &sb) == 0) {
            ks.wavs_mtime_s = (int64_t)sb.st_mtim.tv_sec;
            ks.wavs_mtime_ns = (int64_t)sb.st_mtim.tv_nsec;
        }
    }
    uint64_t k = tandem_hash64(&ks, sizeof ks, content);
    return tandem_hash64(real_dir, strlen(real_dir), k);
}

/* What the index is built from: metadata.csv's bytes, or a directory layout's listing. */
typedef struct index_source {
    char where[PATH_MAX + 64]; /* metadata.csv's path, or "<dir> (VCTK layout)" */
    char *meta;
    size_t meta_len;
    tandem_layout_listing listing; /* n > 0: a directory layout */
    int is_listing;
} index_source;

/* The layout the config names, or on AUTO: metadata.csv when it exists, else a directory layout. */
static tandem_status read_source(const tandem_text_index_config *cfg, const char *real_dir, index_source *src) {
    memset(src, 0, sizeof *src);
    uint32_t layout = (uint32_t)cfg->layout;
    snprintf(src->where, sizeof src->where, "%s/metadata.csv", cfg->data_dir);
    if (layout == TANDEM_LAYOUT_AUTO && access(src->where, F_OK) != 0 && errno == ENOENT) {
        layout = tandem_layout_detect(real_dir);
        if (layout)
            tandem_logf(TANDEM_LOG_INFO, "%s: no metadata.csv; read in the %s layout (dataset_layout: auto)",
                        cfg->data_dir, layout == TANDEM_LAYOUT_VCTK ? "VCTK" : "LibriTTS");
    }
    if (layout != TANDEM_LAYOUT_VCTK && layout != TANDEM_LAYOUT_LIBRITTS)
        /* the index's offsets are 32-bit: a larger metadata file could not be indexed anyway */
        return tandem_file_read_limited(src->where, TANDEM_INDEX_MAX_METADATA_BYTES,
                                        "an index holds at most 4 GiB of metadata: split the dataset", &src->meta,
                                        &src->meta_len);
    if (cfg->vctk_mic != 1 && cfg->vctk_mic != 2)
        return tandem_fail(TANDEM_E_INVALID, "index: vctk_mic %d: expected 1 or 2", cfg->vctk_mic);
    snprintf(src->where, sizeof src->where, "%s (%s layout)", cfg->data_dir,
             layout == TANDEM_LAYOUT_VCTK ? "VCTK" : "LibriTTS");
    src->is_listing = 1;
    tandem_layout_options lo = {.vctk_mic = cfg->vctk_mic, .check_audio = cfg->check_audio};
    return tandem_layout_list(cfg->data_dir, layout, &lo, &src->listing);
}

static uint64_t source_key(const tandem_text_index_config *cfg, const index_source *src, const char *real_dir) {
    if (!src->is_listing)
        return compute_key(cfg, tandem_hash64(src->meta, src->meta_len, 0x7465787463616368ull), 1, real_dir);
    return compute_key(cfg, tandem_layout_hash(&src->listing, 0x6c61796f7574ull), 0, real_dir);
}

static void source_free(index_source *src) {
    tandem_free(src->meta);
    tandem_layout_free(&src->listing);
    memset(src, 0, sizeof *src);
}

/* The cached index for key when the cache holds a valid one (ix attached and split). */
static int try_cache(const tandem_text_index_config *cfg, const char *real_dir, uint64_t key, tandem_text_index *ix,
                     tandem_status *st) {
    cache_path_for(cfg, real_dir, ix);
    if (!ix->cache_path[0]) return 0;
    void *data = NULL;
    size_t bytes = 0;
    int absent;
    *st = read_cache(ix->cache_path, &data, &bytes, &absent);
    if (*st == TANDEM_OK) {
        *st = tandem_text_cache_check(data, bytes, key);
        if (*st == TANDEM_OK) {
            tandem_text_index_attach(ix, data, bytes);
            ix->cache_hit = 1;
            *st = tandem_text_index_split(cfg, ix);
            if (*st != TANDEM_OK) tandem_text_index_free(ix);
            return 1;
        }
        tandem_free(data);
    }
    if (!absent) tandem_logf(TANDEM_LOG_INFO, "text cache %s: %s; rebuilding", ix->cache_path, tandem_last_error());
    *st = TANDEM_OK;
    return 0;
}

tandem_status tandem_text_index_open(const tandem_text_index_config *cfg, tandem_text_index *ix) {
    memset(ix, 0, sizeof *ix);
    if (!cfg || !cfg->data_dir || !cfg->data_dir[0])
        return tandem_fail(TANDEM_E_INVALID, "index: no data directory given");
    char real_dir[PATH_MAX];
    if (!realpath(cfg->data_dir, real_dir))
        return tandem_fail(TANDEM_E_IO, "data directory %s: %s", cfg->data_dir, strerror(errno));
    index_source *src = tandem_malloc(sizeof *src);
    if (!src) return tandem_fail(TANDEM_E_NOMEM, "index: out of memory");
    tandem_status st = read_source(cfg, real_dir, src);
    if (st != TANDEM_OK) {
        source_free(src);
        tandem_free(src);
        return st;
    }
    uint64_t key = source_key(cfg, src, real_dir);
    if (cfg->use_cache && try_cache(cfg, real_dir, key, ix, &st)) {
        source_free(src);
        tandem_free(src);
        return st;
    }
    void *blob = NULL;
    size_t bytes = 0;
    st = src->is_listing ? tandem_text_index_build_blob_listing(cfg, src->where, &src->listing, &blob, &bytes)
                         : tandem_text_index_build_blob(cfg, src->where, src->meta, src->meta_len, &blob, &bytes);
    source_free(src);
    tandem_free(src);
    if (st != TANDEM_OK) return st;
    tandem_text_cache_seal(blob, bytes, key);
    if (ix->cache_path[0] && tandem_file_write_atomic(ix->cache_path, blob, bytes) != TANDEM_OK) {
        tandem_logf(TANDEM_LOG_WARN, "text cache not written: %s", tandem_last_error());
        ix->cache_path[0] = 0;
    }
    tandem_text_index_attach(ix, blob, bytes);
    st = tandem_text_index_split(cfg, ix);
    if (st != TANDEM_OK) tandem_text_index_free(ix);
    return st;
}
