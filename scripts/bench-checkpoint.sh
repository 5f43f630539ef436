#!/usr/bin/env bash
# What checkpoints cost and what they save.
#
#   bash scripts/bench-checkpoint.sh BUILD_DIR [--units "U ..."] [--threads T] [--rounds R]
#                                    [--kills K] [--kill-unit U] [--base OTHER_BUILD_DIR]
#
# 1. Overhead. The same units are solved by nq-solve without checkpoints ("none") and with
#    --checkpoint every 60 s, every 1 s and every 0.05 s, the modes alternating in a rotating
#    order, R rounds (default 3); the checkpoint file is removed before each run, so every run is a
#    whole solve. Printed per mode: median wall and CPU seconds over the rounds and the ratio of
#    each round's mode to its own "none" (median). A run shorter than 60 s saves at 60 s only
#    once, at its end; the 0.05 s mode measures what one save costs (its extra wall time divided by
#    its saves), from which the overhead of a save every 60 s follows (cost / 60 s).
#    With --base, a "base" mode runs OTHER_BUILD_DIR/nq-solve (e.g. a build of the commit before
#    checkpoints, with the old task cut) on the same units, for the cost of the cut itself.
# 2. Work lost per SIGKILL. One unit (--kill-unit) with --checkpoint-seconds 1 is killed K times
#    (default 5) at random moments 1.5..4 s into a run and resumed each time; CPU of all runs minus
#    the uninterrupted solve's, divided by K, is the work one SIGKILL lost (bounded by the
#    interval + one task + start-up). Then the same with no checkpoint file kept between runs
#    (what a kill cost before: the whole run).
#
# Defaults: units 20:s:1:1,10 20:s:2:2,12 (about 10 s each on one core of the dev machine),
# threads 1 (a save stalls the solving thread it runs in: the worst case), kill unit 21:c:2:0,2
# (about 30 s: long enough that every kill lands inside a run).
set -euo pipefail

BIN="$(cd "${1:?usage: bench-checkpoint.sh BUILD_DIR [options]}" && pwd)"
shift
UNITS="20:s:1:1,10 20:s:2:2,12"
THREADS=1
ROUNDS=3
KILLS=5
KUNIT=21:c:2:0,2
BASE=""
while [ $# -gt 0 ]; do
  case $1 in
    --units) UNITS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --kills) KILLS=$2; shift 2 ;;
    --kill-unit) KUNIT=$2; shift 2 ;;
    --base) BASE="$(cd "$2" && pwd)"; shift 2 ;;
    *) echo "bench-checkpoint: unknown option $1"; exit 2 ;;
  esac
done
[ -x "$BIN/nq-solve" ] || { echo "bench-checkpoint: $BIN/nq-solve missing"; exit 1; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/nq-bench-ckpt.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
CK="$TMP/u.ckpt"

# timed CMD...: run CMD, append "WALL CPU" (seconds) to $TMP/t.
timed() {
  local TIMEFORMAT='%R %U %S' t
  t=$({ time "$@" >/dev/null 2>"$TMP/err"; } 2>&1) || { cat "$TMP/err"; exit 1; }
  awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' <<<"$t" >>"$TMP/t"
}

# run_mode MODE: every unit once in that mode; echoes "WALL CPU" summed over the units.
run_mode() {
  local mode=$1 u
  : >"$TMP/t"
  for u in $UNITS; do
    rm -f "$CK"
    case $mode in
      none) timed "$BIN/nq-solve" --unit "$u" --threads "$THREADS" ;;
      base) timed "$BASE/nq-solve" --unit "$u" --threads "$THREADS" ;;
      *) timed "$BIN/nq-solve" --unit "$u" --threads "$THREADS" --checkpoint "$CK" \
           --checkpoint-seconds "$mode" ;;
    esac
  done
  awk '{ w += $1; c += $2 } END { printf "%.3f %.3f\n", w, c }' "$TMP/t"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

MODES="none 60 1 0.05"
[ -n "$BASE" ] && MODES="base $MODES"
echo "bench-checkpoint: units: $UNITS; threads $THREADS; $ROUNDS round(s); kernel $("$BIN/nq-solve" --unit 8:c:2:0,2 --json | sed -E 's/.*"kernel":"([a-z0-9]+)".*/\1/')"
set -- $MODES
for r in $(seq 1 "$ROUNDS"); do
  # Rotate the order each round, so that no mode always runs first or last.
  order=""
  for k in $(seq 0 $(($# - 1))); do
    i=$(( (k + r - 1) % $# + 1 ))
    order="$order ${!i}"
  done
  for m in $order; do
    read -r w c <<<"$(run_mode "$m")"
    echo "$r $m $w $c" >>"$TMP/rounds"
    echo "  round $r: $m: wall $w s, cpu $c s"
  done
done
echo "bench-checkpoint: overhead (medians over $ROUNDS rounds; ratio = mode / none of the same round)"
printf '  %-6s %9s %9s %11s %11s\n' mode wall_s cpu_s wall_ratio cpu_ratio
for m in $MODES; do
  w=$(awk -v m="$m" '$2 == m { print $3 }' "$TMP/rounds" | median)
  c=$(awk -v m="$m" '$2 == m { print $4 }' "$TMP/rounds" | median)
  rw=$(awk -v m="$m" '$2 == "none" { n[$1] = $3 } $2 == m { v[$1] = $3 } END { for (r in v) printf "%.4f\n", v[r] / n[r] }' "$TMP/rounds" | median)
  rc=$(awk -v m="$m" '$2 == "none" { n[$1] = $4 } $2 == m { v[$1] = $4 } END { for (r in v) printf "%.4f\n", v[r] / n[r] }' "$TMP/rounds" | median)
  printf '  %-6s %9s %9s %11s %11s\n' "$m" "$w" "$c" "$rw" "$rc"
done
# One save's cost from the 0.05 s mode: its extra wall (and CPU) time over the saves it made (a
# save every 0.05 s of wall time, plus the last one of each unit). Wall time includes the fsyncs;
# on a loaded machine it is the noisier of the two.
save_cost() { # FIELD (3 wall, 4 cpu): median seconds per save
  awk -v f="$1" -v u="$(wc -w <<<"$UNITS")" '$2 == "none" { n[$1] = $f } $2 == "0.05" { v[$1] = $f; w[$1] = $3 }
    END { for (r in v) { saves = w[r] / 0.05 + u; printf "%.6f\n", (v[r] - n[r]) / saves } }' \
    "$TMP/rounds" | median
}
WCOST=$(save_cost 3)
CCOST=$(save_cost 4)
echo "bench-checkpoint: one save costs $(awk -v c="$WCOST" 'BEGIN { printf "%.2f", c * 1000 }') ms" \
  "of wall time, $(awk -v c="$CCOST" 'BEGIN { printf "%.2f", c * 1000 }') ms of CPU (medians;" \
  "negative = below the noise); a save every 60 s costs" \
  "$(awk -v c="$WCOST" 'BEGIN { printf "%.4f%%", c / 60 * 100 }') of wall time," \
  "$(awk -v c="$CCOST" 'BEGIN { printf "%.4f%%", c / 60 * 100 }') of CPU"

# ---- work lost per SIGKILL ----
# one_run SECONDS_BEFORE_KILL(0 = to the end) KEEP: nq-solve on KUNIT with checkpoints every 1 s;
# appends its CPU seconds to $TMP/k. KEEP=0 removes the checkpoint first (no resume).
one_run() {
  local at=$1 keep=$2 pid
  [ "$keep" = 1 ] || rm -f "$CK"
  bash -c '"$@" >/dev/null 2>&1 & c=$!; echo $c >"$0.pid"; wait $c; times >"$0.times"
           { read -r _; read -r u s; } <"$0.times"; echo "$u $s" >"$0"' "$TMP/cpu" \
    "$BIN/nq-solve" --unit "$KUNIT" --threads 1 --checkpoint "$CK" --checkpoint-seconds 1 \
    2>/dev/null &
  local w=$!
  for i in $(seq 1 500); do [ -s "$TMP/cpu.pid" ] && break; sleep 0.01; done
  pid=$(cat "$TMP/cpu.pid")
  rm -f "$TMP/cpu.pid"
  if [ "$at" != 0 ]; then
    sleep "$at"
    kill -KILL "$pid" 2>/dev/null || echo "missed" >>"$TMP/missed" # it had finished already
  fi
  wait "$w" || true
  awk '{ u = $1; s = $2; sub(/s$/, "", u); sub(/s$/, "", s); split(u, a, "m"); split(s, b, "m");
         printf "%.3f\n", a[1] * 60 + a[2] + b[1] * 60 + b[2] }' "$TMP/cpu" >>"$TMP/k"
}
kill_series() { # KEEP: K killed runs, then one to the end; echoes total CPU
  : >"$TMP/k"
  rm -f "$CK"
  for k in $(seq 1 "$KILLS"); do
    one_run "$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", 1.5 + 2.5 * r / 32767 }')" "$1"
  done
  one_run 0 "$1"
  awk '{ s += $1 } END { printf "%.3f\n", s }' "$TMP/k"
}
: >"$TMP/k"
: >"$TMP/missed"
rm -f "$CK"
one_run 0 0
KBASE=$(cat "$TMP/k")
WITH=$(kill_series 1)
WITHOUT=$(kill_series 0)
echo "bench-checkpoint: SIGKILL x$KILLS at random moments (1.5..4 s into a run) on $KUNIT, 1 thread:"
echo "  uninterrupted ${KBASE} s CPU; with checkpoints every 1 s: $WITH s in all, lost per kill" \
  "$(awk -v a="$WITH" -v b="$KBASE" -v k="$KILLS" 'BEGIN { printf "%.3f", (a - b) / k }') s;" \
  "without: $WITHOUT s, lost per kill $(awk -v a="$WITHOUT" -v b="$KBASE" -v k="$KILLS" 'BEGIN { printf "%.3f", (a - b) / k }') s"
MISSED=$(wc -l <"$TMP/missed")
[ "$MISSED" -eq 0 ] || echo "bench-checkpoint: WARNING: $MISSED kill(s) came after the run had ended (use a longer --kill-unit)"
