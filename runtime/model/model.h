/* model.h — the acoustic model of DESIGN.md §7 on the model device: sizes, the parameter table,
 * the flat parameter / gradient / AdamW-moment tensors, and every activation and scratch tensor
 * of one micro-batch's forward and backward, all declared to the model device's pool.
 *
 *   sequence: [lang, BOS, text..., EOS, pad...] (Tt = max_text positions), then Tm = F / r mel
 *   positions; input at mel position j = GELU(prenet(frames of group j - 1)), zeros for j = 0
 *   (in training with prenet dropout on that output: model.drop);
 *   + learned positions; L pre-LN blocks (LN → causal MHA with key padding mask → residual;
 *   LN → MLP d → 4d → d with GELU → residual); final LN; mel head d → r·80 and stop head
 *   d → r at the mel positions. Loss: masked L1 on real frames + stop BCE-with-logits.
 *
 * Parameters: ONE flat f32 tensor [P] (and grads [P], AdamW m [P], v [P]); each parameter is a
 * named view at an element offset (aligned to 64 elements = 256 bytes). The parameters with
 * weight decay (the linear layers' weight matrices) come first, [0, decay_end), then the rest
 * (norms, biases, embeddings: no decay), so zeroing, the global norm and AdamW each run over
 * one or two flat spans. Linear weights are stored [out, in] (PyTorch's nn.Linear layout):
 * y = x W^T + b.
 *
 * Memory: everything is a pool tensor. Per-step tensors carry their first/last use as phase
 * indices (tandem_model_phase) so the planner overlays what is dead: forward scratch with the
 * backward's, each layer's saved activations end at that layer's backward.
 *
 * Precision (dims.bf16, the config's `precision`):
 *   fp32 — every tensor f32 (the host backend, and cuda devices by choice).
 *   bf16 — cuda model devices only; a host model device is refused with TANDEM_E_UNSUPPORTED
 *          at declare (the host backend trains in fp32: its GEMM takes f32 only, and a
 *          silent fallback would hide that the run is not the one configured).
 *     * Master weights, gradients and AdamW moments stay the flat f32 tensors above; the
 *       update is f32. Every parameter gets a bf16 copy, wcopy [n_flat] (the GEMMs read the
 *       linear weights, [0, decay_end), and the MLP fc bias from it), cast once per update
 *       (right after AdamW) or, when stale (after init, or after a caller wrote params: see
 *       tandem_model_params_changed), at the next forward. Norms, the other biases and
 *       embeddings are read from the f32 masters.
 *     * Every GEMM takes bf16 A and B and accumulates in f32 (cuBLASLt CUDA_R_16BF layouts
 *       with CUBLAS_COMPUTE_32F; the fatbin's gemm_bf16 without it) into an f32 C, because
 *       its output feeds an f32 op (residual, softmax, loss) or is a parameter gradient;
 *       except the MLP's: the fc GEMM's GELU_AUX_BIAS epilogue writes g and its aux f in bf16
 *       (with the fc bias from the bf16 copy: cuBLASLt's bias and aux types are D's), the
 *       proj dx GEMM's DGELU epilogue reads f and writes df in bf16 (the fc backward's operand;
 *       its bias gradient sums the bf16 df in f32).
 *     * Activations that only feed GEMMs are stored bf16: the prenet input, LN outputs
 *       (h1, h2, hf), q/k/v, attention probabilities p, heads merged (att), GELU outputs g.
 *       Their producers (prenet input, LayerNorm, qkv split, softmax, heads merge, GELU)
 *       compute in f32 and write the bf16 tensor themselves (an optional bf16 output,
 *       kernels/ktypes.h tandem_k_store2: the round-to-nearest-even a cast would apply to the
 *       same f32, so no cast pass and the same bits); softmax reads S from the f32 scores.
 *       Only the fused attention's qkv is still cast. The residual stream, LN statistics,
 *       heads outputs and losses stay f32.
 *     * Backward: gradients are f32; where one is a GEMM operand (dy of every linear layer,
 *       dO and dS in attention) its bf16 copy goes into one scratch (gbf): written by the
 *       producer alongside the f32 (GELU's backward, the residual's add, the qkv merge; dO
 *       bf16 only), else cast (the heads' dy, the last layer's dres, the fused attention's
 *       dqkv); softmax's backward reads the bf16 p and writes dS in bf16. Parameter
 *       gradients: f32.
 *   Expected agreement with fp32: bf16 rounds to 8 significant bits (relative 2^-9 = 2e-3
 *   per value); test_bf16 derives and checks the loss tolerance.
 * Owns: the parameter table, the per-layer tensor handles and one pinned host staging block
 * (parameter init chunks, host lengths, step results), all allocated before the pool is
 * committed; nothing after.
 */
#ifndef TANDEM_RUNTIME_MODEL_H
#define TANDEM_RUNTIME_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/config.h"
#include "runtime/core/dev.h"
#include "runtime/core/staging.h"
#include "runtime/model/attention.h"
#include "tandem.h"

#define TANDEM_MODEL_MAX_CLASSES 8 /* shape classes (length buckets) at most */

#define TANDEM_ATTN_AUTO (-1) /* tandem_model_dims.attn_materialised: by backend */

typedef struct tandem_model_dims {
    int batch;            /* B: utterances per micro-batch */
    int d, layers, heads; /* model width, blocks, attention heads */
    int head_dim;         /* dh = d / heads */
    int ff;               /* MLP width, 4d */
    int r, n_mels;        /* reduction factor, 80 */
    int group;            /* r * n_mels: floats a mel position predicts */
    int text_len;         /* Tt = max_text */
    int frames;           /* F = max_frames */
    int mel_len;          /* Tm = F / r */
    int seq;              /* T = Tt + Tm */
    int vocab;            /* V: symbol table size */
    int micro_batches;    /* grad_accum: loss slots per step */
    int forward_only;     /* 1: inference (tandem synth): no gradients, AdamW moments or
                             backward tensors are declared; backward is refused */
    int bf16;             /* 1: precision bf16 (see "Precision" above; cuda devices only) */
    int tf32;             /* 1: fp32 GEMMs ask for TF32 inputs (tandem_gemm_desc.tf32; cuBLASLt
                             only: the host and the fatbin GEMM stay exact) */
    int strict_gemm;      /* 1: a GEMM shape that falls back from the library's fused plan fails
                             tandem_model_declare (config strict_gemm) */
    int attn_materialised; /* 1: the materialised attention at any head size; 0: fused where it
                              serves (attention.h); TANDEM_ATTN_AUTO (config `attention: auto`):
                              fused on the host, materialised on a CUDA model device (also in
                              bf16, until a GPU has measured the tensor-core kernels against it:
                              docs/TRAINING.md "Attention paths"); decided when the model is
                              declared */
    /* Length bucketing (docs/TRAINING.md, "Length bucketing"): the frame counts of the shape
     * classes a batch may have, ascending, each a multiple of r, the last = frames; n_classes 0:
     * one class, frames. Every per-step tensor is declared for frames (the largest class); a
     * batch of a smaller class uses the leading part of each, packed with its own T
     * (tandem_model_use_frames), and every GEMM shape of every class is resolved at declare. */
    int n_classes;
    int class_frames[TANDEM_MODEL_MAX_CLASSES];
} tandem_model_dims;

/* From a checked config (model keys, batch_size, grad_accum) and the symbol table size. */
tandem_status tandem_model_dims_from_config(const tandem_config *cfg, int vocab, tandem_model_dims *out);

typedef enum tandem_param_init {
    TANDEM_PARAM_NORMAL = 0, /* N(0, std^2) from the seed */
    TANDEM_PARAM_ZEROS,
    TANDEM_PARAM_ONES,
} tandem_param_init;

#define TANDEM_MODEL_PARAM_NAME_MAX 64

typedef struct tandem_model_param {
    char name[TANDEM_MODEL_PARAM_NAME_MAX]; /* "layers.0.attn.qkv.weight" */
    int ndim;
    int64_t shape[2];
    int64_t numel;
    int64_t offset; /* elements into params / grads / m / v */
    tandem_param_init init;
    float std; /* TANDEM_PARAM_NORMAL */
    int decay; /* 1: AdamW weight decay applies */
} tandem_model_param;

/* Indices into the parameter table. */
typedef struct tandem_model_layer_params {
    int ln1_g, ln1_b, qkv_w, qkv_b, out_w, out_b, ln2_g, ln2_b, fc_w, fc_b, proj_w, proj_b;
} tandem_model_layer_params;

typedef struct tandem_model_top_params {
    int sym_emb, pos_emb, prenet_w, prenet_b, lnf_g, lnf_b, mel_w, mel_b, stop_w, stop_b;
} tandem_model_top_params;

/* One block's tensors kept from its forward for its backward (N = B * T rows). The last block
 * runs past its attention on the Np = B * Tm mel rows only (tandem_model_mlp_rows): the text
 * rows' outputs there reach neither the heads nor any later block, so its x_mid, h2, f, g (and
 * LN2's statistics) have Np rows, the model's x_out, hf and dhf too. */
typedef struct tandem_model_layer {
    tandem_tensor *x;                   /* [B, T, d] the block's input (residual stream) */
    tandem_tensor *h1, *mean1, *rstd1;  /* [B, T, d], [B*T], [B*T]: LN1 */
    tandem_tensor *q, *k, *v;           /* [B, H, T, dh] (bf16 in bf16 mode); materialised only */
    tandem_tensor *p;                   /* [B, H, T, T] attention probabilities (bf16 mode: bf16);
                                           materialised attention only (attention.h) */
    tandem_tensor *qkv;                 /* [B, T, 3d] (bf16 mode: bf16); fused attention only */
    tandem_tensor *lse;                 /* [B, H, T] f32 softmax log-sum-exp; fused only */
    tandem_tensor *ga_sum;              /* [B, H, Tm] f32 guided-attention sums (the first
                                           ga_heads heads); fused only */
    tandem_tensor *att;                 /* [B, T, d] heads merged, before the output projection
                                           (h1, h2, g, q, k, v, p, att: bf16 in bf16 mode) */
    tandem_tensor *x_mel, *att_mel;     /* last block only: [B, Tm, d] the mel rows of x (f32) and
                                           of att (att's type), the MLP part's inputs */
    tandem_tensor *x_mid;               /* [B, T, d] x + attention */
    tandem_tensor *h2, *mean2, *rstd2;  /* [B, T, d], [B*T], [B*T]: LN2 */
    tandem_tensor *f;                   /* [B, T, 4d] fc output before GELU */
    tandem_tensor *g;                   /* [B, T, 4d] GELU(f) */
} tandem_model_layer;

/* One micro-batch on the model device (a ring slot). Its lengths are device tensors (the
 * slot's): the batch_prep kernel builds the attention key mask and the masked-L1 weights
 * (which carry the loss normaliser) from them on the device, so no device→host read sits
 * inside a step. A caller that has the lengths on the host only (tests, synthesis) may leave
 * the device tensors NULL and give host arrays instead: they are staged into pinned memory and
 * uploaded asynchronously (host→device, no synchronisation), then the same kernel runs. */
typedef struct tandem_model_batch {
    const tandem_tensor *tokens;       /* [B, Tt] i32 */
    const tandem_tensor *mels;         /* [B, F, 80] f32 */
    const tandem_tensor *frame_mask;   /* [B, F] f32: 1 real frame, 0 padding */
    const tandem_tensor *stop_targets; /* [B, F] f32: 1 from the last real frame on */
    const tandem_tensor *text_lengths;  /* [B] i32 on the model device: tokens incl. language,
                                           BOS, EOS; or NULL: host_text_lengths */
    const tandem_tensor *frame_lengths; /* [B] i32 on the model device: real frames (<= F); or
                                           NULL: host_frame_lengths */
    const int32_t *host_text_lengths;  /* host [B], only when text_lengths is NULL */
    const int32_t *host_frame_lengths; /* host [B], only when frame_lengths is NULL */
    int frames; /* the batch's shape class: F of its mels/mask/stop targets, packed [B, frames, 80]
                   in the leading part of tensors declared for dims.frames (length bucketing);
                   0: dims.frames (the one shape without bucketing) */
} tandem_model_batch;

/* The counters of the prenet dropout mask (kernels/layers.h, prenet_dropout). */
typedef struct tandem_model_dropout {
    float p;       /* drop probability; 0 = off */
    uint64_t seed; /* the run's seed */
    int64_t step;  /* optimizer step */
    const int *step_at; /* the device's step counter (train_ctr) or NULL: `step` */
    int64_t micro; /* micro-batch within the step */
} tandem_model_dropout;

/* The guided-attention loss (docs/TRAINING.md; kernels/attention.h, ga_fwd / ga_bwd). */
typedef struct tandem_model_ga {
    int heads;        /* the first `heads` heads of every layer; 0 = off */
    float sigma;      /* width of the diagonal, a fraction of the text */
    float weight;     /* loss += weight * ga */
    float grad_scale; /* weight x the loss's grad_scale: what the backward adds (0: none) */
} tandem_model_ga;

/* Gradients [first, first + count) of the flat buffer are final for this backward: every kernel
 * that writes them is queued on s before the call (data-parallel all-reduces them while the rest
 * of the backward runs, runtime/run/dp.c; the model itself makes no collective call). */
typedef tandem_status (*tandem_model_grads_final_fn)(void *ctx, tandem_stream *s, int64_t first,
                                                     int64_t count);

/* Loss values per slot in losses: l1, stop bce, ga. */
#define TANDEM_MODEL_LOSSES 3

typedef struct tandem_model {
    tandem_model_dims dims; /* the current batch's shapes: frames, mel_len and seq follow its class
                               (tandem_model_use_frames); the rest as declared */
    tandem_model_dims full; /* as declared: the largest class, what every tensor is sized for */
    tandem_device *dev;
    tandem_attention_shape attn;

    int n_params;
    tandem_model_param *param; /* [n_params] */
    tandem_model_top_params top;
    tandem_model_layer_params *lp; /* [layers] */
    int64_t n_flat;                /* P: elements of the flat tensors (views + alignment gaps) */
    int64_t decay_end;             /* [0, decay_end) decayed, [decay_end, P) not */
    int64_t n_real;                /* sum of the parameters' numel */

    /* persistent */
    tandem_tensor *params, *grads, *adam_m, *adam_v; /* [P] */
    tandem_tensor *stop_weight;                      /* [B, F] ones: BCE weight per frame */
    tandem_tensor *losses;                           /* [micro_batches + 1, 3]: l1, bce, ga
                                                        per micro-batch; the last row: evaluation */
    tandem_tensor *ga_rows;                          /* [L, B, H, Tm]: guided-attention rows
                                                        of the last forward (ga.heads per layer
                                                        used, packed [L, B, ga.heads, Tm]) */
    tandem_tensor *norm_sq;                          /* [1] squared global gradient norm */
    tandem_tensor *skip;                             /* [1] i32: 1 = non-finite, skip update */
    tandem_tensor *train_ctr;                        /* [4] i32: step, updates, skipped, skipped
                                                        in a row (kernels/train.h), on the device
                                                        so a step needs no host decision */
    tandem_tensor *sched;                            /* [3] f32: this step's lr, bias1, bias2 */

    tandem_tensor *lengths;                          /* [micro_batches + 1, 2, B] i32: host
                                                        lengths uploaded per slot (text, frames) */

    /* per step: inputs derived from the batch (batch_prep kernel) */
    tandem_tensor *key_mask;  /* [B, T] u8 */
    tandem_tensor *l1_weight; /* [B, F] f32: frame mask / (80 * real frames of the batch) */
    tandem_tensor *groups;   /* [B, Tm, r*80] prenet input (teacher forcing shift) */
    tandem_tensor *pre;      /* [B*Tm, d] prenet linear output, before GELU */
    tandem_tensor *pre_act;  /* [B*Tm, d] GELU(pre) */
    tandem_model_layer *layer; /* [layers] */
    tandem_tensor *x_out;      /* [B, Tm, d] the last block's output (its mel rows: above) */
    tandem_tensor *qkv, *o;    /* forward scratch [B, T, 3d], [B, H, T, dh] */
    tandem_tensor *hf, *meanf, *rstdf; /* final LN [B, Tm, d], [B*Tm], [B*Tm] (mel rows) */
    tandem_tensor *mel_out;    /* [B, Tm, r*80] = predicted frames [B, F, 80] */
    tandem_tensor *stop_out;   /* [B, Tm, r] = stop logits [B, F] */
    tandem_tensor *loss_partials; /* [max partials of the two loss kernels] */
    tandem_tensor *dmel, *dstop;  /* [B, Tm, r*80], [B, F] */
    tandem_tensor *dhf;           /* [B, Tm, d] */
    tandem_tensor *dres;          /* [B, T, d] gradient of the residual stream */
    tandem_tensor *dres_mel, *da_mel; /* [B, Tm, d]: dres and da of the last block's mel-row part */
    tandem_tensor *ln_scratch;    /* [layernorm_bwd scratch floats] */
    tandem_tensor *cs_partial;    /* [max(ff, 3d, group)] a bias gradient as the BGRAD epilogue writes it */
    tandem_tensor *da;            /* [B, T, d] backward scratch */
    tandem_tensor *da16;          /* [B, T, d] bf16 mode: a LayerNorm backward's dy (NULL in fp32) */
    tandem_tensor *dff;           /* [B, T, 4d] */
    tandem_tensor *dqkv;          /* [B, T, 3d]; NULL where tandem_model_dqkv_bf16 (gbf holds it) */
    tandem_tensor *d_o, *dq, *dk, *dv; /* [B, H, T, dh] (d_o: fp32 only) */
    tandem_tensor *dp;            /* [B, H, T, T] */
    tandem_tensor *dpre;          /* [B*Tm, d] */
    tandem_tensor *norm_partials; /* [partials of P] */

    /* bf16 mode only (NULL otherwise) */
    tandem_tensor *wcopy;  /* [n_flat] bf16 persistent: copy of the parameters (the linear
                              weights and the biases of bf16 GEMM outputs) */
    tandem_tensor *scores; /* [B, H, T, T] f32: S (softmax writes the bf16 p from it) */
    tandem_tensor *gbf;    /* [max(N*4d, B*H*T*T, N*r*80)] bf16: a gradient as GEMM operand */
    int wcopy_stale;       /* 1: params changed since the last cast into wcopy */

    /* Called by tandem_model_backward as each stage's gradients become final (NULL: not). */
    tandem_model_grads_final_fn grads_final;
    void *grads_final_ctx;

    /* Prenet dropout of the current forward and its backward (train_step.c sets it per
     * micro-batch; p = 0, the state after declare, is off: evaluation and synthesis). */
    tandem_model_dropout drop;
    /* Guided-attention loss of the current forward (train_step.c sets it; heads = 0, the state
     * after declare, is off: synthesis). */
    tandem_model_ga ga;

    /* pinned host staging, carved from one block */
    void *pinned;
    size_t pinned_bytes;
    float *stage;      /* [TANDEM_MODEL_STAGE_FLOATS] parameter init / transfer chunks */
    int32_t *host_len;  /* [micro_batches + 1, 2, B] host lengths staged per slot */
    float *host_out;    /* [3 * (micro_batches + 1) + 1] losses then norm_sq */
    int32_t *host_skip; /* [1 + 4]: skip, then train_ctr (read back with the losses) */
} tandem_model;

#define TANDEM_MODEL_STAGE_FLOATS 16384

/* The model's pinned host block "model" (model device), its one declaration: stage, host_out,
 * host_skip, host_len above, in that order. The model allocates exactly this block; `tandem
 * plan` adds it to the plan's pinned staging section. */
tandem_status tandem_model_staging_declare(const tandem_model_dims *d, tandem_staging_plan *p);

/* Phases of a step: the op indices per-step tensors are declared with. */
int tandem_model_phase_in_fwd(const tandem_model *m);           /* prenet, embedding */
int tandem_model_phase_layer_fwd(const tandem_model *m, int l); /* block l forward */
int tandem_model_phase_out_fwd(const tandem_model *m);          /* final LN, heads, loss */
int tandem_model_phase_out_bwd(const tandem_model *m);          /* heads, final LN backward */
int tandem_model_phase_layer_bwd(const tandem_model *m, int l); /* block l backward */
int tandem_model_phase_in_bwd(const tandem_model *m);           /* embedding, prenet backward */
int tandem_model_phase_opt(const tandem_model *m);              /* norm, AdamW */

/* The parameter table of d alone (names, shapes; no offsets), nothing declared: what a checkpoint
 * of these dims must hold. *out (n entries) is the caller's to tandem_free. */
tandem_status tandem_model_param_table(const tandem_model_dims *d, tandem_model_param **out, int *n);

/* Build the parameter table and declare every tensor into pool (the model device's, before
 * commit), resolve every GEMM shape on dev and allocate the pinned staging block. On error
 * the model is left for tandem_model_free. dims->bf16 on a host device: TANDEM_E_UNSUPPORTED. */
tandem_status tandem_model_declare(tandem_model *m, tandem_device *dev, tandem_pool *pool,
                                   const tandem_model_dims *dims);
/* Planning only (`tandem plan`): the parameter table and every tensor declared into a
 * planning pool for a backend, without a device (no GEMM resolution, no pinned memory).
 * Free with tandem_model_free. */
tandem_status tandem_model_declare_plan(tandem_model *m, tandem_backend backend, tandem_pool *pool,
                                        const tandem_model_dims *dims);

/* Tell the model its f32 parameters were written outside its own functions (a checkpoint
 * load, a test's perturbation): in bf16 mode the next forward refreshes the bf16 weight copy.
 * tandem_model_init_params and the training update need no such call. */
void tandem_model_params_changed(tandem_model *m);
/* In bf16 mode: cast the linear weights into wcopy now (queued on s). No-op in fp32 mode. */
tandem_status tandem_model_cast_weights(tandem_model *m, tandem_stream *s);
void tandem_model_free(tandem_model *m);

/* After commit: parameters from the seed (normal / zeros / ones per the table; alignment gaps
 * zero), gradients and moments zero, stop weights one. Synchronises s. */
tandem_status tandem_model_init_params(tandem_model *m, tandem_stream *s, uint64_t seed);

/* Parameter lookup by name (-1 if none). */
int tandem_model_find_param(const tandem_model *m, const char *name);
/* A parameter's f32 master and its gradient [numel], as kernel arguments (after commit). */
float *tandem_model_param_f32(const tandem_model *m, int idx);
float *tandem_model_grad_f32(const tandem_model *m, int idx);
/* As GEMM operands: a linear weight (its bf16 copy in bf16 mode, else its f32 master) and a
 * parameter's gradient. */
tandem_view tandem_model_weight(const tandem_model *m, int idx);
tandem_view tandem_model_grad_view(const tandem_model *m, int idx);
/* A parameter's f32 master as a GEMM epilogue operand (a bias of an f32 C). */
tandem_view tandem_model_param_view(const tandem_model *m, int idx);
/* A parameter in the GEMM operand type (a bias of a C in the model's precision: bf16 copy in
 * bf16 mode, as cuBLASLt's bias type is D's). */
tandem_view tandem_model_param_gemm(const tandem_model *m, int idx);

/* The one place shapes follow a batch's class: dims.frames, mel_len, seq and the attention's
 * seq become those of `frames` (0: the declared frames), which must be the declared frames or
 * one of dims.class_frames. forward, loss and backward call it with their batch's frames. */
tandem_status tandem_model_use_frames(tandem_model *m, int frames);

/* Check a batch's tensors against the dims (shapes, dtypes, device) and, when it gives host
 * lengths, their range (device lengths are clamped by the kernel: reading them would sync). */
tandem_status tandem_model_check_batch(const tandem_model *m, const tandem_model_batch *b);

/* Forward of one micro-batch: key mask and L1 weights (batch_prep from the batch's lengths;
 * slot selects the staging of host lengths, 0 .. micro_batches), prenet, embedding, blocks, final LN, heads → mel_out, stop_out. */
tandem_status tandem_model_forward(tandem_model *m, tandem_stream *s, const tandem_model_batch *b,
                                   int slot);

/* The loss of the last forward into losses[slot] = (masked L1, stop BCE, guided attention
 * (0 when m->ga.heads is 0)), reduced on the device. grad_scale != 0: also the loss gradients
 * dmel, dstop for grad_scale * (l1 + stop_weight * bce), and m->ga.grad_scale = grad_scale *
 * m->ga.weight for the backward's guided-attention term (grad_scale = 1 / micro-batches when
 * accumulating). */
tandem_status tandem_model_loss(tandem_model *m, tandem_stream *s, const tandem_model_batch *b,
                                int slot, float stop_weight, float grad_scale);

/* Backward of the last forward from dmel, dstop: gradients ACCUMULATED (+=) into grads. With
 * m->grads_final set, it is called for each stage's ranges as soon as they are final. */
tandem_status tandem_model_backward(tandem_model *m, tandem_stream *s, const tandem_model_batch *b);

/* The backward's stages in the order their gradients become final: 0 the heads and final LN,
 * 1 .. layers the blocks (last first), layers + 1 the embeddings and prenet. Their ranges (each
 * parameter with its alignment gap, adjacent ones merged) tile [0, n_flat) exactly; a stage's
 * parameters are split between the decayed and the undecayed span, so it has two or more. */
int tandem_model_grad_stages(const tandem_model *m);
/* fn(ctx, s, first, count) for each range of stage k, in increasing order. */
tandem_status tandem_model_grad_stage(const tandem_model *m, int k, tandem_model_grads_final_fn fn, void *ctx,
                                      tandem_stream *s);

/* ---- internal: GEMM descriptors shared by prepare and the passes (model.c) ----------------
 * Operand types follow the model's precision (bf16 A and B in bf16 mode), so prepare and the
 * passes build identical descriptors. */

/* y [rows, out] = x [rows, in] W^T, W [out, in] */
tandem_gemm_desc tandem_model_desc_linear(const tandem_model_dims *dm, int64_t rows, int64_t in,
                                          int64_t out);
/* The MLP fc: GELU_AUX_BIAS epilogue, C (g) and aux (f) in the model's precision. */
tandem_gemm_desc tandem_model_desc_mlp_fc(const tandem_model_dims *dm, int64_t rows, int64_t in,
                                          int64_t out);
/* 1 when the QKV projection writes the kept bf16 qkv directly (bf16 with the tensor-core
 * attention: its operand; no f32 qkv, no cast); its bias is then the bf16 copy (C's type). */
int tandem_model_qkv_bf16(const tandem_model_dims *dm);
/* Rows of block l past its attention: B * T, or B * Tm for the last block (its mel rows only). */
static inline int64_t tandem_model_mlp_rows(const tandem_model_dims *dm, int l) {
    return (int64_t)dm->batch * (l == dm->layers - 1 ? dm->mel_len : dm->seq);
}
/* 1 when the attention backward writes the QKV projection's dy only as bf16 (bf16 mode, tensor-core
 * or materialised attention): no f32 dqkv is declared, and its bias gradient sums the bf16. */
int tandem_model_dqkv_bf16(const tandem_model *m);
/* The QKV projection: the linear layer's, with a bf16 C where tandem_model_qkv_bf16. */
tandem_gemm_desc tandem_model_desc_qkv(const tandem_model_dims *dm, int64_t rows, int64_t in, int64_t out);
/* dx [rows, in] = dy [rows, out] W */
tandem_gemm_desc tandem_model_desc_linear_dx(const tandem_model_dims *dm, int64_t rows, int64_t in,
                                             int64_t out);
/* The same for a dx a LayerNorm backward takes as its dy (the qkv and MLP fc layers): bf16 C in
 * bf16 mode (model.da16), f32 otherwise. */
tandem_gemm_desc tandem_model_desc_ln_dx(const tandem_model_dims *dm, int64_t rows, int64_t in, int64_t out);
/* The MLP proj's dx with the DGELU epilogue: df = (dy W) GELU'(f), in the model's precision. */
tandem_gemm_desc tandem_model_desc_mlp_proj_dx(const tandem_model_dims *dm, int64_t rows, int64_t in,
                                               int64_t out);
/* dW [out, in] += dy^T [out, rows] x [rows, in] */
tandem_gemm_desc tandem_model_desc_linear_dw(const tandem_model_dims *dm, int64_t rows, int64_t in,
                                             int64_t out);
/* The same with the BGRAD epilogue: the bias gradient colsum(dy) [out] written by the GEMM. */
tandem_gemm_desc tandem_model_desc_linear_dw_bgrad(const tandem_model_dims *dm, int64_t rows, int64_t in,
                                                   int64_t out);
#endif
