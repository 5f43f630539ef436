#!/usr/bin/env bash
# The Windows client, cross-built on an x86-64 Debian 12 machine (docs/operations.md, "The
# Windows client"): installs mingw-w64 (POSIX threads), wine, nsis and p7zip; fetches the Debian
# source packages of libuv, OpenSSL, jansson and check (a deb-src line for the same archive),
# cross-builds them once, static, into a cache folder; then builds nq-client.exe, nq-solve.exe,
# nq-verify.exe (static: no DLL but the system's), the solver suites and the installer
# nq-client-setup.exe (NSIS) into build-windows/.
#
#   bash scripts/build-windows.sh [--test] [--libs-only] [--solver-only]
#     --test         then, under wine: the solver suites as .exe (every kernel the CPU has
#                    against the reference, unit by unit) and nq-solve.exe 13 against the Linux
#                    node count (tests/windows_solver.sh); the installer's file list
#                    (tests/windows_installer.sh); a mixed job with a Linux nq-server,
#                    nq-client.exe and a Linux nq-client, nq-verify.exe on its evidence,
#                    nq-client.exe killed mid-unit and resumed (tests/windows_e2e.sh). The Linux
#                    build is NQ_LINUX_BUILD (default build/).
#     --libs-only    stop after the libraries (their cache)
#     --solver-only  what CI runs (scripts/test.sh): only what the solver's programs need --
#                    jansson, check and a libcrypto cut down to what they use (SHA-256, Ed25519,
#                    PEM keys), no libuv, no libssl, no nsis or p7zip -- and only nq-solve.exe,
#                    nq-verify.exe and the solver suites, into build-windows-solver/; --test then
#                    runs tests/windows_solver.sh and tests/windows_verify.sh (nq-verify.exe on a
#                    Linux job's evidence file, good and tampered).
#
# NQ_WIN_CACHE: the libraries' cache folder (default ~/.cache/nq-windows); one subfolder per
# set of source versions (and per set of libraries: --solver-only has its own), so a new Debian
# version rebuilds it. Times are printed per part.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=build-windows
TEST=0
LIBS_ONLY=0
SOLVER_ONLY=0
for a in "$@"; do
  case "$a" in
  --test) TEST=1 ;;
  --libs-only) LIBS_ONLY=1 ;;
  --solver-only) SOLVER_ONLY=1 ;;
  -h | --help) sed -n '2,27p' "$0"; exit 0 ;;
  *) echo "build-windows.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
[ "$SOLVER_ONLY" = 1 ] && BUILD=build-windows-solver
T0=$SECONDS
TIMES=$(mktemp)
trap 'rm -f "$TIMES"' EXIT
# part MESSAGE: the seconds since the start and, from the main shell, the CPU seconds (user and
# system) of every program it has waited for: on a busy machine the wall time says little.
part() {
  local cpu=""
  if [ "$BASHPID" = "$$" ]; then
    times >"$TIMES" # here, not in a $(...) subshell: that one has waited for nothing
    cpu=$(awk 'NR == 2 { s = 0; for (i = 1; i <= NF; i++) { split($i, a, "m"); s += a[1] * 60 + a[2] }
      printf "; %d s CPU", s }' "$TIMES")
  fi
  echo "build-windows: [$((SECONDS - T0)) s$cpu] $*"
}

# ---- what it needs ----
. scripts/lib.sh
if [ "$SOLVER_ONLY" = 1 ]; then
  # The -posix compiler alone (not its -win32 twin); wine with what it recommends, as the whole
  # build has it (its first start on a fresh machine is known to work so; without them untried).
  apt_need build-windows gcc-mingw-w64-x86-64-posix wine64 wine cmake pkg-config \
    dpkg-dev opencl-c-headers
else
  apt_need build-windows gcc-mingw-w64-x86-64 wine64 wine nsis p7zip-full cmake pkg-config dpkg-dev \
    opencl-c-headers
fi
part "toolchain installed"

# ---- wine: one prefix of our own, no debug chatter; what ctest and the man pages run under ----
WINE_BIN=$(command -v wine64 || echo /usr/lib/wine/wine64)
[ -x "$WINE_BIN" ] || WINE_BIN=$(command -v wine)
WINESERVER_BIN=$(command -v wineserver || echo /usr/lib/wine/wineserver64)
mkdir -p "$BUILD"
WINEPREFIX_DIR=${NQ_WINEPREFIX:-$ROOT/$BUILD/wineprefix}
cat >"$BUILD/wine-run" <<WINE
#!/bin/sh
# Runs a Windows program of this build under wine (made by scripts/build-windows.sh).
export WINEPREFIX="\${NQ_WINEPREFIX:-$ROOT/$BUILD/wineprefix}" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
exec "$WINE_BIN" "\$@"
WINE
chmod +x "$BUILD/wine-run"
# The prefix's first start (wineboot makes the prefix, its registry and system folder; tens of
# seconds, minutes on a busy machine) runs in the background while the libraries and programs
# build; wine_ready waits for it, with a limit and a clear message.
WINE_LIMIT=900
WINEBOOT_PID=""
if [ "$TEST" = 1 ] && [ "$LIBS_ONLY" = 0 ] && [ ! -f "$WINEPREFIX_DIR/system.reg" ]; then
  (
    rc=0
    timeout -k 10 $WINE_LIMIT "$BUILD/wine-run" wineboot --init || rc=$?
    # wineboot returns before every process it started has ended: wait for the wine server too.
    [ $rc -ne 0 ] || WINEPREFIX="$WINEPREFIX_DIR" timeout -k 10 $WINE_LIMIT "$WINESERVER_BIN" -w || rc=$?
    echo $rc >"$BUILD/wineboot.rc"
  ) >"$BUILD/wineboot.log" 2>&1 &
  WINEBOOT_PID=$!
fi
# A run that stops early (a failed build) ends the first start too: the wine server of the
# prefix ends every process of it.
wine_stop() {
  [ -n "$WINEBOOT_PID" ] && kill -0 "$WINEBOOT_PID" 2>/dev/null || return 0
  WINEPREFIX="$WINEPREFIX_DIR" "$WINESERVER_BIN" -k 2>/dev/null || true
  wait "$WINEBOOT_PID" 2>/dev/null || true
}
trap 'wine_stop; rm -f "$TIMES"' EXIT
wine_ready() {
  [ -n "$WINEBOOT_PID" ] || return 0
  wait "$WINEBOOT_PID" || true
  WINEBOOT_PID=""
  local rc
  rc=$(cat "$BUILD/wineboot.rc" 2>/dev/null || echo "?")
  case "$rc" in
  0) part "wine prefix ready ($WINEPREFIX_DIR)" ;;
  124 | 137)
    tail -n 20 "$BUILD/wineboot.log"
    echo "build-windows: wine's first start (wineboot --init in $WINEPREFIX_DIR) did not finish within $WINE_LIMIT s" >&2
    exit 1 ;;
  *)
    tail -n 20 "$BUILD/wineboot.log"
    echo "build-windows: wine's first start (wineboot --init in $WINEPREFIX_DIR) failed (exit $rc)" >&2
    exit 1 ;;
  esac
}
SRCLIST=/etc/apt/sources.list.d/nq-deb-src.sources
if ! apt-get source --print-uris -qq jansson >/dev/null 2>&1; then
  # The same archive and suites as the binary packages' (Debian 12's deb822 file), for sources.
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  sed -n '/^Types:/,/^$/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null |
    sed 's/^Types: deb$/Types: deb-src/' | $sudo tee "$SRCLIST" >/dev/null
  grep -q deb-src "$SRCLIST" ||
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\n' |
    $sudo tee "$SRCLIST" >/dev/null
  $sudo apt-get update -qq
fi

# ---- the libraries, once ----
PKGS="libuv1 openssl jansson check"
# OpenSSL as the client needs it: libcrypto and libssl, no programs, no tests, no engines or
# modules to load.
OSSL_OPTS="no-shared no-tests no-module no-engine"
if [ "$SOLVER_ONLY" = 1 ]; then
  PKGS="openssl jansson check"
  # libcrypto alone, for what nq-solve and nq-verify call (common/util/hash.c, sign.c): SHA-256,
  # Ed25519 keys and signatures, PEM public keys, RAND_bytes. Every algorithm and feature they do
  # not reach is left out (a third fewer files to compile), and no assembler (none of it is hot).
  OSSL_OPTS="$OSSL_OPTS no-asm no-legacy no-deprecated no-aria no-bf no-blake2 no-camellia no-cast
    no-chacha no-cmac no-cmp no-cms no-comp no-ct no-des no-dgram no-dh no-dsa no-dtls no-ec2m
    no-ecdh no-ecdsa no-gost no-idea no-md4 no-mdc2 no-ocb no-ocsp no-poly1305 no-rc2 no-rc4
    no-rfc3779 no-rmd160 no-scrypt no-seed no-siphash no-siv no-sm2 no-sm3 no-sm4 no-srp no-srtp
    no-ssl no-tls no-ts no-whirlpool no-sock no-ui-console no-async no-autoload-config no-dso
    no-multiblock no-nextprotoneg no-psk"
fi
OSSL_OPTS=$(echo $OSSL_OPTS)
ver() { apt-cache showsrc "$1" 2>/dev/null | awk '/^Version:/{print $2}' | sort -V | tr '\n' ' '; }
# The full set's key is its source versions alone; the solver's set adds its OpenSSL options.
KEY=""
[ "$SOLVER_ONLY" = 0 ] || KEY="solver $OSSL_OPTS"
for p in $PKGS; do KEY="$KEY-${p}_$(ver "$p")"; done
KEY=$(printf '%s' "$KEY" | sha256sum | cut -c1-12)
CACHE=${NQ_WIN_CACHE:-$HOME/.cache/nq-windows}/$KEY
PREFIX=$CACHE/prefix
HOST=x86_64-w64-mingw32
CC_WIN=$HOST-gcc-posix
TC="$ROOT/packaging/windows/toolchain-mingw64.cmake"
src() { find "$CACHE/src" -maxdepth 1 -type d -name "$1-*" | head -n 1; }
# cmake_lib NAME ARGS...: a CMake library into PREFIX, once (a stamp per library).
cmake_lib() {
  local n=$1 d
  shift
  [ -f "$CACHE/$n.done" ] && return 0
  d=$(src "$n")
  rm -rf "$d/_win"
  cmake -S "$d" -B "$d/_win" -DCMAKE_TOOLCHAIN_FILE="$TC" -DNQ_WIN_PREFIX="$PREFIX" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX" "$@" >"$d/_win.log" 2>&1 &&
    nice -n 10 cmake --build "$d/_win" -j"$(nproc)" >>"$d/_win.log" 2>&1 &&
    cmake --install "$d/_win" >>"$d/_win.log" 2>&1 ||
    { tail -n 30 "$d/_win.log"; echo "build-windows: $n failed" >&2; exit 1; }
  touch "$CACHE/$n.done"
  part "$n built"
}
if [ ! -f "$CACHE/sources.done" ]; then
  rm -rf "$CACHE"
  mkdir -p "$CACHE/src" "$PREFIX"
  # The newest version the archive serves (a mirror may list a security update it cannot serve).
  for p in $PKGS; do
    ok=0
    for v in $(apt-cache showsrc "$p" | awk '/^Version:/{print $2}' | sort -V -r); do
      (cd "$CACHE/src" && apt-get source -qq "$p=$v" >>"$CACHE/source.log" 2>&1) && ok=1 && break
    done
    [ $ok = 1 ] || { tail -n 20 "$CACHE/source.log"; echo "build-windows: apt-get source $p failed" >&2; exit 1; }
    echo "build-windows: source $p $v"
  done
  touch "$CACHE/sources.done"
  part "sources fetched ($PKGS)"
fi
# The CMake libraries in the background (their configure steps are mostly one core's work)
# while OpenSSL's make keeps both cores busy.
(
  [ "$SOLVER_ONLY" = 1 ] || cmake_lib libuv1 -DLIBUV_BUILD_TESTS=OFF -DLIBUV_BUILD_BENCH=OFF
  cmake_lib jansson -DJANSSON_BUILD_DOCS=OFF -DJANSSON_WITHOUT_TESTS=ON \
    -DJANSSON_BUILD_SHARED_LIBS=OFF -DJANSSON_EXAMPLES=OFF
  # check prints its messages with printf: mingw-w64's C99 one, as ours (%jd, %zu).
  cmake_lib check -DCHECK_ENABLE_TESTS=OFF -DBUILD_TESTING=OFF -DENABLE_MEMORY_LEAKING_TESTS=OFF \
    -DCMAKE_C_FLAGS=-D__USE_MINGW_ANSI_STDIO=1
  # check's CMake writes the autotools build's library name into check.pc; the .a is libcheck.a.
  sed -i 's/-lcheck_pic/-lcheck/' "$PREFIX/lib/pkgconfig/check.pc"
) &
CMAKE_LIBS_PID=$!
cmake_libs_wait() {
  wait "$CMAKE_LIBS_PID" || { echo "build-windows: a CMake library failed (above)" >&2; exit 1; }
}
if [ ! -f "$CACHE/openssl.done" ]; then
  # shellcheck disable=SC2086 # OSSL_OPTS is words on purpose
  (cd "$(src openssl)" &&
    ./Configure mingw64 $OSSL_OPTS --cross-compile-prefix=$HOST- \
      --prefix="$PREFIX" --libdir=lib CC=gcc-posix >"$CACHE/openssl.log" 2>&1 &&
    if [ "$SOLVER_ONLY" = 1 ]; then
      # libcrypto.a, its headers and its .pc by hand: install_dev wants libssl too.
      nice -n 10 make -j"$(nproc)" build_generated >>"$CACHE/openssl.log" 2>&1 &&
        nice -n 10 make -j"$(nproc)" libcrypto.a libcrypto.pc >>"$CACHE/openssl.log" 2>&1 &&
        mkdir -p "$PREFIX/include/openssl" "$PREFIX/lib/pkgconfig" &&
        cp include/openssl/*.h "$PREFIX/include/openssl/" &&
        cp libcrypto.a "$PREFIX/lib/" && cp libcrypto.pc "$PREFIX/lib/pkgconfig/"
    else
      nice -n 10 make -j"$(nproc)" build_libs >>"$CACHE/openssl.log" 2>&1 &&
        make install_dev >>"$CACHE/openssl.log" 2>&1
    fi) ||
    { tail -n 30 "$CACHE/openssl.log"; echo "build-windows: openssl failed" >&2; cmake_libs_wait; exit 1; }
  touch "$CACHE/openssl.done"
  part "openssl built ($OSSL_OPTS)"
fi
cmake_libs_wait
part "libraries in $PREFIX"
[ "$LIBS_ONLY" = 1 ] && exit 0

# ---- the programs ----
export PKG_CONFIG_LIBDIR=$PREFIX/lib/pkgconfig PKG_CONFIG_PATH=
mkdir -p "$PREFIX/include/CL"
cp -r /usr/include/CL/. "$PREFIX/include/CL/" # the OpenCL headers (the loader is opened at run time)
SOLVE_ONLY=OFF
PROGRAMS=(nq-client nq-solve nq-verify)
if [ "$SOLVER_ONLY" = 1 ]; then
  SOLVE_ONLY=ON
  PROGRAMS=(nq-solve nq-verify)
fi
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_TOOLCHAIN_FILE="$TC" -DNQ_WIN_PREFIX="$PREFIX" \
  -DCMAKE_CROSSCOMPILING_EMULATOR="$ROOT/$BUILD/wine-run" \
  -DNQ_STATIC_CLIENT=ON -DNQ_SOLVER_TESTS=ON -DNQ_OPENCL=ON -DNQ_SOLVE_ONLY=$SOLVE_ONLY \
  >"$BUILD/cmake.log" 2>&1 || { tail -n 30 "$BUILD/cmake.log"; exit 1; }
TARGETS=("${PROGRAMS[@]}" test_unit test_solver_fast test_solver)
nice -n 10 cmake --build "$BUILD" -j"$(nproc)" --target "${TARGETS[@]}" >"$BUILD/build.log" 2>&1 ||
  { grep -E "error|Error" "$BUILD/build.log" | head -n 30; exit 1; }
part "built: $(cd "$BUILD" && for f in "${PROGRAMS[@]}"; do
  printf '%s %s bytes; ' "$f.exe" "$(stat -c %s "$f.exe")"; done)"

if [ "$SOLVER_ONLY" = 1 ]; then
  if [ "$TEST" = 1 ]; then
    LINUX=${NQ_LINUX_BUILD:-build}
    wine_ready
    NQ_WINE="$ROOT/$BUILD/wine-run" bash tests/windows_solver.sh "$BUILD" "$LINUX"
    part "solver suites passed under wine"
    NQ_WINE="$ROOT/$BUILD/wine-run" bash tests/windows_verify.sh "$BUILD" "$LINUX"
    part "tests passed"
  fi
  exit 0
fi

# ---- the installer ----
VERSION=$(sed -nE 's/^project\(nq VERSION ([0-9.]+).*/\1/p' CMakeLists.txt)
makensis -V2 -DSRC="$ROOT" -DBUILD="$ROOT/$BUILD" -DVERSION="$VERSION" \
  -DOUT="$ROOT/$BUILD/nq-client-setup.exe" packaging/windows/nq-client.nsi >"$BUILD/nsis.log" 2>&1 ||
  { cat "$BUILD/nsis.log"; exit 1; }
part "installer: $BUILD/nq-client-setup.exe ($(stat -c %s "$BUILD/nq-client-setup.exe") bytes)"

if [ "$TEST" = 1 ]; then
  LINUX=${NQ_LINUX_BUILD:-build}
  wine_ready
  NQ_WINE="$ROOT/$BUILD/wine-run" bash tests/windows_solver.sh "$BUILD" "$LINUX"
  part "solver suites passed under wine"
  bash tests/windows_installer.sh "$BUILD/nq-client-setup.exe"
  if [ -x "$LINUX/nq-server" ] && [ -x "$LINUX/nq-client" ] && [ -x "$LINUX/nq-admin" ]; then
    NQ_WINE="$ROOT/$BUILD/wine-run" bash tests/windows_e2e.sh "$LINUX" "$BUILD"
  else
    echo "build-windows: no Linux nq-server/nq-client/nq-admin in $LINUX: the mixed job (tests/windows_e2e.sh) not run"
  fi
  part "tests passed"
fi
