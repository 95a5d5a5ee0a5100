#!/usr/bin/env bash
# make bench-speak: does the tiny model learn to speak? (figures in docs/BENCHMARKS-training.md).
#   train tiny (configs/tiny.yaml, exactly as a user runs it) for SPEAK_STEPS (4000) steps on
#   `tandem corpus --count SPEAK_N --seed 1` (256 utterances, English and Persian in turn), with
#   SPEAK_HELD (16) held-out sentences of `tandem corpus --seed 2` as validation, then free-running
#   synthesis (KV cache) of the first SPEAK_EVAL_TRAIN (32) training sentences and of every held-out
#   one through build/bench/speak_bench (runtime/run/speak_eval.h).
# Targets: identified (nearest true mel by DTW among the set is its own) >= 95 % of the training
#   and >= 90 % of the held-out sentences; stop within ±20 % of the true length on >= 95 % of
#   both; spectral variation (generated / true frame-to-frame change) >= 0.5 on both.
# Not a test: CPU-heavy (about 20 minutes of training on an idle 2-core host).
#
# usage: bench/speak_bench.sh BUILD_DIR
# env: SPEAK_STEPS, SPEAK_N, SPEAK_HELD, SPEAK_EVAL_TRAIN, SPEAK_OUT (default BUILD/bench/speak),
#      SPEAK_TRAIN_FLAGS (extra `tandem train` flags for experiments, after the benchmark's own),
#      SPEAK_CKPT (evaluate this checkpoint instead of training)
set -euo pipefail
build=$1
tandem="$build/tandem"; bench="$build/bench/speak_bench"
out=${SPEAK_OUT:-$build/bench/speak}
steps=${SPEAK_STEPS:-4000}; n=${SPEAK_N:-256}; k=${SPEAK_HELD:-16}; ne=${SPEAK_EVAL_TRAIN:-32}
mkdir -p "$out"
train="$out/corpus$n"; held="$out/held$k"; run="$out/run$n"
[ -f "$train/metadata.csv" ] || "$tandem" corpus --out "$train" --count "$n" --seed 1 --force >/dev/null
[ -f "$held/metadata.csv" ] || "$tandem" corpus --out "$held" --count "$k" --seed 2 --force >/dev/null

ckpt=${SPEAK_CKPT:-}
if [ -z "$ckpt" ]; then
  echo "== training tiny for $steps steps on $train ($n utterances) → $run${SPEAK_TRAIN_FLAGS:+ (extra flags: $SPEAK_TRAIN_FLAGS)}"
  rm -rf "$run"
  t0=$(date +%s)
  "$tandem" train --config configs/tiny.yaml --train-data "$train" --val-data "$held" \
    --out "$run" --max-steps "$steps" --log-every 100 --val-every 1000 \
    --checkpoint-every 1000 --keep 8 ${SPEAK_TRAIN_FLAGS:-} > "$out/train.log" 2>&1
  echo "   trained in $(( $(date +%s) - t0 )) s; $(grep -m1 '^devices' "$out/train.log" || true)"
  ckpt=$(ls "$run"/ckpt-*.safetensors | tail -1)
fi
echo "== evaluating $ckpt"
"$bench" "$ckpt" "$train" "train" "$ne" | tee "$out/eval_train.txt" | tail -1
"$bench" "$ckpt" "$held" "held" | tee "$out/eval_held.txt" | tail -1

verdict=0
field() { sed -n "s/^$1: .*$2 \\([0-9.]*\\).*/\\1/p" "$3"; }
frac() { sed -n "s/^$1: .*$2 \\([0-9]*\\)\\/\\([0-9]*\\).*/\\1 \\2/p" "$3"; }
check() { # label "got total" min_fraction
  set -- "$1" $2 "$3"
  if awk -v g="$2" -v t="$3" -v m="$4" 'BEGIN { exit !(g >= m * t) }'; then
    echo "   $1: $2/$3 (target >= $(awk -v m="$4" 'BEGIN { print m * 100 }') %) ok"
  else echo "   $1: $2/$3 (target >= $(awk -v m="$4" 'BEGIN { print m * 100 }') %) MISSED"; verdict=1; fi
}
for set in train held; do
  f="$out/eval_$set.txt"
  if [ $set = train ]; then want=0.95; else want=0.90; fi
  check "$set: identified" "$(frac $set identified "$f")" $want
  check "$set: stop within ±20 %" "$(frac $set 'stop within ±20%:' "$f")" 0.95
  sv=$(field $set 'spectral variation' "$f")
  if awk -v v="$sv" 'BEGIN { exit !(v >= 0.5) }'; then echo "   $set: spectral variation $sv (target >= 0.5) ok"
  else echo "   $set: spectral variation $sv (target >= 0.5) MISSED"; verdict=1; fi
done
echo "bench-speak: $([ $verdict = 0 ] && echo 'all targets met' || echo 'targets missed (see above)'); outputs under $out"
