#!/usr/bin/env bash
# make bench-speak: does the tiny model learn to speak and stop? (issue 9; figures in
# docs/BENCHMARKS-training.md). For each corpus size N (default "16 64"):
#   train tiny (configs/tiny.yaml) for SPEAK_STEPS (800) steps on the first N utterances of
#   `tandem corpus --count 64 --seed 1`, then free-running synthesis (KV cache) of every
#   training sentence and of the held-out sentences (`tandem corpus --count K --seed 2`, K = 4
#   for N = 16, 8 for N = 64) through build/bench/speak_bench (runtime/run/speak_eval.h).
# Targets: stop within ±20 % of the true length on >= 15/16 training and >= 3/4 held-out
# (N = 16), >= 60/64 and >= 7/8 (N = 64); text-dependence ratio >= 1.3 on the training set.
# Not a test: CPU-heavy (about 6 minutes of training per size on an idle 2-core host).
#
# usage: bench/speak_bench.sh BUILD_DIR [N ...]      env: SPEAK_STEPS, SPEAK_OUT, SPEAK_TRAIN_FLAGS
# SPEAK_TRAIN_FLAGS: extra `tandem train` flags for experiments (e.g. "--ga-weight 2"), appended
# after the benchmark's own; empty for the benchmark itself.
set -euo pipefail
build=$1; shift
sizes=${*:-16 64}
tandem="$build/tandem"; bench="$build/bench/speak_bench"
out=${SPEAK_OUT:-$build/bench/speak}
steps=${SPEAK_STEPS:-800}
mkdir -p "$out"
full="$out/corpus64"
[ -f "$full/metadata.csv" ] || "$tandem" corpus --out "$full" --count 64 --seed 1 --force >/dev/null

verdict=0
check() { # label got want total
  if [ "$2" -ge "$3" ]; then echo "   $1: $2/$4 (target >= $3) ok"; else echo "   $1: $2/$4 (target >= $3) MISSED"; verdict=1; fi
}
for n in $sizes; do
  k=$(( n >= 64 ? 8 : 4 ))
  train="$out/train$n"; held="$out/held$k"; run="$out/run$n"
  if [ ! -f "$train/metadata.csv" ]; then
    mkdir -p "$train"; head -n "$n" "$full/metadata.csv" > "$train/metadata.csv"
    ln -sfn "$(cd "$full" && pwd)/wavs" "$train/wavs"
  fi
  [ -f "$held/metadata.csv" ] || "$tandem" corpus --out "$held" --count "$k" --seed 2 --force >/dev/null
  "$tandem" prep --data "$train" >/dev/null
  echo "== N=$n: training tiny for $steps steps on $train → $run${SPEAK_TRAIN_FLAGS:+ (extra flags: $SPEAK_TRAIN_FLAGS)}"
  rm -rf "$run"
  t0=$(date +%s)
  "$tandem" train --config configs/tiny.yaml --train-data "$train" --val-data "$held" \
    --out "$run" --max-steps "$steps" --log-every 100 --val-every "$steps" \
    --checkpoint-every "$steps" --keep 1 ${SPEAK_TRAIN_FLAGS:-} > "$out/train$n.log" 2>&1
  echo "   trained in $(( $(date +%s) - t0 )) s; $(grep -m1 '^devices' "$out/train$n.log" || true)"
  grep -E '^steps ' "$out/train$n.log" | sed 's/^/   /' || true
  ckpt=$(ls "$run"/ckpt-*.safetensors | tail -1)
  "$bench" "$ckpt" "$train" "train$n" | tee "$out/eval_train$n.txt" | tail -1
  "$bench" "$ckpt" "$held" "held$k" | tee "$out/eval_held$n.txt" | tail -1
  tw=$(sed -n 's/^train[0-9]*: stop within ±20%: \([0-9]*\)\/.*/\1/p' "$out/eval_train$n.txt")
  hw=$(sed -n 's/^held[0-9]*: stop within ±20%: \([0-9]*\)\/.*/\1/p' "$out/eval_held$n.txt")
  td=$(sed -n 's/^train[0-9]*:.*text-dependence ratio \([0-9.]*\).*/\1/p' "$out/eval_train$n.txt")
  check "N=$n training, stop within ±20 %" "$tw" $(( n == 64 ? 60 : n - 1 )) "$n"
  check "N=$n held-out, stop within ±20 %" "$hw" $(( k - 1 )) "$k"
  if awk -v r="$td" 'BEGIN { exit !(r >= 1.3) }'; then echo "   N=$n text-dependence ratio $td (target >= 1.3) ok"
  else echo "   N=$n text-dependence ratio $td (target >= 1.3) MISSED"; verdict=1; fi
done
echo "bench-speak: $([ $verdict = 0 ] && echo 'all targets met' || echo 'targets missed (see above)'); outputs under $out"
