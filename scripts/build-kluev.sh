#!/usr/bin/env bash
# Builds Kluev's quadrant counter (github EvgenyKluev/N-Queens-Count-Sol, the peer of
# scripts/bench-solver.sh's second table) once per board size, with the settings its own
# solcounter.h lists for that size. Its board size and tuning are compile-time constants, so each
# N gets a copy of the sources with those lines edited; the checkout itself is not changed.
#
#   scripts/build-kluev.sh SRC OUT [N...]    (N in 16..22; default: 16..21)
#
# SRC is a checkout of that repository (tested with commit 580f444), OUT the directory that gets
# OUT/kluev-N; then `NQ_PEER_KLUEV=OUT/kluev-%d scripts/bench-solver.sh N...`.
# Settings per N (its solcounter.h table): sieveCuts 0 for N <= 19, 3 for N = 20, 21 and 6 for
# N = 22; matchMinSize 40, 60 and 80 likewise; at N = 22 the quarters use its row symmetry
# (QRowSymmetry, the table's "RowS"), below that none. BMI2 intrinsics (pdep/pext) and the
# prefetch instruction are on for every N (BMI=0 or PREFETCH=0 turns one off); the program takes
# its thread count as its first argument (bench-solver.sh passes 1).
# Environment: CXX (default g++, GCC >= 11: the sources need C++20 as GCC implements it),
#              CXXFLAGS (default -O3 -march=native), BMI=1, PREFETCH=1.
set -euo pipefail

usage() { echo "usage: $0 SRC OUT [N...]   (N in 16..22)" >&2; exit 2; }
[ $# -ge 2 ] || usage
src=$1 out=$2
shift 2
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(16 17 18 19 20 21)

CXX=${CXX:-g++}
CXXFLAGS=${CXXFLAGS:--O3 -march=native}
BMI=${BMI:-1}
PREFETCH=${PREFETCH:-1}

for f in main.cpp solcounter.h bmintrin.h prefetch.h bmi2.h prefetchx86.h; do
  [ -f "$src/$f" ] || { echo "$0: $src/$f missing: is $src a checkout of N-Queens-Count-Sol?" >&2; exit 1; }
done
grep -q '^inline constexpr int size = [0-9]*;' "$src/solcounter.h" ||
  { echo "$0: $src/solcounter.h has no 'inline constexpr int size = ...;' line" >&2; exit 1; }
major=$("$CXX" -dumpversion 2>/dev/null | cut -d. -f1)
case $major in
  '' | *[!0-9]*) echo "$0: cannot run $CXX" >&2; exit 1 ;;
esac
[ "$major" -ge 11 ] || { echo "$0: $CXX is GCC $major; the sources need GCC >= 11" >&2; exit 1; }
settings() { # N -> cuts, minsize
  case $1 in
    16 | 17 | 18 | 19) cuts=0 minsize=40 symm=QNoSymmetry ;;
    20 | 21) cuts=3 minsize=60 symm=QNoSymmetry ;;
    22) cuts=6 minsize=80 symm=QRowSymmetry ;;
    *) echo "$0: N=$1: only 16..22 have settings here" >&2; exit 2 ;;
  esac
}
for n in "${sizes[@]}"; do settings "$n"; done
bool() { if [ "$1" = 1 ]; then echo true; else echo false; fi; }

mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in "${sizes[@]}"; do
  settings "$n"
  d=$tmp/$n
  mkdir -p "$d"
  cp "$src"/*.h "$src/main.cpp" "$d/"
  sed -i -e "s/^inline constexpr int size = [0-9]*;/inline constexpr int size = $n;/" \
    -e "s/\.sieveCuts = [0-9]*,/.sieveCuts = $cuts,/" \
    -e "s/\.matchMinSize = [0-9]*,/.matchMinSize = $minsize,/" \
    -e "s/\.bmiIntrin = [a-z]*,/.bmiIntrin = $(bool "$BMI"),/" \
    -e "s/\.prefetch = [a-z]*,/.prefetch = $(bool "$PREFETCH"),/" \
    -e "s/Subsquare<size \/ 2, Q[A-Za-z]*,/Subsquare<size \/ 2, $symm,/" "$d/solcounter.h"
  [ "$BMI" = 1 ] && sed -i 's|^//#include "bmi2.h"|#include "bmi2.h"|' "$d/bmintrin.h"
  [ "$PREFETCH" = 1 ] && sed -i 's|^//#include "prefetchx86.h"|#include "prefetchx86.h"|' "$d/prefetch.h"
  # every edit must have taken, or the binary would silently count another board or setting
  if ! grep -q "^inline constexpr int size = $n;" "$d/solcounter.h" ||
    ! grep -q "\.sieveCuts = $cuts," "$d/solcounter.h" ||
    ! grep -q "\.matchMinSize = $minsize," "$d/solcounter.h" ||
    ! grep -q "Subsquare<size / 2, $symm," "$d/solcounter.h" ||
    { [ "$BMI" = 1 ] && ! grep -q '^#include "bmi2.h"' "$d/bmintrin.h"; } ||
    { [ "$PREFETCH" = 1 ] && ! grep -q '^#include "prefetchx86.h"' "$d/prefetch.h"; }; then
    echo "$0: N=$n: could not set the sources' settings (another version of them?)" >&2
    exit 1
  fi
  echo "kluev-$n: size $n, sieveCuts $cuts, matchMinSize $minsize, quarters $symm, bmi $BMI, prefetch $PREFETCH"
  # shellcheck disable=SC2086 # CXXFLAGS is a list of flags
  "$CXX" -std=c++20 $CXXFLAGS -o "$out/kluev-$n" "$d/main.cpp"
done
