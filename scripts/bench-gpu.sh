#!/usr/bin/env bash
# GPU benchmark: for every OpenCL device nq-solve sees, whole N counted on that device alone
# (--gpu IDX --threads 0), against the best CPU kernel on one core and on every core, in the same
# run, with the exactness check (TOTAL, COUNT2/4/8 against the published values and the node
# count against the CPU's).
#
# One row per (device, N):
#   device N nodes gpu_s gpu_nodes/s cpu1_s cpuall_s gpu/cpu1 gpu/cpuall check
# gpu_s and the cpu seconds are each program's own wall time of the count ("seconds" of
# nq-solve --json), the median of REPEAT runs; gpu/cpu1 is cpu1_s / gpu_s (> 1: the device is
# faster than one core), gpu/cpuall the same against every core of this machine. check is "ok"
# when the device's TOTAL, COUNT2/4/8 and nodes equal the CPU's and the published values.
# A CPU device (pocl) is a correctness run, not a GPU's figure (docs/gpu.md).
#
# usage: scripts/bench-gpu.sh [N ...]        (default: 16 17 18)
# env:   BUILD=build   build directory (configured and built if nq-solve is missing)
#        NQ_SOLVE=path an nq-solve to use instead (e.g. one copied to a GPU machine)
#        REPEAT=1      runs per cell (median)
#        GPUS="0 1"    device indexes (default: every device of nq-solve --gpu-list)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
BUILD=${BUILD:-build}
REPEAT=${REPEAT:-1}
NS=("$@")
[ ${#NS[@]} -gt 0 ] || NS=(16 17 18)
if [ -n "${NQ_SOLVE:-}" ]; then
  SOLVE=$NQ_SOLVE
else
  need_solve "$BUILD"
  SOLVE=$BUILD/nq-solve
fi
export NQ_LOG_LEVEL=${NQ_LOG_LEVEL:-warn}

"$SOLVE" --gpu-list
GPUS=${GPUS:-$("$SOLVE" --gpu-list | awk '/^[0-9]+ /{print $1}')}
[ -n "$GPUS" ] || { echo "bench-gpu: no OpenCL device"; exit 0; }

# median_run OUT ARGS...: REPEAT runs of nq-solve --json; the run with the median seconds to OUT.
median_run() {
  local out=$1 i
  shift
  for ((i = 0; i < REPEAT; i++)); do "$SOLVE" "$@" --json; done |
    python3 -c 'import sys,json
rows=sorted((json.loads(l) for l in sys.stdin if l.startswith("{")), key=lambda r: r["seconds"])
print(json.dumps(rows[len(rows)//2]))' >"$out"
}

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
CORES=$(nproc)
printf "%-44s %3s %15s %9s %12s %9s %9s %9s %10s %s\n" device N nodes gpu_s gpu_nodes/s cpu1_s \
  cpuall_s gpu/cpu1 gpu/cpuall check
for n in "${NS[@]}"; do
  median_run "$T/cpu1" "$n" --threads 1
  median_run "$T/cpuall" "$n" --threads "$CORES"
  for g in $GPUS; do
    median_run "$T/gpu" "$n" --gpu "$g" --threads 0
    python3 - "$T/cpu1" "$T/cpuall" "$T/gpu" <<'EOF'
import json, sys
c1, ca, g = (json.load(open(p)) for p in sys.argv[1:4])
ok = all(g[k] == c1[k] for k in ("total", "c2", "c4", "c8", "nodes")) and \
     g.get("matches_published", True) and g["kernel"].startswith("opencl:")
print("%-44s %3d %15d %9.3f %12.4g %9.3f %9.3f %9.2f %10.2f %s" % (
    g["kernel"][:44], g["n"], g["nodes"], g["seconds"], g["nodes"] / max(g["seconds"], 1e-9),
    c1["seconds"], ca["seconds"], c1["seconds"] / max(g["seconds"], 1e-9),
    ca["seconds"] / max(g["seconds"], 1e-9), "ok" if ok else "MISMATCH"))
EOF
  done
done
echo "cpu kernel: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kernel"])' "$T/cpu1"), $CORES cores"
