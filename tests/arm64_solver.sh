#!/usr/bin/env bash
# The arm64 build's solver under emulation (scripts/build-arm64.sh --test): the solver suites
# (test_solver, test_solver_fast: every kernel this CPU can run, neon included, against the
# reference unit by unit, N <= 14; test_unit) run on the aarch64 binaries under
# qemu-aarch64-static, and build-arm64/nq-solve 13 --json must say kernel "neon", TOTAL 73712 and
# the same node count as an x86 nq-solve (when one is built). Emulation times mean nothing.
#
#   bash tests/arm64_solver.sh ARM64_BUILD [X86_NQ_SOLVE]
set -euo pipefail
ARM="$(cd "${1:?usage: arm64_solver.sh ARM64_BUILD [X86_NQ_SOLVE]}" && pwd)"
X86=${2:-}
TAG=arm64_solver
QEMU=${NQ_QEMU:-qemu-aarch64-static}
command -v "$QEMU" >/dev/null || { echo "$TAG: $QEMU missing (scripts/build-arm64.sh installs it)"; exit 1; }
fail() { echo "$TAG: FAIL: $*"; exit 1; }

for t in test_unit test_solver_fast test_solver; do
  [ -x "$ARM/$t" ] || fail "$ARM/$t missing (configure with -DNQ_SOLVER_TESTS=ON)"
  s=$SECONDS
  (cd "$ARM" && CK_DEFAULT_TIMEOUT=1500 "$QEMU" "./$t") >"$ARM/$t.qemu.log" 2>&1 ||
    { tail -n 20 "$ARM/$t.qemu.log"; fail "$t under qemu"; }
  echo "$TAG: $t: $(grep -E '^[0-9]+%: Checks' "$ARM/$t.qemu.log") ($((SECONDS - s)) s under qemu)"
done

json=$(NQ_KERNEL=neon "$QEMU" "$ARM/nq-solve" 13 --json)
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$json" "$1"; }
[ "$(field kernel)" = neon ] || fail "nq-solve 13 ran kernel $(field kernel), want neon: $json"
[ "$(field total)" = 73712 ] || fail "nq-solve 13: TOTAL $(field total), want 73712"
nodes=$(field nodes)
if [ -n "$X86" ] && [ -x "$X86" ]; then
  x=$("$X86" 13 --json)
  xn=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["nodes"])' "$x")
  [ "$nodes" = "$xn" ] || fail "nq-solve 13: arm64 nodes $nodes, x86 $xn"
  echo "$TAG: nq-solve 13: TOTAL 73712, kernel neon, nodes $nodes (x86: $xn)"
else
  echo "$TAG: nq-solve 13: TOTAL 73712, kernel neon, nodes $nodes (no x86 nq-solve to compare)"
fi
