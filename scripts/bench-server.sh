#!/usr/bin/env bash
# Benchmark nq-server: results/s with many concurrent TLS clients reporting tiny (fake) results,
# the server's CPU time per 1000 results, and resident memory per idle authenticated connection.
#
#   scripts/bench-server.sh [BUILD_DIR] [CONNS] [SECONDS]     (defaults: build 200 10)
#
# The server runs N=18 at depth 4 (12936 units) with quorum 1 on a private port and data dir under
# $TMPDIR; nq-loadgen (tools/loadgen_main.c) drives it. Results are fake (c2=c4=c8=0, nodes=1), so
# the final totals are wrong on purpose: this measures the server, not the solver.
set -euo pipefail

BIN=${1:-build}
CONNS=${2:-200}
SECS=${3:-10}
for p in nq-server nq-loadgen; do
  [ -x "$BIN/$p" ] || { echo "bench-server: $BIN/$p not built" >&2; exit 2; }
done

DIR=$(mktemp -d "${TMPDIR:-/tmp}/nq-bench-server.XXXXXX")
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SRV=
cleanup() {
  [ -n "$SRV" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# Every load connection comes from 127.0.0.1 and enrols: lift the per-address limits (a server
# built before them does not know the flags).
# (The help is read whole first: `--help | grep -q` under pipefail fails whenever grep quits
# before nq-server has written the rest, which dropped the flags in some runs and left 196 of 200
# connections refused by the limits.)
LIMITS=()
HELP=$("$BIN/nq-server" --help)
if grep -q -- --max-preauth-per-addr <<<"$HELP"; then
  LIMITS=(--max-preauth-per-addr 0 --enrol-per-addr 0)
fi

start_server() {
  NQ_LOG_LEVEL=info "$BIN/nq-server" --n 18 --depth 4 --quorum 1 --max-results 1 \
    --listen "127.0.0.1:$PORT" --data "$DIR/data" --max-outstanding 64 \
    --max-conns $((CONNS + 16)) "${LIMITS[@]}" >>"$DIR/server.log" 2>&1 &
  SRV=$!
  for _ in $(seq 1 300); do
    if [ -s "$DIR/data/enrol.key" ] && (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
      return 0
    fi
    kill -0 "$SRV" 2>/dev/null || { cat "$DIR/server.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "bench-server: server did not start" >&2
  exit 1
}

LG=("$BIN/nq-loadgen" --server "127.0.0.1:$PORT" --ca "$DIR/data/ca.pem"
    --enrol-file "$DIR/data/enrol.key" --conns "$CONNS")

start_server
sleep 0.5
BASE=$(rss_kb "$SRV")

# Memory: CONNS authenticated connections that stay idle.
"${LG[@]}" --idle --seconds 6 >"$DIR/idle.out" &
LGP=$!
sleep 4
HELD=$(rss_kb "$SRV")
wait "$LGP" || true

# Throughput: CONNS clients fetching up to 16 units at a time and reporting them all at once.
# The server's own CPU time over that run (utime + stime) is the figure least moved by other
# processes on a shared machine: wall-clock results/s is at the mercy of the load.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
C0=$(cpu_ticks "$SRV")
"${LG[@]}" --want 16 --seconds "$SECS" | tee "$DIR/run.out"
C1=$(cpu_ticks "$SRV")
ACKS=$(grep -o 'acks=[0-9]*' "$DIR/run.out" | cut -d= -f2)
awk -v t=$((C1 - C0)) -v hz="$(getconf CLK_TCK)" -v n="${ACKS:-0}" 'BEGIN {
  printf "server CPU: %.2f s for %d results, %.1f ms per 1000 results\n", t / hz, n,
         (n > 0 ? 1e6 * t / hz / n : 0) }'

echo "server RSS: idle ${BASE} KiB, with ${CONNS} idle connections ${HELD} KiB," \
  "per connection $(( (HELD - BASE) / CONNS )) KiB"
grep -o 'results_per_s=[0-9]*' "$DIR/run.out" | sed 's/^/throughput: /'
kill -TERM "$SRV" && wait "$SRV" || true
SRV=
grep -o 'shutdown:.*' "$DIR/server.log" || true
if grep -E 'ERROR|WARN' "$DIR/server.log" | grep -v 'published TOTAL' | head -5 | grep .; then
  echo "(server warnings above)"
fi
