#!/usr/bin/env bash
# Cost of planning: nq-solve N --unit-seconds S --plan, per unit, with the estimator's two probe
# variants (pdep where the CPU has it, the plain loop) alternated in one run. Prints one row per
# run and, per variant, the best us/unit and its ratio to plain:
#   variant N S probes units split_nodes seconds us_per_unit est_nodes
# A job's units must be created at well under 5 us each (30 million in 5 minutes, store inserts
# included), so this is the planner's share. Plans are deterministic: both variants must print
# the same units and estimates (the script checks est_nodes).
#
# usage: scripts/bench-plan.sh [N S [PROBES]]     (default: 24 60 8)
# env:   BUILD=build   REPEAT=3 (runs per variant, alternated)   MAXD= (--max-depth)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEAT=${REPEAT:-3}
N=${1:-24}
S=${2:-60}
P=${3:-8}
SOLVE="$BUILD/nq-solve"
. scripts/lib.sh
need_solve "$BUILD"
extra=()
[ -z "${MAXD:-}" ] || extra=(--max-depth "$MAXD")

out=$(mktemp)
trap 'rm -f "$out"' EXIT
printf '%-7s %3s %8s %6s %10s %10s %8s %11s %12s\n' variant N S probes units split seconds \
  us_per_unit est_nodes
for r in $(seq 1 "$REPEAT"); do
  for v in pdep plain; do
    env_v=()
    [ "$v" = plain ] && env_v=(NQ_EST_PROBE=plain)
    j=$(env "${env_v[@]}" "$SOLVE" "$N" --unit-seconds "$S" --effort "$P" "${extra[@]}" \
      --plan --json)
    python3 -c '
import json, sys
o = json.loads(sys.argv[2])
print("%-7s %3d %8s %6d %10d %10d %8.2f %11.3f %12.6g" % (sys.argv[1], o["n"], sys.argv[3],
      o["decision_probes"], o["units"], o["internal_nodes"], o["seconds"],
      1e6 * o["seconds"] / o["units"], o["est_nodes"]))' "$v" "$j" "$S" | tee -a "$out"
  done
done
python3 - "$out" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1])]
best, est = {}, {}
for r in rows:
    best[r[0]] = min(best.get(r[0], 1e30), float(r[7]))
    est.setdefault(r[0], set()).add(r[8])
same = len(set.union(*est.values())) == 1
for v in best:
    print("best %-6s %.3f us/unit  (plain/%s = %.2fx)" % (v, best[v], v, best["plain"] / best[v]))
print("estimates equal across variants and runs:", "yes" if same else "NO")
sys.exit(0 if same else 1)
EOF
