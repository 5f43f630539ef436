#!/usr/bin/env bash
# The Windows client in a mixed job under wine (scripts/build-windows.sh --test):
#   1. a Linux nq-server runs N=12 with --quorum 2 --quorum-distinct client, one nq-client.exe
#      under wine and one Linux nq-client: every unit is verified only when the two agree, the
#      job ends with the published TOTAL and UNIQUE, both solved units; then nq-admin export
#      writes the job's evidence, which nq-verify.exe accepts (a recounted sample included) and
#      refuses once one unit's COUNT8 is changed (the checksum made good again:
#      tests/windows_verify.sh);
#   2. nq-client.exe alone on a job of N=19 units (quorum 1, --checkpoint-seconds 0.05) is
#      killed (SIGKILL to wine: no chance to save anything) while its running unit has a
#      checkpoint on disk, and started again on its state folder: it resumes that unit from the
#      checkpoint (its log says so); a second nq-client.exe on the same state folder is refused
#      by its lock (exit 3, the holder's pid named) and `nq-client.exe status` reads the folder;
#      the job ends with the published values.
#
#   bash tests/windows_e2e.sh LINUX_BUILD WIN_BUILD
set -euo pipefail
BIN="$(cd "${1:?usage: windows_e2e.sh LINUX_BUILD WIN_BUILD}" && pwd)"
WIN="$(cd "${2:?usage: windows_e2e.sh LINUX_BUILD WIN_BUILD}" && pwd)"
WINE=${NQ_WINE:-$WIN/wine-run}
TAG=windows_e2e
. "$(dirname "$0")/lib_e2e.sh"
e2e_init windows
for p in "$BIN/nq-server" "$BIN/nq-client" "$BIN/nq-admin" "$WIN/nq-client.exe" "$WIN/nq-verify.exe"; do
  [ -e "$p" ] || fail "$p missing"
done

# win_client DIR PORT NAME ARGS...: nq-client.exe under wine in the background (CPID, PIDS).
# Its paths are Windows paths: wine's drive Z: is the Unix root.
win_client() {
  local dir=$1 port=$2 name=$3
  shift 3
  mkdir -p "$dir/state-$name"
  "$WINE" "$WIN/nq-client.exe" --server "127.0.0.1:$port" --ca "Z:$dir/data/ca.pem" \
    --enrol "$(cat "$dir/data/enrol.key")" --name "$name" --threads 1 --priority normal \
    --state "Z:$dir/state-$name" "$@" >>"$dir/client-$name.log" 2>&1 &
  CPID=$!
  PIDS+=("$CPID")
}

# ---- 1. the mixed job ----
D="$TMP/mixed"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 12 --depth 3 --quorum 2 --quorum-distinct client --exit-when-done
win_client "$D" "$PORT" win
e2e_start_client "$D" "$PORT" linux
wait_server_exit 600
check_done "$D" 12
for c in win linux; do
  line=$(grep -E "the job is done \([0-9]+ unit\(s\) solved here\)" "$D/client-$c.log" | tail -n 1)
  k=$(sed -E 's/.*\(([0-9]+) unit.*/\1/' <<<"$line")
  [ -n "$k" ] && [ "$k" -gt 0 ] || fail "the $c client solved no unit (${line:-no final line})"
  say "$c client: $k unit(s) solved"
done
say "N=12 verified by a Windows and a Linux client agreeing on every unit"
stop_all

F="$D/evidence.jsonl"
"$BIN/nq-admin" export --data "$D/data" --out "$F" --quorum-distinct client >/dev/null ||
  fail "nq-admin export"
# nq-verify.exe on it, as it is and with one COUNT8 changed (the checks: tests/windows_verify.sh).
NQ_WINE="$WINE" bash "$(dirname "$0")/windows_verify.sh" "$WIN" "$BIN" "$F" ||
  fail "nq-verify.exe on the mixed job's evidence (tests/windows_verify.sh)"

# ---- 2. killed mid-unit, resumed from the checkpoint ----
D="$TMP/resume"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 19 --depth 2 --quorum 1 --exit-when-done
win_client "$D" "$PORT" win --checkpoint-seconds 0.05 --threads 2
VICTIM=$CPID
# wait_ckpt: until the running unit has a checkpoint on disk (ck: its path).
wait_ckpt() {
  ck=""
  for _ in $(seq 1 1200); do
    ck=$(find "$D/state-win" -name '*.ckpt' -size +0 2>/dev/null | head -n 1)
    [ -n "$ck" ] && return 0
    kill -0 "$VICTIM" 2>/dev/null || fail "nq-client.exe exited before a checkpoint: $(tail -n 5 "$D/client-win.log")"
    sleep 0.1
  done
  fail "no checkpoint within 120 s: $(ls -R "$D/state-win")"
}
wait_ckpt
# The state folder's lock (files_win.c: a sharing mode): a second nq-client.exe on it is refused
# (exit 3) and names the holder's pid; `nq-client.exe status` reads the folder meanwhile.
rc=0
"$WINE" "$WIN/nq-client.exe" --server "127.0.0.1:$PORT" --ca "Z:$D/data/ca.pem" \
  --state "Z:$D/state-win" --threads 1 >"$D/second.log" 2>&1 || rc=$?
[ $rc -eq 3 ] && grep -q "in use by another nq-client (pid [1-9]" "$D/second.log" ||
  fail "a second nq-client.exe on the state folder: exit $rc: $(tail -n 3 "$D/second.log")"
# The client writes its status file every 2 s: the checkpoint on disk can come before the first
# file that says the unit runs, so the status is asked until it does (a busy machine: 120 s).
t0=$SECONDS
while :; do
  "$WINE" "$WIN/nq-client.exe" status --state "Z:$D/state-win" >"$D/status.out" 2>&1 ||
    fail "nq-client.exe status: $(cat "$D/status.out")"
  grep -q "running (pid [1-9]" "$D/status.out" && grep -qE "^unit: +19:" "$D/status.out" && break
  [ $((SECONDS - t0)) -lt 120 ] ||
    fail "nq-client.exe status: not running, or no unit, for 120 s: $(cat "$D/status.out")"
  kill -0 "$VICTIM" 2>/dev/null || fail "nq-client.exe exited: $(tail -n 5 "$D/client-win.log")"
  sleep 1
done
say "a second nq-client.exe on the locked state folder: refused (exit 3); nq-client.exe status works"
# A checkpoint of the running unit on disk: then SIGKILL (wine's process is the Windows one).
wait_ckpt
kill -9 "$VICTIM"
wait "$VICTIM" 2>/dev/null || true
say "nq-client.exe killed with a checkpoint on disk ($(basename "$ck"))"
win_client "$D" "$PORT" win --checkpoint-seconds 0.05 --threads 2
e2e_wait_log "$D/client-win.log" "resumed from its checkpoint" 120 "$CPID" ||
  fail "the restarted nq-client.exe did not resume: $(tail -n 5 "$D/client-win.log")"
say "restarted: $(grep -o 'unit .*resumed from its checkpoint[^,]*' "$D/client-win.log" | head -n 1)"
wait_server_exit 600
check_done "$D" 19
say "ok"
