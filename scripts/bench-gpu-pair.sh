#!/usr/bin/env bash
# Two nq-solve builds on one GPU in one run: a kernel change measured before and after in the
# same lease (docs/gpu.md). Each N is counted whole on the device alone (--gpu GPU --threads 0),
# the two builds alternating ROUNDS times (base, this, base, this, ...), so that a device's
# clocks and temperature move alike for both.
#
#   scripts/bench-gpu-pair.sh prepare REV     here, no GPU needed: Release builds of the commit
#                                              REV (git archive) and of this working tree, into
#                                              DIR/base and DIR/this, with the shared libraries
#                                              they load (beyond the C library) in DIR/lib
#   scripts/bench-gpu-pair.sh run [N ...]     on the GPU machine (default 19 20 21)
#
# DIR (default build-gpu-pair, ignored by git as build*) is what a lease carries; the device tool
# runs e.g. `scripts/bench-gpu-pair.sh run 19 20 21` with carry ["build-gpu-pair"].
# One row per run: N build round seconds device nodes/s nodes total check, where device is the
# seconds of its launches where the build prints them (the rest of `seconds` is the host's,
# between launches and batches) and check is "ok" when the run's TOTAL and COUNT2/4/8 are the
# published ones (nq-solve's matches_published) and equal the other build's, and its nodes
# equal the other build's (both nq-solver-4: the same tree); then
# one row per N: the median seconds of each build and base/this (> 1: this build is faster).
# A run that fails or passes TIMEOUT seconds is a row "FAIL" and the script exits 1 at the end.
# env: DIR=build-gpu-pair  GPU=0  ROUNDS=1  TIMEOUT=300 (seconds a run)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${DIR:-build-gpu-pair}
case $DIR in /*) ;; *) DIR=$PWD/$DIR ;; esac
GPU=${GPU:-0}
ROUNDS=${ROUNDS:-1}
TIMEOUT=${TIMEOUT:-300}
mode=${1:-}
[ $# -gt 0 ] && shift

# build SRC OUT: a Release nq-solve of the source tree SRC, built in OUT.
build() {
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
  nice -n 10 cmake --build "$2" -j2 --target nq-solve >/dev/null
}

case "$mode" in
prepare)
  rev=${1:?usage: $0 prepare REV}
  git rev-parse --verify -q "$rev^{commit}" >/dev/null || { echo "bench-gpu-pair: no commit $rev" >&2; exit 2; }
  T=$(mktemp -d)
  trap 'rm -rf "$T"' EXIT
  mkdir -p "$T/src"
  git archive "$rev" | tar -x -C "$T/src"
  echo "building base ($rev) ..." >&2
  build "$T/src" "$T/base"
  echo "building this (the working tree) ..." >&2
  build . "$DIR/build-this"
  rm -rf "$DIR/base" "$DIR/this" "$DIR/lib"
  mkdir -p "$DIR/base" "$DIR/this" "$DIR/lib"
  cp "$T/base/nq-solve" "$DIR/base/"
  cp "$DIR/build-this/nq-solve" "$DIR/this/"
  # The libraries both load, but the C library's own (the GPU machine has those); libOpenCL is
  # loaded by name at run time (common/solver/ocl_load.c), so the loader goes along too.
  for lib in $( (ldd "$DIR/base/nq-solve"; ldd "$DIR/this/nq-solve") | awk '$3 ~ /^\// {print $3}' |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' | sort -u); do
    cp -L "$lib" "$DIR/lib/"
  done
  ocl=$(ldconfig -p | awk '/libOpenCL\.so\.1 /{print $NF; exit}')
  [ -n "$ocl" ] && cp -L "$ocl" "$DIR/lib/libOpenCL.so.1"
  git rev-parse "$rev" >"$DIR/base/REV"
  echo "$(git rev-parse HEAD)$(git diff --quiet HEAD -- . || echo '+changes')" >"$DIR/this/REV"
  rm -rf "$DIR/build-this"
  echo "prepared $DIR: base $(cat "$DIR/base/REV"), this $(cat "$DIR/this/REV");" \
    "$(du -sh "$DIR" | cut -f1) to carry"
  ;;
run)
  NS=("$@")
  [ ${#NS[@]} -gt 0 ] || NS=(19 20 21)
  for b in base this; do
    [ -x "$DIR/$b/nq-solve" ] || { echo "bench-gpu-pair: $DIR/$b/nq-solve missing (prepare first)" >&2; exit 2; }
  done
  export LD_LIBRARY_PATH="$DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export NQ_LOG_LEVEL=${NQ_LOG_LEVEL:-warn}
  "$DIR/this/nq-solve" --gpu-list
  echo "base $(cat "$DIR/base/REV" 2>/dev/null), this $(cat "$DIR/this/REV" 2>/dev/null), GPU $GPU, $ROUNDS round(s)"
  T=$(mktemp -d)
  trap 'rm -rf "$T"' EXIT
  printf '%3s %-5s %5s %9s %9s %12s %16s %16s %s\n' N build round seconds device nodes/s nodes total check
  bad=0
  for n in "${NS[@]}"; do
    for ((r = 1; r <= ROUNDS; r++)); do
      for b in base this; do
        if ! timeout "$TIMEOUT" "$DIR/$b/nq-solve" "$n" --gpu "$GPU" --threads 0 --json \
            >"$T/$n.$b.$r" 2>"$T/err"; then
          printf '%3s %-5s %5s FAIL (exit or over %s s): %s\n' "$n" "$b" "$r" "$TIMEOUT" \
            "$(tail -n 1 "$T/err")"
          bad=1
          : >"$T/$n.$b.$r"
        fi
      done
      python3 - "$T/$n.base.$r" "$T/$n.this.$r" "$n" "$r" <<'PY' || bad=1
import json, sys
rows = []
for p in sys.argv[1:3]:
    js = [json.loads(l) for l in open(p) if l.startswith("{")]
    rows.append(js[-1] if js else None)
n, r = sys.argv[3], sys.argv[4]
keys = ("total", "c2", "c4", "c8", "nodes")
both = all(rows)
same = both and all(rows[0][k] == rows[1][k] for k in keys)
bad = False
for name, g in zip(("base", "this"), rows):
    if g is None:
        bad = True
        continue
    ok = same and g.get("matches_published", False) and g["kernel"].startswith("opencl:")
    bad |= not ok
    dev = g.get("device_seconds")
    print("%3s %-5s %5s %9.3f %9s %12.4g %16s %16s %s" % (n, name, r, g["seconds"],
          "%.3f" % dev if dev is not None else "-",
          int(g["nodes"]) / max(g["seconds"], 1e-9), g["nodes"], g["total"],
          "ok" if ok else "MISMATCH"))
sys.exit(1 if bad else 0)
PY
    done
    python3 - "$T" "$n" "$ROUNDS" <<'PY'
import json, os, sys, statistics
d, n, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
med = {}
for b in ("base", "this"):
    s = []
    for r in range(1, rounds + 1):
        p = os.path.join(d, "%s.%s.%d" % (n, b, r))
        js = [json.loads(l) for l in open(p) if l.startswith("{")]
        if js:
            s.append(js[-1]["seconds"])
    med[b] = statistics.median(s) if s else None
if med["base"] and med["this"]:
    print("N=%s median seconds: base %.3f, this %.3f, base/this %.2f" %
          (n, med["base"], med["this"], med["base"] / med["this"]))
PY
  done
  exit $bad
  ;;
*)
  echo "usage: $0 prepare REV | run [N ...]" >&2
  exit 2
  ;;
esac
