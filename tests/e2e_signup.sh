#!/usr/bin/env bash
# Joining without the operator, end to end: real nq-server, nq-client and nq-admin on 127.0.0.1.
#   1. --signup off (the default): `nq-client --join` exits 5 with signup_closed.
#   2. --signup open: one `nq-client --join --public-name Ada` is an owner (self-joined, not
#      trusted) and a client at once, computes, is credited and shown on the page; its owner key
#      is in the state folder (0600) and printed once with how to add a second machine, which
#      then enrols with that file under the same owner; `owner trust` is what trusts it.
#   3. --signup approve: a join waits; `owner requests` lists it, `owner approve` lets it in and
#      it computes; a rejected one exits 5 with signup_rejected.
#   4. The limits: 200 sign-ups from one address, 200 from one /24 (200 loopback addresses) and
#      200 from 200 networks are cut at --signup-per-addr, --signup-per-net and --signup-per-day,
#      each refusal rate_limited with a retry time; asking again does not help, a restart does
#      not forget; an honest client logs in and gets answers all through the bursts.
#   5. Self-made owners on one network are one vote: two --join clients from 127.0.0.1 verify
#      nothing at quorum 2; with --self-joined-distinct owner they finish the job.
#
#   bash tests/e2e_signup.sh BUILD_DIR
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_signup.sh BUILD_DIR}" && pwd)"
for p in nq-server nq-client nq-admin; do
  [ -x "$BIN/$p" ] || { echo "e2e_signup: $BIN/$p missing"; exit 1; }
done
HERE="$(cd "$(dirname "$0")" && pwd)"

TAG=e2e_signup
. "$HERE/lib_e2e.sh"
e2e_init signup

admin() { local d=$1; shift; "$BIN/nq-admin" "$@" --data "$d/data"; }
# join DIR PORT NAME ARGS...: nq-client --join in the background (CPID), stdout and log apart.
join() {
  local d=$1 port=$2 name=$3
  shift 3
  mkdir -p "$d/state-$name"
  "$BIN/nq-client" --server "127.0.0.1:$port" --ca "$d/data/ca.pem" --join --name "$name" \
    --threads 1 --priority normal --state "$d/state-$name" "$@" \
    >"$d/out-$name.txt" 2>>"$d/client-$name.log" &
  CPID=$!
  PIDS+=("$CPID")
}
# exit_of PID SECONDS: RC = its exit status, once it has left.
exit_of() {
  local pid=$1 i
  RC=0
  for i in $(seq 1 $(($2 * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && fail "pid $pid still runs after $2 s"
  wait "$pid" || RC=$?
}

say "1. --signup off"
D="$TMP/off"; mkdir -p "$D"; PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 10 --depth 3
join "$D" "$PORT" nobody
exit_of "$CPID" 30
[ "$RC" -eq 5 ] || fail "a join on an --signup off server exited $RC, expected 5"
grep -q "sign-up refused: server says signup_closed" "$D/client-nobody.log" ||
  fail "no signup_closed: $(tail -n 2 "$D/client-nobody.log")"
stop_all

say "2. --signup open: joined, computing, credited, on the page"
D="$TMP/open"; mkdir -p "$D"; PORT=$(free_port); HPORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 12 --depth 4 --quorum 1 --signup open \
  --http "127.0.0.1:$HPORT"
join "$D" "$PORT" vol --public-name Ada
VPID=$CPID
e2e_wait_log "$D/client-vol.log" "session open" 30 "$VPID" || fail "the joined client did not connect"
grep -Eq "joined 127.0.0.1:$PORT as owner v-[0-9a-f]{12}, shown as Ada, this machine as client vol" \
  "$D/client-vol.log" || fail "no joined line: $(grep -m2 joined "$D/client-vol.log")"
KEYF="$D/state-vol/owner.key"
[ "$(stat -c %a "$KEYF")" = 600 ] || fail "owner.key has mode $(stat -c %a "$KEYF")"
KEY=$(cat "$KEYF")
grep -qx "  $KEY" "$D/out-vol.txt" || fail "the owner key was not printed once"
grep -q "To add a second machine under the same owner" "$D/out-vol.txt" ||
  fail "no second-machine instructions: $(cat "$D/out-vol.txt")"
OWNER=$(sed -nE 's/.*as owner (v-[0-9a-f]{12}).*/\1/p' "$D/client-vol.log" | head -n 1)
admin "$D" owners --json | python3 -c '
import json, sys
o = [x for x in json.load(sys.stdin)["owners"] if x["name"] == sys.argv[1]][0]
assert o["self_joined"] is True and o["trusted"] is False and o["public_name"] == "Ada", o' "$OWNER" ||
  fail "the owner is not self-joined, untrusted, shown as Ada"
# A second machine, from the key file alone.
mkdir -p "$D/state-vol2"
"$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" --enrol-file "$KEYF" \
  --name vol2 --threads 1 --priority normal --state "$D/state-vol2" >>"$D/client-vol2.log" 2>&1 &
PIDS+=("$!")
e2e_wait_log "$D/client-vol2.log" "session open" 30 "$!" || fail "the second machine did not enrol"
admin "$D" clients --json | python3 -c '
import json, sys
c = {x["name"]: x["owner"] for x in json.load(sys.stdin)["clients"]}
assert c["vol"] == c["vol2"] == sys.argv[1], c' "$OWNER" || fail "the machines have different owners"
e2e_until 180 "the job N=12 of the joined clients did not finish" grep -q "job N=12 done" "$D/server.log"
check_done "$D" 12
python3 - "$HPORT" <<'PY' || fail "the page does not credit Ada"
import sys, urllib.request
t = urllib.request.urlopen("http://127.0.0.1:%s/" % sys.argv[1], timeout=10).read().decode()
assert ">Ada<" in t, t[:400]
PY
admin "$D" owner trust "$OWNER" >/dev/null
admin "$D" owners --json | python3 -c '
import json, sys
o = [x for x in json.load(sys.stdin)["owners"] if x["name"] == sys.argv[1]][0]
assert o["trusted"] is True, o' "$OWNER" || fail "owner trust did not trust it"
stop_all

say "3. --signup approve"
D="$TMP/approve"; mkdir -p "$D"; PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 12 --depth 4 --quorum 1 --signup approve --signup-poll 1
join "$D" "$PORT" asker --log-level debug # each renewed ask logs its answer
APID=$CPID
e2e_wait_log "$D/client-asker.log" "sign-up request 1 waits for the operator's approval" 30 "$APID" ||
  fail "the request did not wait"
[ -s "$D/state-asker/signup.ticket" ] || fail "no ticket kept"
admin "$D" owner requests | grep -Eq "^1 +.* pending +127\.0\.0\.1 +asker" ||
  fail "owner requests does not list it: $(admin "$D" owner requests)"
# It keeps asking (every --signup-poll 1 s, with its ticket) and keeps waiting.
asked_again() { [ "$(grep -c "sign-up request 1 waits for the operator's approval" "$D/client-asker.log")" -ge 3 ]; }
e2e_until 60 "the waiting client did not ask again" asked_again
grep -q "session open" "$D/client-asker.log" && fail "it got in before the approval"
admin "$D" owner approve 1 | grep -q "approved" || fail "approve failed"
e2e_wait_log "$D/client-asker.log" "session open" 30 "$APID" || fail "no session after approval"
[ -e "$D/state-asker/signup.ticket" ] && fail "the ticket stayed after joining"
e2e_wait_log "$D/client-asker.log" "credited as" 30 "$APID" || fail "not credited"
join "$D" "$PORT" unwanted
UPID=$CPID
e2e_wait_log "$D/client-unwanted.log" "sign-up request 2 waits" 30 "$UPID" || fail "no second request"
admin "$D" owner reject 2 | grep -q "rejected" || fail "reject failed"
exit_of "$UPID" 30
[ "$RC" -eq 5 ] || fail "a rejected join exited $RC, expected 5"
grep -q "signup_rejected: the operator rejected sign-up request 2" "$D/client-unwanted.log" ||
  fail "no clear rejection: $(tail -n 2 "$D/client-unwanted.log")"
out=$(admin "$D" owner approve 2 2>&1 || true)
grep -q "rejected, not pending" <<<"$out" || fail "a decided request was decided again: $out"
stop_all

say "4. the limits under bursts of 200"
D="$TMP/limits"; mkdir -p "$D"; PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 13 --depth 5 --quorum 1 --signup open --signup-per-addr 3 \
  --signup-per-net 10 --signup-per-day 30
admin "$D" client add honest --out "$D/honest.token" >/dev/null
python3 "$HERE/signup_burst.py" "$PORT" "$D/data/ca.pem" "$D/burst.json" \
  127.0.0.1:200 '127.0.9.*:200' '127.*.5.1:200' 127.0.0.1:5 --honest "$(cat "$D/honest.token")"
python3 - "$D/burst.json" <<'PY' || fail "the limits did not hold: $(head -c 1500 "$D/burst.json")"
import json, sys
r = json.load(open(sys.argv[1]))
b = r["bursts"]
def check(i, joined, what, lo, hi):
    x = b[i]
    assert x["joined"] == joined, (i, x["joined"])
    assert len(x["refused"]) == x["count"] - joined and x["pending"] == 0, i
    for f in x["refused"]:
        assert f["code"] == "rate_limited", f
        assert what in f["message"] and "try again after" in f["message"], f
        assert lo <= f["retry_after"] <= hi, f
check(0, 3, "from this address", 3500, 3601)
check(1, 10, "from this network", 3500, 3601)
check(2, 17, "on this server today", 3600, 3600)   # a day away, told in the message
check(3, 0, "from this address", 3400, 3601)       # asking again does not help
h = r["honest"]
assert h["errors"] == 0 and h["rounds"] >= 5 and h["max_s"] < 2.0, h
print("bursts: %s; honest client: %d rounds, slowest %.3f s" %
      ([(x["joined"], len(x["refused"]), round(x["seconds"], 1)) for x in b], h["rounds"], h["max_s"]))
PY
[ "$(admin "$D" owners --json | python3 -c 'import json,sys; print(sum(1 for o in json.load(sys.stdin)["owners"] if o.get("self_joined")))')" = 30 ] ||
  fail "not 30 self-joined owners"
stop_all
e2e_start_server "$D" "$PORT" --n 13 --depth 5 --quorum 1 --signup open --signup-per-addr 3 \
  --signup-per-net 10 --signup-per-day 30
python3 "$HERE/signup_burst.py" "$PORT" "$D/data/ca.pem" "$D/again.json" 127.0.0.1:1
python3 -c 'import json,sys; b = json.load(open(sys.argv[1]))["bursts"][0]; assert b["joined"] == 0, b' \
  "$D/again.json" || fail "a restart forgot the limits"
stop_all

say "5. self-made owners on one network are one vote"
D="$TMP/vote"; mkdir -p "$D"; PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 10 --depth 3 --quorum 2 --signup open
join "$D" "$PORT" sock1
P1=$CPID
join "$D" "$PORT" sock2
P2=$CPID
e2e_wait_log "$D/client-sock1.log" "session open" 30 "$P1" || fail "sock1 did not join"
e2e_wait_log "$D/client-sock2.log" "session open" 30 "$P2" || fail "sock2 did not join"
thirty_results() {
  [ "$(admin "$D" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"])')" -ge 30 ]
}
e2e_until 120 "the two self-made owners did not report 30 results" thirty_results
admin "$D" status --json | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["results"] >= 30 and s["units"]["verified"] == 0, (s["results"], s["units"])' ||
  fail "two self-made owners on one network verified units"
stop_all
e2e_start_server "$D" "$PORT" --n 10 --depth 3 --quorum 2 --signup open \
  --self-joined-distinct owner --exit-when-done
"$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" --threads 1 --priority normal \
  --state "$D/state-sock1" >>"$D/client-sock1.log" 2>&1 &
PIDS+=("$!")
"$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" --threads 1 --priority normal \
  --state "$D/state-sock2" >>"$D/client-sock2.log" 2>&1 &
PIDS+=("$!")
wait_server_exit 120
check_done "$D" 10

say "6. the cap on requests waiting for the operator"
D="$TMP/cap"; mkdir -p "$D"; PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 10 --depth 3 --signup approve --signup-pending 3 \
  --signup-per-addr 100 --signup-per-net 100
python3 "$HERE/signup_burst.py" "$PORT" "$D/data/ca.pem" "$D/cap.json" 127.0.0.1:10
admin "$D" owner approve 1 >/dev/null
python3 "$HERE/signup_burst.py" "$PORT" "$D/data/ca.pem" "$D/cap2.json" 127.0.0.1:2
admin "$D" owner reject 2 >/dev/null
python3 "$HERE/signup_burst.py" "$PORT" "$D/data/ca.pem" "$D/cap3.json" 127.0.0.1:2
python3 - "$D" <<'PY' || fail "the pending cap did not hold: $(cat "$D/cap.json")"
import json, sys
d = sys.argv[1]
a = json.load(open(d + "/cap.json"))["bursts"][0]
assert a["pending"] == 3 and a["joined"] == 0 and len(a["refused"]) == 7, a
for f in a["refused"]:
    assert f["code"] == "rate_limited" and "already wait for the operator (at most 3)" in f["message"], f
b = json.load(open(d + "/cap2.json"))["bursts"][0]
assert b["pending"] == 0 and len(b["refused"]) == 2, b      # approved, not collected: still held
c = json.load(open(d + "/cap3.json"))["bursts"][0]
assert c["pending"] == 1 and len(c["refused"]) == 1, c      # a rejection frees one place
PY
[ "$(admin "$D" owner requests | grep -c pending)" = 2 ] || fail "not 2 pending after all"
say "PASS"
