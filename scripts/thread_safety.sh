#!/usr/bin/env bash
# Clang's thread-safety analysis over every source that declares what its
# locks guard (src/common/thread_annotations.h): each must compile with
# -Werror=thread-safety.  First proves the flags bite: every file that breaks
# a rule (tests/thread_safety/must_not_compile*.cc, one rule or a few each)
# must be rejected.
set -euo pipefail
ADXL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ADXL_ROOT"
CLANG="${CLANG:-$(command -v clang++ || command -v clang++-14 || true)}"
[[ -n "$CLANG" ]] || { echo "thread_safety: clang++ not found (apt-get install clang)" >&2; exit 1; }
# UCX's headers: those of the UCX the build uses (ucx_ROOT, which
# scripts/setup.sh exports), else the system's.
if [[ -n "${ucx_ROOT:-}" ]]; then
  UCX_CFLAGS=("-I$ucx_ROOT/include")
else
  read -r -a UCX_CFLAGS <<<"$(pkg-config --cflags ucx)"
fi
FLAGS=(-std=c++17 -fsyntax-only -Wthread-safety -Wthread-safety-beta -Werror=thread-safety
       -Iinclude -Isrc -Isrc/llm_datadist -Iplugin/ucx -Iemulation/acl/include -Iemulation/acl/src
       "${UCX_CFLAGS[@]}")
for bad in tests/thread_safety/must_not_compile*.cc; do
  if diagnostics="$("$CLANG" "${FLAGS[@]}" "$bad" 2>&1)"; then
    echo "thread_safety: clang accepted $bad: the analysis is not running or does not check that rule" >&2
    exit 1
  fi
  # Rejected, but for the right reason: a thread-safety diagnostic, not a
  # typo or a missing header.
  if ! grep -q -- '-Werror,-Wthread-safety' <<<"$diagnostics"; then
    echo "thread_safety: clang rejected $bad for another reason than the analysis:" >&2
    echo "$diagnostics" >&2
    exit 1
  fi
done
# Every source of the engine, the cache layer, the plugins and the host ACL
# emulation: a class that
# owns a lock declares what it guards (src/common/thread_annotations.h), and
# every user of it is checked.
mapfile -t files < <(find src plugin emulation -name '*.cc' | sort)
# One clang per source, THREAD_SAFETY_JOBS (default: the CPU count) at a
# time: each file is checked on its own, so the order does not matter, and
# xargs exits non-zero when any of them failed.
status=0
printf '%s\0' "${files[@]}" |
  xargs -0 -n 1 -P "${THREAD_SAFETY_JOBS:-$(nproc)}" "$CLANG" "${FLAGS[@]}" || status=1
((status == 0)) && echo "thread_safety: ${#files[@]} sources pass -Werror=thread-safety"
exit $status
