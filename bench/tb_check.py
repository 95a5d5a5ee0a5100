#!/usr/bin/env python3
"""tb_check.py — read a run's TensorBoard event files with the `tensorboard` package's own readers
(LegacyEventFileLoader: TFRecord framing with CRC checks, then tensorflow.Event protos as stored;
EventAccumulator: what TensorBoard shows, SessionLog START purges included) and compare them with
the run's metrics.jsonl. Not a test dependency: a check to run by hand after
`pip install tensorboard`.

    python3 bench/tb_check.py RUN_DIR

Prints, per event file, the records read, the tags with their step ranges, the images (size) and
audio (rate, frames) found; checks that every metrics.jsonl step with a loss has train/loss equal
to it (as float32), and val/l1 likewise. Exit 0 when all agree, 1 otherwise.
"""
import glob
import json
import math
import os
import struct
import sys

from tensorboard.backend.event_processing import event_accumulator, event_file_loader


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def main(run):
    files = sorted(glob.glob(os.path.join(run, "events.out.tfevents.*")))
    if not files:
        print("no event files in", run)
        return 1
    images, audio = [], []
    for path in files:
        n = 0
        version = None
        for ev in event_file_loader.LegacyEventFileLoader(path).Load():
            n += 1
            if ev.HasField("file_version"):
                version = ev.file_version
            if ev.HasField("session_log"):
                print(f"  session_log status {ev.session_log.status} at step {ev.step}")
            for v in ev.summary.value:
                kind = v.WhichOneof("value")
                if kind == "image":
                    images.append((v.tag, ev.step, v.image.width, v.image.height, v.image.encoded_image_string[:8]))
                elif kind == "audio":
                    audio.append((v.tag, ev.step, v.audio.sample_rate, v.audio.length_frames, v.audio.content_type))
        print(f"{os.path.basename(path)}: {n} records, file_version {version}")
    acc = event_accumulator.EventAccumulator(run, size_guidance={k: 0 for k in (
        event_accumulator.SCALARS, event_accumulator.IMAGES, event_accumulator.AUDIO)})
    acc.Reload()
    tags = acc.Tags()
    scalars = {t: {e.step: e.value for e in acc.Scalars(t)} for t in tags["scalars"]}
    print(f"EventAccumulator: {len(tags['scalars'])} scalar tags, images {tags['images']}, audio {tags['audio']}")
    for tag in sorted(scalars):
        steps = sorted(scalars[tag])
        print(f"  scalar {tag}: {len(steps)} points, steps {steps[0]}..{steps[-1]}")
    for tag, step, w, h, head in images:
        ok = head == b"\x89PNG\r\n\x1a\n"
        print(f"  image {tag} step {step}: {w} x {h}, PNG signature {'ok' if ok else 'BAD'}")
        if not ok:
            return 1
    for tag, step, rate, frames, ctype in audio:
        print(f"  audio {tag} step {step}: {rate:g} Hz, {frames} frames, {ctype}")
    bad = checked = 0
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            row = json.loads(line)
            for key, tag in (("loss", "train/loss"), ("val_l1", "val/l1"), ("lr", "train/lr")):
                if row.get(key) is None:
                    continue
                got = scalars.get(tag, {}).get(row["step"])
                want = f32(row[key])
                checked += 1
                if got is None or not (got == want or math.isclose(got, want, rel_tol=1e-6)):
                    bad += 1
                    print(f"  MISMATCH step {row['step']} {tag}: events {got}, metrics.jsonl {row[key]}")
    print(f"metrics.jsonl: {checked} values compared with the events, {bad} differ")
    return 1 if bad or not checked else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
