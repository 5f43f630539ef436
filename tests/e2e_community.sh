#!/usr/bin/env bash
# News, teams and volunteer pages, end to end: real nq-server (--signup open), nq-client --join
# and nq-admin on 127.0.0.1, and headless Chromium (as e2e_web) rendering the page.
#   1. `nq-admin team add lab`; Ada joins with --team lab and a public name, a second volunteer
#      joins anonymously (no team); `nq-client --join --team nosuch` is refused (exit 5).
#   2. `nq-admin news add TEXT` through the running server reaches the running clients' logs at
#      once, once; a client restarted afterwards does not log it again; a news item with markup
#      is escaped on the page.
#   3. The page shows the news, ranks volunteers (Ada by name, the other as anonymous-xxxxxx)
#      and teams; /api/volunteers, /api/teams, /v/Ada (credit, machines by public name) agree;
#      /v/nosuch is 404; `team rename` shows at once. Chromium renders the page (screenshot).
#
#   bash tests/e2e_community.sh BUILD_DIR
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_community.sh BUILD_DIR}" && pwd)"
for p in nq-server nq-client nq-admin; do
  [ -x "$BIN/$p" ] || { echo "e2e_community: $BIN/$p missing"; exit 1; }
done
TAG=e2e_community
. "$(dirname "$0")/lib_e2e.sh"
e2e_init community

D="$TMP/c"; mkdir -p "$D"
PORT=$(free_port); HTTP=$(free_port)
e2e_start_server "$D" "$PORT" --n 12 --depth 4 --quorum 1 --signup open --signup-per-addr 5 \
  --http "127.0.0.1:$HTTP"
URL="http://127.0.0.1:$HTTP"
admin() { "$BIN/nq-admin" "$@" --data "$D/data"; }
remote() { "$BIN/nq-admin" "$@" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" \
             --token-file "$D/data/admin.token"; }
get() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=30).read().decode())' "$URL$1"; }
code() { python3 -c '
import sys, urllib.request, urllib.error
try: print(urllib.request.urlopen(sys.argv[1], timeout=30).status)
except urllib.error.HTTPError as e: print(e.code)' "$URL$1"; }
join() { # join NAME ARGS...
  local name=$1; shift
  mkdir -p "$D/state-$name"
  "$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" --join --name "$name" \
    --threads 1 --priority normal --state "$D/state-$name" "$@" \
    >"$D/out-$name.txt" 2>>"$D/client-$name.log" &
  CPID=$!
  PIDS+=("$CPID")
}

say "1. a team, two volunteers"
admin team add lab | grep -q "^1 +lab" || true
admin team list | grep -Eq "^1 +lab +0 " || fail "team add: $(admin team list)"
join ada --public-name Ada --team lab
APID=$CPID
join anon
BPID=$CPID
e2e_wait_log "$D/client-ada.log" "session open" 30 "$APID" || fail "Ada did not join"
e2e_wait_log "$D/client-anon.log" "session open" 30 "$BPID" || fail "anon did not join"
join nosuch --team nosuch
for _ in $(seq 1 300); do kill -0 "$CPID" 2>/dev/null || break; sleep 0.1; done
rc=0; wait "$CPID" || rc=$?
[ "$rc" -eq 5 ] || fail "a join to a missing team exited $rc"
grep -q "no team nosuch on this server" "$D/client-nosuch.log" || fail "no clear team refusal"

say "2. news reaches the running clients"
remote news add "Maintenance on Sunday 10:00 UTC: the server restarts <b>once</b>" |
  grep -q "news 1 added" || fail "news add failed"
e2e_wait_log "$D/client-ada.log" "news from the project \(.*\): Maintenance on Sunday" 15 "$APID" ||
  fail "the running client did not log the news"
e2e_wait_log "$D/client-anon.log" "news from the project" 15 "$BPID" || fail "anon: no news"
grep -q "news 1 told to 2 connected client(s)" "$D/server.log" || fail "the server did not say so"
kill "$APID"; wait "$APID" || true
"$BIN/nq-client" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" --threads 1 --priority normal \
  --public-name Ada-box --state "$D/state-ada" >>"$D/client-ada.log" 2>&1 &
APID=$!
PIDS+=("$APID")
e2e_wait_log "$D/client-ada.log" "credited as Ada-box" 30 "$APID" || fail "Ada did not come back"
[ "$(grep -c "news from the project" "$D/client-ada.log")" -eq 1 ] ||
  fail "the news was logged more than once"

say "3. the page, the lists, /v/NAME"
for _ in $(seq 1 1200); do grep -q "job N=12 done" "$D/server.log" && break; sleep 0.1; done
check_done "$D" 12
sleep 1.2 # the public status is cached for 1 s
PAGE=$(get /)
grep -q "Maintenance on Sunday 10:00 UTC: the server restarts &lt;b&gt;once&lt;/b&gt;" <<<"$PAGE" ||
  fail "the news is not on the page (escaped)"
get /api/volunteers | python3 -c '
import json, sys
v = json.load(sys.stdin)["volunteers"]
assert len(v) == 2, v
names = [x["name"] for x in v]
assert "Ada" in names, names
other = [x for x in v if x["name"] != "Ada"][0]
assert other["name"].startswith("anonymous-") and other["named"] is False and other["team"] is None, other
ada = [x for x in v if x["name"] == "Ada"][0]
assert ada["team"] == "lab" and ada["machines"] == 1, ada
assert sum(int(x["credit"]) for x in v) > 0
assert [x["rank"] for x in v] == [1, 2] and int(v[0]["credit"]) >= int(v[1]["credit"]), v' ||
  fail "/api/volunteers: $(get /api/volunteers)"
get /api/teams | python3 -c '
import json, sys
t = json.load(sys.stdin)["teams"]
assert len(t) == 1 and t[0]["name"] == "lab" and t[0]["owners"] == 1 and int(t[0]["credit"]) >= 0, t' ||
  fail "/api/teams: $(get /api/teams)"
VP=$(get /v/Ada)
grep -q '<h1 id="volunteer">Ada</h1>' <<<"$VP" || fail "/v/Ada has no heading"
grep -q "<td>Ada-box</td>" <<<"$VP" || fail "/v/Ada does not list the machine Ada-box"
[ "$(code /v/nosuch)" = 404 ] || fail "/v/nosuch is not 404"
grep -q 'href="/v/Ada"' <<<"$PAGE" || fail "the page does not link /v/Ada"
grep -q 'id="teams"' <<<"$PAGE" || fail "the page has no teams table"
admin team rename lab lab2 >/dev/null
sleep 1.2
get /api/teams | grep -q '"lab2"' || fail "the rename does not show"

CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$CHROME" ]; then
  timeout 180 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --user-data-dir="$TMP/chrome" --dump-dom "$URL/" >"$TMP/dom.html" \
    2>"$TMP/chrome.log" || { tail -n 20 "$TMP/chrome.log"; fail "chromium --dump-dom failed"; }
  grep -q 'id="volunteers"' "$TMP/dom.html" && grep -q '>lab2<' "$TMP/dom.html" &&
    grep -q 'Maintenance on Sunday' "$TMP/dom.html" || fail "the rendered page lacks news or teams"
  timeout 180 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --user-data-dir="$TMP/chrome" --window-size=1000,2200 \
    --screenshot="$BIN/$TAG-page.png" "$URL/" >>"$TMP/chrome.log" 2>&1 || say "no screenshot (see log)"
  timeout 180 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --user-data-dir="$TMP/chrome" --window-size=800,600 \
    --screenshot="$BIN/$TAG-volunteer.png" "$URL/v/Ada" >>"$TMP/chrome.log" 2>&1 || true
  [ -s "$BIN/$TAG-page.png" ] && say "screenshots: $BIN/$TAG-page.png, $BIN/$TAG-volunteer.png"
else
  say "chromium missing: the rendered-page check is skipped (the HTML checks above ran)"
fi
say "PASS"
