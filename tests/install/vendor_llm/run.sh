#!/usr/bin/env bash
# Builds the LlmDataDist programs of this directory the vendor's way against an
# installed tree (with the host ACL emulation installed: component acl_host)
# and runs each pair as two processes; every byte is checked by the programs
# themselves (on emulated device memory, read back with aclrtMemcpy).
# Usage: run.sh <prefix> <work-dir>
set -euo pipefail
prefix="$1"
work="$2"
here="$(cd "$(dirname "$0")" && pwd)"

# The exact build line the README gives for programs written for the vendor's stack.
cmake -S "$here" -B "$work/vendor-llm-build" \
      -DCMAKE_PROJECT_INCLUDE="$prefix/lib/cmake/adxl/vendor-targets.cmake" >/dev/null
cmake --build "$work/vendor-llm-build" -j2 >/dev/null
b="$work/vendor-llm-build"

# One free loopback port P with P+1 free too.
port="$(python3 - <<'PY'
import socket, random
for _ in range(200):
    p = random.randint(20000, 60000)
    socks = []
    try:
        for q in (p, p + 1):
            s = socket.socket(); s.bind(("127.0.0.1", q)); socks.append(s)
        print(p); break
    except OSError:
        pass
    finally:
        for s in socks: s.close()
PY
)"
pair() {
  local name="$1"; shift
  if ! bash "$here/run_pair.sh" 60 "$@" > "$work/vendor-llm-$name.log" 2>&1; then
    echo "FAILED: vendor_llm $name"; cat "$work/vendor-llm-$name.log"; return 1
  fi
  # The decisive lines: every byte checked on each side.
  grep -q "every byte as expected" "$work/vendor-llm-$name.log" ||
    { echo "FAILED: vendor_llm $name checked no bytes"; cat "$work/vendor-llm-$name.log"; return 1; }
  echo "ok: vendor_llm $name (two processes, device caches on the host ACL emulation)"
}
pair pull "$b/prompt_pull $port" "$b/decoder_pull $port"
pair push "$b/decoder_push $port" "$b/prompt_push $port $((port + 1))"
pair switch_role "$b/switch_role_a $port $((port + 1))" "$b/switch_role_b $port $((port + 1))"
# The programs link only the vendor's names: libllm_datadist leads to libadxl, acl_rt to the emulation.
# (ldd's output read whole first: `ldd | grep -q` under pipefail fails when
# grep stops reading early and ldd gets SIGPIPE.)
libs="$(ldd "$b/prompt_pull")"
grep -q "libllm_datadist.so" <<<"$libs" || { echo "FAILED: prompt_pull does not link libllm_datadist"; exit 1; }
grep -q "adxl-acl-host/lib/libascendcl.so" <<<"$libs" ||
  { echo "FAILED: prompt_pull does not link the host ACL emulation"; exit 1; }
