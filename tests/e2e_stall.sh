#!/usr/bin/env bash
# Stalls that announce themselves (issue 36), against a real nq-server with --http:
#   1. the one-owner job: two clients enrolled with the server's own enrol.key (both the owner
#      `default`), quorum 2 by owner. Every unit is stalled (`owners`) in nq-admin status (the
#      STALLED and voters lines, --json), in /metrics (nq_units_stalled) and on the page, and
#      there is no ETA;
#   2. the liar: two honest owners finish the job; a liar's spot checks re-open units with the
#      honest votes voided; every owner has voted on them (`voted`), no ETA, and
#      `units --state awaiting` shows the voided votes. Banning the liar ends its dissent: the
#      honest votes stand again (nothing voting contradicts them) and the job ends matching with
#      no operator step. (`unit retry` of such units, as a server before that left them, is in
#      test_admin.)
# The admin commands go to the running server (remote mode), as an operator's would.
# Usage: tests/e2e_stall.sh BUILD_DIR
set -euo pipefail
TAG=e2e_stall
BIN=$(cd "${1:?usage: e2e_stall.sh BUILD_DIR}" && pwd)
source "$(dirname "$0")/lib_e2e.sh"
e2e_init stall
N=9
DEADLINE=${NQ_STALL_TIMEOUT:-120}

# admin DIR PORT ARGS...: nq-admin against the server on PORT.
admin() {
  local dir=$1 port=$2
  shift 2
  "$BIN/nq-admin" "$@" --server "127.0.0.1:$port" --ca "$dir/data/ca.pem" --data "$dir/data"
}
# field DIR PORT EXPR: a Python expression over `nq-admin status --json` (as `s`).
field() {
  admin "$1" "$2" status --json | python3 -c "import json,sys; s = json.load(sys.stdin); print($3)"
}
# wait_for DIR PORT EXPR WHAT: poll the status until EXPR holds (the stall view is cached 10 s).
wait_for() {
  local t1=$SECONDS
  until [ "$(field "$1" "$2" "$3" 2>/dev/null)" = True ]; do
    [ $((SECONDS - t1)) -lt "$DEADLINE" ] ||
      fail "$4 not reached within ${DEADLINE}s: $(admin "$1" "$2" status --json | head -c 900)"
    kill -0 "$SRV" 2>/dev/null || fail "nq-server died"
    sleep 0.3
  done
}
get() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=60).read().decode())' "$1"; }

# ---- 1. the one-owner job ----
D="$TMP/one"
mkdir -p "$D"
PORT=$(free_port)
HTTP=$(free_port)
[ "$PORT" != "$HTTP" ] || HTTP=$(free_port)
e2e_start_server "$D" "$PORT" --n $N --depth 2 --quorum 2 --http "127.0.0.1:$HTTP"
KEY=$(cat "$D/data/enrol.key")
E2E_KEY=$KEY e2e_start_clients "$D" "$PORT" c1 c2 -- --max-units 2
wait_for "$D" "$PORT" 's["units"]["awaiting"] >= 2 and s["stalled"]["keys"] == 1 and s["stalled"]["by"]["owners"] == s["units"]["total"]' \
  "every unit stalled for want of owners"
[ "$(field "$D" "$PORT" 's["rate"]["eta_s"] is None and s["stalled"]["keys"] == 1')" = True ] ||
  fail "the one-owner job has an ETA, or not one owner: $(admin "$D" "$PORT" status --json | head -c 1500)"
admin "$D" "$PORT" status >"$D/status.txt"
grep -q '^voters     1 owner(s) can vote' "$D/status.txt" || fail "no voters line: $(cat "$D/status.txt")"
grep -q '^STALLED    20 unit(s) cannot finish.*quorum 2 by owner needs 2 owners.*nq-admin owner add' \
  "$D/status.txt" || fail "no STALLED line: $(cat "$D/status.txt")"
grep -q 'no ETA: every unit left is stalled' "$D/status.txt" || fail "the ETA line: $(cat "$D/status.txt")"
get "http://127.0.0.1:$HTTP/metrics" >"$D/metrics.txt"
grep -qx 'nq_units_stalled{reason="owners"} 20' "$D/metrics.txt" || fail "metrics: $(grep stalled "$D/metrics.txt")"
grep -qx 'nq_voters{state="can_vote"} 1' "$D/metrics.txt" || fail "metrics: no nq_voters 1"
get "http://127.0.0.1:$HTTP/" >"$D/page.html"
grep -q 'id="stalled"' "$D/page.html" || fail "the page shows no stalled block"
grep -q 'id="eta">none: stalled<' "$D/page.html" || fail "the page shows an ETA"
grep -q 'WARN: 20 unit(s) stalled (owners 20): 1 owner(s) can vote' "$D/server.log" ||
  fail "the server did not log the stall"
say "one owner: 20/20 units stalled (owners), no ETA; status, /metrics, the page and the log say so"
stop_all

# ---- 2. the banned liar ----
D="$TMP/liar"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n $N --depth 2 --quorum 2 --spot-check 100 --ban-threshold 0 \
  --http off
key() { admin "$D" "$PORT" owner add "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["enrol_key"])'; }
K1=$(key honest1)
K2=$(key honest2)
KL=$(key liar)
E2E_KEY=$K1 e2e_start_client "$D" "$PORT" h1
E2E_KEY=$K2 e2e_start_client "$D" "$PORT" h2
wait_for "$D" "$PORT" 's["done"] and s["match"] is True' "the honest job"
E2E_CLIENT=nq-client-test E2E_KEY=$KL NQ_CLIENT_FAULT=lie e2e_start_client "$D" "$PORT" liar --max-units 3
LIAR=$CPID
# The liar's three results are in once it has left (--max-units 3): no count moves after that.
for i in $(seq 1 $((DEADLINE * 10))); do kill -0 "$LIAR" 2>/dev/null || break; sleep 0.1; done
kill -0 "$LIAR" 2>/dev/null && fail "the liar did not leave after its 3 units within ${DEADLINE}s"
wait_for "$D" "$PORT" 'not s["done"] and s["units"]["awaiting"] >= 1 and s["stalled"]["by"]["voted"] == s["units"]["awaiting"]' \
  "units re-opened by the liar's spot checks, stalled"
wait_for "$D" "$PORT" 's["rate"]["eta_s"] is None and s["stalled"]["by"]["voted"] == s["units"]["awaiting"]' \
  "the liar's re-opened units stalled with no ETA"
AW=$(field "$D" "$PORT" 's["units"]["awaiting"]')
admin "$D" "$PORT" status >"$D/status.txt"
grep -q "^STALLED    $AW unit(s) cannot finish.*$AW voted" "$D/status.txt" || fail "no STALLED line: $(cat "$D/status.txt")"
admin "$D" "$PORT" units --state awaiting >"$D/awaiting.txt"
[ "$(grep -c ', voided)' "$D/awaiting.txt")" -eq $((2 * AW)) ] || fail "awaiting votes: $(cat "$D/awaiting.txt")"
admin "$D" "$PORT" client ban liar >/dev/null || fail "client ban failed"
wait_for "$D" "$PORT" 's["done"] and s["match"] is True and s["stalled"]["units"] == 0 and s["clients"]["banned"] == 1' \
  "the job done again once the liar is banned"
say "liar: $AW re-opened unit(s) stalled (voted), no ETA; its ban restored the honest votes; MATCH"
stop_all
say "PASS"
