#!/usr/bin/env bash
# The device API rule of docs/ARCHITECTURE.md: the backend table (tandem_backend_ops,
# platform/device.h) is called only by the device API in runtime/core — the public device,
# stream and event API (runtime/core/device.c) and the internal one (runtime/core/dev.c,
# dev.h) — so every other caller gets its tensor checks. Any other line under runtime/ or
# tools/ that reaches the table (`->ops`, `ops->`, `.ops`, the type name) is reported by file
# and line. Reported in the test runner's format.
#
# Usage: check_device_api.sh [ROOT]   (ROOT defaults to the repository this script lives in)
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

allowed='^runtime/core/(dev|device)\.c$'
pattern='(->|\.)[[:space:]]*ops\b|\bops[[:space:]]*->|\btandem_backend_ops\b'

fail=0; files=0
while IFS= read -r f; do
  [[ $f =~ $allowed ]] && continue
  [ -f "$f" ] || continue # deleted in the working tree, not yet committed
  files=$((files + 1))
  while IFS=: read -r line text; do
    echo "device API: $f:$line calls the backend table directly: ${text#"${text%%[![:space:]]*}"}"
    echo "  (use the checked wrappers of runtime/core/dev.h, or the public API of tandem.h)"
    fail=1
  done < <(grep -nE "$pattern" "$f")
done < <(git ls-files runtime tools 2>/dev/null | grep -E '\.(c|h)$' ||
         find runtime tools -name '*.[ch]')

if [ $fail -eq 0 ]; then
  echo "[       OK ] device API ($files files outside runtime/core/dev.c and device.c leave" \
       "the backend table alone)"
else
  echo "[  FAILED  ] device API: lines above call the backend table outside" \
       "runtime/core/dev.c and device.c"
fi
exit $fail
