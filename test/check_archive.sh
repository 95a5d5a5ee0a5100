#!/usr/bin/env bash
# Checks on the built artifacts, reported in the test runner's format:
#  - every global symbol defined in libtandem.a starts with tandem_ (symbols the sanitizers
#    add under SANITIZE= are not ours and are skipped)
#  - the archive carries the embedded fatbin symbols
#  - tandem.pc names every library the archive needs, under Libs: (a static-only library)
#  - the default build references no copyleft or MPI code (FFTW only with HOST_FFT=fftw, MPI only
#    with MPI=1), and build/tandem loads no libfftw3 or libmpi
#  - README's "What the target needs" is what `ldd build/tandem` says, both ways
# Environment: the build's HOST_BLAS, HOST_FFT and MPI settings (mk/10-test.mk writes them).
set -u
host_blas=${TANDEM_TEST_HOST_BLAS:-openblas}; host_fft=${TANDEM_TEST_HOST_FFT:-builtin}; mpi=${TANDEM_TEST_MPI:-0}
src=${TANDEM_TEST_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${TANDEM_TEST_BUILD_DIR:?}
lib="$build/libtandem.a"
ok() { echo "[       OK ] $1"; }
bad() { echo "[  FAILED  ] $1: $2"; fail=1; }
fail=0

syms=$(nm -g --defined-only "$lib" 2>/dev/null | awk 'NF==3 {print $3}' | sort -u)
stray=$(printf '%s\n' "$syms" | grep -v '^tandem_' | grep -vE '^$|^__odr_asan\.|^__(asan|ubsan|sancov)_' | head -10)
if [ -z "$syms" ]; then bad archive_symbols "no symbols read from $lib"
elif [ -n "$stray" ]; then bad archive_symbols "globals without the tandem_ prefix: $(echo $stray)"
else ok "archive_symbols ($(printf '%s\n' "$syms" | wc -l) globals, all tandem_)"; fi

fat=$(stat -c %s "$build/tandem.fatbin")
emb=$(nm --defined-only "$lib" 2>/dev/null | grep -c " tandem_fatbin_embedded_size$")
if [ "$emb" -gt 0 ]; then ok "fatbin_embedded (fatbin $fat bytes)"; else bad fatbin_embedded "tandem_fatbin_embedded_size missing from $lib"; fi

pc="$build/tandem.pc"
libs=$(sed -n 's/^Libs: *//p' "$pc")
missing=""
for l in -ltandem -lyaml -lsndfile -lsamplerate -lpng -ldl -lm; do
  [[ " $libs " == *" $l "* ]] || missing="$missing $l"
done
if [ -z "$missing" ]; then ok "pkgconfig_libs"; else bad pkgconfig_libs "the Libs: line of $pc lacks$missing (got: $libs)"; fi

# Copyleft and MPI: what the archive's objects call, and what the CLI loads.
undef=$(nm -u "$lib" 2>/dev/null | awk '{print $2}' | sort -u)
n_fftw=$(printf '%s\n' "$undef" | grep -c '^fftw_')
n_mpi=$(printf '%s\n' "$undef" | grep -c '^MPI_\|^ompi_')
cli_libs=$(ldd "$build/tandem" 2>/dev/null | awk '{print $1}')
if [ "$host_fft" != fftw ] && { [ "$n_fftw" -gt 0 ] || [[ "$cli_libs" == *libfftw3* ]]; }; then
  bad no_copyleft "HOST_FFT=$host_fft but libtandem.a calls $n_fftw fftw_ symbols / build/tandem loads libfftw3 (GPL-2.0-or-later)"
elif [ "$mpi" != 1 ] && { [ "$n_mpi" -gt 0 ] || [[ "$cli_libs" == *libmpi* ]]; }; then
  bad no_copyleft "MPI=$mpi but libtandem.a calls $n_mpi MPI symbols / build/tandem loads libmpi"
else ok "no_copyleft (HOST_FFT=$host_fft, MPI=$mpi: $n_fftw fftw_ and $n_mpi MPI symbols referenced)"; fi

# README's list: every library ldd shows is named, and every linked one named is loaded.
para=$(awk '/^What the target needs/ {on=1} on && /^$/ {exit} on' "$src/README.md")
linked_part=${para%%loaded with*}
named=$(printf '%s\n' "$linked_part" | grep -o '`lib[^`]*\.so\.[0-9]*`' | tr -d '`' | sort -u)
seen=$(printf '%s\n' "$cli_libs" | grep '^lib' | sort -u)
# a SANITIZE= build also loads the sanitizers' runtimes (and libstdc++ with them): not the target's
if printf '%s\n' "$seen" | grep -qE '^lib(a|ub|t|l)san\.so'; then
  seen=$(printf '%s\n' "$seen" | grep -vE '^lib(a|ub|t|l)san\.so|^libstdc\+\+\.so')
fi
unlisted=$(comm -13 <(printf '%s\n' "$named") <(printf '%s\n' "$seen") | tr '\n' ' ')
absent=""
for l in $(comm -23 <(printf '%s\n' "$named") <(printf '%s\n' "$seen")); do
  case "$host_blas:$l" in none:libopenblas* | none:libgfortran* | none:libquadmath* | none:libgcc_s*) continue ;; esac
  absent="$absent $l"
done
if [ -z "$para" ] || [ -z "$named" ]; then bad readme_target_needs "no 'What the target needs' paragraph naming libraries in $src/README.md"
elif [ -n "${unlisted// /}" ] || [ -n "$absent" ]; then
  bad readme_target_needs "ldd build/tandem loads, README does not name: ${unlisted:-none}; README names, ldd does not show:${absent:- none}"
else ok "readme_target_needs ($(printf '%s\n' "$seen" | wc -l) libraries, as README says)"; fi
exit $fail
