#!/usr/bin/env bash
# Library code neither prints nor reads the environment (DESIGN.md §10): every C source and
# header under runtime/, platform/ and kernels/ (the .cu kernels too) is read with comments,
# string and character literals blanked, and these are failures:
#
#   getenv        getenv, secure_getenv or environ: the library reads no environment variable;
#                 settings come in through tandem_runtime_set_options (tandem.h)
#   print         printf, vprintf, puts, putchar, perror: they write to stdout or stderr
#   std stream    any use of stdout, stderr, STDOUT_FILENO, STDERR_FILENO; write/dprintf to fd 1/2
#   stream write  fprintf, vfprintf, fputs, fputc, putc, fwrite, fflush to a stream that the same
#                 file does not open itself (fopen, fdopen, tmpfile, ...): a stream handed in by
#                 a caller is, in practice, stdout or stderr
#
# Formatting into buffers (snprintf, strbuf) and writing files the library opened
# (metrics.jsonl, PNGs) are fine. Exemptions are "file-glob|function-glob|code-regex|reason"
# (an empty regex matches any line of that function): one permanent, the log hook's default
# writer, and the TEMPORARY list below. Reported in the test runner's format; each failure
# names file:line, the function and the rule.
#
# Usage: check_sources.sh [ROOT]   (ROOT defaults to the repository this script lives in)
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

# The one place library code writes to stderr: what the log hook does when none is installed.
PERMANENT=(
  "platform/os/log.c|default_hook||the log hook's default writer (stderr), DESIGN.md §10"
)
TEMPORARY=() # none left: empty it again should one be needed

list_files() {
  { git ls-files --cached --others --exclude-standard -- runtime platform kernels 2>/dev/null ||
      find runtime platform kernels -type f; } | grep -E '\.(c|h|cu)$' | sort -u
}

# One line per finding: file, line, function, rule, code (separated by \037).
scan() {
  awk '
  function strip(s,   out, i, c, n, q) {
    out = ""; n = length(s)
    for (i = 1; i <= n; i++) {
      c = substr(s, i, 1)
      if (incomment) { if (c == "*" && substr(s, i + 1, 1) == "/") { incomment = 0; i++ } continue }
      if (c == "/" && substr(s, i + 1, 1) == "*") { incomment = 1; i++; out = out " "; continue }
      if (c == "/" && substr(s, i + 1, 1) == "/") break
      if (c == "\"" || c == "\047") {
        q = c; i++
        while (i <= n && substr(s, i, 1) != q) { if (substr(s, i, 1) == "\\") i++; i++ }
        out = out q q; continue
      }
      out = out c
    }
    return out
  }
  # The argument of call text t (from just after its "(") at index k (1-based; 0 = last).
  function arg(t, k,   i, c, d, cur, args, n) {
    d = 0; cur = ""; n = 0
    for (i = 1; i <= length(t); i++) {
      c = substr(t, i, 1)
      if (c == "(") d++
      if (c == ")") { if (d == 0) { args[++n] = cur; break } d-- }
      if (c == "," && d == 0) { args[++n] = cur; cur = ""; continue }
      cur = cur c
    }
    if (i > length(t)) return "?" # call not closed within the lines joined
    c = k == 0 ? args[n] : args[k]
    gsub(/[ \t]/, "", c)
    return c
  }
  function report(i, rule) { printf "%s\037%d\037%s\037%s\037%s\n", FILENAME, i, fnl[i], rule, src[i] }
  FNR == 1 { incomment = 0 }
  { src[FNR] = $0; sub(/^[ \t]+/, "", src[FNR]); code[FNR] = strip($0); n = FNR }
  END {
    W = "[A-Za-z0-9_]"
    # Streams this file opens: the left-hand side of "X = fopen(" and kin.
    for (i = 1; i <= n; i++) {
      t = code[i]
      while (match(t, /[A-Za-z_][A-Za-z0-9_>.-]*[ \t]*=[ \t]*(fopen|fdopen|freopen|tmpfile|open_memstream|fmemopen|popen)[ \t]*\(/)) {
        m = substr(t, RSTART, RLENGTH); t = substr(t, RSTART + RLENGTH)
        sub(/[ \t]*=.*/, "", m); opened[m] = 1
      }
    }
    # The function each line belongs to (a depth-0 "{" after a name followed by "(").
    depth = 0; fn = ""; pending = ""
    for (i = 1; i <= n; i++) {
      t = code[i]
      if (depth == 0 && t ~ /^[A-Za-z_]/ && match(t, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
        pending = substr(t, RSTART, RLENGTH); sub(/[ \t]*\($/, "", pending)
      }
      fnl[i] = fn
      for (k = 1; k <= length(t); k++) {
        c = substr(t, k, 1)
        if (c == ";" && depth == 0) pending = ""
        if (c == "{") { if (depth == 0 && pending != "") { fn = pending; fnl[i] = fn } depth++ }
        if (c == "}" && depth > 0) { depth--; if (depth == 0) { fn = ""; pending = "" } }
      }
    }
    for (i = 1; i <= n; i++) {
      t = " " code[i] " "
      if (t ~ "[^A-Za-z0-9_](secure_getenv|getenv)[ \t]*\\(" || t ~ "[^A-Za-z0-9_]environ[^A-Za-z0-9_]")
        report(i, "reads the environment (settings come in through tandem_runtime_set_options)")
      if (t ~ "[^A-Za-z0-9_](printf|vprintf|puts|putchar|perror)[ \t]*\\(")
        report(i, "prints to stdout/stderr (log through the hook, or format into a buffer)")
      std = t ~ "[^A-Za-z0-9_](stdout|stderr|STDOUT_FILENO|STDERR_FILENO)[^A-Za-z0-9_]" ||
            t ~ "[^A-Za-z0-9_](write|dprintf|vdprintf)[ \t]*\\([ \t]*[12][ \t]*,"
      if (std) report(i, "writes to stdout/stderr (log through the hook)")
      rest = t
      while (!std && match(rest, "[^A-Za-z0-9_](fprintf|vfprintf|fputs|fputc|putc|fwrite|fflush)[ \t]*\\(")) {
        name = substr(rest, RSTART + 1, RLENGTH - 1); sub(/[ \t]*\($/, "", name)
        rest = substr(rest, RSTART + RLENGTH)
        call = rest
        for (j = i + 1; j <= n && j <= i + 8; j++) call = call " " code[j]
        s = arg(call, name ~ /^v?fprintf$/ ? 1 : 0)
        if (!(s in opened))
          report(i, name " to \"" s "\", a stream this file does not open (a caller'"'"'s stream, e.g. stdout)")
      }
    }
  }' "$1"
}

# Does finding (file, fn, code) match exemption entry $1?
exempt_by() {
  local glob fglob re reason
  IFS='|' read -r glob fglob re reason <<<"$1"
  # shellcheck disable=SC2053  # glob patterns on purpose
  [[ $file == $glob && $fn == $fglob ]] || return 1
  [ -z "$re" ] || [[ $code =~ $re ]]
}

files=0; failures=0
declare -A used=()
while IFS= read -r f; do
  files=$((files + 1))
  while IFS=$'\037' read -r file line fn rule code; do
    ok=""
    for e in "${PERMANENT[@]}" "${TEMPORARY[@]}"; do
      if exempt_by "$e"; then ok=1; used[$e]=$((${used[$e]:-0} + 1)); break; fi
    done
    [ -n "$ok" ] && continue
    echo "[  FAILED  ] no_print_no_getenv: $file:$line (${fn:-file scope}): $rule: $code"
    failures=$((failures + 1))
  done < <(scan "$f")
done < <(list_files)

for e in "${TEMPORARY[@]}"; do
  IFS='|' read -r glob fglob _ reason <<<"$e"
  echo "note: temporary exemption $glob ($fglob): ${used[$e]:-0} line(s) — ${reason#TEMPORARY: }"
done
if [ "$files" -eq 0 ]; then
  echo "[  FAILED  ] no_print_no_getenv: no sources found under $root/runtime, platform, kernels"
  exit 1
fi
if [ "$failures" -eq 0 ]; then
  echo "[       OK ] no_print_no_getenv ($files files under runtime/ platform/ kernels/ neither print nor read the environment; exempt: log.c default_hook, ${#TEMPORARY[@]} temporary)"
  exit 0
fi
echo "library code prints or reads the environment at the $failures place(s) above (test/check_sources.sh says what is allowed)"
exit 1
