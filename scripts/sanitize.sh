#!/usr/bin/env bash
# Sanitizer runs of the test suite (scripts/test.sh calls it after the plain
# suite and the fuzzer):
#   1. build-asan/ with -DADXL_SANITIZE=address,undefined: the whole ctest
#      suite, except the tests listed in ASAN_EXCLUDE below (each says why).
#   2. build-tsan/ with -DADXL_SANITIZE=thread: the concurrency tests
#      (TSAN_TESTS below: many threads on one engine, the connect pool, the
#      buffer pool's threads, hostile input against a live engine, the API
#      fuzz), then a 20 s soak (TSAN_SOAK_SECONDS).
# Findings inside UCX itself (not instrumented, outside this project) are
# suppressed by tests/sanitizers/*.supp, each entry documented there.  Any
# other finding fails the run (halt_on_error / exitcode).
# Usage: scripts/sanitize.sh [--build-only] [asan|tsan]...   (default: both)
#   --build-only: configure and build the trees, run nothing (scripts/test.sh
#   builds them in the background while the plain suite runs).
# Environment: ASAN_BUILD_DIR, TSAN_BUILD_DIR; extra ctest arguments in
# SANITIZE_CTEST_ARGS; ASAN_TIME_SCALE (default 3) and TSAN_TIME_SCALE
# (default 5): the ADXL_TEST_TIME_SCALE each phase runs with, the factor by
# which the tests widen their timing bounds (tests/support/time_scale.h;
# instrumented code runs several times slower).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ASAN_BUILD_DIR="${ASAN_BUILD_DIR:-$ADXL_ROOT/build-asan}"
TSAN_BUILD_DIR="${TSAN_BUILD_DIR:-$ADXL_ROOT/build-tsan}"
SUPP="$ADXL_ROOT/tests/sanitizers"

# Not run under ASan, and why:
#  - install_package: builds quickstart outside the tree without sanitizer
#    flags against the instrumented libadxl.so (the ASan runtime would not be
#    first in the program's library list); it checks packaging, not memory.
#  - bench_quick*: timing benchmarks, meaningless at ASan speed; the same
#    transfer paths run in TransferTest / the examples.
#  - python bindings (not configured: -DADXL_BUILD_PYTHON=OFF): the stock
#    python3 interpreter is not instrumented, so the ASan runtime cannot be
#    loaded by an extension module; the C++ paths under them are covered.
#  - abi_vendor_exports, prebuilt_mooncake_wheel, prebuilt_ctypes_mangled:
#    each loads the libraries into the stock python3 (ctypes; the Mooncake
#    wheel's extension module), which cannot take the instrumented ones (the
#    ASan runtime must come first in the process); they check exported names,
#    sonames and a prebuilt program's loading, not memory, and run in the
#    plain phase.
ASAN_EXCLUDE='^(install_package|bench_quick|bench_quick_adxl_memory|abi_vendor_exports|prebuilt_mooncake_wheel|prebuilt_ctypes_mangled)$'
# Run under ASan+UBSan but without LeakSanitizer, and why (leaks in other
# projects' libraries, not in UCX, so not suppressed: those files are for
# UCX only):
#  - example_mpi_blocks: OpenMPI leaks at MPI_Finalize (ompi_op_base_op_select,
#    calloc'd buffers in libmpi/libopen-pal), by design of MPI.
#  - NumaTopologyTest.RealMachine: hwloc's PCI plugin (hwloc_pci.so via
#    libpciaccess) leaks ~1 KiB per loaded topology; gone with
#    HWLOC_COMPONENTS=-pci, and the plugin is unloaded before LSan runs.
#  - bench_kv_*, bench_peers_quick, bench_quick_base_pages: adxl-bench's smoke tests (every byte verified; they stay
#    under ASan+UBSan for that).  Their processes also build the raw-UCP
#    baseline's own UCP context after the engine's, and LSan then reports
#    glibc's 56-byte dependency list of a dlopen (_dl_map_object_deps,
#    called through an unsymbolized trampoline: UCX's libucm patches dlopen)
#    in both processes; no frame of this project's code is in it.
ASAN_NO_LEAK_CHECK='^(example_mpi_blocks|NumaTopologyTest\.RealMachine|bench_kv_.*|bench_peers_quick|bench_quick_base_pages)$'
# The concurrency tests for TSan.
TSAN_TESTS='ManyThreads|Concurrent|ThreadSafe|ConnectPool|BufferPoolTest|HostileInput|HandshakeStall|SilentSubscribers|ControlConn|Handshake|AutoConnect|ApiFuzz'
# Not under TSan: the rdma_rma conformance lane (UCP's emulated put/get over
# TCP, ADXL_UCX_RDMA_PROTOCOL=rma).  UCP 1.13 copies one-sided data into and
# out of registered memory on the target's progress thread from functions of
# its own (ucp_put_handler and an unnamed static get-reply packer), which
# TSan reports as races with the application's earlier writes; the ordering
# goes through the other process.  The unnamed frame cannot be suppressed by
# name, and suppressing every race with a libucp frame would also hide the
# engine's own active-message handlers, which run under libucp.  The lane runs
# in the plain and ASan phases; the engine code it shares with the other
# lanes stays under TSan through them.
TSAN_EXCLUDE='/rdma_rma'

# Both sanitizer trees compile with -O1 -g1 instead of RelWithDebInfo's
# -O2 -g: -O1 is the level the sanitizers' documentation recommends, and -g1
# keeps the line tables their reports print (file:line in every frame) while
# dropping the variable locations nobody reads in a sanitizer report.  With
# UBSan, GCC 12 at -O2 -g takes about three times as long per test file
# (56 s vs 19 s for the plugin conformance test here): the ASan tree took
# 17 of CI's 46 minutes.  What is checked is the same: every instrumentation
# is on at any optimization level.
SANITIZE_FLAGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DADXL_BUILD_PYTHON=OFF)

build_only=0
if [[ "${1:-}" == --build-only ]]; then
  build_only=1
  shift
fi
modes=("$@")
((${#modes[@]} == 0)) && modes=(asan tsan)
for mode in "${modes[@]}"; do
  [[ "$mode" == asan || "$mode" == tsan ]] || { echo "sanitize.sh: unknown mode $mode (asan|tsan)" >&2; exit 2; }
done
adxl_install_packages "${ADXL_PACKAGES[@]}"
# The sanitizer trees build on the system's UCX (Debian 12: 1.13.1, with the
# InfiniBand transports), the plain tree on the one scripts/setup.sh fetches:
# CI builds and tests the engine on both (docs/ucx.md).  ADXL_SANITIZE_UCX_ROOT
# names another (an install prefix, as ADXL_UCX_ROOT).
ADXL_UCX_ROOT="${ADXL_SANITIZE_UCX_ROOT:-system}" adxl_select_ucx
SANITIZE_FLAGS+=("${ADXL_UCX_CMAKE_ARGS[@]}")

build_asan() {
  cmake -S "$ADXL_ROOT" -B "$ASAN_BUILD_DIR" "${SANITIZE_FLAGS[@]}" -DADXL_SANITIZE=address,undefined >/dev/null
  cmake --build "$ASAN_BUILD_DIR" -j"$(nproc)"
}
build_tsan() {
  cmake -S "$ADXL_ROOT" -B "$TSAN_BUILD_DIR" "${SANITIZE_FLAGS[@]}" -DADXL_SANITIZE=thread >/dev/null
  cmake --build "$TSAN_BUILD_DIR" -j"$(nproc)" --target adxl_unit_tests adxl_mp_tests adxl_api_tests \
    adxl_conformance_tests adxl_api_fuzz adxl_soak adxl_test_peer adxl_plugin_ucx
}
if ((build_only)); then
  for mode in "${modes[@]}"; do "build_$mode"; done
  echo "sanitize: built (${modes[*]})"
  exit 0
fi

for mode in "${modes[@]}"; do
  case "$mode" in
  asan)
    build_asan
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=0:suppressions=$SUPP/asan.supp"
    # use_tls=0: gcc 12's LeakSanitizer crashes at exit ("Tracer caught
    # signal 11" in ScanRangeForPointers) scanning the dynamic TLS of modules
    # that were dlclose'd: the UCX plugin and the UCX libraries it loads,
    # unloaded at Finalize.  Not scanning TLS as a root can only add leak
    # reports (memory referenced from TLS alone), never hide one.
    export LSAN_OPTIONS="use_tls=0:suppressions=$SUPP/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$SUPP/ubsan.supp"
    export ADXL_TEST_TIME_SCALE="${ASAN_TIME_SCALE:-3}"
    (cd "$ASAN_BUILD_DIR" && ctest --output-on-failure --no-tests=error -E "$ASAN_EXCLUDE|$ASAN_NO_LEAK_CHECK" ${SANITIZE_CTEST_ARGS:-})
    # Still under ASan+UBSan, without leak detection: see ASAN_NO_LEAK_CHECK.
    (cd "$ASAN_BUILD_DIR" && ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
      ctest --output-on-failure --no-tests=error -R "$ASAN_NO_LEAK_CHECK" ${SANITIZE_CTEST_ARGS:-})
    unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS ADXL_TEST_TIME_SCALE
    ;;
  tsan)
    build_tsan
    # history_size=7 and suppress_equal_addresses=0: see tests/sanitizers/tsan.supp
    # (without them TSan's bookkeeping of suppressed races in UCX grows
    # quadratically with the bytes moved, and transfers stall for seconds).
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=7:suppress_equal_addresses=0:suppressions=$SUPP/tsan.supp"
    # UCX's memory-event hooks (libucm patches malloc/mmap in every loaded
    # library, "bistro" mode) crash a TSan process (SIGSEGV on the first
    # transfer: TSan owns those functions).  They only feed UCX's registration
    # cache invalidation, which host memory over cma/tcp does not need; the
    # engine's own code is the same with them off.
    export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_EVENTS=no
    export ADXL_TEST_TIME_SCALE="${TSAN_TIME_SCALE:-5}"
    (cd "$TSAN_BUILD_DIR" && ctest --output-on-failure --no-tests=error -R "$TSAN_TESTS" -E "$TSAN_EXCLUDE" ${SANITIZE_CTEST_ARGS:-})
    # The soak (not a ctest entry), shorter: 4 engine processes, each with its
    # control, plugin and application threads.
    ADXL_SOAK_SECONDS="${TSAN_SOAK_SECONDS:-20}" "$TSAN_BUILD_DIR/bin/adxl_soak"
    unset TSAN_OPTIONS ADXL_TEST_TIME_SCALE
    ;;
  esac
done
echo "sanitize: OK (${modes[*]})"
