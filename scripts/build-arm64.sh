#!/usr/bin/env bash
# The arm64 (aarch64) client, cross-built on an x86-64 Debian 12 machine (docs/operations.md,
# "arm64"): installs what it needs (Debian's gcc-aarch64-linux-gnu, qemu-user-static, and the
# arm64 libuv, OpenSSL, jansson and check through multiarch), then builds into build-arm64/ a
# static nq-client and nq-solve (they run on any arm64 Linux, whatever its libraries) and the
# solver suites, and makes the arm64 nq-client .deb with cpack.
#
#   bash scripts/build-arm64.sh [--test] [--no-deb]
#     --test    then, under qemu-aarch64-static: the solver suites on the arm64 binaries (every
#               kernel, neon included, against the reference, unit by unit, N <= 14), and
#               build-arm64/nq-solve 13 must print TOTAL 73712 with the neon kernel and the node
#               count of the x86 build's nq-solve (tests/arm64_solver.sh); then a job N=12 with
#               one arm64 and one x86 client against the x86 nq-server (tests/arm64_e2e.sh). The
#               x86 build is NQ_X86_BUILD (default build/); without it only the first part runs.
#     --no-deb  skip cpack
#
# Emulation times mean nothing for arm64 hardware (docs/performance.md, "The arm64 kernel").
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build-arm64
TEST=0
DEB=1
for a in "$@"; do
  case "$a" in
  --test) TEST=1 ;;
  --no-deb) DEB=0 ;;
  -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
  *) echo "build-arm64.sh: unknown option $a" >&2; exit 2 ;;
  esac
done

# ---- what it needs ----
PKGS=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static cmake pkg-config dpkg-dev
  libuv1-dev:arm64 libssl-dev:arm64 libjansson-dev:arm64 check:arm64 libsubunit-dev:arm64)
. scripts/lib.sh
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "build-arm64: dpkg --add-architecture arm64"
  if [ "$(id -u)" -eq 0 ]; then dpkg --add-architecture arm64; else sudo dpkg --add-architecture arm64; fi
fi
apt_need build-arm64 "${PKGS[@]}"

# ---- the build ----
# pkg-config reads the arm64 .pc files only; ctest and the man pages run the binaries under qemu.
export PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
export PKG_CONFIG_PATH=
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
  -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 \
  -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc \
  -DCMAKE_FIND_ROOT_PATH=/usr/aarch64-linux-gnu \
  -DCMAKE_CROSSCOMPILING_EMULATOR=qemu-aarch64-static \
  -DNQ_STATIC_CLIENT=ON -DNQ_SOLVER_TESTS=ON \
  -DCPACK_DEBIAN_PACKAGE_ARCHITECTURE=arm64 >/dev/null
cmake --build "$BUILD" -j"$(nproc)"

if [ "$DEB" = 1 ]; then
  (cd "$BUILD" && cpack -G DEB >cpack.log 2>&1) || { cat "$BUILD/cpack.log"; exit 1; }
  ls "$BUILD"/nq-client_*_arm64.deb
fi

if [ "$TEST" = 1 ]; then
  X86=${NQ_X86_BUILD:-build}
  bash tests/arm64_solver.sh "$BUILD" "$X86/nq-solve"
  if [ -x "$X86/nq-server" ] && [ -x "$X86/nq-client" ]; then
    bash tests/arm64_e2e.sh "$X86" "$BUILD"
  else
    echo "build-arm64: no x86 nq-server/nq-client in $X86: the mixed job (tests/arm64_e2e.sh) not run"
  fi
fi
