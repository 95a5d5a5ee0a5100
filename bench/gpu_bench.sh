#!/usr/bin/env bash
# bench/gpu_bench.sh [BUILD] — the training step on a real GPU against its modelled time and
# against PyTorch on the same GPU (issue 12's "measured step within 1.5x of the modelled one").
# Never part of `make test`; `make bench-gpu` runs it, and `make bench` runs it when
# `tandem diagnose` finds a CUDA device.
#
# For each case (size, batch, precision): `tandem cost --gpu GPU --json` prices the step's
# recorded launch list (graph mode); `tandem train --backend cuda` trains STEPS steps on a
# corpus (no validation, no checkpoint inside the run, a read-back every 10th step) and its
# steady-state rate (the summary's samples/s over the steps past warm-up) gives the measured
# step; data wait and busy % are the medians of the logged rows (device events);
# bench/torch_tiny.py --device cuda times the same
# architecture in PyTorch (fused AdamW, SDPA, autocast for bf16) on the same GPU.
#
# Environment: GPU_BENCH_GPU (the cost model's GPU; default: the one nvidia-smi names, h100 when
# it names none the model knows), GPU_BENCH_STEPS (60),
# GPU_BENCH_WARMUP (10), GPU_BENCH_DATA (corpus; default: BUILD/demo/corpus, else one made by
# `tandem corpus`), GPU_BENCH_CASES (size:batch:precision[:attention], default "tiny:8:fp32
# tiny:8:bf16 base:32:bf16 base:32:fp32 base:32:bf16:fused"; attention as the config key,
# default auto),
# GPU_BENCH_PYTHON (a python3 with torch; default: bench/.venv/bin/python, else python3).
# Output: BUILD/bench-gpu/ (logs, runs, results.txt); the last lines are a table.
set -uo pipefail

BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=$BUILD/bench-gpu   # this script's own folder (not the device tool's $OUT, which it leaves alone)
TANDEM=$BUILD/tandem
gpu_key() { # the cost model's key for the GPU nvidia-smi names
    case $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) in
        *H200*) echo h200 ;; *H100*) echo h100 ;; *A100*) echo a100 ;; *L4*) echo l4 ;; *4090*) echo rtx4090 ;;
        *) echo h100 ;;
    esac
}
GPU=${GPU_BENCH_GPU:-$(gpu_key)}
STEPS=${GPU_BENCH_STEPS:-60}
WARMUP=${GPU_BENCH_WARMUP:-10}
CASES=${GPU_BENCH_CASES:-"tiny:8:fp32 tiny:8:bf16 base:32:bf16 base:32:fp32 base:32:bf16:fused"}
PY=${GPU_BENCH_PYTHON:-}
if [ -z "$PY" ]; then
    if [ -x bench/.venv/bin/python ]; then PY=bench/.venv/bin/python; else PY=python3; fi
fi
mkdir -p "$OUT"
RESULTS=$OUT/results.txt
: > "$RESULTS"
say() { echo "$*" | tee -a "$RESULTS"; }

"$TANDEM" diagnose > "$OUT/diagnose.txt" 2>&1
if ! grep -q '^CUDA devices: [1-9]' "$OUT/diagnose.txt"; then
    say "gpu-bench: SKIPPED: no CUDA device ($TANDEM diagnose: $(tail -1 "$OUT/diagnose.txt"))"
    exit 0
fi
say "# Tandem GPU training-step benchmark"
say "MACHINE date=$(date -u +%Y-%m-%dT%H:%M:%SZ) commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
say "MACHINE gpu=\"$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)\" cpus=$(getconf _NPROCESSORS_ONLN)"

DATA=${GPU_BENCH_DATA:-}
if [ -z "$DATA" ]; then
    if [ -f "$BUILD/demo/corpus/metadata.csv" ]; then DATA=$BUILD/demo/corpus
    else
        DATA=$OUT/corpus
        [ -f "$DATA/metadata.csv" ] || "$TANDEM" corpus --out "$DATA" --count 64 > "$OUT/corpus.log" 2>&1 ||
            { say "gpu-bench: FAILED: no corpus ($(tail -1 "$OUT/corpus.log"))"; exit 1; }
    fi
fi

median_of() { # metrics.jsonl warmup -> "median_step_ms median_wait_ms median_busy_pct n"
    python3 - "$1" "$2" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if "step_ms" in r and r.get("step", 0) > int(sys.argv[2])]
if not rows:
    print("nan nan nan 0"); sys.exit(0)
med = lambda k: statistics.median(r.get(k, float("nan")) for r in rows)
print(f"{med('step_ms'):.3f} {med('data_wait_device_ms'):.4f} {med('model_busy_pct'):.1f} {len(rows)}")
EOF
}

table=()
for c in $CASES; do
    IFS=: read -r size batch prec attn <<< "$c"
    attn=${attn:-auto}
    case $size in tiny) base_cfg=configs/tiny.yaml ;; base) base_cfg=configs/ljspeech.yaml ;;
        *) say "gpu-bench: unknown size $size in GPU_BENCH_CASES"; exit 2 ;; esac
    name=${size}_b${batch}_${prec}_${attn}
    cfg=$OUT/config_$name.yaml
    { cat "$base_cfg"; echo "attention: $attn"; } > "$cfg"
    say ""
    say "== $name ($cfg)"
    args=(--batch-size "$batch" --precision "$prec")
    tf32=(); [ "$prec" = fp32 ] && tf32=(--tf32)   # tf32: true is the config default
    "$TANDEM" cost --config "$cfg" --gpu "$GPU" --batch "$batch" --precision "$prec" "${tf32[@]}" \
        > "$OUT/cost_$name.txt" 2>&1 || say "cost: FAILED: $(tail -1 "$OUT/cost_$name.txt")"
    modelled=$(sed -n 's/^modelled step: \([0-9.]*\) ms in a CUDA graph.*/\1/p' "$OUT/cost_$name.txt")
    say "modelled ($GPU, graph): ${modelled:-?} ms   ($OUT/cost_$name.txt)"
    run=$OUT/run_$name
    rm -rf "$run"
    # log every 10th step: the steps in between are queued without a host synchronisation, as in
    # a real run; the step time is the summary's steady-state rate (steps past the first two)
    if timeout 300 "$TANDEM" train --config "$cfg" "${args[@]}" --train-data "$DATA" --out "$run" \
        --max-steps "$STEPS" --log-every 10 --val-every 0 --checkpoint-every 0 --backend cuda \
        --quiet > "$OUT/train_$name.log" 2>&1 && [ -f "$run/metrics.jsonl" ]; then
        read -r _ wait busy n <<< "$(median_of "$run/metrics.jsonl" "$WARMUP")"
        sps=$(sed -n 's/^\([0-9.]*\) samples\/s.*/\1/p' "$OUT/train_$name.log" | tail -1)
        ms=$(python3 -c "import sys; print(f'{float(sys.argv[1]) * 1000 / float(sys.argv[2]):.3f}')" "$batch" "${sps:-nan}")
        say "measured: step ${ms} ms (steady state: $sps samples/s at batch $batch), at the $n logged steps data wait ${wait} ms, model busy ${busy} %"
    else
        ms=nan wait=nan busy=nan
        say "measured: FAILED: $(tail -3 "$OUT/train_$name.log" | tr '\n' ' ')"
    fi
    tms=nan
    if "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
        "$PY" bench/torch_tiny.py --size "$size" --batch "$batch" --device cuda --precision \
            "$( [ "$prec" = fp32 ] && echo tf32 || echo "$prec")" --steps "$STEPS" --warmup "$WARMUP" \
            > "$OUT/torch_$name.log" 2>&1
        tms=$(sed -n 's/^RESULT .* median=\([0-9.]*\).*/\1/p' "$OUT/torch_$name.log")
        say "pytorch (cuda, sdpa, fused AdamW): median ${tms:-FAILED} ms"
    fi
    table+=("$(printf '| %-26s | %9s | %9s | %7s | %9s | %8s |' "$name" "${modelled:-?}" "$ms" \
        "$(python3 -c "import sys; m,x=sys.argv[1:]; print(f'{float(x)/float(m):.2f}' if m not in ('','?') and x!='nan' else '?')" "${modelled:-}" "$ms")" \
        "${tms:-?}" "$(python3 -c "import sys; t,x=sys.argv[1:]; print(f'{float(x)/float(t):.2f}' if t not in ('','?','nan') and x!='nan' else '?')" "${tms:-nan}" "$ms")")")
done
say ""
say "| case                       | model ms  | meas. ms  | meas/mod | torch ms  | tandem/torch |"
say "|----------------------------|-----------|-----------|---------|-----------|----------|"
for row in "${table[@]}"; do say "$row"; done
