#!/usr/bin/env bash
# run_dp.sh TEST_DP FAKECUDA_DIR — data-parallel training on the host under `mpirun -np 2` (loopback), as
# make test runs it (check_dp_2_ranks; test/mpi/test_dp.c):
#   1. test_dp: 2 ranks match one device with the same global batch (one 25 MB bucket, 4 KiB
#      buckets, bf16 on the wire); resume on the same world size is exact. Bounded by timeout (a hang is a failure, not a stuck make test).
#   3. test_dp cuda: the bucket matches through the stand-in driver and the stand-in libnccl.so.2
#      (FAKECUDA_DIR): each rank a process with one stand-in CUDA data device and one model
#      device (4 stand-in GPUs, local rank k taking 2k and 2k+1), the gradients all-reduced by
#      NCCL across the processes, the NCCL id from rank 0 through MPI. Skipped, saying so, on a
#      host-only build (no fatbin to emulate). The same without MPI, launched torchrun style
#      with the id through the rendezvous: run_dp_rdzv.sh (check_dp_rdzv).
#   2. test_dp kill: rank 1 dies by SIGKILL at step 3; mpirun must end rank 0 and the job with
#      a non-zero status and a message naming the dead rank, within LIMIT seconds.
# As root OpenMPI needs --allow-run-as-root (here: its two environment variables); more ranks
# than cores need --oversubscribe (the 2-core CI machine).
set -u
prog=$1; fakedir=${2:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export TANDEM_HOST_THREADS=1 # two ranks share two cores
# a sanitized build: OpenMPI's libraries have no frame pointers, so LeakSanitizer's fast unwind
# stops inside them and cannot match test/fixtures.c's suppressions of OpenMPI's own leaks
export LSAN_OPTIONS="fast_unwind_on_malloc=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
limit=60
# the test's directories (a killed run cannot remove its own) go under one removed at the end
TMPDIR=$(mktemp -d); export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
timeout 600 mpirun -np 2 --oversubscribe "$prog" || { echo "FAIL: test_dp under mpirun -np 2 (status $?)"; exit 1; }

out=$TMPDIR/kill.log
t0=$(date +%s)
timeout $((limit * 2)) mpirun -np 2 --oversubscribe "$prog" kill >"$out" 2>&1
rc=$?
took=$(( $(date +%s) - t0 ))
if [ "$rc" = 124 ]; then
    echo "FAIL: a killed rank left the job running past $((limit * 2)) s (a hang)"; cat "$out"; exit 1
fi
if [ "$rc" = 0 ]; then echo "FAIL: the job with a killed rank ended with status 0"; cat "$out"; exit 1; fi
if ! grep -Eq "rank 1 .*(signal 9|Killed)|signal 9 \(Killed\)" "$out"; then
    echo "FAIL: mpirun's output does not name the killed rank (rank 1, signal 9):"; cat "$out"; exit 1
fi
if grep -q "training ended" "$out"; then
    echo "FAIL: rank 0 finished training by itself (it should have been ended):"; cat "$out"; exit 1
fi
if [ "$took" -gt "$limit" ]; then
    echo "FAIL: the job took ${took} s to end after rank 1 died; expected under ${limit} s"; cat "$out"; exit 1
fi
echo "[ dp ] rank 1 killed at step 3: mpirun ended the job in ${took} s (limit ${limit} s), status $rc:"
grep -E "signal 9|Killed" "$out" | head -2 | sed 's/^/    /'
echo "OK: data-parallel on the host under mpirun -np 2"

fatbin="$fakedir/../../tandem.fatbin"
if [ -z "$fakedir" ] || [ ! -s "$fatbin" ] || [ ! -f "$fakedir/libnccl.so.2" ]; then
  echo "SKIP: data-parallel through the stand-in NCCL: host-only build (no fatbin or stand-in libnccl.so.2 in '$fakedir')"
  exit 0
fi
# LD_LIBRARY_PATH: dlopen("libnccl.so.2") must find the stand-in before an installed NCCL
LD_LIBRARY_PATH="$fakedir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" TANDEM_FAKECUDA_DEVICES=4 \
TANDEM_CUDA_DRIVER="$fakedir/libcuda.so.1" TANDEM_CUBLASLT="$fakedir/libcublasLt.so.13" TANDEM_FAKENCCL_TIMEOUT_MS=60000 \
  timeout 600 mpirun -np 2 --oversubscribe -x LD_LIBRARY_PATH "$prog" cuda >"$TMPDIR/cuda.log" 2>&1
rc=$?
if [ "$rc" != 0 ] || grep -q "^fakecuda: error" "$TMPDIR/cuda.log"; then
  echo "FAIL: test_dp cuda under mpirun -np 2 (status $rc; 124: past 600 s):"; cat "$TMPDIR/cuda.log"; exit 1
fi
grep -E "^\[ dp cuda \]" "$TMPDIR/cuda.log"
echo "OK: data-parallel through the stand-in CUDA driver and NCCL, 2 processes"
