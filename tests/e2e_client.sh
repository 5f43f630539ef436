#!/usr/bin/env bash
# nq-client end to end: real nq-server and nq-client processes on 127.0.0.1, each scenario with
# its own free port and temporary data/state directories.
#   1. full job: N=10 depth 3, three clients enrolled with the data dir's enrol.key;
#   2. client crash: N=12, a client is killed with SIGKILL while the server holds its replies
#      (so its journal is not empty) and restarted on the same state dir; it must report the
#      journal first and the job must still come out exact;
#   3. server restart: N=12 depth 3, the server is stopped (SIGTERM) mid-job and restarted on the
#      same data dir while two clients run; they reconnect and finish the job;
#   4. idle at the end: a client that has nothing to do when the job finishes is told at once
#      and exits 0 by itself.
# Each job must end "done" with the published TOTAL and UNIQUE (read from the server's final log
# line). Also checked: the stored token (mode 0600), enrol-once, bad arguments / unreadable CA /
# wrong token / refused certificate exit codes (a name mismatch lists the certificate's names, and
# --hostname on the existing data directory fixes it after a restart), the data and state directory locks (a second
# server or client exits 3 naming the first one's pid), and exit 0 on SIGTERM.
#
#   bash tests/e2e_client.sh BUILD_DIR
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_client.sh BUILD_DIR}" && pwd)"
for p in nq-server nq-client; do
  [ -x "$BIN/$p" ] || { echo "e2e_client: $BIN/$p missing"; exit 1; }
done

TAG=e2e_client
. "$(dirname "$0")/lib_e2e.sh"
e2e_init client

# start_server DIR PORT N DEPTH: nq-server for the job in the background (SRV = its pid).
start_server() { e2e_start_server "$1" "$2" --n "$3" --depth "$4" --quorum 2 --quorum-distinct client \
  --exit-when-done; }

# start_client DIR PORT NAME: an enrolling client with state dir DIR/state-NAME, its debug lines
# ("ack") logged; CPID = its pid.
start_client() { e2e_start_client "$1" "$2" "$3" --log-level debug; }

# stop_clients: SIGTERM every client still running; each must exit 0.
stop_clients() {
  local p rc
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    rc=0
    wait "$p" || rc=$?
    [ $rc -eq 0 ] || fail "client $p exited $rc after SIGTERM"
  done
  PIDS=()
}

# ---- 0. refusals: exit codes before any work ----
D="$TMP/refuse"
mkdir -p "$D"
PORT=$(free_port)
start_server "$D" "$PORT" 10 3
rc=0; "$BIN/nq-client" --server "127.0.0.1" --ca "$D/data/ca.pem" --token x 2>"$D/err" || rc=$?
[ $rc -eq 2 ] || fail "bad --server: exit $rc, want 2"
rc=0; "$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/nope.pem" --token x \
  --state "$D/s0" 2>"$D/err" || rc=$?
[ $rc -eq 3 ] && grep -q "CA file" "$D/err" || fail "unreadable CA: exit $rc, want 3"
rc=0; timeout 20 "$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" \
  --token wrongtoken --state "$D/s1" 2>"$D/err" || rc=$?
[ $rc -eq 5 ] && grep -q "auth" "$D/err" || fail "wrong token: exit $rc, want 5"
# A second server with its own CA, on 127.0.0.2 (its certificate names 127.0.0.1 and localhost).
mkdir -p "$D/other"
P2=$(free_port)
"$BIN/nq-server" --n 10 --listen "127.0.0.2:$P2" --data "$D/other" >"$D/other.log" 2>&1 &
OTHER=$!
PIDS+=("$OTHER")
e2e_until 60 "the second server on 127.0.0.2 did not listen" grep -q "listening on" "$D/other.log"
# A CA that did not sign the server's certificate: refused, not retried.
rc=0; timeout 20 "$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/other/ca.pem" \
  --token x --state "$D/s2" 2>"$D/err" || rc=$?
[ $rc -eq 4 ] && grep -q "certificate verify failed" "$D/err" ||
  fail "foreign CA: exit $rc, want 4"
# The right CA but an address the certificate does not name.
rc=0; timeout 20 "$BIN/nq-client" --server "127.0.0.2:$P2" --ca "$D/other/ca.pem" \
  --token x --state "$D/s3" 2>"$D/err" || rc=$?
[ $rc -eq 4 ] && grep -q "certificate verify failed" "$D/err" ||
  fail "wrong host name: exit $rc, want 4"
grep -q "the certificate names: localhost, 127.0.0.1)" "$D/err" ||
  fail "the name-mismatch error does not list the certificate's names: $(cat "$D/err")"
kill -TERM "$OTHER"; wait "$OTHER" || true
# The documented fix: --hostname on the same data directory re-issues the certificate from its
# CA at the restart, and a client dialling that address gets through TLS (to the token check).
"$BIN/nq-server" --n 10 --listen "127.0.0.2:$P2" --data "$D/other" --hostname 127.0.0.2 \
  >>"$D/other.log" 2>&1 &
OTHER=$!
PIDS=("$OTHER")
listening_again() { [ "$(grep -c "listening on" "$D/other.log")" -ge 2 ]; }
e2e_until 60 "the second server did not listen again after its restart with --hostname" listening_again
grep -q "re-issued .*it lacked 127.0.0.2" "$D/other.log" || fail "no re-issue logged for --hostname"
rc=0; timeout 20 "$BIN/nq-client" --server "127.0.0.2:$P2" --ca "$D/other/ca.pem" \
  --token x --state "$D/s4" 2>"$D/err" || rc=$?
[ $rc -eq 5 ] && grep -q "auth" "$D/err" && ! grep -q "certificate" "$D/err" ||
  fail "after --hostname 127.0.0.2: exit $rc, want 5 (auth, past TLS): $(cat "$D/err")"
kill -TERM "$OTHER"; wait "$OTHER" || true
PIDS=()
# A protocol version mismatch, from a stand-in server speaking TLS with the same certificate.
if command -v python3 >/dev/null; then
  cat >"$D/fake.py" <<'PY'
import json, socket, ssl, struct, sys
d, port, reply = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(d + "/server.pem", d + "/server.key")
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(1)
print("ready", flush=True)
s = ctx.wrap_socket(ls.accept()[0], server_side=True)
def rd(n):
    b = b""
    while len(b) < n:
        x = s.recv(n - len(b))
        if not x:
            raise SystemExit(0)
        b += x
    return b
json.loads(rd(struct.unpack(">I", rd(4))[0]))  # the hello
msg = reply.encode()
s.sendall(struct.pack(">I", len(msg)) + msg)
try:
    s.recv(100)
except Exception:
    pass
PY
  for reply in '{"type":"error","code":"version","message":"server speaks 2","fatal":true}' \
               '{"type":"error","code":"upgrade_required","message":"needs 2","fatal":true,"min_version":2}' \
               '{"type":"welcome","v":2,"job":{"n":10,"depth":3,"state":"running"}}'; do
    P3=$(free_port)
    python3 "$D/fake.py" "$D/data" "$P3" "$reply" >"$D/fake.out" 2>&1 &
    FAKE=$!
    PIDS+=("$FAKE")
    e2e_until 30 "the stand-in server did not start" grep -q ready "$D/fake.out"
    rc=0; timeout 20 "$BIN/nq-client" --server "127.0.0.1:$P3" --ca "$D/data/ca.pem" \
      --token x --state "$D/s4" 2>"$D/err" || rc=$?
    [ $rc -eq 7 ] && grep -Eq "version mismatch|upgrade required" "$D/err" ||
      fail "version mismatch: exit $rc, want 7"
    kill "$FAKE" 2>/dev/null || true; wait "$FAKE" 2>/dev/null || true
    PIDS=()
  done
fi
# One server per data directory, one client per state directory: the second exits 3 and says
# who holds it. The first client (quorum 2 and no second client: it cannot finish the job) holds
# its lock once the lock file names it.
rc=0; "$BIN/nq-server" --n 10 --depth 3 --listen "127.0.0.1:$(free_port)" --data "$D/data" \
  >"$D/err" 2>&1 || rc=$?
[ $rc -eq 3 ] && grep -q "in use by another nq-server (pid $SRV" "$D/err" ||
  fail "second server on one data directory: exit $rc, want 3: $(cat "$D/err")"
start_client "$D" "$PORT" locked
for i in $(seq 1 600); do
  [ "$(cat "$D/state-locked/nq-client.lock" 2>/dev/null)" = "$CPID" ] && break
  kill -0 "$CPID" 2>/dev/null || fail "the first client exited: $(cat "$D/client-locked.log")"
  sleep 0.1
done
rc=0; timeout 60 "$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" \
  --enrol "$(cat "$D/data/enrol.key")" --name other --state "$D/state-locked" 2>"$D/err" || rc=$?
[ $rc -eq 3 ] && grep -q "in use by another nq-client (pid $CPID" "$D/err" ||
  fail "second client on one state directory: exit $rc, want 3: $(cat "$D/err")"
stop_clients
# SIGTERM in start-up: right after the client takes its lock (before its loop runs, while it
# probes the devices) it must still stop cleanly, exit 0 -- it used to die of the signal (143).
for i in 1 2 3 4 5; do
  start_client "$D" "$PORT" "early$i"
  for j in $(seq 1 2000); do
    [ "$(cat "$D/state-early$i/nq-client.lock" 2>/dev/null)" = "$CPID" ] && break
    kill -0 "$CPID" 2>/dev/null || fail "client early$i exited: $(cat "$D/client-early$i.log")"
    sleep 0.005
  done
  stop_clients
done
kill -TERM $SRV; wait $SRV || true; SRV=""
say "refusals: bad args 2, unreadable CA 3, wrong token 5, foreign CA 4, wrong name 4, version 6,"\
  "second server 3, second client 3; SIGTERM in start-up: exit 0 (5 of 5)"

# ---- 1. a full job with three clients ----
D="$TMP/full"
mkdir -p "$D"
PORT=$(free_port)
start_server "$D" "$PORT" 10 3
e2e_start_clients "$D" "$PORT" a b c -- --log-level debug
wait_server_exit 40
check_done "$D" 10
stop_clients
for c in a b c; do
  f="$D/state-$c/token"
  [ -s "$f" ] || fail "client $c stored no token"
  [ "$(stat -c %a "$f")" = 600 ] || fail "token of $c has mode $(stat -c %a "$f")"
  grep -q ") done:" "$D/client-$c.log" || fail "client $c solved nothing"
done
say "full job: 3 clients, tokens stored 0600"

# ---- 2. a client killed with SIGKILL and restarted on its state dir ----
D="$TMP/crash"
mkdir -p "$D"
PORT=$(free_port)
start_server "$D" "$PORT" 12 3
start_client "$D" "$PORT" victim
VICTIM=$CPID
start_client "$D" "$PORT" other
victim_solved() { [ "$(grep -c ") done:" "$D/client-victim.log" || true)" -ge 3 ]; }
e2e_until 120 "the victim did not solve 3 units" victim_solved
# Freeze the server so that what the victim finishes now stays unacknowledged: its sub-second
# results reach the journal once their ack is a second late (lazy records, docs/client.md).
kill -STOP "$SRV"
for i in $(seq 1 1200); do
  [ "$(ls "$D/state-victim/journal" | grep -c '^[0-9]*\.json$' || true)" -ge 1 ] && break
  sleep 0.05
done
kill -9 "$VICTIM"
wait "$VICTIM" 2>/dev/null || true
KEEP=()
for p in "${PIDS[@]}"; do [ "$p" = "$VICTIM" ] || KEEP+=("$p"); done
PIDS=("${KEEP[@]}")
JOURNAL=$(ls "$D/state-victim/journal" | grep -c '^[0-9]*\.json$' || true)
kill -CONT "$SRV"
# A result whose ack is a second late is on disk, however short its unit.
[ "$JOURNAL" -gt 0 ] || fail "no unacknowledged result reached the victim's journal"
say "victim killed with SIGKILL; $JOURNAL result(s) in its journal"
start_client "$D" "$PORT" victim   # same state dir; --enrol again must reuse the stored token
wait_server_exit 40
check_done "$D" 12
stop_clients
grep -q "already enrolled" "$D/client-victim.log" || fail "restarted victim enrolled again"
grep -q "reporting $JOURNAL journalled result" "$D/client-victim.log" ||
  fail "restarted victim did not report its journal first"
LEFT=$(ls "$D/state-victim/journal" | grep -c '^[0-9]*\.json$' || true)
say "client crash: journal re-sent, $LEFT entries left"

# ---- 2b. SIGKILL in the middle of a long unit: the restart resumes it from assigned/ ----
# N=21 depth 2 units take minutes, so the kill lands mid-unit on any machine; the resumed unit
# is then stopped by SIGTERM, which checkpoints it: both stay remembered for the next run.
D="$TMP/midunit"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 21 --depth 2 --quorum 2 --quorum-distinct client
start_client "$D" "$PORT" long
e2e_until 120 "the long client started no unit" grep -q "started" "$D/client-long.log"
grep -q ") done:" "$D/client-long.log" && fail "the N=21 unit finished too fast for this test"
FIRST=$(sed -nE 's/.*\(id ([0-9]+)\) started.*/\1/p' "$D/client-long.log" | head -n 1)
[ -n "$FIRST" ] || fail "the long client started nothing"
kill -9 "$CPID"
wait "$CPID" 2>/dev/null || true
PIDS=()
[ -f "$D/state-long/assigned/$FIRST.json" ] || fail "assignment $FIRST not remembered on disk"
start_client "$D" "$PORT" long
# The log already holds the first run's lines: wait for the second start of $FIRST itself.
started_twice() { [ "$(grep -c "(id $FIRST) started" "$D/client-long.log")" -ge 2 ]; }
e2e_until 120 "the restarted long client did not start assignment $FIRST again" started_twice
grep -q "resuming 2 assignment(s)" "$D/client-long.log" || fail "no resume after SIGKILL"
[ "$(grep -c "(id $FIRST) started" "$D/client-long.log")" -eq 2 ] ||
  fail "assignment $FIRST not resumed (or started twice in one run)"
# The server re-sent what the client holds; nothing beyond the two held assignments was taken.
[ "$(ls "$D/state-long/assigned" | grep -c json)" -eq 2 ] || fail "held assignments changed"
stop_clients
grep -q "(id $FIRST) stopped at" "$D/client-long.log" || fail "SIGTERM did not stop the unit"
[ -f "$D/state-long/assigned/$FIRST.json" ] || fail "stopped assignment $FIRST forgotten"
[ -f "$D/state-long/checkpoint/$FIRST.ckpt" ] || fail "stopped unit $FIRST not checkpointed"
kill -TERM "$SRV"; wait "$SRV" || true; SRV=""
say "mid-unit SIGKILL: assignment $FIRST resumed from assigned/; SIGTERM checkpoints it, kept on disk"

# ---- 3. the server stopped and restarted under two running clients ----
D="$TMP/restart"
mkdir -p "$D"
PORT=$(free_port)
start_server "$D" "$PORT" 12 3
start_client "$D" "$PORT" x
start_client "$D" "$PORT" y
# Both clients must have had a session and the job some results before the stop (on a busy
# machine one client can start long after the other: wait for states, failing only at 120 s).
ok=0
for i in $(seq 1 2400); do
  if grep -q "session open" "$D/client-x.log" 2>/dev/null &&
     grep -q "session open" "$D/client-y.log" 2>/dev/null &&
     [ "$(cat "$D"/client-*.log | grep -c "ack " || true)" -ge 40 ]; then ok=1; break; fi
  sleep 0.05
done
[ $ok -eq 1 ] || fail "clients x and y did not both open a session and report 40 results in 120 s"
kill -TERM "$SRV"
rc=0; wait "$SRV" || rc=$?
SRV=""
[ $rc -eq 0 ] || fail "nq-server exited $rc on SIGTERM"
grep -q "job N=12 done" "$D/server.log" && fail "the job ended before the restart; test too short"
start_server "$D" "$PORT" 12 3
wait_server_exit 60
check_done "$D" 12
for c in x y; do
  [ "$(grep -c "session open" "$D/client-$c.log")" -ge 2 ] || fail "client $c did not reconnect"
done
stop_clients
say "server restart: both clients reconnected"
# ---- 4. a client idle when the job ends hears `done` and leaves by itself ----
# Alone, client "early" can give each unit only one of its two results; it then waits for its
# no_work retry (30 s). Client "late" gives the second results, which finishes the job: the
# server tells every connected client at once, so "early" must exit 0 long before its retry
# (and before the --exit-when-done server, gone 2 s later, would leave it reconnecting forever).
D="$TMP/idle"
mkdir -p "$D"
PORT=$(free_port)
start_server "$D" "$PORT" 10 3
start_client "$D" "$PORT" early
EARLY=$CPID
units() { "$BIN/nq-admin" status --json --data "$D/data" |
  python3 -c "import json,sys; u=json.load(sys.stdin)['units']; print(u['total'], u['awaiting'])"; }
for i in $(seq 1 300); do
  read -r TOTAL AWAIT <<<"$(units)"
  [ "$AWAIT" = "$TOTAL" ] && break
  sleep 0.1
done
[ "$AWAIT" = "$TOTAL" ] || fail "client early did not give one result for every unit ($AWAIT/$TOTAL)"
T_LATE=$SECONDS
start_client "$D" "$PORT" late
# The 20 s run from the job's end (the late client's start and its share of the job take what
# they take on a busy machine).
e2e_until 120 "the job did not end once client late joined" grep -q "job N=10 done" "$D/server.log"
for i in $(seq 1 200); do kill -0 "$EARLY" 2>/dev/null || break; sleep 0.1; done
kill -0 "$EARLY" 2>/dev/null && fail "idle client early did not leave within 20 s of the job's end"
rc=0; wait "$EARLY" || rc=$?
[ $rc -eq 0 ] || fail "idle client early exited $rc, want 0"
grep -q "the job is done" "$D/client-early.log" || fail "client early never heard that the job is done"
KEEP=()
for p in "${PIDS[@]}"; do [ "$p" = "$EARLY" ] || KEEP+=("$p"); done
PIDS=("${KEEP[@]}")
wait_server_exit 20
check_done "$D" 10
stop_clients
say "idle client: heard done and exited 0 within $((SECONDS - T_LATE)) s of the second client's start"
say "PASS"
