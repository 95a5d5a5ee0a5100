/* config_compat.c — the MyXTTS names table (config_compat.h). Each row comes from MyXTTS's own
 * documentation or config classes (docs/MIGRATING.md cites where); to add one, add a row. */
#include "runtime/core/config_compat.h"

#include <string.h>

#define RENAME(n, k, why) {#n, #k, TANDEM_COMPAT_RENAME, NULL, NULL, NULL, 0, why}
#define CLAMP(n, k, hi, why) {#n, #k, TANDEM_COMPAT_RENAME, NULL, NULL, NULL, hi, why}
#define BOOLMAP(n, k, t, f, why) {#n, #k, TANDEM_COMPAT_BOOL_MAP, t, f, NULL, 0, why}
#define IGNORE(n, why) {#n, NULL, TANDEM_COMPAT_IGNORE, NULL, NULL, NULL, 0, why}
#define ONLY(n, v, why) {#n, NULL, TANDEM_COMPAT_IGNORE, NULL, NULL, v, 0, why}
#define SWITCH(n, why) {#n, NULL, TANDEM_COMPAT_SWITCH, NULL, NULL, NULL, 0, why}

#define RING_WHY "ring slots on the model device; more than 16 add memory, not overlap: clamped to 16"
#define SHAPES_WHY "always on in Tandem: every batch is [batch_size, max_text] tokens and " \
                   "[batch_size, max_frames, 80] mels, so nothing is ever re-traced or re-planned"

static const tandem_compat table[] = {
    /* data pipeline */
    CLAMP(prefetch_buffer_size, prefetch_buffer_size, 100, RING_WHY),
    CLAMP(pipeline_buffer_size, prefetch_buffer_size, 100, RING_WHY),
    CLAMP(buffer_size, prefetch_buffer_size, 100, RING_WHY),
    RENAME(max_text_length, max_text, "token positions, counting the language tag, BOS and EOS"),
    RENAME(max_mel_frames, max_frames, "mel frames per utterance (hop 256 at 22050 Hz); longer "
                                       "utterances are skipped and counted at start"),
    RENAME(dataset_path, train_data, "an LJSpeech-layout directory (metadata.csv, wavs/); "
                                     "validation comes from val_data or val_fraction"),
    SWITCH(enable_memory_isolation, "always on in Tandem: each role has its own device, stream "
                                    "and arena, planned before training and never grown"),
    SWITCH(enable_static_shapes, SHAPES_WHY),
    SWITCH(pad_to_fixed_length, SHAPES_WHY),
    SWITCH(prefetch_to_gpu, "always on in Tandem: the ring of ready batches lives on the model device"),
    SWITCH(no_prefetch_to_gpu, "Tandem's ring always lives on the model device (force_staged "
                               "only changes how slots are copied there)"),
    SWITCH(pin_memory, "always on in Tandem: host staging buffers are pinned"),
    SWITCH(persistent_workers, "always on in Tandem: loader threads live as long as the run"),
    SWITCH(enable_xla, "Tandem's kernels are compiled ahead of time into the fatbin"),
    BOOLMAP(mixed_precision, precision, "bf16", "fp32", "bf16 activations and weight copies "
                                                        "(true) or fp32 (false)"),
    IGNORE(sample_rate, "the feature recipe resamples every file to 22050 Hz"),
    IGNORE(shuffle_buffer_multiplier, "Tandem shuffles the whole index each epoch (shuffle)"),
    IGNORE(preprocessing_mode, "text is cached by `tandem prep` / at start; mels are computed "
                               "on the data device every batch"),
    IGNORE(train_split, "Tandem trains on the rest of train_data after val_fraction (MyXTTS's val_split)"),
    RENAME(val_split, val_fraction, "share of train_data held out for validation, seeded"),
    IGNORE(visible_gpus, "pick devices with data_gpu and model_gpu (CUDA ordinals), or model_devices "
                         "and data_devices for several replicas"),
    SWITCH(multi_gpu, "several GPUs train replicas data-parallel when model_devices lists them "
                      "(e.g. [1, 2]) or one process per GPU is launched with torchrun or mpirun "
                      "(docs/SCALING.md)"),
    IGNORE(max_memory_fraction, "arenas are planned exactly (`tandem plan`); cap them with "
                                "data_gpu_memory / model_gpu_memory (MiB)"),
    /* training */
    RENAME(learning_rate, lr, "peak learning rate after warm-up"),
    RENAME(gradient_accumulation_steps, grad_accum, "batches per optimizer step"),
    RENAME(gradient_clip_norm, grad_clip, "global gradient-norm clip"),
    RENAME(beta1, adam_beta1, "AdamW beta1"),
    RENAME(beta2, adam_beta2, "AdamW beta2"),
    RENAME(eps, adam_eps, "AdamW epsilon"),
    RENAME(save_step, checkpoint_every, "checkpoint every N steps"),
    RENAME(val_step, val_every, "validation every N steps"),
    RENAME(log_step, log_every, "metrics line every N steps"),
    RENAME(checkpoint_dir, out, "the run directory: checkpoints, metrics.jsonl, figures"),
    ONLY(optimizer, "adamw", "Tandem trains with AdamW"),
    IGNORE(scheduler, "Tandem's schedule is linear warm-up (warmup_steps) then cosine to "
                      "lr * min_lr_ratio"),
    IGNORE(min_learning_rate, "set min_lr_ratio = min_learning_rate / lr"),
    IGNORE(optimization_level, "Tandem has no hyper-parameter presets besides model_size"),
    SWITCH(apply_fast_convergence, "Tandem has no hyper-parameter presets besides model_size"),
    RENAME(tensorboard_log_dir, tensorboard_dir, "TensorBoard event files (scalars, figures, audio) "
                                                 "go there; metrics.jsonl and the PNG figures stay in out"),
    BOOLMAP(enable_eager_debug, cuda_graphs, "false", "true", "eager: the training step is launched kernel "
                                                              "by kernel, not replayed as a CUDA graph"),
    BOOLMAP(enable_graph_mode, cuda_graphs, "true", "false", "the training step captured once as a CUDA "
                                                             "graph and replayed"),
    SWITCH(reset_training, "start a new run with --new-run (the old files move to out/previous-<n>)"),
    SWITCH(enable_gpu_stabilizer, "Tandem needs no stabiliser: the ring keeps the model device fed"),
    SWITCH(disable_gpu_stabilizer, "Tandem has no GPU stabiliser"),
    ONLY(decoder_strategy, "autoregressive", "Tandem's model is an autoregressive decoder"),
    IGNORE(vocoder_type, "`tandem synth` uses Griffin-Lim; `tandem features` writes mels for "
                         "any other vocoder"),
};
#define N_ENTRIES (int)(sizeof table / sizeof table[0])

const tandem_compat *tandem_compat_find(const char *name) {
    for (int i = 0; i < N_ENTRIES; i++)
        if (strcmp(table[i].name, name) == 0) return &table[i];
    return NULL;
}

int tandem_compat_count(void) { return N_ENTRIES; }

const tandem_compat *tandem_compat_at(int i) { return i >= 0 && i < N_ENTRIES ? &table[i] : NULL; }

int tandem_compat_is_section(const char *name) {
    return strcmp(name, "model") == 0 || strcmp(name, "data") == 0 || strcmp(name, "training") == 0;
}
