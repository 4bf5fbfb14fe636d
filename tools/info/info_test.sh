#!/usr/bin/env bash
# ctest checks of adxl-info (tools/info/CMakeLists.txt): exit status and output.
#   info_test.sh ADXL_INFO plugin    the ucx plugin loads and reports: exit 0
#   info_test.sh ADXL_INFO missing   a missing plugin: the options, a message, exit 1
#   info_test.sh ADXL_INFO options   -c with a missing plugin: the options, exit 0
set -u
info=$1
case $2 in
  plugin) out=$("$info" 2>&1); rc=$?; want_rc=0; want=("adxl.HeartbeatMs" "^name: +ucx$" "^memory types: .*host" "^transports: ") ;;
  missing) out=$("$info" --plugin no_such_plugin 2>&1); rc=$?; want_rc=1
           want=("adxl.HeartbeatMs" "cannot load transport plugin 'no_such_plugin'") ;;
  options) out=$("$info" -c --plugin no_such_plugin 2>&1); rc=$?; want_rc=0; want=("adxl.HeartbeatMs" "ADXL_LOG_LEVEL") ;;
  *) echo "usage: $0 ADXL_INFO plugin|missing|options" >&2; exit 2 ;;
esac
echo "$out"
status=0
if [ "$rc" != "$want_rc" ]; then echo "FAIL: exit status $rc, expected $want_rc"; status=1; fi
for w in "${want[@]}"; do
  if ! grep -Eq -- "$w" <<<"$out"; then echo "FAIL: no line matching '$w'"; status=1; fi
done
if [ "$2" = options ] && grep -q "Transport plugin" <<<"$out"; then echo "FAIL: -c printed the plugin"; status=1; fi
exit $status
