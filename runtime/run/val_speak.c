/* val_speak.c — free-running evaluation at every validation (see val_speak.h). */
#include "runtime/run/val_speak.h"

#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/audio/mel.h"

static tandem_status alloc_host(tandem_val_speak *e, int n) {
    const size_t F = (size_t)e->frames;
    e->ids = tandem_calloc((size_t)n * e->text_len, sizeof *e->ids);
    e->counts = tandem_calloc((size_t)n, sizeof *e->counts);
    e->truth = tandem_calloc((size_t)n * F * TANDEM_MEL_N_MELS, sizeof *e->truth);
    e->true_frames = tandem_calloc((size_t)n, sizeof *e->true_frames);
    e->scratch = tandem_calloc(tandem_speak_eval_scratch_floats(e->frames), sizeof *e->scratch);
    if (!e->ids || !e->counts || !e->truth || !e->true_frames || !e->scratch)
        return tandem_fail(TANDEM_E_NOMEM, "validation: out of host memory for the free-running "
                           "evaluation (%d utterances of %d frames)", n, e->frames);
    return TANDEM_OK;
}

/* Utterance i of the subset: its ids and its true mel (audio through the host recipe). */
static tandem_status load_utt(tandem_val_speak *e, const tandem_text_index *vix,
                              const char *data_dir, int i, float *audio) {
    const tandem_utt *u = &vix->utts[vix->train[i]];
    const uint16_t *tok = tandem_utt_tokens(vix, u);
    const int n = u->n_tok < e->text_len ? u->n_tok : e->text_len;
    for (int k = 0; k < n; k++) e->ids[(size_t)i * e->text_len + k] = tok[k];
    e->counts[i] = n;
    char wav[2048];
    snprintf(wav, sizeof wav, "%s/%s", data_dir, tandem_utt_audio(vix, u));
    return tandem_speak_eval_true_mel(wav, e->frames, audio,
                                      e->truth + (size_t)i * e->frames * TANDEM_MEL_N_MELS,
                                      &e->true_frames[i]);
}

tandem_status tandem_val_speak_create(tandem_val_speak *e, const tandem_text_index *vix,
                                      const char *data_dir, tandem_device *dev,
                                      const tandem_config *cfg) {
    memset(e, 0, sizeof *e);
    const int n = vix->n_train < TANDEM_VAL_SPEAK_COUNT ? (int)vix->n_train : TANDEM_VAL_SPEAK_COUNT;
    if (n < 1) return TANDEM_OK;
    e->text_len = cfg->max_text;
    e->frames = cfg->max_frames;
    TANDEM_TRY(alloc_host(e, n));
    float *audio = tandem_malloc((size_t)e->frames * TANDEM_MEL_HOP * sizeof(float));
    if (!audio) return tandem_fail(TANDEM_E_NOMEM, "validation: out of host memory for audio");
    tandem_status st = TANDEM_OK;
    for (int i = 0; i < n && st == TANDEM_OK; i++) st = load_utt(e, vix, data_dir, i, audio);
    tandem_free(audio);
    TANDEM_TRY(st);
    e->n = n;
    return tandem_synth_open_device(dev, cfg, 0, &e->syn);
}

tandem_status tandem_val_speak_run(tandem_val_speak *e, tandem_stream *s,
                                   const tandem_tensor *params) {
    if (!e->syn) return TANDEM_OK;
    const uint64_t t0 = tandem_now_ns();
    TANDEM_TRY(tandem_synth_copy_params(e->syn, s, params));
    for (int i = 0; i < e->n; i++) {
        const int o = (i + 1) % e->n; /* the other text: the next utterance's */
        TANDEM_TRY(tandem_speak_eval_utt(
            e->syn, e->ids + (size_t)i * e->text_len, e->counts[i],
            e->n > 1 ? e->ids + (size_t)o * e->text_len : NULL, e->counts[o],
            e->truth + (size_t)i * e->frames * TANDEM_MEL_N_MELS, e->true_frames[i], e->scratch,
            &e->u[i]));
    }
    tandem_speak_eval_summarize(e->u, e->n, &e->last);
    e->seconds = (double)(tandem_now_ns() - t0) * 1e-9;
    return TANDEM_OK;
}

void tandem_val_speak_free(tandem_val_speak *e) {
    if (!e) return;
    tandem_synth_close(e->syn);
    tandem_free(e->ids);
    tandem_free(e->counts);
    tandem_free(e->truth);
    tandem_free(e->true_frames);
    tandem_free(e->scratch);
    memset(e, 0, sizeof *e);
}
