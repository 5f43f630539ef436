#!/usr/bin/env bash
# docs/planning.md's generated "record" table (whole-N estimates at N=21..28) must match what
# nq-solve gives now (scripts/planning-tables.py --check record, about a second): a solver change
# that moves the estimates fails here until the doc is regenerated with --write.
#
#   bash tests/e2e_planning_tables.sh BUILD_DIR
set -euo pipefail
BIN="$(cd "${1:?usage: e2e_planning_tables.sh BUILD_DIR}" && pwd)"
[ -x "$BIN/nq-solve" ] || { echo "e2e_planning_tables: $BIN/nq-solve missing"; exit 1; }
command -v python3 >/dev/null || { echo "e2e_planning_tables: no python3: skipped"; exit 77; }
exec python3 "$(dirname "$0")/../scripts/planning-tables.py" "$BIN" --check record
