#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds and runs the
# quickstart example outside the tree twice: with find_package(adxl) and
# with pkg-config.  Usage: check_install.sh <build-dir> <source-dir>
set -euo pipefail
build="$1"
src="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null

# 1. CMake package.
cmake -S "$src/examples/quickstart" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/quickstart" 26103

# 2. pkg-config.
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/$(gcc -print-multiarch)/pkgconfig"
g++ -o "$work/quickstart-pc" "$src/examples/quickstart/quickstart.cc" $(pkg-config --cflags --libs adxl)
"$work/quickstart-pc" 26104
echo "install check: OK"
