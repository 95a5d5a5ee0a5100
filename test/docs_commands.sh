#!/usr/bin/env bash
# docs_commands.sh SRC BUILD — the shell commands shown in README.md and docs/*.md run as written.
# Every line of every ```sh / ```bash block is run in file order (README.md, then docs/*.md) with
# bash, each document in its own scratch directory laid out like the repository (build/tandem and
# the build outputs, configs/, docs/, runtime/ linked in; what the commands write stays there),
# and must exit 0 — `tandem validate` 0 or 1 (1 = warnings, documented). Each command is one
# test case: "[       OK ] docs: <command>". The slow ones and those that cannot run as written
# are skipped by the allow-list below, each with the reason and what runs it instead.
set -u
src=$(cd "$1" && pwd); build=$(cd "$2" && pwd); mode=${3:-plain}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/tandem_docs.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/cache"
export TANDEM_CACHE_DIR="$scratch/cache"

# pattern (a substring of the command) | why it is skipped and what runs it instead
allow=(
  "make |make targets: make runs them itself (make test is this suite; demo, fuzz, test-gpu are targets of their own)"
  "...|placeholder arguments (the reader fills them in)"
  "pkg-config --cflags tandem|needs the make install above (into /opt); example_train_embed runs make install PREFIX=<scratch> and this same cc line"
  "app.c |app.c is the reader's own program; make test builds docs/example/*.c the same way"
  "train --config configs/tiny.yaml --train-data data/demo --out runs/tiny|200 steps of tiny: minutes; make demo runs this training"
  "synth --checkpoint runs/tiny|needs the 200-step run above; make demo runs synth on its checkpoint"
  "train --config configs/tiny.yaml --train-data build/c64 --out runs/tiny|200 and 400 steps: minutes; make demo runs the same training"
  "--resume runs/tiny|continues the 200-step run above (make demo trains one like it); test_resume runs --resume alone, with a listed key and with refused/forced keys on a 4-step run"
  "--init-from runs/tiny|starts from the 200-step run above; test_resume runs --init-from (grown symbol table) and --freeze on a 4-step run"
  "monitor --run runs/|needs NVML (an NVIDIA driver; this suite also runs on machines without one) and a run directory; test_profile_monitor runs monitor through the stand-in NVML"
  "TANDEM_TEST_SEED=123 build/test/bin/test_kernels|the whole kernel suite; make test runs test_kernels"
  "fuzz_audio --write|fuzz tooling; make test runs fuzz_audio's replays"
  "tools/gpu_kit.sh |pack rebuilds everything (minutes) and run needs a GPU machine: both ran on 2026-11-24's H100 (docs/BENCHMARKS-training.md)"
  "device.sh|the device check needs a GPU machine and minutes; make test rehearses it on the stand-in (check_gpu_check)"
  "tools/gpu_check.sh|the device check needs a GPU machine and minutes; make test rehearses it on the stand-in (check_gpu_check)"
)

# A sanitized build (make test SANITIZE=...): the commands run its instrumented programs, so
# LeakSanitizer is told about the 192 bytes NVIDIA's cuBLASLt keeps from a failed create (the
# test binaries say the same in test/fixtures.c; docs/STATUS.md), and a command that links the
# instrumented archive with a plain `cc` cannot link: the plain `make test` runs it.
if [ "$mode" = sanitized ]; then
  # and OpenMPI's own allocations kept to exit (mpirun commands; named as in test/fixtures.c)
  printf 'leak:%s\n' libcublasLt.so libmpi.so libopen-pal.so libopen-rte.so mca_ libpmix.so libhwloc.so libevent > "$scratch/lsan.supp"
  export LSAN_OPTIONS="suppressions=$scratch/lsan.supp:fast_unwind_on_malloc=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
  allow+=("pkg-config --libs tandem|links the archive with a plain cc: this build's archive is sanitized (needs the sanitizer runtime); the plain make test runs it")
fi

# A host-only build (no nvcc: an empty fatbin) cannot run the stand-in driver's commands.
if [ ! -s "$build/tandem.fatbin" ]; then
  allow+=("LD_LIBRARY_PATH=build/test/fakecuda|this build is host-only (empty fatbin): the stand-in driver runs the fatbin's kernels; a build with nvcc runs it")
fi

# No OpenMPI on this machine: the test build made no build/mpi/tandem (mk/46-mpi.mk).
if [ ! -x "$build/mpi/tandem" ]; then
  allow+=("build/mpi/tandem|no OpenMPI on this machine, so no MPI build (make MPI=1); check_dp_2_ranks says SKIP too")
fi

skip_reason() {
  local cmd=$1 entry
  for entry in "${allow[@]}"; do
    if [[ "$cmd" == *"${entry%%|*}"* ]]; then echo "${entry#*|}"; return 0; fi
  done
  return 1
}

ran=0; failed=0
for doc in "$src/README.md" "$src"/docs/*.md; do
  name=${doc#"$src"/}
  # each document on its own: a fresh directory, the build outputs linked in
  work="$scratch/$(basename "$doc" .md)"
  mkdir -p "$work/build"
  for f in tandem tandem.fatbin libtandem.a tandem.pc test mpi; do
    [ -e "$build/$f" ] && ln -s "$build/$f" "$work/build/$f"
  done
  for d in configs docs runtime; do ln -s "$src/$d" "$work/$d"; done
  cd "$work" || exit 1
  # one entry per command: a line ending in a backslash continues on the next
  mapfile -t lines < <(awk '/^```(sh|bash)$/ {inblk=1; next} /^```/ {inblk=0; next}
    inblk { if (sub(/\\[[:space:]]*$/, "")) { acc = acc $0 " "; next } print acc $0; acc = "" }' "$doc")
  for line in "${lines[@]}"; do
    cmd=$(printf '%s' "$line" | sed -E 's/^[[:space:]]+//')
    [ -z "$cmd" ] && continue
    [[ "$cmd" == \#* ]] && continue
    if why=$(skip_reason "$cmd"); then
      echo "skipped ($name): $cmd"
      echo "   because: $why"
      continue
    fi
    out=$(timeout 300 bash -c "$cmd" 2>&1); rc=$?
    ok=0
    [ "$rc" -eq 0 ] && ok=1
    [[ "$cmd" == *"tandem validate"* ]] && [ "$rc" -eq 1 ] && ok=1
    ran=$((ran + 1))
    if [ "$ok" -eq 1 ]; then
      echo "[       OK ] docs: $cmd"
    else
      printf '%s\n' "$out" | tail -20
      echo "[  FAILED  ] docs: $cmd ($name, exit $rc)"
      failed=$((failed + 1))
    fi
  done
done
echo "$ran documented commands run, $failed failed"
[ "$failed" -eq 0 ]
