#!/usr/bin/env python3
"""extract.py TANDEM CASE COMMIT ARGS... — one measured case's launch list, as the commit that was
measured records it, for bench/calibration/*.tsv: `TANDEM cost ARGS --json` of that commit's build
with the launch geometry added to its JSON rows (blocks, threads, dynamic shared memory, the
GEMM's shape: the patch in bench/calibration/README.md), identical launches merged with a count.
Prints TSV rows: case commit kind kernel count flops tensor_flops bytes_read bytes_written blocks
threads shmem m n k batch a_type tf32 beta."""
import json, subprocess, sys

tandem, case, commit, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
out = subprocess.run([tandem, "cost", *args, "--json"], check=True, capture_output=True, text=True).stdout
rows = {}
for l in json.loads(out)["launches"]:
    key = (l["kind"], l["kernel"] or "-", l["flops"], l["tensor_flops"], l["bytes_read"], l["bytes_written"],
           l["blocks"], l["threads"], l["shmem"], l["m"], l["n"], l["k"], l["batch"], l["a_type"], l["tf32"], l["beta"])
    rows[key] = rows.get(key, 0) + 1
for key, n in rows.items():
    k = list(key)
    print("\t".join(str(x) for x in [case, commit, k[0], k[1], n] + [f"{v:.17g}" if isinstance(v, float) else v for v in k[2:]]))
