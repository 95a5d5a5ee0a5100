/* config.c — the config schema table, the YAML reader (libyaml events), overrides, presets,
 * cross-key checks and the YAML dump. To add a key: a field in tandem_config and one row in
 * `schema` below; parsing, validation, --help text and the dump follow from the row. */
#include "runtime/core/config.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "platform/os/log.h"
#include "platform/os/strbuf.h"
#include "platform/os/os.h"
#include "runtime/core/config_compat.h"
#include "runtime/core/utf8.h"
#include "kernels/layers.h" /* LayerNorm backward's shared memory bounds d_model */
#include "kernels/mel.h" /* the feature recipe: n_mels is fixed by it */

/* d_model's maximum: LayerNorm backward keeps its block's 3 x d_model float partials in dynamic
 * shared memory, which must fit the smallest opted-in limit per block of the architectures the
 * fatbin targets (99 KiB on sm_86 / sm_89; 163 KiB sm_80, 227 KiB sm_90), leaving 1 KiB for
 * the kernel's static part. The device's own limit is checked when the model is declared
 * (tandem_model_declare names the widest d_model that device takes). */
#define D_MODEL_MAX 8192
_Static_assert(3 * D_MODEL_MAX * 4 + 1024 <= 99 * 1024,
               "d_model's maximum must fit LayerNorm backward's shared memory on sm_86/sm_89");

typedef enum key_type { K_INT, K_INT64, K_FLOAT, K_STRING, K_BOOL, K_ENUM } key_type;

typedef struct key_spec {
    const char *key;
    key_type type;
    size_t offset, size; /* field in tandem_config; size = capacity for strings */
    const char *def;     /* default, as it would be written in the file */
    int64_t imin, imax;  /* K_INT, K_INT64 */
    double fmin, fmax;   /* K_FLOAT */
    const char *choices; /* K_ENUM: "a|b|c", the stored value is the index */
    const char *doc;
} key_spec;

#define FIELD(k) offsetof(tandem_config, k), sizeof(((tandem_config *)0)->k)
#define KINT(k, d, lo, hi, doc) {#k, K_INT, FIELD(k), d, lo, hi, 0, 0, NULL, doc}
#define KINT64(k, d, lo, hi, doc) {#k, K_INT64, FIELD(k), d, lo, hi, 0, 0, NULL, doc}
#define KFLOAT(k, d, lo, hi, doc) {#k, K_FLOAT, FIELD(k), d, 0, 0, lo, hi, NULL, doc}
#define KSTR(k, d, doc) {#k, K_STRING, FIELD(k), d, 0, 0, 0, 0, NULL, doc}
#define KBOOL(k, d, doc) {#k, K_BOOL, FIELD(k), d, 0, 1, 0, 0, NULL, doc}
#define KENUM(k, d, ch, doc) {#k, K_ENUM, FIELD(k), d, 0, 0, 0, 0, ch, doc}
/* A device list (tandem_config_device_list): a string checked when set; "auto" by default. */
#define DEVICES_KIND "devices"
#define KDEVICES(k, doc) {#k, K_STRING, FIELD(k), "auto", 0, 0, 0, 0, DEVICES_KIND, doc}
/* A key whose only accepted value is v (the recipe's, e.g.): default and range from one number. */
#define KFIXED(k, v, doc) KINT(k, VALUE_TEXT(v), v, v, doc)
#define VALUE_TEXT(v) VALUE_TEXT_(v)
#define VALUE_TEXT_(v) #v

static const key_spec schema[] = {
    KENUM(model_size, "tiny", "tiny|base|custom",
          "preset for d_model..max_frames (tiny 256/4/4/4/128/512, base 512/8/8/2/200/800)"),
    KINT(d_model, "256", 16, D_MODEL_MAX, "transformer width"),
    KINT(layers, "4", 1, 128, "transformer blocks"),
    KINT(heads, "4", 1, 128, "attention heads (must divide d_model)"),
    KINT(reduction, "4", 1, 16, "r: mel frames predicted per position (must divide max_frames)"),
    KINT(max_text, "128", 8, 4096, "token positions incl. language, BOS, EOS"),
    KINT(max_frames, "512", 16, 16384, "mel frames per utterance; longer ones are skipped"),
    KFIXED(n_mels, TANDEM_MEL_N_MELS, "mel bands, fixed by the feature recipe"),
    KENUM(text_input, "chars", "chars|phonemes",
          "the model's text tokens: the normalised characters, or their phonemes (IPA from "
          "espeak-ng, loaded at run time: Debian package libespeak-ng1; English en-us, Persian fa)"),
    KINT(batch_size, "8", 1, 4096, "utterances per batch"),
    KINT(grad_accum, "1", 1, 1024, "batches per optimizer step"),
    KINT(buckets, "0", 0, 8,
         "length bucketing: batches drawn from this many frame-count shape classes, chosen from the "
         "training set's length quantiles (0 or 1 = off: every batch padded to max_frames)"),
    KINT(prefetch_buffer_size, "3", 2, TANDEM_CONFIG_MAX_PREFETCH,
         "ring slots between data and model device"),
    KINT(num_workers, "0", 0, 256, "audio loader threads (0 = one per CPU core)"),
    KBOOL(shuffle, "true", "shuffle utterances each epoch (seeded)"),
    KBOOL(force_staged, "false",
          "copy ring slots through pinned host memory even with peer access (broken P2P)"),
    KBOOL(cuda_graphs, "true", "capture the training step once as a CUDA graph and replay it (false: eager, for debugging)"),
    KBOOL(strict_gemm, "false", "any GEMM that cannot run as cuBLASLt's fused plan (a rejected epilogue split off, or the fatbin GEMM) is an error at start instead of a warning"),
    KINT64(data_gpu_memory, "0", 0, (int64_t)1 << 24, "data-device arena budget, MiB (0 = by plan)"),
    KINT64(model_gpu_memory, "0", 0, (int64_t)1 << 24,
           "model-device arena budget, MiB (0 = by plan)"),
    KENUM(precision, "fp32", "fp32|bf16", "activations and weight copies on GPUs"),
    KENUM(attention, "auto", "auto|fused|materialised",
          "attention kernels: fused (one kernel each way, no [B, H, T, T] tensor) or materialised "
          "(scores in memory, batched GEMMs on tensor cores around softmax kernels); auto: fused "
          "on the host, materialised on a CUDA model device until a GPU has measured the "
          "tensor-core kernels (docs/TRAINING.md, \"Attention paths\")"),
    KBOOL(tf32, "true", "fp32 on CUDA: GEMMs with TF32 inputs (10-bit mantissa, f32 accumulation; "
                        "false: exact fp32)"),
    KINT64(seed, "1234", 0, INT64_MAX, "seed for initialisation and shuffling"),
    KSTR(train_data, "", "training dataset directory (metadata.csv + wavs/, or a VCTK / LibriTTS tree)"),
    KSTR(val_data, "", "validation dataset directory (empty = none)"),
    KFLOAT(val_fraction, "0", 0.0, 0.5, "share of train_data held out for validation instead of val_data "
                                        "(seeded by seed, the same on resume and on every rank; 0 = none)"),
    KENUM(dataset_layout, "auto", "auto|ljspeech|generic|vctk|libritts",
          "how the dataset directory is read: metadata.csv or a VCTK / LibriTTS tree (docs/FORMATS.md)"),
    KINT(vctk_mic, "1", 1, 2, "VCTK 0.92: the microphone whose <id>_mic<N>.flac files are read"),
    KSTR(out, "runs/tandem", "output directory (checkpoints, metrics)"),
    KSTR(test_sentences, "",
         "sentences synthesized at every validation, WAVs under out/samples (a YAML list; "
         "on the command line joined by '|')"),
    KINT64(max_steps, "10000", 1, (int64_t)1000000000000, "optimizer steps to run"),
    KINT64(epochs, "0", 0, 1000000,
           "passes over the training set: at start max_steps = ceil(epochs * usable utterances / "
           "(batch_size * grad_accum)) (0 = off; a max_steps given explicitly wins)"),
    KFLOAT(lr, "0.0003", 0.0, 1.0, "peak learning rate"),
    KINT64(warmup_steps, "200", 0, (int64_t)1000000000000, "linear learning-rate warm-up steps"),
    KFLOAT(min_lr_ratio, "0.1", 0.0, 1.0, "the cosine schedule ends at lr * min_lr_ratio"),
    KFLOAT(weight_decay, "0.01", 0.0, 1.0,
           "AdamW decoupled weight decay (linear weights only; none on norms, biases, embeddings)"),
    KFLOAT(adam_beta1, "0.9", 0.0, 0.999999, "AdamW beta1"),
    KFLOAT(adam_beta2, "0.999", 0.0, 0.999999999, "AdamW beta2"),
    KFLOAT(adam_eps, "1e-8", 1e-12, 1.0, "AdamW epsilon"),
    KFLOAT(grad_clip, "1.0", 0.0, 1e6, "global gradient-norm clip (0 = no clipping)"),
    KFLOAT(stop_loss_weight, "1.0", 0.0, 1000.0, "loss = l1 + stop_loss_weight * stop_bce"),
    KFLOAT(prenet_dropout, "0.5", 0.0, 0.9,
           "dropout on the prenet output in training (0 = off; never at synthesis)"),
    KFLOAT(ga_weight, "1.0", 0.0, 1000.0,
           "guided-attention loss weight: loss += ga_weight * ga (0 = off)"),
    KFLOAT(ga_sigma, "0.2", 0.01, 10.0, "guided-attention width sigma (fraction of the text)"),
    KINT(ga_heads, "1", 0, 128, "heads per layer under the guided-attention loss (at most heads)"),
    KINT64(val_every, "200", 0, (int64_t)1000000000000, "validation loss every N steps (0 = never)"),
    KINT(val_batches, "4", 1, 100000, "batches per validation (from the start of the held-out set)"),
    KINT64(log_every, "10", 1, (int64_t)1000000000000,
           "metrics.jsonl line (and plain progress line off a terminal) every N steps"),
    KBOOL(tensorboard, "true", "TensorBoard event files in out (scalars, figures, test-sentence audio)"),
    KSTR(tensorboard_dir, "", "directory of the TensorBoard event files (empty = out)"),
    KINT64(checkpoint_every, "1000", 0, (int64_t)1000000000000,
           "checkpoint every N steps (0 = only at the end and on SIGINT/SIGTERM)"),
    KINT(keep, "3", 1, 1000000, "checkpoints kept (the newest K)"),
    KINT(max_nonfinite, "20", 1, 1000000,
         "stop with an error after this many non-finite (skipped) steps in a row"),
    KFLOAT(dp_bucket_mb, "25", 0.001, 1e6,
           "data-parallel: gradients all-reduced in buckets of at most this many MiB, each as soon as the "
           "backward has finished its layers (fractions allowed)"),
    KENUM(dp_grad_dtype, "f32", "f32|bf16",
          "data-parallel: gradients all-reduced in f32, or cast to bf16 for it (half the bytes, 8-bit "
          "mantissa) and widened back"),
    KINT(data_gpu, "-1", -1, 1024, "CUDA ordinal of the data device (-1 = automatic)"),
    KINT(model_gpu, "-1", -1, 1024, "CUDA ordinal of the model device (-1 = automatic)"),
    KDEVICES(model_devices, "CUDA ordinals of the model devices, one replica each, trained data-parallel in this "
                            "process (a list, e.g. [1, 2]; auto = the one model_gpu picks; docs/SCALING.md)"),
    KDEVICES(data_devices, "CUDA ordinals of the data devices feeding model_devices in turn (a list; auto = "
                           "data_gpu's choice, or with several model devices the lowest GPU not among them)"),
};
#define N_KEYS (int)(sizeof schema / sizeof schema[0])
_Static_assert(sizeof schema / sizeof schema[0] <= 64, "explicit_keys is a 64-bit mask");

/* model_size presets: the values each preset gives the keys listed in preset_keys. */
static const char *const preset_keys[] = {"d_model", "layers", "heads",
                                          "reduction", "max_text", "max_frames"};
#define N_PRESET_KEYS 6
static const int preset_values[2][N_PRESET_KEYS] = {
    [TANDEM_MODEL_TINY] = {256, 4, 4, 4, 128, 512},
    [TANDEM_MODEL_BASE] = {512, 8, 8, 2, 200, 800},
};

/* ---- small helpers -------------------------------------------------------------------- */

static int find_key(const char *key) {
    for (int i = 0; i < N_KEYS; i++)
        if (strcmp(schema[i].key, key) == 0) return i;
    return -1;
}

/* Levenshtein distance for "did you mean"; keys are short. */
static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int prev[64], cur[64];
    for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof(int) * (lb + 1));
    }
    return prev[lb];
}

static int is_devices(const key_spec *k) { return k->choices && strcmp(k->choices, DEVICES_KIND) == 0; }

int tandem_config_device_list(const char *s, int *out, int cap) {
    while (*s == ' ') s++;
    if (strcmp(s, "auto") == 0 || !*s) return 0;
    const int bracket = *s == '['; /* "[1, 2]" as an override is the YAML list's flow form */
    s += bracket;
    int n = 0;
    for (;;) {
        while (*s == ' ') s++;
        char *end = NULL;
        errno = 0;
        const long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > TANDEM_CONFIG_MAX_ORDINAL || n >= cap) return -1;
        for (int i = 0; i < n; i++)
            if (out[i] == (int)v) return -1; /* listed twice */
        out[n++] = (int)v;
        s = end;
        while (*s == ' ') s++;
        if (bracket && *s == ']') {
            for (s++; *s == ' ';) s++;
            return *s ? -1 : n;
        }
        if (!*s) return bracket ? -1 : n;
        if (*s != ',' && *s != TANDEM_CONFIG_SENTENCE_SEP) return -1;
        s++;
    }
}

/* Text of "what was expected" for a key, e.g. "an integer in [1, 4096]". */
static void expected_text(const key_spec *k, char *buf, size_t cap) {
    switch (k->type) {
    case K_INT:
    case K_INT64:
        if (k->imin == k->imax) snprintf(buf, cap, "the integer %lld", (long long)k->imin);
        else snprintf(buf, cap, "an integer in [%lld, %lld]", (long long)k->imin, (long long)k->imax);
        break;
    case K_FLOAT: snprintf(buf, cap, "a number in [%g, %g]", k->fmin, k->fmax); break;
    case K_STRING:
        if (is_devices(k)) snprintf(buf, cap, "auto or a list of distinct CUDA ordinals in [0, %d], e.g. [1, 2]",
                                    TANDEM_CONFIG_MAX_ORDINAL);
        else snprintf(buf, cap, "a UTF-8 string of at most %zu bytes", k->size - 1);
        break;
    case K_BOOL: snprintf(buf, cap, "true or false"); break;
    case K_ENUM: snprintf(buf, cap, "one of %s", k->choices); break;
    }
}

/* Where a value came from, for messages: "file.yaml:12" or "override". */
typedef struct origin {
    const char *name;
    int line; /* 0: no line */
} origin;

static tandem_status fail_value(const origin *o, const key_spec *k, const char *value) {
    char what[96];
    expected_text(k, what, sizeof what);
    char fixed[160] = ""; /* a key with one accepted value says why it cannot change */
    if ((k->type == K_INT || k->type == K_INT64) && k->imin == k->imax)
        snprintf(fixed, sizeof fixed, " (%s: leave the key out or set %lld)", k->doc, (long long)k->imin);
    if (o->line > 0)
        return tandem_fail(TANDEM_E_INVALID, "%s:%d: key '%s': expected %s, got '%.100s'%s", o->name,
                           o->line, k->key, what, value, fixed);
    return tandem_fail(TANDEM_E_INVALID, "%s: key '%s': expected %s, got '%.100s'%s", o->name, k->key,
                       what, value, fixed);
}

static tandem_status fail_unknown(const origin *o, const char *key) {
    char where[300];
    if (o->line > 0) snprintf(where, sizeof where, "%s:%d", o->name, o->line);
    else snprintf(where, sizeof where, "%s", o->name);
    int best = -1, best_d = 99;
    for (int i = 0; i < N_KEYS; i++) {
        int d = edit_distance(key, schema[i].key);
        if (d < best_d) best_d = d, best = i;
    }
    int near = best >= 0 && best_d <= 2 + (int)strlen(key) / 4;
    if (near)
        return tandem_fail(TANDEM_E_INVALID, "%s: key '%.100s': unknown key (did you mean '%s'?)",
                           where, key, schema[best].key);
    char list[700];
    tandem_strbuf l = {list, sizeof list, 0};
    for (int i = 0; i < N_KEYS; i++) tandem_strbuf_printf(&l, "%s%s", i ? ", " : "", schema[i].key);
    return tandem_fail(TANDEM_E_INVALID, "%s: key '%.100s': unknown key (known keys: %s)", where,
                       key, list);
}

/* ---- setting one key ---------------------------------------------------------------------- */

static int parse_int64(const char *s, int64_t *out) {
    if (!*s) return 0;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return 0;
    *out = v;
    return 1;
}

static int parse_bool(const char *s, int *out) {
    static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
    for (int i = 0; i < 3; i++) {
        if (strcasecmp(s, yes[i]) == 0) return *out = 1, 1;
        if (strcasecmp(s, no[i]) == 0) return *out = 0, 1;
    }
    return 0;
}

static int parse_enum(const char *choices, const char *s, int *out) {
    size_t ls = strlen(s);
    int idx = 0;
    for (const char *c = choices;; idx++) {
        const char *bar = strchr(c, '|');
        size_t lc = bar ? (size_t)(bar - c) : strlen(c);
        if (lc == ls && strncmp(c, s, lc) == 0) return *out = idx, 1;
        if (!bar) return 0;
        c = bar + 1;
    }
}

static void apply_preset(tandem_config *cfg);

static tandem_status set_key(tandem_config *cfg, int ki, const char *value, const origin *o) {
    const key_spec *k = &schema[ki];
    char *field = (char *)cfg + k->offset;
    switch (k->type) {
    case K_INT:
    case K_INT64: {
        int64_t v;
        if (!parse_int64(value, &v) || v < k->imin || v > k->imax) return fail_value(o, k, value);
        if (k->type == K_INT) {
            int iv = (int)v;
            memcpy(field, &iv, sizeof iv);
        } else {
            memcpy(field, &v, sizeof v);
        }
        break;
    }
    case K_FLOAT: {
        char *end;
        errno = 0;
        double v = *value ? strtod(value, &end) : NAN;
        if (!*value || errno || *end || !isfinite(v) || v < k->fmin || v > k->fmax)
            return fail_value(o, k, value);
        memcpy(field, &v, sizeof v);
        break;
    }
    case K_STRING: {
        size_t n = strlen(value), bad;
        /* YAML text is UTF-8 already; an override may not be, and the dump must load back */
        if (n >= k->size || !tandem_utf8_validate(value, n, &bad)) return fail_value(o, k, value);
        int ords[TANDEM_CONFIG_MAX_DEVICES];
        if (is_devices(k) && tandem_config_device_list(value, ords, TANDEM_CONFIG_MAX_DEVICES) < 0)
            return fail_value(o, k, value);
        memset(field, 0, k->size); /* no stale tail: equal configs compare equal bytewise */
        memcpy(field, value, n);
        break;
    }
    case K_BOOL:
    case K_ENUM: {
        int v;
        int ok = k->type == K_BOOL ? parse_bool(value, &v) : parse_enum(k->choices, value, &v);
        if (!ok) return fail_value(o, k, value);
        memcpy(field, &v, sizeof v);
        break;
    }
    }
    cfg->explicit_keys |= (uint64_t)1 << ki;
    if (strcmp(k->key, "model_size") == 0) apply_preset(cfg);
    return TANDEM_OK;
}

/* Fill the preset keys the user did not give explicitly. */
static void apply_preset(tandem_config *cfg) {
    if (cfg->model_size != TANDEM_MODEL_TINY && cfg->model_size != TANDEM_MODEL_BASE) return;
    for (int p = 0; p < N_PRESET_KEYS; p++) {
        int ki = find_key(preset_keys[p]);
        if (cfg->explicit_keys & ((uint64_t)1 << ki)) continue;
        memcpy((char *)cfg + schema[ki].offset, &preset_values[cfg->model_size][p], sizeof(int));
    }
}

void tandem_config_init(tandem_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    origin o = {"built-in default", 0};
    for (int i = 0; i < N_KEYS; i++) {
        tandem_status st = set_key(cfg, i, schema[i].def, &o);
        (void)st;
        assert(st == TANDEM_OK); /* the table's defaults must pass its own ranges */
    }
    cfg->explicit_keys = 0;
    apply_preset(cfg);
}

/* ---- MyXTTS names (config_compat.h) ---------------------------------------------------------- */

/* name with dashes read as underscores ("batch-size" is batch_size); 0 when it does not fit. */
static int normalise_name(const char *name, char *out, size_t cap) {
    size_t n = strlen(name);
    if (n >= cap) return 0;
    for (size_t i = 0; i <= n; i++) out[i] = name[i] == '-' ? '_' : name[i];
    return 1;
}

static void where_text(const origin *o, char *buf, size_t cap) {
    if (o->line > 0) snprintf(buf, cap, "%s:%d", o->name, o->line);
    else snprintf(buf, cap, "%s", o->name);
}

/* A MyXTTS name: set the Tandem key it stands for, or accept it saying why it means nothing here
 * (one INFO line either way). shown is the name as the user wrote it ("training.epochs"). */
static tandem_status apply_compat(tandem_config *cfg, const tandem_compat *c, const char *value,
                                  const origin *o, const char *shown) {
    char where[320];
    where_text(o, where, sizeof where);
    int on = 1;
    if ((c->kind == TANDEM_COMPAT_SWITCH && *value) || c->kind == TANDEM_COMPAT_BOOL_MAP)
        if (!parse_bool(value, &on))
            return tandem_fail(TANDEM_E_INVALID, "%s: key '%s': expected true or false, got '%.100s'",
                               where, shown, value);
    if (c->kind == TANDEM_COMPAT_IGNORE && c->only && strcasecmp(value, c->only) != 0)
        return tandem_fail(TANDEM_E_INVALID, "%s: key '%s': expected '%s' (%s), got '%.100s'", where,
                           shown, c->only, c->why, value);
    if (c->kind == TANDEM_COMPAT_SWITCH || c->kind == TANDEM_COMPAT_IGNORE) {
        tandem_logf(TANDEM_LOG_INFO, "%s: '%s' accepted, nothing to set: %s%s", where, shown, c->why,
                    on ? "" : " (it cannot be turned off)");
        return TANDEM_OK;
    }
    const int ki = find_key(c->key);
    const key_spec *k = &schema[ki];
    char clamped[32];
    int64_t v;
    if (c->kind == TANDEM_COMPAT_BOOL_MAP) {
        value = on ? c->if_true : c->if_false;
        tandem_logf(TANDEM_LOG_INFO, "%s: '%s' is Tandem's '%s: %s' (%s)", where, shown, c->key, value, c->why);
    } else if (c->clamp_from && k->type == K_INT && parse_int64(value, &v) && v > k->imax &&
               v <= c->clamp_from) {
        snprintf(clamped, sizeof clamped, "%lld", (long long)k->imax);
        tandem_logf(TANDEM_LOG_INFO, "%s: '%s: %s' set as '%s: %s' (%s)", where, shown, value, c->key,
                    clamped, c->why);
        value = clamped;
    } else if (strcmp(c->name, c->key) != 0) {
        tandem_logf(TANDEM_LOG_INFO, "%s: '%s' is Tandem's '%s' (%s)", where, shown, c->key, c->why);
    }
    return set_key(cfg, ki, value, o);
}

/* Set a key named by its Tandem name or a MyXTTS name (dashes or underscores). */
static tandem_status set_named(tandem_config *cfg, const char *name, const char *value, const origin *o) {
    char n[128];
    if (!normalise_name(name, n, sizeof n)) return fail_unknown(o, name);
    const tandem_compat *c = tandem_compat_find(n);
    if (c) return apply_compat(cfg, c, value, o, name);
    const int ki = find_key(n);
    if (ki < 0) return fail_unknown(o, name);
    return set_key(cfg, ki, value, o);
}

tandem_status tandem_config_set_from(tandem_config *cfg, const char *origin_name, const char *key,
                                     const char *value) {
    origin o = {origin_name ? origin_name : "override", 0};
    if (!cfg || !key || !value)
        return tandem_fail(TANDEM_E_INVALID, "tandem_config_set: NULL argument");
    return set_named(cfg, key, value, &o);
}

tandem_status tandem_config_set(tandem_config *cfg, const char *key, const char *value) {
    return tandem_config_set_from(cfg, "override", key, value);
}

tandem_status tandem_config_check(const tandem_config *cfg) {
    if (!cfg) return tandem_fail(TANDEM_E_INVALID, "tandem_config_check: NULL config");
    if (cfg->d_model % cfg->heads != 0)
        return tandem_fail(TANDEM_E_INVALID,
                           "config: d_model %d is not a multiple of heads %d (each head gets "
                           "d_model / heads dimensions)", cfg->d_model, cfg->heads);
    if (cfg->max_frames % cfg->reduction != 0)
        return tandem_fail(TANDEM_E_INVALID,
                           "config: max_frames %d is not a multiple of reduction %d (each mel "
                           "position predicts reduction frames)", cfg->max_frames, cfg->reduction);
    if (cfg->val_fraction > 0 && cfg->val_data[0])
        return tandem_fail(TANDEM_E_INVALID,
                           "config: val_data '%s' and val_fraction %g both name a held-out set; set one "
                           "(val_data: a directory of its own; val_fraction: a share of train_data)",
                           cfg->val_data, cfg->val_fraction);
    if (cfg->ga_heads > cfg->heads)
        return tandem_fail(TANDEM_E_INVALID,
                           "config: ga_heads %d exceeds heads %d (the guided-attention loss takes "
                           "the first ga_heads heads of every layer); set ga_heads <= heads",
                           cfg->ga_heads, cfg->heads);
    return TANDEM_OK;
}

/* ---- YAML ------------------------------------------------------------------------------------ */

static const char *event_kind(const yaml_event_t *ev) {
    switch (ev->type) {
    case YAML_MAPPING_START_EVENT: return "a mapping";
    case YAML_SEQUENCE_START_EVENT: return "a list";
    case YAML_ALIAS_EVENT: return "an alias";
    default: return "something else";
    }
}

static tandem_status next_event(yaml_parser_t *p, yaml_event_t *ev, const char *name) {
    if (yaml_parser_parse(p, ev)) return TANDEM_OK;
    return tandem_fail(TANDEM_E_INVALID, "%s:%zu:%zu: YAML syntax error: %s%s%s", name,
                       p->problem_mark.line + 1, p->problem_mark.column + 1,
                       p->problem ? p->problem : "unknown problem", p->context ? " " : "",
                       p->context ? p->context : "");
}

/* A list of strings (test_sentences) into the key's string, joined by '|'. */
static tandem_status read_list(yaml_parser_t *p, tandem_config *cfg, int ki, const origin *o) {
    char joined[TANDEM_CONFIG_SENTENCES_MAX];
    tandem_strbuf b = {joined, sizeof joined, 0};
    joined[0] = 0;
    for (int n = 0;; n++) {
        yaml_event_t ev;
        TANDEM_TRY(next_event(p, &ev, o->name));
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            return set_key(cfg, ki, joined, o);
        }
        const int scalar = ev.type == YAML_SCALAR_EVENT;
        const int line = (int)ev.start_mark.line + 1;
        const char *v = scalar ? (const char *)ev.data.scalar.value : "";
        const int bad = !scalar || !*v || strchr(v, TANDEM_CONFIG_SENTENCE_SEP);
        if (!bad) tandem_strbuf_printf(&b, "%s%s", n ? "|" : "", v);
        yaml_event_delete(&ev);
        if (bad)
            return tandem_fail(TANDEM_E_INVALID, "%s:%d: key '%s': expected a list of non-empty "
                               "sentences without '|', got %s", o->name, line, schema[ki].key,
                               scalar ? "an empty one or one with '|'" : "a nested value");
    }
}

#define TANDEM_CONFIG_MAX_DEPTH 64 /* nesting a skipped value may have */

/* Skip one node whose first event is ev (already read and deleted by the caller: kind given). */
static tandem_status skip_node(yaml_parser_t *p, yaml_event_type_t first, const char *name) {
    int depth = first == YAML_MAPPING_START_EVENT || first == YAML_SEQUENCE_START_EVENT;
    while (depth > 0) {
        yaml_event_t ev;
        TANDEM_TRY(next_event(p, &ev, name));
        if (ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_SEQUENCE_START_EVENT) depth++;
        if (depth > TANDEM_CONFIG_MAX_DEPTH) { /* the parser's cost grows with depth x size: stop early */
            const int line = (int)ev.start_mark.line + 1;
            yaml_event_delete(&ev);
            return tandem_fail(TANDEM_E_FORMAT, "%s:%d: a value nested deeper than %d levels; a config is flat "
                               "keys and short lists: is this the right file?", name, line, TANDEM_CONFIG_MAX_DEPTH);
        }
        if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT) depth--;
        yaml_event_delete(&ev);
    }
    return TANDEM_OK;
}

/* Where a mapping is read: the file, the section (NULL at the top level; "model", "data" or
 * "training" of a MyXTTS config) and the line each Tandem key was first given on. */
typedef struct map_ctx {
    const char *name, *section;
    int *seen_line;
    const tandem_compat **seen_as; /* per key: the MyXTTS name it was set through (NULL: its own) */
} map_ctx;

static tandem_status read_mapping(yaml_parser_t *p, tandem_config *cfg, const map_ctx *m);

/* A key of a MyXTTS section that Tandem does not know: accepted with a warning (such configs
 * carry many keys of MyXTTS's own model), naming the nearest Tandem key when one is close. */
static tandem_status skip_unknown(yaml_parser_t *p, const map_ctx *m, const char *key, int line) {
    int best = 0, best_d = 99;
    for (int i = 0; i < N_KEYS; i++) {
        int d = edit_distance(key, schema[i].key);
        if (d < best_d) best_d = d, best = i;
    }
    char hint[96] = "";
    if (best_d <= 2 + (int)strlen(key) / 4) snprintf(hint, sizeof hint, " (did you mean '%s'?)", schema[best].key);
    tandem_logf(TANDEM_LOG_WARN, "%s:%d: '%s.%s': no Tandem equivalent, ignored%s", m->name, line, m->section,
                key, hint);
    yaml_event_t ev;
    TANDEM_TRY(next_event(p, &ev, m->name));
    const yaml_event_type_t t = ev.type;
    yaml_event_delete(&ev);
    return skip_node(p, t, m->name);
}

/* The value of key (schema index ki, or -1 with a compat entry c) at origin o. */
static tandem_status read_value(yaml_parser_t *p, tandem_config *cfg, const map_ctx *m, int ki,
                                const tandem_compat *c, const char *shown, origin *o) {
    yaml_event_t vev;
    TANDEM_TRY(next_event(p, &vev, m->name));
    o->line = (int)vev.start_mark.line + 1;
    const int nested = vev.type == YAML_SEQUENCE_START_EVENT || vev.type == YAML_MAPPING_START_EVENT;
    if (vev.type == YAML_SEQUENCE_START_EVENT && ki >= 0 && !c &&
        (strcmp(schema[ki].key, "test_sentences") == 0 || is_devices(&schema[ki]))) {
        yaml_event_delete(&vev);
        return read_list(p, cfg, ki, o);
    }
    if (nested && c && (c->kind == TANDEM_COMPAT_IGNORE || c->kind == TANDEM_COMPAT_SWITCH) && !c->only) {
        const yaml_event_type_t t = vev.type;
        yaml_event_delete(&vev);
        TANDEM_TRY(skip_node(p, t, m->name));
        return apply_compat(cfg, c, "", o, shown);
    }
    if (vev.type != YAML_SCALAR_EVENT) {
        char what[96], got[32];
        if (ki >= 0) expected_text(&schema[ki], what, sizeof what);
        else snprintf(what, sizeof what, "a plain value");
        snprintf(got, sizeof got, "%s", event_kind(&vev));
        yaml_event_delete(&vev);
        return tandem_fail(TANDEM_E_INVALID, "%s:%d: key '%s': expected %s, got %s", m->name, o->line, shown,
                           what, got);
    }
    const char *v = (const char *)vev.data.scalar.value;
    /* `key:`, `key: ~` and `key: null` are YAML's null: an empty string for string keys
     * (and an error naming the empty value for the others). */
    if (vev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && (strcmp(v, "~") == 0 || strcasecmp(v, "null") == 0))
        v = "";
    tandem_status st = c ? apply_compat(cfg, c, v, o, shown) : set_key(cfg, ki, v, o);
    yaml_event_delete(&vev);
    return st;
}

/* A MyXTTS name at the top level of a file: flat files are Tandem configs (a typo-free name there
 * is still an error); MyXTTS's names are read inside its sections and on the command line. */
static tandem_status fail_flat_alias(const origin *o, const tandem_compat *c, const char *key) {
    if (c->key)
        return tandem_fail(TANDEM_E_INVALID, "%s:%d: key '%s': MyXTTS's name for '%s'; a flat Tandem config "
                           "uses Tandem's names: write '%s' (or keep MyXTTS's layout: model:, data:, training: "
                           "sections)", o->name, o->line, key, c->key, c->key);
    return tandem_fail(TANDEM_E_INVALID, "%s:%d: key '%s': MyXTTS's name, which sets nothing in Tandem (%s); "
                       "remove it from this flat config (or keep MyXTTS's layout: model:, data:, training: "
                       "sections)", o->name, o->line, key, c->why);
}

static int is_number(const key_spec *k) { return k->type == K_INT || k->type == K_INT64 || k->type == K_FLOAT; }

static double number_at(const tandem_config *cfg, const key_spec *k) {
    const char *f = (const char *)cfg + k->offset;
    if (k->type == K_INT) return *(const int *)(const void *)f;
    if (k->type == K_INT64) return (double)*(const int64_t *)(const void *)f;
    return *(const double *)(const void *)f;
}

/* A second name for a key already set (MyXTTS sets prefetch_buffer_size and pipeline_buffer_size
 * both): the larger value wins, with one INFO line. */
static tandem_status read_larger(yaml_parser_t *p, tandem_config *cfg, const map_ctx *m, int ki,
                                 const tandem_compat *c, const char *shown, origin *o) {
    const key_spec *k = &schema[ki];
    unsigned char before[8];
    memcpy(before, (const char *)cfg + k->offset, k->size);
    const double first = number_at(cfg, k);
    TANDEM_TRY(read_value(p, cfg, m, ki, c, shown, o));
    const double second = number_at(cfg, k);
    if (first > second) memcpy((char *)cfg + k->offset, before, k->size);
    tandem_logf(TANDEM_LOG_INFO, "%s:%d: '%s' sets '%s' again (first on line %d): the larger value, %g, is used",
                m->name, o->line, shown, k->key, m->seen_line[ki], first > second ? first : second);
    return TANDEM_OK;
}

/* One `key: value` pair of a mapping (the key's scalar already read). */
static tandem_status read_entry(yaml_parser_t *p, tandem_config *cfg, const map_ctx *m, const char *key,
                                int line) {
    origin o = {m->name, line};
    if (!m->section && tandem_compat_is_section(key)) {
        yaml_event_t ev;
        TANDEM_TRY(next_event(p, &ev, m->name));
        const int is_map = ev.type == YAML_MAPPING_START_EVENT;
        yaml_event_delete(&ev);
        if (!is_map)
            return tandem_fail(TANDEM_E_INVALID, "%s:%d: '%s': expected a mapping (a MyXTTS config section "
                               "of `key: value` lines)", m->name, line, key);
        const map_ctx sub = {m->name, key, m->seen_line, m->seen_as};
        return read_mapping(p, cfg, &sub);
    }
    const tandem_compat *c = tandem_compat_find(key);
    if (c && !m->section) { /* a flat file is a Tandem config: Tandem's names, Tandem's ranges */
        if (c->key && strcmp(c->key, key) == 0) c = NULL;
        else return fail_flat_alias(&o, c, key);
    }
    const int ki = find_key(c && c->key ? c->key : key);
    if (!c && ki < 0) return m->section ? skip_unknown(p, m, key, line) : fail_unknown(&o, key);
    char shown[160];
    if (m->section) snprintf(shown, sizeof shown, "%s.%s", m->section, key);
    else snprintf(shown, sizeof shown, "%s", key);
    if (ki >= 0 && m->seen_line[ki] && c != m->seen_as[ki] && is_number(&schema[ki]))
        return read_larger(p, cfg, m, ki, c, shown, &o);
    if (ki >= 0 && m->seen_line[ki])
        return tandem_fail(TANDEM_E_INVALID, "%s:%d: key '%s': given twice (first on line %d)", m->name, line,
                           schema[ki].key, m->seen_line[ki]);
    if (ki >= 0) m->seen_line[ki] = line, m->seen_as[ki] = c;
    return read_value(p, cfg, m, ki, c, shown, &o);
}

/* A mapping, one `key: value` pair at a time; MyXTTS sections recurse once. */
static tandem_status read_mapping(yaml_parser_t *p, tandem_config *cfg, const map_ctx *m) {
    for (;;) {
        yaml_event_t kev;
        TANDEM_TRY(next_event(p, &kev, m->name));
        if (kev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&kev);
            return TANDEM_OK;
        }
        const int line = (int)kev.start_mark.line + 1;
        if (kev.type != YAML_SCALAR_EVENT) {
            const char *what = event_kind(&kev);
            yaml_event_delete(&kev);
            return tandem_fail(TANDEM_E_INVALID, "%s:%d: expected a key (a plain name), got %s", m->name,
                               line, what);
        }
        char key[128];
        snprintf(key, sizeof key, "%s", (const char *)kev.data.scalar.value);
        yaml_event_delete(&kev);
        TANDEM_TRY(read_entry(p, cfg, m, key, line));
    }
}

static tandem_status read_stream(yaml_parser_t *p, tandem_config *cfg, const char *name) {
    yaml_event_t ev;
    TANDEM_TRY(next_event(p, &ev, name)); /* STREAM-START */
    yaml_event_delete(&ev);
    TANDEM_TRY(next_event(p, &ev, name));
    if (ev.type == YAML_STREAM_END_EVENT) { /* empty file or only comments: all defaults */
        yaml_event_delete(&ev);
        return TANDEM_OK;
    }
    yaml_event_delete(&ev); /* DOCUMENT-START */
    TANDEM_TRY(next_event(p, &ev, name));
    int line = (int)ev.start_mark.line + 1;
    int is_map = ev.type == YAML_MAPPING_START_EVENT;
    int empty_doc = ev.type == YAML_SCALAR_EVENT && ev.data.scalar.length == 0;
    yaml_event_delete(&ev);
    int seen_line[N_KEYS] = {0};
    const tandem_compat *seen_as[N_KEYS] = {0};
    const map_ctx top = {name, NULL, seen_line, seen_as};
    if (is_map) TANDEM_TRY(read_mapping(p, cfg, &top));
    else if (!empty_doc)
        return tandem_fail(TANDEM_E_INVALID,
                           "%s:%d: expected a mapping of `key: value` lines at the top level",
                           name, line);
    TANDEM_TRY(next_event(p, &ev, name)); /* DOCUMENT-END */
    yaml_event_delete(&ev);
    TANDEM_TRY(next_event(p, &ev, name));
    line = (int)ev.start_mark.line + 1;
    int more = ev.type != YAML_STREAM_END_EVENT;
    yaml_event_delete(&ev);
    if (more)
        return tandem_fail(TANDEM_E_INVALID,
                           "%s:%d: expected one YAML document, got a second one", name, line);
    return TANDEM_OK;
}

tandem_status tandem_config_load_string(tandem_config *cfg, const char *yaml, size_t len,
                                        const char *origin_name) {
    if (!cfg || (!yaml && len))
        return tandem_fail(TANDEM_E_INVALID, "tandem_config_load_string: NULL argument");
    const char *name = origin_name ? origin_name : "config";
    tandem_config_init(cfg);
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return tandem_fail(TANDEM_E_NOMEM, "%s: cannot initialise the YAML parser", name);
    yaml_parser_set_input_string(&p, (const unsigned char *)(yaml ? yaml : ""), len);
    tandem_status st = read_stream(&p, cfg, name);
    yaml_parser_delete(&p);
    if (st != TANDEM_OK) return st;
    st = tandem_config_check(cfg);
    if (st != TANDEM_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", tandem_last_error());
        return tandem_fail(st, "%s: %s", name, why);
    }
    return TANDEM_OK;
}

tandem_status tandem_config_load(tandem_config *cfg, const char *path) {
    if (!cfg || !path) return tandem_fail(TANDEM_E_INVALID, "tandem_config_load: NULL argument");
    char *text = NULL;
    size_t len = 0;
    /* a config is a page of YAML: anything larger is the wrong file (or an endless one) */
    tandem_status st = tandem_file_read_limited(path, TANDEM_CONFIG_MAX_BYTES,
                                                "a config file is at most 1 MiB: is this the right file?",
                                                &text, &len);
    if (st != TANDEM_OK) {
        char why[512]; /* copied: tandem_fail overwrites the message it would read */
        snprintf(why, sizeof why, "%s", tandem_last_error());
        return tandem_fail(st, "config: %s", why);
    }
    st = tandem_config_load_string(cfg, text, len, path);
    tandem_free(text);
    return st;
}

/* ---- dump ----------------------------------------------------------------------------------- */

/* Code points a YAML reader refuses raw (C1 controls, U+FFFE/U+FFFF) or reads as line breaks
 * or a byte-order mark (NEL, U+2028, U+2029, U+FEFF): written as \u escapes so the dump loads
 * back to the same string. */
static int needs_u_escape(uint32_t cp) {
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 || cp == 0xfeff || cp == 0xfffe ||
           cp == 0xffff;
}

static void dump_string(tandem_strbuf *o, const char *s) {
    tandem_strbuf_printf(o, "\"");
    const unsigned char *c = (const unsigned char *)s;
    size_t left = strlen(s);
    while (left) {
        uint32_t cp;
        int k = tandem_utf8_decode(c, left, &cp);
        if (k == 0) { /* not UTF-8 (set and load refuse it): at least keep the byte visible */
            tandem_strbuf_printf(o, "\\x%02x", *c);
            k = 1;
        } else if (cp == '"' || cp == '\\') {
            tandem_strbuf_printf(o, "\\%c", (int)cp);
        } else if (cp < 0x20 || cp == 0x7f) {
            tandem_strbuf_printf(o, "\\x%02x", (unsigned)cp);
        } else if (needs_u_escape(cp)) {
            tandem_strbuf_printf(o, "\\u%04x", (unsigned)cp);
        } else {
            tandem_strbuf_printf(o, "%.*s", k, (const char *)c);
        }
        c += k;
        left -= (size_t)k;
    }
    tandem_strbuf_printf(o, "\"");
}

/* Shortest %g text that reads back as the same double. */
static void dump_double(tandem_strbuf *o, double v) {
    char t[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(t, sizeof t, "%.*g", prec, v);
        if (strtod(t, NULL) == v) break;
    }
    tandem_strbuf_printf(o, "%s", t);
}

static void dump_value(tandem_strbuf *o, const tandem_config *cfg, const key_spec *k) {
    const char *field = (const char *)cfg + k->offset;
    int iv;
    int64_t lv;
    double dv;
    switch (k->type) {
    case K_INT: memcpy(&iv, field, sizeof iv); tandem_strbuf_printf(o, "%d", iv); break;
    case K_INT64: memcpy(&lv, field, sizeof lv); tandem_strbuf_printf(o, "%lld", (long long)lv); break;
    case K_FLOAT: memcpy(&dv, field, sizeof dv); dump_double(o, dv); break;
    case K_STRING: dump_string(o, field); break;
    case K_BOOL: memcpy(&iv, field, sizeof iv); tandem_strbuf_printf(o, "%s", iv ? "true" : "false"); break;
    case K_ENUM: {
        memcpy(&iv, field, sizeof iv);
        const char *c = k->choices;
        for (int i = 0; i < iv && c; i++) {
            c = strchr(c, '|');
            if (c) c++;
        }
        size_t n = c ? strcspn(c, "|") : 0;
        tandem_strbuf_printf(o, "%.*s", (int)n, c ? c : "");
        break;
    }
    }
}

size_t tandem_config_dump(const tandem_config *cfg, char *buf, size_t cap) {
    tandem_strbuf o = {buf, buf ? cap : 0, 0};
    if (o.cap) buf[0] = 0;
    for (int i = 0; cfg && i < N_KEYS; i++) {
        tandem_strbuf_printf(&o, "%s: ", schema[i].key);
        dump_value(&o, cfg, &schema[i]);
        tandem_strbuf_printf(&o, "\n");
    }
    return o.len;
}

tandem_status tandem_config_get(const tandem_config *cfg, const char *key, char *buf, size_t cap) {
    if (!cfg || !key || !buf || !cap) return tandem_fail(TANDEM_E_INVALID, "tandem_config_get: NULL argument");
    buf[0] = 0;
    const origin o = {"config", 0};
    const int ki = find_key(key);
    if (ki < 0) return fail_unknown(&o, key);
    const key_spec *k = &schema[ki];
    char text[TANDEM_CONFIG_PATH_MAX + 64];
    tandem_strbuf sb = {text, sizeof text, 0};
    /* strings as they are (what set takes back); everything else as the dump writes it */
    if (k->type == K_STRING) tandem_strbuf_printf(&sb, "%s", (const char *)cfg + k->offset);
    else dump_value(&sb, cfg, k);
    if (sb.len >= cap)
        return tandem_fail(TANDEM_E_INVALID, "tandem_config_get: the value of '%s' needs %zu bytes, "
                           "the buffer has %zu (TANDEM_CONFIG_VALUE_MAX always fits)", key, sb.len + 1, cap);
    memcpy(buf, text, sb.len + 1);
    return TANDEM_OK;
}

tandem_status tandem_config_create(tandem_config **out) {
    if (!out) return tandem_fail(TANDEM_E_INVALID, "tandem_config_create: NULL argument");
    *out = tandem_malloc(sizeof **out);
    if (!*out) return tandem_fail(TANDEM_E_NOMEM, "config: out of memory (%zu bytes)", sizeof **out);
    tandem_config_init(*out);
    return TANDEM_OK;
}

void tandem_config_destroy(tandem_config *cfg) { tandem_free(cfg); }

size_t tandem_config_describe(char *buf, size_t cap) {
    tandem_strbuf o = {buf, cap, 0};
    if (cap) buf[0] = 0;
    for (int i = 0; i < N_KEYS; i++) {
        char what[96];
        expected_text(&schema[i], what, sizeof what);
        tandem_strbuf_printf(&o, "  %-21s %s (default %s%s%s)\n  %-21s   %s\n", schema[i].key, schema[i].doc,
             schema[i].type == K_STRING ? "'" : "", schema[i].def,
             schema[i].type == K_STRING ? "'" : "", "", what);
    }
    return o.len;
}

/* ---- the schema and the MyXTTS names for tools (help, flags, docs) -------------------------- */

int tandem_config_key_count(void) { return N_KEYS; }

tandem_status tandem_config_key_at(int i, tandem_config_key_info *out) {
    if (!out || i < 0 || i >= N_KEYS)
        return tandem_fail(TANDEM_E_INVALID, "tandem_config_key_at: index %d outside [0, %d) or NULL out",
                           i, N_KEYS);
    memset(out, 0, sizeof *out);
    out->key = schema[i].key;
    out->doc = schema[i].doc;
    out->def = schema[i].def;
    out->is_bool = schema[i].type == K_BOOL;
    expected_text(&schema[i], out->expected, sizeof out->expected);
    return TANDEM_OK;
}

int tandem_config_alias_count(void) { return tandem_compat_count(); }

tandem_status tandem_config_alias_at(int i, tandem_config_alias_info *out) {
    const tandem_compat *c = tandem_compat_at(i);
    if (!out || !c)
        return tandem_fail(TANDEM_E_INVALID, "tandem_config_alias_at: index %d outside [0, %d) or NULL out",
                           i, tandem_compat_count());
    out->name = c->name;
    out->key = c->key;
    out->why = c->why;
    out->is_switch = c->kind == TANDEM_COMPAT_SWITCH;
    return TANDEM_OK;
}

int tandem_config_name_kind(const char *name) {
    char n[128];
    if (!name || !normalise_name(name, n, sizeof n)) return TANDEM_CONFIG_NAME_UNKNOWN;
    const tandem_compat *c = tandem_compat_find(n);
    if (c && c->key && strcmp(c->key, n) == 0) return TANDEM_CONFIG_NAME_KEY; /* a key with a MyXTTS range */
    if (c) return c->kind == TANDEM_COMPAT_SWITCH || c->kind == TANDEM_COMPAT_BOOL_MAP ? TANDEM_CONFIG_NAME_SWITCH
                                                                                     : TANDEM_CONFIG_NAME_ALIAS;
    return find_key(n) >= 0 ? TANDEM_CONFIG_NAME_KEY : TANDEM_CONFIG_NAME_UNKNOWN;
}

int64_t tandem_config_epoch_steps(const tandem_config *cfg, uint32_t n_train) {
    const int ki = find_key("max_steps");
    if (cfg->epochs <= 0 || (cfg->explicit_keys & ((uint64_t)1 << ki))) return 0;
    const int64_t per_step = (int64_t)cfg->batch_size * cfg->grad_accum;
    const int64_t steps = (cfg->epochs * (int64_t)n_train + per_step - 1) / per_step;
    return steps < 1 ? 1 : steps;
}
