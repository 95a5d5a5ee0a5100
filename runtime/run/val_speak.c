/* val_speak.c — free-running evaluation at every validation (see val_speak.h). */
#include "runtime/run/val_speak.h"

#include <stdio.h>
#include <string.h>

#include "platform/os/log.h"
#include "platform/os/os.h"
#include "runtime/audio/mel.h"
#include "runtime/formats/wav.h"

static tandem_status alloc_host(tandem_val_speak *e, int n) {
    const size_t F = (size_t)e->frames;
    e->ids = tandem_calloc((size_t)n * e->text_len, sizeof *e->ids);
    e->counts = tandem_calloc((size_t)n, sizeof *e->counts);
    e->truth = tandem_calloc((size_t)n * F * TANDEM_MEL_N_MELS, sizeof *e->truth);
    e->true_frames = tandem_calloc((size_t)n, sizeof *e->true_frames);
    e->gen = tandem_calloc((size_t)n * F * TANDEM_MEL_N_MELS, sizeof *e->gen);
    e->scratch = tandem_calloc(tandem_speak_eval_scratch_floats(e->frames), sizeof *e->scratch);
    if (!e->ids || !e->counts || !e->truth || !e->true_frames || !e->scratch || !e->gen)
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

/* The config's test_sentences ('|'-joined) encoded, and the samples directory. */
static tandem_status load_tests(tandem_val_speak *e, const tandem_config *cfg) {
    const char *p = cfg->test_sentences;
    if (!*p) return TANDEM_OK;
    e->test_ids = tandem_calloc((size_t)TANDEM_VAL_SPEAK_TESTS * e->text_len, sizeof *e->test_ids);
    if (!e->test_ids) return tandem_fail(TANDEM_E_NOMEM, "validation: out of host memory");
    while (*p) {
        const char *end = strchr(p, TANDEM_CONFIG_SENTENCE_SEP);
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (e->n_tests == TANDEM_VAL_SPEAK_TESTS)
            return tandem_fail(TANDEM_E_INVALID, "config: key 'test_sentences': more than %d "
                               "sentences; give at most %d", TANDEM_VAL_SPEAK_TESTS,
                               TANDEM_VAL_SPEAK_TESTS);
        tandem_status st = tandem_synth_encode(e->syn, p, len, -1,
                                               e->test_ids + (size_t)e->n_tests * e->text_len,
                                               &e->test_counts[e->n_tests], NULL);
        if (st != TANDEM_OK)
            return tandem_fail(st, "config: key 'test_sentences', sentence %d ('%.*s'): %s",
                               e->n_tests + 1, (int)(len < 60 ? len : 60), p, tandem_last_error());
        e->n_tests++;
        p += len + (end != NULL);
    }
    return TANDEM_OK;
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
    TANDEM_TRY(tandem_synth_open_device(dev, cfg, vix->n_speakers, TANDEM_VAL_SPEAK_GL_ITERS, &e->syn));
    snprintf(e->samples_dir, sizeof e->samples_dir, "%s/samples", cfg->out);
    TANDEM_TRY(tandem_mkdir_p(e->samples_dir));
    return load_tests(e, cfg);
}

/* Test sentence k: free-running, where the stop fired into the log, the WAV into samples/. */
/* The first held-out utterance as generated free-running, heard: <samples>/step-<step>-held.wav
 * (the same sentence at every validation, so that the runs' recordings can be compared). */
static tandem_status write_held(tandem_val_speak *e, int64_t step) {
    const float *audio = NULL;
    int64_t samples = 0;
    TANDEM_TRY(tandem_synth_vocode(e->syn, e->gen, e->u[0].gen_frames, TANDEM_VAL_SPEAK_GL_ITERS, 1,
                                   &audio, &samples));
    char path[1200];
    snprintf(path, sizeof path, "%s/" TANDEM_VAL_SPEAK_HELD_WAV, e->samples_dir, (long long)step);
    return tandem_wav_write_pcm16(path, audio, samples, TANDEM_MEL_SAMPLE_RATE);
}

static tandem_status run_test(tandem_val_speak *e, int k, int64_t step) {
    tandem_synth_result r;
    TANDEM_TRY(tandem_synth_generate_ids(e->syn, e->test_ids + (size_t)k * e->text_len,
                                         e->test_counts[k], 0, &r));
    const float *audio = NULL;
    int64_t samples = 0;
    TANDEM_TRY(tandem_synth_vocode(e->syn, r.mel, r.frames, TANDEM_VAL_SPEAK_GL_ITERS, 1, &audio,
                                   &samples));
    char path[1200];
    snprintf(path, sizeof path, "%s/step-%08lld-%d.wav", e->samples_dir, (long long)step, k + 1);
    if (tandem_wav_write_pcm16(path, audio, samples, TANDEM_MEL_SAMPLE_RATE) != TANDEM_OK) { /* a diagnostic */
        tandem_logf(TANDEM_LOG_WARN, "step %lld: test sentence %d: sample not written: %s; the run goes on",
                    (long long)step, k + 1, tandem_last_error());
        return TANDEM_OK;
    }
    if (r.stop == TANDEM_SYNTH_STOP_HEAD)
        tandem_logf(TANDEM_LOG_INFO, "step %lld: test sentence %d: stop fired at frame %d (%.2f s) "
                    "→ %s", (long long)step, k + 1, r.stop_frame,
                    (double)r.stop_frame * TANDEM_MEL_HOP / TANDEM_MEL_SAMPLE_RATE, path);
    else
        tandem_logf(TANDEM_LOG_INFO, "step %lld: test sentence %d: no stop within %d frames → %s",
                    (long long)step, k + 1, r.frames, path);
    return TANDEM_OK;
}

tandem_status tandem_val_speak_run(tandem_val_speak *e, tandem_stream *s,
                                   const tandem_tensor *params, int64_t step, float *gen0,
                                   int *gen0_frames) {
    if (!e->syn) return TANDEM_OK;
    const uint64_t t0 = tandem_now_ns();
    TANDEM_TRY(tandem_synth_copy_params(e->syn, s, params));
    for (int i = 0; i < e->n; i++) {
        const int o = (i + 1) % e->n; /* the other text: the next utterance's */
        TANDEM_TRY(tandem_speak_eval_utt(
            e->syn, e->ids + (size_t)i * e->text_len, e->counts[i],
            e->n > 1 ? e->ids + (size_t)o * e->text_len : NULL, e->counts[o],
            e->truth + (size_t)i * e->frames * TANDEM_MEL_N_MELS, e->true_frames[i], e->scratch,
            e->gen + (size_t)i * e->frames * TANDEM_MEL_N_MELS, &e->u[i]));
    }
    const size_t stride = (size_t)e->frames * TANDEM_MEL_N_MELS;
    tandem_speak_identify(e->gen, e->truth, stride, e->n, e->true_frames,
                          tandem_speak_eval_dtw_row(e->scratch, e->frames), e->u);
    if (gen0) memcpy(gen0, e->gen, (size_t)e->u[0].gen_frames * TANDEM_MEL_N_MELS * sizeof *gen0);
    if (gen0_frames) *gen0_frames = e->u[0].gen_frames;
    tandem_speak_eval_summarize(e->u, e->n, &e->last);
    if (write_held(e, step) != TANDEM_OK) /* auxiliary: the evaluation's figures stand */
        tandem_logf(TANDEM_LOG_WARN, "validation: the held-out sample of step %lld: %s", (long long)step,
                    tandem_last_error());
    for (int k = 0; k < e->n_tests; k++) TANDEM_TRY(run_test(e, k, step));
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
    tandem_free(e->gen);
    tandem_free(e->scratch);
    tandem_free(e->test_ids);
    memset(e, 0, sizeof *e);
}
