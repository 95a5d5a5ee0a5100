#!/usr/bin/env python3
"""Summarise bench/run.sh's results file (RESULT/VERIFY/MACHINE lines) as Markdown tables:
text frontend against its targets, features x real time for Tandem and the peers with the
ratios against the targets (>= 2x librosa, >= 1x torchaudio), and the pipeline.
Standard library only.  Usage: summary.py BUILD/bench/results.txt
"""
import re
import statistics
import sys


def parse(path):
    rows = []
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^(RESULT|VERIFY|MACHINE|TODO|PEERS)\s+(.*)$", line.rstrip("\n"))
        if not m:
            continue
        kind, rest = m.groups()
        fields = dict(re.findall(r'([\w.-]+)=("[^"]*"|\S+)', rest))
        fields = {k: v.strip('"') for k, v in fields.items()}
        words = rest.split()
        rows.append((kind, words[0] if words else "", fields, rest))
    return rows


def f(x, d=1):
    return f"{float(x):.{d}f}"


def main():
    rows = parse(sys.argv[1])
    out = []
    w = out.append
    for kind, _, _, rest in rows:
        if kind == "MACHINE":
            w(f"- {rest}")
    w("")

    prep = [r[2] for r in rows if r[0] == "RESULT" and r[1] == "prep"]
    if prep:
        w("### Text frontend (`tandem prep --no-audio-check`, 13,100 utterances)")
        w("")
        w("| run | process wall, median (min–max) | `time:` printed by prep, median (min–max) | target | met |")
        w("|---|---|---|---|---|")
        for p in prep:
            w(f"| {p['kind']} (n={p['reps']}) | {float(p['wall_median_s']) * 1e3:.1f} ms "
              f"({float(p['wall_min_s']) * 1e3:.1f}–{float(p['wall_max_s']) * 1e3:.1f}) | "
              f"{float(p['internal_median_s']) * 1e3:.1f} ms ({float(p['internal_min_s']) * 1e3:.1f}–"
              f"{float(p['internal_max_s']) * 1e3:.1f}) | ≤ {float(p['target_s']) * 1e3:g} ms | {p['met']} |")
        w("")

    feats = [r[2] for r in rows if r[0] == "RESULT" and r[1] == "features"]
    if feats:
        w("### Features (log-mel of the 64-file demo corpus, decoding excluded)")
        w("")
        w("| implementation | threads | wall per pass, median (min–max) | × real time, median (range) "
          "| CPU s per pass | × real time per CPU-second |")
        w("|---|---|---|---|---|---|")
        for r in feats:
            name = (f"Tandem {r['path']} path" if "path" in r
                    else f"{'torchaudio' if r['lib'] == 'torch' else r['lib']} ({r['dtype']})")
            w(f"| {name} | {r['threads']} | {f(r['median_s'], 3)} s ({f(r['min_s'], 3)}–{f(r['max_s'], 3)}) | "
              f"{f(r['xrt'])} ({f(r['xrt_min'])}–{f(r['xrt_max'])}) | {f(r['cpu_median_s'], 3)} | "
              f"{f(r['xrt_per_cpu'])} |")
        w("")
        verify = [r[2] for r in rows if r[0] == "VERIFY"]
        if verify:
            w("Same computation (one file vs `tandem features`): " + "; ".join(
                f"{'torchaudio' if v['lib'] == 'torch' else v['lib']} {v['dtype']} max |diff| "
                f"{v['max_abs_diff']} ({'ok' if v['within_1e-3'] == 'yes' else 'ABOVE 1e-3'})"
                for v in verify))
            w("")
        tandem = {r["threads"]: r for r in feats if r.get("path") == "device"}
        peers = {(r["lib"], r["threads"]): r for r in feats if r.get("dtype") == "float32"}
        lines = []
        for (lib, t), p in sorted(peers.items()):
            if t not in tandem:
                continue
            target = 2.0 if lib == "librosa" else 1.0
            x = float(tandem[t]["xrt"]) / float(p["xrt"])
            c = float(tandem[t]["xrt_per_cpu"]) / float(p["xrt_per_cpu"])
            peer = "torchaudio" if lib == "torch" else lib
            lines.append(f"| Tandem / {peer} (float32) | {t} | {x:.2f} | {c:.2f} | ≥ {target:g} | "
                         f"{'yes' if x >= target else 'NO'} |")
        if lines:
            w("| ratio | threads | wall × real time | per CPU-second | target | met (wall) |")
            w("|---|---|---|---|---|---|")
            out.extend(lines)
            w("")

    pipe = [r[2] for r in rows if r[0] == "RESULT" and r[1] == "pipeline"]
    todo = [r[3] for r in rows if r[0] == "TODO"]
    if pipe:
        b = [float(p["batches_s"]) for p in pipe]
        x = [float(p["xrt"]) for p in pipe]
        busy = [float(p["busy_pct"]) for p in pipe if p.get("busy_pct")]
        w("### Pipeline (`tandem pipeline --steps 50`, host backend)")
        w("")
        w(f"- plan: {pipe[0].get('plan', '?')}")
        w(f"- batches/s: median {statistics.median(b):.2f} (min {min(b):.2f}, max {max(b):.2f}) over {len(b)} runs")
        w(f"- × real time: median {statistics.median(x):.1f} (min {min(x):.1f}, max {max(x):.1f})")
        if busy:
            w(f"- data device busy: median {statistics.median(busy):.1f} %")
        w("")
    for t in todo:
        w(f"- TODO {t}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
