#!/usr/bin/env bash
# Benchmark a reconnect storm: CONNS clients connected to nq-server (each enrolled, its
# TLS session idle), then the server is killed with SIGKILL and started again on the same data
# directory. Every client comes back as nq-client does -- jittered exponential backoff from 0.5 s
# (nq-loadgen --reconnect), with its token, a full TLS handshake each -- and the script measures
# the time from the restart command until every client is welcomed again, the server's peak RSS
# over that time (VmHWM of the new process) per connection, and how the clients fared (attempts,
# `busy` refusals, the time each took to come back). Nobody gives up: the run fails if not every
# client is back within LIMIT seconds.
#
#   scripts/bench-storm.sh [BUILD_DIR] [CONNS] [ROUNDS] [LIMIT]   (defaults: build 2000 1 300)
#
# Loopback only (127.0.0.1), one private port and data directory under $TMPDIR. The per-address
# limits (pre-auth connections, enrolments) are lifted, since every client comes from 127.0.0.1;
# --max-conns is CONNS + 64. Prints one "storm:" line per round.
set -euo pipefail

BIN=${1:-build}
CONNS=${2:-2000}
ROUNDS=${3:-1}
LIMIT=${4:-300}
for p in nq-server nq-loadgen; do
  [ -x "$BIN/$p" ] || { echo "bench-storm: $BIN/$p not built" >&2; exit 2; }
done
need=$((CONNS + 200))
[ "$(ulimit -n)" -ge "$need" ] || ulimit -n "$need" 2>/dev/null ||
  { echo "bench-storm: needs ulimit -n >= $need" >&2; exit 2; }

DIR=$(mktemp -d "${TMPDIR:-/tmp}/nq-bench-storm.XXXXXX")
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SRV=
LG=
cleanup() {
  [ -n "$LG" ] && kill "$LG" 2>/dev/null || true
  [ -n "$SRV" ] && kill -9 "$SRV" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT

now_ms() { date +%s%3N; }
kb() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

start_server() {
  NQ_LOG_LEVEL=warn "$BIN/nq-server" --n 18 --depth 4 --quorum 1 --max-results 1 \
    --listen "127.0.0.1:$PORT" --data "$DIR/data" --http off --max-conns $((CONNS + 64)) \
    --max-preauth-per-addr 0 --enrol-per-addr 0 --hello-timeout 60 --idle-timeout 0 \
    >>"$DIR/server.log" 2>&1 &
  SRV=$!
}
wait_listening() {
  for _ in $(seq 1 600); do
    if [ -s "$DIR/data/enrol.key" ] && (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
      return 0
    fi
    kill -0 "$SRV" 2>/dev/null || { cat "$DIR/server.log" >&2; exit 1; }
    sleep 0.05
  done
  echo "bench-storm: server did not start" >&2
  exit 1
}
# wait_back K: the loadgen's K-th "all N welcomed again" line; prints its wall ms.
wait_back() {
  local k=$1 t0=$SECONDS line
  while :; do
    line=$(grep "welcomed again" "$DIR/lg.out" | sed -n "${k}p" || true)
    [ -n "$line" ] && { sed -E 's/.*wall ([0-9]+) ms.*/\1/' <<<"$line"; return 0; }
    kill -0 "$LG" 2>/dev/null || { echo "bench-storm: nq-loadgen exited" >&2; cat "$DIR/lg.out" >&2; exit 1; }
    [ $((SECONDS - t0)) -lt "$LIMIT" ] || { echo "bench-storm: not every client was back within $LIMIT s" >&2; exit 1; }
    # The peak of the new server while the clients come back.
    sleep 0.05
  done
}

start_server
wait_listening
"$BIN/nq-loadgen" --server "127.0.0.1:$PORT" --ca "$DIR/data/ca.pem" \
  --enrol-file "$DIR/data/enrol.key" --conns "$CONNS" --idle --reconnect --seconds 3600 \
  --stop-after $((ROUNDS + 1)) >"$DIR/lg.out" 2>"$DIR/lg.err" &
LG=$!
wait_back 1 >/dev/null
echo "bench-storm: $CONNS clients enrolled and connected; server RSS $(($(kb "$SRV" VmRSS) / 1024)) MiB"

for r in $(seq 1 "$ROUNDS"); do
  kill -9 "$SRV"
  wait "$SRV" 2>/dev/null || true
  t_restart=$(now_ms)
  start_server
  wait_listening
  t_listen=$(now_ms)
  base=$(kb "$SRV" VmRSS)
  t_back=$(wait_back $((r + 1)))
  hwm=$(kb "$SRV" VmHWM)
  rss=$(kb "$SRV" VmRSS)
  echo "storm: round=$r conns=$CONNS reserve_s=$(awk -v a="$t_back" -v b="$t_restart" 'BEGIN{printf "%.2f", (a-b)/1000}')" \
       "listening_after_s=$(awk -v a="$t_listen" -v b="$t_restart" 'BEGIN{printf "%.2f", (a-b)/1000}')" \
       "rss_start_mib=$((base / 1024)) peak_rss_mib=$((hwm / 1024)) rss_after_mib=$((rss / 1024))" \
       "peak_kib_per_conn=$(( (hwm - base) / CONNS ))"
done
wait "$LG" || true
LG=
echo "loadgen: $(tail -n 1 "$DIR/lg.out")"
