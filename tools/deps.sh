#!/usr/bin/env bash
# Installs the Debian packages Tandem needs to build, test and run its demo.
# As root: installs what is missing. Otherwise: prints the apt-get line to run.
set -eu
pkgs=(
  build-essential pkg-config   # compiler, make, ar
  libcmocka-dev                # unit-test library
  libyaml-dev                  # config files
  libopenblas-dev              # host GEMM through CBLAS (HOST_BLAS=none builds without it)
  libsndfile1-dev              # audio decoding
  libsamplerate0-dev           # resampling to 22050 Hz
  libpng-dev                   # loss and mel plots
  espeak-ng                    # demo corpus voices
)
# Optional: builds ask for them (make MPI=1, make HOST_FFT=fftw) and the tests use them when
# present (mk/46-mpi.mk), so a user without root is told, not stopped; as root they are installed.
optional=(
  openmpi-bin libopenmpi-dev   # mpirun and MPI: multi-rank runs, the host backend's collectives
  libfftw3-dev                 # HOST_FFT=fftw: the host STFT through FFTW (GPL-2.0-or-later)
)
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing=(); missing_opt=()
for p in "${pkgs[@]}"; do installed "$p" || missing+=("$p"); done
for p in "${optional[@]}"; do installed "$p" || missing_opt+=("$p"); done
if [ ${#missing[@]} -eq 0 ] && { [ ${#missing_opt[@]} -eq 0 ] || [ "$(id -u)" -ne 0 ]; }; then
  echo "deps: all Debian packages present"
  if [ ${#missing_opt[@]} -gt 0 ]; then
    echo "deps: optional, not installed (make MPI=1 / HOST_FFT=fftw need them); as root:"
    echo "  apt-get update && apt-get install -y --no-install-recommends ${missing_opt[*]}"
  fi
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing packages; run as root:"
  echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
install() {
  apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 || {
    apt-get update >/dev/null && apt-get install -y --no-install-recommends "$@"
  }
}
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  install "${missing[@]}"
fi
if [ ${#missing_opt[@]} -gt 0 ]; then
  echo "deps: installing (optional) ${missing_opt[*]}"
  install "${missing_opt[@]}" || echo "deps: could not install ${missing_opt[*]}: the multi-rank tests will SKIP"
fi
echo "deps: done"
