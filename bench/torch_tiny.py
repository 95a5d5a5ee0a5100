#!/usr/bin/env python3
"""torch_tiny.py — Tandem's acoustic model (DESIGN.md §7, runtime/model.h) in PyTorch on the CPU,
timed per training step, the peer for bench/train_bench.sh.

The same architecture, parameter for parameter (the table of runtime/model.c build_table):
  sequence [lang, BOS, text..., EOS, pad...] (Tt = max_text) then Tm = F / r mel positions;
  input at mel position j = GELU(prenet(frames of group j - 1)), zeros for j = 0 (teacher
  forcing shift); symbol embedding for text positions; learned positions for all T = Tt + Tm;
  L pre-LN blocks: LN1 → causal MHA with key padding mask (qkv Linear d → 3d, columns q|k|v,
  heads = consecutive dh-wide slices; out Linear d → d) → residual; LN2 → Linear d → 4d → GELU
  (tanh approximation) → Linear 4d → d → residual; final LN; mel head d → r·80 and stop head
  d → r on the mel positions. LayerNorm eps 1e-5.
  loss = masked L1 (mean over real frames × 80 bands) + stop_weight · BCE-with-logits (mean
  over all B·F frames, target 1 from the last real frame on) + the guided-attention term, and
  prenet dropout 0.5 on GELU(prenet) — configs/tiny.yaml's training step, which
  bench/train_bench.sh times Tandem on (--objective full, the default; base: configs/ljspeech.yaml's). Guided attention as
  kernels/attention.h: on the first ga_heads heads of every layer, per real mel query j of an
  item with tt real text keys and nm real mel positions, 1 - sum over t < tt of P[Tt + j, t]
  G(t, j), G = exp(-(t / tt - (j + 0.5) / nm)^2 / (2 sigma^2)), summed over rows / Nq (the
  batch's real mel positions), times ga_weight / (ga_heads · layers). With SDPA those heads'
  probabilities are computed explicitly (SDPA does not return them), the rest through SDPA.
  --objective plain: L1 + BCE only, no dropout (what this peer timed before 2026-11-25).
  AdamW (decoupled decay 0.01 on the linear weights only; none on norms, biases, embeddings),
  betas 0.9/0.999, eps 1e-8, global-norm clipping at 1.0, warm-up + cosine LR — the defaults of
  runtime/config.c.
Key mask as in runtime/model_fwd.c: text key t is real when t < text length, mel key j when
j·r < frame length; combined with the causal mask.

A training step = zero grads, forward, loss, backward, clip, AdamW (what tandem_train_step does
with grad_accum 1). Timed with time.perf_counter (wall) and time.process_time (CPU time of all
the process's threads) after warm-up; the median and spread printed as RESULT lines.

Attention: --attention sdpa (torch.nn.functional.scaled_dot_product_attention with a boolean
mask: what a PyTorch user writes) or explicit (scores materialised, softmax, P·V: what Tandem's
host backend does today). Both are the same function.

Usage: torch_tiny.py [--size tiny|base] [--batch B] [--threads T] [--steps N] [--warmup W]
                     [--attention sdpa|explicit] [--vocab V] [--params-only] [--seed S]
                     [--times-out FILE] [--checkpoint TANDEM.safetensors]
"""
import argparse
import json
import math
import statistics
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# DESIGN.md §7 presets; batch sizes and guided-attention weights from configs/tiny.yaml and
# configs/ljspeech.yaml (both: prenet dropout 0.5, ga_sigma 0.2, ga_heads 1).
SIZES = {
    "tiny": dict(d=256, layers=4, heads=4, r=4, max_text=128, max_frames=512, batch=8, ga_weight=2.0),
    "base": dict(d=512, layers=8, heads=8, r=2, max_text=200, max_frames=800, batch=32, ga_weight=1.0),
}
N_MELS = 80
# tandem_symbols_count(): 5 specials (PAD BOS EOS <en> <fa>) + 9 punctuation/space + 26 English
# letters + 35 Persian letters + ZWNJ (runtime/symbols.c).
VOCAB = 76


class Block(nn.Module):
    def __init__(self, d, heads, attention, ga_heads=0):
        super().__init__()
        self.heads, self.dh, self.attention, self.ga_heads = heads, d // heads, attention, ga_heads
        # Submodule names give Tandem's checkpoint tensor names (layers.N.attn.qkv.weight, ...).
        self.ln1 = nn.LayerNorm(d, eps=1e-5)
        self.attn = nn.Module()
        self.attn.qkv = nn.Linear(d, 3 * d)
        self.attn.out = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-5)
        self.mlp = nn.Module()
        self.mlp.fc = nn.Linear(d, 4 * d)
        self.mlp.proj = nn.Linear(4 * d, d)

    def explicit(self, q, k, v, allowed):  # [B, h, T, dh] each -> P [B, h, T, T], O [B, h, T, dh]
        s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.dh))
        p = torch.softmax(s.masked_fill(~allowed, float("-inf")), dim=-1)
        return p, p @ v

    def forward(self, x, allowed):  # x [B, T, d]; allowed [B, 1, T, T] bool (True = attend)
        """The block's output and P of its first ga_heads heads ([B, ga_heads, T, T], or None)."""
        B, T, d = x.shape
        q, k, v = self.attn.qkv(self.ln1(x)).split(d, dim=-1)             # [B, T, d] each
        q, k, v = (t.view(B, T, self.heads, self.dh).transpose(1, 2) for t in (q, k, v))
        g, pg = self.ga_heads, None
        if self.attention == "sdpa":
            o = F.scaled_dot_product_attention(q[:, g:], k[:, g:], v[:, g:], attn_mask=allowed)
            if g:
                pg, og = self.explicit(q[:, :g], k[:, :g], v[:, :g], allowed)
                o = torch.cat([og, o], dim=1)                              # [B, H, T, dh]
        else:
            p, o = self.explicit(q, k, v, allowed)
            pg = p[:, :g] if g else None
        x = x + self.attn.out(o.transpose(1, 2).reshape(B, T, d))
        return x + self.mlp.proj(F.gelu(self.mlp.fc(self.ln2(x)), approximate="tanh")), pg


class TandemModel(nn.Module):
    def __init__(self, d, layers, heads, r, max_text, max_frames, vocab, attention, ga_heads=0,
                 dropout=0.0):
        super().__init__()
        self.r, self.tt, self.tm, self.dropout = r, max_text, max_frames // r, dropout
        self.sym_emb = nn.Embedding(vocab, d)                  # [V, d]
        self.pos_emb = nn.Embedding(self.tt + self.tm, d)      # [T, d]
        self.prenet = nn.Linear(r * N_MELS, d)
        self.layers = nn.ModuleList(Block(d, heads, attention, ga_heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d, eps=1e-5)
        self.mel_head = nn.Linear(d, r * N_MELS)
        self.stop_head = nn.Linear(d, r)
        # Initialisation as runtime/model.c (N(0, 0.02), residual projections / sqrt(2L), biases
        # 0, LN 1/0); it does not change the timing but keeps the losses comparable.
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("out.weight", "proj.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)
            elif ".ln" in name or name.startswith("ln_f"):
                nn.init.ones_(p) if name.endswith("weight") else nn.init.zeros_(p)
            else:
                nn.init.zeros_(p)

    def forward(self, tokens, mels, allowed):
        # tokens [B, Tt] i64; mels [B, F, 80]; allowed [B, 1, T, T]
        B = tokens.shape[0]
        groups = mels.reshape(B, self.tm, self.r * N_MELS)                  # [B, Tm, r*80]
        groups = torch.cat([groups.new_zeros(B, 1, self.r * N_MELS), groups[:, :-1]], dim=1)
        pre = F.gelu(self.prenet(groups), approximate="tanh")              # [B, Tm, d]
        if self.dropout > 0:
            pre = F.dropout(pre, self.dropout, training=True)
        x = torch.cat([self.sym_emb(tokens), pre], dim=1) + self.pos_emb.weight  # [B, T, d]
        probs = []                                                          # [B, ga_heads, T, T] each
        for blk in self.layers:
            x, pg = blk(x, allowed)
            if pg is not None:
                probs.append(pg)
        h = self.ln_f(x)[:, self.tt:]                                       # [B, Tm, d]
        mel = self.mel_head(h).reshape(B, self.tm * self.r, N_MELS)         # [B, F, 80]
        stop = self.stop_head(h).reshape(B, self.tm * self.r)               # [B, F]
        return mel, stop, probs


def ga_weights(key, tt_max, sigma):
    """G(t, j) on the real text keys t of every real mel query j, 0 elsewhere: [B, Tm, Tt], and
    the batch's count of real mel queries Nq (kernels/attention.h, tandem_k_ga_g)."""
    tt = key[:, :tt_max].sum(1).float()                                     # [B]
    nm = key[:, tt_max:].sum(1).float()                                     # [B]
    Tm = key.shape[1] - tt_max
    t = torch.arange(tt_max, dtype=torch.float32)[None, None, :]
    j = torch.arange(Tm, dtype=torch.float32)[None, :, None]
    x = t / tt.clamp(min=1)[:, None, None] - (j + 0.5) / nm.clamp(min=1)[:, None, None]
    w = torch.exp(-x * x / (2.0 * sigma * sigma))
    real = (t < tt[:, None, None]) & (j < nm[:, None, None]) & (tt[:, None, None] > 0)
    rows = ((j[..., 0] < nm[:, None]) & (tt[:, None] > 0)).float()          # [B, Tm]
    return w * real, rows, rows.sum()


def n_params(cfg, vocab):
    """Closed form of runtime/model.c's table (sum of numel, alignment gaps excluded)."""
    d, L, r, T = cfg["d"], cfg["layers"], cfg["r"], cfg["max_text"] + cfg["max_frames"] // cfg["r"]
    g = r * N_MELS
    per_layer = 2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (4 * d * d + 4 * d) + (4 * d * d + d)
    return vocab * d + T * d + (g * d + d) + L * per_layer + 2 * d + (d * g + g) + (d * r + r)


def read_safetensors(path):
    """Tensors of a safetensors file (8-byte little-endian header length, JSON header, data),
    parsed here so the check needs no package besides torch. Returns {name: tensor}."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        if h["dtype"] != "F32":
            raise ValueError(f"{path}: tensor {name} is {h['dtype']}; expected F32")
        a, b = h["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[a:b]), dtype=torch.float32).reshape(h["shape"])
    return out


def load_tandem_checkpoint(model, path):
    """Copy a Tandem checkpoint's parameters (its tensors without the adam_m./adam_v. moments)
    into the module; the names and shapes must match exactly, both ways."""
    params = {k: v for k, v in read_safetensors(path).items() if not k.startswith(("adam_m.", "adam_v."))}
    mine = dict(model.named_parameters())
    if set(params) != set(mine):
        raise ValueError(f"{path}: names differ: only in the checkpoint {sorted(set(params) - set(mine))}, "
                         f"only in the module {sorted(set(mine) - set(params))}")
    for k, v in params.items():
        if tuple(v.shape) != tuple(mine[k].shape):
            raise ValueError(f"{path}: {k} is {tuple(v.shape)} in the checkpoint, {tuple(mine[k].shape)} here")
        with torch.no_grad():
            mine[k].copy_(v)
    return len(params), sum(v.numel() for v in params.values())


def make_batch(cfg, vocab, gen):
    """Fixed synthetic batch: random text/frame lengths with zero padding, smooth mel-like
    targets, stop targets 1 from the last real frame on (as test/unit/test_train.c)."""
    B, Tt, Fr, r = cfg["batch"], cfg["max_text"], cfg["max_frames"], cfg["r"]
    tl = torch.randint(4, Tt + 1, (B,), generator=gen)
    fl = torch.randint(Fr // 2, Fr + 1, (B,), generator=gen)
    tokens = torch.zeros(B, Tt, dtype=torch.long)
    f = torch.arange(Fr, dtype=torch.float32)[:, None]
    c = torch.arange(N_MELS, dtype=torch.float32)[None, :]
    mels = torch.zeros(B, Fr, N_MELS)
    for b in range(B):
        tokens[b, : tl[b]] = torch.randint(1, vocab, (int(tl[b]),), generator=gen)
        ph, fr = float(torch.rand(1, generator=gen)) * 6.28, 0.1 + 0.3 * float(torch.rand(1, generator=gen))
        mels[b] = -4.0 + 2.0 * torch.sin(ph + fr * f + 0.08 * c) + torch.cos(0.05 * c * (b + 1))
    frame_mask = (torch.arange(Fr)[None, :] < fl[:, None]).float()         # [B, F]
    mels = mels * frame_mask[:, :, None]
    stop = (torch.arange(Fr)[None, :] >= (fl[:, None] - 1)).float()       # [B, F]
    Tm = Fr // r
    key = torch.cat([torch.arange(Tt)[None, :] < tl[:, None],
                     torch.arange(Tm)[None, :] * r < fl[:, None]], dim=1)  # [B, T]
    T = Tt + Tm
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    allowed = (causal[None] & key[:, None, :])[:, None]                    # [B, 1, T, T]
    return tokens, mels, frame_mask, stop, allowed, key


def lr_at(step, lr=3e-4, warmup=200, max_steps=200, min_ratio=0.1):
    if warmup > 0 and step < warmup:
        return lr * (step + 1) / warmup
    span = max_steps - warmup
    if span <= 0:
        return lr
    t = min(1.0, (step - warmup) / span)
    lo = lr * min_ratio
    return lo + 0.5 * (lr - lo) * (1 + math.cos(math.pi * t))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="tiny")
    ap.add_argument("--batch", type=int, default=0, help="default: the size's config batch")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    ap.add_argument("--attention", choices=["sdpa", "explicit"], default="sdpa")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="cuda: the GPU peer for bench/gpu_bench.sh (fused AdamW, timed with "
                         "events)")
    ap.add_argument("--precision", choices=["fp32", "tf32", "bf16"], default="fp32",
                    help="bf16: autocast to bfloat16 (fp32 master weights, as Tandem's "
                         "precision: bf16); tf32: fp32 with TF32 matmuls")
    ap.add_argument("--objective", choices=["full", "plain"], default="full",
                    help="full: the size's config's training step (prenet dropout 0.5, guided "
                         "attention on 1 head, sigma 0.2, its ga_weight); plain: L1 + BCE only")
    ap.add_argument("--vocab", type=int, default=VOCAB)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--params-only", action="store_true", help="print parameter counts and exit")
    ap.add_argument("--times-out", default="", help="append each timed step's ms to this file")
    ap.add_argument("--checkpoint", default="",
                    help="a Tandem checkpoint (safetensors) of the same size: its parameters are "
                         "loaded (names and shapes must match exactly) before timing")
    a = ap.parse_args()

    for name, c in SIZES.items():
        print(f"PARAMS size={name} closed_form={n_params(c, a.vocab)} vocab={a.vocab}")
    cfg = dict(SIZES[a.size])
    if a.batch:
        cfg["batch"] = a.batch
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    full = a.objective == "full"
    ga_heads, ga_weight, ga_sigma, dropout = (1, cfg["ga_weight"], 0.2, 0.5) if full else (0, 0.0, 0.2, 0.0)
    model = TandemModel(cfg["d"], cfg["layers"], cfg["heads"], cfg["r"], cfg["max_text"],
                        cfg["max_frames"], a.vocab, a.attention, ga_heads, dropout)
    counted = sum(p.numel() for p in model.parameters())
    print(f"PARAMS size={a.size} torch_module={counted}")
    if counted != n_params(cfg, a.vocab):
        print("error: module parameter count differs from the closed form", file=sys.stderr)
        return 1
    if a.checkpoint:
        try:
            n_t, n_el = load_tandem_checkpoint(model, a.checkpoint)
        except (OSError, ValueError, KeyError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(f"PARAMS size={a.size} tandem_checkpoint={n_el} tensors={n_t} names_and_shapes=equal "
              f"({a.checkpoint})")
    if a.params_only:
        return 0

    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and "emb" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.dim() == 2 and "emb" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.999), eps=1e-8)
    gen = torch.Generator().manual_seed(a.seed)
    tokens, mels, frame_mask, stop_t, allowed, key = make_batch(cfg, a.vocab, gen)
    ga_w, ga_rows, ga_nq = ga_weights(key, cfg["max_text"], ga_sigma)
    dev = torch.device(a.device)
    if a.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
        torch.backends.cudnn.allow_tf32 = a.precision == "tf32"
        model.to(dev)
        tokens, mels, frame_mask, stop_t, allowed, ga_w, ga_rows = (
            t.to(dev) for t in (tokens, mels, frame_mask, stop_t, allowed, ga_w, ga_rows))
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                 {"params": no_decay, "weight_decay": 0.0}],
                                lr=3e-4, betas=(0.9, 0.999), eps=1e-8, fused=True)
    l1_count = frame_mask.sum() * N_MELS
    autocast = torch.autocast(device_type=a.device, dtype=torch.bfloat16,
                              enabled=a.precision == "bf16")

    def step(i):
        for g in opt.param_groups:
            g["lr"] = lr_at(i)
        opt.zero_grad(set_to_none=True)
        with autocast:
            mel, stop, probs = model(tokens, mels, allowed)
        mel, stop = mel.float(), stop.float()
        l1 = ((mel - mels).abs() * frame_mask[:, :, None]).sum() / l1_count
        bce = F.binary_cross_entropy_with_logits(stop, stop_t)
        loss = l1 + 1.0 * bce
        Tt = cfg["max_text"]
        for p in probs:  # [B, ga_heads, T, T]: mel query rows against the text keys
            pull = (p[:, :, Tt:, :Tt].float() * ga_w[:, None]).sum(-1)        # [B, ga_heads, Tm]
            ga = ((1.0 - pull) * ga_rows[:, None]).sum() / ga_nq
            loss = loss + ga * (ga_weight / (ga_heads * len(model.layers)))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.detach() if a.device == "cuda" else float(loss.detach())

    print(f"CONFIG size={a.size} batch={cfg['batch']} d={cfg['d']} layers={cfg['layers']} "
          f"heads={cfg['heads']} r={cfg['r']} max_text={cfg['max_text']} "
          f"max_frames={cfg['max_frames']} seq={cfg['max_text'] + cfg['max_frames'] // cfg['r']} "
          f"threads={torch.get_num_threads()} attention={a.attention} objective={a.objective} "
          f"device={a.device} "
          f"precision={a.precision} torch={torch.__version__}")
    times, cpu, losses = [], [], []
    if a.device == "cuda":  # queued without a host sync per step (as Tandem's unlogged steps): the mean
        for i in range(a.warmup):
            losses.append(step(i))
        torch.cuda.synchronize()
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(a.warmup, a.warmup + a.steps):
            losses.append(step(i))
        torch.cuda.synchronize()
        dt, dc = (time.perf_counter() - t0) * 1e3 / a.steps, (time.process_time() - c0) * 1e3 / a.steps
        times, cpu = [dt] * a.steps, [dc] * a.steps
        losses = [float(x) for x in losses]
    for i in range(a.warmup + a.steps) if a.device == "cpu" else []:
        t0, c0 = time.perf_counter(), time.process_time()
        losses.append(step(i))
        dt, dc = (time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3
        if i >= a.warmup:
            times.append(dt)
            cpu.append(dc)  # CPU time of all the process's threads (spin-waits included)
    if a.times_out:
        with open(a.times_out, "a") as f:
            f.writelines(f"{t:.3f} {c:.3f}\n" for t, c in zip(times, cpu))
    med = statistics.median(times)
    q = statistics.quantiles(times, n=10, method="inclusive") if len(times) >= 2 else [med] * 9
    cv = statistics.pstdev(times) / statistics.fmean(times) * 100 if len(times) > 1 else 0.0
    print(f"LOSS first={losses[0]:.4f} last={losses[-1]:.4f}")
    print(f"RESULT torch_step_ms size={a.size} attention={a.attention} threads={a.threads} "
          f"device={a.device} precision={a.precision} "
          f"batch={cfg['batch']} n={len(times)} median={med:.1f} p10={q[0]:.1f} p90={q[-1]:.1f} "
          f"min={min(times):.1f} max={max(times):.1f} cv_pct={cv:.1f} "
          f"cpu_median={statistics.median(cpu):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
