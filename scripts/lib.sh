# Shared by the benchmark and study scripts: sourced (from the repository root), not run.

# need_solve BUILD: configure and build BUILD/nq-solve if it is not there yet.
need_solve() {
  [ -x "$1/nq-solve" ] && return 0
  echo "building $1/nq-solve ..." >&2
  cmake -S . -B "$1" >/dev/null
  cmake --build "$1" -j2 --target nq-solve >/dev/null
}
