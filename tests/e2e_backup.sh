#!/usr/bin/env bash
# The restore drill (docs/operations.md "Backups and the restore drill"), real processes
# on 127.0.0.1: N=18 depth 2 (121 units), quorum 1 by client, three clients, the server taking a
# checked backup every second (--backup-every 1 --backup-keep 3). Under load (results coming in)
# the drill: nq-admin restore is refused while the server runs; the server is killed with SIGKILL
# (the disk "is lost": the database and its WAL are moved away); the newest backup is restored
# with nq-admin restore; the server starts again on it and the clients, which never stopped,
# finish the job with the published values. On the way: the backups rotate to 3, /metrics and
# nq-admin status report the last good backup, and the log has one line per backup.
#
#   bash tests/e2e_backup.sh BUILD_DIR
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_backup.sh BUILD_DIR}" && pwd)"
N=18
DEPTH=2
for p in nq-server nq-client nq-admin nq-solve; do
  [ -x "$BIN/$p" ] || { echo "backup: $BIN/$p missing"; exit 1; }
done

TAG=backup
. "$(dirname "$0")/lib_e2e.sh"
e2e_init backup

D="$TMP/run"
mkdir -p "$D/data"
PORT=$(free_port)
HPORT=$(free_port)
BK="$D/backups"

start_server() {
  e2e_start_server "$D" "$PORT" --n $N --depth $DEPTH --quorum 1 --max-results 3 \
    --quorum-distinct client --spot-check 0 --lease-seconds 20 --lease-min 20 \
    --max-outstanding 3 --http "127.0.0.1:$HPORT" --backup-dir "$BK" --backup-every 1 \
    --backup-keep 3 "$@"
}

# The results a backup holds, from its log line ("... N results ...").
backup_results() { sed -E 's/.* ([0-9]+) results.*/\1/' <<<"$1"; }

start_server
# Slowed a little (nice, one thread) so that the job outlasts a few backups.
E2E_WRAP="nice -n 10" e2e_start_clients "$D" "$PORT" a b c

# Wait for a good backup that holds results while the job still runs.
t0=$SECONDS
while :; do
  line=$(grep "checked good" "$D/server.log" | tail -n 1 || true)
  if [ -n "$line" ] && [ "$(backup_results "$line")" -ge 10 ]; then break; fi
  grep -q "job N=$N done" "$D/server.log" && fail "the job finished before a backup held 10 results"
  [ $((SECONDS - t0)) -lt 120 ] || fail "no backup with results within 120 s"
  sleep 0.1
done
say "under load: $(grep -o 'backup .*checked good.*' "$D/server.log" | tail -n 1)"
grep -q "FAILED" "$D/server.log" && fail "a backup failed: $(grep FAILED "$D/server.log" | head -n 1)"

# What the operator sees: status and /metrics name the last good backup.
st=$("$BIN/nq-admin" status --data "$D/data" --json)
python3 -c 'import json,sys; b=json.loads(sys.argv[1])["backup"]; assert b["last_good"] and b["file"] and b["error"] is None, b' "$st" ||
  fail "nq-admin status does not show the backup"
python3 - "$HPORT" <<'EOF' || fail "/metrics has no good backup"
import sys, urllib.request
t = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode()
good = [l for l in t.splitlines() if l.startswith('nq_backups_total{outcome="good"}')]
last = [l for l in t.splitlines() if l.startswith("nq_backup_last_good_timestamp_seconds")]
assert good and int(good[0].split()[1]) >= 1 and last and int(last[0].split()[1]) > 0, (good, last)
EOF

# A restore is refused while the server holds the data directory.
rc=0
"$BIN/nq-admin" restore --data "$D/data" "$(ls "$BK"/nq-*.db | tail -n 1)" >"$D/refused.out" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "stop the server first" "$D/refused.out" || fail "restore beside a running server: rc $rc: $(cat "$D/refused.out")"

# The crash, and the disk with it.
kill -9 "$SRV"
wait "$SRV" 2>/dev/null || true
SRV=""
mkdir "$D/lost"
mv "$D/data/nq.db"* "$D/lost/"
n=$(ls "$BK" | grep -c '^nq-.*\.db$')
[ "$n" -le 3 ] || fail "$n backups kept, --backup-keep 3"
newest=$(ls "$BK"/nq-*.db | tail -n 1)
"$BIN/nq-admin" restore --data "$D/data" "$newest" >"$D/restore.out"
say "$(head -n 1 "$D/restore.out")"
held=$("$BIN/nq-admin" status --data "$D/data" --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["units"]["verified"], s["results"])')
say "restored: verified units and results $held; restarting the server"
start_server --exit-when-done
wait_server_exit 240
check_done "$D" $N
say "PASS: a backup taken under load restored to a job that finished exact"
