#!/usr/bin/env bash
# check_exit_codes.sh SRC BUILD — README's "Exit codes" table, one bad input per row, each through
# the built command in a scratch directory; and the messages a user meets first: --quiet keeps only
# warnings and errors, the missing-driver line only under --verbose, "did you mean" for flags,
# configs/tiny.yaml's train_data is what `make demo` writes, synth takes a run directory.
set -u
src=$(cd "$1" && pwd); build=$(cd "$2" && pwd)
T="$build/tandem"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/tandem_exit.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export TANDEM_CACHE_DIR="$scratch/cache"
export TANDEM_CUDA_DRIVER="$scratch/no-such-libcuda.so.1" # a CPU-only machine, whatever this one has
cd "$scratch" || exit 1
ln -s "$src/configs" configs
fail=0
ok() { echo "[       OK ] $1"; }
bad() { echo "[  FAILED  ] $1: $2"; fail=1; }

"$T" corpus --out data --count 6 --seed 3 >/dev/null 2>&1 || { bad setup "tandem corpus failed"; exit 1; }
"$T" train --config configs/tiny.yaml --train-data data --out run --backend host --max-steps 1 --batch-size 2 \
  --num-workers 1 --val-every 0 --quiet >/dev/null 2>&1 || { bad setup "a one-step run failed"; exit 1; }

# want | what | command (run with bash in the scratch directory)
table=(
  "2|missing config|plan --config nope.yaml"
  "2|missing --train-data|train --train-data nodir --out r1 --backend host"
  "2|missing train_data of the config file|train --config configs/tiny.yaml --out r2 --backend host"
  "2|missing checkpoint|synth --checkpoint nope.safetensors --text hi --out x.wav"
  "2|missing run for --resume|train --resume norun"
  "2|--resume without its directory|train --resume --train-data data"
  "2|missing run for monitor|monitor --run norun --count 1"
  "2|missing dataset for prep|prep --data nodir"
  "2|missing dataset for pipeline|pipeline --data nodir --steps 1"
  "2|bad config value|plan --config configs/tiny.yaml --batch-size 0"
  "2|unknown flag|train --bach-size 2"
  "2|unknown command|trian"
  "0|synth from a run directory|synth --checkpoint run --text hi --out x.wav --max-frames 8 --gl-iters 1"
)
for row in "${table[@]}"; do
  want=${row%%|*}; rest=${row#*|}; what=${rest%%|*}; cmd=${rest#*|}
  out=$(eval "\"$T\" $cmd" 2>&1 </dev/null); rc=$?
  if [ "$rc" -eq "$want" ]; then ok "exit $want: $what"
  else bad "exit $want: $what" "tandem $cmd exited $rc: $(printf '%s' "$out" | tail -2)"; fi
done

out=$("$T" train --bach-size 2 2>&1)
if [[ "$out" == *"did you mean '--batch-size'?"* ]]; then ok "did_you_mean"; else bad did_you_mean "$out"; fi
out=$("$T" synth --checkpoint run --text hi --out y.wav --max-frames 8 --gl-iters 1 2>&1)
if [[ "$out" == *"checkpoint: run/ckpt-00000001.safetensors"* ]]; then ok "synth_run_dir"; else bad synth_run_dir "$out"; fi

# --quiet: only warnings and errors; the missing-driver line only with --verbose
out=$("$T" pipeline --data data --steps 2 --batch-size 2 --quiet 2>&1 >/dev/null)
if printf '%s\n' "$out" | grep -v -e '^$' -e 'warning' -e 'error' | grep -q .; then bad quiet "lines besides warnings: $out"
else ok quiet; fi
out=$("$T" train --config configs/tiny.yaml --train-data data --out run-q --backend host --max-steps 1 \
      --batch-size 2 --num-workers 1 --val-every 0 --quiet 2>&1)
if [ -n "$(printf '%s\n' "$out" | grep -v -e '^$' -e 'warning' -e 'error')" ]; then bad quiet_train "lines besides warnings: $out"
else ok quiet_train; fi
out=$("$T" pipeline --data data --steps 2 --batch-size 2 2>&1)
if [[ "$out" == *"no CUDA driver"* ]]; then bad no_driver_line "printed without --verbose: $(printf '%s' "$out" | grep 'no CUDA driver')"
else ok no_driver_line_quiet; fi
out=$("$T" pipeline --data data --steps 2 --batch-size 2 --verbose 2>&1)
if [[ "$out" == *"no CUDA driver"* ]]; then ok no_driver_line_verbose; else bad no_driver_line_verbose "absent under --verbose"; fi

# configs/tiny.yaml trains on what `make demo` writes (mk/90-demo.mk's DEMO_DIR, tools/demo.sh's corpus)
demo_dir=$(sed -n 's/^DEMO_DIR ?= $(BUILD)\///p' "$src/mk/90-demo.mk")
sub=$(sed -n 's/^corpus="$out\/\([a-z-]*\)".*/\1/p' "$src/tools/demo.sh")
tiny=$(sed -n 's/^train_data: *//p' "$src/configs/tiny.yaml")
if [ -n "$demo_dir" ] && [ "$tiny" = "build/$demo_dir/$sub" ]; then ok "tiny_train_data ($tiny)"
else bad tiny_train_data "configs/tiny.yaml's train_data '$tiny', make demo writes build/$demo_dir/$sub"; fi
exit $fail
