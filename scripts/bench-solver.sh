#!/usr/bin/env bash
# Solver benchmark: the reference against each fast-kernel variant this CPU can run, on whole N,
# 1 and 2 threads, with nq-solve. Prints one table row per run:
#   variant N threads nodes seconds cpu_s ns/node vs_ref cpu_vs_ref 2t/1t check
# seconds is wall time (best of REPEAT runs), cpu_s the user+sys time of that run (all threads),
# ns/node is thread-seconds per node (seconds * threads / nodes), vs_ref is the reference's
# seconds over the variant's seconds (same N), cpu_vs_ref the same with cpu_s (on a busy machine
# the fairer single-thread figure: time waiting for a CPU is not counted), 2t/1t the variant's
# 1-thread seconds over its 2-thread seconds. check is "ok" when the run matched the published
# totals and the reference's node count.
#
# usage: scripts/bench-solver.sh [N ...]            (default: 15 16 17)
# env:   BUILD=build     build directory (configured and built if nq-solve is missing)
#        REPEAT=1        runs per cell, the fastest is reported
#        VARIANTS="auto avx512 avx2 scalar"   fast variants to try (NQ_KERNEL values; those the
#                        CPU lacks are skipped)
#        THREADS="1 2"   thread counts for the fast variants (the reference is single-threaded)
# The machine should be otherwise idle; on a shared one compare rows of the same run only.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEAT=${REPEAT:-1}
VARIANTS=${VARIANTS:-"auto avx512 avx2 scalar"}
THREADS=${THREADS:-"1 2"}
NS=("$@")
[ ${#NS[@]} -gt 0 ] || NS=(15 16 17)

SOLVE="$BUILD/nq-solve"
if [ ! -x "$SOLVE" ]; then
  echo "building $SOLVE ..." >&2
  cmake -S . -B "$BUILD" >/dev/null
  cmake --build "$BUILD" -j2 --target nq-solve >/dev/null
fi

flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { for f in "$@"; do [[ " $flags " == *" $f "* ]] || return 1; done; }
available() {
  case "$1" in
    auto | scalar | reference) return 0 ;;
    avx512) has avx512f avx512vl avx512bw bmi2 popcnt ;;
    avx2) has avx2 bmi2 popcnt ;;
    *) return 1 ;;
  esac
}

TIMEBIN=/usr/bin/time
[ -x "$TIMEBIN" ] || TIMEBIN=

# run VARIANT N THREADS -> "nodes seconds cpu_s published"
run_one() {
  local variant=$1 n=$2 t=$3 best="" bsecs="" out tf
  tf=$(mktemp)
  for _ in $(seq "$REPEAT"); do
    local args=("$n" --json --threads "$t")
    [ "$variant" = reference ] && args=("$n" --json --reference)
    if [ -n "$TIMEBIN" ]; then
      out=$(NQ_KERNEL=$variant "$TIMEBIN" -f '%U %S' -o "$tf" "$SOLVE" "${args[@]}" 2>/dev/null)
    else
      out=$(NQ_KERNEL=$variant "$SOLVE" "${args[@]}" 2>/dev/null)
      echo "0 0" >"$tf"
    fi
    local nodes secs pub cpu
    nodes=$(sed -n 's/.*"nodes":\([0-9]*\).*/\1/p' <<<"$out")
    secs=$(sed -n 's/.*"seconds":\([0-9.e+-]*\).*/\1/p' <<<"$out")
    pub=$(sed -n 's/.*"matches_published":\([a-z]*\).*/\1/p' <<<"$out")
    cpu=$(awk 'END { printf "%.3f", $1 + $2 }' "$tf")
    if [ -z "$best" ] || awk -v a="$secs" -v b="$bsecs" 'BEGIN { exit !(a < b) }'; then
      best="${nodes:-0} ${secs:-0} $cpu ${pub:-none}"
      bsecs=${secs:-0}
    fi
  done
  rm -f "$tf"
  echo "$best"
}

printf '%-10s %3s %7s %14s %9s %9s %8s %7s %10s %6s %s\n' variant N threads nodes seconds cpu_s \
  ns/node vs_ref cpu_vs_ref 2t/1t check
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
for n in "${NS[@]}"; do
  read -r rnodes rsecs rcpu rpub < <(run_one reference "$n" 1)
  rcheck=$([ "$rpub" = true ] && echo ok || echo "published=$rpub")
  printf '%-10s %3d %7d %14s %9.3f %9.3f %8.3f %7s %10s %6s %s\n' reference "$n" 1 "$rnodes" \
    "$rsecs" "$rcpu" "$(awk -v s="$rsecs" -v c="$rnodes" 'BEGIN { print s * 1e9 / c }')" 1.00 \
    1.00 - "$rcheck"
  for v in $VARIANTS; do
    available "$v" || { echo "($v: not supported by this CPU, skipped)"; continue; }
    one=""
    for t in $THREADS; do
      read -r nodes secs cpu pub < <(run_one "$v" "$n" "$t")
      [ "$t" = 1 ] && one=$secs
      scale=-
      [ "$t" != 1 ] && [ -n "$one" ] && scale=$(awk -v a="$one" -v b="$secs" 'BEGIN { printf "%.2f", a / b }')
      check=ok
      [ "$pub" = true ] || check="published=$pub"
      [ "$nodes" = "$rnodes" ] || check="NODES DIFFER from reference"
      printf '%-10s %3d %7d %14s %9.3f %9.3f %8.3f %7s %10s %6s %s\n' "$v" "$n" "$t" "$nodes" \
        "$secs" "$cpu" "$(awk -v s="$secs" -v c="$nodes" -v t="$t" 'BEGIN { print s * t * 1e9 / c }')" \
        "$(ratio "$rsecs" "$secs")" "$(ratio "$rcpu" "$cpu")" "$scale" "$check"
    done
  done
done
