#!/usr/bin/env bash
# The longest functions of the product code, for reviews (before/after figures of a refactor):
# every C function in common/, server/, client/, admin/, solve/ and tools/ (.c and .h), tests and
# fuzzers left out, and the solver kernels too (common/solver/solver_{ref,fast,scalar,batch,x86,
# neon}.c, solver_batch.h: their length is the unrolled hot loop's, on purpose).
#
# Method: Universal Ctags (`ctags --fields=+ne`) gives each function's first line (the line with
# its name) and its end line (the closing brace); a function's length is end - first + 1, so a
# contract comment above it does not count and its body, blank lines and comments do.
#
#   scripts/longest-functions.sh [-n TOP] [TREE]
#     -n TOP   how many to print (default 15)
#     TREE     the source tree to measure (default: the one this script is in), e.g. a
#              `git worktree add /tmp/base REV` of another revision
# Output: one line per function, longest first: LINES FILE:LINE NAME.
set -euo pipefail
TOP=15
while [ $# -gt 0 ]; do
  case "$1" in
  -n) TOP=${2:?-n needs a number}; shift 2 ;;
  -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
  -*) echo "longest-functions.sh: unknown option $1" >&2; exit 2 ;;
  *) break ;;
  esac
done
[[ "$TOP" =~ ^[1-9][0-9]*$ ]] || { echo "longest-functions.sh: -n wants a whole number > 0, not '$TOP'" >&2; exit 2; }
TREE=${1:-"$(dirname "$0")/.."}
[ -d "$TREE" ] || { echo "longest-functions.sh: no directory $TREE" >&2; exit 2; }
command -v ctags >/dev/null && ctags --version 2>/dev/null | grep -q "Universal Ctags" ||
  { echo "longest-functions.sh: needs Universal Ctags (apt-get install universal-ctags)" >&2; exit 2; }
cd "$TREE"

dirs=()
for d in common server client admin solve tools; do [ -d "$d" ] && dirs+=("$d"); done
[ ${#dirs[@]} -gt 0 ] || { echo "longest-functions.sh: $TREE has none of common/ server/ client/ admin/ solve/ tools/" >&2; exit 2; }
KERNELS='(^|/)common/(solver/)?solver_(ref|fast|scalar|batch|x86|neon)\.[ch]$'

find "${dirs[@]}" -type f \( -name '*.c' -o -name '*.h' \) | sort | grep -Ev "$KERNELS" |
  ctags -L - -x --languages=C --kinds-C=f --fields=+ne --_xformat='%N %F %n %{end}' |
  awk '$4 ~ /^[0-9]+$/ { printf "%d %s:%d %s\n", $4 - $3 + 1, $2, $3, $1 }' |
  sort -k1,1nr -k2,2 | awk -v top="$TOP" 'NR <= top'
