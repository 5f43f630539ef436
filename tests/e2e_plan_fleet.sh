#!/usr/bin/env bash
# A plan's price of the kernel rule against a job run with it (docs/planning.md, "Plans in
# calendar time"): N = 18 at depth 3 (1,354 units), --diverse-kernels 2, quorum 2 by owner,
# through real nq-server and nq-client processes on 127.0.0.1. The fleet: owners alice and bob,
# one AVX-512 client each (--threads 1): under the rule each unit's second replica is named the
# next kernel down, so the two identical machines run different kernels, avx512 and avx2. The
# rates are measured first on this machine, per kernel, on the same units (nq-solve 18 --depth 3
# --threads 1 with NQ_KERNEL=avx512 and =avx2, CPU time); then
#   nq-solve 18 --depth 3 --max-depth 3 --unit-nodes 0 --plan --diverse-kernels 2 \
#     --fleet avx512=2@R512,avx2@R2,spot=0
# predicts the job's core-seconds (avx2@R2: no cores, the rate an AVX-512 machine runs avx2 at
# when it is named it), and the
# clients' CPU time once the job is done (utime + stime of both processes) must be within 15% of
# it. CPU time, not wall time: the machine may be busy. The test prints both figures, the
# results' own (wall) seconds by kernel, and the price with the rule off (every replica on
# avx512), which is far off.
#
# Alice starts alone and bob once alice has reported an avx512 result: both say their kind in
# hello, so neither is of unknown kind (before, a client of unknown kind was named what most CPUs
# run, server/core/kernels.h); the order is kept so that the shape priced is the same in every
# run.
#
#   bash tests/e2e_plan_fleet.sh BUILD_DIR
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_plan_fleet.sh BUILD_DIR}" && pwd)"
N=18
DEPTH=3
TOL=0.15
JOB_TIMEOUT="${NQ_PLAN_FLEET_TIMEOUT:-600}"
for p in nq-server nq-client nq-admin nq-solve; do
  [ -x "$BIN/$p" ] || { echo "plan_fleet: $BIN/$p missing"; exit 1; }
done
command -v python3 >/dev/null || { echo "plan_fleet: python3 needed"; exit 1; }
grep -qw avx512f /proc/cpuinfo 2>/dev/null || { echo "plan_fleet: SKIP (no AVX-512 here)"; exit 77; }

# Two tries: a shared machine's speed drifts between the rates and the job by more than the
# tolerance now and then (seen: +20% once, +4% to +11% otherwise, on an idle 2-core machine); a
# model that is wrong (every replica priced on the machine's own kernel: +45% to +80%; a kind
# named scalar throughout: +150%) is off on both.
if [ -z "${NQ_PLAN_FLEET_TRY:-}" ]; then
  rc=0
  NQ_PLAN_FLEET_TRY=1 bash "$0" "$@" || rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 77 ] && exit $rc
  echo "plan_fleet: off on the first try; once more"
  NQ_PLAN_FLEET_TRY=2 exec bash "$0" "$@"
fi

TAG=plan_fleet
. "$(dirname "$0")/lib_e2e.sh"
e2e_init plan_fleet

# rate KERNEL: nodes per CPU second of nq-solve on the job's units with KERNEL (all of them: a
# slice such as every 8th unit is not a fair sample of their costs).
rate() {
  NQ_KERNEL=$1 python3 - "$BIN/nq-solve" $N $DEPTH <<'EOF'
import json, resource, subprocess, sys
out = subprocess.run([sys.argv[1], sys.argv[2], "--depth", sys.argv[3], "--threads", "1",
                      "--json"], capture_output=True, text=True, check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.6g" % (int(json.loads(out.stdout)["nodes"]) / (r.ru_utime + r.ru_stime)))
EOF
}
plan() { "$BIN/nq-solve" $N --depth $DEPTH --max-depth $DEPTH --unit-nodes 0 --plan --json "$@"; }
# price WHEN: the rates now, and the plan at those rates (PRED, OWN: the rule off, KMIX). The
# rates are taken before the job and again after it: a shared machine's speed drifts, and the
# job's CPU time is held to the prices of both ends (the interval between them, widened by TOL).
# The two kernels are timed at once, one process each, as the job's two clients run at once: two
# solvers on a 2-core machine (two threads of one core, often) each go slower than one alone.
price() {
  local r512 r2 fleet
  rate avx512 >"$TMP/rate-avx512" &
  rate avx2 >"$TMP/rate-avx2" &
  wait
  r512=$(cat "$TMP/rate-avx512")
  r2=$(cat "$TMP/rate-avx2")
  fleet="avx512=2@$r512,avx2@$r2,spot=0"
  read -r PRED OWN KMIX <<<"$(plan --fleet "$fleet" --diverse-kernels 2 | python3 -c '
import json, sys
f = json.load(sys.stdin)["fleet"]
mix = ",".join("%s:%.3f" % kv for kv in sorted(f["replicas_by_kernel"].items()))
print("%.4f %.4f %s" % (f["core_seconds"], f["own_kernel_core_seconds"], mix))')"
  say "$1: rates (CPU time, the job's units) avx512 $r512, avx2 $r2 nodes/s; plan --fleet $fleet --diverse-kernels 2: $PRED core-seconds (replicas by kernel $KMIX); with the rule off: $OWN"
}
price "before the job"
PRED1=$PRED

D="$TMP/job"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n $N --depth $DEPTH --diverse-kernels 2 --spot-check 0 \
  --exit-when-done
key() { "$BIN/nq-admin" owner add "$1" --data "$D/data" --json |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["enrol_key"])'; }
KA=$(key alice)
KB=$(key bob)
# Each client runs under a wrapper that writes its CPU time (utime + stime) when it exits (the
# clients leave once the job is done); the client dies with the wrapper (PR_SET_PDEATHSIG).
cat >"$TMP/cpu_wrap.py" <<'EOF'
import ctypes, resource, signal, subprocess, sys
libc = ctypes.CDLL(None)
p = subprocess.Popen(sys.argv[2:], preexec_fn=lambda: libc.prctl(1, signal.SIGKILL))
for s in (signal.SIGTERM, signal.SIGINT):
    signal.signal(s, lambda n, f: p.send_signal(n))
rc = p.wait()
r = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    f.write("%.3f\n" % (r.ru_utime + r.ru_stime))
sys.exit(rc if rc >= 0 else 128 - rc)
EOF
E2E_WRAP="python3 $TMP/cpu_wrap.py $D/cpu-alice" E2E_KEY=$KA e2e_start_client "$D" "$PORT" alice-1
t0=$SECONDS
until python3 -c '
import sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
sys.exit(0 if c.execute("SELECT 1 FROM assignments WHERE backend = ? AND seconds IS NOT NULL",
                        ("avx512",)).fetchone() else 1)' "$D/data/nq.db" \
    2>/dev/null; do
  [ $((SECONDS - t0)) -lt 120 ] || fail "alice reported no avx512 result in 120 s"
  sleep 0.2
done
E2E_WRAP="python3 $TMP/cpu_wrap.py $D/cpu-bob" E2E_KEY=$KB e2e_start_client "$D" "$PORT" bob-1
say "N=$N depth $DEPTH, --diverse-kernels 2, --spot-check 0: alice and bob, one AVX-512 client each"
wait_server_exit "$JOB_TIMEOUT"
check_done "$D" $N
for c in alice bob; do
  for _ in $(seq 1 600); do [ -s "$D/cpu-$c" ] && break; sleep 0.1; done
  [ -s "$D/cpu-$c" ] || fail "client $c did not exit after the job"
done
CA=$(cat "$D/cpu-alice")
CB=$(cat "$D/cpu-bob")
price "after the job"

python3 - "$D/data/nq.db" "$PRED1" "$PRED" "$OWN" "$TOL" "$CA" "$CB" <<'EOF' || fail "prediction off"
import sqlite3, sys
db, p1, p2, own, tol = (sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]),
                        float(sys.argv[5]))
cpu = sum(float(x) for x in sys.argv[6:8])
lo, hi = min(p1, p2), max(p1, p2)
c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
rows = c.execute("SELECT backend, count(*), sum(seconds), sum(nodes) FROM assignments "
                 "WHERE seconds IS NOT NULL GROUP BY backend ORDER BY backend").fetchall()
wall = sum(r[2] for r in rows)
for b, n, s, nodes in rows:
    print("plan_fleet:   results by %-7s %5d replicas, %8.2f s (their own, wall), %.4g nodes"
          % (b, n, s, nodes))
# Off by how much from the nearer end of the interval the two prices make (0 inside it).
err = cpu / hi - 1 if cpu > hi else cpu / lo - 1 if cpu < lo else 0.0
print("plan_fleet: measured %.2f core-seconds (the clients' CPU time; results' own seconds, "
      "wall: %.2f), predicted %.2f before the job and %.2f after: %+.1f%% (limit %.0f%%); the "
      "price with the rule off (every replica on avx512), %.2f, is %+.1f%% off"
      % (cpu, wall, p1, p2, 100 * err, 100 * tol, own, 100 * (cpu / own - 1)))
sys.exit(0 if abs(err) <= tol else 1)
EOF
say "PASS"
