#!/usr/bin/env bash
# What a volunteer sees: `nq-client status`, the quiet log, paused time, an unreachable
# server. Real nq-server and nq-client processes on 127.0.0.1; every wait polls with a deadline.
#   1. out of reach: a client whose server does not listen warns once after --warn-unreachable
#      (WARN "out of reach"), keeps each further attempt off INFO, and `status` says it runs and
#      the server is out of reach; after SIGTERM `status` says it does not run;
#   2. a long unit (N=18, --cpu-limit 10): `status --json` shows it running with its percent,
#      node count and the server's welcome (client name, job, the public name, page and credit,
#      also logged); the pause file pauses it and
#      `status` says "paused" with the reason, and its solve seconds do not grow while paused;
#      after SIGTERM `status` shows the unit's checkpoint (tasks done, percent) from the state
#      directory alone;
#   3. the log of a job of many small units (N=13 depth 4) at the default level holds no per-unit
#      line, a summary line ("unit(s) solved in the last") and few lines in all;
#   4. credit and leaving: with quorum 1 every result verifies its unit, and the credit in
#      `status --json` grows from one ack to a later one within one session (one welcome in the
#      log, one connection on the server); the operator bans the client: it exits 5, and
#      `nq-client status` says it left banned, with the server's words.
#
#   bash tests/e2e_client_status.sh BUILD_DIR
set -euo pipefail
BIN="$(cd "${1:?usage: e2e_client_status.sh BUILD_DIR}" && pwd)"
TAG=e2e_client_status
. "$(dirname "$0")/lib_e2e.sh"
e2e_init status
for p in nq-server nq-client; do [ -x "$BIN/$p" ] || fail "$BIN/$p missing"; done

jget() { # jget FILE EXPR: a Python expression over the JSON object j of `status --json`
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
status_json() { "$BIN/nq-client" status --state "$1" --json >"$2" 2>/dev/null; }
# until_ok SECONDS WHAT CMD...: poll CMD every 0.1 s until it succeeds
until_ok() {
  local limit=$1 what=$2 i
  shift 2
  for i in $(seq 1 $((limit * 10))); do "$@" && return 0; sleep 0.1; done
  fail "$what (not within $limit s)"
}

# ---- 1. out of reach ----
D="$TMP/reach"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 10 # only for its CA; then stopped, so nothing listens
stop_all
"$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" --token x --state "$D/st" \
  --warn-unreachable 2 >"$D/client-a.log" 2>&1 &
CPID=$!
PIDS+=("$CPID")
until_ok 60 "no WARN for the unreachable server" grep -q "WARN: server 127.0.0.1:$PORT out of reach" \
  "$D/client-a.log"
[ "$(grep -c "WARN: server .* out of reach" "$D/client-a.log")" = 1 ] || fail "more than one WARN"
[ "$(grep -c "INFO: connection to" "$D/client-a.log")" -le 1 ] ||
  fail "every failed attempt at INFO: $(grep -c "INFO: connection to" "$D/client-a.log")"
until_ok 30 "status does not say out of reach" \
  bash -c "'$BIN/nq-client' status --state '$D/st' | grep -q 'out of reach'"
"$BIN/nq-client" status --state "$D/st" | grep -q "running (pid $CPID)" || fail "status: not running"
kill -TERM "$CPID"
wait "$CPID" || fail "client exit after SIGTERM"
PIDS=()
"$BIN/nq-client" status --state "$D/st" | grep -q "not running" || fail "status after stop"
say "out of reach: one WARN, status says so, then not running"

# ---- 2. a long unit: percent, pause, checkpoint ----
D="$TMP/unit"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 18 --depth 2 --page-url https://nq.example.org/
"$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" --enrol "$(cat "$D/data/enrol.key")" \
  --name vol1 --public-name volunteer-1 --threads 1 --cpu-limit 10 --priority normal --state "$D/st" --pause-file "$D/pause" \
  --checkpoint-seconds 1 >"$D/client-b.log" 2>&1 &
CPID=$!
PIDS+=("$CPID")
S="$D/s.json"
# (Polled: before the client has written its status there is no "status" to read.)
moving() { status_json "$D/st" "$S" && [ "$(jget "$S" 'j["status"]["running"] and j["status"]["fraction"] > 0 and j["status"]["conn"] == "ready"' 2>/dev/null)" = True ]; }
until_ok 120 "no unit with a fraction done in status" moving
[ "$(jget "$S" 'j["status"]["client"]')" = vol1 ] || fail "status: client name $(jget "$S" 'j["status"]["client"]')"
[ "$(jget "$S" 'j["status"]["job_n"]')" = 18 ] || fail "status: job"
[ "$(jget "$S" '(j["status"]["shown_as"], j["status"]["page"], j["status"]["has_credit"], j["status"]["credit"])')" = \
  "('volunteer-1', 'https://nq.example.org/', 1, '0')" ] || fail "status: the welcome's news: $(cat "$S")"
grep -q "INFO: credited as volunteer-1 on https://nq.example.org/, credit 0 nodes" "$D/client-b.log" ||
  fail "the client did not log its public name, page and credit"
"$BIN/nq-client" status --state "$D/st" >"$D/text"
grep -qE "^unit: +18:.*[0-9.]+% done" "$D/text" || { cat "$D/text"; fail "status text: no unit percent"; }
grep -q "solving" "$D/text" || fail "status text: not solving"
grep -q "^volunteer: .*shown as volunteer-1 on https://nq.example.org/, credit 0 nodes" "$D/text" ||
  { cat "$D/text"; fail "status text: no volunteer line"; }
paused() { status_json "$D/st" "$S" && [ "$(jget "$S" 'j["status"]["paused"]')" = 1 ]; }
# The pause must catch a unit part way (seconds > 0); one that comes between two units is let go
# and tried again.
for try in 1 2 3 4 5; do
  until_ok 120 "no unit with a fraction done in status" moving
  touch "$D/pause"
  until_ok 30 "status does not say paused" paused
  sleep 1 # a task in flight when the pause came ends
  status_json "$D/st" "$S"
  s1=$(jget "$S" 'j["status"]["seconds"]')
  [ "$(jget "$S" 'j["status"]["running"] and j["status"]["seconds"] > 0')" = True ] && break
  rm -f "$D/pause"
  until_ok 30 "status still says paused" bash -c "! '$BIN/nq-client' status --state '$D/st' | grep -q 'paused ('"
done
[ -e "$D/pause" ] || fail "the pause never caught a unit part way"
sleep 3 # paused: the unit's solve seconds must not grow
status_json "$D/st" "$S"
s2=$(jget "$S" 'j["status"]["seconds"]')
python3 -c "import sys; sys.exit(0 if float('$s2') - float('$s1') < 0.5 else 1)" ||
  fail "solve seconds grew while paused: $s1 -> $s2"
"$BIN/nq-client" status --state "$D/st" | grep -q "paused (.*pause exists)" || fail "status text: no pause"
kill -TERM "$CPID"
wait "$CPID" || fail "client exit after SIGTERM"
PIDS=()
"$BIN/nq-client" status --state "$D/st" >"$D/text"
grep -q "not running" "$D/text" || fail "status after stop: running"
grep -qE "^checkpoint: 18:.* [0-9]+ of [0-9]+ tasks \([0-9.]+%\)" "$D/text" ||
  { cat "$D/text"; fail "status after stop: no checkpoint"; }
status_json "$D/st" "$S"
[ "$(jget "$S" 'j["checkpoints"][0]["done"] > 0')" = True ] || fail "status --json: checkpoint"
say "long unit: percent ($s1 s solved, $s2 s after 3 s paused), pause and checkpoint in status"
stop_all

# ---- 3. a quiet log ----
D="$TMP/quiet"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 13 --depth 4 --quorum 1 --exit-when-done
"$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" --enrol "$(cat "$D/data/enrol.key")" \
  --threads 1 --priority normal --state "$D/st" --log-summary 1 >"$D/client-c.log" 2>&1 &
PIDS+=("$!")
wait_server_exit 120
units=$(grep -oE "\(([0-9]+) unit\(s\) solved here\)" "$D/client-c.log" | grep -oE "[0-9]+" | tail -n 1)
[ -n "$units" ] && [ "$units" -gt 100 ] || fail "the job had ${units:-no} units"
grep -qE "INFO: unit .* (started|done)" "$D/client-c.log" && fail "per-unit lines at INFO"
grep -qE "INFO: ack " "$D/client-c.log" && fail "ack lines at INFO"
lines=$(wc -l <"$D/client-c.log")
[ "$lines" -lt 40 ] || { head -n 40 "$D/client-c.log"; fail "$lines lines for $units units"; }
say "quiet log: $lines lines for $units units"
stop_all

# ---- 4. credit with each ack; a ban named in status ----
D="$TMP/credit"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 15 --depth 4 --quorum 1
"$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" --enrol "$(cat "$D/data/enrol.key")" \
  --name vol4 --threads 1 --priority normal --state "$D/st" >"$D/client-d.log" 2>&1 &
CPID=$!
PIDS+=("$CPID")
credit() { status_json "$D/st" "$S" && jget "$S" 'int(j["status"]["credit"]) if j["status"]["has_credit"] and j["status"]["conn"] == "ready" else 0'; }
credited() { local c; c=$(credit 2>/dev/null); [ "${c:-0}" -gt "${1:-0}" ]; }
until_ok 120 "no credit above 0 in status" credited 0
c1=$(credit)
until_ok 120 "the credit did not grow past $c1 in one session" credited "$c1"
c2=$(credit)
[ "$(grep -c "INFO: session open" "$D/client-d.log")" = 1 ] || fail "the client reconnected"
[ "$(grep -c "client vol4 connected" "$D/server.log")" = 1 ] || fail "more than one connection"
"$BIN/nq-admin" client ban vol4 --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" --data "$D/data" \
  >/dev/null || fail "client ban failed"
rc=0
wait "$CPID" || rc=$?
PIDS=()
[ "$rc" = 5 ] || fail "a banned client exits $rc, not 5"
"$BIN/nq-client" status --state "$D/st" >"$D/text"
grep -q "^left: *banned: this client is banned: server says banned" "$D/text" ||
  { cat "$D/text"; fail "status does not say the client left banned"; }
status_json "$D/st" "$S"
[ "$(jget "$S" 'j["status"]["exit_reason"]')" = banned ] || fail "status --json: exit_reason"
say "credit $c1 -> $c2 nodes from the acks of one session; a ban named in status"
say "PASS"
