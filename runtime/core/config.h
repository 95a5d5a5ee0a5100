/* config.h — the run configuration: one flat YAML mapping of `key: value`, described by a
 * table-driven schema (config.c: key, type, default, range, doc). The same table validates
 * the file, command-line overrides (tandem_config_set) and the YAML dump that goes into
 * checkpoints, so a key is added in one place.
 *
 * Presets: `model_size: tiny|base` fills d_model, layers, heads, reduction, max_text and
 * max_frames — except those given explicitly (in the file or by an override), whatever the
 * order. `custom` fills nothing: unset keys keep their defaults (the tiny values).
 *
 * The public face is runtime/tandem_config.h (an opaque handle, create / destroy / get); this
 * header gives the runtime the fields, which the typedef there names.
 * Owns nothing on the heap: strings live in fixed fields, so a config can be copied by value.
 * Errors: TANDEM_E_INVALID with "<file>:<line>: key '<k>': expected <what>, got '<v>'";
 * a missing file is TANDEM_E_IO.
 */
#ifndef TANDEM_RUNTIME_CONFIG_H
#define TANDEM_RUNTIME_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "tandem.h"

#define TANDEM_CONFIG_PATH_MAX 1024
#define TANDEM_CONFIG_SENTENCES_MAX 1024
#define TANDEM_CONFIG_SENTENCE_SEP '|'
#define TANDEM_CONFIG_MAX_PREFETCH 16 /* most ring slots prefetch_buffer_size allows */
#define TANDEM_CONFIG_MAX_BYTES ((uint64_t)1 << 20) /* largest config file read */

typedef enum tandem_model_size {
    TANDEM_MODEL_TINY = 0,
    TANDEM_MODEL_BASE,
    TANDEM_MODEL_CUSTOM,
} tandem_model_size;

typedef enum tandem_precision {
    TANDEM_PRECISION_FP32 = 0,
    TANDEM_PRECISION_BF16,
} tandem_precision;

typedef struct tandem_config {
    /* model */
    int model_size; /* tandem_model_size */
    int d_model, layers, heads;
    int reduction;  /* r: mel frames predicted per position */
    int max_text;   /* token positions, incl. language, BOS and EOS */
    int max_frames; /* mel frames per utterance (a multiple of reduction) */
    int n_mels;     /* TANDEM_MEL_N_MELS (80), fixed by the feature recipe */
    int text_input; /* tandem_text_input: 0 characters, 1 espeak-ng phonemes */
    /* data pipeline */
    int batch_size, grad_accum;
    int buckets;              /* length bucketing: shape classes (0 or 1 = off) */
    int prefetch_buffer_size; /* ring slots on the model device */
    int num_workers;          /* audio loader threads; 0 = one per CPU core */
    int shuffle;              /* bool */
    int force_staged;         /* bool: ring copies through pinned host memory despite peer access */
    int cuda_graphs;          /* bool: a CUDA model device replays the step as a graph (default) */
    int strict_gemm;          /* bool: a GEMM that falls back from the library's fused plan is an error */
    int64_t data_gpu_memory, model_gpu_memory; /* arena budgets in MiB; 0 = size by plan */
    /* training */
    int precision; /* tandem_precision */
    int tf32;      /* bool: fp32 GEMMs on CUDA take TF32 inputs (default); false: exact fp32 */
    int attention; /* 0 auto (default: materialised on CUDA, fused on the host), 1 fused,
                      2 materialised (runtime/model/attention.h) */
    int64_t seed, max_steps;
    int64_t epochs; /* > 0: max_steps from the training set's size at start (tandem_config_epoch_steps) */
    double lr;
    char train_data[TANDEM_CONFIG_PATH_MAX], val_data[TANDEM_CONFIG_PATH_MAX];
    double val_fraction; /* > 0: that share of train_data held out for validation (seeded), instead of val_data */
    int dataset_layout; /* 0 auto, 1 ljspeech, 2 generic, 3 vctk, 4 libritts (tandem_data_layout) */
    int vctk_mic;       /* 1 or 2: VCTK 0.92's <id>_mic<N> files */
    char out[TANDEM_CONFIG_PATH_MAX];
    char tensorboard_dir[TANDEM_CONFIG_PATH_MAX]; /* "" = out */
    /* sentences synthesized free-running at every validation (WAVs under out/samples): a YAML
       list of strings, stored joined by '|' (TANDEM_CONFIG_SENTENCE_SEP); "" = none */
    char test_sentences[TANDEM_CONFIG_SENTENCES_MAX];
    /* optimizer and schedule (train_step.h) */
    int64_t warmup_steps;
    double min_lr_ratio, weight_decay, adam_beta1, adam_beta2, adam_eps, grad_clip;
    double stop_loss_weight;
    double prenet_dropout;       /* drop probability on the prenet output (training only) */
    double ga_weight, ga_sigma;  /* guided-attention loss (docs/TRAINING.md) */
    int ga_heads;                /* the first ga_heads heads of every layer */
    /* training loop (trainer.h) */
    int64_t val_every, log_every, checkpoint_every;
    int val_batches, keep, max_nonfinite;
    int tensorboard; /* bool: TensorBoard event files in out (runtime/run/run_tb.h) */
    double dp_bucket_mb; /* data-parallel: gradient all-reduce bucket, MiB of the wire dtype */
    int dp_grad_dtype;   /* data-parallel: 0 f32, 1 bf16 on the wire */
    int data_gpu, model_gpu; /* CUDA ordinals of the two roles; -1 = automatic */
    /* several model devices in one process (runtime/run/replicas.h): "auto" or a list of
       ordinals, read with tandem_config_device_list */
    char model_devices[64], data_devices[64];

    uint64_t explicit_keys; /* bit i: schema key i was given (presets leave it alone) */
} tandem_config;

/* model_devices / data_devices: at most this many entries, ordinals up to the ordinal maximum. */
#define TANDEM_CONFIG_MAX_DEVICES 16
#define TANDEM_CONFIG_MAX_ORDINAL 1024
/* A device list's ordinals into out[cap]: their count, 0 for "auto" (or empty), -1 when it is
 * not a list of distinct ordinals in [0, TANDEM_CONFIG_MAX_ORDINAL] separated by ',' or '|'
 * (a YAML list is stored joined by '|'), optionally in brackets ("[1, 2]"), or has more than
 * cap entries. */
int tandem_config_device_list(const char *s, int *out, int cap);

/* Defaults (model_size tiny). */
void tandem_config_init(tandem_config *cfg);
/* The max_steps that `epochs` asks for over n_train usable utterances (ceil(epochs * n_train /
 * (batch_size * grad_accum)), at least 1); 0 when epochs is 0 or max_steps was given explicitly
 * (it wins). The trainer applies it at start and logs it. */
int64_t tandem_config_epoch_steps(const tandem_config *cfg, uint32_t n_train);
/* The rest — load, load_string, set, set_from, get, check, dump, describe, create, destroy — is
 * the public API, declared and documented in runtime/tandem_config.h (included by tandem.h). */

#endif
