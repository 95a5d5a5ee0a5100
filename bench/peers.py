#!/usr/bin/env python3
"""Tandem's log-mel recipe (DESIGN.md section 6, runtime/audio/mel.h) in librosa and in torch +
torchaudio, for `make bench` (bench/run.sh runs this with bench/.venv/bin/python).

    peers.py verify [--libs librosa,torch] TANDEM.npy WAV   compare with `tandem features` output
    peers.py bench --lib librosa|torch --threads T --reps R FILE...

The recipe, the same in both peers:
    y = reflect-pad(x, 384) (numpy/torch "reflect": the edge sample is not repeated)
    S = STFT(y), n_fft 1024, hop 256, periodic Hann 1024, center=False   -> floor(len/256) frames
    mag = sqrt(re^2 + im^2 + 1e-9)
    mel = fb @ mag, fb = Slaney 80 bands 0..8000 Hz, area-normalised
          librosa: librosa.filters.mel(sr=22050, n_fft=1024, n_mels=80, fmin=0, fmax=8000)
          torch:   torchaudio.functional.melscale_fbanks(513, 0, 8000, 80, 22050,
                                                         norm="slaney", mel_scale="slaney")
    out = log(max(mel, 1e-5)), returned [frames, 80] like Tandem's.
--dtype picks float32 (the libraries' usual precision, the default) or float64 for the samples,
STFT and filterbank. Tandem's STFT is computed in double and stored float.

Parallelism in `bench`: T worker processes (multiprocessing, fork), each single-threaded
(OMP/MKL/OPENBLAS/NUMBA_NUM_THREADS=1 are set by run.sh before Python starts, and
torch.set_num_threads(1) in each worker). Files are handed out one at a time (chunksize 1),
as Tandem's bench threads take them from a shared counter. Every worker decodes all files
with soundfile (int16 -> x / 32768, as Tandem) and builds its filterbank and window before
timing, so decoding and constant setup are not timed. One untimed warm-up pass, then R timed
passes over all files; prints a RESULT line with the median, min and max.
"""
import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time

import numpy as np

SR, N_FFT, HOP, PAD, N_MELS, FMIN, FMAX = 22050, 1024, 256, 384, 80, 0.0, 8000.0

# ---- the recipe ---------------------------------------------------------------------------


def librosa_setup(dtype):
    import librosa
    fb = librosa.filters.mel(sr=SR, n_fft=N_FFT, n_mels=N_MELS, fmin=FMIN, fmax=FMAX, dtype=dtype)
    return fb


def librosa_logmel(y, fb):
    import librosa
    yp = np.pad(y, PAD, mode="reflect")
    s = librosa.stft(yp, n_fft=N_FFT, hop_length=HOP, win_length=N_FFT, window="hann", center=False)
    mag = np.sqrt(s.real ** 2 + s.imag ** 2 + 1e-9)  # [513, frames]
    mel = fb @ mag  # [80, frames]
    return np.log(np.maximum(mel, 1e-5)).T  # [frames, 80]


def torch_setup(dtype):
    import torch
    import torchaudio
    tdt = torch.float64 if dtype == np.float64 else torch.float32
    fb = torchaudio.functional.melscale_fbanks(N_FFT // 2 + 1, FMIN, FMAX, N_MELS, SR, norm="slaney",
                                               mel_scale="slaney").to(tdt)  # [513, 80]
    window = torch.hann_window(N_FFT, periodic=True, dtype=tdt)
    return (fb.T.contiguous(), window)


def torch_logmel(y, consts):
    import torch
    fbt, window = consts
    x = torch.from_numpy(y)
    xp = torch.nn.functional.pad(x.view(1, 1, -1), (PAD, PAD), mode="reflect").view(-1)
    s = torch.stft(xp, N_FFT, hop_length=HOP, win_length=N_FFT, window=window, center=False,
                   return_complex=True)  # [513, frames]
    mag = torch.sqrt(s.real ** 2 + s.imag ** 2 + 1e-9)
    mel = fbt @ mag  # [80, frames]
    return torch.log(torch.clamp(mel, min=1e-5)).T  # [frames, 80]


LIBS = {"librosa": (librosa_setup, librosa_logmel), "torch": (torch_setup, torch_logmel)}


def load(path, dtype):
    import soundfile as sf
    y, sr = sf.read(path, dtype="float32")  # int16 PCM -> x / 32768 exactly
    if sr != SR or y.ndim != 1:
        raise SystemExit(f"peers.py: {path}: expected 22050 Hz mono, got {sr} Hz, shape {y.shape}")
    return y.astype(dtype)


# ---- verify -------------------------------------------------------------------------------


def cmd_verify(args):
    ref = np.load(args.tandem_npy)
    ok = True
    for dtype in (np.float32, np.float64):
        y = load(args.wav, dtype)
        for name in args.libs.split(","):
            setup, fn = LIBS[name]
            out = fn(y, setup(dtype))
            out = out.numpy() if hasattr(out, "numpy") else out
            if out.shape != ref.shape:
                print(f"verify {name} {np.dtype(dtype).name}: shape {out.shape} != Tandem's {ref.shape}")
                ok = False
                continue
            diff = np.abs(out.astype(np.float64) - ref.astype(np.float64))
            worst = float(diff.max())
            good = worst <= 1e-3
            ok = ok and good
            print(f"VERIFY lib={name} dtype={np.dtype(dtype).name} frames={ref.shape[0]} "
                  f"max_abs_diff={worst:.3g} mean_abs_diff={float(diff.mean()):.3g} "
                  f"within_1e-3={'yes' if good else 'NO'}")
    return 0 if ok else 1


# ---- bench --------------------------------------------------------------------------------

_W = {}


def _init(lib, dtype_name, files):
    dtype = np.float64 if dtype_name == "float64" else np.float32
    if lib == "torch":
        import torch
        torch.set_num_threads(1)
        torch.set_grad_enabled(False)
    setup, fn = LIBS[lib]
    _W["fn"] = fn
    _W["consts"] = setup(dtype)
    _W["audio"] = [load(f, dtype) for f in files]
    fn(_W["audio"][0], _W["consts"])  # first-call costs (imports, plans) outside the timing


def _task(i):
    c0 = time.process_time()  # this worker's CPU time (all its threads)
    out = _W["fn"](_W["audio"][i], _W["consts"])
    return int(out.shape[0]), time.process_time() - c0


def cmd_bench(args):
    files = args.files
    audio_s = 0.0
    import soundfile as sf
    for f in files:
        audio_s += sf.info(f).frames / SR
    ctx = mp.get_context("fork")
    with ctx.Pool(args.threads, initializer=_init, initargs=(args.lib, args.dtype, files)) as pool:
        n = len(files)
        t0 = time.perf_counter()
        frames = sum(f for f, _ in pool.map(_task, range(n), chunksize=1))
        warm = time.perf_counter() - t0
        print(f"peers: {args.lib} ({args.dtype}), {n} files, {audio_s:.1f} s of audio, {args.threads} "
              f"process{'es' if args.threads > 1 else ''} x 1 thread, decoding excluded; {frames} frames")
        print(f"  warm-up  {warm:.3f} s (not counted)")
        times, cpus = [], []
        for r in range(args.reps):
            t0 = time.perf_counter()
            res = pool.map(_task, range(n), chunksize=1)
            times.append(time.perf_counter() - t0)
            cpus.append(sum(c for _, c in res))
            print(f"  rep {r + 1:<3d}  {times[-1]:.3f} s  {audio_s / times[-1]:.1f}x real time  "
                  f"(CPU {cpus[-1]:.3f} s)")
    med = statistics.median(times)
    cpu_med = statistics.median(cpus)
    print(f"RESULT features lib={args.lib} dtype={args.dtype} threads={args.threads} files={len(files)} "
          f"audio_s={audio_s:.3f} reps={args.reps} median_s={med:.4f} min_s={min(times):.4f} "
          f"max_s={max(times):.4f} xrt={audio_s / med:.2f} xrt_min={audio_s / max(times):.2f} "
          f"xrt_max={audio_s / min(times):.2f} cpu_median_s={cpu_med:.4f} "
          f"xrt_per_cpu={audio_s / cpu_med:.2f}")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("verify")
    v.add_argument("--libs", default="librosa,torch")
    v.add_argument("tandem_npy")
    v.add_argument("wav")
    b = sub.add_parser("bench")
    b.add_argument("--lib", choices=sorted(LIBS), required=True)
    b.add_argument("--threads", type=int, default=1)
    b.add_argument("--reps", type=int, default=5)
    b.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    b.add_argument("files", nargs="+")
    args = p.parse_args()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        if os.environ.get(var) != "1":
            print(f"peers.py: note: {var} is {os.environ.get(var)!r}, expected '1'", file=sys.stderr)
    return cmd_verify(args) if args.cmd == "verify" else cmd_bench(args)


if __name__ == "__main__":
    sys.exit(main())
