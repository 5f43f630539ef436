#!/usr/bin/env bash
# A small reconnect storm in CI (the figures at 2,000 and 5,000 clients come from
# scripts/bench-storm.sh, docs/reliability.md): 300 enrolled clients (nq-loadgen --reconnect,
# nq-client's backoff) connected to nq-server, which is killed with SIGKILL and restarted. Every
# client must be welcomed again within 60 s, nobody giving up, and the new server's peak RSS must
# stay within the documented per-connection bound (docs/server.md: 64 MiB + 128 KiB a
# connection).
#
#   bash tests/e2e_storm.sh BUILD_DIR
set -euo pipefail
BIN="$(cd "${1:?usage: e2e_storm.sh BUILD_DIR}" && pwd)"
CONNS=300
for p in nq-server nq-loadgen; do
  [ -x "$BIN/$p" ] || { echo "storm: $BIN/$p missing"; exit 1; }
done
[ "$(ulimit -n)" -ge $((CONNS + 200)) ] || ulimit -n $((CONNS + 200)) 2>/dev/null ||
  { echo "storm: ulimit -n too small; skipped"; exit 77; }
out=$(bash "$(dirname "$0")/../scripts/bench-storm.sh" "$BIN" $CONNS 1 60)
echo "$out" | sed 's/^/storm: /'
line=$(grep '^storm: round=1' <<<"$out") || { echo "storm: FAIL: no round line"; exit 1; }
peak=$(sed -E 's/.*peak_rss_mib=([0-9]+).*/\1/' <<<"$line")
bound=$((64 + CONNS * 128 / 1024))
# ASan's shadow memory and quarantine inflate RSS: the bound holds for the real build only.
if grep -q '^NQ_SANITIZE:BOOL=ON' "$BIN/CMakeCache.txt" 2>/dev/null; then
  echo "storm: sanitizer build: peak RSS $peak MiB not held to the bound"
elif [ "$peak" -gt "$bound" ]; then
  echo "storm: FAIL: peak RSS $peak MiB > $bound MiB"
  exit 1
fi
grep -q "back_n=$CONNS " <<<"$out" || { echo "storm: FAIL: not every client came back"; exit 1; }
echo "storm: PASS: $CONNS clients re-served after a SIGKILL restart, peak RSS $peak MiB (bound $bound MiB)"
