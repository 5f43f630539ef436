#!/usr/bin/env bash
# Build every tests/fuzz_*.c libFuzzer target with clang (-DNQ_FUZZ=ON, ASan + UBSan, the whole
# library instrumented for coverage) into build-fuzz/ and run each for a bounded time.
#
#   scripts/fuzz.sh [seconds-per-target]     (default 20; env FUZZ_SECONDS also works)
#
# Installs clang with apt-get when it is missing. A crash/leak/assertion leaves the reproducer in
# build-fuzz/artifacts/ and makes the script exit non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-${FUZZ_SECONDS:-20}}"
BUILD=build-fuzz

if ! command -v clang >/dev/null 2>&1; then
  echo "fuzz.sh: clang missing, installing it"
  SUDO=""
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang
fi

cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER=clang -DNQ_FUZZ=ON -DNQ_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" >/dev/null

targets=()
for f in tests/fuzz_*.c; do
  [ -e "$f" ] || continue
  targets+=("$(basename "$f" .c)")
done
if [ ${#targets[@]} -eq 0 ]; then echo "fuzz.sh: no tests/fuzz_*.c targets"; exit 0; fi
cmake --build "$BUILD" -j"$(nproc)" --target "${targets[@]}"

mkdir -p "$BUILD/artifacts"
fail=0
for t in "${targets[@]}"; do
  corpus="$BUILD/corpus/$t"
  mkdir -p "$corpus"
  # Seeds: a few valid units for the unit parser (harmless for other targets).
  if [ "$t" = fuzz_unit ] && [ -z "$(ls -A "$corpus")" ]; then
    i=0
    for s in "18:c:5:0,5,12" "18:s:3:3,0,10" "13:c:2:0,2,4" "13:s:1:1,3" "32:s:1:1,3" "4:c:2:0,2"; do
      printf '%s' "$s" >"$corpus/seed$i"; i=$((i + 1))
    done
  fi
  maxlen=4096
  [ "$t" = fuzz_unit ] && maxlen=256   # unit texts are < 128 bytes
  echo "== $t: ${SECS}s"
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
     "$BUILD/$t" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len="$maxlen" \
       -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$t-" "$corpus" \
       >"$BUILD/$t.log" 2>&1; then
    grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::new_units_added)' "$BUILD/$t.log" || true
    echo "== $t: OK"
  else
    tail -n 40 "$BUILD/$t.log"
    echo "== $t: FAILED (artifacts in $BUILD/artifacts/)"
    fail=1
  fi
done
exit $fail
