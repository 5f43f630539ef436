#!/usr/bin/env bash
# End-to-end liveness (docs/reliability.md, "Liveness"): the smallest fleet that should finish a
# job under the kernel rule finishes it, through real nq-server, nq-client and nq-admin processes.
# N = 11 at depth 3 (173 units), --diverse-kernels 2, quorum 2 by owner; owners alice (trusted)
# and bob, one identical client each (--threads 1), started at the same moment. Before the fix
# this shape stopped for good at 171 of 173 units: both first replicas of units 0 and 1 ran the
# same kernel and the only owners that could add another had voted. The test waits for states
# (nq-admin status), never for fixed times; it requires MATCH, every unit verified by two kernels,
# and nothing stalled on the way (but for want of owners before the clients enrolled).
# Then a pause the server knows of: N = 18 at depth 3 (1,354 units of about 3 ms: seconds of
# solving per client, as at depth 4, but a tenth of the results to carry), two owners; one
# client's pause file is created while it holds units; status must count it paused (its progress
# said so), its leases stay live, and once the file goes the job finishes with MATCH. A sanitizer
# build solves several times slower: there it is N = 17 at depth 3 (1,031 units), as
# e2e_checkpoint does, so that the two clients' solving stays a few seconds.
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_liveness.sh BUILD_DIR}" && pwd)"
N=11
JOB_TIMEOUT="${NQ_LIVENESS_TIMEOUT:-180}"
for p in nq-server nq-client nq-admin; do
  [ -x "$BIN/$p" ] || { echo "liveness: $BIN/$p missing"; exit 1; }
done
command -v python3 >/dev/null || { echo "liveness: python3 needed"; exit 1; }

TAG=liveness
. "$(dirname "$0")/lib_e2e.sh"
e2e_init liveness

admin_json() { # DIR CMD ARGS...: nq-admin CMD --data DIR/data ARGS --json (status: 3 = done, differs)
  local dir=$1 cmd=$2 i out rc
  shift 2
  for i in 1 2 3 4 5 6 7 8 9 10; do
    rc=0
    out=$("$BIN/nq-admin" "$cmd" --data "$dir/data" "$@" --json 2>/dev/null) || rc=$?
    if [ $rc -eq 0 ] || { [ "$cmd" = status ] && [ $rc -eq 3 ]; }; then
      printf '%s\n' "$out"
      return 0
    fi
    sleep 0.2
  done
  fail "nq-admin $cmd failed"
}

D="$TMP/two"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n $N --depth 3 --diverse-kernels 2
KA=$(admin_json "$D" owner add alice | python3 -c 'import json,sys; print(json.load(sys.stdin)["enrol_key"])')
KB=$(admin_json "$D" owner add bob | python3 -c 'import json,sys; print(json.load(sys.stdin)["enrol_key"])')
admin_json "$D" owner trust alice >/dev/null
E2E_KEY=$KA e2e_start_client "$D" "$PORT" alice-1
E2E_KEY=$KB e2e_start_client "$D" "$PORT" bob-1
say "N=$N depth 3, --diverse-kernels 2, owners alice (trusted) and bob, one client each, started at once"

t0=$SECONDS
max_stalled=0
while :; do
  S=$(admin_json "$D" status)
  read -r done match verified units stalled <<<"$(printf '%s' "$S" | python3 -c '
import json, sys
s = json.load(sys.stdin)
x = s["stalled"]
# Before the clients have enrolled every unit is stalled for want of owners that can vote: that
# is the start, not a stall of the job.
print(int(s["done"]), int(bool(s.get("match"))), s["units"]["verified"], s["units"]["total"],
      x["units"] - x["by"]["owners"])')"
  [ "$stalled" -gt "$max_stalled" ] && max_stalled=$stalled
  [ "$done" = 1 ] && break
  [ $((SECONDS - t0)) -lt "$JOB_TIMEOUT" ] || fail "not done within ${JOB_TIMEOUT}s: $verified of $units verified, $stalled stalled: $(printf '%s' "$S" | python3 -c 'import json,sys; print(json.load(sys.stdin)["stalled"]["message"])')"
  kill -0 "$SRV" 2>/dev/null || fail "nq-server died"
  sleep 0.5
done
[ "$match" = 1 ] || fail "done but no MATCH: $S"
TWO=$(printf '%s' "$S" | python3 -c 'import json,sys; print(json.load(sys.stdin)["kernels"]["units_two_kernels"])')
[ "$TWO" = "$units" ] || fail "$TWO of $units units rest on two kernels"
[ "$max_stalled" = 0 ] || fail "$max_stalled unit(s) were stalled on the way"
say "MATCH in $((SECONDS - t0)) s: $units/$units units verified, every one by two kernels, nothing stalled on the way"

# ---- a paused client, known to the server ----
P="$TMP/pause"
mkdir -p "$P"
PORT=$(free_port)
kill "$SRV" 2>/dev/null || true
wait "$SRV" 2>/dev/null || true
PN=18
grep -q '^NQ_SANITIZE:BOOL=ON' "$BIN/CMakeCache.txt" 2>/dev/null && PN=17
e2e_start_server "$P" "$PORT" --n $PN --depth 3 --diverse-kernels 0
KA=$(admin_json "$P" owner add carol | python3 -c 'import json,sys; print(json.load(sys.stdin)["enrol_key"])')
KB=$(admin_json "$P" owner add dave | python3 -c 'import json,sys; print(json.load(sys.stdin)["enrol_key"])')
E2E_KEY=$KA e2e_start_client "$P" "$PORT" carol-1
E2E_KEY=$KB e2e_start_client "$P" "$PORT" dave-1 --pause-file "$P/dave.pause"
# dave holds units once the job runs: then its solver is paused.
t0=$SECONDS
until grep -q "session open" "$P/client-dave-1.log" 2>/dev/null &&
      [ "$(admin_json "$P" status | python3 -c 'import json,sys; print(json.load(sys.stdin)["units"]["verified"])')" -gt 0 ]; do
  [ $((SECONDS - t0)) -lt 60 ] || fail "pause: the job did not start"
  sleep 0.2
done
touch "$P/dave.pause"
until grep -q "solver paused" "$P/client-dave-1.log"; do
  [ $((SECONDS - t0)) -lt 60 ] || fail "pause: dave's solver did not pause"
  sleep 0.2
done
until [ "$(admin_json "$P" status | python3 -c 'import json,sys; print(json.load(sys.stdin)["clients"].get("paused", 0))')" = 1 ]; do
  [ $((SECONDS - t0)) -lt 60 ] || fail "pause: status never counted dave paused"
  kill -0 "$SRV" 2>/dev/null || fail "nq-server died"
  sleep 0.3
done
# Options may come before the command (docs/operations.md writes `nq-admin --server ... job next`).
TXT=$("$BIN/nq-admin" --data "$P/data" status 2>/dev/null || true)
printf '%s\n' "$TXT" | grep -q "client(s) paused" || fail "pause: the ETA line does not say so: $TXT"
say "pause: dave's pause file made, status counts 1 client paused: $(printf '%s\n' "$TXT" | grep -m1 'paused')"
rm -f "$P/dave.pause"
until [ "$(admin_json "$P" status | python3 -c 'import json,sys; s=json.load(sys.stdin); print(int(s["done"] and bool(s.get("match"))))')" = 1 ]; do
  [ $((SECONDS - t0)) -lt "$JOB_TIMEOUT" ] || fail "pause: not done with MATCH after the resume"
  kill -0 "$SRV" 2>/dev/null || fail "nq-server died"
  sleep 0.5
done
grep -q "solver resumed" "$P/client-dave-1.log" || fail "pause: dave never resumed"
say "pause: resumed, MATCH in $((SECONDS - t0)) s"
