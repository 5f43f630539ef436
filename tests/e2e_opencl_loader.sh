#!/usr/bin/env bash
# The OpenCL loader opened at run time (common/solver/ocl_load.c), real processes:
#   0. no program links the loader (no libOpenCL in any NEEDED entry);
#   1. a machine without a loader: a stand-in libOpenCL.so.1 first on LD_LIBRARY_PATH that cannot
#      load (it needs a library that is not there), as dlopen fails when there is none:
#      nq-solve --gpu-list says why; nq-solve --gpu auto solves N=12 exactly on the CPU and says
#      so on its log; --gpu 0 is refused with the reason; an nq-client (--gpu auto, the default)
#      computes a job on the CPU only and says why on its log;
#   2. a loader without the OpenCL 1.2 entry points: refused, naming the first one missing;
#   3. with the system's loader and a device (pocl's CPU device in CI): nq-solve 12 --gpu all
#      --threads 0 counts on the device through the loader opened at run time (skipped without
#      a device; tests/test_gpu.c and tests/e2e_gpu.sh run the GPU suites the same way).
# Skipped (77) when this build has no OpenCL backend or there is no C compiler for the stand-ins.
#
#   bash tests/e2e_opencl_loader.sh BUILD_DIR
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_opencl_loader.sh BUILD_DIR}" && pwd)"
for p in nq-server nq-client nq-admin nq-solve; do
  [ -x "$BIN/$p" ] || { echo "e2e_opencl_loader: $BIN/$p missing"; exit 1; }
done
TAG=e2e_opencl_loader
. "$(dirname "$0")/lib_e2e.sh"
e2e_init opencl-loader

if "$BIN/nq-solve" --gpu-list | grep -q "no OpenCL backend"; then
  echo "$TAG: SKIP: this build has no OpenCL backend"
  exit 77
fi
CC=${CC:-cc}
command -v "$CC" >/dev/null || { echo "$TAG: SKIP: no C compiler ($CC) for the stand-ins"; exit 77; }

# ---- 0. nothing links the loader ----
for p in nq-solve nq-client nq-server nq-admin nq-verify; do
  [ -x "$BIN/$p" ] || continue
  readelf -d "$BIN/$p" | grep NEEDED | grep -qi opencl && fail "$p links the OpenCL loader"
done
say "no program links libOpenCL"

# ---- the stand-ins ----
mkdir -p "$TMP/absent" "$TMP/lacking"
echo 'int nq_stand_in;' >"$TMP/e.c"
"$CC" -shared -fPIC -o "$TMP/absent/libnq-not-here.so" "$TMP/e.c"
"$CC" -shared -fPIC -Wl,--no-as-needed -o "$TMP/absent/libOpenCL.so.1" "$TMP/e.c" \
  -L"$TMP/absent" -lnq-not-here
rm "$TMP/absent/libnq-not-here.so"
"$CC" -shared -fPIC -o "$TMP/lacking/libOpenCL.so.1" "$TMP/e.c"

# ---- 1. no loader ----
A="LD_LIBRARY_PATH=$TMP/absent"
list=$(env "$A" "$BIN/nq-solve" --gpu-list)
grep -q "^no OpenCL: no OpenCL loader (libOpenCL.so.1: .*libnq-not-here.so" <<<"$list" ||
  fail "--gpu-list without a loader: $list"
out=$(env "$A" "$BIN/nq-solve" 12 --gpu auto --json 2>"$TMP/solve.err") ||
  fail "nq-solve 12 --gpu auto without a loader: $(cat "$TMP/solve.err")"
python3 - "$out" <<'PY' || fail "nq-solve 12 without a loader: $out"
import json, sys
r = json.loads(sys.argv[1])
assert r["total"] == "14200" and r["matches_published"], r
assert r["kernel"] in ("scalar", "avx2", "avx512"), r
PY
grep -q "INFO: no GPU: no OpenCL loader (libOpenCL.so.1: .*); the CPU only" "$TMP/solve.err" ||
  fail "nq-solve --gpu auto does not say it runs on the CPU only: $(cat "$TMP/solve.err")"
rc=0
env "$A" "$BIN/nq-solve" 10 --gpu 0 >/dev/null 2>"$TMP/solve0.err" || rc=$?
[ $rc -ne 0 ] && grep -q -- "--gpu 0: no OpenCL loader" "$TMP/solve0.err" ||
  fail "--gpu 0 without a loader: exit $rc, $(cat "$TMP/solve0.err")"
say "no loader: --gpu-list says why, nq-solve 12 exact on the CPU and says so, --gpu 0 refused"

D="$TMP/job"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 10 --depth 3 --quorum 1 --exit-when-done
LD_LIBRARY_PATH="$TMP/absent" e2e_start_client "$D" "$PORT" cpu
wait_server_exit 120
check_done "$D" 10
grep -q "INFO: no GPU: no OpenCL loader (libOpenCL.so.1: " "$D/client-cpu.log" ||
  fail "the client does not say it runs on the CPU only"
say "no loader: nq-client computed N=10 on the CPU and said why"
stop_all

# ---- 2. a loader without the entry points ----
list=$(LD_LIBRARY_PATH="$TMP/lacking" "$BIN/nq-solve" --gpu-list)
grep -q "^no OpenCL: the OpenCL loader libOpenCL.so.1 lacks clGetPlatformIDs" <<<"$list" ||
  fail "--gpu-list with a loader that lacks the entry points: $list"
say "a loader without the OpenCL 1.2 entry points: refused, naming the first one missing"

# ---- 3. the system's loader ----
if ! "$BIN/nq-solve" --gpu-list | grep -qE '^[0-9]+ '; then
  say "no OpenCL device here ($("$BIN/nq-solve" --gpu-list | head -n 1)): part 3 not run"
else
  out=$("$BIN/nq-solve" 12 --gpu all --threads 0 --json 2>"$TMP/gpu.err") ||
    fail "nq-solve 12 --gpu all --threads 0: $(cat "$TMP/gpu.err")"
  python3 - "$out" <<'PY' || fail "nq-solve 12 on the device: $out"
import json, sys
r = json.loads(sys.argv[1])
assert r["total"] == "14200" and r["matches_published"] and r["kernel"].startswith("opencl:"), r
PY
  say "the system's loader, opened at run time: N=12 exact on the device"
fi
say "ok"
