/* layout.c — what the directory layouts share (see layout.h): bounded sorted listings, loop
 * detection, the listing's arena and items, transcripts read without blocking, detection. */
#include "runtime/data/layout.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/data/text_cache.h"
#include "runtime/data/text_index.h"

const char *const tandem_audio_exts[TANDEM_AUDIO_EXT_COUNT] = {"wav", "flac", "ogg",  "oga", "opus", "mp3",
                                                                "aif", "aiff", "au",   "caf", "w64"};

int tandem_layout_audio_name(const char *name, size_t *stem_len, int *rank) {
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name) return 0;
    for (int e = 0; e < TANDEM_AUDIO_EXT_COUNT; e++)
        if (!strcmp(dot + 1, tandem_audio_exts[e])) {
            *stem_len = (size_t)(dot - name);
            *rank = e;
            return 1;
        }
    return 0;
}

/* ---- sorted directory listings ---- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Collects the names of d (no '.'-names) into one block; fails past the entry limit. */
static tandem_status collect_names(DIR *d, const char *path, char **block, size_t *bytes, size_t *n) {
    size_t cap = 4096, len = 0, count = 0;
    char *b = tandem_malloc(cap);
    if (!b) return tandem_fail(TANDEM_E_NOMEM, "layout: out of memory listing %s", path);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        if (++count > TANDEM_LAYOUT_MAX_DIR_ENTRIES) {
            tandem_free(b);
            return tandem_fail(TANDEM_E_BUDGET, "%s: more than %u entries; a dataset folder of this layout holds "
                               "one speaker's or chapter's files: split it", path, TANDEM_LAYOUT_MAX_DIR_ENTRIES);
        }
        size_t k = strlen(e->d_name) + 1;
        if (len + k > cap) {
            while (len + k > cap) cap *= 2;
            char *nb = tandem_realloc(b, cap);
            if (!nb) {
                tandem_free(b);
                return tandem_fail(TANDEM_E_NOMEM, "layout: out of memory listing %s", path);
            }
            b = nb;
        }
        memcpy(b + len, e->d_name, k);
        len += k;
    }
    *block = b;
    *bytes = len;
    *n = count;
    return TANDEM_OK;
}

/* Pointers into the block, sorted, and each entry's type (a link's target's). */
static tandem_status index_names(int dfd, const char *path, tandem_dir_list *d, size_t bytes) {
    d->name = tandem_malloc((d->n ? d->n : 1) * sizeof *d->name);
    d->is_dir = tandem_malloc(d->n ? d->n : 1);
    if (!d->name || !d->is_dir) return tandem_fail(TANDEM_E_NOMEM, "layout: out of memory listing %s", path);
    size_t k = 0;
    for (size_t o = 0; o < bytes; o += strlen(d->block_ + o) + 1) d->name[k++] = d->block_ + o;
    qsort(d->name, d->n, sizeof *d->name, cmp_str);
    for (size_t i = 0; i < d->n; i++) {
        struct stat sb; /* stat never opens the file: a FIFO cannot block it */
        d->is_dir[i] = fstatat(dfd, d->name[i], &sb, 0) == 0 && S_ISDIR(sb.st_mode);
    }
    return TANDEM_OK;
}

tandem_status tandem_dir_list_read(const char *base, const char *rel, tandem_dir_list *d) {
    memset(d, 0, sizeof *d);
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s%s%s", base, rel[0] ? "/" : "", rel) >= sizeof path)
        return tandem_fail(TANDEM_E_INVALID, "layout: path too long under %s", base);
    /* O_DIRECTORY | O_NONBLOCK: a FIFO or device in a folder's place is refused, never waited on */
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return tandem_fail(TANDEM_E_IO, "%s: %s; expected a folder", path, strerror(errno));
    DIR *dir = fdopendir(fd);
    if (!dir) {
        close(fd);
        return tandem_fail(TANDEM_E_IO, "%s: %s", path, strerror(errno));
    }
    size_t bytes = 0;
    tandem_status st = collect_names(dir, path, &d->block_, &bytes, &d->n);
    if (st == TANDEM_OK) st = index_names(dirfd(dir), path, d, bytes);
    closedir(dir);
    if (st != TANDEM_OK) tandem_dir_list_free(d);
    return st;
}

void tandem_dir_list_free(tandem_dir_list *d) {
    tandem_free(d->name);
    tandem_free(d->is_dir);
    tandem_free(d->block_);
    memset(d, 0, sizeof *d);
}

int tandem_dir_seen_first(tandem_dir_seen *s, const char *base, const char *rel) {
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", base, rel);
    if (stat(path, &sb) != 0) return -1;
    const uint64_t dev = (uint64_t)sb.st_dev, ino = (uint64_t)sb.st_ino;
    for (size_t i = 0; i < s->n; i++)
        if (s->key[2 * i] == dev && s->key[2 * i + 1] == ino) {
            tandem_logf(TANDEM_LOG_WARN, "%s: the same folder as one walked already (a symbolic link loop or a "
                        "second link to it); not walked again", path);
            return 0;
        }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        uint64_t *k = tandem_realloc(s->key, cap * 2 * sizeof *k);
        if (!k) return -1;
        s->key = k;
        s->cap = cap;
    }
    s->key[2 * s->n] = dev;
    s->key[2 * s->n + 1] = ino;
    s->n++;
    return 1;
}

/* ---- the listing ---- */

uint32_t tandem_layout_str(tandem_layout_listing *l, const char *s, size_t n, tandem_status *st) {
    if (!l->arena_len) l->arena_len = 1; /* offset 0 is "" */
    if (l->arena_len + n + 1 > UINT32_MAX) {
        *st = tandem_fail(TANDEM_E_BUDGET, "layout: more than 4 GiB of names and transcripts; split the dataset");
        return 0;
    }
    if (l->arena_len + n + 1 > l->arena_cap) {
        size_t cap = l->arena_cap ? l->arena_cap : 1 << 16;
        while (cap < l->arena_len + n + 1) cap *= 2;
        char *a = tandem_realloc(l->arena, cap);
        if (!a) {
            *st = tandem_fail(TANDEM_E_NOMEM, "layout: out of memory (%zu bytes)", cap);
            return 0;
        }
        if (!l->arena_cap) a[0] = 0;
        l->arena = a;
        l->arena_cap = cap;
    }
    uint32_t at = (uint32_t)l->arena_len;
    memcpy(l->arena + at, s, n);
    l->arena[at + n] = 0;
    l->arena_len += n + 1;
    return at;
}

/* The transcript base/src read into the arena (item->text), or the item skipped with the reason
 * (open_input refuses FIFOs, devices and files over the limit without blocking). */
static tandem_status read_text(tandem_layout_listing *l, const char *base, const char *src, tandem_layout_item *it) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", base, src);
    int fd = -1;
    uint64_t size = 0;
    tandem_status st = tandem_file_open_input(path, TANDEM_LAYOUT_MAX_TEXT_BYTES,
                                              "a transcript file holds one utterance's text", &fd, &size);
    char *buf = NULL;
    if (st == TANDEM_OK) {
        buf = tandem_malloc(size ? size : 1);
        st = buf ? tandem_file_read_exact(fd, path, buf, size) : tandem_fail(TANDEM_E_NOMEM, "layout: out of memory");
        close(fd);
    }
    if (st == TANDEM_E_NOMEM) return st;
    tandem_status ok = TANDEM_OK;
    if (st != TANDEM_OK) {
        it->skip = TANDEM_SKIP_BAD_TEXT_FILE + 1;
        it->note = tandem_layout_str(l, tandem_last_error(), strlen(tandem_last_error()), &ok);
    } else {
        it->text = tandem_layout_str(l, buf, size, &ok);
        it->text_len = (uint32_t)size;
    }
    tandem_free(buf);
    return ok;
}

/* A note "<what>" into the arena for item it with skip reason `reason`. */
static tandem_status skip_note(tandem_layout_listing *l, tandem_layout_item *it, int reason, const char *fmt,
                               const char *a, const char *b) {
    char note[8400];
    snprintf(note, sizeof note, fmt, a, b);
    tandem_status st = TANDEM_OK;
    it->skip = (uint8_t)(reason + 1);
    it->note = tandem_layout_str(l, note, strlen(note), &st);
    return st;
}

tandem_status tandem_layout_add(tandem_layout_listing *l, const char *base, const char *spk, const char *id,
                                size_t id_len, const char *src, int have_src, const char *audio, int have_audio,
                                const tandem_layout_options *o) {
    if (l->n >= TANDEM_LAYOUT_MAX_FILES)
        return tandem_fail(TANDEM_E_BUDGET, "%s: more than %u utterances; split the dataset", base,
                           TANDEM_LAYOUT_MAX_FILES);
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        tandem_layout_item *p = tandem_realloc(l->items, cap * sizeof *p);
        if (!p) return tandem_fail(TANDEM_E_NOMEM, "layout: out of memory (%zu items)", cap);
        l->items = p;
        l->cap = cap;
    }
    tandem_layout_item it;
    memset(&it, 0, sizeof it);
    tandem_status st = TANDEM_OK;
    it.id = tandem_layout_str(l, id, id_len, &st);
    it.id_len = (uint32_t)id_len;
    it.spk = tandem_layout_str(l, spk, strlen(spk), &st);
    it.spk_len = (uint32_t)strlen(spk);
    it.src = tandem_layout_str(l, have_src ? src : audio, strlen(have_src ? src : audio), &st);
    const int need_audio = o->check_audio && !have_audio;
    it.audio = have_audio || !o->check_audio ? tandem_layout_str(l, audio, strlen(audio), &st) : 0;
    if (st != TANDEM_OK) return st;
    if (!have_src)
        st = skip_note(l, &it, TANDEM_SKIP_NO_TEXT, "no transcript for this audio; expected %s%s", src, "");
    else if (need_audio)
        st = skip_note(l, &it, TANDEM_SKIP_NO_AUDIO, "no audio for this transcript; expected %s (or another "
                       "container: .flac, .ogg, ...)%s", audio, "");
    else
        st = read_text(l, base, src, &it);
    if (st != TANDEM_OK) return st;
    memcpy(&l->items[l->n++], &it, sizeof it); /* padding bytes too (zeroed): the items are hashed */
    return TANDEM_OK;
}

void tandem_layout_free(tandem_layout_listing *l) {
    if (!l) return;
    tandem_free(l->arena);
    tandem_free(l->items);
    memset(l, 0, sizeof *l);
}

uint64_t tandem_layout_hash(const tandem_layout_listing *l, uint64_t seed) {
    uint64_t h = tandem_hash64(l->arena ? l->arena : "", l->arena_len, seed);
    h = tandem_hash64(l->items ? (const void *)l->items : (const void *)"", l->n * sizeof *l->items, h);
    return tandem_hash64(&l->layout, sizeof l->layout, h);
}

/* A LibriTTS speaker folder's name: digits only. */
int tandem_layout_is_number(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

uint32_t tandem_layout_detect(const char *dir) {
    tandem_dir_list d;
    if (tandem_dir_list_read(dir, "", &d) != TANDEM_OK) return 0;
    int txt = 0, wav48 = 0, libri = 0;
    for (size_t i = 0; i < d.n; i++) {
        if (!d.is_dir[i]) continue;
        const char *n = d.name[i];
        txt |= !strcmp(n, "txt");
        wav48 |= !strncmp(n, "wav48", 5);
        libri |= tandem_layout_is_number(n) || !strncmp(n, "train-", 6) || !strncmp(n, "dev-", 4) ||
                 !strncmp(n, "test-", 5);
    }
    tandem_dir_list_free(&d);
    return txt && wav48 ? TANDEM_LAYOUT_VCTK : libri ? TANDEM_LAYOUT_LIBRITTS : 0;
}

tandem_status tandem_layout_list(const char *dir, uint32_t layout, const tandem_layout_options *o,
                                 tandem_layout_listing *out) {
    memset(out, 0, sizeof *out);
    out->layout = layout;
    tandem_status st = layout == TANDEM_LAYOUT_VCTK       ? tandem_layout_list_vctk(dir, o, out)
                       : layout == TANDEM_LAYOUT_LIBRITTS ? tandem_layout_list_libritts(dir, o, out)
                                                          : tandem_fail(TANDEM_E_INVALID, "layout %u is not a "
                                                                        "directory layout", layout);
    if (st == TANDEM_OK && out->n == 0)
        st = tandem_fail(TANDEM_E_INVALID, "%s: no utterances found in the %s layout (%s)", dir,
                         layout == TANDEM_LAYOUT_VCTK ? "VCTK" : "LibriTTS",
                         layout == TANDEM_LAYOUT_VCTK
                             ? "expected txt/<speaker>/<id>.txt and wav48_silence_trimmed/<speaker>/<id>_mic1.flac "
                               "or wav48/<speaker>/<id>.wav"
                             : "expected <speaker>/<chapter>/<id>.normalized.txt with <id>.wav beside it, "
                               "optionally under split folders such as train-clean-100/");
    if (st != TANDEM_OK) tandem_layout_free(out);
    return st;
}

/* ---- a folder's transcripts and audio, merged by id ---- */

static int cmp_entry(const void *a, const void *b) {
    const tandem_layout_entry *x = a, *y = b;
    size_t n = x->id_len < y->id_len ? x->id_len : y->id_len;
    int c = memcmp(x->id, y->id, n);
    if (!c) c = (x->id_len > y->id_len) - (x->id_len < y->id_len);
    return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

size_t tandem_layout_text_entries(const tandem_dir_list *d, const char *suffix, tandem_layout_entry *e) {
    size_t n = 0, ks = strlen(suffix);
    for (size_t i = 0; i < d->n; i++) {
        size_t k = strlen(d->name[i]);
        if (d->is_dir[i] || k <= ks || strcmp(d->name[i] + k - ks, suffix)) continue;
        e[n++] = (tandem_layout_entry){d->name[i], d->name[i], k - ks, 0};
    }
    qsort(e, n, sizeof *e, cmp_entry);
    return n;
}

size_t tandem_layout_audio_entries(const tandem_dir_list *d, int mic, tandem_layout_entry *e) {
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++) {
        size_t stem;
        int rank;
        if (d->is_dir[i] || !tandem_layout_audio_name(d->name[i], &stem, &rank)) continue;
        const char *s = d->name[i];
        if (mic && stem > 5 && !memcmp(s + stem - 5, "_mic", 4) && (s[stem - 1] == '1' || s[stem - 1] == '2')) {
            if (s[stem - 1] - '0' != mic) continue; /* the other microphone */
            stem -= 5;
        } else if (mic) {
            rank += TANDEM_AUDIO_EXT_COUNT; /* an un-suffixed file after the mic's */
        }
        e[n++] = (tandem_layout_entry){s, s, stem, rank};
    }
    qsort(e, n, sizeof *e, cmp_entry);
    size_t m = 0; /* one per id: the first (preferred) */
    for (size_t i = 0; i < n; i++)
        if (!m || e[m - 1].id_len != e[i].id_len || memcmp(e[m - 1].id, e[i].id, e[i].id_len)) e[m++] = e[i];
    return m;
}

tandem_status tandem_layout_merge(tandem_layout_listing *l, const tandem_layout_folder *f,
                                  const tandem_layout_entry *t, size_t nt, const tandem_layout_entry *a, size_t na,
                                  const tandem_layout_options *o) {
    size_t i = 0, j = 0;
    tandem_status st = TANDEM_OK;
    while (st == TANDEM_OK && (i < nt || j < na)) {
        int c = i == nt ? 1 : j == na ? -1 : 0;
        if (!c) { /* by id alone: the rank orders a folder's audio only */
            tandem_layout_entry x = t[i], y = a[j];
            x.rank = y.rank = 0;
            c = cmp_entry(&x, &y);
        }
        const tandem_layout_entry *e = c <= 0 ? &t[i] : &a[j];
        char src[8400], audio[8400];
        snprintf(src, sizeof src, "%s/%.*s%s", f->text_dir, (int)e->id_len, e->id, f->text_suffix);
        if (c >= 0) snprintf(audio, sizeof audio, "%s/%s", f->audio_dir, a[j].file);
        else snprintf(audio, sizeof audio, "%s/%.*s%s", f->audio_dir, (int)e->id_len, e->id, f->audio_suffix);
        st = tandem_layout_add(l, f->base, f->speaker, e->id, e->id_len, src, c <= 0, audio, c >= 0, o);
        i += c <= 0;
        j += c >= 0;
    }
    return st;
}

tandem_status tandem_dir_list_once(tandem_dir_seen *s, const char *base, const char *rel, int present,
                                   tandem_dir_list *d) {
    memset(d, 0, sizeof *d);
    if (!present) return TANDEM_OK;
    int first = tandem_dir_seen_first(s, base, rel);
    if (first < 0) return tandem_fail(TANDEM_E_IO, "%s/%s: cannot stat the folder", base, rel);
    if (first) return tandem_dir_list_read(base, rel, d);
    d->walked_before = 1;
    return TANDEM_OK;
}
