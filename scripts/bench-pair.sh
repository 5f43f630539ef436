#!/usr/bin/env bash
# Two nq-solve builds on the same work at the same time, one thread each, each pinned to its own
# core, then the cores swapped: a paired comparison that a shared, noisy machine moves alike for
# both (the way docs/performance.md measures a solver change against main).
#
# Each argument is N (the whole of N) or N:K/P (the slice K/P of N's units at --depth DEPTH, as
# `nq-solve N --depth DEPTH --sample K/P`). For each, round 1 runs this build on the first CPU of
# CPUS and the baseline on the second, round 2 the other way round; every run's user+sys seconds
# are printed raw, then base/this (> 1: this build is faster) of the two rounds' sums and of each
# round, and both builds' node counts. The TOTALs must be equal (and, for a whole N, the
# published one): a row whose counts differ says FAIL and the script exits 1 at the end.
#
# usage: BASE=/path/to/baseline/nq-solve scripts/bench-pair.sh N[:K/P] ...
# env:   BASE=       the baseline nq-solve (required; e.g. a Release build of main in a worktree)
#        BUILD=build-rel   this build's directory (nq-solve in it; configured Release and built
#                    if missing)
#        DEPTH=4     unit depth of the slices
#        CPUS="0 1"  the two CPUs (taskset)
#        KERNEL=     NQ_KERNEL for both builds (auto when empty: avx512, avx2, neon or scalar)
# The machine should be otherwise idle; both programs share its noise, not its cores.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-rel}
DEPTH=${DEPTH:-4}
read -r CPU_A CPU_B <<<"${CPUS:-0 1}"
if [ -z "${BASE:-}" ] || [ ! -x "$BASE" ]; then
  echo "bench-pair: BASE=path of a baseline nq-solve" >&2
  exit 2
fi
[ $# -gt 0 ] || { echo "usage: BASE=... $0 N[:K/P] ..." >&2; exit 2; }
[ -x /usr/bin/time ] ||
  { echo "bench-pair: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
. scripts/lib.sh
need_solve "$BUILD" -DCMAKE_BUILD_TYPE=Release
THIS="$BUILD/nq-solve"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
[ -z "${KERNEL:-}" ] || export NQ_KERNEL="$KERNEL"

echo "this: $THIS ($("$THIS" --version | tail -n 1))"
echo "base: $BASE ($("$BASE" --version | tail -n 1))"
echo "kernel ${KERNEL:-auto}, depth $DEPTH of slices, CPUs $CPU_A $CPU_B;" \
  "seconds are user+sys, one thread"
printf '%-10s %9s %9s %9s %9s %8s %8s %8s %16s %16s %s\n' N:slice this_r1 this_r2 base_r1 \
  base_r2 base/this r1 r2 nodes_this nodes_base check
bad=0
for spec in "$@"; do
  n=${spec%%:*}
  args=("$n" --threads 1 --json)
  [ "$spec" = "$n" ] || args+=(--depth "$DEPTH" --sample "${spec#*:}")
  for r in 1 2; do
    if [ $r = 1 ]; then ct=$CPU_A; cb=$CPU_B; else ct=$CPU_B; cb=$CPU_A; fi
    run_timed "$TMP/t$r" "$ct" "$THIS" "${args[@]}"
    run_timed "$TMP/b$r" "$cb" "$BASE" "${args[@]}"
    wait
  done
  python3 - "$TMP" "$spec" <<'PY' || bad=1
import json, sys
d, spec = sys.argv[1], sys.argv[2]
# user + sys from the last line of run_timed's OUT.time; at least 10 ms: a tiny N's run can read
# 0.00 s
sec = lambda f: max(0.01, sum(float(x) for x in
                              open(f"{d}/{f}.time").read().split("\n")[-2].split()[:2]))
js = {f: json.load(open(f"{d}/{f}")) for f in ("t1", "t2", "b1", "b2")}
t1, t2, b1, b2 = (sec(f) for f in ("t1", "t2", "b1", "b2"))
totals = {js[f]["total"] for f in js}
ok = len(totals) == 1 and all(js[f].get("matches_published", True) is not False for f in js)
print(f"{spec:<10} {t1:9.2f} {t2:9.2f} {b1:9.2f} {b2:9.2f} {(b1 + b2) / (t1 + t2):8.3f} "
      f"{b1 / t1:8.3f} {b2 / t2:8.3f} {js['t1']['nodes']:>16} {js['b1']['nodes']:>16} "
      f"{'ok' if ok else 'FAIL: TOTALs ' + ' '.join(sorted(map(str, totals)))}")
sys.exit(0 if ok else 1)
PY
done
exit $bad
