#!/usr/bin/env bash
# The job queue end to end: one nq-server, one data directory, one port, two nq-clients
# that are never restarted.
#   1. N=10 runs; N=11 is queued (nq-admin job add, remote mode) before the clients start: when
#      N=10 is done the server starts N=11 at once and the connected clients go on with it.
#   2. N=11 is done and nothing is queued: the clients stay up and wait (`waiting`, polling).
#   3. N=12 is queued in local mode (--data, beside the running server): the server picks it up
#      and the same clients count it.
#   4. N=13 is queued, and the server restarted in its middle with the first job's --n 10 (one
#      client frozen meanwhile, so that the job cannot end first): it serves N=13 (the queue's
#      running job), and the clients reconnect and finish it.
#   5. With no client left, a queued re-count of N=11 starts (the done N=11 archived first);
#      `job next` is refused while it runs, `job next --force` sets it aside for a queued N=12.
# Every job must match the published TOTAL and UNIQUE, the clients' pids must be alive from start
# to end, and their state directories hold no journal entry of an old job at the end. Also:
# bad input to job add / cancel (exit 2 or a clear refusal), cancel of a started entry, the queue
# listing, and `job archive` of a finished job that still reads done with its match.
#
#   bash tests/e2e_queue.sh BUILD_DIR
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_queue.sh BUILD_DIR}" && pwd)"
for p in nq-server nq-client nq-admin; do
  [ -x "$BIN/$p" ] || { echo "e2e_queue: $BIN/$p missing"; exit 1; }
done
command -v python3 >/dev/null || { echo "e2e_queue: python3 needed"; exit 1; }

TAG=e2e_queue
. "$(dirname "$0")/lib_e2e.sh"
e2e_init queue

D="$TMP/q"
mkdir -p "$D"
PORT=$(free_port)
# adm COMMAND ARGS...: nq-admin in local mode; remote COMMAND ARGS...: through the server.
adm() { "$BIN/nq-admin" "$1" --data "$D/data" "${@:2}"; }
remote() {
  "$BIN/nq-admin" "$1" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" \
    --token-file "$D/data/admin.token" "${@:2}"
}

# status_of N EXPR: a python expression over the status object `s` of the job for N (local mode).
status_of() {
  adm status --n "$1" --json 2>/dev/null | python3 -c "import json,sys; s=json.load(sys.stdin); print($2)"
}

# wait_done N SECONDS: the job for N is done within the time.
wait_done() {
  local n=$1 limit=$2 i
  for i in $(seq 1 $((limit * 5))); do
    [ "$(status_of "$n" 's["done"]' || true)" = True ] && return 0
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || fail "client $p exited while N=$n ran"; done
    kill -0 "$SRV" 2>/dev/null || fail "nq-server died while N=$n ran"
    sleep 0.2
  done
  fail "the job for N=$n was not done within $limit s"
}

check_match() {
  local n=$1 got exp
  got=$(status_of "$n" '"%s %s %s" % (s["final"]["total"], s["final"]["unique"], s["match"])')
  exp="$(published "$n") True"
  [ "$got" = "$exp" ] || fail "N=$n: got '$got', want '$exp'"
  say "N=$n done and matching: $got"
}

clients_alive() {
  local p
  for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || fail "client $p exited ($1)"; done
}

e2e_start_server "$D" "$PORT" --n 10 --depth 4 --quorum 2 --quorum-distinct client \
  --spot-check 0 --lease-seconds 60 --http off
say "server up on $PORT serving N=10"

# Bad input: usage errors (exit 2) and refusals (exit 1), nothing queued by them.
rc=0; adm job add 3 2>"$D/err" || rc=$?
[ $rc -eq 2 ] && grep -q "board size" "$D/err" || fail "job add 3: exit $rc, $(cat "$D/err")"
rc=0; adm job add 11 --depth 20 2>"$D/err" || rc=$?
[ $rc -eq 2 ] && grep -q "depth" "$D/err" || fail "job add 11 --depth 20: exit $rc, $(cat "$D/err")"
rc=0; adm job add 11 --depth 4 --unit-seconds 5 2>"$D/err" || rc=$?
[ $rc -eq 2 ] || fail "job add with --depth and --unit-seconds: exit $rc"
rc=0; adm job add 11 --quorum 3 --max-results 2 2>"$D/err" || rc=$?
[ $rc -eq 2 ] && grep -q "max-results" "$D/err" || fail "max-results < quorum: exit $rc, $(cat "$D/err")"
rc=0; adm job cancel 999 2>"$D/err" || rc=$?
[ $rc -eq 1 ] && grep -q "no queued job 999" "$D/err" || fail "cancel 999: exit $rc, $(cat "$D/err")"
rc=0; adm job cancel x 2>"$D/err" || rc=$?
[ $rc -eq 2 ] || fail "cancel x: exit $rc"
rc=0; adm status --depth 4 2>"$D/err" || rc=$?
[ $rc -eq 2 ] && grep -q "job add" "$D/err" || fail "a job option on status: exit $rc"
[ "$(adm job list --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["queue"]))')" = 0 ] ||
  fail "bad input queued something"

# A queued entry that is cancelled never runs; then N=11 for real, through the server.
id=$(remote job add 13 --depth 4 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
# --diverse-kernels 1 (N=11's default is 0): the queued job must start with the option given.
remote job add 11 --depth 4 --quorum 2 --diverse-kernels 1 >"$D/add.out"
grep -q "queued job .*N=11.*diverse-kernels 1; number 2 in the queue" "$D/add.out" ||
  fail "job add 11: $(cat "$D/add.out")"
adm job cancel "$id" | grep -q "N=13) cancelled" || fail "cancel of queued N=13"
adm job list | grep -q "^2 .* 11 .*queued" || fail "job list: $(adm job list)"

e2e_start_clients "$D" "$PORT" a b
say "clients ${PIDS[*]} started"

wait_done 10 120
wait_done 11 120
check_match 10
check_match 11
grep -q "queued job 2 started: job 2, N=11" "$D/server.log" || fail "no start line for queued job 2"
adm job list --all --json | python3 -c '
import json, sys
q = {e["id"]: e for e in json.load(sys.stdin)["queue"]}
assert q[1]["state"] == "cancelled" and q[1]["n"] == 13, q[1]
assert q[2]["state"] == "started" and q[2]["job_id"] == 2, q[2]
assert q[2]["diverse_kernels"] == 1 and q[1]["diverse_kernels"] == -1, q' || fail "job list --all"
[ "$(adm status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["kernels"]["diverse"])')" = 1 ] ||
  fail "the queued job did not start with --diverse-kernels 1"
rc=0; adm job cancel 2 2>"$D/err" || rc=$?
[ $rc -eq 1 ] && grep -q "has started" "$D/err" || fail "cancel of a started entry: exit $rc, $(cat "$D/err")"

# 2. Nothing queued: the clients wait (they were told `waiting`, not `done`).
for c in a b; do
  e2e_until 60 "client $c does not say it waits" grep -q "waiting for the next one" "$D/client-$c.log"
done
clients_alive "between jobs"
say "both clients wait between jobs"

# 3. N=12 queued in local mode beside the running server: picked up by the server's sweep.
adm job add 12 --depth 4 --json >/dev/null
wait_done 12 180
check_match 12
clients_alive "after the third job"
for c in a b; do
  grep -q "work again: job N=12" "$D/client-$c.log" || fail "client $c did not report the new job"
done

# 4. A restart in the middle of a queued job, with the first job's --n (a packaged server's NQ_N):
# the server serves the job the queue started, and the clients (reconnecting) finish it.
# The restart must come inside N=13, which two fast clients finish in 2 s: client b, waiting
# between jobs, is frozen (SIGSTOP) before N=13 is queued, so that no unit can be verified (quorum
# 2 by client); once client a has given N=13 results, the server is restarted and b thawed.
CLIENT_B=${PIDS[1]}
kill -STOP "$CLIENT_B"
remote job add 13 --depth 4 >/dev/null
n13_results() { [ "$(status_of 13 's["results"] > 0' 2>/dev/null || true)" = True ]; }
e2e_until 120 "the queued N=13 did not start (no result from client a)" n13_results
[ "$(status_of 13 's["done"]')" = False ] || fail "N=13 ended with client b frozen"
kill "$SRV" && wait "$SRV" 2>/dev/null || true
e2e_start_server "$D" "$PORT" --n 10 --depth 4 --quorum 2 --quorum-distinct client \
  --spot-check 0 --lease-seconds 60 --http off
kill -CONT "$CLIENT_B"
grep -q "the job for N=10 is done; serving job 4 (N=13)" "$D/server.log" ||
  fail "a restart with --n 10 does not serve the queue's running job"
wait_done 13 180
check_match 13
say "the same two clients (pids ${PIDS[*]}) counted N=10, 11, 12 and 13 (a server restart inside)"

# A client that comes while no job runs is told so in its welcome, and waits too.
e2e_start_client "$D" "$PORT" c
e2e_wait_log "$D/client-c.log" "waiting for the next one" 60 "$CPID" ||
  fail "a new client between jobs does not say it waits"
grep -q "job N=13 done (waiting for the next job)" "$D/client-c.log" &&
  grep -q "waiting for the next one" "$D/client-c.log" || fail "a new client is not told to wait"
clients_alive "a new client between jobs"

# The clients leave on SIGTERM (exit 0) with nothing of the old jobs left in their journals.
for p in "${PIDS[@]}"; do kill -TERM "$p"; done
for p in "${PIDS[@]}"; do
  rc=0; wait "$p" || rc=$?
  [ $rc -eq 0 ] || fail "client $p exited $rc on SIGTERM"
done
PIDS=()
for c in a b c; do
  left=$(find "$D/state-$c" -path '*journal*' -type f -size +0 | wc -l)
  [ "$left" -eq 0 ] || fail "client $c's journal still holds entries: $(find "$D/state-$c" -path '*journal*')"
done

# 5. The operator's word, with no client left: a re-count of N=11 starts by itself (N=13 is done)
# and runs; `job next` is refused while it runs, `job next --force` sets it aside for N=12.
remote job add 11 --depth 4 >/dev/null
e2e_until 60 "the queued re-count of N=11 (job 5) did not start" grep -q "queued job 5 started" "$D/server.log"
grep -q "job 2 (N=11, done) archived: queued job 5 counts N=11 again" "$D/server.log" ||
  fail "the re-count of N=11 did not archive the done job first"
remote job add 12 --depth 4 >/dev/null
rc=0; remote job next 2>"$D/err" || rc=$?
[ $rc -eq 1 ] && grep -q "is still running" "$D/err" || fail "job next while N=11 runs: exit $rc, $(cat "$D/err")"
remote job next --force >"$D/next.out" || fail "job next --force: $(cat "$D/next.out")"
grep -q "starts queued job 6 (N=12) now; job 5 is set aside" "$D/next.out" || fail "job next: $(cat "$D/next.out")"
e2e_until 60 "job next --force did not start queued job 6" grep -q "queued job 6 started" "$D/server.log"
grep -q "job 5 (N=11) set aside at the operator's word" "$D/server.log" &&
  grep -q "queued job 6 started: job 6, N=12" "$D/server.log" || fail "job next --force did not switch"
rc=0; adm job next 2>"$D/err" || rc=$?
[ $rc -eq 1 ] && grep -q "word to a running server" "$D/err" || fail "job next in local mode: exit $rc"
say "job next: refused while a job runs, --force sets it aside"
kill "$SRV" && wait "$SRV" 2>/dev/null || true
SRV=""

# job archive keeps a finished job's answer: done, with its match.
adm job archive 10 >/dev/null
[ "$(status_of 10 '"%s %s %s" % (s["job"]["state"], s["done"], s["match"])')" = "archived True True" ] ||
  fail "an archived finished job: $(status_of 10 '(s["job"]["state"], s["done"], s["match"])')"
say "archived N=10 still reads done and matching"
say "PASS"
