#!/usr/bin/env python3
"""asr_judge.py — an independent listener for what Tandem synthesizes (issue 24; never needed to
build or test). A speech recognizer that is not part of the project, PocketSphinx (PyPI
`pocketsphinx`, its bundled US-English acoustic model, dictionary and language model; offline),
transcribes each English sentence of a corpus twice — its recording, and what `tandem synth`
makes of its text from a checkpoint — and reports the word error rate of each against the text.
The recording's WER is the recognizer's own floor on that voice; the synthesized WER is the
figure. Audio goes to the recognizer at 16 kHz through sox.

usage: bench/asr_judge.py CHECKPOINT DATA_DIR [--tandem build/tandem] [--count N] [--out DIR]
       [--prenet-dropout P]
DATA_DIR: metadata.csv (id|text|normalized text) and wavs/ as `tandem corpus` writes it.
needs: pip install pocketsphinx; Debian sox."""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def words(text):
    return re.sub(r"[^a-z' ]", " ", text.lower()).split()


def edit_distance(a, b):
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def recognize(decoder, wav, tmp):
    raw = os.path.join(tmp, "in16k.raw")
    subprocess.run(["sox", wav, "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", raw],
                   check=True)
    with open(raw, "rb") as f:
        data = f.read()
    decoder.start_utt()
    decoder.process_raw(data, full_utt=True)
    decoder.end_utt()
    hyp = decoder.hyp()
    return hyp.hypstr if hyp else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("data")
    ap.add_argument("--tandem", default="build/tandem")
    ap.add_argument("--count", type=int, default=0, help="first N English rows (0 = all)")
    ap.add_argument("--out", default="", help="keep the synthesized WAVs here")
    ap.add_argument("--prenet-dropout", default="0")
    a = ap.parse_args()
    from pocketsphinx import Decoder  # the bundled en-us model
    decoder = Decoder(logfn=os.devnull)
    rows = []
    with open(os.path.join(a.data, "metadata.csv"), encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("|")
            if len(parts) >= 2 and re.match(r"^[A-Za-z]", parts[-1]):
                rows.append((parts[0], parts[1], parts[-1]))
    if a.count:
        rows = rows[:a.count]
    if not rows:
        sys.exit(f"asr_judge: no English rows in {a.data}/metadata.csv")
    tot = {"rec": [0, 0], "syn": [0, 0]}
    with tempfile.TemporaryDirectory() as tmp:
        out = a.out or tmp
        os.makedirs(out, exist_ok=True)
        for uid, raw, norm in rows:
            ref = words(norm)
            rec = recognize(decoder, os.path.join(a.data, "wavs", uid + ".wav"), tmp)
            syn_wav = os.path.join(out, uid + ".wav")
            subprocess.run([a.tandem, "synth", "--checkpoint", a.checkpoint, "--text", raw, "--out", syn_wav,
                            "--prenet-dropout", a.prenet_dropout], check=True, stdout=subprocess.DEVNULL)
            syn = recognize(decoder, syn_wav, tmp)
            for k, hyp in (("rec", rec), ("syn", syn)):
                tot[k][0] += edit_distance(ref, words(hyp))
                tot[k][1] += len(ref)
            print(f"  {uid}: \"{norm}\"\n    recording   → \"{rec}\"\n    synthesized → \"{syn}\"", flush=True)
    wer = {k: 100.0 * e / max(n, 1) for k, (e, n) in tot.items()}
    print(f"asr_judge: {len(rows)} English sentences; word error rate: recordings {wer['rec']:.1f} %, "
          f"synthesized {wer['syn']:.1f} % (PocketSphinx en-us)")


if __name__ == "__main__":
    main()
