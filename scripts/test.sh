#!/usr/bin/env bash
# The test command: install deps, build from scratch, run the check suites and the end-to-end
# tests, then the Debian packages and the static client (tests/test_packages.sh), then
# the arm64 client cross-built and its solver suites and a mixed job run under qemu, then the
# Windows solver cross-built and its suites and nq-verify.exe run under wine (with
# NQ_TEST_WINDOWS=1 instead the whole Windows client, installer and mixed job), then the same
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
# Windows: CI cross-builds what the solver needs (jansson, check, a cut-down libcrypto; a few
# minutes from nothing) and runs the solver suites, nq-solve.exe 13 and nq-verify.exe under wine.
# The whole client (libuv and OpenSSL in full, the installer, the mixed job) is opt-in: from
# scratch its libraries alone take longer than CI's budget leaves (docs/operations.md, "The
# Windows client").
if [ "${NQ_TEST_WINDOWS:-0}" = 1 ]; then
  echo "== Windows: cross build, suites, installer and a mixed job under wine (scripts/build-windows.sh --test) =="
  rm -rf build-windows
  NQ_LINUX_BUILD=build-test bash scripts/build-windows.sh --test
else
  echo "== Windows: the solver cross-built, its suites and nq-verify.exe under wine (scripts/build-windows.sh --solver-only --test; NQ_TEST_WINDOWS=1 runs the whole client) =="
  rm -rf build-windows-solver
  NQ_LINUX_BUILD=build-test bash scripts/build-windows.sh --solver-only --test
fi
echo "== sanitizer build (ASan + UBSan) =="
scripts/bootstrap.sh build-asan -DNQ_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
# The check_* tests read the sources and the binaries' names (layers, switches), not run them:
# the plain build's pass covers them. e2e_plan_fleet holds a plan's price to a job's CPU time,
# which the sanitizers change outside the solver far more than inside it.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j2 -E '^check_|^e2e_plan_fleet$')
echo "== fuzz (libFuzzer, bounded: 15 s per target) =="
bash scripts/fuzz.sh 15
