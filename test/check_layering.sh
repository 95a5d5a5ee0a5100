#!/usr/bin/env bash
# The dependency rule of docs/ARCHITECTURE.md, checked on every quoted #include under runtime/,
# platform/, kernels/ and tools/. Reported in the test runner's format; a break names the file,
# the line, the include and what that module may include.
#
#   module             may include (besides itself and the public tandem*.h)
#   tools              tools/ only: the CLI is an ordinary client of the public API
#   runtime/run        data model formats report (and what they may include)
#   runtime/data       audio text core
#   runtime/report     formats core
#   runtime/model      core
#   runtime/audio      core
#   runtime/text       core
#   runtime/formats    core
#   runtime/core       platform, the kernel registry (kernels/*.h but not the dialect)
#   platform/host      platform/os, platform/device.h, the kernel registry
#   platform/cuda      platform/os, platform/device.h, the kernel registry
#   platform/device.h  platform/os, kernels/ktypes.h
#   platform/os        nothing else
#   kernels            kernels/ only (device code and host implementations alike)
#
# Usage: check_layering.sh [ROOT]   (ROOT defaults to the repository this script lives in)
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

declare -A deps=(
  [tools]=""
  [runtime/run]="runtime/data runtime/model runtime/formats runtime/report"
  [runtime/data]="runtime/audio runtime/text runtime/core"
  [runtime/report]="runtime/formats runtime/core"
  [runtime/model]="runtime/core"
  [runtime/audio]="runtime/core"
  [runtime/text]="runtime/core"
  [runtime/formats]="runtime/core"
  [runtime/core]="platform registry"
  [platform]="platform/os registry"
  [platform/host]="platform/os platform/device.h registry"
  [platform/cuda]="platform/os platform/device.h registry"
  [platform/device.h]="platform/os ktypes"
  [platform/os]=""
  [kernels]=""
  [registry]=""
  [ktypes]=""
)
# Each module's allowed prefixes: itself plus the transitive closure of deps.
declare -A closure=()
expand() { # $1 module → prints every module it may reach
  local m=$1 d
  echo "$m"
  for d in ${deps[$m]-}; do expand "$d"; done
}
for m in "${!deps[@]}"; do closure[$m]=$(expand "$m" | sort -u | tr '\n' ' '); done

module_of() { # file → module key
  case $1 in
    tools/*) echo tools ;;
    runtime/tandem*.h) echo public ;;
    runtime/*/*) echo "runtime/$(echo "$1" | cut -d/ -f2)" ;;
    platform/device.h) echo platform/device.h ;;
    platform/*/*) echo "platform/$(echo "$1" | cut -d/ -f2)" ;;
    kernels/*) echo kernels ;;
    *) echo other ;;
  esac
}
# Does include path $2 fall inside module $1?
inside() {
  local m=$1 inc=$2
  case $m in
    registry) [[ $inc == kernels/*.h && $inc != kernels/dialect.h ]] ;;
    ktypes) [[ $inc == kernels/ktypes.h ]] ;;
    platform) [[ $inc == platform/* ]] ;;
    platform/device.h) [[ $inc == platform/device.h ]] ;;
    *) [[ $inc == "$m"/* ]] ;;
  esac
}

fail=0; files=0; includes=0
while IFS= read -r f; do
  files=$((files + 1))
  m=$(module_of "$f")
  [ "$m" = other ] && continue
  while IFS=: read -r line inc; do
    [ -z "$inc" ] && continue
    includes=$((includes + 1))
    [[ $inc == tandem.h || $inc == tandem_*.h ]] && continue # the public API: anyone
    if [ "$m" = public ]; then
      echo "layering: $f:$line includes \"$inc\": public headers include only tandem*.h"; fail=1; continue
    fi
    if [[ $inc != */* ]]; then
      echo "layering: $f:$line includes \"$inc\": includes are path-qualified from the repository root (e.g. \"runtime/data/ring.h\")"; fail=1; continue
    fi
    ok=0
    for a in ${closure[$m]}; do if inside "$a" "$inc"; then ok=1; break; fi; done
    if [ $ok -eq 0 ]; then
      echo "layering: $f:$line includes \"$inc\": $m may include only: $(echo ${closure[$m]}) and tandem*.h"
      fail=1
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | sed -E 's/^([0-9]+):.*"([^"]+)".*/\1:\2/')
done < <(git ls-files runtime platform kernels tools 2>/dev/null | grep -E '\.(c|h|cu)$' ||
         find runtime platform kernels tools -name '*.[ch]' -o -name '*.cu')

if [ $fail -eq 0 ]; then
  echo "[       OK ] layering ($files files, $includes includes follow the dependency rule)"
else
  echo "[  FAILED  ] layering: includes above break the dependency rule of docs/ARCHITECTURE.md"
fi
exit $fail
