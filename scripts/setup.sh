#!/usr/bin/env bash
# Shared set-up of scripts/test.sh and scripts/demo.sh: installs the Debian
# packages the build needs (only those missing), fetches the UCX the engine
# builds on, then configures and builds in build/.  Source it; BUILD_TYPE and
# BUILD_DIR may be set by the caller.
#
# The UCX: ADXL_UCX_ROOT names a UCX install (a prefix with
# lib/cmake/ucx/ucx-config.cmake), e.g. a cluster's own UCX with verbs;
# "system" takes the system's (Debian 12: 1.13.1, which aborts a process when
# a peer dies during the transport wire-up: docs/ucx.md).  Unset: UCX
# $ADXL_UCX_VERSION from PyPI (the libucx-cu12 wheel: headers, CMake config,
# tcp/shm/cma and CUDA transports; no verbs), unpacked once into .deps/.
set -euo pipefail

ADXL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ADXL_ROOT/build}"
BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}"

ADXL_PACKAGES=(build-essential cmake pkg-config libucx-dev ucx-utils libhwloc-dev libgtest-dev
               nlohmann-json3-dev python3 iproute2 pybind11-dev python3-dev python3-pytest
               python3-venv python3-setuptools python3-wheel
               libopenmpi-dev openmpi-bin libssl-dev)

ADXL_UCX_VERSION=1.22.0

# Sets ADXL_UCX_CMAKE_ARGS (the configure arguments that select the UCX) and
# exports ucx_ROOT.
adxl_select_ucx() {
  local root="${ADXL_UCX_ROOT:-}"
  if [[ "$root" == system ]]; then
    ADXL_UCX_CMAKE_ARGS=()
    unset ucx_ROOT
    return 0
  fi
  if [[ -z "$root" ]]; then
    root="$ADXL_ROOT/.deps/ucx-$ADXL_UCX_VERSION/libucx"
    [[ -f "$root/lib/cmake/ucx/ucx-config.cmake" ]] || adxl_fetch_ucx "$(dirname "$root")"
  fi
  [[ -f "$root/lib/cmake/ucx/ucx-config.cmake" ]] ||
    { echo "setup: ADXL_UCX_ROOT=$root has no lib/cmake/ucx/ucx-config.cmake" >&2; return 1; }
  ADXL_UCX_CMAKE_ARGS=("-Ducx_DIR=$root/lib/cmake/ucx")
  # CMake's own variable for the package's prefix: nested configures (the pip
  # build of ./python, tests/install) find the same UCX.
  export ucx_ROOT="$root"
}

# Unpacks the libucx-cu12 wheel of $ADXL_UCX_VERSION into $1 (pip from a
# venv on Debian's python3: PEP 668 keeps pip out of the system interpreter).
adxl_fetch_ucx() {
  local dest=$1 tmp
  tmp="$(mktemp -d)"
  echo "setup: fetching UCX $ADXL_UCX_VERSION (PyPI libucx-cu12) into $dest"
  /usr/bin/python3 -m venv "$tmp/venv" &&
    "$tmp/venv/bin/pip" download -q --no-deps --only-binary :all: -d "$tmp" "libucx-cu12==$ADXL_UCX_VERSION" &&
    rm -rf "$dest.part" && /usr/bin/python3 -m zipfile -e "$tmp"/libucx_cu12-*.whl "$dest.part" &&
    rm -rf "$dest" && mv "$dest.part" "$dest"
  local rc=$?
  rm -rf "$tmp"
  ((rc == 0)) || { echo "setup: fetching UCX from PyPI failed" >&2; return 1; }
}

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

# Compiler cache for scripts/test.sh: the plain build fills it, and the pip
# wheel's build of the same sources (tests/install/check_pip.sh, in a build
# directory beside build/) takes the objects from it instead of compiling
# them again.  ccache keys on paths relative to CCACHE_BASEDIR (default: the
# source tree) and, with CCACHE_NOHASHDIR, not on the build directory, so the
# two trees share objects only when they sit at the same depth under it.  A
# CCACHE_DIR the caller set is used; otherwise .cache/ccache in the tree (a
# clean clone starts it empty).  Sets ADXL_CCACHE_CMAKE_ARGS, the configure
# arguments that compile through it; the environment variables
# CMAKE_C_COMPILER_LAUNCHER / CMAKE_CXX_COMPILER_LAUNCHER do the same for a
# nested configure (the pip build).
adxl_use_ccache() {
  adxl_install_packages ccache
  export CCACHE_DIR="${CCACHE_DIR:-$ADXL_ROOT/.cache/ccache}"
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ADXL_ROOT}"
  export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
  ADXL_CCACHE_CMAKE_ARGS=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
}
ADXL_CCACHE_CMAKE_ARGS=()

adxl_build() {
  adxl_install_packages "${ADXL_PACKAGES[@]}"
  adxl_select_ucx
  cmake -S "$ADXL_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" "${ADXL_UCX_CMAKE_ARGS[@]}" \
    "${ADXL_CCACHE_CMAKE_ARGS[@]}" "$@" >/dev/null
  cmake --build "$BUILD_DIR" -j"$(nproc)"
}
