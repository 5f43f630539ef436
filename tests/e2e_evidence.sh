#!/usr/bin/env bash
# The evidence file end to end (docs/evidence.md): a real nq-server finishes N=12 (depth 4, quorum
# 2 by client, 10% spot checks) with three nq-clients; nq-admin export writes its evidence and nq-verify, which needs
# no server and no database, passes it with a recomputed sample of 20 units. Then every kind of
# tampering fails, each with its own message: a unit removed, a unit duplicated, a unit replaced by
# one of its two children (the other missing), a unit and one of its children, a count changed
# without and with the checksum fixed, totals that do not add up, a file cut short (inside a line
# and at a line's end), a count changed consistently everywhere (only the recount catches it),
# and the file read under a stricter rule than the job's. Also: a running job has no evidence.
#
#   bash tests/e2e_evidence.sh BUILD_DIR
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_evidence.sh BUILD_DIR}" && pwd)"
for p in nq-server nq-client nq-admin nq-verify nq-solve; do
  [ -x "$BIN/$p" ] || { echo "e2e_evidence: $BIN/$p missing"; exit 1; }
done

TAG=e2e_evidence
. "$(dirname "$0")/lib_e2e.sh"
e2e_init evidence

N=12
DEPTH=4
D="$TMP/job"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n $N --depth $DEPTH --quorum 2 --quorum-distinct client \
  --spot-check 10 --exit-when-done

# A running job has no evidence yet, and the file is not left behind.
rc=0; "$BIN/nq-admin" export --data "$D/data" --out "$D/early.jsonl" 2>"$D/err" || rc=$?
[ $rc -eq 1 ] && grep -q "only a finished job" "$D/err" || fail "export of a running job: exit $rc: $(cat "$D/err")"
[ ! -e "$D/early.jsonl" ] || fail "a refused export left a file"
rc=0; "$BIN/nq-admin" export --data "$D/data" 2>"$D/err" || rc=$?
[ $rc -eq 2 ] || fail "export without --out: exit $rc, want 2"
rc=0; "$BIN/nq-admin" export --data "$D/data" --out "$D/x" --quorum-distinct team 2>"$D/err" || rc=$?
[ $rc -eq 2 ] && grep -q "client, owner or network" "$D/err" || fail "a bad --quorum-distinct: exit $rc"
rc=0; "$BIN/nq-admin" export --server "127.0.0.1:$PORT" --out "$D/x" 2>"$D/err" || rc=$?
[ $rc -eq 2 ] && grep -q "local mode only" "$D/err" || fail "export over --server: exit $rc"

e2e_start_clients "$D" "$PORT" a b c
wait_server_exit 300
check_done "$D" $N
say "job done"

rc=0; "$BIN/nq-admin" export --data "$D/data" --out "$D/no/such/dir/f" 2>"$D/err" || rc=$?
[ $rc -eq 1 ] && grep -q "cannot create" "$D/err" || fail "export to a missing directory: exit $rc"
F="$D/evidence.jsonl"
"$BIN/nq-admin" export --data "$D/data" --out "$F" --quorum-distinct client >"$D/export.out" ||
  fail "export: $(cat "$D/export.out")"
grep -q "exported N=$N: .* TOTAL 14200 UNIQUE 1787" "$D/export.out" || fail "export summary: $(cat "$D/export.out")"
ls "$D" | grep -q "\.tmp\." && fail "export left a temporary file"
# To stdout: the same units and totals (the header's export time may differ by a second).
"$BIN/nq-admin" export --data "$D/data" --out - --quorum-distinct client 2>/dev/null |
  sed -n '2,$p' | head -n -1 | cmp -s - <(sed -n '2,$p' "$F" | head -n -1) ||
  fail "export to stdout differs from the file"
head -n 1 "$F" | grep -q '"format":"nq-evidence","version":3,"n":12' || fail "header: $(head -c 300 "$F")"
"$BIN/nq-verify" "$F" --sample 20 --seed 7 >"$D/verify.out" 2>&1 || fail "nq-verify: $(cat "$D/verify.out")"
grep -q "VERIFIED" "$D/verify.out" && grep -q "^TOTAL *14200" "$D/verify.out" &&
  grep -q "20 unit(s) recomputed with reference (seed 7): all agree" "$D/verify.out" ||
  fail "nq-verify output: $(cat "$D/verify.out")"
"$BIN/nq-verify" "$F" --sample 3 --seed 9 --json >"$D/verify.json" ||
  fail "nq-verify --json: $(cat "$D/verify.json")"
grep -q '^{"file":".*","verified":true,"status":0,"n":12,.*"total":"14200","unique":"1787","sampled":3,"kernel":"reference","seed":9,"signed":true,"key":"[0-9a-f]\{64\}","root":"[0-9a-f]\{64\}","leaves":[0-9]*,"settled_quorum":1290,"settled_trusted":0,"settled_audit":0}$' \
  "$D/verify.json" || fail "nq-verify --json: $(cat "$D/verify.json")"
# Three clients, quorum 2: every spot check went to the third one.
grep -Eq "results +[0-9]+ \([0-9]+ invalid, [1-9][0-9]* spot checks\)" "$D/verify.out" ||
  fail "no spot checks in the evidence: $(cat "$D/verify.out")"
# The fast kernel recounts too (whichever variant this CPU runs).
"$BIN/nq-verify" "$F" --sample 20 --kernel auto >"$D/verify2.out" 2>&1 ||
  fail "nq-verify --kernel auto: $(cat "$D/verify2.out")"
say "export + nq-verify --sample 20 pass ($(wc -l <"$F") lines)"

# fixsum IN OUT: OUT = IN's lines but the last, then a sha256 line that matches them.
fixsum() {
  local sum
  sum=$(head -n -1 "$1" | sha256sum | cut -d' ' -f1)
  { head -n -1 "$1"; printf '{"type":"sha256","sha256":"%s"}\n' "$sum"; } >"$2"
}
# expect_fail FILE PATTERN [ARGS...]: nq-verify exits 1 with PATTERN in its message.
expect_fail() {
  local f=$1 pat=$2 rc=0
  shift 2
  "$BIN/nq-verify" "$f" --sample 0 "$@" >"$D/out" 2>&1 || rc=$?
  [ $rc -eq 1 ] || fail "$(basename "$f"): exit $rc, want 1: $(cat "$D/out")"
  grep -q -- "$pat" "$D/out" || fail "$(basename "$f"): want '$pat', got: $(cat "$D/out")"
  say "$(basename "$f"): $(sed -E 's/^nq-verify: [^ ]+ //' "$D/out")"
}
T="$D/t"
mkdir -p "$T"
LINES=$(wc -l <"$F")
# A unit with at least two children at depth 5, and its line.
"$BIN/nq-solve" $N --list-units --depth $((DEPTH + 1)) >"$D/kids.txt" 2>/dev/null
K=""
for k in $(seq 2 $((LINES - 2))); do
  txt=$(sed -n "${k}p" "$F" | sed -E 's/.*"text":"([^"]*)".*/\1/')
  if [ "$(grep -c "^$txt," "$D/kids.txt")" -ge 2 ]; then K=$k; U=$txt; break; fi
done
[ -n "$K" ] || fail "no unit with two children"
KID=$(grep "^$U," "$D/kids.txt" | head -n 1)

sed "${K}d" "$F" >"$T/x" && fixsum "$T/x" "$T/removed"
expect_fail "$T/removed" "which no unit covers: the units leave a gap"
sed "$((LINES - 2))d" "$F" >"$T/x" && fixsum "$T/x" "$T/last-removed"
expect_fail "$T/last-removed" "the units end before the tree does: node .* is covered by no unit"
sed "${K}p" "$F" >"$T/x" && fixsum "$T/x" "$T/duplicated"
expect_fail "$T/duplicated" "unit $U appears twice"
# A unit replaced by one of its children: deeper than the job's units; and with the header's depth
# raised to match (a careful forger), a gap where the other child should be.
sed "${K}s/\"text\":\"$U\"/\"text\":\"$KID\"/" "$F" >"$T/x" && fixsum "$T/x" "$T/deeper"
expect_fail "$T/deeper" "unit $KID has depth $((DEPTH + 1)), outside the header's $DEPTH..$DEPTH"
sed -e "${K}s/\"text\":\"$U\"/\"text\":\"$KID\"/" -e "1s/\"depth\":$DEPTH,/\"depth\":$((DEPTH + 1)),/" \
  "$F" >"$T/x" && fixsum "$T/x" "$T/one-child"
expect_fail "$T/one-child" "comes after node $U,[0-9]*, which no unit covers"
sed -n "${K}p" "$F" | sed "s/\"text\":\"$U\"/\"text\":\"$KID\"/" >"$T/kidline"
sed -e "${K}r $T/kidline" -e "1s/\"depth\":$DEPTH,/\"depth\":$((DEPTH + 1)),/" "$F" >"$T/x" &&
  fixsum "$T/x" "$T/ancestor"
expect_fail "$T/ancestor" "lies below unit $U"
# bump_c8 LINE first|all: the file with "c8" + 1 on LINE, in its first field or in every one.
bump_c8() {
  awk -v k="$1" -v all="$2" '
    NR == k { out = ""; n = 0
              while ((all == "all" || n == 0) && match($0, /"c8":[0-9]+/)) {
                v = substr($0, RSTART + 5, RLENGTH - 5) + 1; n++
                out = out substr($0, 1, RSTART - 1) "\"c8\":" v; $0 = substr($0, RSTART + RLENGTH) }
              $0 = out $0 }
    { print }' "$F"
}
bump_c8 "$K" first >"$T/count-nosum"
expect_fail "$T/count-nosum" "checksum mismatch"
fixsum "$T/count-nosum" "$T/count"
expect_fail "$T/count" "unit $U: the result of client .* is marked valid but disagrees"
# The unit and its results, changed alike: the rule holds, the sums do not.
bump_c8 "$K" all >"$T/x" && fixsum "$T/x" "$T/count-all"
expect_fail "$T/count-all" "totals: c8 is .* but the units sum to"
# A corner unit cannot have C2 or C4 solutions (the server refuses such a result too).
sed -E "${K}s/\"c2\":([0-9]+)/\"c2\":1/g" "$F" >"$T/x" && fixsum "$T/x" "$T/corner"
expect_fail "$T/corner" "impossible counts"
TOT=$((LINES - 1))
sed -E "${TOT}s/\"total\":\"[0-9]+\"/\"total\":\"14201\"/" "$F" >"$T/x" && fixsum "$T/x" "$T/total"
expect_fail "$T/total" "totals: total is 14201 but 2 C2 + 4 C4 + 8 C8 = 14200"
sed -E "${TOT}s/\"c4\":\"[0-9]+\"/\"c4\":\"1\"/" "$F" >"$T/x" && fixsum "$T/x" "$T/c4"
expect_fail "$T/c4" "totals: c4 is 1 but the units sum to"
# Everything changed consistently (unit, results, totals, checksum): only the recount finds it.
C8=$(sed -n "${TOT}p" "$F" | sed -E 's/.*"c8":"([0-9]+)".*/\1/')
bump_c8 "$K" all | sed -E "${TOT}s/\"c8\":\"[0-9]+\"/\"c8\":\"$((C8 + 1))\"/; ${TOT}s/\"total\":\"[0-9]+\"/\"total\":\"14208\"/; ${TOT}s/\"unique\":\"[0-9]+\"/\"unique\":\"1788\"/" >"$T/x"
fixsum "$T/x" "$T/consistent"
expect_fail "$T/consistent" "unit $U: recomputed with reference" --sample all
head -c $(($(wc -c <"$F") / 2)) "$F" >"$T/cut-mid"
expect_fail "$T/cut-mid" "truncated: the last line ends without a newline"
head -n $((LINES / 2)) "$F" >"$T/cut-line"
expect_fail "$T/cut-line" "truncated: the file does not end with its sha256 line"
# The job's rule was quorum 2 by client; both clients belong to the owner `default`, so read as
# by owner the units have one vote each.
"$BIN/nq-admin" export --data "$D/data" --out "$T/by-owner" >/dev/null || fail "export by owner"
expect_fail "$T/by-owner" "1 agreeing result(s) of distinct owners, the quorum is 2"
rc=0; "$BIN/nq-verify" "$D/none.jsonl" >"$D/out" 2>&1 || rc=$?
[ $rc -eq 3 ] || fail "a missing file: exit $rc, want 3"
rc=0; "$BIN/nq-verify" "$T/removed" --json >"$D/out" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q '"verified":false,"status":1,"error":"line 2: unit .*leave a gap"}$' "$D/out" ||
  fail "nq-verify --json of a failure: exit $rc: $(cat "$D/out")"
rc=0; "$BIN/nq-verify" "$F" --kernel nope >"$D/out" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "an unknown kernel: exit $rc, want 2"

# ---- The signature (docs/evidence.md, "The signature"). The server's key: its fingerprint as
# nq-admin status publishes it, and DATA/evidence.pub; the export verifies under either.
FPR=$("$BIN/nq-admin" status --data "$D/data" | sed -n 's/^evidence   signed with key \([0-9a-f]\{64\}\) .*/\1/p')
[ ${#FPR} -eq 64 ] || fail "nq-admin status does not publish the evidence key"
tail -n 1 "$F" | grep -q '"key":"[0-9a-f]\{64\}","signature":"[0-9a-f]\{128\}"}$' || fail "the export is not signed"
"$BIN/nq-verify" "$F" --sample 0 --key "$FPR" >"$D/out" 2>&1 || fail "--key FPR: $(cat "$D/out")"
grep -q "^signature  valid, key $FPR (the key given)" "$D/out" || fail "signature line: $(cat "$D/out")"
"$BIN/nq-verify" "$F" --sample 0 --key "$D/data/evidence.pub" >"$D/out" 2>&1 || fail "--key PEM: $(cat "$D/out")"
# The same check with OpenSSL alone: the signature is Ed25519 over "nq-evidence sha256 HEX".
SUM=$(head -n -1 "$F" | sha256sum | cut -d' ' -f1)
printf 'nq-evidence sha256 %s' "$SUM" >"$D/msg"
tail -n 1 "$F" | sed -E 's/.*"signature":"([0-9a-f]+)".*/\1/' | xxd -r -p >"$D/sig"
openssl pkeyutl -verify -pubin -inkey "$D/data/evidence.pub" -rawin -in "$D/msg" -sigfile "$D/sig" \
  >/dev/null || fail "openssl does not verify the signature"
say "signed: key $FPR (nq-admin status, evidence.pub, openssl pkeyutl agree)"

# A forger's key, and resign IN OUT: OUT = IN's lines but the last, signed with it.
openssl genpkey -algorithm ed25519 -out "$T/forger.pem" 2>/dev/null
FPUB=$(openssl pkey -in "$T/forger.pem" -pubout -outform DER | tail -c 32 | xxd -p -c 64)
resign() {
  local sum
  sum=$(head -n -1 "$1" | sha256sum | cut -d' ' -f1)
  printf 'nq-evidence sha256 %s' "$sum" >"$T/m"
  openssl pkeyutl -sign -inkey "$T/forger.pem" -rawin -in "$T/m" -out "$T/s"
  { head -n -1 "$1"
    printf '{"type":"sha256","sha256":"%s","key":"%s","signature":"%s"}\n' "$sum" "$FPUB" \
      "$(xxd -p -c 128 "$T/s")"; } >"$2"
}
# keepsig IN OUT: the digest fixed, the server's signature kept (a forger without the key).
keepsig() {
  local sum
  sum=$(head -n -1 "$1" | sha256sum | cut -d' ' -f1)
  { head -n -1 "$1"; tail -n 1 "$F" | sed -E "s/\"sha256\":\"[0-9a-f]+\"/\"sha256\":\"$sum\"/"; } >"$2"
}
# The forgeries: a count (in the unit and its results, and the totals: consistent), the quorum
# (the header's quorum 1 and a unit cut to one result), nodes x1000 relabelled to another
# solver version, a dropped unit, a duplicated unit.
cp "$T/consistent" "$T/f-count"
U2=$(sed -n "${K}p" "$F")
ONE=$(printf '%s' "$U2" | python3 -c 'import json,sys; u=json.loads(sys.stdin.read()); u["results"]=[r for r in u["results"] if r["state"]=="valid"][:1]; print(json.dumps(u,separators=(",",":")))')
sed -e "1s/\"quorum\":2,/\"quorum\":1,/" "$F" | awk -v k="$K" -v l="$ONE" 'NR == k { print l; next } { print }' >"$T/f-quorum"
python3 - "$F" "$T/f-relabel" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
out, extra = [], 0
for l in lines[:-1]:
    o = json.loads(l)
    if o["type"] == "unit":
        extra += o["nodes"] * 999
        o["nodes"] *= 1000
        o["nodes_solver"] = "nq-solver-1"
        for r in o["results"]:
            r["nodes"] *= 1000
            r["solver"] = "nq-solver-1"
    if o["type"] == "totals":
        o["nodes"] = str(int(o["nodes"]) + extra)
    out.append(json.dumps(o, separators=(",", ":")))
open(sys.argv[2], "w").write("\n".join(out) + "\n" + lines[-1] + "\n")
PY
sed "${K}d" "$F" >"$T/f-dropped"
sed "${K}p" "$F" >"$T/f-duplicated"
for x in count quorum relabel dropped duplicated; do
  keepsig "$T/f-$x" "$T/kept-$x"
  expect_fail "$T/kept-$x" "bad signature: the signature does not match the file's SHA-256" --key "$FPR"
  expect_fail "$T/kept-$x" "bad signature"
  resign "$T/f-$x" "$T/resigned-$x"
  expect_fail "$T/resigned-$x" "signed by another key: the file is signed by key .*, not by the key given ($FPR)" --key "$FPR"
  expect_fail "$T/resigned-$x" "signed by another key" --key "$D/data/evidence.pub"
done
# Without --key a re-signed file is checked on its content alone, which catches what is not
# consistent (each with its own message): a result cut or relabelled no longer fits the root of
# the results (the forger left it); one who rewrote the root too is caught by the published root
# (tests/e2e_receipts.sh) or the key.
expect_fail "$T/resigned-dropped" "which no unit covers: the units leave a gap"
expect_fail "$T/resigned-duplicated" "unit $U appears twice"
expect_fail "$T/resigned-count" "unit $U: recomputed with reference" --sample all
expect_fail "$T/resigned-quorum" "totals: root mismatch"
expect_fail "$T/resigned-relabel" "totals: root mismatch"
ROOT=$(grep '^{"type":"totals"' "$F" | sed -E 's/.*"root":"([0-9a-f]{64})".*/\1/')
expect_fail "$T/resigned-dropped" "which no unit covers" --root "$ROOT"
# The server's own file re-signed by the forger passes on its content, naming the other key.
resign "$F" "$T/resigned-same"
"$BIN/nq-verify" "$T/resigned-same" --sample 0 --root "$ROOT" >"$D/out" 2>&1 || fail "resigned same: $(cat "$D/out")"
grep -q "signature  valid, key $(printf '%s' "$FPUB" | xxd -r -p | sha256sum | cut -d' ' -f1); pin it with --key" "$D/out" ||
  fail "an unpinned file names its key: $(cat "$D/out")"
# An unsigned file (the signature stripped) is refused where a key is asked for.
fixsum "$F" "$T/stripped"
expect_fail "$T/stripped" "not signed: the file carries no signature, and --key asks for one" --key "$FPR"
# A made-up solver version is refused even when the file is consistent and signed.
sed -E "${K}s/\"solver\":\"nq-solver-4\"/\"solver\":\"nq-solver-9\"/" "$F" >"$T/x" && resign "$T/x" "$T/unknown-solver"
expect_fail "$T/unknown-solver" "names solver version \"nq-solver-9\", which nq does not know"
say "PASS"
