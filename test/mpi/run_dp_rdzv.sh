#!/usr/bin/env bash
# run_dp_rdzv.sh TEST_DP_RDZV FAKECUDA_DIR TANDEM — data-parallel CUDA ranks launched torchrun style,
# WITHOUT mpirun, as make test runs it (check_dp_rdzv; test/mpi/test_dp_rdzv.c): two background
# processes with WORLD_SIZE / RANK / LOCAL_RANK / LOCAL_WORLD_SIZE / MASTER_ADDR=127.0.0.1 /
# MASTER_PORT, on the stand-in driver (4 GPUs each) and the stand-in libnccl.so.2; rank 0's NCCL
# id reaches rank 1 through the rendezvous (platform/os/rendezvous.h).
#   1. both ranks (rank 1 started first: it retries until rank 0 listens) match one device with
#      the same global batch within 1e-5 over 10 steps, bit-identical to each other; local rank
#      k trained on GPUs 2k (data) and 2k+1 (model)
#   2. rank 1 never started: rank 0 fails within its 3 s rendezvous timeout naming rank 1;
#      rank 0 never started: rank 1 fails naming 127.0.0.1:PORT as not reachable
#   3. neither mpirun nor MASTER_ADDR / MASTER_PORT: the error says to use one of them
#   4. the CLI (TANDEM = build/tandem): `tandem train` as rank 1 with MASTER_* and
#      --rendezvous-timeout 2 and no rank 0 fails in about 2 s naming the address
# Every process runs under timeout: a hang fails the test. Skipped on a host-only build.
set -u
prog=$1; fakedir=$2; tandem=${3:-}
fatbin="$fakedir/../../tandem.fatbin"
if [ ! -s "$fatbin" ] || [ ! -f "$fakedir/libnccl.so.2" ]; then
  echo "SKIP: torchrun-style data-parallel through the stand-in NCCL: host-only build (no fatbin or stand-in libnccl.so.2 in '$fakedir')"
  exit 0
fi
unset OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_LOCAL_RANK OMPI_COMM_WORLD_LOCAL_SIZE \
      SLURM_NTASKS SLURM_PROCID SLURM_LOCALID SLURM_NTASKS_PER_NODE MASTER_ADDR MASTER_PORT \
      TORCHELASTIC_USE_AGENT_STORE
# LD_LIBRARY_PATH: dlopen("libnccl.so.2") must find the stand-in before an installed NCCL
export LD_LIBRARY_PATH="$fakedir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TANDEM_CUDA_DRIVER="$fakedir/libcuda.so.1" TANDEM_CUBLASLT="$fakedir/libcublasLt.so.13"
export TANDEM_FAKECUDA_DEVICES=4 TANDEM_FAKENCCL_TIMEOUT_MS=60000 TANDEM_HOST_THREADS=1
export TANDEM_TEST_SEED=${TANDEM_TEST_SEED:-$(( (RANDOM << 15) | RANDOM ))} # every process the same
root=$(mktemp -d "${TMPDIR:-/tmp}/tandem_dp_rdzv.XXXXXX")
trap 'rm -rf "$root"' EXIT
fail() { echo "FAIL: $1 (replay with TANDEM_TEST_SEED=$TANDEM_TEST_SEED)"; shift; for f in "$@"; do echo "--- $f"; cat "$f"; done; exit 1; }

timeout 120 "$prog" corpus "$root" >/dev/null || fail "writing the corpus"
timeout 600 "$prog" ref "$root" >"$root/ref.log" 2>&1 || fail "one device (status $?)" "$root/ref.log"

# A port nothing listens on now, from 20000-60000 (a race with another process stays possible:
# the launch is retried when rank 0 reports the port in use).
pick_port() {
  local p
  for _ in $(seq 50); do
    p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  echo 0
}
# rank R of WORLD on PORT with a rendezvous timeout of MS, in the background, output to LOG
start_rank() { # PORT WORLD RANK MS LOG [OUT]
  WORLD_SIZE=$2 RANK=$3 LOCAL_RANK=$3 LOCAL_WORLD_SIZE=$2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$1 \
    timeout 600 "$prog" rank "$root" "$4" "${6:-dp}" >"$5" 2>&1 &
}

# 1. two ranks, rank 1 first
rc0=1 rc1=1
for attempt in 1 2 3 4 5; do
  port=$(pick_port)
  [ "$port" != 0 ] || fail "no free port found in 20000-60000"
  start_rank "$port" 2 1 120000 "$root/r1.log"; pid1=$!
  sleep 0.3
  start_rank "$port" 2 0 120000 "$root/r0.log"; pid0=$!
  wait "$pid0"; rc0=$?
  if [ "$rc0" != 0 ] && grep -q "in use" "$root/r0.log"; then # taken meanwhile: again elsewhere
    kill "$pid1" 2>/dev/null; wait "$pid1" 2>/dev/null
    echo "port $port was taken meanwhile; again on another"
    continue
  fi
  wait "$pid1"; rc1=$?
  break
done
[ "$rc0" = 0 ] && [ "$rc1" = 0 ] || fail "2 ranks torchrun style on 127.0.0.1:$port: status $rc0 (rank 0), $rc1 (rank 1)" "$root/r0.log" "$root/r1.log"
if grep -q "^fakecuda: error" "$root/r0.log" "$root/r1.log" "$root/ref.log"; then
  fail "the stand-in reported misuse" "$root/r0.log" "$root/r1.log"
fi
cmp -s "$root/rank0.txt" "$root/rank1.txt" || fail "rank 0's and rank 1's losses differ" "$root/rank0.txt" "$root/rank1.txt"
worst=$(paste "$root/ref.txt" "$root/rank0.txt" | awk '
  { n++; d = $1 - $2; if (d < 0) d = -d; r = $1 < 0 ? -$1 : $1; rel = d / r; if (rel > w) w = rel }
  END { if (n != 10) { print "steps:" n; exit } printf "%.3g", w }')
case $worst in steps:*) fail "expected 10 steps on both sides, got ${worst#steps:}" "$root/ref.txt" "$root/rank0.txt" ;; esac
awk -v w="$worst" 'BEGIN { exit !(w <= 1e-5) }' || fail "worst relative loss difference $worst; expected within 1e-5" "$root/ref.txt" "$root/rank0.txt"
grep -q "data device CUDA 0 .*model device CUDA 1 " "$root/devices0.txt" &&
  grep -q "data device CUDA 2 .*model device CUDA 3 " "$root/devices1.txt" ||
  fail "expected local rank 0 on GPUs 0/1 and local rank 1 on GPUs 2/3" "$root/devices0.txt" "$root/devices1.txt"
grep -q "rendezvous on 127.0.0.1:$port: all 2 ranks arrived" "$root/r0.log" || fail "rank 0 did not log the rendezvous" "$root/r0.log"
echo "[ dp rdzv ] 2 ranks torchrun style on 127.0.0.1:$port (no MPI), rank 1 started first: 10 steps within $worst of one device (limit 1e-5), ranks bit-identical"
sed 's/^/    /' "$root/devices0.txt" "$root/devices1.txt"

# 2. a rank missing: the one that came fails within its 3 s timeout, naming what is missing
alone() { # RANK WANT: rank RANK of 2 started alone must fail within 60 s, its log saying WANT
  local t0 rc took log="$root/m$1.log"
  t0=$(date +%s)
  start_rank "$port" 2 "$1" 3000 "$log" "m$1"; wait $!; rc=$?
  took=$(( $(date +%s) - t0 ))
  [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "rank $1 alone: status $rc; expected a failure (124: a hang)" "$log"
  grep -q "$2" "$log" || fail "rank $1 alone: its error does not say \"$2\"" "$log"
  [ "$took" -le 60 ] || fail "rank $1 alone took $took s with a 3 s rendezvous timeout" "$log"
  echo "[ dp rdzv ] rank $1 alone failed after $took s: $(grep -o "$2" "$log" | head -1)"
}
port=$(pick_port)
alone 0 "rank 1 never arrived (0 of the 1 other rank joined)"
alone 1 "rank 0 at 127.0.0.1:$port not reachable after 3 s"

# 3. no way to hand the id over
WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 timeout 120 "$prog" rank "$root" 3000 n1 >"$root/n1.log" 2>&1; rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "no mpirun and no MASTER_ADDR: status $rc; expected a failure" "$root/n1.log"
grep -q "launch with mpirun, or set MASTER_ADDR and MASTER_PORT" "$root/n1.log" || fail "no mpirun and no MASTER_ADDR: the error does not say what to do" "$root/n1.log"

# 4. through the CLI: launch_env.c reads the variables, --rendezvous-timeout bounds the wait
if [ -n "$tandem" ]; then
  port=$(pick_port)
  t0=$(date +%s)
  WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 120 "$tandem" train \
    --train-data "$root/data" --out "$root/cli" --backend cuda --rendezvous-timeout 2 --model-size custom \
    --d-model 16 --layers 1 --heads 2 --reduction 2 --max-text 24 --max-frames 32 --batch-size 2 \
    --max-steps 2 >"$root/cli.log" 2>&1; rc=$?
  took=$(( $(date +%s) - t0 ))
  [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "tandem train as rank 1 alone: status $rc; expected a failure" "$root/cli.log"
  grep -q "rank 0 at 127.0.0.1:$port not reachable after 2 s" "$root/cli.log" ||
    fail "tandem train as rank 1 alone: the error does not name rank 0's address and the 2 s" "$root/cli.log"
  echo "[ dp rdzv ] tandem train as rank 1 alone, --rendezvous-timeout 2: failed after $took s naming 127.0.0.1:$port"
fi
echo "OK: data-parallel CUDA ranks launched torchrun style, the NCCL id through the rendezvous"
