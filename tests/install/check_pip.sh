#!/usr/bin/env bash
# The pip route of the Python packages, as README.md gives it: Debian 12's
# /usr/bin/python3 is externally managed (PEP 668), so the wheel goes into a
# venv that sees Debian's setuptools, wheel and pytest
# (--system-site-packages), built with `pip install --no-build-isolation
# ./python`; then pycheck.py imports the three packages from the venv and
# moves data between two processes with them.  scripts/test.sh runs it.
#
# python/setup.py builds the engine once more with CMake: in
# <build-dir>-pip, beside the build directory (ADXL_CMAKE_BUILD_DIR;
# ADXL_PIP_BUILD_DIR names another), kept between runs, so that a second run
# only rebuilds what changed.  Beside it, at the same depth, so that a
# compiler cache keyed on paths relative to the source tree (scripts/test.sh
# sets up ccache and passes CMAKE_CXX_COMPILER_LAUNCHER) serves the plain
# build's objects to the wheel's build of the same sources.
# Usage: check_pip.sh <build-dir> <source-dir>
set -euo pipefail
build="$(cd "$1" && pwd)"
src="$(cd "$2" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
ADXL_CMAKE_BUILD_DIR="${ADXL_PIP_BUILD_DIR:-$build-pip}" \
  ADXL_CMAKE_ARGS="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DADXL_BUILD_TESTS=OFF ${ADXL_CMAKE_ARGS:-}" \
  "$work/venv/bin/pip" install -q --no-build-isolation --no-index "$src/python"
for p in adxl hixl llm_datadist; do
  where="$(cd "$work" && "$work/venv/bin/python" -c "import $p; print($p.__file__)")"
  [[ "$where" == "$work/venv/"* ]] || { echo "pip check: FAILED: $p imported from $where, not the venv" >&2; exit 1; }
done
(cd "$work" && "$work/venv/bin/python" "$src/tests/install/pycheck.py")
echo "pip check: OK"
