#!/usr/bin/env bash
# Installs the Debian packages Tandem needs to build, test and run its demo.
# As root: installs what is missing. Otherwise: prints the apt-get line to run.
set -eu
pkgs=(
  build-essential pkg-config   # compiler, make, ar
  libcmocka-dev                # unit-test library
  libyaml-dev                  # config files
  libopenblas-dev              # host GEMM through CBLAS (HOST_BLAS=none builds without it)
  libfftw3-dev                 # host STFT through FFTW (HOST_FFT=none builds without it)
  libsndfile1-dev              # audio decoding
  libsamplerate0-dev           # resampling to 22050 Hz
  libpng-dev                   # loss and mel plots
  espeak-ng                    # demo corpus voices
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all Debian packages present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing packages; run as root:"
  echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
  exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
  apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}"
}
echo "deps: done"
