#!/usr/bin/env bash
# tools/gpu_kit.sh — `make test-gpu` and `make bench-gpu` for a GPU machine that cannot build or
# install (air-gapped, or without the Debian packages): pack here, run there.
#
#   bash tools/gpu_kit.sh pack [BUILD] [KIT]   on the build machine (default build, gpu-kit):
#       builds `all` and the test binaries, makes BUILD/demo/corpus when it is missing (`tandem
#       corpus`, 64 utterances, seed 1: the GPU machine has no espeak-ng), then writes
#       KIT/kit.tar.xz (BUILD/tandem and the cuda test variants, stripped, the shared libraries
#       they load that are not glibc's, the corpus), KIT/pack_root (this checkout's absolute path,
#       which the test binaries embed) and KIT/device.sh (tools/gpu_check.sh: the one bounded
#       device call, docs/TESTING.md "The device check").
#   bash tools/gpu_kit.sh run [KIT]            on the GPU machine, in a checkout of the same commit
#       (at the pack_root path, or linked there): unpacks the kit over BUILD, prints `tandem
#       diagnose`, runs every cuda test variant on the real driver (TANDEM_TEST_REAL_GPU=1, 120 s
#       each) and bench/gpu_bench.sh, its cost model the GPU nvidia-smi names (h200 on an H200).
#       The NVIDIA driver must be there; cuBLASLt is found through ldconfig or under /usr/local/cuda.
# Output: under $OUT when it is set (the folder a device call brings back), else KIT:
# test-gpu.log and bench-gpu.txt (BUILD/bench-gpu/results.txt, which ends with the table).
# For a lease of minutes, run KIT/device.sh (OUT=DIR bash gpu-kit/device.sh) instead of `run`.
set -uo pipefail
cmd=${1:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

pack() {
    local build=${1:-build} kit=${2:-gpu-kit}
    make --no-print-directory all test-build BUILD="$build" >/dev/null || { echo "gpu-kit: build failed"; exit 1; }
    local stage; stage=$(mktemp -d)
    mkdir -p "$stage/$build/test/bin" "$stage/libs" "$kit"
    strip -o "$stage/$build/tandem" "$build/tandem"
    for w in "$build"/test/bin/*@cuda; do
        local bin=${w%@cuda}
        strip -o "$stage/$build/test/bin/$(basename "$bin")" "$bin"
        cp -a "$w" "$stage/$build/test/bin/"
    done
    # shared libraries: everything ldd resolves but the C library's own and the kernel's
    ldd "$build/tandem" "$build"/test/bin/test_trainer | awk '/=> \// {print $3}' | sort -u |
        grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libgcc_s|libz|libudev)\.so' |
        while read -r lib; do cp -L "$lib" "$stage/libs/"; done
    [ -f "$build/demo/corpus/metadata.csv" ] ||
        "$build/tandem" corpus --out "$build/demo/corpus" --count 64 --seed 1 > /dev/null ||
        echo "gpu-kit: no corpus (espeak-ng missing?): the device check needs one"
    [ -f "$build/demo/corpus/metadata.csv" ] && mkdir -p "$stage/$build/demo" && cp -a "$build/demo/corpus" "$stage/$build/demo/"
    tar -C "$stage" -cJf "$kit/kit.tar.xz" "$build" libs
    rm -rf "$stage"
    echo "$ROOT" > "$kit/pack_root"
    cp tools/gpu_check.sh "$kit/device.sh"
    echo "gpu-kit: $kit/kit.tar.xz ($(du -h "$kit/kit.tar.xz" | cut -f1)); on the GPU machine, in a checkout at $ROOT:"
    echo "  OUT=DIR bash $kit/device.sh      (the bounded device check), or: bash tools/gpu_kit.sh run $kit"
}

run() {
    local kit=${1:-gpu-kit}
    [ -f "$kit/kit.tar.xz" ] || { echo "gpu-kit: no $kit/kit.tar.xz (pack it first)"; exit 1; }
    tar -xJf "$kit/kit.tar.xz" -C "$kit"
    local build; build=$(cd "$kit" && ls -d */tandem | head -1 | cut -d/ -f1)
    mkdir -p "$build/test/bin"
    cp -a "$kit/$build/." "$build/"
    touch "$build"/test/bin/*
    local libdirs=$ROOT/$kit/libs lt
    lt=$(ldconfig -p | awk '$1 == "libcublasLt.so.13" {print $NF; exit}')
    [ -n "$lt" ] || lt=$(ls /usr/local/cuda/targets/*/lib/libcublasLt.so.13 /usr/local/cuda/lib64/libcublasLt.so.13 2>/dev/null | head -1)
    [ -n "$lt" ] && libdirs=$libdirs:$(dirname "$lt")
    # our libraries for our programs only: Python (the PyTorch peer) keeps its own
    printf '#!/bin/sh\nunset LD_LIBRARY_PATH\nexec python3 "$@"\n' > "$kit/python3"
    chmod +x "$kit/python3"
    export LD_LIBRARY_PATH=$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    local out=${OUT:-$kit}
    mkdir -p "$out"
    "$build/tandem" diagnose
    # 120 s a binary: one hang must not spend a whole lease
    TANDEM_TEST_REAL_GPU=1 TANDEM_TEST_TIMEOUT=${TANDEM_TEST_TIMEOUT:-120} bash test/run.sh "$build"/test/bin/*@cuda \
        > "$out/test-gpu.log" 2>&1
    grep -E '^failing binaries|passed, ' "$out/test-gpu.log"
    GPU_BENCH_PYTHON=$ROOT/$kit/python3 bash bench/gpu_bench.sh "$build"
    cp "$build/bench-gpu/results.txt" "$out/bench-gpu.txt" 2>/dev/null
}

case $cmd in
    pack) shift; pack "$@" ;;
    run) shift; run "$@" ;;
    *) echo "usage: bash tools/gpu_kit.sh pack [BUILD] [KIT] | run [KIT]"; exit 2 ;;
esac
