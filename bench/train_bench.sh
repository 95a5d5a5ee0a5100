#!/usr/bin/env bash
# bench/train_bench.sh [BUILD] — the training benchmarks of issue 5 (never part of `make test`):
#
#   1. FLOPs, bytes and step-time floors per size on an RTX 4090 and an H100 (bench/flops.py).
#   2. Parameter count of the PyTorch peer (bench/torch_tiny.py), and its parameter names and
#      shapes against the checkpoint `tandem train` wrote (must be equal).
#   3. The tiny training step: PyTorch on the CPU (bench/torch_tiny.py, SDPA and explicit
#      attention) and, when BUILD/tandem has `train`, Tandem's host backend via
#      `tandem train --backend host` on the demo corpus (two host devices: the data device's
#      loader threads and features share the CPU with the model device; no validation and no
#      checkpoint inside the run; median step_ms of metrics.jsonl past warm-up), in
#      interleaved rounds so that both sides see the same machine load. Prints the ratio
#      Tandem / PyTorch (< 1: Tandem faster), Tandem's data wait %, model-device busy % and
#      step-time CV.
#
# Threads: Tandem's host backend runs its kernels and splits its GEMMs over a worker pool per
# host device (TANDEM_HOST_THREADS, default all online CPUs; OpenBLAS itself is set to one thread).
# Both sides get T threads (default: all online CPUs): TANDEM_HOST_THREADS=T for Tandem,
# torch.set_num_threads(T) + OMP_NUM_THREADS=T for PyTorch.
#
# PyTorch comes from bench/.venv (made by bench/run.sh); if torch is missing there it is
# installed from PyPI at the version pinned in bench/requirements.txt.
#
# Environment: TRAIN_BENCH_THREADS (T), TRAIN_BENCH_ROUNDS (2), TRAIN_BENCH_TORCH_STEPS (10,
# timed per run), TRAIN_BENCH_TORCH_WARMUP (3), TRAIN_BENCH_TANDEM_STEPS (30),
# TRAIN_BENCH_TANDEM_WARMUP (5, steps excluded from the statistics), TRAIN_BENCH_DATA (a corpus
# to train on; default: a 64-utterance demo corpus made with `tandem corpus`).
# Output: BUILD/bench-train/ (logs, per-step times, results.txt, summary.md).
set -euo pipefail

BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=$BUILD/bench-train
TANDEM=$BUILD/tandem
T=${TRAIN_BENCH_THREADS:-$(getconf _NPROCESSORS_ONLN)}
ROUNDS=${TRAIN_BENCH_ROUNDS:-2}
TORCH_STEPS=${TRAIN_BENCH_TORCH_STEPS:-10}
TORCH_WARMUP=${TRAIN_BENCH_TORCH_WARMUP:-3}
TANDEM_STEPS=${TRAIN_BENCH_TANDEM_STEPS:-30}
TANDEM_WARMUP=${TRAIN_BENCH_TANDEM_WARMUP:-5}
VENV=bench/.venv
PY=$VENV/bin/python
RESULTS=$OUT/results.txt

mkdir -p "$OUT"
: > "$RESULTS"
rm -f "$OUT"/times_*.txt "$OUT/cpu_tandem.txt" "$OUT/tandem_steps.jsonl"
say() { echo "$*" | tee -a "$RESULTS"; }
section() { say ""; say "== $* ($(date -u +%H:%M:%S) UTC, load average $(cut -d' ' -f1-3 /proc/loadavg))"; }
t_start=$(date +%s)

# ---- machine ------------------------------------------------------------------------------
say "# Tandem training benchmarks"
say "MACHINE date=$(date -u +%Y-%m-%dT%H:%M:%SZ) commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo +dirty)"
say "MACHINE cpu=\"$(lscpu | sed -n 's/^Model name: *//p' | head -1)\" cpus=$(getconf _NPROCESSORS_ONLN) mem_gib=$(free -g | awk '/^Mem:/ {print $2}') hypervisor=\"$(lscpu | sed -n 's/^Hypervisor vendor: *//p')\" load=\"$(cut -d' ' -f1-3 /proc/loadavg)\""
say "MACHINE threads=$T openblas=$(pkg-config --modversion openblas 2>/dev/null || echo ?) rounds=$ROUNDS torch_steps=$TORCH_STEPS+$TORCH_WARMUP tandem_steps=$TANDEM_STEPS (first $TANDEM_WARMUP excluded)"

# ---- 1. FLOPs and floors ------------------------------------------------------------------
section "FLOPs per step and step-time floors (bench/flops.py)"
python3 bench/flops.py --markdown > "$OUT/flops.md"
grep '^RESULT' "$OUT/flops.md" | tee -a "$RESULTS"

# ---- PyTorch ------------------------------------------------------------------------------
have_torch=0
if [ -x "$PY" ] && "$PY" -c 'import torch' 2>/dev/null; then
    have_torch=1
else
    section "installing torch into $VENV"
    pin=$(grep -E '^torch==' bench/requirements.txt || echo torch)
    if { [ -x "$PY" ] || python3 -m venv "$VENV"; } &&
        "$PY" -m pip install --quiet "$pin" > "$OUT/pip.log" 2>&1; then
        have_torch=1
    else
        say "SKIPPED pytorch: could not install $pin (see $OUT/pip.log)"
    fi
fi
if [ $have_torch = 1 ]; then
    say "MACHINE torch=$("$PY" -c 'import torch; print(torch.__version__)')"
    section "parameter counts"
    "$PY" bench/torch_tiny.py --params-only | tee -a "$RESULTS"
fi

# ---- Tandem -------------------------------------------------------------------------------
have_train=0
if [ -x "$TANDEM" ] && "$TANDEM" train --help > /dev/null 2>&1; then have_train=1; fi
DATA=${TRAIN_BENCH_DATA:-}
if [ $have_train = 1 ] && [ -z "$DATA" ]; then
    DATA=$OUT/corpus
    if [ ! -f "$DATA/metadata.csv" ]; then
        "$TANDEM" corpus --out "$DATA" --count 64 --seed 1 --force > "$OUT/corpus.log" 2>&1
    fi
fi

torch_run() { # round attention
    local log=$OUT/torch_$2_r$1.log
    OMP_NUM_THREADS=$T MKL_NUM_THREADS=$T "$PY" bench/torch_tiny.py --size tiny --threads "$T" \
        --steps "$TORCH_STEPS" --warmup "$TORCH_WARMUP" --attention "$2" \
        --times-out "$OUT/times_torch_$2.txt" > "$log" 2>&1 || { say "FAILED torch ($2): $(tail -3 "$log")"; return 0; }
    grep -E '^(RESULT|LOSS)' "$log" | tee -a "$RESULTS"
}

tandem_run() { # round
    local run=$OUT/tandem_run_r$1 log=$OUT/tandem_r$1.log
    rm -rf "$run"
    local args=(train --config configs/tiny.yaml --train-data "$DATA" --out "$run"
        --max-steps "$TANDEM_STEPS" --log-every 1 --val-every 0 --checkpoint-every 0
        --backend host --quiet)
    echo "\$ TANDEM_HOST_THREADS=$T $TANDEM ${args[*]}" >> "$RESULTS"
    if ! TANDEM_HOST_THREADS=$T /usr/bin/time -f "%U %S" -o "$run.cpu" \
        "$TANDEM" "${args[@]}" > "$log" 2>&1; then
        say "FAILED tandem train: $(tail -3 "$log")"
        return 0
    fi
    if [ ! -f "$run/metrics.jsonl" ]; then say "FAILED tandem train: no $run/metrics.jsonl"; return 0; fi
    python3 - "$run/metrics.jsonl" "$TANDEM_WARMUP" "$OUT/times_tandem.txt" "$OUT/tandem_steps.jsonl" <<'EOF' | tee -a "$RESULTS"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if "step_ms" in r and r.get("step", 0) > int(sys.argv[2])]  # steps are 1-based
with open(sys.argv[3], "a") as f, open(sys.argv[4], "a") as g:
    for r in rows:
        f.write(f"{r['step_ms']:.3f}\n")
        g.write(json.dumps(r) + "\n")
ms = [r["step_ms"] for r in rows]
if ms:
    print(f"RESULT tandem_step_ms size=tiny n={len(ms)} median={statistics.median(ms):.1f} "
          f"min={min(ms):.1f} max={max(ms):.1f}")
EOF
    grep -E '^(devices|steps|[0-9.]+ samples/s)' "$log" | sed 's/^/TANDEM /' | tee -a "$RESULTS" || true
    # CPU time of the whole process (start-up, every step, the data device, the final
    # checkpoint) over the steps: an upper bound of Tandem's CPU time per step.
    echo "$(cat "$run.cpu") $TANDEM_STEPS" >> "$OUT/cpu_tandem.txt"
    LAST_CKPT=$(ls "$run"/ckpt-*.safetensors 2>/dev/null | tail -1)
}
LAST_CKPT=

section "tiny training step, $ROUNDS interleaved rounds, $T threads each side"
for r in $(seq 1 "$ROUNDS"); do
    if [ $have_torch = 1 ]; then torch_run "$r" sdpa; torch_run "$r" explicit; fi
    if [ $have_train = 1 ]; then tandem_run "$r"; fi
done
[ $have_train = 1 ] || say "PENDING tandem: $TANDEM has no 'train' command yet (tandem train not built yet)"
if [ $have_torch = 1 ] && [ -n "$LAST_CKPT" ]; then
    section "the PyTorch module against Tandem's checkpoint (names, shapes, count)"
    "$PY" bench/torch_tiny.py --params-only --checkpoint "$LAST_CKPT" 2>&1 | grep -E 'checkpoint|error' | tee -a "$RESULTS" ||
        say "FAILED: the PyTorch module does not match $LAST_CKPT"
fi

# ---- summary ------------------------------------------------------------------------------
section "summary"
python3 - "$OUT" "$T" <<'EOF' | tee "$OUT/summary.md" | tee -a "$RESULTS"
import json, os, statistics, sys
out, threads = sys.argv[1], sys.argv[2]
def load(name, col=0):
    p = os.path.join(out, name)
    return [float(x.split()[col]) for x in open(p)] if os.path.exists(p) else []
def stats(v):
    q = statistics.quantiles(v, n=10, method="inclusive") if len(v) >= 2 else v * 9
    return statistics.median(v), q[0], q[-1], statistics.pstdev(v) / statistics.fmean(v) * 100, min(v)
rows = {"PyTorch, SDPA attention": load("times_torch_sdpa.txt"),
        "PyTorch, explicit attention": load("times_torch_explicit.txt"),
        "Tandem host backend (tandem train)": load("times_tandem.txt")}
print(f"| tiny training step ({threads} threads) | steps | median ms | p10-p90 ms | min ms | CV |")
print("|---|---|---|---|---|---|")
med, mins = {}, {}
for k, v in rows.items():
    if not v:
        note = "pending: tandem train not built yet" if k.startswith("Tandem") else "not run"
        print(f"| {k} | - | {note} | | | |")
        continue
    m, lo, hi, cv, mn = stats(v)
    med[k], mins[k] = m, mn
    print(f"| {k} | {len(v)} | {m:.0f} | {lo:.0f}-{hi:.0f} | {mn:.0f} | {cv:.1f} % |")
t = med.get("Tandem host backend (tandem train)")
peers = [(v, k) for k, v in med.items() if k.startswith("PyTorch")]
cpu_peer = {k: statistics.median(load(f"times_torch_{k}.txt", 1))
            for k in ("sdpa", "explicit") if load(f"times_torch_{k}.txt", 1)}
p = os.path.join(out, "cpu_tandem.txt")
cpu_t = None
if os.path.exists(p):
    rs = [[float(x) for x in l.split()] for l in open(p) if l.strip()]
    cpu_t = sum(u + s for u, s, _ in rs) * 1e3 / sum(n for _, _, n in rs)
print()
print("| CPU time per step (all threads) | ms |")
print("|---|---|")
for k, v in cpu_peer.items():
    print(f"| PyTorch, {k} (median of per-step process_time) | {v:.0f} |")
print(f"| Tandem (whole process user+sys / steps: start-up, data device, final checkpoint "
      f"included — an upper bound) | {f'{cpu_t:.0f}' if cpu_t else 'pending'} |")
print()
if cpu_t and cpu_peer:
    for k, v in cpu_peer.items():
        print(f"RESULT cpu_ratio tandem/{k}={cpu_t / v:.2f} (Tandem's figure is an upper bound)")
if t and peers:
    best, name = min(peers)
    print(f"RESULT ratio tandem/pytorch={t / best:.2f} (vs the faster peer: {name}, {best:.0f} ms; "
          f"< 1 means Tandem is faster; target <= 1)")
    for v, k in peers:
        print(f"RESULT ratio tandem/{k.split(', ')[1].split()[0]}={t / v:.2f} (medians) "
              f"{mins['Tandem host backend (tandem train)'] / mins[k]:.2f} (minima: least disturbed steps)")
else:
    print("RESULT ratio pending (needs both a PyTorch and a Tandem figure)")
p = os.path.join(out, "tandem_steps.jsonl")
if os.path.exists(p):
    rs = [json.loads(l) for l in open(p)]
    st = sum(r["step_ms"] for r in rs)
    wait = sum(r.get("data_wait_ms", 0.0) for r in rs)
    busy = [r["model_busy_pct"] for r in rs if "model_busy_pct" in r]
    dbusy = [r["data_busy_pct"] for r in rs if "data_busy_pct" in r]
    ms = [r["step_ms"] for r in rs]
    print(f"RESULT tandem_pipeline data_wait_pct={100 * wait / st:.2f} (target <= 2) "
          f"model_busy_pct_median={statistics.median(busy) if busy else float('nan'):.1f} (target >= 98) "
          f"data_busy_pct_median={statistics.median(dbusy) if dbusy else float('nan'):.1f} "
          f"step_cv_pct={statistics.pstdev(ms) / statistics.fmean(ms) * 100:.1f} (target <= 5)")
EOF
say ""
say "flop table: $OUT/flops.md; summary: $OUT/summary.md; all figures: $RESULTS ($(( $(date +%s) - t_start )) s)"
