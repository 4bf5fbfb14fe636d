#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds and runs the
# quickstart example outside the tree twice: with find_package(adxl) and
# with pkg-config; the installed adxl, hixl and llm_datadist packages (not
# the build tree's) move and check data between two processes (pycheck.py),
# and a build without them fails the check.  ADXL_CHECK_PIP=1 also runs
# check_pip.sh (the README's pip line into a venv, the same Python check).
# First, the vendor's exported names in the installed libraries.
# Last, the programs written for the vendor's stack in
# tests/install/vendor_hixl and vendor_llm, built the vendor's way.
# Usage: check_install.sh <build-dir> <source-dir>
set -euo pipefail
build="$(cd "$1" && pwd)"
src="$(cd "$2" && pwd)"
# A build without the Python packages fails at once: CMake turns
# ADXL_BUILD_PYTHON off in silence where pybind11 or the Python headers are
# missing, and every Python test with it.  ADXL_CHECK_NO_PYTHON=1 checks
# such a build on purpose.
built_python="$(sed -n 's/^ADXL_BUILD_PYTHON:BOOL=//p' "$build/CMakeCache.txt" 2>/dev/null || true)"
if [[ "$built_python" != ON && "${ADXL_CHECK_NO_PYTHON:-0}" != 1 ]]; then
  echo "install check: FAILED: the Python packages (adxl, hixl, llm_datadist) were not built:" \
    "ADXL_BUILD_PYTHON=${built_python:-unset} in $build/CMakeCache.txt (pybind11-dev or python3-dev missing" \
    "when CMake ran?); ADXL_CHECK_NO_PYTHON=1 checks a build without them on purpose" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# 0. The vendor's libraries in the installed tree: real shared objects with
# the vendor's sonames, exporting the vendor's names, one engine
# (tests/abi/check_exports.sh; ctest abi_vendor_exports checks the build tree).
bash "$src/tests/abi/check_exports.sh" "$work/prefix/lib"

# 1. CMake package.
cmake -S "$src/examples/quickstart" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/quickstart" 26103

# 2. pkg-config.
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/$(gcc -print-multiarch)/pkgconfig"
g++ -o "$work/quickstart-pc" "$src/examples/quickstart/quickstart.cc" $(pkg-config --cflags --libs adxl)
"$work/quickstart-pc" 26104

# 3. Python packages, installed under the prefix (lib/python3.X/dist-packages).
if [[ "$built_python" != ON ]]; then
  echo "install check: no Python packages in this build (ADXL_CHECK_NO_PYTHON=1)"
else
  so="$(find "$work/prefix" -name '_adxl*.so' | head -1)"
  if [[ -z "$so" ]]; then
    echo "install check: FAILED: the build has the Python packages but cmake --install put none under $work/prefix" >&2
    exit 1
  fi
  pydir="$(dirname "$(dirname "$so")")"
  (cd "$work" && PYTHONPATH="$pydir" /usr/bin/python3 "$src/tests/install/pycheck.py")
  # The pip route (a wheel built from ./python into a venv): scripts/test.sh
  # runs it after the suite; here on request, as it builds the engine again.
  if [[ "${ADXL_CHECK_PIP:-0}" == 1 ]]; then
    bash "$src/tests/install/check_pip.sh" "$build" "$src"
  fi
fi
# 4. Programs written for the vendor's stack, built the vendor's way (plain
# target names, -DCMAKE_PROJECT_INCLUDE=.../vendor-targets.cmake; pkg-config
# cann_hixl / llm_datadist) with the host ACL emulation (opt-in component
# acl_host), run as two processes, every byte checked: the HIXL / ADXL
# programs (tests/install/vendor_hixl) and the C++ LlmDataDist ones
# (tests/install/vendor_llm, KV caches on the emulated device).
cmake --install "$build" --prefix "$work/prefix" --component acl_host >/dev/null
bash "$src/tests/install/vendor_hixl/run.sh" "$work/prefix" "$work"
bash "$src/tests/install/vendor_llm/run.sh" "$work/prefix" "$work"
echo "install check: OK"
