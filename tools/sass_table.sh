#!/bin/bash
# sass_table.sh CUOBJDUMP FATBIN — the kernel code table (runtime/run/kernel_code.h) on stdout: per
# architecture the cost model prices (sm_80 A100, sm_89 L4 / RTX 4090, sm_90 H100 / H200) and kernel,
# its registers, static shared memory and stack (cuobjdump -res-usage) and the instruction mix of its
# innermost loops (cuobjdump -sass, tools/sass_table.awk). Fails (no output) when cuobjdump or the
# nvdisasm it runs is missing, so the build can fall back to the committed runtime/run/kernel_code.tsv.
# SASS_ARCHS="90" reads only those architectures.
set -euo pipefail
cuobjdump=$1 fatbin=$2
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '# arch\tkernel\tregs\tshared\tstack\tinstrs\tloop_instrs\tloops\tldg_bytes\tstg_bytes\tlds\tsts\tldsm\thmma_flops\tffma\tfadd_fmul\tmufu\tbar\n'
for arch in ${SASS_ARCHS:-80 89 90}; do
    "$cuobjdump" -res-usage -arch "sm_$arch" "$fatbin" > "$tmp/res"
    "$cuobjdump" -sass -arch "sm_$arch" "$fatbin" > "$tmp/sass"
    grep -q 'Function :' "$tmp/sass" || { echo "sass_table.sh: no SASS for sm_$arch in $fatbin" >&2; exit 1; }
    awk -v RES="$tmp/res" -f "$here/sass_table.awk" "$tmp/sass" | sort
done
