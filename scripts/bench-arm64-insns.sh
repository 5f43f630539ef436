#!/usr/bin/env bash
# Instructions per node of the arm64 kernels, counted under qemu (no arm64 hardware needed; times
# under emulation mean nothing, instruction counts do): build-arm64/nq-solve N on one thread under
# qemu-aarch64-static -singlestep -d exec,nochain, which logs one "Trace" line per guest
# instruction executed, for each kernel (NQ_KERNEL=neon, scalar), minus the same for N=8 (start-up
# and the small N's own work), divided by the node difference. Printed with the ratio scalar/neon.
# Then, for calibration, the same count for the x86 build's scalar and avx2 kernels under
# qemu-x86_64-static -cpu max (NQ_X86_BUILD, default build/), beside their real times at N=17 on
# this machine: how an instruction ratio turned into a speed ratio where both are known.
# An instruction count is not a cycle count: on a real core the neon kernel's table lookups and
# cross-lane adds cost more than one cycle each (docs/performance.md, "The arm64 kernel").
#
#   bash scripts/bench-arm64-insns.sh [N]     (default N=13; needs build-arm64/, bash
#                                              scripts/build-arm64.sh; N=13 takes ~8 min)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-13}
SOLVE=build-arm64/nq-solve
QEMU=${NQ_QEMU:-qemu-aarch64-static}
[ -x "$SOLVE" ] || { echo "bench-arm64-insns: $SOLVE missing: bash scripts/build-arm64.sh" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
count() { # QEMU SOLVE KERNEL N -> "instructions nodes"
  mkfifo "$TMP/fifo"
  grep -c "^Trace" <"$TMP/fifo" >"$TMP/count" &
  NQ_KERNEL=$3 $1 -singlestep -d exec,nochain -D "$TMP/fifo" "$2" "$4" --threads 1 --json \
    >"$TMP/out.json" 2>/dev/null
  wait
  rm -f "$TMP/fifo"
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["kernel"]==sys.argv[2], j
print(open(sys.argv[3]).read().strip(), j["nodes"])' "$TMP/out.json" "$3" "$TMP/count"
}
declare -A per
run() { # LABEL QEMU SOLVE KERNEL
  local i0 n0 i1 n1
  read -r i0 n0 <<<"$(count "$2" "$3" "$4" 8)"
  read -r i1 n1 <<<"$(count "$2" "$3" "$4" "$N")"
  per[$1]=$(python3 -c "print('%.2f' % (($i1 - $i0) / ($n1 - $n0)))")
  echo "$1: N=$N $i1 instructions, $n1 nodes; N=8 $i0, $n0; ${per[$1]} instructions per node"
}
run arm64-scalar "$QEMU" "$SOLVE" scalar
run arm64-neon "$QEMU" "$SOLVE" neon
python3 -c "print('arm64 scalar/neon: %.2fx the instructions per node' % (${per[arm64-scalar]} / ${per[arm64-neon]}))"
# The same count for the x86 build's scalar and avx2 kernels (qemu's TCG has AVX2, not AVX-512),
# beside their real speed on this machine: how an instruction ratio turned into a speed ratio.
X86=${NQ_X86_BUILD:-build}/nq-solve
if [ -x "$X86" ] && command -v qemu-x86_64-static >/dev/null; then
  run x86-scalar "qemu-x86_64-static -cpu max" "$X86" scalar
  run x86-avx2 "qemu-x86_64-static -cpu max" "$X86" avx2
  python3 -c "print('x86 scalar/avx2: %.2fx the instructions per node' % (${per[x86-scalar]} / ${per[x86-avx2]}))"
  for k in scalar avx2; do
    NQ_KERNEL=$k "$X86" 17 --threads 1 --json >"$TMP/$k.json" 2>/dev/null
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["kernel"]==sys.argv[2]
print("x86 %s, this machine: N=17 %.3f s, %s nodes" % (sys.argv[2], j["seconds"], j["nodes"]))' "$TMP/$k.json" "$k"
  done
  python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["seconds"]; b=json.load(open(sys.argv[2]))["seconds"]
print("x86 scalar/avx2 on this machine: %.2fx the time (N=17, one thread)" % (a / b))' "$TMP/scalar.json" "$TMP/avx2.json"
fi
