#!/usr/bin/env bash
# What counting stalled units (server/store/store_stall.c) costs on a job of about a million
# units: `nq-admin status --json` in local mode (it opens the store and computes the stalls
# fresh, as the server does once per 10 s cache period) timed on one N=25 depth-5 job (968,763
# units) in four states, each as the median of RUNS runs, and printed as a ratio against the
# first (the baseline, measured in the same run on the same database):
#
#   baseline   every unit pending, two owners online: no unit is read by the stall query
#   one-owner  every unit awaiting with one result, one owner: fewer keys than the quorum, so
#              every unit is `owners` without reading a unit (the short cut)
#   healthy    every unit awaiting with one result, two owners online: the query walks the
#              awaiting units, and the WHERE skips each (need <= keys online - results)
#   worst      the same with the second owner offline: every unit runs the two key-count
#              subqueries (each `offline`) -- the most the stall view can cost
#
# Then what the server's own status costs (remote `nq-admin status`, a new TLS connection each
# time): a running server counts on a worker thread (server/srv_stall.c) and its status reads the
# last count, so the worst state must cost what the baseline does:
#
#   served baseline   the server on the baseline state
#   served worst      the server on the worst state, once its worker has counted
#
# The job is made by nq-server; the states are written into its database with python3's sqlite3
# (fake results: the counts are never read). Needs about 1 GB under TMPDIR.
#   scripts/bench-stall.sh            Environment: NQ_BUILD_DIR (build), RUNS (5)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${NQ_BUILD_DIR:-build}
RUNS=${RUNS:-5}
SN=${NQ_STALL_N:-25}
SD=${NQ_STALL_DEPTH:-5}
for p in nq-server nq-admin; do [ -x "$BIN/$p" ] || { echo "bench-stall: $BIN/$p missing"; exit 1; }; done
W=$(mktemp -d "${TMPDIR:-/tmp}/nq-bench-stall.XXXXXX")
SRV=""
trap '[ -n "$SRV" ] && kill "$SRV" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
serve() { # serve: nq-server on the data directory, until it listens
  : >"$W/server.out"
  "$BIN/nq-server" --n "$SN" --depth "$SD" --quorum 2 --listen "127.0.0.1:$PORT" --http off \
    --data "$W/data" >"$W/server.out" 2>"$W/server.log" &
  SRV=$!
  until grep -q "listening on" "$W/server.out" 2>/dev/null; do
    kill -0 "$SRV" 2>/dev/null || { tail -5 "$W/server.log" >&2; exit 1; }
    sleep 0.5
  done
}
unserve() { kill "$SRV"; wait "$SRV" 2>/dev/null || true; SRV=""; }
serve
unserve
UNITS=$(sed -n 's/^job:.* units=\([0-9]*\).*/\1/p' "$W/server.out")

db() { python3 - "$W/data/nq.db" "$1" <<'PYEOF'
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1]); now = int(time.time()); step = sys.argv[2]
if step == "owners":
    db.execute("INSERT INTO owners(name, created) VALUES ('a', ?), ('b', ?)", (now, now))
    a, b = [r[0] for r in db.execute("SELECT id FROM owners WHERE name IN ('a','b') ORDER BY name")]
    db.execute("INSERT INTO clients(name, token_hash, created, last_seen, owner_id) VALUES "
               "('ca', 'ha', ?, ?, ?), ('cb', 'hb', ?, ?, ?)", (now, now, a, now, now, b))
elif step == "awaiting":
    ca = db.execute("SELECT id FROM clients WHERE name = 'ca'").fetchone()[0]
    db.execute("INSERT INTO assignments(unit_id, client_id, issued, deadline, state, reported_at, "
               "c2, c4, c8, nodes, seconds, solver) SELECT id, ?, ?, ?, 'reported', ?, 0, 0, 0, 1, "
               "0.1, 'bench' FROM units", (ca, now, now, now))
    db.execute("UPDATE units SET touched = 1, results = 1, best = 1, need = 1, state = 'awaiting'")
elif step == "one-owner":
    db.execute("UPDATE clients SET owner_id = (SELECT owner_id FROM clients WHERE name = 'ca')")
elif step == "two-owners":
    db.execute("UPDATE clients SET owner_id = (SELECT id FROM owners WHERE name = 'b') WHERE name = 'cb'")
elif step == "offline":
    db.execute("UPDATE clients SET last_seen = 0 WHERE name = 'cb'")
db.commit()
PYEOF
}
# time_status LABEL WANT [REMOTE...]: the median of RUNS `nq-admin status` in ms (local mode, or
# the remote arguments given); checks the stall count ("REASON UNITS").
time_status() {
  local label=$1 want=$2 i t ms=()
  shift 2
  for i in $(seq 1 "$RUNS"); do
    t=$(python3 - "$BIN/nq-admin" "$W/data" "$want" "$@" <<'PYEOF'
import json, subprocess, sys, time
t = time.perf_counter()
out = subprocess.run([sys.argv[1], "status", "--json", "--data", sys.argv[2]] + sys.argv[4:],
                     capture_output=True, text=True).stdout
dt = (time.perf_counter() - t) * 1000
s = json.loads(out)["stalled"]
got = "%s %d" % (max(s["by"], key=s["by"].get) if s["units"] else "none", s["units"])
assert got == sys.argv[3], "stalled: %s, want %s" % (got, sys.argv[3])
print("%.1f" % dt)
PYEOF
)
    ms+=("$t")
  done
  printf '%s\n' "${ms[@]}" | sort -n | sed -n "$(((RUNS + 1) / 2))p"
}
REMOTE=(--server "127.0.0.1:$PORT" --ca "$W/data/ca.pem")
db owners
BASE=$(time_status baseline "none 0")
serve
SBASE=$(time_status served-baseline "none 0" "${REMOTE[@]}")
unserve
db awaiting
db one-owner
ONE=$(time_status one-owner "owners $UNITS")
db two-owners
HEALTHY=$(time_status healthy "none 0")
db offline
WORST=$(time_status worst "offline $UNITS")
serve
until grep -q "unit(s) stalled" "$W/server.log"; do sleep 1; done # the worker's first count
SWORST=$(time_status served-worst "offline $UNITS" "${REMOTE[@]}")
unserve
echo "bench-stall: N=$SN depth $SD, $UNITS units; nq-admin status --json --data (local mode), median of $RUNS"
for r in "baseline $BASE" "one-owner $ONE" "healthy $HEALTHY" "worst $WORST"; do
  set -- $r
  python3 -c 'import sys; print("  %-16s %8.1f ms  %6.2fx baseline" % (sys.argv[1], float(sys.argv[2]), float(sys.argv[2]) / float(sys.argv[3])))' "$1" "$2" "$BASE"
done
echo "bench-stall: remote nq-admin status to a running server (new TLS connection each), median of $RUNS"
for r in "served-baseline $SBASE" "served-worst $SWORST"; do
  set -- $r
  python3 -c 'import sys; print("  %-16s %8.1f ms  %6.2fx served-baseline" % (sys.argv[1], float(sys.argv[2]), float(sys.argv[2]) / float(sys.argv[3])))' "$1" "$2" "$SBASE"
done
