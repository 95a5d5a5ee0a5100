/* layout_libritts.c — the LibriTTS layout (see layout.h): <spk>/<chapter>/<id>.normalized.txt with
 * <id>.wav (or another container) beside it, the data directory being a split folder
 * (train-clean-100/) or the folder above the splits. A top-level folder named by digits is a
 * speaker; any other is a split folder whose digit-named folders are speakers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/data/layout.h"
#include "runtime/data/text_index.h"

#define NORMALIZED ".normalized.txt"

typedef struct libri_walk {
    const char *dir;
    const tandem_layout_options *o;
    tandem_layout_listing *l;
    tandem_dir_seen seen;
} libri_walk;

/* One chapter folder rel of speaker spk; *found += its transcripts and audio. */
static tandem_status chapter(libri_walk *w, const char *spk, const char *rel, size_t *found) {
    tandem_dir_list d;
    TANDEM_TRY(tandem_dir_list_once(&w->seen, w->dir, rel, 1, &d));
    tandem_layout_entry *e = tandem_malloc((2 * d.n + 1) * sizeof *e);
    tandem_status st = e ? TANDEM_OK : tandem_fail(TANDEM_E_NOMEM, "layout: out of memory");
    if (st == TANDEM_OK) {
        size_t nt = tandem_layout_text_entries(&d, NORMALIZED, e);
        size_t na = tandem_layout_audio_entries(&d, 0, e + nt);
        tandem_layout_folder f = {w->dir, spk, rel, NORMALIZED, rel, ".wav"};
        *found += nt + na;
        st = tandem_layout_merge(w->l, &f, e, nt, e + nt, na, w->o);
    }
    tandem_free(e);
    tandem_dir_list_free(&d);
    return st;
}

/* One speaker folder rel (named spk): its chapter folders in order. */
static tandem_status speaker(libri_walk *w, const char *spk, const char *rel) {
    tandem_dir_list d;
    TANDEM_TRY(tandem_dir_list_once(&w->seen, w->dir, rel, 1, &d));
    tandem_status st = TANDEM_OK;
    size_t found = 0;
    for (size_t i = 0; st == TANDEM_OK && i < d.n; i++) {
        if (!d.is_dir[i]) continue;
        char sub[4200];
        snprintf(sub, sizeof sub, "%s/%s", rel, d.name[i]);
        st = chapter(w, spk, sub, &found);
    }
    if (st == TANDEM_OK && !found && !d.walked_before) {
        w->l->empty_speakers++;
        tandem_logf(TANDEM_LOG_WARN, "%s/%s: speaker folder without transcripts (<chapter>/<id>" NORMALIZED ") "
                    "or audio; speaker left out", w->dir, rel);
    }
    tandem_dir_list_free(&d);
    return st;
}

/* A split folder rel: its digit-named speaker folders. */
static tandem_status split(libri_walk *w, const char *rel) {
    tandem_dir_list d;
    TANDEM_TRY(tandem_dir_list_once(&w->seen, w->dir, rel, 1, &d));
    tandem_status st = TANDEM_OK;
    for (size_t i = 0; st == TANDEM_OK && i < d.n; i++) {
        if (!d.is_dir[i] || !tandem_layout_is_number(d.name[i])) continue;
        char sub[4200];
        snprintf(sub, sizeof sub, "%s/%s", rel, d.name[i]);
        st = speaker(w, d.name[i], sub);
    }
    tandem_dir_list_free(&d);
    return st;
}

tandem_status tandem_layout_list_libritts(const char *dir, const tandem_layout_options *o,
                                          tandem_layout_listing *out) {
    tandem_dir_list root;
    TANDEM_TRY(tandem_dir_list_read(dir, "", &root));
    libri_walk w = {.dir = dir, .o = o, .l = out};
    tandem_status st = TANDEM_OK;
    for (size_t i = 0; st == TANDEM_OK && i < root.n; i++) {
        if (!root.is_dir[i]) continue;
        st = tandem_layout_is_number(root.name[i]) ? speaker(&w, root.name[i], root.name[i])
                                                   : split(&w, root.name[i]);
    }
    tandem_free(w.seen.key);
    tandem_dir_list_free(&root);
    return st;
}
