#!/usr/bin/env bash
# Overhead of nq-client against nq-solve on the same units.
#
#   bash scripts/bench-client.sh BUILD_DIR [N] [DEPTH] [K] [THREADS]
#
# Starts nq-server (quorum 1) for N at DEPTH on a free loopback port, runs one enrolling nq-client
# with --max-units K, and times it from start to exit (TLS, enrolment, get_work round trips,
# journal fsyncs and acks included). Then runs nq-solve --unit on exactly the units the client
# solved (read from its log) and times those. Prints both and the ratio client/solve. Defaults:
# N=20, DEPTH=2 (the first units take 1-3 s each on two cores), K=4, THREADS=online CPUs. Client and solver
# runs alternate NQ_BENCH_REPS times (3) and the best of each is compared.
set -euo pipefail

BIN="$(cd "${1:?usage: bench-client.sh BUILD_DIR [N] [DEPTH] [K] [THREADS]}" && pwd)"
N=${2:-20}
DEPTH=${3:-2}
K=${4:-4}
THREADS=${5:-$(getconf _NPROCESSORS_ONLN)}
for p in nq-server nq-client nq-solve; do
  [ -x "$BIN/$p" ] || { echo "bench-client: $BIN/$p missing"; exit 1; }
done

TMP="$(mktemp -d "${TMPDIR:-/tmp}/nq-bench-client.XXXXXX")"
SRV=""
cleanup() {
  set +e
  [ -n "$SRV" ] && { kill -TERM "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; }
  rm -rf "$TMP"
}
trap cleanup EXIT

now() { date +%s.%N; }

# run_client REP: fresh server + state dir, one client for K units; sets CLIENT (wall s),
# INSIDE (solve seconds from its log) and UNITS (the units it solved).
run_client() {
  local d="$TMP/rep$1" port
  mkdir -p "$d"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
  "$BIN/nq-server" --n "$N" --depth "$DEPTH" --quorum 1 --listen "127.0.0.1:$port" \
    --data "$d/data" >"$d/server.log" 2>&1 &
  SRV=$!
  for i in $(seq 1 100); do grep -q "listening on" "$d/server.log" && break; sleep 0.1; done
  grep -q "listening on" "$d/server.log" || { cat "$d/server.log"; exit 1; }
  local t0 t1
  t0=$(now)
  "$BIN/nq-client" --server "127.0.0.1:$port" --ca "$d/data/ca.pem" \
    --enrol "$(cat "$d/data/enrol.key")" --name bench --threads "$THREADS" --priority normal \
    --state "$d/state" --max-units "$K" --log-level debug 2>"$d/client.log" # the units it solved
  t1=$(now)
  kill -TERM "$SRV"; wait "$SRV" || true; SRV=""
  CLIENT=$(echo "$t1 - $t0" | bc -l)
  UNITS=$(sed -nE 's/.* unit ([0-9]+:[cs]:[0-9]+:[0-9,]+) \(id [0-9]+\) done: .*/\1/p' "$d/client.log")
  INSIDE=$(sed -nE 's/.* done: .* in ([0-9.]+) s .*/\1/p' "$d/client.log" | paste -sd+ | bc -l)
  [ "$(echo "$UNITS" | grep -c :)" -eq "$K" ] ||
    { echo "bench-client: client solved the wrong number of units"; cat "$d/client.log"; exit 1; }
}

# run_solve: nq-solve on each of UNITS, one process per unit; sets SOLVE (wall s, summed).
run_solve() {
  local u s0 s1
  SOLVE=0
  for u in $UNITS; do
    s0=$(now)
    "$BIN/nq-solve" --unit "$u" --threads "$THREADS" --json >/dev/null 2>&1
    s1=$(now)
    SOLVE=$(echo "$SOLVE + $s1 - $s0" | bc -l)
  done
}

min() { echo "if ($1 < $2) $1 else $2" | bc -l; }

# Alternate the two, REPS times, and keep the best of each: the machine may be shared.
REPS=${NQ_BENCH_REPS:-3}
BEST_C=999999; BEST_I=999999; BEST_S=999999; BEST_O=999999; BEST_OP=100
for r in $(seq 1 "$REPS"); do
  run_client "$r"
  run_solve
  printf 'bench-client: rep %s: nq-client %.3f s (solving %.3f s), nq-solve %.3f s\n' \
    "$r" "$CLIENT" "$INSIDE" "$SOLVE"
  BEST_C=$(min "$BEST_C" "$CLIENT"); BEST_I=$(min "$BEST_I" "$INSIDE")
  BEST_S=$(min "$BEST_S" "$SOLVE")
  BEST_O=$(min "$BEST_O" "$(echo "$CLIENT - $INSIDE" | bc -l)")
  BEST_OP=$(min "$BEST_OP" "$(echo "100 * ($CLIENT - $INSIDE) / $CLIENT" | bc -l)")
done

printf 'bench-client: N=%s depth=%s, %s units, %s threads, best of %s\n' "$N" "$DEPTH" "$K" \
  "$THREADS" "$REPS"
printf 'bench-client: nq-solve  %8.3f s (sum over the units, one process each)\n' "$BEST_S"
printf 'bench-client: nq-client %8.3f s wall, start to exit (%.3f s of it solving)\n' "$BEST_C" \
  "$BEST_I"
printf 'bench-client: ratio client/solve = %.3f\n' "$(echo "$BEST_C / $BEST_S" | bc -l)"
# The ratio is at the mercy of machine load; the client's own time outside the solver is not.
printf 'bench-client: client time outside the solver = %.3f s (%.1f%% of its wall time)\n' \
  "$BEST_O" "$BEST_OP"
