/* layout.h — datasets laid out as directory trees (VCTK, LibriTTS) listed into one in-memory
 * listing the text index turns into rows like metadata.csv's (docs/FORMATS.md, "dataset layouts").
 *
 *   VCTK      txt/<spk>/<id>.txt + wav48_silence_trimmed/<spk>/<id>_mic<M>.flac (0.92, mic
 *             vctk_mic, default 1) or wav48/<spk>/<id>.wav (0.80); speaker = the folder name
 *   LibriTTS  [<split>/]<spk>/<chapter>/<id>.normalized.txt + <id>.wav beside it; speaker = the
 *             speaker folder (a top-level folder named by digits; any other is a split folder)
 *
 * Bounded and safe on hostile trees: the walk has a fixed depth per layout, at most
 * TANDEM_LAYOUT_MAX_DIR_ENTRIES entries per directory and TANDEM_LAYOUT_MAX_FILES files in all;
 * a directory reached twice (a symbolic-link loop or a second link) is walked once; names starting
 * with '.' are ignored (macOS "._x" files); transcripts are opened without blocking and fstat'ed
 * (FIFOs, devices and directories are refused) and may hold at most TANDEM_LAYOUT_MAX_TEXT_BYTES.
 * Everything is sorted bytewise (speakers, then files), so the listing — and the index, its cache
 * key and the sampler's seeded order — is the same on every machine.
 *
 * An utterance without a transcript, without audio, or whose transcript cannot be read is an item
 * with a skip reason and a note naming the file and what was expected: the index counts and
 * reports it like a bad metadata row. Owns: the listing's arena and items (tandem_layout_free).
 * One thread (the caller's); allocates while listing. */
#ifndef TANDEM_RUNTIME_DATA_LAYOUT_H
#define TANDEM_RUNTIME_DATA_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "tandem.h"

#define TANDEM_LAYOUT_MAX_DIR_ENTRIES (1u << 20) /* entries in one directory */
#define TANDEM_LAYOUT_MAX_FILES (1u << 24)       /* files listed in all */
#define TANDEM_LAYOUT_MAX_TEXT_BYTES (64u << 10) /* one transcript file */
#define TANDEM_LAYOUT_MAX_DIRS 4096              /* directories kept to detect loops, per level */

/* One utterance found. Offsets into the listing's arena (NUL-terminated strings; the text is
 * text_len bytes, not terminated); 0 is the empty string. */
typedef struct tandem_layout_item {
    uint32_t id, id_len;
    uint32_t spk, spk_len;
    uint32_t text, text_len;
    uint32_t audio; /* audio path relative to the data directory; "" when none was found */
    uint32_t src;   /* transcript path relative to the data directory (messages) */
    uint32_t note;  /* with skip: what was found and expected (messages) */
    uint8_t skip;   /* tandem_skip_reason + 1 known from the walk, 0 = none */
} tandem_layout_item;

typedef struct tandem_layout_listing {
    char *arena;
    size_t arena_len, arena_cap;
    tandem_layout_item *items; /* [n] sorted by speaker, then id */
    size_t n, cap;
    uint32_t layout;           /* tandem_data_layout */
    uint32_t empty_speakers;   /* speaker folders with neither transcripts nor audio (warned) */
} tandem_layout_listing;

typedef struct tandem_layout_options {
    int vctk_mic;        /* 1 (default) or 2: VCTK 0.92's <id>_mic<M> files */
    int check_audio;     /* 0: audio is not required (its path is the expected one when absent) */
} tandem_layout_options;

/* The layout of dir (its real path) when the config says AUTO and there is no metadata.csv:
 * VCTK when dir holds txt/ and a wav48* folder, LibriTTS when a top-level folder is named by
 * digits or like a LibriTTS split (train-*, dev-*, test-*); else 0 (none recognised). */
uint32_t tandem_layout_detect(const char *dir);

/* List dir in `layout` (TANDEM_LAYOUT_VCTK or _LIBRITTS) into *out (zeroed first; freed on
 * failure). Fails (naming the directory and what was expected) when the layout's folders are
 * absent, a limit is exceeded or memory runs out; bad utterances are items, not failures. */
tandem_status tandem_layout_list(const char *dir, uint32_t layout, const tandem_layout_options *o,
                                 tandem_layout_listing *out);
void tandem_layout_free(tandem_layout_listing *l);

/* A 64-bit hash of everything the listing holds (paths, names, transcript bytes, notes): the text
 * cache's key for a directory layout, so a changed, added or removed file rebuilds the index. */
uint64_t tandem_layout_hash(const tandem_layout_listing *l, uint64_t seed);

/* ---- for layout_vctk.c and layout_libritts.c ---- */

/* A sorted directory listing: names (NUL-terminated, in one block) with their types. */
typedef struct tandem_dir_list {
    char **name;
    unsigned char *is_dir; /* 1 directory, 0 anything else (checked again when opened) */
    size_t n;
    int walked_before; /* tandem_dir_list_once: left empty, the folder was walked already */
    char *block_;
} tandem_dir_list;

/* List base/rel (rel may be "") sorted bytewise, '.'-names left out; symbolic links are followed
 * for the type. Fails when the directory cannot be read or holds more than
 * TANDEM_LAYOUT_MAX_DIR_ENTRIES entries. */
tandem_status tandem_dir_list_read(const char *base, const char *rel, tandem_dir_list *d);
void tandem_dir_list_free(tandem_dir_list *d);
/* 1 the first time the directory base/rel is seen by this walk (seen holds (dev, ino) pairs),
 * 0 when it was walked already (a loop or a second link; warned), -1 on stat failure. */
typedef struct tandem_dir_seen {
    uint64_t *key; /* dev, ino pairs */
    size_t n, cap;
} tandem_dir_seen;
int tandem_dir_seen_first(tandem_dir_seen *s, const char *base, const char *rel);
/* base/rel listed into d when present and not walked yet (seen); else d is empty. */
tandem_status tandem_dir_list_once(tandem_dir_seen *s, const char *base, const char *rel, int present,
                                   tandem_dir_list *d);

/* Append a string (n bytes, NUL added) to the arena; returns its offset, 0 on failure (out of
 * memory or past 4 GiB: *st set). */
uint32_t tandem_layout_str(tandem_layout_listing *l, const char *s, size_t n, tandem_status *st);
/* Append the utterance <id> (id_len bytes) of speaker spk: src is its transcript's path relative to
 * base (found, or the expected one when !have_src), audio likewise. A found transcript is read
 * now (with audio, or without when !o->check_audio); a missing or unreadable one, or missing
 * audio, makes an item with a skip reason and a note. */
tandem_status tandem_layout_add(tandem_layout_listing *l, const char *base, const char *spk, const char *id,
                                size_t id_len, const char *src, int have_src, const char *audio, int have_audio,
                                const tandem_layout_options *o);

/* The layouts' own walks (layout_vctk.c, layout_libritts.c), out zeroed by tandem_layout_list. */
tandem_status tandem_layout_list_vctk(const char *dir, const tandem_layout_options *o, tandem_layout_listing *out);
tandem_status tandem_layout_list_libritts(const char *dir, const tandem_layout_options *o,
                                          tandem_layout_listing *out);
/* 1 when s is a non-empty string of ASCII digits (a LibriTTS speaker or chapter folder). */
int tandem_layout_is_number(const char *s);

/* One file of a folder: its utterance id (a prefix of the file name, id_len bytes) and, for audio,
 * its preference (lower first). */
typedef struct tandem_layout_entry {
    const char *id, *file;
    size_t id_len;
    int rank;
} tandem_layout_entry;
/* The transcripts of a listing (names ending in suffix that are not folders: a FIFO named x.txt
 * is an utterance whose transcript is refused when read) into e, sorted by id; returns the count. */
size_t tandem_layout_text_entries(const tandem_dir_list *d, const char *suffix, tandem_layout_entry *e);
/* The audio of a listing into e, one per id (the preferred container), sorted by id. mic 1 or 2
 * (VCTK 0.92): <id>_mic<M>.<ext> is <id>'s, the other mic's files are left out, and an
 * un-suffixed <id>.<ext> comes after the mic's; 0: names are taken as they are. */
size_t tandem_layout_audio_entries(const tandem_dir_list *d, int mic, tandem_layout_entry *e);
/* Where one folder's utterances live: transcripts text_dir/<id><text_suffix>, audio in audio_dir
 * (expected as <id><audio_suffix> when absent); paths relative to base. */
typedef struct tandem_layout_folder {
    const char *base, *speaker, *text_dir, *text_suffix, *audio_dir, *audio_suffix;
} tandem_layout_folder;
/* The items of one folder from its sorted transcripts t[nt] and audio a[na], in id order. */
tandem_status tandem_layout_merge(tandem_layout_listing *l, const tandem_layout_folder *f,
                                  const tandem_layout_entry *t, size_t nt, const tandem_layout_entry *a, size_t na,
                                  const tandem_layout_options *o);

/* The audio containers the index finds by id, in order of preference (anything libsndfile reads). */
#define TANDEM_AUDIO_EXT_COUNT 11
extern const char *const tandem_audio_exts[TANDEM_AUDIO_EXT_COUNT];
/* 1 when name ends in ".<one of tandem_audio_exts>": *stem_len the part before the dot, *rank the
 * extension's index. */
int tandem_layout_audio_name(const char *name, size_t *stem_len, int *rank);

#endif
