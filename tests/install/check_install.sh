#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds and runs the
# quickstart example outside the tree twice: with find_package(adxl) and
# with pkg-config; where the Python packages were built, the installed adxl,
# hixl and llm_datadist packages (not the build tree's) move and check data
# between two processes.  ADXL_CHECK_PIP=1 also builds a wheel with
# `pip install --no-build-isolation ./python` into a venv and runs the same
# Python check on it (a full build: minutes).  Last, the programs written for
# the vendor's stack in tests/install/vendor_hixl, built the vendor's way.
# Usage: check_install.sh <build-dir> <source-dir>
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

# 3. Python packages, installed under the prefix (lib/python3.X/dist-packages).
cat >"$work/pycheck.py" <<'PY'
import ctypes, multiprocessing as mp, os, socket, sys
import adxl, hixl, llm_datadist
for m in (adxl, hixl, llm_datadist):
    assert "/python/" not in m.__file__.replace(os.sep, "/") or "dist-packages" in m.__file__ \
        or "site-packages" in m.__file__, m.__file__
def serve(port, q, done):
    e = hixl.Hixl()
    assert e.initialize(f"127.0.0.1:{port}", {}) == hixl.SUCCESS
    buf = ctypes.create_string_buffer(bytes(range(256)) * 16)
    assert e.register_mem(hixl.MemDesc(ctypes.addressof(buf), 4096), hixl.MemType.MEM_HOST)[0] == hixl.SUCCESS
    q.put(ctypes.addressof(buf)); done.wait(30); e.finalize()
if __name__ == "__main__":
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
    ctx = mp.get_context("spawn"); q, done = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=serve, args=(port, q, done)); p.start()
    addr = q.get(timeout=30)
    e = hixl.Hixl(); assert e.initialize("127.0.0.1") == hixl.SUCCESS
    dst = ctypes.create_string_buffer(4096)
    assert e.register_mem(hixl.MemDesc(ctypes.addressof(dst), 4096), hixl.MEM_HOST)[0] == hixl.SUCCESS
    assert e.connect(f"127.0.0.1:{port}", 5000) == hixl.SUCCESS
    assert e.transfer_sync(f"127.0.0.1:{port}", hixl.READ,
                           [hixl.TransferOpDesc(ctypes.addressof(dst), addr, 4096)], 5000) == hixl.SUCCESS
    assert dst.raw == bytes(range(256)) * 16
    e.finalize(); done.set(); p.join(30); assert p.exitcode == 0
    dd = llm_datadist.LLMDataDist(llm_datadist.LLMRole.PROMPT, 1)
    dd.init(llm_datadist.LLMConfig().generate_options()); dd.finalize()
    print("python packages:", ", ".join(m.__file__ for m in (adxl, hixl, llm_datadist)))
PY
pycheck() {  # <python>: imports the three packages from where they are installed, two-process transfer
  (cd "$work" && "$1" "$work/pycheck.py")
}
pydir="$(dirname "$(dirname "$(find "$work/prefix" -name '_adxl*.so' | head -1)")")"
if [[ "$pydir" != "." && -d "$pydir" ]]; then
  PYTHONPATH="$pydir" pycheck /usr/bin/python3
  if [[ "${ADXL_CHECK_PIP:-0}" == 1 ]]; then
    /usr/bin/python3 -m venv --system-site-packages "$work/venv"
    "$work/venv/bin/pip" install -q --no-build-isolation --no-index "$src/python"
    pycheck "$work/venv/bin/python"
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
