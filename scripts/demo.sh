#!/usr/bin/env bash
# The main job end to end on one machine: build, start nq-server for N on 127.0.0.1 in a fresh
# data directory, enrol two nq-clients with the enrolment key, watch `nq-admin status` until every
# unit is verified, print the final counts and their check against the published values.
# Everything started here is stopped on exit. Exit status 0 only when the answer matches.
# Usage: scripts/demo.sh [N]   (default 14; N above the published table (27) cannot be checked)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-14}
BUILD=${NQ_BUILD_DIR:-build}
case "$N" in ''|*[!0-9]*) echo "demo: N must be a number, got '$N'" >&2; exit 2 ;; esac

echo "== building (scripts/bootstrap.sh $BUILD) =="
scripts/bootstrap.sh "$BUILD" >/dev/null
BIN=$(cd "$BUILD" && pwd)
for p in nq-server nq-client nq-admin; do
  [ -x "$BIN/$p" ] || { echo "demo: $BIN/$p was not built" >&2; exit 1; }
done

DATA=$(mktemp -d "${TMPDIR:-/tmp}/nq-demo-XXXXXX")
PIDS=()
cleanup() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$rc" -ne 0 ]; then
    echo "demo: failed (exit $rc); logs kept in $DATA" >&2
  elif [ -z "${NQ_DEMO_KEEP:-}" ]; then
    rm -rf "$DATA"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A free port: nothing answers a TCP connect on it.
PORT=
for _ in $(seq 1 50); do
  p=$((20000 + RANDOM % 40000))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then PORT=$p; break; fi
done
[ -n "$PORT" ] || { echo "demo: no free port found" >&2; exit 1; }
SERVER=127.0.0.1:$PORT
# The public status page on the next free port (docs/http.md).
HPORT=
for p in $(seq $((PORT + 1)) $((PORT + 50))); do
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then HPORT=$p; break; fi
done
[ -n "$HPORT" ] || { echo "demo: no free port for the status page" >&2; exit 1; }

echo "== nq-server --n $N on $SERVER, data $DATA =="
"$BIN/nq-server" --n "$N" --listen "$SERVER" --data "$DATA" --http "127.0.0.1:$HPORT" \
  >"$DATA/server.log" 2>&1 &
PIDS+=($!)
# Ready when an admin session over TLS works (remote mode, with the generated CA and token).
for i in $(seq 1 100); do
  if [ -f "$DATA/admin.token" ] && "$BIN/nq-admin" status --server "$SERVER" --ca "$DATA/ca.pem" \
      --token-file "$DATA/admin.token" >/dev/null 2>&1; then break; fi
  kill -0 "${PIDS[0]}" 2>/dev/null || { echo "demo: nq-server exited:" >&2; cat "$DATA/server.log" >&2; exit 1; }
  [ "$i" -lt 100 ] || { echo "demo: nq-server did not come up" >&2; cat "$DATA/server.log" >&2; exit 1; }
  sleep 0.1
done

THREADS=$(( $(nproc) > 3 ? $(nproc) / 2 : 1 ))
# Two volunteers: each an owner of its own with its own enrolment key (nq-admin owner add), since a
# unit is verified by results of distinct owners (--quorum-distinct owner, the default). The key
# is printed once, on the second line, and goes to the client in a 0600 file, never in argv.
for c in 1 2; do
  ( umask 077
    "$BIN/nq-admin" owner add "volunteer-$c" --server "$SERVER" --ca "$DATA/ca.pem" \
      --token-file "$DATA/admin.token" | sed -n 2p >"$DATA/owner-$c.key" )
  [ -s "$DATA/owner-$c.key" ] || { echo "demo: nq-admin owner add volunteer-$c failed" >&2; exit 1; }
  "$BIN/nq-client" --server "$SERVER" --ca "$DATA/ca.pem" --enrol-file "$DATA/owner-$c.key" \
    --name "demo-$c" --public-name "demo-volunteer-$c" --threads "$THREADS" \
    --state "$DATA/client-$c" >"$DATA/client-$c.log" 2>&1 &
  PIDS+=($!)
done
echo "== two owners (volunteer-1, volunteer-2), a client each (demo-1, demo-2; $THREADS thread(s) each) =="
echo "== status page: http://127.0.0.1:$HPORT/ (metrics: http://127.0.0.1:$HPORT/metrics) =="

# Redraws every second until the job is done; its exit status is 3 on a mismatch. The timeout
# (NQ_DEMO_TIMEOUT seconds, default 1800) keeps a broken run from watching forever.
set +e
timeout "${NQ_DEMO_TIMEOUT:-1800}" "$BIN/nq-admin" status --data "$DATA" --watch 1
WATCH=$?
set -e
if [ "$WATCH" -eq 124 ]; then
  echo "demo: the job did not finish within ${NQ_DEMO_TIMEOUT:-1800} s" >&2
  tail -n 5 "$DATA"/*.log >&2
  exit 1
fi
[ "$WATCH" -eq 0 ] || [ "$WATCH" -eq 3 ] || { echo "demo: nq-admin status failed ($WATCH)" >&2; exit 1; }

echo
echo "== clients =="
"$BIN/nq-admin" clients --data "$DATA"
echo
JSON=$("$BIN/nq-admin" status --data "$DATA" --json)
if grep -q '"match": true' <<<"$JSON"; then
  echo "demo: N=$N verified by 2 clients; the answer MATCHES the published values"
  exit 0
fi
if grep -q '"match": null' <<<"$JSON"; then
  echo "demo: N=$N is beyond the published table; nothing to compare against" >&2
else
  echo "demo: N=$N: the answer does NOT match the published values" >&2
fi
exit 1
