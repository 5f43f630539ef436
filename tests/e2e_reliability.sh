#!/usr/bin/env bash
# Reliability end to end (promises 1-3), real nq-server / nq-client / nq-admin processes on
# 127.0.0.1, each scenario with its own free port and temporary directories:
#   1. crash: N=13 depth 3, three clients; the server is killed with SIGKILL at random moments
#      (KILLS times, at random points of its progress: after 30..600 of its 702 results) and restarted on the same data directory each time;
#   2. client fault: one of three clients is killed with SIGKILL mid-run and never restarted; the
#      server runs with --lease-seconds 600 --lease-min 2: the dead client's leases were sized from
#      its own solve times (a few seconds), so they expire and are reissued long before 600 s;
#   3. liar: one client with NQ_CLIENT_FAULT=lie among two honest ones (quorum 2, ban threshold 3).
#   4. colluders (depth 2, so fewer and larger units): quorum by owner, --spot-check
#      100; two owners' clients report the same
#      lie and verify it, so the job finishes with a wrong total; two honest owners join, spot
#      checks disagree, every unit is re-opened (the finished job runs again) and verified again
#      by the honest majority; the liars end suspect. Then an honest owner is banned: every unit
#      it helped verify is re-opened, and a third honest owner verifies them again.
#   5. trusted resolution (depth 2): with owners made, the server's own enrolment key is
#      refused; an owner is trusted (nq-admin owner trust); two colluding owners verify a lie on
#      every unit but the job waits for its spot checks; the trusted owner's client takes them, and
#      its disagreement bans both colluding owners; two honest owners and it verify everything
#      again; the honest are never banned.
# Each job must finish with the published N=13 values (TOTAL 73712, UNIQUE 9233, COUNT2 4,
# COUNT4 32, COUNT8 9197), every unit verified exactly once (units total == verified == the
# generator's count, nothing disputed) and the verified node count equal to the single-process
# solver's (a lost or doubled unit would change it). Figures are printed as "reliability: ..." lines.
#
#   bash tests/e2e_reliability.sh BUILD_DIR
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_reliability.sh BUILD_DIR}" && pwd)"
N=13
DEPTH=3
KILLS="${NQ_REL_KILLS:-4}"
# seconds per scenario: generous, since a client told no_work waits the server's 30 s retry
JOB_TIMEOUT="${NQ_REL_TIMEOUT:-180}"
for p in nq-server nq-client nq-client-test nq-admin nq-solve; do
  [ -x "$BIN/$p" ] || { echo "reliability: $BIN/$p missing"; exit 1; }
done
command -v python3 >/dev/null || { echo "reliability: python3 needed"; exit 1; }

TAG=reliability
. "$(dirname "$0")/lib_e2e.sh"
e2e_init rel

# Independent expectations from the single-process solver.
EXP_UNITS=$("$BIN/nq-solve" $N --depth $DEPTH --list-units | grep -c :)
D2_UNITS=$("$BIN/nq-solve" $N --depth 2 --list-units | grep -c :)
ALL_NODES=$("$BIN/nq-solve" $N --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"])')
EXP_NODES=$((ALL_NODES - D2_UNITS))   # nodes(d2 unit) = 1 + sum of its depth-3 children's nodes

# start_server DIR PORT [extra args]: nq-server for the job in the background (SRV = its pid).
start_server() {
  local dir=$1 port=$2
  shift 2
  e2e_start_server "$dir" "$port" --n $N --depth $DEPTH --quorum 2 --max-results 5 \
    --quorum-distinct client "$@"
}

# start_client DIR PORT NAME [env...]: an enrolling client with its own state dir; CPID = pid.
# CLIENT_NICE (default 0) is its nice value; ENROL_KEY (default the server's) its enrolment key.
start_client() {
  local dir=$1 port=$2 name=$3 bin=nq-client
  shift 3
  case " $* " in *" NQ_CLIENT_FAULT="*) bin=nq-client-test ;; esac # the test switches' build
  E2E_CLIENT=$bin E2E_WRAP="nice -n ${CLIENT_NICE:-0} env $*" E2E_KEY=${ENROL_KEY:-} \
    e2e_start_client "$dir" "$port" "$name" --exit-when-done --log-level debug # "done:" lines
}

# admin_json DIR CMD [ARGS...]: nq-admin CMD --data DIR/data ARGS --json (local mode), retried
# while the db is busy. For `status`, exit status 3 is nq-admin's "done, but the answer differs
# from the published value": the JSON is still printed, and check_final reports the difference.
admin_json() {
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
  "$BIN/nq-admin" "$cmd" --data "$dir/data" "$@" --json
}
status() { admin_json "$1" status --n $N; }
clients_json() { admin_json "$1" clients; }
is_done() { status "$1" | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["done"] else 1)'; }
verified_units() { status "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["units"]["verified"])'; }

wait_done() {
  local dir=$1 t0=$SECONDS
  while ! is_done "$dir"; do
    [ $((SECONDS - t0)) -lt "$JOB_TIMEOUT" ] || fail "job not done within ${JOB_TIMEOUT}s: $(status "$dir" | head -c 600)"
    kill -0 "$SRV" 2>/dev/null || fail "nq-server died"
    sleep 0.25
  done
}

# check_final DIR LABEL: the published values, every unit verified once, exact node count.
check_final() {
  status "$1" | EXP_UNITS=$EXP_UNITS EXP_NODES=$EXP_NODES LABEL="$2" python3 -c '
import json, os, sys
s = json.load(sys.stdin)
label = os.environ["LABEL"]
want = {"total": "73712", "unique": "9233", "c2": "4", "c4": "32", "c8": "9197",
        "nodes": os.environ["EXP_NODES"]}
errs = []
if not s.get("done"): errs.append("job not done")
fin = s.get("final") or {}
for k, v in want.items():
    if str(fin.get(k)) != v: errs.append("final %s = %s, want %s" % (k, fin.get(k), v))
u = s["units"]
exp_units = int(os.environ["EXP_UNITS"])
if u["total"] != exp_units: errs.append("units total %s, generator says %d" % (u["total"], exp_units))
if u["verified"] != u["total"]: errs.append("verified %s of %s units" % (u["verified"], u["total"]))
for st in ("pending", "leased", "awaiting", "disputed"):
    if u.get(st, 0) != 0: errs.append("%d units %s" % (u[st], st))
if s.get("disputed"): errs.append("disputed units listed")
if s.get("match") is not True: errs.append("match = %s" % s.get("match"))
if errs:
    print("reliability: FAIL %s: %s" % (label, "; ".join(errs)))
    sys.exit(1)
print("reliability: %s: TOTAL %s UNIQUE %s COUNT2 %s COUNT4 %s COUNT8 %s, nodes %s, units %d/%d verified, results %s, lost 0, doubled 0"
      % (label, fin["total"], fin["unique"], fin["c2"], fin["c4"], fin["c8"], fin["nodes"],
         u["verified"], u["total"], s.get("results")))
'
}

rand_delay() { python3 -c "import random; print('%.2f' % random.uniform($1, $2))"; }

T_ALL=$SECONDS
echo "reliability: N=$N depth $DEPTH: $EXP_UNITS units, expected verified nodes $EXP_NODES"

# ---- 1. crash safety: SIGKILL the server at random moments --------------------------------------
# crash_run ATTEMPT: one run of the scenario in $TMP/crash-ATTEMPT; sets kills and midrun.
crash_run() {
  D="$TMP/crash-$1"
  mkdir -p "$D/data"
  PORT=$(free_port)
  start_server "$D" "$PORT" --lease-seconds 5
  # The clients run at a lower priority than this script, so that on a loaded machine (ctest -j2
  # next to the hostile flood) the kills still come while the job runs.
  for c in a b c; do CLIENT_NICE=10 start_client "$D" "$PORT" "crash-$c"; done
  kills=0
  midrun=0
  t0=$SECONDS
  # Kill moments are random points of the job's progress: a kill comes when the clients' logs
  # show the next of KILLS random numbers (30..600 of the 702 results) of accepted acks, or after
  # 4 s without getting there. Status is read only while the server is down (uncontended).
  TARGETS=$(python3 -c "import random; print(' '.join(map(str, sorted(random.sample(range(30, 600, 10), $KILLS)))))")
  echo "reliability: crash: kills after $TARGETS accepted results"
  local target t1 v stored acked state
  for target in $TARGETS; do
    t1=$SECONDS
    while [ "$(acks)" -lt "$target" ] && [ $((SECONDS - t1)) -lt 4 ]; do sleep 0.03; done
    kill -9 "$SRV"
    wait "$SRV" 2>/dev/null || true
    kills=$((kills + 1))
    v=$(verified_units "$D")
    # Every result the server acknowledged before dying must be in the store.
    stored=$(status "$D" | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"])')
    acked=$(cat "$D"/client-*.log | grep -o 'ack [0-9]*: accepted' | sort -u | wc -l)
    [ "$acked" -le "$stored" ] || fail "kill $kills: $acked results acknowledged but only $stored stored"
    if is_done "$D"; then state="done"; else state="running"; midrun=$((midrun + 1)); fi
    echo "reliability: crash: kill -9 #$kills at $((SECONDS - t0))s: job $state, $acked results acknowledged, $stored stored (lost 0), $v/$EXP_UNITS units verified"
    start_server "$D" "$PORT" --lease-seconds 5
  done
  wait_done "$D"
  check_final "$D" "crash ($kills kills, $midrun mid-run)"
  stop_all
  echo "reliability: crash scenario took $((SECONDS - t0))s"
}
acks() { cat "$D"/client-*.log 2>/dev/null | grep -c 'ack [0-9]*: accepted' || true; }
# Every run must end exact; a run whose job outran the kills (a starved test script) proves too
# little about crashes and is repeated, up to three runs.
for attempt in 1 2 3; do
  crash_run $attempt
  [ $midrun -lt 2 ] || break
  echo "reliability: crash: run $attempt: only $midrun of $kills kills hit a running job (busy machine); again"
done
[ $midrun -ge 2 ] || fail "only $midrun of $kills kills hit a running job in 3 runs (the job finished too fast)"

# ---- 2. a client killed with SIGKILL and never restarted ----------------------------------------
D="$TMP/client-kill"
mkdir -p "$D/data"
PORT=$(free_port)
start_server "$D" "$PORT" --lease-seconds 600 --lease-min 2
t0=$SECONDS
delay=$(rand_delay 0 0.05)
# niced: on a busy machine this script's polling, not the victim, gets the CPU first
CLIENT_NICE=19 start_client "$D" "$PORT" victim
VICTIM=$CPID
# The victim works alone first. A random moment (0..0.05 s) after it has solved 12 units (so the
# leases it holds were sized from its history: 3 results are needed, and its first ones got the
# full 600 s) it is frozen with SIGSTOP, its leases are read while it cannot drain them, and only
# then is it killed with SIGKILL. A lone client does ~500 of these tiny units a second here, so a
# fast machine gets through all 351 in well under a second: the short delay, the freeze and the
# victim's nice value are what make "it held leases when it died" certain rather than a race.
until [ "$(grep -c ') done:' "$D/client-victim.log" 2>/dev/null)" -ge 12 ]; do
  kill -0 "$VICTIM" 2>/dev/null || fail "the victim client exited"
  [ $((SECONDS - t0)) -lt 120 ] || fail "the victim did not solve 12 units in 120 s"
  sleep 0.01
done
sleep "$delay"
kill -STOP "$VICTIM"
held=$(clients_json "$D" | python3 -c '
import json, sys
c = [x for x in json.load(sys.stdin)["clients"] if x["name"] == "victim"]
print(c[0]["outstanding"] if c else 0)')
# How long its leases still run, from the database (read-only).
lease_left=$(python3 -c '
import sqlite3, sys, time
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True, timeout=10)
d = db.execute("SELECT max(a.deadline) FROM assignments a JOIN clients c ON c.id = a.client_id "
               "WHERE c.name = ? AND a.state = ?", ("victim", "leased")).fetchone()[0]
print(int(d - time.time()) if d else -1)' "$D/data/nq.db")
kill -9 "$VICTIM"
wait "$VICTIM" 2>/dev/null || true
[ "$held" -gt 0 ] || fail "the victim held no lease when it was killed"
[ "$lease_left" -le 30 ] ||
  fail "the victim's leases run $lease_left s more: not sized from its solve times (longest lease 600 s)"
echo "reliability: client SIGKILL: the victim's leases end within $lease_left s (longest lease 600 s)"
for c in a b; do start_client "$D" "$PORT" "honest-$c"; done
wait_done "$D"
check_final "$D" "client SIGKILL"
clients_json "$D" | python3 -c '
import json, sys
c = {x["name"]: x for x in json.load(sys.stdin)["clients"]}
v = c["victim"]
if v["outstanding"] != 0:
    print("reliability: FAIL: the dead client still holds %d leases" % v["outstanding"]); sys.exit(1)
print("reliability: client SIGKILL: victim held '"$held"' leases when killed, 0 after; its valid results %d" % v["valid"])'
stop_all
echo "reliability: client-kill scenario took $((SECONDS - t0))s"

# ---- 3. a liar among honest clients --------------------------------------------------------------
D="$TMP/liar"
mkdir -p "$D/data"
PORT=$(free_port)
start_server "$D" "$PORT" --lease-seconds 5 --ban-threshold 3
t0=$SECONDS
start_client "$D" "$PORT" liar NQ_CLIENT_FAULT=lie
LIAR=$CPID
for c in a b; do start_client "$D" "$PORT" "honest-$c"; done
wait_done "$D"
check_final "$D" "liar"
clients_json "$D" | python3 -c '
import json, sys
c = {x["name"]: x for x in json.load(sys.stdin)["clients"]}
l = c["liar"]
errs = []
if not l["banned"]: errs.append("liar not banned")
if l["invalid"] < 3: errs.append("liar has %d invalid results (< ban threshold 3)" % l["invalid"])
if l["valid"] != 0: errs.append("liar has %d valid results" % l["valid"])
for n in ("honest-a", "honest-b"):
    if c[n]["banned"] or c[n]["invalid"]: errs.append("%s banned=%s invalid=%d" % (n, c[n]["banned"], c[n]["invalid"]))
if errs:
    print("reliability: FAIL liar: " + "; ".join(errs)); sys.exit(1)
print("reliability: liar: banned, %d invalid / %d valid results; honest clients %d + %d valid, 0 invalid"
      % (l["invalid"], l["valid"], c["honest-a"]["valid"], c["honest-b"]["valid"]))'
# The banned liar is refused and stops by itself (exit status 5, CLI_EXIT_AUTH).
for i in $(seq 1 100); do kill -0 "$LIAR" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$LIAR" 2>/dev/null; then
  echo "reliability: liar client still running 10 s after the job finished (killed)"
  kill "$LIAR" 2>/dev/null || true
else
  set +e
  wait "$LIAR"
  lrc=$?
  set -e
  echo "reliability: liar client exited with status $lrc"
fi
stop_all
echo "reliability: liar scenario took $((SECONDS - t0))s"
# ---- 4. colluding owners caught by spot checks; a ban re-opens and re-verifies ------------------
D="$TMP/collude"
mkdir -p "$D/data"
PORT=$(free_port)
# Quorum by owner (the default), every verified unit spot-checked, no auto-ban: the spot checks
# alone must catch the lie.
e2e_start_server "$D" "$PORT" --n $N --depth 2 --quorum 2 --max-results 3 \
  --spot-check 100 --ban-threshold 0 --lease-seconds 5
# At depth 2 the units are the depth-2 prefixes and their nodes add up to nq-solve's.
collude_final() { EXP_UNITS=$D2_UNITS EXP_NODES=$ALL_NODES check_final "$D" "$1"; }
t0=$SECONDS
# owner_key NAME: a new owner's enrolment key (nq-admin owner add, local mode).
owner_key() { admin_json "$D" owner add "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["enrol_key"])'; }
# status_field EXPR: a Python expression over the status JSON `s`, printed.
status_field() { status "$D" | python3 -c "import json,sys; s = json.load(sys.stdin); print($1)"; }
# wait_for EXPR WHAT: poll the status until EXPR holds.
wait_for() {
  local t1=$SECONDS
  until [ "$(status_field "$1")" = True ]; do
    [ $((SECONDS - t1)) -lt "$JOB_TIMEOUT" ] || fail "collude: $2 not reached within ${JOB_TIMEOUT}s: $(status "$D" | head -c 600)"
    kill -0 "$SRV" 2>/dev/null || fail "nq-server died"
    sleep 0.25
  done
}
for o in evil1 evil2 honest1 honest2 honest3; do eval "KEY_$o=\$(owner_key $o)"; done
ENROL_KEY=$KEY_evil1 start_client "$D" "$PORT" e1 NQ_CLIENT_FAULT=lie
ENROL_KEY=$KEY_evil2 start_client "$D" "$PORT" e2 NQ_CLIENT_FAULT=lie
wait_for 's["done"] and s["match"] is False' "the colluders' lie verified"
wrong=$(status_field 's["final"]["total"]')
echo "reliability: collude: two colluding owners verified a lie: TOTAL $wrong (published 73712)"
ENROL_KEY=$KEY_honest1 start_client "$D" "$PORT" h1
ENROL_KEY=$KEY_honest2 start_client "$D" "$PORT" h2
wait_for 's["done"] and s["match"] is True' "the job verified again by the honest owners"
collude_final "collude (spot checks at 100%)"
clients_json "$D" | python3 -c '
import json, sys
c = {x["name"]: x for x in json.load(sys.stdin)["clients"]}
errs = []
for n in ("e1", "e2"):
    if not c[n]["suspect"]: errs.append("%s not suspect" % n)
    if c[n]["valid"] != 0: errs.append("%s has %d valid results" % (n, c[n]["valid"]))
    if c[n]["invalid"] == 0: errs.append("%s has no invalid result" % n)
for n in ("h1", "h2"):
    if c[n]["suspect"] or c[n]["invalid"]: errs.append("%s suspect=%s invalid=%d" % (n, c[n]["suspect"], c[n]["invalid"]))
if errs:
    print("reliability: FAIL collude: " + "; ".join(errs)); sys.exit(1)
print("reliability: collude: liars suspect with %d + %d invalid results, honest owners %d + %d valid"
      % (c["e1"]["invalid"], c["e2"]["invalid"], c["h1"]["valid"], c["h2"]["valid"]))'
# Ban honest1 through the running server: what it helped verify is re-opened; honest3 and h2
# verify it again.
"$BIN/nq-admin" owner ban honest1 --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" \
  --data "$D/data" --json >"$D/ban.json" || fail "owner ban failed"
reopened=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["reopened"])' "$D/ban.json")
[ "$reopened" -gt 0 ] || fail "collude: the ban re-opened no unit"
ENROL_KEY=$KEY_honest3 start_client "$D" "$PORT" h3
wait_for 's["done"] and s["match"] is True and s["units"]["verified"] == s["units"]["total"]' \
  "the job verified again after the ban"
collude_final "collude (after banning an honest owner)"
echo "reliability: collude: the ban re-opened $reopened unit(s), verified again without it"
stop_all
echo "reliability: collude scenario took $((SECONDS - t0))s"
# ---- 5. trusted resolution: colluders caught by a trusted owner ---------------------------------
D="$TMP/trusted"
mkdir -p "$D/data"
PORT=$(free_port)
# Quorum by owner, a low spot-check share, auto-bans on: only a trusted result may ban.
e2e_start_server "$D" "$PORT" --n $N --depth 2 --quorum 2 --max-results 3 --spot-check 20 \
  --lease-seconds 5
t0=$SECONDS
for o in evil1 evil2 honest1 honest2 lab; do eval "KEY_$o=\$(owner_key $o)"; done
# Owners exist: the server's own key enrols nobody (nq-client exits 5, enrol_closed).
rc=0
timeout 60 "$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" \
  --enrol "$(cat "$D/data/enrol.key")" --name intruder --state "$D/state-intruder" \
  >"$D/client-intruder.log" 2>&1 || rc=$?
[ $rc -eq 5 ] || fail "trusted: enrolment with the server's key exited $rc, want 5"
grep -q "enrol" "$D/client-intruder.log" || fail "trusted: the refusal does not say why"
[ "$(status_field 's["trust"]["rests_on"]')" = votes ] || fail "trusted: status does not say votes"
admin_json "$D" owner trust lab >/dev/null
[ "$(status_field 's["trust"]["rests_on"]')" = trusted ] || fail "trusted: status does not say trusted"
# The colluders alone verify a lie on every unit; the job cannot finish (spot checks wanted).
ENROL_KEY=$KEY_evil1 start_client "$D" "$PORT" e1 NQ_CLIENT_FAULT=lie
ENROL_KEY=$KEY_evil2 start_client "$D" "$PORT" e2 NQ_CLIENT_FAULT=lie
wait_for 's["units"]["verified"] == s["units"]["total"] and s["units"]["spot_checks"] > 0' \
  "the colluders' lies verified"
[ "$(status_field 's["done"]')" = False ] || fail "trusted: the job finished on the colluders' votes"
echo "reliability: trusted: two colluding owners verified a lie on all $(status_field 's["units"]["total"]') units; the job waits for $(status_field 's["units"]["spot_checks"]') spot check(s)"
# The trusted owner's spot checks ban both colluding owners; then the honest owners join.
ENROL_KEY=$KEY_lab start_client "$D" "$PORT" lab
wait_for 's["clients"]["banned"] == 2' "the colluders banned"
ENROL_KEY=$KEY_honest1 start_client "$D" "$PORT" h1
ENROL_KEY=$KEY_honest2 start_client "$D" "$PORT" h2
wait_for 's["done"] and s["match"] is True' "the job verified again"
EXP_UNITS=$D2_UNITS EXP_NODES=$ALL_NODES check_final "$D" "trusted (colluders banned by a trusted result)"
clients_json "$D" >"$D/clients.json"
admin_json "$D" owners >"$D/owners.json"
python3 - "$D/clients.json" "$D/owners.json" <<'PY' || fail "trusted: bans wrong"
import json, sys
c = {x["name"]: x for x in json.load(open(sys.argv[1]))["clients"]}
o = {x["name"]: x for x in json.load(open(sys.argv[2]))["owners"]}
errs = []
for n in ("e1", "e2"):
    if not c[n]["banned"]: errs.append("%s not banned" % n)
    if c[n]["valid"] != 0: errs.append("%s still has %d valid results" % (n, c[n]["valid"]))
for n in ("h1", "h2", "lab"):
    if c[n]["banned"] or c[n]["invalid"]: errs.append("%s banned=%s invalid=%d" % (n, c[n]["banned"], c[n]["invalid"]))
for n in ("evil1", "evil2"):
    if not o[n]["banned"]: errs.append("owner %s not banned" % n)
if not o["lab"]["trusted"]: errs.append("lab not trusted")
if errs:
    print("reliability: FAIL trusted: " + "; ".join(errs)); sys.exit(1)
print("reliability: trusted: colluders banned with %d + %d invalid, 0 valid; honest %d + %d valid, 0 invalid, never banned; trusted owner %d valid"
      % (c["e1"]["invalid"], c["e2"]["invalid"], c["h1"]["valid"], c["h2"]["valid"], c["lab"]["valid"]))
PY
stop_all
echo "reliability: trusted scenario took $((SECONDS - t0))s"
# No sanitizer report from any process (sanitizer builds), in any scenario.
if grep -lE 'ERROR: (Address|Leak|Thread)Sanitizer|runtime error:' "$TMP"/*/server.log "$TMP"/*/client-*.log 2>/dev/null; then
  fail "sanitizer report in the logs above"
fi
echo "reliability: all scenarios passed in $((SECONDS - T_ALL))s"
