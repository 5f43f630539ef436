#!/usr/bin/env bash
# The Windows build's solver under wine (scripts/build-windows.sh --test): the solver suites as
# .exe (test_unit; test_solver_fast and test_solver: every kernel this CPU can run against the
# reference, unit by unit, counts and node counts), and build-windows/nq-solve.exe 13 must print
# TOTAL 73712 and the node count of the Linux nq-solve, once per kernel the CPU has.
#
#   bash tests/windows_solver.sh WIN_BUILD [LINUX_BUILD]
set -euo pipefail
WIN="$(cd "${1:?usage: windows_solver.sh WIN_BUILD [LINUX_BUILD]}" && pwd)"
LIN=${2:-}
[ -n "$LIN" ] && LIN="$(cd "$LIN" && pwd)"
TAG=windows_solver
WINE=${NQ_WINE:-$WIN/wine-run}
fail() { echo "$TAG: FAIL: $*"; exit 1; }
say() { echo "$TAG: $*"; }
[ -x "$WINE" ] || fail "$WINE missing (scripts/build-windows.sh makes it)"
# Every run under wine has a limit, generous for a slow and busy machine (the suites take about
# 10 s of CPU): a wine that hangs fails here with a message instead of holding CI to its own limit.
SUITE_LIMIT=1200
RUN_LIMIT=300
# wine_run LIMIT ARGS...: ARGS under wine, killed after LIMIT s (exit 124 or 137 then).
wine_run() {
  local limit=$1
  shift
  timeout -k 10 "$limit" "$WINE" "$@"
}
timed_out() { [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; }

for t in test_unit test_solver_fast test_solver; do
  [ -f "$WIN/$t.exe" ] || fail "$WIN/$t.exe missing (configure with -DNQ_SOLVER_TESTS=ON)"
  s=$SECONDS
  rc=0
  (cd "$WIN" && CK_FORK=no wine_run $SUITE_LIMIT "./$t.exe") >"$WIN/$t.wine.log" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then
    tail -n 20 "$WIN/$t.wine.log"
    timed_out $rc && fail "$t.exe did not finish within $SUITE_LIMIT s under wine"
    fail "$t.exe under wine: exit $rc"
  fi
  grep -qE '^100%: Checks: [0-9]+, Failures: 0, Errors: 0' "$WIN/$t.wine.log" ||
    { tail -n 20 "$WIN/$t.wine.log"; fail "$t.exe: not every check passed"; }
  say "$t.exe: $(grep -E '^[0-9]+%: Checks' "$WIN/$t.wine.log") ($((SECONDS - s)) s under wine)"
done

field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
want_nodes=""
if [ -n "$LIN" ] && [ -x "$LIN/nq-solve" ]; then want_nodes=$(field "$("$LIN/nq-solve" 13 --json)" nodes); fi
for k in scalar avx2 avx512; do
  rc=0
  json=$(NQ_KERNEL=$k wine_run $RUN_LIMIT "$WIN/nq-solve.exe" 13 --json 2>/dev/null) || rc=$?
  timed_out $rc && fail "nq-solve.exe 13 ($k) did not finish within $RUN_LIMIT s under wine"
  [ $rc -eq 0 ] || continue
  json=$(tr -d '\r' <<<"$json")
  [ "$(field "$json" kernel)" = "$k" ] || { say "nq-solve.exe 13: kernel $k not on this CPU"; continue; }
  [ "$(field "$json" total)" = 73712 ] || fail "nq-solve.exe 13 ($k): TOTAL $(field "$json" total)"
  nodes=$(field "$json" nodes)
  [ -z "$want_nodes" ] || [ "$nodes" = "$want_nodes" ] ||
    fail "nq-solve.exe 13 ($k): nodes $nodes, the Linux nq-solve $want_nodes"
  say "nq-solve.exe 13 ($k): TOTAL 73712, nodes $nodes (Linux: ${want_nodes:-not built})"
done

# The OpenCL loader opened at run time (LoadLibraryEx of OpenCL.dll from the system folder):
# under wine that is wine's opencl.dll, over the host's OpenCL (pocl's CPU device in CI).
rc=0
list=$(wine_run $RUN_LIMIT "$WIN/nq-solve.exe" --gpu-list 2>&1) || rc=$?
timed_out $rc && fail "nq-solve.exe --gpu-list did not answer within $RUN_LIMIT s under wine"
list=$(tr -d '\r' <<<"$list")
[ $rc -eq 0 ] || fail "nq-solve.exe --gpu-list: exit $rc: $list"
if grep -qE '^[0-9]+ ' <<<"$list"; then
  json=$(wine_run $RUN_LIMIT "$WIN/nq-solve.exe" 12 --gpu all --threads 0 --json 2>"$WIN/gpu.wine.err") ||
    fail "nq-solve.exe 12 --gpu all --threads 0: $(tail -n 5 "$WIN/gpu.wine.err")"
  json=$(tr -d '\r' <<<"$json")
  [ "$(field "$json" total)" = 14200 ] && [[ "$(field "$json" kernel)" == opencl:* ]] ||
    fail "nq-solve.exe 12 on the device: $json"
  say "nq-solve.exe 12 --gpu all --threads 0: TOTAL 14200 on $(field "$json" kernel) (OpenCL.dll opened at run time)"
else
  grep -q "^no OpenCL: " <<<"$list" || fail "nq-solve.exe --gpu-list: $list"
  say "nq-solve.exe --gpu-list: $list"
fi
