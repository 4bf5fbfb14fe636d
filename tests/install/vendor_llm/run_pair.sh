#!/usr/bin/env bash
# Runs two programs of this directory as two processes that meet through
# files in a fresh $VENDOR_SYNC_DIR; fails when either fails or runs past
# the time limit.
# Usage: run_pair.sh <seconds> "<program and args>" "<program and args>"
set -uo pipefail
limit="$1"
export VENDOR_SYNC_DIR="$(mktemp -d)"
trap 'rm -rf "$VENDOR_SYNC_DIR"' EXIT
timeout "$limit" $2 &
first=$!
timeout "$limit" $3 &
second=$!
wait "$first"
rc1=$?
wait "$second"
rc2=$?
echo "run_pair: '$2' exited $rc1, '$3' exited $rc2"
((rc1 == 0 && rc2 == 0))
