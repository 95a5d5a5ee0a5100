# toolchain.mk — everything target-specific. Override any of these on the command line,
# e.g. `make CROSS_COMPILE=aarch64-linux-gnu- HOST_BLAS=none` or `make SANITIZE=address,undefined`.

CROSS_COMPILE ?=
# (make's built-in defaults for CC/AR are replaced; command-line values still win)
CC            := $(CROSS_COMPILE)gcc
AR            := $(CROSS_COMPILE)ar

# CUDA: only nvcc is used, to build the fatbin; nothing links against the CUDA toolkit.
CUDA_HOME     ?= /usr/local/cuda
NVCC          ?= $(CUDA_HOME)/bin/nvcc
# SASS for each listed sm, plus PTX for the last so newer GPUs can JIT it.
CUDA_ARCHS    ?= 80 86 89 90
CUDA_PTX_ARCH ?= 90
NVCC_FLAGS    ?= -O3 --no-compress -std=c++17 -Xptxas=-warn-spills

# Host BLAS for the host backend's GEMM: openblas (CBLAS) or none (built-in blocked GEMM).
HOST_BLAS     ?= openblas
# Host FFT for the host backend's STFT: builtin (the project's radix-2 FFT) or fftw (FFTW3, double;
# GPL-2.0-or-later, so a static link puts copyleft code into whatever links libtandem.a: README).
HOST_FFT      ?= builtin
# MPI for multi-process host training (mpirun): 1 links OpenMPI into libtandem.a and the CLI.
MPI           ?= 0

OPT           ?= -O2 -g
WARN          ?= -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes $(WERROR)
WERROR        ?= -Werror
SANITIZE      ?=
CSTD          ?= -std=c11 -D_GNU_SOURCE

PREFIX        ?= /usr/local
