#!/usr/bin/env bash
# A mixed job under emulation (scripts/build-arm64.sh --test): an x86 nq-server runs N=12 with a
# quorum of two distinct clients, one x86 nq-client and one arm64 nq-client (the static aarch64
# binary under qemu-aarch64-static, NQ_KERNEL=neon); the job must end with the published TOTAL and
# UNIQUE (every unit verified by the two clients' results agreeing, counts and node counts), and
# both clients must have solved units (their "the job is done (K unit(s) solved here)" lines, K > 0).
#
#   bash tests/arm64_e2e.sh X86_BUILD ARM64_BUILD
set -euo pipefail
BIN="$(cd "${1:?usage: arm64_e2e.sh X86_BUILD ARM64_BUILD}" && pwd)"
ARM="$(cd "${2:?usage: arm64_e2e.sh X86_BUILD ARM64_BUILD}" && pwd)"
QEMU=${NQ_QEMU:-qemu-aarch64-static}
TAG=arm64_e2e
. "$(dirname "$0")/lib_e2e.sh"
e2e_init arm64
for p in "$BIN/nq-server" "$BIN/nq-client" "$ARM/nq-client"; do
  [ -x "$p" ] || fail "$p missing"
done
command -v "$QEMU" >/dev/null || fail "$QEMU missing"

D="$TMP/mixed"
mkdir -p "$D"
PORT=$(free_port)
# two clients, a quorum of two distinct ones: each of them solves every unit, and the server
# verifies a unit only when the x86 and the arm64 results agree
e2e_start_server "$D" "$PORT" --n 12 --depth 3 --quorum 2 --quorum-distinct client --exit-when-done
KEY="$(cat "$D/data/enrol.key")"
"$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" --enrol "$KEY" --name x86 \
  --threads 1 --priority normal --state "$D/state-x86" >>"$D/client-x86.log" 2>&1 &
PIDS+=("$!")
NQ_KERNEL=neon "$QEMU" "$ARM/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" \
  --enrol "$KEY" --name arm64 --threads 1 --priority normal --state "$D/state-arm64" \
  >>"$D/client-arm64.log" 2>&1 &
PIDS+=("$!")
wait_server_exit 300
check_done "$D" 12
for c in x86 arm64; do
  line=$(grep -E "the job is done \([0-9]+ unit\(s\) solved here\)" "$D/client-$c.log" | tail -n 1)
  k=$(sed -E 's/.*\(([0-9]+) unit.*/\1/' <<<"$line")
  [ -n "$k" ] && [ "$k" -gt 0 ] || fail "the $c client solved no unit (${line:-no final line})"
  say "$c client: $k unit(s)"
done
grep -q "kernel neon" "$D/client-arm64.log" || fail "the arm64 client did not say it runs kernel neon"
say "PASS"
