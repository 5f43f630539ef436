#!/usr/bin/env bash
# Memory and time of nq-admin export, nq-verify and the server's /api/export on a large job:
# all three stream, so their peak memory must not grow with the number of units.
#
#   bash scripts/bench-evidence.sh BUILD_DIR [N] [DEPTH]      (default N=20, depth 6: 1,870,974 units)
#
# The job is made by nq-server (--depth, on loopback, stopped once the job is running), then
# "finished" without solving, with the sqlite3 shell: every unit verified with counts 0 and
# nodes 1 by two valid results of two clients (fabricated numbers: this measures the streaming,
# not a count; a recount would fail, so nq-verify runs with --sample 0). For comparison the same
# two programs run on a small job made the same way (N=12 depth 4, 1,290 units), so the ratio of
# the peaks shows what grows with the file.
# Prints, per job: units, file size, and for export and verify: wall seconds and peak RSS (KiB,
# from /usr/bin/time -f %M); then for /api/export (nq-server started on the finished job with
# --http, the file downloaded once): the download's seconds and bytes, and the server's peak RSS
# (VmHWM) before and after it; and the root of the results: how long its take lasted on the
# server's worker thread, the slowest /api/status meanwhile, and that it is the file's root.
set -euo pipefail

BIN="$(cd "${1:?usage: bench-evidence.sh BUILD_DIR [N] [DEPTH]}" && pwd)"
N=${2:-20}
DEPTH=${3:-6}
for p in nq-server nq-admin nq-verify; do [ -x "$BIN/$p" ] || { echo "missing $BIN/$p"; exit 1; }; done
command -v sqlite3 >/dev/null || { echo "needs the sqlite3 shell"; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time"; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/nq-bench-evidence.XXXXXX")
SRV=""
trap '[ -n "$SRV" ] && kill -9 $SRV 2>/dev/null; rm -rf "$TMP"' EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# make_job DIR N DEPTH: a finished job of fabricated results in DIR/data/nq.db.
make_job() {
  local dir=$1 n=$2 depth=$3 port i
  mkdir -p "$dir"
  port=$(free_port)
  "$BIN/nq-server" --n "$n" --depth "$depth" --listen "127.0.0.1:$port" --data "$dir/data" \
    >"$dir/server.log" 2>&1 &
  SRV=$!
  for i in $(seq 1 6000); do
    grep -q "listening on" "$dir/server.log" && break
    kill -0 $SRV 2>/dev/null || { cat "$dir/server.log"; exit 1; }
    sleep 0.1
  done
  kill $SRV; wait $SRV || true
  SRV=""
  sqlite3 "$dir/data/nq.db" <<SQL
PRAGMA journal_mode = WAL;
BEGIN;
INSERT INTO clients (name, token_hash, created) VALUES ('bench-a', 'bench-a', 1), ('bench-b', 'bench-b', 1);
INSERT INTO assignments (unit_id, client_id, issued, deadline, state, c2, c4, c8, nodes, seconds,
                         solver, reported_at, backend)
  SELECT u.id, c.id, 1, 2, 'valid', 0, 0, 0, 1, 0, 'nq-solver-3', 2, 'scalar'
  FROM units u, clients c WHERE c.name IN ('bench-a', 'bench-b');
UPDATE units SET state = 'verified', c2 = 0, c4 = 0, c8 = 0, nodes = 1, results = 2, best = 2,
                 need = 0, verified_at = 2;
UPDATE jobs SET state = 'done', finished = 3, c2 = '0', c4 = '0', c8 = '0', total = '0', uniq = '0',
                nodes = (SELECT CAST(count(*) AS TEXT) FROM units);
COMMIT;
SQL
}

# measure DIR: export and verify, with their peak memory.
measure() {
  local dir=$1 units size
  /usr/bin/time -f "%e %M" -o "$dir/t-export" "$BIN/nq-admin" export --data "$dir/data" \
    --out "$dir/e.jsonl" --quorum-distinct client >/dev/null
  /usr/bin/time -f "%e %M" -o "$dir/t-verify" "$BIN/nq-verify" "$dir/e.jsonl" --sample 0 \
    >"$dir/verify.out"
  grep -q VERIFIED "$dir/verify.out" || { cat "$dir/verify.out"; exit 1; }
  units=$(($(wc -l <"$dir/e.jsonl") - 3))
  size=$(du -m "$dir/e.jsonl" | cut -f1)
  read -r ew em <"$dir/t-export"
  read -r vw vm <"$dir/t-verify"
  printf "%-6s %10s units %6s MiB   export %7.1f s %8s KiB   verify %7.1f s %8s KiB\n" \
    "$(basename "$dir")" "$units" "$size" "$ew" "$em" "$vw" "$vm"
  echo "$em $vm" >"$dir/peaks"
}

# measure_http DIR N DEPTH: /api/export of the finished job, and the server's peak RSS around it.
measure_http() {
  local dir=$1 n=$2 depth=$3 port hport i before after t0 t1 bytes
  port=$(free_port)
  hport=$(free_port)
  NQ_LOG_LEVEL=debug "$BIN/nq-server" --n "$n" --depth "$depth" --listen "127.0.0.1:$port" \
    --data "$dir/data" --http "127.0.0.1:$hport" >"$dir/server-http.log" 2>&1 &
  SRV=$!
  for i in $(seq 1 6000); do
    grep -q "status page" "$dir/server-http.log" && break
    kill -0 $SRV 2>/dev/null || { cat "$dir/server-http.log"; exit 1; }
    sleep 0.1
  done
  sleep 1
  # The root: a worker thread takes it (srv_root.c); meanwhile /api/status is polled, and its
  # slowest answer shows whether the loop waited for the root. Then the root is the file's.
  local root
  root=$(python3 - "http://127.0.0.1:$hport/api/status" <<'PY'
import json, sys, time, urllib.request
worst, t_end = 0.0, time.time() + 600
while time.time() < t_end:
    t0 = time.time()
    s = json.load(urllib.request.urlopen(sys.argv[1], timeout=600))
    worst = max(worst, time.time() - t0)
    if "root" in s:
        print(s["root"]["root"], s["root"]["leaves"], "%.2f" % worst)
        break
    time.sleep(0.2)
PY
)
  [ "${root% *}" = "$(grep '^{"type":"totals"' "$dir/e.jsonl" | sed -E 's/.*"leaves":([0-9]+),"root":"([0-9a-f]{64})".*/\2 \1/')" ] ||
    { echo "the status root ${root% *} is not the file's"; exit 1; }
  printf "%-6s root over %s results, the file's: %s on a worker; /api/status answered in at most %s s meanwhile\n" \
    "$(basename "$dir")" "$(echo "$root" | cut -d' ' -f2)" \
    "$(grep -o 'root of job [0-9]*: [0-9]* results in [0-9]* ms' "$dir/server-http.log" | head -n 1 | sed 's/.* in //')" \
    "${root##* }"
  before=$(awk '/VmHWM/ {print $2}' "/proc/$SRV/status")
  t0=$(date +%s.%N)
  bytes=$(python3 - "$hport" "$dir/api.jsonl" <<'PY'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=600)
c.request("GET", "/api/export")
r = c.getresponse()
assert r.status == 200, r.status
n = 0
with open(sys.argv[2], "wb") as f:
    while True:
        b = r.read(65536)
        if not b: break
        f.write(b); n += len(b)
print(n)
PY
)
  t1=$(date +%s.%N)
  after=$(awk '/VmHWM/ {print $2}' "/proc/$SRV/status")
  kill $SRV; wait $SRV || true
  SRV=""
  [ "$(wc -l <"$dir/api.jsonl")" = "$(wc -l <"$dir/e.jsonl")" ] || { echo "api export: line count"; exit 1; }
  printf "%-6s /api/export %7.1f s %6s MiB   server peak RSS %8s KiB before, %8s KiB after\n" \
    "$(basename "$dir")" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" \
    "$((bytes / 1048576))" "$before" "$after"
  echo "$before $after" >"$dir/http-peaks"
}

make_job "$TMP/small" 12 4
make_job "$TMP/large" "$N" "$DEPTH"
measure "$TMP/small"
measure "$TMP/large"
read -r sem svm <"$TMP/small/peaks"
read -r lem lvm <"$TMP/large/peaks"
measure_http "$TMP/small" 12 4
measure_http "$TMP/large" "$N" "$DEPTH"
read -r shb sha <"$TMP/small/http-peaks"
read -r lhb lha <"$TMP/large/http-peaks"
echo "server peak RSS growth over the download: small $((sha - shb)) KiB, large $((lha - lhb)) KiB"
echo "peak RSS, large / small: export $(awk -v a="$lem" -v b="$sem" 'BEGIN{printf "%.2f", a/b}')x," \
     "verify $(awk -v a="$lvm" -v b="$svm" 'BEGIN{printf "%.2f", a/b}')x"
