#!/usr/bin/env bash
# check_convergence.sh — does a training run lower the validation L1 clearly?
#
# usage: tools/check_convergence.sh RUN_DIR [MAX_RATIO]
# Reads RUN_DIR/metrics.jsonl: val_l1 at step 0 (the trainer validates the initial parameters
# of a fresh run) and at the last validated step. Passes (exit 0) when
#     val_l1(last) < MAX_RATIO * val_l1(step 0)        (default MAX_RATIO 0.8)
# and fails (exit 1) otherwise, or (exit 2) when the run has no step-0 validation.
#
# The default is set from measurements of `make demo`'s run (configs/tiny.yaml, batch 8,
# 200 steps, `tandem corpus --count 64` + 8 held-out utterances, host backend): see
# docs/BENCHMARKS.md ("convergence"). `make demo` runs this check after training; 200 steps of
# tiny take several minutes on a 2-core host, too long for `make test`.
set -euo pipefail
run=${1:?usage: check_convergence.sh RUN_DIR [MAX_RATIO]}
ratio=${2:-0.8}
m="$run/metrics.jsonl"
[ -f "$m" ] || { echo "check_convergence: no $m" >&2; exit 2; }
# step and val_l1 of every line that has a val_l1
vals=$(sed -n 's/^{"step":\([0-9]*\),.*"val_l1":\([-0-9.eE+]*\).*/\1 \2/p' "$m")
first=$(printf '%s\n' "$vals" | awk '$1 == 0 { print $2; exit }')
last=$(printf '%s\n' "$vals" | tail -n 1)
if [ -z "$first" ] || [ -z "$last" ]; then
  echo "check_convergence: $m has no step-0 val_l1 (train with --val-data and --val-every > 0, fresh run)" >&2
  exit 2
fi
awk -v a="$first" -v l="$last" -v r="$ratio" 'BEGIN {
  split(l, x, " "); q = x[2] / a
  printf "convergence: val_l1 %.4f at step 0 -> %.4f at step %d (ratio %.3f, limit %.2f): %s\n",
         a, x[2], x[1], q, r, (q < r ? "ok" : "NOT CLEARLY LOWER")
  exit (q < r ? 0 : 1) }'
