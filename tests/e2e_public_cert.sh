#!/usr/bin/env bash
# A certificate from a public CA, end to end: real nq-server, nq-client and nq-admin on 127.0.0.1,
# with a test CA installed as the client's system trust store (SSL_CERT_FILE / SSL_CERT_DIR, which
# OpenSSL's default paths read), standing in for a public CA such as Let's Encrypt.
#   1. nq-server --cert/--key serves that chain; an nq-client WITHOUT --ca connects, enrols and
#      works; one that dials a name the certificate lacks (localhost) is refused (exit 4); one
#      without the test CA in its trust store is refused (exit 4).
#   2. The certificate replaced on disk (one that expires in 3 days) and SIGHUP: a new connection
#      gets the new certificate (its serial), the running client's session lives on (it logs in
#      once, and finishes the job on it); the expiring certificate is a WARN in the log, in
#      `nq-admin status` (text and --json) and in /metrics (nq_tls_cert_expiry_days).
#   3. Replaced again without a signal: the server notices the files changed (--cert-check 1).
#   4. A key that does not match: the reload fails, the old certificate stays in use.
#
#   bash tests/e2e_public_cert.sh BUILD_DIR
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_public_cert.sh BUILD_DIR}" && pwd)"
for p in nq-server nq-client nq-admin; do
  [ -x "$BIN/$p" ] || { echo "e2e_public_cert: $BIN/$p missing"; exit 1; }
done
command -v openssl >/dev/null || { echo "e2e_public_cert: no openssl command; skipped"; exit 77; }

TAG=e2e_public_cert
. "$(dirname "$0")/lib_e2e.sh"
e2e_init public_cert

D="$TMP/pub"
P="$D/pki"
mkdir -p "$P/empty"
# The test CA and its leaves: P-256, made out to IP 127.0.0.1 only (as a public CA names a DNS
# name only), each with a serial of its own.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$P/ca.key" \
  -out "$P/ca.pem" -days 30 -subj "/CN=nq test public CA" 2>/dev/null
leaf() { # leaf NAME DAYS SERIAL
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$P/$1.key" \
    -out "$P/$1.csr" -subj "/CN=127.0.0.1" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$P/ext"
  openssl x509 -req -in "$P/$1.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -set_serial "$3" \
    -days "$2" -extfile "$P/ext" -out "$P/$1.pem" 2>/dev/null
}
leaf a 90 4001
leaf b 3 4002
leaf c 60 4003
# What the server reads, replaced the way an ACME client renews (new file, then rename).
cp "$P/a.pem" "$D/fullchain.pem"
cp "$P/a.key" "$D/privkey.pem"
chmod 600 "$D/privkey.pem"
install_leaf() { cp "$P/$1.pem" "$D/fullchain.new" && mv "$D/fullchain.new" "$D/fullchain.pem";
                 cp "$P/$1.key" "$D/privkey.new" && mv "$D/privkey.new" "$D/privkey.pem"; }
# The serial of the certificate a new connection gets.
served_serial() {
  openssl s_client -connect "127.0.0.1:$PORT" -servername localhost </dev/null 2>/dev/null |
    openssl x509 -noout -serial 2>/dev/null | sed 's/serial=//'
}
trusting() { SSL_CERT_FILE="$P/ca.pem" SSL_CERT_DIR="$P/empty" "$@"; }

PORT=$(free_port)
HPORT=$(free_port)
# N=12 at depth 4 under one client on one thread: long enough to reload under it.
e2e_start_server "$D" "$PORT" --n 12 --depth 4 --quorum 1 --cert "$D/fullchain.pem" \
  --key "$D/privkey.pem" --cert-check 1 --http "127.0.0.1:$HPORT"
grep -q "certificate $D/fullchain.pem: names 127.0.0.1" "$D/server.log" ||
  fail "the server did not say which certificate it serves"
[ "$(served_serial)" = "0FA1" ] || fail "served serial $(served_serial), expected 0FA1 (4001)"

say "1. a client without --ca, the test CA as its system trust store"
KEY=$(cat "$D/data/enrol.key")
mkdir -p "$D/state-vol"
trusting "$BIN/nq-client" --server "127.0.0.1:$PORT" --enrol "$KEY" --name vol --threads 1 \
  --priority normal --state "$D/state-vol" >>"$D/client-vol.log" 2>&1 &
VPID=$!
PIDS+=("$VPID")
e2e_wait_log "$D/client-vol.log" "session open" 30 "$VPID" || fail "the client did not connect"

rc=0
trusting "$BIN/nq-client" --server "localhost:$PORT" --enrol "$KEY" --name wrong --threads 1 \
  --state "$D/state-wrong" --once >"$D/client-wrong.log" 2>&1 || rc=$?
[ $rc -eq 4 ] || fail "a wrong name exited $rc, expected 4"
grep -q "not made out to the name 'localhost'" "$D/client-wrong.log" ||
  fail "the wrong-name refusal does not say so: $(tail -n 2 "$D/client-wrong.log")"
rc=0
SSL_CERT_FILE="$P/empty/none.pem" SSL_CERT_DIR="$P/empty" "$BIN/nq-client" \
  --server "127.0.0.1:$PORT" --enrol "$KEY" --name untrusting --threads 1 \
  --state "$D/state-untrusting" --once >"$D/client-untrusting.log" 2>&1 || rc=$?
[ $rc -eq 4 ] || fail "a client that does not trust the CA exited $rc, expected 4"
grep -q "certificate verify failed" "$D/client-untrusting.log" ||
  fail "no verify failure: $(tail -n 2 "$D/client-untrusting.log")"

say "2. replaced with an expiring certificate and SIGHUP"
install_leaf b
kill -HUP "$SRV"
e2e_wait_log "$D/server.log" "certificate reloaded \(SIGHUP\)" 10 ||
  fail "no reload after SIGHUP"
[ "$(served_serial)" = "0FA2" ] || fail "after SIGHUP a new connection got $(served_serial)"
grep -Eq "WARN.*certificate $D/fullchain.pem expires in 2 day" "$D/server.log" ||
  fail "no WARN of the expiring certificate in the log"
ST=$("$BIN/nq-admin" status --data "$D/data")
grep -Eq "^cert +WARN: $D/fullchain.pem expires .*under the 14-day warning" <<<"$ST" ||
  fail "status does not warn of the certificate: $(grep cert <<<"$ST")"
"$BIN/nq-admin" status --data "$D/data" --json | python3 -c '
import json, sys
c = json.load(sys.stdin)["cert"]
assert c["expiring"] is True and 2.0 < c["days_left"] < 3.01 and c["warn_days"] == 14, c
assert c["names"] == "127.0.0.1", c' || fail "status --json: wrong cert object"
python3 - "$HPORT" <<'PY' || fail "/metrics: no nq_tls_cert_expiry_days of about 3"
import sys, urllib.request
t = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode()
v = [float(l.split()[1]) for l in t.splitlines() if l.startswith("nq_tls_cert_expiry_days ")]
assert v and 2.0 < v[0] < 3.01, v
PY

say "3. replaced again, no signal: the file watch reloads it"
install_leaf c
e2e_wait_log "$D/server.log" "certificate reloaded \(the files changed\)" 15 ||
  fail "the changed files were not noticed"
[ "$(served_serial)" = "0FA3" ] || fail "after the change a new connection got $(served_serial)"

say "4. a key that does not match: the old certificate stays"
cp "$P/a.key" "$D/privkey.new" && mv "$D/privkey.new" "$D/privkey.pem"
e2e_wait_log "$D/server.log" "certificate reload \(the files changed\) failed, the old one stays" 15 ||
  fail "a mismatched key was not refused"
[ "$(served_serial)" = "0FA3" ] || fail "after a failed reload a new connection got $(served_serial)"

say "the first client's session lived through all of it and finished the job"
wait_done() {
  for _ in $(seq 1 1200); do
    grep -q "job N=12 done: TOTAL=" "$D/server.log" && return 0
    kill -0 "$VPID" 2>/dev/null || fail "the client exited"
    sleep 0.1
  done
  fail "the job did not finish within 120 s"
}
wait_done
check_done "$D" 12
n=$(grep -c "client vol connected from" "$D/server.log" || true)
[ "$n" -eq 1 ] || fail "the client logged in $n times: its connection was dropped"
n=$(grep -c "session open" "$D/client-vol.log" || true)
[ "$n" -eq 1 ] || fail "the client opened $n sessions"
say "PASS"
