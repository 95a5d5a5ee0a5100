#!/usr/bin/env bash
# tools/gpu_check.sh — the one bounded device call (issue 25): answers the questions that matter,
# most important first, in at most 9 minutes of wall time, each step under its own timeout (also
# capped by what is left of the call), no step aborting the rest, results in at most 8 files
# under $OUT. Format of those files: docs/TESTING.md, "The device check".
#
#   OUT=DIR bash tools/gpu_check.sh                  on the GPU machine (prepared: see below)
#   GPU_CHECK_SMOKE=1 OUT=DIR bash tools/gpu_check.sh   the rehearsal on the stand-in driver
#                                                    (`make test`: check_gpu_check)
#
# Prepared on the CPU machine (the GPU machine has no espeak-ng, no Debian packages, no network):
# `bash tools/gpu_kit.sh pack` writes gpu-kit/ (kit.tar.xz with build/tandem, the cuda tests and
# their libraries, the demo corpus, pack_root, and this script as gpu-kit/device.sh).
#
# Steps, in order: 0 environment + `tandem diagnose`; 1 tensor-core (attention: fused) against
# materialised attention from one seed, eager (step losses = the forward, grad norms = the
# backward; fallback / misaligned / illegal / error lines counted); 2 step time of both paths with
# CUDA graphs; 3 `tandem profile` per-op device times of both; 4 the PyTorch peer (when torch
# imports); 5 modelled (`tandem cost`) against measured; then only while the soft deadline has not
# passed: 6 a test-gpu subset with short timeouts, 7 compute-sanitizer on one tiny bf16 step,
# 8 the rest of bench/gpu_bench.sh.
#
# Environment: OUT (required), GPU_CHECK_SMOKE (1: tiny shapes on whatever driver
# TANDEM_CUDA_DRIVER names; torch, sanitizer and bench skipped), GPU_CHECK_BUILD (build),
# GPU_CHECK_DATA (BUILD/demo/corpus), GPU_CHECK_GPU (h200: the cost model's device),
# GPU_CHECK_BATCH (32; smoke 2), GPU_CHECK_STEPS (60; smoke 4), GPU_CHECK_HARD (530 s: no step runs
# past it), GPU_CHECK_DEADLINE (420 s; optional steps start only before it), GPU_CHECK_TESTS
# (the test subset: test binary names).
set -u
OUT=${OUT:?set OUT to the folder whose files come back}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SMOKE=${GPU_CHECK_SMOKE:-}
T0=$(date +%s)
HARD=${GPU_CHECK_HARD:-530}
DEADLINE=${GPU_CHECK_DEADLINE:-420}
L=$(mktemp -d)
el() { echo $(($(date +%s) - T0)); }
say() { echo "[$(el)s] $*" | tee -a "$OUT/summary.txt"; }
# run_step LIMIT LOG CMD...: CMD under min(LIMIT, what is left before HARD); its exit code
# (124: timed out; 125: not started, no time left)
run_step() {
    local limit=$1 log=$2 left
    shift 2
    left=$((HARD - $(el)))
    [ "$left" -lt "$limit" ] && limit=$left
    if [ "$limit" -lt 5 ]; then echo "not started: no time left" > "$log"; return 125; fi
    timeout -k 5 "$limit" "$@" > "$log" 2>&1
}
optional() { [ "$(el)" -lt "$DEADLINE" ]; }
fin() {
    tar -czf "$OUT/logs.tgz" --exclude='*.safetensors' --exclude='events.out*' -C "$L" . 2>/dev/null
    say "done: $(ls "$OUT" | wc -l) files in OUT"
    rm -rf "$L"
}
trap fin EXIT
: > "$OUT/summary.txt"

# ---- paths: the test binaries embed the pack-time checkout path; unpack the kit when there is one
cd "$ROOT" || exit 1
if [ -f gpu-kit/pack_root ]; then
    PR=$(cat gpu-kit/pack_root)
    if [ "$PR" != "$ROOT" ] && [ ! -e "$PR" ]; then mkdir -p "$(dirname "$PR")" && ln -s "$ROOT" "$PR"; fi
    cd "$PR" || exit 1
fi
BUILD=${GPU_CHECK_BUILD:-build}
if [ -f gpu-kit/kit.tar.xz ] && ! [ "$BUILD/tandem" -nt gpu-kit/kit.tar.xz ]; then
    tar -xJf gpu-kit/kit.tar.xz -C gpu-kit && mkdir -p "$BUILD" && cp -a "gpu-kit/$BUILD/." "$BUILD/" &&
        touch "$BUILD"/test/bin/* 2>/dev/null
fi
[ -d gpu-kit/libs ] && export LD_LIBRARY_PATH=$PWD/gpu-kit/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ -z "$SMOKE" ] && [ -z "${TANDEM_CUBLASLT:-}" ]; then
    LT=$(ldconfig -p 2>/dev/null | awk '$1=="libcublasLt.so.13"{print $NF; exit}')
    [ -n "$LT" ] || LT=$(ls /usr/local/cuda/lib64/libcublasLt.so.13 /usr/local/cuda/targets/*/lib/libcublasLt.so.13 2>/dev/null | head -1)
    [ -n "$LT" ] || LT=$(env -u LD_LIBRARY_PATH python3 -c 'import nvidia.cublas,os;print(os.path.join(list(nvidia.cublas.__path__)[0],"lib","libcublasLt.so.13"))' 2>/dev/null)
    [ -n "$LT" ] && export TANDEM_CUBLASLT=$LT
fi
TANDEM=$BUILD/tandem
GPU=${GPU_CHECK_GPU:-h200}
DATA=${GPU_CHECK_DATA:-$BUILD/demo/corpus}
if [ -n "$SMOKE" ]; then
    B=${GPU_CHECK_BATCH:-2}; STEPS=${GPU_CHECK_STEPS:-4}; CHK=3; PSTEPS=3; BASE=configs/tiny.yaml
    DIMS=$'d_model: 64\nlayers: 1\nheads: 2\nmax_frames: 256\nmax_text: 64'
    TESTS=${GPU_CHECK_TESTS:-test_ring@cuda}
else
    B=${GPU_CHECK_BATCH:-32}; STEPS=${GPU_CHECK_STEPS:-60}; CHK=4; PSTEPS=6; BASE=configs/ljspeech.yaml; DIMS=
    TESTS=${GPU_CHECK_TESTS:-test_grad_attention@cuda test_dev@cuda test_model_kv@cuda test_trainer@cuda test_cli@cuda}
fi
for A in fused materialised; do # fused on a bf16 CUDA model device = the tensor-core kernels attn_tc_*
    { cat "$BASE"; echo "attention: $A"; [ -n "$DIMS" ] && echo "$DIMS"; } > "$L/cfg_$A.yaml"
done
COMMON=(--batch-size "$B" --precision bf16 --train-data "$DATA" --val-every 0 --checkpoint-every 0 --backend cuda --seed 1234)
# fallback / misaligned / illegal / error lines of a log, counted
tally() {
    printf 'fallback=%s misaligned=%s illegal=%s errors=%s' \
        "$(grep -ciE "fallback|fatbin's GEMM|runs on the fatbin|no algorithm" "$1")" "$(grep -ci misaligned "$1")" \
        "$(grep -ci illegal "$1")" "$(grep -iE "error|CUDA_ERROR|fault" "$1" | grep -vc 'metadata.csv')"
}
step_ms() { sed -n 's/^\([0-9.]*\) samples\/s.*/\1/p' "$1" | tail -1 | awk -v b="$B" '$1>0{printf "%.3f", b*1000/$1}'; }
say "gpu_check: $( [ -n "$SMOKE" ] && echo "SMOKE (stand-in rehearsal: no figure here is a GPU's)" || echo full) base=$BASE batch=$B bf16 model=$GPU commit=$(git rev-parse --short HEAD 2>/dev/null || echo ?)"

# ---- 0. environment and diagnose
{
    echo "== environment"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1
    echo "TANDEM_CUDA_DRIVER=${TANDEM_CUDA_DRIVER:-} TANDEM_CUBLASLT=${TANDEM_CUBLASLT:-} nproc=$(nproc)"
    echo "missing libraries: $(ldd "$TANDEM" 2>&1 | grep -c 'not found')"
    env -u LD_LIBRARY_PATH python3 -c 'import torch;print("torch",torch.__version__,torch.cuda.is_available())' 2>&1 | tail -1
    command -v compute-sanitizer || echo "compute-sanitizer: none"
    echo "== tandem diagnose"
} > "$OUT/env.txt"
run_step 60 "$L/diagnose.txt" "$TANDEM" diagnose
rc=$?
cat "$L/diagnose.txt" >> "$OUT/env.txt"
say "0 env rc=$rc: $(grep -m1 -iE 'NVIDIA|stand-in' "$L/diagnose.txt" | sed 's/^ *//' | cut -c1-120) | cuBLASLt: $(grep -A1 '^cuBLASLt' "$L/diagnose.txt" | tail -1 | sed 's/^ *//' | cut -c1-100) | $(grep -m1 '^torch' "$OUT/env.txt" || echo 'torch: ?')"

# ---- 1. tensor cores against materialised: same seed, same batches, eager
{
    echo "# TC (attention: fused) vs materialised, base=$BASE batch $B bf16, $CHK eager steps, seed 1234"
    echo "# step  loss_tc  loss_mat  loss_rel  gnorm_tc  gnorm_mat  gnorm_rel  verdict"
} > "$OUT/check.txt"
for A in fused materialised; do
    run_step 120 "$L/chk_$A.log" "$TANDEM" train --config "$L/cfg_$A.yaml" "${COMMON[@]}" --cuda-graphs false \
        --out "$L/runs/chk_$A" --max-steps "$CHK" --log-every 1
    rc=$?
    echo "# check $A rc=$rc $(tally "$L/chk_$A.log")" >> "$OUT/check.txt"
    say "1 check attention=$A rc=$rc $(tally "$L/chk_$A.log")"
done
jrows() { # step loss grad_norm per metrics.jsonl line
    awk '{ s=$0; sub(/.*"step":/,"",s); sub(/,.*/,"",s); l=$0; sub(/.*"loss":/,"",l); sub(/,.*/,"",l);
           g=$0; sub(/.*"grad_norm":/,"",g); sub(/,.*/,"",g); print s, l, g }' "$1" 2>/dev/null
}
jrows "$L/runs/chk_fused/metrics.jsonl" > "$L/rows_tc"
jrows "$L/runs/chk_materialised/metrics.jsonl" > "$L/rows_mat"
awk 'NR == FNR { tc[$1] = $2 " " $3; next } ($1 in tc) { split(tc[$1], t, " "); print $1, t[1], t[2], $2, $3 }' \
    "$L/rows_tc" "$L/rows_mat" | awk '
    function rel(a, b) { d = a - b; if (d < 0) d = -d; if (b < 0) b = -b; return b > 0 ? d / b : d }
    { lr = rel($2, $4); gr = rel($3, $5); bad = (lr > 5e-3 || gr > 5e-2 || $2 != $2 + 0)
      printf "%5d  %.6f  %.6f  %.1e  %.5f  %.5f  %.1e  %s\n", $1, $2, $4, lr, $3, $5, gr, bad ? "SUSPECT" : "agree"
      n++; nbad += bad }
    END { printf "# compared %d steps, %d suspect (bounds: loss 5e-3, grad norm 5e-2 relative)\n", n, nbad }' \
    >> "$OUT/check.txt"
say "1 compare: $(tail -1 "$OUT/check.txt" | sed 's/^# //'); step 1: $(grep -m1 '^ *1 ' "$OUT/check.txt" | tr -s ' ')"

# ---- 2. step time of both paths, CUDA graphs on, read-back every 10th step
for A in fused materialised; do
    run_step 120 "$L/time_$A.log" "$TANDEM" train --config "$L/cfg_$A.yaml" "${COMMON[@]}" \
        --out "$L/runs/time_$A" --max-steps "$STEPS" --log-every 10
    rc=$?
    eval "MS_$A=\$(step_ms \"\$L/time_\$A.log\")"
    say "2 time attention=$A rc=$rc step $(eval echo "\${MS_$A:-?}") ms over $STEPS steps (graphs) $(tally "$L/time_$A.log")"
done

# ---- 3. per-op device times of one eager step of each path
for A in fused materialised; do
    F=$OUT/prof_$( [ $A = fused ] && echo tc || echo mat).txt
    run_step 90 "$F" "$TANDEM" profile --config "$L/cfg_$A.yaml" "${COMMON[@]}" --steps "$PSTEPS"
    rc=$?
    say "3 profile $A rc=$rc: $(sed -n 's/^ops of the last step: \([0-9]* timed, [0-9.]* ms of device time\).*/\1/p' "$F"); top: $(grep -E '^  [a-z_]+ +x[0-9]+' "$F" | head -4 | tr -s ' ' | tr '\n' ';')"
done

# ---- 4. the PyTorch peer on the same GPU (the image's python3; not our libraries)
TORCH_MS=
if [ -n "$SMOKE" ]; then
    say "4 pytorch: skipped (smoke)"
elif env -u LD_LIBRARY_PATH python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    run_step 150 "$L/torch.log" env -u LD_LIBRARY_PATH python3 bench/torch_tiny.py --size base --batch "$B" \
        --device cuda --precision bf16 --steps 40 --warmup 10
    rc=$?
    TORCH_MS=$(sed -n 's/^RESULT .* median=\([0-9.]*\).*/\1/p' "$L/torch.log" | head -1)
    say "4 pytorch base b$B bf16 rc=$rc: median ${TORCH_MS:-?} ms $(grep -m1 ^RESULT "$L/torch.log" | cut -c1-160)"
else
    say "4 pytorch: skipped (torch does not import or sees no GPU)"
fi

# ---- 5. modelled against measured
{
    echo "# path  modelled_ms($GPU, graph)  measured_ms  measured/modelled  pytorch_ms  tandem/pytorch"
} > "$OUT/cost.txt"
for A in fused materialised; do
    run_step 90 "$L/cost_$A.txt" "$TANDEM" cost --config "$L/cfg_$A.yaml" --gpu "$GPU" --batch "$B" --precision bf16
    mod=$(sed -n 's/^modelled step: \([0-9.]*\) ms in a CUDA graph.*/\1/p' "$L/cost_$A.txt")
    meas=$(eval echo "\${MS_$A:-}")
    awk -v a=$A -v m="${mod:-}" -v x="${meas:-}" -v t="${TORCH_MS:-}" 'BEGIN {
        printf "%-13s %10s %10s %8s %10s %8s\n", a, m == "" ? "?" : m, x == "" ? "?" : x,
            (m > 0 && x > 0) ? sprintf("%.2f", x / m) : "?", t == "" ? "?" : t, (t > 0 && x > 0) ? sprintf("%.2f", x / t) : "?" }' \
        >> "$OUT/cost.txt"
done
{ echo; echo "# tandem cost, tensor-core path:"; cat "$L/cost_fused.txt"; } >> "$OUT/cost.txt"
say "5 modelled vs measured ($GPU$( [ -n "$SMOKE" ] && echo '; stand-in: the ratio means nothing')): $(grep -v '^#' "$OUT/cost.txt" | head -2 | tr -s ' ' | tr '\n' ';')"

# ---- 6.-8. optional, in order of value, while time is left
: > "$OUT/tests.txt"
if optional; then
    list=(); for t in $TESTS; do [ -e "$BUILD/test/bin/$t" ] && list+=("$BUILD/test/bin/$t"); done
    real=1; [ -n "$SMOKE" ] && real=0
    run_step $((DEADLINE + 60 - $(el))) "$L/tests.log" env TANDEM_TEST_REAL_GPU=$real TANDEM_TEST_TIMEOUT=60 \
        bash test/run.sh "${list[@]}"
    rc=$?
    { echo "== test subset rc=$rc: $TESTS"; grep -E '^\[  FAILED  \]|^failing|passed, ' "$L/tests.log"; } >> "$OUT/tests.txt"
    say "6 tests rc=$rc: $(tail -1 "$L/tests.log") $(grep '^failing' "$L/tests.log")"
else
    say "6 tests: skipped (past the ${DEADLINE}s deadline)"
fi
if [ -z "$SMOKE" ] && optional && command -v compute-sanitizer > /dev/null; then
    run_step 120 "$L/memcheck.log" compute-sanitizer --tool memcheck --print-limit 10 "$TANDEM" train \
        --config configs/tiny.yaml --text-input chars --batch-size 2 --precision bf16 --train-data "$DATA" --val-every 0 \
        --checkpoint-every 0 --backend cuda --attention fused --cuda-graphs false --out "$L/runs/san" \
        --max-steps 1 --log-every 1
    rc=$?
    { echo "== memcheck rc=$rc"; grep -E 'ERROR SUMMARY|Invalid|misaligned' "$L/memcheck.log" | head -20; } >> "$OUT/tests.txt"
    say "7 memcheck (tiny bf16 TC, 1 eager step) rc=$rc: $(grep -m1 'ERROR SUMMARY' "$L/memcheck.log")"
else
    say "7 memcheck: skipped ($( [ -n "$SMOKE" ] && echo smoke || echo 'no compute-sanitizer or past the deadline'))"
fi
if [ -z "$SMOKE" ] && optional; then
    printf '#!/bin/sh\nunset LD_LIBRARY_PATH\nexec python3 "$@"\n' > "$L/py" && chmod +x "$L/py"
    run_step $((HARD - 10 - $(el))) "$L/bench.log" env GPU_BENCH_GPU="$GPU" GPU_BENCH_STEPS=40 \
        GPU_BENCH_CASES="tiny:8:bf16 base:32:fp32 tiny:8:fp32" GPU_BENCH_PYTHON="$L/py" GPU_BENCH_DATA="$DATA" \
        bash bench/gpu_bench.sh "$BUILD"
    rc=$?
    { echo "== bench rc=$rc"; grep '^|' "$BUILD/bench-gpu/results.txt" 2>/dev/null; } >> "$OUT/tests.txt"
    say "8 bench rc=$rc: $(grep -c '^| [a-z]' "$BUILD/bench-gpu/results.txt" 2>/dev/null) rows"
else
    say "8 bench: skipped ($( [ -n "$SMOKE" ] && echo smoke || echo 'past the deadline'))"
fi
