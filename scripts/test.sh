#!/usr/bin/env bash
# Installs what is missing, builds in build/, runs the whole test suite with
# ctest, the wire fuzzer, the soak, then the sanitizer runs.  Exits non-zero
# on any failure, and when no test ran.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
adxl_build
cd "$BUILD_DIR"
# Serial: several tests time heartbeats and deadlines, which parallel runs
# on a small machine (CI has 2 cores) would upset.
ctest --output-on-failure --no-tests=error "$@"
"$ADXL_ROOT/scripts/fuzz.sh"
# Soak: 4 engines in full mesh, random sizes, every byte checked, flat RSS
# (ADXL_SOAK_SECONDS, default 60).
"$BUILD_DIR/bin/adxl_soak"
# Sanitizers: ASan+UBSan over the whole suite, TSan over the concurrency
# tests and a short soak, each in its own build directory.
"$ADXL_ROOT/scripts/sanitize.sh"
