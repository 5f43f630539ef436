#!/usr/bin/env bash
# A full server paces its way back: nq-server --max-conns 1 --retry-after 3 holds one
# connection (an idle nq-loadgen client); an nq-client that comes next is told `busy` with
# retry_after 3 and must wait 3..4.5 s (the server's figure plus up to half again) before it dials
# again -- not its own backoff of 0.5 s. Once the holder leaves, the client gets in and the job
# N=10 matches. The wait is checked from the client's own log timestamps (a lower bound: a busy
# machine can only make it longer; the upper bound allows 2 s of lateness).
#
#   bash tests/e2e_busy.sh BUILD_DIR
set -euo pipefail
BIN="$(cd "${1:?usage: e2e_busy.sh BUILD_DIR}" && pwd)"
for p in nq-server nq-client nq-loadgen; do
  [ -x "$BIN/$p" ] || { echo "e2e_busy: $BIN/$p missing"; exit 1; }
done
TAG=e2e_busy
. "$(dirname "$0")/lib_e2e.sh"
e2e_init busy

D="$TMP/busy"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 10 --depth 2 --quorum 1 --max-conns 1 --retry-after 3 \
  --exit-when-done
"$BIN/nq-loadgen" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" \
  --enrol-file "$D/data/enrol.key" --conns 1 --idle --reconnect --seconds 600 >"$D/holder.log" 2>&1 &
HOLDER=$! # --reconnect: should the start-up probe's connection still count, it comes back
PIDS+=("$HOLDER")
e2e_wait_log "$D/server.log" "connected from" 60 || true
grep -q "connected from" "$D/server.log" || fail "the holder did not get in"
say "the holder has the one connection --max-conns allows"

e2e_start_client "$D" "$PORT" pacer --log-level debug
CLIENT=$CPID
e2e_wait_log "$D/client-pacer.log" "the server is full; reconnecting in" 60 || true
line=$(grep -m1 "the server is full; reconnecting in" "$D/client-pacer.log") ||
  fail "the client was not told busy, or did not honour it"
wait_s=$(sed -E 's/.*reconnecting in ([0-9.]+) s.*/\1/' <<<"$line")
awk -v w="$wait_s" 'BEGIN { exit !(w >= 3 && w <= 4.5) }' ||
  fail "the client planned $wait_s s after busy with retry_after 3 (want 3..4.5)"
say "told busy: the client waits $wait_s s"

kill "$HOLDER"
wait_server_exit 300
check_done "$D" 10

# ts LINE: seconds of the day of a log line's timestamp (2026-11-27T09:43:57.413Z ...).
ts() { sed -E 's/^[0-9-]+T([0-9]+):([0-9]+):([0-9.]+)Z.*/\1 \2 \3/' <<<"$1" |
       awk '{ printf "%.3f", $1 * 3600 + $2 * 60 + $3 }'; }
busy_line=$(grep -m1 "server closed the session: busy" "$D/client-pacer.log") ||
  fail "no busy line in the client's log"
# The first dial after the busy line, read by awk from the file itself: a `tail | grep -m1`
# pipe under pipefail fails at random when grep leaves early and tail takes SIGPIPE.
next=$(awk '/server closed the session: busy/ { b = 1; next } b && /connecting to/ { print; exit }' \
  "$D/client-pacer.log")
[ -n "$next" ] || fail "the client never dialled again"
gap=$(awk -v a="$(ts "$busy_line")" -v b="$(ts "$next")" 'BEGIN { d = b - a; if (d < 0) d += 86400; printf "%.3f", d }')
awk -v g="$gap" 'BEGIN { exit !(g >= 3) }' || fail "the client dialled again $gap s after busy"
say "PASS: the client dialled again $gap s after busy (retry_after 3), then the job matched"
