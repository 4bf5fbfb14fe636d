#!/usr/bin/env bash
# Installs what is missing, builds in build/, runs the whole test suite with
# ctest.  Exits non-zero on any failure, and when no test ran.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
adxl_build
cd "$BUILD_DIR"
# Serial: several tests time heartbeats and deadlines on a 2-core machine.
ctest --output-on-failure --no-tests=error "$@"
"$ADXL_ROOT/scripts/fuzz.sh"
# Soak: 4 engines in full mesh, random sizes, every byte checked, flat RSS
# (ADXL_SOAK_SECONDS, default 60).
"$BUILD_DIR/bin/adxl_soak"
# Sanitizer runs (ASan+UBSan over the suite, TSan over the concurrency
# tests) are scripts/sanitize.sh; not part of this run yet (see README).
