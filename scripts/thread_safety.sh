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
FLAGS=(-std=c++17 -fsyntax-only -Wthread-safety -Wthread-safety-beta -Werror=thread-safety
       -Iinclude -Isrc -Isrc/llm_datadist -Iplugin/ucx -Iemulation/acl/include -Iemulation/acl/src
       $(pkg-config --cflags ucx))
for bad in tests/thread_safety/must_not_compile*.cc; do
  if "$CLANG" "${FLAGS[@]}" "$bad" 2>/dev/null; then
    echo "thread_safety: clang accepted $bad: the analysis is not running or does not check that rule" >&2
    exit 1
  fi
done
# Every source of the engine, the cache layer, the plugins and the host ACL
# emulation: a class that
# owns a lock declares what it guards (src/common/thread_annotations.h), and
# every user of it is checked.
mapfile -t files < <(find src plugin emulation -name '*.cc' | sort)
status=0
for f in "${files[@]}"; do
  "$CLANG" "${FLAGS[@]}" "$f" || status=1
done
((status == 0)) && echo "thread_safety: ${#files[@]} sources pass -Werror=thread-safety"
exit $status
