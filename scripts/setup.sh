#!/usr/bin/env bash
# Shared set-up of scripts/test.sh and scripts/demo.sh: installs the Debian
# packages the build needs (only those missing), then configures and builds
# in build/.  Source it; BUILD_TYPE and BUILD_DIR may be set by the caller.
set -euo pipefail

ADXL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ADXL_ROOT/build}"
BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}"

ADXL_PACKAGES=(build-essential cmake pkg-config libucx-dev ucx-utils libhwloc-dev libgtest-dev
               nlohmann-json3-dev python3 iproute2 pybind11-dev python3-dev python3-pytest
               python3-venv python3-setuptools python3-wheel
               libopenmpi-dev openmpi-bin libssl-dev)

adxl_install_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  echo "setup: installing ${missing[*]}"
  local sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  # The package lists of a fresh machine may be missing or stale.
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
    { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
}

adxl_build() {
  adxl_install_packages "${ADXL_PACKAGES[@]}"
  cmake -S "$ADXL_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" "$@" >/dev/null
  cmake --build "$BUILD_DIR" -j"$(nproc)"
}
