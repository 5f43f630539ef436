#!/usr/bin/env bash
# nq-client as a guest on a volunteer's machine, with real processes on 127.0.0.1:
#   0. frictions: no arguments prints the usage (exit 2); --version on every program; a CA file
#      that is not PEM says so (exit 3); an unreadable --token-file (exit 3); bad --cpu-limit /
#      --priority values (exit 2);
#   1. N=21 in units of many seconds (depth 2: between two units the solver waits for the network,
#      which short units would make the larger part of its time), clients enrolled through
#      --enrol-file (the key is not on their command line), --threads 1:
#      a. default priority, --pause-file P present at start: the solver thread runs under
#         SCHED_IDLE, the network (main) thread under SCHED_OTHER, and gets no CPU while paused;
#      b. --priority normal --cpu-limit 50: over 10 s the solver thread is runnable (on a CPU or
#         waiting for one: schedstat; a busy machine does not change it, unlike the CPU time it
#         gets) 40-60% of the time and on a CPU at most 60%; a pause file created then
#         stops it within 1 s (at most 2 clock ticks of CPU in the 2 s after that), and it resumes when the file goes.
#         Normal priority here because an idle thread on a saturated machine gets no CPU at all,
#         so there would be nothing to limit or to stop;
#   2. N=12 through a client with --cpu-limit 30 and a pause at start: the job is exact (at
#      normal priority, so that other tests running beside this one cannot starve it).
#
#   bash tests/e2e_guest.sh BUILD_DIR
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_guest.sh BUILD_DIR}" && pwd)"
for p in nq-server nq-client; do
  [ -x "$BIN/$p" ] || { echo "e2e_guest: $BIN/$p missing"; exit 1; }
done

TAG=e2e_guest
. "$(dirname "$0")/lib_e2e.sh"
e2e_init guest

# ---- 0. frictions ----
rc=0; "$BIN/nq-client" >"$TMP/out" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "^usage: nq-client" "$TMP/out" || fail "no arguments: exit $rc, want 2 + usage"
for p in nq-server nq-client nq-admin nq-solve nq-loadgen; do
  [ -x "$BIN/$p" ] || continue
  "$BIN/$p" --version >"$TMP/out" 2>&1 || fail "$p --version failed"
  # nq-solve speaks no protocol (it links no network code): its second line names the solver.
  second="^protocol "; [ "$p" = nq-solve ] && second="^solver nq-solver-"
  grep -Eq "^$p [0-9]+\.[0-9]+\.[0-9]+$" "$TMP/out" && grep -q "$second" "$TMP/out" ||
    fail "$p --version: $(head -c 200 "$TMP/out")"
done
echo "not a certificate" >"$TMP/notpem"
rc=0; "$BIN/nq-client" --server 127.0.0.1:9 --ca "$TMP/notpem" --token x --state "$TMP/s0" \
  2>"$TMP/err" || rc=$?
[ $rc -eq 3 ] && grep -q "not a PEM certificate" "$TMP/err" || fail "non-PEM CA: exit $rc, want 3"
rc=0; "$BIN/nq-client" --server 127.0.0.1:9 --ca "$TMP/notpem" --token-file "$TMP/nope" \
  --state "$TMP/s0" 2>"$TMP/err" || rc=$?
[ $rc -eq 3 ] && grep -q "cannot read --token-file" "$TMP/err" || fail "missing token file: exit $rc"
rc=0; NQ_TOKEN_FILE="$TMP/nope" "$BIN/nq-client" --server 127.0.0.1:9 --ca "$TMP/notpem" \
  --state "$TMP/s0" 2>"$TMP/err" || rc=$?
[ $rc -eq 3 ] && grep -q "cannot read NQ_TOKEN_FILE" "$TMP/err" || fail "NQ_TOKEN_FILE: exit $rc"
for bad in "--cpu-limit 0" "--cpu-limit 101" "--cpu-limit x" "--priority high"; do
  rc=0
  # shellcheck disable=SC2086
  "$BIN/nq-client" --server 127.0.0.1:9 --ca "$TMP/notpem" --token x $bad 2>"$TMP/err" || rc=$?
  [ $rc -eq 2 ] || fail "$bad: exit $rc, want 2"
done
say "frictions: usage, --version, non-PEM CA, token file, bad values"

# solver_tid PID: the client's solver thread (named nq-solver once it has a unit), or "".
solver_tid() {
  local t
  for t in /proc/"$1"/task/*; do
    [ "$(cat "$t/comm" 2>/dev/null)" = nq-solver ] && { basename "$t"; return 0; }
  done
  return 0
}
# policy PID TID: the scheduling policy (field 41 of stat; 0 normal, 5 SCHED_IDLE).
policy() { awk '{print $41}' "/proc/$1/task/$2/stat"; }
# runnable PID TID SECONDS: percent of SECONDS the thread was runnable (on a CPU or waiting for
# one): what the CPU limit caps, and what a busy machine does not change (unlike the CPU time
# the thread gets). From the kernel's schedstat (run + run-queue wait); without one, by sampling
# the thread's state every 5 ms (biased on a loaded machine: the sampler runs more often while
# the solver sleeps).
runnable() {
  python3 - "$@" <<'PY'
import sys, time
base = "/proc/%s/task/%s/" % (sys.argv[1], sys.argv[2])
secs = float(sys.argv[3])
def wanted():
    try:
        with open(base + "schedstat") as f:
            run, wait = f.read().split()[:2]
        return (int(run) + int(wait)) / 1e9
    except OSError:
        return None
w0, t0 = wanted(), time.monotonic()
if w0 is not None:
    time.sleep(secs)
    print(int((wanted() - w0) * 100 / (time.monotonic() - t0)))
    sys.exit(0)
n = r = 0
end = t0 + secs
while time.monotonic() < end:
    with open(base + "stat") as f:
        r += f.read().rsplit(")", 1)[1].split()[0] == "R"
    n += 1
    time.sleep(0.005)
print(r * 100 // n)
PY
}
# cpu_ticks PID TID: utime + stime of the thread, in clock ticks.
cpu_ticks() { awk '{printf "%d\n", $14 + $15}' "/proc/$1/task/$2/stat"; }

# start_client NAME ARGS...: a client of the N=21 job enrolled through --enrol-file; CPID = its pid,
# TID = its solver thread once it has a unit (within 60 s).
start_client() {
  local name=$1 i
  shift
  "$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" \
    --enrol-file "$D/enrol.secret" --name "$name" --threads 1 --state "$D/state-$name" "$@" \
    >>"$D/client-$name.log" 2>&1 &
  CPID=$!
  PIDS+=("$CPID")
  TID=""
  for i in $(seq 1 600); do
    kill -0 "$CPID" 2>/dev/null || fail "nq-client $name exited"
    TID=$(solver_tid "$CPID")
    [ -n "$TID" ] && return 0
    sleep 0.1
  done
  fail "no nq-solver thread in client $name within 60 s"
}
# stop_client PID: SIGTERM, exit 0.
stop_client() {
  local rc=0
  kill -TERM "$1"
  wait "$1" || rc=$?
  [ $rc -eq 0 ] || fail "client $1 exited $rc after SIGTERM"
}

# ---- 1. priority, pause, CPU limit ----
D="$TMP/n21"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 21 --depth 2 --quorum 1
install -m 600 "$D/data/enrol.key" "$D/enrol.secret"

# 1a. The default priority, paused as soon as it has a unit (so that nothing here depends on how
# much CPU an idle thread gets on a busy machine). A client paused from the start takes no unit
# at all (the server keeps work for clients that run: docs/client.md), so it has no solver thread.
start_client idle --pause-file "$D/pause-idle"
touch "$D/pause-idle"
for i in $(seq 1 100); do
  grep -q "solver paused" "$D/client-idle.log" && break
  sleep 0.1
done
grep -q "solver paused" "$D/client-idle.log" || fail "the client did not say it is paused"
# The pause takes hold between two tasks (docs/client.md): wait until the solver thread's CPU
# time stands still over half a second (a busy machine may take longer), then check that it stays.
prev=$(cpu_ticks "$CPID" "$TID")
for i in $(seq 1 60); do
  sleep 0.5
  cur=$(cpu_ticks "$CPID" "$TID")
  [ "$cur" = "$prev" ] && break
  prev=$cur
done
if tr '\0' ' ' <"/proc/$CPID/cmdline" | grep -qF "$(cat "$D/enrol.secret")"; then
  fail "the enrolment key is on the command line"
fi
[ "$(policy "$CPID" "$TID")" = 5 ] || fail "solver thread policy $(policy "$CPID" "$TID"), want 5 (SCHED_IDLE)"
[ "$(policy "$CPID" "$CPID")" = 0 ] || fail "network thread policy $(policy "$CPID" "$CPID"), want 0"
c0=$(cpu_ticks "$CPID" "$TID")
sleep 1.5
c1=$(cpu_ticks "$CPID" "$TID")
[ $((c1 - c0)) -le 2 ] || fail "the solver ran while paused ($c0 -> $c1 ticks)"
say "default priority: solver thread under SCHED_IDLE, network thread normal; paused"
stop_client "$CPID"

# 1b. The CPU limit and a pause in the middle, at normal priority (a solver that gets a CPU).
start_client limited --priority normal --cpu-limit 50 --pause-file "$D/pause-limited"
sleep 1
t0=$(date +%s%N)
k0=$(cpu_ticks "$CPID" "$TID")
pct=$(runnable "$CPID" "$TID" 10)
t1=$(date +%s%N)
k1=$(cpu_ticks "$CPID" "$TID")
on=$(( (k1 - k0) * 100 * 1000000000 / $(getconf CLK_TCK) / (t1 - t0) ))
say "--cpu-limit 50: the solver thread was runnable $pct% of 10 s (on a CPU $on%)"
[ "$pct" -ge 40 ] && [ "$pct" -le 60 ] || fail "--cpu-limit 50: runnable $pct%, want 40..60"
[ $on -le 60 ] || fail "--cpu-limit 50: on a CPU $on% of the time"

touch "$D/pause-limited"
sleep 1
p0=$(cpu_ticks "$CPID" "$TID")
sleep 2
p1=$(cpu_ticks "$CPID" "$TID")
[ $((p1 - p0)) -le 2 ] || fail "the solver ran after the pause file came ($p0 -> $p1 ticks)"
rm -f "$D/pause-limited"
for i in $(seq 1 300); do
  [ $(($(cpu_ticks "$CPID" "$TID") - p1)) -gt 2 ] && break
  sleep 0.1
done
[ $(($(cpu_ticks "$CPID" "$TID") - p1)) -gt 2 ] || fail "the solver did not resume within 30 s"
say "pause file: the solver stopped within 1 s and resumed"
stop_client "$CPID"
PIDS=()
stop_all

# ---- 2. exact counts through a pause and a CPU limit ----
D="$TMP/n12"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 12 --quorum 1 --exit-when-done
install -m 600 "$D/data/enrol.key" "$D/enrol.secret"
touch "$D/pause"
NQ_TOKEN_FILE="$D/unused" "$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" \
  --enrol-file "$D/enrol.secret" --name exact --threads 2 --cpu-limit 30 --pause-file "$D/pause" \
  --priority normal --state "$D/state" >>"$D/client-exact.log" 2>&1 &
PIDS+=("$!")
for i in $(seq 1 300); do
  grep -q "solver paused" "$D/client-exact.log" && break
  sleep 0.1
done
sleep 1
rm -f "$D/pause"
# A few seconds of work; the bound is far below the 300 s a client took when the pause it opened
# its session in ended before it had told the server (it then asked for no work until its session
# was renewed).
wait_server_exit 120
check_done "$D" 12
stop_all
say "ok"
