/* layout_vctk.c — the VCTK layout (see layout.h): txt/<spk>/<id>.txt with the audio of the same id
 * in the wav48* folder's <spk>/ (VCTK 0.92: <id>_mic1.flac and <id>_mic2.flac, the mic chosen by
 * vctk_mic; 0.80: <id>.wav). Speakers are the folder names of both trees, merged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/data/layout.h"
#include "runtime/data/text_index.h"

typedef struct vctk_walk {
    const char *dir, *audio_dir; /* audio_dir: "wav48_silence_trimmed", "wav48", ... */
    int v092;                    /* 1: 0.92 names (<id>_mic<M>.flac) expected */
    const tandem_layout_options *o;
    tandem_layout_listing *l;
    tandem_dir_seen seen;
} vctk_walk;

static tandem_status speaker(vctk_walk *w, const char *spk, int in_txt, int in_audio) {
    char rt[4200], ra[4200];
    snprintf(rt, sizeof rt, "txt/%s", spk);
    snprintf(ra, sizeof ra, "%s/%s", w->audio_dir, spk);
    tandem_dir_list dt, da;
    tandem_status st = tandem_dir_list_once(&w->seen, w->dir, rt, in_txt, &dt);
    if (st != TANDEM_OK) return st;
    st = tandem_dir_list_once(&w->seen, w->dir, ra, in_audio, &da);
    tandem_layout_entry *e = st == TANDEM_OK ? tandem_malloc((dt.n + da.n + 1) * sizeof *e) : NULL;
    if (st == TANDEM_OK && !e) st = tandem_fail(TANDEM_E_NOMEM, "layout: out of memory");
    if (st == TANDEM_OK) {
        size_t nt = tandem_layout_text_entries(&dt, ".txt", e);
        size_t na = tandem_layout_audio_entries(&da, w->o->vctk_mic, e + nt);
        if (nt + na == 0 && !dt.walked_before && !da.walked_before) {
            w->l->empty_speakers++;
            tandem_logf(TANDEM_LOG_WARN, "%s: speaker folder %s%s%s holds no transcripts (*.txt) and no audio; "
                        "speaker left out", w->dir, in_txt ? rt : ra, in_txt && in_audio ? " and " : "",
                        in_txt && in_audio ? ra : "");
        }
        const char *want = w->v092 ? (w->o->vctk_mic == 2 ? "_mic2.flac" : "_mic1.flac") : ".wav";
        tandem_layout_folder f = {w->dir, spk, rt, ".txt", ra, want};
        st = tandem_layout_merge(w->l, &f, e, nt, e + nt, na, w->o);
    }
    tandem_free(e);
    tandem_dir_list_free(&dt);
    tandem_dir_list_free(&da);
    return st;
}

/* The audio folder: wav48_silence_trimmed (0.92), else wav48 (0.80), else the first wav48*. */
static const char *audio_folder(const tandem_dir_list *root) {
    const char *pick = NULL;
    for (size_t i = 0; i < root->n; i++) {
        if (!root->is_dir[i] || strncmp(root->name[i], "wav48", 5)) continue;
        if (!strcmp(root->name[i], "wav48_silence_trimmed")) return root->name[i];
        if (!pick || !strcmp(root->name[i], "wav48")) pick = root->name[i];
    }
    return pick;
}

/* Every speaker of the union of txt/ and the audio folder's speaker folders, in sorted order. */
static tandem_status speakers(vctk_walk *w, const tandem_dir_list *t, const tandem_dir_list *a) {
    size_t i = 0, j = 0;
    tandem_status st = TANDEM_OK;
    while (st == TANDEM_OK && (i < t->n || j < a->n)) {
        if (i < t->n && !t->is_dir[i]) { i++; continue; }
        if (j < a->n && !a->is_dir[j]) { j++; continue; }
        int c = i == t->n ? 1 : j == a->n ? -1 : strcmp(t->name[i], a->name[j]);
        st = speaker(w, c <= 0 ? t->name[i] : a->name[j], c <= 0, c >= 0);
        i += c <= 0;
        j += c >= 0;
    }
    return st;
}

tandem_status tandem_layout_list_vctk(const char *dir, const tandem_layout_options *o, tandem_layout_listing *out) {
    tandem_dir_list root, t, a;
    TANDEM_TRY(tandem_dir_list_read(dir, "", &root));
    vctk_walk w = {.dir = dir, .o = o, .l = out};
    w.audio_dir = audio_folder(&root);
    int has_txt = 0;
    for (size_t i = 0; i < root.n; i++) has_txt |= root.is_dir[i] && !strcmp(root.name[i], "txt");
    tandem_status st = TANDEM_OK;
    if (!has_txt || !w.audio_dir)
        st = tandem_fail(TANDEM_E_INVALID, "%s: no %s folder; the VCTK layout is txt/<speaker>/<id>.txt with the "
                         "audio in wav48_silence_trimmed/<speaker>/<id>_mic1.flac (VCTK 0.92) or "
                         "wav48/<speaker>/<id>.wav (0.80)", dir, has_txt ? "wav48*" : "txt/");
    if (st == TANDEM_OK) {
        w.v092 = strcmp(w.audio_dir, "wav48") != 0;
        tandem_logf(TANDEM_LOG_INFO, "%s: VCTK layout, transcripts from txt/, audio from %s/%s", dir, w.audio_dir,
                    w.v092 ? (o->vctk_mic == 2 ? " (mic2: vctk_mic 2)" : " (mic1; vctk_mic 2 takes mic2)") : "");
        st = tandem_dir_list_read(dir, "txt", &t);
        if (st == TANDEM_OK) {
            st = tandem_dir_list_read(dir, w.audio_dir, &a);
            if (st == TANDEM_OK) {
                st = speakers(&w, &t, &a);
                tandem_dir_list_free(&a);
            }
            tandem_dir_list_free(&t);
        }
    }
    tandem_free(w.seen.key);
    tandem_dir_list_free(&root);
    return st;
}
