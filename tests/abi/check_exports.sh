#!/usr/bin/env bash
# Checks that the vendor's exported names (vendor_exports.txt: library and
# mangled name, facts of the vendor's API) are exported by the libraries of
# this build under the vendor's names, from the library the vendor ships them
# in, and that each library is a real shared object whose soname is its name.
# Usage: check_exports.sh <lib-dir> [<table>]
set -euo pipefail
libdir="$1"
table="${2:-$(dirname "$0")/vendor_exports.txt}"
fail=0
declare -A exported
for lib in $(grep -v '^#' "$table" | awk 'NF {print $1}' | sort -u); do
  path="$libdir/$lib"
  if [[ ! -f "$path" ]]; then echo "FAILED: $path: missing"; fail=1; continue; fi
  if ! head -c 4 "$path" | grep -q $'\x7fELF'; then
    echo "FAILED: $path is not an ELF shared object (a linker script?): the dynamic loader cannot load it"; fail=1; continue
  fi
  soname="$(readelf -d "$path" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
  if [[ "$soname" != "$lib" ]]; then echo "FAILED: $path: soname '$soname', the vendor's is '$lib'"; fail=1; fi
  # Defined, default-visibility functions and objects (T, W, D, V, B, R, i).
  exported[$lib]="$(nm -D --defined-only "$path" | awk '{print $3}' | sort -u)"
done
missing=0
total=0
while read -r lib sym; do
  [[ -z "$lib" || "$lib" == \#* ]] && continue
  total=$((total + 1))
  if ! grep -qxF "$sym" <<<"${exported[$lib]:-}"; then
    echo "FAILED: $lib does not export $sym ($(c++filt "$sym"))"
    missing=$((missing + 1))
  fi
done < "$table"
# One engine per process: every name of the engine library (the vendor's and
# the compatibility links) and libllm_datadist.so's dependency resolve to one
# loaded object, so they give one address for the engine's constructor.
one_engine="$(cd "$libdir" && python3 - <<'PY' 2>&1
import ctypes, os
sym = "_ZN4adxl10AdxlEngineC1Ev"
addrs = {}
for name in ("libllm_datadist.so", "libcann_hixl.so", "libadxl.so.0", "libadxl.so"):
    lib = ctypes.CDLL(os.path.abspath(name))
    addrs[name] = ctypes.cast(getattr(lib, sym), ctypes.c_void_p).value
print("ok" if len(set(addrs.values())) == 1 else "FAILED: more than one engine: %s" % addrs)
PY
)"
if [[ "$one_engine" != ok ]]; then echo "FAILED: one engine per process: $one_engine"; fail=1; fi
if [[ $fail -ne 0 || $missing -ne 0 ]]; then
  echo "vendor ABI exports: $missing of $total names missing"
  exit 1
fi
echo "vendor ABI exports: all $total names exported, every library an ELF object with the vendor's soname, one engine"
