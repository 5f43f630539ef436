#!/usr/bin/env bash
# An outage that costs nothing (docs/server.md "Outages"), real processes on 127.0.0.1:
# N=18 depth 2 (121 units), quorum 1 by client, three clients with leases of 8 s. Once some units
# are verified the server is killed with SIGKILL and stays down for OUTAGE (default 14) seconds,
# longer than every lease; the clients go on computing what they hold. After the restart every
# lease live at the crash (leased, its deadline after the server's last alive stamp) must still
# be its holder's: the job finishes with the published values, each of those assignments ends
# with its holder's result (valid), and none of their units was leased a second time. The first
# sweep after the restart would otherwise have expired them all and handed the units out again
# while their holders were still computing them (NQ_OUTAGE_MAX=0 runs the server with
# --outage-max 0 to see that happen: the script then reports the doubled leases and fails).
# Leases that expire for the usual reasons on a slow machine (a queued unit not started within
# its 8 s) are counted and shown, not failed: they are no cost of the outage.
#
#   bash tests/e2e_outage.sh BUILD_DIR
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_outage.sh BUILD_DIR}" && pwd)"
N=18
DEPTH=2
OUTAGE="${NQ_OUTAGE_SECONDS:-14}"
LEASE=8
for p in nq-server nq-client nq-admin nq-solve; do
  [ -x "$BIN/$p" ] || { echo "outage: $BIN/$p missing"; exit 1; }
done
python3 -c 'import sqlite3' 2>/dev/null || { echo "outage: python3 with sqlite3 needed"; exit 77; }

TAG=outage
. "$(dirname "$0")/lib_e2e.sh"
e2e_init outage

D="$TMP/run"
mkdir -p "$D/data"
PORT=$(free_port)
EXP_UNITS=$("$BIN/nq-solve" $N --depth $DEPTH --list-units 2>/dev/null | grep -c :)

start_server() {
  e2e_start_server "$D" "$PORT" --n $N --depth $DEPTH --quorum 1 --max-results 3 \
    --quorum-distinct client --spot-check 0 --lease-seconds $LEASE --lease-min $LEASE \
    --max-outstanding 3 --http off --outage-max "${NQ_OUTAGE_MAX:-604800}" "$@"
}

q() { # q SQL: one value from the database (read-only; the server may be running)
  python3 - "$D/data/nq.db" "$1" <<'EOF'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=10)
print(db.execute(sys.argv[2]).fetchone()[0])
EOF
}

start_server
E2E_WRAP="nice -n 5" e2e_start_clients "$D" "$PORT" a b c

# Wait until a share of the job is done and leases are out, then crash the server.
t0=$SECONDS
while :; do
  v=$(q "SELECT count(*) FROM units WHERE state = 'verified'")
  l=$(q "SELECT count(*) FROM assignments WHERE state = 'leased'")
  [ "$v" -ge 15 ] && [ "$l" -ge 3 ] && break
  [ $((SECONDS - t0)) -lt 120 ] || fail "no progress within 120 s (verified $v, leased $l)"
  sleep 0.1
done
kill -9 "$SRV"
wait "$SRV" 2>/dev/null || true
SRV=""
LIVE="state = 'leased' AND deadline > (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'alive_at')"
held=$(q "SELECT count(*) FROM assignments WHERE $LIVE")
held_ids=$(q "SELECT coalesce(group_concat(id), '0') FROM assignments WHERE $LIVE")
say "killed the server at $v/$EXP_UNITS verified units, $held leases live; down for $OUTAGE s (leases: $LEASE s)"
sleep "$OUTAGE"
start_server --exit-when-done
[ "${NQ_OUTAGE_MAX:-1}" = 0 ] || grep -q "live lease(s) extended" "$D/server.log" || fail "no extension logged"
say "$(grep -o 'the server was down.*' "$D/server.log" | tail -n 1)"
wait_server_exit 180
check_done "$D" $N

[ "$held" -ge 1 ] || fail "no lease was live at the crash"
kept=$(q "SELECT count(*) FROM assignments WHERE id IN ($held_ids) AND state = 'valid'")
doubled=$(q "SELECT count(*) FROM (SELECT unit_id FROM assignments WHERE unit_id IN (SELECT unit_id FROM assignments WHERE id IN ($held_ids)) GROUP BY unit_id HAVING count(*) > 1)")
assignments=$(q "SELECT count(*) FROM assignments")
expired=$(q "SELECT count(*) FROM assignments WHERE state = 'expired'")
say "leases live at the crash $held: kept by their holders $kept, their units leased twice $doubled; in all $assignments assignments for $EXP_UNITS units, $expired expired (the usual way)"
[ "$doubled" -eq 0 ] && [ "$kept" -eq "$held" ] ||
  fail "the outage cost work: $((held - kept)) of $held live lease(s) lost, $doubled unit(s) leased twice"
say "PASS: an outage of $OUTAGE s (> the $LEASE s leases) cost no unit a second lease"
