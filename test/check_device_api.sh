#!/usr/bin/env bash
# The device API rule of docs/ARCHITECTURE.md: the backend table (tandem_backend_ops,
# platform/device.h) is called only by the device API in runtime/core — the public device,
# stream and event API (runtime/core/device.c) and the internal one (runtime/core/dev.c,
# dev.h) — so every other caller gets its tensor checks. Any other line of code under runtime/
# or tools/ that reaches the table (`->ops`, `ops->`, `.ops`, the type name) is reported by file
# and line; lines that are comments (starting with /*, * or //) are not code. A self-test on a
# generated fixture first shows the scan finds what it should. Reported in the test runner's
# format.
#
# Usage: check_device_api.sh [ROOT]   (ROOT defaults to the repository this script lives in)
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

allowed='^runtime/core/(dev|device)\.c$'
pattern='(->|\.)[[:space:]]*ops\b|\bops[[:space:]]*->|\btandem_backend_ops\b'

scan() { # file → "line:code" of each line that reaches the table
  grep -nE "$pattern" "$1" | grep -vE '^[0-9]+:[[:space:]]*(/\*|\*|//)'
}

# ---- self-test: lines 2, 4, 5 and 6 reach the table; comments and look-alikes do not ----
fx=$(mktemp) || exit 2
trap 'rm -f "$fx"' EXIT
cat >"$fx" <<'FIXTURE'
/* dev->ops->copy_h2d in a comment */
static int f(tandem_stream *s) { return s->dev->ops->sync(s->dev); }
 * a comment's continuation: ops->launch
    const tandem_backend_ops *t = 0;
    return ops -> gemm(s);
    x.ops = 0;
    int n_ops = tops; opsx->y = 0; /* look-alikes */
FIXTURE
got=$(scan "$fx" | cut -d: -f1 | tr '\n' ' ')
if [ "$got" != "2 4 5 6 " ]; then
  echo "[  FAILED  ] device API: self-test found lines '$got' in the fixture, expected '2 4 5 6 '"
  exit 1
fi

fail=0; files=0
while IFS= read -r f; do
  [[ $f =~ $allowed ]] && continue
  [ -f "$f" ] || continue # deleted in the working tree, not yet committed
  files=$((files + 1))
  while IFS=: read -r line text; do
    echo "device API: $f:$line calls the backend table directly: ${text#"${text%%[![:space:]]*}"}"
    echo "  (use the checked wrappers of runtime/core/dev.h, or the public API of tandem.h)"
    fail=1
  done < <(scan "$f")
done < <({ git ls-files --cached --others --exclude-standard -- runtime tools 2>/dev/null ||
           find runtime tools -type f; } | grep -E '\.(c|h)$' | sort -u)

if [ $fail -eq 0 ]; then
  echo "[       OK ] device API ($files files outside runtime/core/dev.c and device.c leave" \
       "the backend table alone; self-test passed)"
else
  echo "[  FAILED  ] device API: lines above call the backend table outside" \
       "runtime/core/dev.c and device.c"
fi
exit $fail
