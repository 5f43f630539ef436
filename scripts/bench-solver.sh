#!/usr/bin/env bash
# Solver benchmark: the reference against each fast-kernel variant this CPU can run, on whole N,
# 1 and 2 threads, with nq-solve; optionally a baseline nq-solve (another build) and a peer
# counter, each run alternately with nq-solve in the same session.
#
# Table 1, one row per run:
#   variant N threads nodes seconds cpu_s ns/node vs_ref cpu_vs_ref 2t/1t [vs_base] check
# seconds is wall time and cpu_s the user+sys time of that run (all threads), both the median of
# REPEAT runs; ns/node is thread-seconds per node (seconds * threads / nodes), vs_ref the
# reference's seconds over the variant's seconds (same N), cpu_vs_ref the same with cpu_s (on a
# busy machine the fairer single-thread figure: time waiting for a CPU is not counted), 2t/1t the
# variant's 1-thread seconds over its 2-thread seconds. With BASE set, each variant run alternates
# with the same run of the baseline build, and vs_base is the baseline's median cpu_s over this
# build's. check is "ok" when the run matched the published totals and the reference's node count.
#
# Table 2 (with NQ_PEER_KLUEV): for each N, nq-solve (one thread, PEER_KERNEL) and the peer counter
# alternate PEER_REPEAT times; printed are both medians and the ratios peer/nq (> 1: nq-solve is
# faster): of wall seconds as each program times its own count (nq-solve's "seconds", the
# peer's "Elapsed time"), and of the user+sys seconds of the whole process. The peer is Kluev's
# quadrant counter (github EvgenyKluev/N-Queens-Count-Sol), whose board size is fixed when it is
# compiled, so NQ_PEER_KLUEV is a printf pattern with one %d for N (e.g. /opt/kluev/nqueens-%d);
# each binary is run as `BIN 1` (one thread) and must print "Result: TOTAL" and "Elapsed time:
# SECONDS s". This script builds and fetches nothing for it (scripts/build-kluev.sh builds those
# binaries from a checkout of that repository); N without a binary are skipped.
#
# usage: scripts/bench-solver.sh [N ...]            (default: 15 16 17)
# env:   BUILD=build     build directory (configured and built if nq-solve is missing)
#        REPEAT=1        runs per cell of table 1 (median reported)
#        VARIANTS="auto avx512 avx2 scalar"   fast variants to try (NQ_KERNEL values; those the
#                        CPU lacks are skipped); VARIANTS= (empty) skips table 1
#        THREADS="1 2"   thread counts for the fast variants (the reference is single-threaded)
#        REFERENCE=1     0 skips the reference rows (vs_ref is then "-")
#        BASE=           path of a baseline nq-solve for the vs_base column
#        NQ_PEER_KLUEV=  peer binary pattern (table 2); PEER_REPEAT=3, PEER_KERNEL=auto
#        CPU=            if set, every run is pinned to this CPU (taskset)
#        RAW=1           also print every run of table 1 (to stderr): "raw VARIANT N THREADS
#                        this|base SECONDS CPU_S", in the order they ran
# The machine should be otherwise idle; on a shared one compare rows of the same run only.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEAT=${REPEAT:-1}
VARIANTS=${VARIANTS-"auto avx512 avx2 scalar"}
THREADS=${THREADS:-"1 2"}
REFERENCE=${REFERENCE:-1}
BASE=${BASE:-}
PEER=${NQ_PEER_KLUEV:-}
PEER_REPEAT=${PEER_REPEAT:-3}
PEER_KERNEL=${PEER_KERNEL:-auto}
RAW=${RAW:-0}
NS=("$@")
[ ${#NS[@]} -gt 0 ] || NS=(15 16 17)

SOLVE="$BUILD/nq-solve"
. scripts/lib.sh
need_solve "$BUILD"
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "BASE=$BASE is not an executable" >&2; exit 2; }

flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { for f in "$@"; do [[ " $flags " == *" $f "* ]] || return 1; done; }
available() {
  case "$1" in
    auto | scalar | reference) return 0 ;;
    avx512) has avx512f avx512vl avx512bw bmi2 popcnt ;;
    avx2) has avx2 bmi2 popcnt ;;
    *) return 1 ;;
  esac
}

TIMEBIN=/usr/bin/time
[ -x "$TIMEBIN" ] || TIMEBIN=
PIN=()
[ -z "${CPU:-}" ] || PIN=(taskset -c "$CPU")
TF=$(mktemp)
trap 'rm -f "$TF"' EXIT

# timed CMD... -> stdout of CMD; user+sys seconds in $TF (0 without /usr/bin/time)
timed() {
  if [ -n "$TIMEBIN" ]; then
    "$TIMEBIN" -f '%U %S' -o "$TF" "${PIN[@]}" "$@" 2>/dev/null
  else
    echo "0 0" >"$TF"
    "${PIN[@]}" "$@" 2>/dev/null
  fi
}
cpu_of() { awk 'END { printf "%.3f", $1 + $2 }' "$TF"; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }
jfield() { sed -n "s/.*\"$1\":\"\{0,1\}\([0-9a-z.e+-]*\).*/\1/p" <<<"$2"; }

# one SOLVE VARIANT N THREADS -> "nodes seconds cpu_s published total" for one run
one() {
  local solve=$1 variant=$2 n=$3 t=$4 out
  local args=("$n" --json --threads "$t")
  [ "$variant" = reference ] && args=("$n" --json --reference)
  out=$(NQ_KERNEL=$variant timed "$solve" "${args[@]}")
  echo "$(jfield nodes "$out") $(jfield seconds "$out") $(cpu_of) $(jfield matches_published "$out") $(jfield total "$out")"
}

# cell VARIANT N THREADS -> "nodes med_seconds med_cpu published base_med_cpu" (REPEAT runs,
# alternating with BASE when set)
cell() {
  local variant=$1 n=$2 t=$3 secs="" cpus="" bcpus="" nodes="" pub=true r
  for _ in $(seq "$REPEAT"); do
    read -r nd s c p _ < <(one "$SOLVE" "$variant" "$n" "$t")
    [ "$RAW" != 1 ] || echo "raw $variant $n $t this ${s:-0} $c" >&2
    nodes=${nd:-0}
    secs="$secs ${s:-0}"
    cpus="$cpus $c"
    [ "$p" = true ] || pub=${p:-none}
    if [ -n "$BASE" ] && [ "$variant" != reference ]; then
      read -r _ bs r _ _ < <(one "$BASE" "$variant" "$n" "$t")
      [ "$RAW" != 1 ] || echo "raw $variant $n $t base ${bs:-0} $r" >&2
      bcpus="$bcpus $r"
    fi
  done
  echo "$nodes $(echo "$secs" | median) $(echo "$cpus" | median) $pub $(echo "$bcpus" | median)"
}

if [ -n "$VARIANTS" ]; then
  printf '%-10s %3s %7s %14s %9s %9s %8s %7s %10s %6s %7s %s\n' variant N threads nodes seconds \
    cpu_s ns/node vs_ref cpu_vs_ref 2t/1t vs_base check
  for n in "${NS[@]}"; do
    rnodes="" rsecs=0 rcpu=0
    if [ "$REFERENCE" = 1 ]; then
      read -r rnodes rsecs rcpu rpub _ < <(cell reference "$n" 1)
      rcheck=$([ "$rpub" = true ] && echo ok || echo "published=$rpub")
      printf '%-10s %3d %7d %14s %9.3f %9.3f %8.3f %7s %10s %6s %7s %s\n' reference "$n" 1 \
        "$rnodes" "$rsecs" "$rcpu" "$(awk -v s="$rsecs" -v c="$rnodes" 'BEGIN { print s * 1e9 / c }')" \
        1.00 1.00 - - "$rcheck"
    fi
    for v in $VARIANTS; do
      available "$v" || { echo "($v: not supported by this CPU, skipped)"; continue; }
      first=""
      for t in $THREADS; do
        read -r nodes secs cpu pub bcpu < <(cell "$v" "$n" "$t")
        [ "$t" = 1 ] && first=$secs
        scale=-
        [ "$t" != 1 ] && [ -n "$first" ] && scale=$(ratio "$first" "$secs")
        check=ok
        [ "$pub" = true ] || check="published=$pub"
        [ -z "$rnodes" ] || [ "$nodes" = "$rnodes" ] || check="NODES DIFFER from reference"
        vsbase=-
        [ -z "$BASE" ] || vsbase=$(ratio "$bcpu" "$cpu")
        printf '%-10s %3d %7d %14s %9.3f %9.3f %8.3f %7s %10s %6s %7s %s\n' "$v" "$n" "$t" "$nodes" \
          "$secs" "$cpu" "$(awk -v s="$secs" -v c="$nodes" -v t="$t" 'BEGIN { print s * t * 1e9 / c }')" \
          "$(ratio "$rsecs" "$secs")" "$(ratio "$rcpu" "$cpu")" "$scale" "$vsbase" "$check"
      done
    done
  done
fi

[ -n "$PEER" ] || exit 0
echo
printf '%-6s %3s %12s %10s %10s %10s %10s %9s %9s %s\n' peer N nodes nq_s nq_cpu_s kluev_s \
  kluev_cpu_s kluev/nq cpu_ratio check
for n in "${NS[@]}"; do
  # shellcheck disable=SC2059 # NQ_PEER_KLUEV is a printf pattern on purpose
  bin=$(printf "$PEER" "$n")
  [ -x "$bin" ] || { echo "(peer: no binary $bin for N=$n, skipped)"; continue; }
  ns="" nc="" ps="" pc="" check=ok nodes=0
  for _ in $(seq "$PEER_REPEAT"); do
    read -r nodes s c p total < <(one "$SOLVE" "$PEER_KERNEL" "$n" 1)
    ns="$ns $s"
    nc="$nc $c"
    [ "$p" = true ] || check="nq published=$p"
    out=$(timed "$bin" 1 || true)
    ps="$ps $(sed -n 's/^Elapsed time: *\([0-9.e+-]*\).*/\1/p' <<<"$out")"
    pc="$pc $(cpu_of)"
    got=$(sed -n 's/^Result: *\([0-9]*\).*/\1/p' <<<"$out")
    [ "$got" = "$total" ] || check="peer Result=${got:-none}, TOTAL $total"
  done
  nsm=$(echo "$ns" | median) ncm=$(echo "$nc" | median)
  psm=$(echo "$ps" | median) pcm=$(echo "$pc" | median)
  printf '%-6s %3d %12s %10.3f %10.3f %10.3f %10.3f %9s %9s %s\n' kluev "$n" "$nodes" "$nsm" "$ncm" \
    "$psm" "$pcm" "$(ratio "$psm" "$nsm")" "$(ratio "$pcm" "$ncm")" "$check"
done
