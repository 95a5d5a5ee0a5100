#!/usr/bin/env bash
# Checks on the built artifacts, reported in the test runner's format:
#  - every global symbol defined in libtandem.a starts with tandem_ (symbols the sanitizers
#    add under SANITIZE= are not ours and are skipped)
#  - the archive carries the embedded fatbin symbols
#  - tandem.pc names every library the archive needs
set -u
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
missing=""
for l in -lyaml -lsndfile -lsamplerate -ldl -lm; do grep -q -- "$l" "$pc" || missing="$missing $l"; done
if [ -z "$missing" ]; then ok "pkgconfig_libs"; else bad pkgconfig_libs "$pc lacks$missing"; fi
exit $fail
