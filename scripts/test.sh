#!/usr/bin/env bash
# The test command: install deps, build from scratch, run the check suites and the end-to-end
# tests, then the Debian packages and the static client (tests/test_packages.sh), then
# the arm64 client cross-built and its solver suites and a mixed job run under qemu (and, with
# NQ_TEST_WINDOWS=1, the Windows client's build and tests under wine), then the same
# suites again under AddressSanitizer + UndefinedBehaviorSanitizer, then every libFuzzer target
# (frame, unit and message parsers) for a bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf build-test build-test-static build-asan build-arm64
# Prefix /usr: the packages tests/test_packages.sh makes from this tree install there.
scripts/bootstrap.sh build-test -DCMAKE_INSTALL_PREFIX=/usr
(cd build-test && ctest --output-on-failure -j2)
echo "== packages (cpack -G DEB) and the static client =="
bash tests/test_packages.sh build-test build-test-static
echo "== arm64: cross build, solver suites and a mixed job under qemu (scripts/build-arm64.sh) =="
NQ_X86_BUILD=build-test bash scripts/build-arm64.sh --test
# The Windows client is opt-in: from scratch (no library cache, as in CI's fresh clone) the
# cross build of its libraries alone takes longer than CI's budget leaves (docs/operations.md,
# "The Windows client").
if [ "${NQ_TEST_WINDOWS:-0}" = 1 ]; then
  echo "== Windows: cross build, suites, installer and a mixed job under wine (scripts/build-windows.sh) =="
  rm -rf build-windows
  NQ_LINUX_BUILD=build-test bash scripts/build-windows.sh --test
else
  echo "== Windows: not run (NQ_TEST_WINDOWS=1 bash scripts/test.sh runs scripts/build-windows.sh --test) =="
fi
echo "== sanitizer build (ASan + UBSan) =="
scripts/bootstrap.sh build-asan -DNQ_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
# The check_* tests read the sources and the binaries' names (layers, switches), not run them:
# the plain build's pass covers them.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j2 -E '^check_')
echo "== fuzz (libFuzzer, bounded: 15 s per target) =="
bash scripts/fuzz.sh 15
