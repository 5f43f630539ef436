#!/usr/bin/env bash
# A real network in the tests (docs/reliability.md "A real network"): the same job run
# twice by CLIENTS real nq-clients -- once on loopback, once through nq-netem (tools/netem_main.c)
# with a round trip of 100-300 ms (50-150 ms each way), a link that drops for DROP_FOR s every
# DROP_EVERY s, connections reset mid-frame (probability RESET per chunk) and two SIGKILLs of the
# server (at about a third and two thirds of the job, restarted at once on the same data
# directory). Both must end in MATCH with the published values; the script prints the
# efficiency of each run next to the other:
#
#   efficiency = (quorum x nq-solve core-seconds for N) / (the clients' core-seconds)
#
# (as scripts/rehearsal.sh; the numerator is measured in this run), and each run's wall time.
#
#   bash tests/e2e_netem.sh BUILD_DIR
#   Environment: NQ_NETEM_N (17), NQ_NETEM_CLIENTS (10), NQ_NETEM_DEPTH (3), NQ_NETEM_TIMEOUT (300)
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_netem.sh BUILD_DIR}" && pwd)"
N=${NQ_NETEM_N:-17}
CLIENTS=${NQ_NETEM_CLIENTS:-10}
DEPTH=${NQ_NETEM_DEPTH:-3}
TIMEOUT=${NQ_NETEM_TIMEOUT:-300}
DELAY=100 JITTER=50 DROP_EVERY=8 DROP_FOR=2 RESET=0.002
QUORUM=2
for p in nq-server nq-client nq-admin nq-solve nq-netem; do
  [ -x "$BIN/$p" ] || { echo "netem: $BIN/$p missing"; exit 1; }
done

TAG=netem
. "$(dirname "$0")/lib_e2e.sh"
e2e_init netem

# cpu_of OUT CMD...: run CMD, then write its (and its children's) user+sys seconds to OUT.
cpu_of() {
  local out=$1
  shift
  python3 - "$out" "$@" <<'EOF'
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%.3f %d\n" % (r.ru_utime + r.ru_stime, rc))
EOF
}

# 0. The fixture itself: each impairment does what it says (against an echo server).
python3 "$(dirname "$0")/netem_selftest.py" "$BIN/nq-netem" || fail "nq-netem does not impair as it says"

cpu_of "$TMP/solve.cpu" "$BIN/nq-solve" $N --threads 1 >/dev/null 2>&1
SOLVE=$(cut -d' ' -f1 "$TMP/solve.cpu")
say "nq-solve $N --threads 1: $SOLVE core-s; the job's ideal is $QUORUM x that"

# run LABEL VIA_NETEM: one whole job; prints "LABEL efficiency E wall W s".
run() {
  local label=$1 netem=$2 D="$TMP/$1"
  mkdir -p "$D/data"
  local port cport nepid="" t0=$SECONDS
  port=$(free_port)
  cport=$port
  start() {
    e2e_start_server "$D" "$port" --n $N --depth $DEPTH --quorum $QUORUM --max-results 5 \
      --quorum-distinct client --spot-check 0 --http off --lease-seconds 60 --lease-min 30 "$@"
  }
  start
  if [ "$netem" = 1 ]; then
    cport=$(free_port)
    "$BIN/nq-netem" --listen "127.0.0.1:$cport" --to "127.0.0.1:$port" --delay $DELAY \
      --jitter $JITTER --drop-every $DROP_EVERY --drop-for $DROP_FOR --reset-prob $RESET \
      >"$D/netem.log" 2>&1 &
    nepid=$!
    PIDS+=("$nepid")
    e2e_until 60 "$label: nq-netem did not listen" grep -q listening "$D/netem.log"
  fi
  local cl=()
  for i in $(seq 1 "$CLIENTS"); do
    E2E_WRAP="cpu_of $D/client-$i.cpu" e2e_start_client "$D" "$cport" "c$i" --exit-when-done
    cl+=("$CPID")
  done
  local units kills=0 v
  units=$("$BIN/nq-admin" status --data "$D/data" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["units"]["total"])')
  while :; do
    v=$("$BIN/nq-admin" status --data "$D/data" --json 2>/dev/null |
        python3 -c 'import json,sys; s=json.load(sys.stdin); print(-1 if s["done"] else s["units"]["verified"])' 2>/dev/null || echo 0)
    [ "$v" -lt 0 ] && break
    if [ "$netem" = 1 ] && [ $kills -lt 2 ] && [ "$v" -ge $(( (kills + 1) * units / 3 )) ]; then
      kill -9 "$SRV"
      wait "$SRV" 2>/dev/null || true
      kills=$((kills + 1))
      say "$label: SIGKILL $kills of the server at $v/$units verified units; restarted"
      start
    fi
    [ $((SECONDS - t0)) -lt "$TIMEOUT" ] || fail "$label: not done within $TIMEOUT s ($v/$units verified)"
    kill -0 "$SRV" 2>/dev/null || fail "$label: nq-server died"
    sleep 0.2
  done
  [ "$netem" = 0 ] || [ $kills -eq 2 ] || fail "$label: the job ended before the second kill"
  local wall=$((SECONDS - t0))
  # The clients hear that the job is done and exit; then the server is stopped.
  for p in "${cl[@]}"; do
    local w=0
    while kill -0 "$p" 2>/dev/null && [ $w -lt 600 ]; do sleep 0.1; w=$((w + 1)); done
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  kill "$SRV" && wait "$SRV" 2>/dev/null || true
  SRV=""
  [ -n "$nepid" ] && { kill "$nepid" 2>/dev/null || true; wait "$nepid" 2>/dev/null || true; }
  grep -q "job N=$N done" "$D/server.log" || fail "$label: no final line"
  check_done "$D" "$N"
  local cpu
  cpu=$(cat "$D"/client-*.cpu | awk '{s += $1} END {printf "%.3f", s}')
  local eff
  eff=$(awk -v q=$QUORUM -v s="$SOLVE" -v c="$cpu" 'BEGIN {printf "%.3f", q * s / c}')
  local drops=0 resets
  [ "$netem" = 1 ] && drops=$(grep -c "link down" "$D/netem.log" || true)
  resets=$(cat "$D"/client-*.log | grep -ci "reset\|connection lost\|cannot reach" || true)
  echo "$label $eff $wall $cpu $drops $kills $resets" >>"$TMP/results"
  say "$label: N=$N $units units, $CLIENTS clients: efficiency $eff ($cpu client core-s), wall $wall s, $drops link drops, $kills server kills, $resets client connection errors"
}

run loopback 0
run netem 1
read -r _ e1 w1 _ <<<"$(sed -n 1p "$TMP/results")"
read -r _ e2 w2 _ d2 k2 r2 <<<"$(sed -n 2p "$TMP/results")"
echo "netem: efficiency loopback $e1 (wall $w1 s) | through nq-netem $e2 (wall $w2 s; RTT 100-300 ms, $d2 drops of ${DROP_FOR} s, $k2 server SIGKILLs, resets p=$RESET)"
say "PASS: both runs MATCH"
