# Shared by the benchmark, study and build scripts: sourced (from the repository root), not run.

# apt_need TAG PACKAGE...: install the Debian packages that are not installed yet (apt-get, with
# sudo unless root), saying which under TAG.
apt_need() {
  local tag=$1 p sudo="" missing=()
  shift
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "$tag: installing ${missing[*]}"
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# need_solve BUILD [CMAKE_ARG...]: configure (with the arguments, e.g. a build type) and build
# BUILD/nq-solve if it is not there yet.
need_solve() {
  local build=$1
  shift
  [ -x "$build/nq-solve" ] && return 0
  echo "building $build/nq-solve ..." >&2
  cmake -S . -B "$build" "$@" >/dev/null
  cmake --build "$build" -j2 --target nq-solve >/dev/null
}

# run_timed OUT CPU CMD...: CMD pinned to CPU in the background, stdout to OUT, stderr to
# OUT.err, its user+sys seconds and largest resident set (KiB) to OUT.time (/usr/bin/time).
run_timed() {
  local out=$1 cpu=$2
  shift 2
  /usr/bin/time -f '%U %S %M' -o "$out.time" taskset -c "$cpu" "$@" >"$out" 2>"$out.err" &
}
