#!/usr/bin/env bash
# Study: would constellation-style pre-placement shrink nq's tree? Compiles
# scripts/study/constellations.c (cc -O2, into a temporary directory; not part of the build or the
# tests), walks each N with the border queens placed first (width 1: rows 0, N-1 and columns 0,
# N-1; width 2: two lines on each side), and prints one row per N and width beside nq-solve's node
# count for the same N. Every row's TOTAL, UNIQUE and COUNT2/4/8 are checked against the published
# values (check = ok). No timing is asserted; cpu_s figures are for one core and are only
# comparable within one run.
#
# Columns: canon/all   canonical frames (one per orbit of the square's 8 symmetries) / all frames
#          nodes       visits of the searched rows (W..N-W-1), forced rows included
#          free_nodes  nodes less the visits of forced rows (those holding a frame column's queen:
#                      they can never fail, a kernel would skip them)
#          nq_nodes    nq-solve N --json --threads 1, "nodes" (visits of rows 2..N-1 of the
#                      depth-2 units of the classic corner/side tree)
#          x_nq        free_nodes / nq_nodes (> 1: the frame's tree is larger)
#          plain/8     the plain tree (every board, no symmetry, visits of rows 1..N-1) over 8: the
#                      size a perfect 8-fold symmetry reduction would leave
#          cpu_s       the study's recursive walk (enumeration included), ref_cpu_s nq-solve
#                      --reference (the same style of recursive walk over the classic tree)
# Then the unit counts up to N=28: canonical constellations and their split by rows 1 and N-2.
#
# usage: scripts/study-constellations.sh [N ...]     (default: 8 ... 17)
# env:   BUILD=build    build directory with nq-solve (configured and built if missing)
#        WIDTHS="1 2"   frame widths; W2_MAX=16 the largest N walked with width 2
#        REF_MAX=17     the largest N for which nq-solve --reference is timed (0: none)
#        PLAIN_MAX=16   the largest N for which the plain tree is counted (0: none)
#        CPU=           if set, every run is pinned to this CPU (taskset)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
WIDTHS=${WIDTHS:-"1 2"}
W2_MAX=${W2_MAX:-16}
REF_MAX=${REF_MAX:-17}
PLAIN_MAX=${PLAIN_MAX:-16}
NS=("$@")
[ ${#NS[@]} -gt 0 ] || NS=(8 9 10 11 12 13 14 15 16 17)

SOLVE="$BUILD/nq-solve"
. scripts/lib.sh
need_solve "$BUILD"
PIN=()
[ -z "${CPU:-}" ] || PIN=(taskset -c "$CPU")

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cc -O2 -Wall -Wextra -o "$TMP/constellations" scripts/study/constellations.c
STUDY=$TMP/constellations

# json_nodes: the "nodes" field of nq-solve's --json line on stdin.
json_nodes() { sed -n 's/.*"nodes":\([0-9]*\).*/\1/p'; }

# cpu_of CMD...: run CMD, its stdout to $TMP/out; print its user+sys seconds.
cpu_of() {
  /usr/bin/time -f '%U %S' -o "$TMP/time" "${PIN[@]}" "$@" >"$TMP/out"
  awk '{printf "%.2f", $1 + $2}' "$TMP/time"
}

printf '%3s %2s %8s %9s %15s %15s %15s %15s %6s %6s %8s %9s %5s\n' N W canon all nodes \
  free_nodes nq_nodes plain/8 x_nq x_plain cpu_s ref_cpu_s check
for n in "${NS[@]}"; do
  nq_nodes=$("$SOLVE" "$n" --json --threads 1 | json_nodes)
  ref_cpu=-
  if [ "$n" -le "$REF_MAX" ]; then
    ref_cpu=$(cpu_of "$SOLVE" "$n" --json --threads 1 --reference)
    [ "$(json_nodes <"$TMP/out")" = "$nq_nodes" ] || { echo "reference nodes differ at N=$n" >&2; exit 1; }
  fi
  plain8=-
  if [ "$n" -le "$PLAIN_MAX" ]; then
    "${PIN[@]}" "$STUDY" --plain "$n" >"$TMP/out"
    plain8=$(awk 'NR == 2 {print $3}' "$TMP/out")
  fi
  for w in $WIDTHS; do
    [ "$w" = 1 ] || [ "$n" -le "$W2_MAX" ] || continue
    [ "$n" -ge $((4 * w + 1)) ] || continue
    "${PIN[@]}" "$STUDY" --width "$w" "$n" >"$TMP/out" || true
    # N W all canon sym nodes forced total unique c2 c4 c8 check cpu_s split
    read -r _ _ all canon _ nodes forced _ _ _ _ _ check cpu split < <(awk 'NR == 2' "$TMP/out")
    free=$((nodes - forced))
    awk -v n="$n" -v w="$w" -v canon="$canon" -v all="$all" -v nodes="$nodes" -v free="$free" \
      -v nq="$nq_nodes" -v p8="$plain8" -v cpu="$cpu" -v ref="$ref_cpu" -v check="$check" 'BEGIN {
        xp = (p8 == "-") ? "-" : sprintf("%.2f", free / p8);
        printf "%3d %2d %8d %9d %15.0f %15.0f %15.0f %15s %6.2f %6s %8.2f %9s %5s\n",
          n, w, canon, all, nodes, free, nq, p8, free / nq, xp, cpu, ref, check }'
    [ "$check" = ok ] || { echo "N=$n W=$w: counts differ from the published values" >&2; exit 1; }
  done
done

echo
echo "units (width 1): canonical constellations, and sub-units split by the queens of rows 1, N-2"
"${PIN[@]}" "$STUDY" --units 16 17 18 19 20 21 22 23 24 25 26 27 28
