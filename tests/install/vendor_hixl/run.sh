#!/usr/bin/env bash
# Builds the programs of this directory the vendor's way against an installed
# tree (with the host ACL emulation installed: component acl_host) and runs
# each as two processes; every byte is checked by the programs themselves.
# Then the same sources once more with pkg-config and plain -l names.
# Usage: run.sh <prefix> <work-dir>
set -euo pipefail
prefix="$1"
work="$2"
here="$(cd "$(dirname "$0")" && pwd)"
flags=(-D_GLIBCXX_USE_CXX11_ABI=0 -Wall -Wextra -Werror -Wfloat-equal -ftrapv -O2 -fno-common)

# The exact build line the README gives for programs written for the vendor's stack.
cmake -S "$here" -B "$work/vendor-hixl-build" \
      -DCMAKE_PROJECT_INCLUDE="$prefix/lib/cmake/adxl/vendor-targets.cmake" >/dev/null
cmake --build "$work/vendor-hixl-build" -j2 >/dev/null

# Three consecutive free loopback ports P, P+1, P+2 (server, client, side channel).
free_ports() {
  python3 - <<'PY'
import socket, random
for _ in range(200):
    p = random.randint(20000, 60000)
    socks = []
    try:
        for q in (p, p + 1, p + 2):
            s = socket.socket(); s.bind(("127.0.0.1", q)); socks.append(s)
        print(p); break
    except OSError:
        pass
    finally:
        for s in socks: s.close()
PY
}

# two_procs <program> [args...]: server and client; both must exit 0.
two_procs() {
  local prog="$1"; shift
  local port; port="$(free_ports)"
  timeout 60 "$prog" --role=server --port="$port" "$@" > "$work/server.log" 2>&1 &
  local spid=$!
  local crc=0 src=0
  timeout 60 "$prog" --role=client --port="$port" "$@" > "$work/client.log" 2>&1 || crc=$?
  wait "$spid" || src=$?
  if [[ $crc != 0 || $src != 0 ]]; then
    echo "FAILED: $(basename "$prog") $* (client $crc, server $src)"
    echo "--- server"; cat "$work/server.log"; echo "--- client"; cat "$work/client.log"
    return 1
  fi
  echo "ok: $(basename "$prog") $* :: $(grep -h '\[INFO\].*verified' "$work/server.log" "$work/client.log" | tr '\n' ' ')"
}

b="$work/vendor-hixl-build"
two_procs "$b/hixl_quickstart_read"                            # hccs:device: same-node lane
two_procs "$b/hixl_d2rh_async" --protocol=roce:host             # network lane
two_procs "$b/hixl_d2rd_multiproc" --protocol=roce:device       # network lane
two_procs "$b/hixl_d2rd_multiproc" --protocol=hccs:device       # same-node lane
"$b/adxl_via_llm_datadist" "$(free_ports)" >/dev/null
echo "ok: adxl_via_llm_datadist (links only llm_datadist)"

# pkg-config and the plain -l names.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
g++ "${flags[@]}" -o "$work/quickstart-pc" "$here/hixl_quickstart_read.cpp" \
    $(pkg-config --cflags --libs cann_hixl adxl-acl-host)
two_procs "$work/quickstart-pc"
# Every public header, in one translation unit, warning-free under the vendor's flags.
{
  (cd "$prefix/include" && find adxl hixl llm_datadist graph external -name '*.h' ! -path 'adxl/plugin/*' | sort) |
    sed 's/.*/#include "&"/'
  echo '#include "acl/acl.h"'
  echo 'int main() { return 0; }'
} > "$work/all_headers.cpp"
g++ "${flags[@]}" -std=c++17 -fsyntax-only "$work/all_headers.cpp" $(pkg-config --cflags cann_hixl adxl-acl-host)
echo "ok: every public header under the vendor's flags"

# Every program once more with our headers on -I (CMake's imported targets
# make them -isystem, which would hide their warnings from -Werror).
for f in hixl_d2rh_async hixl_d2rd_multiproc; do
  g++ "${flags[@]}" -fsyntax-only "$here/$f.cpp" $(pkg-config --cflags cann_hixl adxl-acl-host)
done
g++ "${flags[@]}" -o "$work/via-lld-pc" "$here/adxl_via_llm_datadist.cpp" \
    $(pkg-config --cflags --libs llm_datadist adxl-acl-host)
"$work/via-lld-pc" "$(free_ports)" >/dev/null
# One engine per process: the engine is libcann_hixl.so (the vendor's name
# and soname); libllm_datadist.so reaches it through DT_NEEDED, and no other
# engine library (libadxl.so* are links to the same file, never loaded as a
# second object) is in the process.
# (ldd's output read whole first: `ldd | grep -q` under pipefail fails when
# grep stops reading early and ldd gets SIGPIPE.)
libs="$(ldd "$work/via-lld-pc")"
if grep -q "libadxl.so" <<<"$libs"; then echo "FAILED: a second engine library"; exit 1; fi
[[ "$(grep -c "libcann_hixl.so" <<<"$libs")" == 1 ]] || { echo "FAILED: not one engine library: $libs"; exit 1; }
libs="$(ldd "$work/quickstart-pc")"
grep -q "libcann_hixl.so => $prefix" <<<"$libs" || { echo "FAILED: -lcann_hixl does not lead to the engine"; exit 1; }
echo "ok: pkg-config cann_hixl / llm_datadist / adxl-acl-host"
