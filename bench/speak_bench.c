/* speak_bench.c — free-running evaluation of a checkpoint on a corpus (make bench-speak, through
 * bench/speak_bench.sh; the figures' meaning: runtime/run/speak_eval.h).
 *
 * usage: speak_bench CHECKPOINT DATA_DIR LABEL [COUNT [PRENET_DROPOUT]]
 *   DATA_DIR: a corpus as `tandem corpus` writes it (metadata.csv: id|raw|normalized, wavs/).
 *   PRENET_DROPOUT: tandem_synth_options.prenet_dropout while generating (default 0).
 *   The first COUNT rows (default all): each sentence generated free-running (KV cache) and
 *   compared with its recording; teacher-forced L1 with its own text and with the next row's.
 * Prints one line per utterance and a summary line starting with LABEL. Exit 0 unless
 * something failed to run (the figures are judged by the calling script). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/os/log.h"
#include "runtime/audio/mel.h"
#include "runtime/run/speak_eval.h"
#include "runtime/run/synth.h"
#include "tandem.h"

enum { MAX_ROWS = 256 };

typedef struct row {
    char id[64];
    char text[1024];
    int32_t ids[4096]; /* token ids (max_text of them used) */
    int count;
} row;

static int read_rows(const char *dir, row *rows, int max) {
    char path[2048], line[4096];
    snprintf(path, sizeof path, "%s/metadata.csv", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "speak_bench: cannot open %s\n", path);
        return -1;
    }
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char *a = strchr(line, '|'), *b = a ? strchr(a + 1, '|') : NULL;
        if (!a || !b) continue;
        *a = 0;
        snprintf(rows[n].id, sizeof rows[n].id, "%.63s", line);
        snprintf(rows[n].text, sizeof rows[n].text, "%.1023s", b + 1);
        n++;
    }
    fclose(f);
    return n;
}

static int run(tandem_synth *s, const char *dir, const char *label, row *rows, int n) {
    const int F = tandem_synth_config(s)->max_frames;
    float *audio = malloc((size_t)F * TANDEM_MEL_HOP * sizeof(float));
    const size_t stride = (size_t)F * TANDEM_MEL_N_MELS;
    float *truth = malloc((size_t)n * stride * sizeof(float)); /* [n, F, 80] */
    float *gen = malloc((size_t)n * stride * sizeof(float));   /* [n, F, 80] */
    int *true_frames = calloc((size_t)n, sizeof *true_frames);
    float *scratch = malloc(tandem_speak_eval_scratch_floats(F) * sizeof(float));
    tandem_speak_utt *u = calloc((size_t)n, sizeof *u);
    if (!audio || !truth || !gen || !true_frames || !scratch || !u) return 1;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++)
        if (tandem_synth_encode(s, rows[i].text, strlen(rows[i].text), -1, rows[i].ids,
                                &rows[i].count, NULL) != TANDEM_OK) {
            fprintf(stderr, "speak_bench: %s: %s\n", rows[i].id, tandem_last_error());
            rc = 1;
        }
    for (int i = 0; i < n && !rc; i++) {
        char wav[2200];
        snprintf(wav, sizeof wav, "%.2048s/wavs/%.63s.wav", dir, rows[i].id);
        int frames = 0;
        float *t = truth + (size_t)i * stride;
        tandem_status st = tandem_speak_eval_true_mel(wav, F, audio, t, &frames);
        true_frames[i] = frames;
        if (st == TANDEM_OK)
            st = tandem_speak_eval_utt(s, rows[i].ids, rows[i].count,
                                       n > 1 ? rows[(i + 1) % n].ids : NULL,
                                       rows[(i + 1) % n].count, t, frames, scratch,
                                       gen + (size_t)i * stride, &u[i]);
        if (st != TANDEM_OK) {
            fprintf(stderr, "speak_bench: %s: %s\n", rows[i].id, tandem_last_error());
            rc = 1;
            break;
        }
        printf("  %s %s: true %d frames, generated %d (%s), ratio %.2f, DTW-L1 %.3f, "
               "teacher-forced L1 %.3f (other text %.3f), spectral variation %.2f\n", label,
               rows[i].id, frames, u[i].gen_frames,
               u[i].stopped ? (u[i].within ? "stop within 20%" : "stop outside 20%") : "no stop",
               u[i].ratio, u[i].dtw_l1, u[i].tf_l1, u[i].tf_l1_other, u[i].spec_var);
        fflush(stdout);
    }
    if (!rc) {
        tandem_speak_identify(gen, truth, stride, n, true_frames,
                              tandem_speak_eval_dtw_row(scratch, F), u);
        for (int i = 0; i < n; i++)
            if (u[i].nearest != i)
                printf("  %s %s: not identified: nearest true mel is %s's\n", label, rows[i].id,
                       rows[u[i].nearest].id);
        tandem_speak_summary sm;
        tandem_speak_eval_summarize(u, n, &sm);
        printf("%s: stop within ±20%%: %d/%d; identified %d/%d; spectral variation %.2f; median "
               "length ratio %.2f; mean DTW-L1 %.3f; text-dependence ratio %.2f\n", label,
               sm.within, sm.n, sm.identified, sm.n, sm.spec_var, sm.median_ratio, sm.dtw_l1,
               sm.text_dependence);
    }
    free(audio);
    free(truth);
    free(gen);
    free(true_frames);
    free(scratch);
    free(u);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: speak_bench CHECKPOINT DATA_DIR LABEL [COUNT [PRENET_DROPOUT]]\n");
        return 2;
    }
    static row rows[MAX_ROWS];
    int n = read_rows(argv[2], rows, MAX_ROWS);
    if (n < 0) return 1;
    if (argc > 4 && atoi(argv[4]) > 0 && atoi(argv[4]) < n) n = atoi(argv[4]);
    if (n < 1) {
        fprintf(stderr, "speak_bench: %s has no rows\n", argv[2]);
        return 1;
    }
    tandem_synth_options o;
    tandem_synth_options_init(&o);
    o.gl_iters = 0;
    if (argc > 5) o.prenet_dropout = atof(argv[5]);
    tandem_synth *s = NULL;
    if (tandem_synth_open(argv[1], &o, &s) != TANDEM_OK) {
        fprintf(stderr, "speak_bench: %s\n", tandem_last_error());
        return 1;
    }
    const int rc = run(s, argv[2], argv[3], rows, n);
    tandem_synth_close(s);
    return rc;
}
