#!/usr/bin/env bash
# The fast kernel's files call one way (docs/performance.md, "What the kernel does"): checked on
# the built solver library's objects, so a call hidden behind a declaration of one's own counts.
#   solver_batch.c   (shared kernel code)  calls none of the others
#   solver_scalar.c, solver_x86.c, solver_neon.c (the variants)  call solver_batch.c only: never
#                    solver_fast.c, never one another
#   solver_fast.c    reaches the variants through its table of kernels (names it may use)
# Each object's undefined symbols are matched against the global symbols the others define.
#
#   scripts/check-solver-layers.sh LIBNQSOLVER.a [NM]     (NM: default nm; a cross build's nm)
# Exits 0 and says so, or 1 naming each call that goes the wrong way; 2 on bad usage.
set -euo pipefail
LIB=${1:?usage: check-solver-layers.sh LIBNQSOLVER.a [NM]}
NM=${2:-nm}
[ -f "$LIB" ] || { echo "check-solver-layers: no library $LIB" >&2; exit 2; }
command -v "$NM" >/dev/null || { echo "check-solver-layers: no $NM" >&2; exit 2; }

# "OBJECT SYMBOL" lines: what each member defines (global), and what it leaves undefined.
defs=$("$NM" -A -g --defined-only "$LIB" 2>/dev/null | awk -F'[: ]+' 'NF >= 4 { print $2, $NF }')
uses=$("$NM" -A -u "$LIB" 2>/dev/null | awk -F'[: ]+' 'NF >= 3 { print $2, $NF }')
for f in solver_fast solver_batch solver_scalar solver_x86; do
  grep -q "^$f\.c\.o " <<<"$defs" || { echo "check-solver-layers: $LIB has no $f.c.o" >&2; exit 2; }
done

# allowed CALLER CALLEE: 1 when a call from CALLER's file into CALLEE's is the right way.
allowed() {
  case "$1:$2" in
  solver_fast:*) return 0 ;;
  solver_scalar:solver_batch | solver_x86:solver_batch | solver_neon:solver_batch) return 0 ;;
  solver_batch:* | solver_scalar:* | solver_x86:* | solver_neon:*) return 1 ;;
  *) return 0 ;; # the rest of the library is not the kernel's business here
  esac
}

bad=0
while read -r obj sym; do
  caller=${obj%.c.o}
  case "$caller" in solver_fast | solver_batch | solver_scalar | solver_x86 | solver_neon) ;; *) continue ;; esac
  while read -r dobj _; do
    callee=${dobj%.c.o}
    [ "$callee" = "$caller" ] && continue
    if ! allowed "$caller" "$callee"; then
      echo "check-solver-layers: $caller.c calls $sym of $callee.c (the wrong way)"
      bad=1
    fi
  done < <(awk -v s="$sym" '$2 == s' <<<"$defs")
done <<<"$uses"
[ $bad -eq 0 ] || exit 1
echo "check-solver-layers: ok (solver_fast -> its table -> the variants -> solver_batch; nothing back)"
