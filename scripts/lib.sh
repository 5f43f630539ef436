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

# need_solve BUILD: configure and build BUILD/nq-solve if it is not there yet.
need_solve() {
  [ -x "$1/nq-solve" ] && return 0
  echo "building $1/nq-solve ..." >&2
  cmake -S . -B "$1" >/dev/null
  cmake --build "$1" -j2 --target nq-solve >/dev/null
}
