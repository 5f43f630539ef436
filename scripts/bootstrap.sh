#!/usr/bin/env bash
# Install nq's Debian build dependencies when missing, then configure and build into build/.
# Usage: scripts/bootstrap.sh [build-dir] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
shift || true

# libhttp-parser-dev: the HTTP request parser of the status page (docs/http.md); Debian 12 has no
# llhttp package. python3-prometheus-client: the suite checks /metrics with its parser.
# ocl-icd-opencl-dev, opencl-c-headers: the OpenCL loader and headers of the GPU backend
# (docs/gpu.md); pocl-opencl-icd: an OpenCL device on the CPU, which the GPU tests run on.
PKGS=(libuv1-dev libsqlite3-dev libssl-dev check libjansson-dev pkg-config cmake build-essential
  libhttp-parser-dev python3-prometheus-client ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd)
. scripts/lib.sh
apt_need bootstrap "${PKGS[@]}"

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
