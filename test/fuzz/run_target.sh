#!/bin/sh
# run_target.sh — one libFuzzer campaign for `make fuzz` (mk/60-fuzz.mk): a plain in-process run
# (no -fork, no -jobs) of BIN over its seed corpus, stopping after SECONDS of wall time or RUNS
# executions, whichever comes first (RUNS empty or 0: time only). New inputs go to WORK (the seed
# corpus stays untouched), crashes/leaks/timeouts to ARTIFACTS/<name>-*, the whole log to LOG.
# Prints one summary line (executions, wall and CPU time, exec/s, cov, ft, corpus) and exits non-zero
# when libFuzzer found anything.
#
#   run_target.sh NAME BIN SEEDS WORK ARTIFACTS LOG SECONDS RUNS [libFuzzer flags...]
set -u
name=$1 bin=$2 seeds=$3 work=$4 artifacts=$5 log=$6 seconds=$7 runs=$8
shift 8
mkdir -p "$work" "$artifacts" "$(dirname "$log")"
runs_flag=""
[ -n "$runs" ] && [ "$runs" != 0 ] && runs_flag="-runs=$runs"
start=$(date +%s)
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$bin" "$work" "$seeds" -max_total_time="$seconds" $runs_flag -timeout=20 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$name-" "$@" >"$log" 2>&1
rc=$?
wall=$(( $(date +%s) - start ))
# CPU seconds the fuzzer got (user + system, from the shell's `times`: children's line): on a
# shared machine this, not the wall time, is what the execution count was bought with; `times`
# runs in this shell, not in a pipeline's subshell, so its output goes through a file
times >"$log.times"
cpu=$(sed -n 2p "$log.times" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); t += a[1] * 60 + a[2] } printf "%.0f", t }')
rm -f "$log.times"
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
# exec/s over the wall time (libFuzzer's own average rounds to whole seconds)
rate=$(awk -v e="${execs:-0}" -v w="$wall" 'BEGIN { printf "%.0f", e / (w > 0 ? w : 1) }')
last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -n 1)
cov=$(printf '%s\n' "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
ft=$(printf '%s\n' "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
corp=$(printf '%s\n' "$last" | sed -n 's/.* corp: \([^ ]*\).*/\1/p')
found=$(ls "$artifacts" 2>/dev/null | grep -c "^$name-" || true)
printf 'fuzz_%s: %s execs in %s s wall, %s s CPU (%s exec/s), cov %s ft %s corpus %s, artifacts %s, rc %s (log: %s)\n' \
    "$name" "${execs:-?}" "$wall" "${cpu:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$found" "$rc" "$log"
if [ "$rc" -ne 0 ]; then
    tail -n 40 "$log"
    exit 1
fi
