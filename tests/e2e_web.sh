#!/usr/bin/env bash
# The public status page end to end: a real nq-server with --http, two volunteers (one
# with a public name, one anonymous), and headless Chromium (Debian's `chromium`) rendering `/`
# while the job runs and after it is done. The rendered DOM must show the job's progress, the
# verified numbers of /api/status, the published check and both volunteers on the leaderboard;
# /metrics must pass the Prometheus client library's own parser (python3-prometheus-client).
# Screenshots go to BUILD/e2e_web-running.png and BUILD/e2e_web-done.png.
# Exits 77 (ctest: skipped) when chromium is missing and cannot be installed with apt-get.
# Usage: tests/e2e_web.sh BUILD_DIR
set -euo pipefail
TAG=e2e_web
BIN=$(cd "${1:?usage: e2e_web.sh BUILD_DIR}" && pwd)
source "$(dirname "$0")/lib_e2e.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# The test's own setup: Chromium and the metrics parser, installed when missing (root only).
apt_install() {
  [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null || return 1
  timeout 900 apt-get install -y -qq "$@" >/dev/null 2>&1 ||
    { timeout 300 apt-get update -qq >/dev/null 2>&1 && timeout 900 apt-get install -y -qq "$@" >/dev/null 2>&1; }
}
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
  echo "$TAG: chromium missing; installing it with apt-get"
  apt_install chromium || true
  CHROME=$(command -v chromium || true)
fi
if [ -z "$CHROME" ]; then echo "$TAG: SKIP: chromium is not installed and cannot be installed"; exit 77; fi
if ! "$PY" -c 'import prometheus_client' 2>/dev/null; then
  apt_install python3-prometheus-client || true
  "$PY" -c 'import prometheus_client' 2>/dev/null || fail "python3-prometheus-client is missing (scripts/bootstrap.sh installs it)"
fi

e2e_init web
D="$TMP/s"
mkdir -p "$D"
PORT=$(free_port)
HTTP=$(free_port)
[ "$PORT" != "$HTTP" ] || HTTP=$(free_port)
e2e_start_server "$D" "$PORT" --n 12 --depth 3 --quorum 2 --quorum-distinct client \
  --http "127.0.0.1:$HTTP"
URL="http://127.0.0.1:$HTTP"

get() { "$PY" -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=60).read().decode())' "$URL$1"; }
# jq-like: the Python expression $2 over the JSON of /api/status (as `s`).
status() { get /api/status | "$PY" -c 'import sys, json; s = json.load(sys.stdin); print('"$1"')'; }
dom() { # dom NAME: the DOM Chromium rendered, and a screenshot
  timeout 180 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --user-data-dir="$TMP/chrome" --dump-dom "$URL/" >"$TMP/$1.html" 2>"$TMP/chrome-$1.log" ||
    { tail -n 20 "$TMP/chrome-$1.log"; fail "chromium --dump-dom failed"; }
  timeout 180 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --user-data-dir="$TMP/chrome" --window-size=1000,1800 \
    --screenshot="$BIN/$TAG-$1.png" "$URL/" >>"$TMP/chrome-$1.log" 2>&1 || say "no screenshot (see log)"
}
# text_of FILE ID: the text of the element with that id in the rendered DOM.
text_of() { "$PY" - "$1" "$2" <<'PYEOF'
import re, sys
html = open(sys.argv[1]).read()
m = re.search(r'id="%s"[^>]*>(.*?)<' % re.escape(sys.argv[2]), html, re.S)
print(m.group(1).strip() if m else "")
PYEOF
}
# count_of FILE ID: the same for a count, without its thousands separators.
count_of() { local t; t=$(text_of "$1" "$2"); echo "${t//,/}"; }
client_cmd() { # client_cmd NAME STATE [extra args]: CMD = the nq-client command line
  local name=$1 state=$2
  shift 2
  CMD=("$BIN/nq-client" --exit-when-done --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem"
    --enrol "$(cat "$D/data/enrol.key")" --name "$name" --state "$TMP/$state" --threads 1
    --priority normal "$@")
}
client() { # client NAME STATE [extra args]: one nq-client run in the foreground
  client_cmd "$@"
  timeout 300 "${CMD[@]}" >>"$D/client-$1.log" 2>&1
}
# client_bg NAME STATE [extra args]: the same in the background, its pid (nq-client's own, not a
# subshell's or timeout's, so that the EXIT trap's kill reaches it) in PIDS.
client_bg() {
  client_cmd "$@"
  "${CMD[@]}" >>"$D/client-$1.log" 2>&1 &
  PIDS+=($!)
}

# Part of the job: each volunteer solves 6 units and stops, so the job waits half-done.
client alice ca --public-name Alice.V --max-units 6 || fail "client alice failed"
client bob cb --max-units 6 || fail "client bob failed"
VER=$(status 's["units"]["verified"]')
[ "$VER" -gt 0 ] || fail "no unit verified after both partial runs"
dom running
PROG=$(text_of "$TMP/running.html" progress)
TOTAL=$(count_of "$TMP/running.html" total)
[ "$(count_of "$TMP/running.html" units-verified)" = "$VER" ] || fail "page shows $(text_of "$TMP/running.html" units-verified) verified units, status $VER"
[ "$TOTAL" = "$(status 's["verified"]["total"]')" ] || fail "page TOTAL $TOTAL differs from /api/status"
case "$PROG" in 0.00%|100.00%|"") fail "progress '$PROG' while running" ;; esac
grep -q 'Alice.V' "$TMP/running.html" || fail "the named volunteer is not on the leaderboard"
grep -Eq 'anonymous-[0-9a-f]{6}' "$TMP/running.html" || fail "the anonymous volunteer is not on the leaderboard"
grep -q '>bob<' "$TMP/running.html" && fail "the anonymous volunteer's client name is shown"
grep -q 'not done yet; published TOTAL for N=12 is 14200' "$TMP/running.html" || fail "no published check while running"
say "running: progress $PROG, $VER units verified, TOTAL so far $TOTAL"

# Metrics through the Prometheus client library's parser.
get /metrics | "$PY" -c '
import sys
from prometheus_client.parser import text_string_to_metric_families
fam = {f.name: f for f in text_string_to_metric_families(sys.stdin.read())}
need = {"nq_build_info": "gauge", "nq_units": "gauge", "nq_results": "counter",
        "nq_verified_nodes": "gauge", "nq_verified_solutions": "gauge", "nq_clients": "gauge",
        "nq_connections": "gauge", "nq_commit_duration_seconds": "histogram",
        "nq_get_work_duration_seconds": "histogram", "nq_job_done": "gauge"}
for n, t in need.items():
    assert n in fam, "missing family " + n
    assert fam[n].type == t, n + " is " + fam[n].type
acc = [s.value for s in fam["nq_results"].samples if s.labels.get("outcome") == "accepted"]
assert acc and acc[0] >= 12, acc
assert [s.value for s in fam["nq_job_done"].samples] == [0.0]
' || fail "/metrics did not parse or lacks a family"
say "metrics parse (prometheus_client) with every family"

# The rest of the job, then the finished page.
client_bg alice ca --public-name Alice.V --max-units 100000
client_bg bob cb --max-units 100000
for i in $(seq 1 1200); do
  [ "$(status 's["done"]')" = True ] && break
  [ "$i" -lt 1200 ] || fail "the job did not finish within 10 minutes"
  sleep 0.5
done
dom done
read -r PT PU <<<"$(published 12)"
[ "$(count_of "$TMP/done.html" total)" = "$PT" ] || fail "final TOTAL $(text_of "$TMP/done.html" total), published $PT"
[ "$(count_of "$TMP/done.html" unique)" = "$PU" ] || fail "final UNIQUE differs"
# For people: 14,200 with its separator, dates in UTC, the answer before the
# progress bar, and no "time left" or "active" volunteers on a finished job.
[ "$(text_of "$TMP/done.html" total)" = "14,200" ] || fail "TOTAL shown as '$(text_of "$TMP/done.html" total)', not 14,200"
grep -Eq 'id="finished"[^>]*>20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2} UTC<' "$TMP/done.html" || fail "no finish date in UTC"
"$PY" - "$TMP/done.html" <<'PYEOF' || fail "the finished page does not put the answer first"
import sys
h = open(sys.argv[1]).read()
assert 0 <= h.index("The answer") < h.index('id="progress"'), "answer after progress"
assert "time left" not in h and " active" not in h, "time left / active on a finished job"
PYEOF
[ "$(text_of "$TMP/done.html" progress)" = "100.00%" ] || fail "progress $(text_of "$TMP/done.html" progress) when done"
grep -q 'MATCH: TOTAL, UNIQUE and COUNT2/4/8 equal the published values' "$TMP/done.html" || fail "no MATCH line"
grep -q '<svg id="chart"\|id="chart"' "$TMP/done.html" || fail "no chart element"
# Both solved every unit (quorum 2 of 2 volunteers): equal credit, the job's whole node count.
NODES=$(status 's["final"]["nodes"]')
CRED=$(status '" ".join(sorted(set(c["credit"] for c in s["leaderboard"])))')
[ "$CRED" = "$NODES" ] || fail "credits '$CRED', job nodes $NODES"
say "done: TOTAL=$PT UNIQUE=$PU shown, MATCH, both volunteers credited $NODES nodes"
stop_all
say "PASS"
