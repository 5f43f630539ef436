#!/usr/bin/env bash
# Packages and the static client, run by scripts/test.sh after the check suites:
#   1. cpack -G DEB in BUILD (configured with -DCMAKE_INSTALL_PREFIX=/usr): nq-client and
#      nq-server packages; their contents (dpkg-deb -c) and control fields (dpkg-deb -I): the
#      client depends on libuv/jansson/OpenSSL and never on SQLite, the server does; the server
#      package has every doc, and no shipped doc needs the sqlite3 shell;
#   2. the client package unpacked with dpkg -x into a temporary root runs its nq-client --version;
#   3. the units: the exit codes that must not restart, credentials by LoadCredential=, idle CPU
#      policy; with systemd-analyze: `verify` clean and `security` exposure <= 2.0 for both;
#   4. a static client (-DNQ_STATIC_CLIENT=ON, client only: no SQLite) built in STATIC_BUILD:
#      ldd finds no dynamic dependencies (nq-verify's too), nq-solve is exact with every kernel
#      the CPU has, and the static nq-client solves a whole N=10 job from BUILD's nq-server
#      exactly.
#
#   bash tests/test_packages.sh BUILD [STATIC_BUILD]    (STATIC_BUILD default: BUILD-static)
set -euo pipefail

SRC="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$(cd "${1:?usage: test_packages.sh BUILD [STATIC_BUILD]}" && pwd)"
STATIC="${2:-$BIN-static}"
TAG=test_packages
. "$SRC/tests/lib_e2e.sh"
e2e_init packages
for t in cpack dpkg-deb dpkg; do
  command -v "$t" >/dev/null || { echo "$TAG: $t missing: skipped"; exit 0; }
done
VERSION=$(sed -nE 's/^project\(nq VERSION ([0-9.]+).*/\1/p' "$SRC/CMakeLists.txt")
[ -n "$VERSION" ] || fail "no project version in CMakeLists.txt"
grep -q "^CMAKE_INSTALL_PREFIX:PATH=/usr$" "$BIN/CMakeCache.txt" ||
  fail "$BIN must be configured with -DCMAKE_INSTALL_PREFIX=/usr"

# ---- 1. the packages ----
(cd "$BIN" && cpack -G DEB >"$TMP/cpack.log" 2>&1) || { cat "$TMP/cpack.log"; fail "cpack failed"; }
CDEB=$(ls "$BIN"/nq-client_"$VERSION"_*.deb)
SDEB=$(ls "$BIN"/nq-server_"$VERSION"_*.deb)
field() { dpkg-deb -f "$1" "$2"; }
[ "$(field "$CDEB" Package)" = nq-client ] || fail "client package name"
[ "$(field "$SDEB" Package)" = nq-server ] || fail "server package name"
[ "$(field "$CDEB" Version)" = "$VERSION" ] || fail "client package version"
cdep=$(field "$CDEB" Depends)
sdep=$(field "$SDEB" Depends)
for d in libuv1 libjansson4 libssl3 libc6; do
  grep -q "$d" <<<"$cdep" || fail "nq-client does not depend on $d: $cdep"
  grep -q "$d" <<<"$sdep" || fail "nq-server does not depend on $d: $sdep"
done
grep -q sqlite <<<"$cdep" && fail "nq-client depends on SQLite: $cdep"
grep -q libsqlite3-0 <<<"$sdep" || fail "nq-server does not depend on libsqlite3-0: $sdep"
info=$(dpkg-deb -I "$SDEB")
grep -q " postinst" <<<"$info" || fail "nq-server has no postinst (system user)"
dpkg-deb -c "$CDEB" | awk '{print $6}' >"$TMP/client.list"
dpkg-deb -c "$SDEB" | awk '{print $6}' >"$TMP/server.list"
for f in usr/bin/nq-client usr/bin/nq-solve usr/bin/nq-verify usr/lib/systemd/system/nq-client.service \
         usr/share/man/man1/nq-client.1 usr/share/man/man1/nq-verify.1 \
         usr/share/doc/nq-client/operations.md usr/share/doc/nq-client/evidence.md; do
  grep -qx "./$f" "$TMP/client.list" || fail "nq-client lacks $f"
done
for f in usr/bin/nq-server usr/bin/nq-admin usr/lib/systemd/system/nq-server.service \
         usr/lib/sysusers.d/nq-server.conf usr/share/man/man1/nq-server.1; do
  grep -qx "./$f" "$TMP/server.list" || fail "nq-server lacks $f"
done
# Every doc is in the server package (operations.md links to them all: http.md, planning.md, ...),
# and no shipped recipe runs the sqlite3 shell, which the package does not depend on (backups are
# `nq-admin backup`).
for f in "$SRC"/docs/*.md; do
  grep -qx "./usr/share/doc/nq-server/$(basename "$f")" "$TMP/server.list" ||
    fail "nq-server lacks docs/$(basename "$f")"
done
if ! grep -q "sqlite3 " <<<"$sdep"; then
  grep -nE '^[[:space:]]*(\$ )?sqlite3 ' "$SRC"/README.md "$SRC"/docs/*.md &&
    fail "a shipped doc runs the sqlite3 shell, which nq-server does not depend on"
fi
for f in "$SRC"/schema/[0-9][0-9][0-9]_*.sql; do
  grep -qx "./usr/share/nq/schema/$(basename "$f")" "$TMP/server.list" ||
    fail "nq-server lacks the migration $(basename "$f")"
done
grep -q "nq-server\|nq-admin\|schema" "$TMP/client.list" && fail "server files in nq-client"
say "packages: $(basename "$CDEB") ($cdep), $(basename "$SDEB")"

# ---- 2. the client package runs from where dpkg -x puts it ----
ROOT="$TMP/root"
mkdir -p "$ROOT"
dpkg -x "$CDEB" "$ROOT"
dpkg -x "$SDEB" "$ROOT"
"$ROOT/usr/bin/nq-client" --version >"$TMP/v" || fail "unpacked nq-client --version failed"
grep -qx "nq-client $VERSION" <(head -n 1 "$TMP/v") || fail "unpacked nq-client --version: $(cat "$TMP/v")"
say "unpacked: $(head -n 1 "$TMP/v")"
# nq-verify checks evidence anywhere: no SQLite, no libuv, no TLS library.
"$ROOT/usr/bin/nq-verify" --version | grep -qx "nq-verify $VERSION" || fail "unpacked nq-verify --version"
ldd "$ROOT/usr/bin/nq-verify" | grep -E "sqlite|libuv|libssl" && fail "nq-verify links more than the solver"

# ---- 3. the units ----
CU="$ROOT/usr/lib/systemd/system/nq-client.service"
SU="$ROOT/usr/lib/systemd/system/nq-server.service"
grep -qx "RestartPreventExitStatus=2 3 4 5 7" "$CU" || fail "client unit: RestartPreventExitStatus"
grep -qx "Restart=always" "$CU" || fail "client unit: Restart (a client runs across jobs)"
grep -q "^LoadCredential=" "$CU" || fail "client unit: no LoadCredential="
grep -qx "CPUSchedulingPolicy=idle" "$CU" || fail "client unit: CPUSchedulingPolicy"
grep -q "^ExecStart=/usr/bin/nq-client .*%d/nq-secret" "$CU" || fail "client unit: ExecStart"
grep -q "^ExecStart=/usr/bin/nq-client .*--pause-file /run/nq-client.pause" "$CU" ||
  fail "client unit: no default pause file"
grep -Eq -- "--token |--enrol " "$CU" && fail "client unit: a secret on the command line"
grep -q "^ExecStart=/usr/bin/nq-server " "$SU" || fail "server unit: ExecStart"
if command -v systemd-analyze >/dev/null; then
  for u in "$CU" "$SU"; do
    name=$(basename "$u")
    # verify needs the programs where ExecStart names them: point it at the unpacked ones.
    sed "s#/usr/bin/#$ROOT/usr/bin/#" "$u" >"$TMP/$name"
    systemd-analyze verify --man=no "$TMP/$name" >"$TMP/verify.log" 2>&1 ||
      { cat "$TMP/verify.log"; fail "systemd-analyze verify $name"; }
    [ -s "$TMP/verify.log" ] && { cat "$TMP/verify.log"; fail "systemd-analyze verify $name: warnings"; }
    systemd-analyze security --offline=yes "$u" >"$TMP/security.log" 2>&1 || true
    score=$(sed -nE 's/.*Overall exposure level for [^:]*: ([0-9.]+).*/\1/p' "$TMP/security.log")
    [ -n "$score" ] || fail "systemd-analyze security $name: no score"
    awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || fail "$name: exposure $score, want <= 2.0"
    say "$name: systemd-analyze verify clean, security exposure $score"
  done
else
  say "no systemd-analyze here: units checked by their lines only"
fi

# ---- 4. the static client ----
cmake -S "$SRC" -B "$STATIC" -DNQ_STATIC_CLIENT=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  >"$TMP/static-cmake.log" 2>&1 || { cat "$TMP/static-cmake.log"; fail "static configure"; }
grep -qi "^SQLITE" "$STATIC/CMakeCache.txt" && fail "the client-only build looked for SQLite"
cmake --build "$STATIC" -j2 --target nq-client nq-solve nq-verify >"$TMP/static-build.log" 2>&1 ||
  { tail -n 30 "$TMP/static-build.log"; fail "static build"; }
for p in nq-client nq-solve nq-verify; do
  out=$(ldd "$STATIC/$p" 2>&1 || true)
  grep -q "not a dynamic executable\|statically linked" <<<"$out" || fail "$p is dynamic: $out"
done
for k in "" scalar avx2 avx512; do
  out=$(NQ_KERNEL=$k "$STATIC/nq-solve" 12 2>&1) || { [ -n "$k" ] && continue; fail "nq-solve 12"; }
  grep -q "published MATCH" <<<"$out" || fail "static nq-solve 12 (kernel ${k:-auto}): $out"
done
say "static nq-client, nq-solve and nq-verify: no dynamic dependencies; nq-solve exact on every kernel"
D="$TMP/static"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 10 --depth 3 --quorum 1 --exit-when-done
install -m 600 "$D/data/enrol.key" "$D/enrol.secret"
"$STATIC/nq-client" --server "localhost:$PORT" --ca "$D/data/ca.pem" --enrol-file "$D/enrol.secret" \
  --name static --threads 2 --priority normal --state "$D/state" >>"$D/client-static.log" 2>&1 &
PIDS+=("$!")
wait_server_exit 120
check_done "$D" 10
stop_all
say "ok"
