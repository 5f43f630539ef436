#!/usr/bin/env bash
# Growth per N of nq-solve and of Kluev's quadrant counter (the peer of bench-solver.sh's second
# table), side by side on two cores, on the same slice of each N for both, so that N=21 and 22 fit
# in minutes: nq-solve counts every PARTS-th unit of N (`nq-solve N --depth DEPTH --sample K/PARTS
# --threads 1`), the peer every PARTS-th row combination (`BIN 1 PARTS K`, its own divider). Each
# N runs twice: slice K=0 with nq-solve on the first CPU and the peer on the second, then slice
# K=PARTS/2 with the CPUs swapped; so each program runs once on each core, beside the other.
# PARTS=1 counts N whole (twice, the CPUs swapped): the side-by-side figure that
# docs/performance.md, "Growth per N", compares.
# ROUNDS=1 runs only the first pairing (nq-solve on CPU A, the peer on CPU B); the b columns and
# the estimates then come from it alone.
#
# Printed per N (user+sys seconds of each process, from /usr/bin/time):
#   nq_a nq_b       nq-solve's two runs (slice K=0 on CPU A, slice PARTS/2 on CPU B)
#   peer_a peer_b   the peer's (slice 0 on CPU B, PARTS/2 on CPU A)
#   nq_est peer_est the whole N's time estimated from the two slices: their mean times PARTS; the
#                   peer's fixed setup (its quarter tables, measured alone as `BIN 1 2000000000 0`,
#                   which counts no combination) is taken off each slice and counted once
#   peer/nq         peer_est / nq_est (> 1: nq-solve is faster)
#   x_nq x_peer     each estimate over the one of the N before it in the list (the growth)
#   nq_MiB peer_MiB the largest resident set of each program's runs (/usr/bin/time's %M)
#   check           ok when every nq-solve run printed a TOTAL above 0 and, with PARTS=1, both
#                   programs' TOTALs equal the published one (a slice's TOTAL has nothing to be
#                   checked against: only all PARTS slices add up to N's)
# A slice's error: units and row combinations differ in size, so two slices of 1/PARTS each are a
# sample; run PARTS=1 at an N both programs count whole to see the sampling error (docs/
# performance.md, "Growth per N": within 4% at N=19-20, 13% for the peer's N=19).
#
# usage: scripts/bench-growth.sh N...
# env:   NQ_PEER_KLUEV   printf pattern of the peer binaries, one %d for N (scripts/build-kluev.sh)
#        BUILD=build     build directory with nq-solve (a Release build for figures)
#        PARTS=64        the slice: 1/PARTS of each N (1: whole N)
#        DEPTH=4         nq-solve's unit depth for the slices
#        CPUS="0 1"      the two CPUs (taskset)
#        KERNEL=auto     NQ_KERNEL for nq-solve
#        ROUNDS=2        2: both pairings; 1: the first only
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PEER=${NQ_PEER_KLUEV:?set NQ_PEER_KLUEV to the peer binaries pattern, e.g. /opt/kluev/kluev-%d}
PARTS=${PARTS:-64}
DEPTH=${DEPTH:-4}
read -r CPU_A CPU_B <<<"${CPUS:-0 1}"
KERNEL=${KERNEL:-auto}
ROUNDS=${ROUNDS:-2}
[ "$ROUNDS" = 1 ] || [ "$ROUNDS" = 2 ] || { echo "ROUNDS: 1 or 2" >&2; exit 2; }
[ $# -gt 0 ] || { echo "usage: $0 N..." >&2; exit 2; }
if ! [[ $PARTS =~ ^[0-9]+$ ]] || [ "$PARTS" -lt 1 ]; then echo "PARTS: a count >= 1" >&2; exit 2; fi
SOLVE="$BUILD/nq-solve"
. scripts/lib.sh
need_solve "$BUILD"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

secs() { awk '{printf "%.2f", $1 + $2}' "$1.time"; }
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { if (x == "" || y <= 0) print "-"; else printf "%.2f", y / x }'; } # X Y: Y/X
mib() { awk '{if ($3 > m) m = $3} END {printf "%.0f", m / 1024}' "$@"; } # FILE.time...

nq_cmd() { # N K
  if [ "$PARTS" = 1 ]; then
    echo env NQ_KERNEL="$KERNEL" "$SOLVE" "$1" --threads 1 --json
  else
    echo env NQ_KERNEL="$KERNEL" "$SOLVE" "$1" --depth "$DEPTH" --sample "$2/$PARTS" --threads 1 --json
  fi
}
peer_cmd() { # BIN K
  if [ "$PARTS" = 1 ]; then echo "$1" 1; else echo "$1" 1 "$PARTS" "$2"; fi
}
json_total() { sed -n 's/.*"total":"\([0-9]*\)".*/\1/p' "$1"; }
peer_total() { sed -n 's/^Result: \([0-9]*\)$/\1/p' "$1"; }

printf '%3s %5s %10s %10s %10s %10s %11s %11s %8s %6s %6s %6s %8s %5s\n' N parts nq_a nq_b peer_a \
  peer_b nq_est peer_est peer/nq x_nq x_peer nq_MiB peer_MiB check
prev_nq="" prev_peer=""
for n in "$@"; do
  # shellcheck disable=SC2059 # NQ_PEER_KLUEV is a printf pattern on purpose
  bin=$(printf "$PEER" "$n")
  [ -x "$bin" ] || { echo "N=$n: no peer binary $bin" >&2; exit 1; }
  setup=0
  if [ "$PARTS" != 1 ]; then
    run_timed "$TMP/setup" "$CPU_A" "$bin" 1 2000000000 0
    wait
    setup=$(secs "$TMP/setup")
  fi
  half=$((PARTS / 2))
  # shellcheck disable=SC2046 # the commands are word lists
  run_timed "$TMP/nq_a" "$CPU_A" $(nq_cmd "$n" 0)
  # shellcheck disable=SC2046
  run_timed "$TMP/peer_a" "$CPU_B" $(peer_cmd "$bin" 0)
  wait
  if [ "$ROUNDS" = 2 ]; then
    # shellcheck disable=SC2046
    run_timed "$TMP/nq_b" "$CPU_B" $(nq_cmd "$n" "$half")
    # shellcheck disable=SC2046
    run_timed "$TMP/peer_b" "$CPU_A" $(peer_cmd "$bin" "$half")
    wait
  else
    for f in nq peer; do cp "$TMP/${f}_a" "$TMP/${f}_b" && cp "$TMP/${f}_a.time" "$TMP/${f}_b.time"; done
  fi
  check=ok
  for f in nq_a nq_b; do
    t=$(json_total "$TMP/$f")
    [ -n "$t" ] && [ "$t" != 0 ] || check=FAIL
    [ "$PARTS" != 1 ] || grep -q '"matches_published":true' "$TMP/$f" || check=FAIL
  done
  if [ "$PARTS" = 1 ]; then
    want=$(json_total "$TMP/nq_a")
    for f in peer_a peer_b; do [ "$(peer_total "$TMP/$f")" = "$want" ] || check=FAIL; done
  fi
  nq_a=$(secs "$TMP/nq_a") nq_b=$(secs "$TMP/nq_b")
  peer_a=$(secs "$TMP/peer_a") peer_b=$(secs "$TMP/peer_b")
  read -r nq_est peer_est < <(awk -v a="$nq_a" -v b="$nq_b" -v pa="$peer_a" -v pb="$peer_b" \
    -v s="$setup" -v p="$PARTS" 'BEGIN {
      if (p == 1) { printf "%.2f %.2f\n", (a + b) / 2, (pa + pb) / 2; exit }
      printf "%.2f %.2f\n", (a + b) / 2 * p, ((pa - s) + (pb - s)) / 2 * p + s }')
  printf '%3d %5d %10s %10s %10s %10s %11s %11s %8s %6s %6s %6s %8s %5s\n' "$n" "$PARTS" "$nq_a" \
    "$nq_b" "$peer_a" "$peer_b" "$nq_est" "$peer_est" "$(ratio "$nq_est" "$peer_est")" \
    "$(ratio "$prev_nq" "$nq_est")" "$(ratio "$prev_peer" "$peer_est")" \
    "$(mib "$TMP/nq_a.time" "$TMP/nq_b.time")" "$(mib "$TMP/peer_a.time" "$TMP/peer_b.time")" "$check"
  prev_nq=$nq_est prev_peer=$peer_est
done
