#!/usr/bin/env python3
"""Write test/golden/mel_filterbank_librosa.txt: librosa's Slaney mel filterbank for Tandem's
recipe (DESIGN.md section 6), the golden values test/unit/test_mel.c compares its own
double-precision filterbank with (<= 1e-6 relative).

Run once, by hand, never from a test:

    python3 -m venv /tmp/mel-venv
    /tmp/mel-venv/bin/pip install librosa          # produced with librosa 0.11.0, numpy 2.4.6
    /tmp/mel-venv/bin/python bench/golden/make_mel_golden.py

The bank is librosa.filters.mel(sr=22050, n_fft=1024, n_mels=80, fmin=0, fmax=8000) computed
with dtype=numpy.float64 (librosa's default dtype float32 rounds the same numbers to float;
the script checks that the two agree to float precision). Only nonzero weights are stored,
one per line: "band bin weight" with the weight printed with 17 significant digits so the
float64 value round-trips exactly.
"""
import os
import sys

import librosa
import numpy as np

SR, N_FFT, N_MELS, FMIN, FMAX = 22050, 1024, 80, 0.0, 8000.0


def main() -> int:
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "golden",
                       "mel_filterbank_librosa.txt")
    fb64 = librosa.filters.mel(sr=SR, n_fft=N_FFT, n_mels=N_MELS, fmin=FMIN, fmax=FMAX,
                               dtype=np.float64)
    fb32 = librosa.filters.mel(sr=SR, n_fft=N_FFT, n_mels=N_MELS, fmin=FMIN, fmax=FMAX)
    assert fb64.shape == (N_MELS, N_FFT // 2 + 1)
    nz = fb64 != 0
    assert np.array_equal(nz, fb32 != 0), "float32 and float64 banks differ in support"
    rel = np.abs(fb32[nz] - fb64[nz]) / np.abs(fb64[nz])
    assert rel.max() < 1e-6, rel.max()

    rows, cols = np.nonzero(fb64)
    with open(out, "w", encoding="ascii") as f:
        f.write("# Tandem golden: librosa Slaney mel filterbank, float64, nonzero weights only\n")
        f.write(f"# librosa {librosa.__version__}, numpy {np.__version__}\n")
        f.write(f"# librosa.filters.mel(sr={SR}, n_fft={N_FFT}, n_mels={N_MELS}, fmin={FMIN:g},"
                f" fmax={FMAX:g}, dtype=numpy.float64)\n")
        f.write("# made by: /tmp/mel-venv/bin/python bench/golden/make_mel_golden.py\n")
        f.write(f"# shape {N_MELS} {N_FFT // 2 + 1} nonzero {len(rows)}\n")
        f.write("# band bin weight\n")
        for r, c in zip(rows, cols):
            f.write(f"{r} {c} {fb64[r, c]:.17g}\n")
    print(f"wrote {out}: {len(rows)} nonzero weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
