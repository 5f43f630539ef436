#!/usr/bin/env bash
# Benchmark: what the public status page costs the server. nq-server's results/s with many TLS
# clients reporting tiny (fake) results (nq-loadgen), without and with a scraper fetching /metrics
# and / ten times a second each, in alternating rounds of one run, reported as a ratio
# (target >= 0.95: the page must not slow the count down). Then the server's CPU time per page,
# measured alone (the figure least moved by a busy machine).
#
#   scripts/bench-web.sh [BUILD_DIR] [CONNS] [SECONDS] [ROUNDS]   (defaults: build 100 8 3)
#
# The server runs N=18 at depth 5 with quorum 1 on private ports and a data dir under $TMPDIR.
set -euo pipefail

BIN=${1:-build}
CONNS=${2:-100}
SECS=${3:-8}
ROUNDS=${4:-3}
for p in nq-server nq-loadgen; do
  [ -x "$BIN/$p" ] || { echo "bench-web: $BIN/$p not built" >&2; exit 2; }
done
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

DIR=$(mktemp -d "${TMPDIR:-/tmp}/nq-bench-web.XXXXXX")
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
HTTP=$(free_port)
SRV=
SCR=
cleanup() {
  [ -n "$SCR" ] && kill "$SCR" 2>/dev/null || true
  [ -n "$SRV" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null || true
  [ -n "${NQ_BENCH_KEEP:-}" ] && echo "kept $DIR" || rm -rf "$DIR"
}
trap cleanup EXIT

"$BIN/nq-server" --n 18 --depth 5 --quorum 1 --max-results 1 --listen "127.0.0.1:$PORT" \
  --http "127.0.0.1:$HTTP" --data "$DIR/data" --max-outstanding 64 \
  --max-conns $((CONNS + 16)) --max-preauth-per-addr 0 --enrol-per-addr 0 \
  >>"$DIR/server.log" 2>&1 &
SRV=$!
for _ in $(seq 1 600); do
  if [ -s "$DIR/data/enrol.key" ] && (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then break; fi
  kill -0 "$SRV" 2>/dev/null || { cat "$DIR/server.log" >&2; exit 1; }
  sleep 0.1
done

LG=("$BIN/nq-loadgen" --server "127.0.0.1:$PORT" --ca "$DIR/data/ca.pem"
    --enrol-file "$DIR/data/enrol.key" --conns "$CONNS" --want 16 --seconds "$SECS")

# The scraper: /metrics and / every 100 ms each on one keep-alive connection (as Prometheus
# does); it prints how many pages it fetched when stopped.
scraper() {
  exec "$PY" - "127.0.0.1:$HTTP" <<'PYEOF'
import http.client, signal, sys, time
host, port = sys.argv[1].split(":")
n = 0
def stop(*_):
    print("scraped=%d" % n, flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
conn = http.client.HTTPConnection(host, int(port), timeout=10)
t = time.monotonic()
while True:
    for path in ("/metrics", "/"):
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        assert r.status == 200, r.status
        n += 1
    t += 0.1
    time.sleep(max(0, t - time.monotonic()))
PYEOF
}

# One loadgen run: "RESULTS_PER_S CPU_MS_PER_1000" (the server's utime + stime over the run per
# 1000 results: the figure least moved by other processes on a shared machine).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$SRV/stat"; }
run() {
  local c0 c1 out
  c0=$(cpu_ticks)
  out=$("${LG[@]}")
  c1=$(cpu_ticks)
  awk -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v o="$out" 'BEGIN {
    match(o, /results_per_s=[0-9]+/); r = substr(o, RSTART + 14, RLENGTH - 14)
    match(o, /acks=[0-9]+/); a = substr(o, RSTART + 5, RLENGTH - 5)
    printf "%d %.1f\n", r, (a > 0 ? 1e6 * t / hz / a : 0) }'
}
bsum=0 ssum=0 bcpu=0 scpu=0
for r in $(seq 1 "$ROUNDS"); do
  read -r b bc <<<"$(run)"
  scraper >"$DIR/scraper.out" &
  SCR=$!
  sleep 0.5
  read -r s sc <<<"$(run)"
  kill -TERM "$SCR"
  wait "$SCR" || true
  SCR=
  echo "round $r: without scraper ${b} results/s (${bc} ms CPU/1000), with ${s} results/s" \
    "(${sc} ms CPU/1000; $(cat "$DIR/scraper.out") pages)"
  bsum=$((bsum + b)) ssum=$((ssum + s))
  bcpu=$(awk -v a="$bcpu" -v b="$bc" 'BEGIN { print a + b }')
  scpu=$(awk -v a="$scpu" -v b="$sc" 'BEGIN { print a + b }')
done
awk -v b="$bsum" -v s="$ssum" -v bc="$bcpu" -v sc="$scpu" 'BEGIN {
  printf "ratio results/s (with / without scraper): %.3f\n", (b > 0 ? s / b : 0)
  printf "ratio server CPU per result (without / with scraper): %.3f\n", (sc > 0 ? bc / sc : 0) }'

# The cost of one page to the server alone: its CPU time over 500 fetches each of /metrics and /
# (keep-alive, no load), per page; 20 pages a second cost 20 times that each second.
c0=$(cpu_ticks)
"$PY" - "$HTTP" <<'PYEOF'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
for _ in range(500):
    for path in ("/metrics", "/"):
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        assert r.status == 200
PYEOF
c1=$(cpu_ticks)
awk -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" 'BEGIN {
  printf "server CPU per page (/metrics and / alternately, 1000 pages): %.3f ms;", 1000 * t / hz / 1000
  printf " 20 pages/s = %.2f%% of one core\n", 100 * 20 * t / hz / 1000 }'

