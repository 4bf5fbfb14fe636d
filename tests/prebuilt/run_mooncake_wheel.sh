#!/usr/bin/env bash
# A prebuilt program on this project's libraries: the Mooncake Transfer
# Engine's Ascend wheel (mooncake-transfer-engine-npu, built against the
# vendor's stack) installed unchanged (--no-deps) into a scratch venv and run
# as two processes (mooncake_pair.py), with the one environment line of
# README "Running prebuilt programs": LD_LIBRARY_PATH=<lib>:<lib>/adxl-acl-host/lib.
# Nothing is preloaded and no file of the wheel is changed.
#
# Usage: run_mooncake_wheel.sh <lib-dir> [<wheel file or directory>]
#   <lib-dir>: a directory with libllm_datadist.so, libcann_hixl.so,
#   libmetadef.so and adxl-acl-host/lib/libascendcl.so (the build tree's lib/
#   or an install's lib/ with the acl_host component).
# The wheel: the second argument, else $ADXL_MOONCAKE_WHEEL, else pip
# download from PyPI.  Exit 77 (ctest: skipped) when no wheel can be had or
# the Python the wheel was built for is missing.
set -euo pipefail
libdir="$(cd "$1" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
wheel_src="${2:-${ADXL_MOONCAKE_WHEEL:-}}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

py=python3
if [[ -z "$wheel_src" ]]; then
  # ADXL_WHEEL_CACHE (ctest sets it in the build tree): download once.
  dl="${ADXL_WHEEL_CACHE:-$work/dl}"
  mkdir -p "$dl"
  if ! ls "$dl"/mooncake_transfer_engine_npu-*.whl >/dev/null 2>&1 &&
     ! timeout 300 "$py" -m pip download --quiet --no-deps --only-binary=:all: mooncake-transfer-engine-npu \
        -d "$dl" >"$work/pip.log" 2>&1; then
    echo "SKIPPED: cannot download mooncake-transfer-engine-npu ($(tail -1 "$work/pip.log"))"
    exit 77
  fi
  wheel_src="$dl"
fi
if [[ -d "$wheel_src" ]]; then
  wheel="$(ls "$wheel_src"/mooncake_transfer_engine_npu-*.whl | head -1)"
else
  wheel="$wheel_src"
fi
if ! "$py" -m venv "$work/venv" >/dev/null 2>&1; then
  echo "SKIPPED: no python3 venv module"
  exit 77
fi
if ! "$work/venv/bin/pip" install --quiet --no-deps --no-index "$wheel" >"$work/install.log" 2>&1; then
  echo "SKIPPED: $(basename "$wheel") does not install here ($(tail -1 "$work/install.log")): its Python is missing?"
  exit 77
fi
site="$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"

# What the wheel needs from the vendor's stack, all found here.
export LD_LIBRARY_PATH="$libdir:$libdir/adxl-acl-host/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
missing="$(cd "$site/mooncake" && for f in ascend_transport.so libtransfer_engine.so; do ldd -r "$f" 2>&1; done |
           grep -E "not found|undefined symbol: (acl|_ZN4adxl|_ZN2ge|_ZNK2ge|_ZN4hixl|_ZN12llm)" || true)"
if [[ -n "$missing" ]]; then
  echo "FAILED: the wheel's libraries miss what the vendor's stack provides:"
  echo "$missing"
  exit 1
fi
echo "ok: every library and symbol the wheel imports from the vendor's stack is found"
ldd "$site/mooncake/ascend_transport.so" | grep -E "libllm_datadist|libcann_hixl|libmetadef|libascendcl"

# Mooncake's own settings stay at their defaults; only this engine's log is quieter.
export ADXL_LOG_LEVEL="${ADXL_LOG_LEVEL:-warn}"
cd "$work"
timeout 300 "$work/venv/bin/python" "$here/mooncake_pair.py"
