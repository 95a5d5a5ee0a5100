#!/usr/bin/env bash
# bench/run.sh BUILD — the data-side benchmarks behind `make bench` (mk/95-bench.mk builds
# BUILD/tandem and BUILD/bench/features_bench first). Never part of `make test`.
#
#   1. text frontend: `tandem prep --no-audio-check` on a 13,100-row metadata.csv (LJSpeech
#      size, from `tandem corpus --text-only`), cold (text cache emptied) and warm (cache hit)
#   2. features: Tandem's log-mel path over the 64-file demo corpus with T threads, and the same
#      recipe in librosa and torch/torchaudio (bench/peers.py) with T single-threaded processes,
#      after checking on one file that both peers match `tandem features` within 1e-3
#   3. `tandem pipeline --data <demo corpus> --steps 50` on the host backend
#
# The peers are installed into bench/.venv (git-ignored) from PyPI, pinned in
# bench/requirements.txt; if that fails the peers are skipped and the reason printed.
# Every raw log and RESULT line goes to BUILD/bench/; the summary table (BUILD/bench/summary.md)
# is what docs/BENCHMARKS.md quotes.
#
# Environment: BENCH_REPS (default 7) timed repetitions per figure; BENCH_THREADS (default
# "1 2") thread counts for the features comparison; BENCH_PIPELINE_RUNS (default 3).
set -euo pipefail

BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=$BUILD/bench
TANDEM=$BUILD/tandem
FEATURES_BENCH=$BUILD/bench/features_bench
REPS=${BENCH_REPS:-7}
THREADS=${BENCH_THREADS:-"1 2"}
PIPELINE_RUNS=${BENCH_PIPELINE_RUNS:-3}
VENV=bench/.venv
PY=$VENV/bin/python
RESULTS=$OUT/results.txt

for f in "$TANDEM" "$FEATURES_BENCH"; do
    [ -x "$f" ] || { echo "bench: $f is missing (run 'make bench', which builds it)" >&2; exit 2; }
done
mkdir -p "$OUT"
: > "$RESULTS"
t_start=$(date +%s)

# Every library on every side single-threaded per worker: T workers = T threads.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1

failures=0
say() { echo "$*" | tee -a "$RESULTS"; }
section() { say ""; say "== $* ($(date -u +%H:%M:%S) UTC, load average $(cut -d' ' -f1-3 /proc/loadavg))"; }
# Run a command, keep its full output in a log, copy its RESULT/VERIFY lines to the results.
record() {
    local log=$1; shift
    echo "\$ $*" >> "$RESULTS"
    local rc=0
    "$@" > "$log" 2>&1 || rc=$?
    grep -E '^(RESULT|VERIFY)' "$log" | tee -a "$RESULTS" || true
    if [ $rc != 0 ]; then
        say "FAILED (exit $rc): $* — last lines of $log:"
        tail -5 "$log" | tee -a "$RESULTS"
        failures=$((failures + 1))
    fi
}

# ---- machine ------------------------------------------------------------------------------
say "# Tandem data-side benchmarks"
say "MACHINE date=$(date -u +%Y-%m-%dT%H:%M:%SZ) commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo +dirty)"
say "MACHINE cpu=\"$(lscpu | sed -n 's/^Model name: *//p' | head -1)\" cpus=$(getconf _NPROCESSORS_ONLN) mem_gib=$(free -g | awk '/^Mem:/ {print $2}') kernel=$(uname -r) hypervisor=\"$(lscpu | sed -n 's/^Hypervisor vendor: *//p')\""
say "MACHINE compiler=\"$(${CC:-gcc} --version | head -1)\" openblas=$(pkg-config --modversion openblas 2>/dev/null || echo ?) sndfile=$(pkg-config --modversion sndfile 2>/dev/null || echo ?)"
say "MACHINE threads_env: OMP/MKL/OPENBLAS/NUMBA_NUM_THREADS=1; reps=$REPS threads=\"$THREADS\""

# ---- 1. text frontend ---------------------------------------------------------------------
section "text frontend: tandem prep on 13,100 utterances"
TEXT_DIR=$OUT/text13100
"$TANDEM" corpus --out "$TEXT_DIR" --count 13100 --text-only --force > "$OUT/corpus_text.log"
say "corpus: $(head -1 "$OUT/corpus_text.log")"
record "$OUT/prep.log" python3 bench/prep_bench.py "$TANDEM" "$TEXT_DIR" "$OUT/text-cache" --reps "$REPS"

# ---- 2. features --------------------------------------------------------------------------
section "features: log-mel of the demo corpus"
C64=$OUT/c64
"$TANDEM" corpus --out "$C64" --count 64 --force > "$OUT/corpus_c64.log"
say "corpus: $(head -2 "$OUT/corpus_c64.log" | tr '\n' ' ')"
WAVS=("$C64"/wavs/*.wav)

for t in $THREADS; do
    record "$OUT/features_tandem_t$t.log" "$FEATURES_BENCH" --path device --threads "$t" --reps "$REPS" "${WAVS[@]}"
done
record "$OUT/features_tandem_host_t1.log" "$FEATURES_BENCH" --path host --threads 1 --reps "$REPS" "${WAVS[@]}"

# The peers' virtual environment: created once, re-installed when requirements.txt changes.
peers_ok=0
torch_ok=0
setup_venv() {
    if [ -f "$VENV/.installed" ] && cmp -s bench/requirements.txt "$VENV/.installed"; then
        return 0
    fi
    [ -x "$PY" ] || python3 -m venv "$VENV" || return 1
    echo "bench: installing the peers into $VENV (first run: ~3 GB from PyPI, a few minutes)"
    if "$PY" -m pip install -q -r bench/requirements.txt; then
        cp bench/requirements.txt "$VENV/.installed"
        return 0
    fi
    echo "bench: installing torch/torchaudio failed; trying librosa alone" >&2
    grep -v -E '^(torch|torchaudio)==' bench/requirements.txt | "$PY" -m pip install -q -r /dev/stdin || return 1
}
if setup_venv > "$OUT/venv.log" 2>&1; then
    peers_ok=1
    "$PY" -c 'import torch, torchaudio' > /dev/null 2>&1 && torch_ok=1
else
    say "PEERS SKIPPED: could not create $VENV or install librosa (see $OUT/venv.log):"
    tail -3 "$OUT/venv.log" | tee -a "$RESULTS"
fi
if [ $peers_ok = 1 ]; then
    say "PEERS $("$PY" -c 'import librosa, numpy, soundfile; print("librosa", librosa.__version__, "numpy", numpy.__version__, "soundfile", soundfile.__version__)')$([ $torch_ok = 1 ] && "$PY" -c 'import torch, torchaudio; print(" torch", torch.__version__, "torchaudio", torchaudio.__version__)' | tr -d '\n')"
    [ $torch_ok = 1 ] || say "PEERS torch/torchaudio unavailable (see $OUT/venv.log): torchaudio figures skipped"
    # Same computation? Both peers against `tandem features` (the path measured above) on one file.
    "$TANDEM" features "${WAVS[0]}" "$OUT/verify_tandem.npy" --backend host > "$OUT/verify_features.log" 2>&1
    say "verify on ${WAVS[0]}: $(cat "$OUT/verify_features.log")"
    libs="librosa"
    [ $torch_ok = 1 ] && libs="librosa torch"
    record "$OUT/verify.log" "$PY" bench/peers.py verify --libs "${libs// /,}" "$OUT/verify_tandem.npy" "${WAVS[0]}"
    for lib in $libs; do
        for t in $THREADS; do
            record "$OUT/features_${lib}_t$t.log" "$PY" bench/peers.py bench --lib "$lib" --threads "$t" --reps "$REPS" "${WAVS[@]}"
        done
        # Tandem's STFT runs in double: the peers in float64 too, single-threaded, for reference.
        record "$OUT/features_${lib}_f64_t1.log" "$PY" bench/peers.py bench --lib "$lib" --dtype float64 --threads 1 --reps "$REPS" "${WAVS[@]}"
    done
fi

# ---- 3. pipeline --------------------------------------------------------------------------
section "pipeline: tandem pipeline --data <demo corpus> --steps 50"
if "$TANDEM" pipeline --help > /dev/null 2>&1; then
    for r in $(seq 1 "$PIPELINE_RUNS"); do
        log=$OUT/pipeline_$r.log
        echo "\$ TANDEM_CACHE_DIR=$OUT/text-cache $TANDEM pipeline --data $C64 --steps 50 --backend host" >> "$RESULTS"
        if TANDEM_CACHE_DIR=$OUT/text-cache "$TANDEM" pipeline --data "$C64" --steps 50 --backend host > "$log" 2>&1; then
            tp=$(sed -n 's/^throughput: //p' "$log")
            busy=$(sed -n 's/^data device busy: \([0-9.]*\) %.*/\1/p' "$log")
            feat=$(awk '$1 == "feature" && $2 == "kernels" {print $5}' "$log")
            say "RESULT pipeline run=$r batches_s=$(echo "$tp" | awk '{print $1}') xrt=$(echo "$tp" | sed -n 's/.*(\([0-9.]*\) x real time).*/\1/p') busy_pct=$busy feature_ms_per_batch=$feat plan=\"$(sed -n 's/^plan: //p' "$log" | cut -d';' -f1)\""
        else
            say "FAILED: tandem pipeline (see $log):"
            tail -5 "$log" | tee -a "$RESULTS"
            failures=$((failures + 1))
        fi
    done
    say "last run's report:"
    sed 's/^/    /' "$OUT/pipeline_$PIPELINE_RUNS.log" | tee -a "$RESULTS" || true
else
    say "TODO pipeline: 'tandem pipeline' is not part of this build: run '$TANDEM pipeline --data $C64 --steps 50'"
fi

# ---- summary ------------------------------------------------------------------------------
section "summary"
python3 bench/summary.py "$RESULTS" | tee "$OUT/summary.md"
say ""
say "bench: done in $(( $(date +%s) - t_start )) s, $failures failed step(s); raw logs and RESULT lines in $OUT/"
[ $failures = 0 ]
