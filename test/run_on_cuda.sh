#!/usr/bin/env bash
# Runs a unit test with TANDEM_TEST_BACKEND=cuda: on the stand-in driver in FAKEDIR, or on the
# real driver when TANDEM_TEST_REAL_GPU=1. Test names are prefixed "cuda:" in the output, and
# any "fakecuda: error" line (a misuse the stand-in caught) fails the run.
set -u
fakedir=$1; bin=$2
fatbin="$fakedir/../../tandem.fatbin"
if [ "${TANDEM_TEST_REAL_GPU:-0}" != 1 ] && [ ! -s "$fatbin" ]; then
  echo "cuda variant of $(basename "$bin") skipped: host-only build (empty $fatbin)"
  exit 0
fi
export TANDEM_TEST_BACKEND=cuda
if [ "${TANDEM_TEST_REAL_GPU:-0}" != 1 ]; then
  export TANDEM_CUDA_DRIVER="$fakedir/libcuda.so.1" TANDEM_CUBLASLT="$fakedir/libcublasLt.so.13"
  # every kernel the test launches must change only the bytes its hazard descriptor declares
  export TANDEM_FAKECUDA_CHECK_ACCESS="${TANDEM_FAKECUDA_CHECK_ACCESS:-1}"
  [ -f "$fakedir/libnvidia-ml.so.1" ] && export TANDEM_NVML="$fakedir/libnvidia-ml.so.1"
fi
out=$("$bin" 2>&1); rc=$?
printf '%s\n' "$out" | sed -E 's/^\[( +OK +|  FAILED  )\] ([^0-9])/[\1] cuda:\2/'
if printf '%s\n' "$out" | grep -q '^fakecuda: error'; then
  echo "[  FAILED  ] cuda:$(basename "$bin"): the stand-in driver reported misuse (lines above)"
  exit 1
fi
exit $rc
