/* tandem_synth.h — speech from a training checkpoint (part of tandem.h): text → log-mel
 * [frames, 80], generated autoregressively until the model's stop head fires, → waveform
 * (Griffin-Lim, 22050 Hz mono float in [-1, 1]).
 *
 * Use:
 *   tandem_synth_options o;
 *   tandem_synth_options_init(&o);               // AUTO backend, trained frame limit, 32 GL iterations
 *   tandem_synth *s = NULL;
 *   if (tandem_synth_open("run/ckpt-000200.safetensors", &o, &s) != TANDEM_OK)
 *       ... tandem_last_error() names the file and what is wrong ...
 *   tandem_synth_result r;
 *   if (tandem_synth_run(s, "Hello there.", TANDEM_LANG_AUTO, NULL, &r) == TANDEM_OK)
 *       tandem_wav_write_pcm16("x.wav", r.audio, r.samples, r.sample_rate);  // tandem_files.h
 *   tandem_synth_close(s);
 *
 * The text goes through training's frontend (tandem_text.h): normalised, tagged with its
 * language, framed as [<lang>, BOS, characters, EOS]; it must fit the trained max_text and hold
 * only characters of the symbol table. The checkpoint's own config sizes the model, and its
 * symbol table must equal this build's (the embedding rows are token ids). Generation keeps the
 * trained shapes (batch 1, max_text tokens, max_frames frames) and stops at the first frame
 * whose stop probability passes 0.5 (that frame is kept) or at the frame limit. Each step runs
 * the newest position only, with the keys and values of the earlier positions cached
 * (options.recompute = 1: the whole forward per step, for comparison).
 *
 * Output buffers (tandem_synth_buffers): a NULL pointer → the handle's own buffer, valid until
 * the next run or close; else the caller's buffer, which must hold the worst case of this
 * handle's frame limit — info.mel_floats floats for the mel, info.audio_samples samples for the
 * audio — checked before any work (TANDEM_E_INVALID saying how many are needed). Both kinds
 * give identical values.
 *
 * Owns: the device, a memory pool with the model (parameters and activations, no gradients,
 * the key/value cache),
 * pinned staging memory, host buffers for the mel, stop logits and audio, and Griffin-Lim's
 * tables, all made at open; a run allocates nothing on the device (the text normaliser may grow
 * its scratch for a longer text). One handle serves one thread at a time; handles are
 * independent. Errors: TANDEM_E_IO (a checkpoint that cannot be read), TANDEM_E_FORMAT (not a
 * checkpoint of this model: format, metadata, symbol table, a parameter's name or shape, a
 * non-finite value), TANDEM_E_INVALID (bad arguments, text with characters outside the symbol
 * table — named with their code points — or longer than max_text, invalid UTF-8, a buffer too
 * small), TANDEM_E_NOMEM, and the device's failures.
 */
/* tandem.h first, outside the guard (see tandem_text.h). */
#include "tandem.h"

#ifndef TANDEM_SYNTH_H
#define TANDEM_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tandem_synth tandem_synth;

/* Griffin-Lim iterations of tandem_synth_options_init. */
#define TANDEM_SYNTH_DEFAULT_GL_ITERS 32

typedef struct tandem_synth_options {
    tandem_backend backend; /* default TANDEM_BACKEND_AUTO: the first CUDA device, else the host */
    int max_frames;         /* frame limit of every run; 0 (default): the trained max_frames;
                               larger values are capped at it */
    int gl_iters;           /* Griffin-Lim iterations, 1..10000 (default 32); 0: no waveform
                               (the mel alone, e.g. for an external vocoder) */
    uint64_t seed;          /* Griffin-Lim's initial random phases (default 1): the same seed
                               gives the same waveform */
    const char *speaker;    /* a multi-speaker checkpoint's speaker by name; NULL (default): its
                               first (id 0). A name it does not know, or any name for a
                               single-speaker checkpoint, fails listing the known ones */
    int recompute;          /* 0 (default): each step runs only the newest position, reusing
                               the cached keys and values of the earlier ones; 1: each step
                               reruns the whole causal forward (the reference the cache is
                               tested against: equal outputs to f32 rounding, much slower) */
    double prenet_dropout;  /* drop probability on the prenet's output while generating, as in
                               training (Tacotron 2 keeps it at inference: the decoder then
                               sees its own frames as it saw the true ones); 0 (default): off;
                               0 < p < 1, masks drawn from `seed`; not with recompute */
} tandem_synth_options;

/* The defaults above. */
void tandem_synth_options_init(tandem_synth_options *o);

/* Read the checkpoint (a ckpt-*.safetensors the trainer wrote), open the device and build the
 * model with its parameters. o NULL: the defaults. On failure *out = NULL and nothing is left
 * to free; the message names the file. */
tandem_status tandem_synth_open(const char *checkpoint, const tandem_synth_options *o,
                                tandem_synth **out);
/* NULL is a no-op. */
void tandem_synth_close(tandem_synth *s);

typedef struct tandem_synth_info {
    /* the model as trained (the checkpoint's config) */
    int d_model, layers, heads;
    int reduction;       /* frames predicted per step */
    int max_text;        /* tokens, framing included */
    int max_frames;      /* the trained frame limit */
    /* this handle */
    int frame_limit;     /* frames a run generates at most (options.max_frames, capped) */
    size_t mel_floats;   /* a caller's mel buffer must hold this many: frame_limit * n_mels */
    size_t audio_samples; /* a caller's audio buffer must hold this many: frame_limit * hop */
    int sample_rate;     /* 22050 */
    int n_mels;          /* 80 */
    int hop;             /* 256 samples per frame */
    tandem_device_info device; /* where the model runs */
    int speakers;        /* the checkpoint's speaker count; 0: trained on one speaker */
    const char *speaker; /* the speaker used (valid until close); NULL with none */
} tandem_synth_info;

/* Name of speaker k (0 <= k < info.speakers; valid until close), else NULL. */
const char *tandem_synth_speaker_name(const tandem_synth *s, int k);

tandem_status tandem_synth_get_info(const tandem_synth *s, tandem_synth_info *out);

/* Caller-provided outputs; a NULL pointer uses the handle's own buffer for that output. */
typedef struct tandem_synth_buffers {
    float *mel;           /* [mel_capacity] floats */
    size_t mel_capacity;
    float *audio;         /* [audio_capacity] samples (ignored when gl_iters is 0) */
    size_t audio_capacity;
} tandem_synth_buffers;

typedef enum tandem_synth_stop {
    TANDEM_SYNTH_STOP_HEAD = 0,   /* a frame's stop probability passed 0.5 */
    TANDEM_SYNTH_STOP_MAX_FRAMES, /* the frame limit came first (the stop head never fired) */
} tandem_synth_stop;

typedef struct tandem_synth_result {
    int frames;               /* frames kept (<= steps * reduction, <= the frame limit) */
    int steps;                /* forward passes (one per group of `reduction` frames) */
    tandem_synth_stop stop;   /* why generation ended */
    int stop_frame;           /* TANDEM_SYNTH_STOP_HEAD: the frame whose stop probability passed
                                 0.5 (= frames - 1; at stop_frame * hop / sample_rate seconds);
                                 else -1. stop_logit has every generated frame's logit, so the
                                 probabilities near the end are sigmoid(stop_logit[i]). */
    tandem_lang lang;         /* the language tag used */
    int tokens;               /* encoded tokens, <lang>, <spk> (with speakers), BOS and EOS included */
    const float *mel;         /* [frames, 80] natural-log mel (the caller's buffer or the handle's) */
    const float *stop_logit;  /* [steps * reduction] stop logit of every generated frame (the
                                 handle's, valid until the next run or close) */
    const float *audio;       /* [samples] waveform in [-1, 1]; NULL when gl_iters is 0 */
    int64_t samples;          /* frames * 256; 0 when gl_iters is 0 */
    int sample_rate;          /* 22050 */
    double seconds;           /* wall time of the generation */
    double vocode_seconds;    /* wall time of Griffin-Lim */
} tandem_synth_result;

/* Synthesize text (UTF-8, NUL-terminated). lang: TANDEM_LANG_AUTO (detected from the script)
 * or a tag to force. into: NULL (both outputs in the handle's buffers) or the caller's buffers
 * (see "Output buffers"). On failure *out is zeroed. */
tandem_status tandem_synth_run(tandem_synth *s, const char *text, tandem_lang lang,
                               const tandem_synth_buffers *into, tandem_synth_result *out);

#ifdef __cplusplus
}
#endif
#endif /* TANDEM_SYNTH_H */
