#!/usr/bin/env python3
"""Text frontend benchmark for `make bench`: `tandem prep --no-audio-check` on a metadata.csv,
cold (the text cache directory emptied first) and warm (cache hit), N times each, alternating.

    prep_bench.py TANDEM DATA_DIR CACHE_DIR [--reps N]

Two figures per run: the process's wall time (fork/exec, reading metadata.csv, frontend or cache
load, summary; measured around the subprocess) and the time `tandem prep` reports itself
("time: X ms", tandem_text_index_open alone). Checks every cold run says "cache: miss" and
every warm one "cache: hit", and prints RESULT lines with the median, min and max.
Standard library only.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time


def run_once(tandem, data, env):
    t0 = time.perf_counter()
    p = subprocess.run([tandem, "prep", "--data", data, "--no-audio-check"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"prep_bench: tandem prep failed (exit {p.returncode}):\n{p.stdout}")
    m = re.search(r"^time: ([0-9.]+) ms", p.stdout, re.M)
    c = re.search(r"^cache: (hit|miss)", p.stdout, re.M)
    u = re.search(r"^utterances: (\d+) usable", p.stdout, re.M)
    if not (m and c and u):
        sys.exit(f"prep_bench: unexpected output from tandem prep:\n{p.stdout}")
    return wall, float(m.group(1)) / 1000.0, c.group(1), int(u.group(1)), p.stdout


def stats(xs):
    return statistics.median(xs), min(xs), max(xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tandem")
    ap.add_argument("data")
    ap.add_argument("cache_dir")
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    env = dict(os.environ, TANDEM_CACHE_DIR=os.path.abspath(a.cache_dir))
    res = {"cold": ([], []), "warm": ([], [])}
    last = ""
    for r in range(a.reps):
        shutil.rmtree(a.cache_dir, ignore_errors=True)
        for kind, want in (("cold", "miss"), ("warm", "hit")):
            wall, internal, cache, n, last = run_once(a.tandem, a.data, env)
            if cache != want:
                sys.exit(f"prep_bench: {kind} run {r + 1}: expected cache {want}, got {cache}\n{last}")
            res[kind][0].append(wall)
            res[kind][1].append(internal)
            print(f"  rep {r + 1:<3d} {kind}: wall {wall * 1000:7.1f} ms, tandem prep 'time:' "
                  f"{internal * 1000:7.1f} ms ({n} utterances, cache {cache})")
    print("last warm run's summary:")
    print("".join("    " + line + "\n" for line in last.splitlines()), end="")
    for kind, target in (("cold", 0.5), ("warm", 0.030)):
        w, i = res[kind]
        wm, wlo, whi = stats(w)
        im, ilo, ihi = stats(i)
        print(f"RESULT prep kind={kind} reps={a.reps} utterances={n} wall_median_s={wm:.4f} "
              f"wall_min_s={wlo:.4f} wall_max_s={whi:.4f} internal_median_s={im:.4f} "
              f"internal_min_s={ilo:.4f} internal_max_s={ihi:.4f} target_s={target} "
              f"met={'yes' if wm <= target else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
