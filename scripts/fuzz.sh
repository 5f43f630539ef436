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
  # Seeds for the fleet SPEC parser (docs/planning.md, "Plans in calendar time").
  if [ "$t" = fuzz_fleet ] && [ -z "$(ls -A "$corpus")" ]; then
    i=0
    for s in "avx2=1000,avx512=10@3e9,gpu=2@2e10,rate=5e11,quorum=3,spot=0.1,duty=0.5" \
             "avx512=2@1.6e9,avx2@9e8,spot=0" "ref=4" "neon=8@9e8,scalar=2"; do
      printf '%s' "$s" >"$corpus/seed$i"; i=$((i + 1))
    done
  fi
  # Seeds for the message parsers: one valid message of each kind (see docs/protocol.md).
  if [ "$t" = fuzz_proto ] && [ -z "$(ls -A "$corpus")" ]; then
    i=0
    while IFS= read -r s; do printf '%s' "$s" >"$corpus/seed$i"; i=$((i + 1)); done <<'SEEDS'
{"type":"hello","v":1,"role":"client","enrol":"k","name":"lab-7","solver":"nq-solver-3","threads":2,"software":"nq-client 0.1.0"}
{"type":"hello","v":1,"role":"admin","token":"t"}
{"type":"welcome","v":1,"job":{"n":18,"depth":3,"state":"running"},"max_outstanding":16,"progress_interval":900,"client":"lab-7","token":"x"}
{"type":"get_work","want":4}
{"type":"work","assignments":[{"id":123,"unit":"18:c:5:0,5,12","deadline":1763900000,"lease":140},{"id":124,"unit":"18:s:3:3,0,10","deadline":1763900000,"lease":280}]}
{"type":"no_work","retry_after":10,"reason":"none_pending"}
{"type":"progress","id":123,"nodes":123456789}
{"type":"progress","id":123,"nodes":123456789,"fraction":0.25,"seconds":61.5}
{"type":"lease","id":123,"deadline":1763900600}
{"type":"result","id":123,"unit":"18:c:5:0,5,12","c2":0,"c4":0,"c8":12345,"nodes":987654321,"seconds":1.25,"solver":"nq-solver-3"}
{"type":"ack","id":123,"status":"accepted"}
{"type":"admin","cmd":"unit_retry","unit":"8:c:2:0,2,4","extra":3}
{"type":"admin","cmd":"units","state":"disputed","limit":10}
{"type":"admin_reply","cmd":"clients","data":{"clients":[]}}
{"type":"error","code":"unknown_assignment","message":"no such assignment","fatal":false,"id":123}
{"type":"bye"}
{"type":"signup","v":1,"name":"box-1","public_name":"Ada","team":"lab","software":"nq-client 0.1.0"}
{"type":"signup","v":1,"name":"box-1","ticket":"0123456789abcdef"}
{"type":"signup_reply","state":"joined","owner":"v-0a1b2c3d4e5f","owner_key":"k","client":"box-1","token":"t"}
{"type":"signup_reply","state":"pending","request":3,"retry_after":60,"ticket":"beef"}
{"type":"admin","cmd":"owner_approve","id":3}
{"type":"news","items":[{"id":2,"at":1764000000,"text":"Maintenance on Sunday"}]}
{"type":"admin","cmd":"team_rename","name":"lab","to":"lab2"}
{"type":"error","code":"rate_limited","message":"too many sign-ups","fatal":true,"retry_after":3600}
SEEDS
  fi
  # Seeds for the checkpoint decoder: a first byte that is odd means "the record line; the target
  # adds its checksum" (see tests/fuzz_checkpoint.c): one unit mid-solve, all of N finished.
  if [ "$t" = fuzz_checkpoint ] && [ -z "$(ls -A "$corpus")" ]; then
    i=0
    while IFS= read -r s; do printf 'a%s' "$s" >"$corpus/seed$i"; i=$((i + 1)); done <<'SEEDS'
{"format":"nq-checkpoint-1","solver":"nq-solver-3","unit":"12:s:2:2,4,6","cut":{"depth":6,"tasks":19,"hash":"0000000000000000000000000000000000000000000000000000000000000000"},"done":{"tasks":3,"c2":0,"c4":0,"c8":5,"nodes":412},"seconds":0.5,"finished":"070000"}
{"format":"nq-checkpoint-1","solver":"nq-solver-3","n":9,"depth":2,"cut":{"depth":2,"tasks":20,"hash":"a8f55e3258355ce6c0fe33d9a9d5b8429915d8b9fd66fe910fd65c2abb463930"},"done":{"tasks":20,"c2":0,"c4":4,"c8":42,"nodes":1948},"seconds":0.00070101299934322014,"finished":"ffff0f"}
{"format":"nq-checkpoint-1","solver":"nq-solver-3","unit":"12:s:1:1,3","cut":{"depth":2,"tasks":1,"hash":"c79b932e1e1da3c0e098e5ad2c422937eb904a76cf61d83975a74a68fbb04b99"},"done":{"tasks":1,"c2":0,"c4":1,"c8":75,"nodes":6898},"seconds":0.00064901299992925487,"finished":"01"}
SEEDS
  fi
  # Seeds for the HTTP request handling: byte 0 the chunk size, byte 1 the pause flag.
  if [ "$t" = fuzz_srv_http ] && [ -z "$(ls -A "$corpus")" ]; then
    printf '\x07\x01GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nHEAD /?a=b HTTP/1.1\r\n\r\n' >"$corpus/seed0"
    printf '\x3f\x00GET /api/status HTTP/1.0\r\n\r\n' >"$corpus/seed1"
    printf '\x01\x00POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc' >"$corpus/seed2"
    printf '\x10\x01GET /../etc/passwd HTTP/1.1\r\nA: b\r\nC: d\r\n\r\nGET / HTTP/1.1\r\nConnection: close\r\n\r\n' >"$corpus/seed3"
  fi
  # Seeds for the typed views: replies of nq-admin's commands and list wrappers (nq/admin_view.h).
  if [ "$t" = fuzz_srv_view ] && [ -z "$(ls -A "$corpus")" ]; then
    i=0
    while IFS= read -r s; do printf '%s' "$s" >"$corpus/seed$i"; i=$((i + 1)); done <<'SEEDS'
{"name":"lab-7","owner":"o","token":"t"}
{"name":"lab-7","banned":true,"released":2,"reopened":1}
{"name":"o","id":3,"enrol_key":"k"}
{"total":"14200","unique":"1787","c2":"0","c4":"4","c8":"1"}
{"clients":[]}
{"jobs":[{"id":1,"n":8,"state":"done"}]}
{"next":{"id":1,"n":9},"set_aside":null}
SEEDS
  fi
  # Seeds for the evidence file: N=5 at depth 2, as lines (first byte even) and as a whole file
  # whose sha256 line the target appends (first byte odd), see tests/fuzz_verify.c.
  if [ "$t" = fuzz_verify ] && [ -z "$(ls -A "$corpus")" ]; then
    ev() {
      local r='"results":[{"client":"a","owner":"o","state":"valid","spot":false,"voided":false,"solver":"nq-solver-3","backend":"avx2",CNT,"reported":1},{"client":"b","owner":"o","net":2,"state":"valid","spot":true,"voided":false,"solver":"nq-solver-3","backend":"reference",CNT,"reported":1}]'
      printf '%s\n' '{"type":"header","format":"nq-evidence","version":1,"n":5,"job":1,"solver":"nq-solver-3","software":"0.1.0","depth":2,"min_depth":2,"unit_seconds":0.0,"seed":1,"internal":0,"quorum":2,"max_results":5,"quorum_distinct":"client","units":4,"created":1,"finished":2,"exported":3}'
      local u c
      while read -r u c; do
        printf '{"type":"unit","text":"%s","state":"verified",%s,"nodes_solver":"nq-solver-3","verified_at":1,%s}\n' \
          "$u" "$c" "${r//CNT/$c}"
      done <<'UNITS'
5:c:2:0,2 "c2":0,"c4":0,"c8":1,"nodes":3
5:c:3:0,3 "c2":0,"c4":0,"c8":0,"nodes":1
5:s:1:1,3 "c2":0,"c4":0,"c8":0,"nodes":2
5:s:1:1,4 "c2":1,"c4":0,"c8":0,"nodes":5
UNITS
      printf '%s\n' '{"type":"totals","units":4,"c2":"1","c4":"0","c8":"1","nodes":"11","total":"10","unique":"2"}'
    }
    { printf '\x00'; ev; printf '%s\n' '{"type":"sha256","sha256":"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"}'; } >"$corpus/seed0"
    { printf '\x01'; ev; } >"$corpus/seed1"
  fi
  maxlen=4096
  [ "$t" = fuzz_unit ] && maxlen=256   # unit texts are < 128 bytes
  [ "$t" = fuzz_verify ] && maxlen=8192
  dict=()
  [ -f "tests/$t.dict" ] && dict=(-dict="tests/$t.dict")
  echo "== $t: ${SECS}s"
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
     "$BUILD/$t" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len="$maxlen" ${dict[@]+"${dict[@]}"} \
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
