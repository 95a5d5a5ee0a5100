#!/usr/bin/env bash
# check_gpu_check.sh ROOT BUILD FAKEDIR — the rehearsal of tools/gpu_check.sh (the one device call)
# on the stand-in driver, in its short mode (GPU_CHECK_SMOKE=1), so the script cannot rot between
# GPU sessions: every step must run and write what docs/TESTING.md ("The device check") says;
# then a second run with almost no time left must still end in time with its files written.
set -u
root=$1; build=$2; fakedir=$3
cd "$root" || exit 1
if [ ! -s "$build/tandem.fatbin" ]; then echo "gpu_check rehearsal skipped: host-only build"; exit 0; fi
if ! command -v espeak-ng > /dev/null; then echo "gpu_check rehearsal skipped: no espeak-ng for the corpus"; exit 0; fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tandem_gpucheck.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "[       OK ] gpu_check: $1"; }
bad() { echo "[  FAILED  ] gpu_check: $1"; fails=$((fails + 1)); }
expect() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

"$build/tandem" corpus --out "$tmp/corpus" --count 4 --seed 1 --langs en --max-seconds 2.9 > "$tmp/corpus.log" 2>&1 ||
    { bad "corpus: $(tail -1 "$tmp/corpus.log")"; exit 1; }
export TANDEM_CUDA_DRIVER=$fakedir/libcuda.so.1 TANDEM_CUBLASLT=$fakedir/libcublasLt.so.13
export TANDEM_NVML=none GPU_CHECK_SMOKE=1 GPU_CHECK_DATA=$tmp/corpus GPU_CHECK_BUILD=$build
start=$(date +%s)
OUT=$tmp/out GPU_CHECK_HARD=240 GPU_CHECK_DEADLINE=200 bash tools/gpu_check.sh > "$tmp/run.log" 2>&1
took=$(($(date +%s) - start))
cat "$tmp/run.log"
o=$tmp/out s=$tmp/out/summary.txt
files=$(ls "$o" | wc -l)
expect "at most 8 result files ($files), names the device tool brings back" \
    '[ "$files" -le 8 ] && ! ls "$o" | grep -q "[^A-Za-z0-9._-]"'
for f in summary.txt env.txt check.txt prof_tc.txt prof_mat.txt cost.txt tests.txt logs.tgz; do
    expect "$f written" '[ -s "$o/$f" ] || [ "$f" = tests.txt ]'
done
expect "steps 0 to 8 reported in order, then done" \
    '[ "$(sed -n "s/^\[[0-9]*s\] \([0-8]\) .*/\1/p" "$s" | uniq | tr -d "\n")" = 012345678 ] && tail -1 "$s" | grep -q "done: 8 files"'
expect "no required step failed (rc=0 for env, checks, times, profiles)" \
    '[ "$(grep -cE "^\[[0-9]+s\] [0-3] .* rc=0" "$s")" -eq 7 ]'
expect "TC and materialised agree on the stand-in, every step compared" \
    'grep -q "^# compared 3 steps, 0 suspect" "$o/check.txt" && [ "$(grep -c " agree$" "$o/check.txt")" -eq 3 ]'
expect "no fallback, misaligned, illegal or error line in either check" \
    '[ "$(grep -c "fallback=0 misaligned=0 illegal=0 errors=0" "$o/check.txt")" -eq 2 ]'
expect "both step times measured" '[ "$(grep -cE "^\[[0-9]+s\] 2 time .* step [0-9.]+ ms" "$s")" -eq 2 ]'
expect "the TC profile runs attn_tc_fwd/bwd, the materialised one softmax" \
    'grep -q "attn_tc_fwd" "$o/prof_tc.txt" && grep -q "attn_tc_bwd" "$o/prof_tc.txt" &&
     grep -q "softmax_causal_fwd" "$o/prof_mat.txt" && ! grep -q attn_tc "$o/prof_mat.txt"'
expect "modelled and measured side by side for both paths" \
    '[ "$(grep -cE "^(fused|materialised) +[0-9.]+ +[0-9.]+ +[0-9.]+ " "$o/cost.txt")" -eq 2 ] && grep -q "^modelled step" "$o/cost.txt"'
expect "the test subset ran and passed" 'grep -qE "^\[[0-9]+s\] 6 tests rc=0: [1-9][0-9]* passed, 0 failed" "$s"'
expect "the rehearsal stayed inside its 240 s ($took s)" '[ "$took" -le 245 ]'

# no time left: every step is capped or skipped, the files still come back, the call ends in time
start=$(date +%s)
OUT=$tmp/out2 GPU_CHECK_HARD=6 GPU_CHECK_DEADLINE=3 bash tools/gpu_check.sh > "$tmp/run2.log" 2>&1
took=$(($(date +%s) - start))
expect "with 6 s to spend it ends within 20 s ($took s) and still says done" \
    '[ "$took" -le 20 ] && tail -1 "$tmp/out2/summary.txt" | grep -q "done:" && [ "$(ls "$tmp/out2" | wc -l)" -le 8 ]'
expect "steps past the time are reported as cut or not started, not silently dropped" \
    'grep -qE "rc=(124|125|137)" "$tmp/out2/summary.txt" && grep -q "6 tests: skipped" "$tmp/out2/summary.txt"'
[ "$fails" -eq 0 ]
