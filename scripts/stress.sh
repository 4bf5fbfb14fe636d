#!/usr/bin/env bash
# Fault tests repeated under load: a fault path that deadlocks 5 % of the
# time passes a single run almost always.  Beside a CPU hog (one busy process
# per core but one), runs each case ITERATIONS times, every run in its own
# process with a wall-clock limit, and reports hangs (the limit hit) and
# failures per case.  Exits non-zero on any hang or failure.  The cases on
# loopback and those in network namespaces are two groups, run one after the
# other; ADXL_STRESS_PARALLEL=1 runs them at the same time, each the other's
# extra load beside the hog, every case with its number of runs (about 40 %
# less wall time; scripts/test.sh runs them so: docs/testing.md, CI time).
# The hog runs at this script's nice level, as the cases do: a hog at a
# higher priority than the cases starves their threads for 100 ms and more
# whatever they do (docs/testing.md, CI time), which tests the kernel's
# nice weights, not the engine.
#
#   scripts/stress.sh [ITERATIONS]        (default 500; CI runs 50)
#
# Cases: the kill -9 of a target during ~1000 transfers, then reconnect, on
# both lanes (KillTargetTest); TIMEOUT on the network lane against a stopped
# target and against a live one with a 1 ms deadline, WRITE and READ (the
# stopped-target ones also on three connections per link), after
# which both sides must finalize cleanly (NetworkTimeoutTest, one round per
# run: ITERATIONS/5 runs per case, so 100 each at the default); the connect
# storm (tools/storm: 64 peer processes connect at once, every byte
# verified, half killed) on both lanes, ITERATIONS/100 runs each, at least 2,
# and the same on the network lane with two network paths per link
# (scripts/netns_storm.sh: a namespace with two veth pairs; skipped
# without root);
# Finalize with requests outstanding against a stopped target on the network
# lane, then the target resumed and checked alive (conformance S3_3 on
# rdma_am: the peer must not abort in UCX's wire-up), ITERATIONS runs;
# a real partition (NetnsPartitionTest: the only veth path between two
# network namespaces taken down during verified transfers, every transfer
# failing in time, then up and a verified reconnect), one down/up cycle per
# run, ITERATIONS/5 runs (skipped without root); the WRITE queued in the
# initiator's kernel across a partition that heals, which the target must
# drop (NetnsPartitionTest.NothingOfAFailedWriteLandsWhenThePathReturns),
# ITERATIONS/25 runs, at least 1 (skipped without root too); failover
# of a two-path link (NetnsFailoverTest.LinkFlapCycles: path 1 and path 2 in
# turn taken down and up 20 times under a verified WRITE/READ stream, no
# transfer may fail or arrive corrupted), ITERATIONS/10 runs of fresh
# processes, so 100 cycles at CI's 50 iterations (skipped without root too);
# a path gone silent (NetnsFailoverTest.SilentPath*: carrier
# kept, every packet dropped, under striped and under whole-on-one-path
# streams), ITERATIONS/25 runs (skipped without root too);
# the kill storm (adxl-storm --kill-rounds: rounds of 32 peer processes,
# each SIGKILLed at a random moment of its life up to 1.5x the time an
# unkilled peer takes to link on this machine now, then fresh peers
# link and verify and the target finalizes), ITERATIONS/10 runs of 2 rounds
# per lane: 320 killed peers per lane at CI's 50.
# A run that skipped counts as skipped, never as passed, and the script
# fails when a run skipped on a machine that can make a network namespace
# and has tc (there a skip means the case broke).
# One process through 100 cycles: ADXL_TEST_FLAP_CYCLES=100 on the flap test
# (docs/performance.md, "Multi-path links").
# BUILD_DIR (default build/) must hold a build (scripts/test.sh makes one).
set -uo pipefail
ADXL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ADXL_ROOT/build}"
ITERATIONS="${1:-500}"
[[ "$ITERATIONS" =~ ^[1-9][0-9]*$ ]] || { echo "stress: ITERATIONS must be a positive integer, not '$ITERATIONS'" >&2; exit 2; }
LIMIT_S=120
TESTS="$BUILD_DIR/bin/adxl_mp_tests"
CONFORMANCE="$BUILD_DIR/bin/adxl_conformance_tests"
STORM="$BUILD_DIR/bin/adxl-storm"
[[ -x "$TESTS" ]] || { echo "stress: $TESTS missing; build first (scripts/test.sh)" >&2; exit 2; }
[[ -x "$CONFORMANCE" ]] || { echo "stress: $CONFORMANCE missing; build first (scripts/test.sh)" >&2; exit 2; }
[[ -x "$STORM" ]] || { echo "stress: $STORM missing; build first (scripts/test.sh)" >&2; exit 2; }

# The gtest cases, "name|filter" each.  A filter that matches no test makes
# gtest run nothing and exit 0, so a renamed test would silently leave the
# stress run green: every filter is checked to select at least one test
# before anything runs.
KILL_CASES=(
  'KillTarget/HccsLane|Lanes/KillTargetTest.*/HCCS'
  'KillTarget/RdmaLaneOverTcp|Lanes/KillTargetTest.*/RdmaOverTcp'
)
PER_CASE_CASES=()  # ITERATIONS/5 runs each
for c in StoppedTargetWrite StoppedTargetRead LiveTargetWrite LiveTargetRead StoppedTargetWrite3Connections \
  StoppedTargetRead3Connections; do
  PER_CASE_CASES+=("NetworkTimeout/$c|Cases/NetworkTimeoutTest.*/$c")
done
PARTITION_CASE='Partition/LinkDownUp|NetnsPartitionTest.LinkDown*'
LATE_WRITE_CASE='Partition/NothingOfAFailedWriteLands|NetnsPartitionTest.NothingOfAFailedWriteLandsWhenThePathReturns'
FLAP_CASE='Failover/LinkFlap20|NetnsFailoverTest.LinkFlapCycles'
SILENT_CASE='Failover/SilentPath|NetnsFailoverTest.SilentPath*'
# In $CONFORMANCE, not $TESTS.
FINALIZE_CASE='FinalizeStoppedTarget/rdma_am|Lanes/Conformance.S3_3_FinalizeEndsOutstandingRequests*/rdma_am'
unmatched=0
for c in "${KILL_CASES[@]}" "${PER_CASE_CASES[@]}" "$PARTITION_CASE" "$LATE_WRITE_CASE" "$FLAP_CASE" "$SILENT_CASE" \
  "$FINALIZE_CASE"; do
  filter="${c#*|}"
  binary="$TESTS"
  [[ "$c" == "$FINALIZE_CASE" ]] && binary="$CONFORMANCE"
  # --gtest_list_tests prints "Suite." lines and an indented line per test.
  if ! listing="$("$binary" --gtest_list_tests --gtest_filter="$filter" 2>&1)"; then
    echo "stress: listing the tests of filter '$filter' failed: $listing" >&2
    exit 2
  fi
  if ! grep -q '^  ' <<<"$listing"; then
    echo "stress: case ${c%%|*}: filter '$filter' matches no test in $binary" >&2
    unmatched=$((unmatched + 1))
  fi
done
((unmatched == 0)) || { echo "stress: $unmatched filter(s) match no test; nothing was run" >&2; exit 2; }

# ADXL_STRESS_LOAD_PID: a process doing CPU work of its own beside this
# script (scripts/test.sh runs the fuzzers and clang's thread-safety analysis
# so): the first hog starts spinning only when it has ended, so that work is
# the load until then instead of a busy loop.
load_pid="${ADXL_STRESS_LOAD_PID:-}"
[[ -z "$load_pid" || "$load_pid" =~ ^[1-9][0-9]*$ ]] ||
  { echo "stress: ADXL_STRESS_LOAD_PID must be a process id, not '$load_pid'" >&2; exit 2; }
hogs=()
for ((i = 1; i < $(nproc); ++i)); do
  if ((i == 1)) && [[ -n "$load_pid" ]]; then
    (while kill -0 "$load_pid" 2>/dev/null; do sleep 1; done; while :; do :; done) &
  else
    (while :; do :; done) &
  fi
  hogs+=($!)
done
((${#hogs[@]} == 0)) && { (while :; do :; done) & hogs+=($!); }
trap 'kill "${hogs[@]}" 2>/dev/null' EXIT

logdir="$(mktemp -d /tmp/adxl-stress.XXXXXX)"
total_fail=0
total_skip=0
group=main  # the group of cases (below) this shell runs; names its run log
run_case() {  # name filter runs [env...]
  local name=$1 filter=$2 runs=$3
  shift 3
  run_command "$name" "$runs" env "$@" "$TESTS" --gtest_filter="$filter"
}
run_command() {  # name runs command...   (each run limited to LIMIT_S seconds)
  local name=$1 runs=$2
  shift 2
  local pass=0 skip=0 fail=0 hang=0 t0=$SECONDS log="$logdir/run.$group.log"
  for ((i = 0; i < runs; ++i)); do
    timeout -s KILL "$LIMIT_S" "$@" >"$log" 2>&1
    local rc=$?
    if ((rc == 0)) && grep -q -e '^\[  SKIPPED \]' -e ': skipped: ' "$log"; then
      # A run that skipped tested nothing: never counted as passed.
      ((++skip))
      cp "$log" "$logdir/${name//\//_}.skip.$i.log"
    elif ((rc == 0)); then
      ((++pass))
    elif ((rc == 137)); then
      ((++hang))
      cp "$log" "$logdir/${name//\//_}.hang.$i.log"
    else
      ((++fail))
      cp "$log" "$logdir/${name//\//_}.fail.$i.log"
    fi
  done
  printf '%-42s runs %4d  passed %4d  skipped %3d  failed %3d  hung %3d  (%d s)\n' "$name" "$runs" "$pass" "$skip" \
    "$fail" "$hang" $((SECONDS - t0))
  total_skip=$((total_skip + skip))
  total_fail=$((total_fail + fail + hang))
}

per_case=$(( ITERATIONS / 5 > 0 ? ITERATIONS / 5 : 1 ))
per_tenth=$(( ITERATIONS / 10 > 0 ? ITERATIONS / 10 : 1 ))
storm_runs=$(( ITERATIONS / 100 > 2 ? ITERATIONS / 100 : 2 ))
# The cases on loopback: processes on this machine's network, each run on
# ports of its own (ephemeral), nothing shared with another run.
loopback_cases() {
  for c in "${KILL_CASES[@]}"; do
    run_case "${c%%|*}" "${c#*|}" "$ITERATIONS"
  done
  for c in "${PER_CASE_CASES[@]}"; do
    run_case "${c%%|*}" "${c#*|}" "$per_case" ADXL_FAULT_ROUNDS=1
  done
  run_command "${FINALIZE_CASE%%|*}" "$ITERATIONS" "$CONFORMANCE" --gtest_filter="${FINALIZE_CASE#*|}"
  for lane in hccs rdma; do
    # The arguments of the ctest entries storm_64_* (tools/storm/CMakeLists.txt),
    # which scripts/test.sh leaves to this script.
    run_command "ConnectStorm64/$lane" "$storm_runs" "$STORM" --peers 64 --lane "$lane" --idle-ms 500
  done
  # The kill storm: each run kills 2 rounds of 32 peers at random moments of
  # their life up to 1.5x the time a calibration round of unkilled peers took
  # to link (start-up, handshake, wire-up, transfer, idle link), then 32 fresh
  # peers must link and verify and the target finalize (adxl-storm
  # --kill-rounds); ITERATIONS/10 runs per lane, 320 killed peers per lane at
  # CI's 50.
  for lane in hccs rdma; do
    run_command "KillStorm64/$lane" "$per_tenth" "$STORM" --kill-rounds 2 --peers 32 --lane "$lane"
  done
}
# The cases in network namespaces of their own (veth pairs, tc), one at a
# time: each takes its own namespaces' links down and up.
netns_cases() {
  run_case "${PARTITION_CASE%%|*}" "${PARTITION_CASE#*|}" "$per_case"
  # One partition of a few seconds per run, deterministic in what it checks:
  # few runs.
  run_case "${LATE_WRITE_CASE%%|*}" "${LATE_WRITE_CASE#*|}" $(( ITERATIONS / 25 > 0 ? ITERATIONS / 25 : 1 ))
  run_case "${FLAP_CASE%%|*}" "${FLAP_CASE#*|}" "$per_tenth" ADXL_TEST_FLAP_CYCLES=20
  # Two tests of ~7 s each per run; detection is deterministic (no race to
  # hit), so fewer runs than the flaps.
  run_case "${SILENT_CASE%%|*}" "${SILENT_CASE#*|}" $(( ITERATIONS / 25 > 0 ? ITERATIONS / 25 : 1 ))
  run_command "ConnectStorm64/rdma-2paths" "$storm_runs" env BUILD_DIR="$BUILD_DIR" "$ADXL_ROOT/scripts/netns_storm.sh"
}

# ADXL_STRESS_PARALLEL=1: the two groups at the same time, beside the hog,
# each the other's extra load; the phase takes about as long as the longer
# group instead of both.  Each group's runs are still one at a time.
hog_note="${#hogs[@]} CPU hog(s)${load_pid:+ (the first once process $load_pid has ended)}"
if [[ "${ADXL_STRESS_PARALLEL:-0}" != 1 ]]; then
  echo "stress: $ITERATIONS iterations beside $hog_note, one case at a time; logs of failed runs in $logdir"
  loopback_cases
  netns_cases
else
  echo "stress: $ITERATIONS iterations beside $hog_note, the loopback and namespace cases at the same" \
    "time; logs of failed runs in $logdir"
  groups=()
  for g in loopback netns; do
    # Each group in a subshell; its totals come back in a file.
    (group=$g; "${g}_cases"; echo "$total_fail $total_skip" >"$logdir/totals.$g") &
    groups+=($!)
  done
  trap 'kill "${hogs[@]}" "${groups[@]}" 2>/dev/null' EXIT
  wait "${groups[@]}"  # not the hogs, which never end
  for g in loopback netns; do
    read -r f s <"$logdir/totals.$g" || { echo "stress: the $g group ended without its totals" >&2; exit 1; }
    total_fail=$((total_fail + f))
    total_skip=$((total_skip + s))
  done
fi
if ((total_fail > 0)); then
  echo "stress: $total_fail run(s) failed or hung" >&2
  exit 1
fi
# The namespace cases skip without root, network namespaces or `tc`; where
# a namespace can be made and tc is here, a skip means the case broke, not
# that it cannot run.
if ((total_skip > 0)); then
  probe="adxl-stress-probe-$$"
  if [[ $(id -u) -eq 0 ]] && command -v tc >/dev/null && ip netns add "$probe" 2>/dev/null; then
    ip netns del "$probe"
    echo "stress: $total_skip run(s) skipped on a machine that can run them (root, ip netns, tc); logs in $logdir" >&2
    exit 1
  fi
  echo "stress: $total_skip run(s) skipped: this machine lacks root, ip netns or tc (they test nothing here)"
fi
echo "stress: all runs passed"
