#!/usr/bin/env bash
# The connect storm (adxl-storm) on the network lane with multi-path links:
# inside a fresh network namespace with two veth pairs, one end of each
# addressed (two /24s), so that every engine of the storm -- the target and
# each peer process -- opens the two interfaces as network paths (the
# default where a host has two or more interfaces up with IPv4, as serving
# nodes with several NICs do) and every link connects once per path beside
# its main connection.  Fails when the storm fails, and when its links did
# not use the paths (the storm's file descriptors per link: 2 without
# paths, 4 with two), so that a run that fell back to one path cannot pass.
# Needs root and iproute2; without root it says so and exits 0, as the
# namespace tests of the suite skip.
#
#   scripts/netns_storm.sh [adxl-storm options]     (default: --peers 64 --idle-ms 500)
set -euo pipefail
ADXL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STORM="${BUILD_DIR:-$ADXL_ROOT/build}/bin/adxl-storm"
[[ -x "$STORM" ]] || { echo "netns_storm: $STORM missing; build first" >&2; exit 2; }
if [[ $(id -u) -ne 0 ]]; then
  echo "netns_storm: skipped: needs root (network namespaces)"
  exit 0
fi
args=("$@")
((${#args[@]} > 0)) || args=(--peers 64 --idle-ms 500)

ns="adxl-storm-$$"
cleanup() { ip netns del "$ns" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up
for i in 0 1; do
  # Names unique per run (the namespace is too, but veth names are created
  # in the caller's namespace first).
  a="sta$i$(($$ % 100000))" b="stb$i$(($$ % 100000))"
  ip link add "$a" type veth peer name "$b"
  ip link set "$a" netns "$ns"
  ip link set "$b" netns "$ns"
  ip -n "$ns" addr add "10.$((231 + i)).$(($$ % 250 + 1)).1/24" dev "$a"
  ip -n "$ns" link set "$a" up
  ip -n "$ns" link set "$b" up
done

out="$(ip netns exec "$ns" env -u ADXL_UCX_RDMA_PATHS "$STORM" --lane rdma "${args[@]}" 2>&1)" && rc=0 || rc=$?
echo "$out" | grep '^storm:' || true
if ((rc != 0)); then
  echo "$out" | tail -n 40 >&2
  echo "netns_storm: the storm failed (exit $rc)" >&2
  exit 1
fi
fds="$(sed -n 's/.*RESULT .* fds_per_link=\([0-9.]*\).*/\1/p' <<<"$out")"
[[ -n "$fds" ]] || { echo "netns_storm: no RESULT line with fds_per_link" >&2; exit 1; }
if ! awk -v f="$fds" 'BEGIN { exit !(f >= 3.5) }'; then
  echo "netns_storm: $fds file descriptors per link: the links did not use the two paths" >&2
  exit 1
fi
echo "netns_storm: PASS with two network paths per link ($fds fds per link)"
