#!/usr/bin/env python3
"""flops.py — FLOPs and bytes moved per training step of Tandem's model (DESIGN.md §7) for the
tiny and base sizes at their config batch sizes, and the step-time floor they imply on an
RTX 4090 and an H100 SXM. Plain Python, no dependencies; prints a Markdown table and RESULT lines.

FLOPs. Every GEMM costs 2·m·n·k. A linear layer y = x Wᵀ on `rows` rows costs 2·rows·in·out
forward, the same again for dx = dy W and for dW = dyᵀ x (the prenet has no dx: its input is data).
Attention is counted as Tandem computes it today (runtime/attention.h): S = Q Kᵀ and O = P V over
the full T × T (the causal half is masked, not skipped) forward; dP = dO Vᵀ, dV = Pᵀ dO,
dQ = dS K, dK = dSᵀ Q backward: six GEMMs of 2·(B·H)·T·T·dh. A kernel that skips the masked
upper triangle (flash attention with causal skipping) would do about half of the attention
FLOPs; that figure is printed too. Element-wise work (LayerNorm, GELU, softmax, bias, residual,
losses, gradient norm, AdamW) is estimated with per-element operation counts (below) and
reported as a share of the GEMM FLOPs: a few per cent, so the floors use GEMM FLOPs only.

Bytes. A traffic model for a GPU step with bf16 activations and fp32 master weights (the
issue's `precision: bf16`), assuming every operand is read from memory once per use (ideal
tiling, no cache reuse between kernels):
  * each activation element (per row of a block: x, LN1 out, qkv, q/k/v, merged heads, x_mid,
    LN2 out, fc out, GELU out = 20·d values; plus the prenet, final LN and heads) is written
    once and read once in the forward, read once in the backward, and its gradient written once
    and read once: 5 accesses × 2 bytes;
  * each attention score element (B·H·T·T per block, materialised as Tandem does today): S
    written and read, P written and read (P V), P read twice in the backward (dV, softmax
    backward), dP written and read, dS written and read twice: 11 accesses × 2 bytes. With a
    fused (flash) attention these never reach memory; that variant is printed too;
  * each parameter: bf16 copy read in the forward and for dx (2 × 2 B), fp32 gradient written
    (4 B), AdamW reads param, grad, m, v (16 B), writes param, m, v (12 B) and the bf16 copy
    (2 B): 38 bytes.

Peaks (dense, no sparsity), from NVIDIA's published specifications:
  * RTX 4090 (Ada AD102): 165.2 TFLOP/s bf16 tensor with fp32 accumulate (the Ada whitepaper's
    "Peak BF16 Tensor TFLOPS with FP32 Accumulate"; 330.4 is the 2:4-sparse figure),
    1008 GB/s GDDR6X (21 Gb/s × 384 bit);
  * H100 SXM5: 989.4 TFLOP/s bf16 tensor dense (the datasheet's 1979 is with sparsity),
    3.35 TB/s HBM3.
floor = max(FLOPs / peak, bytes / bandwidth): a lower bound for an implementation with this
traffic (fusing more — bias and GELU into GEMM epilogues, LayerNorm into neighbours, recomputing
instead of saving — lowers the byte count, so it is not a bound on every possible
implementation). Real kernels reach perhaps 50-80 % of either peak at large shapes and much
less at tiny's, and each kernel launch adds microseconds (a tiny step is a few hundred launches;
CUDA graphs amortise them): expect measured steps well above these floors.

Usage: flops.py [--markdown] [--vocab V]
"""
import argparse

N_MELS = 80
VOCAB = 76  # tandem_symbols_count() (runtime/symbols.c)

SIZES = {  # DESIGN.md §7; batches from configs/tiny.yaml and configs/ljspeech.yaml
    "tiny": dict(d=256, layers=4, heads=4, r=4, max_text=128, max_frames=512, batch=8),
    "base": dict(d=512, layers=8, heads=8, r=2, max_text=200, max_frames=800, batch=32),
}

DEVICES = {  # name: (peak bf16 dense FLOP/s with fp32 accumulate, memory bytes/s)
    "RTX 4090": (165.2e12, 1008e9),
    "H100 SXM": (989.4e12, 3.35e12),
}

# Element-wise operation counts per element (rough: an exp or tanh counted as ~4 operations).
EW = dict(ln_fwd=8, ln_bwd=12, gelu_fwd=12, gelu_bwd=18, softmax_fwd=8, softmax_bwd=4,
          bias_res=2, loss=6, adamw=16, norm=2)


def params(c, vocab):
    d, L, r = c["d"], c["layers"], c["r"]
    T = c["max_text"] + c["max_frames"] // r
    g = r * N_MELS
    per_layer = 2 * d + 3 * d * d + 3 * d + d * d + d + 2 * d + 4 * d * d + 4 * d + 4 * d * d + d
    return vocab * d + T * d + g * d + d + L * per_layer + 2 * d + d * g + g + d * r + r


def analyse(c, vocab):
    B, d, L, H, r = c["batch"], c["d"], c["layers"], c["heads"], c["r"]
    Tt, Fr = c["max_text"], c["max_frames"]
    Tm = Fr // r
    T = Tt + Tm
    dh, ff, g = d // H, 4 * d, r * N_MELS
    N, Np = B * T, B * Tm

    def lin(rows, i, o, dx=True):  # forward, backward FLOPs of one linear layer
        f = 2 * rows * i * o
        return f, f * (2 if dx else 1)

    fwd = bwd = 0
    for f, b in [lin(Np, g, d, dx=False), lin(Np, d, g), lin(Np, d, r)]:  # prenet, heads
        fwd, bwd = fwd + f, bwd + b
    for f, b in [lin(N, d, 3 * d), lin(N, d, d), lin(N, d, ff), lin(N, ff, d)]:
        fwd, bwd = fwd + L * f, bwd + L * b
    att_gemm = 2 * (B * H) * T * T * dh
    att_fwd, att_bwd = L * 2 * att_gemm, L * 4 * att_gemm
    gemm = fwd + bwd + att_fwd + att_bwd
    gemm_causal_skip = fwd + bwd + (att_fwd + att_bwd) / 2

    P = params(c, vocab)
    scores = L * B * H * T * T
    ew = ((2 * L + 1) * N * d * (EW["ln_fwd"] + EW["ln_bwd"])
          + (L * N * ff + Np * d) * (EW["gelu_fwd"] + EW["gelu_bwd"])
          + scores * (EW["softmax_fwd"] + EW["softmax_bwd"])
          + L * N * (3 * d + d + ff + d) * EW["bias_res"] * 2
          + B * Fr * (N_MELS + 1) * EW["loss"]
          + P * (EW["adamw"] + EW["norm"]))

    act_elems = L * N * 20 * d + Np * (g + 2 * d) + N * 2 * d + Np * (g + r) + N * d
    bytes_act = act_elems * 5 * 2
    bytes_scores = scores * 11 * 2
    bytes_param = P * 38
    bytes_batch = B * (Fr * N_MELS * 4 + Fr * 8 + Tt * 4)
    total_bytes = bytes_act + bytes_scores + bytes_param + bytes_batch
    fused_bytes = bytes_act + bytes_param + bytes_batch
    return dict(B=B, T=T, N=N, P=P, fwd_linear=fwd, bwd_linear=bwd, att=att_fwd + att_bwd,
                gemm=gemm, gemm_causal_skip=gemm_causal_skip, elementwise=ew,
                bytes=total_bytes, bytes_fused=fused_bytes, bytes_scores=bytes_scores,
                bytes_param=bytes_param, bytes_act=bytes_act)


def floor_us(flops, nbytes, dev):
    peak, bw = DEVICES[dev]
    t_f, t_b = flops / peak, nbytes / bw
    return max(t_f, t_b) * 1e6, ("compute" if t_f >= t_b else "memory")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vocab", type=int, default=VOCAB)
    ap.add_argument("--markdown", action="store_true", help="also print the Markdown tables")
    a = ap.parse_args()
    rows = {}
    for name, c in SIZES.items():
        s = analyse(c, a.vocab)
        rows[name] = s
        print(f"RESULT flops size={name} batch={s['B']} seq={s['T']} params={s['P']} "
              f"gemm_gflop={s['gemm'] / 1e9:.2f} linear_fwd_gflop={s['fwd_linear'] / 1e9:.2f} "
              f"linear_bwd_gflop={s['bwd_linear'] / 1e9:.2f} attention_gflop={s['att'] / 1e9:.2f} "
              f"causal_skip_gflop={s['gemm_causal_skip'] / 1e9:.2f} "
              f"elementwise_pct={100 * s['elementwise'] / s['gemm']:.1f} "
              f"bytes_gb={s['bytes'] / 1e9:.3f} bytes_fused_attention_gb={s['bytes_fused'] / 1e9:.3f}")
        for dev in DEVICES:
            us, bound = floor_us(s["gemm"], s["bytes"], dev)
            us_f, bound_f = floor_us(s["gemm_causal_skip"], s["bytes_fused"], dev)
            print(f"RESULT floor size={name} device=\"{dev}\" floor_us={us:.0f} bound={bound} "
                  f"fused_causal_floor_us={us_f:.0f} fused_bound={bound_f}")
    if not a.markdown:
        return 0
    print()
    print("| size | batch | T | params | GEMM GFLOP/step (linear fwd + bwd + attention) "
          "| element-wise | bytes/step (materialised P · fused) |")
    print("|---|---|---|---|---|---|---|")
    for name, s in rows.items():
        print(f"| {name} | {s['B']} | {s['T']} | {s['P']:,} | {s['gemm'] / 1e9:.1f} "
              f"({s['fwd_linear'] / 1e9:.1f} + {s['bwd_linear'] / 1e9:.1f} + {s['att'] / 1e9:.1f}) "
              f"| ~{100 * s['elementwise'] / s['gemm']:.1f} % of GEMM "
              f"| {s['bytes'] / 1e9:.2f} GB · {s['bytes_fused'] / 1e9:.2f} GB |")
    print()
    print("| size | device | FLOP time | memory time | floor (as computed now) "
          "| floor, fused causal attention |")
    print("|---|---|---|---|---|---|")
    for name, s in rows.items():
        for dev, (peak, bw) in DEVICES.items():
            us, bound = floor_us(s["gemm"], s["bytes"], dev)
            us_f, bound_f = floor_us(s["gemm_causal_skip"], s["bytes_fused"], dev)
            print(f"| {name} | {dev} | {s['gemm'] / peak * 1e6:.0f} µs | {s['bytes'] / bw * 1e6:.0f} µs "
                  f"| **{us:.0f} µs** ({bound}) | {us_f:.0f} µs ({bound_f}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
