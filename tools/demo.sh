#!/usr/bin/env bash
# The demo: corpus → prep → features (→ training once the model device lands).
set -eu
build=$1; out=$2
tandem="$build/tandem"
mkdir -p "$out"
echo "== devices"
"$tandem" diagnose | sed 's/^/   /'
corpus="$out/corpus"
if [ ! -f "$corpus/metadata.csv" ]; then
  echo "== demo corpus (espeak-ng) → $corpus"
  "$tandem" corpus --out "$corpus" --count "${DEMO_COUNT:-64}" --seed 1 --force
fi
echo "== text frontend and cache"
"$tandem" prep --data "$corpus"
first=$(ls "$corpus"/wavs/*.wav | head -1)
echo "== log-mel of $first"
"$tandem" features "$first" "$out/first.npy"
echo "== data pipeline alone (loader threads → features on the data device → ring)"
"$tandem" pipeline --data "$corpus" --steps "${DEMO_PIPELINE_STEPS:-20}"
echo "== memory plan (configs/tiny.yaml)"
"$tandem" plan --config configs/tiny.yaml
echo
echo "demo outputs in $out:"
echo "   $corpus/ (metadata.csv, wavs/)"
echo "   $out/first.npy (log-mel [frames, 80] of $(basename "$first"))"
if "$tandem" train --help >/dev/null 2>&1; then :; else
  echo "note: training (tandem train) is not part of this build yet; the demo stops at features."
fi
