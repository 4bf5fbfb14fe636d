#!/usr/bin/env bash
# Installs what is missing, builds, then runs the demo: two engine processes
# on loopback move a KV cache (many descriptors) both ways and verify it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
adxl_build >/dev/null
exec "$BUILD_DIR/bin/adxl-demo" "$@"
