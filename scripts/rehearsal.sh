#!/usr/bin/env bash
# Dress rehearsal of a record job on this machine: a whole job at production settings
# -- units sized by --unit-seconds (planned, mixed depths), quorum 2, two nq-clients that together
# use every core -- that must end in MATCH with the published values (and with nq-solve's node
# count, through the plan's split nodes), and the efficiency of the whole system:
#
#   efficiency = (quorum x nq-solve core-seconds for N) / (client core-seconds actually spent)
#
# The numerator is measured in the same run under the same concurrency: `quorum` copies of
# `nq-solve N --threads T` side by side, as the two clients run side by side (T = the clients'
# threads each), each one's user + system CPU; once before the job and once after, averaged. The denominator is the clients' user + system CPU
# from their rusage, start to exit. The server's CPU is reported apart (it is not client work).
#
#   scripts/rehearsal.sh N [S]      S: --unit-seconds (default: the server's, 7200 reference s)
#   Environment: NQ_BUILD_DIR (default build), NQ_REHEARSAL_TIMEOUT (s, default 1800),
#                NQ_REHEARSAL_KEEP=1 keeps the data directory and logs,
#                NQ_REHEARSAL_CLIENT_ARGS more nq-client options (e.g. "--priority normal").
# Exit status 0 only with MATCH (and the node count equal to nq-solve's).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:?usage: scripts/rehearsal.sh N [S]}
S=${2:-}
BIN=${NQ_BUILD_DIR:-build}
QUORUM=2
case "$N" in ''|*[!0-9]*) echo "rehearsal: N must be a number, got '$N'" >&2; exit 2 ;; esac
for p in nq-server nq-client nq-admin nq-solve; do
  [ -x "$BIN/$p" ] || { echo "rehearsal: $BIN/$p is not built (scripts/bootstrap.sh $BIN)" >&2; exit 2; }
done
BIN=$(cd "$BIN" && pwd)
CORES=$(nproc)
THREADS=$(( CORES / 2 > 0 ? CORES / 2 : 1 ))

DIR=$(mktemp -d "${TMPDIR:-/tmp}/nq-rehearsal-XXXXXX")
PIDS=()
cleanup() {
  local rc=$?
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ "$rc" -ne 0 ] || [ -n "${NQ_REHEARSAL_KEEP:-}" ]; then echo "rehearsal: logs in $DIR" >&2
  else rm -rf "$DIR"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# cpu_run OUT CMD... (in the background, as `cpu_run ... &`): run CMD, forward SIGTERM to it, then
# write "user sys status" (seconds: its rusage and its children's) to OUT. Python only for
# getrusage: bash has no per-child rusage. exec, so that $! is the process that gets the signal.
cpu_run() {
  local out=$1
  shift
  exec python3 - "$out" "$@" <<'EOF'
import resource, signal, subprocess, sys
p = subprocess.Popen(sys.argv[2:])
signal.signal(signal.SIGTERM, lambda *a: p.terminate())
p.wait()
r = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    f.write("%.3f %.3f %d\n" % (r.ru_utime, r.ru_stime, p.returncode))
EOF
}
cpu_of() { awk '{printf "%.3f", $1 + $2}' "$1"; }

echo "== rehearsal N=$N: $CORES cores, 2 clients x $THREADS thread(s), quorum $QUORUM, unit seconds ${S:-default} =="

# The baseline: quorum copies of nq-solve side by side; run before and after the job and averaged,
# since other work on a shared machine changes a core's speed (both figures are printed).
# baseline TAG: sets BASE_CPU (core-seconds of all copies) and SOLVE_NODES.
baseline() {
  local tag=$1 q
  for q in $(seq 1 $QUORUM); do
    cpu_run "$DIR/solve-$tag-$q.cpu" "$BIN/nq-solve" "$N" --threads "$THREADS" \
      >"$DIR/solve-$tag-$q.out" 2>/dev/null &
    PIDS+=($!)
  done
  for p in "${PIDS[@]}"; do wait "$p"; done
  PIDS=()
  SOLVE_NODES=$(awk '$1 == "nodes" {print $2}' "$DIR/solve-$tag-1.out")
  BASE_CPU=0
  for q in $(seq 1 $QUORUM); do
    grep -q "published MATCH" "$DIR/solve-$tag-$q.out" || [ "$N" -gt 27 ] ||
      { echo "rehearsal: nq-solve $N does not match the published values" >&2; exit 1; }
    BASE_CPU=$(awk -v a="$BASE_CPU" -v b="$(cpu_of "$DIR/solve-$tag-$q.cpu")" 'BEGIN {printf "%.3f", a + b}')
  done
}

# 1. The baseline, first run.
baseline before
BASE_BEFORE=$BASE_CPU

# 2. The job.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Both clients enrol with the server's key (one owner, `default`): replicas need distinct clients.
SARGS=(--n "$N" --quorum "$QUORUM" --quorum-distinct client --listen "127.0.0.1:$PORT"
  --data "$DIR/data" --exit-when-done)
[ -n "$S" ] && SARGS+=(--unit-seconds "$S")
T0=$(date +%s.%N)
cpu_run "$DIR/server.cpu" "$BIN/nq-server" "${SARGS[@]}" >"$DIR/server.out" 2>"$DIR/server.log" &
SRV=$!
PIDS+=($SRV)
for i in $(seq 1 3000); do
  grep -q "listening on" "$DIR/server.out" 2>/dev/null && break
  kill -0 "$SRV" 2>/dev/null || { cat "$DIR/server.log" >&2; exit 1; }
  sleep 0.1
done
grep "^job:" "$DIR/server.out"
for c in 1 2; do
  cpu_run "$DIR/client-$c.cpu" "$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$DIR/data/ca.pem" \
    --enrol "$(cat "$DIR/data/enrol.key")" --name "rehearsal-$c" --threads "$THREADS" \
    ${NQ_REHEARSAL_CLIENT_ARGS:-} --state "$DIR/client-$c" >"$DIR/client-$c.log" 2>&1 &
  PIDS+=($!)
done
# The server exits (--exit-when-done) once the last unit is verified.
TIMEOUT=${NQ_REHEARSAL_TIMEOUT:-1800}
for i in $(seq 1 $((TIMEOUT * 10))); do kill -0 "$SRV" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SRV" 2>/dev/null && { echo "rehearsal: the job did not finish within $TIMEOUT s" >&2; exit 1; }
T1=$(date +%s.%N)
# Clients that have not noticed the end yet (they learn it at their next request) stop now.
for c in 1 2; do kill "${PIDS[$c]}" 2>/dev/null || true; done
for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
PIDS=()

# 3. The baseline, second run.
baseline after
BASE_AFTER=$BASE_CPU
SOLVE_CPU=$(awk -v a="$BASE_BEFORE" -v b="$BASE_AFTER" 'BEGIN {printf "%.3f", (a + b) / 2}')
echo "baseline   $QUORUM x nq-solve $N --threads $THREADS side by side: $SOLVE_CPU core-seconds" \
  "(before the job $BASE_BEFORE, after $BASE_AFTER), $SOLVE_NODES nodes"

STATUS=$("$BIN/nq-admin" status --data "$DIR/data" --json)
UNITS=$(python3 -c 'import json,sys; j=json.load(sys.stdin)["job"]; print(j["units"], j["min_depth"], j["depth"], j["internal"], (j["final"] or {}).get("solve_nodes"))' <<<"$STATUS")
read -r NUNITS D0 D1 INTERNAL JOB_NODES <<<"$UNITS"
C1=$(cpu_of "$DIR/client-1.cpu")
C2=$(cpu_of "$DIR/client-2.cpu")
CL=$(awk -v a="$C1" -v b="$C2" 'BEGIN {printf "%.3f", a + b}')
EFF=$(awk -v s="$SOLVE_CPU" -v c="$CL" 'BEGIN {printf "%.3f", s / c}')
read -r U1 S1 _ <"$DIR/client-1.cpu"
read -r U2 S2 _ <"$DIR/client-2.cpu"
echo "job        $NUNITS units, depths $D0-$D1, $(awk -v a="$T0" -v b="$T1" 'BEGIN {printf "%.1f", b - a}') s wall"
echo "clients    $C1 + $C2 = $CL core-seconds (user $U1 + $U2, system $S1 + $S2)"
echo "server     $(cpu_of "$DIR/server.cpu") core-seconds"
echo "nodes      job $JOB_NODES (units + $INTERNAL split nodes) vs nq-solve $SOLVE_NODES"
echo "efficiency $EFF = $SOLVE_CPU / $CL"
if ! grep -q '"match": true' <<<"$STATUS"; then
  echo "rehearsal: N=$N did NOT end in MATCH" >&2
  exit 1
fi
if [ "$JOB_NODES" != "$SOLVE_NODES" ]; then
  echo "rehearsal: node count $JOB_NODES differs from nq-solve's $SOLVE_NODES" >&2
  exit 1
fi
echo "rehearsal: MATCH (N=$N, $NUNITS units, quorum $QUORUM), efficiency $EFF"
