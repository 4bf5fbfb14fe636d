#!/usr/bin/env bash
# Installs what is missing, builds in build/, runs the whole test suite with
# ctest, the pip install of the Python packages, the fuzzers, clang's
# thread-safety analysis, the fault tests repeated under load (stress.sh),
# the soak, then the sanitizer runs.  Exits non-zero on any failure, and
# when no test ran.  Each phase ends with a line "test.sh: phase NAME N s
# (total M s)": where CI's time goes (docs/testing.md, CI time).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
t_start=$SECONDS
t_phase=$SECONDS
phase() {  # NAME: the phase that just ended
  echo "test.sh: phase $1 $((SECONDS - t_phase)) s (total $((SECONDS - t_start)) s)"
  t_phase=$SECONDS
}
# Through ccache (scripts/setup.sh, adxl_use_ccache): the pip check below
# builds the same sources again and takes this build's objects.
adxl_use_ccache
adxl_build
phase setup_and_build
cd "$BUILD_DIR"
# The sanitizer trees (scripts/sanitize.sh) are built in the background at
# the lowest CPU priority while the plain suite below runs: its tests leave
# a core idle much of the time (most of its time goes to the tests ctest runs
# alone), and nice 19 yields the CPU to them whenever they want it (a build
# beside them is lighter than the CPU hog stress.sh runs them with).  Each build runs in its own process group, killed if
# this script stops; when the foreground reaches a build, it waits for it at
# normal priority.  The ASan tree builds beside the plain suite, the TSan
# tree beside the ASan tests.
bg_pid=0
bg_log=""
start_build() {  # mode: the sanitizer tree to build in the background
  bg_log="$BUILD_DIR/sanitize-build-$1.log"
  setsid nice -n 19 "$ADXL_ROOT/scripts/sanitize.sh" --build-only "$1" >"$bg_log" 2>&1 &
  bg_pid=$!
}
finish_build() {
  renice -n 0 -g "$bg_pid" >/dev/null 2>&1 || true
  if ! wait "$bg_pid"; then
    cat "$bg_log" >&2
    echo "test.sh: building a sanitizer tree failed (log above)" >&2
    exit 1
  fi
  bg_pid=0
}
load_pid=0
trap '((bg_pid == 0)) || kill -- "-$bg_pid" 2>/dev/null || true' EXIT
start_build asan
# ADXL_TEST_JOBS tests at a time (default: one more than the CPUs; CI has 2):
# most tests are two processes on loopback that idle much of the time.  The
# tests that time heartbeats, deadlines, stalls, CPU or rates are RUN_SERIAL
# (cmake/SerialTests.cmake): ctest runs each of them alone, as in a serial
# run.  Left out here and to stress.sh below, which runs the very same
# commands on this build many times, beside a CPU hog: the
# kill-during-traffic test on both lanes (STRESS_ITERATIONS runs each) and
# the 64-peer connect storm on both lanes (twice each).
STRESS_ITERATIONS="${ADXL_STRESS_ITERATIONS:-50}"
((STRESS_ITERATIONS >= 1)) || { echo "test.sh: ADXL_STRESS_ITERATIONS must be >= 1" >&2; exit 2; }
TEST_JOBS="${ADXL_TEST_JOBS:-$(($(nproc) + 1))}"
ctest --output-on-failure --no-tests=error -j"$TEST_JOBS" -E '^(Lanes/KillTargetTest\..*|storm_64_(hccs|rdma))$' "$@"
phase ctest
# The README's pip line: the wheel built from ./python into a venv on
# Debian's python3, the packages checked from there (the ctest
# install_package checks the `cmake --install` route and fails when the
# Python packages were not built).
# Its CMake build compiles through the same ccache as the plain build
# (CMake reads the launcher from the environment), so only what differs
# is compiled again.
CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache \
  "$ADXL_ROOT/tests/install/check_pip.sh" "$BUILD_DIR" "$ADXL_ROOT"
phase pip
# The fuzzers and clang's thread-safety analysis (clang comes with fuzz.sh)
# are CPU work with no timing in them: they run beside the stress runs below
# as the load stress.sh otherwise makes with a busy loop, whose first hog
# starts when they have ended (ADXL_STRESS_LOAD_PID).  In a process group of
# their own, killed if this script stops; their output follows the stress
# output.
load_log="$BUILD_DIR/fuzz-thread-safety.log"
setsid bash -c 't=$SECONDS; "$1/scripts/fuzz.sh" || exit
  echo "test.sh: fuzz $((SECONDS - t)) s beside the stress runs"; t=$SECONDS
  "$1/scripts/thread_safety.sh" || exit
  echo "test.sh: thread_safety $((SECONDS - t)) s beside the stress runs"' _ "$ADXL_ROOT" >"$load_log" 2>&1 &
load_pid=$!
trap '((bg_pid == 0)) || kill -- "-$bg_pid" 2>/dev/null; ((load_pid == 0)) || kill -- "-$load_pid" 2>/dev/null || true' EXIT
# Fault tests repeated under load: kill -9 during traffic on both lanes,
# TIMEOUT against stopped and live targets (50 iterations here;
# scripts/stress.sh 500 for the full run).  Its loopback and network-namespace
# groups run at the same time, each the other's extra load beside the hog
# (ADXL_STRESS_PARALLEL, default 1 here; 0 runs them one after the other):
# about 240 s less of CI's critical path (docs/testing.md, CI time).
stress_rc=0
ADXL_STRESS_PARALLEL="${ADXL_STRESS_PARALLEL:-1}" ADXL_STRESS_LOAD_PID=$load_pid \
  "$ADXL_ROOT/scripts/stress.sh" "$STRESS_ITERATIONS" || stress_rc=$?
load_rc=0
wait "$load_pid" || load_rc=$?
load_pid=0
cat "$load_log"
((load_rc == 0)) || { echo "test.sh: the fuzzers or the thread-safety analysis failed (output above)" >&2; exit 1; }
((stress_rc == 0)) || exit "$stress_rc"
phase stress_fuzz_thread_safety
# Soak: 4 engines in full mesh, random sizes, every byte checked, flat RSS
# (ADXL_SOAK_SECONDS, default 60).
"$BUILD_DIR/bin/adxl_soak"
phase soak
# Sanitizers: ASan+UBSan over the whole suite, TSan over the concurrency
# tests and a short soak, each in its own build directory, one test at a
# time: instrumented tests keep the CPU busy, and the ASan suite run three at
# a time took as long as serially (docs/testing.md, CI time).
finish_build
phase asan_build_wait
start_build tsan
"$ADXL_ROOT/scripts/sanitize.sh" asan
phase asan
finish_build
phase tsan_build_wait
"$ADXL_ROOT/scripts/sanitize.sh" tsan
phase tsan
