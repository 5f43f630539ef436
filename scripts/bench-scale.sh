#!/usr/bin/env bash
# Record-scale store benchmark: for each size, a fresh data directory and an N=28 job
# created by nq-server, then 500 concurrent clients (nq-loadgen, fake results) and one operator
# asking for the status. Reports, per size:
#
#   create     seconds from the server's start to the job's last batch (its progress lines),
#              units per second, and the server's CPU seconds (user + system, all threads) by
#              then: the figure a busy shared machine moves least (the plan and the inserts run
#              on two threads, so on two idle cores the wall time nears the larger share)
#   disk       bytes of the data directory's store (nq.db + WAL) per unit
#   rss        the server's peak resident memory (VmHWM) after creation, and after the load
#   get_work   p50 / p99 / max latency, request to `work` (nq-loadgen, paced: every client asks
#              about once per THINK ms and reports its unit at once; requests sent once every
#              connection was welcomed, so the 500 handshakes at the start are not counted)
#   result     p50 / p99 / max latency, result to its ack
#   cpu/req    the server's CPU (user + system) during the load, the 500 handshakes included,
#              per request counted (get_work, result, status): comparable between sizes, and
#              less moved than latencies by other work on a busy machine (mostly queueing there)
#   status     p50 / p99 / max latency of the admin `status` request during the load, and of
#              `nq-admin units --state leased` once after it (remote, a new TLS connection)
#
# Targets: 30M units created in <= 5 minutes with < 256 MiB RSS and <= 120 bytes per
# unit; get_work/result p99 <= 10 ms; status <= 100 ms.
#
#   scripts/bench-scale.sh [DEPTH...]      (default: 4 5)
#
# N=28 has 125,866 units at depth 4 (the shallowest the 64-bit guard allows), 2,098,052 at 5 and
# 31,462,358 at 6. Depth 4 is the baseline of the run: the same load on a job 17x / 250x smaller,
# measured under the same conditions (a shared machine's load moves every latency).
#   Environment: NQ_BUILD_DIR (default build), NQ_SCALE_N (default 28), NQ_SCALE_CONNS (500),
#                NQ_SCALE_SECONDS (20, the load's length), NQ_SCALE_THINK (1000 ms),
#                TMPDIR (where the data directories go: needs about 4 GB for depth 6).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${NQ_BUILD_DIR:-build}
N=${NQ_SCALE_N:-28}
CONNS=${NQ_SCALE_CONNS:-500}
SECS=${NQ_SCALE_SECONDS:-20}
THINK=${NQ_SCALE_THINK:-1000}
DEPTHS=("$@")
[ ${#DEPTHS[@]} -gt 0 ] || DEPTHS=(4 5)
for d in "${DEPTHS[@]}"; do
  case "$d" in ''|*[!0-9]*) echo "bench-scale: a depth is a number, got '$d'" >&2; exit 2 ;; esac
done
for p in nq-server nq-loadgen nq-admin; do
  [ -x "$BIN/$p" ] || { echo "bench-scale: $BIN/$p is not built" >&2; exit 2; }
done
BIN=$(cd "$BIN" && pwd)

DIR=$(mktemp -d "${TMPDIR:-/tmp}/nq-bench-scale.XXXXXX")
SRV=
cleanup() {
  if [ -n "$SRV" ]; then kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; fi
  rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
kb() { awk -v k="$2" '$1 == k ":" {print $2}' "/proc/$1/status"; }
# cpu PID: user + system seconds of the process so far.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$1/stat"; }
field() { tr ' ' '\n' <"$1" | awk -F= -v k="$2" '$1 == k {print $2}'; }
now() { date +%s.%N; }

echo "== bench-scale: N=$N, depths ${DEPTHS[*]}, $CONNS clients (think $THINK ms) for $SECS s =="
for D in "${DEPTHS[@]}"; do
  W="$DIR/d$D"
  mkdir -p "$W"
  PORT=$(free_port)
  T0=$(now)
  # Every loadgen client enrols from 127.0.0.1 with the server's key (one owner): the
  # per-address limits and the quorum by owner are lifted for the benchmark.
  NQ_LOG_LEVEL=info "$BIN/nq-server" --n "$N" --depth "$D" --quorum 2 --listen "127.0.0.1:$PORT" \
    --data "$W/data" --max-conns $((CONNS + 64)) --max-preauth-per-addr 0 --enrol-per-addr 0 \
    --quorum-distinct client >"$W/server.out" 2>"$W/server.log" &
  SRV=$!
  until grep -q "listening on" "$W/server.out" 2>/dev/null; do
    kill -0 "$SRV" 2>/dev/null || { tail -5 "$W/server.log" >&2; exit 1; }
    sleep 0.2
  done
  T1=$(now)
  UNITS=$(sed -n 's/^job:.* units=\([0-9]*\).*/\1/p' "$W/server.out")
  CREATE=$(grep -o "units (all), about [0-9]*% of the search tree, [0-9.]* s" "$W/server.log" |
           awk '{print $(NF-1)}' | tail -1)
  [ -n "$CREATE" ] || CREATE=$(awk -v a="$T0" -v b="$T1" 'BEGIN {printf "%.1f", b - a}')
  HWM_CREATE=$(kb "$SRV" VmHWM)
  CPU_CREATE=$(cpu "$SRV")
  BYTES=$(du -cb "$W/data/nq.db"* | awk 'END {print $1}')
  printf "depth %d: %d units\n" "$D" "$UNITS"
  printf "  create    %.1f s (%.0f units/s; start to listening %.1f s); server CPU %s s (%.2f us/unit)\n" \
    "$CREATE" "$(awk -v u="$UNITS" -v s="$CREATE" 'BEGIN {print (s > 0 ? u / s : 0)}')" \
    "$(awk -v a="$T0" -v b="$T1" 'BEGIN {print b - a}')" "$CPU_CREATE" \
    "$(awk -v c="$CPU_CREATE" -v u="$UNITS" 'BEGIN {print 1e6 * c / u}')"
  printf "  disk      %d bytes, %.1f bytes/unit\n" "$BYTES" \
    "$(awk -v b="$BYTES" -v u="$UNITS" 'BEGIN {print b / u}')"

  CPU0=$(cpu "$SRV")
  "$BIN/nq-loadgen" --server "127.0.0.1:$PORT" --ca "$W/data/ca.pem" \
    --enrol-file "$W/data/enrol.key" --conns "$CONNS" --seconds "$SECS" --want 1 \
    --think "$THINK" --admin-token-file "$W/data/admin.token" >"$W/loadgen.out" 2>"$W/loadgen.err" ||
    { cat "$W/loadgen.err" >&2; exit 1; }
  L="$W/loadgen.out"
  CPU1=$(cpu "$SRV")
  printf "  load      %s clients welcomed, %s results acked (%s/s), %s errors\n" \
    "$(field "$L" welcomed)" "$(field "$L" acks)" "$(field "$L" results_per_s)" "$(field "$L" errors)"
  for k in get_work result status; do
    printf "  %-9s n=%s p50 %s ms, p99 %s ms, max %s ms\n" "$k" "$(field "$L" ${k}_n)" \
      "$(field "$L" ${k}_p50_ms)" "$(field "$L" ${k}_p99_ms)" "$(field "$L" ${k}_max_ms)"
  done
  REQS=$(( $(field "$L" get_work_n) + $(field "$L" result_n) + $(field "$L" status_n) ))
  printf "  cpu/req   %.3f ms of server CPU per request (%s s, handshakes included, for %d requests)\n" \
    "$(awk -v a="$CPU0" -v b="$CPU1" -v r="$REQS" 'BEGIN {print (r > 0 ? 1000 * (b - a) / r : 0)}')" \
    "$(awk -v a="$CPU0" -v b="$CPU1" 'BEGIN {printf "%.1f", b - a}')" "$REQS"
  U0=$(now)
  "$BIN/nq-admin" units --state leased --limit 20 --server "127.0.0.1:$PORT" --ca "$W/data/ca.pem" \
    --token-file "$W/data/admin.token" >"$W/units.out"
  U1=$(now)
  printf "  units     nq-admin units --state leased --limit 20 (remote, new connection): %.0f ms\n" \
    "$(awk -v a="$U0" -v b="$U1" 'BEGIN {print 1000 * (b - a)}')"
  HWM=$(kb "$SRV" VmHWM)
  printf "  rss       peak %.1f MiB after creation, %.1f MiB after the load\n" \
    "$(awk -v k="$HWM_CREATE" 'BEGIN {print k / 1024}')" "$(awk -v k="$HWM" 'BEGIN {print k / 1024}')"
  kill -TERM "$SRV"
  wait "$SRV" || true
  SRV=
  rm -rf "$W"
done
