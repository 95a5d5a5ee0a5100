#!/usr/bin/env bash
# Runs test binaries (cmocka or plain), counts passed/failed cases and ends with the
# summary line "N passed, M failed". A binary that crashes, times out or exits non-zero
# without reporting a failed case counts as one failure.
set -u
timeout_s=${TANDEM_TEST_TIMEOUT:-600}
passed=0; failed=0; failed_names=()
for bin in "$@"; do
  name=$(basename "$bin")
  echo "=== $name"
  out=$(mktemp)
  timeout "$timeout_s" "$bin" >"$out" 2>&1
  rc=$?
  cat "$out"
  p=$(grep -c '^\[       OK \]' "$out")
  f=$(grep -E '^\[  FAILED  \] [^0-9]' "$out" | grep -vc 'test(s)')
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1
    if [ "$rc" -eq 124 ]; then why="timed out after ${timeout_s}s"; else why="exit code $rc"; fi
    echo "[  FAILED  ] $name ($why)"
  fi
  passed=$((passed + p)); failed=$((failed + f))
  [ "$f" -gt 0 ] && failed_names+=("$name")
  rm -f "$out"
done
echo
[ ${#failed_names[@]} -gt 0 ] && echo "failing binaries: ${failed_names[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
