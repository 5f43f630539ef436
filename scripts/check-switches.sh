#!/usr/bin/env bash
# The switchboard's check (docs/design.md, "Switches"), run by ctest as check_switches:
#   1. no getenv of an NQ_ name in product code but the switchboard's own two files;
#   2. every name of nq/switches.h and nq/test_hooks.h is in docs/design.md's table, and the
#      table names nothing else;
#   3. no test switch's name in an installed program of BUILD_DIR (they exist in test builds only).
# Usage: scripts/check-switches.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?usage: check-switches.sh BUILD_DIR}
bad=0
say() { echo "check-switches: $*"; }

# 1. getenv("NQ_...") outside the switchboard.
hits=$(grep -rn 'getenv("NQ_' common client server admin solve tools --include='*.c' --include='*.h' |
  grep -v '^common/util/switches.c:' || true)
if [ -n "$hits" ]; then
  say "a getenv of an NQ_ name outside nq/switches.h and nq/test_hooks.h (read it through them):"
  echo "$hits"
  bad=1
fi

# 2. The tables against the docs' list.
user=$(sed -n '/^#define NQ_SWITCH_MAP/,/^$/p' common/util/include/nq/switches.h |
  grep -o 'X([A-Z0-9_]*' | sed 's/X(/NQ_/' | sort)
test=$(sed -n '/^#define NQ_TEST_HOOK_MAP/,/^$/p' common/util/include/nq/test_hooks.h |
  grep -o 'X([A-Z0-9_]*' | sed 's/X(/NQ_/' | sort)
docs=$(sed -n '/^## Switches/,/^## /p' docs/design.md | grep -o '^| `NQ_[A-Z0-9_]*`' |
  grep -o 'NQ_[A-Z0-9_]*' | sort)
[ -n "$user" ] && [ -n "$test" ] || { say "cannot read the tables"; exit 1; }
want=$(printf '%s\n%s\n' "$user" "$test" | sort)
if [ "$want" != "$docs" ]; then
  say "docs/design.md's table and the tables in code differ:"
  diff <(echo "$want") <(echo "$docs") || true
  bad=1
fi

# 3. The installed programs carry no test switch.
n=0
for p in nq-client nq-server nq-admin nq-solve nq-verify; do
  [ -x "$BUILD/$p" ] || continue
  n=$((n + 1))
  for t in $test; do
    if grep -qaF "$t" "$BUILD/$p"; then
      say "$p holds the test switch $t: test switches belong in test builds (NQ_TEST_HOOKS)"
      bad=1
    fi
  done
done
[ "$n" -gt 0 ] || { say "no program built in $BUILD"; exit 1; }
if [ -x "$BUILD/nq-client-test" ] && ! grep -qaF NQ_CLIENT_FAULT "$BUILD/nq-client-test"; then
  say "nq-client-test lacks NQ_CLIENT_FAULT: is the test build still made with NQ_TEST_HOOKS?"
  bad=1
fi
[ "$bad" -eq 0 ] || exit 1
say "ok: $(echo "$want" | wc -l) switches listed once, none read elsewhere, no test switch in $n programs"
