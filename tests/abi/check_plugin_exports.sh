#!/bin/bash
# A transport plugin exports its entry point (adxl_plugin_get_ops) and no
# other symbol: anything else would interpose on a host program's symbols of
# the same name.  Usage: check_plugin_exports.sh PLUGIN.so...
set -euo pipefail
rc=0
for so in "$@"; do
  others=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -vx adxl_plugin_get_ops || true)
  if ! nm -D --defined-only "$so" | awk '{print $3}' | grep -qx adxl_plugin_get_ops; then
    echo "FAIL $so: does not export adxl_plugin_get_ops"
    rc=1
  elif [ -n "$others" ]; then
    echo "FAIL $so exports $(echo "$others" | wc -l) symbols besides adxl_plugin_get_ops:"
    echo "$others" | head -20
    rc=1
  else
    echo "ok $so: adxl_plugin_get_ops only"
  fi
done
exit $rc
