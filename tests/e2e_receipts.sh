#!/usr/bin/env bash
# The root and the receipts end to end (docs/evidence.md, "The root and the receipts"): a real
# nq-server with --http finishes N=10 (depth 3, quorum 2 by client) with two nq-clients, each of
# which keeps the receipts its acks carried. Then:
#   - the root /api/status shows at the end equals the root in the published file (/api/export),
#     and the page and /api/history show it;
#   - each volunteer's receipts are all in the file under that root (nq-verify --receipts, and
#     nq-client status --receipts);
#   - the export names no client and no owner unless asked (--names), and verifies either way;
#   - a unit changed after the fact -- in the unit, its results and the totals alike, the file
#     re-signed with the server's own key, so that nothing but the root can catch it -- fails
#     nq-verify (root mismatch) and the check of the volunteer whose result it changed (CHANGED).
#
#   bash tests/e2e_receipts.sh BUILD_DIR
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_receipts.sh BUILD_DIR}" && pwd)"
for p in nq-server nq-client nq-admin nq-verify; do
  [ -x "$BIN/$p" ] || { echo "e2e_receipts: $BIN/$p missing"; exit 1; }
done
for p in openssl sqlite3 xxd python3; do
  command -v $p >/dev/null || { echo "e2e_receipts: $p missing: skipped"; exit 77; }
done

TAG=e2e_receipts
. "$(dirname "$0")/lib_e2e.sh"
e2e_init receipts

N=10
D="$TMP/job"
mkdir -p "$D"
PORT=$(free_port)
HTTP=$(free_port)
[ "$PORT" != "$HTTP" ] || HTTP=$(free_port)
e2e_start_server "$D" "$PORT" --n $N --depth 3 --quorum 2 --quorum-distinct client \
  --http "127.0.0.1:$HTTP"
URL="http://127.0.0.1:$HTTP"
get() { python3 -c 'import sys, urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1], timeout=60).read())' "$URL$1"; }
# status EXPR: the Python expression over /api/status (as `s`).
status() { get /api/status | python3 -c 'import sys, json; s = json.load(sys.stdin); print('"$1"')'; }
# file_root F: the root in the totals line of F, and its leaf count.
file_root() { grep '^{"type":"totals"' "$1" | sed -E 's/.*"leaves":([0-9]+),"root":"([0-9a-f]{64})".*/\2 \1/'; }

A=volunteer-alpha
B=volunteer-beta
e2e_start_clients "$D" "$PORT" $A $B -- --exit-when-done
for p in "${CPIDS[@]}"; do
  for _ in $(seq 1 3000); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$p" 2>/dev/null && fail "a client did not finish within 300 s"
  wait "$p" || fail "a client exited $?"
done
[ "$(status 's["done"]')" = True ] || fail "the job is not done: $(get /api/status | head -c 300)"
say "job done; receipts kept: $A $(wc -l <"$D/state-$A/receipts"), $B $(wc -l <"$D/state-$B/receipts")"
[ -s "$D/state-$A/receipts" ] && [ -s "$D/state-$B/receipts" ] || fail "a client kept no receipts"

# ---- the published root: the file's is the one /api/status shows (waited for: the server takes
# it again every few seconds).
F="$D/evidence.jsonl"
get /api/export >"$F"
read -r ROOT LEAVES < <(file_root "$F")
[ ${#ROOT} -eq 64 ] || fail "no root in the export: $(grep totals "$F")"
ok=0
for _ in $(seq 1 300); do
  [ "$(status 's["root"]["root"] + " " + str(s["root"]["leaves"])')" = "$ROOT $LEAVES" ] && { ok=1; break; }
  sleep 0.2
done
[ $ok -eq 1 ] || fail "/api/status shows root $(status 's.get("root")'), the file $ROOT over $LEAVES"
get / | grep -q "<code id=\"root\">$ROOT</code>" || fail "the page does not show the root"
get /api/history | grep -q '"root":"[0-9a-f]\{64\}","leaves":[0-9]' || fail "/api/history has no root"
say "root $ROOT over $LEAVES results: /api/status, the page and the file agree"

# ---- the receipts: every one of each volunteer is in the file under the published root.
PUB="$D/data/evidence.pub"
for c in $A $B; do
  "$BIN/nq-verify" "$F" --sample 5 --key "$PUB" --root "$ROOT" --receipts "$D/state-$c" >"$D/out" 2>&1 ||
    fail "nq-verify --receipts ($c): $(cat "$D/out")"
  K=$(wc -l <"$D/state-$c/receipts")
  grep -q "^receipts   $K of job [0-9]* in .*: $K found .* 0 missing, 0 changed: every one is in the file" "$D/out" ||
    fail "nq-verify --receipts ($c): $(cat "$D/out")"
  "$BIN/nq-client" status --state "$D/state-$c" --receipts "$F" --root "$ROOT" >"$D/out" 2>&1 ||
    fail "nq-client status --receipts ($c): $(cat "$D/out")"
  grep -q "every receipt of this client is in the file under its root" "$D/out" ||
    fail "nq-client status --receipts ($c): $(cat "$D/out")"
done
"$BIN/nq-client" status --state "$D/state-$A" --receipts "$F" --json >"$D/out" ||
  fail "status --receipts --json: $(cat "$D/out")"
grep -q "\"ok\":true,.*\"missing\":0,\"changed\":0,\"root\":\"$ROOT\"" "$D/out" ||
  fail "status --receipts --json: $(cat "$D/out")"
say "receipts of $A and $B: all in the file (nq-verify --receipts, nq-client status --receipts)"

# ---- names: pseudonyms unless asked, the file verifies either way, the root is the same.
for f in "$F"; do
  grep -q "$A\|$B\|\"owner\":\"default\"" "$f" && fail "$(basename "$f") names a client or an owner"
done
grep -q '"client":"c-[0-9a-f]\{20\}","owner":"o-[0-9a-f]\{20\}"' "$F" || fail "no pseudonyms in the export"
"$BIN/nq-admin" export --data "$D/data" --out "$D/admin.jsonl" --quorum-distinct client >"$D/out" ||
  fail "nq-admin export: $(cat "$D/out")"
grep -q "root $ROOT over $LEAVES results (names pseudonymised)" "$D/out" || fail "export summary: $(cat "$D/out")"
grep -q "$A\|$B" "$D/admin.jsonl" && fail "nq-admin export names a client"
# The same pseudonyms as /api/export's (stable per name and job).
sed -n '2,$p' "$F" | head -n -1 | cmp -s - <(sed -n '2,$p' "$D/admin.jsonl" | head -n -1) ||
  fail "nq-admin export and /api/export differ"
NAMED="$D/named.jsonl"
"$BIN/nq-admin" export --data "$D/data" --out "$NAMED" --quorum-distinct client --names >/dev/null ||
  fail "export --names"
grep -q "\"client\":\"$A\"" "$NAMED" || fail "export --names does not name the clients"
[ "$(file_root "$NAMED")" = "$ROOT $LEAVES" ] || fail "the root depends on the names"
for f in "$F" "$NAMED"; do
  "$BIN/nq-verify" "$f" --sample 10 --key "$PUB" --root "$ROOT" >"$D/out" 2>&1 ||
    fail "nq-verify $(basename "$f"): $(cat "$D/out")"
done
say "the export pseudonymises the names (nq-admin export --names names them); both verify"

# ---- a unit changed after the fact and re-signed with the server's own key: only the root
# catches it. The server's key, from its database, as a PEM file for openssl.
HEXKEY=$(sqlite3 "$D/data/nq.db" "SELECT value FROM meta WHERE key = 'evidence_key'")
[ ${#HEXKEY} -eq 64 ] || fail "no signing key in the database"
printf '302e020100300506032b657004220420%s' "$HEXKEY" | xxd -r -p >"$D/key.der"
openssl pkey -inform DER -in "$D/key.der" -out "$D/key.pem" 2>/dev/null || fail "openssl: the key"
python3 - "$NAMED" "$D/changed.x" "$A" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
out, done = [], False
for l in lines[:-1]:
    o = json.loads(l)
    if o["type"] == "unit" and not done and any(r["client"] == sys.argv[3] for r in o["results"]):
        # Every copy of C8 one higher (the unit and its results): the quorum's rule still holds.
        o["c8"] += 1
        for r in o["results"]:
            r["c8"] += 1
        done = True
    if o["type"] == "totals":  # and the sums with it
        o["c8"] = str(int(o["c8"]) + 1)
        o["total"] = str(int(o["total"]) + 8)
        o["unique"] = str(int(o["unique"]) + 1)
    out.append(json.dumps(o, separators=(",", ":")))
assert done
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY
SUM=$(sha256sum <"$D/changed.x" | cut -d' ' -f1)
printf 'nq-evidence sha256 %s' "$SUM" >"$D/msg"
openssl pkeyutl -sign -inkey "$D/key.pem" -rawin -in "$D/msg" -out "$D/sig"
PUBHEX=$(tail -n 1 "$NAMED" | sed -E 's/.*"key":"([0-9a-f]{64})".*/\1/')
{ cat "$D/changed.x"
  printf '{"type":"sha256","sha256":"%s","key":"%s","signature":"%s"}\n' "$SUM" "$PUBHEX" \
    "$(xxd -p -c 128 "$D/sig")"; } >"$D/changed.jsonl"
rc=0; "$BIN/nq-verify" "$D/changed.jsonl" --sample 0 --key "$PUB" >"$D/out" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "FAILED: line [0-9]*: totals: root mismatch: the file's root is $ROOT" "$D/out" ||
  fail "nq-verify of the changed file: exit $rc: $(cat "$D/out")"
say "changed unit, re-signed with the server's key: $(sed -E 's/^nq-verify: [^ ]+ //' "$D/out" | cut -c 1-150)..."
rc=0; "$BIN/nq-client" status --state "$D/state-$A" --receipts "$D/changed.jsonl" --root "$ROOT" \
  >"$D/out" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "receipt of result [0-9]*: CHANGED" "$D/out" &&
  grep -q "ROOT MISMATCH" "$D/out" || fail "$A's check of the changed file: exit $rc: $(cat "$D/out")"
say "$A's check: $(grep -m1 CHANGED "$D/out" | cut -c 1-120)..."
# Even a forger who also rewrote the root (the file is then consistent) is caught by the
# published root, and the volunteer's receipt still by its leaf.
python3 - "$D/changed.x" "$D/changed-root.x" "$("$BIN/nq-verify" "$D/changed.jsonl" --sample 0 2>&1 |
  sed -nE 's/.* results hash to ([0-9a-f]{64}).*/\1/p')" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
s = re.sub(r'"root":"[0-9a-f]{64}"', '"root":"%s"' % sys.argv[3], s)
open(sys.argv[2], "w").write(s)
PY
SUM=$(sha256sum <"$D/changed-root.x" | cut -d' ' -f1)
printf 'nq-evidence sha256 %s' "$SUM" >"$D/msg"
openssl pkeyutl -sign -inkey "$D/key.pem" -rawin -in "$D/msg" -out "$D/sig"
{ cat "$D/changed-root.x"
  printf '{"type":"sha256","sha256":"%s","key":"%s","signature":"%s"}\n' "$SUM" "$PUBHEX" \
    "$(xxd -p -c 128 "$D/sig")"; } >"$D/changed-root.jsonl"
"$BIN/nq-verify" "$D/changed-root.jsonl" --sample 0 --key "$PUB" >/dev/null 2>&1 ||
  fail "the consistent forgery should pass on its content alone"
rc=0; "$BIN/nq-verify" "$D/changed-root.jsonl" --sample 0 --key "$PUB" --root "$ROOT" >"$D/out" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "is not the published root given ($ROOT)" "$D/out" ||
  fail "--root of the rewritten root: exit $rc: $(cat "$D/out")"
rc=0; "$BIN/nq-verify" "$D/changed-root.jsonl" --sample 0 --receipts "$D/state-$A" >"$D/out" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "CHANGED" "$D/out" || fail "--receipts of the rewritten root: exit $rc: $(cat "$D/out")"
say "a rewritten root: refused by --root and by $A's receipts"
say "PASS"
