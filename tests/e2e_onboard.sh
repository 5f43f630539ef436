#!/usr/bin/env bash
# Onboarding in one step, end to end: real nq-server, nq-admin and nq-client on 127.0.0.1.
#   1. `nq-admin owner add vol --bundle DIR --address HOST:PORT` writes ca.pem, enrol.key (0600),
#      client.env, install.sh, README.txt and server.txt (the Windows installer's: the address)
#      into a 0700 directory and prints no key; a client enrols from those files alone (the
#      settings read from client.env, as the packaged unit does) and belongs to `vol`;
#   2. `owner rekey vol --bundle DIR2`: the old key is refused (exit 5), the new one enrols;
#   3. `owner ban vol` refuses the key, `owner unban vol` lets it enrol again; a bundle made in
#      remote mode (through the server) enrols too;
#   4. `client add NAME --owner vol` writes the token to a 0600 file (not to the screen), and a
#      client with --token-file connects as a client of vol.
#
#   bash tests/e2e_onboard.sh BUILD_DIR
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_onboard.sh BUILD_DIR}" && pwd)"
for p in nq-server nq-client nq-admin; do
  [ -x "$BIN/$p" ] || { echo "e2e_onboard: $BIN/$p missing"; exit 1; }
done

TAG=e2e_onboard
. "$(dirname "$0")/lib_e2e.sh"
e2e_init onboard

D="$TMP/onboard"
mkdir -p "$D"
PORT=$(free_port)
# One owner can never reach a quorum of distinct owners: the job runs for as long as the test.
e2e_start_server "$D" "$PORT" --n 12 --depth 3 --quorum 2
ADDR="127.0.0.1:$PORT"
admin() { "$BIN/nq-admin" "$@" --data "$D/data"; }
mode() { stat -c %a "$1"; }

# client_owner NAME: the owner of client NAME, from `clients --json`.
client_owner() {
  admin clients --json | python3 -c 'import json,sys
for c in json.load(sys.stdin)["clients"]:
    if c["name"] == sys.argv[1]: print(c["owner"])' "$1"
}

# enrol_ok BUNDLE NAME: a client set up from BUNDLE's files alone enrols as NAME; it is then
# stopped (SIGTERM, exit 0).
enrol_ok() {
  local b=$1 name=$2 log="$D/client-$2.log" pid
  ( cd "$b" && set -a && . ./client.env && set +a &&
    exec "$BIN/nq-client" --server "$NQ_SERVER" --ca ca.pem $NQ_SECRET enrol.key --name "$name" \
      --threads 1 --priority normal --state "$D/state-$name" ) >"$log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  e2e_wait_log "$log" "enrolled as $name" 30 "$pid" || fail "client $name did not enrol within 30 s"
  kill -TERM "$pid"
  wait "$pid" || fail "client $name did not exit 0 on SIGTERM"
  PIDS=()
}

# enrol_refused BUNDLE NAME: the key in BUNDLE is refused: exit 5, `auth`.
enrol_refused() {
  local b=$1 name=$2 rc=0
  ( cd "$b" && set -a && . ./client.env && set +a &&
    exec timeout 30 "$BIN/nq-client" --server "$NQ_SERVER" --ca ca.pem $NQ_SECRET enrol.key \
      --name "$name" --threads 1 --state "$D/state-$name" ) >"$D/client-$name.log" 2>&1 || rc=$?
  [ $rc -eq 5 ] && grep -q "auth" "$D/client-$name.log" ||
    fail "enrolment of $name with $b: exit $rc, want 5 (auth): $(tail -2 "$D/client-$name.log")"
}

# ---- 1. the bundle, and a client enrolled from it alone ----
admin owner add vol --bundle "$D/b1" --address "$ADDR" >"$D/add.out" 2>&1 ||
  fail "owner add --bundle: $(cat "$D/add.out")"
for f in ca.pem enrol.key client.env install.sh README.txt server.txt; do
  [ -s "$D/b1/$f" ] || fail "the bundle lacks $f"
done
# The Windows installer's part (packaging/windows/nq-client.nsi reads server.txt's one line).
[ "$(cat "$D/b1/server.txt")" = "$ADDR" ] || fail "server.txt: $(cat "$D/b1/server.txt"), want $ADDR"
grep -q "nq-client-setup.exe" "$D/b1/README.txt" || fail "the README has no Windows part"
[ "$(mode "$D/b1")" = 700 ] || fail "bundle directory mode $(mode "$D/b1"), want 700"
[ "$(mode "$D/b1/enrol.key")" = 600 ] || fail "enrol.key mode $(mode "$D/b1/enrol.key"), want 600"
[ "$(mode "$D/b1/install.sh")" = 755 ] || fail "install.sh mode $(mode "$D/b1/install.sh")"
grep -qx "NQ_SERVER=$ADDR" "$D/b1/client.env" || fail "client.env does not name $ADDR"
cmp -s "$D/b1/ca.pem" "$D/data/ca.pem" || fail "the bundle's ca.pem is not the server's"
grep -q "/etc/nq/client.secret" "$D/b1/install.sh" || fail "install.sh does not install the key"
grep -qF "$(cat "$D/b1/enrol.key")" "$D/add.out" && fail "owner add --bundle printed the key"
sh -n "$D/b1/install.sh" || fail "install.sh is not valid sh"
# A second bundle into the same directory is refused before anything is created.
rc=0; admin owner add vol2 --bundle "$D/b1" --address "$ADDR" 2>"$D/err" || rc=$?
[ $rc -eq 1 ] && grep -q "not empty" "$D/err" || fail "a non-empty --bundle: exit $rc"
admin owners | grep -q vol2 && fail "owner vol2 was created although its bundle was refused"
# --bundle without an address (local mode) is a usage error.
rc=0; admin owner add vol3 --bundle "$D/b3" 2>"$D/err" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--address" "$D/err" || fail "--bundle without --address: exit $rc"
enrol_ok "$D/b1" m1
[ "$(client_owner m1)" = vol ] || fail "m1 belongs to '$(client_owner m1)', want vol"
say "bundle: 5 files (key 0600, dir 0700, no key printed); m1 enrolled from it alone, owner vol"

# ---- 2. rekey: the old key stops, the new one works ----
admin owner rekey vol --bundle "$D/b2" --address "$ADDR" >"$D/rekey.out" 2>&1 ||
  fail "owner rekey: $(cat "$D/rekey.out")"
cmp -s "$D/b1/enrol.key" "$D/b2/enrol.key" && fail "rekey wrote the same key"
enrol_refused "$D/b1" m2
enrol_ok "$D/b2" m3
[ "$(client_owner m3)" = vol ] || fail "m3 belongs to '$(client_owner m3)', want vol"
rc=0; admin owner rekey default 2>"$D/err" || rc=$?
[ $rc -eq 1 ] && grep -q "enrol.key" "$D/err" || fail "rekey of default: exit $rc"
say "rekey: the old key refused (exit 5), the new one enrolled m3"

# ---- 3. ban and unban ----
admin owner ban vol >/dev/null
enrol_refused "$D/b2" m4
admin owner unban vol >"$D/unban.out"
grep -q "enrols again" "$D/unban.out" || fail "owner unban: $(cat "$D/unban.out")"
enrol_ok "$D/b2" m5
say "ban refused vol's key (exit 5); unban let m5 enrol"

# Remote mode: through the running server, the address defaults to --server, the CA to --ca.
"$BIN/nq-admin" owner add rem --bundle "$D/b4" --server "$ADDR" --ca "$D/data/ca.pem" \
  --token-file "$D/data/admin.token" >"$D/rem.out" 2>&1 || fail "remote --bundle: $(cat "$D/rem.out")"
grep -qx "NQ_SERVER=$ADDR" "$D/b4/client.env" || fail "remote bundle: client.env does not name $ADDR"
enrol_ok "$D/b4" m6
[ "$(client_owner m6)" = rem ] || fail "m6 belongs to '$(client_owner m6)', want rem"
say "remote mode: a bundle through the server (address from --server); m6 enrolled, owner rem"

# ---- 4. client add --owner: a token file, not a command line ----
admin client add c1 --owner vol --out "$D/c1.token" >"$D/cadd.out"
[ "$(mode "$D/c1.token")" = 600 ] || fail "token file mode $(mode "$D/c1.token"), want 600"
grep -qF "$(cat "$D/c1.token")" "$D/cadd.out" && fail "client add printed the token"
grep -q -- "--token-file $D/c1.token" "$D/cadd.out" || fail "client add: $(cat "$D/cadd.out")"
[ "$(client_owner c1)" = vol ] || fail "c1 belongs to '$(client_owner c1)', want vol"
rc=0; admin client add c2 --owner nobody --out "$D/c2.token" 2>"$D/err" || rc=$?
[ $rc -eq 1 ] && grep -q "no such owner" "$D/err" && [ ! -e "$D/c2.token" ] ||
  fail "client add --owner nobody: exit $rc"
rc=0; admin client add c3 --out "$D/c1.token" 2>"$D/err" || rc=$?
[ $rc -eq 1 ] && grep -q "exists already" "$D/err" || fail "client add over a file: exit $rc"
"$BIN/nq-client" --server "$ADDR" --ca "$D/data/ca.pem" --token-file "$D/c1.token" --threads 1 \
  --priority normal --state "$D/state-c1" >"$D/client-c1.log" 2>&1 &
CP=$!
PIDS+=("$CP")
seen=0
for i in $(seq 1 300); do
  admin clients --json | python3 -c 'import json,sys
sys.exit(0 if any(c["name"] == "c1" and c["last_seen"] for c in json.load(sys.stdin)["clients"]) else 1)' &&
    { seen=1; break; }
  kill -0 "$CP" 2>/dev/null || fail "c1 exited: $(tail -3 "$D/client-c1.log")"
  sleep 0.1
done
[ $seen -eq 1 ] || fail "c1 was not seen by the server within 30 s"
kill -TERM "$CP"; wait "$CP" || fail "c1 did not exit 0 on SIGTERM"
PIDS=()
grep -q "auth" "$D/client-c1.log" && fail "c1's token was refused"
say "client add --owner vol: token in a 0600 file, not printed; c1 connected with it"
stop_all
say "PASS"
