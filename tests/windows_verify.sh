#!/usr/bin/env bash
# nq-verify.exe under wine on a real job's evidence (scripts/build-windows.sh --test, with or
# without --solver-only): it accepts the file (a recounted sample of 20 units included: VERIFIED,
# TOTAL 14200) and refuses it, exit 1, once one unit's COUNT8 is changed and the file's checksum
# made good again (so the count is what it refuses, not the digest).
#
#   bash tests/windows_verify.sh WIN_BUILD LINUX_BUILD [EVIDENCE]
#
# Without EVIDENCE the file comes from a job run here with the Linux programs: nq-server on N=12
# (--quorum 2 --quorum-distinct client) with two Linux nq-clients, then nq-admin export. With it
# (tests/windows_e2e.sh passes its mixed job's file), that file is checked.
set -euo pipefail
WIN="$(cd "${1:?usage: windows_verify.sh WIN_BUILD LINUX_BUILD [EVIDENCE]}" && pwd)"
BIN="$(cd "${2:?usage: windows_verify.sh WIN_BUILD LINUX_BUILD [EVIDENCE]}" && pwd)"
EVIDENCE=${3:-}
WINE=${NQ_WINE:-$WIN/wine-run}
TAG=windows_verify
. "$(dirname "$0")/lib_e2e.sh"
e2e_init windows-verify
[ -e "$WIN/nq-verify.exe" ] || fail "$WIN/nq-verify.exe missing"
[ -x "$WINE" ] || fail "$WINE missing (scripts/build-windows.sh makes it)"
# Every run under wine has a limit: a wine that hangs (a slow first start, a stuck wineserver)
# fails here with a message instead of holding CI until its own limit.
WINE_LIMIT=300

D="$TMP/job"
mkdir -p "$D"
if [ -n "$EVIDENCE" ]; then
  cp "$EVIDENCE" "$D/evidence.jsonl"
else
  for p in nq-server nq-client nq-admin; do
    [ -x "$BIN/$p" ] || fail "$BIN/$p missing (the Linux build makes the evidence file)"
  done
  PORT=$(free_port)
  e2e_start_server "$D" "$PORT" --n 12 --depth 3 --quorum 2 --quorum-distinct client --exit-when-done
  e2e_start_clients "$D" "$PORT" a b
  wait_server_exit 600
  check_done "$D" 12
  "$BIN/nq-admin" export --data "$D/data" --out "$D/evidence.jsonl" --quorum-distinct client \
    >/dev/null || fail "nq-admin export"
fi

# win_verify FILE ARGS...: nq-verify.exe on FILE (from its folder: a Windows program takes a
# Windows path, and a relative one is the same), its output in FILE.out; returns its exit status.
win_verify() {
  local f=$1 rc=0
  shift
  (cd "$D" && timeout -k 10 $WINE_LIMIT "$WINE" "$WIN/nq-verify.exe" "$f" "$@") >"$D/$f.out" 2>&1 ||
    rc=$?
  [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "nq-verify.exe $f: no answer within $WINE_LIMIT s under wine"
  return $rc
}

win_verify evidence.jsonl --sample 20 --seed 7 ||
  fail "nq-verify.exe refused a good evidence file: $(cat "$D/evidence.jsonl.out")"
grep -q "VERIFIED" "$D/evidence.jsonl.out" && grep -qE "^TOTAL +14200" "$D/evidence.jsonl.out" ||
  fail "nq-verify.exe output: $(cat "$D/evidence.jsonl.out")"
say "nq-verify.exe accepts the job's evidence: $(tr -d '\r' <"$D/evidence.jsonl.out" | grep -m1 VERIFIED)"

python3 - "$D/evidence.jsonl" "$D/tampered.jsonl" <<'PY'
import hashlib, json, sys
lines = open(sys.argv[1]).read().splitlines()
for i, l in enumerate(lines):
    o = json.loads(l)
    if o.get("type") == "unit" and "c8" in json.dumps(o):
        def bump(x):
            if isinstance(x, dict):
                for k in x:
                    if k == "c8":
                        x[k] = str(int(x[k]) + 1) if isinstance(x[k], str) else x[k] + 1
                        return True
                    if bump(x[k]):
                        return True
            if isinstance(x, list):
                return any(bump(v) for v in x)
            return False
        assert bump(o)
        lines[i] = json.dumps(o, separators=(",", ":"))
        break
else:
    sys.exit("no unit line with c8")
body = lines[:-1]
digest = hashlib.sha256(("\n".join(body) + "\n").encode()).hexdigest()
open(sys.argv[2], "w").write("\n".join(body) + "\n" + json.dumps({"type": "sha256", "sha256": digest}, separators=(",", ":")) + "\n")
PY
rc=0
win_verify tampered.jsonl --sample 0 || rc=$?
[ $rc -eq 1 ] || fail "nq-verify.exe on a tampered file: exit $rc, want 1: $(cat "$D/tampered.jsonl.out")"
# The checksum was made good again: the refusal is the count's, not the digest's.
grep -q "checksum" "$D/tampered.jsonl.out" &&
  fail "nq-verify.exe refused the checksum, not the count: $(cat "$D/tampered.jsonl.out")"
say "nq-verify.exe refuses it with one COUNT8 changed: $(tr -d '\r' <"$D/tampered.jsonl.out" | head -n 1)"
